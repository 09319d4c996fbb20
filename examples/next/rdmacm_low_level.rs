//! The connection manager driven step by step on the `ibverbs` crate's main-branch API (`CmId`), as
//! `ibverbs`' own `low_level_connect_and_send` test drives it: the server thread blocks on its
//! events, takes the request's identifier (`CmEvent::connection_request`), brings its own queue
//! pair to RTS with the kernel's attributes (`CmId::init_qp_attr`, `QueuePair::modify`) and
//! accepts; the client runs non-blocking, waiting for its events on a reactor's descriptor and
//! taking them with `poll_cm_event`, connects its own queue pair, moves it to RTR and RTS after
//! `CONNECT_RESPONSE`, and `establish`es. One message goes from the client to the server; the
//! client disconnects and the server sees `DISCONNECTED`. Then it prints `rdmacm_low_level: ok`.
//!
//! Besides the `use` line, one change from a program for `ibverbs`: the descriptor the client
//! waits on is `CmId::readiness_fd` (uverbs lends no descriptor of the connection manager's file,
//! which takes commands), where `ibverbs` offers the channel's own through `AsRawFd`.
//!
//! ```text
//! next_rdmacm_low_level [IP:PORT]
//! ```
//!
//! The address is the server's, and must be an RDMA device's (see `next_rdmacm_connect`).
use uverbs::next as ibverbs;

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use ibverbs::ibv_qp_type::IBV_QPT_RC;
use ibverbs::rdmacm::{rdma_cm_event_type, rdma_port_space, CmId, ConnectionParameter};
use ibverbs::{ibv_qp_attr_mask, ibv_qp_state, CompletionQueue, Error, QueuePair};

const MESSAGE: &[u8] = b"hello over a connection managed by hand";

const RECV_WR_ID: u64 = 1;
const SEND_WR_ID: u64 = 2;

/// How long a completion, an event, or the other side's next step may take.
const DEADLINE: Duration = Duration::from_secs(60);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), BoxError> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18517".to_owned())
        .parse()?;

    let (listening_tx, listening) = mpsc::channel();
    let (posted_tx, posted) = mpsc::channel();
    let (received_tx, received) = mpsc::channel();
    let server = std::thread::spawn(move || server(addr, listening_tx, posted_tx, received_tx));

    let sent = match listening.recv_timeout(DEADLINE) {
        Ok(()) => client(addr, &posted, &received),
        Err(e) => Err(format!("the server did not listen: {e}").into()),
    };
    if let Err(e) = sent {
        if server.is_finished() {
            match server.join() {
                Ok(Err(served)) => eprintln!("server: {served}"),
                Ok(Ok(())) => {}
                Err(_) => eprintln!("server: panicked"),
            }
        }
        return Err(e);
    }
    server.join().map_err(|_| "the server panicked")??;
    println!("rdmacm_low_level: ok");
    Ok(())
}

/// Moves `qp` through `states` with the attributes the connection manager computes.
fn transition(id: &CmId, qp: &mut QueuePair, states: &[ibv_qp_state]) -> Result<(), BoxError> {
    for &state in states {
        let attr = id.init_qp_attr(state)?;
        assert!(
            attr.mask().0 & ibv_qp_attr_mask::IBV_QP_STATE.0 != 0,
            "the attributes for {state:?} set no state"
        );
        qp.modify(&attr)?;
    }
    let (attr, _) = qp.query(ibv_qp_attr_mask::IBV_QP_STATE)?;
    let last = *states.last().expect("a state");
    assert_eq!(attr.state(), last, "the queue pair's state");
    Ok(())
}

/// Blocks for `id`'s events until `want` (any failure event ends the wait).
fn wait_event(id: &CmId, want: rdma_cm_event_type) -> Result<(), BoxError> {
    loop {
        let event = id.get_cm_event()?;
        if event.event_type() == want {
            return Ok(());
        }
        println!("server: skipping {:?}", event.event_type());
    }
}

/// Listens on `addr`, accepts one connection with a queue pair it brings up itself, receives one
/// message and checks it, then waits for the client's disconnect.
fn server(
    addr: SocketAddr,
    listening: mpsc::Sender<()>,
    posted: mpsc::Sender<()>,
    received: mpsc::Sender<()>,
) -> Result<(), BoxError> {
    let listener = CmId::create(rdma_port_space::RDMA_PS_TCP)?;
    listener.bind_addr(addr)?;
    listener.listen(1)?;
    listening.send(())?;

    let request: Arc<CmId> = loop {
        let event = listener.get_cm_event()?;
        if event.event_type() == rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_REQUEST {
            assert_eq!(event.status(), 0);
            break event.connection_request()?;
        }
    };
    let ctx = request.context()?;
    println!("server on {ctx:?}");
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(16).build()?;
    let mut qp = pd
        .create_qp(&cq, &cq, IBV_QPT_RC)?
        .build()?
        .into_queue_pair();
    transition(
        &request,
        &mut qp,
        &[
            ibv_qp_state::IBV_QPS_INIT,
            ibv_qp_state::IBV_QPS_RTR,
            ibv_qp_state::IBV_QPS_RTS,
        ],
    )?;
    let mut recv = pd.allocate(128)?;
    recv.bytes_mut().fill(0xa5);
    // SAFETY: `recv` lives until the end of this function, after the receive's completion was
    // polled, and is not touched while the receive is outstanding.
    unsafe { qp.post_receive(&[recv.slice(..)], RECV_WR_ID) }?;

    let mut param = ConnectionParameter::default();
    param.set_qp_num(qp.qp_num());
    request.accept(&param)?;
    wait_event(&request, rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED)?;
    posted.send(())?;

    let len = wait_for(&cq, RECV_WR_ID)?;
    assert_eq!(len, MESSAGE.len(), "the received length");
    assert_eq!(&recv.bytes()[..MESSAGE.len()], MESSAGE);
    println!(
        "received: {:?}",
        String::from_utf8_lossy(&recv.bytes()[..len])
    );
    received.send(())?;

    // The client disconnects: this side hears of it.
    wait_event(&request, rdma_cm_event_type::RDMA_CM_EVENT_DISCONNECTED)?;
    println!("server: the client disconnected");
    Ok(())
}

