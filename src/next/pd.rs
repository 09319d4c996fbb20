//! Protection domains, memory, address handles and shared receive queues of the `next` API.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut, RangeBounds};
use std::sync::Arc;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::cq::CompletionQueue;
use super::device::{Context, PORT_NUM};
use super::error::{Error, Result};
use super::ffi;
use super::qp::QueuePairBuilder;
use super::values::{sub_range, Gid, RemoteKey, RemoteMemorySlice};
use crate::Sge;

/// `ibverbs`' default access: local write, remote write, read and atomics, relaxed ordering.
pub const DEFAULT_ACCESS_FLAGS: ffi::ibv_access_flags = ffi::ibv_access_flags(
    ffi::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0
        | ffi::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0
        | ffi::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0
        | ffi::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0
        | ffi::ibv_access_flags::IBV_ACCESS_RELAXED_ORDERING.0,
);

/// The access flags uverbs registers: relaxed ordering is a hint a device may ignore, and the
/// kernel refuses it on devices that do not take it (rxe): uverbs leaves it out.
fn registered(access: ffi::ibv_access_flags) -> crate::ibv_access_flags {
    crate::ibv_access_flags(access.0 & !ffi::ibv_access_flags::IBV_ACCESS_RELAXED_ORDERING.0)
}

/// What the clones of a [`ProtectionDomain`] share.
pub(crate) struct PdShared {
    pub(crate) ctx: Context,
    pub(crate) pd: Arc<crate::pd::PdInner>,
}

/// A protection domain; cheap to clone, and kept alive by everything made in it.
#[must_use]
#[derive(Clone)]
pub struct ProtectionDomain {
    pub(crate) inner: Arc<PdShared>,
}

impl fmt::Debug for ProtectionDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtectionDomain")
            .field("handle", &self.inner.pd.handle())
            .finish()
    }
}

impl ProtectionDomain {
    pub(crate) fn new(ctx: &Context) -> Result<ProtectionDomain> {
        let pd = ctx
            .ctx
            .alloc_pd()
            .map_err(|e| Error::from_uverbs(e, Error::AllocProtectionDomain))?;
        Ok(ProtectionDomain {
            inner: Arc::new(PdShared {
                pd: Arc::clone(&pd.inner),
                ctx: ctx.clone(),
            }),
        })
    }

