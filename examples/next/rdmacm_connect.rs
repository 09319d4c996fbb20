//! A connection made by the connection manager on the `ibverbs` crate's main-branch API: a server
//! thread listens (`Acceptor::bind`), takes the request (`Acceptor::accept`), builds its queue
//! pair on the request's device (`Incoming::context`) and accepts it; the client resolves the
//! server's address (`Connector::resolve`), builds its queue pair on the resolved device
//! (`Resolved::context`) and connects. The client sends one message once the server has posted
//! its receive; the server checks the bytes that arrived; both disconnect. Then it prints
//! `rdmacm_connect: ok`.
//!
//! ```text
//! next_rdmacm_connect [IP:PORT]
//! ```
//!
//! The address is the server's, and must be an RDMA device's (a soft-RoCE device's netdev
//! address): the default, 127.0.0.1:18515, works only where a device sits on `lo`.
use uverbs::next as ibverbs;

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ibverbs::ibv_qp_type::IBV_QPT_RC;
use ibverbs::rdmacm::{rdma_port_space, Acceptor, ConnectionParameter, Connector};
use ibverbs::CompletionQueue;

const MESSAGE: &[u8] = b"hello over rdmacm, from the next API";

const RECV_WR_ID: u64 = 1;
const SEND_WR_ID: u64 = 2;

/// How long a completion, or the other side's next step, may take (soft-RoCE under emulation is
/// slow, but a lost message must fail the program rather than hang it).
const DEADLINE: Duration = Duration::from_secs(60);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), BoxError> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18515".to_owned())
        .parse()?;

    let (listening_tx, listening) = mpsc::channel();
    let (posted_tx, posted) = mpsc::channel();
    let (received_tx, received) = mpsc::channel();
    let server = std::thread::spawn(move || server(addr, listening_tx, posted_tx, received_tx));

    // The server's thread drops its senders when it ends early: then its error is the one to
    // report.
    let sent = match listening.recv_timeout(DEADLINE) {
        Ok(()) => client(addr, &posted, &received),
        Err(e) => Err(format!("the server did not listen: {e}").into()),
    };
    if let Err(e) = sent {
        // A server still waiting (for a request that never came) is left to the process's exit.
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
    println!("rdmacm_connect: ok");
    Ok(())
}

/// Listens on `addr`, accepts one connection, receives one message and checks it.
fn server(
    addr: SocketAddr,
    listening: mpsc::Sender<()>,
    posted: mpsc::Sender<()>,
    received: mpsc::Sender<()>,
) -> Result<(), BoxError> {
    let acceptor = Acceptor::bind(addr, rdma_port_space::RDMA_PS_TCP, 1)?;
    println!("listening on {addr}");
    listening.send(())?;

    let incoming = acceptor.accept()?;
    let ctx = incoming.context()?;
    println!("server on {ctx:?}");
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(16).build()?;
    let qp = pd.create_qp(&cq, &cq, IBV_QPT_RC)?.build()?;
    let mut recv = pd.allocate(128)?;
    // Something the message is not, so that a receive that wrote nothing shows.
    recv.bytes_mut().fill(0xa5);

    let mut conn = incoming.accept(qp, ConnectionParameter::default())?;
    // SAFETY: `recv` lives until the end of this function, after the receive's completion was
    // polled, and is not touched while the receive is outstanding.
    unsafe {
        conn.queue_pair()
            .post_receive(&[recv.slice(..)], RECV_WR_ID)
    }?;
    posted.send(())?;

    let len = wait_for(&cq, RECV_WR_ID)?;
    assert_eq!(len, MESSAGE.len(), "the received length");
    assert_eq!(&recv.bytes()[..MESSAGE.len()], MESSAGE);
    assert!(
        recv.bytes()[MESSAGE.len()..].iter().all(|&b| b == 0xa5),
        "the receive wrote past the message"
    );
    println!(
        "received: {:?}",
        String::from_utf8_lossy(&recv.bytes()[..len])
    );
    received.send(())?;
    conn.disconnect()?;
    Ok(())
}

/// Connects to `addr` and sends the message once the server has posted its receive.
fn client(
    addr: SocketAddr,
    posted: &mpsc::Receiver<()>,
    received: &mpsc::Receiver<()>,
) -> Result<(), BoxError> {
    let resolved =
        Connector::new(rdma_port_space::RDMA_PS_TCP)?.resolve(addr, Duration::from_secs(5))?;
    let ctx = resolved.context()?;
    println!("client on {ctx:?}");
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(16).build()?;
    let qp = pd.create_qp(&cq, &cq, IBV_QPT_RC)?.build()?;
    let mut send = pd.allocate(MESSAGE.len())?;
    send.bytes_mut().copy_from_slice(MESSAGE);

    let mut conn = resolved.connect(qp, ConnectionParameter::default())?;
    posted
        .recv_timeout(DEADLINE)
        .map_err(|e| format!("the server posted no receive: {e}"))?;
    // SAFETY: `send` lives until the end of this function, after the send's completion was
    // polled, and is not touched while the send is outstanding.
    unsafe { conn.queue_pair().post_send(&[send.slice(..)], SEND_WR_ID) }?;
    wait_for(&cq, SEND_WR_ID)?;
    println!("sent: {:?}", String::from_utf8_lossy(MESSAGE));
    received
        .recv_timeout(DEADLINE)
        .map_err(|e| format!("the server did not receive the message: {e}"))?;
    conn.disconnect()?;
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
