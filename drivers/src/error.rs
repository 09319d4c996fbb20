//! Errors of the command channel and the backends.
//!
//! Every failure names what was being done (the [`Verb`], or the sysfs/netlink step) and, where the
//! kernel said no, carries its errno. The public crate turns these into `std::io::Error`s that keep this
//! value as their payload.

use std::fmt;
use std::io;
use std::path::PathBuf;

pub use nix::errno::Errno;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A kernel operation, named as the uverbs command it is (the name in errors and logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verb {
    /// Opening `/dev/infiniband/uverbsN`.
    OpenDevice,
    /// `GET_CONTEXT`: allocating the user context.
    GetContext,
    /// `ASYNC_EVENT_ALLOC`: creating the async event file.
    AsyncEventAlloc,
    /// `QUERY_DEVICE` / `EX_QUERY_DEVICE`.
    QueryDevice,
    /// `QUERY_PORT`.
    QueryPort,
    /// `ibv_query_pkey`: a port's P_Key table entry, which libibverbs reads from sysfs.
    QueryPkey,
    /// `QUERY_GID_TABLE`.
    QueryGidTable,
    /// `QUERY_GID_ENTRY`.
    QueryGidEntry,
    /// `QUERY_CONTEXT`.
    QueryContext,
    /// `ALLOC_PD`.
    AllocPd,
    /// `DEALLOC_PD` / `PD_DESTROY`.
    DeallocPd,
    /// `REG_MR`.
    RegMr,
    /// `DEREG_MR` / `MR_DESTROY`.
    DeregMr,
    /// `REREG_MR`: changing a live region's protection domain, access or memory.
    ReregMr,
    /// `ADVISE_MR`: prefetching on-demand memory.
    AdviseMr,
    /// `REG_DMABUF_MR`: registering a dma-buf.
    RegDmabufMr,
    /// Reading the device's clock (mlx5: the clock-info page the kernel maps).
    ReadClock,
    /// `CREATE_CQ`.
    CreateCq,
    /// `RESIZE_CQ`.
    ResizeCq,
    /// `EX_MODIFY_CQ`: completion moderation.
    ModifyCq,
    /// `DESTROY_CQ`.
    DestroyCq,
    /// `CREATE_QP`.
    CreateQp,
    /// `MODIFY_QP`.
    ModifyQp,
    /// `QUERY_QP`.
    QueryQp,
    /// `DESTROY_QP`.
    DestroyQp,
    /// `ALLOC_MW`: allocating a memory window.
    AllocMw,
    /// `DEALLOC_MW` / `MW_DESTROY`.
    DeallocMw,
    /// `CREATE_COMP_CHANNEL`.
    CreateCompChannel,
    /// `REQ_NOTIFY_CQ`: arming a completion queue.
    ReqNotifyCq,
    /// Posting send work requests (and ringing the send doorbell).
    PostSend,
    /// Posting receive work requests.
    PostRecv,
    /// Polling a completion queue.
    PollCq,
    /// Mapping queue memory the kernel handed out.
    Mmap,
    /// `INVOKE_WRITE` used as a probe for the ioctl path of write commands.
    ProbeInvokeWrite,
    /// A raw command issued through [`crate::chan::Channel`] by its number.
    Raw(RawVerb),
    /// Reading an event file.
    ReadEvent,
    /// `CREATE_AH`: creating an address handle.
    CreateAh,
    /// `DESTROY_AH` / `AH_DESTROY`.
    DestroyAh,
    /// `ATTACH_MCAST`: attaching a UD queue pair to a multicast group.
    AttachMcast,
    /// `DETACH_MCAST`: detaching a UD queue pair from a multicast group.
    DetachMcast,
    /// `CREATE_SRQ`.
    CreateSrq,
    /// `MODIFY_SRQ`: setting (arming) the limit of a shared receive queue.
    ModifySrq,
    /// `QUERY_SRQ`.
    QuerySrq,
    /// `DESTROY_SRQ`.
    DestroySrq,
    /// Posting receive work requests to a shared receive queue.
    PostSrqRecv,
    /// Opening the connection manager's file, `/dev/infiniband/rdma_cm`.
    OpenRdmaCm,
    /// A connection manager command (`RDMA_USER_CM_CMD_*`), by its number.
    RdmaCm(u32),
}

/// The ids of a raw command, for errors of commands without a dedicated [`Verb`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RawVerb {
    /// An ioctl method: (object id, method id).
    Ioctl(u16, u16),
    /// A write command number (with `IB_USER_VERBS_CMD_FLAG_EXTENDED` for the extended ones).
    Write(u32),
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Verb::OpenDevice => "open device",
            Verb::GetContext => "GET_CONTEXT",
            Verb::AsyncEventAlloc => "ASYNC_EVENT_ALLOC",
            Verb::QueryDevice => "QUERY_DEVICE",
            Verb::QueryPort => "QUERY_PORT",
            Verb::QueryPkey => "query P_Key",
            Verb::QueryGidTable => "QUERY_GID_TABLE",
            Verb::QueryGidEntry => "QUERY_GID_ENTRY",
            Verb::QueryContext => "QUERY_CONTEXT",
            Verb::AllocPd => "ALLOC_PD",
            Verb::DeallocPd => "DEALLOC_PD",
            Verb::RegMr => "REG_MR",
            Verb::DeregMr => "DEREG_MR",
            Verb::ReregMr => "REREG_MR",
            Verb::AdviseMr => "ADVISE_MR",
            Verb::RegDmabufMr => "REG_DMABUF_MR",
            Verb::ReadClock => "read the device clock",
            Verb::CreateCq => "CREATE_CQ",
            Verb::ResizeCq => "RESIZE_CQ",
            Verb::ModifyCq => "MODIFY_CQ",
            Verb::DestroyCq => "DESTROY_CQ",
            Verb::CreateQp => "CREATE_QP",
            Verb::ModifyQp => "MODIFY_QP",
            Verb::QueryQp => "QUERY_QP",
            Verb::DestroyQp => "DESTROY_QP",
            Verb::AllocMw => "ALLOC_MW",
            Verb::DeallocMw => "DEALLOC_MW",
            Verb::CreateCompChannel => "CREATE_COMP_CHANNEL",
            Verb::ReqNotifyCq => "REQ_NOTIFY_CQ",
            Verb::PostSend => "POST_SEND",
            Verb::PostRecv => "POST_RECV",
            Verb::PollCq => "POLL_CQ",
            Verb::Mmap => "mmap",
            Verb::ProbeInvokeWrite => "INVOKE_WRITE probe",
            Verb::Raw(RawVerb::Ioctl(o, m)) => {
                return write!(f, "ioctl object {o:#x} method {m:#x}")
            }
            Verb::Raw(RawVerb::Write(c)) => return write!(f, "write command {c:#x}"),
            Verb::ReadEvent => "read event",
            Verb::CreateSrq => "CREATE_SRQ",
            Verb::ModifySrq => "MODIFY_SRQ",
            Verb::QuerySrq => "QUERY_SRQ",
            Verb::DestroySrq => "DESTROY_SRQ",
            Verb::PostSrqRecv => "POST_SRQ_RECV",
            Verb::CreateAh => "CREATE_AH",
            Verb::DestroyAh => "DESTROY_AH",
            Verb::AttachMcast => "ATTACH_MCAST",
            Verb::DetachMcast => "DETACH_MCAST",
            Verb::OpenRdmaCm => "open rdma_cm",
            Verb::RdmaCm(cmd) => return write!(f, "rdma_cm {}", command_name(*cmd)),
        };
        f.write_str(name)
    }
}

