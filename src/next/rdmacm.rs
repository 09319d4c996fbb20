//! The connection manager of the `ibverbs` crate's next API (its `rdmacm` module), on uverbs' own
//! ([`crate::cm`], which talks to `/dev/infiniband/rdma_cm` itself: no librdmacm).
//!
//! It connects queue pairs by IP address: the active side uses a [`Connector`], which resolves the
//! address and route and yields a [`Resolved`]; the passive side an [`Acceptor`], which yields each
//! [`Incoming`] request. Both hand out the [`Context`] of the device the connection manager picked,
//! to build the queue pair on, and then take that queue pair ([`Resolved::connect`],
//! [`Incoming::accept`]) and give back a [`Connection`] whose queue pair is in RTS. [`CmId`] is
//! the level below: every step by hand, with the events ([`CmEvent`]) as they come, blocking or
//! not.
//!
//! ```no_run
//! use std::time::Duration;
//! use uverbs::next as ibverbs;
//! use ibverbs::rdmacm::{rdma_port_space, ConnectionParameter, Connector};
//!
//! # fn main() -> ibverbs::Result<()> {
//! let resolved = Connector::new(rdma_port_space::RDMA_PS_TCP)?
//!     .resolve("192.0.2.1:18515".parse().unwrap(), Duration::from_secs(2))?;
//! let ctx = resolved.context()?;
//! let pd = ctx.alloc_pd()?;
//! let cq = ctx.create_cq(16).build()?;
//! let qp = pd.create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)?.build()?;
//! let mut conn = resolved.connect(qp, ConnectionParameter::default())?;
//! // `conn.queue_pair()` is in RTS: post on it, poll `cq`.
//! # let _ = &mut conn;
//! # Ok(())
//! # }
//! ```
//!
//! Where this module differs from `ibverbs` main's `rdmacm`:
//! - Always compiled (no `rdmacm` feature): uverbs has the connection manager built in.
//! - No `as_raw` ([`CmId`], [`CmEvent`]): there is no librdmacm structure to hand out. [`CmId`]
//!   implements neither `AsRawFd` nor `AsFd`: its event channel's file is one the kernel takes
//!   commands through (whose answers it writes to any address a command names), so its
//!   descriptor is never lent. For a reactor (`poll(2)`, epoll, tokio's `AsyncFd`) there is
//!   [`CmId::readiness_fd`], named as uverbs names it ([`crate::cm::EventChannel::readiness_fd`]):
//!   an epoll instance that watches the file, readable while an event is queued, which takes no
//!   commands.
//! - [`CmId::set_nonblocking`] changes no descriptor's flags: it decides whether
//!   [`CmId::get_cm_event`] waits. Non-blocking, an empty channel is
//!   `ConnectionSetup(EAGAIN)` there and `None` from [`CmId::poll_cm_event`], as in `ibverbs`.
//! - [`CmId::context`] opens the identifier's device ([`crate::cm::CmId::open_context`]) at its
//!   first call and keeps that context, so that every call returns the same one (clones), as
//!   `ibverbs`' return the identifier's `verbs`. The [`Context`] does not keep the [`CmId`] alive
//!   (`ibverbs`' does): it holds its own open device, which outlives the identifier safely.
//! - The queue pair given to [`Resolved::connect`] or [`Incoming::accept`] becomes the
//!   identifier's queue pair in uverbs' connection manager (it adopts it, moved to INIT, as if it
//!   had created it), which then drives its states: on the active side uverbs moves it to RTR and
//!   RTS and sends the RTU itself when the peer's answer (`CONNECT_RESPONSE`) arrives, and reports
//!   `ESTABLISHED`. So [`Resolved::connect`] waits for `ESTABLISHED`, not `CONNECT_RESPONSE`,
//!   and has no `establish` step of its own; a refusal of those moves is
//!   `ConnectionManager(RDMA_CM_EVENT_CONNECT_ERROR)` (the peer is rejected), where `ibverbs`
//!   says `ModifyQueuePair`. The queue pair must be on the identifier's device and of its port
//!   space's type (RC for `RDMA_PS_TCP`, UD for `RDMA_PS_UDP`), else `ModifyQueuePair` (with
//!   uverbs' `InvalidArgument`). Programs see what they see with `ibverbs`: the [`Connection`]'s
//!   queue pair is in RTS when `connect` and `accept` return.
//! - An adopted queue pair is moved to RTR and RTS with the responder resources and initiator
//!   depth of this side's [`ConnectionParameter`] as its `max_dest_rd_atomic` and
//!   `max_rd_atomic` (what librdmacm does for the queue pairs it knows), where `ibverbs` applies
//!   the kernel's attributes unchanged; and [`Connection::disconnect`] moves it to ERR before
//!   the disconnect (librdmacm's `rdma_disconnect` with such a queue pair), so its outstanding
//!   work requests complete flushed at once. The peer sees `DISCONNECTED` either way.
//! - A [`CmId`] driven by hand ([`CmId::connect`] with a queue pair of the program's, moved with
//!   [`CmId::init_qp_attr`]) behaves as `ibverbs`': `CONNECT_RESPONSE` arrives, and
//!   [`CmId::establish`] sends the RTU. On an identifier whose queue pair uverbs drives,
//!   `establish` does nothing (the RTU was sent; a second one would be refused).
//! - Nothing panics in `Drop`: a destroy the kernel refuses is reported through
//!   [`crate::set_drop_error_hook`]. A `CONNECT_REQUEST` [`CmEvent`] dropped without
//!   [`CmEvent::connection_request`] destroys the request's identifier, which rejects the peer
//!   (librdmacm only acknowledges the event, leaving the request unanswered);
//!   [`CmEvent::connection_request`] of any other event is `ConnectionSetup` (`EINVAL`).
//! - Port spaces `RDMA_PS_TCP` and `RDMA_PS_UDP` only; the others are `ConnectionSetup` (an
//!   [`io::ErrorKind::Unsupported`] cause).
//! - [`ConnectionParameter`] holds no pointer (no private data, which `ibverbs` cannot set
//!   either), so it is `Send + Sync`; retry counts above 7 are refused before the kernel sees
//!   them (`Connect` or `Accept`, uverbs' `InvalidArgument`), where the kernel keeps their low
//!   three bits. [`CmEvent`] is `Send + Sync` too. Every type is `Debug`.
//! - Errors wrap uverbs' typed errors, converted as the rest of this module's (an `EOPNOTSUPP`
//!   is [`Error::Unsupported`]).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use uverbs_drivers::error::{Error as DriverError, Verb};
use uverbs_drivers::uapi::RDMA_USER_CM_CMD_INIT_QP_ATTR;

