//! The out-of-band connection messages of rdma-core's example programs and of perftest, so that a
//! Rust program can exchange queue-pair addresses with `ibv_rc_pingpong` or an `ib_*_lat`/`ib_*_bw`
//! peer over TCP (the `uverbs` CLI's `rc-pingpong` and perf tools do).
//!
//! Both are text, parsed the way the C programs parse them (`sscanf("%x")` and friends): a peer's
//! message is untrusted input, so parsing never panics, whatever the bytes (`fuzz/` checks that),
//! and what a side writes parses back to the same value.
//!
//! * [`PingpongDest`]: libibverbs' examples (`ibv_rc_pingpong`, `ibv_ud_pingpong`, ...),
//!   `"LID:QPN:PSN:GID"` in [`PINGPONG_MSG_LEN`] bytes.
//! * [`PerftestDest`]: perftest's handshake (`ctx_hand_shake`), [`PERFTEST_MSG_LEN`] bytes without
//!   a GID and [`PERFTEST_MSG_LEN_GID`] with one; [`perftest_version`] reads the version message.

use crate::Gid;

/// The size of a [`PingpongDest`] message (`sizeof "0000:000000:000000:" + 32 hex digits + NUL`).
pub const PINGPONG_MSG_LEN: usize = 52;

/// One side's queue pair as libibverbs' example programs exchange it (`struct pingpong_dest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingpongDest {
    /// The port's LID (0 on RoCE).
    pub lid: u32,
    /// The queue pair number.
    pub qpn: u32,
    /// The first packet sequence number.
    pub psn: u32,
    /// The GID (zero without one).
    pub gid: Gid,
}

impl PingpongDest {
    /// `"%04x:%06x:%06x:%s"` with the wire form of the GID (its 16 bytes in order, as lowercase
    /// hex: `gid_to_wire_gid`), NUL-terminated in [`PINGPONG_MSG_LEN`] bytes. Fields wider than
    /// their format (a LID above `0xffff`, a QPN or PSN above 24 bits) are printed whole, as C does,
    /// and the text is cut to fit.
    pub fn to_msg(&self) -> [u8; PINGPONG_MSG_LEN] {
        let wire: String = self
            .gid
            .bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let text = format!("{:04x}:{:06x}:{:06x}:{wire}", self.lid, self.qpn, self.psn);
        let mut msg = [0u8; PINGPONG_MSG_LEN];
        let n = text.len().min(PINGPONG_MSG_LEN - 1);
        msg[..n].copy_from_slice(&text.as_bytes()[..n]);
        msg
    }

    /// `sscanf(msg, "%x:%x:%x:%s")` and `wire_gid_to_gid`: the text up to the first NUL; a field
    /// that does not parse is 0, as it is in the C programs (which do not check either).
    pub fn from_msg(msg: &[u8]) -> PingpongDest {
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        let text = String::from_utf8_lossy(&msg[..end]);
        let mut fields = text.splitn(4, ':');
        let mut hex = || scan_hex(fields.next().unwrap_or(""));
        let (lid, qpn, psn) = (hex(), hex(), hex());
        let wire = fields
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next()
            .unwrap_or("")
            .as_bytes();
        let mut raw = [0u8; 16];
        for (i, word) in raw.chunks_mut(4).enumerate() {
            // Eight hex digits a word; what is missing reads as 0.
            let chunk = wire.get(i * 8..).unwrap_or(&[]);
            let chunk = &chunk[..chunk.len().min(8)];
            let v = scan_hex(&String::from_utf8_lossy(chunk));
            word.copy_from_slice(&v.to_be_bytes());
        }
        PingpongDest {
            lid,
            qpn,
            psn,
            gid: Gid::from_bytes(raw),
        }
    }
}

