//! [`Error`], the one error type of `uverbs::next`, with the `ibverbs` crate's variants and texts.

use std::fmt;
use std::io;

use super::ffi;

/// The result type of `uverbs::next`.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong.
///
/// Variants that wrap an [`io::Error`] return it from [`std::error::Error::source`]; their
/// `Display` text names only the step that failed, not the cause (as in `ibverbs`). The connection
/// manager's variants (`ConnectionManager` to `ConnectionSetup`) are always present: uverbs has
/// the connection manager built in, where `ibverbs` puts them behind its `rdmacm` feature.
///
/// An `Error` converts into an [`io::Error`], so `?` works in functions returning
/// [`io::Result`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The device (or its kernel driver) does not support the operation (`EOPNOTSUPP`).
    Unsupported,
    /// The port is neither ACTIVE nor ARMED.
    PortNotActive(u8),
    /// The remote endpoint has a GID, but no local GID index was set.
    GidMismatch,
    /// The device's index is not known.
    DeviceIndexUnavailable,
    /// Listing the RDMA devices failed.
    GetDeviceList(io::Error),
    /// Opening the device failed.
    OpenDevice(io::Error),
    /// Reading the device's GUID failed.
    DeviceGuid(io::Error),
    /// Querying the device's attributes failed.
    QueryDevice(io::Error),
    /// Querying a port's attributes failed.
    QueryPort {
        /// The port.
        port_num: u8,
        /// The cause.
        source: io::Error,
    },
    /// Querying a GID failed.
    QueryGid {
        /// The port.
        port_num: u8,
        /// The index in the port's GID table.
        gid_index: u32,
        /// The cause.
        source: io::Error,
    },
    /// Querying the GID table failed.
    QueryGidTable(io::Error),
    /// Reading the device's clock failed.
    QueryRealTimeValues(io::Error),
    /// Allocating a protection domain failed.
    AllocProtectionDomain(io::Error),
    /// Registering a memory region failed.
    RegisterMemoryRegion(io::Error),
    /// Advising on a memory region failed.
    AdviseMemoryRegion(io::Error),
    /// Creating a completion channel failed.
    CreateCompletionChannel(io::Error),
    /// Creating a completion queue failed.
    CreateCompletionQueue(io::Error),
    /// Creating a queue pair failed.
    CreateQueuePair(io::Error),
    /// Changing a queue pair's state failed.
    ModifyQueuePair(io::Error),
    /// A queue pair cannot go from one state to the other.
    InvalidQueuePairTransition {
        /// The state it is in.
        current: ffi::ibv_qp_state,
        /// The state asked for.
        next: ffi::ibv_qp_state,
    },
    /// The attribute mask does not fit the queue pair state transition.
    InvalidQueuePairAttributeMask {
        /// The state it is in.
        current: ffi::ibv_qp_state,
        /// The state asked for.
        next: ffi::ibv_qp_state,
        /// The bits given that the transition does not allow.
        invalid: ffi::ibv_qp_attr_mask,
        /// The bits the transition needs that were not given.
        needed: ffi::ibv_qp_attr_mask,
    },
    /// Querying a queue pair's attributes failed.
    QueryQueuePair(io::Error),
    /// Creating an address handle failed.
    CreateAddressHandle(io::Error),
    /// Creating a shared receive queue failed.
    CreateSharedReceiveQueue(io::Error),
    /// Posting a send work request failed.
    PostSend(io::Error),
    /// Posting a receive work request failed.
    PostReceive(io::Error),
    /// Polling the completion queue failed.
    PollCompletionQueue(io::Error),
    /// The connection manager reported an event other than the one awaited.
    ConnectionManager(ffi::rdma_cm_event_type),
    /// Binding to a local address failed.
    BindAddress(io::Error),
    /// Resolving the destination address failed.
    ResolveAddress(io::Error),
    /// Resolving the route to the destination failed.
    ResolveRoute(io::Error),
    /// Establishing the connection failed.
    Connect(io::Error),
    /// Accepting the connection failed.
    Accept(io::Error),
    /// Setting up the connection manager failed.
    ConnectionSetup(io::Error),
}

