//! Scale: 1 000 RC queue pairs connected in pairs over 64 completion queues, every send and receive
//! queue filled to its limit, every completion accounted for once by `wr_id` with its payload
//! checked byte for byte; a completion queue overrun reported as the `CqErr` it is.
//!
//! Runs on both backends: rxe in the VM, the mlx5 model on the host (`common::any_device`).
//!
//! Queue depth: the CI variant keeps 1 000 queue pairs but sizes their queues so that a run stays
//! well under a minute under TCG (`DEFAULT_DEPTH_*`: 32 asked on rxe, whose rings then hold 63;
//! 64 on the model). `UVERBS_LONG=1` raises the depth of the 1 000 queue pairs ([`LONG_DEPTH`])
//! and, on rxe, fills the pair's queues to the device's own limits (`max_qp_wr`: 2^20 requests on
//! rxe, whose rings then hold 2^21 - 1) instead of the short variant's 1 024 (on the model that
//! test always fills them to the limits).
//! `UVERBS_SCALE_DEPTH=N` sets the depth of the 1 000-pair run by hand.
//!
//! ```sh
//! UVERBS_LONG=1 cargo test --all-features --test scale                          # mlx5 model
//! UVERBS_LONG=1 tests/vm/suite --kernel 6.12 --timeout 3600 -- scale_           # rxe (~15 min)
//! ```

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::behaviour::Rings;
use common::verbs::handshake;
use common::{any_device, long, TestDevice};
use uverbs::{
    ibv_qp_state, ibv_qp_type, ibv_wc, ibv_wc_opcode, ibv_wc_status, AsyncEvent, AsyncEventKind,
    CompletionQueue, Context, ErrorExt, ProtectionDomain, QpAttr, QueuePair, ReceiveRequest,
    SendRequest,
};
use uverbs_drivers::Error;

/// The GID index of `::ffff:127.0.0.1` (RoCE v2) on rxe0 over lo, and on the model.
const GID_INDEX: u32 = 1;
/// Queue pairs in the big run: 500 connected pairs.
const QPS: usize = 1000;
/// Completion queues they share.
const CQS: usize = 64;
/// Bytes of each message slot; messages are 1..=SLOT bytes.
const SLOT: usize = 64;
/// Queue depth asked for in the CI variant on rxe (TCG is slow: see the module docs).
const DEFAULT_DEPTH_RXE: u32 = 32;
/// Queue depth asked for in the CI variant on the mlx5 model.
const DEFAULT_DEPTH_MODEL: u32 = 64;
/// Queue depth filled by the short variant of the one pair at the limits, on a kernel device
/// without `UVERBS_LONG` (rxe's limit, 2^20 requests a queue, is a long run under TCG).
const SHORT_LIMIT: u32 = 1024;
/// Queue depth of the 1 000 queue pairs with `UVERBS_LONG=1`.
const LONG_DEPTH: u32 = 256;

/// The depth the 1 000 queue pairs ask for.
fn depth(dev: &TestDevice) -> u32 {
    if let Some(d) = std::env::var("UVERBS_SCALE_DEPTH")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return d;
    }
    if long() {
        LONG_DEPTH
    } else if dev.model().is_some() {
        // What a run can afford is the test equipment's: the model in this process is fast, a
        // kernel device here is the VM's emulated rxe.
        DEFAULT_DEPTH_MODEL
    } else {
        DEFAULT_DEPTH_RXE
    }
}

