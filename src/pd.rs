//! Protection domains: [`ProtectionDomain`].

use std::io;
use std::sync::Arc;

use uverbs_drivers::cmd;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::verbs::{Mr, Pd};
use uverbs_drivers::wr::Sge;
use zerocopy::{FromBytes, IntoBytes};

use crate::ah::AddressHandle;
use crate::context::{Context, Inner as CtxInner};
use crate::cq::CompletionQueue;
use crate::ibv::{ibv_access_flags, ibv_qp_type};
use crate::mr::{
    BorrowedMemoryRegion, DmabufMemoryRegion, ImplicitOdpRegion, MemoryRegion, MrAdvice,
    RawMemoryRegion, Registration,
};
use crate::mw::MemoryWindow;
use crate::qp::{AddressVector, QueuePairBuilder};
use crate::srq::SharedReceiveQueue;

/// The kernel object behind a protection domain, shared by everything created in it, so that it
/// outlives them whatever order they are dropped in.
#[derive(Debug)]
pub(crate) struct PdInner {
    // Dropped first: the domain is deallocated while the context is still open.
    pub(crate) pd: Arc<Pd>,
    pub(crate) ctx: Arc<CtxInner>,
}

impl PdInner {
    /// The kernel's handle.
    pub(crate) fn handle(&self) -> u32 {
        self.pd.handle()
    }
}

/// A protection domain: memory regions and queue pairs created in it may be used together.
///
/// Objects created from it keep its kernel object alive, so they may be dropped in any order.
#[derive(Debug)]
pub struct ProtectionDomain<'ctx> {
    pub(crate) ctx: &'ctx Context,
    pub(crate) inner: Arc<PdInner>,
}

