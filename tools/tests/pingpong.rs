//! `uverbs rc-pingpong` against rdma-core's `ibv_rc_pingpong`: each side may be either tool, so the
//! TCP exchange, the queue pair setup and the data path must be wire compatible with the C ones.
//!
//! Every child process is bounded: a hang kills both sides and fails the test.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use common::process::{loopback_args, serve_then_connect, Done, Running};
use common::{stderr, stdout, test_device, uverbs};

/// How long one ping-pong run (both sides) may take.
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// How long a server may take to start listening.
const LISTEN_LIMIT: Duration = Duration::from_secs(60);

/// A distinct TCP port per run (TIME_WAIT of an earlier run must not get in the way). Each test
/// binary run starts from a base that depends on the process id, so reruns use other ports too.
fn next_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20000 + (std::process::id() % 200) as u16 * 100;
    base + NEXT.fetch_add(1, Ordering::Relaxed)
}

const UVERBS: &str = env!("CARGO_BIN_EXE_uverbs");
const IBV: &str = "ibv_rc_pingpong";

/// Which tool plays a side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Uverbs,
    Ibv,
}

impl Tool {
    /// Starts this tool's `rc-pingpong` with `args`.
    fn spawn(self, args: &[String]) -> Running {
        let mut c = match self {
            Tool::Uverbs => {
                let mut c = Command::new(UVERBS);
                c.arg("rc-pingpong");
                c
            }
            Tool::Ibv => Command::new(IBV),
        };
        c.args(args);
        let what = format!(
            "{} {}",
            match self {
                Tool::Uverbs => "uverbs rc-pingpong",
                Tool::Ibv => IBV,
            },
            args.join(" ")
        );
        Running::spawn(what, c)
    }
}

/// Runs `server` and then `client` (to 127.0.0.1) with the same `args` plus `-p PORT`; both bounded.
fn pair(server: Tool, client: Tool, args: &[&str]) -> (Done, Done) {
    pair_split(server, args, client, args)
}

/// The QPN of a `"  local address: "` or `"  remote address:"` line.
fn qpn(d: &Done, which: &str) -> String {
    d.stdout
        .lines()
        .find(|l| l.starts_with(which))
        .and_then(|l| l.split("QPN ").nth(1))
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no '{which}' line with a QPN\n{d}"))
        .to_owned()
}

/// Checks one run: both exit 0, print the summary with the right numbers, and see each other's QPN.
fn check_pair(s: &Done, c: &Done, size: u64, iters: u64) {
    let both = format!("{s}\n{c}");
    for d in [s, c] {
        assert_eq!(d.code(), Some(0), "{} failed\n{both}", d.what);
        let bytes = format!("{} bytes in ", 2 * size * iters);
        let iters_line = format!("{iters} iters in ");
        assert!(
            d.stdout
                .lines()
                .any(|l| l.starts_with(&bytes) && l.ends_with(" Mbit/sec")),
            "{} lacks '{bytes}... Mbit/sec'\n{both}",
            d.what
        );
        assert!(
            d.stdout
                .lines()
                .any(|l| l.starts_with(&iters_line) && l.ends_with(" usec/iter")),
            "{} lacks '{iters_line}... usec/iter'\n{both}",
            d.what
        );
        for line in ["  local address:  LID 0x", "  remote address: LID 0x"] {
            assert!(
                d.stdout.contains(line) && d.stdout.contains("GID ::ffff:127.0.0.1"),
                "{} lacks '{line}...GID ::ffff:127.0.0.1'\n{both}",
                d.what
            );
        }
        assert!(
            !d.stdout.contains("invalid data"),
            "{}: invalid data\n{both}",
            d.what
        );
    }
    assert_eq!(
        qpn(s, "  remote address:"),
        qpn(c, "  local address:"),
        "the server's remote QPN is not the client's\n{both}"
    );
    assert_eq!(
        qpn(c, "  remote address:"),
        qpn(s, "  local address:"),
        "the client's remote QPN is not the server's\n{both}"
    );
}

