//! The RDMA connection manager's command file, `/dev/infiniband/rdma_cm` (module `rdma_ucm`).
//!
//! Every command is one `write()` of an [`rdma_ucm_cmd_hdr`] and the command's struct
//! (`<rdma/rdma_user_cm.h>`, ABI version 4); answers come back through the `response` user pointer
//! the struct carries. [`CmFile`] builds each command with its answer on the stack, so the pointer is
//! valid by construction, and turns the kernel's errno into an [`Error`] naming the command.
//!
//! Events are read with `GET_EVENT`. The file is opened non-blocking, so [`CmFile::get_event_raw`]
//! answers `None` at once when nothing is queued; blocking callers wait with
//! [`CmFile::wait_readable`] (the file is pollable) and then read. [`decode_event`] checks and
//! decodes the kernel's answer into a [`CmEvent`]: it is the fuzzing target for the event path.
//!
//! The file itself never leaves [`CmFile`]: a descriptor of it would let safe code `write(2)` any
//! command, and the kernel writes each command's answer to whatever address its `response` field
//! names. A reactor waits on [`CmFile::readiness_fd`] instead, an epoll instance that watches the
//! file and takes no commands.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes};

pub use crate::error::{command_name, reject_reason_name};
use crate::error::{Error, Result, Verb};
use crate::sys;
use crate::uapi::{self, *};

/// The connection manager's character device.
pub const RDMA_CM_PATH: &str = "/dev/infiniband/rdma_cm";
/// Where the kernel publishes the file's ABI version.
pub const ABI_VERSION_PATH: &str = "/sys/class/misc/rdma_cm/abi_version";

/// Private data a connect request (`REQ`) carries on InfiniBand and RoCE: the CM's 92 bytes less
/// the connection manager's 36-byte address header.
pub const MAX_CONNECT_PRIVATE_DATA: usize = 56;
/// Private data an accept (`REP`) carries.
pub const MAX_ACCEPT_PRIVATE_DATA: usize = 196;
/// Private data a reject (`REJ`) carries.
pub const MAX_REJECT_PRIVATE_DATA: usize = 148;
/// Private data a datagram resolve (`SIDR_REQ`) carries: 216 bytes less the address header.
pub const MAX_UD_CONNECT_PRIVATE_DATA: usize = 180;
/// Private data a datagram answer (`SIDR_REP`) carries.
pub const MAX_UD_ACCEPT_PRIVATE_DATA: usize = 136;

/// The name of an event (`RDMA_CM_EVENT_*` without the prefix).
pub fn event_name(event: u32) -> &'static str {
    const NAMES: [&str; 16] = [
        "ADDR_RESOLVED",
        "ADDR_ERROR",
        "ROUTE_RESOLVED",
        "ROUTE_ERROR",
        "CONNECT_REQUEST",
        "CONNECT_RESPONSE",
        "CONNECT_ERROR",
        "UNREACHABLE",
        "REJECTED",
        "ESTABLISHED",
        "DISCONNECTED",
        "DEVICE_REMOVAL",
        "MULTICAST_JOIN",
        "MULTICAST_ERROR",
        "ADDR_CHANGE",
        "TIMEWAIT_EXIT",
    ];
    NAMES
        .get(event as usize)
        .copied()
        .unwrap_or("unknown event")
}

/// A socket address in the kernel's `sockaddr_storage`, and the bytes of it in use.
pub fn encode_addr(addr: &SocketAddr) -> (__kernel_sockaddr_storage, u16) {
    let mut ss = __kernel_sockaddr_storage::default();
    let bytes = ss.as_mut_bytes();
    match addr {
        SocketAddr::V4(a) => {
            let sin = uapi::sockaddr_in {
                sin_family: libc::AF_INET as u16,
                sin_port: a.port().to_be(),
                sin_addr: u32::from_ne_bytes(a.ip().octets()),
                __pad: [0; 8],
            };
            bytes[..16].copy_from_slice(sin.as_bytes());
            (ss, 16)
        }
        SocketAddr::V6(a) => {
            let sin6 = uapi::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as u16,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: a.ip().octets(),
                sin6_scope_id: a.scope_id(),
            };
            bytes[..28].copy_from_slice(sin6.as_bytes());
            (ss, 28)
        }
    }
}

