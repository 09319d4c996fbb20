//! What the transport does not have: address handles and UD requests, multicast, memory windows
//! and invalidation; and a CQ too small for what completes on it.

use std::time::Duration;

use uverbs::{ibv_access_flags, ibv_wc, ibv_wc_status as S, AddressVector, SendRequest};

use crate::case::{case, Case, Expect, Outcome, Ty, INVALID};
use crate::fixture::{loopback_av, rc_builder, refused, ud_qp};
use crate::guarded::{Mem, GRANTED, PAGE};

/// Address handles on a missing GID or port, and UD requests the transport does not have.
pub fn address_handles_and_ud() -> Vec<Case> {
    vec![
        case("address_handle_with_an_invalid_gid_index", INVALID, |e| {
            let av = AddressVector {
                sgid_index: 200,
                ..loopback_av(e)
            };
            refused(e.pd.create_ah(&av))
        }),
        case("address_handle_on_port_0", INVALID, |e| {
            let av = AddressVector {
                port_num: 0,
                ..loopback_av(e)
            };
            refused(e.pd.create_ah(&av))
        }),
        case("rdma_write_on_a_ud_qp", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            let sge = [e.m.tx.sge(0, 8)];
            let req = SendRequest::rdma_write(1, &sge, e.m.target.granted());
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[req]) })
        }),
        case("send_on_a_ud_qp_without_a_destination", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            let sge = [e.m.tx.sge(0, 8)];
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[SendRequest::send(1, &sge)]) })
        }),
        case("ud_datagram_over_the_mtu", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            let ah = e.pd.create_ah(&loopback_av(e)).unwrap();
            let mtu = e.ctx.query_port(1).unwrap().active_mtu().bytes().unwrap() as usize;
            let sge = [e.m.tx.mr.sge(0..mtu + 1).unwrap()];
            let req = SendRequest::send_ud(1, &sge, &ah, qp.qp_num(), 0x1234);
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[req]) })
        }),
        case("ud_address_handle_of_another_pd", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            let ah = e.other_pd.create_ah(&loopback_av(e)).unwrap();
            let sge = [e.m.tx.sge(0, 8)];
            let req = SendRequest::send_ud(1, &sge, &ah, qp.qp_num(), 0x1234);
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[req]) })
        }),
        case("ud_destination_on_an_rc_qp", INVALID, |e| {
            let ah = e.pd.create_ah(&loopback_av(e)).unwrap();
            let sge = [e.m.tx.sge(0, 8)];
            refused(e.post_a(&[SendRequest::send_ud(1, &sge, &ah, e.b.qp_num(), 0)]))
        }),
    ]
}

/// Multicast on the wrong GID or transport, a memory window on another domain's region, and
/// a local invalidation of a memory region's key.
pub fn multicast_and_windows() -> Vec<Case> {
    vec![
        case("multicast_attach_of_a_unicast_gid", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            refused(qp.attach_mcast(&e.loopback_gid(), 0))
        }),
        case("multicast_attach_of_an_rc_qp", INVALID, |e| {
            let group = uverbs::Gid::from_bytes([
                0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34,
            ]);
            refused(e.a.attach_mcast(&group, 0))
        }),
        case(
            "memory_window_bound_to_another_pds_region",
            INVALID,
            |e| match e.pd.alloc_mw() {
                Err(err) => Outcome::Refused(err),
                Ok(mw) => refused(
                    SendRequest::bind_mw(
                        1,
                        &mw,
                        &e.m.foreign.mr,
                        GRANTED,
                        ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
                    )
                    .map(drop),
                ),
            },
        )
        .on_mlx5(
            Expect::Typed(Ty::Unsupported),
            "mlx5: the backend has no memory windows (alloc_mw is Unsupported)",
        ),
        case(
            "local_invalidate_of_a_memory_regions_rkey",
            Expect::Status(&[S::IBV_WC_LOC_QP_OP_ERR, S::IBV_WC_WR_FLUSH_ERR]),
            |e| e.send_one(SendRequest::local_invalidate(1, e.m.target.granted().rkey)),
        )
        .on_mlx5(
            Expect::Typed(Ty::Unsupported),
            "rxe invalidates type 2 windows only (6.1: LOC_QP_OP_ERR, 6.12: WR_FLUSH_ERR); the \
             mlx5 backend builds no UMR WQEs and refuses LOCAL_INV at post",
        ),
    ]
}

/// A CQ too small for what completes on it.
pub fn small_cqs() -> Vec<Case> {
    vec![case("cq_too_small", Expect::CqErr, |e| {
        let small = e.ctx.create_cq(1, 0x5ca1).unwrap();
        let qp = rc_builder(e.pd, &small).build().unwrap();
        let ep = qp.endpoint();
        let qp = qp.handshake(ep).unwrap();
        let sge = [e.m.tx.sge(0, 8)];
        let reqs: Vec<_> = (0..6)
            .map(|i| SendRequest::rdma_write(i, &sge, e.m.target.granted()))
            .collect();
        // SAFETY: the regions outlive the QP, dropped at the end of this case.
        unsafe { qp.post_send_list(&reqs) }.unwrap();
        let mut got = Vec::new();
        while let Some(ev) = e
            .ctx
            .get_async_event_timeout(Duration::from_millis(500))
            .unwrap()
        {
            got.push(ev);
        }
        // Polling the overrun CQ still works and gives what it kept.
        let mut buf = [ibv_wc::default(); 8];
        let kept = small.poll(&mut buf).unwrap();
        assert!(
            !kept.is_empty() && kept.iter().all(ibv_wc::is_valid),
            "{kept:?}"
        );
        Outcome::CqErr(got, 0x5ca1)
    })
    .writes(Mem::Target, PAGE..PAGE + 8)]
}