/// `-n 1000` at 1, 4096 and 65536 bytes between `server` and `client`.
fn interop(test: &str, server: Tool, client: Tool) {
    let Some(dev) = test_device(test) else {
        return;
    };
    for size in [1u64, 4096, 65536] {
        let t = Instant::now();
        let sz = size.to_string();
        let (s, c) = pair(
            server,
            client,
            &["-d", &dev, "-g", "1", "-s", &sz, "-n", "1000"],
        );
        check_pair(&s, &c, size, 1000);
        let summary = |d: &Done| {
            d.stdout
                .lines()
                .filter(|l| l.contains(" bytes in ") || l.contains(" iters in "))
                .collect::<Vec<_>>()
                .join(", ")
        };
        eprintln!(
            "{test}: {size} bytes x 1000 in {:.1} s wall\n  server: {}\n  client: {}",
            t.elapsed().as_secs_f64(),
            summary(&s),
            summary(&c)
        );
    }
}

#[test]
fn rc_pingpong_uverbs_server_ibv_client() {
    interop(
        "rc_pingpong_uverbs_server_ibv_client",
        Tool::Uverbs,
        Tool::Ibv,
    );
}

#[test]
fn rc_pingpong_ibv_server_uverbs_client() {
    interop(
        "rc_pingpong_ibv_server_uverbs_client",
        Tool::Ibv,
        Tool::Uverbs,
    );
}

#[test]
fn rc_pingpong_uverbs_both_sides() {
    interop("rc_pingpong_uverbs_both_sides", Tool::Uverbs, Tool::Uverbs);
}

/// `-c`: the client puts 0 at each page start and the server checks it (silently when it holds).
#[test]
fn rc_pingpong_chk_validates_data() {
    let Some(dev) = test_device("rc_pingpong_chk_validates_data") else {
        return;
    };
    let args = ["-d", dev.as_str(), "-g", "1", "-s", "8192", "-n", "50"];
    let with_chk: Vec<&str> = args.iter().copied().chain(["-c"]).collect();
    // Both checking, either way round: no "invalid data" (check_pair asserts it).
    let (s, c) = pair(Tool::Uverbs, Tool::Ibv, &with_chk);
    check_pair(&s, &c, 8192, 50);
    let (s, c) = pair(Tool::Ibv, Tool::Uverbs, &with_chk);
    check_pair(&s, &c, 8192, 50);
    // Only the server checking: the client's buffer is 0x7b throughout, so both pages are reported,
    // as ibv_rc_pingpong reports them.
    let (s, c) = pair_split(Tool::Uverbs, &with_chk, Tool::Ibv, &args);
    assert_eq!(s.code(), Some(0), "{s}\n{c}");
    assert_eq!(c.code(), Some(0), "{s}\n{c}");
    let invalid: Vec<&str> = s
        .stdout
        .lines()
        .filter(|l| l.starts_with("invalid data"))
        .collect();
    assert_eq!(
        invalid,
        ["invalid data in page 0", "invalid data in page 1"],
        "{s}\n{c}"
    );
}

/// Runs `server` with `sargs`, waits until it listens, then `client` with `cargs` (to 127.0.0.1), both
/// with `-p PORT`; a side that is still running at the deadline is killed.
fn pair_split(server: Tool, sargs: &[&str], client: Tool, cargs: &[&str]) -> (Done, Done) {
    let port = next_port();
    let (sargs, cargs) = loopback_args(port, sargs, cargs);
    serve_then_connect(
        port,
        server.spawn(&sargs),
        || client.spawn(&cargs),
        LISTEN_LIMIT,
        RUN_LIMIT,
    )
}

