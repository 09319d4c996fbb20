//! Named barriers for memory shared with a DMA device, with rdma-core's names and meanings
//! (`util/udma_barrier.h`).
//!
//! Each use of a barrier on the data path is one of a few narrow cases, and the name says which;
//! rdma-core names them so that the provider code documents itself, and so does this module.
//!
//! | function | orders | x86-64 | aarch64 | elsewhere |
//! |---|---|---|---|---|
//! | [`udma_to_device_barrier`] | CPU stores to ordinary memory before a later store that lets the device read them (doorbell record, doorbell) | compiler barrier | `dmb oshst` | `fence(SeqCst)` |
//! | [`udma_ordering_write_barrier`] | one store to DMA memory before another (a valid bit after its data) | compiler barrier | `dmb oshst` | `fence(SeqCst)` |
//! | [`udma_from_device_barrier`] | a load that saw the device's ordered store (a CQE owner bit) before later loads of what the device wrote before it | `lfence` | `dmb oshld` | `fence(SeqCst)` |
//! | [`mmio_flush_writes`] | flushes write-combining buffers after a write to WC memory (BlueFlame), and keeps two WC writes from combining | `sfence` | `dsb st` | `fence(SeqCst)` |
//! | [`mmio_wc_start`] | every earlier store before the WC writes that follow (implies `udma_to_device_barrier`) | `sfence` | `dsb st` | `fence(SeqCst)` |
//!
//! On x86-64 ordinary stores are already seen in program order by the device (TSO and coherent
//! DMA), so rdma-core's `udma_to_device_barrier` is only `asm volatile("" ::: "memory")`: a compiler
//! barrier, here [`compiler_fence`]. Write-combining stores are not ordered with other stores,
//! hence `sfence` around them; and `lfence` keeps later loads from being satisfied before the load of
//! the owner bit.
//!
//! Every function is also a compiler barrier: no memory access is moved across it by the compiler.
//!
//! In Rust's memory model the device is another thread (it is one when a software model plays the
//! device), so the two barriers that pair with the device's accesses are also language fences:
//! [`udma_to_device_barrier`] is a `fence(Release)` (the atomic store of a doorbell record that
//! follows it publishes the WQEs written before), [`udma_from_device_barrier`] a `fence(Acquire)`
//! (after the atomic load of a CQE's owner byte, the CQE body the device wrote before its release
//! store is visible). On x86-64 both compile to nothing beyond the compiler barrier.
//! The instructions are those of rdma-core for the two architectures this crate is meant for; other
//! architectures get a sequentially consistent fence, which is at least a full CPU barrier for
//! ordinary memory (it may not order device memory on every architecture: check before porting).

use core::sync::atomic::{compiler_fence, fence, Ordering};

/// Makes the CPU's earlier stores to DMA memory (WQEs, receive descriptors) visible to the device
/// before any later store that lets it start reading them: the doorbell record, the doorbell.
///
/// rdma-core: `udma_to_device_barrier()`, placed after writing WQEs and before updating the
/// doorbell record (mlx5 `post_send_db`, `mlx5_post_recv`).
#[inline(always)]
pub fn udma_to_device_barrier() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dmb oshst` only orders this CPU's stores; it reads and writes no memory or register
    // the compiler knows about, uses no stack and leaves the flags alone. Without `nomem` the
    // compiler also treats it as a read and write of all memory, so it is a compiler barrier too.
    unsafe {
        core::arch::asm!("dmb oshst", options(nostack, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fence(Ordering::SeqCst);
    fence(Ordering::Release);
    compiler_fence(Ordering::SeqCst);
}

/// Orders two groups of stores to DMA memory, so that the device cannot see the second (a valid
/// bit) without the first (the data it validates). It makes nothing visible by itself.
///
/// rdma-core: `udma_ordering_write_barrier()`, defined as [`udma_to_device_barrier`].
#[inline(always)]
pub fn udma_ordering_write_barrier() {
    udma_to_device_barrier();
}

/// After a load that observed an ordered store of the device (a CQE whose owner bit says software
/// owns it), makes later loads see everything the device wrote before that store.
///
/// rdma-core: `udma_from_device_barrier()`, placed after the owner check of a CQE and before reading
/// the rest of it (mlx5 `mlx5_get_next_cqe`).
#[inline(always)]
pub fn udma_from_device_barrier() {
    compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lfence` takes no operands and touches no memory; SSE2, which provides it, is part of
    // the x86-64 baseline, so the instruction exists on every CPU this code runs on. (Newer Rust
    // makes the intrinsic safe to call; the block keeps older compilers happy.)
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_mm_lfence()
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dmb oshld` only orders this CPU's loads; it reads and writes no memory or register
    // the compiler knows about, uses no stack and leaves the flags alone.
    unsafe {
        core::arch::asm!("dmb oshld", options(nostack, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fence(Ordering::SeqCst);
    fence(Ordering::Acquire);
    compiler_fence(Ordering::SeqCst);
}

/// Flushes the CPU's write-combining buffers after stores to write-combining memory (the BlueFlame
/// register), so they leave as bus writes now, and keeps stores before and after it from being
/// combined into one.
///
/// rdma-core: `mmio_flush_writes()`, placed after the doorbell or BlueFlame copy, before the
/// BlueFlame half is switched (mlx5 `post_send_db`) and after the CQ arm doorbell (`mlx5_arm_cq`).
#[inline(always)]
pub fn mmio_flush_writes() {
    compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` takes no operands and touches no memory; SSE, which provides it, is part of
    // the x86-64 baseline, so the instruction exists on every CPU this code runs on. (Newer Rust
    // makes the intrinsic safe to call; the block keeps older compilers happy.)
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dsb st` waits for this CPU's stores to complete; it reads and writes no memory or
    // register the compiler knows about, uses no stack and leaves the flags alone.
    unsafe {
        core::arch::asm!("dsb st", options(nostack, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fence(Ordering::SeqCst);
    compiler_fence(Ordering::SeqCst);
}

/// Orders every earlier store (to any memory type: the doorbell record in ordinary memory, an
/// uncached doorbell) before the write-combining stores that follow (a BlueFlame copy or doorbell).
/// Implies [`udma_to_device_barrier`].
///
/// rdma-core: `mmio_wc_start()`, defined as `mmio_flush_writes()`; placed after the doorbell record
/// update and before the doorbell (mlx5 `post_send_db`, `mlx5_arm_cq`).
#[inline(always)]
pub fn mmio_wc_start() {
    mmio_flush_writes();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_run() {
        // They are instructions without observable effect in a single thread; this checks that
        // each one executes (an illegal instruction would kill the test).
        udma_to_device_barrier();
        udma_ordering_write_barrier();
        udma_from_device_barrier();
        mmio_wc_start();
        mmio_flush_writes();
    }
}