use super::error::{Error, Result};
use super::ffi;
use super::qp::{PreparedQueuePair, QueuePair, QueuePairAttribute};
use super::Context;
use crate::cm::{self, EventKind, PortSpace};

pub use super::ffi::{rdma_cm_event_type, rdma_port_space};

/// A failure of the connection manager's setup (`ConnectionSetup`).
fn setup(e: io::Error) -> Error {
    Error::from_uverbs(e, Error::ConnectionSetup)
}

/// A refusal of a step that moves a queue pair (the kernel's attributes, or the move itself) is
/// `ModifyQueuePair`, as `ibverbs`' own moves are; any other is `wrap`'s.
fn qp_step_or(e: io::Error, wrap: fn(io::Error) -> Error) -> Error {
    let verb = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<DriverError>())
        .and_then(DriverError::verb);
    match verb {
        Some(Verb::ModifyQp) | Some(Verb::RdmaCm(RDMA_USER_CM_CMD_INIT_QP_ATTR)) => {
            Error::from_uverbs(e, Error::ModifyQueuePair)
        }
        _ => Error::from_uverbs(e, wrap),
    }
}

/// A timeout in whole milliseconds, at most `i32::MAX` of them (as librdmacm takes it).
fn clamp(timeout: Duration) -> Duration {
    Duration::from_millis(timeout.as_millis().min(i32::MAX as u128) as u64)
}

