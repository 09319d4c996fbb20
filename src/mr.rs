//! Memory regions: [`MemoryRegion`] and [`RemoteKey`].

use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uverbs_drivers::cmd::MrKeys;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::mem::Allocation;
use uverbs_drivers::wr::Sge;
use zerocopy::FromBytes;

use crate::ibv::ibv_access_flags;
use crate::pd::PdInner;
use crate::wr::RemoteMemory;

/// Memory registered for RDMA: a buffer of `T`s the device may access, with its keys.
///
/// Dereferences to `[T]`. The buffer never moves or grows while registered. The region keeps its
/// protection domain alive.
///
/// The device may write any bytes into the buffer (a peer's RDMA WRITE, a received message), so
/// `T` must be valid for every bit pattern, [`zerocopy::FromBytes`]; and it may read every byte (a
/// peer's RDMA READ, a send), so `T` must have no uninitialised bytes, [`zerocopy::IntoBytes`]
/// (no padding, no `MaybeUninit`). Integers, floats, arrays of them and structs deriving both
/// qualify. A region of `bool`, `char` or references, which a peer could fill with invalid values,
/// or of padded structs, whose padding a peer could read, does not compile.
///
/// While a peer may write the region, read what it writes with [`MemoryRegion::read_volatile`] or
/// [`MemoryRegion::wait_for`], which load afresh on every call, and store next to it with
/// [`MemoryRegion::write_volatile`]: a slice from `Deref` or `DerefMut` tells the compiler that
/// nothing else changes the memory while it lives. Read through `Deref` once the peer is done (its
/// completion was polled, or `wait_for` saw the flag it writes last).
///
/// Dropping a region deregisters it and frees the buffer, except while a memory window bound to it
/// is alive: the window keeps the registration, and the buffer, until it is deallocated.
#[derive(Debug)]
pub struct MemoryRegion<T> {
    reg: Arc<Registration>,
    access: ibv_access_flags,
    data: Vec<T>,
}

/// The kernel's registration of a region's memory, shared with the memory windows bound to it.
///
/// The memory returns to the allocator only once the kernel has let go of the registration: the
/// region hands its buffer over when it is dropped, the last owner (the region, or a window still
/// bound to it) deregisters, and a deregistration the kernel refuses (rxe refuses one while a window
/// is bound) leaks the buffer, counted in [`crate::leaked_bytes`], since a peer may still write it.
#[derive(Debug)]
pub(crate) struct Registration {
    keys: MrKeys,
    pd: Arc<PdInner>,
    /// The region's buffer once the region itself is gone.
    memory: Mutex<Option<Allocation>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let memory = self
            .memory
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Err(e) = self.pd.ctx.ucontext().dereg_mr(self.keys.handle) {
            uverbs_drivers::report_drop_error("memory region", &e);
            // Still registered: the device may write these pages for a peer. Never free them.
            if let Some(m) = memory {
                m.leak();
            }
        }
    }
}

impl<T: FromBytes + Copy> MemoryRegion<T> {
    /// Element `index`, loaded from memory on every call (a volatile read): for polling memory a
    /// peer writes with RDMA, which the compiler cannot see. `None` if `index` is out of bounds.
    pub fn read_volatile(&self, index: usize) -> Option<T> {
        uverbs_drivers::mem::read_volatile(&self.data, index)
    }

    /// Waits until element `index` satisfies `done` (loading it afresh each time), then orders
    /// every later read of the region after that load, as rdma-core orders reading a completion
    /// after its owner bit: a peer that writes its payload before a flag (one RDMA WRITE lands in
    /// address order on RC, and a second WRITE lands after the first) can be waited for on the flag
    /// and its payload read afterwards. Returns the element, or `None` if `index` is out of bounds
    /// or `timeout` passes first (`None`: wait for ever).
    pub fn wait_for(
        &self,
        index: usize,
        done: impl FnMut(T) -> bool,
        timeout: Option<Duration>,
    ) -> Option<T> {
        let deadline = timeout.map(|t| Instant::now() + t);
        uverbs_drivers::mem::wait_for(&self.data, index, done, deadline)
    }

    /// Stores `value` at `index` without borrowing the rest of the region, which a peer may be
    /// writing meanwhile (unlike `region[index] = value`, which borrows all of it mutably); `false`
    /// if `index` is out of bounds. For a flag or a counter next to memory a peer writes.
    pub fn write_volatile(&mut self, index: usize, value: T) -> bool {
        uverbs_drivers::mem::write_volatile(&mut self.data, index, value)
    }
}

impl<T> MemoryRegion<T> {
    pub(crate) fn register(
        pd: Arc<PdInner>,
        data: Vec<T>,
        access: ibv_access_flags,
    ) -> io::Result<MemoryRegion<T>> {
        let len = std::mem::size_of_val(data.as_slice());
        if len == 0 {
            return Err(Error::InvalidArgument {
                verb: Verb::RegMr,
                what: "an empty buffer".into(),
            }
            .into());
        }
        let addr = data.as_ptr() as u64;
        // SAFETY: the range is `data`'s heap buffer, which moves into the region (a `Vec` never
        // moves its buffer) and from there into the `Registration`, which frees it only after
        // `dereg_mr` succeeded and leaks it otherwise; `T: FromBytes + IntoBytes` in every caller
        // (`ProtectionDomain::{allocate_with_access, register}`); the region's own accesses are
        // `Deref` (the device's writes are DMA into plain data) and the post contracts.
        #[allow(unsafe_code)]
        let keys = unsafe {
            pd.ctx
                .ucontext()
                .reg_mr(pd.handle(), addr, len as u64, addr, access.0)
        }?;
        Ok(MemoryRegion {
            reg: Arc::new(Registration {
                keys,
                pd,
                memory: Mutex::new(None),
            }),
            access,
            data,
        })
    }

