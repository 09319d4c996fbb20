//! The mlx5 queue geometry (`QpSizes`): every capacity a queue pair reports must be one its send
//! queue really takes. Pure arithmetic, so Miri runs it too (`tests/miri`).

use uverbs_drivers::error::Error;
use uverbs_drivers::mlx5::qp::{Limits, QpSizes};
use uverbs_drivers::mlx5::sq::{QpType, SendQueue, SendQueueConfig};
use uverbs_drivers::mlx5::wqe::MAX_DS;
use uverbs_drivers::uapi::ib_uverbs_qp_cap;
use uverbs_drivers::wr::{opcode, send_flags, SendWr};

/// The limits a ConnectX reports (and the model's defaults).
const LIMITS: Limits = Limits {
    max_sq_desc_sz: 512,
    max_rq_desc_sz: 512,
    max_send_wqebb: 1 << 16,
    max_recv_wr: 1 << 15,
    max_srq_recv_wr: 1 << 15,
};

fn cap(send_wr: u32, send_sge: u32, inline: u32) -> ib_uverbs_qp_cap {
    ib_uverbs_qp_cap {
        max_send_wr: send_wr,
        max_recv_wr: 1,
        max_send_sge: send_sge,
        max_recv_sge: 1,
        max_inline_data: inline,
    }
}

/// The largest inline request the sizes promise (an RDMA write on RC/UC, a send on UD), posted on
/// a send queue of that geometry: it must be taken, and fit the device's descriptor size.
fn largest_inline_fits(limits: &Limits, qp_type: QpType, s: &QpSizes) {
    let mut ring = vec![0u8; s.sq_wqe_cnt as usize * 64];
    let cfg = SendQueueConfig {
        qpn: 1,
        user_index: None,
        qp_type,
        max_send_wr: s.sq_max_post,
        max_send_sge: s.max_send_sge,
        max_inline_data: s.max_inline_data,
        sq_sig_all: false,
    };
    let mut sq = SendQueue::new(&mut ring[..], cfg).unwrap();
    let data = vec![7u8; s.max_inline_data as usize];
    let mut wr = SendWr::send(1, &[]);
    wr.flags = send_flags::INLINE;
    wr.inline = &data;
    if qp_type == QpType::Ud {
        // A UD send needs a destination; the WQE is control + datagram + inline data.
        let header = 16 + 48;
        let bytes = header + (4 + data.len()).div_ceil(16) * 16;
        assert!(bytes <= limits.max_sq_desc_sz as usize && bytes / 16 <= MAX_DS);
        return;
    }
    wr.opcode = opcode::RDMA_WRITE;
    let w = sq
        .post(&wr, None)
        .unwrap_or_else(|e| panic!("{qp_type:?} {s:?}: the largest inline write: {e}"));
    assert!(
        usize::from(w.ds) * 16 <= limits.max_sq_desc_sz as usize,
        "{qp_type:?} {s:?}: a {}-byte WQE, the device takes {}",
        usize::from(w.ds) * 16,
        limits.max_sq_desc_sz
    );
}

/// What `QpSizes::new` must make of a request.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// A geometry: its capacities are checked.
    Granted,
    /// `InvalidArgument` (and no other error), its message naming this.
    Refused(&'static str),
}

/// Checks `QpSizes::new` for one request as `expect` says; returns whether it was granted.
fn check_geometry(limits: &Limits, qp_type: QpType, c: &ib_uverbs_qp_cap, expect: Expect) -> bool {
    let got = QpSizes::new(limits, qp_type, c, false);
    match (expect, got) {
        (Expect::Granted, Ok(s)) => {
            assert!(
                s.max_inline_data >= c.max_inline_data,
                "{qp_type:?} {c:?}: {s:?}"
            );
            assert!(s.max_send_sge >= c.max_send_sge, "{qp_type:?} {c:?}: {s:?}");
            assert!(s.sq_max_post >= c.max_send_wr, "{qp_type:?} {c:?}: {s:?}");
            largest_inline_fits(limits, qp_type, &s);
            true
        }
        (Expect::Refused(what), Err(Error::InvalidArgument { what: msg, .. })) => {
            assert!(
                msg.contains(what),
                "{qp_type:?} {c:?}: refused for `{msg}`, expected `{what}`"
            );
            false
        }
        (expect, got) => panic!("{qp_type:?} {c:?}: expected {expect:?}, got {got:?}"),
    }
}

