//! The objects of an open model file and the verbs on them, as the uverbs core and `mlx5_ib` do
//! them: every check with the kernel's errno, then the HCA's part, then the answer.
//!
//! The command decoders (`kernel`) turn ioctl attributes and write commands into the parameters
//! here, so that both paths share one implementation; what differs between them (which handle is
//! missing, the order of some checks) stays with the decoders.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::events::{CqRoute, FileKind, Route};
use super::hca::{CqDesc, MrDesc, PathDesc, QpAttrs, QpDesc, SrqDesc, Transport};
use super::kernel::{File, Udata};
use super::uar::Uars;
use super::{caps, uaccess, uar, Kind};
// The kernel's QP state machine (`ib_modify_qp_is_ok`): the model's `MODIFY_QP` runs the driver's
// table of it (`qp_state::check`) rather than a second copy, so a transition the driver wrongly allows
// is not caught by the model, only by a real kernel (the suites on rxe in the VM).
use uverbs_drivers::qp_state;
use uverbs_drivers::qp_state::state as qps;

/// `MLX5_IB_DEFAULT_UIDX`: no user index.
pub(super) const DEFAULT_UIDX: u32 = 0xff_ffff;

/// The user context of a file (`mlx5_ib_ucontext`).
#[derive(Debug)]
pub(super) struct Ucontext {
    /// The CQE format of the context.
    pub cqe_version: u8,
    /// The static UAR pages (in the file's memfd).
    pub uars: Uars,
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
}

