//! perftest's out-of-band exchange (`perftest_communication.c`), byte for byte, so that either
//! side may be perftest. It runs over a TCP socket, or with `-R`/`-z` over an RC connection made by
//! the RDMA connection manager ([`Comm::connect_cm`], [`Comm::accept_cm`]):
//!
//! 1. The client connects over IPv4 to the server's port (default 18515).
//! 2. Versions: 16 bytes each way, NUL-padded (`"6.06"`); a peer older than 5.70 is refused.
//! 3. System data (peer ≥ 5.32): the cycle buffer (page size) and cache line size, 4 bytes each,
//!    big-endian; both sides keep the larger.
//! 4. MTU (peer ≥ 5.1): the `ibv_mtu` value as `"%d"`, 2 bytes (peer ≥ 5.31); both keep the smaller.
//! 5. Any number of "handshakes", each a `pingpong_dest`. Over TCP as text:
//!    `"%04x:%04x:%06x:%06x:%08x:%016llx:"` (LID, outstanding reads, QPN, PSN, rkey, vaddr) then
//!    16 `"%02x:"` GID bytes and `"%08x:"` (SRQ number), 108 bytes with the NUL when a GID is used;
//!    without a GID, `"...:%016llx:%08x"` (SRQ number), 59 bytes. Over rdma_cm as the 56-byte
//!    binary struct, big-endian ([`dest_to_wire`]). The same message serves as the
//!    synchronisation points between phases; how many there are, and where, depends on the test.
//! 6. Bandwidth reports (`xchg_bw_reports`): size and iterations (u64), peak and average bandwidth
//!    and message rate (f64), each big-endian, each exchanged as its own message.
//! 7. Closing: one more handshake; over TCP each side then writes `"done\0"` and closes.
//!
//! In every exchange the client writes first and then reads; the server reads, then writes. Over
//! rdma_cm each message is one SEND of exactly its length on the control queue pair, which always
//! has one 56-byte receive posted (`rdma_write_data` / `rdma_read_data`).

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use uverbs::cm::{CmId, ConnParams, EventChannel, EventKind, PortSpace};
use uverbs::exchange::PerftestDest;
use uverbs::{
    ibv_access_flags, ibv_wc, CompletionQueue, MemoryRegion, QpCaps, QueuePair, ReceiveRequest,
    SendRequest,
};

use super::args::PERFTEST_VERSION;

/// `MAX_VERSION`: the version message's size.
const VERSION_LEN: usize = 16;
/// One bandwidth result as `xchg_bw_reports` sends it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BwReport {
    /// The message size.
    pub size: u64,
    /// Messages counted.
    pub iters: u64,
    /// Peak bandwidth (MB/s or Gb/s).
    pub bw_peak: f64,
    /// Average bandwidth.
    pub bw_avg: f64,
    /// Average message rate (Mpps).
    pub msg_rate: f64,
}

/// The connection to the peer (`perftest_comm`): a TCP socket, or an rdma_cm RC connection.
#[derive(Debug)]
pub struct Comm {
    link: Link,
    client: bool,
    /// The peer's version, as `atof` reads it.
    pub rem_version: f64,
    /// The GID index the binary handshake carries (perftest's `gid_index`, -1 for none).
    pub gid_index: i32,
}

#[derive(Debug)]
enum Link {
    Tcp(TcpStream),
    Cm(Box<CmLink>),
}

/// `sizeof(struct pingpong_dest)`: the binary handshake, and the largest message over rdma_cm.
pub const CM_MSG_LEN: usize = 56;
/// `SYNC_SPEC_ID`: the work request id of the control messages.
const CM_WR_ID: u64 = 5;

/// The control connection over rdma_cm (perftest's `comm->rdma_ctx`): an RC queue pair with one
/// send and one receive, completing on their own queues. Its context, domain and queues live until
/// the process exits, as perftest's do; dropping the link destroys the identifier (the peer sees
/// a disconnect) and the queue pair.
#[derive(Debug)]
struct CmLink {
    id: CmId,
    qp: QueuePair<'static>,
    send_cq: &'static CompletionQueue<'static>,
    recv_cq: &'static CompletionQueue<'static>,
    send: MemoryRegion<u8>,
    recv: MemoryRegion<u8>,
}

