//! A context's UAR pages and the kernel's BlueFlame register (bfreg) allocation.
//!
//! The static UAR pages of a context are pages of a memfd: the driver maps them with `mmap` of the
//! device file (command `MLX5_IB_MMAP_REGULAR_PAGE`, `_WC_PAGE` or `_NC_PAGE`, one page at a time),
//! the model maps the whole memfd once, and both see the same memory; the HCA watches its doorbell
//! and BlueFlame registers through the model's mapping.
//!
//! Numbering as `mlx5_ib` has it (`calc_total_bfregs`, `alloc_bfreg`, `adjust_bfregn`): the context
//! asks for `total_num_bfregs` "non fast path" bfregs, two per 4 KiB UAR (the other two of each UAR
//! are the fast-path ones the kernel never hands out), so a request of 16 gives 8 UARs. bfreg 0 is
//! the shared doorbell-only register; the last `num_low_latency_bfregs` are given to one QP each
//! (high class), those in between are shared by the QPs, least used first (medium class), and the
//! QP learns its register's index in the user numbering of 4 bfregs per UAR
//! (`mlx5_ib_create_qp_resp.bfreg_index`).
//!
//! A context whose library asks for dynamic UARs (`MLX5_LIB_CAP_DYN_UAR`, which libmlx5 always
//! does) gets no static pages at all (`tot_bfregs` 0): it allocates UAR pages one at a time as
//! `MLX5_IB_OBJECT_UAR` objects ([`DynUar`]), maps each at the offset of its mmap entry
//! ([`entry_mmap_offset`], the kernel's `mlx5_entry_to_mmap_offset`), and names the page by its
//! index when it creates a CQ or QP. Each such page is a memfd of its own, so that it lives as long
//! as the driver's mapping of it or the model's, whichever goes last, as the kernel keeps a UAR
//! until its object is destroyed and its last mapping gone.

