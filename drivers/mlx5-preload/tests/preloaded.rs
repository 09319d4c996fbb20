//! The preload library in a process: each case re-runs this test binary as a child with
//! `LD_PRELOAD=libuverbs_mlx5_preload.so` (the library's cdylib, built with this test), so that
//! the child's own `open`, `close`, `fstat`, `write` and `mmap` calls, and its `fork`, go through the
//! library as a C program's do.
//!
//! * A forked child that exits normally runs the library's exit handler too: it must leave the
//!   parent's model sysfs tree alone (the parent lists its device afterwards).

use std::ffi::CString;
use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::Command;

use uverbs_drivers::discover;

/// Set in the child: run the case.
const CHILD: &str = "UVERBS_PRELOAD_TEST_CHILD";
/// What the child prints once its case passed.
const DONE: &str = "preload child: done";

/// The library, next to this test binary (`target/<profile>/deps/`).
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.with_file_name("libuverbs_mlx5_preload.so");
    assert!(
        lib.exists(),
        "{} is missing (cargo builds the cdylib with this test)",
        lib.display()
    );
    lib
}

/// Runs `test` again in a child under the library; panics (with its output) unless it passed.
fn run_child(test: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("LD_PRELOAD", library())
        .env("UVERBS_PRELOAD_QUIET", "1")
        // The library's own model, its own tree (which it names in SYSFS_PATH).
        .env_remove("SYSFS_PATH")
        .env_remove(uverbs_drivers::sys::remote::SOCKET_ENV)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(DONE),
        "the child ({}) failed:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether this process is the child (under the library).
fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The model's sysfs tree, which the library's constructor named in `SYSFS_PATH`.
fn sysfs_root() -> PathBuf {
    PathBuf::from(std::env::var_os("SYSFS_PATH").expect("the library did not set SYSFS_PATH"))
}

/// The devices listed in the tree at `root`, by name, as libibverbs lists them (from sysfs).
fn listed(root: &Path) -> Result<Vec<String>, String> {
    discover::devices_in(root, Path::new("/dev/infiniband"), None)
        .map(|d| d.into_iter().map(|d| d.name).collect())
        .map_err(|e| e.to_string())
}

/// The model's device node, opened read-write (through the library's `open`).
fn open_device(root: &Path) -> OwnedFd {
    let info = discover::devices_in(root, Path::new("/dev/infiniband"), None)
        .unwrap()
        .into_iter()
        .next()
        .expect("no device listed");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&info.devnode)
        .unwrap_or_else(|e| panic!("opening {}: {e}", info.devnode.display()));
    file.into()
}

/// `fstat(fd)`'s file type (through the library's `fstat`).
fn file_type(fd: RawFd) -> libc::mode_t {
    // SAFETY: plain integers; all zeros is a valid `struct stat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a `struct stat` to write.
    assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0, "fstat({fd})");
    st.st_mode & libc::S_IFMT
}

#[test]
fn a_forked_child_that_exits_leaves_the_parents_sysfs_tree() {
    if !in_child() {
        run_child("a_forked_child_that_exits_leaves_the_parents_sysfs_tree");
        return;
    }
    let root = sysfs_root();
    assert_eq!(listed(&root).unwrap(), ["mlx5_0"]);
    let dev = open_device(&root);
    // SAFETY: the forked child calls nothing but `exit`, which runs the exit handlers (the
    // library's among them) as a program's normal exit does.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: ends the forked child normally.
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is an int to write.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the forked child ended with status {status:#x}"
    );
    assert!(
        root.is_dir(),
        "the forked child's exit removed the parent's sysfs tree {}",
        root.display()
    );
    assert_eq!(
        listed(&root),
        Ok(vec!["mlx5_0".to_owned()]),
        "the parent's device listing after the forked child exited"
    );
    // The parent's open file is still the device.
    assert_eq!(file_type(dev.as_raw_fd()), libc::S_IFCHR);
    println!("{DONE}");
}

/// The library itself is loaded in the child (the cases above would pass vacuously otherwise).
#[test]
fn the_child_runs_under_the_library() {
    if !in_child() {
        run_child("the_child_runs_under_the_library");
        return;
    }
    let root = sysfs_root();
    assert_eq!(listed(&root).unwrap(), ["mlx5_0"]);
    let node = CString::new("/dev/infiniband/uverbs0").unwrap();
    // SAFETY: a C string; `O_RDWR` takes no mode.
    let fd = unsafe { libc::open(node.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    assert!(fd >= 0, "open: {}", std::io::Error::last_os_error());
    assert_eq!(file_type(fd), libc::S_IFCHR);
    // SAFETY: our own descriptor, closed once.
    assert_eq!(unsafe { libc::close(fd) }, 0);
    println!("{DONE}");
}
