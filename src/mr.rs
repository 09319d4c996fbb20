//! Memory regions: [`MemoryRegion`] (memory the region owns: a vector or a mapping),
//! [`BorrowedMemoryRegion`] (a slice the caller lends), [`RawMemoryRegion`] (memory the caller
//! manages, registered under an `unsafe` contract), the [`Registration`] that makes them, and
//! [`RemoteKey`].

use std::io;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::verbs::{Iova, Mr, Region};
use uverbs_drivers::wr::Sge;
use zerocopy::{FromBytes, IntoBytes};

use crate::ibv::ibv_access_flags;
use crate::pd::{PdInner, ProtectionDomain};
use crate::wr::RemoteMemory;

/// Memory registered for RDMA: `T`s the device may access, with their keys, owned by the region
/// (a vector, from [`ProtectionDomain::register`] and [`ProtectionDomain::allocate`], or a memory
/// mapping, from [`ProtectionDomain::register_mapping`]).
///
/// Dereferences to `[T]`. The memory never moves or grows while registered. The region keeps its
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
/// Dropping a region deregisters it and frees the memory (or unmaps the mapping), except while a
/// memory window bound to it is alive: the window keeps the registration, and the memory, until it
/// is deallocated. If the kernel refuses to deregister, the memory is leaked, never reused, and
/// counted in [`crate::leaked_bytes`].
#[derive(Debug)]
pub struct MemoryRegion<T> {
    /// The memory and its registration (`uverbs_drivers::verbs::Region`): the memory goes back to
    /// the allocator (or is unmapped) only once the kernel has let go of the registration, which a
    /// memory window bound to the region keeps.
    region: Region<'static, T>,
    pd: Arc<PdInner>,
}

/// A slice the caller lends for RDMA, registered for a scope ([`ProtectionDomain::with_slice`]):
/// memory the program already has (a buffer pool, a huge-page arena, a shared-memory segment it
/// mapped itself), registered without copying.
///
/// Everything [`MemoryRegion`] says of `T`, of reading what a peer writes and of the protection
/// domain holds here too. `with_slice` keeps the region in its own frame and drops it, which
/// deregisters it, before the borrow ends, so the device can no longer reach the memory when the
/// caller has it back; a region from the `unsafe` [`ProtectionDomain::register_slice`] relies on
/// its caller for that drop (a leaked one would stay registered). A memory window cannot be bound to
/// it (a window may outlive the borrow; [`crate::SendRequest::bind_mw`] takes a
/// [`MemoryRegion`]). Should the kernel refuse to deregister, which it does only for a region a
/// window is bound to, the process aborts rather than return memory the device may still write
/// (unless the device itself is gone).
#[derive(Debug)]
pub struct BorrowedMemoryRegion<'a, T> {
    region: Region<'a, T>,
    pd: Arc<PdInner>,
}

/// Memory the caller manages, registered under an `unsafe` contract
/// ([`ProtectionDomain::register_raw`]): memory that is not this process's to read (device memory
/// mapped in, a GPU's), or whose owner Rust cannot see. The region only holds the keys and the
/// range: it gives out scatter entries and the remote description, never the bytes.
///
/// Dropping it deregisters the memory; should the kernel refuse (only for a region a window is
/// bound to, which cannot happen to this type), the process aborts, unless the device is gone.
#[derive(Debug)]
pub struct RawMemoryRegion {
    region: Region<'static, u8>,
    pd: Arc<PdInner>,
}

/// The whole address space of the process, registered to be paged in on demand (an implicit
/// on-demand region, `ibv_reg_mr(pd, NULL, SIZE_MAX, access | IBV_ACCESS_ON_DEMAND)`), from
/// [`ProtectionDomain::register_implicit_on_demand`]: one pair of keys for any memory, named by
/// its address. The device faults pages in as work requests and peers touch them (prefetch with
/// [`ProtectionDomain::advise_mr`]).
#[derive(Debug)]
pub struct ImplicitOdpRegion {
    mr: Arc<Mr>,
    access: ibv_access_flags,
    _pd: Arc<PdInner>,
}

impl ImplicitOdpRegion {
    pub(crate) fn new(mr: Arc<Mr>, access: ibv_access_flags, pd: Arc<PdInner>) -> Self {
        ImplicitOdpRegion {
            mr,
            access,
            _pd: pd,
        }
    }

    /// The local key, for scatter entries naming any memory.
    pub fn lkey(&self) -> u32 {
        self.mr.keys().lkey
    }

    /// The remote key: with remote access, it lets a peer reach any memory of the process.
    pub fn rkey(&self) -> RemoteKey {
        RemoteKey {
            key: self.mr.keys().rkey,
        }
    }