/// Polls every CQ of `cqs` round robin until `want` completions arrived, failing after `limit`.
fn drain(cqs: &[&CompletionQueue<'_>], want: usize, limit: Duration) -> Vec<ibv_wc> {
    let mut out = Vec::with_capacity(want);
    let mut buf = [ibv_wc::default(); 64];
    let deadline = Instant::now() + limit;
    while out.len() < want {
        let mut any = false;
        for cq in cqs {
            let got = cq.poll(&mut buf).unwrap();
            any |= !got.is_empty();
            out.extend_from_slice(got);
        }
        if !any {
            assert!(
                Instant::now() < deadline,
                "only {} of {want} completions after {limit:?}",
                out.len()
            );
            std::thread::yield_now();
        }
    }
    out
}

/// Every completion left on `cqs` until none came for `quiet`.
fn leftovers(cqs: &[&CompletionQueue<'_>], quiet: Duration) -> Vec<ibv_wc> {
    let mut out = Vec::new();
    let mut buf = [ibv_wc::default(); 64];
    let mut last = Instant::now();
    while last.elapsed() < quiet {
        for cq in cqs {
            let got = cq.poll(&mut buf).unwrap();
            if !got.is_empty() {
                last = Instant::now();
            }
            out.extend_from_slice(got);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    out
}

/// Every async event until none comes for `quiet`.
fn events(ctx: &Context, quiet: Duration) -> Vec<AsyncEvent> {
    let mut out = Vec::new();
    while let Some(e) = ctx.get_async_event_timeout(quiet).unwrap() {
        out.push(e);
    }
    out
}

/// The work request id of send (`recv == false`) or receive `i` of queue pair `qp`.
fn wr_id(qp: usize, recv: bool, i: usize) -> u64 {
    ((qp as u64) << 24) | (u64::from(recv) << 23) | i as u64
}

/// The inverse of [`wr_id`].
fn split(wr_id: u64) -> (usize, bool, usize) {
    (
        (wr_id >> 24) as usize,
        wr_id & (1 << 23) != 0,
        (wr_id & ((1 << 23) - 1)) as usize,
    )
}

/// The length of message `i` of queue pair `qp` (1..=SLOT bytes).
fn msg_len(qp: usize, i: usize) -> usize {
    1 + (qp * 7 + i * 13) % SLOT
}

/// Byte `b` of message `i` of queue pair `qp`.
fn msg_byte(qp: usize, i: usize, b: usize) -> u8 {
    (qp as u8).wrapping_mul(31)
        ^ (i as u8).wrapping_mul(17)
        ^ (b as u8).wrapping_add(0x5c)
        ^ (i >> 8) as u8
}

/// The byte receive buffers hold before a message lands.
const UNTOUCHED: u8 = 0xee;

/// Where completions of one run go, and what each queue pair posted.
struct Ledger {
    /// For each queue pair: sends posted, receives posted.
    posted: Vec<(usize, usize)>,
    /// Completions seen per `wr_id`.
    seen: HashMap<u64, ibv_wc>,
}

impl Ledger {
    fn record(&mut self, wcs: &[ibv_wc]) {
        for w in wcs {
            let (qp, recv, i) = split(w.wr_id());
            assert!(
                qp < self.posted.len(),
                "a completion for an unknown queue pair: {w:?}"
            );
            let posted = if recv {
                self.posted[qp].1
            } else {
                self.posted[qp].0
            };
            assert!(i < posted, "a completion for a request never posted: {w:?}");
            if let Some(first) = self.seen.insert(w.wr_id(), *w) {
                panic!(
                    "wr_id {:#x} completed twice: {first:?} then {w:?}",
                    w.wr_id()
                );
            }
        }
    }
}

#[test]
fn scale_1000_rc_qps_64_cqs_queues_full_all_traffic_accounted() {
    let Some(dev) = any_device("scale_1000_rc_qps_64_cqs_queues_full_all_traffic_accounted") else {
        return;
    };
    let drops_before = uverbs_drivers::drop_errors();
    let started = Instant::now();
    let ctx = dev.open();
    let attr = ctx.query_device().unwrap();
    assert!(
        attr.max_qp() as usize >= QPS + 2 && attr.max_cq() as usize >= CQS,
        "the device has max_qp {} and max_cq {}",
        attr.max_qp(),
        attr.max_cq()
    );
    let depth = depth(&dev).min(attr.max_qp_wr());
    let pd = ctx.alloc_pd().unwrap();

    // What the queues really hold for this depth (the devices round up), from a probe.
    let caps = {
        let probe_cq = ctx.create_cq(1, 0).unwrap();
        let probe = build(&pd, &probe_cq, depth);
        probe.into_queue_pair().caps()
    };
    let (sends, recvs) = (caps.max_send_wr as usize, caps.max_recv_wr as usize);
    assert!(
        sends >= depth as usize && recvs >= sends,
        "asked for {depth}, got {caps:?}"
    );
    // Each queue pair `k` completes its sends and receives on CQ `k % CQS`; the CQs hold all of it,
    // since nothing polls while the queues are filled.
    let per_cq = QPS.div_ceil(CQS) * (sends + recvs);
    assert!(
        per_cq as u32 <= attr.max_cqe(),
        "{per_cq} completions per CQ, max_cqe {}",
        attr.max_cqe()
    );
    let cqs: Vec<CompletionQueue<'_>> = (0..CQS)
        .map(|i| ctx.create_cq(per_cq as i32, i as isize).unwrap())
        .collect();
    let cq_refs: Vec<&CompletionQueue<'_>> = cqs.iter().collect();

    let prepared: Vec<_> = (0..QPS).map(|k| build(&pd, &cqs[k % CQS], depth)).collect();
    let endpoints: Vec<_> = prepared.iter().map(|p| p.endpoint()).collect();
    let qps: Vec<QueuePair<'_>> = prepared
        .into_iter()
        .enumerate()
        .map(|(k, p)| p.handshake(endpoints[k ^ 1]).unwrap())
        .collect();
    for (k, qp) in qps.iter().enumerate() {
        assert_eq!(qp.caps(), caps, "queue pair {k}");
        assert_eq!(qp.state(), ibv_qp_state::IBV_QPS_RTS);
    }
    let set_up = started.elapsed();

    let mut tx = pd.allocate::<u8>(QPS * sends * SLOT).unwrap();
    for k in 0..QPS {
        for i in 0..sends {
            let at = (k * sends + i) * SLOT;
            for b in 0..msg_len(k, i) {
                tx[at + b] = msg_byte(k, i, b);
            }
        }
    }
    let mut rx = pd.allocate::<u8>(QPS * recvs * SLOT).unwrap();
    rx.fill(UNTOUCHED);

    let mut ledger = Ledger {
        posted: vec![(0, 0); QPS],
        seen: HashMap::with_capacity(QPS * (sends + recvs)),
    };
    // Every receive queue to its limit: one more is a typed QueueFull, and nothing of it is posted.
    for (k, qp) in qps.iter().enumerate() {
        let sges: Vec<[uverbs::Sge; 1]> = (0..=recvs)
            .map(|j| {
                let at = (k * recvs + j.min(recvs - 1)) * SLOT;
                [rx.sge(at..at + SLOT).unwrap()]
            })
            .collect();
        let reqs: Vec<_> = sges
            .iter()
            .enumerate()
            .map(|(j, s)| ReceiveRequest::new(wr_id(k, true, j), s))
            .collect();
        // SAFETY: `rx` outlives the queue pairs and is read only after the completions are polled.
        let e = unsafe { qp.post_receive_list(&reqs) }.unwrap_err();
        assert_eq!(e.index, recvs, "queue pair {k}: receives accepted");
        assert!(
            matches!(e.error.uverbs_error(), Some(Error::QueueFull { .. })),
            "queue pair {k}: {}",
            e.error
        );
        ledger.posted[k].1 = recvs;
    }
    // Every send queue to its limit, with signaled sends.
    for (k, qp) in qps.iter().enumerate() {
        let sges: Vec<[uverbs::Sge; 1]> = (0..=sends)
            .map(|i| {
                let i = i.min(sends - 1);
                let at = (k * sends + i) * SLOT;
                [tx.sge(at..at + msg_len(k, i)).unwrap()]
            })
            .collect();
        let reqs: Vec<_> = sges
            .iter()
            .enumerate()
            .map(|(i, s)| SendRequest::send(wr_id(k, false, i), s))
            .collect();
        // SAFETY: `tx` outlives the queue pairs and is not written again.
        let e = unsafe { qp.post_send_list(&reqs) }.unwrap_err();
        assert_eq!(e.index, sends, "queue pair {k}: sends accepted");
        assert!(
            matches!(e.error.uverbs_error(), Some(Error::QueueFull { .. })),
            "queue pair {k}: {}",
            e.error
        );
        ledger.posted[k].0 = sends;
    }
    let posted = started.elapsed();

    // Every send completes, and so does every receive a peer's send consumed.
    let want = QPS * 2 * sends;
    let wcs = drain(&cq_refs, want, Duration::from_secs(600));
    ledger.record(&wcs);
    let transferred = started.elapsed();

    let mut last_send = vec![None::<usize>; QPS];
    let mut last_recv = vec![None::<usize>; QPS];
    for w in &wcs {
        let (k, recv, i) = split(w.wr_id());
        assert!(w.is_valid(), "{:#x}: {:?}", w.wr_id(), w.error());
        assert_eq!(w.qp_num, qps[k].qp_num(), "{:#x}: qp_num", w.wr_id());
        // Each queue completes in the order it was posted (RC).
        let last = if recv {
            &mut last_recv[k]
        } else {
            &mut last_send[k]
        };
        assert_eq!(last.map_or(0, |l| l + 1), i, "queue pair {k}: out of order");
        *last = Some(i);
        if recv {
            assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_RECV);
            // Receive i of queue pair k holds send i of its peer, byte for byte, and nothing more.
            let peer = k ^ 1;
            let len = msg_len(peer, i);
            assert_eq!(w.len(), len, "{:#x}: length", w.wr_id());
            let at = (k * recvs + i) * SLOT;
            for b in 0..SLOT {
                let expected = if b < len {
                    msg_byte(peer, i, b)
                } else {
                    UNTOUCHED
                };
                assert_eq!(
                    rx[at + b],
                    expected,
                    "queue pair {k}, receive {i}, byte {b} (message of {len})"
                );
            }
        } else {
            assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_SEND);
        }
    }
    for k in 0..QPS {
        assert_eq!(last_send[k], Some(sends - 1), "queue pair {k}: sends");
        assert_eq!(last_recv[k], Some(sends - 1), "queue pair {k}: receives");
    }
    // Receives no send consumed are still posted, and untouched.
    for k in 0..QPS {
        let at = (k * recvs + sends) * SLOT;
        assert!(
            rx[at..(k + 1) * recvs * SLOT]
                .iter()
                .all(|&b| b == UNTOUCHED),
            "queue pair {k}: an unconsumed receive buffer was written"
        );
    }
    assert_eq!(
        events(&ctx, Duration::from_millis(200)),
        vec![],
        "no CQ overran, no queue pair failed"
    );

    // To ERR: exactly the receives left over are flushed, each once; nothing else appears.
    for qp in &qps {
        qp.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_ERR),
            ..QpAttr::default()
        })
        .unwrap();
    }
    let flushed_want = QPS * (recvs - sends);
    let flushed = drain(&cq_refs, flushed_want, Duration::from_secs(120));
    ledger.record(&flushed);
    for w in &flushed {
        let (k, recv, i) = split(w.wr_id());
        assert!(recv && i >= sends, "flushed {:#x}", w.wr_id());
        assert_eq!(
            w.error().map(|e| e.0),
            Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR)
        );
        assert_eq!(w.qp_num, qps[k].qp_num());
    }
    let extra = leftovers(&cq_refs, Duration::from_millis(300));
    assert!(extra.is_empty(), "completions after the flush: {extra:?}");
    let total: usize = ledger.posted.iter().map(|(s, r)| s + r).sum();
    assert_eq!(
        ledger.seen.len(),
        total,
        "every request completed exactly once"
    );

    drop(qps);
    drop(cqs);
    drop((tx, rx));
    assert_eq!(uverbs_drivers::drop_errors(), drops_before);
    eprintln!(
        "scale ({}): {QPS} RC queue pairs on {CQS} CQs, depth {depth} asked, {caps:?}; {} \
         messages, {} completions; set up {:.1?}, posted {:.1?}, transferred {:.1?}, total {:.1?}",
        dev.name(),
        QPS * sends,
        total,
        set_up,
        posted - set_up,
        transferred - posted,
        started.elapsed()
    );
}

