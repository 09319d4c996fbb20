//! The RDMA connection manager: connect by IP address and port, as librdmacm does, without
//! librdmacm.
//!
//! The kernel's connection manager (`/dev/infiniband/rdma_cm`, module `rdma_ucm`) resolves an IP
//! address to a device, port and path, and runs the InfiniBand CM handshake that connects two queue
//! pairs. Queue pairs are still created through uverbs and moved through their states with the
//! attributes the kernel computes (`INIT_QP_ATTR`), as librdmacm does.
//!
//! Two levels:
//! * [`Listener`] and [`Connection`], librdmacm's `rdma_create_ep` for the common case: a listener
//!   that yields connected queue pairs, and a `connect(addr)` that returns one, each with its own
//!   context, protection domain and completion queue.
//! * [`EventChannel`] and [`CmId`], librdmacm's `rdma_cm_id` calls: identifiers in the reliable
//!   ([`PortSpace::Tcp`]) or datagram ([`PortSpace::Udp`]) port space, `bind`, `resolve_addr`,
//!   `resolve_route`, `listen`, `connect`/`accept`/`reject` with private data, `disconnect`,
//!   multicast, and a queue pair created on the identifier. Their answers are [`Event`]s, read
//!   blocking, with a timeout, without blocking, or (feature `tokio`) asynchronously.
//!
//! Connecting by IP in a dozen lines:
//!
//! ```no_run
//! use uverbs::cm::{Connection, EndpointConfig, Listener};
//!
//! # fn main() -> std::io::Result<()> {
//! let cfg = EndpointConfig::default();
//! let listener = Listener::bind("10.0.0.1:7471".parse().unwrap(), &cfg)?;
//! std::thread::spawn(move || -> std::io::Result<()> {
//!     let conn = listener.accept()?; // a connected RC queue pair, on the right device
//!     let mr = conn.pd().allocate::<u8>(4096)?;
//!     // ... post receives on conn.qp(), poll conn.cq()
//!     Ok(())
//! });
//! let conn = Connection::connect("10.0.0.1:7471".parse().unwrap(), &cfg)?;
//! println!("connected to QP {:#x} on {}", conn.peer().qp_num, conn.context().name());
//! # Ok(())
//! # }
//! ```
//!
//! Errors name the command (`rdma_cm CONNECT failed: ...`) or the event that ended an operation:
//! a peer that rejects is [`Error::Rejected`] with its reason and private
//! data, an address nobody answers is an `UNREACHABLE` or `ADDR_ERROR`
//! [`Error::CmEvent`] with the kernel's errno.

mod endpoint;

pub use endpoint::{Connection, EndpointConfig, Listener};
pub use uverbs_drivers::cm::{
    ConnParam as PeerParam, MAX_ACCEPT_PRIVATE_DATA, MAX_CONNECT_PRIVATE_DATA,
    MAX_REJECT_PRIVATE_DATA, MAX_UD_ACCEPT_PRIVATE_DATA, MAX_UD_CONNECT_PRIVATE_DATA,
};

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use uverbs_drivers::cm::{self as raw, CmEvent, CmEventData, CmFile};
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::uapi::*;

use crate::cq::CompletionQueue;
use crate::ibv::{ibv_qp_state, ibv_qp_type};
use crate::pd::ProtectionDomain;
use crate::qp::{AddressVector, QpAttr, QpCaps, QueuePair};
use crate::{Context, Gid, Guid};

/// The Q_Key of the datagram port space (librdmacm's `RDMA_UDP_QKEY`; the kernel sets it on UD
/// queue pairs of [`PortSpace::Udp`] identifiers).
pub const RDMA_UDP_QKEY: u32 = 0x0123_4567;

/// How long the blocking calls wait for address and route resolution when not told.
pub const DEFAULT_RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn millis(t: Duration) -> u32 {
    u32::try_from(t.as_millis()).unwrap_or(u32::MAX)
}

/// The port space of an identifier: which transport its connections use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortSpace {
    /// Reliable connections (`RDMA_PS_TCP`): RC queue pairs.
    Tcp,
    /// Datagrams (`RDMA_PS_UDP`): UD queue pairs, multicast.
    Udp,
}

impl PortSpace {
    fn raw(self) -> u16 {
        match self {
            PortSpace::Tcp => RDMA_PS_TCP,
            PortSpace::Udp => RDMA_PS_UDP,
        }
    }

    fn qp_type(self) -> ibv_qp_type::Type {
        match self {
            PortSpace::Tcp => ibv_qp_type::IBV_QPT_RC,
            PortSpace::Udp => ibv_qp_type::IBV_QPT_UD,
        }
    }
}

/// The parameters this side sends with a connect or an accept (`struct rdma_conn_param`).
///
/// The default is what rping uses: one outstanding RDMA read or atomic each way, seven transport
/// retries, RNR retries forever, no private data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnParams {
    /// Private data for the peer: at most [`MAX_CONNECT_PRIVATE_DATA`] bytes with a connect,
    /// [`MAX_ACCEPT_PRIVATE_DATA`] with an accept ([`MAX_UD_CONNECT_PRIVATE_DATA`] and
    /// [`MAX_UD_ACCEPT_PRIVATE_DATA`] for datagrams). Longer is refused before the kernel sees it.
    pub private_data: Vec<u8>,
    /// RDMA reads and atomics this side accepts as target at once.
    pub responder_resources: u8,
    /// RDMA reads and atomics this side issues at once.
    pub initiator_depth: u8,
    /// Transport retries (at most 7).
    pub retry_count: u8,
    /// RNR retries (at most 7; 7 is forever).
    pub rnr_retry_count: u8,
    /// Whether the hardware does end-to-end flow control.
    pub flow_control: bool,
}

impl Default for ConnParams {
    fn default() -> Self {
        Self {
            private_data: Vec::new(),
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 7,
            rnr_retry_count: 7,
            flow_control: false,
        }
    }
}

impl ConnParams {
    fn to_kernel(
        &self,
        verb: Verb,
        max: usize,
        qp_num: u32,
        qkey: u32,
        srq: bool,
    ) -> Result<rdma_ucm_conn_param, Error> {
        let bad = |what: String| Error::InvalidArgument { verb, what };
        if self.private_data.len() > max {
            return Err(bad(format!(
                "{} bytes of private data, the port space carries at most {max}",
                self.private_data.len()
            )));
        }
        if self.retry_count > 7 || self.rnr_retry_count > 7 {
            return Err(bad(format!(
                "retry count {} / RNR retry count {} (at most 7)",
                self.retry_count, self.rnr_retry_count
            )));
        }
        let mut private_data = [0u8; RDMA_MAX_PRIVATE_DATA];
        private_data[..self.private_data.len()].copy_from_slice(&self.private_data);
        Ok(rdma_ucm_conn_param {
            qp_num,
            qkey,
            private_data,
            private_data_len: self.private_data.len() as u8,
            srq: u8::from(srq),
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            flow_control: u8::from(self.flow_control),
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            valid: 1,
        })
    }
}

/// A datagram peer (or multicast group) as an event names it: send to it with an address handle
/// made from `av`, its queue pair number and Q_Key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdPeer {
    /// The queue pair number to send to (`0xffffff` for a multicast group).
    pub qp_num: u32,
    /// The Q_Key to send with.
    pub qkey: u32,
    /// The address vector for [`ProtectionDomain::create_ah`].
    pub av: AddressVector,
    /// The peer's private data.
    pub private_data: Vec<u8>,
}

impl From<raw::UdParam> for UdPeer {
    fn from(p: raw::UdParam) -> Self {
        UdPeer {
            qp_num: p.qp_num,
            qkey: p.qkey,
            av: AddressVector::from_kernel(&p.ah_attr),
            private_data: p.private_data,
        }
    }
}

