//! The handlers of completion queues.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::ioctl::Bundle;
use super::write::Io;
use super::{undo, File};
use crate::events::FileKind;
use crate::objects::{CqParams, FileState, Object};

/// The core part of `create_cq` shared by both write commands.
fn write_create_cq(
    f: &File,
    st: &mut FileState,
    io: &Io,
    cmd: &uapi::ib_uverbs_ex_create_cq,
) -> Result<(u32, u32), Errno> {
    if cmd.comp_vector >= f.dev.cfg.num_comp_vectors {
        return Err(Errno::EINVAL);
    }
    let channel = if cmd.comp_channel >= 0 {
        Some(
            f.dev
                .events
                .lookup(f.id, i64::from(cmd.comp_channel), FileKind::Comp)?,
        )
    } else {
        None
    };
    let p = CqParams {
        cqe: cmd.cqe,
        user_handle: cmd.user_handle,
        comp_vector: cmd.comp_vector,
        channel,
        async_file: st.default_async,
        flags: cmd.flags,
    };
    f.create_cq(st, &p, &io.udata)
}

pub(super) fn w_create_cq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_create_cq = io.request()?;
    let ex = uapi::ib_uverbs_ex_create_cq {
        user_handle: cmd.user_handle,
        cqe: cmd.cqe,
        comp_vector: cmd.comp_vector,
        comp_channel: cmd.comp_channel,
        comp_mask: 0,
        flags: 0,
        reserved: 0,
    };
    let (h, cqe) = write_create_cq(f, st, io, &ex)?;
    let resp = uapi::ib_uverbs_create_cq_resp { cq_handle: h, cqe };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_CQ))
}

pub(super) fn w_ex_create_cq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_create_cq = io.request()?;
    if cmd.comp_mask != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    let (h, cqe) = write_create_cq(f, st, io, &cmd)?;
    let mut resp = uapi::ib_uverbs_ex_create_cq_resp::new_zeroed();
    resp.base = uapi::ib_uverbs_create_cq_resp { cq_handle: h, cqe };
    resp.response_length = io.response_length(std::mem::size_of_val(&resp));
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_CQ))
}

pub(super) fn m_cq_create(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let comp_vector: u32 = b.copy_from(uapi::UVERBS_ATTR_CREATE_CQ_COMP_VECTOR)?;
    let cqe: u32 = b.copy_from(uapi::UVERBS_ATTR_CREATE_CQ_CQE)?;
    let user_handle: u64 = b.copy_from(uapi::UVERBS_ATTR_CREATE_CQ_USER_HANDLE)?;
    let flags = b.flags32(
        uapi::UVERBS_ATTR_CREATE_CQ_FLAGS,
        uapi::IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION | uapi::IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN,
    )?;
    let p = CqParams {
        cqe,
        user_handle,
        comp_vector,
        channel: b.event_file(uapi::UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL),
        async_file: b
            .event_file(uapi::UVERBS_ATTR_CREATE_CQ_EVENT_FD)
            .or(st.default_async),
        flags,
    };
    let (h, entries) = f.create_cq(st, &p, &b.udata())?;
    b.set_data(uapi::UVERBS_ATTR_CREATE_CQ_HANDLE, u64::from(h))
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_CQ))?;
    b.copy_to(uapi::UVERBS_ATTR_CREATE_CQ_RESP_CQE, &entries.to_ne_bytes())
}

pub(super) fn w_destroy_cq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_destroy_cq = io.request()?;
    let d = f.destroy(st, u64::from(cmd.cq_handle), uapi::UVERBS_OBJECT_CQ)?;
    let resp = uapi::ib_uverbs_destroy_cq_resp {
        comp_events_reported: d.comp_events,
        async_events_reported: d.async_events,
    };
    io.response(resp.as_bytes())
}

pub(super) fn m_cq_destroy(_: &File, _: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let resp = uapi::ib_uverbs_destroy_cq_resp {
        comp_events_reported: b.destroyed.comp_events,
        async_events_reported: b.destroyed.async_events,
    };
    b.copy_to(uapi::UVERBS_ATTR_DESTROY_CQ_RESP, resp.as_bytes())
}

pub(super) fn w_req_notify_cq(_: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_req_notify_cq = io.request()?;
    if !matches!(st.objects.get(&cmd.cq_handle), Some(Object::Cq(_))) {
        return Err(Errno::EINVAL);
    }
    // mlx5 CQs are armed through their doorbell; the kernel path is not modelled.
    Err(Errno::EOPNOTSUPP)
}

pub(super) fn w_ex_modify_cq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_modify_cq = io.request()?;
    f.modify_cq(st, &cmd)
}

pub(super) fn w_resize_cq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_resize_cq = io.request()?;
    let cqe = f.resize_cq(st, cmd.cq_handle, cmd.cqe, &io.udata)?;
    let resp = uapi::ib_uverbs_resize_cq_resp { cqe, reserved: 0 };
    io.response(resp.as_bytes())
}
