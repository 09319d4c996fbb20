//! Memory regions: the kernel's registration ([`Mr`]) and the memory it covers ([`Region`]), which
//! never goes back to its owner (the allocator, the mapping, the caller) while the kernel may still
//! let the device at it.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, IntoBytes};

use super::Pd;
use crate::cmd::{self, MrKeys};
use crate::error::{Error, Result, Verb};
use crate::mem::{self, Allocation, Elements};

/// Whose memory a region covers, and so what happens to it if the kernel refuses to let it go.
#[derive(Debug)]
pub enum Backing {
    /// A vector's heap buffer, taken over from the vector: freed after deregistration, leaked if
    /// deregistration fails.
    Heap(Allocation),
    /// A memory mapping (anonymous, huge pages, shared memory, a file): unmapped after
    /// deregistration, leaked (left mapped) if deregistration fails.
    Mapping(memmap2::MmapMut),
    /// Memory the caller owns (a borrow, or memory registered under an `unsafe` contract). It goes
    /// back to the caller when the region is dropped, so deregistration must succeed: if the kernel
    /// refuses for any reason but the device being gone, the process aborts rather than hand back
    /// memory the device may still write.
    Foreign,
}

impl Backing {
    /// Gives up the memory for good after a failed deregistration (`error`).
    fn abandon(self, error: &Error) {
        match self {
            Backing::Heap(a) => a.leak(),
            Backing::Mapping(m) => {
                mem::count_leak(m.len());
                std::mem::forget(m);
            }
            // `EIO`: the device was removed and the kernel destroyed the registration itself
            // (disassociation), so the device no longer reaches the memory.
            Backing::Foreign
                if matches!(
                    error,
                    Error::Kernel {
                        errno: Errno::EIO,
                        ..
                    }
                ) => {}
            Backing::Foreign => std::process::abort(),
        }
    }
}

/// The kernel's registration of a [`Region`]'s memory, shared with whatever must keep it (a memory
/// window bound to the region).
///
/// When the last owner drops it, it deregisters; the memory (handed over by the region when the
/// region was dropped) then goes back to its owner, or, if the kernel refused to deregister (rxe
/// does while a window is bound), is given up as [`Backing`] says: a peer may still write it.
#[derive(Debug)]
pub struct Mr {
    pd: Arc<Pd>,
    keys: MrKeys,
    /// The region's memory once the region itself is gone.
    memory: Mutex<Option<Backing>>,
}

impl Mr {
    /// The handle and keys.
    #[inline]
    pub fn keys(&self) -> MrKeys {
        self.keys
    }

    /// The protection domain it is registered in.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// `REG_DMABUF_MR` of `len` bytes at `offset` of the dma-buf `fd`, seen by the device at
    /// `iova` (a dma-buf has no address in this process), with `IB_UVERBS_ACCESS_*` flags `access`.
    pub fn register_dmabuf(
        pd: &Arc<Pd>,
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        len: u64,
        iova: u64,
        access: u32,
    ) -> Result<Arc<Mr>> {
        if len == 0 {
            return Err(Error::InvalidArgument {
                verb: Verb::RegDmabufMr,
                what: "zero bytes".into(),
            });
        }
        check_iova_range(iova, len, Verb::RegDmabufMr)?;
        let keys = cmd::reg_dmabuf_mr(
            pd.device().ucontext(),
            pd.handle(),
            fd,
            offset,
            len,
            iova,
            access,
        )?;
        Ok(Arc::new(Mr {
            pd: Arc::clone(pd),
            keys,
            memory: Mutex::new(None),
        }))
    }