/// The socket address in a kernel `sockaddr_storage`: `None` for an unset (`AF_UNSPEC`) or non-IP
/// address.
pub fn decode_addr(ss: &__kernel_sockaddr_storage) -> Option<SocketAddr> {
    let bytes = ss.as_bytes();
    match i32::from(ss.ss_family) {
        libc::AF_INET => {
            let (sin, _) = uapi::sockaddr_in::read_from_prefix(bytes).ok()?;
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(sin.sin_addr.to_ne_bytes()),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            let (sin6, _) = uapi::sockaddr_in6::read_from_prefix(bytes).ok()?;
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr),
                u16::from_be(sin6.sin6_port),
                u32::from_be(sin6.sin6_flowinfo),
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// The GID in a `sockaddr_ib` (how `QUERY_GID` reports them); `None` for another family.
pub fn decode_gid(ss: &__kernel_sockaddr_storage) -> Option<[u8; 16]> {
    if ss.ss_family != AF_IB {
        return None;
    }
    let (sib, _) = uapi::sockaddr_ib::read_from_prefix(ss.as_bytes()).ok()?;
    Some(sib.sib_addr)
}

/// The parameters of a connection in an event: the peer's (reliable port space), as the kernel
/// reports them. In a connection request the RDMA read resources are already turned to this side's
/// point of view: `responder_resources` is the peer's initiator depth (what this side should
/// accept as target) and `initiator_depth` the peer's responder resources.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnParam {
    /// The peer's queue pair number.
    pub qp_num: u32,
    /// The peer's private data.
    pub private_data: Vec<u8>,
    /// Whether the peer's queue pair uses a shared receive queue.
    pub srq: bool,
    /// RDMA reads and atomics as target (see above for whose).
    pub responder_resources: u8,
    /// RDMA reads and atomics issued at once (see above for whose).
    pub initiator_depth: u8,
    /// Whether the peer's hardware does end-to-end flow control.
    pub flow_control: bool,
    /// The peer's transport retry count.
    pub retry_count: u8,
    /// The peer's RNR retry count.
    pub rnr_retry_count: u8,
}

/// The parameters of a datagram peer or multicast group in an event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UdParam {
    /// The peer's queue pair number (`0xffffff` for a multicast group).
    pub qp_num: u32,
    /// The Q_Key to send with.
    pub qkey: u32,
    /// The address vector that reaches the peer or group.
    pub ah_attr: ib_uverbs_ah_attr,
    /// The peer's private data.
    pub private_data: Vec<u8>,
}

/// What an event carries, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmEventData {
    /// No parameters (resolution events, errors, disconnects).
    None,
    /// Connection parameters (reliable port space).
    Conn(ConnParam),
    /// Datagram parameters (datagram port space, multicast).
    Ud(UdParam),
}

/// One event of the connection manager, checked and decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmEvent {
    /// The cookie of the identifier (or multicast membership) the event is about: for a connection
    /// request, the listener's.
    pub uid: u64,
    /// The kernel's handle of the identifier: for a connection request, the new one's.
    pub id: u32,
    /// The event (`RDMA_CM_EVENT_*`).
    pub event: u32,
    /// The status: 0, a negative errno, or a `REJECTED` event's reject reason.
    pub status: i32,
    /// The parameters.
    pub data: CmEventData,
}

/// The shortest answer to `GET_EVENT` the kernel gives (before `ece` and the reserved word were
/// added): what the kernel insists on having room for.
pub const EVENT_MIN_LEN: usize = std::mem::size_of::<rdma_ucm_event_resp>() - 12;

