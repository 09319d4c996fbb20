//! User memory as the kernel reaches it: `copy_from_user`, `copy_to_user`, `clear_user` and the
//! checks of `pin_user_pages`.
//!
//! The model lives in the process whose memory the commands name, but it never trusts an address:
//! copies go through `process_vm_readv` / `process_vm_writev` on this very process, which fail with
//! `EFAULT` on an unmapped or (for writes) read-only page instead of crashing, exactly like the
//! kernel's user copies. Where those calls are not permitted (a seccomp filter), the range is looked
//! up in `/proc/self/maps` first and copied directly. Pinning (memory regions, queue buffers,
//! doorbell pages) is checked against `/proc/self/maps`: every page mapped, readable, writable where
//! the device will write, and not device memory (the model's own UAR pages, `[vvar]`), as
//! `pin_user_pages` requires.
//!
//! All of it is done on the current task (`crate::task`, the kernel's `current`): this process, or,
//! in the daemon, the client whose command is served, whose memory is copied with
//! `process_vm_readv` / `process_vm_writev` on its pid and whose `/proc/<pid>/maps` the pinning
//! checks read.

use std::sync::atomic::{AtomicU8, Ordering};

use nix::errno::Errno;
use zerocopy::{FromBytes, IntoBytes};

use crate::{task, vm};

/// The name of the memfd behind a context's UAR pages: mappings of it are device memory, which
/// `pin_user_pages` refuses.
pub(super) const UAR_MEMFD_NAME: &str = "mlx5-model-uar";

const MODE_UNKNOWN: u8 = 0;
const MODE_VM: u8 = 1;
const MODE_MAPS: u8 = 2;

/// Whether `process_vm_*v` work here (probed at the first copy).
static MODE: AtomicU8 = AtomicU8::new(MODE_UNKNOWN);

/// The range `[addr, addr + len)` as host numbers, or `EFAULT` when it wraps around.
fn host_range(addr: u64, len: usize) -> Result<(usize, usize), Errno> {
    let start = usize::try_from(addr).map_err(|_| Errno::EFAULT)?;
    let end = start.checked_add(len).ok_or(Errno::EFAULT)?;
    Ok((start, end))
}

/// `copy_from_user`: fills `buf` from user address `addr`.
pub(super) fn read(addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
    if buf.is_empty() {
        return Ok(());
    }
    let (start, _) = host_range(addr, buf.len())?;
    if let Some(pid) = task::remote_pid() {
        return vm::read(pid, start, buf).map_err(|_| Errno::EFAULT);
    }
    if MODE.load(Ordering::Relaxed) != MODE_MAPS {
        match vm::read(std::process::id() as i32, start, buf) {
            Ok(()) => {
                MODE.store(MODE_VM, Ordering::Relaxed);
                return Ok(());
            }
            Err(e) if vm::unavailable(e) && MODE.load(Ordering::Relaxed) == MODE_UNKNOWN => {
                MODE.store(MODE_MAPS, Ordering::Relaxed);
            }
            Err(_) => return Err(Errno::EFAULT),
        }
    }
    check_mapped(addr, buf.len() as u64, false, false)?;
    // SAFETY: every page of `[start, start + len)` was just found mapped and readable in
    // /proc/self/maps, and the model's callers (the `ModelFile` contract) only name memory that
    // stays valid for the call; `buf` is ours and cannot overlap a range we only read.
    unsafe { std::ptr::copy_nonoverlapping(start as *const u8, buf.as_mut_ptr(), buf.len()) };
    Ok(())
}