/// What happened: every event of the kernel's connection manager, with its status.
///
/// Error events carry the kernel's errno (positive, e.g. `ETIMEDOUT` = 110).
#[derive(Debug)]
#[non_exhaustive]
pub enum EventKind {
    /// The address resolved: the identifier is bound to a device and port.
    AddrResolved,
    /// Address resolution failed.
    AddrError {
        /// The errno.
        errno: i32,
    },
    /// The route resolved: the identifier may connect.
    RouteResolved,
    /// Route resolution failed.
    RouteError {
        /// The errno.
        errno: i32,
    },
    /// A connection request arrived at a listener (reliable port space). Accept or reject `id`;
    /// dropping it rejects the request.
    ConnectRequest {
        /// The new identifier, on the listener's device.
        id: CmId,
        /// The peer's parameters and private data.
        peer: PeerParam,
    },
    /// A datagram resolve request arrived at a listener. Accept or reject `id`.
    UdConnectRequest {
        /// The new identifier.
        id: CmId,
        /// How to reach the peer. A resolve request carries no queue pair number (`qp_num` is 0):
        /// the peer's comes with its first datagram (the completion's source QP), as in udaddy.
        peer: UdPeer,
    },
    /// The peer answered a connect on an identifier without a queue pair (with one, the answer
    /// is handled here and reported as [`EventKind::Established`]).
    ConnectResponse {
        /// The peer's parameters and private data.
        peer: PeerParam,
    },
    /// Establishing the connection failed.
    ConnectError {
        /// The errno.
        errno: i32,
    },
    /// The peer could not be reached, or did not answer in time.
    Unreachable {
        /// The errno (`ETIMEDOUT` after the kernel's retries).
        errno: i32,
    },
    /// The peer rejected the connection.
    Rejected {
        /// The reject reason (InfiniBand CM numbering: 28 when an application rejected, 8 when
        /// nobody listens on the port); [`reject_reason_name`] names it.
        reason: u32,
        /// The peer's private data.
        private_data: Vec<u8>,
    },
    /// The connection is established (reliable port space).
    Established {
        /// The peer's parameters and private data (from its accept, on the active side).
        peer: PeerParam,
    },
    /// The datagram peer answered a resolve: send to it.
    UdEstablished {
        /// How to reach the peer.
        peer: UdPeer,
    },
    /// The connection was disconnected (by the peer, or locally).
    Disconnected,
    /// The device went away: the identifier is useless.
    DeviceRemoval,
    /// A multicast join completed (the identifier's queue pair, if any, is attached to the group).
    MulticastJoin {
        /// The group: its address handle, queue pair number `0xffffff` and Q_Key.
        group: UdPeer,
    },
    /// A multicast group failed.
    MulticastError {
        /// The errno.
        errno: i32,
    },
    /// The local address changed.
    AddrChange,
    /// The connection's time-wait ended: its queue pair number may be reused.
    TimewaitExit,
}

/// The name of an InfiniBand CM reject reason.
pub fn reject_reason_name(reason: u32) -> &'static str {
    raw::reject_reason_name(reason)
}

/// One connection manager event.
#[derive(Debug)]
pub struct Event {
    /// The handle ([`CmId::handle`]) of the identifier the event is about; for a connection
    /// request, the listener's.
    pub id: u32,
    /// What happened.
    pub kind: EventKind,
}

impl Event {
    /// The event's name as librdmacm spells it, without `RDMA_CM_EVENT_`: `"ESTABLISHED"`, ...
    pub fn name(&self) -> &'static str {
        let n = match self.kind {
            EventKind::AddrResolved => RDMA_CM_EVENT_ADDR_RESOLVED,
            EventKind::AddrError { .. } => RDMA_CM_EVENT_ADDR_ERROR,
            EventKind::RouteResolved => RDMA_CM_EVENT_ROUTE_RESOLVED,
            EventKind::RouteError { .. } => RDMA_CM_EVENT_ROUTE_ERROR,
            EventKind::ConnectRequest { .. } | EventKind::UdConnectRequest { .. } => {
                RDMA_CM_EVENT_CONNECT_REQUEST
            }
            EventKind::ConnectResponse { .. } => RDMA_CM_EVENT_CONNECT_RESPONSE,
            EventKind::ConnectError { .. } => RDMA_CM_EVENT_CONNECT_ERROR,
            EventKind::Unreachable { .. } => RDMA_CM_EVENT_UNREACHABLE,
            EventKind::Rejected { .. } => RDMA_CM_EVENT_REJECTED,
            EventKind::Established { .. } | EventKind::UdEstablished { .. } => {
                RDMA_CM_EVENT_ESTABLISHED
            }
            EventKind::Disconnected => RDMA_CM_EVENT_DISCONNECTED,
            EventKind::DeviceRemoval => RDMA_CM_EVENT_DEVICE_REMOVAL,
            EventKind::MulticastJoin { .. } => RDMA_CM_EVENT_MULTICAST_JOIN,
            EventKind::MulticastError { .. } => RDMA_CM_EVENT_MULTICAST_ERROR,
            EventKind::AddrChange => RDMA_CM_EVENT_ADDR_CHANGE,
            EventKind::TimewaitExit => RDMA_CM_EVENT_TIMEWAIT_EXIT,
        };
        raw::event_name(n)
    }

    /// This event as the error that ends an operation that waited for something else: error events
    /// keep their errno (`REJECTED` becomes [`Error::Rejected`]), any other event is `EPROTO`.
    pub fn into_error(self, verb: Verb) -> Error {
        let name = self.name();
        let errno = match self.kind {
            EventKind::Rejected {
                reason,
                private_data,
            } => {
                return Error::Rejected {
                    reason,
                    private_data,
                }
            }
            EventKind::AddrError { errno }
            | EventKind::RouteError { errno }
            | EventKind::ConnectError { errno }
            | EventKind::Unreachable { errno }
            | EventKind::MulticastError { errno } => errno,
            EventKind::Disconnected => libc::ECONNRESET,
            EventKind::DeviceRemoval => libc::ENODEV,
            _ => libc::EPROTO,
        };
        Error::CmEvent {
            verb,
            event: name,
            errno: uverbs_drivers::error::Errno::from_raw(if errno == 0 {
                libc::EIO
            } else {
                errno
            }),
        }
    }
}

/// A table of weak references by key: how a channel finds the identifier an event is about.
///
/// No strong reference is ever dropped under the table's lock: an entry's destructor
/// (`IdInner::drop`) takes that lock to remove itself, and a lookup whose reference turns out to
/// be the last (another thread dropped its own meanwhile) runs that destructor where it drops it.
#[derive(Debug)]
struct Routes<K, T> {
    map: Mutex<HashMap<K, Weak<T>>>,
}

impl<K, T> Default for Routes<K, T> {
    fn default() -> Self {
        Routes {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: std::hash::Hash + Eq + Copy, T> Routes<K, T> {
    fn insert(&self, key: K, t: &Arc<T>) {
        let old = lock(&self.map).insert(key, Arc::downgrade(t));
        // A weak reference: dropping it never runs `T`'s destructor, but keep to the rule.
        drop(old);
    }

    /// Removes `key`'s entry if it is `owner`'s: a later entry under the same key (an identifier
    /// migrated back to this channel keeps its cookie) is left alone.
    fn remove_own(&self, key: K, owner: *const T) {
        let mut map = lock(&self.map);
        if map
            .get(&key)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), owner))
        {
            map.remove(&key);
        }
    }

    /// Whether `key` has an entry (live or being destroyed).
    fn contains(&self, key: K) -> bool {
        lock(&self.map).contains_key(&key)
    }

    /// The live entry of `key`, upgraded after the lock is released.
    fn get(&self, key: K) -> Option<Arc<T>> {
        let w = lock(&self.map).get(&key).cloned();
        w.and_then(|w| w.upgrade())
    }

    /// The first live entry `pred` accepts, with every other live entry upgraded on the way. The
    /// entries are copied (as weak references) under the lock and upgraded after it; none of the
    /// references is dropped here, for the caller may hold a lock that an entry's destructor must
    /// not run under (the channel's reader).
    fn find(&self, mut pred: impl FnMut(&T) -> bool) -> Found<T> {
        let all: Vec<Weak<T>> = lock(&self.map).values().cloned().collect();
        let mut found = Found::default();
        for t in all.iter().filter_map(Weak::upgrade) {
            if pred(&t) {
                found.hit = Some(t);
                break;
            }
            found.others.push(t);
        }
        found
    }
}

/// What [`Routes::find`] found: the entry `pred` accepted, and every other live entry it upgraded
/// on the way. Drop it where no lock is held that an entry's destructor must not run under: another
/// thread may have dropped its reference to one of them meanwhile, and this one is then the last.
#[derive(Debug)]
struct Found<T> {
    hit: Option<Arc<T>>,
    others: Vec<Arc<T>>,
}

impl<T> Default for Found<T> {
    fn default() -> Self {
        Found {
            hit: None,
            others: Vec::new(),
        }
    }
}

/// An event read from the kernel and not handed out yet, with the cookie (`uid`) of the identifier
/// it is for: a wait for another identifier's event keeps it aside (parks it). Keyed by cookie, not
/// handle: the kernel gives a destroyed identifier's handle to the next one, and cookies are never
/// reused in a process.
#[derive(Debug)]
struct Parked {
    uid: u64,
    ev: Incoming,
}

#[derive(Debug)]
enum Incoming {
    /// An event of a live identifier, processed.
    Ready(Event),
    /// A connection request: a new identifier, which becomes a [`CmId`] only when handed out.
    Request(Request),
}

/// A connection request read from the kernel: the new identifier's handle and what the request
/// carried, without the [`CmId`] yet. A parked request holds no strong reference to a channel (a
/// `CmId` would, and its channel holds the parked events: a cycle that kept the channel, its file
/// and the kernel's identifiers alive after the program dropped them all). Dropped without being
/// handed out, it destroys the kernel's identifier, which rejects the peer, as dropping the `CmId`
/// would.
#[derive(Debug)]
struct Request {
    /// The channel whose file holds the new identifier.
    home: Weak<ChanInner>,
    /// The listener's handle, which the event reports.
    listener: u32,
    /// The new identifier's handle; `None` once handed out.
    handle: Option<u32>,
    ps: PortSpace,
    data: CmEventData,
}

