//! Completion timestamps: a completion queue created with `CqAttr::timestamps` reports the device's
//! clock in every completion, and `Context::device_clock` turns it into wall-clock time through
//! the clock-info page the kernel maps (mlx5). On the mlx5 model the timestamps of real traffic
//! rise with the order of completion and convert to the wall-clock time the test saw around the
//! traffic; rxe has no timestamps, so there both are a typed `Unsupported` (the test asks
//! `Context::supports`: `Capability::CompletionTimestamps`, `DeviceClock`).

mod common;

use std::time::{Duration, SystemTime};

use common::any_device;
use common::verbs::RcPair;
use uverbs::{ibv_access_flags, Capability, CqAttr, ErrorExt, SendRequest, TimestampedWc, Verb};
use uverbs_drivers::Error;

fn unsupported(err: &std::io::Error, verb: Verb) {
    assert!(
        matches!(err.uverbs_error(), Some(Error::Unsupported { verb: v }) if *v == verb),
        "expected Unsupported for {verb}, got {err}"
    );
}

#[test]
fn completions_carry_the_device_clock_and_it_converts_to_wall_clock_time() {
    let Some(dev) =
        any_device("completions_carry_the_device_clock_and_it_converts_to_wall_clock_time")
    else {
        return;
    };
    let ctx = dev.open();
    let attr = CqAttr {
        min_entries: 16,
        timestamps: true,
        ..CqAttr::default()
    };
    let cq = ctx.create_cq_ex(&attr);
    let timestamps = ctx.supports(Capability::CompletionTimestamps);
    let clock = ctx.supports(Capability::DeviceClock);
    if !timestamps {
        unsupported(cq.as_ref().unwrap_err(), Verb::CreateCq);
    }
    if !clock {
        unsupported(&ctx.device_clock().unwrap_err(), Verb::ReadClock);
    }
    if !(timestamps && clock) {
        eprintln!(
            "SKIPPED: {} has {}",
            dev.name(),
            if timestamps {
                "no device clock"
            } else {
                "no completion timestamps"
            }
        );
        return;
    }
    let cq = cq.unwrap();
    let clock = ctx.device_clock().unwrap();
    assert!(ctx.query_device().unwrap().hca_core_clock() > 0);

    let pd = ctx.alloc_pd().unwrap();
    let (a, _b) = RcPair::new(&pd, &cq)
        .access(
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
        )
        .connect();
    let src = pd.allocate::<u8>(4096).unwrap();
    let dst = pd.allocate::<u8>(4096).unwrap();
    let sge = [src.sge(..).unwrap()];
    let before = SystemTime::now();
    let mut got = Vec::new();
    for id in 0..4u64 {
        let req = SendRequest::rdma_write(id, &sge, dst.remote());
        // SAFETY: both regions outlive the queue pair; each write is polled before the next.
        unsafe { a.post_send_list(&[req]) }.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut out = [TimestampedWc::default(); 4];
            let polled = cq.poll_timestamped(&mut out).unwrap();
            if let Some(c) = polled.first() {
                assert_eq!(polled.len(), 1);
                assert!(c.wc.is_valid(), "{:?}", c.wc);
                assert_eq!(c.wc.wr_id(), id);
                got.push(c.timestamp);
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no completion");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let after = SystemTime::now();
    // The device's clock rises with each completion (2 ms apart, at 1 GHz on the model)...
    assert!(got.iter().all(|&t| t != 0), "{got:?}");
    assert!(got.windows(2).all(|w| w[1] > w[0]), "{got:?}");
    // ...and reads as wall-clock time between the test's two looks at it (1 ms of slack for the
    // clocks' granularity).
    let slack = Duration::from_millis(1);
    for &t in &got {
        let at = clock.to_system_time(t);
        assert!(
            at + slack >= before && at <= after + slack,
            "timestamp {t}: {at:?} outside {before:?}..{after:?}"
        );
    }
    let spread = clock.to_unix_nanos(got[3]) - clock.to_unix_nanos(got[0]);
    assert!(
        spread >= 6_000_000,
        "{spread} ns between the first and the last"
    );

    // A queue created without timestamps refuses the timestamped poll, typed.
    let plain = ctx.create_cq(4, 0).unwrap();
    let err = plain
        .poll_timestamped(&mut [TimestampedWc::default(); 1])
        .unwrap_err();
    assert!(
        matches!(
            err.uverbs_error(),
            Some(Error::InvalidArgument {
                verb: Verb::PollCq,
                ..
            })
        ),
        "{err}"
    );
}
