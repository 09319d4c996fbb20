//! The contract between the core and a backend, and the closed set of backends.
//!
//! A backend is the Rust counterpart of an rdma-core provider: it supplies the driver data (`udata`)
//! of the commands that have some and interprets the driver's answers. The public types hold a
//! [`Backend`] enum rather than a trait object: the set of backends is closed, and on the data path a
//! `match` over two variants inlines where a vtable call cannot.

use crate::discover::Driver;
use crate::error::Result;
use crate::{mlx5, rxe};

/// What a backend must provide for its device context.
pub trait ProviderContext: Sized + std::fmt::Debug + Send + Sync {
    /// The driver this backend serves.
    const DRIVER: Driver;

    /// The uverbs ABI versions (sysfs `abi_version`) this backend speaks, inclusive.
    const ABI_VERSIONS: (u32, u32);

    /// The driver data of `GET_CONTEXT`: the request bytes (`UHW_IN`) and the size of the response
    /// (`UHW_OUT`).
    fn context_request() -> (Vec<u8>, usize);

    /// Builds the backend's context from the driver's `GET_CONTEXT` response.
    fn from_context_response(resp: &[u8]) -> Result<Self>;

    /// Formats the raw firmware version of `QUERY_DEVICE` as this driver's userspace library does.
    fn format_fw_ver(raw: u64) -> String;
}

/// The backend of an open device.
#[derive(Debug)]
#[non_exhaustive]
// One per open device: the size does not matter, and a box would put the mlx5 data path one
// pointer further away.
#[allow(clippy::large_enum_variant)]
pub enum Backend {
    /// Soft-RoCE.
    Rxe(rxe::RxeContext),
    /// ConnectX.
    Mlx5(mlx5::Mlx5Context),
}

/// Forwards a call of an associated item of [`ProviderContext`] to the backend of `driver`.
macro_rules! for_driver {
    ($driver:expr, $T:ident => $body:expr, else $other:expr) => {
        match $driver {
            $crate::discover::Driver::Rxe => {
                type $T = $crate::rxe::RxeContext;
                $body
            }
            $crate::discover::Driver::Mlx5 => {
                type $T = $crate::mlx5::Mlx5Context;
                $body
            }
            $crate::discover::Driver::Other(_) => $other,
        }
    };
}
pub(crate) use for_driver;

impl Backend {
    /// The driver of this backend.
    pub fn driver(&self) -> Driver {
        match self {
            Backend::Rxe(_) => Driver::Rxe,
            Backend::Mlx5(_) => Driver::Mlx5,
        }
    }

    /// The driver's formatting of a raw firmware version.
    pub fn format_fw_ver(&self, raw: u64) -> String {
        match self {
            Backend::Rxe(_) => rxe::RxeContext::format_fw_ver(raw),
            Backend::Mlx5(_) => mlx5::Mlx5Context::format_fw_ver(raw),
        }
    }
}