/// A completion queue.
#[derive(Debug)]
pub(super) struct Cq {
    cqn: u32,
    users: u32,
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
    bfregn: u32,
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

/// An object behind a handle.
#[derive(Debug)]
pub(super) enum Object {
    Pd(Pd),
    Mr(Mr),
    Cq(Cq),
    Qp(Qp),
    Srq(Srq),
    Ah(Ah),
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

const IPOIB_SUPPORTED_ACCESS: u32 = 0xff;

/// `ib_check_mr_access` (6.1).
fn check_mr_access(flags: u32) -> Result<(), Errno> {
    if flags & (uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE) != 0
        && flags & uapi::IB_UVERBS_ACCESS_LOCAL_WRITE == 0
    {
        return Err(Errno::EINVAL);
    }
    if flags & !(IPOIB_SUPPORTED_ACCESS | uapi::IB_UVERBS_ACCESS_OPTIONAL_RANGE) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & uapi::IB_UVERBS_ACCESS_ON_DEMAND != 0 {
        // No on-demand paging on this model.
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

/// `ib_access_writable`.
fn access_writable(flags: u32) -> bool {
    flags
        & (uapi::IB_UVERBS_ACCESS_LOCAL_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC
            | uapi::IB_UVERBS_ACCESS_MW_BIND)
        != 0
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

    /// Drops the event files of this file that nothing uses and the user has closed.
    pub(super) fn collect_event_garbage(&self, st: &mut FileState) {
        let closed = self.dev.events.collect_garbage(self.id);
        if closed.is_empty() {
            return;
        }
        st.async_files.retain(|id| !closed.contains(id));
        st.channels.retain(|id| !closed.contains(id));
        if st.default_async.is_some_and(|id| closed.contains(&id)) {
            st.default_async = st.async_files.last().copied();
        }
    }

    /// `mlx5_ib_alloc_ucontext` (with `ib_alloc_ucontext`'s "one context per file"): installs the
    /// context and writes the driver's answer.
    pub(super) fn get_context(&self, st: &mut FileState, udata: &Udata) -> Result<(), Errno> {
        if st.ctx.is_some() {
            return Err(Errno::EINVAL);
        }
        let inlen = udata.inlen();
        let ver = if inlen == std::mem::size_of::<uapi::mlx5_ib_alloc_ucontext_req>() {
            0
        } else if inlen >= 16 {
            2
        } else {
            return Err(Errno::EINVAL);
        };
        let req: uapi::mlx5_ib_alloc_ucontext_req_v2 = zext(udata.inbuf());
        if req.flags & !uapi::MLX5_IB_ALLOC_UCTX_DEVX != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if req.comp_mask != 0 || req.reserved0 != 0 || req.reserved1 != 0 || req.reserved2 != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut total = req.total_num_bfregs.div_ceil(2).saturating_mul(2);
        if req.num_low_latency_bfregs > total.wrapping_sub(1) {
            return Err(Errno::EINVAL);
        }
        let lib_4k = req.lib_caps & uapi::MLX5_LIB_CAP_4K_UAR != 0;
        let page_size = uverbs_drivers::sys::page_size();
        let uars_per_page = if lib_4k {
            (page_size / uar::UAR_SIZE).max(1) as u32
        } else {
            1
        };
        let per_page = uars_per_page * uar::NON_FP_BFREGS_PER_UAR;
        if total == 0 {
            return Err(Errno::EINVAL);
        }
        if total > uar::MAX_BFREGS {
            return Err(Errno::ENOMEM);
        }
        total = total.div_ceil(per_page) * per_page;
        if req.num_low_latency_bfregs > total - 1 {
            return Err(Errno::EINVAL);
        }
        if req.flags & uapi::MLX5_IB_ALLOC_UCTX_DEVX != 0 {
            // No DEVX on this model: `mlx5_ib_devx_create` fails.
            return Err(Errno::EOPNOTSUPP);
        }
        let cqe_version = req.max_cqe_version.min(1);
        let outlen = udata.outlen();
        let memfd = self.uar_fd.as_ref().ok_or(Errno::EMFILE)?;
        let uars = Uars::new(
            memfd.as_fd(),
            total,
            uars_per_page,
            req.num_low_latency_bfregs,
            ver,
        )?;
        let mut resp = caps::ucontext_resp();
        resp.tot_bfregs = total;
        resp.cqe_version = cqe_version;
        resp.num_uars_per_page = (page_size / uar::UAR_SIZE).max(1) as u32;
        resp.response_length = outlen.min(std::mem::size_of_val(&resp)) as u32;
        udata.copy_out(&resp.as_bytes()[..resp.response_length as usize])?;
        st.ctx = Some(Ucontext { cqe_version, uars });
        self.dev.context_created();
        Ok(())
    }

    /// Creates an async event file (`ASYNC_EVENT_ALLOC`, or the one of the write `GET_CONTEXT`);
    /// the first is where objects created without one report.
    pub(super) fn new_async_file(&self, st: &mut FileState) -> Result<(u64, OwnedFd), Errno> {
        self.ctx(st)?;
        self.collect_event_garbage(st);
        let (id, fd) = self.dev.events.create(FileKind::Async, self.id)?;
        st.async_files.push(id);
        if st.default_async.is_none() {
            st.default_async = Some(id);
        }
        Ok((id, fd))
    }

    /// Takes back an async event file whose creation failed later.
    pub(super) fn drop_async_file(&self, st: &mut FileState, id: u64) {
        self.dev.events.close(id);
        st.async_files.retain(|x| *x != id);
        if st.default_async == Some(id) {
            st.default_async = st.async_files.last().copied();
        }
    }

    /// `CREATE_COMP_CHANNEL`.
    pub(super) fn create_comp_channel(&self, st: &mut FileState) -> Result<(u64, OwnedFd), Errno> {
        self.ctx(st)?;
        self.collect_event_garbage(st);
        let (id, fd) = self.dev.events.create(FileKind::Comp, self.id)?;
        st.channels.push(id);
        Ok((id, fd))
    }

    /// Takes back a completion channel whose creation failed later.
    pub(super) fn drop_comp_channel(&self, st: &mut FileState, id: u64) {
        self.dev.events.close(id);
        st.channels.retain(|x| *x != id);
    }

    /// `QUERY_PORT` (`ib_query_port`): the port's attributes; `EINVAL` for a port other than 1.
    pub(super) fn query_port(&self, port: u64) -> Result<uapi::ib_uverbs_query_port_resp, Errno> {
        if port != 1 {
            return Err(Errno::EINVAL);
        }
        Ok(caps::port_attr(&self.dev.cfg, self.dev.port_active()))
    }

    /// The GID entry at `index` (`rdma_get_gid_attr`): `EINVAL` out of the table, `ENODATA` for an
    /// empty slot.
    pub(super) fn gid_entry(
        &self,
        port: u64,
        index: u64,
    ) -> Result<uapi::ib_uverbs_gid_entry, Errno> {
        if port != 1 {
            return Err(Errno::EINVAL);
        }
        if index >= u64::from(caps::gid_tbl_len(&self.dev.cfg)) {
            return Err(Errno::EINVAL);
        }
        let gid = self
            .dev
            .cfg
            .gids
            .get(index as usize)
            .copied()
            .unwrap_or([0; 16]);
        if gid == [0; 16] {
            return Err(Errno::ENODATA);
        }
        let mut e = uapi::ib_uverbs_gid_entry::new_zeroed();
        e.gid = <[u64; 2]>::read_from_bytes(&gid).expect("16 bytes");
        e.gid_index = index as u32;
        e.port_num = 1;
        e.gid_type = uapi::IB_UVERBS_GID_TYPE_ROCE_V2;
        e.netdev_ifindex = self.dev.ifindex;
        Ok(e)
    }

    /// The valid GID entries (`rdma_query_gid_table`): `EINVAL` if there are more than `max`.
    pub(super) fn gid_table(&self, max: usize) -> Result<Vec<uapi::ib_uverbs_gid_entry>, Errno> {
        let mut out = Vec::new();
        for i in 0..u64::from(caps::gid_tbl_len(&self.dev.cfg)) {
            match self.gid_entry(1, i) {
                Ok(e) => {
                    if out.len() >= max {
                        return Err(Errno::EINVAL);
                    }
                    out.push(e);
                }
                Err(Errno::ENODATA) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// `ALLOC_PD` (`mlx5_ib_alloc_pd`): the new handle.
    pub(super) fn alloc_pd(&self, st: &mut FileState, udata: &Udata) -> Result<u32, Errno> {
        self.ctx(st)?;
        let handle = Self::new_handle(st)?;
        let pdn = self.dev.alloc_pdn()?;
        let resp = uapi::mlx5_ib_alloc_pd_resp { pdn };
        if let Err(e) = udata.copy_out(resp.as_bytes()) {
            self.dev.free_pdn(pdn);
            return Err(e);
        }
        st.objects.insert(handle, Object::Pd(Pd { pdn, users: 0 }));
        self.dev.count(Kind::Pd, true);
        Ok(handle)
    }

    /// `REG_MR`: the new handle and the key (lkey = rkey, as mlx5's).
    pub(super) fn reg_mr(
        &self,
        st: &mut FileState,
        req: &uapi::ib_uverbs_reg_mr,
    ) -> Result<(u32, u32), Errno> {
        let page = uverbs_drivers::sys::page_size() as u64 - 1;
        if req.start & page != req.hca_va & page {
            return Err(Errno::EINVAL);
        }
        self.ctx(st)?;
        check_mr_access(req.access_flags)?;
        let pdn = Self::pd_of(st, req.pd_handle)?;
        uaccess::check_pin(req.start, req.length, access_writable(req.access_flags))?;
        let handle = Self::new_handle(st)?;
        let key = self.dev.alloc_mkey()?;
        self.dev.silicon.reg_mr(MrDesc {
            lkey: key,
            rkey: key,
            pdn,
            iova: req.hca_va,
            host: req.start as usize,
            len: req.length,
            access: req.access_flags,
        });
        Self::use_obj(st, req.pd_handle, true);
        st.objects.insert(
            handle,
            Object::Mr(Mr {
                pd: req.pd_handle,
                lkey: key,
            }),
        );
        self.dev.count(Kind::Mr, true);
        Ok((handle, key))
    }

    /// `CREATE_CQ` (`create_cq`, `mlx5_ib_create_cq`, `create_cq_user`): the handle and the number
    /// of entries less one.
    pub(super) fn create_cq(
        &self,
        st: &mut FileState,
        p: &CqParams,
        udata: &Udata,
    ) -> Result<(u32, u32), Errno> {
        if p.comp_vector >= self.dev.cfg.num_comp_vectors {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(st)?;
        if p.flags != 0 {
            // Neither completion timestamps nor overrun-ignoring CQs on this model.
            return Err(Errno::EOPNOTSUPP);
        }
        let max = 1u64 << caps::LOG_MAX_CQ_SZ;
        if p.cqe > i32::MAX as u32 || u64::from(p.cqe) > max {
            return Err(Errno::EINVAL);
        }
        let entries = pow2_ceil(u64::from(p.cqe) + 1);
        if entries > max {
            return Err(Errno::EINVAL);
        }
        // create_cq_user
        let inb = udata.inbuf();
        if inb
            .len()
            .min(std::mem::size_of::<uapi::mlx5_ib_create_cq>())
            < 22
        {
            return Err(Errno::EINVAL);
        }
        let ucmd: uapi::mlx5_ib_create_cq = zext(inb);
        if ucmd.flags
            & !(uapi::MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD
                | uapi::MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX
                | uapi::MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS)
            != 0
        {
            return Err(Errno::EINVAL);
        }
        if (ucmd.cqe_size != 64 && ucmd.cqe_size != 128)
            || ucmd.reserved0 != 0
            || ucmd.reserved1 != 0
        {
            return Err(Errno::EINVAL);
        }
        uaccess::check_pin(ucmd.buf_addr, entries * u64::from(ucmd.cqe_size), true)?;
        if ucmd.buf_addr % 64 != 0 {
            return Err(Errno::EINVAL);
        }
        uaccess::check_db_page(ucmd.db_addr)?;
        if ucmd.db_addr % 8 != 0 {
            return Err(Errno::EINVAL);
        }
        if ucmd.cqe_comp_en != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if ucmd.flags & uapi::MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD != 0 {
            return Err(Errno::EINVAL);
        }
        if ucmd.flags & uapi::MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX != 0 {
            // No dynamic UARs on this model: no page index can be valid.
            return Err(Errno::EINVAL);
        }
        let uar = ctx.uars.cq_uar();
        let cqe_version = ctx.cqe_version;
        let handle = Self::new_handle(st)?;
        let cqn = self.dev.alloc_cqn()?;
        self.dev.silicon.create_cq(CqDesc {
            cqn,
            buf: ucmd.buf_addr as usize,
            ncqe: entries as u32,
            cqe_size: ucmd.cqe_size,
            dbrec: ucmd.db_addr as usize,
            uar,
            cqe_version,
        });
        if let Err(e) = udata.copy_out(&cqn.to_ne_bytes()) {
            self.dev.silicon.destroy_cq(cqn);
            self.dev.free_cqn(cqn);
            return Err(e);
        }
        let tag = self.dev.new_tag();
        self.dev.events.add_cq(
            cqn,
            CqRoute::new(tag, p.user_handle, p.channel, p.async_file),
        );
        st.objects.insert(handle, Object::Cq(Cq { cqn, users: 0 }));
        self.dev.count(Kind::Cq, true);
        Ok((handle, entries as u32 - 1))
    }

    /// `CREATE_QP` (`mlx5_ib_create_qp` for a user QP): the handle, QP number and capacities.
    pub(super) fn create_qp(
        &self,
        st: &mut FileState,
        p: &QpParams,
        udata: &Udata,
    ) -> Result<(u32, u32, uapi::ib_uverbs_qp_cap), Errno> {
        let ctx = self.ctx(st)?;
        let transport = match p.qp_type {
            uapi::IB_UVERBS_QPT_RC => Transport::Rc,
            uapi::IB_UVERBS_QPT_UC => Transport::Uc,
            uapi::IB_UVERBS_QPT_UD => Transport::Ud,
            // Raw packet, XRC, DC and driver QPs are not modelled.
            _ => return Err(Errno::EOPNOTSUPP),
        };
        let pdn = Self::pd_of(st, p.pd)?;
        let send_cqn = Self::cqn_of(st, p.send_cq)?;
        let recv_cqn = Self::cqn_of(st, p.recv_cq)?;
        let srqn = match p.srq {
            Some(h) => match st.objects.get(&h) {
                Some(Object::Srq(s)) => Some(s.srqn),
                _ => return Err(Errno::EINVAL),
            },
            None => None,
        };
        // process_udata_size, check_ucmd_data
        let inb = udata.inbuf();
        let ucmd_len = std::mem::size_of::<uapi::mlx5_ib_create_qp>();
        if inb.len() < 48 {
            return Err(Errno::EINVAL);
        }
        if inb.len() > 54 && inb[54..].iter().any(|&b| b != 0) {
            return Err(Errno::EINVAL);
        }
        let ucmd: uapi::mlx5_ib_create_qp = zext(&inb[..inb.len().min(ucmd_len)]);
        // process_vendor_flags: what this model has; scatter-to-CQE is a capability it lacks,
        // which the kernel ignores.
        let known = uapi::MLX5_QP_FLAG_SIGNATURE
            | uapi::MLX5_QP_FLAG_SCATTER_CQE
            | uapi::MLX5_QP_FLAG_ALLOW_SCATTER_CQE;
        if ucmd.flags & !known != 0 {
            return Err(Errno::EINVAL);
        }
        let wq_sig = u32::from(ucmd.flags & uapi::MLX5_QP_FLAG_SIGNATURE != 0);
        // get_qp_user_index
        let uidx = if ctx.cqe_version == 0 {
            if ucmd.uidx != DEFAULT_UIDX {
                return Err(Errno::EINVAL);
            }
            DEFAULT_UIDX
        } else {
            if ucmd.uidx == DEFAULT_UIDX || ucmd.uidx & !0xff_ffff != 0 {
                return Err(Errno::EINVAL);
            }
            ucmd.uidx
        };
        // process_create_flags: none of them on this model.
        if p.create_flags != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        // set_rq_size
        let max_wqes = 1u32 << caps::LOG_MAX_QP_SZ;
        if p.cap.max_recv_wr > max_wqes {
            return Err(Errno::EINVAL);
        }
        let has_rq = p.srq.is_none() && p.cap.max_recv_wr != 0;
        let mut cap = p.cap;
        let (rq_cnt, rq_shift, rq_max_gs) = if has_rq {
            if ucmd.rq_wqe_shift > 32 {
                return Err(Errno::EINVAL);
            }
            // The firmware's limits: a stride of one data segment to max_wqe_sz_rq, a ring of a
            // power of two no longer than log_max_qp_sz.
            if !(4..=caps::MAX_WQE_SZ_RQ.trailing_zeros()).contains(&ucmd.rq_wqe_shift)
                || !ucmd.rq_wqe_count.is_power_of_two()
                || ucmd.rq_wqe_count > max_wqes
            {
                return Err(Errno::EINVAL);
            }
            let gs = (1u32 << ucmd.rq_wqe_shift) / 16;
            if gs < wq_sig {
                return Err(Errno::EINVAL);
            }
            (ucmd.rq_wqe_count, ucmd.rq_wqe_shift, gs - wq_sig)
        } else {
            cap.max_recv_wr = 0;
            cap.max_recv_sge = 0;
            (0, 0, 0)
        };
        if ucmd.rq_wqe_shift != rq_shift || ucmd.rq_wqe_count != rq_cnt {
            return Err(Errno::EINVAL);
        }
        if ucmd.sq_wqe_count > max_wqes {
            return Err(Errno::EINVAL);
        }
        // _create_user_qp: set_user_buf_size, the buffer, the doorbell page.
        if ucmd.sq_wqe_count != 0 && !ucmd.sq_wqe_count.is_power_of_two() {
            return Err(Errno::EINVAL);
        }
        let sq_offset = u64::from(rq_cnt) << rq_shift;
        let buf_size = sq_offset + (u64::from(ucmd.sq_wqe_count) << 6);
        if buf_size != 0 {
            if ucmd.buf_addr == 0 {
                return Err(Errno::EFAULT);
            }
            uaccess::check_pin(ucmd.buf_addr, buf_size, false)?;
            if ucmd.buf_addr % 64 != 0 {
                return Err(Errno::EINVAL);
            }
        }
        uaccess::check_db_page(ucmd.db_addr)?;
        if ucmd.db_addr % 8 != 0 {
            return Err(Errno::EINVAL);
        }
        let handle = Self::new_handle(st)?;
        let qpn = self.dev.alloc_qpn()?;
        let ctx = st.ctx.as_mut().ok_or(Errno::EINVAL)?;
        let bfregn = ctx.uars.alloc();
        let bfreg_index = Uars::user_index(bfregn);
        let desc = QpDesc {
            qpn,
            transport,
            pdn,
            buf: ucmd.buf_addr as usize,
            rq_wqe_cnt: rq_cnt,
            rq_wqe_shift: rq_shift,
            sq_offset: sq_offset as usize,
            sq_wqe_cnt: ucmd.sq_wqe_count,
            dbrec: ucmd.db_addr as usize,
            bf_reg: ctx.uars.reg_addr(bfreg_index, caps::BF_REG_SIZE),
            bf_buf_size: caps::BF_REG_SIZE / 2,
            send_cqn,
            recv_cqn,
            srqn,
            uidx,
            sq_sig_all: p.sq_sig_all,
        };
        self.dev.silicon.create_qp(desc);
        let mut resp = uapi::mlx5_ib_create_qp_resp::new_zeroed();
        resp.bfreg_index = bfreg_index;
        let n = udata.outlen().min(std::mem::size_of_val(&resp));
        if let Err(e) = udata.copy_out(&resp.as_bytes()[..n]) {
            self.dev.silicon.destroy_qp(qpn);
            if let Some(ctx) = st.ctx.as_mut() {
                ctx.uars.free(bfregn);
            }
            self.dev.free_qpn(qpn);
            return Err(e);
        }
        Self::use_obj(st, p.pd, true);
        Self::use_obj(st, p.send_cq, true);
        Self::use_obj(st, p.recv_cq, true);
        if let Some(s) = p.srq {
            Self::use_obj(st, s, true);
        }
        let tag = self.dev.new_tag();
        self.dev
            .events
            .add_qp(qpn, Route::new(tag, p.user_handle, p.async_file));
        st.objects.insert(
            handle,
            Object::Qp(Qp {
                qpn,
                qp_type: p.qp_type,
                pd: p.pd,
                send_cq: p.send_cq,
                recv_cq: p.recv_cq,
                srq: p.srq,
                bfregn,
                state: qps::RESET,
                port: 0,
                access: 0,
                dest_rd_atomic: 0,
                rq_wqe_cnt: rq_cnt,
                rq_max_gs,
                sq_sig_all: p.sq_sig_all,
                mcast: Vec::new(),
            }),
        );
        self.dev.count(Kind::Qp, true);
        Ok((handle, qpn, cap))
    }

    /// The GID a path's source index names (`rdma_fill_sgid_attr`): `EINVAL` outside the table,
    /// `ENODATA` for an empty slot.
    fn check_sgid(&self, index: u8) -> Result<(), Errno> {
        self.gid_entry(1, u64::from(index)).map(drop)
    }

    /// `MODIFY_QP` / `EX_MODIFY_QP` (`modify_qp`, `_ib_modify_qp`, `mlx5_ib_modify_qp`).
    pub(super) fn modify_qp(
        &self,
        st: &mut FileState,
        cmd: &uapi::ib_uverbs_modify_qp,
        udata: &Udata,
    ) -> Result<(), Errno> {
        use qp_state::mask as m;
        let Some(Object::Qp(qp)) = st.objects.get(&cmd.qp_handle) else {
            return Err(Errno::EINVAL);
        };
        let mut mask = cmd.attr_mask;
        let mut port_num = cmd.port_num;
        if mask & m::PORT != 0 && port_num != 1 {
            return Err(Errno::EINVAL);
        }
        if mask & m::AV != 0 {
            if cmd.dest.port_num != 1 {
                return Err(Errno::EINVAL);
            }
            if mask & m::STATE != 0 && cmd.qp_state == qps::RTR {
                if cmd.dest.port_num != qp.port {
                    return Err(Errno::EINVAL);
                }
            } else {
                if mask & (m::AV | m::PORT) == m::AV | m::PORT && port_num != cmd.dest.port_num {
                    return Err(Errno::EINVAL);
                }
                if mask & (m::AV | m::PORT) == m::AV {
                    mask |= m::PORT;
                    port_num = cmd.dest.port_num;
                }
            }
        }
        if mask & m::ALT_PATH != 0 && (cmd.alt_port_num != 1 || cmd.alt_dest.port_num != 1) {
            return Err(Errno::EINVAL);
        }
        let err_state = qps::ERR;
        if (mask & m::CUR_STATE != 0 && cmd.cur_qp_state > err_state)
            || (mask & m::STATE != 0 && cmd.qp_state > err_state)
        {
            return Err(Errno::EINVAL);
        }
        // _ib_modify_qp: the source GID of the path.
        if mask & m::AV != 0 && cmd.dest.is_global != 0 {
            self.check_sgid(cmd.dest.sgid_index)?;
        }
        if mask & m::ALT_PATH != 0 && cmd.alt_dest.is_global != 0 {
            self.check_sgid(cmd.alt_dest.sgid_index)?;
        }
        // mlx5_ib_modify_qp
        if mask & !(((1u32 << 21) - 1) | (1 << 25)) != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if udata.inlen() != 0 {
            let inb = udata.inbuf();
            let size = std::mem::size_of::<uapi::mlx5_ib_modify_qp>();
            if inb.len() < size {
                return Err(Errno::EINVAL);
            }
            if inb[size..].iter().any(|&b| b != 0) {
                return Err(Errno::EOPNOTSUPP);
            }
            let ucmd: uapi::mlx5_ib_modify_qp = zext(inb);
            if ucmd.comp_mask != 0 || ucmd.burst_info.reserved != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
        }
        let actual = self
            .dev
            .silicon
            .query_qp(qp.qpn)
            .map_or(qp.state, |a| a.state);
        let cur = if mask & m::CUR_STATE != 0 {
            cmd.cur_qp_state
        } else {
            actual
        };
        let new = if mask & m::STATE != 0 {
            cmd.qp_state
        } else {
            cur
        };
        if qp_state::check(qp.qp_type, cur, new, mask).is_err() {
            return Err(Errno::EINVAL);
        }
        if cur != actual {
            // The firmware refuses a transition from a state the QP is not in.
            return Err(Errno::EINVAL);
        }
        if mask & m::PORT != 0 && port_num != 1 {
            return Err(Errno::EINVAL);
        }
        if mask & m::PKEY_INDEX != 0 && cmd.pkey_index >= caps::MAX_PKEYS {
            return Err(Errno::EINVAL);
        }
        if mask & m::MAX_QP_RD_ATOMIC != 0 && u32::from(cmd.max_rd_atomic) > caps::MAX_RD_ATOMIC {
            return Err(Errno::EINVAL);
        }
        if mask & m::MAX_DEST_RD_ATOMIC != 0
            && u32::from(cmd.max_dest_rd_atomic) > caps::MAX_RD_ATOMIC
        {
            return Err(Errno::EINVAL);
        }
        if cur == new && cur == qps::RESET {
            return Ok(());
        }
        // __mlx5_ib_modify_qp
        if mask & m::ALT_PATH != 0 {
            // Alternate paths (APM) are not modelled.
            return Err(Errno::EOPNOTSUPP);
        }
        if mask & m::AV != 0 {
            // RoCE needs the GRH; static rates up to 400 Gb/s.
            if cmd.dest.is_global == 0 || cmd.dest.static_rate > 21 {
                return Err(Errno::EINVAL);
            }
        }
        if mask & m::PATH_MTU != 0 && !(1..=5).contains(&cmd.path_mtu) {
            return Err(Errno::EINVAL);
        }
        let qpn = qp.qpn;
        let mut access = qp.access;
        let mut dest_rd_atomic = qp.dest_rd_atomic;
        let mut attrs = QpAttrs {
            state: new,
            access: 0,
            port: port_num,
            pkey_index: cmd.pkey_index,
            qkey: cmd.qkey,
            path_mtu: cmd.path_mtu,
            dest_qpn: cmd.dest_qp_num,
            rq_psn: cmd.rq_psn,
            sq_psn: cmd.sq_psn,
            max_rd_atomic: cmd.max_rd_atomic,
            max_dest_rd_atomic: cmd.max_dest_rd_atomic,
            min_rnr_timer: cmd.min_rnr_timer,
            timeout: cmd.timeout,
            retry_cnt: cmd.retry_cnt,
            rnr_retry: cmd.rnr_retry,
            path: PathDesc {
                dgid: cmd.dest.dgid,
                sgid_index: cmd.dest.sgid_index,
                hop_limit: cmd.dest.hop_limit,
                traffic_class: cmd.dest.traffic_class,
                flow_label: cmd.dest.flow_label,
                sl: cmd.dest.sl,
                dlid: cmd.dest.dlid,
                is_global: cmd.dest.is_global != 0,
                port: cmd.dest.port_num,
            },
            mask,
        };
        // set_qpc_atomic_flags: without responder resources the QP takes no remote reads or
        // atomics, whatever its access flags say.
        if mask & (m::ACCESS_FLAGS | m::MAX_DEST_RD_ATOMIC) != 0 {
            if mask & m::ACCESS_FLAGS != 0 {
                access = cmd.qp_access_flags;
            }
            if mask & m::MAX_DEST_RD_ATOMIC != 0 {
                dest_rd_atomic = cmd.max_dest_rd_atomic;
            }
            attrs.access = if dest_rd_atomic == 0 {
                access & uapi::IB_UVERBS_ACCESS_REMOTE_WRITE
            } else {
                access
            };
            attrs.mask |= m::ACCESS_FLAGS;
        }
        self.dev.silicon.modify_qp(qpn, &attrs)?;
        if let Some(Object::Qp(qp)) = st.objects.get_mut(&cmd.qp_handle) {
            qp.state = new;
            qp.access = access;
            qp.dest_rd_atomic = dest_rd_atomic;
            if mask & m::PORT != 0 {
                qp.port = port_num;
            }
        }
        Ok(())
    }

    /// `QUERY_QP` (`mlx5_ib_query_qp` of a user QP).
    pub(super) fn query_qp(
        &self,
        st: &FileState,
        handle: u32,
    ) -> Result<uapi::ib_uverbs_query_qp_resp, Errno> {
        let Some(Object::Qp(qp)) = st.objects.get(&handle) else {
            return Err(Errno::EINVAL);
        };
        let a = self.dev.silicon.query_qp(qp.qpn).ok_or(Errno::EINVAL)?;
        let log2_pow = |n: u8| -> u8 {
            if n == 0 {
                1
            } else {
                1 << (7 - n.leading_zeros())
            }
        };
        let mut r = uapi::ib_uverbs_query_qp_resp::new_zeroed();
        r.qp_state = a.state;
        r.cur_qp_state = a.state;
        r.path_mtu = a.path_mtu;
        r.qkey = a.qkey;
        r.rq_psn = a.rq_psn;
        r.sq_psn = a.sq_psn;
        r.dest_qp_num = a.dest_qpn;
        r.qp_access_flags = a.access
            & (uapi::IB_UVERBS_ACCESS_REMOTE_WRITE
                | uapi::IB_UVERBS_ACCESS_REMOTE_READ
                | uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC);
        r.pkey_index = a.pkey_index;
        r.max_rd_atomic = log2_pow(a.max_rd_atomic);
        r.max_dest_rd_atomic = log2_pow(a.max_dest_rd_atomic);
        r.min_rnr_timer = a.min_rnr_timer;
        r.port_num = qp.port;
        r.timeout = a.timeout;
        r.retry_cnt = a.retry_cnt;
        r.rnr_retry = a.rnr_retry;
        if a.path.port == 1 {
            r.dest.dgid = a.path.dgid;
            r.dest.flow_label = a.path.flow_label;
            r.dest.sgid_index = a.path.sgid_index;
            r.dest.hop_limit = a.path.hop_limit;
            r.dest.traffic_class = a.path.traffic_class;
            r.dest.sl = a.path.sl;
            r.dest.dlid = a.path.dlid;
            r.dest.is_global = 1;
            r.dest.port_num = 1;
        }
        r.max_recv_wr = qp.rq_wqe_cnt;
        r.max_recv_sge = qp.rq_max_gs;
        r.sq_sig_all = u8::from(qp.sq_sig_all);
        Ok(r)
    }

    /// `CREATE_SRQ` (`mlx5_ib_create_srq`, `create_srq_user`): the handle, `max_wr` and `max_sge`.
    pub(super) fn create_srq(
        &self,
        st: &mut FileState,
        p: &SrqParams,
        udata: &Udata,
    ) -> Result<(u32, u32, u32), Errno> {
        self.ctx(st)?;
        let pdn = Self::pd_of(st, p.pd)?;
        if p.srq_type != uapi::IB_UVERBS_SRQT_BASIC {
            // XRC and tag-matching SRQs are not modelled.
            return Err(Errno::EOPNOTSUPP);
        }
        let max_sge_sz = caps::MAX_WQE_SZ_RQ / 16;
        if p.max_wr >= 1 << caps::LOG_MAX_SRQ_SZ || p.max_sge > max_sge_sz {
            return Err(Errno::EINVAL);
        }
        let max = pow2_ceil(u64::from(p.max_wr) + 1) as u32;
        let desc = pow2_ceil(16 + 16 * u64::from(p.max_sge)).max(32);
        let wqe_shift = desc.trailing_zeros();
        let buf_size = u64::from(max) * desc;
        let inb = udata.inbuf();
        let size = std::mem::size_of::<uapi::mlx5_ib_create_srq>();
        let ucmd: uapi::mlx5_ib_create_srq = zext(inb);
        if ucmd.reserved0 != 0 || ucmd.reserved1 != 0 {
            return Err(Errno::EINVAL);
        }
        if inb.len() > size && inb[size..].iter().any(|&b| b != 0) {
            return Err(Errno::EINVAL);
        }
        uaccess::check_pin(ucmd.buf_addr, buf_size, false)?;
        uaccess::check_db_page(ucmd.db_addr)?;
        if ucmd.buf_addr % 64 != 0 || ucmd.db_addr % 4 != 0 {
            return Err(Errno::EINVAL);
        }
        let handle = Self::new_handle(st)?;
        let srqn = self.dev.alloc_srqn()?;
        self.dev.silicon.create_srq(SrqDesc {
            srqn,
            pdn,
            buf: ucmd.buf_addr as usize,
            wqe_cnt: max,
            wqe_shift,
            dbrec: ucmd.db_addr as usize,
            uidx: ucmd.uidx & 0xff_ffff,
        });
        let resp = uapi::mlx5_ib_create_srq_resp { srqn, reserved: 0 };
        let n = udata.outlen().min(std::mem::size_of_val(&resp));
        if let Err(e) = udata.copy_out(&resp.as_bytes()[..n]) {
            self.dev.silicon.destroy_srq(srqn);
            self.dev.free_srqn(srqn);
            return Err(e);
        }
        Self::use_obj(st, p.pd, true);
        let tag = self.dev.new_tag();
        self.dev
            .events
            .add_srq(srqn, Route::new(tag, p.user_handle, p.async_file));
        st.objects.insert(
            handle,
            Object::Srq(Srq {
                srqn,
                pd: p.pd,
                max,
                max_gs: p.max_sge,
                users: 0,
            }),
        );
        self.dev.count(Kind::Srq, true);
        Ok((handle, max - 1, p.max_sge))
    }

    /// `MODIFY_SRQ` (`mlx5_ib_modify_srq`): only the limit.
    pub(super) fn modify_srq(
        &self,
        st: &FileState,
        cmd: &uapi::ib_uverbs_modify_srq,
    ) -> Result<(), Errno> {
        let Some(Object::Srq(srq)) = st.objects.get(&cmd.srq_handle) else {
            return Err(Errno::EINVAL);
        };
        if cmd.attr_mask & uverbs_drivers::cmd::srq::attr_mask::MAX_WR != 0 {
            return Err(Errno::EINVAL);
        }
        if cmd.attr_mask & uverbs_drivers::cmd::srq::attr_mask::LIMIT != 0 {
            if cmd.srq_limit >= srq.max {
                return Err(Errno::EINVAL);
            }
            self.dev.silicon.set_srq_limit(srq.srqn, cmd.srq_limit);
        }
        Ok(())
    }

    /// `QUERY_SRQ` (`mlx5_ib_query_srq`).
    pub(super) fn query_srq(
        &self,
        st: &FileState,
        handle: u32,
    ) -> Result<uapi::ib_uverbs_query_srq_resp, Errno> {
        let Some(Object::Srq(srq)) = st.objects.get(&handle) else {
            return Err(Errno::EINVAL);
        };
        let mut r = uapi::ib_uverbs_query_srq_resp::new_zeroed();
        r.max_wr = srq.max - 1;
        r.max_sge = srq.max_gs;
        r.srq_limit = self.dev.silicon.srq_limit(srq.srqn);
        Ok(r)
    }

    /// The destination MAC a neighbour lookup finds for `dgid` (`ib_resolve_eth_dmac`): multicast
    /// MACs for multicast groups, the MAC inside a link-local GID, none (zero) over loopback, and a
    /// locally administered MAC made of the address for any other host.
    pub(super) fn resolve_dmac(&self, dgid: &[u8; 16]) -> [u8; 6] {
        let cfg = &self.dev.cfg;
        let on_lo = cfg.netdev == "lo";
        if dgid[0] == 0xff {
            return [0x33, 0x33, dgid[12], dgid[13], dgid[14], dgid[15]];
        }
        if is_v4_mapped(dgid) {
            let a = &dgid[12..16];
            if (224..=239).contains(&a[0]) {
                return [0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]];
            }
            if a[0] == 127 {
                return [0; 6];
            }
            if !cfg.gids.contains(dgid) {
                return [0x02, 0x00, a[0], a[1], a[2], a[3]];
            }
        }
        if cfg.gids.contains(dgid) {
            return if on_lo { [0; 6] } else { cfg.mac() };
        }
        if dgid[0] == 0xfe && dgid[1] & 0xc0 == 0x80 {
            return [
                dgid[8] ^ 0x02,
                dgid[9],
                dgid[10],
                dgid[13],
                dgid[14],
                dgid[15],
            ];
        }
        if *dgid == std::net::Ipv6Addr::LOCALHOST.octets() {
            return [0; 6];
        }
        [0x02, dgid[11], dgid[12], dgid[13], dgid[14], dgid[15]]
    }

    /// `CREATE_AH` (`rdma_create_user_ah`, `mlx5_ib_create_ah`): the handle.
    pub(super) fn create_ah(
        &self,
        st: &mut FileState,
        req: &uapi::ib_uverbs_create_ah,
        udata: &Udata,
    ) -> Result<u32, Errno> {
        self.ctx(st)?;
        let attr = &req.attr;
        if attr.port_num != 1 {
            return Err(Errno::EINVAL);
        }
        Self::pd_of(st, req.pd_handle)?;
        if attr.is_global == 0 {
            // RoCE needs the GRH.
            return Err(Errno::EINVAL);
        }
        self.check_sgid(attr.grh.sgid_index)?;
        let min = 10usize; // offsetofend(struct mlx5_ib_create_ah_resp, dmac)
        if udata.outlen() < min {
            return Err(Errno::EINVAL);
        }
        let mut resp = uapi::mlx5_ib_create_ah_resp::new_zeroed();
        resp.response_length = min as u32;
        resp.dmac = self.resolve_dmac(&attr.grh.dgid);
        let handle = Self::new_handle(st)?;
        udata.copy_out(&resp.as_bytes()[..min])?;
        Self::use_obj(st, req.pd_handle, true);
        st.objects
            .insert(handle, Object::Ah(Ah { pd: req.pd_handle }));
        self.dev.count(Kind::Ah, true);
        Ok(handle)
    }

    /// `ATTACH_MCAST` / `DETACH_MCAST`.
    pub(super) fn mcast(
        &self,
        st: &mut FileState,
        qp_handle: u32,
        gid: [u8; 16],
        mlid: u16,
        attach: bool,
    ) -> Result<(), Errno> {
        let Some(Object::Qp(qp)) = st.objects.get_mut(&qp_handle) else {
            return Err(Errno::EINVAL);
        };
        let pos = qp.mcast.iter().position(|e| *e == (gid, mlid));
        if attach {
            if pos.is_some() {
                return Ok(());
            }
            if !is_multicast(&gid) || qp.qp_type != uapi::IB_UVERBS_QPT_UD {
                return Err(Errno::EINVAL);
            }
            self.dev.silicon.attach_mcast(qp.qpn, gid)?;
            qp.mcast.push((gid, mlid));
        } else {
            let Some(pos) = pos else {
                return Err(Errno::EINVAL);
            };
            qp.mcast.remove(pos);
            self.dev.silicon.detach_mcast(qp.qpn, gid)?;
        }
        Ok(())
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
                if let Some(ctx) = st.ctx.as_mut() {
                    ctx.uars.free(q.bfregn);
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
