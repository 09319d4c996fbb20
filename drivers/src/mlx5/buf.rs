//! Memory the device reads and writes by DMA: page-aligned buffers for the work queues and CQs
//! ([`DmaBuf`]), and doorbell records carved out of shared pages ([`DbrecPool`], [`Dbrec`]).
//!
//! mlx5 queues live in user memory: the driver allocates it and names it by address in the create
//! command's driver data; the kernel pins the pages and hands their DMA addresses to the device.
//! So every buffer here must stay mapped until the kernel object that uses it is destroyed: the
//! backend's objects own their buffers and destroy the kernel object first (in `Drop`), and a
//! [`Dbrec`] keeps its page alive.
//!
//! Nothing here gives out references to the memory: the device (or, with the model, another thread)
//! accesses it concurrently, so the owners access it through raw pointers, with atomics where the
//! conventions say (doorbell records: release stores).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use nix::errno::Errno;
use zerocopy::byteorder::big_endian::U32;

use super::doorbell::DoorbellRecordWriter;
use crate::error::{Error, Result, Verb};

/// A zeroed, page-aligned anonymous mapping (rdma-core's `mlx5_alloc_buf`), not inherited by child
/// processes, unmapped on drop.
#[derive(Debug)]
pub struct DmaBuf {
    map: memmap2::MmapRaw,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; it hands out only raw pointers and its
// address, and the users synchronise their accesses (locks, and atomics with the device).
unsafe impl Send for DmaBuf {}
// SAFETY: as above: `&DmaBuf` gives no access to the memory by itself.
unsafe impl Sync for DmaBuf {}

impl DmaBuf {
    /// A buffer of at least `len` bytes (rounded up to whole pages; at least one page), zeroed.
    /// A failure is an error of `verb`.
    pub fn new(len: usize, verb: Verb) -> Result<DmaBuf> {
        crate::spin::assert_none_held("mmap of a device buffer");
        let page = crate::sys::page_size();
        let len =
            len.max(1)
                .checked_next_multiple_of(page)
                .ok_or_else(|| Error::InvalidArgument {
                    verb,
                    what: format!("a buffer of {len} bytes (more than the address space)"),
                })?;
        let map = memmap2::MmapOptions::new()
            .len(len)
            .map_anon()
            .map_err(|e| {
                Error::kernel(
                    verb,
                    Errno::from_raw(e.raw_os_error().unwrap_or(libc::ENOMEM)),
                )
            })?;
        let map = memmap2::MmapRaw::from(map);
        // A child process must not get these pages: copy-on-write would move the parent's copy away
        // from what the device was given (rdma-core's `ibv_dontfork_range`).
        map.advise(memmap2::Advice::DontFork).map_err(|e| {
            Error::kernel(
                verb,
                Errno::from_raw(e.raw_os_error().unwrap_or(libc::EINVAL)),
            )
        })?;
        let ptr = NonNull::new(map.as_mut_ptr()).ok_or_else(|| Error::Protocol {
            verb,
            what: "a null anonymous mapping".into(),
        })?;
        Ok(DmaBuf { map, ptr, len })
    }

    /// The start of the buffer.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Its address, as the driver data names it.
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Its length in bytes (whole pages).
    pub fn len(&self) -> usize {
        debug_assert_eq!(self.len, self.map.len());
        self.len
    }

    /// Always false: a buffer has at least one page.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The size of a doorbell record slot when the kernel reports no cache line size.
const DEFAULT_RECORD_SIZE: usize = 64;

/// One page of doorbell records.
#[derive(Debug)]
struct DbPage {
    buf: Arc<DmaBuf>,
    /// One bit per record; set: free.
    free: Vec<u64>,
    used: usize,
}

/// Doorbell records for one context: pages carved into cache-line-sized records (rdma-core's
/// `dbrec.c`), so that records of different queues never share a cache line. A page is released
/// when its last record is.
#[derive(Debug)]
pub struct DbrecPool {
    record_size: usize,
    per_page: usize,
    pages: Mutex<Vec<DbPage>>,
}

impl DbrecPool {
    /// A pool of records of `cache_line_size` bytes (the context's `cache_line_size`; 64 when the
    /// kernel reports none, at least 8: a record holds two 32-bit words).
    pub fn new(cache_line_size: u32) -> Arc<DbrecPool> {
        let page = crate::sys::page_size();
        let size = match cache_line_size as usize {
            0 => DEFAULT_RECORD_SIZE,
            n => n.next_power_of_two().clamp(8, page),
        };
        Arc::new(DbrecPool {
            record_size: size,
            per_page: page / size,
            pages: Mutex::new(Vec::new()),
        })
    }

