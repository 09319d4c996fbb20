//! Waiting for completion and async events on the tokio reactor (feature `tokio`): a pending
//! `CompletionChannel::wait_async` is woken by a completion, `Context::wait_async_event` by an async
//! event, and several tasks can wait on one channel at once.
//!
//! Built only with the feature (`cargo test --features tokio`, or `--all-features`).
#![cfg(feature = "tokio")]

mod common;

use std::time::Duration;

use common::any_device;
use common::verbs::RcPair;
use uverbs::{
    ibv_access_flags, ibv_qp_state, AsyncEvent, AsyncEventKind, CompletionQueue, ProtectionDomain,
    QpAttr, QueuePair, ReceiveRequest, SendRequest,
};

const GID_INDEX: u32 = 1;

fn connect<'a>(
    pd: &'a ProtectionDomain<'_>,
    scq: &'a CompletionQueue<'_>,
    rcq: &'a CompletionQueue<'_>,
    id: isize,
) -> (QueuePair<'a>, QueuePair<'a>) {
    RcPair::new(pd, scq)
        .cqs(scq, rcq)
        .gid_index(GID_INDEX)
        .context(id)
        .depth(8, 8)
        .access(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE)
        .connect()
}

#[tokio::test]
async fn wait_async_is_woken_by_a_completion() {
    let Some(dev) = any_device("wait_async_is_woken_by_a_completion") else {
        return;
    };
    const RCQ_ID: isize = 0x70c1;
    let ctx = dev.open();
    let channel = ctx.create_comp_channel().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let scq = ctx.create_cq(16, 1).unwrap();
    let rcq = ctx.create_cq_with_channel(16, RCQ_ID, &channel, 0).unwrap();
    let (a, b) = connect(&pd, &scq, &rcq, 0x10);
    let tx = pd.allocate::<u64>(1).unwrap();
    let rx = pd.allocate::<u64>(2).unwrap();
    let rs = [[rx.sge(0..1).unwrap()], [rx.sge(1..2).unwrap()]];
    // SAFETY: `rx` outlives the queue pairs.
    unsafe {
        b.post_receive_list(&[
            ReceiveRequest::new(1, &rs[0]),
            ReceiveRequest::new(2, &rs[1]),
        ])
    }
    .unwrap();
    let sge = [tx.sge(..).unwrap()];
    rcq.req_notify(false).unwrap();

    // Two tasks' worth of waiters on one channel: both register (on duplicates of its file) and
    // stay pending while nothing has completed.
    let first = channel.wait_async();
    let second = channel.wait_async();
    tokio::pin!(first, second);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut first)
            .await
            .is_err(),
        "woken with nothing completed"
    );
    assert!(tokio::time::timeout(Duration::from_millis(50), &mut second)
        .await
        .is_err());
    // SAFETY: `tx` outlives the queue pairs and is not written.
    unsafe { a.post_send_list(&[SendRequest::send(10, &sge)]) }.unwrap();
    // One event: exactly one of the two waiters gets it.
    let (first_won, id) = tokio::select! {
        r = &mut first => (true, r),
        r = &mut second => (false, r),
        _ = tokio::time::sleep(Duration::from_secs(30)) => panic!("no waiter woke"),
    };
    assert_eq!(id.unwrap(), RCQ_ID);
    // Arm again: the other waiter, still pending, is woken by the next completion.
    rcq.req_notify(false).unwrap();
    // SAFETY: as above.
    unsafe { a.post_send_list(&[SendRequest::send(11, &sge)]) }.unwrap();
    let other = if first_won {
        tokio::time::timeout(Duration::from_secs(30), &mut second).await
    } else {
        tokio::time::timeout(Duration::from_secs(30), &mut first).await
    };
    assert_eq!(other.expect("the other waiter woke").unwrap(), RCQ_ID);
    let mut buf = [uverbs::ibv_wc::default(); 4];
    let mut got = 0;
    while got < 2 {
        got += rcq.poll(&mut buf).unwrap().len();
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn wait_async_event_is_woken_by_an_async_event() {
    let Some(dev) = any_device("wait_async_event_is_woken_by_an_async_event") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 1).unwrap();
    let (a, _b) = connect(&pd, &cq, &cq, 0x20);
    let wait = ctx.wait_async_event();
    tokio::pin!(wait);
    assert!(tokio::time::timeout(Duration::from_millis(300), &mut wait)
        .await
        .is_err());
    // rxe reports a drained send queue as soon as an idle queue pair reaches SQD.
    a.modify(&QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_SQD),
        ..QpAttr::default()
    })
    .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(30), &mut wait)
        .await
        .expect("woken by the event")
        .unwrap();
    assert_eq!(
        e,
        AsyncEvent {
            kind: AsyncEventKind::SqDrained,
            element: 0x20
        }
    );
}