use std::os::fd::{BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::memfd::{memfd_create, MFdFlags};

use super::uaccess::UAR_MEMFD_NAME;

/// 4 KiB: the size of one UAR (`MLX5_ADAPTER_PAGE_SIZE`).
pub(super) const UAR_SIZE: usize = 4096;
/// bfregs per UAR (`MLX5_BFREGS_PER_UAR`).
pub(super) const BFREGS_PER_UAR: u32 = 4;
/// bfregs per UAR the kernel hands out (`MLX5_NON_FP_BFREGS_PER_UAR`).
pub(super) const NON_FP_BFREGS_PER_UAR: u32 = 2;
/// The most bfregs a context may ask for (`MLX5_MAX_BFREGS`).
pub(super) const MAX_BFREGS: u32 = 256 * NON_FP_BFREGS_PER_UAR;
/// Offset of the first BlueFlame register in a UAR (`MLX5_BF_OFFSET`).
pub(super) const BF_OFFSET: usize = 0x800;

/// The first command of the mmap offsets the kernel hands out for mmap entries
/// (`MLX5_IB_MMAP_OFFSET_START`).
const MMAP_OFFSET_START: u32 = 9;
/// The last one (`MLX5_IB_MMAP_OFFSET_END`).
const MMAP_OFFSET_END: u32 = 255;
/// The lowest page offset key of an mmap entry (`rdma_user_mmap_entry_insert_range`'s `min_pgoff`
/// for mlx5's entries).
pub(super) const MIN_ENTRY_PGOFF: u32 = MMAP_OFFSET_START << 16;
/// The highest one (its `max_pgoff`).
pub(super) const MAX_ENTRY_PGOFF: u32 = (MMAP_OFFSET_END << 16) | 0xffff;

/// The memfd of a model file's UAR pages (empty until the context says how many).
pub(super) fn create_memfd() -> Result<OwnedFd, Errno> {
    memfd_create(UAR_MEMFD_NAME, MFdFlags::MFD_CLOEXEC)
}

/// A one-page memfd holding `info` (the clock-info page every context maps read-only).
pub(super) fn clock_page(info: &uverbs_uapi::mlx5_ib_clock_info) -> Result<OwnedFd, Errno> {
    use zerocopy::IntoBytes;
    let fd = memfd_create(c"mlx5-model-clock", MFdFlags::MFD_CLOEXEC)?;
    nix::unistd::ftruncate(&fd, uverbs_drivers::sys::page_size() as i64)?;
    let bytes = info.as_bytes();
    if nix::sys::uio::pwrite(&fd, bytes, 0)? != bytes.len() {
        return Err(Errno::EIO);
    }
    Ok(fd)
}

/// The mmap offset of the entry whose page offset key is `pgoff` (`mlx5_entry_to_mmap_offset`):
/// the command in bits 8..16 of the page offset, the index's low byte below it and its high byte
/// in bits 16..24.
pub(super) fn entry_mmap_offset(pgoff: u32) -> u64 {
    let cmd = u64::from(pgoff >> 16);
    let index = u64::from(pgoff & 0xffff);
    let page_shift = uverbs_drivers::sys::page_size().trailing_zeros();
    (((index >> 8) << 16) | (cmd << 8) | (index & 0xff)) << page_shift
}

/// The entry key a mapping at page offset `vm_pgoff` names (`mlx5_vma_to_pgoff`: the command,
/// then the extended index).
pub(super) fn vma_to_entry_pgoff(vm_pgoff: u64) -> u32 {
    let command = (vm_pgoff >> 8) & 0xff;
    let index = (vm_pgoff & 0xff) | (((vm_pgoff >> 16) & 0xff) << 8);
    ((command << 16) | index) as u32
}

/// A UAR page allocated as an object (`MLX5_IB_METHOD_UAR_OBJ_ALLOC`, the kernel's
/// `alloc_uar_entry`): one system page, a memfd of its own that the driver maps with `mmap` at its
/// entry's offset, and the model's mapping of it, through which the HCA watches its doorbell and
/// BlueFlame registers. CQs and QPs created on the page hold it, so that the model's mapping
/// outlives them even if the object is destroyed first.
#[derive(Debug)]
pub(super) struct DynUar {
    /// The UAR's index on the device (`page_idx`): what `CREATE_CQ` and `CREATE_QP` name. (Whether
    /// the page was asked for write-combining or non-cached only changes the caching of the
    /// driver's mapping, which the model's memory does not have.)
    pub page_id: u32,
    memfd: OwnedFd,
    /// The model's view of the page.
    map: memmap2::MmapRaw,
}

impl DynUar {
    /// A new, zeroed page with index `page_id`.
    pub fn new(page_id: u32) -> Result<DynUar, Errno> {
        let memfd = create_memfd()?;
        let page_size = uverbs_drivers::sys::page_size();
        nix::unistd::ftruncate(&memfd, page_size as libc::off_t)?;
        let map = uverbs_drivers::sys::map_shared(std::os::fd::AsFd::as_fd(&memfd), page_size, 0)
            .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::ENOMEM)))?;
        Ok(DynUar {
            page_id,
            memfd,
            map,
        })
    }

    /// The model's address of the page: its `+0x20` register takes CQ arm doorbells, its
    /// BlueFlame registers start at [`BF_OFFSET`].
    pub fn base(&self) -> usize {
        self.map.as_ptr() as usize
    }

    /// What the driver maps of the page (`rdma_user_mmap_io`: the mapping must be exactly the
    /// entry's length, one page): a new descriptor of its memfd, at offset 0.
    pub fn source(&self, len: usize) -> std::io::Result<(OwnedFd, u64)> {
        if len != uverbs_drivers::sys::page_size() {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok((self.memfd.try_clone()?, 0))
    }
}

