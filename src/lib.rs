//! # uverbs: RDMA verbs in pure Rust
//!
//! uverbs talks to the Linux kernel's `/dev/infiniband/uverbsN` directly: the uverbs ioctl interface,
//! the legacy `write()` commands where the kernel still needs them, and mmap of queue and doorbell
//! memory. There is no libibverbs, no rdma-core and no C at build or run time. Two backends sit behind
//! one API: rxe (the kernel's soft-RoCE device) and mlx5 (NVIDIA ConnectX).
//!
//! The API follows the [`ibverbs`](https://docs.rs/ibverbs) crate:
//!
//! ```no_run
//! let devices = uverbs::devices()?;
//! let device = devices.iter().next().expect("no RDMA device");
//! let ctx = device.open()?;
//! let attr = ctx.query_device()?;
//! println!("{}: {} ports, fw {}", ctx.name(), attr.phys_port_cnt(), attr.fw_ver());
//! for gid in ctx.gid_table() {
//!     println!("port {} gid[{}] {} {:?}", gid.port_num, gid.gid_index, gid.gid, gid.gid_type);
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## Errors
//!
//! Fallible calls return `std::io::Result`, as in `ibverbs`. The `io::Error` carries a typed
//! [`Error`] that names the verb and the kernel's errno; [`Error::of`] gets it back.
#![deny(unsafe_code)]

mod attr;
mod context;
mod device;

pub use attr::{
    AtomicCap, DeviceAttr, DeviceCapFlags, Gid, GidEntry, GidType, LinkLayer, Mtu, NodeType,
    OdpCaps, PhysState, PortAttr, PortCapFlags, PortState, Speed, Width,
};
pub use context::Context;
pub use device::{devices, CommandPath, Device, DeviceList, DeviceListIter, Driver, Guid};
pub use uverbs_drivers::error::{Error, Verb};

/// Extension to get the typed [`Error`] out of an `io::Error` returned by this crate.
pub trait ErrorExt {
    /// The typed error, if this `io::Error` came from uverbs.
    fn uverbs_error(&self) -> Option<&Error>;
}

impl ErrorExt for std::io::Error {
    fn uverbs_error(&self) -> Option<&Error> {
        self.get_ref().and_then(|e| e.downcast_ref::<Error>())
    }
}
