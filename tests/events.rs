//! Async events and completion events as rxe delivers them: a CQ overrun (`CqErr`), a drained send
//! queue (`SqDrained`), port down and up (`PortErr`, `PortActive`), what a queue pair on an SRQ
//! reports when it fails, and what rxe does *not* report (a remote access error, the first packet
//! on a queue pair in RTR); a completion channel armed for solicited completions only.
//!
//! The tests take a lock: the port test takes the loopback interface down, which would break the
//! others if they ran at the same time.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::verbs::{handshake, poll_n, RcPair};
use common::{any_device, TestDevice};
use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_qp_type, ibv_wc, ibv_wc_status, AddressVector, AsyncEvent,
    AsyncEventKind, CommandPath, CompletionQueue, Context, PreparedQueuePair, ProtectionDomain,
    QpAttr, QueuePair, QueuePairEndpoint, ReceiveRequest, RemoteMemory, SendRequest,
};

/// The GID index the RoCE v2 IPv4-mapped loopback address has on rxe0 over lo.
const GID_INDEX: u32 = 1;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The device opened on both command paths.
fn contexts(dev: &TestDevice) -> Vec<(&'static str, Context)> {
    vec![
        ("ioctl", dev.open_with(CommandPath::Auto)),
        ("write", dev.open_with(CommandPath::LegacyWrite)),
    ]
}

/// Queue pairs `id` and `id + 1`, sending on `scq` and receiving on `rcq`.
fn rc<'a>(
    pd: &'a ProtectionDomain<'_>,
    scq: &'a CompletionQueue<'_>,
    rcq: &'a CompletionQueue<'_>,
    id: isize,
) -> RcPair<'a> {
    RcPair::new(pd, scq)
        .cqs(scq, rcq)
        .gid_index(GID_INDEX)
        .context(id)
        .depth(16, 16)
        .access(
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
        )
}

fn prepare<'a>(
    pd: &'a ProtectionDomain<'_>,
    scq: &'a CompletionQueue<'_>,
    rcq: &'a CompletionQueue<'_>,
    id: isize,
) -> PreparedQueuePair<'a> {
    rc(pd, scq, rcq, id).prepare(false)
}

fn connect<'a>(
    pd: &'a ProtectionDomain<'_>,
    scq: &'a CompletionQueue<'_>,
    rcq: &'a CompletionQueue<'_>,
    id: isize,
) -> (QueuePair<'a>, QueuePair<'a>) {
    rc(pd, scq, rcq, id).connect()
}

fn post(qp: &QueuePair<'_>, reqs: &[SendRequest<'_>]) {
    // SAFETY: the regions in these tests outlive their queue pairs and are not written while sent.
    unsafe { qp.post_send_list(reqs) }.unwrap();
}

/// Every async event until none comes for `quiet`.
fn events(ctx: &Context, quiet: Duration) -> Vec<AsyncEvent> {
    let mut out = Vec::new();
    while let Some(e) = ctx.get_async_event_timeout(quiet).unwrap() {
        out.push(e);
    }
    out
}

fn event(kind: AsyncEventKind, element: u64) -> AsyncEvent {
    AsyncEvent { kind, element }
}

#[test]
fn nothing_pending_means_no_event() {
    let Some(dev) = any_device("nothing_pending_means_no_event") else {
        return;
    };
    let _serial = serial();
    let ctx = dev.open();
    assert_eq!(ctx.try_get_async_event().unwrap(), None);
    let start = Instant::now();
    assert_eq!(
        ctx.get_async_event_timeout(Duration::from_millis(100))
            .unwrap(),
        None
    );
    assert!(start.elapsed() >= Duration::from_millis(100));
}

