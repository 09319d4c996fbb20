//! The user context and its event files (`GET_CONTEXT`, async event files, completion channels),
//! and the port and GID queries.

use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::{zext, FileState, Ucontext};
use crate::caps;
use crate::events::FileKind;
use crate::kernel::{File, Udata};
use crate::uar::{self, Uars};

impl File {
    /// Drops the event files of this file that nothing uses and the user has closed.
    pub(crate) fn collect_event_garbage(&self, st: &mut FileState) {
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
    /// context and writes the driver's answer. A library that asks for dynamic UARs
    /// (`MLX5_LIB_CAP_DYN_UAR`) gets no static bfregs (`tot_bfregs` 0) and allocates UAR pages as
    /// objects; any other gets the static pages of its request (`calc_total_bfregs`).
    pub(crate) fn get_context(&self, st: &mut FileState, udata: &Udata) -> Result<(), Errno> {
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
        // ALIGN(total_num_bfregs, MLX5_NON_FP_BFREGS_PER_UAR), in 32 bits as the kernel has it.
        let total = req.total_num_bfregs.wrapping_add(1) & !1;
        if req.num_low_latency_bfregs > total.wrapping_sub(1) {
            return Err(Errno::EINVAL);
        }
        if req.flags & uapi::MLX5_IB_ALLOC_UCTX_DEVX != 0 {
            // No DEVX on this model: `mlx5_ib_devx_create` fails.
            return Err(Errno::EOPNOTSUPP);
        }
        let lib_4k = req.lib_caps & uapi::MLX5_LIB_CAP_4K_UAR != 0;
        // (A kernel from before the ioctl methods ignores the capability it does not know.)
        let lib_dyn = req.lib_caps & uapi::MLX5_LIB_CAP_DYN_UAR != 0
            && self.dev.cfg.ioctl == crate::IoctlSupport::Full;
        let page_size = uverbs_drivers::sys::page_size();
        let uars = if lib_dyn {
            None
        } else {
            // calc_total_bfregs, allocate_uars
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
            let total = total.div_ceil(per_page) * per_page;
            if req.num_low_latency_bfregs > total - 1 {
                return Err(Errno::EINVAL);
            }
            let memfd = self.uar_fd.as_ref().ok_or(Errno::EMFILE)?;
            Some(Uars::new(
                memfd.as_fd(),
                total,
                uars_per_page,
                req.num_low_latency_bfregs,
                ver,
            )?)
        };
        let ctx = Ucontext {
            cqe_version: req.max_cqe_version.min(1),
            uars,
            mmap_entries: Default::default(),
        };
        let mut resp = Self::ucontext_resp(&ctx);
        resp.response_length = udata.outlen().min(std::mem::size_of_val(&resp)) as u32;
        udata.copy_out(&resp.as_bytes()[..resp.response_length as usize])?;
        st.ctx = Some(ctx);
        self.dev.context_created();
        Ok(())
    }

    /// `set_ucontext_resp`: the driver's description of context `ctx`, which `GET_CONTEXT` answers
    /// and `QUERY_CONTEXT` answers again (without `response_length`, which each sets).
    pub(crate) fn ucontext_resp(ctx: &Ucontext) -> uapi::mlx5_ib_alloc_ucontext_resp {
        let mut resp = caps::ucontext_resp();
        // `total_num_bfregs - num_dyn_bfregs`, or none with dynamic UARs.
        resp.tot_bfregs = ctx.uars.as_ref().map_or(0, Uars::total_bfregs);
        resp.cqe_version = ctx.cqe_version;
        resp.num_uars_per_page = (uverbs_drivers::sys::page_size() / uar::UAR_SIZE).max(1) as u32;
        resp
    }

    /// Creates an async event file (`ASYNC_EVENT_ALLOC`, or the one of the write `GET_CONTEXT`);
    /// the first is where objects created without one report.
    pub(crate) fn new_async_file(&self, st: &mut FileState) -> Result<(u64, OwnedFd), Errno> {
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
    pub(crate) fn drop_async_file(&self, st: &mut FileState, id: u64) {
        self.dev.events.close(id);
        st.async_files.retain(|x| *x != id);
        if st.default_async == Some(id) {
            st.default_async = st.async_files.last().copied();
        }
    }

    /// `CREATE_COMP_CHANNEL`.
    pub(crate) fn create_comp_channel(&self, st: &mut FileState) -> Result<(u64, OwnedFd), Errno> {
        self.ctx(st)?;
        self.collect_event_garbage(st);
        let (id, fd) = self.dev.events.create(FileKind::Comp, self.id)?;
        st.channels.push(id);
        Ok((id, fd))
    }

    /// Takes back a completion channel whose creation failed later.
    pub(crate) fn drop_comp_channel(&self, st: &mut FileState, id: u64) {
        self.dev.events.close(id);
        st.channels.retain(|x| *x != id);
    }

    /// `QUERY_PORT` (`ib_query_port`): the port's attributes; `EINVAL` for a port other than 1.
    pub(crate) fn query_port(&self, port: u64) -> Result<uapi::ib_uverbs_query_port_resp, Errno> {
        if port != 1 {
            return Err(Errno::EINVAL);
        }
        Ok(caps::port_attr(&self.dev.cfg, self.dev.port_active()))
    }

    /// The GID entry at `index` (`rdma_get_gid_attr`): `EINVAL` out of the table, `ENODATA` for an
    /// empty slot.
    pub(crate) fn gid_entry(
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
    pub(crate) fn gid_table(&self, max: usize) -> Result<Vec<uapi::ib_uverbs_gid_entry>, Errno> {
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

    /// The GID a path's source index names (`rdma_fill_sgid_attr`): `EINVAL` outside the table,
    /// `ENODATA` for an empty slot.
    pub(super) fn check_sgid(&self, index: u8) -> Result<(), Errno> {
        self.gid_entry(1, u64::from(index)).map(drop)
    }
}