    /// uverbs' own handle on the domain, for the calls below.
    pub(crate) fn pd(&self) -> crate::ProtectionDomain<'_> {
        crate::ProtectionDomain {
            ctx: &self.inner.ctx.ctx,
            inner: Arc::clone(&self.inner.pd),
        }
    }

    /// An address handle: the destination of UD sends ([`super::PostBatch::to`]).
    pub fn create_address_handle(&self, attr: &AddressHandleAttribute) -> Result<AddressHandle> {
        let ah = self
            .pd()
            .create_ah(&attr.av)
            .map_err(|e| Error::from_uverbs(e, Error::CreateAddressHandle))?;
        Ok(AddressHandle { ah: Arc::new(ah) })
    }

    /// Advises the device on the pages of `sg_list` (`ibv_advise_mr`: prefetch of on-demand
    /// regions). `flags` is `IB_UVERBS_ADVISE_MR_FLAG_FLUSH` (1) or 0. Regions that are not
    /// on-demand, and devices without on-demand paging, make this [`Error::Unsupported`] or a
    /// no-op as the device says.
    pub fn advise_mr(
        &self,
        advice: ffi::ib_uverbs_advise_mr_advice,
        flags: u32,
        sg_list: &[LocalMemorySlice],
    ) -> Result<()> {
        let advice = match advice {
            ffi::ib_uverbs_advise_mr_advice::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH => {
                crate::MrAdvice::Prefetch
            }
            ffi::ib_uverbs_advise_mr_advice::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE => {
                crate::MrAdvice::PrefetchWrite
            }
            ffi::ib_uverbs_advise_mr_advice::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT => {
                crate::MrAdvice::PrefetchNoFault
            }
        };
        let flush =
            flags & ffi::ib_uverbs_advise_mr_flag::IB_UVERBS_ADVISE_MR_FLAG_FLUSH as u32 != 0;
        self.pd()
            .advise_mr(advice, flush, sges(sg_list))
            .map_err(|e| Error::from_uverbs(e, Error::AdviseMemoryRegion))
    }

    /// Starts building a queue pair of type `qp_type` on port 1, completing sends on `send` and
    /// receives on `recv`. Port 1 must be ACTIVE or ARMED ([`Error::PortNotActive`]).
    pub fn create_qp(
        &self,
        send: &CompletionQueue,
        recv: &CompletionQueue,
        qp_type: ffi::ibv_qp_type,
    ) -> Result<QueuePairBuilder> {
        self.create_qp_on_port(send, recv, qp_type, PORT_NUM)
    }

    /// [`create_qp`](ProtectionDomain::create_qp) on port `port_num`. uverbs connects queue pairs
    /// on port 1 only (every device it drives has one port): another port is
    /// [`Error::Unsupported`].
    pub fn create_qp_on_port(
        &self,
        send: &CompletionQueue,
        recv: &CompletionQueue,
        qp_type: ffi::ibv_qp_type,
        port_num: u8,
    ) -> Result<QueuePairBuilder> {
        if port_num != PORT_NUM {
            return Err(Error::Unsupported);
        }
        let port = self.inner.ctx.active_port(port_num)?;
        Ok(QueuePairBuilder::new(self, send, recv, qp_type, port))
    }

    /// Allocates `n` zeroed bytes and registers them with `access_flags`.
    ///
    /// # Panics
    /// As in `ibverbs`, when `n` is 0.
    pub fn allocate_with_permissions(
        &self,
        n: usize,
        access_flags: ffi::ibv_access_flags,
    ) -> Result<MemoryRegion<Box<[u8]>>> {
        assert!(n > 0, "a memory region of 0 bytes");
        let mr = self
            .pd()
            .register(vec![0u8; n], registered(access_flags))
            .map_err(|e| Error::from_uverbs(e, Error::RegisterMemoryRegion))?;
        Ok(MemoryRegion {
            addr: mr.iova(),
            len: mr.len(),
            lkey: mr.lkey(),
            rkey: mr.rkey().key,
            reg: Registered::Bytes(mr),
            _owner: PhantomData,
        })
    }

    /// Allocates `n` zeroed bytes registered with [`DEFAULT_ACCESS_FLAGS`].
    ///
    /// # Panics
    /// As in `ibverbs`, when `n` is 0.
    pub fn allocate(&self, n: usize) -> Result<MemoryRegion<Box<[u8]>>> {
        self.allocate_with_permissions(n, DEFAULT_ACCESS_FLAGS)
    }

    /// Registers `len` bytes at `ptr`, memory the caller manages.
    ///
    /// # Panics
    /// As in `ibverbs`, when `len` is 0.
    ///
    /// # Safety
    /// As `uverbs::ProtectionDomain::register_raw`: until the returned region has been dropped,
    /// the device reads these bytes whenever a work request or a peer holding the keys asks, and
    /// (with any write access) writes any bytes there at any time. So the caller must keep the
    /// range allocated and mapped (readable, and writable for write access) until the region is
    /// dropped, and must not access it meanwhile in ways the device's accesses would make
    /// undefined: no Rust references to it that assume nothing else writes it, no values there
    /// that some bit patterns would make invalid.
    #[allow(unsafe_code)] // The contract is the API's.
    pub unsafe fn register_from_raw(
        &self,
        ptr: *mut u8,
        len: usize,
        access_flags: ffi::ibv_access_flags,
    ) -> Result<MemoryRegion<()>> {
        assert!(len > 0, "a memory region of 0 bytes");
        // SAFETY: this function's contract is `register_raw`'s.
        let mr = unsafe { self.pd().register_raw(ptr, len, registered(access_flags)) }
            .map_err(|e| Error::from_uverbs(e, Error::RegisterMemoryRegion))?;
        Ok(MemoryRegion {
            addr: mr.iova(),
            len,
            lkey: mr.lkey(),
            rkey: mr.rkey().key,
            reg: Registered::Raw(mr),
            _owner: PhantomData,
        })
    }

    /// A shared receive queue of `max_wr` requests of `max_sge` entries each, armed at
    /// `srq_limit` (0: not armed).
    pub fn create_srq(
        &self,
        max_wr: u32,
        max_sge: u32,
        srq_limit: u32,
    ) -> Result<SharedReceiveQueue> {
        let srq = self
            .pd()
            .create_srq(max_wr, max_sge)
            .map_err(|e| Error::from_uverbs(e, Error::CreateSharedReceiveQueue))?;
        if srq_limit != 0 {
            srq.arm(srq_limit)
                .map_err(|e| Error::from_uverbs(e, Error::CreateSharedReceiveQueue))?;
        }
        Ok(SharedReceiveQueue {
            inner: Arc::clone(&srq.inner),
        })
    }
}

