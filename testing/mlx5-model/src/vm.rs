//! Byte copies between this process and a process's memory named by address:
//! `process_vm_readv` / `process_vm_writev`, which fail with `EFAULT` on an unmapped (or, for
//! writes, read-only) page instead of touching it, and with `ESRCH` once the process is gone.
//!
//! The kernel half's user copies (`uaccess`) and the HCA's accesses to another process's memory
//! (`hca/mem.rs`, [`crate::hca::Space::Remote`]) both go through here. A process's memory is
//! reached as a device reaches it: byte copies, no atomicity beyond what the kernel's copy gives
//! (the callers that need a whole word read it until two reads agree, see `hca/mem.rs`).

use nix::errno::Errno;

/// `process_vm_readv` (`write == false`) or `process_vm_writev` of `len` bytes between `local`
/// in this process and `remote` in process `pid`: the bytes moved.
///
/// # Safety
/// `local` is valid for `len` bytes (writable when reading). When `pid` is this process, a write
/// to `remote` must be one Rust allows (memory nobody else accesses now, or accesses only
/// through the protocol the caller keeps), as for any raw write.
unsafe fn copy(
    pid: libc::pid_t,
    local: *mut u8,
    remote: usize,
    len: usize,
    write: bool,
) -> Result<usize, Errno> {
    let liov = libc::iovec {
        iov_base: local.cast(),
        iov_len: len,
    };
    let riov = libc::iovec {
        iov_base: remote as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: `liov` describes `len` bytes the caller vouches for; `riov` is only an address
    // range in `pid` that the kernel checks itself (EFAULT where it is not mapped, or not
    // writable for a write); both vectors are live locals and their counts are 1. A write into
    // this very process is covered by the caller's contract.
    let n = unsafe {
        if write {
            libc::process_vm_writev(pid, &liov, 1, &riov, 1, 0)
        } else {
            libc::process_vm_readv(pid, &liov, 1, &riov, 1, 0)
        }
    };
    if n < 0 {
        Err(Errno::last())
    } else {
        Ok(n as usize)
    }
}

/// Fills `buf` from `addr` in process `pid`: `EFAULT` when not all of it could be read (the
/// error of the call otherwise: `ESRCH` for a process that is gone, `EPERM` without the right to
/// trace it). Safe: a read writes no memory of this process but `buf`.
pub(crate) fn read(pid: libc::pid_t, addr: usize, buf: &mut [u8]) -> Result<(), Errno> {
    if buf.is_empty() {
        return Ok(());
    }
    addr.checked_add(buf.len()).ok_or(Errno::EFAULT)?;
    let len = buf.len();
    // SAFETY: `buf` is ours and writable for its length; a read writes nothing else here.
    match unsafe { copy(pid, buf.as_mut_ptr(), addr, len, false) }? {
        n if n == len => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// Writes `data` at `addr` in process `pid`: `EFAULT` when not all of it could be written.
///
/// # Safety
/// When `pid` is this process, `addr .. addr + data.len()` is memory a raw write may change now
/// (as `ptr::copy` to it would require).
pub(crate) unsafe fn write(pid: libc::pid_t, addr: usize, data: &[u8]) -> Result<(), Errno> {
    if data.is_empty() {
        return Ok(());
    }
    addr.checked_add(data.len()).ok_or(Errno::EFAULT)?;
    let len = data.len();
    // SAFETY: process_vm_writev only reads the local buffer, which is valid for `len` bytes; the
    // destination is the caller's contract.
    match unsafe { copy(pid, data.as_ptr().cast_mut(), addr, len, true) }? {
        n if n == len => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// Whether an error of `process_vm_*v` means the calls are not available at all (a seccomp
/// filter, no right to trace the process).
pub(crate) fn unavailable(e: Errno) -> bool {
    matches!(e, Errno::ENOSYS | Errno::EPERM | Errno::EACCES)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A forked child's memory, reached by address from the parent: what the daemon does to its
    /// clients. The child writes a pattern into a buffer, tells the parent where it is, and waits;
    /// the parent reads it, writes another, and the child checks it.
    #[test]
    fn reads_and_writes_a_child_process() {
        let (from_child, to_parent) = nix::unistd::pipe().unwrap();
        let (from_parent, to_child) = nix::unistd::pipe().unwrap();
        // SAFETY: the child only uses async-signal-safe calls (read, write, _exit) on memory it
        // owns before exiting; no lock is taken after the fork.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let mut buf = [0u8; 64];
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = i as u8;
                }
                let addr = (buf.as_ptr() as usize).to_ne_bytes();
                let _ = nix::unistd::write(&to_parent, &addr);
                let mut go = [0u8; 1];
                let _ = nix::unistd::read(&from_parent, &mut go);
                // SAFETY: a volatile read of our own buffer, which the parent wrote while we
                // waited.
                let v = unsafe { std::ptr::read_volatile(buf.as_ptr().add(10)) };
                // SAFETY: `_exit` ends the child without running the parent's destructors.
                unsafe { libc::_exit(if v == 0xab { 0 } else { 1 }) };
            }
            nix::unistd::ForkResult::Parent { child } => {
                let mut addr = [0u8; 8];
                nix::unistd::read(&from_child, &mut addr).unwrap();
                let addr = usize::from_ne_bytes(addr);
                let pid = child.as_raw();
                let mut out = [0u8; 64];
                read(pid, addr, &mut out).unwrap();
                assert_eq!(out[63], 63);
                // SAFETY: the child's memory, not ours.
                unsafe { write(pid, addr + 10, &[0xab]) }.unwrap();
                assert_eq!(read(pid, 8, &mut out), Err(Errno::EFAULT));
                nix::unistd::write(&to_child, &[1]).unwrap();
                let st = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(st, nix::sys::wait::WaitStatus::Exited(child, 0));
                // Gone: ESRCH.
                assert_eq!(read(pid, addr, &mut out), Err(Errno::ESRCH));
            }
        }
    }
}
