//! Every verb rxe offers, end to end: each opcode checked in remote or local memory byte by byte and
//! in its completion; flags, lists, selective signaling, access errors, and concurrent posters.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::verbs::{poll_n, read_fence, wait_for, Fence, RcPair, DEADLINE};
use common::{any_device, TestDevice};
use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_wc, ibv_wc_flags, ibv_wc_opcode, ibv_wc_status, Capability,
    CompletionQueue, Context, ErrorExt, MemoryRegion, MemoryWindow, ProtectionDomain, QpAttr,
    QueuePair, ReceiveRequest, RemoteMemory, SendRequest, Verb,
};
use uverbs_drivers::Error;

const GID_INDEX: u32 = 1;

struct Pair<'a> {
    a: QueuePair<'a>,
    b: QueuePair<'a>,
}

fn connect<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
    depth: u32,
    sig_all: bool,
) -> Pair<'a> {
    connect_with(pd, cq, depth, sig_all, 6)
}

fn connect_with<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
    depth: u32,
    sig_all: bool,
    rnr_retry: u8,
) -> Pair<'a> {
    let (a, b) = RcPair::new(pd, cq)
        .rnr_retry(rnr_retry)
        .min_rnr_timer(31)
        .gid_index(GID_INDEX)
        .depth(depth, depth)
        .access(
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_READ
                | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC,
        )
        .tune(move |b| {
            b.set_max_send_sge(4)
                .set_max_recv_sge(4)
                .set_max_inline_data(64)
                .set_sq_sig_all(sig_all);
        })
        .connect();
    Pair { a, b }
}

fn one(wcs: &[ibv_wc], wr_id: u64) -> ibv_wc {
    let found: Vec<&ibv_wc> = wcs.iter().filter(|w| w.wr_id() == wr_id).collect();
    assert_eq!(found.len(), 1, "completions for wr_id {wr_id}: {wcs:?}");
    *found[0]
}

/// Posts; the regions in these tests outlive their queue pairs and are only read after completion.
fn post(qp: &QueuePair<'_>, reqs: &[SendRequest<'_>]) {
    // SAFETY: see above.
    unsafe { qp.post_send_list(reqs) }.unwrap();
}

fn post_recv(qp: &QueuePair<'_>, reqs: &[ReceiveRequest<'_>]) {
    // SAFETY: see `post`.
    unsafe { qp.post_receive_list(reqs) }.unwrap();
}

fn setup(dev: &TestDevice) -> Context {
    dev.open()
}

fn fill(mr: &mut MemoryRegion<u8>, seed: u8) {
    for (i, b) in mr.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(7).wrapping_add(seed);
    }
}

#[test]
fn send_with_immediate_data() {
    let Some(dev) = any_device("send_with_immediate_data") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 8, false);
    let mut tx = pd.allocate::<u8>(100).unwrap();
    let rx = pd.allocate::<u8>(100).unwrap();
    fill(&mut tx, 3);
    post_recv(&p.b, &[ReceiveRequest::new(1, &[rx.sge(..).unwrap()])]);
    post(
        &p.a,
        &[SendRequest::send_with_imm(
            2,
            &[tx.sge(..60).unwrap()],
            0xdead_beef,
        )],
    );
    let wcs = poll_n(&cq, 2);
    let r = one(&wcs, 1);
    assert!(r.is_valid(), "{:?}", r.error());
    assert_eq!(r.opcode(), ibv_wc_opcode::IBV_WC_RECV);
    assert_eq!(r.len(), 60);
    assert_eq!(r.imm_data().map(u32::from_be), Some(0xdead_beef));
    assert_ne!((r.wc_flags & ibv_wc_flags::IBV_WC_WITH_IMM).0, 0);
    assert_eq!(r.qp_num, p.b.qp_num());
    let s = one(&wcs, 2);
    assert!(s.is_valid(), "{:?}", s.error());
    assert_eq!(s.opcode(), ibv_wc_opcode::IBV_WC_SEND);
    assert_eq!(&rx[..60], &tx[..60]);
}