/// Everything that can go wrong below the public API.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The kernel refused a verb with this errno.
    Kernel {
        /// What was being done.
        verb: Verb,
        /// The kernel's answer.
        errno: Errno,
    },
    /// The kernel cannot do this verb at all (no ioctl method and no write command), or the backend
    /// does not implement it.
    Unsupported {
        /// What was asked for.
        verb: Verb,
    },
    /// The kernel answered with something this crate cannot make sense of.
    Protocol {
        /// What was being done.
        verb: Verb,
        /// What was wrong with the answer.
        what: String,
    },
    /// The kernel has no uverbs support at all (`ib_uverbs` not loaded, or no RDMA in the kernel).
    NoRdmaSubsystem,
    /// The file given as a device node is not a uverbs character device (a regular file, another
    /// driver's device): nothing was sent to it.
    NotAUverbsDevice {
        /// The path opened.
        path: PathBuf,
        /// What it is instead.
        what: String,
    },
    /// There is no RDMA device of that name.
    NoSuchDevice {
        /// The name asked for.
        name: String,
    },
    /// The device exists, but its driver has no backend here.
    UnsupportedDriver {
        /// The device's name.
        device: String,
        /// Its driver, as far as it could be identified.
        driver: String,
    },
    /// Reading device information from sysfs failed.
    Sysfs {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// Talking to the kernel's RDMA netlink interface failed.
    Netlink {
        /// What was being done.
        what: &'static str,
        /// The errno, if the kernel gave one.
        errno: Option<Errno>,
    },
    /// A work queue has no free slot for the request.
    QueueFull {
        /// The verb.
        verb: Verb,
        /// The queue's capacity in work requests.
        capacity: u32,
    },
    /// The queue pair is in a state that does not allow this.
    WrongState {
        /// The verb.
        verb: Verb,
        /// The state it is in (`IBV_QPS_*` numbering).
        state: u8,
        /// What was needed.
        needed: &'static str,
    },
    /// A queue pair modify that the state machine does not allow.
    InvalidModify {
        /// The transport (`IB_UVERBS_QPT_*`).
        qp_type: u8,
        /// Why.
        refusal: crate::qp_state::Refusal,
    },
    /// A caller's argument is out of range for the verb.
    InvalidArgument {
        /// The verb.
        verb: Verb,
        /// What is wrong.
        what: String,
    },
    /// The peer rejected the connection (the connection manager's `REJECTED` event).
    Rejected {
        /// The reject reason (InfiniBand CM numbering: 28 is consumer-defined, the reason of an
        /// application's reject; 8 an invalid service id, no listener on that port).
        reason: u32,
        /// The peer's private data (none when the kernel rejected on its own).
        private_data: Vec<u8>,
    },
    /// A connection manager operation ended with an error event (`ADDR_ERROR`, `ROUTE_ERROR`,
    /// `UNREACHABLE`, `CONNECT_ERROR`, `MULTICAST_ERROR`) or an unexpected one.
    CmEvent {
        /// The operation that was waiting.
        verb: Verb,
        /// The event's name (`"UNREACHABLE"`, ...).
        event: &'static str,
        /// The event's status.
        errno: Errno,
    },
    /// Waiting for an event took longer than the caller allowed.
    TimedOut {
        /// What was being waited for.
        verb: Verb,
    },
}

