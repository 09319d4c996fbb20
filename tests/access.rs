//! Access control: remote RDMA READ, WRITE (with and without immediate data) and atomics succeed
//! exactly when the target memory region's access flags allow them — otherwise they fail with
//! `REM_ACCESS_ERR` and change nothing, on either side — for every combination of the remote access
//! flags; the same against the target queue pair's access flags; a deregistered region's keys no
//! longer work; a queue pair cannot use another protection domain's region, locally or remotely.
//!
//! Both backends: rxe in the VM, the mlx5 model on the host. Every combination runs on a fresh
//! pair of queue pairs (an error moves them to ERR); memory is compared whole after the queue
//! pairs are destroyed.

mod common;

use std::time::Duration;

use common::any_device;
use common::verbs::{send_fence, wait_for, RcPair};
use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_wc, ibv_wc_opcode, ibv_wc_status, CompletionQueue,
    ErrorExt, MemoryRegion, ProtectionDomain, QueuePair, ReceiveRequest, RemoteMemory, SendRequest,
    Sge,
};
use uverbs_drivers::Error;

const GID_INDEX: u32 = 1;
/// Words in each region; operations touch words `AT..AT + LEN` of the target and `0..LEN` of the
/// local buffer (atomics: one word).
const WORDS: usize = 64;
const AT: usize = 8;
const LEN: usize = 8;

use ibv_access_flags as A;

const REMOTE: [(ibv_access_flags, &str); 3] = [
    (A::IBV_ACCESS_REMOTE_READ, "R"),
    (A::IBV_ACCESS_REMOTE_WRITE, "W"),
    (A::IBV_ACCESS_REMOTE_ATOMIC, "A"),
];

/// The 8 subsets of the remote access flags, with a name (`-`, `R`, `RW`, ...).
fn subsets() -> Vec<(ibv_access_flags, String)> {
    (0..8u32)
        .map(|bits| {
            let mut flags = ibv_access_flags(0);
            let mut name = String::new();
            for (i, (f, n)) in REMOTE.iter().enumerate() {
                if bits & (1 << i) != 0 {
                    flags |= *f;
                    name.push_str(n);
                }
            }
            if name.is_empty() {
                name.push('-');
            }
            (flags, name)
        })
        .collect()
}

/// A remote operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Write,
    WriteImm,
    Read,
    CompareSwap,
    FetchAdd,
}

const OPS: [Op; 5] = [
    Op::Write,
    Op::WriteImm,
    Op::Read,
    Op::CompareSwap,
    Op::FetchAdd,
];

impl Op {
    /// The access flag the operation needs.
    fn needs(self) -> ibv_access_flags {
        match self {
            Op::Write | Op::WriteImm => A::IBV_ACCESS_REMOTE_WRITE,
            Op::Read => A::IBV_ACCESS_REMOTE_READ,
            Op::CompareSwap | Op::FetchAdd => A::IBV_ACCESS_REMOTE_ATOMIC,
        }
    }

    fn opcode(self) -> ibv_wc_opcode::Type {
        match self {
            Op::Write | Op::WriteImm => ibv_wc_opcode::IBV_WC_RDMA_WRITE,
            Op::Read => ibv_wc_opcode::IBV_WC_RDMA_READ,
            Op::CompareSwap => ibv_wc_opcode::IBV_WC_COMP_SWAP,
            Op::FetchAdd => ibv_wc_opcode::IBV_WC_FETCH_ADD,
        }
    }
}

fn target_word(i: usize) -> u64 {
    0x7a00_0000_0000_0000 | (i as u64) << 16 | 0x00ee
}

fn local_word(i: usize) -> u64 {
    0x1c00_0000_0000_0000 | (i as u64) << 16 | 0x0011
}

/// A pair of queue pairs `a` → `b`, `b` granting `qp_access`.
fn connect<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
    qp_access: ibv_access_flags,
) -> (QueuePair<'a>, QueuePair<'a>) {
    RcPair::new(pd, cq)
        .gid_index(GID_INDEX)
        .depth(4, 4)
        .access(A::IBV_ACCESS_LOCAL_WRITE | qp_access)
        .connect()
}

/// The completion of `wr_id` within 30 s, the others polled on the way kept in `seen`.
fn wait(cq: &CompletionQueue<'_>, wr_id: u64, seen: &mut Vec<ibv_wc>) -> ibv_wc {
    wait_for(cq, wr_id, seen, Duration::from_secs(30))
}