#[test]
fn a_cq_overrun_reports_cq_err_with_the_cq_id() {
    let Some(dev) = any_device("a_cq_overrun_reports_cq_err_with_the_cq_id") else {
        return;
    };
    let _serial = serial();
    const CQ_ID: isize = 0x0c0e;
    for (path, ctx) in contexts(&dev) {
        let pd = ctx.alloc_pd().unwrap();
        let small = ctx.create_cq(1, CQ_ID).unwrap();
        let other = ctx.create_cq(16, 1).unwrap();
        let capacity = small.capacity() as usize;
        assert!((1..=3).contains(&capacity), "{path}: capacity {capacity}");
        // What the device holds before it overruns: mlx5 reports one entry less than its ring
        // holds (rdma-core's `ncqe - 1`), so the ring of a CQ of 1 holds 2 completions there.
        let capacity = capacity + dev.behaviour().cq_slack;
        // RDMA writes complete on the sender's CQ only; nothing polls it while they complete.
        let (a, _b) = connect(&pd, &small, &other, 0x10);
        let tx = pd.allocate::<u64>(1).unwrap();
        let target = pd.allocate::<u64>(1).unwrap();
        let sge = [tx.sge(..).unwrap()];
        let n = capacity + 3;
        let reqs: Vec<_> = (0..n)
            .map(|i| SendRequest::rdma_write(i as u64, &sge, target.remote()))
            .collect();
        post(&a, &reqs);
        let got = events(&ctx, Duration::from_secs(2));
        assert_eq!(
            got,
            vec![event(AsyncEventKind::CqErr, CQ_ID as u64); n - capacity],
            "{path}: one CQ_ERR per lost completion"
        );
        // The first `capacity` completions are there; the others were dropped.
        let mut buf = [ibv_wc::default(); 16];
        let kept: Vec<u64> = small
            .poll(&mut buf)
            .unwrap()
            .iter()
            .map(ibv_wc::wr_id)
            .collect();
        assert_eq!(kept, (0..capacity as u64).collect::<Vec<_>>(), "{path}");
    }
}

#[test]
fn draining_the_send_queue_reports_sq_drained_with_the_qp_id() {
    let Some(dev) = any_device("draining_the_send_queue_reports_sq_drained_with_the_qp_id") else {
        return;
    };
    let _serial = serial();
    for (path, ctx) in contexts(&dev) {
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(16, 1).unwrap();
        let sqd = QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_SQD),
            ..QpAttr::default()
        };
        // An idle queue pair drains at once.
        let (a, _b) = connect(&pd, &cq, &cq, 0x20);
        a.modify(&sqd).unwrap();
        assert_eq!(
            events(&ctx, Duration::from_millis(500)),
            vec![event(AsyncEventKind::SqDrained, 0x20)],
            "{path}: idle"
        );
        // A busy one too. (6.1 runs the requester in the doorbell's system call, so the 1 MiB write
        // is under way and drains first; 6.12 runs it later, on a workqueue, and may find the QP in
        // SQD with the write not started: it reports the queue drained, and leaves the write until
        // the next doorbell after the QP is back in RTS.)
        let (c, _d) = connect(&pd, &cq, &cq, 0x30);
        let mut src = pd.allocate::<u8>(1 << 20).unwrap();
        for (i, b) in src.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(7) ^ (i >> 8) as u8;
        }
        let dst = pd.allocate::<u8>((1 << 20) + 8).unwrap();
        post(
            &c,
            &[SendRequest::rdma_write(
                7,
                &[src.sge(..).unwrap()],
                dst.remote(),
            )],
        );
        c.modify(&sqd).unwrap();
        let e = ctx
            .get_async_event_timeout(Duration::from_secs(30))
            .unwrap();
        assert_eq!(e, Some(event(AsyncEventKind::SqDrained, 0x30)), "{path}");
        c.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTS),
            ..QpAttr::default()
        })
        .unwrap();
        post(
            &c,
            &[SendRequest::rdma_write(
                8,
                &[src.sge(..8).unwrap()],
                dst.remote().offset(1 << 20).unwrap(),
            )],
        );
        let mut done: Vec<u64> = poll_n(&cq, 2)
            .iter()
            .inspect(|w| assert!(w.is_valid(), "{path}: {w:?}"))
            .map(ibv_wc::wr_id)
            .collect();
        done.sort();
        assert_eq!(done, vec![7, 8], "{path}");
        assert_eq!(&dst[..1 << 20], &src[..], "{path}");
        assert_eq!(&dst[1 << 20..], &src[..8], "{path}");
        assert_eq!(events(&ctx, Duration::from_millis(300)), vec![], "{path}");
    }
}

