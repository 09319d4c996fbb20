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

use super::args::PERFTEST_VERSION;

/// `MAX_VERSION`: the version message's size.
const VERSION_LEN: usize = 16;
/// `KEY_MSG_SIZE`: a handshake without a GID.
pub const KEY_MSG_SIZE: usize = 59;
/// `KEY_MSG_SIZE_GID`: a handshake with a GID.
pub const KEY_MSG_SIZE_GID: usize = 108;

/// One side's queue pair as exchanged (`struct pingpong_dest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dest {
    /// The port's LID (0 on RoCE).
    pub lid: u32,
    /// The RDMA reads this side lets the peer have outstanding (`max_dest_rd_atomic`).
    pub out_reads: u32,
    /// The queue pair number.
    pub qpn: u32,
    /// The first packet sequence number.
    pub psn: u32,
    /// The rkey of the memory the peer may write or read.
    pub rkey: u32,
    /// Its address.
    pub vaddr: u64,
    /// The GID (zero without one).
    pub gid: [u8; 16],
    /// The SRQ number (XRC and DC only; 0 here).
    pub srqn: u32,
}

impl Dest {
    /// The message, with or without the GID part, NUL-terminated and of perftest's fixed size.
    pub fn to_msg(self, with_gid: bool) -> Vec<u8> {
        let mut text = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.vaddr
        );
        let size = if with_gid {
            for b in self.gid {
                text.push_str(&format!("{b:02x}:"));
            }
            text.push_str(&format!("{:08x}:", self.srqn));
            KEY_MSG_SIZE_GID
        } else {
            text.push_str(&format!("{:08x}", self.srqn));
            KEY_MSG_SIZE
        };
        let mut msg = text.into_bytes();
        msg.resize(size, 0);
        msg
    }

    /// Parses a message of either form (perftest's `ethernet_read_keys`: colon-separated hex).
    pub fn from_msg(msg: &[u8], with_gid: bool) -> Result<Dest, String> {
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        let text = String::from_utf8_lossy(&msg[..end]);
        let fields: Vec<&str> = text.split(':').collect();
        let need = if with_gid { 23 } else { 7 };
        let bad = || format!("Couldn't parse line <{text}>");
        if fields.len() < need {
            return Err(bad());
        }
        let hex = |s: &str| u64::from_str_radix(s.trim(), 16).map_err(|_| bad());
        let mut d = Dest {
            lid: hex(fields[0])? as u32,
            out_reads: hex(fields[1])? as u32,
            qpn: hex(fields[2])? as u32,
            psn: hex(fields[3])? as u32,
            rkey: hex(fields[4])? as u32,
            vaddr: hex(fields[5])?,
            ..Dest::default()
        };
        if with_gid {
            for (i, b) in d.gid.iter_mut().enumerate() {
                *b = hex(fields[6 + i])? as u8;
            }
            d.srqn = hex(fields[22])? as u32;
        } else {
            d.srqn = hex(fields[6])? as u32;
        }
        Ok(d)
    }
}

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
        self.rem_version = atof(&theirs);
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
    pub fn hand_shake(&mut self, my: &Dest, with_gid: bool) -> Result<Dest, String> {
        let msg = my.to_msg(with_gid);
        let mut rem = vec![0u8; msg.len()];
        self.xchg(&msg, &mut rem)
            .map_err(|e| format!("Failed to exchange data between server and clients: {e}"))?;
        Dest::from_msg(&rem, with_gid)
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
    pub fn close(mut self, my: &Dest, with_gid: bool) -> Result<(), String> {
        self.hand_shake(my, with_gid)?;
        self.stream
            .write_all(b"done\0")
            .map_err(|e| format!("Couldn't write to socket: {e}"))
    }
}

/// C's `atof` on a NUL-terminated buffer: the longest leading decimal number, 0 if none.
fn atof(buf: &[u8]) -> f64 {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let text = String::from_utf8_lossy(&buf[..end]);
    let t = text.trim_start();
    let mut len = 0;
    let mut dot = false;
    for (i, c) in t.char_indices() {
        match c {
            '0'..='9' => len = i + 1,
            '.' if !dot => dot = true,
            '+' | '-' if i == 0 => {}
            _ => break,
        }
    }
    t[..len].parse().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_message_is_perftests() {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[127, 0, 0, 1]);
        let d = Dest {
            lid: 0,
            out_reads: 0x80,
            qpn: 0x13,
            psn: 0x177d53,
            rkey: 0x410,
            vaddr: 0x55d6d0360000,
            gid,
            srqn: 0,
        };
        let msg = d.to_msg(true);
        assert_eq!(msg.len(), KEY_MSG_SIZE_GID);
        assert_eq!(
            &msg[..107],
            &b"0000:0080:000013:177d53:00000410:000055d6d0360000:00:00:00:00:00:00:00:00:00:00:ff:ff:7f:00:00:01:00000000:"[..]
        );
        assert_eq!(msg[107], 0);
        assert_eq!(Dest::from_msg(&msg, true).unwrap(), d);
    }

    #[test]
    fn lid_message_is_perftests() {
        let d = Dest {
            lid: 0x1a,
            out_reads: 1,
            qpn: 0xabcdef,
            psn: 1,
            rkey: 0xdeadbeef,
            vaddr: 0x1000,
            ..Dest::default()
        };
        let msg = d.to_msg(false);
        assert_eq!(msg.len(), KEY_MSG_SIZE);
        assert_eq!(
            &msg[..58],
            &b"001a:0001:abcdef:000001:deadbeef:0000000000001000:00000000"[..]
        );
        assert_eq!(Dest::from_msg(&msg, false).unwrap(), d);
        assert!(Dest::from_msg(b"garbage\0", false).is_err());
    }

    #[test]
    fn atof_like_c() {
        assert_eq!(atof(b"6.06\0\0\0"), 6.06);
        assert_eq!(atof(b"5.70"), 5.7);
        assert_eq!(atof(b"x"), 0.0);
        assert_eq!(atof(b"4.5-0.17"), 4.5);
    }
}