#[test]
fn rdma_write_and_write_with_immediate() {
    let Some(dev) = any_device("rdma_write_and_write_with_immediate") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 8, false);
    let mut tx = pd.allocate::<u8>(4096).unwrap();
    let target = pd.allocate::<u8>(8192).unwrap();
    fill(&mut tx, 9);
    let remote = target.remote();
    assert_eq!(remote.len, 8192);
    // A plain write lands at an offset, and only there; no completion on the target.
    post(
        &p.a,
        &[SendRequest::rdma_write(
            1,
            &[tx.sge(..).unwrap()],
            remote.offset(100).unwrap(),
        )],
    );
    let w = one(&poll_n(&cq, 1), 1);
    assert!(w.is_valid(), "{:?}", w.error());
    assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_RDMA_WRITE);
    assert_eq!(&target[100..4196], &tx[..]);
    assert!(
        target[..100].iter().chain(&target[4196..]).all(|&b| b == 0),
        "bytes outside the write changed"
    );
    // With immediate data: the target consumes a receive and sees the immediate.
    let rx = pd.allocate::<u8>(8).unwrap();
    post_recv(&p.b, &[ReceiveRequest::new(5, &[rx.sge(..).unwrap()])]);
    post(
        &p.a,
        &[SendRequest::rdma_write_with_imm(
            2,
            &[tx.sge(..16).unwrap()],
            remote,
            77,
        )],
    );
    let wcs = poll_n(&cq, 2);
    let r = one(&wcs, 5);
    assert!(r.is_valid(), "{:?}", r.error());
    assert_eq!(r.opcode(), ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM);
    assert_eq!(r.imm_data().map(u32::from_be), Some(77));
    assert_eq!(
        r.len(),
        16,
        "the receive completion reports the write's length"
    );
    assert_eq!(&target[..16], &tx[..16]);
}

#[test]
fn rdma_read() {
    let Some(dev) = any_device("rdma_read") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 8, false);
    let mut source = pd.allocate::<u8>(10_000).unwrap();
    fill(&mut source, 42);
    let local = pd.allocate::<u8>(10_000).unwrap();
    post(
        &p.a,
        &[SendRequest::rdma_read(
            1,
            &[local.sge(..).unwrap()],
            source.remote(),
        )],
    );
    let r = one(&poll_n(&cq, 1), 1);
    assert!(r.is_valid(), "{:?}", r.error());
    assert_eq!(r.opcode(), ibv_wc_opcode::IBV_WC_RDMA_READ);
    assert_eq!(r.len(), 10_000);
    assert_eq!(&local[..], &source[..]);
}

#[test]
fn atomics_return_the_original_and_update_the_target() {
    let Some(dev) = any_device("atomics_return_the_original_and_update_the_target") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 8, false);
    let mut target = pd.allocate::<u64>(2).unwrap();
    target[1] = 100;
    let result = pd.allocate::<u64>(1).unwrap();
    let remote = target.remote().offset(8).unwrap();
    // Fetch and add.
    post(
        &p.a,
        &[SendRequest::fetch_and_add(
            1,
            &[result.sge(..).unwrap()],
            remote,
            23,
        )],
    );
    let w = one(&poll_n(&cq, 1), 1);
    assert!(w.is_valid(), "{:?}", w.error());
    assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_FETCH_ADD);
    assert_eq!(result[0], 100);
    assert_eq!(target[1], 123);
    // Compare and swap that matches, then one that does not.
    post(
        &p.a,
        &[SendRequest::compare_and_swap(
            2,
            &[result.sge(..).unwrap()],
            remote,
            123,
            7,
        )],
    );
    let w = one(&poll_n(&cq, 1), 2);
    assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_COMP_SWAP);
    assert_eq!((result[0], target[1]), (123, 7));
    post(
        &p.a,
        &[SendRequest::compare_and_swap(
            3,
            &[result.sge(..).unwrap()],
            remote,
            999,
            1,
        )],
    );
    assert!(one(&poll_n(&cq, 1), 3).is_valid());
    assert_eq!(
        (result[0], target[1]),
        (7, 7),
        "a failed compare leaves the target alone"
    );
    assert_eq!(target[0], 0, "the neighbouring word is untouched");
    // An unaligned target is refused before posting.
    let bad = target.remote().offset(4).unwrap();
    // SAFETY: nothing is posted.
    let e = unsafe {
        p.a.post_send_list(&[SendRequest::fetch_and_add(
            4,
            &[result.sge(..).unwrap()],
            bad,
            1,
        )])
    }
    .unwrap_err();
    assert_eq!(e.index, 0);
    assert!(
        matches!(e.error.uverbs_error(), Some(Error::InvalidArgument { .. })),
        "{}",
        e.error
    );
}

