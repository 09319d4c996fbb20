//! Shared receive queues end to end: four RC queue pairs taking their receives from one SRQ, every
//! message byte-exact and attributed to the queue pair that received it; a full SRQ; posting to a
//! queue pair that has no receive queue of its own; the SRQ limit and its async event. Each runs on
//! the ioctl path and on the legacy write path (where the SRQ's events reach the context's default
//! event file instead of the one the ioctl names).

mod common;

use std::time::Duration;

use common::verbs::{
    poll_n, read_fence, wait_for, Fence, RcPair, DEADLINE, FENCE_RECV, FENCE_SEND,
};
use common::{any_device, TestDevice};
use uverbs::{
    ibv_access_flags, ibv_qp_type, ibv_wc, ibv_wc_opcode, AsyncEvent, AsyncEventKind, CommandPath,
    CompletionQueue, Context, ErrorExt, ProtectionDomain, QueuePair, ReceiveRequest, SendRequest,
    SharedReceiveQueue, Verb,
};
use uverbs_drivers::Error;

/// The GID index the RoCE v2 IPv4-mapped loopback address has on rxe0 over lo.
const GID_INDEX: u32 = 1;

/// The device opened on both command paths.
fn contexts(dev: &TestDevice) -> Vec<(&'static str, Context)> {
    vec![
        ("ioctl", dev.open_with(CommandPath::Auto)),
        ("write", dev.open_with(CommandPath::LegacyWrite)),
    ]
}

/// Connects a sender (own receive queue, unused) to a receiver on `srq`; the receiver grants
/// remote reads, for [`read_fence`].
fn pair<'a>(
    pd: &'a ProtectionDomain<'_>,
    scq: &'a CompletionQueue<'_>,
    rcq: &'a CompletionQueue<'_>,
    srq: &SharedReceiveQueue,
    id: isize,
) -> (QueuePair<'a>, QueuePair<'a>) {
    RcPair::new(pd, scq)
        .gid_index(GID_INDEX)
        .context(id)
        .depth(16, 4)
        .rnr_retry(7)
        .min_rnr_timer(1)
        .access(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE)
        .remote_rw()
        .connect_on_srq(srq, rcq)
}

/// What is in `cq` now, without waiting: after a fence, every completion that earlier work will
/// ever produce there.
fn left_in(cq: &CompletionQueue<'_>) -> Vec<ibv_wc> {
    let mut buf = [ibv_wc::default(); 16];
    cq.poll(&mut buf).unwrap().to_vec()
}

/// Shows that `srq` holds no receive and that `s` and its receiver have nothing more to complete,
/// without sleeping: posts one receive without scatter entries on `srq`, sends a zero-length
/// message from `s`, and asserts that the first receive completion on `rcq` is the fence's and
/// that nothing else completed on either CQ.
///
/// The SRQ's receives are taken in the order they were posted, so a receive left in it (one a
/// refused post put there all the same) takes the fence's message, completes first, and the
/// assertion fails; `s`'s send queue and its receiver complete in order, so whatever their earlier
/// requests complete is on the CQs before the fence's completions.
fn srq_fence(
    path: &str,
    s: &QueuePair<'_>,
    srq: &SharedReceiveQueue,
    scq: &CompletionQueue<'_>,
    rcq: &CompletionQueue<'_>,
) {
    // SAFETY: no scatter entries: the device writes no memory for it.
    unsafe { srq.post_receive_list(&[ReceiveRequest::new(FENCE_RECV, &[])]) }.unwrap();
    send(s, &[SendRequest::send(FENCE_SEND, &[])]);
    let mut seen = Vec::new();
    let sent = wait_for(scq, FENCE_SEND, &mut seen, DEADLINE);
    assert!(sent.is_valid(), "{path}: the fence's send: {sent:?}");
    seen.extend(left_in(scq));
    assert!(
        seen.is_empty(),
        "{path}: unexpected send completions {seen:?}"
    );
    let got = poll_n(rcq, 1);
    assert_eq!(
        got.iter().map(ibv_wc::wr_id).collect::<Vec<_>>(),
        [FENCE_RECV],
        "{path}: the fence's message took another receive, or something else completed: {got:?}"
    );
    assert!(got[0].is_valid() && got[0].len() == 0, "{path}: {got:?}");
    let extra = left_in(rcq);
    assert!(extra.is_empty(), "{path}: unexpected completions {extra:?}");
}

