//! The mlx5 (ConnectX) backend: the user context's driver data.
//!
//! `GET_CONTEXT` carries `struct mlx5_ib_alloc_ucontext_req_v2` and returns
//! `struct mlx5_ib_alloc_ucontext_resp`, whose fields (BlueFlame register size, UAR counts, CQE
//! version, maximum WQE sizes) every later mlx5 command depends on. The request asks for what
//! rdma-core's provider asks for by default, except dynamic UARs and DEVX, which this backend does not
//! use: the kernel then hands out `total_num_bfregs` static BlueFlame registers.
//!
//! The data path, as models over caller-provided buffers: [`wqe`] (send WQE segments), [`sq`]
//! (the [`sq::SendQueue`] that builds them into the SQ ring), [`handoff`] (what the send queue
//! hands its completion queue's poller: the lock-free single-producer, single-consumer ring of
//! posted WQEs), [`cqe`] (CQE views), [`poller`]
//! (the [`poller::CqPoller`] that polls them) and [`doorbell`] (doorbell records, UAR writes,
//! BlueFlame registers). `drivers/tests/mlx5_golden.rs` checks them byte for byte against rdma-core's
//! `<infiniband/mlx5dv.h>`.
//!
//! The production data path over them: [`uar`] (the context's UAR pages and BlueFlame registers),
//! [`buf`] (page-aligned queue memory and doorbell records), [`cq::Mlx5Cq`], [`qp::Mlx5Qp`] (RC,
//! UC, UD), [`srq::Mlx5Srq`] and [`ah::Mlx5Ah`]. Posting and polling make no system call: WQEs go
//! into the rings, the doorbell record is stored and the doorbell (or BlueFlame copy) written to the
//! UAR; CQEs are read by their owner bit. The same code drives a ConnectX and the software model
//! of the crate `uverbs-mlx5-model` (through [`crate::sys::ModelFile`]). Memory windows are not
//! supported (they need UMR WQEs): binds and local invalidations are [`Error::Unsupported`].
//!
//! The context keeps what its objects share: the UAR pages (mapped at the first CQ or QP), the
//! doorbell-record pages, and the table by which completions find their queue (the user index of
//! CQE version 1, or the QP/SRQ number with version 0).
//!
//! [`wqe`]: crate::mlx5::wqe
//! [`sq`]: crate::mlx5::sq
//! [`sq::SendQueue`]: crate::mlx5::sq::SendQueue
//! [`handoff`]: crate::mlx5::handoff
//! [`cqe`]: crate::mlx5::cqe
//! [`poller`]: crate::mlx5::poller
//! [`poller::CqPoller`]: crate::mlx5::poller::CqPoller
//! [`doorbell`]: crate::mlx5::doorbell
//! [`uar`]: crate::mlx5::uar
//! [`buf`]: crate::mlx5::buf
//! [`cq::Mlx5Cq`]: crate::mlx5::cq::Mlx5Cq
//! [`qp::Mlx5Qp`]: crate::mlx5::qp::Mlx5Qp
//! [`srq::Mlx5Srq`]: crate::mlx5::srq::Mlx5Srq
//! [`ah::Mlx5Ah`]: crate::mlx5::ah::Mlx5Ah

pub mod ah;
pub mod buf;
pub mod clock;
pub mod cq;
pub mod cqe;
pub mod doorbell;
pub mod handoff;
pub mod poller;
pub mod qp;
pub mod sq;
pub mod srq;
pub mod uar;
pub mod wqe;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::backend::{AhInit, CqInit, Provider};
use crate::cmd::srq::SrqInit;
use crate::cmd::{self, QpInit};
use crate::error::{Error, Result, Verb};
use crate::ucontext::Ucontext;
use poller::WqKey;

