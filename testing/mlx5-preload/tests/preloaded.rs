//! The preload library in a process: each case re-runs this test binary as a child with
//! `LD_PRELOAD=libuverbs_mlx5_preload.so` (the library's cdylib, built with this test), so that
//! the child's own `open`, `close`, `fstat`, `write` and `mmap` calls, and its `fork`, go through the
//! library as a C program's do.
//!
//! * A forked child that exits normally runs the library's exit handler too: it must leave the
//!   parent's model sysfs tree alone (the parent lists its device afterwards).
//! * A descriptor of the device closed without the library's `close` (a raw `syscall(SYS_close)`,
//!   `close_range`) must not make the next file to get its number the device: the file's bytes go
//!   to the file, not to the model as commands.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
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

/// A scratch file's path, in a directory of this process's.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("uverbs-preload-test.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Gives `file` the number `fd` (free now: its descriptor was closed behind the library's back),
/// if it did not get it by itself: by system calls, not libc's `dup3` and `close`, which the
/// library sees (closing the model's own descriptors can free a lower number first).
fn onto(file: OwnedFd, fd: RawFd) -> OwnedFd {
    if file.as_raw_fd() == fd {
        return file;
    }
    let from = file.into_raw_fd();
    // SAFETY: `fd` is free (closed above) and `from` ours; `from` is closed once, here.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_dup3, from, fd, libc::O_CLOEXEC),
            libc::c_long::from(fd)
        );
        assert_eq!(libc::syscall(libc::SYS_close, from), 0);
    }
    // SAFETY: `fd` is the duplicate made above, ours alone.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Bytes that parse as a legacy uverbs command (`QUERY_DEVICE`, whose response pointer is 0):
/// what the model would try to run if the file were taken for the device.
fn command_bytes() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&1u32.to_ne_bytes()); // IB_USER_VERBS_CMD_QUERY_DEVICE
    b.extend_from_slice(&6u16.to_ne_bytes()); // in_words: this header and the response pointer
    b.extend_from_slice(&(176u16 / 4).to_ne_bytes()); // out_words
    b.extend_from_slice(&0u64.to_ne_bytes()); // response
    b
}

/// Opens the device, closes its descriptor with `close_behind` (not the library's `close`), and
/// has a regular file take the number: `fstat`, `write`, `read` and `mmap` on that number are the
/// file's.
fn a_file_takes_the_number_after(scratch_name: &str, close_behind: impl FnOnce(RawFd)) {
    let root = sysfs_root();
    let fd = open_device(&root).into_raw_fd();
    assert_eq!(file_type(fd), libc::S_IFCHR, "the device is not served");
    close_behind(fd);
    let path = scratch(scratch_name);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    let mut file = std::fs::File::from(onto(file.into(), fd));
    let bytes = command_bytes();
    file.write_all(&bytes)
        .expect("writing the file (taken for the device?)");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    file.seek(SeekFrom::Start(0)).unwrap();
    let mut back = Vec::new();
    file.read_to_end(&mut back).unwrap();
    assert_eq!(back, bytes);
    assert_eq!(
        file_type(fd),
        libc::S_IFREG,
        "fstat of the file reports the device"
    );
    // A page of the file maps the file.
    file.set_len(4096).unwrap();
    // SAFETY: a new shared read-only mapping of our own file, unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    assert_ne!(
        p,
        libc::MAP_FAILED,
        "mmap of the file: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: the mapping above is 4096 readable bytes.
    let mapped = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), bytes.len()) }.to_vec();
    // SAFETY: our own mapping, made above.
    unsafe { libc::munmap(p, 4096) };
    assert_eq!(mapped, bytes, "the mapping is not the file's");
    drop(file);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_descriptor_closed_by_a_raw_system_call_is_not_the_device_any_more() {
    if !in_child() {
        run_child("a_descriptor_closed_by_a_raw_system_call_is_not_the_device_any_more");
        return;
    }
    a_file_takes_the_number_after("raw-close", |fd| {
        // SAFETY: closes our own descriptor, which nothing uses any more, without libc's `close`.
        assert_eq!(unsafe { libc::syscall(libc::SYS_close, fd) }, 0);
    });
    println!("{DONE}");
}

#[test]
fn a_descriptor_closed_by_close_range_is_not_the_device_any_more() {
    if !in_child() {
        run_child("a_descriptor_closed_by_close_range_is_not_the_device_any_more");
        return;
    }
    a_file_takes_the_number_after("close-range", |fd| {
        let fd = libc::c_uint::try_from(fd).unwrap();
        // SAFETY: closes our own descriptor (alone in the range), which nothing uses any more.
        assert_eq!(unsafe { libc::close_range(fd, fd, 0) }, 0);
    });
    println!("{DONE}");
}

#[test]
fn an_eventfd_given_the_number_of_a_lost_device_descriptor_is_an_eventfd() {
    if !in_child() {
        run_child("an_eventfd_given_the_number_of_a_lost_device_descriptor_is_an_eventfd");
        return;
    }
    let fd = open_device(&sysfs_root()).into_raw_fd();
    // SAFETY: closes our own descriptor, which nothing uses any more, without libc's `close`.
    assert_eq!(unsafe { libc::syscall(libc::SYS_close, fd) }, 0);
    // SAFETY: a new eventfd; owned below.
    let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    assert!(efd >= 0, "eventfd: {}", std::io::Error::last_os_error());
    // SAFETY: just made, ours alone.
    let efd = onto(unsafe { OwnedFd::from_raw_fd(efd) }, fd);
    let add = 7u64.to_ne_bytes();
    // SAFETY: 8 readable bytes.
    let n = unsafe { libc::write(efd.as_raw_fd(), add.as_ptr().cast(), 8) };
    assert_eq!(
        n,
        8,
        "write to the eventfd: {}",
        std::io::Error::last_os_error()
    );
    let mut count = [0u8; 8];
    // SAFETY: 8 writable bytes.
    let n = unsafe { libc::read(efd.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
    assert_eq!(n, 8);
    assert_eq!(u64::from_ne_bytes(count), 7);
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
