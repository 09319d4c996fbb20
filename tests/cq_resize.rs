//! Completion queues changed while in use: `resize` with a poller on another thread (rxe: the
//! kernel copies the waiting completions into a new ring it maps out; mlx5: the device writes a
//! resize CQE into the old ring, and the driver copies the waiting CQEs into the new one, as
//! libmlx5 does), and completion moderation where the device moderates (`Capability::CqModeration`:
//! mlx5; `Unsupported` on rxe). rxe in the VM, the mlx5 model on the host.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::any_device;
use common::behaviour::Rings;
use common::verbs::RcPair;
use uverbs::{ibv_access_flags, ibv_wc, Capability, ErrorExt, SendRequest, Verb};
use uverbs_drivers::Error;

const WRITES: u64 = 300;
const DEPTH: u64 = 16;

#[test]
fn a_resize_keeps_every_completion_in_order_while_another_thread_polls() {
    let Some(dev) =
        any_device("a_resize_keeps_every_completion_in_order_while_another_thread_polls")
    else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(32, 0).unwrap();
    let (a, _b) = RcPair::new(&pd, &cq)
        .depth(DEPTH as u32, 4)
        .access(
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
        )
        .connect();
    let src = pd.allocate::<u8>(64).unwrap();
    let dst = pd.allocate::<u8>(64).unwrap();
    let sge = [src.sge(..).unwrap()];

    // Out of range: typed, before and by the kernel; the queue keeps its size.
    let before = cq.capacity();
    for n in [0, -1] {
        let err = cq.resize(n).unwrap_err();
        assert!(
            matches!(
                err.uverbs_error(),
                Some(Error::InvalidArgument {
                    verb: Verb::ResizeCq,
                    ..
                })
            ),
            "{n}: {err}"
        );
    }
    // Past the device's limit: a backend whose rings are the process's own refuses before the
    // kernel (mlx5, as at creation: the ring would not fit its 24-bit indices); where the kernel
    // allocates them (rxe), the kernel refuses.
    let err = cq.resize(i32::MAX).unwrap_err();
    let rings = dev.behaviour().rings;
    match err.uverbs_error() {
        Some(Error::InvalidArgument {
            verb: Verb::ResizeCq,
            ..
        }) if rings == Rings::Process => {}
        Some(Error::Kernel {
            verb: Verb::ResizeCq,
            ..
        }) if rings == Rings::Kernel => {}
        other => panic!("{other:?} ({err})"),
    }
    assert_eq!(cq.capacity(), before);

    // Completions in flight while the queue is resized over and over: the poller on the other
    // thread sees each exactly once, in posting order.
    let done = AtomicU64::new(0);
    let mut sizes = Vec::new();
    std::thread::scope(|s| {
        let poller = s.spawn(|| {
            let mut wc = [ibv_wc::default(); 8];
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut next = 0u64;
            while next < WRITES {
                assert!(Instant::now() < deadline, "{next} of {WRITES} completions");
                for c in cq.poll(&mut wc).unwrap().iter() {
                    assert!(c.is_valid(), "{c:?}");
                    assert_eq!(c.wr_id(), next, "completions out of order or lost");
                    next += 1;
                }
                done.store(next, Ordering::Release);
            }
        });
        for i in 0..WRITES {
            while i - done.load(Ordering::Acquire) >= DEPTH {
                assert!(!poller.is_finished(), "the poller stopped early");
                std::hint::spin_loop();
            }
            let req = SendRequest::rdma_write(i, &sge, dst.remote());
            // SAFETY: both regions outlive the scope, which joins the poller after the last
            // completion.
            unsafe { a.post_send_list(&[req]) }.unwrap();
            if i % 25 == 24 {
                let want = if (i / 25) % 2 == 0 { 200 } else { 20 };
                let got = cq.resize(want).unwrap();
                assert!(got >= want as u32, "asked for {want}, got {got}");
                assert_eq!(cq.capacity(), got);
                sizes.push(got);
            }
        }
        poller.join().unwrap();
    });
    assert!(sizes.len() >= 10, "{sizes:?}");
}