/// BlueFlame registers asked for (rdma-core's default, `MLX5_TOTAL_UUARS`).
pub const TOTAL_BFREGS: u32 = 16;
/// Of those, low-latency ones (rdma-core's default, `MLX5_NUM_LOW_LAT_UUARS`).
pub const LOW_LATENCY_BFREGS: u32 = 4;
/// The newest CQE format this backend parses.
pub const MAX_CQE_VERSION: u8 = 1;

/// The largest user index (CQE version 1): 24 bits, and `0xffffff` means none.
pub const MAX_USER_INDEX: u32 = 0xff_fffe;

/// The mlx5 part of a device context: the kernel's answer to `GET_CONTEXT`, and what the context's
/// CQs, QPs and SRQs share (UAR pages, doorbell records, the completion lookup table).
#[derive(Debug)]
pub struct Mlx5Context {
    uctx: Arc<Ucontext>,
    resp: uapi::mlx5_ib_alloc_ucontext_resp,
    uars: OnceLock<Arc<uar::Uars>>,
    uar_init: Mutex<()>,
    clock: OnceLock<Arc<clock::ClockPage>>,
    dbrecs: Arc<buf::DbrecPool>,
    pub(crate) resources: ResourceTable,
}

impl Mlx5Context {
    /// The request this backend sends.
    pub fn request() -> uapi::mlx5_ib_alloc_ucontext_req_v2 {
        let mut req = uapi::mlx5_ib_alloc_ucontext_req_v2::new_zeroed();
        req.total_num_bfregs = TOTAL_BFREGS;
        req.num_low_latency_bfregs = LOW_LATENCY_BFREGS;
        req.max_cqe_version = MAX_CQE_VERSION;
        req.lib_caps = uapi::MLX5_LIB_CAP_4K_UAR;
        req
    }

    /// The user context this backend context is on.
    pub fn ucontext(&self) -> &Arc<Ucontext> {
        &self.uctx
    }

    /// The kernel's `GET_CONTEXT` answer, checked: its size, and a CQE version this backend parses.
    pub fn parse_response(resp: &[u8]) -> Result<uapi::mlx5_ib_alloc_ucontext_resp> {
        let resp = uapi::mlx5_ib_alloc_ucontext_resp::read_from_bytes(resp).map_err(|_| {
            Error::Protocol {
                verb: Verb::GetContext,
                what: format!("mlx5 context response of {} bytes", resp.len()),
            }
        })?;
        if resp.cqe_version > MAX_CQE_VERSION {
            return Err(Error::Protocol {
                verb: Verb::GetContext,
                what: format!(
                    "mlx5 CQE version {} is newer than {MAX_CQE_VERSION}",
                    resp.cqe_version
                ),
            });
        }
        Ok(resp)
    }

    /// The kernel's response, as it came.
    pub fn response(&self) -> &uapi::mlx5_ib_alloc_ucontext_resp {
        &self.resp
    }

    /// The CQE format the kernel chose (0 or 1).
    pub fn cqe_version(&self) -> u8 {
        self.resp.cqe_version
    }

    /// The size of one BlueFlame register, in bytes (the write-combining buffer is half of it).
    pub fn bf_reg_size(&self) -> u32 {
        self.resp.bf_reg_size
    }

    /// The UAR pages, mapped on first use through the context's own device file (the pages the
    /// kernel allocated for this context: every doorbell and BlueFlame copy of its queues goes
    /// there).
    pub fn uars(&self) -> Result<&Arc<uar::Uars>> {
        if let Some(u) = self.uars.get() {
            return Ok(u);
        }
        let _guard = self.uar_init.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(u) = self.uars.get() {
            return Ok(u);
        }
        let layout = uar::UarLayout::new(&self.resp, crate::sys::page_size())?;
        let uars = Arc::new(uar::Uars::map(self.uctx.channel(), layout)?);
        Ok(self.uars.get_or_init(|| uars))
    }