    /// `REG_MR` of the whole address space, paged in on demand (an implicit on-demand region:
    /// address 0, length `u64::MAX`, IOVA 0, `IB_UVERBS_ACCESS_ON_DEMAND` added to `access`).
    /// Scatter entries and peers name memory by its address in this process.
    ///
    /// # Safety
    /// The keys reach every byte of this process's address space until the registration is
    /// dropped (and for good if the kernel then refuses to deregister): a work request naming any
    /// address makes the device read or write it, and with remote access flags a peer holding the
    /// rkey reads or writes any memory of the process. The caller must make sure that only memory
    /// meant for it is ever named, by its own work requests (the post contracts, for all memory)
    /// and by every peer the rkey is given to.
    pub unsafe fn register_implicit_on_demand(pd: &Arc<Pd>, access: u32) -> Result<Arc<Mr>> {
        let access = access | uapi::IB_UVERBS_ACCESS_ON_DEMAND;
        // SAFETY: this function's contract: the caller answers for every address the keys reach.
        let keys =
            unsafe { cmd::reg_mr(pd.device().ucontext(), pd.handle(), 0, u64::MAX, 0, access) }
                .map_err(|e| {
                    let implicit =
                        uapi::ib_verbs::IB_ODP_SUPPORT | uapi::ib_verbs::IB_ODP_SUPPORT_IMPLICIT;
                    on_demand_refusal(pd, access, implicit, e)
                })?;
        Ok(Arc::new(Mr {
            pd: Arc::clone(pd),
            keys,
            memory: Mutex::new(None),
        }))
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        let memory = self
            .memory
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::dereg_mr(self.pd.device().ucontext(), self.keys.handle) } {
            crate::report_drop_error("memory region", &e);
            // Still registered: the device may write this memory for a peer.
            if let Some(m) = memory {
                m.abandon(&e);
            }
        }
    }
}

/// Where the device sees a region's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Iova {
    /// At the memory's own address (`ibv_reg_mr`).
    #[default]
    Address,
    /// At its offset within its page, so that the page the region starts in is at 0: a region
    /// over page-aligned memory starts at 0 (a zero-based region, `ibv_reg_mr_iova(.., 0, ..)`).
    ZeroBased,
    /// At this address, which must lie at the same offset within a page as the memory
    /// (`ibv_reg_mr_iova`): the kernel maps the region by pages.
    At(u64),
}

impl Iova {
    /// The IOVA for `bytes` bytes at `addr`, or why there is none: the IOVA must keep the memory's
    /// offset within its page, and the range it starts must not pass the end of the 64-bit
    /// address space (every scatter entry and remote address is then `iova + offset` without
    /// overflow).
    pub(crate) fn resolve(self, addr: u64, bytes: u64, verb: Verb) -> Result<u64> {
        let page_mask = crate::sys::page_size() as u64 - 1;
        let iova = match self {
            Iova::Address => addr,
            Iova::ZeroBased => addr & page_mask,
            Iova::At(iova) if iova & page_mask == addr & page_mask => iova,
            Iova::At(iova) => {
                return Err(Error::InvalidArgument {
                    verb,
                    what: format!(
                        "IOVA {iova:#x} lies at another offset within a page than the memory \
                         ({addr:#x}); they must agree in the low {} bits",
                        page_mask.count_ones()
                    ),
                })
            }
        };
        check_iova_range(iova, bytes, verb)?;
        Ok(iova)
    }
}

/// Refuses a range of `bytes` bytes at IOVA `iova` that passes the end of the 64-bit address space.
pub(crate) fn check_iova_range(iova: u64, bytes: u64, verb: Verb) -> Result<()> {
    match iova.checked_add(bytes) {
        Some(_) => Ok(()),
        None => Err(Error::InvalidArgument {
            verb,
            what: format!(
                "{bytes} bytes at IOVA {iova:#x} pass the end of the 64-bit address space"
            ),
        }),
    }
}

/// `T`s registered as a memory region, for `'a`: `'static` for memory the region owns (a vector, a
/// mapping) or holds under an `unsafe` contract, the borrow's lifetime for a slice it was lent
/// ([`Region::register_slice`]). (A region is invariant behind `&mut`, so a borrowed one cannot
/// be swapped into the place of a `'static` one and outlive its borrow.)
///
/// The elements never move while registered: the region lends them out, never their owner.
/// `T` must be valid for every bit pattern and have no uninitialised bytes (`FromBytes +
/// IntoBytes`), since the device may write any bytes there and read every byte.
#[derive(Debug)]
pub struct Region<'a, T> {
    elements: NonNull<T>,
    len: usize,
    iova: u64,
    access: u32,
    /// The access flags [`Region::rereg`] may grant: all for memory the region owns or borrows
    /// exclusively; for memory registered under an `unsafe` contract
    /// ([`Region::register_foreign`]), those its caller vouched for, as a safe call must not widen
    /// what an `unsafe` one was promised.
    ceiling: u32,
    mr: Arc<Mr>,
    /// The memory's owner, handed to the registration when the region goes.
    backing: Option<Backing>,
    /// The borrow of the elements (`'static` when there is none), without requiring `T: 'a`.
    _borrow: PhantomData<&'a mut ()>,
    _elements: PhantomData<T>,
}

