//! The two calls most programs want (librdmacm's `rdma_create_ep`): a [`Listener`] that yields
//! connected queue pairs and a [`Connection::connect`] that returns one.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::uapi::*;

use super::{CmId, ConnParams, EventChannel, EventKind, PeerParam, PortSpace};
use crate::cq::CompletionQueue;
use crate::pd::{PdInner, ProtectionDomain};
use crate::qp::{QpCaps, QueuePair};
use crate::Context;

/// What [`Listener::bind`] and [`Connection::connect`] set up for each connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointConfig {
    /// The queue pair's capacities.
    pub caps: QpCaps,
    /// Entries of the completion queue shared by sends and receives (at least the sum of the queue
    /// pair's).
    pub cq_entries: i32,
    /// The connection parameters (private data, RDMA read resources, retries).
    pub params: ConnParams,
    /// How long address and route resolution and the handshake may take.
    pub timeout: Duration,
    /// The local address to connect from (`None`: as routing picks).
    pub src: Option<SocketAddr>,
    /// Connection requests a listener keeps waiting.
    pub backlog: u32,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            caps: QpCaps {
                max_send_wr: 16,
                max_recv_wr: 16,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            cq_entries: 32,
            params: ConnParams::default(),
            timeout: Duration::from_secs(5),
            src: None,
            backlog: 16,
        }
    }
}

/// A connected reliable queue pair with everything it needs: its identifier (with its own event
/// channel), the device's context, a protection domain and one completion queue for sends and
/// receives. Dropping it disconnects and destroys it all.
#[derive(Debug)]
pub struct Connection {
    // Dropped in this order: the identifier (disconnect), then the queue pair, its queue, the
    // domain and the context.
    id: CmId,
    qp: QueuePair<'static>,
    cq: CompletionQueue<'static>,
    pd: Arc<PdInner>,
    ctx: Context,
    channel: EventChannel,
    peer: PeerParam,
}

/// The context, domain, queue and queue pair of a new connection.
struct Parts {
    ctx: Context,
    pd: Arc<PdInner>,
    cq: CompletionQueue<'static>,
    qp: QueuePair<'static>,
}

fn setup(id: &CmId, cfg: &EndpointConfig) -> io::Result<Parts> {
    let ctx = id.open_context()?;
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(cfg.cq_entries, 0)?;
    let qp = id.create_qp(&pd, &cq, &cq, cfg.caps)?;
    // The queue pair, queue and domain keep the context alive (they hold its shared state), so
    // their lifetimes are the API's only; `Connection` keeps them together.
    let qp = QueuePair::from_shared(qp.shared());
    let cq = CompletionQueue::from_shared(Arc::clone(&cq.inner));
    let pd = Arc::clone(&pd.inner);
    Ok(Parts { ctx, pd, cq, qp })
}

impl Connection {
    /// Connects to `addr` (`rdma_create_ep` + `rdma_connect`): resolves the address and route,
    /// opens the device it resolves to, creates the queue pair and connects, waiting up to
    /// `cfg.timeout` for each step.
    ///
    /// Errors: [`Error::Rejected`] when the peer rejects (reason 8: nobody listens there),
    /// [`Error::CmEvent`] with `UNREACHABLE`, `ADDR_ERROR`, `ROUTE_ERROR` or `CONNECT_ERROR` and the
    /// kernel's errno, [`Error::TimedOut`].
    pub fn connect(addr: SocketAddr, cfg: &EndpointConfig) -> io::Result<Connection> {
        let channel = EventChannel::new()?;
        let id = channel.create_id(PortSpace::Tcp)?;
        id.resolve(cfg.src, addr, cfg.timeout)?;
        let parts = setup(&id, cfg)?;
        id.connect(&cfg.params)?;
        // The CM's own retries bound the wait; the margin covers a slow peer.
        let e = id.expect(
            RDMA_CM_EVENT_ESTABLISHED,
            Verb::RdmaCm(RDMA_USER_CM_CMD_CONNECT),
            cfg.timeout + Duration::from_secs(30),
        )?;
        let EventKind::Established { peer } = e.kind else {
            return Err(e.into_error(Verb::RdmaCm(RDMA_USER_CM_CMD_CONNECT)).into());
        };
        Ok(Connection::new(id, parts, channel, peer))
    }

    fn new(id: CmId, p: Parts, channel: EventChannel, peer: PeerParam) -> Connection {
        Connection {
            id,
            qp: p.qp,
            cq: p.cq,
            pd: p.pd,
            ctx: p.ctx,
            channel,
            peer,
        }
    }

