//! Requests malformed or at the edges: ranges, entry counts, inline data, lengths and atomic
//! operands the library refuses before anything is posted; lengths that are no error; a message
//! longer than its receive.

use uverbs::{ibv_wc_status as S, Driver, ReceiveRequest, SendRequest};

use crate::case::{case, Case, Expect, Outcome, INVALID, RXE_RECV_PROT};
use crate::fixture::{forged, refused};
use crate::guarded::{Mem, GRANTED, PAGE, REGION};

/// Ranges the library refuses before anything is posted: entries past or across a region's end,
/// reversed, and another protection domain's region named at post.
pub fn ranges() -> Vec<Case> {
    vec![
        case("sge_range_past_the_region_end", INVALID, |e| {
            refused(e.m.tx.mr.sge(REGION - 4..REGION + 4))
        }),
        case("sge_reversed_range", INVALID, |e| {
            #[allow(clippy::reversed_empty_ranges)]
            refused(e.m.tx.mr.sge(9..8))
        }),
        case("sge_start_past_the_region_end", INVALID, |e| {
            refused(e.m.tx.mr.sge(REGION + 1..))
        }),
        case("post_send_range_past_the_region_end", INVALID, |e| {
            // SAFETY: refused before anything is posted.
            refused(unsafe { e.a.post_send(&mut e.m.tx.mr, ..REGION + 1, 1) })
        }),
        case("post_receive_range_past_the_region_end", INVALID, |e| {
            // SAFETY: refused before anything is posted.
            refused(unsafe { e.b.post_receive(&mut e.m.rx.mr, REGION - 1..REGION + 1, 1) })
        }),
        case("post_send_of_another_pds_region", INVALID, |e| {
            // SAFETY: refused before anything is posted.
            refused(unsafe { e.a.post_send(&mut e.m.foreign.mr, GRANTED, 1) })
        }),
        case("post_receive_into_another_pds_region", INVALID, |e| {
            // SAFETY: refused before anything is posted.
            refused(unsafe { e.b.post_receive(&mut e.m.foreign.mr, GRANTED, 1) })
        }),
    ]
}

/// More scatter/gather entries than the queue takes, and more inline data: refused before
/// anything is posted.
pub fn sges_and_inline() -> Vec<Case> {
    vec![
        case("too_many_send_sges", INVALID, |e| {
            let n = e.a.caps().max_send_sge as usize + 1;
            let sges = vec![e.m.tx.sge(0, 8); n];
            refused(e.post_a(&[SendRequest::send(1, &sges)]))
        }),
        case("too_many_receive_sges", INVALID, |e| {
            let n = e.b.caps().max_recv_sge as usize + 1;
            let sges = vec![e.m.rx.sge(0, 8); n];
            refused(e.recv_b(&[ReceiveRequest::new(1, &sges)]))
        }),
        case("inline_larger_than_the_qp_allows", INVALID, |e| {
            let big = vec![0x5au8; e.a.caps().max_inline_data as usize + 1];
            refused(e.post_a(&[SendRequest::send_inline(1, &big)]))
        }),
        case(
            "inline_rdma_write_larger_than_the_qp_allows",
            INVALID,
            |e| {
                let big = vec![0x5au8; e.a.caps().max_inline_data as usize + 1];
                let remote = e.m.target.granted();
                refused(e.post_a(&[SendRequest::rdma_write_inline(1, &big, remote)]))
            },
        ),
    ]
}

/// A message over 2 GiB, an atomic on an unaligned address or into too short a buffer: refused
/// before anything is posted.
pub fn lengths_and_atomics() -> Vec<Case> {
    vec![
        case("message_over_2_gib", INVALID, |e| {
            // Forged lengths: the message limit refuses it before the device could look.
            let lkey = e.m.tx.mr.lkey();
            let addr = e.m.tx.granted().addr;
            let sges = [forged(addr, 1 << 31, lkey), forged(addr, 1, lkey)];
            refused(e.post_a(&[SendRequest::send(1, &sges)]))
        }),
        case("atomic_on_an_unaligned_remote_address", INVALID, |e| {
            let sge = [e.m.rx.sge(0, 8)];
            let remote = e.m.target.granted().offset(4).unwrap();
            refused(e.post_a(&[SendRequest::fetch_and_add(1, &sge, remote, 1)]))
        }),
        case("atomic_into_a_short_local_buffer", INVALID, |e| {
            let sge = [e.m.rx.sge(0, 4)];
            let remote = e.m.target.granted();
            refused(e.post_a(&[SendRequest::compare_and_swap(1, &sge, remote, 0, 1)]))
        }),
    ]
}

