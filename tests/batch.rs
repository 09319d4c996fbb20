//! Batches (`QueuePair::start_send`, `start_recv`) and the lending poll
//! (`CompletionQueue::start_poll`), on whatever device the tests have: every operation of a batch
//! arrives with one doorbell, a refused or dropped batch posts nothing, and each completion's
//! fields read through the lending poll are the ones `poll` reports.

mod common;

use std::time::Instant;

use common::any_device;
use common::verbs::{RcPair, DEADLINE};
use uverbs::{
    ibv_access_flags, ibv_wc_opcode, ibv_wc_status, CompletionQueue, ErrorExt, QueuePair,
    RemoteMemory, Sge,
};
use uverbs_drivers::Error;

/// What the lending poll read of one completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    wr_id: u64,
    status: u32,
    opcode: u32,
    len: usize,
    imm: Option<u32>,
    qp_num: u32,
}

/// Polls with `start_poll` until `n` completions came (panics after [`DEADLINE`]).
fn lend_n(cq: &CompletionQueue<'_>, n: usize) -> Vec<Seen> {
    let mut out = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    while out.len() < n {
        if let Some(mut cs) = cq.start_poll().unwrap() {
            let mut lent = 0;
            while let Some(c) = cs.next() {
                assert_eq!(c.is_success(), c.ok().is_ok());
                assert_eq!(
                    c.error().map(|e| e.0),
                    (!c.is_success()).then_some(c.status())
                );
                // The same completion as 0.9.2's `ibv_wc` has it.
                let wc = c.to_wc();
                assert_eq!(
                    (wc.wr_id(), wc.status(), wc.len()),
                    (c.wr_id(), c.status(), c.len())
                );
                lent += 1;
                out.push(Seen {
                    wr_id: c.wr_id(),
                    status: c.status(),
                    opcode: c.opcode(),
                    len: c.len(),
                    imm: c.imm_data(),
                    qp_num: c.qp_num(),
                });
            }
            assert!(lent > 0, "start_poll lent nothing");
            assert!(cs.next().is_none());
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {n} completions: {out:?}",
            out.len()
        );
    }
    out
}

/// No completion arrives for a while (what a post that posted nothing leaves).
fn nothing_arrives(cq: &CompletionQueue<'_>) {
    let until = Instant::now() + std::time::Duration::from_millis(200);
    while Instant::now() < until {
        if let Some(mut cs) = cq.start_poll().unwrap() {
            panic!("a completion arrived: {:?}", cs.next());
        }
    }
}

fn by_id(seen: &[Seen], wr_id: u64) -> Seen {
    let hits: Vec<_> = seen.iter().filter(|s| s.wr_id == wr_id).collect();
    assert_eq!(hits.len(), 1, "wr_id {wr_id} in {seen:?}");
    *hits[0]
}

fn connect<'a>(
    pd: &'a uverbs::ProtectionDomain<'a>,
    cq: &'a CompletionQueue<'a>,
    depth: u32,
) -> (QueuePair<'a>, QueuePair<'a>) {
    RcPair::new(pd, cq)
        .depth(depth, depth)
        .access(
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_READ
                | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC,
        )
        .tune(|b| {
            b.set_max_inline_data(64).set_sq_sig_all(false);
        })
        .connect()
}