fn build<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
    depth: u32,
) -> uverbs::PreparedQueuePair<'a> {
    pd.create_qp(cq, cq, ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(GID_INDEX)
        .set_max_send_wr(depth)
        .set_max_recv_wr(depth)
        .set_rnr_retry(7)
        // An ACK timeout of ~270 ms (4.096 µs × 2^16) and the most retries: with 1 000 queue pairs
        // each a full queue ahead, rxe under TCG does not ACK within the default (4: 65 µs, a
        // jiffy for rxe), and its retries run out (RETRY_EXC_ERR) at the long variant's depth.
        .set_timeout(16)
        .set_retry_count(7)
        .build()
        .unwrap()
}

/// One connected pair with its queues at the device's own limits. The sender asks for the most
/// send requests the device takes, the receiver for the most receive requests (rxe: `max_qp_wr`
/// each; mlx5: `max_qp_wr` counts 64-byte basic blocks and an RC send WQE takes 4 of them here,
/// 256 bytes as rdma-core sizes it, so `max_qp_wr / 4` sends); one more is refused with a typed
/// error. Then each queue is filled until it refuses with `QueueFull` at exactly its capacity,
/// while the other side holds back so that nothing completes meanwhile:
///
/// 1. the receiver fills its receive queue; the sender then consumes it, in chunks that fit the
///    CQs, each chunk's completions awaited before the next;
/// 2. the sender fills its send queue while the receiver has no receive posted (the sends wait
///    out RNR NAKs, `rnr_retry` 7); the receiver then posts receives in chunks, likewise.
///
/// Every message is checked (value and a guard word after it) and every completion accounted for
/// once, in order. rxe on 6.1/6.12 takes 2^20 requests a queue (its rings then hold 2^21 - 1),
/// more than a debug build moves quickly under TCG, and its CQs hold 32 767: on a kernel device
/// the queues filled are of [`SHORT_LIMIT`] requests unless `UVERBS_LONG=1` (the refusals one past
/// the device's limits are checked either way); on the model it always runs at the limits: 8 192
/// sends, 32 768 receives.
#[test]
fn scale_one_pair_filled_to_the_device_limits() {
    let Some(dev) = any_device("scale_one_pair_filled_to_the_device_limits") else {
        return;
    };
    let drops_before = uverbs_drivers::drop_errors();
    let started = Instant::now();
    let ctx = dev.open();
    let attr = ctx.query_device().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let max = attr.max_qp_wr();
    // `max_qp_wr` counts requests (rxe) or the units a send queue is built of (mlx5: 64-byte basic
    // blocks, four to an RC send request).
    let behaviour = dev.behaviour();
    let (send_limit, recv_limit) = (max / behaviour.rc_send_units, max);
    // UVERBS_SCALE_LIMIT=N runs the same with queues of N requests (a debugging aid); so does the
    // short variant on a kernel device, with SHORT_LIMIT.
    let limit = std::env::var("UVERBS_SCALE_LIMIT")
        .ok()
        .and_then(|v| v.parse::<u32>().ok());
    let limit = match limit {
        Some(n) => Some(n),
        // The model in this process fills its queues fast; a kernel device here is the VM's
        // emulated rxe (test equipment, not the backend).
        None if dev.model().is_none() && !long() => {
            eprintln!(
                "scale_one_pair_filled_to_the_device_limits on {}: the short variant, queues of \
                 {SHORT_LIMIT} requests filled (UVERBS_LONG=1 fills queues of max_qp_wr {max})",
                dev.name()
            );
            Some(SHORT_LIMIT)
        }
        None => None,
    };
    // The device's limits, and one past each, at creation: a typed error (always; the limits
    // themselves are created below when they are filled, in the long variant and on the model).
    {
        let cq = ctx.create_cq(1, 0).unwrap();
        let try_build = |send: u32, recv: u32| {
            pd.create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
                .set_gid_index(GID_INDEX)
                .set_max_send_wr(send)
                .set_max_recv_wr(recv)
                .build()
                .map(drop)
        };
        for (send, recv) in [(send_limit + 1, 1), (1, recv_limit + 1)] {
            let e = try_build(send, recv).unwrap_err();
            let typed = match e.uverbs_error() {
                Some(Error::Kernel { errno, .. }) => *errno == nix::errno::Errno::EINVAL,
                // A backend that sizes its rings in the process's memory (mlx5) refuses a send
                // queue too large before the kernel sees it.
                Some(Error::InvalidArgument { .. }) => behaviour.rings == Rings::Process,
                _ => false,
            };
            assert!(typed, "{send} sends, {recv} receives: {e}");
        }
    }
    let (send_limit, recv_limit) = match limit {
        Some(n) => (n.min(send_limit), n.min(recv_limit)),
        None => (send_limit, recv_limit),
    };
    let size = attr.max_cqe().min(2 * recv_limit) as i32;
    let cqs: Vec<CompletionQueue<'_>> = (0..4)
        .map(|i| ctx.create_cq(size, 0x100 + i).unwrap())
        .collect();
    let refs: Vec<&CompletionQueue<'_>> = cqs.iter().collect();
    let chunk = (cqs[0].capacity() as usize).min(4096);
    let build = |scq, rcq, send, recv| {
        pd.create_qp(scq, rcq, ibv_qp_type::IBV_QPT_RC)
            .set_gid_index(GID_INDEX)
            .set_max_send_wr(send)
            .set_max_recv_wr(recv)
            .set_rnr_retry(7)
            .set_min_rnr_timer(1)
            // No ACK timeout (0 is infinite): with a full send queue waiting out RNR NAKs, rxe
            // under TCG otherwise exhausts its transport retries (RETRY_EXC_ERR) before the
            // receiver posts; the RNR retries (7: for ever) alone keep the sends waiting.
            .set_timeout(0)
            .build()
            .unwrap()
    };
    // `a` sends (on CQ 0; its receive CQ 1 stays empty), `b` receives (on CQ 3).
    let (pa, pb) = (
        build(&cqs[0], &cqs[1], send_limit, 1),
        build(&cqs[2], &cqs[3], 1, recv_limit),
    );
    let (a, b) = handshake(pa, pb);
    let sends = a.caps().max_send_wr as usize;
    let recvs = b.caps().max_recv_wr as usize;
    assert!(
        sends >= send_limit as usize && recvs >= recv_limit as usize,
        "{:?} {:?}",
        a.caps(),
        b.caps()
    );
    // Message `n` carries `value(n)`; receive slots are two words, the second a guard.
    let total = recvs + sends;
    let value = |n: usize| ((n as u64) << 8) | 0xa5;
    // (One slot more each: the request past the limit names one.)
    let mut tx = pd.allocate::<u64>(total + 1).unwrap();
    for (n, v) in tx.iter_mut().enumerate() {
        *v = value(n);
    }
    let mut rx = pd.allocate::<u64>(2 * (total + 1)).unwrap();
    rx.fill(u64::MAX);
    let tx_sge = |n: usize| [tx.sge(n..n + 1).unwrap()];
    let rx_sge = |n: usize| [rx.sge(2 * n..2 * n + 1).unwrap()];
    // Posts messages `range` from `a` (or receives for them on `b`), in lists of `chunk`.
    let post_sends = |range: std::ops::Range<usize>| -> Result<(), uverbs::PostFailure> {
        for part in chunks(range, chunk) {
            let sges: Vec<_> = part.clone().map(tx_sge).collect();
            let reqs: Vec<_> = part
                .clone()
                .zip(&sges)
                .map(|(n, s)| SendRequest::send(wr_id(0, false, n), s))
                .collect();
            // SAFETY: `tx` outlives the queue pairs and is not written.
            unsafe { a.post_send_list(&reqs) }.map_err(|mut e| {
                e.index += part.start;
                e
            })?;
        }
        Ok(())
    };
    let post_recvs = |range: std::ops::Range<usize>| -> Result<(), uverbs::PostFailure> {
        for part in chunks(range, chunk) {
            let sges: Vec<_> = part.clone().map(rx_sge).collect();
            let reqs: Vec<_> = part
                .clone()
                .zip(&sges)
                .map(|(n, s)| ReceiveRequest::new(wr_id(1, true, n), s))
                .collect();
            // SAFETY: `rx` outlives the queue pairs and is read after the completions.
            unsafe { b.post_receive_list(&reqs) }.map_err(|mut e| {
                e.index += part.start;
                e
            })?;
        }
        Ok(())
    };
    let full = |r: Result<(), uverbs::PostFailure>, at: usize, what: &str| {
        let Err(e) = r else {
            let early = leftovers(&refs, Duration::from_millis(500));
            panic!(
                "{what}: more than {at} accepted; meanwhile {} completions: {:?}",
                early.len(),
                &early[..early.len().min(4)]
            )
        };
        assert_eq!(e.index, at, "{what}: accepted");
        assert!(
            matches!(e.error.uverbs_error(), Some(Error::QueueFull { .. })),
            "{what}: {}",
            e.error
        );
    };
    let mut ledger = Ledger {
        posted: vec![(total, 0), (0, total)],
        seen: HashMap::with_capacity(2 * total),
    };
    let mut next = [0usize; 2];
    let mut check = |wcs: &[ibv_wc], ledger: &mut Ledger| {
        ledger.record(wcs);
        for w in wcs {
            let (k, recv, n) = split(w.wr_id());
            assert!(w.is_valid(), "{:#x}: {:?}", w.wr_id(), w.error());
            assert_eq!(next[k], n, "queue pair {k}: out of order");
            next[k] += 1;
            if recv {
                assert_eq!(w.len(), 8);
                assert_eq!(w.qp_num, b.qp_num());
                assert_eq!(
                    (rx[2 * n], rx[2 * n + 1]),
                    (value(n), u64::MAX),
                    "message {n}"
                );
            } else {
                assert_eq!(w.qp_num, a.qp_num());
            }
        }
    };

    // 1. The receive queue at its limit, then consumed chunk by chunk.
    full(post_recvs(0..recvs + 1), recvs, "receives");
    for part in chunks(0..recvs, chunk) {
        let n = part.len();
        post_sends(part).unwrap();
        let wcs = drain(&refs, 2 * n, Duration::from_secs(600));
        check(&wcs, &mut ledger);
    }
    // 2. The send queue at its limit (no receive posted: nothing completes), then released
    //    chunk by chunk.
    full(post_sends(recvs..total + 1), total, "sends");
    for part in chunks(recvs..total, chunk) {
        let n = part.len();
        post_recvs(part).unwrap();
        let wcs = drain(&refs, 2 * n, Duration::from_secs(600));
        check(&wcs, &mut ledger);
    }
    assert_eq!(next, [total, total]);
    assert_eq!(
        ledger.seen.len(),
        2 * total,
        "every request completed exactly once"
    );
    assert!(leftovers(&refs, Duration::from_millis(200)).is_empty());
    assert_eq!(events(&ctx, Duration::from_millis(200)), vec![]);
    drop((a, b));
    assert_eq!(uverbs_drivers::drop_errors(), drops_before);
    eprintln!(
        "scale ({}): one pair at the limits (max_qp_wr {max}: {sends} sends, {recvs} receives \
         outstanding at once; CQs of {}): {total} messages, {:.1?}",
        dev.name(),
        cqs[0].capacity(),
        started.elapsed()
    );
}

