//! `uverbs::next` (the `ibverbs` crate's next API) on whatever device the tests have: the typed
//! errors of bad input, all-or-nothing batches, and what its queries report, each checked against
//! what the device then does.

mod common;

use std::time::{Duration, Instant};

use uverbs::next as ibverbs;

use common::any_device;
use ibverbs::{
    ibv_qp_state, ibv_qp_type, ibv_wc_opcode, CompletionQueue, Context, Error, LocalMemorySlice,
    MemoryRegion, QueuePair, QueuePairAttribute,
};

const DEADLINE: Duration = Duration::from_secs(60);

/// Port 1's RoCE v2 IPv4-mapped GID, else its first (as `ibverbs`' loopback example chooses).
fn gid_index(ctx: &Context) -> u32 {
    let gids = ctx.gid_table().unwrap();
    gids.iter()
        .filter(|e| e.port_num == 1)
        .find(|e| {
            e.gid_type == ibverbs::ibv_gid_type::IBV_GID_TYPE_ROCE_V2 && e.gid.is_ipv4_mapped()
        })
        .or_else(|| gids.iter().find(|e| e.port_num == 1))
        .expect("no GID on port 1")
        .gid_index
}

/// A context, a CQ, and an RC queue pair connected to itself with room for `wr` requests each
/// way, remote access allowed; the region of 4 KiB.
struct Loop {
    _ctx: Context,
    cq: CompletionQueue,
    qp: QueuePair,
    mr: MemoryRegion<Box<[u8]>>,
}

fn looped(ctx: Context, wr: u32) -> Loop {
    let cq = ctx.create_cq(64).build().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let mut b = pd.create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC).unwrap();
    b.set_gid_index(gid_index(&ctx))
        .set_max_send_wr(wr)
        .set_max_recv_wr(wr)
        .set_max_inline_data(64)
        .set_access(
            ibverbs::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibverbs::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC,
        )
        .allow_remote_rw();
    let prepared = b.build().unwrap();
    let me = prepared.endpoint().unwrap();
    let qp = prepared.handshake(me).unwrap();
    let mr = pd.allocate(4096).unwrap();
    Loop {
        _ctx: ctx,
        cq,
        qp,
        mr,
    }
}

/// The `(wr_id, opcode)` of the next `n` completions, all successful.
fn take(cq: &CompletionQueue, n: usize) -> Vec<(u64, ibv_wc_opcode)> {
    let mut out = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    while out.len() < n {
        if let Some(mut cs) = cq.poll().unwrap() {
            while let Some(wc) = cs.next() {
                assert_eq!(wc.ok(), Ok(()), "request {} failed", wc.wr_id());
                out.push((wc.wr_id(), wc.opcode()));
            }
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {n} completions came",
            out.len()
        );
        std::thread::yield_now();
    }
    out
}

/// Nothing more completes within a short while.
fn quiet(cq: &CompletionQueue) {
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        if let Some(mut cs) = cq.poll().unwrap() {
            if let Some(wc) = cs.next() {
                panic!("an unexpected completion: wr_id {}", wc.wr_id());
            }
        }
        std::thread::yield_now();
    }
}

/// Submits `b`.
fn submit(b: ibverbs::PostBatch<'_>) -> ibverbs::Result<()> {
    // SAFETY: every request names the test's region, which outlives its queue pair (`Loop` drops
    // the queue pair first), and nothing touches the bytes a request reads or writes before its
    // completion, or a later one's, has been taken.
    unsafe { b.submit() }
}

fn ctx(test: &str) -> Option<(common::TestDevice, Context)> {
    let dev = any_device(test)?;
    let ctx = Context::from(dev.open());
    Some((dev, ctx))
}