/// Every async event until none comes for `quiet`.
fn events(ctx: &Context, quiet: Duration) -> Vec<AsyncEvent> {
    let mut out = Vec::new();
    while let Some(e) = ctx.get_async_event_timeout(quiet).unwrap() {
        out.push(e);
    }
    out
}

fn send(qp: &QueuePair<'_>, reqs: &[SendRequest<'_>]) {
    // SAFETY: the regions in these tests outlive their queue pairs and are not written while sent.
    unsafe { qp.post_send_list(reqs) }.unwrap();
}

fn message(sender: usize, j: usize) -> Vec<u8> {
    (0..40 + 3 * j)
        .map(|k| (k as u8).wrapping_mul(13) ^ (sender as u8 * 64 + j as u8))
        .collect()
}

#[test]
fn four_rc_queue_pairs_share_one_srq() {
    let Some(dev) = any_device("four_rc_queue_pairs_share_one_srq") else {
        return;
    };
    const QPS: usize = 4;
    const PER_QP: usize = 8;
    const SLOT: usize = 128;
    for (path, ctx) in contexts(&dev) {
        let pd = ctx.alloc_pd().unwrap();
        let scq = ctx.create_cq(64, 1).unwrap();
        let rcq = ctx.create_cq(64, 2).unwrap();
        let srq = pd.create_srq(QPS as u32 * PER_QP as u32, 1).unwrap();
        let caps = srq.caps();
        assert!(caps.max_wr >= 32 && caps.max_sge >= 1, "{path}: {caps:?}");
        assert_ne!(srq.srq_num(), 0, "{path}");
        let pairs: Vec<_> = (0..QPS)
            .map(|i| pair(&pd, &scq, &rcq, &srq, 16 * i as isize))
            .collect();
        for (_, r) in &pairs {
            assert_eq!(
                r.caps().max_recv_wr,
                0,
                "{path}: no receive queue of its own"
            );
        }
        // One pool of receive buffers, posted once; every receiver draws from it.
        let rx = pd.allocate::<u8>(QPS * PER_QP * SLOT).unwrap();
        let sges: Vec<_> = (0..QPS * PER_QP)
            .map(|i| [rx.sge(i * SLOT..(i + 1) * SLOT).unwrap()])
            .collect();
        let recvs: Vec<_> = sges
            .iter()
            .enumerate()
            .map(|(i, s)| ReceiveRequest::new(i as u64, s))
            .collect();
        // SAFETY: `rx` outlives the queue pairs and is read only after the completions.
        unsafe { srq.post_receive_list(&recvs) }.unwrap();
        // The queue pairs keep the SRQ alive: the receives posted stay usable without this handle.
        drop(srq);
        let mut tx = pd.allocate::<u8>(QPS * PER_QP * SLOT).unwrap();
        for i in 0..QPS {
            for j in 0..PER_QP {
                let m = message(i, j);
                let at = (i * PER_QP + j) * SLOT;
                tx[at..at + m.len()].copy_from_slice(&m);
            }
        }
        let tsges: Vec<_> = (0..QPS * PER_QP)
            .map(|k| {
                let (i, j) = (k / PER_QP, k % PER_QP);
                [tx.sge(k * SLOT..k * SLOT + message(i, j).len()).unwrap()]
            })
            .collect();
        // Interleave the senders so that the receivers take the pool's buffers in mixed order.
        for j in 0..PER_QP {
            for (i, (s, _)) in pairs.iter().enumerate() {
                let k = i * PER_QP + j;
                let imm = ((i as u32) << 16) | j as u32;
                send(
                    s,
                    &[SendRequest::send_with_imm(1000 + k as u64, &tsges[k], imm)],
                );
            }
        }
        let sent = poll_n(&scq, QPS * PER_QP);
        assert!(sent.iter().all(|w| w.is_valid()), "{path}: {sent:?}");
        let got = poll_n(&rcq, QPS * PER_QP);
        let receivers: Vec<u32> = pairs.iter().map(|(_, r)| r.qp_num()).collect();
        let mut seen = [[false; PER_QP]; QPS];
        let mut buffers = [false; QPS * PER_QP];
        for w in &got {
            assert!(w.is_valid(), "{path}: {:?}", w.error());
            assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_RECV, "{path}");
            let q = receivers
                .iter()
                .position(|&n| n == w.qp_num)
                .unwrap_or_else(|| panic!("{path}: qp_num {:#x} is no receiver", w.qp_num));
            let imm = u32::from_be(w.imm_data().expect("immediate data"));
            let (i, j) = ((imm >> 16) as usize, (imm & 0xffff) as usize);
            assert_eq!(
                i, q,
                "{path}: sender {i}'s message completed on receiver {q}"
            );
            assert!(!seen[i][j], "{path}: message {i}/{j} arrived twice");
            seen[i][j] = true;
            let b = w.wr_id() as usize;
            assert!(!buffers[b], "{path}: buffer {b} used twice");
            buffers[b] = true;
            let m = message(i, j);
            assert_eq!(w.len(), m.len(), "{path}: message {i}/{j}");
            assert_eq!(
                &rx[b * SLOT..b * SLOT + m.len()],
                &m[..],
                "{path}: message {i}/{j}"
            );
        }
        assert!(seen.iter().flatten().all(|&s| s), "{path}");
        assert!(
            buffers.iter().all(|&b| b),
            "{path}: every pooled buffer used once"
        );
        // Nothing more completes: once an RDMA READ from each sender has landed, every receiver
        // has completed all it ever will for the messages before it (see `read_fence`).
        let mut fence = Fence::new(&pd);
        for (s, _) in &pairs {
            read_fence(s, &mut fence);
        }
        let (extra_recv, extra_send) = (left_in(&rcq), left_in(&scq));
        assert!(
            extra_recv.is_empty() && extra_send.is_empty(),
            "{path}: unexpected completions {extra_recv:?} {extra_send:?}"
        );
    }
}