#[test]
fn a_batch_posts_every_operation_and_the_lending_poll_reads_each() {
    let Some(dev) = any_device("a_batch_posts_every_operation_and_the_lending_poll_reads_each")
    else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(64, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (mut a, mut b) = connect(&pd, &cq, 16);

    let mut src = pd.allocate::<u8>(256).unwrap();
    for (i, x) in src.iter_mut().enumerate() {
        *x = i as u8 ^ 0x5a;
    }
    let recv = pd.allocate::<u8>(256).unwrap();
    let mut target = pd.allocate::<u64>(4).unwrap();
    target[0] = 40;
    target[1] = 7;
    let mut window = pd.allocate::<u8>(64).unwrap();
    window[..16].copy_from_slice(b"read me, please!");
    let fetched = pd.allocate::<u64>(2).unwrap();
    let read_into = pd.allocate::<u8>(16).unwrap();

    // The receiver's three receives, one batch.
    let r: Vec<Sge> = (0..3)
        .map(|i| recv.sge(i * 64..(i + 1) * 64).unwrap())
        .collect();
    let mut rb = b.start_recv();
    for (i, s) in r.iter().enumerate() {
        rb.recv(100 + i as u64, std::slice::from_ref(s));
    }
    assert_eq!(rb.len(), 3);
    // SAFETY: `recv` outlives the receives and is read only after their completions.
    unsafe { rb.submit() }.unwrap();

    let plain = [src.sge(0..32).unwrap()];
    let imm = [src.sge(32..64).unwrap()];
    let faa = [fetched.sge(0..1).unwrap()];
    let cas = [fetched.sge(1..2).unwrap()];
    let rd = [read_into.sge(..).unwrap()];
    let t = target.remote();
    let word = |i: u64| t.offset(i * 8).unwrap();
    let w: RemoteMemory = window.remote();
    let mut batch = a.start_send();
    batch.send(1, &plain); // unsignaled: its receive completes, it does not
    batch.signaled().send_imm(2, &imm, 0xdead_beef);
    batch.signaled().send_inline(3, b"inline!");
    batch
        .signaled()
        .write_inline(4, b"written inline", w.offset(32).unwrap());
    batch.signaled().fenced().read(5, &rd, w);
    batch.signaled().atomic_fetch_add(6, &faa, word(0), 2);
    batch.signaled().atomic_cmp_swap(7, &cas, word(1), 7, 99);
    assert_eq!(batch.len(), 7);
    // SAFETY: every region outlives the requests and is read only after their completions.
    unsafe { batch.submit() }.unwrap();

    // 6 signaled sends, 3 receives.
    let seen = lend_n(&cq, 9);
    assert_eq!(seen.len(), 9, "{seen:?}");
    for s in &seen {
        assert_eq!(s.status, ibv_wc_status::IBV_WC_SUCCESS, "{s:?}");
    }
    assert!(
        seen.iter().all(|s| s.wr_id != 1),
        "an unsignaled request completed"
    );
    let (an, bn) = (a.qp_num(), b.qp_num());
    for (id, op, qpn) in [
        (2, ibv_wc_opcode::IBV_WC_SEND, an),
        (3, ibv_wc_opcode::IBV_WC_SEND, an),
        (4, ibv_wc_opcode::IBV_WC_RDMA_WRITE, an),
        (5, ibv_wc_opcode::IBV_WC_RDMA_READ, an),
        (6, ibv_wc_opcode::IBV_WC_FETCH_ADD, an),
        (7, ibv_wc_opcode::IBV_WC_COMP_SWAP, an),
        (100, ibv_wc_opcode::IBV_WC_RECV, bn),
        (101, ibv_wc_opcode::IBV_WC_RECV, bn),
        (102, ibv_wc_opcode::IBV_WC_RECV, bn),
    ] {
        let s = by_id(&seen, id);
        assert_eq!((s.opcode, s.qp_num), (op, qpn), "{s:?}");
    }
    // The receives in order: the plain SEND, the SEND with immediate (host order), the inline.
    assert_eq!((by_id(&seen, 100).len, by_id(&seen, 100).imm), (32, None));
    assert_eq!(by_id(&seen, 101).imm, Some(0xdead_beef));
    assert_eq!(by_id(&seen, 102).len, 7);
    assert_eq!(by_id(&seen, 5).len, 16);
    assert_eq!(&recv[..32], &src[..32]);
    assert_eq!(&recv[64..96], &src[32..64]);
    assert_eq!(&recv[128..135], b"inline!");
    assert_eq!(&window[32..46], b"written inline");
    assert_eq!(&read_into[..], b"read me, please!");
    assert_eq!((fetched[0], target[0]), (40, 42));
    assert_eq!((fetched[1], target[1]), (7, 99));
    assert!(cq.start_poll().unwrap().is_none(), "an extra completion");
}

#[test]
fn a_refused_batch_posts_nothing() {
    let Some(dev) = any_device("a_refused_batch_posts_nothing") else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(64, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (mut a, b) = connect(&pd, &cq, 4);
    let src = pd.allocate::<u8>(64).unwrap();
    let recv = pd.allocate::<u8>(64).unwrap();
    let s = [src.sge(..8).unwrap()];
    let r = [recv.sge(..).unwrap()];
    // SAFETY: `recv` outlives the receive.
    unsafe { b.post_receive_list(&[uverbs::ReceiveRequest::new(9, &r)]) }.unwrap();

    // The third request carries more inline data than the queue pair takes.
    let big = [0u8; 4096];
    let mut batch = a.start_send();
    batch.signaled().send(1, &s);
    batch.signaled().send(2, &s);
    batch.signaled().send_inline(3, &big);
    // SAFETY: `src` outlives the requests.
    let e = unsafe { batch.submit() }.unwrap_err();
    assert_eq!(e.index, 2, "{e}");
    assert!(
        matches!(e.error.uverbs_error(), Some(Error::InvalidArgument { .. })),
        "{e}"
    );
    nothing_arrives(&cq);

    // One more request than the queue holds (what the device granted for 4): refused as a whole,
    // naming the first that found no room.
    let cap = a.caps().max_send_wr as usize;
    let mut batch = a.start_send();
    for i in 0..=cap {
        batch.signaled().send(10 + i as u64, &s);
    }
    // SAFETY: as above.
    let e = unsafe { batch.submit() }.unwrap_err();
    assert!(
        matches!(e.error.uverbs_error(), Some(Error::QueueFull { .. })),
        "{e}"
    );
    assert_eq!(e.index, cap, "{e}");
    nothing_arrives(&cq);

    // A batch dropped without submit posts nothing either.
    let mut batch = a.start_send();
    batch.signaled().send(20, &s);
    drop(batch);
    nothing_arrives(&cq);

    // A batch forgotten (its destructor never runs) posts nothing either: its requests were
    // written past what the device was told of, and the next post writes over them.
    let mut batch = a.start_send();
    batch.signaled().send(21, &s);
    batch.signaled().send(22, &s);
    std::mem::forget(batch);
    nothing_arrives(&cq);
    // Not even by a post with nothing to post (F42): the doorbell it rings covers no request.
    // SAFETY: no request.
    unsafe { a.post_send_list(&[]) }.unwrap();
    nothing_arrives(&cq);

    // The queue is as it was: the next batch's request is the one the receive gets.
    let mut batch = a.start_send();
    batch.signaled().send_inline(30, b"after");
    // SAFETY: inline data needs nothing.
    unsafe { batch.submit() }.unwrap();
    let seen = lend_n(&cq, 2);
    assert_eq!(by_id(&seen, 30).opcode, ibv_wc_opcode::IBV_WC_SEND);
    assert_eq!(by_id(&seen, 9).len, 5);
    assert_eq!(&recv[..5], b"after");
    assert!(cq.start_poll().unwrap().is_none(), "{seen:?}");
}

#[test]
fn the_lending_poll_takes_many_completions_in_turns() {
    let Some(dev) = any_device("the_lending_poll_takes_many_completions_in_turns") else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(128, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (mut a, _b) = connect(&pd, &cq, 64);
    assert!(cq.start_poll().unwrap().is_none());
    let dst = pd.allocate::<u8>(64 * 8).unwrap();
    let remote = dst.remote();
    let data: Vec<[u8; 8]> = (0..40u64).map(|i| (i * 3).to_le_bytes()).collect();
    let mut batch = a.start_send();
    for (i, d) in data.iter().enumerate() {
        batch
            .signaled()
            .write_inline(i as u64, d, remote.offset(i as u64 * 8).unwrap());
    }
    // SAFETY: inline data needs nothing; `dst` outlives the writes.
    unsafe { batch.submit() }.unwrap();
    let seen = lend_n(&cq, 40);
    // In order, each once.
    assert_eq!(
        seen.iter().map(|s| s.wr_id).collect::<Vec<_>>(),
        (0..40).collect::<Vec<_>>()
    );
    for (i, d) in data.iter().enumerate() {
        assert_eq!(&dst[i * 8..i * 8 + 8], d);
    }

    // An iteration that ended stays ended: what completes after its `None` is the next
    // `start_poll`'s.
    let late = pd.allocate::<u8>(8).unwrap();
    let post = |qp: &mut QueuePair<'_>, wr_id: u64, what: &'static [u8; 1], at: u64| {
        let mut batch = qp.start_send();
        batch
            .signaled()
            .write_inline(wr_id, what, late.remote().offset(at).unwrap());
        // SAFETY: inline data needs nothing; `late` outlives the write.
        unsafe { batch.submit() }.unwrap();
    };
    post(&mut a, 100, b"a", 0);
    let deadline = Instant::now() + DEADLINE;
    let mut cs = loop {
        if let Some(cs) = cq.start_poll().unwrap() {
            break cs;
        }
        assert!(Instant::now() < deadline, "no completion");
    };
    assert_eq!(cs.next().map(|c| c.wr_id()), Some(100));
    assert!(cs.next().is_none());
    post(&mut a, 101, b"b", 1);
    assert_eq!(late.wait_for(1, |b| b == b'b', Some(DEADLINE)), Some(b'b'));
    let mut waited = 0;
    while waited < 100 {
        assert!(
            cs.next().is_none(),
            "an ended iteration lent a later completion"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        waited += 1;
    }
    drop(cs);
    assert_eq!(lend_n(&cq, 1)[0].wr_id, 101);
}

#[test]
fn completions_not_seen_go_back_to_the_queue() {
    let Some(dev) = any_device("completions_not_seen_go_back_to_the_queue") else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(64, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (mut a, _b) = connect(&pd, &cq, 16);
    let dst = pd.allocate::<u8>(64).unwrap();
    let mut batch = a.start_send();
    for i in 0..6u64 {
        batch
            .signaled()
            .write_inline(i, b"x", dst.remote().offset(i).unwrap());
    }
    // SAFETY: inline data needs nothing; `dst` outlives the writes.
    unsafe { batch.submit() }.unwrap();
    // Wait until all six are there (each write lands after the one before), taking none.
    assert_eq!(dst.wait_for(5, |b| b == b'x', Some(DEADLINE)), Some(b'x'));
    let mut got = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    while got.is_empty() {
        if let Some(mut cs) = cq.start_poll().unwrap() {
            got.push(cs.next().unwrap().wr_id());
            // Dropped with the others unseen: they stay for the next poll.
        }
        assert!(Instant::now() < deadline, "no completion");
    }
    // The next lending poll, then 0.9.2's poll, hand out the rest, in order, each once.
    let mut wc = [uverbs::ibv_wc::default(); 2];
    while got.len() < 6 {
        if got.len() == 2 {
            let n = cq.poll(&mut wc).unwrap().len();
            got.extend(wc[..n].iter().map(|w| w.wr_id()));
        } else if let Some(mut cs) = cq.start_poll().unwrap() {
            got.push(cs.next().unwrap().wr_id());
        }
        assert!(Instant::now() < deadline, "lost completions: {got:?}");
    }
    assert_eq!(got, (0..6).collect::<Vec<_>>());
    assert!(cq.start_poll().unwrap().is_none());
}

/// F45: `start_poll` takes the first completion off the ring before `next` lends it; a lending
/// poll dropped before its first `next` put it back for the next poll of any kind (it was lost).
#[test]
fn a_lending_poll_dropped_unread_loses_nothing() {
    let Some(dev) = any_device("a_lending_poll_dropped_unread_loses_nothing") else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(64, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (mut a, _b) = connect(&pd, &cq, 16);
    let dst = pd.allocate::<u8>(64).unwrap();
    let mut batch = a.start_send();
    for i in 0..3u64 {
        batch
            .signaled()
            .write_inline(i, b"y", dst.remote().offset(i).unwrap());
    }
    // SAFETY: inline data needs nothing; `dst` outlives the writes.
    unsafe { batch.submit() }.unwrap();
    assert_eq!(dst.wait_for(2, |b| b == b'y', Some(DEADLINE)), Some(b'y'));
    let deadline = Instant::now() + DEADLINE;
    // Started and dropped twice, nothing read: the first completion goes back each time.
    let mut dropped = 0;
    while dropped < 2 {
        if let Some(cs) = cq.start_poll().unwrap() {
            drop(cs);
            dropped += 1;
        }
        assert!(Instant::now() < deadline, "no completion");
    }
    // 0.9.2's poll gets it first, then the lending poll the rest, each once, in order.
    let mut wc = [uverbs::ibv_wc::default(); 1];
    let mut got = Vec::new();
    while got.is_empty() {
        got.extend(cq.poll(&mut wc).unwrap().iter().map(|w| w.wr_id()));
        assert!(Instant::now() < deadline, "the dropped completion was lost");
    }
    while got.len() < 3 {
        if let Some(mut cs) = cq.start_poll().unwrap() {
            while let Some(c) = cs.next() {
                got.push(c.wr_id());
            }
        }
        assert!(Instant::now() < deadline, "lost completions: {got:?}");
    }
    assert_eq!(got, [0, 1, 2]);
    assert!(cq.start_poll().unwrap().is_none());
}

#[test]
fn the_lending_poll_reads_completion_timestamps() {
    let Some(dev) = any_device("the_lending_poll_reads_completion_timestamps") else {
        return;
    };
    let ctx = dev.open();
    if !ctx.supports(uverbs::Capability::CompletionTimestamps) {
        eprintln!("SKIPPED: {} has no completion timestamps", dev.name());
        return;
    }
    let cq = ctx
        .create_cq_ex(&uverbs::CqAttr {
            min_entries: 16,
            timestamps: true,
            ..Default::default()
        })
        .unwrap();
    let plain = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (mut a, _b) = connect(&pd, &cq, 16);
    let dst = pd.allocate::<u8>(8).unwrap();
    let mut batch = a.start_send();
    batch.signaled().write_inline(1, b"a", dst.remote());
    batch.signaled().write_inline(2, b"b", dst.remote());
    // SAFETY: inline data needs nothing.
    unsafe { batch.submit() }.unwrap();
    let mut stamps = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    while stamps.len() < 2 {
        if let Some(mut cs) = cq.start_poll().unwrap() {
            while let Some(c) = cs.next() {
                assert!(c.is_success());
                stamps.push(c.timestamp().expect("a timestamped queue's completion"));
            }
        }
        assert!(Instant::now() < deadline);
    }
    assert!(stamps[0] > 0 && stamps[1] >= stamps[0], "{stamps:?}");
    // A queue without timestamps gives none.
    let (mut c, _d) = connect(&pd, &plain, 4);
    let mut batch = c.start_send();
    batch.signaled().write_inline(3, b"c", dst.remote());
    // SAFETY: as above.
    unsafe { batch.submit() }.unwrap();
    let mut seen = None;
    while seen.is_none() {
        if let Some(mut cs) = plain.start_poll().unwrap() {
            seen = cs.next().map(|c| c.timestamp());
        }
        assert!(Instant::now() < deadline);
    }
    assert_eq!(seen, Some(None));
}

#[test]
fn a_refused_receive_batch_posts_nothing() {
    let Some(dev) = any_device("a_refused_receive_batch_posts_nothing") else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(64, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (_a, mut b) = connect(&pd, &cq, 4);
    let cap = b.caps().max_recv_wr as usize;
    let recv = pd.allocate::<u8>(64).unwrap();
    let r = [recv.sge(..).unwrap()];
    // One more than the queue holds: refused whole.
    let mut rb = b.start_recv();
    for i in 0..=cap {
        rb.recv(i as u64, &r);
    }
    // SAFETY: `recv` outlives the receives.
    let e = unsafe { rb.submit() }.unwrap_err();
    assert_eq!(e.index, cap, "{e}");
    assert!(
        matches!(e.error.uverbs_error(), Some(Error::QueueFull { .. })),
        "{e}"
    );
    // Nothing went in: a full queue's worth still fits.
    let mut rb = b.start_recv();
    for i in 0..cap {
        rb.recv(i as u64, &r);
    }
    // SAFETY: as above.
    unsafe { rb.submit() }.unwrap();
}
