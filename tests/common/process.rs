//! Tools run as bounded child processes: their output is collected as they run, a deadline kills
//! them, and a server's listening socket is found without connecting to it.
//!
//! The tests build the [`Command`] (which tool, which arguments) and say what it is; everything
//! else is here.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);

/// A running child whose output is being collected.
#[derive(Debug)]
pub struct Running {
    what: String,
    child: Child,
    out: Option<JoinHandle<Vec<u8>>>,
    err: Option<JoinHandle<Vec<u8>>>,
}

/// What a finished (or killed) child left.
#[derive(Debug)]
pub struct Done {
    /// The command line, as the test described it.
    pub what: String,
    /// How it exited; `None` when it had to be killed.
    pub status: Option<ExitStatus>,
    /// Everything it wrote to stdout, as text.
    pub stdout: String,
    /// Everything it wrote to stderr, as text.
    pub stderr: String,
}

impl Done {
    /// The exit code; `None` when it was killed (by the deadline or a signal).
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--- {} (status {:?}) ---\nstdout:\n{}stderr:\n{}",
            self.what, self.status, self.stdout, self.stderr
        )
    }
}

/// Reads `r` to its end on a thread of its own (so that a full pipe never blocks the child).
fn drain<R: Read + Send + 'static>(r: Option<R>) -> Option<JoinHandle<Vec<u8>>> {
    r.map(|mut r| {
        thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    })
}

impl Running {
    /// Starts `cmd` (described as `what`) with stdin from `/dev/null` and stdout and stderr
    /// collected; fails the test if it cannot be started.
    pub fn spawn(what: String, mut cmd: Command) -> Running {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        Running {
            what,
            child,
            out,
            err,
        }
    }

    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits until `deadline`, then kills it; the status is `None` when it had to be killed.
    pub fn finish(mut self, deadline: Instant) -> Done {
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        let text = |h: Option<JoinHandle<Vec<u8>>>| {
            String::from_utf8_lossy(&h.map(|h| h.join().unwrap_or_default()).unwrap_or_default())
                .into_owned()
        };
        Done {
            what: self.what,
            status,
            stdout: text(self.out),
            stderr: text(self.err),
        }
    }
}

/// Whether something listens on TCP `port` (IPv4 or IPv6), from `/proc/net/tcp{,6}`. Probing with a
/// connection would not do: the servers under test accept exactly one client.
pub fn listening(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                // local_address is column 1, st column 3; 0A is LISTEN.
                cols.len() > 3 && cols[1].ends_with(&want) && cols[3] == "0A"
            })
    })
}

/// The command lines of a server and its client on `port` over loopback, as rdma-core's example
/// programs and perftest both take them: the server's `args` and `-p PORT`, the client's `args`,
/// `-p PORT` and `127.0.0.1`.
pub fn loopback_args(port: u16, server: &[&str], client: &[&str]) -> (Vec<String>, Vec<String>) {
    let p = port.to_string();
    let with = |args: &[&str], tail: &[&str]| -> Vec<String> {
        args.iter().chain(tail).map(|s| s.to_string()).collect()
    };
    (
        with(server, &["-p", &p]),
        with(client, &["-p", &p, "127.0.0.1"]),
    )
}

/// Runs a client against a server: waits up to `listen_limit` for `server` to listen on `port`
/// (failing the test, with the server's output, if it exits or the time runs out first), then
/// starts the client with `client` and gives both `run_limit` in all. A side still running at the
/// deadline is killed; when the client had to be killed, the server is killed at once. Returns
/// what the server and the client left, in that order.
pub fn serve_then_connect(
    port: u16,
    mut server: Running,
    client: impl FnOnce() -> Running,
    listen_limit: Duration,
    run_limit: Duration,
) -> (Done, Done) {
    let listen_deadline = Instant::now() + listen_limit;
    while !listening(port) {
        if server.exited() || Instant::now() > listen_deadline {
            let s = server.finish(Instant::now());
            panic!("the server never listened on port {port}\n{s}");
        }
        thread::sleep(POLL);
    }
    let deadline = Instant::now() + run_limit;
    let c = client().finish(deadline);
    let s = server.finish(if c.status.is_some() {
        deadline
    } else {
        Instant::now()
    });
    (s, c)
}
