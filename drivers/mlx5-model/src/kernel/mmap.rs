//! `mmap` of the file (`mlx5_ib_mmap`): the UAR pages of the context.

use uverbs_uapi as uapi;

use super::File;

impl File {
    /// `mlx5_ib_mmap`.
    pub(super) fn do_mmap(&self, len: usize, offset: u64) -> std::io::Result<memmap2::MmapRaw> {
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
            | uapi::MLX5_IB_MMAP_NC_PAGE => match &self.uar_fd {
                Some(fd) => ctx.uars.map_page(fd, pgoff & 0xff, len),
                None => err(libc::EINVAL),
            },
            // A dynamic UAR: the model hands out none.
            uapi::MLX5_IB_MMAP_ALLOC_WC => err(libc::EINVAL),
            uapi::MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES => err(libc::ENOSYS),
            // No clock page and no clock info on this model.
            uapi::MLX5_IB_MMAP_CORE_CLOCK | uapi::MLX5_IB_MMAP_CLOCK_INFO => err(libc::EOPNOTSUPP),
            _ => err(libc::EINVAL),
        }
    }
}