impl<'ctx> ProtectionDomain<'ctx> {
    pub(crate) fn new(ctx: &'ctx Context) -> io::Result<ProtectionDomain<'ctx>> {
        let inner = ctx.inner();
        Ok(ProtectionDomain {
            ctx,
            inner: Arc::new(PdInner {
                pd: Arc::new(Pd::alloc(&inner.drv)?),
                ctx: Arc::clone(inner),
            }),
        })
    }

    /// Starts building a queue pair of type `qp_type` in this domain, completing sends on `send` and
    /// receives on `recv` (`ibverbs`' `create_qp`).
    pub fn create_qp<'pd, 'scq, 'rcq, 'res>(
        &'pd self,
        send: &'scq CompletionQueue<'_>,
        recv: &'rcq CompletionQueue<'_>,
        qp_type: ibv_qp_type::Type,
    ) -> QueuePairBuilder<'res>
    where
        'scq: 'res,
        'rcq: 'res,
        'pd: 'res,
    {
        QueuePairBuilder::new(self, send, recv, qp_type)
    }

    /// Allocates `n` default-initialised `T`s and registers them for local writes and remote reads,
    /// writes and atomics (as `ibverbs` does).
    ///
    /// Unlike `ibverbs`, which panics, `n == 0` or a zero-sized `T` is an error. Unlike `ibverbs`,
    /// `T` must be plain bytes both ways, [`FromBytes`] and [`IntoBytes`] (see [`MemoryRegion`]).
    pub fn allocate<T: FromBytes + IntoBytes + Copy + Default>(
        &self,
        n: usize,
    ) -> io::Result<MemoryRegion<T>> {
        self.allocate_with_access(
            n,
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_READ
                | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC,
        )
    }

    /// Allocates `n` default-initialised `T`s and registers them with `access`.
    pub fn allocate_with_access<T: FromBytes + IntoBytes + Copy + Default>(
        &self,
        n: usize,
        access: ibv_access_flags,
    ) -> io::Result<MemoryRegion<T>> {
        if n == 0 || std::mem::size_of::<T>() == 0 {
            return Err(Error::InvalidArgument {
                verb: Verb::RegMr,
                what: "a memory region needs at least one non-zero-sized element".into(),
            }
            .into());
        }
        self.register(vec![T::default(); n], access)
    }

    /// Registers a vector the caller filled, with `access`. The region owns it until dropped.
    pub fn register<T: FromBytes + IntoBytes + Copy>(
        &self,
        data: Vec<T>,
        access: ibv_access_flags,
    ) -> io::Result<MemoryRegion<T>> {
        self.registration(access).vec(data)
    }

    /// Registers `buf`, a slice the caller lends, with `access`, runs `f` with the region, and
    /// deregisters it before returning `f`'s result (also when `f` panics): memory the program
    /// already has, registered in place for a scope (see [`BorrowedMemoryRegion`]). An empty
    /// slice is an error, and `f` is not called.
    ///
    /// The region lives in this function's frame, not the caller's, so it cannot be leaked with
    /// the slice returned to its owner while the device can still reach it (the flaw of the
    /// pre-1.0 `thread::scoped`, which `std::thread::scope` fixed the same way). Should the kernel
    /// refuse to deregister, the process aborts rather than hand the slice back.
    ///
    /// ```no_run
    /// # fn main() -> std::io::Result<()> {
    /// use uverbs::ibv_access_flags as A;
    /// let ctx = uverbs::devices()?.iter().next().expect("a device").open()?;
    /// let pd = ctx.alloc_pd()?;
    /// let mut pool = vec![0u8; 1 << 20];
    /// let rkey = pd.with_slice(&mut pool[..], A::IBV_ACCESS_LOCAL_WRITE, |region| {
    ///     // Post work requests naming `region.sge(..)`, wait for their completions...
    ///     region.rkey()
    /// })?;
    /// // Deregistered: `pool` is the program's alone again, and `rkey` reaches nothing.
    /// # let _ = rkey;
    /// # Ok(()) }
    /// ```
    pub fn with_slice<'a, T: FromBytes + IntoBytes + Copy, R>(
        &self,
        buf: &'a mut [T],
        access: ibv_access_flags,
        f: impl FnOnce(&mut BorrowedMemoryRegion<'a, T>) -> R,
    ) -> io::Result<R> {
        self.registration(access).with_slice(buf, f)
    }

    /// Registers a slice the caller lends, with `access`, for as long as the region lives (see
    /// [`BorrowedMemoryRegion`]). [`ProtectionDomain::with_slice`] is the safe form. An empty slice
    /// is an error.
    ///
    /// # Safety
    /// The region must be dropped before the borrow of `buf` ends: leaking it
    /// (`std::mem::forget`, `ManuallyDrop`, `Box::leak`, an `Rc` cycle, all safe) ends the borrow
    /// with the slice still registered, and the device then writes (for a peer, or a receive)
    /// whatever the memory holds next, a freed and reused allocation included.
    #[allow(unsafe_code)] // The contract is the caller's; see `Registration::slice`.
    pub unsafe fn register_slice<'a, T: FromBytes + IntoBytes + Copy>(
        &self,
        buf: &'a mut [T],
        access: ibv_access_flags,
    ) -> io::Result<BorrowedMemoryRegion<'a, T>> {
        // SAFETY: this function's contract.
        unsafe { self.registration(access).slice(buf) }
    }

    /// Registers a memory mapping as `T`s, with `access`; the region owns the mapping (huge
    /// pages, memfd shared memory, a file: see [`Registration::mapping`]).
    pub fn register_mapping<T: FromBytes + IntoBytes + Copy>(
        &self,
        map: memmap2::MmapMut,
        access: ibv_access_flags,
    ) -> io::Result<MemoryRegion<T>> {
        self.registration(access).mapping(map)
    }

    /// Registers `len` bytes at `addr`, memory the caller manages, with `access`
    /// ([`Registration::raw`]).
    ///
    /// # Safety
    /// [`Registration::raw`]'s contract: the range stays allocated, mapped and untouched by
    /// anything the device's accesses would make undefined until the region has been dropped.
    #[allow(unsafe_code)] // The contract is the caller's; see `Registration::raw`.
    pub unsafe fn register_raw(
        &self,
        addr: *mut u8,
        len: usize,
        access: ibv_access_flags,
    ) -> io::Result<RawMemoryRegion> {
        // SAFETY: this function's contract.
        unsafe { self.registration(access).raw(addr, len) }
    }

    /// Registers the whole address space of the process, paged in on demand
    /// (`ibv_reg_mr(pd, NULL, SIZE_MAX, access | IBV_ACCESS_ON_DEMAND)`): one pair of keys for
    /// any memory. Where the device has no implicit on-demand paging (rxe before Linux 6.14, a
    /// device without `IBV_ODP_SUPPORT_IMPLICIT`), the kernel refuses: [`Error::Unsupported`] or
    /// its `EINVAL`.
    ///
    /// # Safety
    /// The keys reach every byte of the process until the region is dropped (and for good if the
    /// kernel then refuses to deregister): each work request naming memory through them makes the
    /// device read or write it, and with remote access a peer holding the rkey reads or writes any
    /// memory of the process. The caller must make sure that only memory meant for it is named,
    /// by its own work requests (the post contracts, for every buffer) and by every peer it gives
    /// the rkey to.
    #[allow(unsafe_code)] // The contract is the caller's; the driver's is the same.
    pub unsafe fn register_implicit_on_demand(
        &self,
        access: ibv_access_flags,
    ) -> io::Result<ImplicitOdpRegion> {
        // SAFETY: this function's contract.
        let mr = unsafe { Mr::register_implicit_on_demand(&self.inner.pd, access.0) }?;
        let access = access | ibv_access_flags::IBV_ACCESS_ON_DEMAND;
        Ok(ImplicitOdpRegion::new(mr, access, Arc::clone(&self.inner)))
    }

    /// Registers `len` bytes at `offset` of the dma-buf `fd` (`ibv_reg_dmabuf_mr`), seen by the
    /// device at `iova`, with `access`: memory another driver exports (a GPU's; `udmabuf` over a
    /// memfd), reached by the device without this process mapping it. The kernel keeps its own
    /// reference to the dma-buf, so `fd` may be closed afterwards. [`Error::Unsupported`] where
    /// the device cannot (rxe); the kernel refuses a descriptor that is not a dma-buf or a range
    /// outside it.
    pub fn register_dmabuf(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        len: u64,
        iova: u64,
        access: ibv_access_flags,
    ) -> io::Result<DmabufMemoryRegion> {
        let mr = Mr::register_dmabuf(&self.inner.pd, fd, offset, len, iova, access.0)?;
        Ok(DmabufMemoryRegion::new(
            mr,
            iova,
            len,
            access,
            Arc::clone(&self.inner),
        ))
    }

    /// Advice for on-demand memory (`ibv_advise_mr`): page in the memory `sges` name (each with
    /// the local key of an on-demand region of this domain, explicit or implicit) before the
    /// device needs it. With `flush`, the call returns once the pages are in; otherwise it
    /// returns at once and they come in behind it. Refused with a typed error: no entries, an
    /// entry of a region that is not on-demand or of another domain (the kernel's `ENOENT` on
    /// mlx5), a device without on-demand paging ([`Error::Unsupported`]: rxe before Linux 6.14).
    pub fn advise_mr(&self, advice: MrAdvice, flush: bool, sges: &[Sge]) -> io::Result<()> {
        if sges.is_empty() {
            return Err(Error::InvalidArgument {
                verb: Verb::AdviseMr,
                what: "no scatter entries".into(),
            }
            .into());
        }
        let flags = if flush {
            uverbs_drivers::uapi::IB_UVERBS_ADVISE_MR_FLAG_FLUSH
        } else {
            0
        };
        let sges: Vec<uverbs_drivers::uapi::ib_uverbs_sge> = sges
            .iter()
            .map(|s| uverbs_drivers::uapi::ib_uverbs_sge {
                addr: s.addr,
                length: s.length,
                lkey: s.lkey,
            })
            .collect();
        Ok(cmd::advise_mr(
            self.inner.pd.device().ucontext(),
            self.inner.handle(),
            advice.raw(),
            flags,
            &sges,
        )?)
    }

    /// Starts a registration with `access`, for what the shortcuts above do not say: where the
    /// device sees the memory ([`Registration::iova`]: zero-based, or any address).
    pub fn registration(&self, access: ibv_access_flags) -> Registration {
        Registration::new(Arc::clone(&self.inner), access)
    }

    /// Allocates a type 2 memory window in this domain (`ibv_alloc_mw(pd, IBV_MW_TYPE_2)`): no
    /// access until bound with [`crate::SendRequest::bind_mw`]. [`Error::Unsupported`] on mlx5.
    pub fn alloc_mw(&self) -> io::Result<MemoryWindow> {
        MemoryWindow::new(self)
    }

    /// Creates a shared receive queue holding at least `max_wr` receive requests of up to `max_sge`
    /// scatter entries each (`ibv_create_srq`), with `id` 0 in its async events (see
    /// [`ProtectionDomain::create_srq_with_id`]). Queue pairs use it through
    /// [`QueuePairBuilder::set_srq`].
    pub fn create_srq(&self, max_wr: u32, max_sge: u32) -> io::Result<SharedReceiveQueue> {
        SharedReceiveQueue::new(self, max_wr, max_sge, 0)
    }

    /// [`ProtectionDomain::create_srq`] with the `id` the queue's async events carry
    /// ([`crate::AsyncEvent::element`]).
    pub fn create_srq_with_id(
        &self,
        max_wr: u32,
        max_sge: u32,
        id: isize,
    ) -> io::Result<SharedReceiveQueue> {
        SharedReceiveQueue::new(self, max_wr, max_sge, id)
    }

    /// Creates an address handle for `av`, the destination of UD sends
    /// ([`crate::SendRequest::send_ud`]). The port must be given (from 1); RoCE needs a global
    /// route (`dgid` set, `sgid_index` an entry of the port's GID table). A multicast `dgid` makes
    /// it address a multicast group (send to QPN [`crate::MULTICAST_QPN`]).
    pub fn create_ah(&self, av: &AddressVector) -> io::Result<AddressHandle> {
        AddressHandle::new(self, av)
    }

    /// An address handle back to the sender of a received UD datagram
    /// (`ibv_create_ah_from_wc`): `wc` is the receive's completion on `port`, `grh` the first 40
    /// bytes of its buffer. See [`AddressVector::from_completion`] for what it takes from the
    /// packet and what it refuses.
    pub fn create_ah_from_wc(
        &self,
        port: u8,
        wc: &crate::ibv_wc,
        grh: &[u8],
    ) -> io::Result<AddressHandle> {
        let av = AddressVector::from_completion(self.ctx, port, wc, grh)?;
        AddressHandle::new(self, &av)
    }
}