/// The events that end a blocking helper's wait as an error.
fn is_failure(event: rdma_cm_event_type) -> bool {
    matches!(
        event,
        rdma_cm_event_type::RDMA_CM_EVENT_ADDR_ERROR
            | rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_ERROR
            | rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_ERROR
            | rdma_cm_event_type::RDMA_CM_EVENT_UNREACHABLE
            | rdma_cm_event_type::RDMA_CM_EVENT_REJECTED
            | rdma_cm_event_type::RDMA_CM_EVENT_DEVICE_REMOVAL
    )
}

/// A connection manager identifier (a connection or a listener) with an event channel of its
/// own: every step of connection setup, for programs that drive it themselves (the blocking
/// helpers, [`Connector`] and [`Acceptor`], are built on it).
///
/// The active side: [`resolve_addr`](CmId::resolve_addr), [`resolve_route`](CmId::resolve_route),
/// a queue pair built on [`context`](CmId::context) and moved to INIT with
/// [`init_qp_attr`](CmId::init_qp_attr), [`connect`](CmId::connect), RTR and RTS, then
/// [`establish`](CmId::establish), waiting for each step's event with
/// [`get_cm_event`](CmId::get_cm_event) or [`poll_cm_event`](CmId::poll_cm_event). The passive
/// side: [`bind_addr`](CmId::bind_addr), [`listen`](CmId::listen), and for each
/// `CONNECT_REQUEST` [`CmEvent::connection_request`], a queue pair in RTS, then
/// [`accept`](CmId::accept).
///
/// Created behind an `Arc`, as in `ibverbs`. Dropping the last reference destroys the identifier
/// (a connected one is torn down; a listener's waiting requests are rejected).
pub struct CmId {
    // Dropped first: the identifier goes before its channel's file is closed.
    id: cm::CmId,
    channel: cm::EventChannel,
    nonblocking: AtomicBool,
    /// The identifier's device, opened by the first [`CmId::context`].
    ctx: OnceLock<Context>,
}

