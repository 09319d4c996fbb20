//! Keys, bounds and rights, local and remote: the device refuses them with an error completion,
//! and the memory is unchanged.

use uverbs::{ibv_access_flags, ReceiveRequest, RemoteMemory, SendRequest};

use crate::case::{
    case, Case, Outcome, LOC_PROT, REM_ACCESS, RXE_LOC_KEY, RXE_LOC_KEY_NOTE, RXE_LOC_PROT,
    RXE_LOC_PROT_NOTE, RXE_RECV_PROT, RXE_RECV_PROT_NOTE,
};
use crate::fixture::forged;
use crate::guarded::REGION;

/// Local keys and bounds: the device refuses them with a local protection error.
pub fn local_keys() -> Vec<Case> {
    vec![
        case("send_with_a_forged_lkey", LOC_PROT, |e| {
            let g = e.m.tx.granted();
            let sge = [forged(g.addr, 8, e.m.tx.mr.lkey() ^ 0x5a00)];
            e.send_one(SendRequest::send(1, &sge))
        })
        .on_rxe(RXE_LOC_KEY, RXE_LOC_KEY_NOTE),
        case("send_from_before_the_region", LOC_PROT, |e| {
            let sge = [forged(e.m.tx.addr() - 64, 128, e.m.tx.mr.lkey())];
            e.send_one(SendRequest::send(1, &sge))
        })
        .on_rxe(RXE_LOC_PROT, RXE_LOC_PROT_NOTE),
        case("send_straddling_the_region_end", LOC_PROT, |e| {
            let sge = [forged(
                e.m.tx.addr() + REGION as u64 - 8,
                16,
                e.m.tx.mr.lkey(),
            )];
            e.send_one(SendRequest::send(1, &sge))
        })
        .on_rxe(RXE_LOC_PROT, RXE_LOC_PROT_NOTE),
        case("send_from_another_pds_region", LOC_PROT, |e| {
            // A hand-made list can name another domain's entry; the device checks the domain.
            let sge = [e.m.foreign.sge(0, 8)];
            e.send_one(SendRequest::send(1, &sge))
        })
        .on_rxe(RXE_LOC_KEY, RXE_LOC_KEY_NOTE),
        case("receive_into_a_forged_lkey", LOC_PROT, |e| {
            let g = e.m.rx.granted();
            let r = [forged(g.addr, 16, e.m.rx.mr.lkey() ^ 0x5a00)];
            e.recv_b(&[ReceiveRequest::new(1, &r)]).unwrap();
            e.post_a(&[SendRequest::send(2, &[e.m.tx.sge(0, 8)])])
                .unwrap();
            Outcome::Completion(e.wait(1))
        })
        .on_rxe(RXE_RECV_PROT, RXE_RECV_PROT_NOTE),
        case("receive_straddling_the_region_end", LOC_PROT, |e| {
            // A write past the region would land in the unregistered tail.
            let r = [forged(
                e.m.rx.addr() + REGION as u64 - 8,
                64,
                e.m.rx.mr.lkey(),
            )];
            e.recv_b(&[ReceiveRequest::new(1, &r)]).unwrap();
            e.post_a(&[SendRequest::send(2, &[e.m.tx.sge(0, 32)])])
                .unwrap();
            Outcome::Completion(e.wait(1))
        })
        .on_rxe(RXE_RECV_PROT, RXE_RECV_PROT_NOTE),
        case("receive_into_another_pds_region", LOC_PROT, |e| {
            let r = [e.m.foreign.sge(0, 16)];
            e.recv_b(&[ReceiveRequest::new(1, &r)]).unwrap();
            e.post_a(&[SendRequest::send(2, &[e.m.tx.sge(0, 8)])])
                .unwrap();
            Outcome::Completion(e.wait(1))
        })
        .on_rxe(RXE_RECV_PROT, RXE_RECV_PROT_NOTE),
        case("rdma_read_into_a_forged_lkey", LOC_PROT, |e| {
            let g = e.m.rx.granted();
            let sge = [forged(g.addr, 8, e.m.rx.mr.lkey() ^ 0x5a00)];
            e.send_one(SendRequest::rdma_read(1, &sge, e.m.target.granted()))
        })
        .on_rxe(RXE_LOC_PROT, RXE_LOC_PROT_NOTE),
    ]
}