    /// The size of one record's slot.
    pub fn record_size(&self) -> usize {
        self.record_size
    }

    /// A record with both words zero.
    pub fn alloc(self: &Arc<Self>) -> Result<Dbrec> {
        let mut pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
        let at = match pages.iter().position(|p| p.used < self.per_page) {
            Some(i) => i,
            None => {
                let buf = Arc::new(DmaBuf::new(crate::sys::page_size(), Verb::Mmap)?);
                let words = self.per_page.div_ceil(64);
                let mut free = vec![u64::MAX; words];
                if self.per_page % 64 != 0 {
                    free[words - 1] = (1u64 << (self.per_page % 64)) - 1;
                }
                pages.push(DbPage { buf, free, used: 0 });
                pages.len() - 1
            }
        };
        let page = &mut pages[at];
        let (word, bits) = page
            .free
            .iter()
            .enumerate()
            .find(|(_, &bits)| bits != 0)
            .map(|(w, &bits)| (w, bits))
            .expect("a page with a free record has a set bit");
        let bit = bits.trailing_zeros() as usize;
        page.free[word] &= !(1u64 << bit);
        page.used += 1;
        let rec = Dbrec {
            pool: Arc::clone(self),
            page: Arc::clone(&page.buf),
            offset: (word * 64 + bit) * self.record_size,
        };
        rec.store(0, U32::ZERO);
        rec.store(1, U32::ZERO);
        Ok(rec)
    }

    /// Records in use, over all pages (for tests).
    pub fn in_use(&self) -> usize {
        let pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
        pages.iter().map(|p| p.used).sum()
    }

    /// Pages held (for tests).
    pub fn pages(&self) -> usize {
        self.pages.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn free(&self, page: &Arc<DmaBuf>, offset: usize) {
        let mut pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
        let Some(at) = pages.iter().position(|p| Arc::ptr_eq(&p.buf, page)) else {
            return;
        };
        let index = offset / self.record_size;
        let p = &mut pages[at];
        p.free[index / 64] |= 1u64 << (index % 64);
        p.used -= 1;
        if p.used == 0 {
            // The records' memory goes when the last `Dbrec` of the page drops (this one).
            pages.swap_remove(at);
        }
    }
}

/// A doorbell record: two big-endian 32-bit words in memory the device reads (`__be32 *db`). The
/// words are stored with atomic release stores (conventions: the doorbell record publishes what was
/// written before it). Freed back to its pool on drop; drop it only after the kernel object that
/// names it is destroyed.
#[derive(Debug)]
pub struct Dbrec {
    pool: Arc<DbrecPool>,
    page: Arc<DmaBuf>,
    offset: usize,
}

impl Dbrec {
    /// The record's address, as the driver data names it.
    pub fn addr(&self) -> u64 {
        self.page.addr() + self.offset as u64
    }

    /// Word `index` (0 or 1) as an atomic.
    #[inline]
    pub fn word(&self, index: usize) -> &AtomicU32 {
        assert!(index < 2, "a doorbell record has two words");
        // SAFETY: the record lies inside its page (offset + 8 <= page size, record_size >= 8), is
        // aligned to its record size (at least 8), and the page lives as long as `self`. The device
        // (or the model) accesses the words only atomically, as the conventions say.
        unsafe { AtomicU32::from_ptr(self.page.as_ptr().add(self.offset + 4 * index).cast()) }
    }