#[test]
fn a_full_srq_is_queue_full_and_posts_nothing_more() {
    let Some(dev) = any_device("a_full_srq_is_queue_full_and_posts_nothing_more") else {
        return;
    };
    for (path, ctx) in contexts(&dev) {
        let pd = ctx.alloc_pd().unwrap();
        let scq = ctx.create_cq(64, 1).unwrap();
        let rcq = ctx.create_cq(64, 2).unwrap();
        let srq = pd.create_srq(4, 2).unwrap();
        let cap = srq.caps().max_wr as usize;
        assert!((4..=16).contains(&cap), "{path}: capacity {cap}");
        let rx = pd.allocate::<u64>(cap + 1).unwrap();
        let sges: Vec<_> = (0..=cap).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
        let recvs: Vec<_> = sges
            .iter()
            .enumerate()
            .map(|(i, s)| ReceiveRequest::new(i as u64, s))
            .collect();
        // SAFETY: `rx` outlives the queue pairs; nothing past the failure is posted.
        let e = unsafe { srq.post_receive_list(&recvs) }.unwrap_err();
        assert_eq!(e.index, cap, "{path}: {e}");
        assert!(
            matches!(
                e.error.uverbs_error(),
                Some(Error::QueueFull { verb: Verb::PostSrqRecv, capacity }) if *capacity as usize == cap
            ),
            "{path}: {}",
            e.error
        );
        // SAFETY: as above.
        let e = unsafe { srq.post_receive_list(&recvs[cap..]) }.unwrap_err();
        assert_eq!(e.index, 0, "{path}");
        // Exactly `cap` receives were posted: `cap` messages complete, and then the ring is empty
        // again and takes a whole new round.
        let (s, _r) = pair(&pd, &scq, &rcq, &srq, 0x10);
        let tx = pd.allocate::<u64>(1).unwrap();
        let tsge = [tx.sge(..).unwrap()];
        for k in 0..cap {
            send(&s, &[SendRequest::send(100 + k as u64, &tsge)]);
        }
        let got = poll_n(&rcq, cap);
        let ids: Vec<u64> = got.iter().map(ibv_wc::wr_id).collect();
        assert_eq!(ids, (0..cap as u64).collect::<Vec<_>>(), "{path}");
        poll_n(&scq, cap);
        // The receive refused for a full ring is not in it: the next message takes the fence's.
        srq_fence(path, &s, &srq, &scq, &rcq);
        // SAFETY: as above.
        unsafe { srq.post_receive_list(&recvs[..cap]) }.unwrap();
        // SAFETY: as above.
        let e = unsafe { srq.post_receive_list(&recvs[cap..]) }.unwrap_err();
        assert_eq!(e.index, 0, "{path}");
        for k in 0..cap {
            send(&s, &[SendRequest::send(200 + k as u64, &tsge)]);
        }
        let ids: Vec<u64> = poll_n(&rcq, cap).iter().map(ibv_wc::wr_id).collect();
        assert_eq!(ids, (0..cap as u64).collect::<Vec<_>>(), "{path}");
        poll_n(&scq, cap);
        // More scatter entries than the SRQ takes: a typed error, nothing posted.
        let many = vec![rx.sge(..1).unwrap(); srq.caps().max_sge as usize + 1];
        // SAFETY: nothing is posted.
        let e = unsafe { srq.post_receive_list(&[ReceiveRequest::new(97, &many)]) }.unwrap_err();
        assert!(
            matches!(
                e.error.uverbs_error(),
                Some(Error::InvalidArgument {
                    verb: Verb::PostSrqRecv,
                    ..
                })
            ),
            "{path}: {}",
            e.error
        );
        srq_fence(path, &s, &srq, &scq, &rcq);
    }
}