// SAFETY: a region owns its elements (or holds them under its creator's exclusive borrow or
// contract) as a `Vec<T>` does, so it may move to another thread when `T` may, and be shared when
// `T` may; the registration it holds is itself `Send + Sync`.
unsafe impl<T: Send> Send for Region<'_, T> {}
// SAFETY: as above: `&Region<T>` gives out `&[T]` and volatile copies of `T`s.
unsafe impl<T: Sync> Sync for Region<'_, T> {}

impl<'a, T: FromBytes + IntoBytes + Copy> Region<'a, T> {
    /// `REG_MR` of `buf`'s elements, lent for `'a`, in `pd` with `IB_UVERBS_ACCESS_*` flags
    /// `access`, seen by the device at `iova`. An empty slice, or one of zero-sized elements, is
    /// refused. The region deregisters when dropped, and aborts the process if the kernel refuses
    /// ([`Backing::Foreign`]).
    ///
    /// # Safety
    /// The region must be dropped before `'a` ends. The borrow checker ends the borrow when the
    /// region's *lifetime* ends, not when its destructor runs, and leaking a value is safe
    /// (`std::mem::forget`, `ManuallyDrop`, `Box::leak`, an `Rc` cycle): a region leaked while
    /// registered would let the device write the slice after its owner has it back (freed and
    /// handed out again, a peer's RDMA WRITE lands in whatever lives there). The caller must make
    /// sure the destructor runs, as `uverbs::ProtectionDomain::with_slice` does by keeping the
    /// region in its own frame.
    pub unsafe fn register_slice(
        pd: &Arc<Pd>,
        buf: &'a mut [T],
        access: u32,
        iova: Iova,
    ) -> Result<Region<'a, T>> {
        let elements = NonNull::from(&mut *buf).cast::<T>();
        // SAFETY: the slice is aligned and valid for reads and writes of its elements, and
        // exclusively borrowed for `'a`, which the region carries: nothing else reaches the
        // elements until the region is dropped, and the caller promises the drop (which
        // deregisters, or aborts) comes before `'a` ends. Nothing else holds the registration
        // (`Region::shared_mr` refuses foreign memory), so the drop deregisters at once.
        unsafe { Self::new(pd, elements, buf.len(), Backing::Foreign, access, iova) }
    }
}