/// Runs `op` from a fresh pair (`b` granting `qp_access`) against `remote`, which must lie in
/// `target`; returns the requester's completion. With `expect_ok`, checks the operation's effect
/// on both regions word by word; otherwise that neither region changed at all.
#[allow(clippy::too_many_arguments)]
fn run(
    pd: &ProtectionDomain<'_>,
    cq: &CompletionQueue<'_>,
    qp_access: ibv_access_flags,
    op: Op,
    local: &mut MemoryRegion<u64>,
    target: &mut MemoryRegion<u64>,
    remote: RemoteMemory,
    expect_ok: bool,
    what: &str,
) -> ibv_wc {
    for (i, w) in target.iter_mut().enumerate() {
        *w = target_word(i);
    }
    for (i, w) in local.iter_mut().enumerate() {
        *w = local_word(i);
    }
    let mut seen = Vec::new();
    let wc = {
        let (a, b) = connect(pd, cq, qp_access);
        let words = if matches!(op, Op::CompareSwap | Op::FetchAdd) {
            1
        } else {
            LEN
        };
        let sge = [local.sge(..words).unwrap()];
        let one = [sge[0]];
        let req = match op {
            Op::Write => SendRequest::rdma_write(1, &sge, remote),
            Op::WriteImm => SendRequest::rdma_write_with_imm(1, &sge, remote, 0x1234_5678),
            Op::Read => SendRequest::rdma_read(1, &sge, remote),
            Op::CompareSwap => SendRequest::compare_and_swap(
                1,
                &one,
                remote,
                target_word(AT),
                0x5157_0000_0000_0001,
            ),
            Op::FetchAdd => SendRequest::fetch_and_add(1, &one, remote, 5),
        };
        let rx = pd.allocate::<u64>(1).unwrap();
        if op == Op::WriteImm {
            // SAFETY: `rx` outlives the queue pairs (dropped at the end of this block).
            unsafe { b.post_receive_list(&[ReceiveRequest::new(2, &[rx.sge(..).unwrap()])]) }
                .unwrap();
        }
        // SAFETY: both regions outlive the queue pairs, and are read only after they are gone.
        unsafe { a.post_send_list(&[req]) }.unwrap();
        let wc = wait(cq, 1, &mut seen);
        if expect_ok && wc.is_valid() && op == Op::WriteImm {
            let r = wait(cq, 2, &mut seen);
            assert!(r.is_valid(), "{what}: the receive of the immediate: {r:?}");
            assert_eq!(r.imm_data().map(u32::from_be), Some(0x1234_5678), "{what}");
            assert_eq!(r.len(), LEN * 8, "{what}");
        }
        if !wc.is_valid() {
            assert_eq!(
                a.query().unwrap().qp_state,
                Some(ibv_qp_state::IBV_QPS_ERR),
                "{what}: the requester after the error"
            );
        }
        drop((a, b));
        wc
    };
    let t: Vec<u64> = (0..WORDS).map(target_word).collect();
    let l: Vec<u64> = (0..WORDS).map(local_word).collect();
    if !expect_ok || !wc.is_valid() {
        assert_eq!(&target[..], &t[..], "{what}: the target changed");
        assert_eq!(&local[..], &l[..], "{what}: the local buffer changed");
        return wc;
    }
    assert_eq!(wc.opcode(), op.opcode(), "{what}");
    let mut t2 = t.clone();
    let mut l2 = l.clone();
    match op {
        Op::Write | Op::WriteImm => t2[AT..AT + LEN].copy_from_slice(&l[..LEN]),
        Op::Read => l2[..LEN].copy_from_slice(&t[AT..AT + LEN]),
        Op::CompareSwap => {
            t2[AT] = 0x5157_0000_0000_0001;
            l2[0] = t[AT];
        }
        Op::FetchAdd => {
            t2[AT] = t[AT] + 5;
            l2[0] = t[AT];
        }
    }
    assert_eq!(&target[..], &t2[..], "{what}: the target");
    assert_eq!(&local[..], &l2[..], "{what}: the local buffer");
    wc
}

const REM_ACCESS_ERR: u32 = ibv_wc_status::IBV_WC_REM_ACCESS_ERR;

fn status(wc: &ibv_wc) -> &'static str {
    uverbs::wc_status_str(wc.status())
}