impl Request {
    /// The request as the user's event, with its new `CmId`; `None` if its channel is gone (the
    /// kernel destroyed the identifier with the file).
    fn into_event(mut self) -> Option<Event> {
        let home = self.home.upgrade()?;
        let handle = self.handle.take()?;
        // The kernel reports nothing of the new identifier until `ACCEPT` gives it a cookie; it
        // gets its own now, which accept passes.
        let id = CmId::register(&home, handle, new_uid(self.ps), self.ps);
        let kind = match std::mem::replace(&mut self.data, CmEventData::None) {
            CmEventData::Ud(peer) => EventKind::UdConnectRequest {
                id,
                peer: peer.into(),
            },
            CmEventData::Conn(peer) => EventKind::ConnectRequest { id, peer },
            CmEventData::None => EventKind::ConnectRequest {
                id,
                peer: PeerParam::default(),
            },
        };
        Some(Event {
            id: self.listener,
            kind,
        })
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        let Some(handle) = self.handle else {
            return;
        };
        // Gone: its file was closed, and the kernel destroyed the identifier with it.
        let Some(home) = self.home.upgrade() else {
            return;
        };
        if let Err(e) = home.file.destroy_id(handle) {
            uverbs_drivers::report_drop_error("connection manager identifier", &e);
        }
    }
}

impl Incoming {
    /// The user's event; `None` for a request whose channel is gone.
    fn into_event(self) -> Option<Event> {
        match self {
            Incoming::Ready(e) => Some(e),
            Incoming::Request(r) => r.into_event(),
        }
    }
}

#[derive(Debug)]
struct ChanInner {
    file: CmFile,
    /// The live identifiers of this channel by cookie (`uid`), which the kernel's events carry.
    ids: Routes<u64, IdInner>,
    /// Events read while waiting for another identifier's.
    pending: Mutex<VecDeque<Parked>>,
    /// One reader at a time, so that events are read, processed and parked in order. The one lock
    /// of the connection manager held across system calls: `GET_EVENT` on the non-blocking file, the
    /// commands processing an event makes (`INIT_QP_ATTR`, `MODIFY_QP`, `ACCEPT`, `REJECT`, attaching
    /// multicast), and `MIGRATE_ID` (a migration holds the readers of both channels, so that no
    /// event of either is read, processed or parked while an identifier moves between them); none
    /// of these waits for the network or takes this lock. Identifiers' destructors (and with them
    /// the user's drop-error hook, which may read this channel) never run under it: every strong
    /// reference taken under it that may turn out to be an identifier's last (a lookup's, a parked
    /// request refused) is declared before the guard and dropped after it.
    reader: Mutex<()>,
}

/// Cookies for the kernel: unique per process, with the port space in bit 0 (bit 0 set: datagram).
static NEXT_UID: AtomicU64 = AtomicU64::new(2);

fn new_uid(ps: PortSpace) -> u64 {
    NEXT_UID.fetch_add(2, Ordering::Relaxed) | u64::from(ps == PortSpace::Udp)
}

/// An event channel of the connection manager (`rdma_create_event_channel`): identifiers created
/// on it report their [`Event`]s here.
///
/// Pollable without lending its file: [`EventChannel::readiness_fd`] for a reactor,
/// [`EventChannel::get_event_async`] with the `tokio` feature. Clones share the channel.
#[derive(Debug, Clone)]
pub struct EventChannel {
    inner: Arc<ChanInner>,
}

impl EventChannel {
    /// Opens a new event channel (`/dev/infiniband/rdma_cm`; module `rdma_ucm`).
    pub fn new() -> io::Result<EventChannel> {
        Ok(EventChannel {
            inner: Arc::new(ChanInner {
                file: CmFile::open()?,
                ids: Routes::default(),
                pending: Mutex::default(),
                reader: Mutex::default(),
            }),
        })
    }

    /// Creates an identifier in port space `ps` (`rdma_create_id`).
    pub fn create_id(&self, ps: PortSpace) -> io::Result<CmId> {
        let uid = new_uid(ps);
        let qp_type = ps.qp_type() as u8;
        let handle = self.inner.file.create_id(uid, ps.raw(), qp_type)?;
        Ok(CmId::register(&self.inner, handle, uid, ps))
    }

    /// Waits for the next event.
    pub fn get_event(&self) -> io::Result<Event> {
        loop {
            if let Some(e) = self.get_event_timeout(Duration::from_secs(3600))? {
                return Ok(e);
            }
        }
    }

    /// Waits up to `timeout` for the next event.
    pub fn get_event_timeout(&self, timeout: Duration) -> io::Result<Option<Event>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(e) = self.try_get_event()? {
                return Ok(Some(e));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.inner
                .file
                .wait_readable(i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1))?;
        }
    }

    /// The next event if one is queued, without waiting.
    pub fn try_get_event(&self) -> io::Result<Option<Event>> {
        loop {
            let parked = lock(&self.inner.pending).pop_front();
            let next = match parked {
                Some(p) => p,
                None => match self.inner.read_one(None)? {
                    Read::Event(p) => p,
                    Read::Other => continue,
                    Read::Empty => return Ok(None),
                },
            };
            if let Some(e) = next.ev.into_event() {
                return Ok(Some(e));
            }
        }
    }

    /// Waits up to `timeout` until an event is queued, without reading it; whether one is.
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        if !lock(&self.inner.pending).is_empty() {
            return Ok(true);
        }
        Ok(self
            .inner
            .file
            .wait_readable(i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX))?)
    }

    /// A descriptor for a reactor (`poll(2)`, epoll, mio, async-io, tokio's `AsyncFd`): readable
    /// when the kernel has an event queued for the channel. Read the events with
    /// [`EventChannel::try_get_event`]; events a wait for one identifier read and kept aside
    /// ([`CmId::get_event_timeout`]) do not make it readable, so check `try_get_event` before
    /// waiting (as [`EventChannel::get_event_async`] does).
    ///
    /// It is not the channel's file (`/dev/infiniband/rdma_cm`, which would take commands whose
    /// answers the kernel writes to any address they name) but an epoll instance that watches it: a
    /// `write(2)` to it fails (`EINVAL`), and it can be duplicated and kept by anyone. It stays valid
    /// while the channel's file is open (as long as a clone of the channel or one of its identifiers
    /// lives).
    pub fn readiness_fd(&self) -> BorrowedFd<'_> {
        self.inner.file.readiness_fd()
    }

    /// Waits for the next event on the tokio reactor (feature `tokio`).
    #[cfg(feature = "tokio")]
    pub async fn get_event_async(&self) -> io::Result<Event> {
        crate::reactor::wait_readable_then(self.readiness_fd(), || self.try_get_event()).await
    }

    /// Waits up to `timeout` for the next event of the identifier with cookie `uid`, keeping the
    /// others for their identifiers' waits and [`EventChannel::get_event`].
    fn wait_for(&self, uid: u64, timeout: Duration) -> Result<Event, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            let parked = {
                let mut pending = lock(&self.inner.pending);
                pending
                    .iter()
                    .position(|p| p.uid == uid)
                    .and_then(|i| pending.remove(i))
            };
            if let Some(p) = parked {
                match p.ev.into_event() {
                    Some(e) => return Ok(e),
                    None => continue,
                }
            }
            match self.inner.read_one(Some(uid))? {
                Read::Event(p) => {
                    if let Some(e) = p.ev.into_event() {
                        return Ok(e);
                    }
                }
                // Parked for its identifier: look at the parked events again (another thread may
                // have parked one of this identifier's meanwhile), then read on.
                Read::Other => {}
                Read::Empty => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(Error::TimedOut {
                            verb: Verb::RdmaCm(RDMA_USER_CM_CMD_GET_EVENT),
                        });
                    }
                    self.inner.file.wait_readable(
                        i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1),
                    )?;
                }
            }
        }
    }
}

/// What [`ChanInner::read_one`] read.
#[derive(Debug)]
enum Read {
    /// No event is queued.
    Empty,
    /// An event of another identifier than the one asked for: parked for it (or dropped, its
    /// identifier gone).
    Other,
    /// An event of the identifier asked for (of any, when none was named).
    Event(Parked),
}