#[test]
fn inline_sends_free_the_buffer_at_once() {
    let Some(dev) = any_device("inline_sends_free_the_buffer_at_once") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 8, false);
    let max = p.a.caps().max_inline_data as usize;
    assert!(max >= 64, "inline capacity {max}");
    let rx = pd.allocate::<u8>(128).unwrap();
    post_recv(&p.b, &[ReceiveRequest::new(1, &[rx.sge(..).unwrap()])]);
    let mut data = *b"inline data is copied at post time, not when the device gets to it";
    let len = data.len().min(max);
    post(&p.a, &[SendRequest::send_inline(2, &data[..len])]);
    data.fill(b'X'); // reusable as soon as the post returned
    let wcs = poll_n(&cq, 2);
    assert!(one(&wcs, 1).is_valid() && one(&wcs, 2).is_valid());
    assert_eq!(
        &rx[..len],
        &b"inline data is copied at post time, not when the device gets to it"[..len]
    );
    // Too much inline data is refused.
    let big = vec![0u8; max + 1];
    // SAFETY: nothing is posted.
    let e = unsafe { p.a.post_send_list(&[SendRequest::send_inline(3, &big)]) }.unwrap_err();
    assert!(
        matches!(e.error.uverbs_error(), Some(Error::InvalidArgument { .. })),
        "{}",
        e.error
    );
}

#[test]
fn scatter_gather_lists() {
    let Some(dev) = any_device("scatter_gather_lists") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 8, false);
    let mut tx = pd.allocate::<u8>(300).unwrap();
    fill(&mut tx, 1);
    let rx = pd.allocate::<u8>(300).unwrap();
    // Three pieces out, gathered from the middle, the start and the end; two pieces in.
    let gather = [
        tx.sge(100..150).unwrap(),
        tx.sge(..10).unwrap(),
        tx.sge(290..).unwrap(),
    ];
    let scatter = [rx.sge(200..240).unwrap(), rx.sge(..100).unwrap()];
    post_recv(&p.b, &[ReceiveRequest::new(1, &scatter)]);
    post(&p.a, &[SendRequest::send(2, &gather)]);
    let r = one(&poll_n(&cq, 2), 1);
    assert_eq!(r.len(), 70);
    let sent: Vec<u8> = tx[100..150]
        .iter()
        .chain(&tx[..10])
        .chain(&tx[290..])
        .copied()
        .collect();
    let got: Vec<u8> = rx[200..240].iter().chain(&rx[..30]).copied().collect();
    assert_eq!(got, sent);
    assert!(rx[30..100].iter().all(|&b| b == 0) && rx[240..].iter().all(|&b| b == 0));
    // More entries than the queue pair takes are refused.
    let many = [tx.sge(..1).unwrap(); 5];
    // SAFETY: nothing is posted.
    let e = unsafe { p.a.post_send_list(&[SendRequest::send(3, &many)]) }.unwrap_err();
    assert!(
        matches!(e.error.uverbs_error(), Some(Error::InvalidArgument { .. })),
        "{}",
        e.error
    );
}

#[test]
fn lists_post_in_order_and_stop_at_the_first_bad_request() {
    let Some(dev) = any_device("lists_post_in_order_and_stop_at_the_first_bad_request") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(256, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 64, false);
    let tx = pd.allocate::<u64>(64).unwrap();
    let rx = pd.allocate::<u64>(64).unwrap();
    let rsges: Vec<_> = (0..64).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
    let recvs: Vec<_> = rsges
        .iter()
        .enumerate()
        .map(|(i, s)| ReceiveRequest::new(i as u64, s))
        .collect();
    post_recv(&p.b, &recvs);
    let sges: Vec<_> = (0..64).map(|i| [tx.sge(i..i + 1).unwrap()]).collect();
    let mut sends: Vec<_> = sges
        .iter()
        .enumerate()
        .map(|(i, s)| SendRequest::send(100 + i as u64, s))
        .collect();
    // The request at index 40 is invalid (too many entries): 40 are posted, the rest are not.
    let too_many = [tx.sge(..1).unwrap(); 5];
    sends[40] = SendRequest::send(999, &too_many);
    // SAFETY: `tx` and `rx` outlive the queue pairs.
    let e = unsafe { p.a.post_send_list(&sends) }.unwrap_err();
    assert_eq!(e.index, 40);
    let wcs = poll_n(&cq, 80);
    let mut sent: Vec<u64> = wcs
        .iter()
        .filter(|w| w.wr_id() >= 100)
        .map(ibv_wc::wr_id)
        .collect();
    let recvd: Vec<u64> = wcs
        .iter()
        .filter(|w| w.wr_id() < 100)
        .map(ibv_wc::wr_id)
        .collect();
    assert_eq!(
        recvd,
        (0..40).collect::<Vec<_>>(),
        "receives complete in order"
    );
    sent.sort();
    assert_eq!(sent, (100..140).collect::<Vec<_>>());
    // Once an RDMA READ posted after them has landed, a request posted past the bad one would have
    // completed, and its message taken the next receive (see `read_fence`).
    read_fence(&p.a, &mut Fence::new(&pd));
    let mut buf = [ibv_wc::default(); 4];
    let extra = cq.poll(&mut buf).unwrap();
    assert!(
        extra.is_empty(),
        "nothing after the bad request was posted: {extra:?}"
    );
}