/// A completion queue too small for what completes on it: 32 queue pairs complete RDMA writes on
/// one CQ that nobody polls. Each completion that does not fit is lost and raises one `CqErr`
/// naming that CQ (no other); the CQ keeps the ones that fit, every write still lands, and once
/// drained the CQ and the queue pairs work on.
///
/// Both backends drop the completion and carry on (rxe: `rxe_cq_post` returns `-EBUSY` after
/// raising the event; the model: `push_cqe`), so the sender's queue pair stays in RTS. mlx5
/// reports one entry less than its ring holds (rdma-core's `ncqe - 1`), so one more completion
/// fits there than [`CompletionQueue::capacity`] says (`cq_slack` in tests/common/behaviour.rs).
#[test]
fn scale_cq_overrun_reports_cq_err_naming_the_cq() {
    let Some(dev) = any_device("scale_cq_overrun_reports_cq_err_naming_the_cq") else {
        return;
    };
    const SMALL: isize = 0x5ca1;
    const PAIRS: usize = 32;
    const WRITES: usize = 4;
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let small = ctx.create_cq(8, SMALL).unwrap();
    let big = ctx.create_cq(1024, 1).unwrap();
    let holds = small.capacity() as usize + dev.behaviour().cq_slack;
    assert!(holds < PAIRS * WRITES);
    let pairs: Vec<_> = (0..PAIRS)
        .map(|_| handshake(rc(&pd, &small, &big, 8), rc(&pd, &big, &big, 8)))
        .collect();
    let mut tx = pd.allocate::<u64>(PAIRS * WRITES).unwrap();
    for (i, v) in tx.iter_mut().enumerate() {
        *v = 0x1000_0000 + i as u64;
    }
    let target = pd.allocate::<u64>(PAIRS * WRITES).unwrap();
    let sges: Vec<[uverbs::Sge; 1]> = (0..PAIRS * WRITES)
        .map(|i| [tx.sge(i..i + 1).unwrap()])
        .collect();
    for (p, (a, _)) in pairs.iter().enumerate() {
        let reqs: Vec<_> = (0..WRITES)
            .map(|w| {
                let i = p * WRITES + w;
                SendRequest::rdma_write(
                    wr_id(p, false, w),
                    &sges[i],
                    target.remote().offset(8 * i as u64).unwrap(),
                )
            })
            .collect();
        // SAFETY: the regions outlive the queue pairs.
        unsafe { a.post_send_list(&reqs) }.unwrap();
    }
    let lost = PAIRS * WRITES - holds;
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < lost {
        assert!(
            Instant::now() < deadline,
            "{} of {lost} CQ_ERR events: {got:?}",
            got.len()
        );
        if let Some(e) = ctx.get_async_event_timeout(Duration::from_secs(1)).unwrap() {
            got.push(e);
        }
    }
    got.extend(events(&ctx, Duration::from_millis(500)));
    assert_eq!(
        got,
        vec![
            AsyncEvent {
                kind: AsyncEventKind::CqErr,
                element: SMALL as u64
            };
            lost
        ],
        "one CqErr per lost completion, naming the small CQ"
    );
    // The CQ kept what fit: successful completions of posted writes, each once, each queue pair's
    // in order.
    let kept = leftovers(&[&small], Duration::from_millis(200));
    assert_eq!(kept.len(), holds);
    let mut ledger = Ledger {
        posted: vec![(WRITES, 0); PAIRS],
        seen: HashMap::new(),
    };
    ledger.record(&kept);
    let mut last = vec![None::<usize>; PAIRS];
    for w in &kept {
        let (p, _, i) = split(w.wr_id());
        assert!(w.is_valid(), "{w:?}");
        assert_eq!(w.opcode(), ibv_wc_opcode::IBV_WC_RDMA_WRITE);
        assert_eq!(w.qp_num, pairs[p].0.qp_num());
        assert!(
            last[p].is_none_or(|l| l < i),
            "queue pair {p}: out of order"
        );
        last[p] = Some(i);
    }
    assert!(leftovers(&[&big], Duration::from_millis(50)).is_empty());
    // Every write has completed (its completion kept, or lost with a CqErr), and landed.
    assert!(target[..] == tx[..], "not every write landed");
    // Drained, the CQ takes completions again and the senders are still in RTS.
    for (p, (a, _)) in pairs.iter().enumerate() {
        assert_eq!(
            a.query().unwrap().qp_state,
            Some(ibv_qp_state::IBV_QPS_RTS),
            "queue pair {p}"
        );
        let i = p * WRITES;
        let req = SendRequest::rdma_write(
            wr_id(p, false, WRITES),
            &sges[i],
            target.remote().offset(8 * i as u64).unwrap(),
        );
        // SAFETY: as above.
        unsafe { a.post_send_list(&[req]) }.unwrap();
        let w = drain(&[&small], 1, Duration::from_secs(30))[0];
        assert!(
            w.is_valid() && w.wr_id() == wr_id(p, false, WRITES),
            "{w:?}"
        );
    }
    assert_eq!(events(&ctx, Duration::from_millis(200)), vec![]);
}