/// What a [`MemoryRegion`] registered.
enum Registered {
    /// Memory uverbs allocated and owns (`allocate`): should the kernel refuse to deregister it,
    /// it is leaked, never handed back.
    Bytes(crate::MemoryRegion<u8>),
    /// Memory the caller manages (`register_from_raw`).
    Raw(#[allow(dead_code)] crate::RawMemoryRegion), // held for its registration
}

/// Registered memory: from [`ProtectionDomain::allocate`] (`O` = `Box<[u8]>`, the bytes through
/// [`bytes`](MemoryRegion::bytes) and [`bytes_mut`](MemoryRegion::bytes_mut)) or
/// [`ProtectionDomain::register_from_raw`] (`O` = `()`). Dropping it deregisters it.
pub struct MemoryRegion<O> {
    reg: Registered,
    /// The first byte's address as the device sees it.
    addr: u64,
    len: usize,
    lkey: u32,
    rkey: u32,
    _owner: PhantomData<O>,
}

impl<O> fmt::Debug for MemoryRegion<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("len", &self.len)
            .field("lkey", &self.lkey)
            .field("rkey", &self.rkey)
            .finish()
    }
}

/// What [`MemoryRegion::into_inner`] gives back.
pub trait RegionOwner: Sized + private::Sealed {
    /// The owner, taken out of a region being deregistered.
    #[doc(hidden)]
    fn take(region: MemoryRegion<Self>) -> Self;
}

mod private {
    pub trait Sealed {}
    impl Sealed for Box<[u8]> {}
    impl Sealed for () {}
}

impl RegionOwner for Box<[u8]> {
    fn take(region: MemoryRegion<Self>) -> Self {
        match &region.reg {
            Registered::Bytes(mr) => Box::from(&mr[..]),
            Registered::Raw(_) => Box::default(),
        }
    }
}

impl RegionOwner for () {
    fn take(_: MemoryRegion<Self>) -> Self {}
}

impl<O> MemoryRegion<O> {
    /// The key a peer names the region by.
    pub fn rkey(&self) -> RemoteKey {
        RemoteKey::new(self.rkey)
    }

    /// The key a local scatter entry names the region by.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// The whole region as a peer targets it.
    pub fn remote(&self) -> RemoteMemorySlice {
        RemoteMemorySlice {
            addr: self.addr,
            len: self.len,
            rkey: self.rkey,
        }
    }

    /// Deregisters the region and gives back what it owned. The bytes of an allocated region come
    /// back as a copy of the registered memory (uverbs keeps the memory the device could reach
    /// until the kernel has let go of it).
    pub fn into_inner(self) -> O
    where
        O: RegionOwner,
    {
        O::take(self)
    }

    /// The scatter entry for `bounds` of the region.
    ///
    /// # Panics
    /// As in `ibverbs`, when the range is empty, outside the region, or longer than 4 GiB - 1.
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> LocalMemorySlice {
        LocalMemorySlice::within(self.addr, self.len, self.lkey, bounds)
    }
}

impl<O: Deref<Target = [u8]>> MemoryRegion<O> {
    /// The region's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.reg {
            Registered::Bytes(mr) => mr,
            Registered::Raw(_) => &[],
        }
    }
}

impl<O: DerefMut<Target = [u8]>> MemoryRegion<O> {
    /// The region's bytes, to write.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        match &mut self.reg {
            Registered::Bytes(mr) => mr,
            Registered::Raw(_) => &mut [],
        }
    }
}

/// Registered memory a request names locally: address, length and local key (`ibv_sge`).
/// Borrows nothing: the posting calls' contracts say how long the memory must stay.
#[derive(
    Debug, Default, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(transparent)]
pub struct LocalMemorySlice {
    sge: Sge,
}

impl From<ffi::ibv_sge> for LocalMemorySlice {
    fn from(s: ffi::ibv_sge) -> LocalMemorySlice {
        LocalMemorySlice {
            sge: Sge {
                addr: s.addr,
                length: s.length,
                lkey: s.lkey,
            },
        }
    }
}

impl From<LocalMemorySlice> for ffi::ibv_sge {
    fn from(s: LocalMemorySlice) -> ffi::ibv_sge {
        ffi::ibv_sge {
            addr: s.sge.addr,
            length: s.sge.length,
            lkey: s.sge.lkey,
        }
    }
}

impl LocalMemorySlice {
    /// The first byte's address as the device sees it.
    pub fn addr(&self) -> u64 {
        self.sge.addr
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.sge.length as usize
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.sge.length == 0
    }

    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.sge.lkey
    }

    /// `bounds` of this slice.
    ///
    /// # Panics
    /// As [`MemoryRegion::slice`].
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> Self {
        LocalMemorySlice::within(self.sge.addr, self.len(), self.sge.lkey, bounds)
    }

    /// `bounds` of the `len` bytes at `addr` under `lkey`, checked as `ibverbs` checks them
    /// (the remote slices' rules: [`sub_range`]), and in 32 bits of length.
    fn within(addr: u64, len: usize, lkey: u32, bounds: impl RangeBounds<usize>) -> Self {
        let (addr, len) = sub_range(addr, len, bounds);
        LocalMemorySlice {
            sge: Sge {
                addr,
                length: u32::try_from(len).expect("a memory slice of more than 4 GiB - 1 bytes"),
                lkey,
            },
        }
    }
}

