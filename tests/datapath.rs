//! The rxe data path end to end: loopback on one queue pair and between two, payloads checked byte
//! by byte, ring wrap-around, the system calls each operation makes, and bad input.

mod common;

use std::collections::HashSet;

use common::verbs::{handshake, poll_n, RcPair};
use common::{any_device, test_device, TestDevice};
use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_qp_type, ibv_wc, ibv_wc_opcode, ibv_wc_status,
    CompletionQueue, Context, ErrorExt, MemoryRegion, MrRange, PreparedQueuePair, ProtectionDomain,
    QpAttr, QueuePair,
};
use uverbs_drivers::Error;

/// The GID index the RoCE v2 IPv4-mapped loopback address has on rxe0 over lo.
const GID_INDEX: u32 = 1;

fn open(dev: &TestDevice) -> Context {
    dev.open()
}

/// Two RC queue pairs `depth` deep that let each other read and write.
fn rc<'a>(pd: &'a ProtectionDomain<'_>, cq: &'a CompletionQueue<'_>, depth: u32) -> RcPair<'a> {
    RcPair::new(pd, cq)
        .gid_index(GID_INDEX)
        .depth(depth, depth)
        .remote_rw()
}

fn prepare<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
    depth: u32,
) -> PreparedQueuePair<'a> {
    rc(pd, cq, depth).prepare(false)
}

