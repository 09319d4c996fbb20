//! The handlers of the context and its event files: `GET_CONTEXT`, `QUERY_CONTEXT`,
//! `ASYNC_EVENT_ALLOC`, `CREATE_COMP_CHANNEL`.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::IntoBytes;

use super::ioctl::Bundle;
use super::write::Io;
use super::File;
use crate::objects::FileState;
use crate::task;

const CORE_SUPPORT: u64 = uapi::IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;

pub(super) fn m_get_context(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    if st.ctx.is_some() {
        return Err(Errno::EINVAL);
    }
    f.get_context(st, &b.udata())?;
    let r = b
        .copy_to(
            uapi::UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS,
            &f.dev.cfg.num_comp_vectors.to_ne_bytes(),
        )
        .and_then(|()| {
            b.copy_to(
                uapi::UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT,
                &CORE_SUPPORT.to_ne_bytes(),
            )
        });
    if r.is_err() {
        f.drop_context(st);
    }
    r
}

/// `UVERBS_METHOD_QUERY_CONTEXT` with mlx5's `query_ucontext`: what a process that imports the
/// context (`ibv_import_device` on a duplicate of the command descriptor) learns of it, the same
/// driver answer as `GET_CONTEXT`'s. Absent outputs are no error, the driver's is mandatory.
pub(super) fn m_query_context(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let ctx = st.ctx.as_ref().ok_or(Errno::EINVAL)?;
    b.copy_to(
        uapi::UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS,
        &f.dev.cfg.num_comp_vectors.to_ne_bytes(),
    )?;
    b.copy_to(
        uapi::UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT,
        &CORE_SUPPORT.to_ne_bytes(),
    )?;
    let mut resp = File::ucontext_resp(ctx);
    let (_, len, _, _) = b
        .out(uapi::MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX)
        .ok_or(Errno::ENOENT)?;
    resp.response_length = len.min(std::mem::size_of_val(&resp)) as u32;
    b.copy_to_struct_or_zero(uapi::MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, resp.as_bytes())
}

pub(super) fn w_get_context(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let _req: uapi::ib_uverbs_get_context = io.request()?;
    if st.ctx.is_some() {
        return Err(Errno::EINVAL);
    }
    f.get_context(st, &io.udata)?;
    let (id, fd) = match f
        .new_async_file(st)
        .and_then(|(id, user)| Ok((id, task::install_fd(user)?)))
    {
        Ok(x) => x,
        Err(e) => {
            f.drop_context(st);
            return Err(e);
        }
    };
    let resp = uapi::ib_uverbs_get_context_resp {
        async_fd: fd as u32,
        num_comp_vectors: f.dev.cfg.num_comp_vectors,
    };
    if let Err(e) = io.response(resp.as_bytes()) {
        task::discard_fd(fd);
        f.drop_async_file(st, id);
        f.drop_context(st);
        return Err(e);
    }
    Ok(())
}

pub(super) fn m_async_event_alloc(
    f: &File,
    st: &mut FileState,
    b: &mut Bundle,
) -> Result<(), Errno> {
    let (id, user) = f.new_async_file(st)?;
    let fd = task::install_fd(user).inspect_err(|_| f.drop_async_file(st, id))?;
    if let Err(e) = b.set_data(uapi::UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, fd as u64) {
        task::discard_fd(fd);
        f.drop_async_file(st, id);
        return Err(e);
    }
    Ok(())
}

pub(super) fn w_create_comp_channel(
    f: &File,
    st: &mut FileState,
    io: &mut Io,
) -> Result<(), Errno> {
    let _req: uapi::ib_uverbs_create_comp_channel = io.request()?;
    let (id, user) = f.create_comp_channel(st)?;
    let fd = task::install_fd(user).inspect_err(|_| f.drop_comp_channel(st, id))?;
    let resp = uapi::ib_uverbs_create_comp_channel_resp { fd: fd as u32 };
    if let Err(e) = io.response(resp.as_bytes()) {
        task::discard_fd(fd);
        f.drop_comp_channel(st, id);
        return Err(e);
    }
    Ok(())
}