/// `-e`: sleeping on completion events instead of polling, against the C tool either way round, and
/// against a polling peer.
#[test]
fn rc_pingpong_events() {
    let Some(dev) = test_device("rc_pingpong_events") else {
        return;
    };
    let poll = ["-d", dev.as_str(), "-g", "1", "-n", "500"];
    let events: Vec<&str> = poll.iter().copied().chain(["-e"]).collect();
    for (server, sargs, client, cargs) in [
        (Tool::Uverbs, &events, Tool::Ibv, &events),
        (Tool::Ibv, &events, Tool::Uverbs, &events),
        (Tool::Uverbs, &events, Tool::Uverbs, &events),
        (Tool::Ibv, &poll.to_vec(), Tool::Uverbs, &events),
    ] {
        let (s, c) = pair_split(server, sargs, client, cargs);
        check_pair(&s, &c, 4096, 500);
    }
}

/// Failures that need no peer exit as ibv_rc_pingpong's do, with the same message where it is one.
#[test]
fn rc_pingpong_errors_match_ibv_rc_pingpong() {
    let Some(dev) = test_device("rc_pingpong_errors_match_ibv_rc_pingpong") else {
        return;
    };
    let free_port = next_port().to_string();
    let cases: Vec<(Vec<&str>, Option<String>)> = vec![
        (vec!["--bogus"], None),
        (vec!["-x"], None),
        (vec!["a", "b"], None),
        (vec!["-m", "100"], None),
        (vec!["-p", "70000"], None),
        (vec!["-i", "0"], None),
        (
            vec!["-P"],
            Some("prefetch is valid only with on-demand memory region".into()),
        ),
        (
            vec!["-d", "nosuchdev"],
            Some("IB device nosuchdev not found".into()),
        ),
        (
            vec!["-d", &dev, "-g", "1", "-p", &free_port, "127.0.0.1"],
            Some(format!("Couldn't connect to 127.0.0.1:{free_port}")),
        ),
        (
            vec!["-d", &dev, "-g", "100000", "-p", &free_port, "127.0.0.1"],
            Some("can't read sgid of index 100000".into()),
        ),
    ];
    for (args, message) in cases {
        let theirs = Tool::Ibv
            .spawn(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .finish(Instant::now() + RUN_LIMIT);
        let ours = Tool::Uverbs
            .spawn(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .finish(Instant::now() + RUN_LIMIT);
        assert!(
            theirs.status.is_some() && ours.status.is_some(),
            "a hang\n{theirs}\n{ours}"
        );
        assert_eq!(
            theirs.code(),
            ours.code(),
            "exit status of {args:?}\n{theirs}\n{ours}"
        );
        assert_ne!(ours.code(), Some(0), "{args:?} succeeded\n{ours}");
        if let Some(m) = message {
            for d in [&theirs, &ours] {
                assert!(d.stderr.lines().any(|l| l == m), "no '{m}'\n{d}");
            }
        }
        // Usage errors print the same usage text (but for the program's name).
        if theirs.stdout.starts_with("Usage:") {
            assert_eq!(
                theirs.stdout.replace(IBV, "uverbs rc-pingpong"),
                ours.stdout,
                "usage of {args:?}"
            );
        }
    }
}

/// The options the library cannot serve yet are refused clearly, not ignored.
#[test]
fn rc_pingpong_refuses_unsupported_options() {
    if test_device("rc_pingpong_refuses_unsupported_options").is_none() {
        return;
    }
    for (opt, what) in [
        ("-o", "-o (on-demand paging)"),
        ("-O", "-O (implicit on-demand paging)"),
        ("-t", "-t (completion timestamps)"),
        ("-j", "-j (device memory)"),
        ("-N", "-N (new post send API)"),
    ] {
        let o = uverbs(&["rc-pingpong", opt]);
        assert_eq!(o.status.code(), Some(1), "{opt}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("uverbs rc-pingpong: {what} is not supported yet")),
            "{opt}: {}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty(), "{opt}: {}", stdout(&o));
    }
}
