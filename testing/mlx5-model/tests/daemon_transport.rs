//! A client whose connection to the model daemon breaks (`uverbs_drivers::sys::remote`).
//!
//! The daemon's HCA writes a client's registered memory with `process_vm_writev` for as long as the
//! daemon runs; a broken connection does not prove that it stopped. So a transport failure must
//! not read as the kernel's `EIO` of a removed device (after which a region over memory the caller
//! lent may hand it back): a region over lent memory whose deregistration fails that way aborts
//! the process. Only a daemon that has exited (it can no longer write anything) is a device that
//! is gone.
//!
//! Each case runs this test binary again as a child client, since the outcome that keeps memory
//! safe may be an abort.

use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::socket::{self, sockopt, SockType, UnixAddr};
use uverbs_drivers::sys::remote;
use uverbs_drivers::uapi;
use uverbs_drivers::verbs::{DeviceContext, Iova, Pd, Region};
use uverbs_mlx5_model::Mlx5Model;

/// Set in the child: the daemon's socket.
const CHILD_SOCKET: &str = "UVERBS_DAEMON_TRANSPORT_SOCKET";
/// What the child prints once its region was handed back to it.
const HANDED_BACK: &str = "daemon_transport child: the region was handed back";
/// The prefix of the line that tells the errno the child's verb failed with.
const ERRNO: &str = "daemon_transport child: errno";

/// A fresh directory for a socket.
fn socket_dir(case: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "uverbs-daemon-transport.{}.{case}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `test` in a child client of the daemon at `sock`, and returns its output (whatever its
/// end).
fn run_child(test: &str, sock: &Path) -> Output {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_SOCKET, sock)
        .env_remove(remote::SOCKET_ENV)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The errno the child printed, and its whole output.
fn child_errno(out: &Output) -> (Option<String>, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = format!(
        "status {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let errno = stdout
        .lines()
        .find_map(|l| l.split_once(ERRNO).map(|(_, e)| e))
        .map(|e| e.trim().to_owned());
    (errno, text)
}

/// The child: a context on the daemon at `sock`, a region over memory it lends (the caller's, as
/// a borrowed slice's is), then `cut` (which ends the daemon's service one way or another), then a verb (whose
/// errno is printed) and the region's drop.
fn client(sock: &Path, cut: impl FnOnce(&remote::RemoteInfo)) {
    // SAFETY: the daemon at `sock` is the parent test's (`uverbs-mlx5-model serve` or the
    // model's `serve`), a uverbs-mlx5-model daemon.
    let daemon = unsafe { remote::RemoteFile::connect(sock) }
        .expect("connecting to the daemon")
        .info()
        .clone();
    // SAFETY: as above.
    let info = unsafe { uverbs_drivers::discover::remote_device(sock) }.unwrap();
    let ctx = Arc::new(DeviceContext::open(&info).expect("opening the daemon's device"));
    let pd = Arc::new(Pd::alloc(&ctx).unwrap());
    let mut buf = vec![0u8; 4096];
    let access = uapi::IB_UVERBS_ACCESS_LOCAL_WRITE | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE;
    let elements = std::ptr::NonNull::new(buf.as_mut_ptr()).unwrap();
    // SAFETY: `buf`'s 4096 bytes stay allocated, and are not touched, until after the region's
    // drop below has returned.
    let region =
        unsafe { Region::register_foreign(&pd, elements, buf.len(), access, Iova::Address) }
            .unwrap();
    cut(&daemon);
    let e = Pd::alloc(&ctx).expect_err("a verb on a broken connection succeeded");
    println!("{ERRNO} {:?}", e.errno());
    drop(region);
    // Only where the memory is safe to have back: the daemon can no longer write it.
    println!("{HANDED_BACK}");
    drop(buf);
}

/// Shuts down every connection of this process to the daemon at `sock` (the daemon itself keeps
/// running, and may for all the client knows keep its registrations).
fn break_connections(sock: &Path) {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc/self/fd").unwrap() {
        let Ok(fd) = entry.unwrap().file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // SAFETY: only looked at (and shut down, not closed) while this function runs; a number
        // that is not open fails the calls below.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        if socket::getsockopt(&fd, sockopt::SockType) != Ok(SockType::SeqPacket) {
            continue;
        }
        let peer = socket::getpeername::<UnixAddr>(fd.as_raw_fd()).ok();
        if peer.as_ref().and_then(UnixAddr::path) == Some(sock) {
            socket::shutdown(fd.as_raw_fd(), socket::Shutdown::Both).unwrap();
            n += 1;
        }
    }
    assert!(n > 0, "no connection to {} found", sock.display());
}

