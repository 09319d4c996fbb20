//! The handlers of protection domains and memory regions, and of their queries (what a process
//! that imports them learns).

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::IntoBytes;

use super::ioctl::Bundle;
use super::write::Io;
use super::{undo, File};
use crate::objects::FileState;

pub(super) fn w_alloc_pd(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let _req: uapi::ib_uverbs_alloc_pd = io.request()?;
    let h = f.alloc_pd(st, &io.udata)?;
    let resp = uapi::ib_uverbs_alloc_pd_resp { pd_handle: h };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_PD))
}

pub(super) fn w_dealloc_pd(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_dealloc_pd = io.request()?;
    f.destroy(st, u64::from(cmd.pd_handle), uapi::UVERBS_OBJECT_PD)
        .map(drop)
}

/// `MLX5_IB_METHOD_PD_QUERY`: the PD number (libmlx5's `mlx5_import_pd`).
pub(super) fn m_pd_query(_: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let h = b
        .handle(uapi::MLX5_IB_ATTR_QUERY_PD_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let pdn = File::query_pd(st, h)?;
    b.copy_to(uapi::MLX5_IB_ATTR_QUERY_PD_RESP_PDN, &pdn.to_ne_bytes())
}

/// `UVERBS_METHOD_QUERY_MR`: lkey, rkey, length and (optional) iova, in the kernel's order
/// (`ibv_import_mr`).
pub(super) fn m_query_mr(_: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let h = b
        .handle(uapi::UVERBS_ATTR_QUERY_MR_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let (lkey, rkey, length, iova) = File::query_mr(st, h)?;
    b.copy_to(uapi::UVERBS_ATTR_QUERY_MR_RESP_LKEY, &lkey.to_ne_bytes())?;
    b.copy_to(uapi::UVERBS_ATTR_QUERY_MR_RESP_RKEY, &rkey.to_ne_bytes())?;
    b.copy_to(
        uapi::UVERBS_ATTR_QUERY_MR_RESP_LENGTH,
        &length.to_ne_bytes(),
    )?;
    b.copy_to(uapi::UVERBS_ATTR_QUERY_MR_RESP_IOVA, &iova.to_ne_bytes())
}

pub(super) fn w_reg_mr(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_reg_mr = io.request()?;
    let (h, key) = f.reg_mr(st, &cmd)?;
    let resp = uapi::ib_uverbs_reg_mr_resp {
        mr_handle: h,
        lkey: key,
        rkey: key,
    };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_MR))
}

pub(super) fn w_rereg_mr(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_rereg_mr = io.request()?;
    let key = f.rereg_mr(st, &cmd)?;
    let resp = uapi::ib_uverbs_rereg_mr_resp {
        lkey: key,
        rkey: key,
    };
    io.response(resp.as_bytes())
}

pub(super) fn w_dereg_mr(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_dereg_mr = io.request()?;
    f.destroy(st, u64::from(cmd.mr_handle), uapi::UVERBS_OBJECT_MR)
        .map(drop)
}