    /// The key peers use to access this region remotely.
    pub fn rkey(&self) -> RemoteKey {
        RemoteKey {
            key: self.reg.keys.rkey,
        }
    }

    /// The access flags the region was registered with.
    pub fn access(&self) -> ibv_access_flags {
        self.access
    }

    pub(crate) fn pd(&self) -> &Arc<PdInner> {
        &self.reg.pd
    }

    /// The registration, which a memory window bound to the region keeps alive.
    pub(crate) fn registration(&self) -> &Arc<Registration> {
        &self.reg
    }

    /// The local key, for scatter/gather entries.
    pub fn lkey(&self) -> u32 {
        self.reg.keys.lkey
    }

    /// The scatter/gather entry covering `range` of this region (in elements), for
    /// [`crate::SendRequest`]s and [`crate::ReceiveRequest`]s. A range that is not inside the region
    /// is an error.
    pub fn sge<R: MrRange>(&self, range: R) -> io::Result<Sge> {
        self.sge_of(range).ok_or_else(|| {
            Error::InvalidArgument {
                verb: Verb::PostSend,
                what: format!(
                    "the range is not inside the memory region of {} elements",
                    self.data.len()
                ),
            }
            .into()
        })
    }

    /// The whole region as a peer targets it (address, rkey, length), to send to the peer.
    pub fn remote(&self) -> RemoteMemory {
        RemoteMemory {
            addr: self.data.as_ptr() as u64,
            rkey: self.reg.keys.rkey,
            len: std::mem::size_of_val(self.data.as_slice()) as u64,
        }
    }

    pub(crate) fn sge_of<R: MrRange>(&self, range: R) -> Option<Sge> {
        let (start, end) = range.bounds(self.data.len())?;
        let size = std::mem::size_of::<T>();
        let length = u32::try_from((end - start).checked_mul(size)?).ok()?;
        Some(Sge {
            addr: self.data.as_ptr() as u64 + (start * size) as u64,
            length,
            lkey: self.reg.keys.lkey,
        })
    }
}

impl<T> Deref for MemoryRegion<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.data
    }
}

impl<T> DerefMut for MemoryRegion<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.data
    }
}

impl<T> Drop for MemoryRegion<T> {
    fn drop(&mut self) {
        // The buffer goes with the registration: freed once the kernel has released it (now, unless
        // a memory window bound to the region holds the registration), leaked if it refuses.
        let memory = Allocation::from_vec(std::mem::take(&mut self.data));
        *self.reg.memory.lock().unwrap_or_else(|p| p.into_inner()) = memory;
    }
}

/// A key that authorizes direct memory access to a memory region.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RemoteKey {
    /// The actual key value.
    pub key: u32,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for std::ops::Range<usize> {}
    impl Sealed for std::ops::RangeTo<usize> {}
    impl Sealed for std::ops::RangeFrom<usize> {}
    impl Sealed for std::ops::RangeFull {}
}

/// The ranges a work request may take of a memory region: `a..b`, `..b`, `a..` and `..` (those
/// `ibverbs` takes). Out-of-bounds ranges are an error, not a panic.
pub trait MrRange: sealed::Sealed {
    /// The range as `(start, end)` element indices within `len`, if it fits.
    fn bounds(&self, len: usize) -> Option<(usize, usize)>;
}

impl MrRange for std::ops::Range<usize> {
    fn bounds(&self, len: usize) -> Option<(usize, usize)> {
        (self.start <= self.end && self.end <= len).then_some((self.start, self.end))
    }
}

impl MrRange for std::ops::RangeTo<usize> {
    fn bounds(&self, len: usize) -> Option<(usize, usize)> {
        (self.end <= len).then_some((0, self.end))
    }
}

impl MrRange for std::ops::RangeFrom<usize> {
    fn bounds(&self, len: usize) -> Option<(usize, usize)> {
        (self.start <= len).then_some((self.start, len))
    }
}

impl MrRange for std::ops::RangeFull {
    fn bounds(&self, len: usize) -> Option<(usize, usize)> {
        Some((0, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!((1..3).bounds(4), Some((1, 3)));
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 3..1;
        assert_eq!(reversed.bounds(4), None);
        assert_eq!((1..5).bounds(4), None);
        assert_eq!((..4).bounds(4), Some((0, 4)));
        assert_eq!((..5).bounds(4), None);
        assert_eq!((4..).bounds(4), Some((4, 4)));
        assert_eq!((5..).bounds(4), None);
        assert_eq!((..).bounds(4), Some((0, 4)));
    }
}