/// A remote access violation fails the requester's completion (`IBV_WC_REM_ACCESS_ERR`) and moves
/// the target queue pair to the error state. rxe raises no event for it, nor `CommEst` when the first
/// packet reaches a queue pair in RTR; ConnectX hardware (the mlx5 model) raises `QpAccessErr` on the
/// target and `CommEst` on the receiver. Both paths (and on rxe both kernels).
#[test]
fn remote_access_errors_and_first_packets_raise_the_devices_events() {
    let Some(dev) = any_device("remote_access_errors_and_first_packets_raise_the_devices_events")
    else {
        return;
    };
    let hardware = dev.behaviour().raises_qp_access_err_and_comm_est;
    let _serial = serial();
    for (path, ctx) in contexts(&dev) {
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(16, 1).unwrap();
        let (a, b) = connect(&pd, &cq, &cq, 0x40);
        let tx = pd.allocate::<u64>(1).unwrap();
        let target = pd.allocate::<u64>(1).unwrap();
        let bad = RemoteMemory {
            rkey: target.remote().rkey ^ 0x5a00,
            ..target.remote()
        };
        post(
            &a,
            &[SendRequest::rdma_write(1, &[tx.sge(..).unwrap()], bad)],
        );
        let w = poll_n(&cq, 1)[0];
        assert_eq!(
            w.error().map(|e| e.0),
            Some(ibv_wc_status::IBV_WC_REM_ACCESS_ERR),
            "{path}"
        );
        assert_eq!(
            b.query().unwrap().qp_state,
            Some(ibv_qp_state::IBV_QPS_ERR),
            "{path}: the target failed"
        );
        let expected = if hardware {
            vec![event(AsyncEventKind::QpAccessErr, 0x41)]
        } else {
            vec![]
        };
        assert_eq!(
            events(&ctx, Duration::from_secs(1)),
            expected,
            "{path}: QP_ACCESS_ERR on the target from hardware only, no QP_FATAL"
        );

        // The receiver only reaches RTR: the message is received, no COMM_EST.
        let s = prepare(&pd, &cq, &cq, 0x50);
        let r = prepare(&pd, &cq, &cq, 0x51).into_queue_pair();
        let gid = ctx
            .gid_table()
            .iter()
            .find(|g| g.gid_index == GID_INDEX && g.port_num == 1)
            .unwrap()
            .gid;
        r.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
            pkey_index: Some(0),
            port_num: Some(1),
            qp_access_flags: Some(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE),
            ..QpAttr::default()
        })
        .unwrap();
        r.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTR),
            dest_qp_num: Some(s.endpoint().num),
            ah_attr: Some(AddressVector {
                dgid: Some(gid),
                sgid_index: GID_INDEX as u8,
                hop_limit: 255,
                port_num: 1,
                ..AddressVector::default()
            }),
            path_mtu: Some(3),
            rq_psn: Some(0),
            max_dest_rd_atomic: Some(1),
            min_rnr_timer: Some(12),
            ..QpAttr::default()
        })
        .unwrap();
        let remote = QueuePairEndpoint {
            num: r.qp_num(),
            lid: 0,
            gid: Some(gid),
        };
        let s = s.handshake(remote).unwrap();
        let rx = pd.allocate::<u64>(1).unwrap();
        // SAFETY: `rx` outlives the queue pairs.
        unsafe { r.post_receive_list(&[ReceiveRequest::new(5, &[rx.sge(..).unwrap()])]) }.unwrap();
        post(&s, &[SendRequest::send(6, &[tx.sge(..).unwrap()])]);
        let wcs = poll_n(&cq, 2);
        assert!(wcs.iter().all(|w| w.is_valid()), "{path}: {wcs:?}");
        let expected = if hardware {
            vec![event(AsyncEventKind::CommEst, 0x51)]
        } else {
            vec![]
        };
        assert_eq!(
            events(&ctx, Duration::from_secs(1)),
            expected,
            "{path}: COMM_EST from hardware only"
        );
    }
}