/// Remote keys and rights: the responder refuses, the requester's completion says
/// REM_ACCESS_ERR, the memory is unchanged.
pub fn remote_keys_and_rights() -> Vec<Case> {
    vec![
        case("rdma_write_with_a_forged_rkey", REM_ACCESS, |e| {
            let remote = RemoteMemory {
                rkey: e.m.target.granted().rkey ^ 0x5a00,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 8)], remote))
        }),
        case("rdma_write_to_a_read_only_region", REM_ACCESS, |e| {
            let remote = e.m.ro.granted();
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 64)], remote))
        }),
        case("rdma_read_of_a_write_only_region", REM_ACCESS, |e| {
            let remote = e.m.wo.granted();
            e.send_one(SendRequest::rdma_read(1, &[e.m.rx.sge(0, 64)], remote))
        }),
        case(
            "atomic_on_a_region_without_remote_atomic",
            REM_ACCESS,
            |e| {
                let remote = e.m.wo.granted();
                e.send_one(SendRequest::fetch_and_add(
                    1,
                    &[e.m.rx.sge(0, 8)],
                    remote,
                    1,
                ))
            },
        ),
    ]
}

/// Remote bounds, before and past the region: refused as in [`remote_keys_and_rights`].
pub fn remote_bounds() -> Vec<Case> {
    vec![
        case("rdma_write_straddling_the_region_end", REM_ACCESS, |e| {
            // What would spill lands in the unregistered tail.
            let remote = RemoteMemory {
                addr: e.m.target.addr() + REGION as u64 - 8,
                len: 64,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 64)], remote))
        }),
        case("rdma_write_just_past_the_region_end", REM_ACCESS, |e| {
            let remote = RemoteMemory {
                addr: e.m.target.addr() + REGION as u64,
                len: 8,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 8)], remote))
        }),
        case("rdma_read_from_before_the_region", REM_ACCESS, |e| {
            let remote = RemoteMemory {
                addr: e.m.target.addr() - 8,
                len: 16,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_read(1, &[e.m.rx.sge(0, 16)], remote))
        }),
        case("rdma_read_past_the_region_end", REM_ACCESS, |e| {
            let remote = RemoteMemory {
                addr: e.m.target.addr() + REGION as u64 - 8,
                len: 16,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_read(1, &[e.m.rx.sge(0, 16)], remote))
        }),
    ]
}

/// A revoked remote key, and another protection domain's region: refused as in
/// [`remote_keys_and_rights`].
pub fn revoked_keys_and_other_pds() -> Vec<Case> {
    vec![
        case("rdma_write_with_a_revoked_rkey", REM_ACCESS, |e| {
            // The key of a region deregistered just now, aimed at live memory (the target's
            // granted page), so that a write the device wrongly accepted would show.
            let dead =
                e.pd.allocate_with_access::<u8>(
                    64,
                    ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                        | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
                )
                .unwrap();
            let rkey = dead.rkey().key;
            drop(dead);
            let remote = RemoteMemory {
                rkey,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 8)], remote))
        }),
        case("rdma_write_to_another_pds_region", REM_ACCESS, |e| {
            let remote = e.m.foreign.granted();
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 8)], remote))
        }),
        case("atomic_on_another_pds_region", REM_ACCESS, |e| {
            let remote = e.m.foreign.granted();
            e.send_one(SendRequest::compare_and_swap(
                1,
                &[e.m.rx.sge(0, 8)],
                remote,
                0,
                1,
            ))
        }),
    ]
}