#[test]
fn a_queue_pair_on_an_srq_refuses_receives_of_its_own() {
    let Some(dev) = any_device("a_queue_pair_on_an_srq_refuses_receives_of_its_own") else {
        return;
    };
    for (path, ctx) in contexts(&dev) {
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(16, 1).unwrap();
        let srq = pd.create_srq(8, 1).unwrap();
        let (_s, mut r) = pair(&pd, &cq, &cq, &srq, 0x20);
        let mut rx = pd.allocate::<u64>(2).unwrap();
        let sge = [rx.sge(..).unwrap()];
        // SAFETY: nothing is posted.
        let e = unsafe { r.post_receive_list(&[ReceiveRequest::new(1, &sge)]) }.unwrap_err();
        assert_eq!(e.index, 0);
        assert!(
            matches!(
                e.error.uverbs_error(),
                Some(Error::InvalidArgument {
                    verb: Verb::PostRecv,
                    ..
                })
            ),
            "{path}: {}",
            e.error
        );
        // SAFETY: nothing is posted.
        let e = unsafe { r.post_receive(&mut rx, .., 2) }.unwrap_err();
        assert!(
            matches!(e.uverbs_error(), Some(Error::InvalidArgument { .. })),
            "{path}: {e}"
        );
        // An SRQ of another context is refused before the kernel sees its handle.
        let other = dev.open();
        let other_pd = other.alloc_pd().unwrap();
        let foreign = other_pd.create_srq(4, 1).unwrap();
        let e = pd
            .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
            .set_srq(&foreign)
            .build()
            .unwrap_err();
        assert!(
            matches!(
                e.uverbs_error(),
                Some(Error::InvalidArgument {
                    verb: Verb::CreateQp,
                    ..
                })
            ),
            "{path}: {e}"
        );
        // So is an empty SRQ.
        let e = pd.create_srq(0, 1).unwrap_err();
        assert!(
            matches!(
                e.uverbs_error(),
                Some(Error::InvalidArgument {
                    verb: Verb::CreateSrq,
                    ..
                })
            ),
            "{path}: {e}"
        );
    }
}