/// Takes the backends' short names out of the list of backends.
macro_rules! backend_names {
    ([$($V:ident: $m:ident, $P:path, $id:ident, $name:literal, $sk:ident($sv:literal);)+]) => {
        &[$($name),+]
    };
}

/// The backends' short names, from the one list of backends.
const BACKEND_NAMES: &[&str] = crate::backends!(backend_names);

impl Error {
    /// Whether the command that failed may have run all the same: a model daemon's connection
    /// that broke during it (`ENOTCONN`, `sys::remote`). The daemon may then hold what the command
    /// named (a ring, a registration) and write it with `process_vm_writev` for as long as it
    /// runs, so memory the command named must not be freed (it is leaked). The kernel's errors
    /// never mean that: a command it refused left nothing behind.
    pub fn may_have_run(&self) -> bool {
        matches!(
            self,
            Error::Kernel {
                errno: Errno::ENOTCONN,
                ..
            }
        )
    }

    /// A kernel error; `EOPNOTSUPP` becomes [`Error::Unsupported`].
    pub fn kernel(verb: Verb, errno: Errno) -> Self {
        match errno {
            Errno::EOPNOTSUPP => Error::Unsupported { verb },
            errno => Error::Kernel { verb, errno },
        }
    }

    /// The errno this error stands for: the kernel's where it gave one, otherwise the closest match.
    pub fn errno(&self) -> Errno {
        match self {
            Error::Kernel { errno, .. } => *errno,
            Error::Unsupported { .. } => Errno::EOPNOTSUPP,
            Error::Protocol { .. } => Errno::EPROTO,
            Error::NoRdmaSubsystem => Errno::ENOSYS,
            Error::NoSuchDevice { .. } => Errno::ENODEV,
            Error::NotAUverbsDevice { .. } => Errno::ENODEV,
            Error::UnsupportedDriver { .. } => Errno::ENOSYS,
            Error::Sysfs { source, .. } => {
                Errno::from_raw(source.raw_os_error().unwrap_or(libc::EIO))
            }
            Error::Netlink { errno, .. } => errno.unwrap_or(Errno::EIO),
            Error::InvalidArgument { .. } => Errno::EINVAL,
            Error::QueueFull { .. } => Errno::ENOMEM,
            Error::InvalidModify { .. } => Errno::EINVAL,
            Error::WrongState { .. } => Errno::EINVAL,
            Error::Rejected { .. } => Errno::ECONNREFUSED,
            Error::CmEvent { errno, .. } => *errno,
            Error::TimedOut { .. } => Errno::ETIMEDOUT,
        }
    }