    /// The access flags it was registered with (`IBV_ACCESS_ON_DEMAND` included).
    pub fn access(&self) -> ibv_access_flags {
        self.access
    }

    /// A scatter entry for `buf` (any memory of the process; the region covers it all).
    pub fn sge(&self, buf: &[u8]) -> io::Result<Sge> {
        let length = u32::try_from(buf.len()).map_err(|_| Error::InvalidArgument {
            verb: Verb::PostSend,
            what: format!("a scatter entry of {} bytes (at most 4 GiB - 1)", buf.len()),
        })?;
        Ok(Sge {
            addr: buf.as_ptr() as u64,
            length,
            lkey: self.mr.keys().lkey,
        })
    }

    /// `buf` as a peer targets it through this region (address, rkey, length).
    pub fn remote(&self, buf: &[u8]) -> RemoteMemory {
        RemoteMemory {
            addr: buf.as_ptr() as u64,
            rkey: self.mr.keys().rkey,
            len: buf.len() as u64,
        }
    }
}

/// A dma-buf registered for RDMA ([`ProtectionDomain::register_dmabuf`]): memory another driver
/// exports (a GPU's, or `udmabuf` over a memfd), which the device reaches without the CPU. It has no
/// address in this process: scatter entries and peers name it by its IOVA. The kernel holds its
/// own reference to the dma-buf until the region is dropped.
#[derive(Debug)]
pub struct DmabufMemoryRegion {
    mr: Arc<Mr>,
    iova: u64,
    len: u64,
    access: ibv_access_flags,
    _pd: Arc<PdInner>,
}

impl DmabufMemoryRegion {
    pub(crate) fn new(
        mr: Arc<Mr>,
        iova: u64,
        len: u64,
        access: ibv_access_flags,
        pd: Arc<PdInner>,
    ) -> Self {
        DmabufMemoryRegion {
            mr,
            iova,
            len,
            access,
            _pd: pd,
        }
    }

    /// The local key, for scatter entries.
    pub fn lkey(&self) -> u32 {
        self.mr.keys().lkey
    }

    /// The key peers use to access the region remotely.
    pub fn rkey(&self) -> RemoteKey {
        RemoteKey {
            key: self.mr.keys().rkey,
        }
    }

    /// The access flags it was registered with.
    pub fn access(&self) -> ibv_access_flags {
        self.access
    }

    /// Where the device sees its first byte.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// `false`: a region covers at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The scatter entry for `range` (in bytes) of the region, at its IOVA; a range outside it is
    /// an error.
    pub fn sge(&self, range: std::ops::Range<u64>) -> io::Result<Sge> {
        let length = (range.start <= range.end && range.end <= self.len)
            .then(|| u32::try_from(range.end - range.start).ok())
            .flatten();
        let addr = self.iova.checked_add(range.start);
        let (length, addr) = length.zip(addr).ok_or_else(|| Error::InvalidArgument {
            verb: Verb::PostSend,
            what: format!(
                "bytes {range:?} are not inside the dma-buf region of {} bytes",
                self.len
            ),
        })?;
        Ok(Sge {
            addr,
            length,
            lkey: self.mr.keys().lkey,
        })
    }

    /// The whole region as a peer targets it (IOVA, rkey, length).
    pub fn remote(&self) -> RemoteMemory {
        RemoteMemory {
            addr: self.iova,
            rkey: self.mr.keys().rkey,
            len: self.len,
        }
    }
}

/// What [`ProtectionDomain::advise_mr`] asks of on-demand memory (`enum ibv_advise_mr_advice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MrAdvice {
    /// Page the memory in for reading (`IBV_ADVISE_MR_ADVICE_PREFETCH`).
    Prefetch,
    /// Page it in writable (`IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE`); the region must allow local
    /// writes.
    PrefetchWrite,
    /// Map what is already present, without faulting anything in
    /// (`IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT`).
    PrefetchNoFault,
}

impl MrAdvice {
    pub(crate) fn raw(self) -> u32 {
        match self {
            MrAdvice::Prefetch => uverbs_drivers::uapi::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH,
            MrAdvice::PrefetchWrite => {
                uverbs_drivers::uapi::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE
            }
            MrAdvice::PrefetchNoFault => {
                uverbs_drivers::uapi::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
            }
        }
    }
}

