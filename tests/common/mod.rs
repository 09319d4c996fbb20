//! Shared helpers of the integration tests.
//!
//! Tests that need an RDMA device get it from [`test_device`]. The VM harness (`tests/vm/run`) sets
//! `UVERBS_TEST_DEVICE`: when it is set, the device must be there and the test fails otherwise. When it
//! is not set, the test says that it was skipped and passes without testing anything.
#![allow(dead_code)]

use std::process::{Command, Output};

/// The device the harness promised, or `None` (after saying so) when there is none to test on.
pub fn test_device(test: &str) -> Option<String> {
    match std::env::var("UVERBS_TEST_DEVICE") {
        Ok(name) if !name.is_empty() => {
            let list = uverbs::devices().unwrap_or_else(|e| {
                panic!("UVERBS_TEST_DEVICE={name} was promised, but listing devices failed: {e}")
            });
            assert!(
                list.find(&name).is_some(),
                "UVERBS_TEST_DEVICE={name} was promised, but the devices are {:?}",
                list.iter()
                    .map(|d| d.name_str().to_owned())
                    .collect::<Vec<_>>()
            );
            Some(name)
        }
        _ => {
            eprintln!("SKIPPED {test}: no RDMA device (UVERBS_TEST_DEVICE is unset; run under tests/vm/run)");
            None
        }
    }
}

/// Runs a command, failing the test if it cannot be started.
pub fn run(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"))
}

/// Runs the `uverbs` CLI built for this test.
pub fn uverbs(args: &[&str]) -> Output {
    run(env!("CARGO_BIN_EXE_uverbs"), args)
}

/// Stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that two tool outputs are identical, showing every differing line when they are not.
pub fn assert_same_output(what: &str, expected: &str, actual: &str) {
    if expected == actual {
        return;
    }
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let mut report = String::new();
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i).copied(), a.get(i).copied());
        if x != y {
            report.push_str(&format!(
                "line {}:\n  rdma-core: {x:?}\n  uverbs:    {y:?}\n",
                i + 1
            ));
        }
    }
    if report.is_empty() {
        report = "(only line endings differ)".into();
    }
    panic!(
        "{what}: outputs differ\n{report}\n--- rdma-core ---\n{expected}\n--- uverbs ---\n{actual}"
    );
}