    /// The clock-info page, mapped on first use.
    pub fn clock(&self) -> Result<Arc<clock::ClockPage>> {
        if let Some(c) = self.clock.get() {
            return Ok(Arc::clone(c));
        }
        let _guard = self.uar_init.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = self.clock.get() {
            return Ok(Arc::clone(c));
        }
        let page = Arc::new(clock::ClockPage::map(self.uctx.channel(), &self.resp)?);
        Ok(Arc::clone(self.clock.get_or_init(|| page)))
    }

    /// The context's doorbell records.
    pub fn dbrecs(&self) -> &Arc<buf::DbrecPool> {
        &self.dbrecs
    }

    /// The limits the kernel reported for work queues.
    pub fn limits(&self) -> qp::Limits {
        Mlx5Context::limits_of(&self.resp)
    }

    /// The limits a `GET_CONTEXT` answer reports for work queues (0 means the default).
    pub fn limits_of(resp: &uapi::mlx5_ib_alloc_ucontext_resp) -> qp::Limits {
        let desc = |v: u16| if v == 0 { 512 } else { u32::from(v) };
        qp::Limits {
            max_sq_desc_sz: desc(resp.max_sq_desc_sz),
            max_rq_desc_sz: desc(resp.max_rq_desc_sz),
            max_send_wqebb: if resp.max_send_wqebb == 0 {
                wqe::MAX_WQE_COUNT as u32
            } else {
                resp.max_send_wqebb
            },
            max_recv_wr: if resp.max_recv_wr == 0 {
                u32::MAX
            } else {
                resp.max_recv_wr
            },
            max_srq_recv_wr: if resp.max_srq_recv_wr == 0 {
                u32::MAX
            } else {
                resp.max_srq_recv_wr
            },
        }
    }

    /// Whether the kernel answers `CREATE_AH` with the destination MAC
    /// (`MLX5_USER_CMDS_SUPP_UHW_CREATE_AH`).
    pub fn kernel_ah(&self) -> bool {
        self.resp.cmds_supp_uhw & uapi::MLX5_USER_CMDS_SUPP_UHW_CREATE_AH != 0
    }
}

/// `ALLOC_PD` with mlx5's answer (`mlx5_ib_alloc_pd_resp`): the new protection domain's handle and
/// its PD number.
pub fn alloc_pd(ctx: &Ucontext) -> Result<(u32, u32)> {
    let mut resp = uapi::mlx5_ib_alloc_pd_resp::new_zeroed();
    let handle = cmd::alloc_pd(ctx, resp.as_mut_bytes())?;
    Ok((handle, resp.pdn))
}

/// A queue a completion can name.
#[derive(Debug, Clone)]
pub(crate) enum Resource {
    Qp(Arc<qp::QpShared>),
    Srq(Arc<srq::SrqShared>),
}

impl Resource {
    /// Whether something else holds the queue too (its owner, the table): dropping this
    /// reference then frees nothing.
    pub(crate) fn is_shared(&self) -> bool {
        match self {
            Resource::Qp(q) => Arc::strong_count(q) > 1,
            Resource::Srq(q) => Arc::strong_count(q) > 1,
        }
    }