    /// The verb this error belongs to, if it belongs to one.
    pub fn verb(&self) -> Option<Verb> {
        match self {
            Error::Kernel { verb, .. }
            | Error::Unsupported { verb }
            | Error::Protocol { verb, .. }
            | Error::InvalidArgument { verb, .. }
            | Error::QueueFull { verb, .. }
            | Error::WrongState { verb, .. }
            | Error::CmEvent { verb, .. }
            | Error::TimedOut { verb } => Some(*verb),
            Error::InvalidModify { .. } => Some(Verb::ModifyQp),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Kernel { verb, errno } => {
                write!(f, "{verb} failed: {errno:?} ({})", errno.desc())
            }
            Error::Unsupported { verb } => write!(f, "{verb} is not supported by this device or kernel"),
            Error::Protocol { verb, what } => write!(f, "{verb}: unexpected answer from the kernel: {what}"),
            Error::NoRdmaSubsystem => f.write_str(
                "Function not implemented: the kernel has no uverbs support (is the ib_uverbs module loaded?)",
            ),
            Error::NoSuchDevice { name } => write!(f, "no RDMA device named {name:?}"),
            Error::NotAUverbsDevice { path, what } => {
                write!(f, "{} is not a uverbs device: {what}", path.display())
            }
            Error::UnsupportedDriver { device, driver } => write!(
                f,
                "device {device:?} uses driver {driver:?}, which uverbs has no backend for \
                 (supported: {})",
                BACKEND_NAMES.join(", ")
            ),
            Error::Sysfs { path, source } => write!(f, "reading {}: {source}", path.display()),
            Error::Netlink { what, errno: Some(e) } => {
                write!(f, "RDMA netlink {what} failed: {e:?} ({})", e.desc())
            }
            Error::Netlink { what, errno: None } => write!(f, "RDMA netlink {what} failed"),
            Error::InvalidArgument { verb, what } => write!(f, "{verb}: invalid argument: {what}"),
            Error::InvalidModify { refusal, .. } => {
                use crate::qp_state::{mask_names, Refusal};
                match refusal {
                    Refusal::Transition { from, to } => write!(
                        f,
                        "MODIFY_QP: a queue pair cannot go from {} to {}",
                        qp_state_name(*from),
                        qp_state_name(*to)
                    ),
                    Refusal::Missing(m) => write!(f, "MODIFY_QP: this transition needs {}", mask_names(*m)),
                    Refusal::Unexpected(m) => write!(f, "MODIFY_QP: this transition does not take {}", mask_names(*m)),
                }
            }
            Error::QueueFull { verb, capacity } => {
                write!(f, "{verb}: the queue is full ({capacity} work requests outstanding)")
            }
            Error::WrongState { verb, state, needed } => {
                write!(f, "{verb}: the queue pair is in state {}, needs {needed}", qp_state_name(*state))
            }
            Error::Rejected { reason, private_data } => write!(
                f,
                "the peer rejected the connection: reason {reason} ({}), {} bytes of private data",
                reject_reason_name(*reason),
                private_data.len()
            ),
            Error::CmEvent { verb, event, errno } => {
                write!(f, "{verb}: event {event}: {errno:?} ({})", errno.desc())
            }
            Error::TimedOut { verb } => write!(f, "{verb}: no event within the timeout"),
        }
    }
}

