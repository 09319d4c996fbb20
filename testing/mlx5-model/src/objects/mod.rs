//! The objects of an open model file and the verbs on them, as the uverbs core and `mlx5_ib` do
//! them: every check with the kernel's errno, then the HCA's part, then the answer.
//!
//! The command decoders (`kernel`) turn ioctl attributes and write commands into the parameters
//! here, so that both paths share one implementation; what differs between them (which handle is
//! missing, the order of some checks) stays with the decoders.
//!
//! This file holds the handle table: the objects, the state of a file, the parameters the
//! decoders hand the verbs, and the lookup, destruction and closing of objects. The verbs are
//! grouped by object: `context` (the user context, its event files, the port and GID queries),
//! `pd_mr`, `cq`, `qp`, `srq`, `ah`, `uar` (UAR pages allocated as objects).

mod ah;
mod context;
mod cq;
mod pd_mr;
mod qp;
mod srq;
mod uar;

use std::collections::BTreeMap;
use std::sync::Arc;

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, IntoBytes};

use super::kernel::File;
use super::uar::{DynUar, Uars};
use super::Kind;

/// `MLX5_IB_DEFAULT_UIDX`: no user index.
pub(super) const DEFAULT_UIDX: u32 = 0xff_ffff;

/// The user context of a file (`mlx5_ib_ucontext`).
#[derive(Debug)]
pub(super) struct Ucontext {
    /// The CQE format of the context.
    pub cqe_version: u8,
    /// The static UAR pages (in the file's memfd); `None` when the library asked for dynamic UARs
    /// (`bfregi->lib_uar_dyn`: no static pages, every CQ and QP names a UAR object's page).
    pub uars: Option<Uars>,
    /// The context's mmap entries (`ucontext->mmap_xa`) by page offset key: the UAR objects'
    /// pages.
    pub mmap_entries: BTreeMap<u32, Arc<DynUar>>,
}

impl Ucontext {
    /// The page of the UAR object whose index is `page_id`, if this context has one.
    pub fn dyn_uar(&self, page_id: u32) -> Option<&Arc<DynUar>> {
        self.mmap_entries.values().find(|u| u.page_id == page_id)
    }
}

/// A protection domain.
#[derive(Debug)]
pub(super) struct Pd {
    pdn: u32,
    users: u32,
}

/// A memory region.
#[derive(Debug)]
pub(super) struct Mr {
    pd: u32,
    lkey: u32,
    /// `mr->length`.
    length: u64,
    /// `mr->iova`: the address the region has for the device (`hca_va`).
    iova: u64,
    /// Where the memory is in the owner's address space (what `REREG_MR` keeps without
    /// `IB_MR_REREG_TRANS`).
    host: u64,
    /// The `IB_UVERBS_ACCESS_*` flags.
    access: u32,
    /// A dma-buf region's mapping of the buffer (`REG_DMABUF_MR`), where the device reaches it;
    /// unmapped when the region is destroyed (after the HCA forgot the key).
    _dmabuf: Option<memmap2::MmapRaw>,
}

/// A completion queue.
#[derive(Debug)]
pub(super) struct Cq {
    cqn: u32,
    users: u32,
    /// Completion moderation (`EX_MODIFY_CQ`): `(cq_count, cq_period)`, as the CQ context holds
    /// it. Recorded only: the model raises events without coalescing them.
    moderation: (u16, u16),
    /// The UAR object's page the CQ was created on (kept mapped while the HCA watches it).
    _uar: Option<Arc<DynUar>>,
}