/// `copy_to_user`: writes `data` at user address `addr`.
pub(super) fn write(addr: u64, data: &[u8]) -> Result<(), Errno> {
    if data.is_empty() {
        return Ok(());
    }
    let (start, _) = host_range(addr, data.len())?;
    if let Some(pid) = task::remote_pid() {
        // SAFETY: the client's memory; where the client is this process, its command's pointers
        // are valid for writes during the call (the `ModelFile` contract it called under).
        return unsafe { vm::write(pid, start, data) }.map_err(|_| Errno::EFAULT);
    }
    if MODE.load(Ordering::Relaxed) != MODE_MAPS {
        // SAFETY: this process's memory, which the `ModelFile` contract makes the command's
        // caller vouch for: valid for writes of this length during the call.
        match unsafe { vm::write(std::process::id() as i32, start, data) } {
            Ok(()) => {
                MODE.store(MODE_VM, Ordering::Relaxed);
                return Ok(());
            }
            Err(e) if vm::unavailable(e) && MODE.load(Ordering::Relaxed) == MODE_UNKNOWN => {
                MODE.store(MODE_MAPS, Ordering::Relaxed);
            }
            Err(_) => return Err(Errno::EFAULT),
        }
    }
    check_mapped(addr, data.len() as u64, true, false)?;
    // SAFETY: every page of the destination was just found mapped and writable in /proc/self/maps,
    // and the `ModelFile` contract makes the callers name only memory valid for writes during the
    // call; `data` is the model's own buffer, distinct from the user's.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), start as *mut u8, data.len()) };
    Ok(())
}

/// Reads a plain struct from user memory.
pub(super) fn read_obj<T: FromBytes + IntoBytes>(addr: u64) -> Result<T, Errno> {
    let mut v = T::new_zeroed();
    read(addr, v.as_mut_bytes())?;
    Ok(v)
}

/// `clear_user`: zeroes `len` bytes at `addr`.
pub(super) fn clear(addr: u64, len: usize) -> Result<(), Errno> {
    const CHUNK: usize = 4096;
    let zeros = [0u8; CHUNK];
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(CHUNK);
        write(
            addr.checked_add(done as u64).ok_or(Errno::EFAULT)?,
            &zeros[..n],
        )?;
        done += n;
    }
    Ok(())
}

/// `ib_is_buffer_cleared`: whether the `len` bytes at `addr` are all zero.
pub(super) fn is_cleared(addr: u64, len: usize) -> Result<bool, Errno> {
    const CHUNK: usize = 4096;
    let mut buf = [0u8; CHUNK];
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(CHUNK);
        read(
            addr.checked_add(done as u64).ok_or(Errno::EFAULT)?,
            &mut buf[..n],
        )?;
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        done += n;
    }
    Ok(true)
}

/// One line of `/proc/self/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Vma {
    start: u64,
    end: u64,
    read: bool,
    write: bool,
    /// Device memory (`VM_IO | VM_PFNMAP`): the model's UAR pages, `[vvar]`, `[vsyscall]`.
    io: bool,
}

fn parse_maps(text: &str) -> Vec<Vma> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace();
            let range = it.next()?;
            let perms = it.next()?.as_bytes();
            let path = it.nth(3).unwrap_or("");
            let (a, b) = range.split_once('-')?;
            let start = u64::from_str_radix(a, 16).ok()?;
            let end = u64::from_str_radix(b, 16).ok()?;
            let io =
                path.starts_with("[vvar") || path == "[vsyscall]" || path.contains(UAR_MEMFD_NAME);
            Some(Vma {
                start,
                end,
                read: perms.first() == Some(&b'r'),
                write: perms.get(1) == Some(&b'w'),
                io,
            })
        })
        .collect()
}

fn covered(vmas: &[Vma], addr: u64, len: u64, write: bool, pin: bool) -> bool {
    let Some(end) = addr.checked_add(len) else {
        return false;
    };
    let mut at = addr;
    while at < end {
        let Some(v) = vmas.iter().find(|v| v.start <= at && at < v.end) else {
            return false;
        };
        if !v.read || (write && !v.write) || (pin && v.io) {
            return false;
        }
        at = v.end;
    }
    true
}

/// Whether `[addr, addr + len)` is mapped, readable, writable if `write`, and (if `pin`) ordinary
/// memory rather than device memory: `EFAULT` otherwise.
fn check_mapped(addr: u64, len: u64, write: bool, pin: bool) -> Result<(), Errno> {
    let text = std::fs::read_to_string(task::proc_dir().join("maps")).map_err(|_| Errno::EFAULT)?;
    if covered(&parse_maps(&text), addr, len, write, pin) {
        Ok(())
    } else {
        Err(Errno::EFAULT)
    }
}

