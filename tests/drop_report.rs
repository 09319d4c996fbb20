//! Destroy errors in `Drop` (issue 14): the library never writes to stdout or stderr; each refused
//! destroy is counted and handed, once, to the hook the application installed
//! (`uverbs::set_drop_error_hook`), and a panicking hook never makes `Drop` panic (issue 13: a
//! panic out of a `Drop` during unwinding aborts). Each case re-runs this test binary as a child
//! with stderr captured, so that what the library writes and whether the process aborts can be
//! seen. Runs on the mlx5 model, which can refuse a destroy.

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use uverbs::{ProtectionDomain, Verb};
use uverbs_drivers::uapi::UVERBS_OBJECT_MR;
use uverbs_mlx5_model::Mlx5Model;

/// Set in the child: the name of the case to run.
const CHILD: &str = "UVERBS_DROP_REPORT_CHILD";
/// What the child prints on stdout once its drops returned.
const DONE: &str = "drop_report child: done";

/// Runs `case` in a child process; returns its output once it succeeded and printed [`DONE`].
fn run_child(test: &str, case: &str) -> Output {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, case)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(DONE),
        "the child ({}) did not get through its drops:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The case this process runs as a child, if it is one.
fn child_case() -> Option<String> {
    std::env::var(CHILD).ok()
}

/// Runs `f` with a protection domain on the model, and the model to refuse destroys with.
fn with_pd(f: impl FnOnce(&Mlx5Model, &ProtectionDomain<'_>)) {
    let model = Mlx5Model::new().unwrap();
    let list = uverbs::DeviceList::from_infos(vec![model.device_info()]).unwrap();
    let ctx = list.iter().next().unwrap().open().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    f(&model, &pd);
}

/// Drops a region whose deregistration the model refuses with `EBUSY`.
fn drop_refused_region(model: &Mlx5Model, pd: &ProtectionDomain<'_>) {
    let region = pd.allocate::<u8>(4096).unwrap();
    model.refuse_next_destroy(UVERBS_OBJECT_MR, libc::EBUSY);
    let errors = uverbs::drop_errors();
    drop(region);
    assert_eq!(
        uverbs::drop_errors(),
        errors + 1,
        "the destroy was not refused"
    );
}

#[test]
fn without_a_hook_nothing_is_written() {
    let Some(_) = child_case() else {
        let out = run_child("without_a_hook_nothing_is_written", "no hook");
        assert!(
            out.stderr.is_empty(),
            "the library wrote to stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    };
    with_pd(|model, pd| {
        drop_refused_region(model, pd);
        drop_refused_region(model, pd);
    });
    println!("{DONE}");
}

/// What the hook heard of one event: the object, the verb, the errno and the event's text.
type Heard = (&'static str, Option<Verb>, i32, String);

#[test]
fn the_hook_hears_each_refused_destroy_once() {
    let Some(_) = child_case() else {
        let out = run_child("the_hook_hears_each_refused_destroy_once", "hook");
        assert!(
            out.stderr.is_empty(),
            "the library wrote to stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    };
    let heard: Arc<Mutex<Vec<Heard>>> = Arc::default();
    let h = heard.clone();
    uverbs::set_drop_error_hook(move |e| {
        h.lock().unwrap().push((
            e.object,
            e.error.verb(),
            e.error.errno() as i32,
            e.to_string(),
        ));
    });
    with_pd(|model, pd| {
        // A destroy that succeeds is not an event.
        drop(pd.allocate::<u8>(4096).unwrap());
        assert!(heard.lock().unwrap().is_empty());
        drop_refused_region(model, pd);
        drop_refused_region(model, pd);
        let expected = (
            "memory region",
            Some(Verb::DeregMr),
            libc::EBUSY,
            "destroying a memory region failed: DEREG_MR failed: EBUSY (Device or resource busy)"
                .to_owned(),
        );
        assert_eq!(*heard.lock().unwrap(), [expected.clone(), expected]);
        // Removed, it hears nothing more.
        uverbs::clear_drop_error_hook();
        drop_refused_region(model, pd);
    });
    assert_eq!(heard.lock().unwrap().len(), 2);
    println!("{DONE}");
}

#[test]
fn a_panicking_hook_does_not_make_drop_panic() {
    let Some(_) = child_case() else {
        let out = run_child(
            "a_panicking_hook_does_not_make_drop_panic",
            "panicking hook",
        );
        // The panics did happen (the default panic hook reports them), and were caught.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches("the hook panics").count(), 2, "{stderr}");
        return;
    };
    uverbs::set_drop_error_hook(|e| panic!("the hook panics on {e}"));
    with_pd(|model, pd| {
        drop_refused_region(model, pd);
        // And while unwinding, where a panic out of `Drop` would abort the process.
        let region = pd.allocate::<u8>(4096).unwrap();
        model.refuse_next_destroy(UVERBS_OBJECT_MR, libc::EBUSY);
        let errors = uverbs::drop_errors();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _region = region;
            panic!("unwinding through a region's drop");
        }));
        assert!(unwound.is_err());
        assert_eq!(uverbs::drop_errors(), errors + 1);
        // Not for the protection domain, which the model may refuse too (its regions are alive).
        uverbs::clear_drop_error_hook();
    });
    println!("{DONE}");
}