/// The slices as uverbs' scatter entries (the same layout: a view, not a copy).
#[inline(always)]
pub(crate) fn sges(local: &[LocalMemorySlice]) -> &[Sge] {
    zerocopy::transmute_ref!(local)
}

/// Where an address handle points: build one, then
/// [`ProtectionDomain::create_address_handle`]. Port 1 unless set.
#[derive(Clone, Debug)]
pub struct AddressHandleAttribute {
    av: crate::AddressVector,
}

impl Default for AddressHandleAttribute {
    fn default() -> AddressHandleAttribute {
        AddressHandleAttribute {
            av: crate::AddressVector {
                port_num: PORT_NUM,
                ..crate::AddressVector::default()
            },
        }
    }
}

impl AddressHandleAttribute {
    /// Port 1, nothing else set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The destination LID (InfiniBand).
    pub fn set_dest_lid(&mut self, lid: u16) -> &mut Self {
        self.av.dlid = lid;
        self
    }

    /// The service level.
    pub fn set_service_level(&mut self, service_level: u8) -> &mut Self {
        self.av.sl = service_level;
        self
    }

    /// The local port.
    pub fn set_port(&mut self, port_num: u8) -> &mut Self {
        self.av.port_num = port_num;
        self
    }

    /// A global route (RoCE needs one): to `dgid`, from the local GID at `sgid_index`.
    pub fn set_grh(
        &mut self,
        dgid: Gid,
        sgid_index: u8,
        hop_limit: u8,
        traffic_class: u8,
    ) -> &mut Self {
        self.av.dgid = Some(crate::Gid::from(<[u8; 16]>::from(dgid)));
        self.av.sgid_index = sgid_index;
        self.av.hop_limit = hop_limit;
        self.av.traffic_class = traffic_class;
        self
    }

    pub(crate) fn av(&self) -> &crate::AddressVector {
        &self.av
    }
}

/// The destination of UD sends; from [`ProtectionDomain::create_address_handle`].
#[derive(Debug)]
pub struct AddressHandle {
    pub(crate) ah: Arc<crate::AddressHandle>,
}

/// A shared receive queue: receives any number of queue pairs built with
/// [`QueuePairBuilder::set_srq`] take their messages from. Cheap to clone.
#[derive(Clone)]
pub struct SharedReceiveQueue {
    pub(crate) inner: Arc<crate::srq::SrqInner>,
}

impl fmt::Debug for SharedReceiveQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedReceiveQueue").finish_non_exhaustive()
    }
}

impl SharedReceiveQueue {
    /// uverbs' own handle on the queue.
    pub(crate) fn srq(&self) -> crate::SharedReceiveQueue {
        crate::SharedReceiveQueue {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Posts a receive into `local` (no system call).
    ///
    /// # Safety
    /// The memory `local` names must stay allocated and untouched until the receive's completion
    /// has been polled: the device writes it.
    #[allow(unsafe_code)] // The contract is the API's.
    #[inline]
    pub unsafe fn post_receive(&self, local: &[LocalMemorySlice], wr_id: u64) -> Result<()> {
        let request = [crate::ReceiveRequest::new(wr_id, sges(local))];
        // SAFETY: the memory is covered by this function's contract.
        unsafe { self.srq().post_receive_list(&request) }
            .map_err(|f| Error::from_uverbs(f.into(), Error::PostReceive))
    }
}

/// A receive request of [`super::QueuePair::post_recv`].
#[repr(transparent)]
pub struct RecvRequest<'a> {
    pub(crate) r: crate::ReceiveRequest<'a>,
}

impl fmt::Debug for RecvRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r.fmt(f)
    }
}

impl<'a> RecvRequest<'a> {
    /// A receive into the concatenation of `local`.
    #[inline]
    pub fn new(wr_id: u64, local: &'a [LocalMemorySlice]) -> Self {
        RecvRequest {
            r: crate::ReceiveRequest::new(wr_id, sges(local)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_never_wrap_the_address() {
        let top = LocalMemorySlice::from(ffi::ibv_sge {
            addr: u64::MAX - 4,
            length: 16,
            lkey: 1,
        });
        assert_eq!(top.slice(0..4).addr(), u64::MAX - 4);
        let wrapped = std::panic::catch_unwind(|| top.slice(8..12));
        assert!(
            wrapped.is_err(),
            "a slice past the end of the address space"
        );
    }
}
