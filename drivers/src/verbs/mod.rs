//! The verbs objects as the public crate uses them: one type per object, each an enum over the
//! backends that dispatches inside.
//!
//! [`DeviceContext`] is an open device: its [`Ucontext`] and its backend's [`Provider`] context.
//! [`Pd`], [`Mw`], [`Cq`], [`Qp`], [`Srq`] and [`Ah`] are created on it; [`Cq`], [`Qp`], [`Srq`]
//! and [`Ah`] implement their object's [`crate::backend`] trait
//! ([`CqBackend`](crate::backend::CqBackend), [`QpBackend`](crate::backend::QpBackend),
//! [`SrqBackend`](crate::backend::SrqBackend), [`AhBackend`](crate::backend::AhBackend): import
//! it to call the methods), each method a `match` that calls the backend's, which the compiler
//! inlines on the data path (posting, polling). Memory regions carry no driver data and are the
//! same on every backend: [`Region`] registers a buffer it owns, and [`Mr`] keeps it registered
//! (and allocated) as long as anything needs it. Completion channels are a [`crate::cmd`] command
//! on the [`Ucontext`].
//!
//! The backends are listed once, in the crate's `backends!` (`lib.rs`): the enums here and their
//! dispatch are made from it (see `docs/adding-a-backend.md`).

mod ah;
mod cq;
mod mr;
mod pd;
mod qp;
mod srq;

use std::sync::{Arc, OnceLock};

use uverbs_uapi as uapi;

pub use mr::{Backing, Iova, Mr, Region};
pub use pd::{Mw, Pd};
pub use qp::UdAddress;

use crate::backend::{Capability, Provider};
use crate::chan::CommandPath;
use crate::discover::{DeviceInfo, Driver};
use crate::error::{Error, Result, Verb};
use crate::ucontext::{DeviceAttrs, Ucontext};

/// Declares `dispatch!($Enum, $value, $x => $body)`: a `match $value` with an arm
/// `$Enum::Variant($x) => $body` for every backend. (`$d` is a `$`, for the inner macro's own
/// metavariables.)
macro_rules! declare_dispatch {
    ([$($V:ident: $m:ident, $P:path, $id:ident, $name:literal, $sk:ident($sv:literal);)+] $d:tt) => {
        /// Runs `$body` with `$x` bound to the backend's value inside `$value`, an object of enum
        /// `$Enum`, whichever backend it is of.
        macro_rules! dispatch {
            ($d Enum:ident, $d value:expr, $d x:ident => $d body:expr) => {
                match $d value {
                    $($d Enum::$V($d x) => $d body,)+
                }
            };
        }
    };
}

crate::backends!(declare_dispatch $);
pub(crate) use dispatch;

/// The backend's own object inside a verbs object, if the object is of that backend.
pub(crate) trait Of<T> {
    /// The backend's object, or `None` for an object of another backend.
    fn of(&self) -> Option<&T>;
}