/// The name of a connection manager command, for errors.
pub fn command_name(cmd: u32) -> &'static str {
    const NAMES: [&str; 23] = [
        "CREATE_ID",
        "DESTROY_ID",
        "BIND_IP",
        "RESOLVE_IP",
        "RESOLVE_ROUTE",
        "QUERY_ROUTE",
        "CONNECT",
        "LISTEN",
        "ACCEPT",
        "REJECT",
        "DISCONNECT",
        "INIT_QP_ATTR",
        "GET_EVENT",
        "GET_OPTION",
        "SET_OPTION",
        "NOTIFY",
        "JOIN_IP_MCAST",
        "LEAVE_MCAST",
        "MIGRATE_ID",
        "QUERY",
        "BIND",
        "RESOLVE_ADDR",
        "JOIN_MCAST",
    ];
    NAMES
        .get(cmd as usize)
        .copied()
        .unwrap_or("unknown command")
}

/// The name of an InfiniBand CM reject reason (the `status` of a `REJECTED` event; the kernel's
/// `enum ib_cm_rej_reason`, which no uapi header carries).
pub fn reject_reason_name(reason: u32) -> &'static str {
    match reason {
        1 => "no QP",
        2 => "no EEC",
        3 => "no resources",
        4 => "timeout",
        5 => "unsupported",
        6 => "invalid communication id",
        7 => "invalid communication instance",
        8 => "invalid service id (nobody listens there)",
        9 => "invalid transport type",
        10 => "stale connection",
        12 => "invalid GID",
        26 => "invalid MTU",
        27 => "insufficient responder resources",
        28 => "consumer-defined (the application rejected)",
        29 => "invalid RNR retry",
        30 => "duplicate local communication id",
        _ => "other",
    }
}

/// The name of a QP state (`IBV_QPS_*` numbering).
pub fn qp_state_name(state: u8) -> &'static str {
    match state {
        0 => "RESET",
        1 => "INIT",
        2 => "RTR",
        3 => "RTS",
        4 => "SQD",
        5 => "SQE",
        6 => "ERR",
        _ => "UNKNOWN",
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Sysfs { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = io::Error::from_raw_os_error(e.errno() as i32).kind();
        io::Error::new(kind, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_error_names_verb_and_errno() {
        let e = Error::kernel(Verb::QueryPort, Errno::EINVAL);
        assert_eq!(
            e.to_string(),
            "QUERY_PORT failed: EINVAL (Invalid argument)"
        );
        assert_eq!(e.errno(), Errno::EINVAL);
        assert_eq!(e.verb(), Some(Verb::QueryPort));
    }

    #[test]
    fn eopnotsupp_is_unsupported() {
        let e = Error::kernel(Verb::QueryGidTable, Errno::EOPNOTSUPP);
        assert!(matches!(
            e,
            Error::Unsupported {
                verb: Verb::QueryGidTable
            }
        ));
        assert_eq!(e.errno(), Errno::EOPNOTSUPP);
    }

    #[test]
    fn io_error_keeps_payload_and_kind() {
        let io: io::Error = Error::NoSuchDevice {
            name: "mlx5_9".into(),
        }
        .into();
        assert_eq!(io.kind(), io::Error::from_raw_os_error(libc::ENODEV).kind());
        let inner = io
            .get_ref()
            .and_then(|e| e.downcast_ref::<Error>())
            .unwrap();
        assert!(matches!(inner, Error::NoSuchDevice { name } if name == "mlx5_9"));
    }
}