#[test]
fn the_srq_limit_fires_one_event_with_the_srq_id() {
    let Some(dev) = any_device("the_srq_limit_fires_one_event_with_the_srq_id") else {
        return;
    };
    const SRQ_ID: isize = 0x5a51;
    for (path, ctx) in contexts(&dev) {
        let pd = ctx.alloc_pd().unwrap();
        let scq = ctx.create_cq(16, 1).unwrap();
        let rcq = ctx.create_cq(16, 2).unwrap();
        let srq = pd.create_srq_with_id(8, 1, SRQ_ID).unwrap();
        assert_eq!(srq.id(), SRQ_ID);
        assert_eq!(srq.limit().unwrap(), 0, "{path}: not armed at creation");
        let cap = srq.caps().max_wr;
        let e = srq.arm(cap + 1).unwrap_err();
        assert!(
            matches!(
                e.uverbs_error(),
                Some(Error::InvalidArgument {
                    verb: Verb::ModifySrq,
                    ..
                })
            ),
            "{path}: {e}"
        );
        let (s, r) = pair(&pd, &scq, &rcq, &srq, 0x30);
        let rx = pd.allocate::<u64>(6).unwrap();
        let sges: Vec<_> = (0..6).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
        let recvs: Vec<_> = sges
            .iter()
            .enumerate()
            .map(|(i, s)| ReceiveRequest::new(i as u64, s))
            .collect();
        // SAFETY: `rx` outlives the queue pairs.
        unsafe { srq.post_receive_list(&recvs) }.unwrap();
        srq.arm(4).unwrap();
        assert_eq!(srq.limit().unwrap(), 4, "{path}");
        let tx = pd.allocate::<u64>(1).unwrap();
        let tsge = [tx.sge(..).unwrap()];
        // Six posted, limit four: two messages leave four, which is not below the limit.
        for k in 0..2 {
            send(&s, &[SendRequest::send(100 + k, &tsge)]);
            poll_n(&rcq, 1);
        }
        assert_eq!(
            events(&ctx, Duration::from_millis(500)),
            vec![],
            "{path}: no event while 4 remain"
        );
        assert_eq!(srq.limit().unwrap(), 4, "{path}: still armed");
        // The third leaves three: below the limit, one event, and the limit is disarmed.
        send(&s, &[SendRequest::send(102, &tsge)]);
        let w = poll_n(&rcq, 1)[0];
        assert_eq!(w.qp_num, r.qp_num(), "{path}");
        let e = ctx
            .get_async_event_timeout(Duration::from_secs(30))
            .unwrap()
            .unwrap_or_else(|| panic!("{path}: no SRQ limit event"));
        assert_eq!(
            e,
            AsyncEvent {
                kind: AsyncEventKind::SrqLimitReached,
                element: SRQ_ID as u64
            },
            "{path}"
        );
        assert_eq!(
            srq.limit().unwrap(),
            0,
            "{path}: the event disarms the limit"
        );
        // Disarmed: the next receive fires nothing.
        send(&s, &[SendRequest::send(103, &tsge)]);
        poll_n(&rcq, 1);
        poll_n(&scq, 4);
        assert_eq!(events(&ctx, Duration::from_millis(500)), vec![], "{path}");
        // Armed again above what remains (2): the next message fires it again.
        srq.arm(3).unwrap();
        send(&s, &[SendRequest::send(104, &tsge)]);
        poll_n(&rcq, 1);
        let again = events(&ctx, Duration::from_millis(500));
        assert_eq!(
            again,
            vec![AsyncEvent {
                kind: AsyncEventKind::SrqLimitReached,
                element: SRQ_ID as u64
            }],
            "{path}"
        );
    }
}
