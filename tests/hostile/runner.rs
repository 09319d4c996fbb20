//! Running the catalogue: each case on fresh queue pairs and memory, its outcome checked, a fence
//! after a refused request to show that nothing was posted, and the guarded bytes compared.

use std::any::Any;
use std::time::{Duration, Instant};

use uverbs::{ibv_qp_state, ibv_wc, ibv_wc_status, Context, ProtectionDomain, ReceiveRequest};

use crate::case::{check, Case, Expect};
use crate::common::verbs::{send_fence, FENCE_RECV};
use crate::common::TestDevice;
use crate::fixture::Env;
use crate::guarded::{Mems, PAGE};

/// Runs `cases` (those whose name contains `UVERBS_HOSTILE_CASE`, if set), printing each with
/// its expectation and a summary; returns the failures, each as `name: why`.
pub fn run_all(
    dev: &TestDevice,
    ctx: &Context,
    pd: &ProtectionDomain<'_>,
    other_pd: &ProtectionDomain<'_>,
    cases: &[Case],
) -> Vec<String> {
    let only = std::env::var("UVERBS_HOSTILE_CASE").ok();
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut topic = "";
    for case in cases {
        if only.as_deref().is_some_and(|o| !case.name.contains(o)) {
            continue;
        }
        if case.topic != topic {
            topic = case.topic;
            eprintln!("hostile -- {topic}");
        }
        ran += 1;
        let t = Instant::now();
        let result = run_case(dev, ctx, pd, other_pd, case);
        report(
            case,
            case.expect(dev.device().driver()),
            &result,
            t.elapsed(),
        );
        if let Err(e) = result {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    eprintln!(
        "hostile ({}): {ran} of {} cases in {:.1?}, {} differing between the backends",
        dev.name(),
        cases.len(),
        started.elapsed(),
        cases.iter().filter(|c| c.rxe != c.mlx5).count()
    );
    failures
}

/// One line for one case: its name, its result and expectation, how long it took, and why the
/// backends differ where they do.
fn report(case: &Case, expect: Expect, result: &Result<(), String>, took: Duration) {
    eprintln!(
        "hostile {:<48} {:<10} {:?} {:.0?}{}",
        case.name,
        if result.is_ok() { "ok" } else { "FAILED" },
        expect,
        took,
        if case.note.is_empty() || case.rxe == case.mlx5 {
            String::new()
        } else {
            format!("  ({})", case.note)
        }
    );
}

/// Drains the async events left by earlier cases (mlx5 raises `QpAccessErr` for remote access
/// errors, which are not what these cases check).
fn drain_events(ctx: &Context) {
    while ctx.try_get_async_event().unwrap().is_some() {}
}

/// A panic's message.
fn panic_message(p: Box<dyn Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// After a case whose request was refused: shows that nothing was posted, and returns every
/// completion on the case's CQ that is not the fence's own (each one a refused request that was
/// posted all the same).
///
/// With the pair `a` → `b` in RTS, it is the shared fixture's [`send_fence`]: a receive on `b`,
/// then a zero-length SEND on `a`, waited for. `a`'s send queue completes in order, so a send that
/// a refused post had put there completes before the fence's (or holds it up, taking the fence's
/// receive: then the wait fails); `b`'s receive queue is consumed in order, so a receive that a
/// refused post had put there takes the fence's message, completes, and leaves the fence's
/// receive waiting (rxe and the model complete the receive before they acknowledge the SEND).
/// Either way the evidence is on the CQ when the fence is done, whenever the device would have
/// completed it.
///
/// What the fence cannot cover: a queue pair that the case made and destroyed (refused on its state
/// before any post), and `a` left outside RTS by the case (`send_in_error`): there no send can
/// follow, and a receive posted on `a` in ERR (flushed in order with `a`'s receive queue, not its
/// send queue) is all it has ([`error_fence`]).
fn fence(env: &Env<'_>) -> Result<Vec<ibv_wc>, String> {
    let both_rts =
        env.a.state() == ibv_qp_state::IBV_QPS_RTS && env.b.state() == ibv_qp_state::IBV_QPS_RTS;
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if both_rts {
            Ok(send_fence(&env.a, &env.b, env.cq))
        } else {
            error_fence(env)
        }
    }))
    .map_err(|p| {
        format!(
            "the fence did not complete: a request before it is stuck ({})",
            panic_message(p)
        )
    })?;
    // What the case and the fence polled while waiting for something else, and what was left.
    let mut stray = std::mem::take(&mut *env.seen.borrow_mut());
    stray.extend(waited?);
    Ok(stray)
}

/// The fence of a case that left `a` in ERR: a receive posted on `a`, whose flush completion is
/// awaited; returns what else is on the CQ by then (what the wait polled on the way is in
/// `env.seen`).
fn error_fence(env: &Env<'_>) -> Result<Vec<ibv_wc>, String> {
    let r = [env.m.rx.sge(PAGE - 8, 8)];
    // SAFETY: `rx` outlives the queue pairs, which are destroyed before it is read.
    unsafe {
        env.a
            .post_receive_list(&[ReceiveRequest::new(FENCE_RECV, &r)])
    }
    .map_err(|e| format!("posting the fence's receive on a: {e}"))?;
    let r = env.wait(FENCE_RECV);
    if r.error().map(|x| x.0) != Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR) {
        return Err(format!("the fence's receive on a in ERR: {r:?}"));
    }
    let mut buf = [ibv_wc::default(); 16];
    Ok(env.cq.poll(&mut buf).unwrap().to_vec())
}

/// Runs one case on fresh queue pairs and memory; returns its failure, if any.
fn run_case(
    dev: &TestDevice,
    ctx: &Context,
    pd: &ProtectionDomain<'_>,
    other_pd: &ProtectionDomain<'_>,
    case: &Case,
) -> Result<(), String> {
    let expect = case.expect(dev.device().driver());
    drain_events(ctx);
    let cq = ctx.create_cq(64, 0x10).unwrap();
    let m = Mems::new(pd, other_pd);
    let before = m.snapshot();
    let drops = uverbs_drivers::drop_errors();
    let mut env = Env::new(ctx, pd, other_pd, &cq, m, dev.device().driver());
    let run = case.run;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&mut env)))
        .map_err(|p| format!("panicked: {}", panic_message(p)))?;
    let result = check(case, expect, &outcome);
    // Refused requests posted nothing: no completion appears (for the cases that expect one,
    // only the case's own).
    let stray = if matches!(expect, Expect::Typed(_)) {
        fence(&env)
    } else {
        Ok(Vec::new())
    };
    let Env { a, b, m, .. } = env;
    // Nothing can write any more once the queue pairs are gone.
    drop((a, b));
    let mut damage = m.damage(&before, &case.writes);
    drop(m);
    drop(cq);
    result?;
    let stray = stray?;
    if !stray.is_empty() {
        return Err(format!("a refused post completed: {stray:?}"));
    }
    if !damage.is_empty() {
        let n = damage.len();
        damage.truncate(8);
        return Err(format!(
            "{n} bytes outside what was granted changed: {damage:?}"
        ));
    }
    if uverbs_drivers::drop_errors() != drops {
        return Err("destroying the case's objects failed".into());
    }
    Ok(())
}
