//! `mmap` of the file (`mlx5_ib_mmap`): the UAR pages of the context, static ones by their
//! command and index, those of UAR objects by their mmap entry's offset.

use std::os::fd::{AsFd, OwnedFd};

use uverbs_uapi as uapi;

use super::File;
use crate::uar;

impl File {
    /// `mlx5_ib_mmap`, in this process.
    pub(super) fn do_mmap(&self, len: usize, offset: u64) -> std::io::Result<memmap2::MmapRaw> {
        let (fd, at) = self.mmap_source(len, offset)?;
        uverbs_drivers::sys::map_shared(fd.as_fd(), len, at)
    }

    /// `mlx5_ib_mmap` without the mapping: the file whose pages `len` bytes at `offset` of the
    /// device file are (a new descriptor of it), and the offset in it. The model's pages are
    /// pages of a memfd, so a process maps them as the kernel would hand them out.
    pub(super) fn mmap_source(&self, len: usize, offset: u64) -> std::io::Result<(OwnedFd, u64)> {
        let err = |e: i32| Err(std::io::Error::from_raw_os_error(e));
        let page = uverbs_drivers::sys::page_size() as u64;
        if len == 0 || offset % page != 0 {
            return err(libc::EINVAL);
        }
        let st = self.lock();
        let Some(ctx) = st.ctx.as_ref() else {
            return err(libc::EINVAL);
        };
        let pgoff = offset / page;
        let command = ((pgoff >> 8) & 0xff) as u32;
        match command {
            uapi::MLX5_IB_MMAP_REGULAR_PAGE
            | uapi::MLX5_IB_MMAP_WC_PAGE
            | uapi::MLX5_IB_MMAP_NC_PAGE => match (&self.uar_fd, &ctx.uars) {
                (Some(fd), Some(uars)) => {
                    Ok((fd.try_clone()?, uars.page_offset(pgoff & 0xff, len)?))
                }
                // uar_mmap: a context of dynamic UARs has no static pages.
                _ => err(libc::EINVAL),
            },
            // A legacy dynamic bfreg page (`num_dyn_bfregs`): the model hands out none.
            uapi::MLX5_IB_MMAP_ALLOC_WC => err(libc::EINVAL),
            uapi::MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES => err(libc::ENOSYS),
            // mlx5_ib_mmap_clock_info_page: version 1, one page at most (the kernel also refuses
            // a writable mapping, which the model's memfd cannot tell).
            uapi::MLX5_IB_MMAP_CLOCK_INFO => {
                if pgoff & 0xff != u64::from(uapi::MLX5_IB_CLOCK_INFO_V1) || len as u64 > page {
                    return err(libc::EINVAL);
                }
                Ok((self.dev.clock_fd.try_clone()?, 0))
            }
            // No raw core-clock page on this model (clock info replaces it).
            uapi::MLX5_IB_MMAP_CORE_CLOCK => err(libc::EOPNOTSUPP),
            // mlx5_ib_mmap_offset: the entry that starts at this offset (`EINVAL` for none, or one
            // destroyed), mapped whole.
            _ => match ctx.mmap_entries.get(&uar::vma_to_entry_pgoff(pgoff)) {
                Some(page) => page.source(len),
                None => err(libc::EINVAL),
            },
        }
    }
}
