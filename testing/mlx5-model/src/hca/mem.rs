//! The HCA's accesses to user memory: the only `unsafe` code of the model HCA.
//!
//! The device reads and writes memory the driver owns, named by address: rings, doorbell records,
//! CQ buffers, registered memory and UAR pages. Every function here takes such an address and is
//! `unsafe`; the callers in the HCA uphold one contract, stated once here and referred to by each
//! `// SAFETY:` comment as **the mapping contract**:
//!
//! * The address lies in memory the kernel half handed to the HCA as part of a live object (a CQ
//!   buffer or doorbell record given to `create_cq`, a QP or SRQ buffer, a UAR page, or a range of
//!   a registered memory region), and the kernel half checked that the whole range is mapped.
//! * That object is still in the HCA's tables: the HCA only touches memory of objects it finds in
//!   its tables while holding its state lock, and `destroy_*` / `dereg_mr` remove them under the
//!   same lock, so the memory is not unmapped or reused while the HCA uses it (the kernel half
//!   destroys an object before the driver may free its memory, exactly as with DMA).
//! * The ranges the HCA computes (ring slots, CQ entries, checked MR bounds) stay inside the
//!   object, which the callers check before calling.
//!
//! Memory that both the driver (on its threads) and the HCA (on the engine thread) touch follows the
//! device protocol of `mlx5-common.md`, so no byte is written by one side while the other accesses
//! it non-atomically: doorbell records and CQE ownership bytes are accessed with atomics on both
//! sides; WQEs are read only after the doorbell record (atomic load + Acquire fence) published them,
//! and not rewritten by the driver until their completion; CQE bodies are written only in entries
//! the consumer index says software has released, before the Release store of the ownership byte.
//! UAR and BlueFlame registers are MMIO: volatile 64-bit stores by the driver, volatile reads here.
//! Registered memory is what RDMA makes it: the application promises not to touch buffers that are
//! posted, as with any RDMA device.
//!
//! # Address spaces
//!
//! Every function takes the [`Space`] of the object the address belongs to. [`Space::Local`] memory
//! (the model in the program it serves) is accessed as described above. [`Space::Remote`] memory
//! (a client process of the model daemon) is reached with `process_vm_readv` / `process_vm_writev`
//! (`crate::vm`), byte copies as a device's DMA is:
//!
//! * a doorbell-record word is read as the aligned 8-byte word that holds it, again until two reads
//!   agree (the kernel's copy may move bytes one at a time, so one read could see half of the
//!   driver's store); the copy returns before the WQEs are read, which is the Acquire;
//! * a CQE is written as two copies, its 63-byte body and then its `op_own` byte (a single byte,
//!   never torn), so the driver sees the owner bit only after the body (the first copy has
//!   completed, system call and all, before the second starts);
//! * RDMA atomics are a read and a write of the 64-bit word: the engine is the only executor of
//!   WQEs (one thread, under the state lock), so they are atomic with respect to each other, which
//!   is what `IB_ATOMIC_HCA` promises (not with respect to the CPU);
//! * a fault (the process unmapped the memory, or is gone) reads as zeros and drops the write: a
//!   ConnectX would take a PCIe error there; the kernel half destroys a client's objects when its
//!   connection closes.
//!
//! The UAR pages are the model's own (a memfd it maps), so MMIO reads are always local.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};

use super::Space;
use crate::vm;

/// Reads `out.len()` bytes of process `pid` at `addr`; zeros where that fails.
fn remote_read(pid: i32, addr: usize, out: &mut [u8]) {
    if vm::read(pid, addr, out).is_err() {
        out.fill(0);
    }
}

/// Writes `data` into process `pid` at `addr`; nothing where that fails.
///
/// # Safety
/// When `pid` is this process (the model's tests reach their own memory this way), the range
/// satisfies the mapping contract and is writable.
unsafe fn remote_write(pid: i32, addr: usize, data: &[u8]) {
    // SAFETY: another process's memory is not ours to break; this process's is the caller's
    // contract.
    let _ = unsafe { vm::write(pid, addr, data) };
}