/// Decodes the kernel's answer to `GET_EVENT` (the bytes it wrote). `datagram` says whether the
/// identifier is in a datagram port space, which decides how the parameter union reads for
/// connection events (multicast events are always datagram ones).
///
/// A short answer, an unknown event number or a length field beyond its array is an
/// [`Error::Protocol`]; nothing here panics, whatever the bytes.
pub fn decode_event(bytes: &[u8], datagram: bool) -> Result<CmEvent> {
    let verb = Verb::RdmaCm(RDMA_USER_CM_CMD_GET_EVENT);
    let bad = |what: String| Error::Protocol { verb, what };
    if bytes.len() < EVENT_MIN_LEN {
        return Err(bad(format!(
            "event of {} bytes, shorter than {EVENT_MIN_LEN}",
            bytes.len()
        )));
    }
    let mut resp = rdma_ucm_event_resp::new_zeroed();
    let n = bytes.len().min(std::mem::size_of::<rdma_ucm_event_resp>());
    resp.as_mut_bytes()[..n].copy_from_slice(&bytes[..n]);
    if resp.event > RDMA_CM_EVENT_TIMEWAIT_EXIT {
        return Err(bad(format!("unknown event number {}", resp.event)));
    }
    let conn = |p: &rdma_ucm_conn_param| {
        let len = usize::from(p.private_data_len);
        ConnParam {
            qp_num: p.qp_num & 0x00ff_ffff,
            private_data: p.private_data[..len].to_vec(),
            srq: p.srq != 0,
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            flow_control: p.flow_control != 0,
            retry_count: p.retry_count,
            rnr_retry_count: p.rnr_retry_count,
        }
    };
    let ud = |p: &rdma_ucm_ud_param| UdParam {
        qp_num: p.qp_num & 0x00ff_ffff,
        qkey: p.qkey,
        ah_attr: p.ah_attr,
        private_data: p.private_data[..usize::from(p.private_data_len)].to_vec(),
    };
    let data = match resp.event {
        RDMA_CM_EVENT_MULTICAST_JOIN => CmEventData::Ud(ud(&resp.ud())),
        RDMA_CM_EVENT_CONNECT_REQUEST
        | RDMA_CM_EVENT_CONNECT_RESPONSE
        | RDMA_CM_EVENT_ESTABLISHED
        | RDMA_CM_EVENT_REJECTED
        | RDMA_CM_EVENT_UNREACHABLE => {
            if datagram {
                CmEventData::Ud(ud(&resp.ud()))
            } else {
                CmEventData::Conn(conn(&resp.conn()))
            }
        }
        _ => CmEventData::None,
    };
    Ok(CmEvent {
        uid: resp.uid,
        id: resp.id,
        event: resp.event,
        status: resp.status as i32,
        data,
    })
}

/// An open `/dev/infiniband/rdma_cm`: one event channel of the connection manager. Identifiers
/// created on it report their events here, and die with it.
///
/// Its descriptor is not lent out (no `AsFd`, `AsRawFd` or accessor): the commands below, which
/// build their answers' pointers themselves, are the only way to it. Its readiness is lent as
/// [`CmFile::readiness_fd`].
#[derive(Debug)]
pub struct CmFile {
    fd: OwnedFd,
    /// An epoll instance watching `fd` ([`sys::readiness_watch`]).
    ready: OwnedFd,
}

impl CmFile {
    /// Opens the connection manager (non-blocking, close-on-exec) and checks its ABI version.
    pub fn open() -> Result<Self> {
        Self::open_path(Path::new(RDMA_CM_PATH))
    }

    /// Opens the connection manager at `path` (for tests and unusual systems).
    pub fn open_path(path: &Path) -> Result<Self> {
        if let Ok(v) = std::fs::read_to_string(ABI_VERSION_PATH) {
            match v.trim().parse::<u32>() {
                Ok(RDMA_USER_CM_ABI_VERSION) => {}
                _ => {
                    return Err(Error::Protocol {
                        verb: Verb::OpenRdmaCm,
                        what: format!(
                            "the kernel's rdma_cm ABI is version {}, this crate speaks {}",
                            v.trim(),
                            RDMA_USER_CM_ABI_VERSION
                        ),
                    })
                }
            }
        }
        let fd = sys::open_device(path).map_err(|e| Error::kernel(Verb::OpenRdmaCm, e))?;
        sys::set_nonblocking(fd.as_fd()).map_err(|e| Error::kernel(Verb::OpenRdmaCm, e))?;
        let ready =
            sys::readiness_watch(fd.as_fd()).map_err(|e| Error::kernel(Verb::OpenRdmaCm, e))?;
        Ok(Self { fd, ready })
    }