/// Whether the device can fault in `len` bytes at `addr` of `space` for an on-demand region
/// (writable ones where it writes): what a ConnectX's page fault asks of the kernel, which fails
/// for memory the process has unmapped or protected. Read from the process's `maps`.
pub(crate) fn faultable(space: crate::hca::Space, addr: u64, len: u64, write: bool) -> bool {
    let dir = match space {
        crate::hca::Space::Local => std::path::PathBuf::from("/proc/self"),
        crate::hca::Space::Remote { pid } => std::path::PathBuf::from(format!("/proc/{pid}")),
    };
    std::fs::read_to_string(dir.join("maps"))
        .is_ok_and(|text| len == 0 || covered(&parse_maps(&text), addr, len, write, false))
}

/// What `ib_umem_get` checks before it pins `len` bytes at `addr` for the device: the range does not
/// wrap (`EINVAL`), is not empty (`EINVAL`), and every page of it is mapped, readable, writable if
/// the device writes to it, and not device memory (`EFAULT`, as `pin_user_pages` fails).
pub(super) fn check_pin(addr: u64, len: u64, writable: bool) -> Result<(), Errno> {
    let page = uverbs_drivers::sys::page_size() as u64;
    let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
    end.checked_add(page - 1).ok_or(Errno::EINVAL)?;
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let first = addr & !(page - 1);
    let last = (end + page - 1) & !(page - 1);
    check_mapped(first, last - first, writable, true)
}

/// `mlx5_ib_db_map_user`: the page that holds a doorbell record at `addr` must be pinnable.
pub(super) fn check_db_page(addr: u64) -> Result<(), Errno> {
    let page = uverbs_drivers::sys::page_size() as u64;
    check_pin(addr & !(page - 1), page, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_and_faults() {
        let mut src = [1u8, 2, 3, 4, 5];
        let mut out = [0u8; 5];
        read(src.as_ptr() as u64, &mut out).unwrap();
        assert_eq!(out, src);
        write(src.as_mut_ptr() as u64, &[9, 9]).unwrap();
        assert_eq!(src[..2], [9, 9]);
        assert_eq!(read(8, &mut out), Err(Errno::EFAULT));
        assert_eq!(write(8, &[1]), Err(Errno::EFAULT));
        assert_eq!(read(u64::MAX - 1, &mut out), Err(Errno::EFAULT));
        // A read-only page: code.
        let code = copies_and_faults as *const () as usize as u64;
        assert_eq!(write(code, &[0]), Err(Errno::EFAULT));
        assert!(is_cleared([0u8; 3].as_ptr() as u64, 3).unwrap());
        assert!(!is_cleared(src.as_ptr() as u64, 5).unwrap());
        let mut z = [7u8; 10];
        clear(z.as_mut_ptr() as u64, 10).unwrap();
        assert_eq!(z, [0; 10]);
    }

    #[test]
    fn pin_checks() {
        let v = vec![0u8; 3 * 4096];
        check_pin(v.as_ptr() as u64, v.len() as u64, true).unwrap();
        assert_eq!(check_pin(v.as_ptr() as u64, 0, true), Err(Errno::EINVAL));
        assert_eq!(check_pin(u64::MAX - 10, 100, true), Err(Errno::EINVAL));
        assert_eq!(check_pin(0x1000, 4096, false), Err(Errno::EFAULT));
        let code = pin_checks as *const () as usize as u64;
        check_pin(code, 16, false).unwrap();
        assert_eq!(check_pin(code, 16, true), Err(Errno::EFAULT));
        check_db_page(v.as_ptr() as u64 + 8).unwrap();
    }

    #[test]
    fn maps_lines() {
        let maps = "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/x\n\
                    7f0000000000-7f0000001000 rw-s 00000000 00:01 77 /memfd:mlx5-model-uar (deleted)\n\
                    7f0000001000-7f0000003000 rw-p 00000000 00:00 0\n\
                    7ffd4a1e0000-7ffd4a1e4000 r--p 00000000 00:00 0 [vvar]\n";
        let v = parse_maps(maps);
        assert_eq!(v.len(), 4);
        assert!(v[1].io && v[1].write && !v[0].write && v[3].io);
        assert!(covered(&v, 0x7f0000001000, 0x2000, true, true));
        assert!(!covered(&v, 0x7f0000000800, 0x1000, true, true));
        assert!(covered(&v, 0x7f0000000800, 0x1000, true, false));
        assert!(!covered(&v, 0x7f0000002000, 0x2000, false, false));
    }
}