impl ChanInner {
    /// Reads and processes one event: [`Read::Event`] if it is for the identifier with cookie
    /// `want` (for any, with `None`), else parks it for its own ([`Read::Other`]) before the reader
    /// lock is released, so that a migration, which takes that lock, finds each event of its
    /// identifier that this channel read either handed out or parked (and moves the parked ones).
    /// Events of identifiers already dropped are skipped (a connection request to a dropped
    /// listener is destroyed, which rejects it).
    fn read_one(self: &Arc<Self>, want: Option<u64>) -> Result<Read, Error> {
        loop {
            // Declared before the reader's guard, so dropped after it: the last reference to an
            // identifier (another thread dropped its own) runs `IdInner::drop`, and an orphaned
            // or refused request destroys its identifier, with the reader lock released.
            let target: Option<Arc<IdInner>>;
            let mut looked_at: Found<IdInner>;
            let _orphan: Option<Request>;
            let _refused: Option<Parked>;
            let _reader = lock(&self.reader);
            let Some(resp) = self.file.get_event_raw()? else {
                return Ok(Read::Empty);
            };
            let multicast = matches!(
                resp.event,
                RDMA_CM_EVENT_MULTICAST_JOIN | RDMA_CM_EVENT_MULTICAST_ERROR
            );
            // Events carry their identifier's cookie; a multicast membership's carry the
            // membership's (and its handle, numbered apart from identifiers').
            target = match self.ids.get(resp.uid) {
                Some(t) => Some(t),
                None if multicast => {
                    looked_at = self.ids.find(|id| id.is_member(resp.uid));
                    looked_at.hit.take()
                }
                None => None,
            };
            let datagram = match (&target, resp.event) {
                (_, RDMA_CM_EVENT_CONNECT_REQUEST) | (None, _) => resp.uid & 1 == 1,
                (Some(t), _) => t.ps == PortSpace::Udp,
            };
            let ev = raw::decode_event(zerocopy::IntoBytes::as_bytes(&resp), datagram)?;
            let p = if ev.event == RDMA_CM_EVENT_CONNECT_REQUEST {
                let ps = if datagram {
                    PortSpace::Udp
                } else {
                    PortSpace::Tcp
                };
                let mut req = Request {
                    home: Arc::downgrade(self),
                    listener: 0,
                    handle: Some(ev.id),
                    ps,
                    data: ev.data,
                };
                let Some(l) = &target else {
                    // Its listener is gone (the kernel drops the requests still queued for a
                    // destroyed listener, not one read meanwhile): reject it.
                    _orphan = Some(req);
                    continue;
                };
                req.listener = l.handle;
                Parked {
                    uid: l.uid,
                    ev: Incoming::Request(req),
                }
            } else {
                let Some(t) = &target else {
                    // Its identifier is gone (the kernel drops the events of destroyed ones, but
                    // one may have been read meanwhile): nothing to report it to.
                    continue;
                };
                Parked {
                    uid: t.uid,
                    ev: Incoming::Ready(t.process(ev)),
                }
            };
            if want.is_some_and(|uid| uid != p.uid) {
                _refused = self.park(p);
                return Ok(Read::Other);
            }
            return Ok(Read::Event(p));
        }
    }

    /// Keeps `p` for its identifier's next wait, unless that identifier is gone: it may have been
    /// dropped since the event was read, and its destructor already took its parked events. Returns
    /// `p` if refused, for the caller to drop where it holds no lock (a request destroys its
    /// identifier, which may call the drop-error hook).
    #[must_use = "a refused event must be dropped where no lock is held"]
    fn park(&self, p: Parked) -> Option<Parked> {
        let mut pending = lock(&self.pending);
        // Under the `pending` lock, which `IdInner::drop` takes after removing its route: it
        // either sees this event or its route is gone here.
        if self.ids.contains(p.uid) {
            pending.push_back(p);
            None
        } else {
            Some(p)
        }
    }

    /// Takes the events parked for the identifier with cookie `uid`.
    fn take_parked(&self, uid: u64) -> Vec<Parked> {
        let mut pending = lock(&self.pending);
        let mut taken = Vec::new();
        let mut i = 0;
        while i < pending.len() {
            if pending[i].uid == uid {
                taken.extend(pending.remove(i));
            } else {
                i += 1;
            }
        }
        taken
    }
}

/// A multicast membership of an identifier.
#[derive(Debug)]
struct Membership {
    addr: SocketAddr,
    /// The cookie its events carry.
    uid: u64,
    /// The kernel's handle; `None` while `JOIN_MCAST` is under way.
    handle: Option<u32>,
    attached: Option<(Gid, u16)>,
}

#[derive(Debug)]
struct IdInner {
    chan: Arc<ChanInner>,
    handle: u32,
    uid: u64,
    ps: PortSpace,
    qp: Mutex<Option<Arc<crate::qp::QpInner>>>,
    /// The resources this side asked for with its connect or accept, applied at RTR/RTS.
    rd_atomic: Mutex<Option<(u8, u8)>>,
    mcast: Mutex<Vec<Membership>>,
    /// Moved to another channel (or the new channel's stand-in of a migration that failed): the
    /// identifier's other `IdInner` owns the kernel's identifier, its queue pair and memberships;
    /// this one's destructor only removes its route.
    moved: AtomicBool,
}

/// What an identifier's `IdInner` hands to its successor on another channel ([`CmId::migrate`]).
#[derive(Debug, Default)]
struct Belongings {
    qp: Option<Arc<crate::qp::QpInner>>,
    rd_atomic: Option<(u8, u8)>,
    mcast: Vec<Membership>,
}

impl Drop for IdInner {
    fn drop(&mut self) {
        let me: *const IdInner = self;
        self.chan.ids.remove_own(self.uid, me);
        if self.moved.load(Ordering::Relaxed) {
            // Its routes, parked events and memberships went with it to its new channel.
            return;
        }
        // Its parked events die with it, after its route is gone (see `ChanInner::park`): a
        // listener's parked requests are destroyed (their peers rejected) below, unlocked.
        let parked = self.chan.take_parked(self.uid);
        // `&mut self`: no other reference, so no lock is needed (nor held across the commands).
        let qp = self.qp.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        let mcast = std::mem::take(self.mcast.get_mut().unwrap_or_else(|p| p.into_inner()));
        for m in mcast {
            if let (Some(qp), Some((gid, lid))) = (&qp, m.attached) {
                let _ = QueuePair::from_shared(Arc::clone(qp)).detach_mcast(&gid, lid);
            }
            if let Some(handle) = m.handle {
                if let Err(e) = self.chan.file.leave_mcast(handle) {
                    uverbs_drivers::report_drop_error("multicast membership", &e);
                }
            }
        }
        drop(parked);
        if let Err(e) = self.chan.file.destroy_id(self.handle) {
            uverbs_drivers::report_drop_error("connection manager identifier", &e);
        }
    }
}

impl IdInner {
    /// Takes the queue pair, resources and memberships, for another `IdInner` of the identifier.
    fn take_belongings(&self) -> Belongings {
        Belongings {
            qp: lock(&self.qp).take(),
            rd_atomic: lock(&self.rd_atomic).take(),
            mcast: std::mem::take(&mut *lock(&self.mcast)),
        }
    }

    /// Whether the multicast membership with cookie `uid` is this identifier's.
    fn is_member(&self, uid: u64) -> bool {
        lock(&self.mcast).iter().any(|m| m.uid == uid)
    }