    /// Stores `value` (big-endian) into word `index` with release ordering.
    #[inline]
    pub fn store(&self, index: usize, value: U32) {
        self.word(index)
            .store(u32::from_ne_bytes(value.to_bytes()), Ordering::Release);
    }

    /// Loads word `index` (big-endian).
    #[inline]
    pub fn load(&self, index: usize) -> U32 {
        U32::from_bytes(self.word(index).load(Ordering::Acquire).to_ne_bytes())
    }
}

impl DoorbellRecordWriter for &Dbrec {
    #[inline]
    fn store(&mut self, index: usize, value: U32) {
        Dbrec::store(self, index, value);
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        // `munmap(2)` follows (the mapping's own drop): never under a lock of the data path.
        crate::spin::assert_none_held("munmap of a device buffer");
    }
}

impl Drop for Dbrec {
    fn drop(&mut self) {
        self.pool.free(&self.page, self.offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf: madvise(2) is not supported by Miri")]
    fn buffers_are_page_aligned_zeroed_whole_pages() {
        let page = crate::sys::page_size();
        let b = DmaBuf::new(100, Verb::CreateCq).unwrap();
        assert_eq!(b.addr() % page as u64, 0);
        assert_eq!(b.len(), page);
        // SAFETY: the buffer is `len` bytes, ours alone.
        let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        assert!(bytes.iter().all(|&x| x == 0));
        assert_eq!(
            DmaBuf::new(page + 1, Verb::CreateCq).unwrap().len(),
            2 * page
        );
        assert_eq!(DmaBuf::new(0, Verb::CreateCq).unwrap().len(), page);
    }

    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf: madvise(2) is not supported by Miri")]
    fn records_are_distinct_cache_lines_and_pages_are_reused_and_released() {
        let page = crate::sys::page_size();
        let pool = DbrecPool::new(64);
        assert_eq!(pool.record_size(), 64);
        let per_page = page / 64;
        let recs: Vec<Dbrec> = (0..per_page + 3).map(|_| pool.alloc().unwrap()).collect();
        let addrs: HashSet<u64> = recs.iter().map(Dbrec::addr).collect();
        assert_eq!(addrs.len(), recs.len());
        assert!(addrs.iter().all(|a| a % 64 == 0));
        assert_eq!(pool.pages(), 2);
        assert_eq!(pool.in_use(), per_page + 3);
        // The first page's records are in one page.
        let first = recs[0].addr() & !(page as u64 - 1);
        assert!(recs[..per_page]
            .iter()
            .all(|r| r.addr() & !(page as u64 - 1) == first));
        // A freed record is handed out again, zeroed.
        let mut recs = recs;
        recs[5].store(1, U32::new(0x1234));
        assert_eq!(recs[5].load(1).get(), 0x1234);
        let freed = recs.remove(5).addr();
        let again = pool.alloc().unwrap();
        assert_eq!(again.addr(), freed);
        assert_eq!((again.load(0).get(), again.load(1).get()), (0, 0));
        drop(again);
        // Dropping the second page's records releases it.
        recs.truncate(per_page - 1);
        assert_eq!(pool.pages(), 1);
        drop(recs);
        assert_eq!((pool.pages(), pool.in_use()), (0, 0));
    }

    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf: madvise(2) is not supported by Miri")]
    fn record_words_are_big_endian_in_memory() {
        let pool = DbrecPool::new(0);
        assert_eq!(pool.record_size(), 64);
        let r = pool.alloc().unwrap();
        let mut w = &r;
        DoorbellRecordWriter::store(&mut w, 1, U32::new(0x0102_0304));
        // SAFETY: the record's 8 bytes lie in its page, which `r` keeps alive; nothing else writes
        // them now.
        let bytes = unsafe { std::ptr::read(r.page.as_ptr().add(r.offset).cast::<[u8; 8]>()) };
        assert_eq!(bytes, [0, 0, 0, 0, 1, 2, 3, 4]);
        assert_eq!(DbrecPool::new(4).record_size(), 8);
    }
}