/// A queue pair.
#[derive(Debug)]
pub(super) struct Qp {
    qpn: u32,
    qp_type: u8,
    pd: u32,
    send_cq: u32,
    recv_cq: u32,
    srq: Option<u32>,
    /// The static bfreg the kernel gave the QP; `None` (`MLX5_IB_INVALID_BFREG`) for a QP on a
    /// UAR object's page.
    bfregn: Option<u32>,
    /// The UAR object's page the QP was created on (kept mapped while the HCA watches it).
    _uar: Option<Arc<DynUar>>,
    /// `qp->state` as `mlx5_ib` caches it.
    state: u8,
    /// `qp->port`.
    port: u8,
    /// The access flags the user gave (`trans_qp.atomic_rd_en`).
    access: u32,
    /// `trans_qp.resp_depth`.
    dest_rd_atomic: u8,
    rq_wqe_cnt: u32,
    rq_max_gs: u32,
    sq_sig_all: bool,
    mcast: Vec<([u8; 16], u16)>,
}

/// A shared receive queue.
#[derive(Debug)]
pub(super) struct Srq {
    srqn: u32,
    pd: u32,
    /// `msrq.max`: WQEs in the ring.
    max: u32,
    max_gs: u32,
    users: u32,
}

/// An address handle.
#[derive(Debug)]
pub(super) struct Ah {
    pd: u32,
}

/// A UAR object (`MLX5_IB_OBJECT_UAR`): the key of its mmap entry.
#[derive(Debug)]
pub(super) struct Uar {
    pgoff: u32,
}

/// An object behind a handle.
#[derive(Debug)]
pub(super) enum Object {
    Pd(Pd),
    Mr(Mr),
    Cq(Cq),
    Qp(Qp),
    Srq(Srq),
    Ah(Ah),
    Uar(Uar),
}

impl Object {
    /// The uverbs object type (`UVERBS_OBJECT_*`).
    pub fn type_id(&self) -> u16 {
        match self {
            Object::Pd(_) => uapi::UVERBS_OBJECT_PD,
            Object::Mr(_) => uapi::UVERBS_OBJECT_MR,
            Object::Cq(_) => uapi::UVERBS_OBJECT_CQ,
            Object::Qp(_) => uapi::UVERBS_OBJECT_QP,
            Object::Srq(_) => uapi::UVERBS_OBJECT_SRQ,
            Object::Ah(_) => uapi::UVERBS_OBJECT_AH,
            Object::Uar(_) => uapi::MLX5_IB_OBJECT_UAR,
        }
    }
}

/// The state of an open model file (`ib_uverbs_file` and its `ib_ucontext`).
#[derive(Debug, Default)]
pub(super) struct FileState {
    /// The user context.
    pub ctx: Option<Ucontext>,
    /// The objects by handle (one handle space for all types, lowest free handle first).
    pub objects: BTreeMap<u32, Object>,
    /// The file's async event files.
    pub async_files: Vec<u64>,
    /// The file's completion channels.
    pub channels: Vec<u64>,
    /// Where objects created without an event file report (`default_async_file`).
    pub default_async: Option<u64>,
}

/// What destroying an object reports.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Destroyed {
    /// Completion events the user read (CQ).
    pub comp_events: u32,
    /// Async events the user read.
    pub async_events: u32,
}

/// What the CQ creation verbs carry.
#[derive(Debug, Clone, Copy)]
pub(super) struct CqParams {
    pub cqe: u32,
    pub user_handle: u64,
    pub comp_vector: u32,
    pub channel: Option<u64>,
    pub async_file: Option<u64>,
    pub flags: u32,
}

/// What the QP creation verbs carry (handles already looked up by the decoder where it does so).
#[derive(Debug, Clone, Copy)]
pub(super) struct QpParams {
    pub qp_type: u8,
    pub pd: u32,
    pub send_cq: u32,
    pub recv_cq: u32,
    pub srq: Option<u32>,
    pub cap: uapi::ib_uverbs_qp_cap,
    pub sq_sig_all: bool,
    pub user_handle: u64,
    pub create_flags: u32,
    pub async_file: Option<u64>,
}

/// What the SRQ creation verbs carry.
#[derive(Debug, Clone, Copy)]
pub(super) struct SrqParams {
    pub pd: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_type: u32,
    pub user_handle: u64,
    pub async_file: Option<u64>,
}