    fn qp(&self) -> Option<QueuePair<'static>> {
        lock(&self.qp).clone().map(QueuePair::from_shared)
    }

    /// Moves the identifier's queue pair to `state` with the kernel's attributes.
    fn modify_qp(&self, qp: &QueuePair<'_>, state: u32) -> Result<(), Error> {
        let mut attr = QpAttr::from_kernel(&self.chan.file.init_qp_attr(self.handle, state)?);
        let rd_atomic = *lock(&self.rd_atomic);
        if let Some((resp, init)) = rd_atomic {
            if state == ibv_qp_state::IBV_QPS_RTR && attr.max_dest_rd_atomic.is_some() {
                attr.max_dest_rd_atomic = Some(resp);
            }
            if state == ibv_qp_state::IBV_QPS_RTS && attr.max_rd_atomic.is_some() {
                attr.max_rd_atomic = Some(init);
            }
        }
        qp.modify(&attr).map_err(typed)
    }

    /// Turns a decoded event into the user's, doing what librdmacm does on the way: completes the
    /// active side of a connection on `CONNECT_RESPONSE`, attaches the queue pair on
    /// `MULTICAST_JOIN`. Runs under the channel's reader lock; the queue pair it clones is never
    /// the last reference (this live identifier holds one, which only its destructor or a
    /// migration, which takes the same lock, takes away).
    fn process(&self, ev: CmEvent) -> Event {
        let errno = -ev.status;
        let kind = match (ev.event, ev.data) {
            (RDMA_CM_EVENT_ADDR_RESOLVED, _) => EventKind::AddrResolved,
            (RDMA_CM_EVENT_ADDR_ERROR, _) => EventKind::AddrError { errno },
            (RDMA_CM_EVENT_ROUTE_RESOLVED, _) => EventKind::RouteResolved,
            (RDMA_CM_EVENT_ROUTE_ERROR, _) => EventKind::RouteError { errno },
            (RDMA_CM_EVENT_CONNECT_RESPONSE, CmEventData::Conn(peer)) => match self.qp() {
                Some(qp) => match self.complete_connect(&qp) {
                    Ok(()) => EventKind::Established { peer },
                    Err(e) => {
                        let _ = self.chan.file.reject(self.handle, 0, &[]);
                        EventKind::ConnectError {
                            errno: e.errno() as i32,
                        }
                    }
                },
                None => EventKind::ConnectResponse { peer },
            },
            (RDMA_CM_EVENT_CONNECT_ERROR, _) => EventKind::ConnectError { errno },
            (RDMA_CM_EVENT_UNREACHABLE, _) => EventKind::Unreachable { errno },
            (RDMA_CM_EVENT_REJECTED, data) => EventKind::Rejected {
                reason: ev.status as u32,
                private_data: match data {
                    CmEventData::Conn(p) => p.private_data,
                    CmEventData::Ud(p) => p.private_data,
                    CmEventData::None => Vec::new(),
                },
            },
            (RDMA_CM_EVENT_ESTABLISHED, CmEventData::Ud(peer)) => {
                EventKind::UdEstablished { peer: peer.into() }
            }
            (RDMA_CM_EVENT_ESTABLISHED, CmEventData::Conn(peer)) => EventKind::Established { peer },
            (RDMA_CM_EVENT_DISCONNECTED, _) => EventKind::Disconnected,
            (RDMA_CM_EVENT_DEVICE_REMOVAL, _) => EventKind::DeviceRemoval,
            (RDMA_CM_EVENT_MULTICAST_JOIN, CmEventData::Ud(group)) => {
                let group = UdPeer::from(group);
                if let (Some(qp), Some(gid)) = (self.qp(), group.av.dgid) {
                    let lid = group.av.dlid;
                    match qp.attach_mcast(&gid, lid) {
                        Ok(()) => {
                            let uid = ev.uid;
                            if let Some(m) = lock(&self.mcast).iter_mut().find(|m| m.uid == uid) {
                                m.attached = Some((gid, lid));
                            }
                        }
                        Err(e) => {
                            return Event {
                                id: self.handle,
                                kind: EventKind::MulticastError {
                                    errno: e.raw_os_error().unwrap_or(libc::EIO),
                                },
                            }
                        }
                    }
                }
                EventKind::MulticastJoin { group }
            }
            (RDMA_CM_EVENT_MULTICAST_ERROR, _) => EventKind::MulticastError { errno },
            (RDMA_CM_EVENT_ADDR_CHANGE, _) => EventKind::AddrChange,
            (RDMA_CM_EVENT_TIMEWAIT_EXIT, _) => EventKind::TimewaitExit,
            // An event whose parameters do not fit its port space.
            (_, _) => EventKind::ConnectError {
                errno: libc::EPROTO,
            },
        };
        Event {
            id: self.handle,
            kind,
        }
    }

    /// The active side after the peer's accept: RTR, RTS, then `ACCEPT` (which sends the RTU).
    fn complete_connect(&self, qp: &QueuePair<'_>) -> Result<(), Error> {
        // INIT again first, as librdmacm does: the access flags the connection allows (remote
        // reads need responder resources) are known only now.
        self.modify_qp(qp, ibv_qp_state::IBV_QPS_INIT)?;
        self.modify_qp(qp, ibv_qp_state::IBV_QPS_RTR)?;
        self.modify_qp(qp, ibv_qp_state::IBV_QPS_RTS)?;
        self.chan.file.accept(self.handle, self.uid, None)
    }
}

/// Our errors travel as `io::Error`s with the typed error inside; get it back.
fn typed(e: io::Error) -> Error {
    let what = e.to_string();
    match e.into_inner().map(|b| b.downcast::<Error>()) {
        Some(Ok(e)) => *e,
        _ => Error::Protocol {
            verb: Verb::ModifyQp,
            what,
        },
    }
}

/// The device and port an identifier is bound to (after bind to a local address, or after its
/// address resolved): open this device ([`CmId::open_context`]) to create its queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePort {
    /// The device's node GUID.
    pub node_guid: Guid,
    /// The device's index (as `rdma dev` numbers them).
    pub index: u32,
    /// The port, from 1.
    pub port: u8,
}

/// A connection manager identifier (`struct rdma_cm_id`): one end of a connection, a listener, or
/// a datagram endpoint. Dropping it destroys it (leaving its multicast groups): a listener's
/// pending requests are rejected, a connection is torn down.
#[derive(Debug)]
pub struct CmId {
    inner: Arc<IdInner>,
}

impl CmId {
    fn register(chan: &Arc<ChanInner>, handle: u32, uid: u64, ps: PortSpace) -> CmId {
        CmId::register_with(chan, handle, uid, ps, Belongings::default())
    }

    /// Registers the identifier on `chan` with what it has: its events read there from now on
    /// reach it (multicast ones by its memberships).
    fn register_with(
        chan: &Arc<ChanInner>,
        handle: u32,
        uid: u64,
        ps: PortSpace,
        b: Belongings,
    ) -> CmId {
        let inner = Arc::new(IdInner {
            chan: Arc::clone(chan),
            handle,
            uid,
            ps,
            qp: Mutex::new(b.qp),
            rd_atomic: Mutex::new(b.rd_atomic),
            mcast: Mutex::new(b.mcast),
            moved: AtomicBool::new(false),
        });
        chan.ids.insert(uid, &inner);
        CmId { inner }
    }

    fn file(&self) -> &CmFile {
        &self.inner.chan.file
    }

    fn channel(&self) -> EventChannel {
        EventChannel {
            inner: Arc::clone(&self.inner.chan),
        }
    }

    /// The kernel's handle of the identifier, which its [`Event`]s carry.
    pub fn handle(&self) -> u32 {
        self.inner.handle
    }

    /// The port space.
    pub fn port_space(&self) -> PortSpace {
        self.inner.ps
    }