/// The methods every kind of region has: keys, access, addresses, scatter entries, `rereg`.
macro_rules! region_methods {
    ($elem:ident, $unit:literal) => {
        /// The key peers use to access this region remotely.
        pub fn rkey(&self) -> RemoteKey {
            RemoteKey {
                key: self.region.mr().keys().rkey,
            }
        }

        /// The local key, for scatter/gather entries.
        pub fn lkey(&self) -> u32 {
            self.region.mr().keys().lkey
        }

        /// The access flags the region is registered with.
        pub fn access(&self) -> ibv_access_flags {
            ibv_access_flags(self.region.access())
        }

        /// The address of the region's first byte as the device sees it (its IOVA): the address
        /// scatter entries and peers name. The memory's own address unless the region was made
        /// with another [`Iova`] ([`Registration::iova`]).
        pub fn iova(&self) -> u64 {
            self.region.iova()
        }

        /// The scatter/gather entry covering `range` of this region (in
        #[doc = $unit]
        /// ), at its IOVA, for [`crate::SendRequest`]s and [`crate::ReceiveRequest`]s. A range
        /// that is not inside the region is an error.
        pub fn sge<R: MrRange>(&self, range: R) -> io::Result<Sge> {
            sge_of(&self.region, range).ok_or_else(|| {
                Error::InvalidArgument {
                    verb: Verb::PostSend,
                    what: format!(
                        "the range is not inside the memory region of {} {}",
                        self.region.len(),
                        $unit
                    ),
                }
                .into()
            })
        }

        /// The whole region as a peer targets it (IOVA, rkey, length), to send to the peer.
        pub fn remote(&self) -> RemoteMemory {
            RemoteMemory {
                addr: self.region.iova(),
                rkey: self.region.mr().keys().rkey,
                len: (self.region.len() * std::mem::size_of::<$elem>()) as u64,
            }
        }

        /// Changes the live region (`ibv_rereg_mr` without a change of memory): moves it to
        /// protection domain `pd` (of the same context) and/or gives it `access` (`None`: leave
        /// it). Its keys may change: take [`Self::lkey`] and [`Self::rkey`] afresh. Refused with
        /// a typed error: no change asked, a domain of another context, a memory window bound to
        /// the region, for a [`RawMemoryRegion`] access flags beyond those `register_raw` was
        /// given (its caller vouched for those only; `RawMemoryRegion::rereg_unchecked` grants
        /// more), and whatever the kernel refuses ([`Error::Unsupported`] where the driver cannot
        /// rereg at all); the region is unchanged then.
        pub fn rereg(
            &mut self,
            pd: Option<&ProtectionDomain<'_>>,
            access: Option<ibv_access_flags>,
        ) -> io::Result<()> {
            self.region
                .rereg(pd.map(|p| &p.inner.pd), access.map(|a| a.0))?;
            if let Some(pd) = pd {
                self.pd = Arc::clone(&pd.inner);
            }
            Ok(())
        }
    };
}

/// The volatile accessors of the regions that lend their elements.
macro_rules! volatile_methods {
    () => {
        /// Element `index`, loaded from memory on every call (a volatile read): for polling memory
        /// a peer writes with RDMA, which the compiler cannot see. `None` if `index` is out of
        /// bounds.
        pub fn read_volatile(&self, index: usize) -> Option<T> {
            self.region.read_volatile(index)
        }

        /// Waits until element `index` satisfies `done` (loading it afresh each time), then orders
        /// every later read of the region after that load, as rdma-core orders reading a
        /// completion after its owner bit: a peer that writes its payload before a flag (one RDMA
        /// WRITE lands in address order on RC, and a second WRITE lands after the first) can be
        /// waited for on the flag and its payload read afterwards. Returns the element, or `None`
        /// if `index` is out of bounds or `timeout` passes first (`None`: wait for ever).
        pub fn wait_for(
            &self,
            index: usize,
            done: impl FnMut(T) -> bool,
            timeout: Option<Duration>,
        ) -> Option<T> {
            let deadline = timeout.map(|t| Instant::now() + t);
            self.region.wait_for(index, done, deadline)
        }

        /// Stores `value` at `index` without borrowing the rest of the region, which a peer may
        /// be writing meanwhile (unlike `region[index] = value`, which borrows all of it mutably);
        /// `false` if `index` is out of bounds. For a flag or a counter next to memory a peer
        /// writes.
        pub fn write_volatile(&mut self, index: usize, value: T) -> bool {
            self.region.write_volatile(index, value)
        }
    };
}

impl<T> MemoryRegion<T> {
    region_methods!(T, "elements");

    pub(crate) fn pd(&self) -> &Arc<PdInner> {
        &self.pd
    }

    /// The registration, which a memory window bound to the region keeps alive.
    pub(crate) fn registration(&self) -> &Arc<Mr> {
        self.region
            .shared_mr()
            .expect("a MemoryRegion owns its memory (a vector or a mapping)")
    }