/// The UAR pages of a context and their bfreg usage.
#[derive(Debug)]
pub(super) struct Uars {
    /// Static system pages.
    pages: u32,
    page_size: usize,
    /// 4 KiB UARs per system page.
    uars_per_page: u32,
    num_low_latency: u32,
    /// `bfregi->ver`: 2 for the v2 request (bfreg classes), 0 for the first one (only bfreg 0).
    ver: u32,
    /// QPs using each non-fast-path bfreg.
    count: Vec<u32>,
    /// The model's view of the pages.
    map: memmap2::MmapRaw,
}

impl Uars {
    /// The pages for a request of `total` bfregs (already aligned to the bfregs of a system page)
    /// with `uars_per_page` UARs per system page, sized into `memfd` and mapped.
    pub fn new(
        memfd: BorrowedFd<'_>,
        total: u32,
        uars_per_page: u32,
        num_low_latency: u32,
        ver: u32,
    ) -> Result<Uars, Errno> {
        let page_size = uverbs_drivers::sys::page_size();
        let pages = total / (uars_per_page * NON_FP_BFREGS_PER_UAR);
        let len = pages as usize * page_size;
        nix::unistd::ftruncate(memfd, len as libc::off_t)?;
        let map = uverbs_drivers::sys::map_shared(memfd, len.max(page_size), 0)
            .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::ENOMEM)))?;
        Ok(Uars {
            pages,
            page_size,
            uars_per_page,
            num_low_latency,
            ver,
            count: vec![0; (pages * uars_per_page * NON_FP_BFREGS_PER_UAR) as usize],
            map,
        })
    }

    /// Static system pages (what the driver maps).
    #[cfg(test)]
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// The static bfregs of the context (`tot_bfregs`): two per UAR.
    pub fn total_bfregs(&self) -> u32 {
        self.max_bfregs()
    }

    fn max_bfregs(&self) -> u32 {
        self.uars_per_page * self.pages * NON_FP_BFREGS_PER_UAR
    }

    fn num_med(&self) -> u32 {
        self.max_bfregs()
            .saturating_sub(self.num_low_latency)
            .saturating_sub(1)
    }

    /// `alloc_bfreg`: a high-class register if one is free, else the least used medium-class one,
    /// else the shared doorbell register 0.
    pub fn alloc(&mut self) -> u32 {
        if self.ver >= 2 {
            let first_hi = self.num_med() + 1;
            for i in first_hi..self.max_bfregs() {
                if self.count[i as usize] == 0 {
                    self.count[i as usize] += 1;
                    return i;
                }
            }
            if self.num_med() > 0 {
                let mut min = 1u32;
                for i in 1..first_hi {
                    if self.count[i as usize] < self.count[min as usize] {
                        min = i;
                    }
                    if self.count[min as usize] == 0 {
                        break;
                    }
                }
                self.count[min as usize] += 1;
                return min;
            }
        }
        if let Some(c) = self.count.first_mut() {
            *c += 1;
        }
        0
    }

    /// `mlx5_ib_free_bfreg`.
    pub fn free(&mut self, bfregn: u32) {
        if let Some(c) = self.count.get_mut(bfregn as usize) {
            *c = c.saturating_sub(1);
        }
    }

    /// `adjust_bfregn`: the user's index of a non-fast-path bfreg (4 per UAR).
    pub fn user_index(bfregn: u32) -> u32 {
        bfregn / NON_FP_BFREGS_PER_UAR * BFREGS_PER_UAR + bfregn % NON_FP_BFREGS_PER_UAR
    }

    /// The offset of a UAR (4 KiB unit `uar`) in the memfd.
    fn uar_offset(&self, uar: u32) -> usize {
        (uar / self.uars_per_page) as usize * self.page_size
            + (uar % self.uars_per_page) as usize * UAR_SIZE
    }

    /// The model's address of the register of bfreg `index` (user numbering) for registers of
    /// `bf_reg_size` bytes.
    pub fn reg_addr(&self, index: u32, bf_reg_size: u32) -> usize {
        self.map.as_ptr() as usize
            + self.uar_offset(index / BFREGS_PER_UAR)
            + BF_OFFSET
            + (index % BFREGS_PER_UAR) as usize * bf_reg_size as usize
    }

    /// The model's address of the first UAR, whose `+0x20` register takes the CQ arm doorbells.
    pub fn cq_uar(&self) -> usize {
        self.map.as_ptr() as usize
    }

    /// Maps system page `index` of the memfd for the driver.
    #[cfg(test)]
    pub fn map_page(
        &self,
        memfd: &OwnedFd,
        index: u64,
        len: usize,
    ) -> std::io::Result<memmap2::MmapRaw> {
        let at = self.page_offset(index, len)?;
        uverbs_drivers::sys::map_shared(std::os::fd::AsFd::as_fd(memfd), len, at)
    }

    /// Where system page `index` (mapped `len` bytes long) is in the memfd.
    pub fn page_offset(&self, index: u64, len: usize) -> std::io::Result<u64> {
        if len != self.page_size || index >= u64::from(self.pages) {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(index * self.page_size as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn mmap_entry_offsets_follow_the_kernel() {
        let shift = uverbs_drivers::sys::page_size().trailing_zeros();
        // Command 9, index 0: the first entry; the index's high byte goes to bits 16..24.
        assert_eq!(entry_mmap_offset(MIN_ENTRY_PGOFF), 0x900 << shift);
        assert_eq!(entry_mmap_offset(0x9_0123), 0x1_0923 << shift);
        assert_eq!(entry_mmap_offset(MAX_ENTRY_PGOFF), 0xff_ffff << shift);
        for key in [MIN_ENTRY_PGOFF, 0x9_0123, 0x2a_ff01, MAX_ENTRY_PGOFF] {
            assert_eq!(vma_to_entry_pgoff(entry_mmap_offset(key) >> shift), key);
        }
        // The kernel reads no bits above 24 of the page offset.
        assert_eq!(vma_to_entry_pgoff((1 << 30) | 0x900), MIN_ENTRY_PGOFF);
        let page = DynUar::new(0x10).unwrap();
        assert!(page.source(uverbs_drivers::sys::page_size()).is_ok());
        assert!(page.source(2 * uverbs_drivers::sys::page_size()).is_err());
    }

    #[test]
    fn allocation_follows_the_kernel() {
        let fd = create_memfd().unwrap();
        let mut u = Uars::new(fd.as_fd(), 16, 1, 4, 2).unwrap();
        assert_eq!(u.pages(), 8);
        // High class: 12..16 (user numbering 24, 25, 28, 29), one QP each.
        let hi: Vec<u32> = (0..4).map(|_| u.alloc()).collect();
        assert_eq!(hi, [12, 13, 14, 15]);
        assert_eq!(
            hi.iter().map(|&b| Uars::user_index(b)).collect::<Vec<_>>(),
            [24, 25, 28, 29]
        );
        // Medium class: 1..12, least used first.
        let med: Vec<u32> = (0..12).map(|_| u.alloc()).collect();
        assert_eq!(med, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1]);
        u.free(13);
        assert_eq!(u.alloc(), 13);
        let base = u.cq_uar();
        assert_eq!(u.reg_addr(0, 512), base + 0x800);
        assert_eq!(u.reg_addr(29, 512), base + 7 * 4096 + 0x800 + 512);
        assert!(u.map_page(&fd, 7, uverbs_drivers::sys::page_size()).is_ok());
        assert!(u
            .map_page(&fd, 8, uverbs_drivers::sys::page_size())
            .is_err());
        assert!(u
            .map_page(&fd, 0, 2 * uverbs_drivers::sys::page_size())
            .is_err());
        // Version 0: only the doorbell register.
        let fd = create_memfd().unwrap();
        let mut u = Uars::new(fd.as_fd(), 4, 1, 0, 0).unwrap();
        assert_eq!((u.alloc(), u.alloc()), (0, 0));
    }
}