    /// Binds to a local address (`rdma_bind_addr`); port 0 picks a free one.
    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        Ok(self.file().bind(self.handle(), &addr)?)
    }

    /// Starts resolving `dst` (from `src`, if given) to a device and port (`rdma_resolve_addr`);
    /// the answer is an [`EventKind::AddrResolved`] or [`EventKind::AddrError`].
    pub fn resolve_addr(
        &self,
        src: Option<SocketAddr>,
        dst: SocketAddr,
        timeout: Duration,
    ) -> io::Result<()> {
        Ok(self
            .file()
            .resolve_addr(self.handle(), src.as_ref(), &dst, millis(timeout))?)
    }

    /// Starts resolving the route to the resolved address (`rdma_resolve_route`); the answer is an
    /// [`EventKind::RouteResolved`] or [`EventKind::RouteError`].
    pub fn resolve_route(&self, timeout: Duration) -> io::Result<()> {
        Ok(self.file().resolve_route(self.handle(), millis(timeout))?)
    }

    /// Resolves the address and the route, waiting for both (up to `timeout` each).
    ///
    /// Errors: [`Error::CmEvent`] with `ADDR_ERROR`/`ROUTE_ERROR` and the kernel's errno, or
    /// [`Error::TimedOut`].
    pub fn resolve(
        &self,
        src: Option<SocketAddr>,
        dst: SocketAddr,
        timeout: Duration,
    ) -> io::Result<()> {
        self.resolve_addr(src, dst, timeout)?;
        self.expect(
            RDMA_CM_EVENT_ADDR_RESOLVED,
            Verb::RdmaCm(RDMA_USER_CM_CMD_RESOLVE_ADDR),
            timeout + Duration::from_secs(1),
        )?;
        self.resolve_route(timeout)?;
        self.expect(
            RDMA_CM_EVENT_ROUTE_RESOLVED,
            Verb::RdmaCm(RDMA_USER_CM_CMD_RESOLVE_ROUTE),
            timeout + Duration::from_secs(1),
        )?;
        Ok(())
    }

    /// Waits up to `timeout` for this identifier's next event (the channel's other events stay
    /// queued for [`EventChannel::get_event`]).
    pub fn get_event_timeout(&self, timeout: Duration) -> io::Result<Event> {
        Ok(self.channel().wait_for(self.inner.uid, timeout)?)
    }

    /// Waits for event `want`; any other event of this identifier ends the wait as an error.
    fn expect(&self, want: u32, verb: Verb, timeout: Duration) -> Result<Event, Error> {
        let e = self
            .channel()
            .wait_for(self.inner.uid, timeout)
            .map_err(|e| match e {
                Error::TimedOut { .. } => Error::TimedOut { verb },
                e => e,
            })?;
        let name = e.name();
        if name == raw::event_name(want) {
            Ok(e)
        } else {
            Err(e.into_error(verb))
        }
    }

    /// Listens for connection requests (`rdma_listen`), with room for `backlog` unanswered ones.
    /// Bind first. Requests arrive as [`EventKind::ConnectRequest`].
    pub fn listen(&self, backlog: u32) -> io::Result<()> {
        Ok(self.file().listen(self.handle(), backlog)?)
    }

    /// The addresses, device and port of the identifier (`QUERY`, option `ADDR`).
    fn query(&self) -> io::Result<rdma_ucm_query_addr_resp> {
        Ok(self
            .file()
            .query_addr(self.handle(), RDMA_USER_CM_QUERY_ADDR)?)
    }

    /// The local address (`rdma_get_local_addr`); `None` before bind or resolve.
    pub fn local_addr(&self) -> io::Result<Option<SocketAddr>> {
        Ok(raw::decode_addr(&self.query()?.src_addr))
    }

    /// The peer's address (`rdma_get_peer_addr`); `None` before resolve or a request.
    pub fn peer_addr(&self) -> io::Result<Option<SocketAddr>> {
        Ok(raw::decode_addr(&self.query()?.dst_addr))
    }

    /// The source and destination GIDs of the resolved path (`QUERY`, option `GID`).
    pub fn gids(&self) -> io::Result<(Option<Gid>, Option<Gid>)> {
        let r = self
            .file()
            .query_addr(self.handle(), RDMA_USER_CM_QUERY_GID)?;
        Ok((
            raw::decode_gid(&r.src_addr).map(Gid::from_bytes),
            raw::decode_gid(&r.dst_addr).map(Gid::from_bytes),
        ))
    }

    /// The device and port the identifier is bound to; `None` before an address resolved (or a bind
    /// to a specific local address).
    pub fn device(&self) -> io::Result<Option<DevicePort>> {
        let r = self.query()?;
        Ok((r.node_guid != 0).then(|| DevicePort {
            node_guid: Guid::from_bytes(r.node_guid.to_ne_bytes()),
            index: r.ibdev_index,
            port: r.port_num,
        }))
    }

    /// Opens the device the identifier is bound to, for its protection domain and queue pair.
    pub fn open_context(&self) -> io::Result<Context> {
        let dev = self.device()?.ok_or_else(|| Error::InvalidArgument {
            verb: Verb::OpenDevice,
            what: "the identifier is bound to no device yet (resolve its address first)".into(),
        })?;
        let list = crate::devices()?;
        let found = list
            .iter()
            .find(|d| {
                d.index().ok() == i32::try_from(dev.index).ok()
                    && d.guid().ok() == Some(dev.node_guid)
            })
            .or_else(|| list.iter().find(|d| d.guid().ok() == Some(dev.node_guid)));
        match found {
            Some(d) => d.open(),
            None => Err(Error::NoSuchDevice {
                name: format!("node GUID {}", dev.node_guid),
            }
            .into()),
        }
    }

    /// Creates the identifier's queue pair (`rdma_create_qp`): RC for [`PortSpace::Tcp`], UD for
    /// [`PortSpace::Udp`], in `pd` (which must be on the identifier's device), completing on `send`
    /// and `recv`. An RC queue pair is moved to INIT, a UD one to RTS with the port space's Q_Key
    /// ([`RDMA_UDP_QKEY`]), with the attributes the kernel gives.
    pub fn create_qp<'res>(
        &self,
        pd: &'res ProtectionDomain<'_>,
        send: &'res CompletionQueue<'_>,
        recv: &'res CompletionQueue<'_>,
        caps: QpCaps,
    ) -> io::Result<QueuePair<'res>> {
        self.refuse_second_qp()?;
        let ctx_guid = pd.ctx.inner().drv.info().node_guid().ok().map(Guid::from);
        self.check_device(ctx_guid, || {
            format!("the protection domain is on {}", pd.ctx.name())
        })?;
        let mut b = pd.create_qp(send, recv, self.port_space().qp_type());
        b.set_max_send_wr(caps.max_send_wr)
            .set_max_recv_wr(caps.max_recv_wr)
            .set_max_send_sge(caps.max_send_sge)
            .set_max_recv_sge(caps.max_recv_sge)
            .set_max_inline_data(caps.max_inline_data);
        let qp = b.build()?.into_queue_pair();
        // On refusal (another thread's `create_qp` was first) this queue pair is destroyed as it
        // drops, with the lock released.
        self.attach_qp(&qp)?;
        Ok(qp)
    }

    /// Makes `qp`, a queue pair in RESET that the caller created in a protection domain of the
    /// identifier's device, the identifier's queue pair, as if [`CmId::create_qp`] had made it:
    /// moved to INIT (a UD one to RTS), then driven by `connect`, `accept`, `disconnect` and the
    /// events as that one is. For `uverbs::next::rdmacm`, whose `Resolved::connect` and
    /// `Incoming::accept` take a queue pair the program built (`ibverbs` main's API). Refuses a
    /// second queue pair, one of another device and one of the wrong type for the port space. The
    /// identifier keeps the queue pair alive while it lives.
    pub(crate) fn adopt_qp(&self, qp: &QueuePair<'_>) -> io::Result<()> {
        self.refuse_second_qp()?;
        let Some(guid) = qp.node_guid() else {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateQp,
                what: format!(
                    "the device of queue pair {:#x} has no node GUID to match the identifier's",
                    qp.qp_num()
                ),
            }
            .into());
        };
        self.check_device(Some(guid), || {
            format!("queue pair {:#x} is on another device", qp.qp_num())
        })?;
        let want = self.port_space().qp_type();
        if u32::from(qp.qp_type()) != want {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateQp,
                what: format!(
                    "a queue pair of type {} for an identifier of the {:?} port space (type {want})",
                    qp.qp_type(),
                    self.port_space()
                ),
            }
            .into());
        }
        self.attach_qp(qp)
    }

    fn refuse_second_qp(&self) -> io::Result<()> {
        if lock(&self.inner.qp).is_some() {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateQp,
                what: "the identifier has a queue pair already".into(),
            }
            .into());
        }
        Ok(())
    }

    /// Refuses a queue pair on the device with node GUID `guid` (`on` says where it is) unless
    /// it is the identifier's (an identifier bound to no device yet takes any).
    fn check_device(&self, guid: Option<Guid>, on: impl FnOnce() -> String) -> io::Result<()> {
        if let Some(dev) = self.device()? {
            if guid.is_some_and(|g| g != dev.node_guid) {
                return Err(Error::InvalidArgument {
                    verb: Verb::CreateQp,
                    what: format!(
                        "{}, the identifier on the device with node GUID {}",
                        on(),
                        dev.node_guid
                    ),
                }
                .into());
            }
        }
        Ok(())
    }

    /// Brings `qp` up as the identifier's (INIT; a UD one to RTS with the port space's Q_Key) and
    /// records it, unless another thread recorded one first.
    fn attach_qp(&self, qp: &QueuePair<'_>) -> io::Result<()> {
        self.inner.modify_qp(qp, ibv_qp_state::IBV_QPS_INIT)?;
        if self.port_space() == PortSpace::Udp {
            qp.modify(&QpAttr {
                qp_state: Some(ibv_qp_state::IBV_QPS_RTR),
                ..QpAttr::default()
            })?;
            qp.modify(&QpAttr {
                qp_state: Some(ibv_qp_state::IBV_QPS_RTS),
                sq_psn: Some(0),
                ..QpAttr::default()
            })?;
        }
        let taken = {
            let mut slot = lock(&self.inner.qp);
            let taken = slot.is_some();
            if !taken {
                *slot = Some(qp.shared());
            }
            taken
        };
        if taken {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateQp,
                what: "the identifier has a queue pair already".into(),
            }
            .into());
        }
        Ok(())
    }

    /// The identifier's queue pair, if [`CmId::create_qp`] made one.
    pub fn qp(&self) -> Option<QueuePair<'_>> {
        self.inner.qp()
    }

    /// Starts connecting (`rdma_connect`) after the route resolved: to the listener (reliable), or a
    /// datagram resolve (`SIDR`) of the peer's queue pair. The answer is [`EventKind::Established`]
    /// (with a queue pair, which is then in RTS), [`EventKind::UdEstablished`], or an error event.
    pub fn connect(&self, params: &ConnParams) -> io::Result<()> {
        let qp_num = self.inner.qp().map(|q| q.qp_num()).unwrap_or(0);
        self.connect_as(params, qp_num)
    }

    /// As [`CmId::connect`], naming queue pair `qp_num` to the peer: a queue pair the caller
    /// drives itself (`init_qp_attr`) when the identifier has none, as librdmacm's `rdma_connect`
    /// does with the `qp_num` of its parameters (`uverbs::next::rdmacm::CmId::connect`). Its
    /// answer is then [`EventKind::ConnectResponse`], after which the caller moves its queue pair
    /// to RTR and RTS and calls [`CmId::establish`].
    pub(crate) fn connect_as(&self, params: &ConnParams, qp_num: u32) -> io::Result<()> {
        let verb = Verb::RdmaCm(RDMA_USER_CM_CMD_CONNECT);
        let (max, qkey) = match self.port_space() {
            PortSpace::Tcp => (MAX_CONNECT_PRIVATE_DATA, 0),
            PortSpace::Udp => (MAX_UD_CONNECT_PRIVATE_DATA, RDMA_UDP_QKEY),
        };
        let p = params.to_kernel(verb, max, qp_num, qkey, false)?;
        *lock(&self.inner.rd_atomic) = Some((params.responder_resources, params.initiator_depth));
        Ok(self.file().connect(self.handle(), &p)?)
    }

    /// Accepts a connection request (`rdma_accept`): moves the queue pair to RTR and RTS (reliable)
    /// and answers the peer. A reliable connection is established when this identifier's
    /// [`EventKind::Established`] arrives; a datagram peer is answered at once.
    pub fn accept(&self, params: &ConnParams) -> io::Result<()> {
        let qp_num = self.inner.qp().map(|q| q.qp_num()).unwrap_or(0);
        self.accept_as(params, qp_num)
    }

    /// As [`CmId::accept`], naming queue pair `qp_num` to the peer: a queue pair the caller has
    /// brought to RTS itself (`init_qp_attr`) when the identifier has none, as librdmacm's
    /// `rdma_accept` does with the `qp_num` of its parameters
    /// (`uverbs::next::rdmacm::CmId::accept`).
    pub(crate) fn accept_as(&self, params: &ConnParams, qp_num: u32) -> io::Result<()> {
        let verb = Verb::RdmaCm(RDMA_USER_CM_CMD_ACCEPT);
        let (max, qkey) = match self.port_space() {
            PortSpace::Tcp => (MAX_ACCEPT_PRIVATE_DATA, 0),
            PortSpace::Udp => (MAX_UD_ACCEPT_PRIVATE_DATA, RDMA_UDP_QKEY),
        };
        let qp = self.inner.qp();
        let p = params.to_kernel(verb, max, qp_num, qkey, false)?;
        *lock(&self.inner.rd_atomic) = Some((params.responder_resources, params.initiator_depth));
        if let (Some(qp), PortSpace::Tcp) = (&qp, self.port_space()) {
            self.inner.modify_qp(qp, ibv_qp_state::IBV_QPS_INIT)?;
            self.inner.modify_qp(qp, ibv_qp_state::IBV_QPS_RTR)?;
            self.inner.modify_qp(qp, ibv_qp_state::IBV_QPS_RTS)?;
        }
        Ok(self
            .file()
            .accept(self.handle(), self.inner.uid, Some(&p))?)
    }

    /// The active side's last step when the caller drives its own queue pair (librdmacm's
    /// `rdma_establish`): after [`EventKind::ConnectResponse`] and the caller's moves to RTR and
    /// RTS, tells the kernel the connection is up (`ACCEPT` without parameters, which sends the
    /// RTU). With a queue pair of the identifier's, the response was handled here already and
    /// reported as [`EventKind::Established`]: there is nothing left to send, and the kernel
    /// would refuse a second `ACCEPT`.
    pub(crate) fn establish(&self) -> io::Result<()> {
        Ok(self.file().accept(self.handle(), self.inner.uid, None)?)
    }

    /// Rejects a connection request (`rdma_reject`) with private data (at most
    /// [`MAX_REJECT_PRIVATE_DATA`] bytes, [`MAX_UD_ACCEPT_PRIVATE_DATA`] for datagrams); the peer
    /// sees [`EventKind::Rejected`] with reason 28 (consumer-defined).
    pub fn reject(&self, private_data: &[u8]) -> io::Result<()> {
        let max = match self.port_space() {
            PortSpace::Tcp => MAX_REJECT_PRIVATE_DATA,
            PortSpace::Udp => MAX_UD_ACCEPT_PRIVATE_DATA,
        };
        if private_data.len() > max {
            return Err(Error::InvalidArgument {
                verb: Verb::RdmaCm(RDMA_USER_CM_CMD_REJECT),
                what: format!(
                    "{} bytes of private data, a reject carries at most {max}",
                    private_data.len()
                ),
            }
            .into());
        }
        Ok(self.file().reject(self.handle(), 0, private_data)?)
    }

    /// Disconnects (`rdma_disconnect`): both sides get [`EventKind::Disconnected`], and the queue
    /// pair goes to the error state, flushing its outstanding work requests.
    pub fn disconnect(&self) -> io::Result<()> {
        // The kernel leaves a user's queue pair alone: move it to ERR first (librdmacm's
        // `ucma_shutdown`), so that its outstanding work requests flush.
        if let Some(qp) = self.inner.qp() {
            qp.modify(&QpAttr {
                qp_state: Some(ibv_qp_state::IBV_QPS_ERR),
                ..QpAttr::default()
            })?;
        }
        Ok(self.file().disconnect(self.handle())?)
    }

    /// Joins the multicast group at `addr` (`rdma_join_multicast`; bind or resolve first). The
    /// answer is [`EventKind::MulticastJoin`], on which the identifier's queue pair, if any, is
    /// attached to the group.
    pub fn join_multicast(&self, addr: SocketAddr) -> io::Result<()> {
        let uid = new_uid(PortSpace::Udp);
        {
            // The membership is recorded (without its handle) before the command, which is not
            // issued under the lock: its event, which may be read at once by another thread,
            // finds it by its cookie.
            let mut mcast = lock(&self.inner.mcast);
            if mcast.iter().any(|m| m.addr == addr) {
                return Err(Error::InvalidArgument {
                    verb: Verb::RdmaCm(RDMA_USER_CM_CMD_JOIN_MCAST),
                    what: format!("already a member of {addr}"),
                }
                .into());
            }
            mcast.push(Membership {
                addr,
                uid,
                handle: None,
                attached: None,
            });
        }
        let joined =
            self.file()
                .join_mcast(self.handle(), uid, &addr, RDMA_MC_JOIN_FLAG_FULLMEMBER);
        let mut mcast = lock(&self.inner.mcast);
        let i = mcast.iter().position(|m| m.uid == uid);
        match (joined, i) {
            (Ok(handle), Some(i)) => {
                mcast[i].handle = Some(handle);
                Ok(())
            }
            (Err(e), i) => {
                if let Some(i) = i {
                    mcast.remove(i);
                }
                Err(e.into())
            }
            // `leave_multicast` leaves a membership being joined alone, and only it removes one.
            (Ok(_), None) => unreachable!("a membership being joined was removed"),
        }
    }

    /// Leaves the multicast group at `addr` (`rdma_leave_multicast`), detaching the queue pair.
    pub fn leave_multicast(&self, addr: SocketAddr) -> io::Result<()> {
        let m = {
            let mut mcast = lock(&self.inner.mcast);
            let verb = Verb::RdmaCm(RDMA_USER_CM_CMD_LEAVE_MCAST);
            let Some(i) = mcast.iter().position(|m| m.addr == addr) else {
                return Err(Error::InvalidArgument {
                    verb,
                    what: format!("not a member of {addr}"),
                }
                .into());
            };
            if mcast[i].handle.is_none() {
                return Err(Error::InvalidArgument {
                    verb,
                    what: format!("the join of {addr} is still under way on another thread"),
                }
                .into());
            }
            mcast.remove(i)
        };
        if let (Some(qp), Some((gid, lid))) = (self.inner.qp(), m.attached) {
            qp.detach_mcast(&gid, lid)?;
        }
        if let Some(handle) = m.handle {
            self.file().leave_mcast(handle)?;
        }
        Ok(())
    }

    /// The attributes that move a queue pair of this connection to `state` (`rdma_init_qp_attr`),
    /// for callers that drive their own queue pair.
    pub fn init_qp_attr(&self, state: ibv_qp_state::Type) -> io::Result<QpAttr> {
        Ok(QpAttr::from_kernel(
            &self.file().init_qp_attr(self.handle(), state)?,
        ))
    }

    /// Sets the type of service of the identifier's packets (`rdma_set_option`,
    /// `RDMA_OPTION_ID_TOS`); before resolving the route.
    pub fn set_tos(&self, tos: u8) -> io::Result<()> {
        Ok(self
            .file()
            .set_option(self.handle(), RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &[tos])?)
    }

    /// Lets the identifier bind to an address in use (`RDMA_OPTION_ID_REUSEADDR`); before binding.
    pub fn set_reuseaddr(&self, on: bool) -> io::Result<()> {
        let v = i32::from(on).to_ne_bytes();
        Ok(self
            .file()
            .set_option(self.handle(), RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v)?)
    }

    /// Makes an IPv6 identifier take IPv6 only (`RDMA_OPTION_ID_AFONLY`); before binding.
    pub fn set_afonly(&self, on: bool) -> io::Result<()> {
        let v = i32::from(on).to_ne_bytes();
        Ok(self
            .file()
            .set_option(self.handle(), RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v)?)
    }

    /// Sets the local ACK timeout of the connection's queue pair (`RDMA_OPTION_ID_ACK_TIMEOUT`,
    /// 4.096 µs × 2^`timeout`, at most 31).
    pub fn set_ack_timeout(&self, timeout: u8) -> io::Result<()> {
        if timeout > 31 {
            return Err(Error::InvalidArgument {
                verb: Verb::RdmaCm(RDMA_USER_CM_CMD_SET_OPTION),
                what: format!("ACK timeout {timeout} (at most 31)"),
            }
            .into());
        }
        Ok(self.file().set_option(
            self.handle(),
            RDMA_OPTION_ID,
            RDMA_OPTION_ID_ACK_TIMEOUT,
            &[timeout],
        )?)
    }

    /// Moves the identifier to another event channel (`rdma_migrate_id`), with the events the
    /// kernel queued for it and those the old channel read and kept for it. It is on the new
    /// channel before the kernel moves it, so its events read there, by any thread, reach it.
    /// Neither channel reads events while it moves (readers wait): an event of the identifier that
    /// a read of the old channel ([`EventChannel::get_event`] and kin) returned before is that
    /// caller's; none is lost.
    ///
    /// A thread already blocked waiting on the new channel is not woken by the events the kernel
    /// moves there (`MIGRATE_ID` does not wake the file's pollers): it sees them with its next
    /// event or at its timeout. Read them with [`EventChannel::try_get_event`] (or a wait) after
    /// `migrate` returns.
    ///
    /// If the kernel refuses, the identifier is destroyed (it was moved into the call).
    pub fn migrate(self, to: &EventChannel) -> io::Result<CmId> {
        let from = Arc::clone(&self.inner.chan);
        let (handle, uid, ps) = (self.inner.handle, self.inner.uid, self.inner.ps);
        // Dropped after the readers' guards (a refused request destroys its identifier; a failed
        // migration's stand-in removes its route).
        let mut refused = Vec::new();
        let moved: Result<CmId, (Error, CmId)>;
        {
            let _readers = lock_readers(&from, &to.inner);
            // On the new channel, with its queue pair and memberships, before the kernel can report
            // there: an event read on `to` as soon as `MIGRATE_ID` moved the identifier finds it.
            // Nothing reads `from` meanwhile, so nothing needs them there.
            let new = CmId::register_with(&to.inner, handle, uid, ps, self.inner.take_belongings());
            match self.file().migrate_id(handle, &to.inner.file) {
                Ok(_) => {
                    migrate_pause();
                    self.inner.moved.store(true, Ordering::Relaxed);
                    // Parked here before the readers of `to` read the identifier's next events.
                    // Connection requests stay requests of the old channel's file
                    // (`Request::home`).
                    for p in from.take_parked(uid) {
                        refused.extend(to.inner.park(p));
                    }
                    moved = Ok(new);
                }
                Err(e) => {
                    // As it was: the new channel never saw an event of the identifier.
                    let b = new.inner.take_belongings();
                    *lock(&self.inner.qp) = b.qp;
                    *lock(&self.inner.rd_atomic) = b.rd_atomic;
                    *lock(&self.inner.mcast) = b.mcast;
                    new.inner.moved.store(true, Ordering::Relaxed);
                    // `to` may be `from`, where `new`'s route replaced this one's.
                    from.ids.insert(uid, &self.inner);
                    moved = Err((e, new));
                }
            }
        }
        drop(refused);
        match moved {
            Ok(id) => Ok(id),
            Err((e, stand_in)) => {
                drop(stand_in);
                Err(e.into())
            }
        }
    }
}