fn pattern(len: usize, seed: u8) -> impl Iterator<Item = u8> {
    (0..len).map(move |i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
}

/// Sends `size` bytes from `tx` to `rx` and checks every byte and both completions.
fn exchange(
    tx: &mut QueuePair<'_>,
    rx: &mut QueuePair<'_>,
    cq: &CompletionQueue<'_>,
    send_mr: &mut MemoryRegion<u8>,
    recv_mr: &mut MemoryRegion<u8>,
    size: usize,
    seed: u8,
) {
    for (d, s) in send_mr[..size].iter_mut().zip(pattern(size, seed)) {
        *d = s;
    }
    recv_mr.fill(0xee);
    // SAFETY: both regions outlive the requests and are untouched until the completions are polled.
    unsafe { rx.post_receive(recv_mr, ..size, 100) }.unwrap();
    // SAFETY: as above.
    unsafe { tx.post_send(send_mr, ..size, 200) }.unwrap();
    let wcs = poll_n(cq, 2);
    let recv = wcs
        .iter()
        .find(|w| w.wr_id() == 100)
        .expect("receive completion");
    let send = wcs
        .iter()
        .find(|w| w.wr_id() == 200)
        .expect("send completion");
    assert!(recv.is_valid(), "receive of {size}: {:?}", recv.error());
    assert!(send.is_valid(), "send of {size}: {:?}", send.error());
    assert_eq!(recv.opcode(), ibv_wc_opcode::IBV_WC_RECV);
    assert_eq!(send.opcode(), ibv_wc_opcode::IBV_WC_SEND);
    assert_eq!(recv.len(), size, "received length");
    assert_eq!(recv.qp_num, rx.qp_num());
    assert_eq!(send.qp_num, tx.qp_num());
    assert_eq!(recv.imm_data(), None);
    let expected: Vec<u8> = pattern(size, seed).collect();
    if let Some(i) = (0..size).find(|&i| recv_mr[i] != expected[i]) {
        panic!(
            "{size}-byte message: byte {i} is {:#x}, sent {:#x}",
            recv_mr[i], expected[i]
        );
    }
    assert!(
        recv_mr[size..].iter().all(|&b| b == 0xee),
        "bytes past the message were written"
    );
}

fn sizes(ctx: &Context) -> Vec<usize> {
    let mtu = ctx.query_port(1).unwrap().active_mtu().bytes().unwrap() as usize;
    vec![0, 1, 4096, mtu + 1, 1 << 20]
}

#[test]
fn loopback_on_one_queue_pair() {
    let Some(dev) = any_device("loopback_on_one_queue_pair") else {
        return;
    };
    let ctx = open(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let prepared = prepare(&pd, &cq, 4);
    let ep = prepared.endpoint();
    let mut qp = prepared.handshake(ep).unwrap();
    assert_eq!(qp.state(), ibv_qp_state::IBV_QPS_RTS);
    let max = 1 << 20;
    let mut send_mr = pd.allocate::<u8>(max + 64).unwrap();
    let mut recv_mr = pd.allocate::<u8>(max + 64).unwrap();
    for (i, size) in sizes(&ctx).into_iter().enumerate() {
        // One QP connected to itself: the send and the receive are on the same queue pair.
        loopback_same_qp(&mut qp, &cq, &mut send_mr, &mut recv_mr, size, i as u8);
    }
}

fn loopback_same_qp(
    qp: &mut QueuePair<'_>,
    cq: &CompletionQueue<'_>,
    send_mr: &mut MemoryRegion<u8>,
    recv_mr: &mut MemoryRegion<u8>,
    size: usize,
    seed: u8,
) {
    for (d, s) in send_mr[..size].iter_mut().zip(pattern(size, seed)) {
        *d = s;
    }
    recv_mr.fill(0xee);
    // SAFETY: both regions outlive the requests and are untouched until the completions are polled.
    unsafe { qp.post_receive(recv_mr, ..size, 100) }.unwrap();
    // SAFETY: as above.
    unsafe { qp.post_send(send_mr, ..size, 200) }.unwrap();
    let wcs = poll_n(cq, 2);
    let recv = wcs
        .iter()
        .find(|w| w.wr_id() == 100)
        .expect("receive completion");
    let send = wcs
        .iter()
        .find(|w| w.wr_id() == 200)
        .expect("send completion");
    assert!(
        recv.is_valid() && send.is_valid(),
        "{size}: {:?} {:?}",
        recv.error(),
        send.error()
    );
    assert_eq!(recv.len(), size);
    let expected: Vec<u8> = pattern(size, seed).collect();
    if let Some(i) = (0..size).find(|&i| recv_mr[i] != expected[i]) {
        panic!(
            "{size}-byte message: byte {i} is {:#x}, sent {:#x}",
            recv_mr[i], expected[i]
        );
    }
    assert!(
        recv_mr[size..].iter().all(|&b| b == 0xee),
        "bytes past the message were written"
    );
}

#[test]
fn loopback_between_two_queue_pairs() {
    let Some(dev) = any_device("loopback_between_two_queue_pairs") else {
        return;
    };
    let ctx = open(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (pa, pb) = (prepare(&pd, &cq, 4), prepare(&pd, &cq, 4));
    assert_ne!(pa.endpoint().num, pb.endpoint().num);
    let (mut a, mut b) = handshake(pa, pb);
    let max = 1 << 20;
    let mut mr_a = pd.allocate::<u8>(max + 64).unwrap();
    let mut mr_b = pd.allocate::<u8>(max + 64).unwrap();
    for (i, size) in sizes(&ctx).into_iter().enumerate() {
        exchange(&mut a, &mut b, &cq, &mut mr_a, &mut mr_b, size, i as u8);
        exchange(
            &mut b,
            &mut a,
            &cq,
            &mut mr_b,
            &mut mr_a,
            size,
            i as u8 + 100,
        );
    }
}

#[test]
fn rings_wrap_around_in_fifo_order() {
    let Some(dev) = any_device("rings_wrap_around_in_fifo_order") else {
        return;
    };
    let ctx = open(&dev);
    let cq = ctx.create_cq(8, 0).unwrap();
    let cq_depth = cq.capacity() as usize;
    let pd = ctx.alloc_pd().unwrap();
    let (mut a, mut b) = rc(&pd, &cq, 4).connect();
    let caps = a.caps();
    let depth = caps.max_send_wr.min(caps.max_recv_wr) as usize;
    assert!(
        depth >= 2 && cq_depth >= 2 * depth,
        "depth {depth}, cq {cq_depth}"
    );
    // At least three times around the CQ and the send and receive rings.
    let total = 3 * cq_depth.max(depth) + 5;
    let mut tx = pd.allocate::<u64>(depth).unwrap();
    let mut rx = pd.allocate::<u64>(depth).unwrap();
    let (mut next_send, mut next_recv) = (0u64, 0u64);
    let mut send_seen = Vec::new();
    let mut recv_seen = Vec::new();
    let mut wcs = [ibv_wc::default(); 4];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while recv_seen.len() < total {
        // Keep `depth` messages in flight, in windows that straddle the rings' ends.
        let outstanding = (next_send - send_seen.len() as u64) as usize;
        if outstanding < depth && (next_send as usize) < total {
            let slot = next_send as usize % depth;
            tx[slot] = next_send;
            // SAFETY: slot `slot` is not reused before this message's completions are polled.
            unsafe { b.post_receive(&mut rx, slot..slot + 1, 1_000_000 + next_recv) }.unwrap();
            next_recv += 1;
            // SAFETY: as above.
            unsafe { a.post_send(&mut tx, slot..slot + 1, next_send) }.unwrap();
            next_send += 1;
            continue;
        }
        for wc in cq.poll(&mut wcs).unwrap() {
            assert!(wc.is_valid(), "{:?}", wc.error());
            if wc.wr_id() >= 1_000_000 {
                let n = wc.wr_id() - 1_000_000;
                assert_eq!(rx[n as usize % depth], n, "payload of message {n}");
                recv_seen.push(n);
            } else {
                send_seen.push(wc.wr_id());
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "stalled at {} of {total}",
            recv_seen.len()
        );
    }
    while send_seen.len() < total {
        for wc in poll_n(&cq, 1) {
            send_seen.push(wc.wr_id());
        }
    }
    let expected: Vec<u64> = (0..total as u64).collect();
    assert_eq!(send_seen, expected, "send completions: each once, in order");
    assert_eq!(
        recv_seen, expected,
        "receive completions: each once, in order"
    );
    assert_eq!(send_seen.iter().collect::<HashSet<_>>().len(), total);
}

/// Runs the probe under strace and splits its system calls by phase.
#[test]
fn post_receive_and_poll_make_no_syscall_post_send_and_a_list_make_one() {
    let Some(dev) =
        test_device("post_receive_and_poll_make_no_syscall_post_send_and_a_list_make_one")
    else {
        return;
    };
    let count = 64;
    let probe = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/syscall_probe");
    assert!(probe.exists(), "{} (built by cargo test)", probe.display());
    let trace = std::env::temp_dir().join(format!("uverbs-strace-{}", std::process::id()));
    let out = common::run(
        "strace",
        &[
            "-f",
            "-qq",
            "-o",
            trace.to_str().unwrap(),
            probe.to_str().unwrap(),
            &dev,
            &count.to_string(),
        ],
    );
    assert!(
        out.status.success(),
        "probe failed: {}",
        common::stderr(&out)
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let _ = std::fs::remove_file(&trace);
    // Calls of the main thread between the markers.
    let calls: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(_, rest)| rest.trim_start()))
        .filter(|c| !c.starts_with("+++") && !c.starts_with("---"))
        .collect();
    let markers: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.starts_with("getpid("))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(markers.len(), 7, "seven getpid markers in:\n{text}");
    let phase = |k: usize| &calls[markers[k] + 1..markers[k + 1]];
    let recv = phase(0);
    assert!(recv.is_empty(), "post_receive made system calls: {recv:?}");
    let send = phase(1);
    assert_eq!(
        send.len(),
        count,
        "post_send: one system call each: {send:?}"
    );
    assert!(
        send.iter()
            .all(|c| c.starts_with("write(") && c.ends_with("= 32")),
        "{send:?}"
    );
    let poll = phase(2);
    assert!(poll.is_empty(), "poll made system calls: {poll:?}");
    // A list of `count` sends in one post rings the doorbell once.
    let list = phase(4);
    assert_eq!(list.len(), 1, "a posted list: one system call: {list:?}");
    assert!(
        list[0].starts_with("write(") && list[0].ends_with("= 32"),
        "{list:?}"
    );
    let poll = phase(5);
    assert!(poll.is_empty(), "poll made system calls: {poll:?}");
}

#[test]
fn the_ibverbs_loopback_example_runs() {
    if test_device("the_ibverbs_loopback_example_runs").is_none() {
        return;
    }
    let example = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/loopback");
    let out = common::run(example.to_str().unwrap(), &[]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let mut lines: Vec<String> = common::stdout(&out).lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, ["received", "sent"]);
}

/// Posts a receive. In these tests the regions outlive their queue pairs and are not read while a
/// request is outstanding.
fn recv<R: MrRange>(
    qp: &mut QueuePair<'_>,
    mr: &mut MemoryRegion<u8>,
    range: R,
    id: u64,
) -> std::io::Result<()> {
    // SAFETY: see above.
    unsafe { qp.post_receive(mr, range, id) }
}

/// Posts a send, under the same terms as [`recv`].
fn send<R: MrRange>(
    qp: &mut QueuePair<'_>,
    mr: &mut MemoryRegion<u8>,
    range: R,
    id: u64,
) -> std::io::Result<()> {
    // SAFETY: see `recv`.
    unsafe { qp.post_send(mr, range, id) }
}

fn uverbs_error(e: &std::io::Error) -> &Error {
    e.uverbs_error()
        .unwrap_or_else(|| panic!("not a uverbs error: {e}"))
}

#[test]
fn bad_input_is_a_typed_error_and_posts_nothing() {
    let Some(dev) = any_device("bad_input_is_a_typed_error_and_posts_nothing") else {
        return;
    };
    let ctx = open(&dev);
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let other_pd = ctx.alloc_pd().unwrap();
    let mut mr = pd.allocate::<u8>(64).unwrap();
    let mut foreign = other_pd.allocate::<u8>(64).unwrap();

    // A queue pair in RESET takes neither sends nor receives.
    let prepared = prepare(&pd, &cq, 4);
    let ep = prepared.endpoint();
    let mut qp = prepared.into_queue_pair();
    let e = recv(&mut qp, &mut mr, ..8, 1).unwrap_err();
    assert!(
        matches!(uverbs_error(&e), Error::WrongState { state: 0, .. }),
        "{e}"
    );
    let e = send(&mut qp, &mut mr, ..8, 1).unwrap_err();
    assert!(
        matches!(uverbs_error(&e), Error::WrongState { state: 0, .. }),
        "{e}"
    );

    // Invalid transitions and attribute sets never reach the kernel.
    let e = qp
        .modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTS),
            ..QpAttr::default()
        })
        .unwrap_err();
    assert!(
        matches!(uverbs_error(&e), Error::InvalidModify { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("from RESET to RTS"), "{e}");
    let e = qp
        .modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
            pkey_index: Some(0),
            ..QpAttr::default()
        })
        .unwrap_err();
    assert!(
        e.to_string().contains("needs ACCESS_FLAGS|PORT")
            || e.to_string().contains("needs PORT|ACCESS_FLAGS"),
        "{e}"
    );
    let e = qp
        .modify(&QpAttr {
            path_mtu: Some(9),
            ..QpAttr::default()
        })
        .unwrap_err();
    assert!(
        matches!(uverbs_error(&e), Error::InvalidArgument { .. }),
        "{e}"
    );
    assert_eq!(qp.state(), ibv_qp_state::IBV_QPS_RESET);

    // Manual bring-up to INIT: receives are allowed, sends are not.
    qp.modify(&QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
        pkey_index: Some(0),
        port_num: Some(1),
        qp_access_flags: Some(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE),
        ..QpAttr::default()
    })
    .unwrap();
    assert_eq!(
        qp.query().unwrap().qp_state,
        Some(ibv_qp_state::IBV_QPS_INIT)
    );
    let e = send(&mut qp, &mut mr, ..8, 1).unwrap_err();
    assert!(
        matches!(uverbs_error(&e), Error::WrongState { state: 1, .. }),
        "{e}"
    );

    // Ranges outside the region, and regions of another protection domain.
    #[allow(clippy::reversed_empty_ranges)]
    for e in [
        recv(&mut qp, &mut mr, ..65, 1).unwrap_err(),
        recv(&mut qp, &mut mr, 65.., 1).unwrap_err(),
        recv(&mut qp, &mut mr, 9..8, 1).unwrap_err(),
        recv(&mut qp, &mut foreign, ..8, 1).unwrap_err(),
    ] {
        assert!(
            matches!(uverbs_error(&e), Error::InvalidArgument { .. }),
            "{e}"
        );
    }

    // A full receive queue.
    let cap = qp.caps().max_recv_wr;
    for i in 0..cap {
        recv(&mut qp, &mut mr, ..8, u64::from(i)).unwrap();
    }
    let e = recv(&mut qp, &mut mr, ..8, 99).unwrap_err();
    assert!(matches!(uverbs_error(&e), Error::QueueFull { .. }), "{e}");

    // To ERROR: every outstanding receive is flushed, with its wr_id and the QP number.
    qp.modify(&QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_ERR),
        ..QpAttr::default()
    })
    .unwrap();
    let wcs = poll_n(&cq, cap as usize);
    let mut ids: Vec<u64> = wcs.iter().map(ibv_wc::wr_id).collect();
    ids.sort();
    assert_eq!(ids, (0..u64::from(cap)).collect::<Vec<_>>());
    for wc in &wcs {
        assert_eq!(
            wc.error().map(|e| e.0),
            Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR)
        );
        assert_eq!(wc.qp_num, qp.qp_num());
    }
    let _ = ep;
    // Nothing else arrived: the refused posts wrote nothing.
    let mut buf = [ibv_wc::default(); 4];
    assert!(cq.poll(&mut buf).unwrap().is_empty());
    assert_eq!(uverbs_drivers::drop_errors(), 0);
}