/// Each geometry is either granted (and its reported inline capacity posted) or refused with
/// `InvalidArgument` for the reason given; none is skipped, and the counts at the end fail a run
/// that checked fewer than the table holds.
#[test]
fn reported_inline_capacity_is_postable() {
    use Expect::{Granted, Refused};
    const SGE: &str = "send scatter/gather entries";
    const WQE: &str = "inline bytes (at most 512)";
    const WRS: &str = "send work requests";
    // (send work requests, send entries, inline bytes) -> per RC, UC, UD. The descriptor limit is
    // 512 bytes: RC/UC WQEs carry 192 bytes of overhead (at most 20 entries), UD 64 (at most 28).
    #[rustfmt::skip]
    let table: [((u32, u32, u32), [Expect; 3]); 12] = [
        ((8, 1, 0), [Granted, Granted, Granted]),
        ((8, 1, 64), [Granted, Granted, Granted]),
        ((8, 4, 0), [Granted, Granted, Granted]),
        ((8, 2, 200), [Granted, Granted, Granted]),
        ((8, 16, 0), [Granted, Granted, Granted]),
        ((8, 1, 300), [Granted, Granted, Granted]),
        ((8, 20, 0), [Granted, Granted, Granted]),
        ((8, 21, 0), [Refused(SGE), Refused(SGE), Granted]),
        ((8, 29, 0), [Refused(SGE), Refused(SGE), Refused(SGE)]),
        ((8, 1, 444), [Refused(WQE), Refused(WQE), Granted]),
        ((8, 1, 445), [Refused(WQE), Refused(WQE), Refused(WQE)]),
        ((1 << 16, 1, 0), [Refused(WRS), Refused(WRS), Refused(WRS)]),
    ];
    let (mut granted, mut refused) = (0, 0);
    for ((wr, sge, inline), expect) in table {
        for (qp_type, expect) in [QpType::Rc, QpType::Uc, QpType::Ud].into_iter().zip(expect) {
            if check_geometry(&LIMITS, qp_type, &cap(wr, sge, inline), expect) {
                granted += 1;
            } else {
                refused += 1;
            }
        }
    }
    assert_eq!(
        (granted, refused),
        (23, 13),
        "geometries granted and refused"
    );
}

/// FINDING (docs/soundness.md, found by fuzz target `kernel_responses`): a send queue asked for no
/// scatter/gather entry and no inline data. `drivers/src/mlx5/qp.rs:155` computes
/// `wqe_size - overhead - INLINE_HEADER_SIZE` with `wqe_size == overhead` (RC/UC 192, UD 64):
/// in a debug build an overflow panic in `QpSizes::new` (so `QueuePairBuilder::build` with
/// `set_max_send_sge(0)` panics on mlx5); in a release build the difference wraps and `min`
/// turns it into 972 (RC/UC) or 956 (UD) inline bytes, which the QP's caps then report although
/// its WQEs are 192 (64) bytes and an inline WQE that large is twice the device's 512-byte
/// descriptor limit. Expected: 0 inline bytes (the WQE is all overhead), or the rdma-core value.
#[test]
fn finding_no_send_entries_and_no_inline_data() {
    for qp_type in [QpType::Rc, QpType::Uc, QpType::Ud] {
        let s = QpSizes::new(&LIMITS, qp_type, &cap(8, 0, 0), false)
            .expect("a valid, if useless, geometry");
        largest_inline_fits(&LIMITS, qp_type, &s);
    }
}

/// F3 (docs/soundness.md, found by fuzz target `kernel_responses`, fixed): with a context whose
/// `max_sq_desc_sz` exceeds 1 KiB, a request for more inline data than a WQE of `MAX_DS`
/// octowords holds (UD: more than 940 bytes; RC/UC: 972) used to be lowered silently; it is
/// refused, as too many send entries are, and the largest request that fits is granted whole.
#[test]
fn inline_beyond_max_ds_is_refused() {
    let limits = Limits {
        max_sq_desc_sz: 2048,
        ..LIMITS
    };
    for (qp_type, most) in [(QpType::Ud, 940), (QpType::Rc, 972), (QpType::Uc, 972)] {
        let s = QpSizes::new(&limits, qp_type, &cap(8, 1, most), false)
            .unwrap_or_else(|e| panic!("{qp_type:?}: {most} inline bytes: {e}"));
        assert!(
            s.max_inline_data >= most,
            "{qp_type:?}: asked {most} inline bytes, got {s:?}"
        );
        largest_inline_fits(&limits, qp_type, &s);
        match QpSizes::new(&limits, qp_type, &cap(8, 1, most + 1), false) {
            Err(Error::InvalidArgument { what, .. }) => {
                assert!(what.contains("inline bytes"), "{qp_type:?}: {what}")
            }
            other => panic!("{qp_type:?}: {} inline bytes: {other:?}", most + 1),
        }
    }
}

/// F4 (docs/soundness.md, found by fuzz target `kernel_responses`, fixed): when the context
/// reports no receive limit (`max_recv_wr` 0 in the `GET_CONTEXT` response, which
/// `Mlx5Context::limits` reads as `u32::MAX`), a request for more than 2^31 receives used to reach
/// `cap.max_recv_wr.next_power_of_two()`: an overflow panic in a debug build, 0 in a release build
/// (a 64-byte receive queue for 2^31 requests). It is refused with `InvalidArgument`, as the send
/// queue's impossible counts are; the largest power of two that fits the ring arithmetic is not.
#[test]
fn finding_huge_receive_queue_without_a_kernel_limit() {
    let limits = Limits {
        max_recv_wr: u32::MAX,
        ..LIMITS
    };
    for n in [(1 << 31) + 1, u32::MAX] {
        let mut c = cap(0, 1, 0);
        c.max_recv_wr = n;
        match QpSizes::new(&limits, QpType::Rc, &c, false) {
            Err(Error::InvalidArgument { what, .. }) => {
                assert!(what.contains("receive work requests"), "{n}: {what}")
            }
            other => panic!("{n} receives without a kernel limit: {other:?}"),
        }
    }
}