#[test]
fn a_broken_connection_to_a_running_daemon_is_not_a_removed_device() {
    const TEST: &str = "a_broken_connection_to_a_running_daemon_is_not_a_removed_device";
    if let Some(sock) = std::env::var_os(CHILD_SOCKET) {
        let sock = PathBuf::from(sock);
        client(&sock, |_| break_connections(&sock));
        return;
    }
    // The daemon: this process, which runs on whatever its client's connection does.
    let model = Mlx5Model::new().unwrap();
    let dir = socket_dir("broken");
    let sock = dir.join("model.sock");
    let server = model.serve(&sock).unwrap();
    let out = run_child(TEST, &sock);
    let (errno, text) = child_errno(&out);
    assert!(
        errno.is_some(),
        "the child did not get to its verb:\n{text}"
    );
    assert_ne!(
        errno.as_deref(),
        Some("EIO"),
        "a broken connection read as a removed device (EIO):\n{text}"
    );
    assert!(
        !text.contains(HANDED_BACK),
        "lent memory was handed back while the daemon may still write it:\n{text}"
    );
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "the child was to abort in the region's drop:\n{text}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The daemon binary, started with `--print-sysfs`: its process and its sysfs tree (which a daemon
/// that is killed leaves behind).
fn start_daemon(sock: &Path) -> (Child, PathBuf) {
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_uverbs-mlx5-model"))
        .args(["serve", "--print-sysfs", "--socket"])
        .arg(sock)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The tree's root is printed once the socket is ready.
    let mut line = String::new();
    BufReader::new(daemon.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(!line.is_empty(), "the daemon did not start");
    (daemon, PathBuf::from(line.trim()))
}

#[test]
fn a_daemon_that_exited_is_a_removed_device() {
    const TEST: &str = "a_daemon_that_exited_is_a_removed_device";
    if let Some(sock) = std::env::var_os(CHILD_SOCKET) {
        client(Path::new(&sock), |daemon| {
            // Killed (not reaped: its parent, the test, waits on this child first). A zombie runs
            // no more threads: nothing of it writes this process's memory any more.
            let pid = nix::unistd::Pid::from_raw(daemon.pid);
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            // Until it is a zombie: `/proc/<pid>/stat`'s state `Z`.
            while !std::fs::read_to_string(format!("/proc/{}/stat", daemon.pid)).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim().starts_with('Z'))
            }) {
                assert!(Instant::now() < deadline, "the daemon did not die");
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        println!("daemon_transport child: done");
        return;
    }
    let dir = socket_dir("exited");
    let sock = dir.join("model.sock");
    let (mut daemon, tree) = start_daemon(&sock);
    let out = run_child(TEST, &sock);
    let _ = daemon.kill();
    let _ = daemon.wait();
    let _ = std::fs::remove_dir_all(&tree);
    let _ = std::fs::remove_dir_all(&dir);
    let (errno, text) = child_errno(&out);
    assert_eq!(errno.as_deref(), Some("EIO"), "{text}");
    assert!(
        out.status.success() && text.contains(HANDED_BACK),
        "a daemon that exited writes nothing: the region's memory comes back:\n{text}"
    );
}
