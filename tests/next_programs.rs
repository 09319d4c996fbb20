//! The proof programs of `uverbs::next` (`examples/next/*.rs`): programs written for the `ibverbs`
//! crate's main-branch API, with nothing of uverbs in them but `use uverbs::next as ibverbs;`,
//! each run as a process of its own on a device, which must exit 0 and print its `… ok` line.
//!
//! The device is the one [`any_device`] gives the verbs suites: the kernel device the harness
//! promised (`UVERBS_TEST_DEVICE`, rxe0 in the VM), which the program is pointed at by name
//! (`IBVERBS_DEVICE`); or else the mlx5 model, which this test serves on a unix socket, as the
//! `uverbs-mlx5-model serve` daemon serves it, for the program to find through
//! `UVERBS_MODEL_SOCKET`.
//!
//! `cargo test` builds the examples this runs; `cargo test --test next_programs` alone does not
//! (`cargo build --examples` does).

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::any_device;
use common::process::{Done, Running};
use uverbs_drivers::sys::remote::SOCKET_ENV;

/// How long a program may run: it waits up to a minute for a completion itself, and soft-RoCE
/// under emulation is slow.
const LIMIT: Duration = Duration::from_secs(180);

/// The variable the programs take a device's name from (else they use the first device).
const DEVICE_ENV: &str = "IBVERBS_DEVICE";

/// The built example `name` (`next_loopback`, …), next to this test's own directory.
fn example(name: &str) -> PathBuf {
    let path = std::env::current_exe()
        .unwrap()
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("examples").join(name))
        .unwrap();
    assert!(
        path.is_file(),
        "{} is missing (cargo test builds the examples; with --test alone, run \
         cargo build --examples first)",
        path.display()
    );
    path
}

/// A fresh directory for the model's socket.
fn socket_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("uverbs-next.{}.{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs example `name` with `args` on the test's device, and returns what it left once it exited
/// (or was killed at [`LIMIT`]). Also returns the device's name.
fn run(test: &str, name: &str, args: &[&str]) -> (Done, String) {
    let dev = any_device(test).expect("a device to run on");
    let mut cmd = Command::new(example(name));
    cmd.args(args).env_remove(SOCKET_ENV).env_remove(DEVICE_ENV);
    // The model's server and its socket's folder, while the program runs.
    let mut served = None;
    match dev.model() {
        Some(model) => {
            let dir = socket_dir(test);
            let sock = dir.join("model.sock");
            let server = model.serve(&sock).expect("serving the mlx5 model");
            cmd.env(SOCKET_ENV, &sock);
            served = Some((server, dir));
        }
        None => {
            cmd.env(DEVICE_ENV, dev.name());
        }
    }
    let what = format!(
        "{} on {}",
        [name]
            .iter()
            .chain(args)
            .copied()
            .collect::<Vec<_>>()
            .join(" "),
        dev.name()
    );
    let done = Running::spawn(what, cmd).finish(Instant::now() + LIMIT);
    if let Some((server, dir)) = served {
        drop(server);
        let _ = std::fs::remove_dir_all(dir);
    }
    (done, dev.name().to_owned())
}

/// The program exited 0 and printed `line` (a whole line of its standard output).
fn assert_ok(done: &Done, line: &str) {
    assert_eq!(done.code(), Some(0), "the program failed\n{done}");
    assert!(
        done.stdout.lines().any(|l| l == line),
        "no {line:?} line\n{done}"
    );
}

#[test]
fn loopback_receives_what_it_sent() {
    let (done, _) = run("loopback_receives_what_it_sent", "next_loopback", &[]);
    assert_ok(&done, "loopback: ok");
}

#[test]
fn doorbell_batching_lands_every_write_of_one_batch() {
    let (done, _) = run(
        "doorbell_batching_lands_every_write_of_one_batch",
        "next_doorbell_batching",
        &[],
    );
    assert_ok(&done, "doorbell_batching: ok");
    assert!(
        done.stdout
            .contains("doorbell_batching: 64 writes in one batch landed"),
        "{done}"
    );
}

/// A batch of one request (the signaled one alone), and one larger than the default.
#[test]
fn doorbell_batching_of_one_write_and_of_many() {
    for n in ["1", "256"] {
        let (done, _) = run(
            "doorbell_batching_of_one_write_and_of_many",
            "next_doorbell_batching",
            &[n],
        );
        assert_ok(&done, "doorbell_batching: ok");
        assert!(
            done.stdout.contains(&format!(
                "doorbell_batching: {n} writes in one batch landed"
            )),
            "{done}"
        );
    }
}

#[test]
fn devinfo_lists_the_device_and_its_ports() {
    let (done, name) = run(
        "devinfo_lists_the_device_and_its_ports",
        "next_devinfo",
        &[],
    );
    assert_ok(&done, "devinfo: ok");
    let out = &done.stdout;
    assert!(
        out.lines().any(|l| l == format!("hca_id:\t{name}")),
        "{name} is not listed\n{done}"
    );
    for field in [
        "fw_ver:",
        "max_qp:",
        "max_cqe:",
        "completion_timestamp_mask:",
        "port:\t1",
        "state:",
        "active_mtu:",
        "link_layer:",
        "gid_tbl_len:",
        "GID[",
    ] {
        assert!(out.contains(field), "no {field:?}\n{done}");
    }
}

#[test]
fn ud_datagrams_arrive_after_the_grh() {
    let (done, _) = run("ud_datagrams_arrive_after_the_grh", "next_ud", &[]);
    assert_ok(&done, "ud: ok");
}

#[test]
fn srq_takes_each_message_once() {
    let (done, _) = run("srq_takes_each_message_once", "next_srq", &[]);
    assert_ok(&done, "srq: ok");
}

#[test]
fn channel_wakes_with_the_queues_context() {
    let (done, _) = run("channel_wakes_with_the_queues_context", "next_channel", &[]);
    assert_ok(&done, "channel: ok");
}