/// The reader locks of channels `a` and `b` (one if they are the same), taken in address order:
/// two migrations in opposite directions cannot deadlock.
fn lock_readers<'a>(
    a: &'a ChanInner,
    b: &'a ChanInner,
) -> (MutexGuard<'a, ()>, Option<MutexGuard<'a, ()>>) {
    if std::ptr::eq(a, b) {
        return (lock(&a.reader), None);
    }
    let (first, second) = if (a as *const ChanInner) < (b as *const ChanInner) {
        (a, b)
    } else {
        (b, a)
    };
    let g = lock(&first.reader);
    (g, Some(lock(&second.reader)))
}

/// Test hook (debug builds only): how long [`CmId::migrate`] pauses right after `MIGRATE_ID`, in
/// milliseconds; 0 (the default) is no pause.
#[cfg(debug_assertions)]
static MIGRATE_PAUSE_MS: AtomicU64 = AtomicU64::new(0);

/// Not API (debug builds only): makes every [`CmId::migrate`] of the process pause for `pause`
/// right after its `MIGRATE_ID` succeeded, so that a test can act in the window when the kernel
/// has moved the identifier and `migrate` has not returned. [`Duration::ZERO`] ends the pauses.
#[cfg(debug_assertions)]
#[doc(hidden)]
pub fn __set_migrate_pause(pause: Duration) {
    MIGRATE_PAUSE_MS.store(
        u64::try_from(pause.as_millis()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
}

/// The pause `__set_migrate_pause` asked for, if any.
fn migrate_pause() {
    #[cfg(debug_assertions)]
    {
        let ms = MIGRATE_PAUSE_MS.load(Ordering::Relaxed);
        if ms > 0 {
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry whose destructor removes it from its table, as `IdInner`'s does.
    struct Probe {
        table: Arc<Routes<u64, Probe>>,
        key: u64,
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            let me: *const Probe = self;
            self.table.remove_own(self.key, me);
        }
    }

    /// A lookup holds a reference to each live entry it looks at; when another thread drops the
    /// entry's last other reference meanwhile, the lookup's is the last, and the entry's
    /// destructor runs where the lookup drops it. That must not be under the table's lock, which the
    /// destructor takes (a `std::sync::Mutex` locked twice by one thread deadlocks). The predicate
    /// stands in for the other thread: it drops the test's reference while the lookup holds its own.
    #[test]
    fn a_lookup_never_drops_the_last_reference_under_the_lock() {
        let table = Arc::new(Routes::<u64, Probe>::default());
        let probe = Arc::new(Probe {
            table: Arc::clone(&table),
            key: 1,
        });
        table.insert(1, &probe);
        let held = Mutex::new(Some(probe));
        let (tx, rx) = std::sync::mpsc::channel();
        let t = Arc::clone(&table);
        // A watchdog: the lookup runs on its own thread, so that a deadlock fails the test instead
        // of hanging it.
        std::thread::spawn(move || {
            let found = t.find(|_| {
                drop(lock(&held).take());
                false
            });
            let none = found.hit.is_none();
            // The references the lookup took (the probe's last, here) are the caller's to drop.
            drop(found);
            tx.send(none).unwrap();
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(none) => assert!(none, "the dropped entry was found"),
            Err(_) => panic!(
                "deadlock: the lookup dropped the last reference to an entry under the table's \
                 lock, and the entry's destructor waits for that lock"
            ),
        }
        assert!(lock(&table.map).is_empty(), "the entry removed itself");
    }

    /// An entry that records whether its destructor ran while `reader` was locked.
    struct Witness {
        reader: Arc<Mutex<()>>,
        under_reader: Arc<AtomicBool>,
    }

    impl Drop for Witness {
        fn drop(&mut self) {
            let held = self.reader.try_lock().is_err();
            self.under_reader.store(held, Ordering::SeqCst);
        }
    }

    /// `read_one` looks a multicast event's identifier up with `find` while it holds the channel's
    /// reader lock, and an identifier's destructor must never run under that lock: it issues
    /// commands and calls the user's drop-error hook, which may read the same channel (a deadlock).
    /// So `find` must drop none of the references it upgraded on the way: the caller keeps them (as
    /// `read_one` keeps its result, declared before the reader's guard) and drops them unlocked. The
    /// predicate stands in for another thread that drops its reference to an entry that does not
    /// match while the lookup holds its own, which is then the last.
    #[test]
    fn a_lookup_leaves_the_references_it_took_to_its_caller() {
        let table = Routes::<u64, Witness>::default();
        let reader = Arc::new(Mutex::new(()));
        let under_reader = Arc::new(AtomicBool::new(false));
        let other = Arc::new(Witness {
            reader: Arc::clone(&reader),
            under_reader: Arc::clone(&under_reader),
        });
        table.insert(1, &other);
        let mut held = Some(other);
        {
            // As in `read_one`: what the lookup returns is declared before the reader's guard.
            let found;
            let guard = lock(&reader);
            found = table.find(|_| {
                drop(held.take());
                false
            });
            assert!(
                !under_reader.load(Ordering::SeqCst),
                "the lookup dropped the last reference to an entry that did not match while the \
                 caller held its reader lock: the entry's destructor ran under it"
            );
            drop(guard);
            drop(found);
        }
        assert!(held.is_none());
        assert!(
            !under_reader.load(Ordering::SeqCst),
            "the entry's destructor ran under the reader lock"
        );
        assert_eq!(
            Arc::strong_count(&reader),
            1,
            "the entry's destructor ran (it held the other reference)"
        );
    }
}
