//! An `LD_PRELOAD` library that makes the mlx5 model (`uverbs-mlx5-model`) appear as device
//! `mlx5_0` to any dynamically linked rdma-core program: rdma-core's own, unmodified libibverbs and
//! libmlx5 then drive the model exactly as they drive a kernel with a ConnectX.
//!
//! ```text
//! LD_PRELOAD=target/debug/libuverbs_mlx5_preload.so ibv_devinfo -v
//! ```
//!
//! When the library is loaded it starts one model device in the process and points libibverbs'
//! discovery at the model's sysfs tree (`SYSFS_PATH`; libibverbs' netlink discovery finds no RDMA
//! on these hosts and falls back to sysfs). Then it serves the calls libibverbs and the provider
//! make on the device:
//!
//! * `open`/`openat` of `/dev/infiniband/uverbsN` open a new file of the model (one context per file,
//!   as the kernel has it), behind a descriptor of this library's (a memfd). A descriptor is served
//!   as the model file only while it still is that memfd (its device and inode): one closed
//!   without this library's `close` (a raw `syscall(SYS_close)`, libc's own closes) is forgotten
//!   when its number next comes by, and the file that has the number now is left to libc;
//! * `fstat`/`stat` of it report the character device whose number the model's sysfs `dev` names;
//! * `ioctl(RDMA_VERBS_IOCTL)`, `write` (legacy commands) and `mmap` (UAR pages) on it go to the
//!   model's kernel half; `close` (and `close_range`, `dup2`/`dup3` over it) closes the model file.
//!
//! Everything else passes through untouched: the async event file and completion channels are the
//! model's pipes, read and polled by libibverbs directly, and the rings and doorbell records are
//! the provider's own memory, which the model's HCA reads and writes as a device does. A command the
//! model does not implement gets the errno the kernel gives one it lacks, and the library says so
//! on standard error, once per command.
//!
//! With `UVERBS_MODEL_SOCKET=PATH` the library starts no model: it serves the program's calls
//! through a model daemon (`uverbs-mlx5-model serve --socket PATH`), the model as a shared device
//! that other processes use at the same time (each `open` of the device node is a connection,
//! [`uverbs_drivers::sys::remote`]), and points `SYSFS_PATH` at the daemon's sysfs tree.
//!
//! Environment: `UVERBS_PRELOAD_QUIET=1` silences those notes; `UVERBS_PRELOAD_TRACE=1` writes
//! every command and mapping on the device, with its result, to standard error (what `strace`
//! shows of the same program on a kernel device), what the mlx5 driver answered `GET_CONTEXT`
//! (`tot_bfregs` 0: the library runs on dynamic UARs), and at exit what the model HCA's checks
//! made of the doorbells and BlueFlame copies it saw.
//!
//! The interposed functions are x86-64 Linux's: `open`, `open64`, `openat` and `ioctl` are variadic
//! in C; on this ABI their optional argument arrives in the next integer register, which is how they
//! are declared here.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![allow(clippy::missing_safety_doc)] // The interposed functions have libc's contracts.

mod real;
mod state;

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr};

use state::{device, set_errno};

/// Opens the model's device when `path` is its node; `None` for every other path.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn open_device(path: *const c_char, flags: c_int) -> Option<c_int> {
    if path.is_null() {
        return None;
    }
    // SAFETY: a non-null `path` is a C string (the caller's contract).
    let path = unsafe { CStr::from_ptr(path) };
    let dev = device()?;
    if path.to_bytes() != dev.devnode().to_bytes() {
        return None;
    }
    Some(dev.open(flags))
}

/// `open(2)`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: `path` is the caller's C string.
    if let Some(fd) = unsafe { open_device(path, flags) } {
        return fd;
    }
    // SAFETY: the caller's arguments, passed on to libc's `open`.
    unsafe { (real::open())(path, flags, mode) }
}

/// `open64(2)` (the same as `open` on 64-bit).
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: as `open`.
    unsafe { open(path, flags, mode) }
}

/// `openat(2)`: the device node is always named by an absolute path, which ignores `dirfd`.
#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: libc::mode_t,
) -> c_int {
    // SAFETY: `path` is the caller's C string.
    if let Some(fd) = unsafe { open_device(path, flags) } {
        return fd;
    }
    // SAFETY: the caller's arguments, passed on to libc's `openat`.
    unsafe { (real::openat())(dirfd, path, flags, mode) }
}

/// `openat64(2)`.
#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: libc::mode_t,
) -> c_int {
    // SAFETY: as `openat`.
    unsafe { openat(dirfd, path, flags, mode) }
}

/// `fstat(2)`: a model file is the character device of the model's sysfs `dev`.
#[no_mangle]
pub unsafe extern "C" fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int {
    if let Some(dev) = device() {
        if dev.is_file(fd) {
            // SAFETY: `buf` is the caller's `struct stat`.
            return unsafe { dev.fill_stat(buf) };
        }
    }
    // SAFETY: the caller's arguments, passed on.
    unsafe { (real::fstat())(fd, buf) }
}

/// `fstat64(2)`.
#[no_mangle]
pub unsafe extern "C" fn fstat64(fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: as `fstat` (`stat64` is `stat` on 64-bit).
    unsafe { fstat(fd, buf) }
}

