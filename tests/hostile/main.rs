//! Hostile and bad input: a catalogue of cases, each with what it does and what it must get — a
//! typed error (and nothing posted), or the documented error completion — on both backends (rxe
//! in the VM, the mlx5 model on the host), without a panic, and without a byte written outside
//! what was granted.
//!
//! Guard bytes: every case runs against fresh memory regions laid out as
//!
//! ```text
//!   | guard (registered) | granted (registered) | guard (registered) | tail (not registered) |
//!   0                  PAGE                  2 PAGE               3 PAGE                 4 PAGE
//! ```
//!
//! The region is the first three pages of a buffer of four (a `Vec` registered with spare
//! capacity): requests name the granted page (scatter/gather entries, `RemoteMemory`), and the
//! cases that aim past the region's end land in the tail, which is ours but not registered. Every
//! byte is filled with a pattern before the case and compared after it (with the queue pairs
//! destroyed, so nothing can still write): only the bytes a case declares may change.
//!
//! Where the backends differ, the case says so and why. Device removal at run time (`rdma link
//! delete`) is a separate test, for the VM's rxe only. `UVERBS_HOSTILE_CASE=TEXT` runs only the
//! cases whose name contains TEXT; `--nocapture` prints each case, under its group's topic, with
//! its expectation.
//!
//! The suite's parts: [`guarded`] lays out and compares the guarded memory, [`case`] says what a
//! case is and what it must get, [`fixture`] is what every case works with, [`catalogue`] holds
//! the cases grouped by topic, [`runner`] runs and checks them, and [`removal`] holds the steps of
//! the device removal test.

#[path = "../common/mod.rs"]
mod common;

mod case;
mod catalogue;
mod fixture;
mod guarded;
mod removal;
mod runner;

use std::time::{Duration, Instant};

use common::any_device;
use uverbs::{ibv_qp_state, ibv_wc, ibv_wc_status, CompletionQueue, Context, ReceiveRequest};

use catalogue::{assert_complete, catalogue};
use fixture::{connect, to_state};
use removal::Restore;

/// Every case of the catalogue, counted, each on fresh queue pairs and guarded memory.
#[test]
fn hostile_catalogue() {
    let Some(dev) = any_device("hostile_catalogue") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let other_pd = ctx.alloc_pd().unwrap();
    let cases = catalogue();
    assert_complete(&cases);
    let failures = runner::run_all(&dev, &ctx, &pd, &other_pd, &cases);
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A receive posted to a queue pair in ERR must complete with `WR_FLUSH_ERR` (verbs flush every
/// request posted in the error state). The library accepts the post (only sends need RTS).
///
/// The mlx5 model flushes it at once. rxe flushes a receive queue only when its responder task runs
/// (scheduled by the move to ERR) and posting a receive is no system call, so without help the
/// completion would be lost; the rxe backend therefore moves a QP it knows to be in ERR to ERR
/// again after such a post. A receive posted before the move and flushed by it (in order, the
/// last of the queue) shows that rxe's first flush has reached the end of the queue before the
/// receive under test is posted, so that this one is left to the backend, not to that flush.
#[test]
fn hostile_receive_posted_in_error_is_flushed() {
    let Some(dev) = any_device("hostile_receive_posted_in_error_is_flushed") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, b) = connect(&pd, &cq);
    let rx = pd.allocate::<u64>(4).unwrap();
    let r = [rx.sge(..1).unwrap()];
    let before = [rx.sge(1..2).unwrap()];
    // SAFETY: `rx` outlives the queue pairs.
    unsafe { b.post_receive_list(&[ReceiveRequest::new(0, &before)]) }.unwrap();
    b.modify(&to_state(ibv_qp_state::IBV_QPS_ERR)).unwrap();
    let first =
        poll_one(&cq, Duration::from_secs(30)).expect("the move to ERR flushed nothing in 30 s");
    assert_eq!(
        (first.wr_id(), first.error().map(|x| x.0)),
        (0, Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR)),
        "the receive posted before the move: {first:?}"
    );
    // SAFETY: `rx` outlives the queue pairs.
    unsafe { b.post_receive_list(&[ReceiveRequest::new(1, &r)]) }.unwrap();
    let Some(wc) = poll_one(&cq, Duration::from_secs(5)) else {
        // Another move to ERR flushes it: the receive was there all along, unreported.
        b.modify(&to_state(ibv_qp_state::IBV_QPS_ERR)).unwrap();
        let late = poll_one(&cq, Duration::from_secs(5));
        panic!(
            "{}: a receive posted to a queue pair in ERR did not complete in 5 s; after another \
             MODIFY_QP to ERR: {late:?}",
            dev.name()
        );
    };
    assert_eq!(wc.wr_id(), 1);
    assert_eq!(
        wc.error().map(|x| x.0),
        Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR)
    );
    drop((a, b));
}

/// One completion from `cq`, polled every 5 ms for up to `limit`.
fn poll_one(cq: &CompletionQueue<'_>, limit: Duration) -> Option<ibv_wc> {
    let mut buf = [ibv_wc::default(); 1];
    let deadline = Instant::now() + limit;
    loop {
        if let Some(w) = cq.poll(&mut buf).unwrap().first() {
            return Some(*w);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The device removed while a context is open, with queue pairs connected and work posted
/// (`rdma link delete`, rxe in the VM). What the kernel does: rxe has no
/// `disassociate_ucontext`, so the uverbs core cannot take the objects away from a process — it
/// removes the device node (no new context can be opened: a typed error) and then waits for the
/// open contexts to close. Until then the open context works on (verbs succeed, messages move),
/// and no async event (`DEVICE_FATAL` or other) arrives. Dropping everything succeeds without a
/// destroy error, and the removal then completes. The device is added back afterwards (and
/// checked to work), for the tests after this one.
///
/// (A ConnectX with `disassociate_ucontext` would instead fail later verbs with `EIO`; the model
/// has no removal, so this runs in the VM only.)
#[test]
fn hostile_device_removal_at_run_time() {
    let Some(name) = common::test_device("hostile_device_removal_at_run_time") else {
        return;
    };
    let Some(mut restore) = Restore::rxe_in_vm(&name) else {
        return;
    };
    let drops = uverbs_drivers::drop_errors();
    let ctx = Context::open_by_name(&name).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(32, 0).unwrap();
    let channel = ctx.create_comp_channel().unwrap();
    let armed = ctx.create_cq_with_channel(8, 3, &channel, 0).unwrap();
    let (a, b) = connect(&pd, &cq);
    let tx = pd.allocate::<u64>(8).unwrap();
    let rx = pd.allocate::<u64>(8).unwrap();
    let rs: Vec<_> = (0..4).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
    let recvs: Vec<_> = (0..4)
        .map(|i| ReceiveRequest::new(100 + i as u64, &rs[i]))
        .collect();
    // SAFETY: the regions outlive the queue pairs.
    unsafe { b.post_receive_list(&recvs) }.unwrap();
    armed.req_notify(false).unwrap();

    restore.delete_while_open();
    removal::works_on(&ctx, &pd, &cq, &a, &tx);
    // Everything goes without a destroy error, and then the removal completes.
    drop((a, b));
    drop((armed, channel, cq, tx, rx, pd));
    assert_eq!(uverbs_drivers::drop_errors(), drops, "destroy errors");
    restore.completes_on_close(ctx);
    // Back again, and working.
    restore.add_back().unwrap();
    removal::works_again(&name);
}
