//! The handlers of protection domains and memory regions, and of their queries (what a process
//! that imports them learns).

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, IntoBytes};

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

/// `UVERBS_METHOD_ADVISE_MR`: the advice, the flush flag (the model's prefetches are done when
/// they return either way) and the entries, checked as `UVERBS_HANDLER(UVERBS_METHOD_ADVISE_MR)`
/// and `mlx5_ib_advise_mr` check them.
pub(super) fn m_advise_mr(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let pd = b
        .handle(uapi::UVERBS_ATTR_ADVISE_MR_PD_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let advice = b.get_const(uapi::UVERBS_ATTR_ADVISE_MR_ADVICE, u64::from(u32::MAX))? as u32;
    b.flags32(
        uapi::UVERBS_ATTR_ADVISE_MR_FLAGS,
        uapi::IB_UVERBS_ADVISE_MR_FLAG_FLUSH,
    )?;
    let bytes = b
        .bytes(uapi::UVERBS_ATTR_ADVISE_MR_SGE_LIST)
        .ok_or(Errno::EINVAL)?;
    let size = std::mem::size_of::<uapi::ib_uverbs_sge>();
    if bytes.is_empty() || bytes.len() % size != 0 {
        return Err(Errno::EINVAL);
    }
    let sges: Vec<uapi::ib_uverbs_sge> = bytes
        .chunks_exact(size)
        .map(|c| uapi::ib_uverbs_sge::read_from_bytes(c).expect("an entry's size"))
        .collect();
    f.advise_mr(st, pd, advice, &sges)
}

/// `UVERBS_METHOD_REG_DMABUF_MR`: the attributes in the kernel's order, then the two keys.
pub(super) fn m_reg_dmabuf_mr(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let pd = b
        .handle(uapi::UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE)
        .ok_or(Errno::EINVAL)?;
    let offset: u64 = b.copy_from(uapi::UVERBS_ATTR_REG_DMABUF_MR_OFFSET)?;
    let length: u64 = b.copy_from(uapi::UVERBS_ATTR_REG_DMABUF_MR_LENGTH)?;
    let iova: u64 = b.copy_from(uapi::UVERBS_ATTR_REG_DMABUF_MR_IOVA)?;
    let fd: i32 = b.copy_from(uapi::UVERBS_ATTR_REG_DMABUF_MR_FD)?;
    let access = b.flags32(
        uapi::UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS,
        uapi::IB_UVERBS_ACCESS_LOCAL_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_READ
            | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC
            | uapi::IB_UVERBS_ACCESS_RELAXED_ORDERING,
    )?;
    let (h, key) = f.reg_dmabuf_mr(st, pd, offset, length, iova, fd, access)?;
    let out = (|| {
        b.set_data(uapi::UVERBS_ATTR_REG_DMABUF_MR_HANDLE, u64::from(h))?;
        b.copy_to(
            uapi::UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY,
            &key.to_ne_bytes(),
        )?;
        b.copy_to(
            uapi::UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY,
            &key.to_ne_bytes(),
        )
    })();
    out.inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_MR))
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