#[test]
fn a_refused_request_posts_none_of_its_batch() {
    let Some((_dev, ctx)) = ctx("a_refused_request_posts_none_of_its_batch") else {
        return;
    };
    let mut l = looped(ctx, 16);
    let remote = l.mr.remote().slice(1024..2048);
    let eight = [l.mr.slice(0..8)];
    let two = [l.mr.slice(0..8), l.mr.slice(8..16)];
    // An atomic's result goes to one entry: two is refused, and the write before it is not posted.
    let mut b = l.qp.start_send();
    b.signaled().write(1, &eight, remote);
    b.signaled()
        .atomic_fetch_add(2, &two, remote.slice(0..8), 1);
    assert!(matches!(submit(b), Err(Error::PostSend(_))));
    // More inline bytes than the queue pair takes (the device may give more than was asked).
    let (_, init) = l.qp.query(ibverbs::ibv_qp_attr_mask::IBV_QP_CAP).unwrap();
    let too_long = vec![7u8; init.max_inline_data() as usize + 1];
    let mut b = l.qp.start_send();
    b.signaled().write_inline(3, &too_long, remote);
    assert!(matches!(submit(b), Err(Error::PostSend(_))));
    // More requests than the send queue holds.
    let mut b = l.qp.start_send();
    for i in 0..64 {
        b.signaled().write(100 + i, &eight, remote);
    }
    assert!(matches!(submit(b), Err(Error::PostSend(_))));
    // A batch dropped unsubmitted.
    let mut b = l.qp.start_send();
    b.signaled().write(4, &eight, remote);
    drop(b);
    quiet(&l.cq);
    // The queue pair still works, and what follows is all that completes.
    let mut b = l.qp.start_send();
    b.signaled().write(5, &eight, remote);
    b.signaled().read(6, &eight, remote);
    submit(b).unwrap();
    assert_eq!(
        take(&l.cq, 2),
        [
            (5, ibv_wc_opcode::IBV_WC_RDMA_WRITE),
            (6, ibv_wc_opcode::IBV_WC_RDMA_READ)
        ]
    );
    quiet(&l.cq);
}

#[test]
fn batched_operations_move_the_bytes() {
    let Some((_dev, ctx)) = ctx("batched_operations_move_the_bytes") else {
        return;
    };
    let mut l = looped(ctx, 16);
    l.mr.bytes_mut()[..8].copy_from_slice(&5u64.to_ne_bytes());
    l.mr.bytes_mut()[1024..1032].copy_from_slice(&40u64.to_ne_bytes());
    let remote = l.mr.remote();
    let src: [LocalMemorySlice; 1] = [l.mr.slice(0..8)];
    let fetched = [l.mr.slice(16..24)];
    let mut b = l.qp.start_send();
    // 5 lands at 2048 by a write, 40 + 2 at 1024 by an atomic (which returns 40 at 16), then a
    // fenced read of 1024 into 3072 sees 42.
    b.write(1, &src, remote.slice(2048..2056));
    b.atomic_fetch_add(2, &fetched, remote.slice(1024..1032), 2);
    b.fenced()
        .signaled()
        .read(3, &[l.mr.slice(3072..3080)], remote.slice(1024..1032));
    submit(b).unwrap();
    assert_eq!(take(&l.cq, 1), [(3, ibv_wc_opcode::IBV_WC_RDMA_READ)]);
    let word = |at: usize| u64::from_ne_bytes(l.mr.bytes()[at..at + 8].try_into().unwrap());
    assert_eq!(word(2048), 5);
    assert_eq!(word(16), 40);
    assert_eq!(word(1024), 42);
    assert_eq!(word(3072), 42);
    // Inline data is copied when the request is added: changing the source after does nothing.
    let mut data = *b"inline!!";
    let mut b = l.qp.start_send();
    b.signaled()
        .write_inline(4, &data, remote.slice(2056..2064));
    data[0] = b'X';
    submit(b).unwrap();
    assert_eq!(take(&l.cq, 1), [(4, ibv_wc_opcode::IBV_WC_RDMA_WRITE)]);
    assert_eq!(&l.mr.bytes()[2056..2064], b"inline!!");
    assert_eq!(data[0], b'X');
}

#[test]
fn inline_lists_are_concatenated_and_bounded() {
    let Some((_dev, ctx)) = ctx("inline_lists_are_concatenated_and_bounded") else {
        return;
    };
    let mut l = looped(ctx, 4);
    let remote = l.mr.remote().slice(512..1024);
    let (_, init) = l.qp.query(ibverbs::ibv_qp_attr_mask::IBV_QP_CAP).unwrap();
    let room = init.max_inline_data() as usize;
    let (a, b) = (b"gather ".to_vec(), b"these".to_vec());
    let mut batch = l.qp.start_send();
    batch.signaled().write_inline_list(
        1,
        &[std::io::IoSlice::new(&a), std::io::IoSlice::new(&b)],
        remote,
    );
    submit(batch).unwrap();
    assert_eq!(take(&l.cq, 1), [(1, ibv_wc_opcode::IBV_WC_RDMA_WRITE)]);
    assert_eq!(&l.mr.bytes()[512..524], b"gather these");
    // One byte over the queue pair's inline room, in two pieces: refused, nothing posted.
    let big = vec![1u8; room];
    let mut batch = l.qp.start_send();
    batch.signaled().write_inline_list(
        2,
        &[std::io::IoSlice::new(&big), std::io::IoSlice::new(b"!")],
        remote,
    );
    assert!(matches!(submit(batch), Err(Error::PostSend(_))));
    quiet(&l.cq);
}