/// Waits on `id`'s readiness descriptor and takes its events without blocking until `want`.
fn pump(id: &CmId, want: rdma_cm_event_type) -> Result<(), BoxError> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(event) = id.poll_cm_event()? {
            let kind = event.event_type();
            if kind == want {
                if event.status() != 0 {
                    return Err(format!("{kind:?} with status {}", event.status()).into());
                }
                return Ok(());
            }
            return Err(format!(
                "{kind:?} (status {}) while waiting for {want:?}",
                event.status()
            )
            .into());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no {want:?} within {DEADLINE:?}").into());
        }
        let mut pfd = libc::pollfd {
            fd: id.readiness_fd().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1);
        // SAFETY: `pfd` is one valid `pollfd`, the count is 1, and the descriptor is `id`'s, alive
        // during the call.
        if unsafe { libc::poll(&mut pfd, 1, ms) } < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e.into());
            }
        }
    }
}

/// Connects to `addr` non-blocking, with a queue pair it brings up itself, and sends the message.
fn client(
    addr: SocketAddr,
    posted: &mpsc::Receiver<()>,
    received: &mpsc::Receiver<()>,
) -> Result<(), BoxError> {
    let id = CmId::create(rdma_port_space::RDMA_PS_TCP)?;
    id.set_nonblocking(true)?;
    // Nothing is queued yet: a non-blocking identifier says so rather than waiting.
    match id.get_cm_event() {
        Err(Error::ConnectionSetup(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(format!("an empty channel read as {e:?}").into()),
        Ok(event) => {
            return Err(format!("an event before anything was asked: {event:?}").into());
        }
    }
    assert!(id.poll_cm_event()?.is_none(), "an event from nowhere");

    id.resolve_addr(addr, Duration::from_secs(5))?;
    pump(&id, rdma_cm_event_type::RDMA_CM_EVENT_ADDR_RESOLVED)?;
    id.resolve_route(Duration::from_secs(5))?;
    pump(&id, rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_RESOLVED)?;

    let ctx = id.context()?;
    println!("client on {ctx:?}");
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(16).build()?;
    let mut qp = pd
        .create_qp(&cq, &cq, IBV_QPT_RC)?
        .build()?
        .into_queue_pair();
    transition(&id, &mut qp, &[ibv_qp_state::IBV_QPS_INIT])?;

    let mut param = ConnectionParameter::default();
    param.set_qp_num(qp.qp_num());
    id.connect(&param)?;
    pump(&id, rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_RESPONSE)?;
    transition(
        &id,
        &mut qp,
        &[ibv_qp_state::IBV_QPS_RTR, ibv_qp_state::IBV_QPS_RTS],
    )?;
    id.establish()?;

    let mut send = pd.allocate(MESSAGE.len())?;
    send.bytes_mut().copy_from_slice(MESSAGE);
    posted
        .recv_timeout(DEADLINE)
        .map_err(|e| format!("the server posted no receive: {e}"))?;
    // SAFETY: `send` lives until the end of this function, after the send's completion was
    // polled, and is not touched while the send is outstanding.
    unsafe { qp.post_send(&[send.slice(..)], SEND_WR_ID) }?;
    wait_for(&cq, SEND_WR_ID)?;
    println!("sent: {:?}", String::from_utf8_lossy(MESSAGE));
    received
        .recv_timeout(DEADLINE)
        .map_err(|e| format!("the server did not receive the message: {e}"))?;
    id.disconnect()?;
    Ok(())
}

/// Polls `cq` until the completion of `wr_id` (which must succeed) arrives; its length.
fn wait_for(cq: &CompletionQueue, wr_id: u64) -> Result<usize, BoxError> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(mut completions) = cq.poll()? {
            if let Some(wc) = completions.next() {
                if let Err((status, vendor_err)) = wc.ok() {
                    return Err(format!(
                        "work request {} failed: {status:?} (vendor error {vendor_err:#x})",
                        wc.wr_id()
                    )
                    .into());
                }
                if wc.wr_id() == wr_id {
                    return Ok(wc.len());
                }
                return Err(
                    format!("a completion nobody asked for: work request {}", wc.wr_id()).into(),
                );
            }
        }
        if Instant::now() > deadline {
            return Err(
                format!("no completion of work request {wr_id} within {DEADLINE:?}").into(),
            );
        }
    }
}
