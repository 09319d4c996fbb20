//! The handlers of queue pairs: create, query, modify, destroy, multicast attach and detach.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::ioctl::Bundle;
use super::write::Io;
use super::{sz, undo, File};
use crate::objects::{FileState, QpParams};

/// `IB_QP_CREATE_*` flags the write commands accept.
const WRITE_QP_CREATE_FLAGS: u32 =
    (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11);

/// The core part of `create_qp` shared by both write commands.
fn write_create_qp(
    f: &File,
    st: &mut FileState,
    io: &Io,
    cmd: &uapi::ib_uverbs_ex_create_qp,
) -> Result<(u32, u32, uapi::ib_uverbs_qp_cap), Errno> {
    if cmd.comp_mask & uapi::IB_UVERBS_CREATE_QP_MASK_IND_TABLE != 0 {
        // No receive work queue indirection tables on this model: the handle names nothing.
        return Err(Errno::EINVAL);
    }
    let is = |h: u32, ty: u16| st.objects.get(&h).is_some_and(|o| o.type_id() == ty);
    let srq = if cmd.is_srq != 0 {
        if !is(cmd.srq_handle, uapi::UVERBS_OBJECT_SRQ) {
            return Err(Errno::EINVAL);
        }
        Some(cmd.srq_handle)
    } else {
        None
    };
    if cmd.recv_cq_handle != cmd.send_cq_handle && !is(cmd.recv_cq_handle, uapi::UVERBS_OBJECT_CQ) {
        return Err(Errno::EINVAL);
    }
    if !is(cmd.send_cq_handle, uapi::UVERBS_OBJECT_CQ) || !is(cmd.pd_handle, uapi::UVERBS_OBJECT_PD)
    {
        return Err(Errno::EINVAL);
    }
    if cmd.create_flags & !WRITE_QP_CREATE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let p = QpParams {
        qp_type: cmd.qp_type,
        pd: cmd.pd_handle,
        send_cq: cmd.send_cq_handle,
        recv_cq: cmd.recv_cq_handle,
        srq,
        cap: uapi::ib_uverbs_qp_cap {
            max_send_wr: cmd.max_send_wr,
            max_recv_wr: cmd.max_recv_wr,
            max_send_sge: cmd.max_send_sge,
            max_recv_sge: cmd.max_recv_sge,
            max_inline_data: cmd.max_inline_data,
        },
        sq_sig_all: cmd.sq_sig_all != 0,
        user_handle: cmd.user_handle,
        create_flags: cmd.create_flags,
        async_file: st.default_async,
    };
    f.create_qp(st, &p, &io.udata)
}

fn qp_resp(h: u32, qpn: u32, cap: &uapi::ib_uverbs_qp_cap) -> uapi::ib_uverbs_create_qp_resp {
    uapi::ib_uverbs_create_qp_resp {
        qp_handle: h,
        qpn,
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
        reserved: 0,
    }
}

pub(super) fn w_create_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_create_qp = io.request()?;
    let mut ex = uapi::ib_uverbs_ex_create_qp::new_zeroed();
    ex.user_handle = cmd.user_handle;
    ex.pd_handle = cmd.pd_handle;
    ex.send_cq_handle = cmd.send_cq_handle;
    ex.recv_cq_handle = cmd.recv_cq_handle;
    ex.srq_handle = cmd.srq_handle;
    ex.max_send_wr = cmd.max_send_wr;
    ex.max_recv_wr = cmd.max_recv_wr;
    ex.max_send_sge = cmd.max_send_sge;
    ex.max_recv_sge = cmd.max_recv_sge;
    ex.max_inline_data = cmd.max_inline_data;
    ex.sq_sig_all = cmd.sq_sig_all;
    ex.qp_type = cmd.qp_type;
    ex.is_srq = cmd.is_srq;
    let (h, qpn, cap) = write_create_qp(f, st, io, &ex)?;
    io.response(qp_resp(h, qpn, &cap).as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_QP))
}

pub(super) fn w_ex_create_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_create_qp = io.request()?;
    if cmd.comp_mask & !uapi::IB_UVERBS_CREATE_QP_SUP_COMP_MASK != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    let (h, qpn, cap) = write_create_qp(f, st, io, &cmd)?;
    let mut resp = uapi::ib_uverbs_ex_create_qp_resp::new_zeroed();
    resp.base = qp_resp(h, qpn, &cap);
    resp.response_length = io.response_length(std::mem::size_of_val(&resp));
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_QP))
}