    /// Issues command `cmd` with `req`.
    ///
    /// # Safety
    /// Every user pointer in `req` (its `response`, `optval`) must be null or valid for the kernel
    /// to write (or, for `optval`, read) the size the command announces, for the duration of the
    /// call.
    unsafe fn exec<T: IntoBytes + Immutable>(&self, cmd: u32, req: &T, out: usize) -> Result<()> {
        let verb = Verb::RdmaCm(cmd);
        let body = req.as_bytes();
        let hdr = rdma_ucm_cmd_hdr {
            cmd,
            r#in: body.len() as u16,
            out: out as u16,
        };
        let mut buf = [0u8; 8 + 304];
        let total = 8 + body.len();
        buf[..8].copy_from_slice(hdr.as_bytes());
        buf[8..total].copy_from_slice(body);
        // SAFETY: the caller guarantees the pointers inside `req` (copied into `buf`).
        match unsafe { sys::cm_write(self.fd.as_fd(), &buf[..total]) } {
            Ok(n) if n == total => Ok(()),
            Ok(n) => Err(Error::Protocol {
                verb,
                what: format!("the kernel took {n} of {total} bytes"),
            }),
            Err(e) => Err(Error::kernel(verb, e)),
        }
    }

    /// Issues a command without an answer.
    fn exec_in<T: IntoBytes + Immutable>(&self, cmd: u32, req: &T) -> Result<()> {
        // SAFETY: callers pass only command structs without user pointers.
        unsafe { self.exec(cmd, req, 0) }
    }

    /// Issues a command whose answer is a `R`, written through the pointer `set` puts into `req`.
    fn exec_out<T, R>(&self, cmd: u32, mut req: T, set: impl FnOnce(&mut T, u64)) -> Result<R>
    where
        T: IntoBytes + Immutable,
        R: FromBytes + IntoBytes,
    {
        let mut resp = R::new_zeroed();
        let ptr = resp.as_mut_bytes().as_mut_ptr() as u64;
        set(&mut req, ptr);
        // SAFETY: the only user pointer in `req` is `ptr`, which points to `resp`: writable, of the
        // size announced, alive until this function returns.
        unsafe { self.exec(cmd, &req, std::mem::size_of::<R>())? };
        Ok(resp)
    }

    /// `CREATE_ID`: a new identifier in port space `ps` with queue pair type `qp_type`; its events
    /// carry `uid`. Returns the kernel's handle.
    pub fn create_id(&self, uid: u64, ps: u16, qp_type: u8) -> Result<u32> {
        let req = rdma_ucm_create_id {
            uid,
            ps,
            qp_type,
            ..Default::default()
        };
        let r: rdma_ucm_create_id_resp =
            self.exec_out(RDMA_USER_CM_CMD_CREATE_ID, req, |r, p| r.response = p)?;
        Ok(r.id)
    }

    /// `DESTROY_ID`: destroys the identifier, dropping its queued events; returns how many of its
    /// events were handed out.
    pub fn destroy_id(&self, id: u32) -> Result<u32> {
        let req = rdma_ucm_destroy_id {
            id,
            ..Default::default()
        };
        let r: rdma_ucm_destroy_id_resp =
            self.exec_out(RDMA_USER_CM_CMD_DESTROY_ID, req, |r, p| r.response = p)?;
        Ok(r.events_reported)
    }

    /// `BIND`: binds the identifier to a local address (port 0: any free port).
    pub fn bind(&self, id: u32, addr: &SocketAddr) -> Result<()> {
        let (addr, addr_size) = encode_addr(addr);
        let req = rdma_ucm_bind {
            id,
            addr_size,
            reserved: 0,
            addr,
        };
        self.exec_in(RDMA_USER_CM_CMD_BIND, &req)
    }