impl Error {
    /// `wrap(e)`, or [`Error::Unsupported`] if `e` is `EOPNOTSUPP` (as `ibverbs` promotes it)
    /// or, for the `io::Error`s of uverbs' own API, carries a [`uverbs_drivers::error::Error`]
    /// whose `Unsupported` (or a kernel `EOPNOTSUPP`) says the same.
    pub(crate) fn from_uverbs(e: io::Error, wrap: impl FnOnce(io::Error) -> Error) -> Error {
        use uverbs_drivers::error::{Errno, Error as DriverError};
        let unsupported = e.raw_os_error() == Some(libc::EOPNOTSUPP)
            || matches!(
                e.get_ref()
                    .and_then(|inner| inner.downcast_ref::<DriverError>()),
                Some(DriverError::Unsupported { .. })
                    | Some(DriverError::Kernel {
                        errno: Errno::EOPNOTSUPP,
                        ..
                    })
            );
        if unsupported {
            Error::Unsupported
        } else {
            wrap(e)
        }
    }

    /// The `io::Error` this error wraps, if it wraps one.
    fn io_source(&self) -> Option<&io::Error> {
        match self {
            Error::Unsupported
            | Error::PortNotActive(_)
            | Error::GidMismatch
            | Error::DeviceIndexUnavailable
            | Error::InvalidQueuePairTransition { .. }
            | Error::InvalidQueuePairAttributeMask { .. }
            | Error::ConnectionManager(_) => None,
            Error::GetDeviceList(e)
            | Error::OpenDevice(e)
            | Error::DeviceGuid(e)
            | Error::QueryDevice(e)
            | Error::QueryPort { source: e, .. }
            | Error::QueryGid { source: e, .. }
            | Error::QueryGidTable(e)
            | Error::QueryRealTimeValues(e)
            | Error::AllocProtectionDomain(e)
            | Error::RegisterMemoryRegion(e)
            | Error::AdviseMemoryRegion(e)
            | Error::CreateCompletionChannel(e)
            | Error::CreateCompletionQueue(e)
            | Error::CreateQueuePair(e)
            | Error::ModifyQueuePair(e)
            | Error::QueryQueuePair(e)
            | Error::CreateAddressHandle(e)
            | Error::CreateSharedReceiveQueue(e)
            | Error::PostSend(e)
            | Error::PostReceive(e)
            | Error::PollCompletionQueue(e)
            | Error::BindAddress(e)
            | Error::ResolveAddress(e)
            | Error::ResolveRoute(e)
            | Error::Connect(e)
            | Error::Accept(e)
            | Error::ConnectionSetup(e) => Some(e),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unsupported => f.write_str("operation not supported by the device"),
            Error::PortNotActive(port) => write!(f, "port {port} is not ACTIVE or ARMED"),
            Error::GidMismatch => {
                f.write_str("a GID was set for the remote endpoint but not the local one")
            }
            Error::DeviceIndexUnavailable => f.write_str("the device index is not known"),
            Error::GetDeviceList(_) => f.write_str("failed to list RDMA devices"),
            Error::OpenDevice(_) => f.write_str("failed to open the RDMA device"),
            Error::DeviceGuid(_) => f.write_str("failed to read the device GUID"),
            Error::QueryDevice(_) => f.write_str("failed to query device attributes"),
            Error::QueryPort { port_num, .. } => {
                write!(f, "failed to query attributes of port {port_num}")
            }
            Error::QueryGid {
                port_num,
                gid_index,
                ..
            } => write!(
                f,
                "failed to query GID index {gid_index} on port {port_num}"
            ),
            Error::QueryGidTable(_) => f.write_str("failed to query the GID table"),
            Error::QueryRealTimeValues(_) => {
                f.write_str("failed to query the device real-time values")
            }
            Error::AllocProtectionDomain(_) => {
                f.write_str("failed to allocate a protection domain")
            }
            Error::RegisterMemoryRegion(_) => f.write_str("failed to register a memory region"),
            Error::AdviseMemoryRegion(_) => f.write_str("failed to advise on a memory region"),
            Error::CreateCompletionChannel(_) => {
                f.write_str("failed to create a completion channel")
            }
            Error::CreateCompletionQueue(_) => f.write_str("failed to create a completion queue"),
            Error::CreateQueuePair(_) => f.write_str("failed to create a queue pair"),
            Error::ModifyQueuePair(_) => f.write_str("failed to transition the queue pair state"),
            Error::InvalidQueuePairTransition { current, next } => write!(
                f,
                "invalid queue pair state transition from {current:?} to {next:?}"
            ),
            Error::InvalidQueuePairAttributeMask {
                current,
                next,
                invalid,
                needed,
            } => write!(
                f,
                "invalid attribute mask for queue pair transition from {current:?} to {next:?}: \
                 disallowed bits {invalid:?}, missing required bits {needed:?}"
            ),
            Error::QueryQueuePair(_) => f.write_str("failed to query queue pair attributes"),
            Error::CreateAddressHandle(_) => f.write_str("failed to create an address handle"),
            Error::CreateSharedReceiveQueue(_) => {
                f.write_str("failed to create a shared receive queue")
            }
            Error::PostSend(_) => f.write_str("failed to post a send work request"),
            Error::PostReceive(_) => f.write_str("failed to post a receive work request"),
            Error::PollCompletionQueue(_) => f.write_str("failed to poll the completion queue"),
            Error::ConnectionManager(event) => {
                write!(f, "the connection manager reported {event:?}")
            }
            Error::BindAddress(_) => f.write_str("failed to bind to a local address"),
            Error::ResolveAddress(_) => f.write_str("failed to resolve the destination address"),
            Error::ResolveRoute(_) => f.write_str("failed to resolve the route to the destination"),
            Error::Connect(_) => f.write_str("failed to establish the connection"),
            Error::Accept(_) => f.write_str("failed to accept the connection"),
            Error::ConnectionSetup(_) => f.write_str("connection manager setup failed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io_source()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// For `?` into [`io::Result`]: [`Error::Unsupported`] becomes `EOPNOTSUPP`; a variant whose
/// cause is an OS error becomes that errno (so `raw_os_error()` works, and the step that failed is
/// lost); any other error is kept as the payload, with its cause's [`io::ErrorKind`] or
/// [`io::ErrorKind::Other`].
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        if let Error::Unsupported = e {
            return io::Error::from_raw_os_error(libc::EOPNOTSUPP);
        }
        match e.io_source().map(|s| (s.raw_os_error(), s.kind())) {
            Some((Some(errno), _)) => io::Error::from_raw_os_error(errno),
            Some((None, kind)) => io::Error::new(kind, e),
            None => io::Error::other(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    fn io() -> io::Error {
        io::Error::from_raw_os_error(libc::EINVAL)
    }

    #[test]
    fn display_texts_are_ibverbs_texts() {
        use ffi::ibv_qp_attr_mask as M;
        use ffi::ibv_qp_state as S;
        let cases: Vec<(Error, &str)> = vec![
            (Error::Unsupported, "operation not supported by the device"),
            (Error::PortNotActive(1), "port 1 is not ACTIVE or ARMED"),
            (
                Error::GidMismatch,
                "a GID was set for the remote endpoint but not the local one",
            ),
            (
                Error::DeviceIndexUnavailable,
                "the device index is not known",
            ),
            (Error::GetDeviceList(io()), "failed to list RDMA devices"),
            (Error::OpenDevice(io()), "failed to open the RDMA device"),
            (Error::DeviceGuid(io()), "failed to read the device GUID"),
            (
                Error::QueryDevice(io()),
                "failed to query device attributes",
            ),
            (
                Error::QueryPort {
                    port_num: 2,
                    source: io(),
                },
                "failed to query attributes of port 2",
            ),
            (
                Error::QueryGid {
                    port_num: 1,
                    gid_index: 3,
                    source: io(),
                },
                "failed to query GID index 3 on port 1",
            ),
            (Error::QueryGidTable(io()), "failed to query the GID table"),
            (
                Error::QueryRealTimeValues(io()),
                "failed to query the device real-time values",
            ),
            (
                Error::AllocProtectionDomain(io()),
                "failed to allocate a protection domain",
            ),
            (
                Error::RegisterMemoryRegion(io()),
                "failed to register a memory region",
            ),
            (
                Error::AdviseMemoryRegion(io()),
                "failed to advise on a memory region",
            ),
            (
                Error::CreateCompletionChannel(io()),
                "failed to create a completion channel",
            ),
            (
                Error::CreateCompletionQueue(io()),
                "failed to create a completion queue",
            ),
            (
                Error::CreateQueuePair(io()),
                "failed to create a queue pair",
            ),
            (
                Error::ModifyQueuePair(io()),
                "failed to transition the queue pair state",
            ),
            (
                Error::InvalidQueuePairTransition {
                    current: S::IBV_QPS_RESET,
                    next: S::IBV_QPS_RTS,
                },
                "invalid queue pair state transition from IBV_QPS_RESET to IBV_QPS_RTS",
            ),
            (
                Error::InvalidQueuePairAttributeMask {
                    current: S::IBV_QPS_INIT,
                    next: S::IBV_QPS_RTR,
                    invalid: M::IBV_QP_ACCESS_FLAGS,
                    needed: M::IBV_QP_AV | M::IBV_QP_DEST_QPN,
                },
                "invalid attribute mask for queue pair transition from IBV_QPS_INIT to \
                 IBV_QPS_RTR: disallowed bits ibv_qp_attr_mask(8), missing required bits \
                 ibv_qp_attr_mask(1048704)",
            ),
            (
                Error::QueryQueuePair(io()),
                "failed to query queue pair attributes",
            ),
            (
                Error::CreateAddressHandle(io()),
                "failed to create an address handle",
            ),
            (
                Error::CreateSharedReceiveQueue(io()),
                "failed to create a shared receive queue",
            ),
            (Error::PostSend(io()), "failed to post a send work request"),
            (
                Error::PostReceive(io()),
                "failed to post a receive work request",
            ),
            (
                Error::PollCompletionQueue(io()),
                "failed to poll the completion queue",
            ),
            (
                Error::ConnectionManager(ffi::rdma_cm_event_type::RDMA_CM_EVENT_REJECTED),
                "the connection manager reported RDMA_CM_EVENT_REJECTED",
            ),
            (
                Error::BindAddress(io()),
                "failed to bind to a local address",
            ),
            (
                Error::ResolveAddress(io()),
                "failed to resolve the destination address",
            ),
            (
                Error::ResolveRoute(io()),
                "failed to resolve the route to the destination",
            ),
            (Error::Connect(io()), "failed to establish the connection"),
            (Error::Accept(io()), "failed to accept the connection"),
            (
                Error::ConnectionSetup(io()),
                "connection manager setup failed",
            ),
        ];
        assert_eq!(
            cases.len(),
            34,
            "27 variants plus the 7 of the connection manager"
        );
        for (e, text) in cases {
            assert_eq!(e.to_string(), text, "{e:?}");
            // The source is the io::Error exactly where the variant has one.
            let has_io = format!("{e:?}").contains("Os {");
            assert_eq!(e.source().is_some(), has_io, "{e:?}");
            if let Some(s) = e.source() {
                let s = s.downcast_ref::<io::Error>().expect("an io::Error");
                assert_eq!(s.raw_os_error(), Some(libc::EINVAL));
            }
        }
    }

    #[test]
    fn errors_are_send_sync_static() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
    }

    #[test]
    fn eopnotsupp_becomes_unsupported() {
        let e = Error::from_uverbs(
            io::Error::from_raw_os_error(libc::EOPNOTSUPP),
            Error::RegisterMemoryRegion,
        );
        assert!(matches!(e, Error::Unsupported));
        let e = Error::from_uverbs(
            io::Error::from_raw_os_error(libc::ENOMEM),
            Error::RegisterMemoryRegion,
        );
        assert!(
            matches!(e, Error::RegisterMemoryRegion(ref s) if s.raw_os_error() == Some(libc::ENOMEM))
        );
        // uverbs' own `Unsupported`, inside the io::Error, is looked at too.
        let payload = || {
            io::Error::from(uverbs_drivers::error::Error::Unsupported {
                verb: uverbs_drivers::error::Verb::AdviseMr,
            })
        };
        assert!(matches!(
            Error::from_uverbs(payload(), Error::AdviseMemoryRegion),
            Error::Unsupported
        ));
    }

    #[test]
    fn from_uverbs_maps_only_unsupported() {
        use uverbs_drivers::error::{Errno, Error as DriverError, Verb};
        let e = Error::from_uverbs(
            io::Error::from_raw_os_error(libc::EOPNOTSUPP),
            Error::QueryGidTable,
        );
        assert!(matches!(e, Error::Unsupported));
        let e = Error::from_uverbs(
            io::Error::from(DriverError::Kernel {
                verb: Verb::QueryGidTable,
                errno: Errno::EOPNOTSUPP,
            }),
            Error::QueryGidTable,
        );
        assert!(matches!(e, Error::Unsupported));
        let e = Error::from_uverbs(
            io::Error::from(DriverError::kernel(Verb::RegMr, Errno::EFAULT)),
            Error::RegisterMemoryRegion,
        );
        let Error::RegisterMemoryRegion(inner) = e else {
            panic!("wrapped: {e:?}");
        };
        assert!(matches!(
            inner
                .get_ref()
                .and_then(|i| i.downcast_ref::<DriverError>()),
            Some(DriverError::Kernel {
                errno: Errno::EFAULT,
                ..
            })
        ));
        let other = Error::from_uverbs(io::Error::other("not ours"), Error::PostSend);
        assert!(matches!(other, Error::PostSend(_)));
    }

    #[test]
    fn into_io_error() {
        let unsupported = io::Error::from(Error::Unsupported);
        assert_eq!(unsupported.raw_os_error(), Some(libc::EOPNOTSUPP));

        let os = io::Error::from(Error::CreateQueuePair(io::Error::from_raw_os_error(
            libc::ENOMEM,
        )));
        assert_eq!(os.raw_os_error(), Some(libc::ENOMEM));

        let no_source = io::Error::from(Error::PortNotActive(1));
        assert_eq!(no_source.kind(), io::ErrorKind::Other);
        assert_eq!(no_source.to_string(), "port 1 is not ACTIVE or ARMED");
        assert!(matches!(
            no_source.get_ref().and_then(|e| e.downcast_ref::<Error>()),
            Some(Error::PortNotActive(1))
        ));

        let custom = io::Error::from(Error::ModifyQueuePair(io::Error::new(
            io::ErrorKind::TimedOut,
            "route",
        )));
        assert_eq!(custom.kind(), io::ErrorKind::TimedOut);
        assert_eq!(
            custom.to_string(),
            "failed to transition the queue pair state"
        );

        fn question_mark() -> io::Result<()> {
            Err(Error::GidMismatch)?;
            Ok(())
        }
        assert_eq!(question_mark().unwrap_err().kind(), io::ErrorKind::Other);
    }
}