    /// The connected queue pair.
    pub fn qp(&self) -> &QueuePair<'_> {
        &self.qp
    }

    /// The connected queue pair, for the `&mut self` posting calls (`post_send`, `post_receive`).
    pub fn qp_mut(&mut self) -> &mut QueuePair<'static> {
        &mut self.qp
    }

    /// The completion queue of its sends and receives.
    pub fn cq(&self) -> &CompletionQueue<'_> {
        &self.cq
    }

    /// The protection domain: register the connection's memory here.
    pub fn pd(&self) -> ProtectionDomain<'_> {
        ProtectionDomain {
            ctx: &self.ctx,
            inner: Arc::clone(&self.pd),
        }
    }

    /// The device's context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The identifier (its addresses, device, events).
    pub fn id(&self) -> &CmId {
        &self.id
    }

    /// The event channel of this connection's identifier alone.
    pub fn channel(&self) -> &EventChannel {
        &self.channel
    }

    /// The peer's parameters and private data, from its connect or accept.
    pub fn peer(&self) -> &PeerParam {
        &self.peer
    }

    /// Disconnects: the peer sees [`EventKind::Disconnected`], and this side's queue pair flushes.
    pub fn disconnect(&self) -> io::Result<()> {
        self.id.disconnect()
    }

    /// Waits up to `timeout` for the peer to disconnect (the side that calls
    /// [`Connection::disconnect`] gets no event of its own).
    pub fn wait_disconnected(&self, timeout: Duration) -> io::Result<()> {
        let verb = Verb::RdmaCm(RDMA_USER_CM_CMD_DISCONNECT);
        let e = self.id.expect(RDMA_CM_EVENT_DISCONNECTED, verb, timeout)?;
        drop(e);
        Ok(())
    }
}

/// A listening identifier that yields connected queue pairs (`rdma_create_ep` with
/// `RAI_PASSIVE`, `rdma_listen`, `rdma_get_request`, `rdma_accept`).
#[derive(Debug)]
pub struct Listener {
    id: CmId,
    channel: EventChannel,
    cfg: EndpointConfig,
}

impl Listener {
    /// Binds to `addr` (port 0: a free one; [`Listener::local_addr`] tells) and listens.
    pub fn bind(addr: SocketAddr, cfg: &EndpointConfig) -> io::Result<Listener> {
        let channel = EventChannel::new()?;
        let id = channel.create_id(PortSpace::Tcp)?;
        id.bind(addr)?;
        id.listen(cfg.backlog)?;
        Ok(Listener {
            id,
            channel,
            cfg: cfg.clone(),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.id.local_addr()?.ok_or_else(|| {
            Error::Protocol {
                verb: Verb::RdmaCm(RDMA_USER_CM_CMD_QUERY),
                what: "a listener without a local address".into(),
            }
            .into()
        })
    }

    /// The listening identifier.
    pub fn id(&self) -> &CmId {
        &self.id
    }

    /// Waits for the next connection request and returns its identifier and the peer's parameters,
    /// for the caller to accept ([`CmId::create_qp`], [`CmId::accept`]) or reject; dropping the
    /// identifier rejects it.
    pub fn get_request(&self, timeout: Duration) -> io::Result<(CmId, PeerParam)> {
        let verb = Verb::RdmaCm(RDMA_USER_CM_CMD_LISTEN);
        let e = self
            .id
            .expect(RDMA_CM_EVENT_CONNECT_REQUEST, verb, timeout)?;
        match e.kind {
            EventKind::ConnectRequest { id, peer } => Ok((id, peer)),
            _ => Err(e.into_error(verb).into()),
        }
    }

    /// Waits for a connection request and accepts it with the listener's configuration: the
    /// connection gets its own event channel, context, domain, queue and queue pair.
    pub fn accept(&self) -> io::Result<Connection> {
        loop {
            if let Some(c) = self.accept_timeout(Duration::from_secs(3600))? {
                return Ok(c);
            }
        }
    }

    /// As [`Listener::accept`], waiting at most `timeout` for a request (`None` if none came).
    pub fn accept_timeout(&self, timeout: Duration) -> io::Result<Option<Connection>> {
        let (id, peer) = match self.get_request(timeout) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(None),
            Err(e) => return Err(e),
        };
        let channel = EventChannel::new()?;
        let id = id.migrate(&channel)?;
        let parts = setup(&id, &self.cfg)?;
        let mut params = self.cfg.params.clone();
        // Never offer more than the peer can use (librdmacm's rdma_accept does the same). The
        // kernel reports a request's resources from this side's point of view already: its
        // `responder_resources` is the peer's initiator depth, and the other way round.
        params.responder_resources = params.responder_resources.min(peer.responder_resources);
        params.initiator_depth = params.initiator_depth.min(peer.initiator_depth);
        id.accept(&params)?;
        let verb = Verb::RdmaCm(RDMA_USER_CM_CMD_ACCEPT);
        let e = id.expect(
            RDMA_CM_EVENT_ESTABLISHED,
            verb,
            self.cfg.timeout + Duration::from_secs(30),
        )?;
        drop(e);
        Ok(Some(Connection::new(id, parts, channel, peer)))
    }

    /// The listener's event channel.
    pub fn channel(&self) -> &EventChannel {
        &self.channel
    }
}