#[test]
fn modify_names_the_transition_and_the_attributes() {
    let Some((_dev, ctx)) = ctx("modify_names_the_transition_and_the_attributes") else {
        return;
    };
    let mut l = looped(ctx, 4);
    let (attr, init) = l.qp.query(ibverbs::ibv_qp_attr_mask::IBV_QP_STATE).unwrap();
    assert_eq!(attr.state(), ibv_qp_state::IBV_QPS_RTS);
    assert!(init.max_send_wr() >= 4 && init.max_inline_data() >= 64);
    let mut back = QueuePairAttribute::new();
    back.set_state(ibv_qp_state::IBV_QPS_INIT);
    match l.qp.modify(&back) {
        Err(Error::InvalidQueuePairTransition { current, next }) => {
            assert_eq!(
                (current, next),
                (ibv_qp_state::IBV_QPS_RTS, ibv_qp_state::IBV_QPS_INIT)
            );
        }
        other => panic!("RTS -> INIT gave {other:?}"),
    }
    // RTS -> RTS does not take a Q_Key on RC.
    let mut qkey = QueuePairAttribute::new();
    qkey.set_qkey(7);
    match l.qp.modify(&qkey) {
        Err(Error::InvalidQueuePairAttributeMask { invalid, .. }) => {
            assert_eq!(invalid, ibverbs::ibv_qp_attr_mask::IBV_QP_QKEY)
        }
        other => panic!("a Q_Key on RC gave {other:?}"),
    }
    let mut err = QueuePairAttribute::new();
    err.set_state(ibv_qp_state::IBV_QPS_ERR);
    l.qp.modify(&err).unwrap();
    let (attr, _) = l.qp.query(ibverbs::ibv_qp_attr_mask::IBV_QP_STATE).unwrap();
    assert_eq!(attr.state(), ibv_qp_state::IBV_QPS_ERR);
}

#[test]
fn what_uverbs_lacks_is_unsupported() {
    let Some((_dev, ctx)) = ctx("what_uverbs_lacks_is_unsupported") else {
        return;
    };
    let flags = ibverbs::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_CVLAN;
    assert!(matches!(
        ctx.create_cq(4).set_wc_flags(flags).build(),
        Err(Error::Unsupported)
    ));
    assert!(matches!(ctx.query_rt_values_ex(), Err(Error::Unsupported)));
    let cq = ctx.create_cq(4).build().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    assert!(matches!(
        pd.create_qp_on_port(&cq, &cq, ibv_qp_type::IBV_QPT_RC, 2),
        Err(Error::Unsupported)
    ));
    // Every completion carries the source LID, service level and path bits, asked for or not;
    // the clock only where the device has one.
    let ts = ibverbs::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    let with_clock = ctx.create_cq(4).set_wc_flags(ts).build();
    let device_clock = ctx.query_device_ex().unwrap().completion_timestamp_mask() != 0;
    assert_eq!(with_clock.is_ok(), device_clock, "{:?}", with_clock.err());
}

#[test]
fn empty_lists_and_errors_as_io_errors() {
    let Some((_dev, ctx)) = ctx("empty_lists_and_errors_as_io_errors") else {
        return;
    };
    let mut l = looped(ctx, 4);
    let none: [ibverbs::RecvRequest<'_>; 0] = [];
    // SAFETY: an empty list names no memory.
    unsafe { l.qp.post_recv(none) }.unwrap();
    submit(l.qp.start_send()).unwrap();
    quiet(&l.cq);
    // `?` into io::Result keeps the errno the kernel or uverbs gave.
    let e: std::io::Error = Error::Unsupported.into();
    assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
}
