//! Queue pairs: `CREATE_QP`, `MODIFY_QP`, `QUERY_QP`, multicast attach and detach.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::{is_multicast, zext, FileState, Object, Qp, QpParams, DEFAULT_UIDX};
use crate::events::Route;
use crate::hca::{PathDesc, QpAttrs, QpDesc, Transport};
use crate::kernel::{File, Udata};
use crate::uar::{self, Uars};

/// `MLX5_IB_INVALID_BFREG`: the `bfreg_index` answered for a QP on a UAR object's page.
const INVALID_BFREG: u32 = 1 << 31;
use crate::{caps, uaccess, Kind};
// The kernel's QP state machine (`ib_modify_qp_is_ok`): the model's `MODIFY_QP` runs the driver's
// table of it (`qp_state::check`) rather than a second copy, so a transition the driver wrongly allows
// is not caught by the model, only by a real kernel (the suites on rxe in the VM).
use uverbs_drivers::qp_state;
use uverbs_drivers::qp_state::state as qps;

impl File {
    /// `CREATE_QP` (`mlx5_ib_create_qp` for a user QP): the handle, QP number and capacities.
    pub(crate) fn create_qp(
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
            | uapi::MLX5_QP_FLAG_ALLOW_SCATTER_CQE
            | uapi::MLX5_QP_FLAG_BFREG_INDEX
            | uapi::MLX5_QP_FLAG_UAR_PAGE_INDEX;
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
        // _create_user_qp: the UAR the QP rings. A UAR object's page (the kernel only learns the
        // page, so the QP may ring any of the registers libraries use on it); a dynamic bfreg of
        // the legacy kind (`num_dyn_bfregs`, none on this model); or a static bfreg the kernel
        // picks, which a context of dynamic UARs does not have.
        let uar_flags =
            ucmd.flags & (uapi::MLX5_QP_FLAG_UAR_PAGE_INDEX | uapi::MLX5_QP_FLAG_BFREG_INDEX);
        let dyn_uar = match uar_flags {
            uapi::MLX5_QP_FLAG_UAR_PAGE_INDEX => Some(Self::uar_page(ctx, ucmd.bfreg_index)?),
            0 if ctx.uars.is_some() => None,
            _ => return Err(Errno::EINVAL),
        };
        let handle = Self::new_handle(st)?;
        let qpn = self.dev.alloc_qpn()?;
        let ctx = st.ctx.as_mut().ok_or(Errno::EINVAL)?;
        // (bfregn, the user's index of it or MLX5_IB_INVALID_BFREG, the register, how many)
        let (bfregn, bfreg_index, bf_reg, bf_regs) = match (&dyn_uar, ctx.uars.as_mut()) {
            (Some(page), _) => (
                None,
                INVALID_BFREG,
                page.base() + uar::BF_OFFSET,
                uar::NON_FP_BFREGS_PER_UAR,
            ),
            (None, Some(uars)) => {
                let b = uars.alloc();
                let index = Uars::user_index(b);
                (Some(b), index, uars.reg_addr(index, caps::BF_REG_SIZE), 1)
            }
            (None, None) => unreachable!("checked above"),
        };
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
            bf_reg,
            bf_buf_size: caps::BF_REG_SIZE / 2,
            bf_regs,
            send_cqn,
            recv_cqn,
            srqn,
            uidx,
            sq_sig_all: p.sq_sig_all,
            space: crate::task::space(),
        };
        self.dev.silicon.create_qp(desc);
        let mut resp = uapi::mlx5_ib_create_qp_resp::new_zeroed();
        resp.bfreg_index = bfreg_index;
        let n = udata.outlen().min(std::mem::size_of_val(&resp));
        if let Err(e) = udata.copy_out(&resp.as_bytes()[..n]) {
            self.dev.silicon.destroy_qp(qpn);
            if let (Some(uars), Some(b)) = (st.ctx.as_mut().and_then(|c| c.uars.as_mut()), bfregn) {
                uars.free(b);
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
                _uar: dyn_uar,
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

    /// `MODIFY_QP` / `EX_MODIFY_QP` (`modify_qp`, `_ib_modify_qp`, `mlx5_ib_modify_qp`).
    pub(crate) fn modify_qp(
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
    pub(crate) fn query_qp(
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

    /// `ATTACH_MCAST` / `DETACH_MCAST`.
    pub(crate) fn mcast(
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
}