#[test]
fn selective_signaling_completes_only_the_signaled() {
    let Some(dev) = any_device("selective_signaling_completes_only_the_signaled") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(64, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 32, false);
    let tx = pd.allocate::<u8>(32).unwrap();
    let target = pd.allocate::<u8>(32).unwrap();
    let sges: Vec<_> = (0..20).map(|i| [tx.sge(i..i + 1).unwrap()]).collect();
    let reqs: Vec<_> = sges
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let r = SendRequest::rdma_write(i as u64, s, target.remote().offset(i as u64).unwrap());
            if i % 5 == 4 {
                r
            } else {
                r.unsignaled()
            }
        })
        .collect();
    post(&p.a, &reqs);
    let wcs = poll_n(&cq, 4);
    let ids: Vec<u64> = wcs.iter().map(ibv_wc::wr_id).collect();
    assert_eq!(ids, vec![4, 9, 14, 19]);
    // Every write has completed once an (unsignaled) RDMA READ posted after them has landed: the
    // CQ holds all they will ever complete, and the read completes nothing either.
    read_fence(&p.a, &mut Fence::new(&pd));
    let mut buf = [ibv_wc::default(); 4];
    let extra = cq.poll(&mut buf).unwrap();
    assert!(
        extra.is_empty(),
        "no completion for unsignaled requests: {extra:?}"
    );
    // With sq_sig_all, even "unsignaled" requests complete.
    let q = connect(&pd, &cq, 8, true);
    post(
        &q.a,
        &[SendRequest::rdma_write(50, &sges[0], target.remote()).unsignaled()],
    );
    assert_eq!(poll_n(&cq, 1)[0].wr_id(), 50);
}

#[test]
fn remote_access_without_permission_fails_and_changes_nothing() {
    let Some(dev) = any_device("remote_access_without_permission_fails_and_changes_nothing") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let tx = pd.allocate::<u64>(1).unwrap();
    let mut read_only = pd
        .allocate_with_access::<u64>(
            1,
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_READ,
        )
        .unwrap();
    read_only[0] = 0x1111;
    let cases: [(&str, RemoteMemory); 2] = [
        ("write to a read-only region", read_only.remote()),
        (
            "a wrong rkey",
            RemoteMemory {
                rkey: read_only.remote().rkey ^ 0x5a5a00,
                ..read_only.remote()
            },
        ),
    ];
    for (what, remote) in cases {
        let p = connect(&pd, &cq, 4, false);
        post(
            &p.a,
            &[SendRequest::rdma_write(1, &[tx.sge(..).unwrap()], remote)],
        );
        let w = one(&poll_n(&cq, 1), 1);
        assert_eq!(
            w.error().map(|e| e.0),
            Some(ibv_wc_status::IBV_WC_REM_ACCESS_ERR),
            "{what}"
        );
        assert_eq!(w.qp_num, p.a.qp_num(), "{what}");
        assert_eq!(read_only[0], 0x1111, "{what}: the memory changed");
        // The queue pair went to the error state: everything else is flushed.
        assert_eq!(
            p.a.query().unwrap().qp_state,
            Some(ibv_qp_state::IBV_QPS_ERR),
            "{what}"
        );
    }
}

