//! The handlers of address handles.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::IntoBytes;

use super::write::Io;
use super::{undo, File};
use crate::objects::FileState;

pub(super) fn w_create_ah(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_create_ah = io.request()?;
    let h = f.create_ah(st, &cmd, &io.udata)?;
    let resp = uapi::ib_uverbs_create_ah_resp { ah_handle: h };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_AH))
}

pub(super) fn w_destroy_ah(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_destroy_ah = io.request()?;
    f.destroy(st, u64::from(cmd.ah_handle), uapi::UVERBS_OBJECT_AH)
        .map(drop)
}