/// `stat(2)`: the device node is the model's character device.
#[no_mangle]
pub unsafe extern "C" fn stat(path: *const c_char, buf: *mut libc::stat) -> c_int {
    if let Some(dev) = device() {
        // SAFETY: `path` is the caller's C string.
        if !path.is_null() && unsafe { CStr::from_ptr(path) }.to_bytes() == dev.devnode().to_bytes()
        {
            // SAFETY: `buf` is the caller's `struct stat`.
            return unsafe { dev.fill_stat(buf) };
        }
    }
    // SAFETY: the caller's arguments, passed on.
    unsafe { (real::stat())(path, buf) }
}

/// `stat64(2)`.
#[no_mangle]
pub unsafe extern "C" fn stat64(path: *const c_char, buf: *mut libc::stat) -> c_int {
    // SAFETY: as `stat`.
    unsafe { stat(path, buf) }
}

/// `ioctl(2)`: `RDMA_VERBS_IOCTL` on a model file goes to the model.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if let Some(dev) = device() {
        if let Some(file) = dev.file(fd) {
            // SAFETY: the caller's header and the buffers its attributes name are valid for the call,
            // as the kernel requires of them.
            return unsafe { dev.ioctl(&file, request, arg) };
        }
    }
    // SAFETY: the caller's arguments, passed on.
    unsafe { (real::ioctl())(fd, request, arg) }
}

/// `write(2)`: a legacy command on a model file goes to the model.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: usize) -> isize {
    if let Some(dev) = device() {
        if let Some(file) = dev.file(fd) {
            if buf.is_null() && count != 0 {
                set_errno(libc::EFAULT);
                return -1;
            }
            let cmd: &[u8] = if count == 0 {
                &[]
            } else {
                // SAFETY: the caller's buffer of `count` bytes, as `write` requires.
                unsafe { std::slice::from_raw_parts(buf.cast(), count) }
            };
            // SAFETY: the response pointer a command carries is valid for its size (the kernel's
            // requirement of the caller).
            return unsafe { dev.write(&file, cmd) };
        }
    }
    // SAFETY: the caller's arguments, passed on.
    unsafe { (real::write())(fd, buf, count) }
}

/// `mmap(2)`: a UAR page of a model file is a page of the model's.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: libc::off_t,
) -> *mut c_void {
    if let Some(dev) = device() {
        if let Some(file) = dev.file(fd) {
            return dev.mmap(&file, addr, len, flags, offset);
        }
    }
    // SAFETY: the caller's arguments, passed on.
    unsafe { (real::mmap())(addr, len, prot, flags, fd, offset) }
}

/// `mmap64(2)`.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: libc::off_t,
) -> *mut c_void {
    // SAFETY: as `mmap`.
    unsafe { mmap(addr, len, prot, flags, fd, offset) }
}

/// `dup(2)`: a duplicate of a model file's descriptor is the same open file (`ibv_import_device`
/// opens a context of another process's or a duplicated command descriptor this way).
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: the caller's descriptor, passed on.
    let new = unsafe { (real::dup())(fd) };
    share(fd, new);
    new
}

/// `dup2(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup2(fd: c_int, new: c_int) -> c_int {
    // SAFETY: the caller's descriptors, passed on.
    let r = unsafe { (real::dup2())(fd, new) };
    replaced(fd, r);
    r
}

/// `dup3(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup3(fd: c_int, new: c_int, flags: c_int) -> c_int {
    // SAFETY: the caller's descriptors, passed on.
    let r = unsafe { (real::dup3())(fd, new, flags) };
    replaced(fd, r);
    r
}

/// After `dup2`/`dup3` made `new` (or failed, negative) a duplicate of `fd`: whatever `new` stood
/// for before is closed (a model file, if it was one), and it now stands for `fd`'s.
fn replaced(fd: c_int, new: c_int) {
    if new < 0 || new == fd {
        return;
    }
    if let Some(dev) = device() {
        dev.forget(new);
    }
    share(fd, new);
}

/// `fcntl(2)`: `F_DUPFD` and `F_DUPFD_CLOEXEC` duplicate as `dup` does (Python's `os.dup` uses the
/// latter); every other command passes through.
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: the caller's arguments, passed on (the third is an integer or a pointer, as `cmd`
    // says; either travels in the same register).
    let r = unsafe { (real::fcntl())(fd, cmd, arg) };
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        share(fd, r);
    }
    r
}

/// `fcntl64(2)`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: as `fcntl`.
    unsafe { fcntl(fd, cmd, arg) }
}

/// Makes `new`, a duplicate of `fd` (or a failure, negative), stand for the same model file.
fn share(fd: c_int, new: c_int) {
    if new < 0 || new == fd {
        return;
    }
    if let Some(dev) = device() {
        dev.duplicate(fd, new);
    }
}

/// `close(2)`: closing a model file closes it in the model too.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if let Some(dev) = device() {
        dev.forget(fd);
    }
    // SAFETY: the caller's descriptor, passed on.
    unsafe { (real::close())(fd) }
}

/// `close_range(2)`: closing model files closes them in the model too (with
/// `CLOSE_RANGE_CLOEXEC` they stay open until an `exec`, after which this library starts afresh).
/// Made as a system call: libc has the function only since glibc 2.34.
#[no_mangle]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    let known = (libc::CLOSE_RANGE_UNSHARE | libc::CLOSE_RANGE_CLOEXEC) as c_int;
    // Only a call the kernel takes closes anything (it refuses `first > last` and unknown flags).
    if first <= last && flags & !known == 0 && flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
        if let Some(dev) = device() {
            let end = |n: c_uint| c_int::try_from(n).unwrap_or(c_int::MAX);
            dev.forget_range(end(first), end(last));
        }
    }
    // SAFETY: the caller's arguments, passed on to the system call, which takes integers only.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) };
    r as c_int
}