impl<T: FromBytes + IntoBytes + Copy> Region<'static, T> {
    /// `REG_MR` of `data`'s elements in `pd` with `IB_UVERBS_ACCESS_*` flags `access`, seen by
    /// the device at `iova`. No elements, or zero-sized ones, are refused.
    pub fn register(
        pd: &Arc<Pd>,
        data: Vec<T>,
        access: u32,
        iova: Iova,
    ) -> Result<Region<'static, T>> {
        let (allocation, elements, len) = Allocation::from_vec(data).ok_or_else(empty)?;
        // SAFETY: the allocation owns the `len` elements at `elements`, and goes with them.
        unsafe { Self::new(pd, elements, len, Backing::Heap(allocation), access, iova) }
    }

    /// `REG_MR` of the memory `map` maps, as `T`s: its length must be a whole number of `T`s, and
    /// its address aligned for `T` (a mapping is page-aligned).
    pub fn register_mapping(
        pd: &Arc<Pd>,
        mut map: memmap2::MmapMut,
        access: u32,
        iova: Iova,
    ) -> Result<Region<'static, T>> {
        let size = std::mem::size_of::<T>();
        let bytes = map.len();
        let elements = NonNull::new(map.as_mut_ptr().cast::<T>()).ok_or_else(empty)?;
        if size == 0 || bytes == 0 {
            return Err(empty());
        }
        if bytes % size != 0 || elements.as_ptr() as usize % std::mem::align_of::<T>() != 0 {
            return Err(Error::InvalidArgument {
                verb: Verb::RegMr,
                what: format!(
                    "a mapping of {bytes} bytes is not a whole number of aligned {size}-byte \
                     elements"
                ),
            });
        }
        // SAFETY: the mapping is `bytes` long, aligned for `T` (checked), and goes with the region
        // (its memory stays mapped while the `MmapMut` lives, and it is not accessed through the
        // `MmapMut` again); any bytes are valid `T`s (`FromBytes`).
        unsafe {
            Self::new(
                pd,
                elements,
                bytes / size,
                Backing::Mapping(map),
                access,
                iova,
            )
        }
    }

    /// `REREG_MR` with `IB_MR_REREG_TRANS`: the region moves to `data`'s elements (seen by the
    /// device at their own address), keeping its protection domain and access; the keys may
    /// change. On success the old memory goes back to its owner (the kernel has let go of it); on
    /// failure the region keeps its old memory and `data` is dropped (the kernel did not keep it).
    ///
    /// Refused (`InvalidArgument`): no elements, memory the region does not own (a lent slice
    /// or raw memory), and a registration something else holds (a memory window).
    pub fn rereg_memory(&mut self, data: Vec<T>) -> Result<()> {
        let bad = |what: &str| Error::InvalidArgument {
            verb: Verb::ReregMr,
            what: what.into(),
        };
        if matches!(self.backing, Some(Backing::Foreign) | None) {
            return Err(bad("the region's memory is not its own to give back"));
        }
        let (allocation, elements, len) = Allocation::from_vec(data).ok_or_else(empty)?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| b != 0)
            .ok_or_else(empty)?;
        let mr = Arc::get_mut(&mut self.mr)
            .ok_or_else(|| bad("a memory window bound to the region holds its registration"))?;
        let addr = elements.as_ptr() as u64;
        // SAFETY: the new range is `data`'s elements, which move into the region with
        // `allocation` below (on success) and stay there until a later change or the drop hands
        // them to the `Mr` (`new`'s contract, as for a registration); on failure the kernel kept
        // the old range, which the region still owns.
        let reregistered = unsafe {
            cmd::rereg_mr(
                mr.pd.device().ucontext(),
                mr.keys.handle,
                uapi::ib_verbs::IB_MR_REREG_TRANS,
                addr,
                bytes as u64,
                addr,
                mr.pd.handle(),
                self.access,
            )
        };
        let (lkey, rkey) = match reregistered {
            Ok(keys) => keys,
            Err(e) => {
                if e.may_have_run() {
                    // A model daemon may have moved the registration to the new memory: it is
                    // never freed (the old stays the region's, registered or not).
                    allocation.leak();
                }
                return Err(e);
            }
        };
        mr.keys.lkey = lkey;
        mr.keys.rkey = rkey;
        self.elements = elements;
        self.len = len;
        self.iova = addr;
        // The old memory: no longer registered, back to the allocator (or unmapped).
        drop(self.backing.replace(Backing::Heap(allocation)));
        Ok(())
    }

    /// `REG_MR` of `len` elements at `elements`, which the caller owns ([`Backing::Foreign`]).
    ///
    /// # Safety
    /// Until the region has been dropped (the drop deregisters, and aborts the process if the
    /// kernel refuses), the device reads the `len` `T`s at `elements` whenever a work request or
    /// a peer holding the keys asks, and, with any write access in `access` (local write, remote
    /// write, remote atomic), writes any bytes there at any time. So `elements` must stay aligned,
    /// allocated and mapped (readable; writable for write access) until the drop returns, and
    /// nothing may access them meanwhile in ways those accesses would make undefined: with write
    /// access, no references that assume nothing else writes the memory, no values some bit
    /// patterns would make invalid; with read access only, shared reads by the program are fine.
    /// The region's own accessors (`as_slice`, volatile reads and writes) count as such accesses:
    /// over memory the program also reaches otherwise, do not use them. (What
    /// `uverbs::Registration::raw` promises, and [`Region::rereg_unchecked`] extends to new flags.)
    pub unsafe fn register_foreign(
        pd: &Arc<Pd>,
        elements: NonNull<T>,
        len: usize,
        access: u32,
        iova: Iova,
    ) -> Result<Region<'static, T>> {
        // SAFETY: this function's contract.
        let mut region = unsafe { Self::new(pd, elements, len, Backing::Foreign, access, iova) }?;
        region.ceiling = access;
        Ok(region)
    }
}

