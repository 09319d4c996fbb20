//! Connect by IP address with the connection manager and echo one message.
//!
//! ```sh
//! cm_echo server 10.78.0.1:7471        # waits for one client, echoes its message back
//! cm_echo client 10.78.0.1:7471 hello  # sends "hello", prints the echo
//! ```
//!
//! The server's queue pair, context and protection domain are those of the device its address is
//! on; the client's, of the device its route leaves from. Neither side exchanges a queue pair
//! number by hand: the connection manager does.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use uverbs::cm::{Connection, EndpointConfig, Listener};
use uverbs::{ibv_wc, ReceiveRequest, SendRequest};

const MAX: usize = 256;

/// Waits for the completion of `wr_id` (bounded). Completions of other requests polled on the way
/// are kept in `seen` for their own wait: the client's echo can arrive in the same poll as its
/// send's completion.
fn wait(conn: &Connection, wr_id: u64, seen: &mut Vec<ibv_wc>) -> io::Result<ibv_wc> {
    if let Some(i) = seen.iter().position(|w| w.wr_id() == wr_id) {
        return Ok(seen.remove(i));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut wc = [ibv_wc::default(); 4];
    loop {
        let mut found = None;
        for w in conn.cq().poll(&mut wc)? {
            if !w.is_valid() {
                return Err(io::Error::other(format!(
                    "work request {} failed: {:?}",
                    w.wr_id(),
                    w.error()
                )));
            }
            if w.wr_id() == wr_id && found.is_none() {
                found = Some(*w);
            } else {
                seen.push(*w);
            }
        }
        if let Some(w) = found {
            return Ok(w);
        }
        if Instant::now() > deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no completion within 10 s",
            ));
        }
        std::thread::yield_now();
    }
}

/// Receives one message (posting the receive before `then` runs).
fn receive(
    conn: &Connection,
    then: impl FnOnce(&mut Vec<ibv_wc>) -> io::Result<()>,
) -> io::Result<Vec<u8>> {
    let pd = conn.pd();
    let buf = pd.allocate::<u8>(MAX)?;
    let sge = [buf.sge(..)?];
    // SAFETY: `buf` lives until the receive's completion is polled below, and nothing touches it
    // before.
    unsafe { conn.qp().post_receive_list(&[ReceiveRequest::new(1, &sge)]) }?;
    let mut seen = Vec::new();
    then(&mut seen)?;
    let wc = wait(conn, 1, &mut seen)?;
    Ok(buf[..wc.len()].to_vec())
}

fn send(conn: &Connection, data: &[u8], seen: &mut Vec<ibv_wc>) -> io::Result<()> {
    let pd = conn.pd();
    let mut buf = pd.allocate::<u8>(data.len().max(1))?;
    buf[..data.len()].copy_from_slice(data);
    let sge = [buf.sge(..data.len())?];
    // SAFETY: `buf` lives until the send's completion is polled below.
    unsafe { conn.qp().post_send_list(&[SendRequest::send(2, &sge)]) }?;
    wait(conn, 2, seen).map(drop)
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let usage =
        || io::Error::other("usage: cm_echo server ADDR:PORT | cm_echo client ADDR:PORT MESSAGE");
    let addr: SocketAddr = args.get(2).and_then(|a| a.parse().ok()).ok_or_else(usage)?;
    let cfg = EndpointConfig::default();
    match args.get(1).map(String::as_str) {
        Some("server") => {
            let listener = Listener::bind(addr, &cfg)?;
            let conn = listener.accept()?;
            println!(
                "connection on {}, peer {:?}",
                conn.context().name(),
                conn.id().peer_addr()?
            );
            // The client sends once its receive for the echo is posted; ours is posted first.
            let msg = receive(&conn, |_| Ok(()))?;
            send(&conn, &msg, &mut Vec::new())?;
            conn.wait_disconnected(Duration::from_secs(10))?;
            println!("echoed {} bytes; the client disconnected", msg.len());
        }
        Some("client") => {
            let msg = args.get(3).ok_or_else(usage)?.as_bytes();
            if msg.len() > MAX {
                return Err(io::Error::other(format!("at most {MAX} bytes")));
            }
            let conn = Connection::connect(addr, &cfg)?;
            println!(
                "connected from {} to QP {:#x}",
                conn.context().name(),
                conn.peer().qp_num
            );
            let echo = receive(&conn, |seen| send(&conn, msg, seen))?;
            println!("echo: {}", String::from_utf8_lossy(&echo));
            conn.disconnect()?;
        }
        _ => return Err(usage()),
    }
    Ok(())
}