/// The aligned 8-byte word of process `pid` that holds `addr`, read until two reads agree.
fn remote_word(pid: i32, addr: usize) -> ([u8; 8], usize) {
    let base = addr & !7;
    let mut a = [0u8; 8];
    remote_read(pid, base, &mut a);
    for _ in 0..8 {
        let mut b = [0u8; 8];
        remote_read(pid, base, &mut b);
        if a == b {
            break;
        }
        a = b;
    }
    (a, addr - base)
}

/// Copies `out.len()` bytes from `addr` into `out`.
///
/// # Safety
/// `addr .. addr + out.len()` satisfies the mapping contract in `space` and is not written
/// concurrently.
pub(super) unsafe fn read(space: Space, addr: usize, out: &mut [u8]) {
    match space {
        // SAFETY: the caller guarantees the source range is mapped, readable and stable; `out`
        // is a distinct Rust buffer, so the ranges cannot overlap.
        Space::Local => unsafe {
            std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), out.len())
        },
        Space::Remote { pid } => remote_read(pid, addr, out),
    }
}

/// Copies `data` to `addr`.
///
/// # Safety
/// `addr .. addr + data.len()` satisfies the mapping contract in `space` and is writable, and
/// nobody accesses it concurrently (it is posted to the device).
pub(super) unsafe fn write(space: Space, addr: usize, data: &[u8]) {
    match space {
        // SAFETY: the caller guarantees the destination is mapped, writable and not accessed by
        // anyone else now. `ptr::copy` (memmove) is used because `data` may have been read from
        // registered memory that overlaps the destination (loopback into the same region).
        Space::Local => unsafe { std::ptr::copy(data.as_ptr(), addr as *mut u8, data.len()) },
        // SAFETY: the caller's contract.
        Space::Remote { pid } => unsafe { remote_write(pid, addr, data) },
    }
}

/// Loads a big-endian doorbell-record word (atomically), then issues an Acquire fence so that the
/// WQEs the driver wrote before it are visible to later reads.
///
/// # Safety
/// `addr` is 4-byte aligned and satisfies the mapping contract in `space`; the driver writes the
/// word only with atomic stores.
pub(super) unsafe fn load_be32(space: Space, addr: usize) -> u32 {
    let v = match space {
        // SAFETY: aligned, mapped and only accessed atomically by both sides (caller's contract).
        Space::Local => unsafe { AtomicU32::from_ptr(addr as *mut u32) }.load(Ordering::Relaxed),
        Space::Remote { pid } => {
            let (w, off) = remote_word(pid, addr);
            u32::from_ne_bytes([w[off], w[off + 1], w[off + 2], w[off + 3]])
        }
    };
    fence(Ordering::Acquire);
    u32::from_be(v)
}

/// Stores a big-endian doorbell-record word atomically (used once per CQ, to mark its arm word as
/// "never armed", see `Cq::new`).
///
/// # Safety
/// As [`load_be32`].
pub(super) unsafe fn store_be32(space: Space, addr: usize, value: u32) {
    match space {
        Space::Local => {
            // SAFETY: aligned, mapped and only accessed atomically by both sides (caller's
            // contract).
            unsafe { AtomicU32::from_ptr(addr as *mut u32) }.store(value.to_be(), Ordering::Release)
        }
        // SAFETY: the caller's contract.
        Space::Remote { pid } => unsafe { remote_write(pid, addr, &value.to_be().to_ne_bytes()) },
    }
}

/// Reads a 64-bit MMIO register (a UAR doorbell or a BlueFlame buffer word) with a volatile load;
/// returns its bytes as they are in memory. UAR pages are the model's own: always local.
///
/// # Safety
/// `addr` is 8-byte aligned and satisfies the mapping contract (a UAR page).
pub(super) unsafe fn read_mmio64(addr: usize) -> [u8; 8] {
    // SAFETY: aligned and mapped (caller's contract). The driver writes these registers only with
    // 64-bit volatile stores, so a volatile 64-bit load sees one of its writes whole, as the
    // device does on the bus.
    let v = unsafe { std::ptr::read_volatile(addr as *const u64) };
    v.to_ne_bytes()
}