/// A queue pair on a shared receive queue that goes to the error state: 6.12's rxe reports
/// `QpLastWqeReached` (it will take no more of the SRQ's requests); 6.1's reports nothing.
#[test]
fn an_srq_queue_pair_in_error_reports_last_wqe_reached_on_6_12() {
    let Some(dev) = any_device("an_srq_queue_pair_in_error_reports_last_wqe_reached_on_6_12")
    else {
        return;
    };
    let _serial = serial();
    // The hardware raises it (IB spec o10-37); rxe learnt to on 6.12.
    let expected = dev.behaviour().raises_last_wqe_reached.map(|raised| {
        if raised {
            vec![event(AsyncEventKind::QpLastWqeReached, 0x61)]
        } else {
            vec![]
        }
    });
    for (path, ctx) in contexts(&dev) {
        let pd = ctx.alloc_pd().unwrap();
        let cq = ctx.create_cq(16, 1).unwrap();
        let srq = pd.create_srq(4, 1).unwrap();
        let s = prepare(&pd, &cq, &cq, 0x60);
        let r = pd
            .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
            .set_gid_index(GID_INDEX)
            .set_context(0x61)
            .set_srq(&srq)
            .build()
            .unwrap();
        let (_s, r) = handshake(s, r);
        r.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_ERR),
            ..QpAttr::default()
        })
        .unwrap();
        let got = events(&ctx, Duration::from_secs(1));
        match &expected {
            Some(e) => assert_eq!(&got, e, "{path}: kernel {:?}", common::behaviour::kernel()),
            None => assert!(
                got.is_empty() || got == vec![event(AsyncEventKind::QpLastWqeReached, 0x61)],
                "{path}: {got:?}"
            ),
        }
    }
}

/// Brings the loopback interface back up however the test ends.
struct LoUp;

impl Drop for LoUp {
    fn drop(&mut self) {
        let _ = common::run("ip", &["link", "set", "lo", "up"]);
    }
}

/// The port follows its network interface: taking `lo` down and up (in the VM, where rxe0 sits on
/// `lo`) reports `PortErr` then `PortActive`, each with port number 1, to every context.
#[test]
fn port_down_and_up_report_port_err_and_port_active() {
    let Some(dev) = any_device("port_down_and_up_report_port_err_and_port_active") else {
        return;
    };
    let _serial = serial();
    if let Some(model) = dev.model() {
        let contexts = contexts(&dev);
        model.set_port_active(false);
        expect_port_event(&contexts, AsyncEventKind::PortErr);
        model.set_port_active(true);
        expect_port_event(&contexts, AsyncEventKind::PortActive);
        return check_port_events(&contexts);
    }
    // Taking a real device's interface down would take the machine's network with it: the VM's
    // rxe on lo only.
    if !common::in_vm(
        "port_down_and_up_report_port_err_and_port_active",
        "taking the device's network interface down and up",
    ) {
        return;
    }
    let name = dev.name();
    let parent =
        std::fs::read_to_string(format!("/sys/class/infiniband/{name}/parent")).unwrap_or_default();
    assert_eq!(parent.trim(), "lo", "the VM's {name} sits on lo");
    let contexts = contexts(&dev);
    let _restore = LoUp;
    for (state, kind) in [
        ("down", AsyncEventKind::PortErr),
        ("up", AsyncEventKind::PortActive),
    ] {
        let out = common::run("ip", &["link", "set", "lo", state]);
        assert!(
            out.status.success(),
            "ip link set lo {state}: {}",
            common::stderr(&out)
        );
        expect_port_event(&contexts, kind);
    }
    check_port_events(&contexts);
}