    /// `RESOLVE_ADDR`: starts resolving `dst` (from `src`, if given) to a device and port; the
    /// answer is an `ADDR_RESOLVED` or `ADDR_ERROR` event.
    pub fn resolve_addr(
        &self,
        id: u32,
        src: Option<&SocketAddr>,
        dst: &SocketAddr,
        timeout_ms: u32,
    ) -> Result<()> {
        let mut req = rdma_ucm_resolve_addr {
            id,
            timeout_ms,
            ..Default::default()
        };
        if let Some(src) = src {
            (req.src_addr, req.src_size) = encode_addr(src);
        }
        (req.dst_addr, req.dst_size) = encode_addr(dst);
        self.exec_in(RDMA_USER_CM_CMD_RESOLVE_ADDR, &req)
    }

    /// `RESOLVE_ROUTE`: starts resolving the route; the answer is a `ROUTE_RESOLVED` or
    /// `ROUTE_ERROR` event.
    pub fn resolve_route(&self, id: u32, timeout_ms: u32) -> Result<()> {
        self.exec_in(
            RDMA_USER_CM_CMD_RESOLVE_ROUTE,
            &rdma_ucm_resolve_route { id, timeout_ms },
        )
    }

    /// `QUERY` with `option` (`RDMA_USER_CM_QUERY_ADDR` or `_GID`): addresses, device and port.
    pub fn query_addr(&self, id: u32, option: u32) -> Result<rdma_ucm_query_addr_resp> {
        let req = rdma_ucm_query {
            id,
            option,
            ..Default::default()
        };
        self.exec_out(RDMA_USER_CM_CMD_QUERY, req, |r, p| r.response = p)
    }

    /// `LISTEN` with room for `backlog` pending requests.
    pub fn listen(&self, id: u32, backlog: u32) -> Result<()> {
        self.exec_in(RDMA_USER_CM_CMD_LISTEN, &rdma_ucm_listen { id, backlog })
    }

    /// `CONNECT` with `conn_param`.
    pub fn connect(&self, id: u32, conn_param: &rdma_ucm_conn_param) -> Result<()> {
        let req = rdma_ucm_connect {
            conn_param: *conn_param,
            id,
            ..Default::default()
        };
        self.exec_in(RDMA_USER_CM_CMD_CONNECT, &req)
    }

    /// `ACCEPT`: accepts a connection request (with `conn_param`), or completes the active side of a
    /// connection after its response (with `None`), giving the identifier the cookie `uid`.
    pub fn accept(
        &self,
        id: u32,
        uid: u64,
        conn_param: Option<&rdma_ucm_conn_param>,
    ) -> Result<()> {
        let req = rdma_ucm_accept {
            uid,
            conn_param: conn_param.copied().unwrap_or_default(),
            id,
            ..Default::default()
        };
        self.exec_in(RDMA_USER_CM_CMD_ACCEPT, &req)
    }

    /// `REJECT` with `private_data` (at most [`RDMA_MAX_PRIVATE_DATA`] bytes; callers check the
    /// port space's smaller limit) and `reason` (0: the kernel's, consumer-defined).
    pub fn reject(&self, id: u32, reason: u8, private_data: &[u8]) -> Result<()> {
        let mut req = rdma_ucm_reject {
            id,
            reason,
            ..Default::default()
        };
        let n = private_data.len().min(RDMA_MAX_PRIVATE_DATA);
        req.private_data[..n].copy_from_slice(&private_data[..n]);
        req.private_data_len = n as u8;
        self.exec_in(RDMA_USER_CM_CMD_REJECT, &req)
    }

    /// `DISCONNECT`.
    pub fn disconnect(&self, id: u32) -> Result<()> {
        self.exec_in(RDMA_USER_CM_CMD_DISCONNECT, &rdma_ucm_disconnect { id })
    }

    /// `INIT_QP_ATTR`: the attributes (and their mask, `qp_attr_mask`) that move the identifier's
    /// queue pair to `qp_state`.
    pub fn init_qp_attr(&self, id: u32, qp_state: u32) -> Result<ib_uverbs_qp_attr> {
        let req = rdma_ucm_init_qp_attr {
            id,
            qp_state,
            ..Default::default()
        };
        self.exec_out(RDMA_USER_CM_CMD_INIT_QP_ATTR, req, |r, p| r.response = p)
    }