#[test]
fn moderation_is_set_where_the_device_moderates_and_unsupported_elsewhere() {
    let Some(dev) =
        any_device("moderation_is_set_where_the_device_moderates_and_unsupported_elsewhere")
    else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(16, 0).unwrap();
    if !ctx.supports(Capability::CqModeration) {
        let err = cq.set_moderation(4, 100).unwrap_err();
        assert!(
            matches!(
                err.uverbs_error(),
                Some(Error::Unsupported {
                    verb: Verb::ModifyCq
                })
            ),
            "{err}"
        );
        assert!(err.to_string().contains("MODIFY_CQ"), "{err}");
        return;
    }
    // Up to what the device reports (a ConnectX, and so the model: 65535 completions, 4095 µs,
    // the CQ context's fields), and no further.
    let caps = ctx.query_device().unwrap().raw().cq_moderation_caps;
    let (count, period) = (caps.max_cq_moderation_count, caps.max_cq_moderation_period);
    cq.set_moderation(4, 100).unwrap();
    cq.set_moderation(0, 0).unwrap();
    cq.set_moderation(count, period).unwrap();
    let err = cq
        .set_moderation(1, period.checked_add(1).expect("a period limit"))
        .unwrap_err();
    match err.uverbs_error() {
        Some(Error::Kernel {
            verb: Verb::ModifyCq,
            errno,
        }) => assert_eq!(*errno, nix::errno::Errno::EINVAL),
        other => panic!(
            "a period of {} µs: {other:?} ({err})",
            u32::from(period) + 1
        ),
    }
}

/// On the model the test can tell when the device has written the completions (its CQE count), so
/// it resizes with them waiting: grown, they are all there in order; shrunk below them, the kernel
/// refuses and nothing is lost; the queue keeps working after both.
#[test]
fn waiting_completions_survive_a_resize_on_the_model() {
    let Some(dev) = any_device("waiting_completions_survive_a_resize_on_the_model") else {
        return;
    };
    let Some(model) = dev.model() else {
        eprintln!("SKIPPED: the device's CQE count is the model's (rxe: see the threaded test)");
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, 0).unwrap();
    let (a, _b) = RcPair::new(&pd, &cq)
        .depth(8, 4)
        .access(
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
        )
        .connect();
    let src = pd.allocate::<u8>(64).unwrap();
    let dst = pd.allocate::<u8>(64).unwrap();
    let sge = [src.sge(..).unwrap()];
    let next = std::cell::Cell::new(0u64);
    let post_and_wait = |n: u64| {
        let before = model.stats().hca.cqes;
        for _ in 0..n {
            let req = SendRequest::rdma_write(next.get(), &sge, dst.remote());
            // SAFETY: both regions outlive the queue pair and every completion is polled below.
            unsafe { a.post_send_list(&[req]) }.unwrap();
            next.set(next.get() + 1);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while model.stats().hca.cqes < before + n {
            assert!(Instant::now() < deadline, "the model wrote no {n} CQEs");
            std::thread::yield_now();
        }
    };
    let drain = |want: std::ops::Range<u64>| {
        let mut wc = [ibv_wc::default(); 16];
        let got: Vec<u64> = cq
            .poll(&mut wc)
            .unwrap()
            .iter()
            .map(|c| c.wr_id())
            .collect();
        assert_eq!(got, want.collect::<Vec<_>>());
    };
    // Wrap the old ring first, so the copy crosses its end.
    for _ in 0..3 {
        post_and_wait(5);
        drain(next.get() - 5..next.get());
    }
    post_and_wait(6);
    let grown = cq.resize(100).unwrap();
    assert_eq!(grown, 127);
    drain(next.get() - 6..next.get());
    post_and_wait(7);
    // Seven waiting do not fit in a ring of 4.
    let err = cq.resize(3).unwrap_err();
    match err.uverbs_error() {
        Some(Error::Kernel {
            verb: Verb::ResizeCq,
            errno,
        }) => assert_eq!(*errno, nix::errno::Errno::EINVAL),
        other => panic!("{other:?} ({err})"),
    }
    assert_eq!(cq.capacity(), 127);
    drain(next.get() - 7..next.get());
    assert_eq!(cq.resize(3).unwrap(), 3);
    post_and_wait(2);
    drain(next.get() - 2..next.get());
}
