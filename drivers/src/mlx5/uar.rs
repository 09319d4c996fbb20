//! The context's UAR pages: the device registers that doorbells and BlueFlame writes go to.
//!
//! The backend asks `GET_CONTEXT` for static BlueFlame registers (no dynamic UARs), so the kernel
//! reserves `tot_bfregs` registers for the context, two per 4 KiB UAR that queue pairs may use, and
//! the driver maps the UAR pages with mmap command `MLX5_IB_MMAP_REGULAR_PAGE` (write-combining):
//! page `i` at offset `((0 << 8) | i) * page_size`, one system page each (rdma-core's
//! `mlx5_init_context` / `mlx5_mmap`). A system page holds `num_uars_per_page` UARs 4 KiB apart;
//! each UAR has four BlueFlame registers at `0x800 + k * bf_reg_size`, and register `k` of UAR `j`
//! of page `i` is bfreg `(i * num_uars_per_page + j) * 4 + k`, the numbering of the `bfreg_index`
//! that `CREATE_QP` returns. Register 0 is doorbell-only (no BlueFlame copies); every other one has
//! two halves of `bf_reg_size / 2` bytes that consecutive doorbells alternate between, which is why
//! each register's state ([`BlueFlameReg`]) sits behind a lock: queue pairs may share a register.
//! CQs are armed through UAR page 0 (`+ 0x20`, `MLX5_CQ_DOORBELL`).
//!
//! All stores to these pages are MMIO: volatile 64-bit stores ([`MmioWriter`]).

use std::ptr::NonNull;

use uverbs_uapi as uapi;

use super::doorbell::{BlueFlameReg, UarWriter, BF_OFFSET};
use crate::chan::Channel;
use crate::error::{Error, Result, Verb};
use crate::spin::SpinMutex;

/// The device's UAR granule (`MLX5_ADAPTER_PAGE_SIZE`): UARs inside a system page are this far apart.
pub const ADAPTER_PAGE_SIZE: usize = 4096;
/// BlueFlame registers per UAR (`NUM_BFREGS_PER_UAR`).
pub const BFREGS_PER_UAR: usize = 4;
/// Of those, the ones the kernel hands to queue pairs (`MLX5_NON_FP_BFREGS_PER_UAR`).
pub const NON_FP_BFREGS_PER_UAR: usize = 2;

/// The mmap offset of UAR page `index` with command `cmd` (rdma-core's `get_uar_mmap_offset`:
/// `(cmd << 8) | (index & 0xff) | ((index >> 8) << 16)` pages).
pub fn uar_mmap_offset(cmd: u32, index: u32, page_size: usize) -> u64 {
    let pgoff = (u64::from(cmd) << 8) | u64::from(index & 0xff) | (u64::from(index >> 8) << 16);
    pgoff * page_size as u64
}

/// Where UARs sit, from the `GET_CONTEXT` response (rdma-core's `adjust_uar_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UarLayout {
    /// System pages to map.
    pub pages: usize,
    /// UARs per system page.
    pub uars_per_page: usize,
    /// The size of one BlueFlame register (both halves).
    pub bf_reg_size: usize,
    /// The system page size.
    pub page_size: usize,
}

impl UarLayout {
    /// The layout the kernel's answer describes, on a system with `page_size` pages.
    pub fn new(resp: &uapi::mlx5_ib_alloc_ucontext_resp, page_size: usize) -> Result<UarLayout> {
        let bad = |what: String| Error::Protocol {
            verb: Verb::GetContext,
            what,
        };
        // An old kernel reports neither: one UAR per page.
        let uars_per_page = match (resp.log_uar_size, resp.num_uars_per_page) {
            (0, 0) => 1,
            (_, n) => n as usize,
        };
        let bf_reg_size = resp.bf_reg_size as usize;
        if resp.tot_bfregs == 0 {
            return Err(bad(
                "no static BlueFlame registers (dynamic UARs were not asked for)".into(),
            ));
        }
        let pages = match uars_per_page {
            0 => 0,
            n => (resp.tot_bfregs as usize).div_ceil(n * NON_FP_BFREGS_PER_UAR),
        };
        let layout = UarLayout {
            pages,
            uars_per_page,
            bf_reg_size,
            page_size,
        };
        layout.check().map_err(|e| match e {
            Error::InvalidArgument { what, .. } => bad(what),
            e => e,
        })?;
        Ok(layout)
    }