/// Boundaries that are not errors: zero lengths, overlapping entries.
pub fn boundaries() -> Vec<Case> {
    vec![
        case("zero_length_send", Expect::Success, |e| {
            let r = [e.m.rx.sge(0, 16)];
            e.recv_b(&[ReceiveRequest::new(2, &r)]).unwrap();
            e.post_a(&[SendRequest::send(1, &[])]).unwrap();
            let (s, r) = (e.wait(1), e.wait(2));
            assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            assert_eq!(r.len(), 0);
            Outcome::Done
        }),
        case("zero_length_entry_in_a_list", Expect::Success, |e| {
            let r = [e.m.rx.sge(0, 16)];
            e.recv_b(&[ReceiveRequest::new(2, &r)]).unwrap();
            let sges = [e.m.tx.sge(0, 0), e.m.tx.sge(100, 8)];
            e.post_a(&[SendRequest::send(1, &sges)]).unwrap();
            let (s, r) = (e.wait(1), e.wait(2));
            assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            assert_eq!(r.len(), 8);
            let got = e.m.rx.mr[PAGE..PAGE + 8].to_vec();
            assert_eq!(got, e.m.tx.mr[PAGE + 100..PAGE + 108].to_vec());
            Outcome::Done
        })
        .writes(Mem::Rx, PAGE..PAGE + 8),
        case("overlapping_gather_entries", Expect::Success, |e| {
            // The same bytes gathered twice: legal, and sent as given.
            let r = [e.m.rx.sge(0, 64)];
            e.recv_b(&[ReceiveRequest::new(2, &r)]).unwrap();
            let sges = [e.m.tx.sge(0, 24), e.m.tx.sge(8, 24)];
            e.post_a(&[SendRequest::send(1, &sges)]).unwrap();
            let (s, r) = (e.wait(1), e.wait(2));
            assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            assert_eq!(r.len(), 48);
            let tx = &e.m.tx.mr[PAGE..PAGE + 32];
            let expected: Vec<u8> = tx[..24].iter().chain(&tx[8..32]).copied().collect();
            assert_eq!(e.m.rx.mr[PAGE..PAGE + 48].to_vec(), expected);
            Outcome::Done
        })
        .writes(Mem::Rx, PAGE..PAGE + 48),
        case("overlapping_scatter_entries", Expect::Success, |e| {
            // Two entries over the same bytes: filled in order, the second over the first; nothing
            // outside their union is written.
            let r = [e.m.rx.sge(0, 16), e.m.rx.sge(8, 16)];
            e.recv_b(&[ReceiveRequest::new(2, &r)]).unwrap();
            e.post_a(&[SendRequest::send(1, &[e.m.tx.sge(0, 32)])])
                .unwrap();
            let (s, r) = (e.wait(1), e.wait(2));
            assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            assert_eq!(r.len(), 32);
            let tx = &e.m.tx.mr[PAGE..PAGE + 32];
            let expected: Vec<u8> = tx[..8].iter().chain(&tx[16..32]).copied().collect();
            assert_eq!(e.m.rx.mr[PAGE..PAGE + 24].to_vec(), expected);
            Outcome::Done
        })
        .writes(Mem::Rx, PAGE..PAGE + 24),
    ]
}

/// A message longer than the receive: the receiver's completion fails; nothing lands past the
/// receive's entry (the device may have written part of it).
pub fn short_receive() -> Vec<Case> {
    vec![case(
        "message_longer_than_the_receive",
        Expect::Status(&[S::IBV_WC_LOC_LEN_ERR]),
        |e| {
            let r = [e.m.rx.sge(0, 16)];
            e.recv_b(&[ReceiveRequest::new(1, &r)]).unwrap();
            e.post_a(&[SendRequest::send(2, &[e.m.tx.sge(0, 64)])])
                .unwrap();
            let sender = e.wait(2);
            // The responder NAKs it: an invalid request (the model); rxe reports a
            // remote operational error.
            let nak: &[u32] = match e.driver {
                Driver::Mlx5 => &[S::IBV_WC_REM_INV_REQ_ERR],
                Driver::Rxe => &[S::IBV_WC_REM_INV_REQ_ERR, S::IBV_WC_REM_OP_ERR],
                other => panic!("no column for {other:?}"),
            };
            assert!(nak.contains(&sender.status()), "the sender: {sender:?}");
            Outcome::Completion(e.wait(1))
        },
    )
    .on_rxe(
        RXE_RECV_PROT,
        "rxe fails a receive too short for the message as a malformed WQE \
             (LOC_QP_OP_ERR) and NAKs the sender with a remote operational error",
    )
    .writes(Mem::Rx, PAGE..PAGE + 16)]
}