/// A receive CQ too small: the devices differ. rxe's responder treats a full receive CQ as fatal
/// (`RESPST_ERR_CQ_OVERFLOW` moves the receiving queue pair to ERR, so the sends after it fail or
/// are flushed); the model drops the completion, raises one `CqErr` for it and carries on (every
/// message lands, the queue pairs stay in RTS). Both raise `CqErr` naming the receive CQ, and no
/// other event, and keep the first completions, in order, with their payloads.
#[test]
fn scale_receive_cq_overrun() {
    let Some(dev) = any_device("scale_receive_cq_overrun") else {
        return;
    };
    const RCQ: isize = 0x7e;
    const SCQ: isize = 0x5e;
    const N: usize = 12;
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let scq = ctx.create_cq(64, SCQ).unwrap();
    let rcq = ctx.create_cq(4, RCQ).unwrap();
    let holds = rcq.capacity() as usize + dev.behaviour().cq_slack;
    assert!(holds < N);
    let (pa, pb) = (rc(&pd, &scq, &scq, 16), rc(&pd, &scq, &rcq, 16));
    let (a, b) = handshake(pa, pb);
    let mut tx = pd.allocate::<u64>(N).unwrap();
    for (i, v) in tx.iter_mut().enumerate() {
        *v = 0xabc0 + i as u64;
    }
    let rx = pd.allocate::<u64>(N).unwrap();
    let rsges: Vec<_> = (0..N).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
    let recvs: Vec<_> = (0..N)
        .map(|i| ReceiveRequest::new(wr_id(1, true, i), &rsges[i]))
        .collect();
    // SAFETY: the regions outlive the queue pairs.
    unsafe { b.post_receive_list(&recvs) }.unwrap();
    let sges: Vec<_> = (0..N).map(|i| [tx.sge(i..i + 1).unwrap()]).collect();
    let sends: Vec<_> = (0..N)
        .map(|i| SendRequest::send(wr_id(0, false, i), &sges[i]))
        .collect();
    // SAFETY: as above.
    unsafe { a.post_send_list(&sends) }.unwrap();
    // The sender hears of every send (done, or failed/flushed once the receiver broke off).
    let sent = drain(&[&scq], N, Duration::from_secs(60));
    let got = events(&ctx, Duration::from_secs(1));
    let kept = leftovers(&[&rcq], Duration::from_millis(200));
    assert_eq!(kept.len(), holds, "{kept:?}");
    for (i, w) in kept.iter().enumerate() {
        assert!(w.is_valid(), "{w:?}");
        assert_eq!(w.wr_id(), wr_id(1, true, i));
        assert_eq!(rx[i], tx[i]);
    }
    let cq_err = |id: isize| AsyncEvent {
        kind: AsyncEventKind::CqErr,
        element: id as u64,
    };
    assert!(got.contains(&cq_err(RCQ)), "{got:?}");
    assert!(
        got.iter().all(|e| *e == cq_err(RCQ)),
        "only the receive CQ overran: {got:?}"
    );
    if !dev.behaviour().receive_cq_overrun_fails_the_qp {
        assert_eq!(got.len(), N - holds);
        assert!(sent.iter().all(ibv_wc::is_valid), "{sent:?}");
        assert_eq!(rx[..], tx[..], "every message landed");
        assert_eq!(b.query().unwrap().qp_state, Some(ibv_qp_state::IBV_QPS_RTS));
    } else {
        assert_eq!(b.query().unwrap().qp_state, Some(ibv_qp_state::IBV_QPS_ERR));
        // The sends before the overflow succeeded; once one failed, the rest are errors too.
        let ok = sent.iter().take_while(|w| w.is_valid()).count();
        assert!(ok >= holds && ok < N, "{sent:?}");
        assert!(sent[ok..].iter().all(|w| !w.is_valid()), "{sent:?}");
    }
}

/// `range` in consecutive pieces of at most `n`.
fn chunks(range: std::ops::Range<usize>, n: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let end = range.end;
    range.step_by(n).map(move |s| s..(s + n).min(end))
}

fn rc<'a>(
    pd: &'a ProtectionDomain<'_>,
    scq: &'a CompletionQueue<'_>,
    rcq: &'a CompletionQueue<'_>,
    depth: u32,
) -> uverbs::PreparedQueuePair<'a> {
    pd.create_qp(scq, rcq, ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(GID_INDEX)
        .set_max_send_wr(depth)
        .set_max_recv_wr(depth)
        .allow_remote_rw()
        .build()
        .unwrap()
}
