//! The messages a TCP peer sends the CLI's `rc-pingpong` and perf tools (`uverbs::exchange`): the
//! `ibv_rc_pingpong` address `"LID:QPN:PSN:GID"`, perftest's handshake with and without a GID, and
//! perftest's version message. They are untrusted bytes from the network.
//!
//! Must hold: no panic, whatever the bytes; a message each side writes is of its fixed size and
//! parses back to the value written, for every value whose fields fit their printed widths (and
//! for every value that was itself parsed from the input and fits).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

use uverbs::exchange::{
    perftest_version, PerftestDest, PingpongDest, PERFTEST_MSG_LEN, PERFTEST_MSG_LEN_GID,
    PINGPONG_MSG_LEN,
};
use uverbs::Gid;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Bytes as the peer sent them.
    msg: Vec<u8>,
    with_gid: bool,
    /// A pingpong address to write: LID, QPN, PSN, GID.
    pingpong: (u32, u32, u32, [u8; 16]),
    /// A perftest handshake to write: LID, outstanding reads, QPN, PSN, rkey, address, GID, SRQN.
    perftest: (u32, u32, u32, u32, u32, u64, [u8; 16], u32),
}

/// Whether the pingpong form prints every field in its width ("%04x:%06x:%06x").
fn pingpong_fits(d: &PingpongDest) -> bool {
    d.lid <= 0xffff && d.qpn <= 0xff_ffff && d.psn <= 0xff_ffff
}

/// Whether the perftest form prints every field in its width ("%04x:%04x:%06x:%06x:%08x:...").
fn perftest_fits(d: &PerftestDest) -> bool {
    d.lid <= 0xffff && d.out_reads <= 0xffff && d.qpn <= 0xff_ffff && d.psn <= 0xff_ffff
}

fn pingpong_round_trip(d: &PingpongDest) {
    let msg = d.to_msg();
    assert_eq!(msg.len(), PINGPONG_MSG_LEN);
    assert_eq!(msg[PINGPONG_MSG_LEN - 1], 0, "NUL-terminated");
    if pingpong_fits(d) {
        assert_eq!(
            PingpongDest::from_msg(&msg),
            *d,
            "{:?}",
            String::from_utf8_lossy(&msg)
        );
    }
}

fn perftest_round_trip(d: &PerftestDest, with_gid: bool) {
    let msg = d.to_msg(with_gid);
    let len = if with_gid {
        PERFTEST_MSG_LEN_GID
    } else {
        PERFTEST_MSG_LEN
    };
    assert_eq!(msg.len(), len);
    assert_eq!(msg[len - 1], 0, "NUL-terminated");
    if perftest_fits(d) {
        let mut want = *d;
        if !with_gid {
            want.gid = [0; 16];
        }
        assert_eq!(
            PerftestDest::from_msg(&msg, with_gid),
            Ok(want),
            "{:?}",
            String::from_utf8_lossy(&msg)
        );
    }
}

fuzz_target!(|input: Input| {
    // What the peer sent.
    let got = PingpongDest::from_msg(&input.msg);
    pingpong_round_trip(&got);
    if let Ok(d) = PerftestDest::from_msg(&input.msg, input.with_gid) {
        perftest_round_trip(&d, input.with_gid);
    }
    let v = perftest_version(&input.msg);
    assert!(!v.is_nan(), "a number, not NaN");

    // What this side writes.
    let (lid, qpn, psn, gid) = input.pingpong;
    pingpong_round_trip(&PingpongDest {
        lid,
        qpn,
        psn,
        gid: Gid::from_bytes(gid),
    });
    let (lid, out_reads, qpn, psn, rkey, vaddr, gid, srqn) = input.perftest;
    perftest_round_trip(
        &PerftestDest {
            lid,
            out_reads,
            qpn,
            psn,
            rkey,
            vaddr,
            gid,
            srqn,
        },
        input.with_gid,
    );
});