impl CmLink {
    /// `ctx_init` on the identifier's device, and the one receive posted (`post_one_recv_wqe`).
    fn new(id: CmId) -> Result<CmLink, String> {
        let e = |what: &'static str| move |e: io::Error| format!("{what}: {e}");
        let ctx = Box::leak(Box::new(id.open_context().map_err(e(
            "Couldn't open the device of the rdma_cm control connection",
        ))?));
        let pd = Box::leak(Box::new(ctx.alloc_pd().map_err(e("Couldn't allocate PD"))?));
        let send_cq = Box::leak(Box::new(
            ctx.create_cq(1, 0).map_err(e("Couldn't create CQ"))?,
        ));
        let recv_cq = Box::leak(Box::new(
            ctx.create_cq(1, 0).map_err(e("Couldn't create CQ"))?,
        ));
        let local = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE;
        let send = pd
            .allocate_with_access::<u8>(CM_MSG_LEN, local)
            .map_err(e("Couldn't allocate MR"))?;
        let recv = pd
            .allocate_with_access::<u8>(CM_MSG_LEN, local)
            .map_err(e("Couldn't allocate MR"))?;
        let caps = QpCaps {
            max_send_wr: 1,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let qp = id
            .create_qp(pd, send_cq, recv_cq, caps)
            .map_err(e("Couldn't create the rdma_cm control QP"))?;
        let link = CmLink {
            id,
            qp,
            send_cq,
            recv_cq,
            send,
            recv,
        };
        link.post_recv()?;
        Ok(link)
    }

    fn post_recv(&self) -> Result<(), String> {
        let sge = [self
            .recv
            .sge(..)
            .map_err(|e| format!("Couldn't post recv: {e}"))?];
        // SAFETY: the region lives as long as the queue pair (both in this link), and it is read
        // only after the receive's completion, before the next receive is posted.
        unsafe {
            self.qp
                .post_receive_list(&[ReceiveRequest::new(CM_WR_ID, &sge)])
        }
        .map_err(|f| format!("Couldn't post recv: {}", f.error))
    }

    /// Polls `cq` for one completion. The control channel may wait a whole test run for its peer,
    /// so after a while it sleeps between polls, and it gives up when the connection goes down.
    fn poll_one(&self, cq: &CompletionQueue<'_>) -> io::Result<ibv_wc> {
        let mut wcs = [ibv_wc::default(); 1];
        let start = Instant::now();
        let mut next_check = Duration::from_millis(100);
        loop {
            if !cq.poll(&mut wcs)?.is_empty() {
                return Ok(wcs[0]);
            }
            let waited = start.elapsed();
            if waited < Duration::from_millis(2) {
                std::hint::spin_loop();
                continue;
            }
            std::thread::sleep(Duration::from_micros(50));
            if waited >= next_check {
                next_check = waited + Duration::from_millis(100);
                if let Ok(ev) = self.id.get_event_timeout(Duration::ZERO) {
                    if matches!(ev.kind, EventKind::Disconnected | EventKind::DeviceRemoval) {
                        return Err(io::Error::new(
                            io::ErrorKind::ConnectionReset,
                            format!("the rdma_cm control connection went down ({})", ev.name()),
                        ));
                    }
                }
            }
        }
    }

    /// `rdma_write_data`: one signaled SEND of `msg`, waiting for its completion.
    fn write(&mut self, msg: &[u8]) -> io::Result<()> {
        if msg.len() > CM_MSG_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {}-byte message does not fit the rdma_cm exchange",
                    msg.len()
                ),
            ));
        }
        self.send[..msg.len()].copy_from_slice(msg);
        let sge = [self.send.sge(..msg.len())?];
        // SAFETY: the send buffer is not written again before the completion is polled below.
        unsafe { self.qp.post_send_list(&[SendRequest::send(CM_WR_ID, &sge)]) }
            .map_err(|f| io::Error::other(format!("Couldn't post send: {}", f.error)))?;
        let wc = self.poll_one(self.send_cq)?;
        if let Some((status, _)) = wc.error() {
            return Err(io::Error::other(format!(
                "Completion with error on the rdma_cm control QP send: {}",
                uverbs::wc_status_str(status)
            )));
        }
        Ok(())
    }

    /// `rdma_read_data`: waits for the peer's message, takes `buf.len()` bytes of it and posts the
    /// receive again.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let wc = self.poll_one(self.recv_cq)?;
        if let Some((status, _)) = wc.error() {
            return Err(io::Error::other(format!(
                "Completion with error on the rdma_cm control QP receive: {}",
                uverbs::wc_status_str(status)
            )));
        }
        if wc.wr_id() != CM_WR_ID {
            return Err(io::Error::other(format!(
                "unexpected receive {} on the rdma_cm control QP",
                wc.wr_id()
            )));
        }
        let n = buf.len().min(CM_MSG_LEN);
        buf[..n].copy_from_slice(&self.recv[..n]);
        self.post_recv().map_err(io::Error::other)
    }
}