impl fmt::Debug for CmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CmId")
            .field("handle", &self.id.handle())
            .field("port_space", &self.id.port_space())
            .field("nonblocking", &self.nonblocking.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl CmId {
    fn new(id: cm::CmId, channel: cm::EventChannel) -> CmId {
        CmId {
            id,
            channel,
            nonblocking: AtomicBool::new(false),
            ctx: OnceLock::new(),
        }
    }

    /// A new identifier in `port_space` (`RDMA_PS_TCP` for reliable connections, `RDMA_PS_UDP`
    /// for datagrams), on an event channel of its own.
    pub fn create(port_space: rdma_port_space) -> Result<Arc<CmId>> {
        let ps = match port_space {
            rdma_port_space::RDMA_PS_TCP => PortSpace::Tcp,
            rdma_port_space::RDMA_PS_UDP => PortSpace::Udp,
            other => {
                return Err(Error::ConnectionSetup(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "port space {other:?}: uverbs' connection manager has RDMA_PS_TCP and \
                         RDMA_PS_UDP"
                    ),
                )))
            }
        };
        let channel = cm::EventChannel::new().map_err(setup)?;
        let id = channel.create_id(ps).map_err(setup)?;
        Ok(Arc::new(CmId::new(id, channel)))
    }

    /// The next event of the identifier's channel, waiting for it (unless the identifier is
    /// non-blocking: then an empty channel is `ConnectionSetup` with `EAGAIN`).
    pub fn get_cm_event(&self) -> Result<CmEvent> {
        if self.nonblocking.load(Ordering::Relaxed) {
            return match self.channel.try_get_event().map_err(setup)? {
                Some(event) => Ok(CmEvent { event }),
                None => Err(Error::ConnectionSetup(io::Error::from_raw_os_error(
                    libc::EAGAIN,
                ))),
            };
        }
        let event = self.channel.get_event().map_err(setup)?;
        Ok(CmEvent { event })
    }

    /// The next event if one is queued (non-blocking identifiers); on a blocking one, as
    /// [`get_cm_event`](CmId::get_cm_event), always `Some`.
    pub fn poll_cm_event(&self) -> Result<Option<CmEvent>> {
        if self.nonblocking.load(Ordering::Relaxed) {
            let event = self.channel.try_get_event().map_err(setup)?;
            return Ok(event.map(|event| CmEvent { event }));
        }
        self.get_cm_event().map(Some)
    }

    /// Whether [`get_cm_event`](CmId::get_cm_event) waits for an event (blocking, the default)
    /// or returns at once. No descriptor's flags change: wait for
    /// [`readiness_fd`](CmId::readiness_fd) with a reactor, then take the events with
    /// [`poll_cm_event`](CmId::poll_cm_event).
    pub fn set_nonblocking(&self, nonblocking: bool) -> Result<()> {
        self.nonblocking.store(nonblocking, Ordering::Relaxed);
        Ok(())
    }

    /// A descriptor for a reactor (`poll(2)`, epoll, tokio's `AsyncFd`), readable while an event
    /// is queued for the identifier's channel (what `ibverbs` offers through `AsRawFd`/`AsFd`):
    /// not the channel's file, which takes commands, but an epoll instance that watches it
    /// ([`crate::cm::EventChannel::readiness_fd`]). Take the events with
    /// [`poll_cm_event`](CmId::poll_cm_event) until it returns `None` before waiting again: events
    /// already read from the kernel (those [`CmEvent::connection_request`] moves with a new
    /// identifier) do not make it readable.
    pub fn readiness_fd(&self) -> BorrowedFd<'_> {
        self.channel.readiness_fd()
    }

    /// The device the connection manager bound the identifier to (after `ADDR_RESOLVED`, or on
    /// a connection request's identifier): build the queue pair, its protection domain and
    /// completion queue here. The device is opened at the first call and kept by the identifier;
    /// later calls return the same context. It does not keep the identifier alive (it has its
    /// own open device).
    pub fn context(self: &Arc<Self>) -> Result<Context> {
        if let Some(ctx) = self.ctx.get() {
            return Ok(ctx.clone());
        }
        if self.id.device().map_err(setup)?.is_none() {
            return Err(Error::ConnectionSetup(io::Error::other(
                "connection manager has not bound a device yet",
            )));
        }
        let ctx = self
            .id
            .open_context()
            .map_err(|e| Error::from_uverbs(e, Error::OpenDevice))?;
        // Another thread may have opened it meanwhile: theirs is kept, this one closed.
        Ok(self.ctx.get_or_init(|| Context::from(ctx)).clone())
    }

    /// The attributes that move a queue pair of this connection to `target_state`
    /// (`rdma_init_qp_attr`), for [`QueuePair::modify`].
    pub fn init_qp_attr(&self, target_state: ffi::ibv_qp_state) -> Result<QueuePairAttribute> {
        let attr = self
            .id
            .init_qp_attr(target_state as u32)
            .map_err(|e| Error::from_uverbs(e, Error::ModifyQueuePair))?;
        Ok(QueuePairAttribute::from_uverbs(attr))
    }

    /// Waits for event `expected`, skipping others; a failure event ends the wait as
    /// [`Error::ConnectionManager`].
    fn wait_for(&self, expected: rdma_cm_event_type) -> Result<CmEvent> {
        loop {
            let event = self.get_cm_event()?;
            let kind = event.event_type();
            if kind == expected {
                return Ok(event);
            }
            if is_failure(kind) {
                return Err(Error::ConnectionManager(kind));
            }
        }
    }

    /// Binds to the local address `addr` (the passive side; `0.0.0.0:port` for every device).
    pub fn bind_addr(&self, addr: SocketAddr) -> Result<()> {
        self.id
            .bind(addr)
            .map_err(|e| Error::from_uverbs(e, Error::BindAddress))
    }

    /// Listens for connection requests, with room for `backlog` unanswered ones (0 or less: the
    /// kernel's maximum).
    pub fn listen(&self, backlog: i32) -> Result<()> {
        self.id
            .listen(u32::try_from(backlog).unwrap_or(0))
            .map_err(setup)
    }

    /// Starts resolving `dst` to a device and port; `ADDR_RESOLVED` (or `ADDR_ERROR`) answers.
    pub fn resolve_addr(&self, dst: SocketAddr, timeout: Duration) -> Result<()> {
        self.id
            .resolve_addr(None, dst, clamp(timeout))
            .map_err(|e| Error::from_uverbs(e, Error::ResolveAddress))
    }

    /// Starts resolving the route to the resolved address; `ROUTE_RESOLVED` (or `ROUTE_ERROR`)
    /// answers.
    pub fn resolve_route(&self, timeout: Duration) -> Result<()> {
        self.id
            .resolve_route(clamp(timeout))
            .map_err(|e| Error::from_uverbs(e, Error::ResolveRoute))
    }

    /// Starts connecting, naming the queue pair of `param` ([`ConnectionParameter::set_qp_num`])
    /// to the peer. `CONNECT_RESPONSE` answers; then move the queue pair to RTR and RTS and
    /// [`establish`](CmId::establish).
    pub fn connect(&self, param: &ConnectionParameter) -> Result<()> {
        self.id
            .connect_as(&param.to_uverbs(), param.qp_num)
            .map_err(|e| Error::from_uverbs(e, Error::Connect))
    }

    /// Accepts a connection request with the queue pair of `param`, in RTS already;
    /// `ESTABLISHED` follows.
    pub fn accept(&self, param: &ConnectionParameter) -> Result<()> {
        self.id
            .accept_as(&param.to_uverbs(), param.qp_num)
            .map_err(|e| qp_step_or(e, Error::Accept))
    }

    /// The active side's last step, after `CONNECT_RESPONSE` and the queue pair's moves to RTR
    /// and RTS: sends the RTU. Nothing to do where uverbs drives the queue pair (after
    /// [`Resolved::connect`]'s adoption), which sent it already.
    pub fn establish(&self) -> Result<()> {
        if self.id.qp().is_some() {
            return Ok(());
        }
        self.id
            .establish()
            .map_err(|e| Error::from_uverbs(e, Error::Connect))
    }

    /// Disconnects; the peer sees `DISCONNECTED`.
    pub fn disconnect(&self) -> Result<()> {
        self.id.disconnect().map_err(setup)
    }

    /// Makes `qp` the identifier's queue pair (moved to INIT), for uverbs to drive.
    fn adopt(&self, qp: &QueuePair) -> Result<()> {
        self.id
            .adopt_qp(&qp.qp)
            .map_err(|e| Error::from_uverbs(e, Error::ModifyQueuePair))
    }
}

