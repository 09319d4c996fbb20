//! No panic from any `Drop` (issue 13): a destroy the kernel refuses is reported on stderr, and
//! the report must not panic when stderr cannot be written. `eprintln!` panics on any write error
//! but `EBADF` (std ignores a closed stderr), so the test re-runs itself with stderr on
//! `/dev/full`, where every write fails with `ENOSPC`, has the model refuse a deregistration, and
//! drops the region. Runs on the mlx5 model (`--features mlx5-model`), which can refuse a destroy.
#![cfg(feature = "mlx5-model")]

use std::fs::File;
use std::io::Write;
use std::process::Command;

use uverbs::model::Mlx5Model;

/// Set in the child: run the drop with stderr failing.
const CHILD: &str = "UVERBS_DROP_REPORT_CHILD";
/// What the child prints on stdout once the drop returned.
const DONE: &str = "the refused deregistration was reported; no panic";

#[test]
fn a_refused_destroy_is_reported_without_panicking_when_stderr_fails() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let full = File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_refused_destroy_is_reported_without_panicking_when_stderr_fails",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stderr(full)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(DONE),
        "the child ({}) did not get through the drop:\n{stdout}",
        out.status
    );
}

fn child() {
    assert!(
        std::io::stderr().write_all(b"x").is_err(),
        "stderr must fail for this test to mean anything"
    );
    let model = Mlx5Model::new().unwrap();
    let list = model.devices().unwrap();
    let ctx = list.iter().next().unwrap().open().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let region = pd.allocate::<u8>(4096).unwrap();
    model.refuse_next_destroy(uverbs_drivers::uapi::UVERBS_OBJECT_MR, libc::EBUSY);
    let errors = uverbs::drop_errors();
    drop(region);
    assert!(
        uverbs::drop_errors() > errors,
        "the destroy was not refused"
    );
    println!("{DONE}");
}