/// Reads `out.len()` bytes (a multiple of 8) of a BlueFlame buffer with volatile 64-bit loads.
///
/// # Safety
/// As [`read_mmio64`] for every 8-byte word of the range.
pub(super) unsafe fn read_mmio(addr: usize, out: &mut [u8]) {
    for (i, chunk) in out.chunks_exact_mut(8).enumerate() {
        // SAFETY: each word is inside the range the caller vouched for, and 8-byte aligned as
        // `addr` is.
        chunk.copy_from_slice(&unsafe { read_mmio64(addr + 8 * i) });
    }
}

/// Publishes a CQE: writes its first 63 bytes, a Release fence, then its last byte (`op_own`) with
/// an atomic store, as the device's ordered DMA writes do.
///
/// # Safety
/// `addr .. addr + 64` satisfies the mapping contract in `space` (one CQE of a CQ buffer) and
/// software has released the entry (the CQ's consumer index is past it), so the driver reads at
/// most its `op_own` byte, atomically, while it is written.
pub(super) unsafe fn publish_cqe(space: Space, addr: usize, cqe: &[u8; 64]) {
    match space {
        Space::Local => {
            // SAFETY: the caller's contract; the body bytes are not read by the driver until it
            // has seen the new `op_own` (Acquire on its side, Release here).
            unsafe { write(space, addr, &cqe[..63]) };
            fence(Ordering::Release);
            // SAFETY: inside the entry; `AtomicU8` has no alignment requirement; the driver loads
            // this byte atomically.
            unsafe { AtomicU8::from_ptr((addr + 63) as *mut u8) }.store(cqe[63], Ordering::Release);
        }
        Space::Remote { pid } => {
            // The body's copy has completed before the owner byte's starts.
            // SAFETY: the caller's contract, for the entry's 64 bytes.
            unsafe {
                remote_write(pid, addr, &cqe[..63]);
                remote_write(pid, addr + 63, &cqe[63..]);
            }
        }
    }
}

/// Loads a CQE's `op_own` byte (the HCA reads back what it wrote, to decide on arming).
///
/// # Safety
/// `addr` is the `op_own` byte of an entry of a CQ buffer that satisfies the mapping contract in
/// `space`.
pub(super) unsafe fn load_op_own(space: Space, addr: usize) -> u8 {
    match space {
        // SAFETY: the caller's contract; the byte is only accessed atomically.
        Space::Local => unsafe { AtomicU8::from_ptr(addr as *mut u8) }.load(Ordering::Acquire),
        Space::Remote { pid } => {
            let mut b = [0u8; 1];
            remote_read(pid, addr, &mut b);
            b[0]
        }
    }
}

/// Atomic compare and swap on a 64-bit word in registered memory; returns the original value.
///
/// # Safety
/// `addr` is 8-byte aligned, satisfies the mapping contract in `space` and is writable.
pub(super) unsafe fn atomic_cas(space: Space, addr: usize, compare: u64, swap: u64) -> u64 {
    match space {
        Space::Local => {
            // SAFETY: aligned, mapped and writable (caller's contract). Other accessors of this
            // word are other HCA atomics (atomic here too) or the application, which RDMA atomics
            // never make safe against plain CPU accesses (IB_ATOMIC_HCA).
            let word = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
            match word.compare_exchange(compare, swap, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(v) | Err(v) => v,
            }
        }
        Space::Remote { pid } => {
            // One engine thread executes every atomic: read, compare, write is atomic with
            // respect to the others.
            let (w, _) = remote_word(pid, addr);
            let v = u64::from_ne_bytes(w);
            if v == compare {
                // SAFETY: the caller's contract.
                unsafe { remote_write(pid, addr, &swap.to_ne_bytes()) };
            }
            v
        }
    }
}

/// Atomic fetch and add on a 64-bit word in registered memory; returns the original value.
///
/// # Safety
/// As [`atomic_cas`].
pub(super) unsafe fn atomic_fetch_add(space: Space, addr: usize, add: u64) -> u64 {
    match space {
        Space::Local => {
            // SAFETY: as in `atomic_cas`.
            let word = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
            word.fetch_add(add, Ordering::SeqCst)
        }
        Space::Remote { pid } => {
            // As in `atomic_cas`.
            let (w, _) = remote_word(pid, addr);
            let v = u64::from_ne_bytes(w);
            // SAFETY: the caller's contract.
            unsafe { remote_write(pid, addr, &v.wrapping_add(add).to_ne_bytes()) };
            v
        }
    }
}