#[test]
fn moving_to_error_flushes_every_outstanding_request() {
    let Some(dev) = any_device("moving_to_error_flushes_every_outstanding_request") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(64, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    // Sends stall: the peer has a receive for the first message only, and the sender retries RNR
    // forever.
    let p = connect_with(&pd, &cq, 16, false, 7);
    let first = pd.allocate::<u64>(1).unwrap();
    post_recv(&p.b, &[ReceiveRequest::new(200, &[first.sge(..).unwrap()])]);
    let tx = pd.allocate::<u64>(8).unwrap();
    let sges: Vec<_> = (0..8).map(|i| [tx.sge(i..i + 1).unwrap()]).collect();
    let reqs: Vec<_> = sges
        .iter()
        .enumerate()
        .map(|(i, s)| SendRequest::send(i as u64, s))
        .collect();
    post(&p.a, &reqs);
    let rx = pd.allocate::<u64>(4).unwrap();
    let rs: Vec<_> = (0..4).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
    post_recv(
        &p.a,
        &rs.iter()
            .enumerate()
            .map(|(i, s)| ReceiveRequest::new(100 + i as u64, s))
            .collect::<Vec<_>>(),
    );
    // The sends are under way once the first message was received and acknowledged: the other
    // seven are outstanding, with no receive at the peer to take them.
    let mut seen = Vec::new();
    let received = wait_for(&cq, 200, &mut seen, DEADLINE);
    let sent = wait_for(&cq, 0, &mut seen, DEADLINE);
    assert!(
        received.is_valid() && sent.is_valid(),
        "{received:?} {sent:?}"
    );
    assert!(
        seen.is_empty(),
        "only the first message completes: {seen:?}"
    );
    p.a.modify(&QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_ERR),
        ..QpAttr::default()
    })
    .unwrap();
    let wcs = poll_n(&cq, 11);
    let mut ids: Vec<u64> = wcs.iter().map(ibv_wc::wr_id).collect();
    ids.sort();
    assert_eq!(ids, (1..8).chain(100..104).collect::<Vec<_>>());
    for w in &wcs {
        assert_eq!(
            w.error().map(|e| e.0),
            Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR),
            "{w:?}"
        );
        assert_eq!(w.qp_num, p.a.qp_num());
    }
    let _ = &p.b;
}

