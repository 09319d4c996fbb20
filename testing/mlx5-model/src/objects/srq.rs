//! Shared receive queues: `CREATE_SRQ`, `MODIFY_SRQ`, `QUERY_SRQ`.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::{pow2_ceil, zext, FileState, Object, Srq, SrqParams};
use crate::events::Route;
use crate::hca::SrqDesc;
use crate::kernel::{File, Udata};
use crate::{caps, uaccess, Kind};

impl File {
    /// `CREATE_SRQ` (`mlx5_ib_create_srq`, `create_srq_user`): the handle, `max_wr` and `max_sge`.
    pub(crate) fn create_srq(
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
            space: crate::task::space(),
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
    pub(crate) fn modify_srq(
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
    pub(crate) fn query_srq(
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
}