    /// `JOIN_MCAST`: joins the multicast group at `addr`; the membership's events carry `uid`.
    /// Returns the membership's handle (for [`CmFile::leave_mcast`]).
    pub fn join_mcast(&self, id: u32, uid: u64, addr: &SocketAddr, join_flags: u16) -> Result<u32> {
        let (addr, addr_size) = encode_addr(addr);
        let req = rdma_ucm_join_mcast {
            uid,
            id,
            addr_size,
            join_flags,
            addr,
            ..Default::default()
        };
        let r: rdma_ucm_create_id_resp =
            self.exec_out(RDMA_USER_CM_CMD_JOIN_MCAST, req, |r, p| r.response = p)?;
        Ok(r.id)
    }

    /// `LEAVE_MCAST`: leaves the group of membership `mc_id`; returns its events handed out.
    pub fn leave_mcast(&self, mc_id: u32) -> Result<u32> {
        let req = rdma_ucm_destroy_id {
            id: mc_id,
            ..Default::default()
        };
        let r: rdma_ucm_destroy_id_resp =
            self.exec_out(RDMA_USER_CM_CMD_LEAVE_MCAST, req, |r, p| r.response = p)?;
        Ok(r.events_reported)
    }

    /// `MIGRATE_ID`: moves the identifier `id` of this file (and its queued events) to the event
    /// channel `to`; returns how many of its events this file handed out. (The command is written
    /// to the destination, naming the source by its descriptor, as librdmacm does.)
    pub fn migrate_id(&self, id: u32, to: &CmFile) -> Result<u32> {
        let req = rdma_ucm_migrate_id {
            id,
            fd: self.fd.as_raw_fd() as u32,
            ..Default::default()
        };
        let r: rdma_ucm_migrate_resp =
            to.exec_out(RDMA_USER_CM_CMD_MIGRATE_ID, req, |r, p| r.response = p)?;
        Ok(r.events_reported)
    }

    /// `SET_OPTION` at `level`, option `name`, to `value`.
    pub fn set_option(&self, id: u32, level: u32, name: u32, value: &[u8]) -> Result<()> {
        let req = rdma_ucm_set_option {
            optval: value.as_ptr() as u64,
            id,
            level,
            optname: name,
            optlen: value.len() as u32,
        };
        // SAFETY: `optval` points to `value`, readable for `optlen` bytes during the call; the
        // kernel only reads it.
        unsafe { self.exec(RDMA_USER_CM_CMD_SET_OPTION, &req, 0) }
    }

