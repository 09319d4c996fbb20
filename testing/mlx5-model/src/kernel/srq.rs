//! The handlers of shared receive queues.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::IntoBytes;

use super::ioctl::Bundle;
use super::write::Io;
use super::{undo, File};
use crate::objects::{FileState, SrqParams};

pub(super) fn w_create_srq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_create_srq = io.request()?;
    let p = SrqParams {
        pd: cmd.pd_handle,
        max_wr: cmd.max_wr,
        max_sge: cmd.max_sge,
        srq_type: uapi::IB_UVERBS_SRQT_BASIC,
        user_handle: cmd.user_handle,
        async_file: st.default_async,
    };
    let (h, max_wr, max_sge) = f.create_srq(st, &p, &io.udata)?;
    // The core reports the SRQ number only for XRC SRQs.
    let resp = uapi::ib_uverbs_create_srq_resp {
        srq_handle: h,
        max_wr,
        max_sge,
        srqn: 0,
    };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_SRQ))
}

pub(super) fn m_srq_create(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    use uapi::*;
    let max_sge: u32 = b.copy_from(UVERBS_ATTR_CREATE_SRQ_MAX_SGE)?;
    let max_wr: u32 = b.copy_from(UVERBS_ATTR_CREATE_SRQ_MAX_WR)?;
    let _limit: u32 = b.copy_from(UVERBS_ATTR_CREATE_SRQ_LIMIT)?;
    let user_handle: u64 = b.copy_from(UVERBS_ATTR_CREATE_SRQ_USER_HANDLE)?;
    let srq_type = b.get_const(UVERBS_ATTR_CREATE_SRQ_TYPE, u64::from(u32::MAX))? as u32;
    match srq_type {
        IB_UVERBS_SRQT_XRC | IB_UVERBS_SRQT_TM => {
            // Both need a CQ; XRC an XRC domain, which this model never has.
            b.handle(UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE)
                .ok_or(Errno::ENOENT)?;
            if srq_type == IB_UVERBS_SRQT_XRC {
                return Err(Errno::ENOENT);
            }
        }
        IB_UVERBS_SRQT_BASIC => {}
        _ => return Err(Errno::EINVAL),
    }
    let p = SrqParams {
        pd: b
            .handle(UVERBS_ATTR_CREATE_SRQ_PD_HANDLE)
            .ok_or(Errno::ENOENT)?,
        max_wr,
        max_sge,
        srq_type,
        user_handle,
        async_file: b
            .event_file(UVERBS_ATTR_CREATE_SRQ_EVENT_FD)
            .or(st.default_async),
    };
    let (h, max_wr, max_sge) = f.create_srq(st, &p, &b.udata())?;
    b.set_data(UVERBS_ATTR_CREATE_SRQ_HANDLE, u64::from(h))
        .inspect_err(|_| undo(f, st, h, UVERBS_OBJECT_SRQ))?;
    b.copy_to(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, &max_wr.to_ne_bytes())?;
    b.copy_to(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, &max_sge.to_ne_bytes())
}

pub(super) fn w_modify_srq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_modify_srq = io.request()?;
    f.modify_srq(st, &cmd)
}

pub(super) fn w_query_srq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_query_srq = io.request()?;
    let resp = f.query_srq(st, cmd.srq_handle)?;
    io.response(resp.as_bytes())
}

pub(super) fn w_destroy_srq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_destroy_srq = io.request()?;
    let d = f.destroy(st, u64::from(cmd.srq_handle), uapi::UVERBS_OBJECT_SRQ)?;
    let resp = uapi::ib_uverbs_destroy_srq_resp {
        events_reported: d.async_events,
    };
    io.response(resp.as_bytes())
}

pub(super) fn m_srq_destroy(_: &File, _: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let resp = uapi::ib_uverbs_destroy_srq_resp {
        events_reported: b.destroyed.async_events,
    };
    b.copy_to(uapi::UVERBS_ATTR_DESTROY_SRQ_RESP, resp.as_bytes())
}