/// A connection manager event, from [`CmId::get_cm_event`] or [`CmId::poll_cm_event`].
#[derive(Debug)]
pub struct CmEvent {
    event: cm::Event,
}

impl CmEvent {
    /// What happened.
    pub fn event_type(&self) -> rdma_cm_event_type {
        use rdma_cm_event_type as T;
        match self.event.kind {
            EventKind::AddrResolved => T::RDMA_CM_EVENT_ADDR_RESOLVED,
            EventKind::AddrError { .. } => T::RDMA_CM_EVENT_ADDR_ERROR,
            EventKind::RouteResolved => T::RDMA_CM_EVENT_ROUTE_RESOLVED,
            EventKind::RouteError { .. } => T::RDMA_CM_EVENT_ROUTE_ERROR,
            EventKind::ConnectRequest { .. } | EventKind::UdConnectRequest { .. } => {
                T::RDMA_CM_EVENT_CONNECT_REQUEST
            }
            EventKind::ConnectResponse { .. } => T::RDMA_CM_EVENT_CONNECT_RESPONSE,
            EventKind::ConnectError { .. } => T::RDMA_CM_EVENT_CONNECT_ERROR,
            EventKind::Unreachable { .. } => T::RDMA_CM_EVENT_UNREACHABLE,
            EventKind::Rejected { .. } => T::RDMA_CM_EVENT_REJECTED,
            EventKind::Established { .. } | EventKind::UdEstablished { .. } => {
                T::RDMA_CM_EVENT_ESTABLISHED
            }
            EventKind::Disconnected => T::RDMA_CM_EVENT_DISCONNECTED,
            EventKind::DeviceRemoval => T::RDMA_CM_EVENT_DEVICE_REMOVAL,
            EventKind::MulticastJoin { .. } => T::RDMA_CM_EVENT_MULTICAST_JOIN,
            EventKind::MulticastError { .. } => T::RDMA_CM_EVENT_MULTICAST_ERROR,
            EventKind::AddrChange => T::RDMA_CM_EVENT_ADDR_CHANGE,
            EventKind::TimewaitExit => T::RDMA_CM_EVENT_TIMEWAIT_EXIT,
        }
    }

