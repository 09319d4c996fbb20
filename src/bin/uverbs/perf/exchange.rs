//! perftest's out-of-band TCP exchange (`perftest_communication.c`, the non-rdma_cm path), byte for
//! byte, so that either side may be perftest:
//!
//! 1. The client connects over IPv4 to the server's port (default 18515).
//! 2. Versions: 16 bytes each way, NUL-padded (`"6.06"`); a peer older than 5.70 is refused.
//! 3. System data (peer ≥ 5.32): the cycle buffer (page size) and cache line size, 4 bytes each,
//!    big-endian; both sides keep the larger.
//! 4. MTU (peer ≥ 5.1): the `ibv_mtu` value as `"%d"`, 2 bytes (peer ≥ 5.31); both keep the smaller.
//! 5. Any number of "handshakes", each a `pingpong_dest` as text:
//!    `"%04x:%04x:%06x:%06x:%08x:%016llx:"` (LID, outstanding reads, QPN, PSN, rkey, vaddr) then
//!    16 `"%02x:"` GID bytes and `"%08x:"` (SRQ number), 108 bytes with the NUL when a GID is used;
//!    without a GID, `"...:%016llx:%08x"` (SRQ number), 59 bytes. The same message serves as the
//!    synchronisation points between phases; how many there are, and where, depends on the test.
//! 6. Bandwidth reports (`xchg_bw_reports`): size and iterations (u64), peak and average bandwidth
//!    and message rate (f64), each big-endian, each exchanged as its own message.
//! 7. Closing: one more handshake, then each side writes `"done\0"` and closes.
//!
//! In every exchange the client writes first and then reads; the server reads, then writes.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};

use uverbs::exchange::PerftestDest;

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

/// The TCP connection to the peer (`perftest_comm` without rdma_cm).
#[derive(Debug)]
pub struct Comm {
    stream: TcpStream,
    client: bool,
    /// The peer's version, as `atof` reads it.
    pub rem_version: f64,
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
        Ok(Comm {
            stream,
            client: true,
            rem_version: 0.0,
        })
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
        Ok(Comm {
            stream,
            client: false,
            rem_version: 0.0,
        })
    }

    /// `ctx_xchg_data`: sends `mine` and receives as many bytes into `theirs`, the client first.
    pub fn xchg(&mut self, mine: &[u8], theirs: &mut [u8]) -> io::Result<()> {
        if self.client {
            self.stream.write_all(mine)?;
            self.stream.read_exact(theirs)
        } else {
            self.stream.read_exact(theirs)?;
            self.stream.write_all(mine)
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

    /// `ctx_hand_shake`: sends `my` and returns the peer's.
    pub fn hand_shake(
        &mut self,
        my: &PerftestDest,
        with_gid: bool,
    ) -> Result<PerftestDest, String> {
        let msg = my.to_msg(with_gid);
        let mut rem = vec![0u8; msg.len()];
        self.xchg(&msg, &mut rem)
            .map_err(|e| format!("Failed to exchange data between server and clients: {e}"))?;
        PerftestDest::from_msg(&rem, with_gid)
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

    /// `ctx_close_connection`: a last handshake, then `"done"` with its NUL, and the socket closes.
    pub fn close(mut self, my: &PerftestDest, with_gid: bool) -> Result<(), String> {
        self.hand_shake(my, with_gid)?;
        self.stream
            .write_all(b"done\0")
            .map_err(|e| format!("Couldn't write to socket: {e}"))
    }
}