/// `sscanf(s, "%x")` into an `unsigned int`: leading blanks, an optional sign and `0x`, then hex
/// digits up to the first other character, wrapping modulo 2^32 (a minus sign negates, modulo
/// 2^32); 0 when there are no digits.
pub fn scan_hex(s: &str) -> u32 {
    let s = s.trim_start();
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let s = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) if h.starts_with(|c: char| c.is_ascii_hexdigit()) => h,
        _ => s,
    };
    let mut v: u32 = 0;
    for c in s.chars() {
        let Some(d) = c.to_digit(16) else { break };
        v = v.wrapping_mul(16).wrapping_add(d);
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// perftest's `KEY_MSG_SIZE`: a [`PerftestDest`] message without a GID.
pub const PERFTEST_MSG_LEN: usize = 59;
/// perftest's `KEY_MSG_SIZE_GID`: a [`PerftestDest`] message with a GID.
pub const PERFTEST_MSG_LEN_GID: usize = 108;

/// One side's queue pair as perftest exchanges it (its own `struct pingpong_dest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerftestDest {
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
    /// The SRQ number (XRC and DC only).
    pub srqn: u32,
}

impl PerftestDest {
    /// `"%04x:%04x:%06x:%06x:%08x:%016llx:"` (LID, outstanding reads, QPN, PSN, rkey, address),
    /// then with a GID its 16 bytes as `"%02x:"` and the SRQ number as `"%08x:"`
    /// ([`PERFTEST_MSG_LEN_GID`] bytes), without one the SRQ number as `"%08x"`
    /// ([`PERFTEST_MSG_LEN`] bytes), NUL-padded. Wider fields are printed whole and cut to fit,
    /// as `snprintf` would.
    pub fn to_msg(&self, with_gid: bool) -> Vec<u8> {
        let mut text = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.vaddr
        );
        let size = if with_gid {
            for b in self.gid {
                text.push_str(&format!("{b:02x}:"));
            }
            text.push_str(&format!("{:08x}:", self.srqn));
            PERFTEST_MSG_LEN_GID
        } else {
            text.push_str(&format!("{:08x}", self.srqn));
            PERFTEST_MSG_LEN
        };
        let mut msg = text.into_bytes();
        msg.truncate(size - 1);
        msg.resize(size, 0);
        msg
    }

    /// Parses a message of either form, up to its first NUL (perftest's `ethernet_read_keys`):
    /// colon-separated hex fields, each within its C type (a GID byte within 8 bits). Unlike the
    /// pingpong form, a field that does not parse is an error, naming the text; so is a field
    /// wider than its type, which perftest's own parser would truncate (no perftest peer sends
    /// one: it prints every field within its width).
    pub fn from_msg(msg: &[u8], with_gid: bool) -> Result<PerftestDest, String> {
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        let text = String::from_utf8_lossy(&msg[..end]);
        let fields: Vec<&str> = text.split(':').collect();
        let need = if with_gid { 23 } else { 7 };
        let bad = || format!("Couldn't parse line <{text}>");
        if fields.len() < need {
            return Err(bad());
        }
        let hex64 = |s: &str| u64::from_str_radix(s.trim(), 16).map_err(|_| bad());
        let hex32 = |s: &str| u32::from_str_radix(s.trim(), 16).map_err(|_| bad());
        let mut d = PerftestDest {
            lid: hex32(fields[0])?,
            out_reads: hex32(fields[1])?,
            qpn: hex32(fields[2])?,
            psn: hex32(fields[3])?,
            rkey: hex32(fields[4])?,
            vaddr: hex64(fields[5])?,
            ..PerftestDest::default()
        };
        if with_gid {
            for (b, field) in d.gid.iter_mut().zip(&fields[6..22]) {
                *b = u8::from_str_radix(field.trim(), 16).map_err(|_| bad())?;
            }
            d.srqn = hex32(fields[22])?;
        } else {
            d.srqn = hex32(fields[6])?;
        }
        Ok(d)
    }
}