#[test]
fn a_full_send_queue_is_a_typed_error_and_teardown_is_safe() {
    let Some(dev) = any_device("a_full_send_queue_is_a_typed_error_and_teardown_is_safe") else {
        return;
    };
    let ctx = open(&dev);
    let cq = ctx.create_cq(64, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    // The peer never posts a receive and the sender retries RNR forever: sends stay outstanding.
    let pa = pd
        .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(GID_INDEX)
        .set_max_send_wr(4)
        .set_rnr_retry(7)
        .set_min_rnr_timer(31)
        .build()
        .unwrap();
    let pb = prepare(&pd, &cq, 4);
    let (mut a, b) = handshake(pa, pb);
    let mut mr = pd.allocate::<u8>(64).unwrap();
    let cap = a.caps().max_send_wr;
    for i in 0..cap {
        send(&mut a, &mut mr, ..8, u64::from(i)).unwrap();
    }
    let e = send(&mut a, &mut mr, ..8, 99).unwrap_err();
    assert!(matches!(uverbs_error(&e), Error::QueueFull { .. }), "{e}");
    // Dropping a queue pair with outstanding work is fine, and so is a memory region outliving its
    // protection domain (it keeps the kernel object alive).
    drop(a);
    drop(b);
    drop(pd);
    assert_eq!(mr.len(), 64);
    drop(mr);
    drop(cq);
    assert_eq!(uverbs_drivers::drop_errors(), 0);
}

#[test]
fn a_completion_channel_wakes_up_on_a_completion() {
    let Some(dev) = any_device("a_completion_channel_wakes_up_on_a_completion") else {
        return;
    };
    let ctx = open(&dev);
    let channel = ctx.create_comp_channel().unwrap();
    let cq = ctx.create_cq_with_channel(16, 77, &channel, 0).unwrap();
    assert_eq!(cq.id(), 77);
    let plain = ctx.create_cq(4, 0).unwrap();
    let e = plain.req_notify(false).unwrap_err();
    assert!(
        matches!(uverbs_error(&e), Error::InvalidArgument { .. }),
        "{e}"
    );
    let pd = ctx.alloc_pd().unwrap();
    let prepared = prepare(&pd, &cq, 4);
    let ep = prepared.endpoint();
    let mut qp = prepared.handshake(ep).unwrap();
    let mut mr = pd.allocate::<u8>(16).unwrap();

    // Not armed, or armed with nothing completing: no event.
    assert_eq!(channel.try_get_event().unwrap(), None);
    cq.req_notify(false).unwrap();
    assert_eq!(
        channel
            .get_event_timeout(std::time::Duration::from_millis(200))
            .unwrap(),
        None
    );
    // A completion wakes the channel, once, naming the CQ by its id.
    recv(&mut qp, &mut mr, 8.., 1).unwrap();
    send(&mut qp, &mut mr, ..8, 2).unwrap();
    let id = channel
        .get_event_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    assert_eq!(id, Some(77));
    assert_eq!(poll_n(&cq, 2).len(), 2);
    assert_eq!(
        channel.try_get_event().unwrap(),
        None,
        "one event per arming"
    );
    // Not re-armed: the next completion raises no event.
    recv(&mut qp, &mut mr, 8.., 3).unwrap();
    send(&mut qp, &mut mr, ..8, 4).unwrap();
    assert_eq!(poll_n(&cq, 2).len(), 2);
    assert_eq!(channel.try_get_event().unwrap(), None);
    // The fd is usable with poll(2) directly: not readable while no event is pending (armed or
    // not), readable (POLLIN) once an armed CQ completes (waited for with a deadline), and not
    // readable again once the event is read.
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let readable = |wait_ms: u16| -> bool {
        let mut fds = [PollFd::new(channel.as_fd(), PollFlags::POLLIN)];
        let n = poll(&mut fds, PollTimeout::from(wait_ms)).unwrap();
        let revents = fds[0].revents().unwrap();
        assert!(
            !revents.intersects(PollFlags::POLLERR | PollFlags::POLLNVAL),
            "{revents:?}"
        );
        n == 1 && revents.contains(PollFlags::POLLIN)
    };
    assert!(!readable(0), "readable with no event pending");
    cq.req_notify(false).unwrap();
    assert!(!readable(0), "readable once armed, before any completion");
    recv(&mut qp, &mut mr, 8.., 5).unwrap();
    send(&mut qp, &mut mr, ..8, 6).unwrap();
    assert!(readable(30_000), "no POLLIN within 30 s of a completion");
    assert_eq!(channel.try_get_event().unwrap(), Some(77));
    assert!(!readable(0), "readable after its one event was read");
    assert_eq!(poll_n(&cq, 2).len(), 2);
}