    /// `GET_EVENT`: the next event, undecoded (see [`decode_event`]); `None` when none is queued.
    pub fn get_event_raw(&self) -> Result<Option<rdma_ucm_event_resp>> {
        match self.exec_out(
            RDMA_USER_CM_CMD_GET_EVENT,
            rdma_ucm_get_event::default(),
            |r, p| r.response = p,
        ) {
            Ok(r) => Ok(Some(r)),
            Err(Error::Kernel {
                errno: Errno::EAGAIN,
                ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Waits up to `timeout_ms` (negative: forever) for an event to be queued; whether one is.
    pub fn wait_readable(&self, timeout_ms: i32) -> Result<bool> {
        sys::wait_readable(self.fd.as_fd(), timeout_ms)
            .map_err(|e| Error::kernel(Verb::RdmaCm(RDMA_USER_CM_CMD_GET_EVENT), e))
    }

    /// A descriptor that is readable exactly when an event is queued, for a reactor (`poll(2)`,
    /// epoll, tokio's `AsyncFd`): an epoll instance watching the file ([`sys::readiness_watch`]),
    /// not the file. It takes no commands (`write(2)` on it fails with `EINVAL`), so it may be
    /// lent, duplicated and kept by anyone; events are still read with [`CmFile::get_event_raw`].
    pub fn readiness_fd(&self) -> BorrowedFd<'_> {
        self.ready.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event_bytes(event: u32, status: i32, f: impl FnOnce(&mut rdma_ucm_event_resp)) -> Vec<u8> {
        let mut r = rdma_ucm_event_resp::new_zeroed();
        r.uid = 7;
        r.id = 3;
        r.event = event;
        r.status = status as u32;
        f(&mut r);
        r.as_bytes().to_vec()
    }

    #[test]
    fn addresses_round_trip() {
        for a in ["10.1.2.3:4791", "[fd00::1]:18515", "0.0.0.0:0"] {
            let a: SocketAddr = a.parse().unwrap();
            let (ss, len) = encode_addr(&a);
            assert_eq!(len, if a.is_ipv4() { 16 } else { 28 });
            assert_eq!(decode_addr(&ss), Some(a));
        }
        let (ss, _) = encode_addr(&"10.1.2.3:258".parse().unwrap());
        // Port and address are in network order, as the kernel reads them.
        assert_eq!(&ss.as_bytes()[..8], &[2, 0, 1, 2, 10, 1, 2, 3]);
        assert_eq!(decode_addr(&__kernel_sockaddr_storage::default()), None);
    }

    #[test]
    fn decodes_a_connect_request() {
        let b = event_bytes(RDMA_CM_EVENT_CONNECT_REQUEST, 0, |r| {
            let mut c = rdma_ucm_conn_param::new_zeroed();
            c.qp_num = 0x12;
            c.private_data[..3].copy_from_slice(b"abc");
            c.private_data_len = 3;
            c.responder_resources = 4;
            c.initiator_depth = 2;
            c.rnr_retry_count = 7;
            r.param[..272].copy_from_slice(c.as_bytes());
        });
        let e = decode_event(&b, false).unwrap();
        assert_eq!((e.uid, e.id, e.event, e.status), (7, 3, 4, 0));
        let CmEventData::Conn(c) = e.data else {
            panic!("{e:?}")
        };
        assert_eq!(c.private_data, b"abc");
        assert_eq!(
            (c.qp_num, c.responder_resources, c.initiator_depth),
            (0x12, 4, 2)
        );
        assert_eq!(c.rnr_retry_count, 7);
    }

    #[test]
    fn decodes_a_datagram_event_and_errors() {
        let b = event_bytes(RDMA_CM_EVENT_ESTABLISHED, 0, |r| {
            let mut u = rdma_ucm_ud_param::new_zeroed();
            u.qp_num = 0x0100_0033;
            u.qkey = 0x0111_1111;
            u.private_data_len = 1;
            r.param.copy_from_slice(u.as_bytes());
        });
        let e = decode_event(&b, true).unwrap();
        let CmEventData::Ud(u) = e.data else {
            panic!("{e:?}")
        };
        assert_eq!(
            (u.qp_num, u.qkey, u.private_data.len()),
            (0x33, 0x0111_1111, 1)
        );
        let b = event_bytes(RDMA_CM_EVENT_ADDR_ERROR, -110, |_| {});
        let e = decode_event(&b, false).unwrap();
        assert_eq!((e.status, e.data), (-110, CmEventData::None));
    }

    #[test]
    fn refuses_short_and_unknown_events() {
        let b = event_bytes(RDMA_CM_EVENT_ESTABLISHED, 0, |_| {});
        let short = decode_event(&b[..EVENT_MIN_LEN - 1], false).unwrap_err();
        assert!(short.to_string().contains("shorter than"), "{short}");
        // The answer of kernels before `ece` is enough.
        assert!(decode_event(&b[..EVENT_MIN_LEN], false).is_ok());
        let b = event_bytes(16, 0, |_| {});
        let unknown = decode_event(&b, false).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "rdma_cm GET_EVENT: unexpected answer from the kernel: unknown event number 16"
        );
    }

    #[test]
    fn names() {
        assert_eq!(command_name(RDMA_USER_CM_CMD_JOIN_MCAST), "JOIN_MCAST");
        assert_eq!(event_name(RDMA_CM_EVENT_TIMEWAIT_EXIT), "TIMEWAIT_EXIT");
        assert_eq!(
            Verb::RdmaCm(RDMA_USER_CM_CMD_CONNECT).to_string(),
            "rdma_cm CONNECT"
        );
    }
}