/// Every subset of the remote access flags on the target region × every remote operation (the
/// queue pair grants everything): allowed exactly when the region has the operation's flag,
/// `REM_ACCESS_ERR` and no change otherwise. (40 combinations.)
#[test]
fn access_region_flags_times_operations() {
    let Some(dev) = any_device("access_region_flags_times_operations") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64, 0).unwrap();
    let all = A::IBV_ACCESS_REMOTE_READ | A::IBV_ACCESS_REMOTE_WRITE | A::IBV_ACCESS_REMOTE_ATOMIC;
    let mut local = pd.allocate::<u64>(WORDS).unwrap();
    let mut table = Vec::new();
    for (flags, name) in subsets() {
        let mut target = pd
            .allocate_with_access::<u64>(WORDS, A::IBV_ACCESS_LOCAL_WRITE | flags)
            .unwrap();
        assert_eq!(target.access(), A::IBV_ACCESS_LOCAL_WRITE | flags);
        let remote = target.remote().offset(8 * AT as u64).unwrap();
        for op in OPS {
            let allowed = (flags & op.needs()).0 != 0;
            let what = format!("region {name}, {op:?}");
            let wc = run(
                &pd,
                &cq,
                all,
                op,
                &mut local,
                &mut target,
                remote,
                allowed,
                &what,
            );
            let expected = if allowed {
                ibv_wc_status::IBV_WC_SUCCESS
            } else {
                REM_ACCESS_ERR
            };
            assert_eq!(wc.status(), expected, "{what}: {}", status(&wc));
            table.push(format!(
                "{name}×{op:?}={}",
                if allowed { "ok" } else { "denied" }
            ));
        }
    }
    assert_eq!(table.len(), 40);
    eprintln!(
        "access ({}): {} region combinations: {}",
        dev.name(),
        table.len(),
        table.join(" ")
    );
}

/// Remote write or atomic access needs local write access too: a region registered with either
/// but without `IBV_ACCESS_LOCAL_WRITE` is refused by the kernel (`EINVAL`; the verbs rule
/// `ib_check_mr_access`), on both backends; remote read alone, or nothing, is fine.
#[test]
fn access_remote_write_needs_local_write() {
    let Some(dev) = any_device("access_remote_write_needs_local_write") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    for (flags, name) in subsets() {
        let result = pd.allocate_with_access::<u64>(4, flags);
        let needs_local =
            (flags & (A::IBV_ACCESS_REMOTE_WRITE | A::IBV_ACCESS_REMOTE_ATOMIC)).0 != 0;
        match (needs_local, result) {
            (false, Ok(mr)) => assert_eq!(mr.access(), flags, "{name}"),
            (true, Err(e)) => assert!(
                matches!(
                    e.uverbs_error(),
                    Some(Error::Kernel {
                        errno: nix::errno::Errno::EINVAL,
                        ..
                    })
                ),
                "{name}: {e}"
            ),
            (false, Err(e)) => panic!("{name} without local write: {e}"),
            (true, Ok(_)) => panic!("{name} without local write was registered"),
        }
    }
}

/// The target queue pair's access flags × every remote operation, against a region that allows
/// everything: allowed exactly when the queue pair grants the operation. (40 combinations.)
///
/// The backends name the refusal differently (nothing changes either way; the device's status is
/// `qp_access_denied` in tests/common/behaviour.rs): the mlx5 model checks the queue pair's flags
/// with the region's and NAKs a denied operation as a remote access error (`REM_ACCESS_ERR`); rxe
/// checks them first (`check_op_valid`) and NAKs the request as invalid
/// (`RESPST_ERR_UNSUPPORTED_OPCODE`), which the requester sees as `REM_INV_REQ_ERR`.
#[test]
fn access_queue_pair_flags_times_operations() {
    let Some(dev) = any_device("access_queue_pair_flags_times_operations") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64, 0).unwrap();
    let mut local = pd.allocate::<u64>(WORDS).unwrap();
    let mut target = pd.allocate::<u64>(WORDS).unwrap();
    let remote = target.remote().offset(8 * AT as u64).unwrap();
    let mut table = Vec::new();
    let mut statuses = std::collections::BTreeSet::new();
    for (flags, name) in subsets() {
        for op in OPS {
            let allowed = (flags & op.needs()).0 != 0;
            let what = format!("queue pair {name}, {op:?}");
            let wc = run(
                &pd,
                &cq,
                flags,
                op,
                &mut local,
                &mut target,
                remote,
                allowed,
                &what,
            );
            let denied = dev.behaviour().qp_access_denied;
            if allowed {
                assert!(wc.is_valid(), "{what}: {}", status(&wc));
            } else {
                assert_eq!(wc.status(), denied, "{what}: {}", status(&wc));
                statuses.insert(status(&wc));
            }
            table.push(format!(
                "{name}×{op:?}={}",
                if allowed { "ok" } else { status(&wc) }
            ));
        }
    }
    assert_eq!(table.len(), 40);
    eprintln!(
        "access ({}): {} queue pair combinations; denied as {statuses:?}",
        dev.name(),
        table.len()
    );
}

