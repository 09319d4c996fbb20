//! The handlers of protection domains and memory regions.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::IntoBytes;

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

pub(super) fn w_dereg_mr(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_dereg_mr = io.request()?;
    f.destroy(st, u64::from(cmd.mr_handle), uapi::UVERBS_OBJECT_MR)
        .map(drop)
}