/// Waits (up to 30 s) for the next async event of every context, which must be `kind` for port 1.
fn expect_port_event(contexts: &[(&str, Context)], kind: AsyncEventKind) {
    for (path, ctx) in contexts {
        assert_eq!(
            ctx.get_async_event_timeout(Duration::from_secs(30))
                .unwrap(),
            Some(event(kind, 1)),
            "{path}: the next event"
        );
    }
}

/// After the port's two events: no other event comes (within half a second), and the port is
/// usable again.
fn check_port_events(contexts: &[(&str, Context)]) {
    for (path, ctx) in contexts {
        assert_eq!(
            events(ctx, Duration::from_millis(500)),
            vec![],
            "{path}: events after PortActive"
        );
        assert!(AsyncEventKind::PortErr.is_port_event());
    }
    // The port is usable again.
    let ctx = &contexts[0].1;
    let deadline = Instant::now() + Duration::from_secs(30);
    while ctx.query_port(1).unwrap().state() != uverbs::PortState::Active {
        assert!(Instant::now() < deadline, "port 1 did not come back");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Armed for solicited completions only, a completion channel stays quiet for an unsolicited
/// message (which still completes) and wakes for a solicited one (`SendRequest::solicited`).
#[test]
fn solicited_only_arming_wakes_for_solicited_messages_only() {
    let Some(dev) = any_device("solicited_only_arming_wakes_for_solicited_messages_only") else {
        return;
    };
    let _serial = serial();
    const RCQ_ID: isize = 0x5011;
    for (path, ctx) in contexts(&dev) {
        let channel = ctx.create_comp_channel().unwrap();
        let pd = ctx.alloc_pd().unwrap();
        let scq = ctx.create_cq(16, 1).unwrap();
        let rcq = ctx.create_cq_with_channel(16, RCQ_ID, &channel, 0).unwrap();
        let (a, b) = connect(&pd, &scq, &rcq, 0x70);
        let tx = pd.allocate::<u64>(1).unwrap();
        let rx = pd.allocate::<u64>(4).unwrap();
        let rs: Vec<_> = (0..4).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
        let recvs: Vec<_> = rs
            .iter()
            .enumerate()
            .map(|(i, s)| ReceiveRequest::new(i as u64, s))
            .collect();
        // SAFETY: `rx` outlives the queue pairs.
        unsafe { b.post_receive_list(&recvs) }.unwrap();
        let sge = [tx.sge(..).unwrap()];

        rcq.req_notify(true).unwrap();
        post(&a, &[SendRequest::send(10, &sge)]);
        let w = poll_n(&rcq, 1)[0];
        assert!(w.is_valid() && w.wr_id() == 0, "{path}: {w:?}");
        assert_eq!(
            channel
                .get_event_timeout(Duration::from_millis(500))
                .unwrap(),
            None,
            "{path}: an unsolicited message does not wake a solicited-only arm"
        );
        post(&a, &[SendRequest::send(11, &sge).solicited()]);
        assert_eq!(
            channel.get_event_timeout(Duration::from_secs(30)).unwrap(),
            Some(RCQ_ID),
            "{path}: a solicited one does"
        );
        assert_eq!(poll_n(&rcq, 1)[0].wr_id(), 1, "{path}");
        // Fired once: the arm is used up, so a second solicited message wakes nobody...
        post(&a, &[SendRequest::send(12, &sge).solicited()]);
        poll_n(&rcq, 1);
        assert_eq!(channel.try_get_event().unwrap(), None, "{path}");
        // ...while a plain arm wakes for an unsolicited one.
        rcq.req_notify(false).unwrap();
        post(&a, &[SendRequest::send(13, &sge)]);
        assert_eq!(
            channel.get_event_timeout(Duration::from_secs(30)).unwrap(),
            Some(RCQ_ID),
            "{path}"
        );
        poll_n(&rcq, 1);
        poll_n(&scq, 4);
    }
}