    /// The event's status, as the kernel gives it: 0, a negative errno for the error events, the
    /// reject reason of `REJECTED` (28: the peer rejected; 8: nobody listens there).
    pub fn status(&self) -> i32 {
        match self.event.kind {
            EventKind::AddrError { errno }
            | EventKind::RouteError { errno }
            | EventKind::ConnectError { errno }
            | EventKind::Unreachable { errno }
            | EventKind::MulticastError { errno } => -errno,
            EventKind::Rejected { reason, .. } => i32::try_from(reason).unwrap_or(i32::MAX),
            _ => 0,
        }
    }

    /// The new identifier a `CONNECT_REQUEST` carries, moved to an event channel of its own
    /// (its events never mix with the listener's or other connections'): build a queue pair in
    /// RTS on its [`context`](CmId::context) and [`accept`](CmId::accept). Any other event is
    /// `ConnectionSetup` (`EINVAL`).
    pub fn connection_request(self) -> Result<Arc<CmId>> {
        let name = self.event.name();
        let id = match self.event.kind {
            EventKind::ConnectRequest { id, .. } | EventKind::UdConnectRequest { id, .. } => id,
            _ => {
                return Err(Error::ConnectionSetup(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{name} is not a connection request"),
                )))
            }
        };
        // On failure the request's identifier is destroyed (rejecting the peer).
        let channel = cm::EventChannel::new().map_err(setup)?;
        let id = id.migrate(&channel).map_err(setup)?;
        Ok(Arc::new(CmId::new(id, channel)))
    }
}

/// What this side proposes with a connect or an accept. The default: one outstanding RDMA read
/// or atomic each way, seven retries of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionParameter {
    responder_resources: u8,
    initiator_depth: u8,
    retry_count: u8,
    rnr_retry_count: u8,
    qp_num: u32,
}

impl Default for ConnectionParameter {
    fn default() -> Self {
        ConnectionParameter {
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 7,
            rnr_retry_count: 7,
            qp_num: 0,
        }
    }
}

impl ConnectionParameter {
    /// RDMA reads and atomics this side serves at once, as the target.
    pub fn set_responder_resources(&mut self, responder_resources: u8) -> &mut Self {
        self.responder_resources = responder_resources;
        self
    }

    /// RDMA reads and atomics this side issues at once.
    pub fn set_initiator_depth(&mut self, initiator_depth: u8) -> &mut Self {
        self.initiator_depth = initiator_depth;
        self
    }

    /// Transport retries (at most 7).
    pub fn set_retry_count(&mut self, retry_count: u8) -> &mut Self {
        self.retry_count = retry_count;
        self
    }

    /// Retries after a receiver-not-ready answer (at most 7; 7 is for ever).
    pub fn set_rnr_retry_count(&mut self, rnr_retry_count: u8) -> &mut Self {
        self.rnr_retry_count = rnr_retry_count;
        self
    }