/// After a region is deregistered, its rkey opens nothing: a write, a read and an atomic with it
/// (aimed at memory that is still registered, so that a wrongly accepted access would show) fail
/// with `REM_ACCESS_ERR` and change nothing; its lkey in a send fails locally. A region registered
/// again gets a key that works, and the old one stays dead.
#[test]
fn access_deregistered_keys_no_longer_work() {
    let Some(dev) = any_device("access_deregistered_keys_no_longer_work") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64, 0).unwrap();
    let all = A::IBV_ACCESS_REMOTE_READ | A::IBV_ACCESS_REMOTE_WRITE | A::IBV_ACCESS_REMOTE_ATOMIC;
    let mut local = pd.allocate::<u64>(WORDS).unwrap();
    let mut target = pd.allocate::<u64>(WORDS).unwrap();
    let live = target.remote().offset(8 * AT as u64).unwrap();
    for op in [Op::Write, Op::Read, Op::FetchAdd, Op::CompareSwap] {
        let gone = pd.allocate::<u64>(WORDS).unwrap();
        let dead_rkey = gone.rkey().key;
        drop(gone);
        let remote = RemoteMemory {
            rkey: dead_rkey,
            ..live
        };
        let what = format!("{op:?} with a deregistered rkey");
        let wc = run(
            &pd,
            &cq,
            all,
            op,
            &mut local,
            &mut target,
            remote,
            false,
            &what,
        );
        assert_eq!(wc.status(), REM_ACCESS_ERR, "{what}: {}", status(&wc));
    }
    // A key that worked stops working when its region goes.
    let mut doomed = pd.allocate::<u64>(WORDS).unwrap();
    let there = doomed.remote().offset(8 * AT as u64).unwrap();
    let what = "a write to a region about to go";
    let wc = run(
        &pd,
        &cq,
        all,
        Op::Write,
        &mut local,
        &mut doomed,
        there,
        true,
        what,
    );
    assert!(wc.is_valid(), "{what}: {}", status(&wc));
    drop(doomed);
    let remote = RemoteMemory {
        rkey: there.rkey,
        ..live
    };
    let what = "a write with the key of a region that has gone";
    let wc = run(
        &pd,
        &cq,
        all,
        Op::Write,
        &mut local,
        &mut target,
        remote,
        false,
        what,
    );
    assert_eq!(wc.status(), REM_ACCESS_ERR, "{what}: {}", status(&wc));

    // The lkey of a deregistered region, naming memory that is still registered: refused
    // locally (rxe 6.12 completes the refused request as WR_FLUSH_ERR: see RXE_LOC_PROT_NOTE in
    // tests/hostile/case.rs).
    let gone = pd.allocate::<u64>(WORDS).unwrap();
    let dead_lkey = gone.lkey();
    drop(gone);
    let (a, b) = connect(&pd, &cq, all);
    let sge = [Sge {
        lkey: dead_lkey,
        ..local.sge(..LEN).unwrap()
    }];
    let rx = pd.allocate::<u64>(LEN).unwrap();
    // SAFETY: the regions outlive the queue pairs.
    unsafe { b.post_receive_list(&[ReceiveRequest::new(2, &[rx.sge(..).unwrap()])]) }.unwrap();
    // SAFETY: as above; the device must refuse the entry.
    unsafe { a.post_send_list(&[SendRequest::send(1, &sge)]) }.unwrap();
    let mut seen = Vec::new();
    let wc = wait(&cq, 1, &mut seen);
    // As the device completes a send on an unusable lkey (rxe: 6.1 fails it with LOC_QP_OP_ERR,
    // 6.12 flushes it; see tests/common/behaviour.rs).
    let expected = dev.behaviour().send_unusable_lkey;
    assert!(
        expected.contains(&wc.status()),
        "a send with a dead lkey: {wc:?}"
    );
    drop((a, b));
    assert!(rx.iter().all(|&w| w == 0), "the receiver got data");
}

