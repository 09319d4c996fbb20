//! Memory regions: [`MemoryRegion`] and [`RemoteKey`].

use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::verbs::{Mr, Region};
use uverbs_drivers::wr::Sge;
use zerocopy::{FromBytes, IntoBytes};

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
    /// The buffer and its registration (`uverbs_drivers::verbs::Region`): the buffer returns to
    /// the allocator only once the kernel has let go of the registration, which a memory window
    /// bound to the region keeps; a deregistration the kernel refuses leaks it, counted in
    /// [`crate::leaked_bytes`], since a peer may still write it.
    region: Region<T>,
    pd: Arc<PdInner>,
    access: ibv_access_flags,
}

impl<T: FromBytes + Copy> MemoryRegion<T> {
    /// Element `index`, loaded from memory on every call (a volatile read): for polling memory a
    /// peer writes with RDMA, which the compiler cannot see. `None` if `index` is out of bounds.
    pub fn read_volatile(&self, index: usize) -> Option<T> {
        self.region.read_volatile(index)
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
        self.region.wait_for(index, done, deadline)
    }

    /// Stores `value` at `index` without borrowing the rest of the region, which a peer may be
    /// writing meanwhile (unlike `region[index] = value`, which borrows all of it mutably); `false`
    /// if `index` is out of bounds. For a flag or a counter next to memory a peer writes.
    pub fn write_volatile(&mut self, index: usize, value: T) -> bool {
        self.region.write_volatile(index, value)
    }
}

impl<T: FromBytes + IntoBytes> MemoryRegion<T> {
    pub(crate) fn register(
        pd: Arc<PdInner>,
        data: Vec<T>,
        access: ibv_access_flags,
    ) -> io::Result<MemoryRegion<T>> {
        Ok(MemoryRegion {
            region: Region::register(&pd.pd, data, access.0)?,
            pd,
            access,
        })
    }
}

impl<T> MemoryRegion<T> {
    /// The key peers use to access this region remotely.
    pub fn rkey(&self) -> RemoteKey {
        RemoteKey {
            key: self.region.mr().keys().rkey,
        }
    }

    /// The access flags the region was registered with.
    pub fn access(&self) -> ibv_access_flags {
        self.access
    }

    pub(crate) fn pd(&self) -> &Arc<PdInner> {
        &self.pd
    }

    /// The registration, which a memory window bound to the region keeps alive.
    pub(crate) fn registration(&self) -> &Arc<Mr> {
        self.region.mr()
    }

    /// The local key, for scatter/gather entries.
    pub fn lkey(&self) -> u32 {
        self.region.mr().keys().lkey
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
                    self.len()
                ),
            }
            .into()
        })
    }

    /// The whole region as a peer targets it (address, rkey, length), to send to the peer.
    pub fn remote(&self) -> RemoteMemory {
        RemoteMemory {
            addr: self.region.addr(),
            rkey: self.region.mr().keys().rkey,
            len: std::mem::size_of_val(self.region.as_slice()) as u64,
        }
    }

    pub(crate) fn sge_of<R: MrRange>(&self, range: R) -> Option<Sge> {
        let (start, end) = range.bounds(self.len())?;
        let size = std::mem::size_of::<T>();
        let length = u32::try_from((end - start).checked_mul(size)?).ok()?;
        Some(Sge {
            addr: self.region.addr() + (start * size) as u64,
            length,
            lkey: self.region.mr().keys().lkey,
        })
    }
}

impl<T> Deref for MemoryRegion<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.region.as_slice()
    }
}

impl<T> DerefMut for MemoryRegion<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.region.as_mut_slice()
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
