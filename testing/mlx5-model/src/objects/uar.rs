//! UAR pages allocated as objects: `MLX5_IB_METHOD_UAR_OBJ_ALLOC` (`alloc_uar_entry`) and the
//! lookup of the page a CQ or QP names.

use std::sync::Arc;

use nix::errno::Errno;
use uverbs_uapi as uapi;

use super::{FileState, Object, Uar, Ucontext};
use crate::kernel::File;
use crate::uar::{self, DynUar};

/// What a UAR allocation answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UarAlloc {
    /// The new object's handle.
    pub handle: u32,
    /// The UAR's index on the device (`MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID`).
    pub page_id: u32,
    /// Where to map it (`MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET`).
    pub mmap_offset: u64,
    /// How much to map (`MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH`): one system page.
    pub length: u32,
}

impl File {
    /// `MLX5_IB_METHOD_UAR_OBJ_ALLOC` with an allocation type already read as a 32-bit constant:
    /// `EOPNOTSUPP` for a type other than BF and NC, then a UAR from the device
    /// (`mlx5_cmd_uar_alloc`) with an mmap entry at the lowest free page offset of the context's
    /// range (`rdma_user_mmap_entry_insert_range`). The model's HCA has write-combining, so BF
    /// pages are allowed. A context with static bfregs may allocate them too.
    pub(crate) fn alloc_uar(&self, st: &mut FileState, alloc_type: u32) -> Result<UarAlloc, Errno> {
        let ctx = self.ctx(st)?;
        if alloc_type != uapi::MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF
            && alloc_type != uapi::MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC
        {
            return Err(Errno::EOPNOTSUPP);
        }
        let pgoff = Self::free_entry_pgoff(ctx)?;
        let handle = Self::new_handle(st)?;
        let page_id = self.dev.alloc_uar_index()?;
        let page = match DynUar::new(page_id) {
            Ok(p) => p,
            Err(e) => {
                self.dev.free_uar_index(page_id);
                return Err(e);
            }
        };
        let ctx = st.ctx.as_mut().ok_or(Errno::EINVAL)?;
        ctx.mmap_entries.insert(pgoff, Arc::new(page));
        st.objects.insert(handle, Object::Uar(Uar { pgoff }));
        Ok(UarAlloc {
            handle,
            page_id,
            mmap_offset: uar::entry_mmap_offset(pgoff),
            length: uverbs_drivers::sys::page_size() as u32,
        })
    }

    /// The lowest page offset key of the entry range that no entry holds (`ENOMEM` when the range
    /// is full, as `rdma_user_mmap_entry_insert_range` fails).
    fn free_entry_pgoff(ctx: &Ucontext) -> Result<u32, Errno> {
        let mut pgoff = uar::MIN_ENTRY_PGOFF;
        for &k in ctx.mmap_entries.keys() {
            if k != pgoff {
                break;
            }
            pgoff += 1;
        }
        if pgoff > uar::MAX_ENTRY_PGOFF {
            return Err(Errno::ENOMEM);
        }
        Ok(pgoff)
    }

    /// The page of the UAR object with index `page_id`, which a CQ or QP is being created on:
    /// `EINVAL` when this context has none. (The firmware refuses a UAR index that is not
    /// allocated; without DEVX every UAR is the kernel's (uid 0), so it would take another
    /// context's too, which the model does not, as it watches only pages it knows are alive.)
    pub(super) fn uar_page(ctx: &Ucontext, page_id: u32) -> Result<Arc<DynUar>, Errno> {
        ctx.dyn_uar(page_id).cloned().ok_or(Errno::EINVAL)
    }
}