impl<'a, T: FromBytes + IntoBytes + Copy> Region<'a, T> {
    /// # Safety
    /// `elements` must be aligned and valid for reads and writes of `len` `T`s, accessed only
    /// through the region, until `backing` lets them go (or, for [`Backing::Foreign`], until the
    /// region's registration has been dropped).
    unsafe fn new(
        pd: &Arc<Pd>,
        elements: NonNull<T>,
        len: usize,
        backing: Backing,
        access: u32,
        iova: Iova,
    ) -> Result<Region<'a, T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| b != 0)
            .ok_or_else(empty)?;
        let addr = elements.as_ptr() as u64;
        let iova = iova.resolve(addr, bytes as u64, Verb::RegMr)?;
        // SAFETY: the range is the region's elements, which stay where they are (this function's
        // contract) until the registration is dropped: the region hands `backing` to the `Mr`,
        // which gives the memory back only after `dereg_mr` succeeded and abandons it otherwise
        // (leaks it, or aborts for foreign memory); `T: FromBytes + IntoBytes`, so any bytes the
        // device writes are valid `T`s and every byte it reads is initialised; the region's own
        // accesses are through its slices and volatile views (the device's writes are DMA into
        // plain data) and the post contracts, which the callers of the posting `unsafe fn`s uphold.
        let keys = unsafe {
            cmd::reg_mr(
                pd.device().ucontext(),
                pd.handle(),
                addr,
                bytes as u64,
                iova,
                access,
            )
        };
        let keys = match keys {
            Ok(keys) => keys,
            Err(e) if e.may_have_run() => {
                // A model daemon may have registered the memory: given up as after a refused
                // deregistration (leaked; for memory the region does not own, the process aborts).
                backing.abandon(&e);
                return Err(e);
            }
            Err(e) => {
                return Err(on_demand_refusal(
                    pd,
                    access,
                    uapi::ib_verbs::IB_ODP_SUPPORT,
                    e,
                ))
            }
        };
        Ok(Region {
            elements,
            len,
            iova,
            access,
            ceiling: u32::MAX,
            mr: Arc::new(Mr {
                pd: Arc::clone(pd),
                keys,
                memory: Mutex::new(None),
            }),
            backing: Some(backing),
            _borrow: PhantomData,
            _elements: PhantomData,
        })
    }
}

/// A registration the kernel refused: where it asked for on-demand paging (`access`) and the
/// device lacks the `needed` general ODP capabilities, [`Error::Unsupported`], whatever errno the
/// kernel chose (6.1 answers `EINVAL`, later kernels `EOPNOTSUPP`); otherwise `error` itself. Asks
/// the device only on this error path.
fn on_demand_refusal(pd: &Pd, access: u32, needed: u64, error: Error) -> Error {
    if access & uapi::IB_UVERBS_ACCESS_ON_DEMAND == 0 || !matches!(error, Error::Kernel { .. }) {
        return error;
    }
    match pd.device().ucontext().query_device() {
        Ok(attrs) if attrs.resp.odp_caps.general_caps & needed != needed => {
            Error::Unsupported { verb: Verb::RegMr }
        }
        _ => error,
    }
}

fn empty() -> Error {
    Error::InvalidArgument {
        verb: Verb::RegMr,
        what: "an empty buffer".into(),
    }
}