/// The binary handshake over rdma_cm (`rdma_write_keys`): `struct pingpong_dest` with every field
/// big-endian; the 4 padding bytes are zero here (perftest leaves them uninitialised).
pub fn dest_to_wire(d: &PerftestDest, gid_index: i32) -> [u8; CM_MSG_LEN] {
    let mut b = [0u8; CM_MSG_LEN];
    b[0..4].copy_from_slice(&d.lid.to_be_bytes());
    b[4..8].copy_from_slice(&d.out_reads.to_be_bytes());
    b[8..12].copy_from_slice(&d.qpn.to_be_bytes());
    b[12..16].copy_from_slice(&d.psn.to_be_bytes());
    b[16..20].copy_from_slice(&d.rkey.to_be_bytes());
    b[24..32].copy_from_slice(&d.vaddr.to_be_bytes());
    b[32..48].copy_from_slice(&d.gid);
    b[48..52].copy_from_slice(&d.srqn.to_be_bytes());
    b[52..56].copy_from_slice(&gid_index.to_be_bytes());
    b
}

/// `rdma_read_keys`: the peer's binary handshake (its SRQ number and GID index are ignored, as
/// perftest ignores them).
pub fn dest_from_wire(b: &[u8; CM_MSG_LEN]) -> PerftestDest {
    let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let mut gid = [0u8; 16];
    gid.copy_from_slice(&b[32..48]);
    let mut vaddr = [0u8; 8];
    vaddr.copy_from_slice(&b[24..32]);
    PerftestDest {
        lid: be32(0),
        out_reads: be32(4),
        qpn: be32(8),
        psn: be32(12),
        rkey: be32(16),
        vaddr: u64::from_be_bytes(vaddr),
        gid,
        srqn: 0,
    }
}

/// The IPv4 address of `host` (perftest's rdma_cm paths are IPv4 only).
pub fn resolve_ipv4(host: &str, port: u16) -> Result<SocketAddr, String> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("Problem in resolving basic address and port: {host}: {e}"))?
        .find(SocketAddr::is_ipv4)
        .ok_or_else(|| {
            format!("Problem in resolving basic address and port: {host}: no IPv4 address")
        })
}

/// Resolves the address and the route of `id` to `dst`, as perftest does: up to 10 tries while
/// the resolution fails, 2 s each.
pub fn resolve_with_retries(id: &CmId, dst: SocketAddr) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..10 {
        match id.resolve(None, dst, Duration::from_secs(2)) {
            Ok(()) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("rdma_cm could not resolve {dst}: {last}"))
}

/// perftest's connection parameters: no RDMA read resources (the control QP only SENDs; the test
/// QPs ask for `rd_atomic` = the outstanding reads of a READ test), `retry_count` 7, RNR retries
/// forever.
pub fn cm_params(rd_atomic: u8) -> ConnParams {
    ConnParams {
        private_data: Vec::new(),
        responder_resources: rd_atomic,
        initiator_depth: rd_atomic,
        retry_count: 7,
        rnr_retry_count: 7,
        flow_control: false,
    }
}