/// A queue pair cannot use another protection domain's region: through the API the post is a
/// typed error; through a hand-made entry the device refuses it locally (the model: a local
/// protection error; rxe: see below); and a peer's write,
/// read or atomic with an rkey of another domain than its queue pair's fails with
/// `REM_ACCESS_ERR` and changes nothing.
#[test]
fn access_other_protection_domain() {
    let Some(dev) = any_device("access_other_protection_domain") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let other = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64, 0).unwrap();
    let all = A::IBV_ACCESS_REMOTE_READ | A::IBV_ACCESS_REMOTE_WRITE | A::IBV_ACCESS_REMOTE_ATOMIC;
    let mut local = pd.allocate::<u64>(WORDS).unwrap();
    let mut foreign = other.allocate::<u64>(WORDS).unwrap();
    let remote = foreign.remote().offset(8 * AT as u64).unwrap();
    for op in OPS {
        let what = format!("{op:?} on another domain's region");
        let wc = run(
            &pd,
            &cq,
            all,
            op,
            &mut local,
            &mut foreign,
            remote,
            false,
            &what,
        );
        assert_eq!(wc.status(), REM_ACCESS_ERR, "{what}: {}", status(&wc));
    }
    // The same region, from a queue pair of its own domain: allowed.
    let mut own_local = other.allocate::<u64>(WORDS).unwrap();
    let what = "a write from the region's own domain";
    let wc = run(
        &other,
        &cq,
        all,
        Op::Write,
        &mut own_local,
        &mut foreign,
        remote,
        true,
        what,
    );
    assert!(wc.is_valid(), "{what}: {}", status(&wc));

    // Locally, through the API: typed errors, nothing posted.
    let (mut a, mut b) = connect(&pd, &cq, all);
    // SAFETY: refused before anything is posted.
    let e = unsafe { a.post_send(&mut foreign, ..1, 1) }.unwrap_err();
    assert!(
        matches!(e.uverbs_error(), Some(Error::InvalidArgument { .. })),
        "{e}"
    );
    // SAFETY: as above.
    let e = unsafe { b.post_receive(&mut foreign, ..1, 1) }.unwrap_err();
    assert!(
        matches!(e.uverbs_error(), Some(Error::InvalidArgument { .. })),
        "{e}"
    );
    // Nothing was posted: a send behind the fence's would complete before it, a receive would
    // take its message (see `send_fence`).
    let stray = send_fence(&a, &b, &cq);
    assert!(stray.is_empty(), "a refused post completed: {stray:?}");
    drop((a, b));

    // Locally, through hand-made entries: the device refuses them, with the statuses it gives
    // (tests/common/behaviour.rs; the model: a local protection error each; rxe: a send on
    // another domain's lkey is LOC_QP_OP_ERR on 6.1 and flushed on 6.12, a read into one is
    // LOC_PROT_ERR on 6.1 and flushed on 6.12, a receive into one is LOC_QP_OP_ERR on both).
    let behaviour = dev.behaviour();
    for (side, expected) in [
        ("send", behaviour.send_unusable_lkey),
        ("receive", behaviour.receive_unusable_entry),
        ("read into", behaviour.read_into_unusable_entry),
    ] {
        for (i, w) in foreign.iter_mut().enumerate() {
            *w = target_word(i);
        }
        let (a, b) = connect(&pd, &cq, all);
        let f = [foreign.sge(..LEN).unwrap()];
        let l = [local.sge(..LEN).unwrap()];
        let target = pd.allocate::<u64>(WORDS).unwrap();
        let mut seen = Vec::new();
        let wc = match side {
            "send" => {
                // SAFETY: the regions outlive the queue pairs.
                unsafe { b.post_receive_list(&[ReceiveRequest::new(2, &l)]) }.unwrap();
                // SAFETY: as above; the device must refuse the entry.
                unsafe { a.post_send_list(&[SendRequest::send(1, &f)]) }.unwrap();
                wait(&cq, 1, &mut seen)
            }
            "receive" => {
                // SAFETY: as above.
                unsafe { b.post_receive_list(&[ReceiveRequest::new(1, &f)]) }.unwrap();
                // SAFETY: as above.
                unsafe { a.post_send_list(&[SendRequest::send(2, &l)]) }.unwrap();
                wait(&cq, 1, &mut seen)
            }
            _ => {
                let from = target.remote();
                // SAFETY: as above.
                unsafe { a.post_send_list(&[SendRequest::rdma_read(1, &f, from)]) }.unwrap();
                wait(&cq, 1, &mut seen)
            }
        };
        drop((a, b));
        assert!(
            expected.contains(&wc.status()),
            "{side} another domain's entry: {}",
            status(&wc)
        );
        let t: Vec<u64> = (0..WORDS).map(target_word).collect();
        assert_eq!(
            &foreign[..],
            &t[..],
            "{side}: the other domain's region changed"
        );
    }
}
