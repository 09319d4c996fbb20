//! Completion queues changed while in use: `resize` (rxe: the kernel copies the waiting
//! completions into a new ring) with a poller on another thread, and completion moderation.
//! rxe in the VM; on the mlx5 model, resize is a typed `Unsupported` (not built yet) and
//! moderation is checked as mlx5_ib checks it.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::any_device;
use common::verbs::RcPair;
use uverbs::{ibv_access_flags, ibv_wc, ErrorExt, SendRequest, Verb};
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

    if dev.is_mlx5() {
        let err = cq.resize(64).unwrap_err();
        assert!(
            matches!(
                err.uverbs_error(),
                Some(Error::Unsupported {
                    verb: Verb::ResizeCq
                })
            ),
            "{err}"
        );
        return;
    }

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
    let err = cq.resize(i32::MAX).unwrap_err();
    assert!(
        matches!(
            err.uverbs_error(),
            Some(Error::Kernel {
                verb: Verb::ResizeCq,
                ..
            })
        ),
        "{err}"
    );
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
fn moderation_is_set_on_mlx5_and_refused_as_unsupported_on_rxe() {
    let Some(dev) = any_device("moderation_is_set_on_mlx5_and_refused_as_unsupported_on_rxe")
    else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(16, 0).unwrap();
    if !dev.is_mlx5() {
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
    cq.set_moderation(4, 100).unwrap();
    cq.set_moderation(0, 0).unwrap();
    cq.set_moderation(u16::MAX, 4095).unwrap();
    let err = cq.set_moderation(1, 4096).unwrap_err();
    match err.uverbs_error() {
        Some(Error::Kernel {
            verb: Verb::ModifyCq,
            errno,
        }) => assert_eq!(*errno, nix::errno::Errno::EINVAL),
        other => panic!("a period of 4096 µs: {other:?} ({err})"),
    }
}