impl<T> Region<'_, T> {
    /// The registration (its keys and protection domain).
    #[inline]
    pub fn mr(&self) -> &Mr {
        &self.mr
    }

    /// The registration, shared, for what must keep it after the region is gone (a memory window
    /// bound to the region): only for memory the region owns (a vector, a mapping), which the
    /// registration then keeps until the kernel lets go of it. `None` for memory the region does
    /// not own (a lent slice, raw memory): that goes back to its owner when the region is
    /// dropped, so nothing may keep the registration past the drop.
    pub fn shared_mr(&self) -> Option<&Arc<Mr>> {
        match self.backing {
            Some(Backing::Heap(_) | Backing::Mapping(_)) => Some(&self.mr),
            Some(Backing::Foreign) | None => None,
        }
    }

    /// The elements.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the region holds `len` initialised, aligned elements at `elements` for its whole
        // life; `&self` lends them shared (the device's writes are DMA, see `new`).
        unsafe { std::slice::from_raw_parts(self.elements.as_ptr(), self.len) }
    }

    /// The elements, mutably.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `&mut self` means no other reference into them exists.
        unsafe { std::slice::from_raw_parts_mut(self.elements.as_ptr(), self.len) }
    }

    /// How many elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// `false`: a region has at least one element.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of the first element in this process.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.elements.as_ptr() as u64
    }

    /// The address of the first element as the device sees it (scatter entries and peers use
    /// this).
    #[inline]
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// The `IB_UVERBS_ACCESS_*` flags it is registered with.
    #[inline]
    pub fn access(&self) -> u32 {
        self.access
    }

    /// `REREG_MR` without a change of memory: moves the region to protection domain `pd` and/or
    /// changes its access flags to `access` (`None`: unchanged). The keys may change.
    ///
    /// Refused (`InvalidArgument`) with neither change, while something else holds the
    /// registration (a memory window bound to the region), and for access flags beyond those the
    /// creator of a region over foreign memory vouched for ([`Region::register_foreign`]'s
    /// `access`; [`Region::rereg_unchecked`] grants more under the same contract).
    pub fn rereg(&mut self, pd: Option<&Arc<Pd>>, access: Option<u32>) -> Result<()> {
        if let Some(a) = access {
            let beyond = a & !self.ceiling;
            if beyond != 0 {
                return Err(Error::InvalidArgument {
                    verb: Verb::ReregMr,
                    what: format!(
                        "access flags {beyond:#x} beyond those the region over foreign memory was \
                         registered with ({:#x}): granting them is unsafe (rereg_unchecked)",
                        self.ceiling
                    ),
                });
            }
        }
        // SAFETY: the new access is within `ceiling`, what the region's creator vouched for (all
        // of it for memory the region owns or borrows exclusively, whose `T: FromBytes +
        // IntoBytes` admits any device access).
        unsafe { self.rereg_unchecked(pd, access) }
    }

    /// [`Region::rereg`] without the check of `access` against what the region's creator vouched
    /// for.
    ///
    /// # Safety
    /// For a region over foreign memory ([`Region::register_foreign`]), that function's contract
    /// must hold for the new access flags as it did for the old: the memory stays allocated,
    /// mapped (writable, for any write access) and untouched by anything the device's accesses
    /// would make undefined until the region has been dropped.
    pub unsafe fn rereg_unchecked(
        &mut self,
        pd: Option<&Arc<Pd>>,
        access: Option<u32>,
    ) -> Result<()> {
        let bad = |what: &str| Error::InvalidArgument {
            verb: Verb::ReregMr,
            what: what.into(),
        };
        if pd.is_none() && access.is_none() {
            return Err(bad("nothing to change"));
        }
        let mr = Arc::get_mut(&mut self.mr)
            .ok_or_else(|| bad("a memory window bound to the region holds its registration"))?;
        let mut flags = 0;
        if pd.is_some() {
            flags |= uapi::ib_verbs::IB_MR_REREG_PD;
        }
        if access.is_some() {
            flags |= uapi::ib_verbs::IB_MR_REREG_ACCESS;
        }
        let new_pd = pd.unwrap_or(&mr.pd);
        if !Arc::ptr_eq(new_pd.device(), mr.pd.device()) {
            return Err(bad(
                "the protection domain belongs to another device context",
            ));
        }
        let new_access = access.unwrap_or(self.access);
        // SAFETY: no translation change (no `IB_MR_REREG_TRANS`): the kernel keeps the memory the
        // region registered, which stays as `new`'s contract keeps it; the new access is one the
        // memory's owner vouched for (this function's contract).
        let (lkey, rkey) = unsafe {
            cmd::rereg_mr(
                mr.pd.device().ucontext(),
                mr.keys.handle,
                flags,
                0,
                0,
                0,
                new_pd.handle(),
                new_access,
            )
        }?;
        mr.keys.lkey = lkey;
        mr.keys.rkey = rkey;
        mr.pd = Arc::clone(new_pd);
        self.access = new_access;
        self.ceiling |= new_access;
        Ok(())
    }

    fn view(&self) -> Elements<T> {
        // SAFETY: the region's elements stay valid and aligned while it lives, and its callers
        // below
        // hold no reference into them while the view is used (`&self` methods only read through it).
        unsafe { Elements::new(self.elements, self.len) }
    }
}

impl<T: FromBytes + Copy> Region<'_, T> {
    /// Element `index`, loaded afresh (volatile): for memory a peer writes
    /// ([`Elements::read_volatile`]).
    pub fn read_volatile(&self, index: usize) -> Option<T> {
        self.view().read_volatile(index)
    }

    /// Waits until element `index` satisfies `done`, then orders later reads after it
    /// ([`Elements::wait_for`]).
    pub fn wait_for(
        &self,
        index: usize,
        done: impl FnMut(T) -> bool,
        deadline: Option<Instant>,
    ) -> Option<T> {
        self.view().wait_for(index, done, deadline)
    }

    /// Stores `value` at `index` without borrowing the other elements
    /// ([`Elements::write_volatile`]).
    pub fn write_volatile(&mut self, index: usize, value: T) -> bool {
        self.view().write_volatile(index, value)
    }
}

impl<T> Drop for Region<'_, T> {
    fn drop(&mut self) {
        // The memory goes with the registration: back to its owner once the kernel has released it
        // (now, unless something else holds the `Mr`), abandoned if it refuses.
        let backing = self.backing.take();
        *self.mr.memory.lock().unwrap_or_else(|p| p.into_inner()) = backing;
    }
}