fn pow2_ceil(n: u64) -> u64 {
    n.max(1).next_power_of_two()
}

/// Reads a driver struct from the front of `bytes`, zero-extended (`ib_copy_from_udata` of
/// `min(inlen, sizeof)`).
fn zext<T: FromBytes + IntoBytes>(bytes: &[u8]) -> T {
    let mut v = T::new_zeroed();
    let dst = v.as_mut_bytes();
    let n = dst.len().min(bytes.len());
    dst[..n].copy_from_slice(&bytes[..n]);
    v
}

fn is_v4_mapped(g: &[u8; 16]) -> bool {
    g[..10] == [0; 10] && g[10..12] == [0xff, 0xff]
}

/// `rdma_is_multicast_addr`.
pub(super) fn is_multicast(g: &[u8; 16]) -> bool {
    g[0] == 0xff || (is_v4_mapped(g) && (224..=239).contains(&g[12]))
}

impl File {
    fn ctx<'a>(&self, st: &'a FileState) -> Result<&'a Ucontext, Errno> {
        st.ctx.as_ref().ok_or(Errno::EINVAL)
    }

    /// The lowest free handle (`xa_alloc`).
    fn new_handle(st: &FileState) -> Result<u32, Errno> {
        let mut h = 0u32;
        for k in st.objects.keys() {
            if *k != h {
                break;
            }
            h = h.checked_add(1).ok_or(Errno::ENOMEM)?;
        }
        Ok(h)
    }

    fn pd_of(st: &FileState, handle: u32) -> Result<u32, Errno> {
        match st.objects.get(&handle) {
            Some(Object::Pd(p)) => Ok(p.pdn),
            _ => Err(Errno::EINVAL),
        }
    }

    fn cqn_of(st: &FileState, handle: u32) -> Result<u32, Errno> {
        match st.objects.get(&handle) {
            Some(Object::Cq(c)) => Ok(c.cqn),
            _ => Err(Errno::EINVAL),
        }
    }

    fn use_obj(st: &mut FileState, handle: u32, up: bool) {
        let users = match st.objects.get_mut(&handle) {
            Some(Object::Pd(p)) => &mut p.users,
            Some(Object::Cq(c)) => &mut c.users,
            Some(Object::Srq(s)) => &mut s.users,
            _ => return,
        };
        *users = if up {
            users.saturating_add(1)
        } else {
            users.saturating_sub(1)
        };
    }

    /// Checks that `handle` is an object of type `type_id`: `ENOENT` for no object, `EINVAL` for
    /// another type (`rdma_lookup_get_uobject`).
    pub(super) fn lookup(st: &FileState, handle: u64, type_id: u16) -> Result<u32, Errno> {
        let h = u32::try_from(handle).map_err(|_| {
            if (handle as i64) < 0 {
                Errno::EINVAL
            } else {
                Errno::ENOENT
            }
        })?;
        match st.objects.get(&h) {
            None => Err(Errno::ENOENT),
            Some(o) if o.type_id() != type_id => Err(Errno::EINVAL),
            Some(_) => Ok(h),
        }
    }

    /// Destroys object `handle` of type `type_id` (`uobj_destroy` with `RDMA_REMOVE_DESTROY`):
    /// `ENOENT` / `EINVAL` as [`File::lookup`], `EBUSY` while other objects use it.
    pub(super) fn destroy(
        &self,
        st: &mut FileState,
        handle: u64,
        type_id: u16,
    ) -> Result<Destroyed, Errno> {
        let h = Self::lookup(st, handle, type_id)?;
        if let Some(errno) = self.dev.take_refusal(type_id) {
            return Err(errno);
        }
        let busy = match st.objects.get(&h) {
            Some(Object::Pd(p)) => p.users != 0,
            Some(Object::Cq(c)) => c.users != 0,
            Some(Object::Srq(s)) => s.users != 0,
            Some(Object::Qp(q)) => !q.mcast.is_empty(),
            _ => false,
        };
        if busy {
            return Err(Errno::EBUSY);
        }
        let obj = st.objects.remove(&h).ok_or(Errno::ENOENT)?;
        Ok(self.release(st, obj))
    }

    /// Frees what an object holds, in the HCA and here.
    fn release(&self, st: &mut FileState, obj: Object) -> Destroyed {
        let dev = &self.dev;
        let mut out = Destroyed::default();
        match obj {
            Object::Pd(p) => {
                dev.free_pdn(p.pdn);
                dev.count(Kind::Pd, false);
            }
            Object::Mr(m) => {
                dev.silicon.dereg_mr(m.lkey);
                dev.free_mkey(m.lkey);
                Self::use_obj(st, m.pd, false);
                dev.count(Kind::Mr, false);
            }
            Object::Cq(c) => {
                dev.silicon.destroy_cq(c.cqn);
                let (comp, asy) = dev.events.remove_cq(c.cqn);
                out.comp_events = comp;
                out.async_events = asy;
                dev.free_cqn(c.cqn);
                dev.count(Kind::Cq, false);
            }
            Object::Qp(q) => {
                for (gid, _) in &q.mcast {
                    let _ = dev.silicon.detach_mcast(q.qpn, *gid);
                }
                dev.silicon.destroy_qp(q.qpn);
                out.async_events = dev.events.remove_qp(q.qpn);
                if let (Some(uars), Some(b)) =
                    (st.ctx.as_mut().and_then(|c| c.uars.as_mut()), q.bfregn)
                {
                    uars.free(b);
                }
                dev.free_qpn(q.qpn);
                Self::use_obj(st, q.pd, false);
                Self::use_obj(st, q.send_cq, false);
                Self::use_obj(st, q.recv_cq, false);
                if let Some(s) = q.srq {
                    Self::use_obj(st, s, false);
                }
                dev.count(Kind::Qp, false);
            }
            Object::Srq(s) => {
                dev.silicon.destroy_srq(s.srqn);
                out.async_events = dev.events.remove_srq(s.srqn);
                dev.free_srqn(s.srqn);
                Self::use_obj(st, s.pd, false);
                dev.count(Kind::Srq, false);
            }
            Object::Ah(a) => {
                Self::use_obj(st, a.pd, false);
                dev.count(Kind::Ah, false);
            }
            Object::Uar(u) => {
                // `mmap_obj_cleanup`: the entry goes, so its offset maps nothing any more; the
                // page itself lives on in the driver's mappings and in CQs and QPs created on it.
                if let Some(page) = st
                    .ctx
                    .as_mut()
                    .and_then(|c| c.mmap_entries.remove(&u.pgoff))
                {
                    dev.free_uar_index(page.page_id);
                }
            }
        }
        out
    }

    /// Closes the file's objects, users before what they use (`uverbs_destroy_ufile_hw`), and its
    /// event files.
    pub(super) fn close_all(&self, st: &mut FileState) {
        let order = [
            uapi::UVERBS_OBJECT_QP,
            uapi::UVERBS_OBJECT_AH,
            uapi::UVERBS_OBJECT_MR,
            uapi::UVERBS_OBJECT_SRQ,
            uapi::UVERBS_OBJECT_CQ,
            uapi::UVERBS_OBJECT_PD,
            uapi::MLX5_IB_OBJECT_UAR,
        ];
        for ty in order {
            let handles: Vec<u32> = st
                .objects
                .iter()
                .filter(|(_, o)| o.type_id() == ty)
                .map(|(h, _)| *h)
                .collect();
            for h in handles {
                if let Some(obj) = st.objects.remove(&h) {
                    self.release(st, obj);
                }
            }
        }
        self.dev.events.close_owner(self.id);
        st.async_files.clear();
        st.channels.clear();
        st.default_async = None;
    }
}
