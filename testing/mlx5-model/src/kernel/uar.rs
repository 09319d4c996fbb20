//! The handlers of UAR objects (`MLX5_IB_OBJECT_UAR`): `UAR_OBJ_ALLOC`. (`UAR_OBJ_DESTROY` is the
//! framework's destroy alone.)

use nix::errno::Errno;
use uverbs_uapi as uapi;

use super::ioctl::Bundle;
use super::{undo, File};
use crate::objects::FileState;

/// `MLX5_IB_METHOD_UAR_OBJ_ALLOC`: the type (`uverbs_get_const` into a 32-bit enum), the UAR and
/// its mmap entry, then the handle, the mmap offset, the page index and the length, in the
/// kernel's order. A failure after the object exists destroys it again, as the framework aborts
/// a new object whose method failed.
pub(super) fn m_uar_alloc(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let alloc_type = b.get_const(uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, u64::from(u32::MAX))?;
    let a = f.alloc_uar(st, alloc_type as u32)?;
    b.set_data(uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, u64::from(a.handle))
        .and_then(|()| {
            b.copy_to(
                uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
                &a.mmap_offset.to_ne_bytes(),
            )
        })
        .and_then(|()| {
            b.copy_to(
                uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID,
                &a.page_id.to_ne_bytes(),
            )
        })
        .and_then(|()| {
            b.copy_to(
                uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH,
                &a.length.to_ne_bytes(),
            )
        })
        .inspect_err(|_| undo(f, st, a.handle, uapi::MLX5_IB_OBJECT_UAR))
}