    /// Whether the layout is one registers can be placed by: at least one page of at least one
    /// UAR, the UARs inside the page, the BlueFlame registers (64-byte multiples) inside their
    /// UAR, and a register count that fits a `u32`. [`Uars::map`] checks it, since the fields are
    /// public (F33: a layout made by hand put registers megabytes past the mapping).
    pub fn check(&self) -> Result<()> {
        let fits = self.pages >= 1
            && self.uars_per_page >= 1
            && self
                .uars_per_page
                .checked_mul(ADAPTER_PAGE_SIZE)
                .is_some_and(|b| b <= self.page_size)
            && self
                .bf_reg_size
                .checked_mul(BFREGS_PER_UAR)
                .and_then(|b| b.checked_add(BF_OFFSET))
                .is_some_and(|b| b <= ADAPTER_PAGE_SIZE)
            && self.bf_reg_size % 64 == 0
            && self
                .pages
                .checked_mul(self.uars_per_page)
                .and_then(|u| u.checked_mul(BFREGS_PER_UAR))
                .is_some_and(|n| u32::try_from(n).is_ok());
        if fits {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                verb: Verb::Mmap,
                what: format!(
                    "{} pages of {} UARs per {}-byte page with BlueFlame registers of {} bytes",
                    self.pages, self.uars_per_page, self.page_size, self.bf_reg_size
                ),
            })
        }
    }

    /// BlueFlame registers in all (counting the fast-path ones the kernel keeps).
    pub fn bfregs(&self) -> usize {
        self.pages * self.uars_per_page * BFREGS_PER_UAR
    }

    /// (page, byte offset in it) of bfreg `index`.
    pub fn bfreg_location(&self, index: usize) -> (usize, usize) {
        let uar = index / BFREGS_PER_UAR;
        let k = index % BFREGS_PER_UAR;
        (
            uar / self.uars_per_page,
            (uar % self.uars_per_page) * ADAPTER_PAGE_SIZE + BF_OFFSET + k * self.bf_reg_size,
        )
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_range(offset: usize, len: usize, range: usize) -> ! {
    panic!("an MMIO store of {len} bytes at {offset:#x} outside {range:#x} bytes")
}

/// Volatile 64-bit stores into a range of a mapped UAR page: what [`UarWriter`] means on the device.
#[derive(Debug)]
pub struct MmioWriter {
    base: NonNull<u8>,
    len: usize,
}

impl MmioWriter {
    /// A writer for the `len` bytes at `base`.
    ///
    /// # Safety
    /// `base..base + len` must be mapped device (or model) memory that stays mapped while the writer
    /// is used, 8-byte aligned; the caller serialises writers of the same BlueFlame half.
    pub unsafe fn new(base: NonNull<u8>, len: usize) -> MmioWriter {
        MmioWriter { base, len }
    }

    #[inline]
    fn at(&self, offset: usize, len: usize) -> *mut u64 {
        if offset % 8 != 0 || offset + len > self.len {
            out_of_range(offset, len, self.len);
        }
        // SAFETY: in bounds (checked above) of the range `new`'s contract says is mapped.
        unsafe { self.base.as_ptr().add(offset).cast() }
    }
}

impl UarWriter for MmioWriter {
    #[inline]
    fn write64_be(&mut self, offset: usize, value: [u8; 8]) {
        let p = self.at(offset, 8);
        // SAFETY: `p` is 8-byte aligned and inside the mapped register range (`at`); a volatile
        // store is how MMIO is written (the model reads it with volatile loads).
        unsafe { p.write_volatile(u64::from_ne_bytes(value)) };
    }

    #[inline]
    fn write_block64(&mut self, offset: usize, block: &[u8; 64]) {
        self.write_blocks64(offset, block);
    }

    #[inline]
    fn write_blocks64(&mut self, offset: usize, blocks: &[u8]) {
        // One range check for the whole copy (a BlueFlame copy is one to four blocks).
        let p = self.at(offset, blocks.len());
        for (i, block) in blocks.chunks_exact(64).enumerate() {
            // SAFETY: the 64 bytes at `p + 8 * i` lie in the range `at` checked.
            unsafe { store_block64(p.add(8 * i), block) };
        }
    }
}

/// Stores 64 bytes at `dst`, in ascending order: four 16-byte stores where SSE2 is (every x86-64;
/// `dst` is then 16-byte aligned or the copy takes 64-bit stores), eight 64-bit stores elsewhere.
///
/// # Safety
/// `dst` must be valid for 64 bytes of volatile writes and 8-byte aligned.
#[inline(always)]
unsafe fn store_block64(dst: *mut u64, block: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if dst as usize % 16 == 0 {
        use core::arch::x86_64::__m128i;
        let dst = dst.cast::<__m128i>();
        for i in 0..4 {
            // SAFETY: 16 bytes of `block` (64 long: `chunks_exact`), read unaligned; the store is
            // inside the 64 bytes at `dst`, which the caller vouches for, and 16-byte aligned.
            unsafe {
                let v = block.as_ptr().cast::<__m128i>().add(i).read_unaligned();
                dst.add(i).write_volatile(v);
            }
        }
        return;
    }
    for i in 0..8 {
        let word = u64::from_ne_bytes(block[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        // SAFETY: `dst + i` for i < 8 lies in the 64 bytes the caller vouches for, 8-byte aligned;
        // ascending 64-bit volatile stores are `mmio_memcpy_x64`.
        unsafe { dst.add(i).write_volatile(word) };
    }
}

/// One BlueFlame register and its state.
#[derive(Debug)]
pub struct BfReg {
    /// Its index (the `bfreg_index` of `CREATE_QP`).
    pub index: u32,
    reg: NonNull<u8>,
    /// Which half is next, whether BlueFlame copies are allowed; locked around each doorbell.
    pub state: SpinMutex<BlueFlameReg>,
}

impl BfReg {
    /// A writer for the register's two halves (`bf_reg_size` bytes; the doorbell-only register 0
    /// takes 8-byte doorbells at offset 0).
    ///
    /// # Safety
    /// A store through the writer is a post: a doorbell makes the device fetch and execute the
    /// work requests of a queue pair, and a BlueFlame copy *is* a work request, whose scatter
    /// entries the device then reads or writes. So the caller must
    ///
    /// * pass the `bf_reg_size` of the [`UarLayout`] of the [`Uars`] this register belongs to (the
    ///   writer's bounds; a larger size would let stores leave the mapped page);
    /// * hold the register's `state` lock while the writer is used, and not use the writer after
    ///   the `Uars` is dropped;
    /// * write only doorbells and WQEs of a queue pair it owns, for work requests whose memory
    ///   keeps the post contract (valid, and not referenced in conflicting ways, until their
    ///   completion is polled).
    #[inline]
    pub unsafe fn writer(&self, bf_reg_size: usize) -> MmioWriter {
        // SAFETY: the register's `bf_reg_size` bytes (the layout's, by this function's contract)
        // lie in a UAR page `Uars` mapped and keeps mapped while the writer is used (contract); the
        // register is 8-byte aligned (0x800 + a multiple of 64 into a page); writers of one
        // register hold its `state` lock (contract).
        unsafe { MmioWriter::new(self.reg, bf_reg_size) }
    }
}

/// The mapped UAR pages of a context and their BlueFlame registers.
#[derive(Debug)]
pub struct Uars {
    layout: UarLayout,
    pages: Vec<memmap2::MmapRaw>,
    bfregs: Box<[BfReg]>,
}

// SAFETY: the pages are device memory mapped for the life of this value; the register pointers
// point into them, and every store through them goes through an `MmioWriter` under the register's
// lock (BlueFlame halves) or is a single 64-bit store (doorbells).
unsafe impl Send for Uars {}
// SAFETY: as above.
unsafe impl Sync for Uars {}

impl Uars {
    /// Maps the static UAR pages `layout` describes (`MLX5_IB_MMAP_REGULAR_PAGE`).
    pub fn map(chan: &Channel, layout: UarLayout) -> Result<Uars> {
        layout.check()?;
        let mut pages = Vec::with_capacity(layout.pages);
        for i in 0..layout.pages {
            let offset =
                uar_mmap_offset(uapi::MLX5_IB_MMAP_REGULAR_PAGE, i as u32, layout.page_size);
            let map = chan.map(layout.page_size, offset)?;
            if map.len() < layout.page_size || map.as_mut_ptr().is_null() {
                return Err(Error::Protocol {
                    verb: Verb::Mmap,
                    what: format!("UAR page {i}: a mapping of {} bytes", map.len()),
                });
            }
            pages.push(map);
        }
        let bfregs = (0..layout.bfregs())
            .map(|index| {
                let (page, offset) = layout.bfreg_location(index);
                // SAFETY: `bfreg_location` is inside the page: `UarLayout::check` (above) checked
                // that the UARs fit the page and the registers fit their UAR, and each mapping is
                // at least `page_size` bytes (checked as it was made).
                let reg = unsafe { pages[page].as_mut_ptr().add(offset) };
                let state = if index == 0 {
                    BlueFlameReg::doorbell_only()
                } else {
                    BlueFlameReg::new(layout.bf_reg_size)
                };
                BfReg {
                    index: index as u32,
                    reg: NonNull::new(reg).expect("inside a non-null mapping"),
                    state: SpinMutex::new(state),
                }
            })
            .collect();
        Ok(Uars {
            layout,
            pages,
            bfregs,
        })
    }

    /// The layout.
    #[inline]
    pub fn layout(&self) -> &UarLayout {
        &self.layout
    }

    /// BlueFlame register `index`, if it exists.
    #[inline]
    pub fn bfreg(&self, index: u32) -> Option<&BfReg> {
        self.bfregs.get(index as usize)
    }

    /// A writer for the first 4 KiB UAR of page 0, where CQs are armed (`+ 0x20`).
    ///
    /// # Safety
    /// The writer reaches the whole UAR, BlueFlame registers included, so the caller must store
    /// only CQ arm doorbells (`MLX5_CQ_DOORBELL`, single 64-bit stores) for CQs it owns, and not
    /// use the writer after `self` is dropped.
    pub unsafe fn cq_uar(&self) -> MmioWriter {
        let base = NonNull::new(self.pages[0].as_mut_ptr()).expect("checked when mapped");
        // SAFETY: page 0 is mapped while the writer is used (this function's contract) and at
        // least 4 KiB long (a system page); the caller stores only single 64-bit arm doorbells,
        // which need no lock (contract).
        unsafe { MmioWriter::new(base, ADAPTER_PAGE_SIZE) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    fn resp(tot: u32, log_uar: u32, per_page: u32) -> uapi::mlx5_ib_alloc_ucontext_resp {
        let mut r = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
        r.tot_bfregs = tot;
        r.bf_reg_size = 512;
        r.log_uar_size = log_uar;
        r.num_uars_per_page = per_page;
        r
    }

    #[test]
    fn mmap_offsets() {
        assert_eq!(uar_mmap_offset(0, 0, 4096), 0);
        assert_eq!(uar_mmap_offset(0, 7, 4096), 7 * 4096);
        assert_eq!(uar_mmap_offset(3, 1, 4096), ((3 << 8) | 1) * 4096);
        assert_eq!(uar_mmap_offset(0, 0x1ff, 4096), ((1 << 16) | 0xff) * 4096);
    }

    /// F33 (found by review): `UarLayout`'s fields are public and `Uars::map` trusted them, so a
    /// layout made by hand (4096 UARs in one page) put register pointers megabytes past the
    /// mapping, and a writer made by `BfReg::writer`'s contract to the letter stored there. Now
    /// the layout is checked; a sound one still maps.
    #[test]
    #[cfg_attr(miri, ignore = "maps a file")]
    fn a_layout_made_by_hand_is_checked_before_mapping() {
        let page = crate::sys::page_size();
        let file = tempfile_of(4 * page);
        let chan = Channel::from_fd(file, 0);
        let bogus = [
            UarLayout {
                pages: 1,
                uars_per_page: 4096,
                bf_reg_size: 64,
                page_size: page,
            },
            UarLayout {
                pages: 0,
                uars_per_page: 1,
                bf_reg_size: 256,
                page_size: page,
            },
            UarLayout {
                pages: 1,
                uars_per_page: 0,
                bf_reg_size: 256,
                page_size: page,
            },
            UarLayout {
                pages: 1,
                uars_per_page: 1,
                bf_reg_size: 1 << 20,
                page_size: page,
            },
            UarLayout {
                pages: 1,
                uars_per_page: 1,
                bf_reg_size: 100,
                page_size: page,
            },
            UarLayout {
                pages: usize::MAX,
                uars_per_page: 1,
                bf_reg_size: 256,
                page_size: page,
            },
        ];
        for layout in bogus {
            match Uars::map(&chan, layout) {
                Err(Error::InvalidArgument {
                    verb: Verb::Mmap, ..
                }) => {}
                other => panic!("{layout:?}: {:?}", other.map(|u| *u.layout())),
            }
        }
        let fine = UarLayout {
            pages: 1,
            uars_per_page: 1,
            bf_reg_size: 256,
            page_size: page,
        };
        let uars = Uars::map(&chan, fine).unwrap();
        assert_eq!(uars.layout().bfregs(), 4);
    }

    fn tempfile_of(len: usize) -> std::os::fd::OwnedFd {
        let path = std::env::temp_dir().join(format!("uverbs-uar-test-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        f.set_len(len as u64).unwrap();
        f.into()
    }

    #[test]
    fn layout_of_sixteen_static_bfregs() {
        let l = UarLayout::new(&resp(16, 12, 1), 4096).unwrap();
        assert_eq!((l.pages, l.uars_per_page, l.bfregs()), (8, 1, 32));
        assert_eq!(l.bfreg_location(0), (0, 0x800));
        assert_eq!(l.bfreg_location(1), (0, 0xa00));
        assert_eq!(l.bfreg_location(5), (1, 0xa00));
        assert_eq!(l.bfreg_location(31), (7, 0xe00));
        // An old kernel: no UAR geometry, one per page.
        assert_eq!(UarLayout::new(&resp(16, 0, 0), 4096).unwrap().pages, 8);
        // 64 KiB pages with 16 UARs each: one page.
        let big = UarLayout::new(&resp(16, 12, 16), 65536).unwrap();
        assert_eq!((big.pages, big.bfregs()), (1, 64));
        assert_eq!(big.bfreg_location(5), (0, 4096 + 0xa00));
        // Refused: dynamic mode, UARs that do not fit.
        assert!(UarLayout::new(&resp(0, 12, 1), 4096).is_err());
        assert!(UarLayout::new(&resp(16, 12, 2), 4096).is_err());
        let mut r = resp(16, 12, 1);
        r.bf_reg_size = 1024;
        assert!(UarLayout::new(&r, 4096).is_err());
    }

    #[test]
    fn mmio_writer_stores_in_order_and_checks_bounds() {
        let mut mem = vec![0u64; 16];
        let base = NonNull::new(mem.as_mut_ptr().cast::<u8>()).unwrap();
        let block: [u8; 64] = std::array::from_fn(|i| i as u8);
        {
            // SAFETY: `mem` is 128 bytes, 8-aligned, alive and unaliased while `w` is used.
            let mut w = unsafe { MmioWriter::new(base, 128) };
            w.write64_be(8, [1, 2, 3, 4, 5, 6, 7, 8]);
            w.write_block64(64, &block);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                w.write64_be(128, [0; 8]);
            }));
            assert!(r.is_err());
        }
        let bytes: Vec<u8> = mem.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(&bytes[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&bytes[64..128], &block[..]);
        assert!(bytes[..8].iter().chain(&bytes[16..64]).all(|&b| b == 0));
    }
}
