//! Completion queues: `CREATE_CQ`.

use nix::errno::Errno;
use uverbs_uapi as uapi;

use super::{pow2_ceil, zext, Cq, CqParams, FileState, Object};
use crate::events::CqRoute;
use crate::hca::CqDesc;
use crate::kernel::{File, Udata};
use crate::{caps, uaccess, Kind};

impl File {
    /// `CREATE_CQ` (`create_cq`, `mlx5_ib_create_cq`, `create_cq_user`): the handle and the number
    /// of entries less one.
    pub(crate) fn create_cq(
        &self,
        st: &mut FileState,
        p: &CqParams,
        udata: &Udata,
    ) -> Result<(u32, u32), Errno> {
        if p.comp_vector >= self.dev.cfg.num_comp_vectors {
            return Err(Errno::EINVAL);
        }
        let ctx = self.ctx(st)?;
        if p.flags & !uapi::IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION != 0 {
            // No overrun-ignoring CQs on this model. Timestamps need nothing: every CQE has one.
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
        // The UAR whose `+0x20` register takes the arm doorbells: the page the user names, or the
        // context's first static page; a context of dynamic UARs has none to default to.
        let (uar, dyn_uar) = if ucmd.flags & uapi::MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX != 0 {
            let page = Self::uar_page(ctx, u32::from(ucmd.uar_page_index))?;
            (page.base(), Some(page))
        } else {
            match &ctx.uars {
                Some(uars) => (uars.cq_uar(), None),
                None => return Err(Errno::EINVAL),
            }
        };
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
            space: crate::task::space(),
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
        st.objects.insert(
            handle,
            Object::Cq(Cq {
                cqn,
                users: 0,
                moderation: (0, 0),
                _uar: dyn_uar,
            }),
        );
        self.dev.count(Kind::Cq, true);
        Ok((handle, entries as u32 - 1))
    }

    /// `EX_MODIFY_CQ` (`ib_uverbs_ex_modify_cq`, `mlx5_ib_modify_cq`): the moderation of CQ
    /// `req.cq_handle`. The period is a 12-bit field of the CQ context (`MLX5_MAX_CQ_PERIOD`).
    pub(crate) fn modify_cq(
        &self,
        st: &mut FileState,
        req: &uapi::ib_uverbs_ex_modify_cq,
    ) -> Result<(), Errno> {
        const MAX_CQ_PERIOD: u16 = (1 << 12) - 1;
        if req.attr_mask == 0 || req.reserved != 0 {
            return Err(Errno::EINVAL);
        }
        if req.attr_mask > uapi::ib_verbs::IB_CQ_MODERATE {
            return Err(Errno::EOPNOTSUPP);
        }
        self.ctx(st)?;
        let Some(Object::Cq(cq)) = st.objects.get_mut(&req.cq_handle) else {
            return Err(Errno::EINVAL);
        };
        if req.attr.cq_period > MAX_CQ_PERIOD {
            return Err(Errno::EINVAL);
        }
        cq.moderation = (req.attr.cq_count, req.attr.cq_period);
        Ok(())
    }

    /// `RESIZE_CQ` (`ib_uverbs_resize_cq`, `mlx5_ib_resize_cq`, `resize_user`): at least `cqe`
    /// entries in the ring `mlx5_ib_resize_cq` names; returns the entries less one. A size the CQ
    /// already has is answered without a change, as mlx5_ib does.
    pub(crate) fn resize_cq(
        &self,
        st: &mut FileState,
        handle: u32,
        cqe: u32,
        udata: &Udata,
    ) -> Result<u32, Errno> {
        self.ctx(st)?;
        let Some(Object::Cq(cq)) = st.objects.get(&handle) else {
            return Err(Errno::EINVAL);
        };
        let cqn = cq.cqn;
        let max = 1u64 << caps::LOG_MAX_CQ_SZ;
        if cqe < 1 || u64::from(cqe) > max {
            return Err(Errno::EINVAL);
        }
        let entries = pow2_ceil(u64::from(cqe) + 1);
        if entries > max + 1 {
            return Err(Errno::EINVAL);
        }
        let inb = udata.inbuf();
        if inb.len() < std::mem::size_of::<uapi::mlx5_ib_resize_cq>() {
            return Err(Errno::EINVAL);
        }
        let ucmd: uapi::mlx5_ib_resize_cq = zext(inb);
        if ucmd.reserved0 != 0 || ucmd.reserved1 != 0 {
            return Err(Errno::EINVAL);
        }
        if ucmd.cqe_size != 64 && ucmd.cqe_size != 128 {
            return Err(Errno::EINVAL);
        }
        let bytes = entries * u64::from(ucmd.cqe_size);
        uaccess::check_pin(ucmd.buf_addr, bytes, true)?;
        if ucmd.buf_addr % 64 != 0 {
            return Err(Errno::EINVAL);
        }
        self.dev.silicon.resize_cq(
            cqn,
            ucmd.buf_addr as usize,
            entries as u32,
            u32::from(ucmd.cqe_size),
        )?;
        Ok(entries as u32 - 1)
    }
}