/// perftest's version message (16 bytes, NUL-padded `"6.06"`) as its `atof` reads it: the longest
/// leading decimal number, 0 if there is none.
pub fn perftest_version(msg: &[u8]) -> f64 {
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    let text = String::from_utf8_lossy(&msg[..end]);
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

    fn mapped_loopback() -> [u8; 16] {
        let mut raw = [0u8; 16];
        raw[10] = 0xff;
        raw[11] = 0xff;
        raw[12..].copy_from_slice(&[127, 0, 0, 1]);
        raw
    }

    #[test]
    fn pingpong_message_is_rdma_cores() {
        let d = PingpongDest {
            lid: 0,
            qpn: 0x11,
            psn: 0xabcdef,
            gid: Gid::from_bytes(mapped_loopback()),
        };
        let msg = d.to_msg();
        assert_eq!(
            &msg[..51],
            b"0000:000011:abcdef:00000000000000000000ffff7f000001"
        );
        assert_eq!(msg[51], 0);
        assert_eq!(PingpongDest::from_msg(&msg), d);
    }

    #[test]
    fn pingpong_fields_that_do_not_parse_are_zero() {
        let d = PingpongDest::from_msg(b"zz:0x12:-1:ffff\0garbage");
        assert_eq!((d.lid, d.qpn, d.psn), (0, 0x12, u32::MAX));
        let mut gid = [0u8; 16];
        gid[2..4].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(d.gid.bytes(), gid);
        assert_eq!(PingpongDest::from_msg(b"").qpn, 0);
    }

    #[test]
    fn scan_hex_like_sscanf() {
        assert_eq!(scan_hex("00ff"), 0xff);
        assert_eq!(scan_hex("0x1A"), 0x1a);
        assert_eq!(scan_hex("  +0x"), 0);
        assert_eq!(scan_hex("zz"), 0);
        assert_eq!(scan_hex("12g"), 0x12);
        assert_eq!(scan_hex("123456789"), 0x2345_6789);
    }

    #[test]
    fn perftest_gid_message_is_perftests() {
        let d = PerftestDest {
            lid: 0,
            out_reads: 0x80,
            qpn: 0x13,
            psn: 0x177d53,
            rkey: 0x410,
            vaddr: 0x55d6d0360000,
            gid: mapped_loopback(),
            srqn: 0,
        };
        let msg = d.to_msg(true);
        assert_eq!(msg.len(), PERFTEST_MSG_LEN_GID);
        assert_eq!(
            &msg[..107],
            &b"0000:0080:000013:177d53:00000410:000055d6d0360000:00:00:00:00:00:00:00:00:00:00:ff:ff:7f:00:00:01:00000000:"[..]
        );
        assert_eq!(msg[107], 0);
        assert_eq!(PerftestDest::from_msg(&msg, true), Ok(d));
    }

    #[test]
    fn perftest_lid_message_is_perftests() {
        let d = PerftestDest {
            lid: 0x1a,
            out_reads: 1,
            qpn: 0xabcdef,
            psn: 1,
            rkey: 0xdeadbeef,
            vaddr: 0x1000,
            ..PerftestDest::default()
        };
        let msg = d.to_msg(false);
        assert_eq!(msg.len(), PERFTEST_MSG_LEN);
        assert_eq!(
            &msg[..58],
            &b"001a:0001:abcdef:000001:deadbeef:0000000000001000:00000000"[..]
        );
        assert_eq!(PerftestDest::from_msg(&msg, false), Ok(d));
    }

    #[test]
    fn perftest_bad_messages_are_errors() {
        for bad in [
            &b"garbage\0"[..],
            b"1:2:3:4:5:6",
            b"1:2:3:4:5:6:xyz",
            b"1:2:3:4:5:6:100000000",
            b"1:2:3:4:5:10000000000000000:7",
        ] {
            assert!(PerftestDest::from_msg(bad, false).is_err(), "{bad:?}");
        }
        let good = PerftestDest::default().to_msg(true);
        let text = String::from_utf8_lossy(&good);
        // The first GID byte one digit too wide (all fields still there).
        let wide = text.trim_end_matches('\0').replacen(":00:", ":100:", 1);
        assert_eq!(wide.split(':').count(), 24, "{wide}");
        assert!(PerftestDest::from_msg(wide.as_bytes(), true).is_err());
        assert!(PerftestDest::from_msg(&good, true).is_ok());
    }

    #[test]
    fn perftest_version_like_atof() {
        assert_eq!(perftest_version(b"6.06\0\0\0"), 6.06);
        assert_eq!(perftest_version(b"5.70"), 5.7);
        assert_eq!(perftest_version(b"x"), 0.0);
        assert_eq!(perftest_version(b"4.5-0.17"), 4.5);
        assert_eq!(perftest_version(b" -.5"), -0.5);
    }
}
