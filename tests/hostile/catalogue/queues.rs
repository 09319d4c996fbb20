//! Queues that do not take a request: queue pair states, full queues, shared receive queues
//! misused.

use uverbs::{ibv_qp_state, ibv_wc_status as S, ReceiveRequest, RemoteMemory, SendRequest};

use crate::case::{case, Case, Expect, Outcome, Ty, FLUSHED, INVALID};
use crate::common::verbs::GID_INDEX;
use crate::fixture::{init_attr, rc_builder, refused, rtr_attr, to_state};
use crate::guarded::{Mem, PAGE};

/// Posting in a queue pair state that does not take it.
pub fn qp_states() -> Vec<Case> {
    vec![
        case("send_in_reset", Expect::Typed(Ty::WrongState(0)), |e| {
            let qp = e.reset_qp();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[SendRequest::send(1, &[e.m.tx.sge(0, 8)])]) })
        }),
        case("receive_in_reset", Expect::Typed(Ty::WrongState(0)), |e| {
            let qp = e.reset_qp();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_receive_list(&[ReceiveRequest::new(1, &[e.m.rx.sge(0, 8)])]) })
        }),
        case("send_in_init", Expect::Typed(Ty::WrongState(1)), |e| {
            let qp = e.reset_qp();
            qp.modify(&init_attr()).unwrap();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[SendRequest::send(1, &[e.m.tx.sge(0, 8)])]) })
        }),
        case("send_in_rtr", Expect::Typed(Ty::WrongState(2)), |e| {
            let qp = e.reset_qp();
            qp.modify(&init_attr()).unwrap();
            qp.modify(&rtr_attr(e.loopback_gid(), qp.qp_num(), GID_INDEX as u8))
                .unwrap();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[SendRequest::send(1, &[e.m.tx.sge(0, 8)])]) })
        }),
        case("send_in_error", Expect::Typed(Ty::WrongState(6)), |e| {
            e.a.modify(&to_state(ibv_qp_state::IBV_QPS_ERR)).unwrap();
            refused(e.post_a(&[SendRequest::send(1, &[e.m.tx.sge(0, 8)])]))
        }),
        case(
            "send_after_the_device_moved_the_qp_to_error",
            FLUSHED,
            |e| {
                // The library last set RTS; the device failed the QP on a remote access error. The
                // post goes to the device, which flushes it.
                let bad = RemoteMemory {
                    rkey: e.m.target.granted().rkey ^ 0x5a00,
                    ..e.m.target.granted()
                };
                let sge = [e.m.tx.sge(0, 8)];
                e.post_a(&[SendRequest::rdma_write(2, &sge, bad)]).unwrap();
                let first = e.wait(2);
                assert_eq!(
                    first.error().map(|x| x.0),
                    Some(S::IBV_WC_REM_ACCESS_ERR),
                    "{first:?}"
                );
                e.send_one(SendRequest::rdma_write(1, &sge, e.m.target.granted()))
            },
        ),
    ]
}

/// Full send, receive and shared receive queues: the request past the depth is refused.
pub fn full_queues() -> Vec<Case> {
    vec![
        case("full_send_queue", Expect::Typed(Ty::QueueFull), |e| {
            // The peer has no receive and RNR retries for ever: nothing completes.
            let n = e.a.caps().max_send_wr as usize;
            let sge = [e.m.tx.sge(0, 8)];
            let reqs: Vec<_> = (0..n as u64)
                .map(|i| SendRequest::send(100 + i, &sge))
                .collect();
            e.post_a(&reqs).unwrap();
            let outcome = refused(e.post_a(&[SendRequest::send(1, &sge)]));
            // Then the peer takes exactly the `n` accepted sends (one receive at a time: its
            // receive queue may be shorter), so that the fence after the case (see `fence`) can
            // run: a refused send that was posted all the same would take the fence's receive.
            let r = [e.m.rx.sge(0, 8)];
            for i in 0..n as u64 {
                e.recv_b(&[ReceiveRequest::new(200 + i, &r)]).unwrap();
                let (s, r) = (e.wait(100 + i), e.wait(200 + i));
                assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            }
            outcome
        })
        .writes(Mem::Rx, PAGE..PAGE + 8),
        case("full_receive_queue", Expect::Typed(Ty::QueueFull), |e| {
            let n = e.b.caps().max_recv_wr as usize;
            let r = [e.m.rx.sge(0, 8)];
            let reqs: Vec<_> = (0..n as u64)
                .map(|i| ReceiveRequest::new(100 + i, &r))
                .collect();
            e.recv_b(&reqs).unwrap();
            let outcome = refused(e.recv_b(&[ReceiveRequest::new(1, &r)]));
            // Then exactly `n` messages take the accepted receives, in order, so that the fence
            // after the case can run: a refused receive that was posted all the same would take
            // the fence's message.
            let s = [e.m.tx.sge(0, 8)];
            let sends: Vec<_> = (0..n as u64)
                .map(|i| SendRequest::send(200 + i, &s))
                .collect();
            e.post_a(&sends).unwrap();
            for i in 0..n as u64 {
                let (s, r) = (e.wait(200 + i), e.wait(100 + i));
                assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            }
            outcome
        })
        .writes(Mem::Rx, PAGE..PAGE + 8),
        case(
            "full_shared_receive_queue",
            Expect::Typed(Ty::QueueFull),
            |e| {
                let srq = e.pd.create_srq(4, 1).unwrap();
                let n = srq.caps().max_wr as usize;
                let r = [e.m.rx.sge(0, 8)];
                let reqs: Vec<_> = (0..=n as u64)
                    .map(|i| ReceiveRequest::new(100 + i, &r))
                    .collect();
                // SAFETY: `rx` outlives the SRQ (dropped here).
                let f = unsafe { srq.post_receive_list(&reqs) }.unwrap_err();
                assert_eq!(f.index, n);
                Outcome::Refused(f.error)
            },
        ),
    ]
}

/// Shared receive queues misused: too many entries, a receive on a queue pair that uses one.
pub fn srq_misuse() -> Vec<Case> {
    vec![
        case("too_many_sges_on_a_shared_receive_queue", INVALID, |e| {
            let srq = e.pd.create_srq(4, 1).unwrap();
            let n = srq.caps().max_sge as usize + 1;
            let r = vec![e.m.rx.sge(0, 8); n];
            // SAFETY: refused before anything is posted.
            refused(unsafe { srq.post_receive_list(&[ReceiveRequest::new(1, &r)]) })
        }),
        case("receive_on_a_qp_that_uses_an_srq", INVALID, |e| {
            let srq = e.pd.create_srq(4, 1).unwrap();
            let qp = rc_builder(e.pd, e.cq)
                .set_srq(&srq)
                .build()
                .unwrap()
                .into_queue_pair();
            qp.modify(&init_attr()).unwrap();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_receive_list(&[ReceiveRequest::new(1, &[e.m.rx.sge(0, 8)])]) })
        }),
    ]
}