    /// The number of the queue pair to connect or accept with ([`Resolved::connect`] and
    /// [`Incoming::accept`] set it).
    pub fn set_qp_num(&mut self, qp_num: u32) -> &mut Self {
        self.qp_num = qp_num;
        self
    }

    fn to_uverbs(self) -> cm::ConnParams {
        cm::ConnParams {
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            ..cm::ConnParams::default()
        }
    }
}

/// The active side's blocking setup: resolves the address and route, then yields a [`Resolved`]
/// to build the queue pair on.
#[derive(Debug)]
pub struct Connector {
    id: Arc<CmId>,
}

impl Connector {
    /// A connector in `port_space`, with its own event channel.
    pub fn new(port_space: rdma_port_space) -> Result<Self> {
        Ok(Connector {
            id: CmId::create(port_space)?,
        })
    }

    /// Resolves `dst` and the route to it, waiting up to `timeout` for each.
    pub fn resolve(self, dst: SocketAddr, timeout: Duration) -> Result<Resolved> {
        self.id.resolve_addr(dst, timeout)?;
        self.id
            .wait_for(rdma_cm_event_type::RDMA_CM_EVENT_ADDR_RESOLVED)?;
        self.id.resolve_route(timeout)?;
        self.id
            .wait_for(rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_RESOLVED)?;
        Ok(Resolved { id: self.id })
    }
}

/// A resolved active connection: build the queue pair on its [`context`](Resolved::context), then
/// [`connect`](Resolved::connect).
#[derive(Debug)]
pub struct Resolved {
    id: Arc<CmId>,
}

impl Resolved {
    /// The device the address resolved to.
    pub fn context(&self) -> Result<Context> {
        self.id.context()
    }

    /// Connects with `qp` (its number goes into `param`) and waits until the connection is
    /// established: the returned [`Connection`]'s queue pair is in RTS. uverbs' connection
    /// manager drives the queue pair from here (see the [module](self)'s differences).
    pub fn connect(
        self,
        qp: PreparedQueuePair,
        mut param: ConnectionParameter,
    ) -> Result<Connection> {
        let qp = qp.into_queue_pair();
        self.id.adopt(&qp)?;
        param.set_qp_num(qp.qp_num());
        self.id.connect(&param)?;
        // uverbs moved the queue pair to RTR and RTS and sent the RTU on the peer's answer.
        self.id
            .wait_for(rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED)?;
        self.id.establish()?;
        Ok(Connection { id: self.id, qp })
    }
}

/// The passive side's blocking setup: binds, listens, and yields each connection request.
#[derive(Debug)]
pub struct Acceptor {
    listener: Arc<CmId>,
}

impl Acceptor {
    /// Binds to `addr` (`0.0.0.0:port`: every device) and listens, with room for `backlog`
    /// waiting requests.
    pub fn bind(addr: SocketAddr, port_space: rdma_port_space, backlog: i32) -> Result<Self> {
        let listener = CmId::create(port_space)?;
        listener.bind_addr(addr)?;
        listener.listen(backlog)?;
        Ok(Acceptor { listener })
    }

    /// Waits for the next connection request, moved to an event channel of its own.
    pub fn accept(&self) -> Result<Incoming> {
        loop {
            let event = self.listener.get_cm_event()?;
            if event.event_type() == rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_REQUEST {
                return Ok(Incoming {
                    id: event.connection_request()?,
                });
            }
        }
    }
}

/// A connection request: build the queue pair on its [`context`](Incoming::context), then
/// [`accept`](Incoming::accept). Dropping it rejects the request.
#[derive(Debug)]
pub struct Incoming {
    id: Arc<CmId>,
}

impl Incoming {
    /// The device the request arrived on.
    pub fn context(&self) -> Result<Context> {
        self.id.context()
    }