/// Declares the enums over the backends and their conversions.
macro_rules! declare_backends {
    ([$($V:ident: $m:ident, $P:path, $id:ident, $name:literal, $sk:ident($sv:literal);)+]) => {
        /// The backend of an open device: its [`Provider`] context.
        #[derive(Debug)]
        #[non_exhaustive]
        pub enum Backend {
            $(#[doc = concat!("`", stringify!($P), "`.")] $V(Arc<$P>),)+
        }

        declare_backends!(@object Cq, Cq, "A completion queue", [$($V: $P),+]);
        declare_backends!(@object Qp, Qp, "A queue pair", [$($V: $P),+]);
        declare_backends!(@object Srq, Srq, "A shared receive queue", [$($V: $P),+]);
        declare_backends!(@object Ah, Ah, "An address handle", [$($V: $P),+]);

        impl DeviceContext {
            /// Opens the device on `path`, with its backend's driver data.
            pub fn open_with(info: &DeviceInfo, path: CommandPath) -> Result<DeviceContext> {
                $(
                    if info.driver == Driver::$V {
                        return DeviceContext::open_as::<$P>(info, path, Backend::$V);
                    }
                )+
                Err(Error::UnsupportedDriver {
                    device: info.name.clone(),
                    driver: info.driver.name(),
                })
            }
        }
    };
    (@object $Enum:ident, $Assoc:ident, $what:literal, [$($V:ident: $P:path),+]) => {
        #[doc = concat!($what, " of one of the backends.")]
        #[derive(Debug)]
        #[non_exhaustive]
        pub enum $Enum {
            $(#[doc = concat!("Of `", stringify!($P), "`.")] $V(<$P as Provider>::$Assoc),)+
        }

        $(
            impl From<<$P as Provider>::$Assoc> for $Enum {
                fn from(x: <$P as Provider>::$Assoc) -> $Enum {
                    $Enum::$V(x)
                }
            }

            impl Of<<$P as Provider>::$Assoc> for $Enum {
                #[inline(always)]
                fn of(&self) -> Option<&<$P as Provider>::$Assoc> {
                    #[allow(unreachable_patterns)]
                    match self {
                        $Enum::$V(x) => Some(x),
                        _ => None,
                    }
                }
            }
        )+
    };
}

crate::backends!(declare_backends);

/// An open device: the kernel's user context and the backend's context on it.
#[derive(Debug)]
pub struct DeviceContext {
    uctx: Arc<Ucontext>,
    backend: Backend,
    /// The device's attributes, queried when a capability first needs them.
    attrs: OnceLock<DeviceAttrs>,
    /// Whether the kernel driver has `REREG_MR`, probed when first asked.
    rereg: OnceLock<bool>,
}

impl DeviceContext {
    /// Opens the device on the command path the environment selects
    /// ([`CommandPath::from_env`]).
    pub fn open(info: &DeviceInfo) -> Result<DeviceContext> {
        DeviceContext::open_with(info, CommandPath::from_env())
    }

    fn open_as<P: Provider>(
        info: &DeviceInfo,
        path: CommandPath,
        variant: fn(Arc<P>) -> Backend,
    ) -> Result<DeviceContext> {
        let (lo, hi) = P::ABI_VERSIONS;
        if !(lo..=hi).contains(&info.abi_version) {
            return Err(Error::Protocol {
                verb: Verb::OpenDevice,
                what: format!(
                    "{} speaks uverbs ABI {}, the {} backend speaks {lo}..={hi}",
                    info.name,
                    info.abi_version,
                    info.driver.name()
                ),
            });
        }
        let (req, resp_len) = P::context_request();
        let mut resp = vec![0u8; resp_len];
        let uctx = Arc::new(Ucontext::open(info, path, &req, &mut resp)?);
        let provider = P::from_context_response(Arc::clone(&uctx), &resp)?;
        Ok(DeviceContext {
            uctx,
            backend: variant(Arc::new(provider)),
            attrs: OnceLock::new(),
            rereg: OnceLock::new(),
        })
    }

    /// The kernel's user context: the command channel, the async event file, the queries and the
    /// commands every backend shares.
    #[inline]
    pub fn ucontext(&self) -> &Arc<Ucontext> {
        &self.uctx
    }

    /// The backend.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// What discovery knew of the device.
    pub fn info(&self) -> &DeviceInfo {
        self.uctx.info()
    }

    /// The device's driver.
    pub fn driver(&self) -> Driver {
        self.uctx.info().driver
    }

    /// The firmware version of `QUERY_DEVICE`, formatted as the driver's userspace library does.
    pub fn format_fw_ver(&self, raw: u64) -> String {
        fn format<P: Provider>(_: &Arc<P>, raw: u64) -> String {
            P::format_fw_ver(raw)
        }
        dispatch!(Backend, &self.backend, p => format(p, raw))
    }

    /// Whether the backend offers `capability` as far as it is the backend's to say
    /// ([`Provider::supports`]); [`DeviceContext::supports`] asks the device too.
    pub fn backend_supports(&self, capability: Capability) -> bool {
        dispatch!(Backend, &self.backend, p => Provider::supports(p.as_ref(), capability))
    }

    /// Whether the device offers `capability`: what it reports (its attributes, queried once),
    /// what the kernel answers to a probe, and what the backend says, as [`Capability`] describes
    /// for each. `false` where the device cannot be asked (its attributes fail to come).
    pub fn supports(&self, capability: Capability) -> bool {
        use uapi::ib_verbs::{IB_ODP_SUPPORT, IB_ODP_SUPPORT_IMPLICIT};
        let backend = || self.backend_supports(capability);
        let attrs = |f: &dyn Fn(&uapi::ib_uverbs_ex_query_device_resp, bool) -> bool| {
            self.attrs().is_some_and(|a| f(&a.resp, a.extended))
        };
        let odp = |needed: u64| attrs(&|r, ex| ex && r.odp_caps.general_caps & needed == needed);
        match capability {
            Capability::MemoryWindows => {
                backend()
                    && attrs(&|r, ex| {
                        let flags = u64::from(r.base.device_cap_flags)
                            | if ex { r.device_cap_flags_ex } else { 0 };
                        let type2 = uapi::IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A
                            | uapi::IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B;
                        r.base.max_mw > 0 && flags & type2 != 0
                    })
            }
            Capability::CqModeration => {
                backend()
                    && attrs(&|r, ex| {
                        let caps = &r.cq_moderation_caps;
                        ex && (caps.max_cq_moderation_count != 0
                            || caps.max_cq_moderation_period != 0)
                    })
            }
            Capability::CompletionTimestamps => {
                backend() && attrs(&|r, ex| ex && r.timestamp_mask != 0)
            }
            Capability::DeviceClock => self.clock().is_ok(),
            Capability::OnDemandPaging => odp(IB_ODP_SUPPORT),
            Capability::ImplicitOnDemandPaging => odp(IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT),
            Capability::CqResize | Capability::DmabufRegions => backend(),
            Capability::Rereg => self.has_rereg(),
            Capability::ReregMemory => self.has_rereg() && backend(),
        }
    }

    /// The device's attributes, queried on first use (`None` if the query fails; it is tried
    /// again next time).
    fn attrs(&self) -> Option<&DeviceAttrs> {
        if let Some(a) = self.attrs.get() {
            return Some(a);
        }
        let a = self.uctx.query_device().ok()?;
        Some(self.attrs.get_or_init(|| a))
    }

    /// Whether the kernel driver has `REREG_MR` ([`crate::cmd::has_rereg_mr`]), probed once.
    fn has_rereg(&self) -> bool {
        *self
            .rereg
            .get_or_init(|| crate::cmd::has_rereg_mr(&self.uctx))
    }

    /// The device's clock as wall-clock time ([`Error::Unsupported`] where the backend has none).
    pub fn clock(&self) -> Result<DeviceClock> {
        dispatch!(Backend, &self.backend, p => Provider::clock(p.as_ref())).map(DeviceClock)
    }
}

/// The error for objects of different backends (which one context never mixes).
fn of_another_backend(verb: Verb, what: &str) -> Error {
    Error::InvalidArgument {
        verb,
        what: format!("{what} of another backend"),
    }
}

/// The device's free-running clock as wall-clock time, whatever backend keeps the reference point
/// (its [`crate::backend::ClockSource`]).
#[derive(Debug, Clone)]
pub struct DeviceClock(Arc<dyn crate::backend::ClockSource>);

impl DeviceClock {
    /// Nanoseconds since the Unix epoch at device time `timestamp`, through the reference point
    /// as it is now.
    pub fn to_unix_nanos(&self, timestamp: u64) -> u64 {
        self.0.to_unix_nanos(timestamp)
    }
}
