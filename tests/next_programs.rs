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
//! The connection manager's programs (`next_rdmacm_*`) need the kernel's (`rdma_cm`) and an IP
//! network on RDMA devices: the VM harness's (`tests/vm/cm-net`: rxa on 10.78.0.1, rxb on
//! 10.78.0.2, named in `UVERBS_CM_SERVER` and `UVERBS_CM_CLIENT`), as `tests/cm.rs` uses it. The
//! server listens on the server's address, and the client, in the same process, resolves it from
//! rxb (the harness routes what the guest sends to 10.78.0.1 out through vb). Outside the VM they
//! say they were skipped.
//!
//! `cargo test` builds the examples this runs; `cargo test --test next_programs` alone does not
//! (`cargo build --examples` does).

mod common;

use std::net::{IpAddr, SocketAddr};
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

/// The server's address of the VM's connection manager network, or `None` (after saying so)
/// outside it.
fn cm_server(test: &str) -> Option<IpAddr> {
    match std::env::var("UVERBS_CM_SERVER") {
        Ok(s) if !s.is_empty() => Some(s.parse().expect("UVERBS_CM_SERVER is an IP address")),
        _ => {
            assert!(
                std::env::var_os("UVERBS_VM").is_none(),
                "{test}: the VM harness promised the connection manager's network, but \
                 UVERBS_CM_SERVER is unset"
            );
            eprintln!(
                "SKIPPED {test}: no connection manager network (run under tests/vm/run, which \
                 builds the veth pair)"
            );
            None
        }
    }
}

/// Runs connection manager example `name` with the server's address (port `port`) as its
/// argument; `None` outside the VM. The server must be on the server address's device (rxa) and
/// the client on the other (rxb): each side's context is the device the connection manager chose.
fn run_cm(test: &str, name: &str, port: u16) -> Option<Done> {
    let addr = SocketAddr::new(cm_server(test)?, port).to_string();
    let mut cmd = Command::new(example(name));
    cmd.arg(&addr).env_remove(SOCKET_ENV).env_remove(DEVICE_ENV);
    let done = Running::spawn(format!("{name} {addr}"), cmd).finish(Instant::now() + LIMIT);
    for line in ["server on Context(\"rxa\")", "client on Context(\"rxb\")"] {
        assert!(
            done.stdout.lines().any(|l| l == line),
            "no {line:?}\n{done}"
        );
    }
    Some(done)
}

#[test]
fn rdmacm_connect_accepts_connects_and_delivers() {
    let Some(done) = run_cm(
        "rdmacm_connect_accepts_connects_and_delivers",
        "next_rdmacm_connect",
        18515,
    ) else {
        return;
    };
    assert_ok(&done, "rdmacm_connect: ok");
    assert!(
        done.stdout
            .contains("received: \"hello over rdmacm, from the next API\""),
        "{done}"
    );
}

/// `CmId` driven by hand: non-blocking events on the readiness descriptor, the program's own
/// queue pairs moved with `init_qp_attr`, `establish`, and the peer's `DISCONNECTED`.
#[test]
fn rdmacm_low_level_drives_the_identifiers_by_hand() {
    let Some(done) = run_cm(
        "rdmacm_low_level_drives_the_identifiers_by_hand",
        "next_rdmacm_low_level",
        18517,
    ) else {
        return;
    };
    assert_ok(&done, "rdmacm_low_level: ok");
    assert!(
        done.stdout.contains("server: the client disconnected"),
        "{done}"
    );
}