impl Comm {
    /// `ethernet_client_connect`: the first IPv4 address of `host` that accepts.
    pub fn connect(host: &str, port: u16) -> Result<Comm, String> {
        let addrs: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("Problem in resolving basic address and port: {host}: {e}"))?
            .filter(SocketAddr::is_ipv4)
            .collect();
        let stream = addrs
            .iter()
            .find_map(|a| TcpStream::connect(a).ok())
            .ok_or_else(|| format!("Couldn't connect to {host}:{port}"))?;
        let _ = stream.set_nodelay(true);
        Ok(Comm::new(Link::Tcp(stream), true))
    }

    fn new(link: Link, client: bool) -> Comm {
        Comm {
            link,
            client,
            rem_version: 0.0,
            gid_index: -1,
        }
    }

    /// Whether the exchange runs over rdma_cm (binary handshakes, no `"done"`).
    pub fn is_cm(&self) -> bool {
        matches!(self.link, Link::Cm(_))
    }

    /// `rdma_client_connect`: resolves `host:port`, creates the control queue pair on the device
    /// the address resolves to, posts its receive and connects; the connection must be
    /// established by the next event.
    pub fn connect_cm(host: &str, port: u16) -> Result<Comm, String> {
        let dst = resolve_ipv4(host, port)?;
        let channel = EventChannel::new()
            .map_err(|e| format!("Failed to create the rdma_cm event channel: {e}"))?;
        let id = channel
            .create_id(PortSpace::Tcp)
            .map_err(|e| format!("rdma_create_id failed: {e}"))?;
        resolve_with_retries(&id, dst)?;
        let link = CmLink::new(id)?;
        link.id
            .connect(&cm_params(0))
            .map_err(|e| format!("Function rdma_connect failed: {e}"))?;
        let ev = link
            .id
            .get_event_timeout(Duration::from_secs(60))
            .map_err(|e| format!("rdma_get_cm_events failed: {e}"))?;
        match ev.kind {
            EventKind::Established { .. } => {}
            EventKind::Rejected { reason, .. } => {
                return Err(format!(
                    "Unexpected CM event REJECTED ({reason}: {}) connecting to {dst}",
                    uverbs::cm::reject_reason_name(reason)
                ))
            }
            _ => return Err(format!("Unexpected CM event {}", ev.name())),
        }
        Ok(Comm::new(Link::Cm(Box::new(link)), true))
    }

    /// `rdma_server_connect`: listens on 0.0.0.0:`port` (backlog 1), takes the first connection
    /// request, creates the control queue pair on its device, posts the receive and accepts (the
    /// client's first message waits for `ESTABLISHED` on its side); the listener is destroyed,
    /// freeing the port for the test connections.
    pub fn accept_cm(port: u16) -> Result<Comm, String> {
        let channel = EventChannel::new()
            .map_err(|e| format!("Failed to create the rdma_cm event channel: {e}"))?;
        let listen = channel
            .create_id(PortSpace::Tcp)
            .map_err(|e| format!("rdma_create_id failed: {e}"))?;
        listen
            .bind(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::UNSPECIFIED,
                port,
            )))
            .map_err(|e| format!(" rdma_bind_addr failed: {e}"))?;
        listen
            .listen(1)
            .map_err(|e| format!("rdma_listen failed: {e}"))?;
        let ev = loop {
            match listen.get_event_timeout(Duration::from_secs(3600)) {
                Ok(ev) => break ev,
                Err(e) if e.kind() == io::ErrorKind::TimedOut => continue,
                Err(e) => return Err(format!("rdma_get_cm_events failed: {e}")),
            }
        };
        let EventKind::ConnectRequest { id, .. } = ev.kind else {
            return Err(format!(
                "bad event waiting for connect request {}",
                ev.name()
            ));
        };
        let link = CmLink::new(id)?;
        link.id
            .accept(&cm_params(0))
            .map_err(|e| format!("Function rdma_accept failed: {e}"))?;
        drop(listen);
        Ok(Comm::new(Link::Cm(Box::new(link)), false))
    }

    /// `ethernet_server_connect`: listens on 0.0.0.0 (with `SO_REUSEADDR`, as std does) and accepts
    /// one client.
    pub fn accept(port: u16) -> Result<Comm, String> {
        let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))
            .map_err(|e| format!("Couldn't listen to port {port}: {e}"))?;
        let (stream, _) = listener
            .accept()
            .map_err(|e| format!("server accept: {e}"))?;
        drop(listener);
        let _ = stream.set_nodelay(true);
        Ok(Comm::new(Link::Tcp(stream), false))
    }

    /// `ctx_xchg_data`: sends `mine` and receives as many bytes into `theirs`, the client first.
    pub fn xchg(&mut self, mine: &[u8], theirs: &mut [u8]) -> io::Result<()> {
        if self.client {
            self.write(mine)?;
            self.read(theirs)
        } else {
            self.read(theirs)?;
            self.write(mine)
        }
    }

    fn write(&mut self, msg: &[u8]) -> io::Result<()> {
        match &mut self.link {
            Link::Tcp(s) => s.write_all(msg),
            Link::Cm(l) => l.write(msg),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<()> {
        match &mut self.link {
            Link::Tcp(s) => s.read_exact(buf),
            Link::Cm(l) => l.read(buf),
        }
    }

    /// `exchange_versions` and `check_version_compatibility`.
    pub fn exchange_versions(&mut self) -> Result<(), String> {
        let mut mine = [0u8; VERSION_LEN];
        mine[..PERFTEST_VERSION.len()].copy_from_slice(PERFTEST_VERSION.as_bytes());
        let mut theirs = [0u8; VERSION_LEN];
        self.xchg(&mine, &mut theirs)
            .map_err(|e| format!("Failed to exchange data between server and clients: {e}"))?;
        self.rem_version = uverbs::exchange::perftest_version(&theirs);
        if self.rem_version < 5.70 {
            return Err(
                "Current implementation is not compatible with versions older than 5.70".into(),
            );
        }
        Ok(())
    }

    /// `check_sys_data`: agrees on the larger cycle buffer and cache line size.
    pub fn sys_data(&mut self, cycle_buffer: &mut u32, cache_line: &mut u32) -> Result<(), String> {
        if self.rem_version < 5.32 {
            return Ok(());
        }
        let fail = |e: io::Error| format!("Failed to exchange Page Size data: {e}");
        let mut rem = [0u8; 4];
        self.xchg(&cycle_buffer.to_be_bytes(), &mut rem)
            .map_err(fail)?;
        *cycle_buffer = (*cycle_buffer).max(u32::from_be_bytes(rem));
        self.xchg(&cache_line.to_be_bytes(), &mut rem)
            .map_err(fail)?;
        *cache_line = (*cache_line).max(u32::from_be_bytes(rem));
        Ok(())
    }

    /// `check_mtu`: returns the smaller of the two sides' `ibv_mtu` values.
    pub fn mtu(&mut self, curr: u32) -> Result<u32, String> {
        if self.rem_version < 5.1 {
            return Ok(curr);
        }
        // sprintf(cur, "%d", curr_mtu) into a char[4], of which 2 bytes (from 5.31) or 4 go out.
        let mut cur = [0u8; 4];
        let text = curr.to_string();
        let n = text.len().min(3);
        cur[..n].copy_from_slice(&text.as_bytes()[..n]);
        let len = if self.rem_version >= 5.31 { 2 } else { 4 };
        let mut rem = [0u8; 4];
        self.xchg(&cur[..len], &mut rem[..len])
            .map_err(|e| format!("Failed to exchange data between server and clients: {e}"))?;
        let rem_mtu = crate::args::strtol(&String::from_utf8_lossy(
            &rem[..rem.iter().position(|&b| b == 0).unwrap_or(len)],
        ));
        let valid = (1..=5).contains(&rem_mtu);
        Ok(if valid && i64::from(curr) > rem_mtu {
            rem_mtu as u32
        } else {
            curr
        })
    }

    /// `ctx_hand_shake`: sends `my` and returns the peer's (over rdma_cm in the binary form,
    /// where `with_gid` does not matter).
    pub fn hand_shake(
        &mut self,
        my: &PerftestDest,
        with_gid: bool,
    ) -> Result<PerftestDest, String> {
        if self.is_cm() {
            let gid_index = self.gid_index;
            return self.cm_hand_shake(my, gid_index);
        }
        let msg = my.to_msg(with_gid);
        let mut rem = vec![0u8; msg.len()];
        self.xchg(&msg, &mut rem)
            .map_err(|e| format!("Failed to exchange data between server and clients: {e}"))?;
        PerftestDest::from_msg(&rem, with_gid)
    }

    fn cm_hand_shake(&mut self, my: &PerftestDest, gid_index: i32) -> Result<PerftestDest, String> {
        let mut rem = [0u8; CM_MSG_LEN];
        self.xchg(&dest_to_wire(my, gid_index), &mut rem)
            .map_err(|e| format!("Failed to exchange data between server and clients: {e}"))?;
        Ok(dest_from_wire(&rem))
    }

    /// The synchronisations around the rdma_cm test connections (`ctx_hand_shake` of the still
    /// all-zero `my_dest[0]`): 56 zero bytes each way.
    pub fn cm_sync(&mut self) -> Result<(), String> {
        self.cm_hand_shake(&PerftestDest::default(), 0).map(drop)
    }

    /// `xchg_bw_reports` (without per-port numbers): sends `mine`, returns the peer's.
    pub fn xchg_bw_report(&mut self, mine: &BwReport) -> Result<BwReport, String> {
        let fail =
            |e: io::Error| format!("Failed to exchange data between server and clients: {e}");
        let mut buf = [0u8; 8];
        let mut rem = BwReport::default();
        self.xchg(&mine.size.to_be_bytes(), &mut buf)
            .map_err(fail)?;
        rem.size = u64::from_be_bytes(buf);
        if self.rem_version >= 5.33 {
            self.xchg(&mine.iters.to_be_bytes(), &mut buf)
                .map_err(fail)?;
            rem.iters = u64::from_be_bytes(buf);
        } else {
            let mut b4 = [0u8; 4];
            self.xchg(&(mine.iters as u32).to_be_bytes(), &mut b4)
                .map_err(fail)?;
            rem.iters = u64::from(u32::from_be_bytes(b4));
        }
        for (mine, theirs) in [
            (mine.bw_peak, &mut rem.bw_peak),
            (mine.bw_avg, &mut rem.bw_avg),
            (mine.msg_rate, &mut rem.msg_rate),
        ] {
            self.xchg(&mine.to_bits().to_be_bytes(), &mut buf)
                .map_err(fail)?;
            *theirs = f64::from_bits(u64::from_be_bytes(buf));
        }
        Ok(rem)
    }

    /// `ctx_close_connection`: a last handshake, then over TCP `"done"` with its NUL, and the
    /// socket closes. Over rdma_cm only the handshake: the control connection stays up until the
    /// process exits (as perftest's does).
    pub fn close(&mut self, my: &PerftestDest, with_gid: bool) -> Result<(), String> {
        self.hand_shake(my, with_gid)?;
        match &mut self.link {
            Link::Tcp(s) => s
                .write_all(b"done\0")
                .map_err(|e| format!("Couldn't write to socket: {e}")),
            Link::Cm(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary handshake is perftest's `struct pingpong_dest` with every field big-endian.
    #[test]
    fn binary_handshake_layout() {
        let d = PerftestDest {
            lid: 0x11,
            out_reads: 0x22,
            qpn: 0x33_4455,
            psn: 0x66_7788,
            rkey: 0x99aa_bbcc,
            vaddr: 0x0102_0304_0506_0708,
            gid: [0xfe; 16],
            srqn: 0,
        };
        let b = dest_to_wire(&d, -1);
        assert_eq!(&b[0..4], &[0, 0, 0, 0x11]);
        assert_eq!(&b[8..12], &[0, 0x33, 0x44, 0x55]);
        assert_eq!(&b[16..20], &[0x99, 0xaa, 0xbb, 0xcc]);
        assert_eq!(&b[24..32], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[32..48], &[0xfe; 16]);
        assert_eq!(&b[52..56], &[0xff; 4]);
        assert_eq!(dest_from_wire(&b), d);
        assert_eq!(dest_to_wire(&PerftestDest::default(), 0), [0; CM_MSG_LEN]);
    }
}
