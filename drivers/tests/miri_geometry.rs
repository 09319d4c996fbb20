//! The mlx5 queue geometry (`QpSizes`): every capacity a queue pair reports must be one its send
//! queue really takes. Pure arithmetic, so Miri runs it too (`tests/miri`).

use uverbs_drivers::error::Error;
use uverbs_drivers::mlx5::qp::{Limits, QpSizes};
use uverbs_drivers::mlx5::wqe::{QpType, SendQueue, SendQueueConfig, MAX_DS};
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

#[test]
fn reported_inline_capacity_is_postable() {
    for qp_type in [QpType::Rc, QpType::Uc, QpType::Ud] {
        for (sge, inline) in [(1, 0), (1, 64), (4, 0), (2, 200), (16, 0), (1, 300)] {
            let Ok(s) = QpSizes::new(&LIMITS, qp_type, &cap(8, sge, inline), false) else {
                continue;
            };
            assert!(
                s.max_inline_data >= inline,
                "{qp_type:?} asked {inline}: {s:?}"
            );
            largest_inline_fits(&LIMITS, qp_type, &s);
        }
    }
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

/// FINDING (docs/soundness.md, found by fuzz target `kernel_responses`): when the context reports
/// no receive limit (`max_recv_wr` 0 in the `GET_CONTEXT` response, which `Mlx5Context::limits`
/// reads as `u32::MAX`), a request for more than 2^31 receives reaches
/// `cap.max_recv_wr.next_power_of_two()` (drivers/src/mlx5/qp.rs:206): an overflow panic in a
/// debug build, 0 in a release build (a 64-byte receive queue for 2^31 requests). Expected: an
/// `InvalidArgument`, as for the send queue.
#[test]
fn finding_huge_receive_queue_without_a_kernel_limit() {
    let limits = Limits {
        max_recv_wr: u32::MAX,
        ..LIMITS
    };
    let mut c = cap(0, 1, 0);
    c.max_recv_wr = (1 << 31) + 1;
    if let Ok(s) = QpSizes::new(&limits, QpType::Rc, &c, false) {
        assert!(s.rq_max_post >= c.max_recv_wr, "{s:?}");
    }
}