    /// Accepts with `qp` (its number goes into `param`), moved to RTS first, and waits until the
    /// connection is established.
    pub fn accept(
        self,
        qp: PreparedQueuePair,
        mut param: ConnectionParameter,
    ) -> Result<Connection> {
        let qp = qp.into_queue_pair();
        self.id.adopt(&qp)?;
        param.set_qp_num(qp.qp_num());
        // uverbs moves the queue pair to RTR and RTS (a refusal is `ModifyQueuePair`), then
        // accepts.
        self.id.accept(&param)?;
        self.id
            .wait_for(rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED)?;
        Ok(Connection { id: self.id, qp })
    }
}

/// An established connection: its queue pair and the identifier that keeps the connection.
/// Dropping it tears the connection down and destroys the queue pair.
#[derive(Debug)]
pub struct Connection {
    id: Arc<CmId>,
    qp: QueuePair,
}

impl Connection {
    /// The connected queue pair, for posting; its completions arrive on the queues it was built
    /// with.
    pub fn queue_pair(&mut self) -> &mut QueuePair {
        &mut self.qp
    }

    /// Disconnects: the peer sees `DISCONNECTED`. The queue pair moves to ERR first (its
    /// outstanding requests complete flushed).
    pub fn disconnect(&self) -> Result<()> {
        self.id.disconnect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_types_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<CmId>();
        check::<CmEvent>();
        check::<ConnectionParameter>();
        check::<Connector>();
        check::<Resolved>();
        check::<Acceptor>();
        check::<Incoming>();
        check::<Connection>();
    }

    #[test]
    fn default_parameters_are_ibverbs_defaults() {
        let p = ConnectionParameter::default();
        let u = p.to_uverbs();
        assert_eq!(
            (
                u.responder_resources,
                u.initiator_depth,
                u.retry_count,
                u.rnr_retry_count
            ),
            (1, 1, 7, 7)
        );
        assert!(u.private_data.is_empty());
        assert!(!u.flow_control);
        let mut q = p;
        q.set_responder_resources(4)
            .set_initiator_depth(2)
            .set_retry_count(3)
            .set_rnr_retry_count(5)
            .set_qp_num(0x1234);
        let u = q.to_uverbs();
        assert_eq!(
            (
                u.responder_resources,
                u.initiator_depth,
                u.retry_count,
                u.rnr_retry_count
            ),
            (4, 2, 3, 5)
        );
        assert_eq!(q.qp_num, 0x1234);
    }

    #[test]
    fn other_port_spaces_are_refused() {
        for ps in [rdma_port_space::RDMA_PS_IPOIB, rdma_port_space::RDMA_PS_IB] {
            let e = CmId::create(ps).unwrap_err();
            let Error::ConnectionSetup(cause) = &e else {
                panic!("{e:?}");
            };
            assert_eq!(cause.kind(), io::ErrorKind::Unsupported);
        }
    }

    #[test]
    fn timeouts_are_clamped_to_i32_milliseconds() {
        assert_eq!(clamp(Duration::from_secs(2)), Duration::from_millis(2000));
        assert_eq!(clamp(Duration::MAX), Duration::from_millis(i32::MAX as u64));
    }

    #[test]
    fn failure_events_are_the_ones_ibverbs_stops_at() {
        use rdma_cm_event_type as T;
        for t in [
            T::RDMA_CM_EVENT_ADDR_ERROR,
            T::RDMA_CM_EVENT_ROUTE_ERROR,
            T::RDMA_CM_EVENT_CONNECT_ERROR,
            T::RDMA_CM_EVENT_UNREACHABLE,
            T::RDMA_CM_EVENT_REJECTED,
            T::RDMA_CM_EVENT_DEVICE_REMOVAL,
        ] {
            assert!(is_failure(t), "{t:?}");
        }
        for t in [
            T::RDMA_CM_EVENT_ADDR_RESOLVED,
            T::RDMA_CM_EVENT_CONNECT_REQUEST,
            T::RDMA_CM_EVENT_ESTABLISHED,
            T::RDMA_CM_EVENT_DISCONNECTED,
            T::RDMA_CM_EVENT_TIMEWAIT_EXIT,
        ] {
            assert!(!is_failure(t), "{t:?}");
        }
    }
}