#[test]
fn four_threads_post_on_one_queue_pair() {
    let Some(dev) = any_device("four_threads_post_on_one_queue_pair") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(4096, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let p = connect(&pd, &cq, 256, false);
    let target = Arc::new(pd.allocate::<u64>(4).unwrap());
    let tx = Arc::new(pd.allocate::<u64>(4).unwrap());
    const PER_THREAD: u64 = 10_000;
    let mut seen = vec![false; 4 * PER_THREAD as usize];
    // Four posters can outrun one poller: completions posted but not yet polled must stay below the
    // CQ's capacity, or the kernel drops the overflow (CQ_ERR), as it would for any application.
    let cq_room = u64::from(cq.capacity()) - 16;
    let posted = std::sync::atomic::AtomicU64::new(0);
    let polled = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        let qp = &p.a;
        let (posted, polled) = (&posted, &polled);
        for t in 0..4u64 {
            let (tx, target) = (Arc::clone(&tx), Arc::clone(&target));
            s.spawn(move || {
                let sge = [tx.sge(t as usize..t as usize + 1).unwrap()];
                let remote = target.remote().offset(8 * t).unwrap();
                let mut i = 0;
                while i < PER_THREAD {
                    use std::sync::atomic::Ordering::SeqCst;
                    if posted.load(SeqCst).saturating_sub(polled.load(SeqCst)) >= cq_room {
                        std::thread::yield_now();
                        continue;
                    }
                    let req = SendRequest::rdma_write(t * PER_THREAD + i, &sge, remote);
                    // SAFETY: the regions outlive the queue pair; the source is never written.
                    match unsafe { qp.post_send_list(&[req]) } {
                        Ok(()) => {
                            i += 1;
                            posted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        Err(e)
                            if matches!(e.error.uverbs_error(), Some(Error::QueueFull { .. })) =>
                        {
                            std::thread::yield_now()
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
        // This thread polls while the four post.
        let mut buf = [ibv_wc::default(); 64];
        let mut done = 0;
        let deadline = Instant::now() + Duration::from_secs(120);
        while done < seen.len() {
            for w in cq.poll(&mut buf).unwrap() {
                assert!(w.is_valid(), "{:?}", w.error());
                let id = w.wr_id() as usize;
                assert!(!seen[id], "wr_id {id} completed twice");
                seen[id] = true;
                done += 1;
                polled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            assert!(
                Instant::now() < deadline,
                "{done} of {} completions",
                seen.len()
            );
        }
    });
    assert!(seen.iter().all(|&s| s));
    let _ = &p.b;
}

#[test]
fn rnr_retry_settings_behave_as_configured() {
    let Some(dev) = any_device("rnr_retry_settings_behave_as_configured") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let tx = pd.allocate::<u64>(1).unwrap();
    let rx = pd.allocate::<u64>(1).unwrap();
    // A finite RNR retry count against a peer with no receive posted: RNR_RETRY_EXC_ERR.
    let p = connect_with(&pd, &cq, 4, false, 1);
    let start = Instant::now();
    post(&p.a, &[SendRequest::send(1, &[tx.sge(..).unwrap()])]);
    let w = one(&poll_n(&cq, 1), 1);
    assert_eq!(
        w.error().map(|e| e.0),
        Some(ibv_wc_status::IBV_WC_RNR_RETRY_EXC_ERR),
        "{w:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(30));
    // rnr_retry 7 retries for ever: the send waits, and completes once a receive is posted.
    let q = connect_with(&pd, &cq, 4, false, 7);
    post(&q.a, &[SendRequest::send(2, &[tx.sge(..).unwrap()])]);
    std::thread::sleep(Duration::from_millis(1500));
    let mut buf = [ibv_wc::default(); 4];
    assert!(
        cq.poll(&mut buf).unwrap().is_empty(),
        "the send gave up although rnr_retry is 7"
    );
    post_recv(&q.b, &[ReceiveRequest::new(3, &[rx.sge(..).unwrap()])]);
    let wcs = poll_n(&cq, 2);
    assert!(
        one(&wcs, 2).is_valid() && one(&wcs, 3).is_valid(),
        "{wcs:?}"
    );
}

/// A region whose own rkey grants no remote access: only windows bound to it do.
fn window_target(pd: &ProtectionDomain<'_>) -> MemoryRegion<u8> {
    pd.allocate_with_access::<u8>(
        4096,
        ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_MW_BIND,
    )
    .unwrap()
}

/// Binds a fresh type 2 window to bytes 1024..2048 of `target` on `qp` (the owner's side), granting
/// remote read and write; returns the window and what the peer targets.
fn bind_window(
    qp: &QueuePair<'_>,
    cq: &CompletionQueue<'_>,
    pd: &ProtectionDomain<'_>,
    target: &MemoryRegion<u8>,
) -> (MemoryWindow, RemoteMemory) {
    let mw = pd.alloc_mw().unwrap();
    let before = mw.rkey();
    let access =
        ibv_access_flags::IBV_ACCESS_REMOTE_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_READ;
    let (req, remote) = SendRequest::bind_mw(70, &mw, target, 1024..2048, access).unwrap();
    post(qp, &[req]);
    let w = one(&poll_n(cq, 1), 70);
    assert!(w.is_valid(), "bind: {:?}", w.error());
    assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_BIND_MW);
    assert_eq!(mw.rkey(), remote.rkey, "the window tracks its key");
    assert_eq!(remote.rkey & !0xff, before & !0xff, "same window index");
    assert_ne!(remote.rkey, before, "a bind gives the window a new key");
    assert_eq!(remote.addr, target.as_ptr() as u64 + 1024);
    assert_eq!(remote.len, 1024);
    (mw, remote)
}

/// Posts an RDMA write of the first `len` bytes of `tx` from `qp` to `remote`; returns the error
/// status of its completion, if any.
fn write_status(
    qp: &QueuePair<'_>,
    cq: &CompletionQueue<'_>,
    tx: &MemoryRegion<u8>,
    len: usize,
    remote: RemoteMemory,
    wr_id: u64,
) -> Option<u32> {
    post(
        qp,
        &[SendRequest::rdma_write(
            wr_id,
            &[tx.sge(..len).unwrap()],
            remote,
        )],
    );
    one(&poll_n(cq, 1), wr_id).error().map(|e| e.0)
}

/// Where the device has no memory windows (`Capability::MemoryWindows`; the mlx5 backend builds no
/// UMR work requests, which binding one takes), allocating one is a typed `Unsupported` error
/// naming the verb. Returns whether that is the case on this device, after checking it.
fn windows_unsupported(ctx: &Context, pd: &ProtectionDomain<'_>) -> bool {
    if ctx.supports(Capability::MemoryWindows) {
        return false;
    }
    let e = pd.alloc_mw().unwrap_err();
    assert!(
        matches!(
            e.uverbs_error(),
            Some(Error::Unsupported {
                verb: Verb::AllocMw
            })
        ),
        "alloc_mw without memory windows: {e}"
    );
    eprintln!("{} offers no memory windows: {e}", ctx.name());
    true
}

const REM_ACCESS_ERR: Option<u32> = Some(ibv_wc_status::IBV_WC_REM_ACCESS_ERR);

#[test]
fn memory_window_grants_remote_access() {
    let Some(dev) = any_device("memory_window_grants_remote_access") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    if windows_unsupported(&ctx, &pd) {
        return;
    }
    let mut target = window_target(&pd);
    let mut tx = pd.allocate::<u8>(1024).unwrap();
    fill(&mut tx, 5);
    // The region's own rkey grants nothing remote.
    let p = connect(&pd, &cq, 8, false);
    assert_eq!(
        write_status(&p.a, &cq, &tx, 8, target.remote(), 1),
        REM_ACCESS_ERR
    );
    // Through a window, bound by the owner's queue pair: the peer writes and reads the window.
    let p = connect(&pd, &cq, 8, false);
    let (_mw, remote) = bind_window(&p.b, &cq, &pd, &target);
    assert_eq!(write_status(&p.a, &cq, &tx, 1024, remote, 2), None);
    assert_eq!(&target[1024..2048], &tx[..]);
    assert!(target[..1024]
        .iter()
        .chain(&target[2048..])
        .all(|&b| b == 0));
    let back = pd.allocate::<u8>(1024).unwrap();
    post(
        &p.a,
        &[SendRequest::rdma_read(3, &[back.sge(..).unwrap()], remote)],
    );
    let r = one(&poll_n(&cq, 1), 3);
    assert!(r.is_valid(), "{:?}", r.error());
    assert_eq!(&back[..], &tx[..]);
    // rxe checks the bounds of the region under a window, not the window's own (rxe_resp.c
    // check_rkey: mr_check_range on the window's MR): on 6.1 and 6.12 a write past the window's end
    // but inside the region succeeds. Assert that, so that a kernel that enforces the bounds shows.
    let past = RemoteMemory {
        addr: remote.addr + remote.len - 8,
        len: 16,
        ..remote
    };
    assert_eq!(write_status(&p.a, &cq, &tx, 16, past, 4), None);
    assert_eq!(&target[2040..2056], &tx[..16], "rxe wrote past the window");
    let before_window = RemoteMemory {
        addr: target.as_ptr() as u64,
        len: 8,
        ..remote
    };
    assert_eq!(write_status(&p.a, &cq, &tx, 8, before_window, 5), None);
    assert_eq!(&target[..8], &tx[..8], "rxe wrote before the window");
    // Past the region's end, the window's key is refused and nothing changes.
    target.fill(0);
    let outside = RemoteMemory {
        addr: target.as_ptr() as u64 + 4096 - 8,
        len: 16,
        ..remote
    };
    assert_eq!(write_status(&p.a, &cq, &tx, 16, outside, 6), REM_ACCESS_ERR);
    assert!(target.iter().all(|&b| b == 0));
}

#[test]
fn local_invalidate_revokes_a_window() {
    let Some(dev) = any_device("local_invalidate_revokes_a_window") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    if windows_unsupported(&ctx, &pd) {
        return;
    }
    let mut target = window_target(&pd);
    let mut tx = pd.allocate::<u8>(1024).unwrap();
    fill(&mut tx, 11);
    let p = connect(&pd, &cq, 8, false);
    let (mw, remote) = bind_window(&p.b, &cq, &pd, &target);
    assert_eq!(write_status(&p.a, &cq, &tx, 8, remote, 1), None);
    assert_eq!(&target[1024..1032], &tx[..8]);
    target.fill(0);
    post(&p.b, &[SendRequest::local_invalidate(2, remote.rkey)]);
    let w = one(&poll_n(&cq, 1), 2);
    assert!(w.is_valid(), "{:?}", w.error());
    assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_LOCAL_INV);
    // The invalidated window can be bound again, under the next key.
    let access = ibv_access_flags::IBV_ACCESS_REMOTE_WRITE;
    let (req, again) = SendRequest::bind_mw(3, &mw, &target, 0..8, access).unwrap();
    post(&p.b, &[req]);
    assert!(one(&poll_n(&cq, 1), 3).is_valid());
    assert_eq!(again.rkey & 0xff, remote.rkey.wrapping_add(1) & 0xff);
    assert_eq!(mw.rkey(), again.rkey);
    // The old key is dead: the write fails and the memory is unchanged.
    assert_eq!(write_status(&p.a, &cq, &tx, 8, remote, 4), REM_ACCESS_ERR);
    assert!(target.iter().all(|&b| b == 0));
}

#[test]
fn send_with_invalidate_revokes_the_receivers_window() {
    let Some(dev) = any_device("send_with_invalidate_revokes_the_receivers_window") else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    if windows_unsupported(&ctx, &pd) {
        return;
    }
    let target = window_target(&pd);
    let mut tx = pd.allocate::<u8>(1024).unwrap();
    fill(&mut tx, 13);
    let p = connect(&pd, &cq, 8, false);
    let (_mw, remote) = bind_window(&p.b, &cq, &pd, &target);
    let rx = pd.allocate::<u8>(64).unwrap();
    post_recv(&p.b, &[ReceiveRequest::new(1, &[rx.sge(..).unwrap()])]);
    post(
        &p.a,
        &[SendRequest::send_with_invalidate(
            2,
            &[tx.sge(..32).unwrap()],
            remote.rkey,
        )],
    );
    let wcs = poll_n(&cq, 2);
    let r = one(&wcs, 1);
    assert!(r.is_valid(), "{:?}", r.error());
    assert_eq!(r.opcode(), ibv_wc_opcode::IBV_WC_RECV);
    assert_ne!((r.wc_flags & ibv_wc_flags::IBV_WC_WITH_INV).0, 0);
    assert_eq!(r.invalidated_rkey(), Some(remote.rkey));
    assert_eq!(r.imm_data(), None, "no immediate data");
    assert_eq!(r.len(), 32);
    assert_eq!(&rx[..32], &tx[..32]);
    let s = one(&wcs, 2);
    assert!(s.is_valid(), "{:?}", s.error());
    assert_eq!(s.opcode(), ibv_wc_opcode::IBV_WC_SEND);
    assert_eq!(write_status(&p.a, &cq, &tx, 8, remote, 3), REM_ACCESS_ERR);
    assert!(target.iter().all(|&b| b == 0));
}

#[test]
fn memory_regions_cannot_be_invalidated_and_bad_binds_are_refused() {
    let Some(dev) = any_device("memory_regions_cannot_be_invalidated_and_bad_binds_are_refused")
    else {
        return;
    };
    let ctx = setup(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    if windows_unsupported(&ctx, &pd) {
        return;
    }
    let target = window_target(&pd);
    // rxe invalidates only type 2 windows: LOCAL_INV of a user memory region's rkey completes in
    // error (6.1: LOC_QP_OP_ERR; 6.12 reports it as WR_FLUSH_ERR) and the queue pair goes to ERR.
    let p = connect(&pd, &cq, 8, false);
    post(
        &p.b,
        &[SendRequest::local_invalidate(1, target.remote().rkey)],
    );
    let w = one(&poll_n(&cq, 1), 1);
    let status = w.error().map(|e| e.0);
    assert!(
        status == Some(ibv_wc_status::IBV_WC_LOC_QP_OP_ERR)
            || status == Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR),
        "{w:?}"
    );
    assert_eq!(
        p.b.query().unwrap().qp_state,
        Some(ibv_qp_state::IBV_QPS_ERR)
    );
    // Binds the kernel would fail are refused before posting.
    let mw = pd.alloc_mw().unwrap();
    let write = ibv_access_flags::IBV_ACCESS_REMOTE_WRITE;
    let no_bind = pd.allocate::<u8>(64).unwrap();
    let read_only = pd
        .allocate_with_access::<u8>(
            64,
            ibv_access_flags::IBV_ACCESS_MW_BIND | ibv_access_flags::IBV_ACCESS_REMOTE_READ,
        )
        .unwrap();
    let other_pd = ctx.alloc_pd().unwrap();
    let elsewhere = window_target(&other_pd);
    let refused = [
        (
            "no MW_BIND",
            SendRequest::bind_mw(2, &mw, &no_bind, .., write),
        ),
        ("empty", SendRequest::bind_mw(2, &mw, &target, 5..5, write)),
        (
            "out of range",
            SendRequest::bind_mw(2, &mw, &target, 4000..4097, write),
        ),
        (
            "write without local write",
            SendRequest::bind_mw(2, &mw, &read_only, .., write),
        ),
        (
            "other PD",
            SendRequest::bind_mw(2, &mw, &elsewhere, .., write),
        ),
        (
            "local access",
            SendRequest::bind_mw(
                2,
                &mw,
                &target,
                ..,
                ibv_access_flags::IBV_ACCESS_LOCAL_WRITE,
            ),
        ),
    ];
    for (what, r) in refused {
        let e = r.err().unwrap_or_else(|| panic!("{what}: not refused"));
        assert!(
            matches!(e.uverbs_error(), Some(Error::InvalidArgument { .. })),
            "{what}: {e}"
        );
    }
    // A window of another protection domain than the queue pair's is refused at post time.
    let foreign = other_pd.alloc_mw().unwrap();
    let (req, _) = SendRequest::bind_mw(3, &foreign, &elsewhere, .., write).unwrap();
    let q = connect(&pd, &cq, 8, false);
    let before = foreign.rkey();
    // SAFETY: nothing is posted.
    let e = unsafe { q.b.post_send_list(&[req]) }.unwrap_err();
    assert_eq!(e.index, 0);
    assert!(
        matches!(e.error.uverbs_error(), Some(Error::InvalidArgument { .. })),
        "{}",
        e.error
    );
    assert_eq!(
        foreign.rkey(),
        before,
        "a refused bind leaves the key alone"
    );
}