    pub(crate) fn sge_of<R: MrRange>(&self, range: R) -> Option<Sge> {
        sge_of(&self.region, range)
    }
}

impl<T: FromBytes + Copy> MemoryRegion<T> {
    volatile_methods!();
}

impl<T: FromBytes + IntoBytes + Copy> MemoryRegion<T> {
    /// Moves the live region to the vector `data` (`ibv_rereg_mr` with
    /// `IBV_REREG_MR_CHANGE_TRANSLATION`): the region then covers `data`'s elements, at their own
    /// address, in the same protection domain with the same access; its old memory is freed (or
    /// unmapped). Its keys may change: take [`Self::lkey`] and [`Self::rkey`] afresh, and the
    /// scatter entries and remote descriptions made before name the old memory. Refused with a
    /// typed error: an empty vector, a memory window bound to the region, a device that cannot
    /// ([`Error::Unsupported`]: rxe); the region is unchanged then.
    pub fn rereg_memory(&mut self, data: Vec<T>) -> io::Result<()> {
        Ok(self.region.rereg_memory(data)?)
    }
}

impl<T> BorrowedMemoryRegion<'_, T> {
    region_methods!(T, "elements");
}

impl<T: FromBytes + Copy> BorrowedMemoryRegion<'_, T> {
    volatile_methods!();
}

impl RawMemoryRegion {
    region_methods!(u8, "bytes");

    /// The memory's address in this process (as registered, whatever its IOVA).
    pub fn addr(&self) -> *mut u8 {
        self.region.addr() as *mut u8
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.region.len()
    }

    /// `false`: a region covers at least one byte.
    pub fn is_empty(&self) -> bool {
        self.region.is_empty()
    }

    /// [`RawMemoryRegion::rereg`] that may also grant access flags beyond those the region was
    /// registered with (remote write to memory registered for remote reads only, say).
    ///
    /// # Safety
    /// [`Registration::raw`]'s contract, for the new access flags: with any write access, the
    /// range must stay writable and hold nothing a written byte would make invalid, until the
    /// region has been dropped.
    #[allow(unsafe_code)] // The contract is the caller's, passed on to the driver's.
    pub unsafe fn rereg_unchecked(
        &mut self,
        pd: Option<&ProtectionDomain<'_>>,
        access: Option<ibv_access_flags>,
    ) -> io::Result<()> {
        // SAFETY: this function's contract, which is the driver's.
        unsafe {
            self.region
                .rereg_unchecked(pd.map(|p| &p.inner.pd), access.map(|a| a.0))
        }?;
        if let Some(pd) = pd {
            self.pd = Arc::clone(&pd.inner);
        }
        Ok(())
    }
}

/// The scatter entry for `range` (in elements) of `region`, at its IOVA.
fn sge_of<T, R: MrRange>(region: &Region<'_, T>, range: R) -> Option<Sge> {
    let (start, end) = range.bounds(region.len())?;
    let size = std::mem::size_of::<T>();
    let length = u32::try_from((end - start).checked_mul(size)?).ok()?;
    let offset = u64::try_from(start.checked_mul(size)?).ok()?;
    Some(Sge {
        addr: region.iova().checked_add(offset)?,
        length,
        lkey: region.mr().keys().lkey,
    })
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

impl<T> Deref for BorrowedMemoryRegion<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.region.as_slice()
    }
}

impl<T> DerefMut for BorrowedMemoryRegion<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.region.as_mut_slice()
    }
}

/// How to register memory in a protection domain: the access flags and where the device sees the
/// memory ([`Iova`]), then the memory ([`Registration::vec`], [`Registration::slice`],
/// [`Registration::mapping`], [`Registration::raw`]). From [`ProtectionDomain::registration`].
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// use uverbs::{ibv_access_flags, Iova};
/// let ctx = uverbs::devices()?.iter().next().expect("a device").open()?;
/// let pd = ctx.alloc_pd()?;
/// // A zero-based region: a peer addresses its first byte as 0.
/// let mr = pd
///     .registration(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_READ)
///     .iova(Iova::ZeroBased)
///     .mapping::<u64>(uverbs::memmap2::MmapMut::map_anon(1 << 20)?)?;
/// assert_eq!(mr.remote().addr, 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a registration does nothing until given memory"]
pub struct Registration {
    pd: Arc<PdInner>,
    access: ibv_access_flags,
    iova: Iova,
}