    /// Whether `self` and `other` are the same queue (not merely the same number).
    fn same(&self, other: &Resource) -> bool {
        match (self, other) {
            (Resource::Qp(a), Resource::Qp(b)) => Arc::ptr_eq(a, b),
            (Resource::Srq(a), Resource::Srq(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

#[derive(Debug)]
enum Slot {
    Free,
    Reserved,
    Used(Resource),
}

#[derive(Debug, Default)]
struct Tables {
    by_uidx: Vec<Slot>,
    free: Vec<u32>,
    by_qpn: HashMap<u32, Resource>,
    by_srqn: HashMap<u32, Resource>,
}

/// The context's table of queues by the key their CQEs carry (rdma-core's `uidx_table`, and
/// `qp_table`/`srq_table` for CQE version 0).
#[derive(Debug, Default)]
pub(crate) struct ResourceTable {
    inner: RwLock<Tables>,
    /// Counts the changes to the table (each insert and removal, made under its write lock), so
    /// that a CQ may keep what it last looked up across polls while the count is unchanged.
    generation: AtomicU64,
}

impl ResourceTable {
    /// The tables, to change. The generation moves on under the write lock, before the change:
    /// whoever read the generation and then looked something up either saw the change or will
    /// find the generation moved.
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tables> {
        let t = self.inner.write().unwrap_or_else(|p| p.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        t
    }

    /// The number of changes so far: what [`ResourceTable::lookup`] answered after this returned
    /// `g` stays the answer while this still returns `g`.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// A free user index, reserved until [`ResourceTable::insert`] or [`ResourceTable::remove`].
    pub(crate) fn reserve(&self, verb: Verb) -> Result<u32> {
        let mut t = self.write();
        if let Some(i) = t.free.pop() {
            t.by_uidx[i as usize] = Slot::Reserved;
            return Ok(i);
        }
        let i = t.by_uidx.len() as u32;
        if i > MAX_USER_INDEX {
            return Err(Error::Kernel {
                verb,
                errno: nix::errno::Errno::ENOMEM,
            });
        }
        t.by_uidx.push(Slot::Reserved);
        Ok(i)
    }

    /// Files `r` under `key` (a reserved user index, or a QP/SRQ number).
    pub(crate) fn insert(&self, key: WqKey, r: Resource) {
        let mut t = self.write();
        match key {
            WqKey::UserIndex(i) => t.by_uidx[i as usize] = Slot::Used(r),
            WqKey::Qpn(n) => {
                t.by_qpn.insert(n, r);
            }
            WqKey::Srqn(n) => {
                t.by_srqn.insert(n, r);
            }
        }
    }

    /// Removes what is filed under `key`; a user index becomes free again.
    pub(crate) fn remove(&self, key: WqKey) {
        let mut t = self.write();
        match key {
            WqKey::UserIndex(i) => {
                if let Some(slot) = t.by_uidx.get_mut(i as usize) {
                    if !matches!(slot, Slot::Free) {
                        *slot = Slot::Free;
                        t.free.push(i);
                    }
                }
            }
            WqKey::Qpn(n) => {
                t.by_qpn.remove(&n);
            }
            WqKey::Srqn(n) => {
                t.by_srqn.remove(&n);
            }
        }
    }

    /// Removes `own` from under `key` if it is still what is filed there; a user index becomes free
    /// again. For a queue being destroyed: once the kernel has destroyed it, its QP or SRQ number
    /// may already name a queue another thread just created, whose entry must stay.
    pub(crate) fn remove_own(&self, key: WqKey, own: &Resource) {
        let mut t = self.write();
        let t = &mut *t;
        match key {
            WqKey::UserIndex(i) => {
                if let Some(slot) = t.by_uidx.get_mut(i as usize) {
                    if matches!(slot, Slot::Used(r) if r.same(own)) {
                        *slot = Slot::Free;
                        t.free.push(i);
                    }
                }
            }
            WqKey::Qpn(n) => {
                if t.by_qpn.get(&n).is_some_and(|r| r.same(own)) {
                    t.by_qpn.remove(&n);
                }
            }
            WqKey::Srqn(n) => {
                if t.by_srqn.get(&n).is_some_and(|r| r.same(own)) {
                    t.by_srqn.remove(&n);
                }
            }
        }
    }

    /// What a CQE names.
    pub(crate) fn lookup(&self, key: WqKey) -> Option<Resource> {
        let t = self.inner.read().unwrap_or_else(|p| p.into_inner());
        match key {
            WqKey::UserIndex(i) => match t.by_uidx.get(i as usize) {
                Some(Slot::Used(r)) => Some(r.clone()),
                _ => None,
            },
            WqKey::Qpn(n) => t.by_qpn.get(&n).cloned(),
            WqKey::Srqn(n) => t.by_srqn.get(&n).cloned(),
        }
    }
}

impl Provider for Mlx5Context {
    fn clock(&self) -> Result<Arc<dyn crate::backend::ClockSource>> {
        Ok(Mlx5Context::clock(self)?)
    }

    /// mlx5 moderates, resizes (copying the waiting CQEs, as libmlx5 does) and timestamps
    /// completions; `mlx5_ib` registers dma-bufs and changes a region's memory. It builds no UMR
    /// work requests, so no memory windows.
    fn supports(&self, capability: crate::backend::Capability) -> bool {
        use crate::backend::Capability as C;
        matches!(
            capability,
            C::CqModeration
                | C::CqResize
                | C::CompletionTimestamps
                | C::DmabufRegions
                | C::ReregMemory
        )
    }

    /// `MLX5_IB_UVERBS_ABI_VERSION`.
    const ABI_VERSIONS: (u32, u32) = (1, 1);

    type Cq = cq::Mlx5Cq;
    type Qp = qp::Mlx5Qp;
    type Srq = srq::Mlx5Srq;
    type Ah = ah::Mlx5Ah;

    fn context_request() -> (Vec<u8>, usize) {
        (
            Self::request().as_bytes().to_vec(),
            std::mem::size_of::<uapi::mlx5_ib_alloc_ucontext_resp>(),
        )
    }

    fn from_context_response(uctx: Arc<Ucontext>, resp: &[u8]) -> Result<Self> {
        let resp = Mlx5Context::parse_response(resp)?;
        Ok(Mlx5Context {
            uctx,
            resp,
            uars: OnceLock::new(),
            uar_init: Mutex::new(()),
            clock: OnceLock::new(),
            dbrecs: buf::DbrecPool::new(resp.cache_line_size),
            resources: ResourceTable::default(),
        })
    }

    /// rdma-core's `mlx5_query_device_ex`: "major.minor.subminor" with a four-digit subminor.
    fn format_fw_ver(raw: u64) -> String {
        format!("{}.{}.{:04}", raw >> 32, (raw >> 16) & 0xffff, raw & 0xffff)
    }

    fn ucontext(&self) -> &Arc<Ucontext> {
        &self.uctx
    }

    fn alloc_pd(&self) -> Result<u32> {
        Ok(alloc_pd(&self.uctx)?.0)
    }

    // No memory windows (the default): mlx5 binds windows with UMR work requests, which this
    // backend does not build (the model reports `max_mw` 0 to match).

    fn create_cq(self: &Arc<Self>, init: &CqInit<'_>) -> Result<cq::Mlx5Cq> {
        cq::Mlx5Cq::create(self, init)
    }

    fn create_qp(
        self: &Arc<Self>,
        init: &QpInit,
        send: &cq::Mlx5Cq,
        recv: &cq::Mlx5Cq,
        srq: Option<&srq::Mlx5Srq>,
    ) -> Result<qp::Mlx5Qp> {
        qp::Mlx5Qp::create(self, init, send, recv, srq)
    }

    fn create_srq(self: &Arc<Self>, init: &SrqInit) -> Result<srq::Mlx5Srq> {
        srq::Mlx5Srq::create(self, init)
    }

    fn create_ah(self: &Arc<Self>, pd: u32, init: &AhInit) -> Result<ah::Mlx5Ah> {
        let link = ah::AhLink {
            ethernet: init.ethernet,
            roce_v2: init.roce_v2,
        };
        ah::Mlx5Ah::create(self, pd, &init.attr, link)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes() {
        let (req, resp_len) = Mlx5Context::context_request();
        assert_eq!(req.len(), 32);
        assert_eq!(&req[0..4], &16u32.to_ne_bytes());
        assert_eq!(&req[4..8], &4u32.to_ne_bytes());
        assert_eq!(&req[8..16], &[0u8; 8], "no DEVX, no comp_mask");
        assert_eq!(req[16], 1, "max_cqe_version");
        assert_eq!(&req[24..32], &1u64.to_ne_bytes(), "4K UAR, no dynamic UAR");
        assert_eq!(
            resp_len,
            std::mem::size_of::<uapi::mlx5_ib_alloc_ucontext_resp>()
        );
    }

    #[test]
    fn response_is_checked() {
        let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
        resp.bf_reg_size = 512;
        resp.cqe_version = 1;
        let parsed = Mlx5Context::parse_response(resp.as_bytes()).unwrap();
        assert_eq!((parsed.bf_reg_size, parsed.cqe_version), (512, 1));
        resp.cqe_version = 2;
        assert!(Mlx5Context::parse_response(resp.as_bytes()).is_err());
        assert!(Mlx5Context::parse_response(&[0u8; 3]).is_err());
    }

    #[test]
    fn backend_objects_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Mlx5Context>();
        check::<cq::Mlx5Cq>();
        check::<qp::Mlx5Qp>();
        check::<srq::Mlx5Srq>();
        check::<ah::Mlx5Ah>();
    }

    /// A queue with no rings, to be filed in a table.
    fn bare_qp(pool: &Arc<buf::DbrecPool>) -> Resource {
        Resource::Qp(Arc::new(qp::QpShared::bare(
            pool.alloc().unwrap(),
            buf::DmaBuf::new(4096, Verb::CreateQp).unwrap(),
        )))
    }

    /// Soundness finding F10: a destroyed QP's number, reused by the kernel for a QP another
    /// thread created meanwhile, must not lose that QP's entry (its completions would be lost).
    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf needs madvise(2)")]
    fn removing_a_destroyed_queue_keeps_a_newer_one_of_the_same_number() {
        let pool = buf::DbrecPool::new(64);
        let t = ResourceTable::default();
        let (old, new) = (bare_qp(&pool), bare_qp(&pool));
        // CQE version 0: filed by QP number, which the kernel reuses once a QP is destroyed.
        t.insert(WqKey::Qpn(7), old.clone());
        t.insert(WqKey::Qpn(7), new.clone());
        t.remove_own(WqKey::Qpn(7), &old);
        assert!(t.lookup(WqKey::Qpn(7)).is_some_and(|r| r.same(&new)));
        t.remove_own(WqKey::Qpn(7), &new);
        assert!(t.lookup(WqKey::Qpn(7)).is_none());
        // By user index (CQE version 1), only the owner of the slot frees it.
        let u = t.reserve(Verb::CreateQp).unwrap();
        t.insert(WqKey::UserIndex(u), new.clone());
        t.remove_own(WqKey::UserIndex(u), &old);
        assert!(t.lookup(WqKey::UserIndex(u)).is_some_and(|r| r.same(&new)));
        t.remove_own(WqKey::UserIndex(u), &new);
        assert!(t.lookup(WqKey::UserIndex(u)).is_none());
        assert_eq!(
            t.reserve(Verb::CreateQp).unwrap(),
            u,
            "the index is free again"
        );
    }

    #[test]
    fn resource_table_reuses_user_indices() {
        let t = ResourceTable::default();
        let a = t.reserve(Verb::CreateQp).unwrap();
        let b = t.reserve(Verb::CreateQp).unwrap();
        assert_eq!((a, b), (0, 1));
        assert!(
            t.lookup(WqKey::UserIndex(a)).is_none(),
            "reserved, not filed"
        );
        t.remove(WqKey::UserIndex(a));
        t.remove(WqKey::UserIndex(a));
        assert_eq!(t.reserve(Verb::CreateQp).unwrap(), 0);
        assert_eq!(t.reserve(Verb::CreateQp).unwrap(), 2);
        assert!(t.lookup(WqKey::UserIndex(7)).is_none());
        assert!(t.lookup(WqKey::Qpn(7)).is_none());
    }

    #[test]
    fn fw_ver_format() {
        assert_eq!(
            Mlx5Context::format_fw_ver((16 << 32) | (35 << 16) | 2000),
            "16.35.2000"
        );
        assert_eq!(
            Mlx5Context::format_fw_ver((20 << 32) | (31 << 16) | 12),
            "20.31.0012"
        );
    }
}