pub(super) fn m_qp_create(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    use uapi::*;
    let cap: ib_uverbs_qp_cap = b.copy_from_or_zero(UVERBS_ATTR_CREATE_QP_CAP)?;
    let user_handle: u64 = b.copy_from(UVERBS_ATTR_CREATE_QP_USER_HANDLE)?;
    let qp_type = b.get_const(UVERBS_ATTR_CREATE_QP_TYPE, u64::from(u8::MAX))? as u8;
    let (pd, send_cq, recv_cq) = match qp_type {
        IB_UVERBS_QPT_XRC_TGT => {
            let others = [
                UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE,
                UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE,
                UVERBS_ATTR_CREATE_QP_PD_HANDLE,
                UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE,
            ];
            if others.iter().any(|&id| b.has(id)) {
                return Err(Errno::EINVAL);
            }
            // There are no XRC domains on this model, so no handle can name one.
            return Err(Errno::ENOENT);
        }
        IB_UVERBS_QPT_RAW_PACKET
        | IB_UVERBS_QPT_RC
        | IB_UVERBS_QPT_UC
        | IB_UVERBS_QPT_UD
        | IB_UVERBS_QPT_XRC_INI
        | IB_UVERBS_QPT_DRIVER => {
            if b.has(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE)
                || (b.has(UVERBS_ATTR_CREATE_QP_SOURCE_QPN) && qp_type == IB_UVERBS_QPT_XRC_INI)
            {
                return Err(Errno::EINVAL);
            }
            let pd = b
                .handle(UVERBS_ATTR_CREATE_QP_PD_HANDLE)
                .ok_or(Errno::ENOENT)?;
            let send_cq = b
                .handle(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE)
                .ok_or(Errno::ENOENT)?;
            let recv_cq = if qp_type == IB_UVERBS_QPT_XRC_INI {
                send_cq
            } else {
                b.handle(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE)
                    .ok_or(Errno::ENOENT)?
            };
            (pd, send_cq, recv_cq)
        }
        _ => return Err(Errno::EINVAL),
    };
    let flags = b.flags32(
        UVERBS_ATTR_CREATE_QP_FLAGS,
        IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK
            | IB_UVERBS_QP_CREATE_SCATTER_FCS
            | IB_UVERBS_QP_CREATE_CVLAN_STRIPPING
            | IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING
            | IB_UVERBS_QP_CREATE_SQ_SIG_ALL,
    )?;
    // check_creation_flags
    let mut create_flags = flags & !IB_UVERBS_QP_CREATE_SQ_SIG_ALL;
    if create_flags != 0 && qp_type != IB_UVERBS_QPT_DRIVER {
        if qp_type != IB_UVERBS_QPT_RAW_PACKET && qp_type != IB_UVERBS_QPT_UD {
            return Err(Errno::EINVAL);
        }
        if create_flags & (IB_UVERBS_QP_CREATE_SCATTER_FCS | IB_UVERBS_QP_CREATE_CVLAN_STRIPPING)
            != 0
            && qp_type != IB_UVERBS_QPT_RAW_PACKET
        {
            return Err(Errno::EINVAL);
        }
    }
    if b.has(UVERBS_ATTR_CREATE_QP_SOURCE_QPN) {
        let _: u32 = b.copy_from(UVERBS_ATTR_CREATE_QP_SOURCE_QPN)?;
        create_flags |= 1 << 10; // IB_QP_CREATE_SOURCE_QPN
    }
    let p = QpParams {
        qp_type,
        pd,
        send_cq,
        recv_cq,
        srq: b.handle(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE),
        cap,
        sq_sig_all: flags & IB_UVERBS_QP_CREATE_SQ_SIG_ALL != 0,
        user_handle,
        create_flags,
        async_file: b
            .event_file(UVERBS_ATTR_CREATE_QP_EVENT_FD)
            .or(st.default_async),
    };
    let (h, qpn, cap) = f.create_qp(st, &p, &b.udata())?;
    b.set_data(UVERBS_ATTR_CREATE_QP_HANDLE, u64::from(h))
        .inspect_err(|_| undo(f, st, h, UVERBS_OBJECT_QP))?;
    b.copy_to_struct_or_zero(UVERBS_ATTR_CREATE_QP_RESP_CAP, cap.as_bytes())?;
    b.copy_to(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, &qpn.to_ne_bytes())
}

pub(super) fn w_query_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_query_qp = io.request()?;
    let resp = f.query_qp(st, cmd.qp_handle)?;
    io.response(resp.as_bytes())
}

pub(super) fn w_modify_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_modify_qp = io.request()?;
    if cmd.attr_mask & !((uapi::IB_USER_LEGACY_LAST_QP_ATTR_MASK << 1) - 1) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    f.modify_qp(st, &cmd, &io.udata)
}

pub(super) fn w_ex_modify_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_modify_qp = io.request()?;
    if cmd.base.attr_mask & !((uapi::IB_USER_LAST_QP_ATTR_MASK << 1) - 1) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    f.modify_qp(st, &cmd.base, &io.udata)?;
    let resp = uapi::ib_uverbs_ex_modify_qp_resp {
        comp_mask: 0,
        response_length: io.response_length(sz::<uapi::ib_uverbs_ex_modify_qp_resp>()),
    };
    io.response(resp.as_bytes())
}

pub(super) fn w_destroy_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_destroy_qp = io.request()?;
    let d = f.destroy(st, u64::from(cmd.qp_handle), uapi::UVERBS_OBJECT_QP)?;
    let resp = uapi::ib_uverbs_destroy_qp_resp {
        events_reported: d.async_events,
    };
    io.response(resp.as_bytes())
}

pub(super) fn m_qp_destroy(_: &File, _: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let resp = uapi::ib_uverbs_destroy_qp_resp {
        events_reported: b.destroyed.async_events,
    };
    b.copy_to(uapi::UVERBS_ATTR_DESTROY_QP_RESP, resp.as_bytes())
}

pub(super) fn w_attach_mcast(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_attach_mcast = io.request()?;
    f.mcast(st, cmd.qp_handle, cmd.gid, cmd.mlid, true)
}

pub(super) fn w_detach_mcast(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_detach_mcast = io.request()?;
    f.mcast(st, cmd.qp_handle, cmd.gid, cmd.mlid, false)
}