impl Registration {
    pub(crate) fn new(pd: Arc<PdInner>, access: ibv_access_flags) -> Registration {
        Registration {
            pd,
            access,
            iova: Iova::Address,
        }
    }

    /// Where the device sees the region's first byte (default: [`Iova::Address`], the memory's own
    /// address). [`Iova::At`] must keep the memory's offset within its page.
    pub fn iova(mut self, iova: Iova) -> Registration {
        self.iova = iova;
        self
    }

    /// Registers a vector, which the region owns until dropped. No elements, or zero-sized ones,
    /// is an error.
    pub fn vec<T: FromBytes + IntoBytes + Copy>(self, data: Vec<T>) -> io::Result<MemoryRegion<T>> {
        Ok(MemoryRegion {
            region: Region::register(&self.pd.pd, data, self.access.0, self.iova)?,
            pd: self.pd,
        })
    }

    /// Registers a memory mapping as `T`s, which the region owns (and unmaps when dropped): an
    /// anonymous mapping, huge pages (`memmap2::MmapOptions::huge`), memfd shared memory, a file
    /// mapped writable. Its length must be a whole number of `T`s, and not zero.
    pub fn mapping<T: FromBytes + IntoBytes + Copy>(
        self,
        map: memmap2::MmapMut,
    ) -> io::Result<MemoryRegion<T>> {
        Ok(MemoryRegion {
            region: Region::register_mapping(&self.pd.pd, map, self.access.0, self.iova)?,
            pd: self.pd,
        })
    }

    /// Registers `buf`, a slice the caller lends, runs `f` with the region and deregisters it
    /// before returning `f`'s result, also when `f` panics ([`ProtectionDomain::with_slice`]). An
    /// empty slice, or one of zero-sized elements, is an error, and `f` is not called.
    #[allow(unsafe_code)] // The region never leaves this frame; see the SAFETY comment.
    pub fn with_slice<'a, T: FromBytes + IntoBytes + Copy, R>(
        self,
        buf: &'a mut [T],
        f: impl FnOnce(&mut BorrowedMemoryRegion<'a, T>) -> R,
    ) -> io::Result<R> {
        // SAFETY: the region is this frame's local: `f` gets it by `&mut` and so cannot move it
        // out (only swap it with another region of the same lifetime, which then is the one this
        // frame drops: every region's owner still drops it before `'a` ends), and the frame drops
        // it before returning, on unwinding too, while `buf` is still borrowed.
        let mut region = unsafe { self.slice(buf) }?;
        Ok(f(&mut region))
    }

    /// Registers a slice the caller lends for the region's lifetime. An empty slice, or one of
    /// zero-sized elements, is an error. [`Registration::with_slice`] is the safe form.
    ///
    /// # Safety
    /// The region must be dropped before the borrow of `buf` ends
    /// ([`ProtectionDomain::register_slice`]).
    #[allow(unsafe_code)] // The contract is the caller's, passed on to the driver's.
    pub unsafe fn slice<T: FromBytes + IntoBytes + Copy>(
        self,
        buf: &mut [T],
    ) -> io::Result<BorrowedMemoryRegion<'_, T>> {
        // SAFETY: this function's contract, which is the driver's.
        let region = unsafe { Region::register_slice(&self.pd.pd, buf, self.access.0, self.iova) }?;
        Ok(BorrowedMemoryRegion {
            region,
            pd: self.pd,
        })
    }

    /// Registers `len` bytes at `addr`, memory the caller manages.
    ///
    /// # Safety
    /// Until the returned region has been dropped, the device reads these bytes whenever a work
    /// request or a peer holding the keys asks, and (with any write access) writes any bytes there
    /// at any time. So the caller must keep the range allocated and mapped (readable, and writable
    /// for write access) until the region is dropped, and must not access it meanwhile in ways
    /// the device's accesses would make undefined: no Rust references to it that assume nothing
    /// else writes it, no values there that some bit patterns would make invalid. The kernel
    /// itself checks that the range is mapped when registering (an `EFAULT` otherwise).
    #[allow(unsafe_code)] // The contract is the caller's, passed on to the driver's.
    pub unsafe fn raw(self, addr: *mut u8, len: usize) -> io::Result<RawMemoryRegion> {
        let elements = NonNull::new(addr).ok_or_else(|| Error::InvalidArgument {
            verb: Verb::RegMr,
            what: "a null address".into(),
        })?;
        // SAFETY: this function's contract; `u8` is aligned anywhere and valid for every byte.
        let region = unsafe {
            Region::register_foreign(&self.pd.pd, elements, len, self.access.0, self.iova)
        }?;
        Ok(RawMemoryRegion {
            region,
            pd: self.pd,
        })
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
