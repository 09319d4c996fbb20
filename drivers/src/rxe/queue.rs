//! The rxe shared queue: a ring the kernel allocates, hands out by mmap, and shares with us live.
//!
//! Layout (`struct rxe_queue_buf`): `log2_elem_size` at 0, `index_mask` at 4, the producer index at
//! 128, the consumer index at 256 (each on its own cache line), slot `i` at `384 + (i << log2)`.
//! Indices are kept masked; the ring is empty when they are equal and full when the producer is one
//! behind the consumer, so it holds `index_mask` elements.
//!
//! Ownership of the indices: on the send, receive and shared-receive queues we produce and the kernel
//! consumes; on completion queues the kernel produces and we consume. Each side loads the other's
//! index with acquire ordering (so the slots it published are visible) and publishes its own with
//! release ordering (so the slots it wrote or finished reading are), as the kernel's `rxe_queue.h`
//! does on its side.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use uverbs_uapi as uapi;

use crate::chan::Channel;
use crate::error::{Error, Result, Verb};

/// Offset of the slots from the start of the buffer.
pub const DATA_OFFSET: usize = std::mem::size_of::<uapi::rxe_queue_buf>();
const PRODUCER_OFFSET: usize = std::mem::offset_of!(uapi::rxe_queue_buf, producer_index);
const CONSUMER_OFFSET: usize = std::mem::offset_of!(uapi::rxe_queue_buf, consumer_index);

/// The lock of one side of a ring (its posters, or its pollers): it guards the ring's slots and
/// our index, which are reached through raw pointers, so it holds no data of its own.
pub type RingLock = crate::spin::SpinMutex<()>;

/// A mapped rxe queue.
#[derive(Debug)]
pub struct Queue {
    map: memmap2::MmapRaw,
    base: NonNull<u8>,
    mask: u32,
    log2_elem: u32,
}

// SAFETY: the mapping is plain shared memory; all access to the indices is atomic and access to the
// slots is coordinated by the index protocol (and, on our side, by the owners' locks).
unsafe impl Send for Queue {}
// SAFETY: as above; `&Queue` only gives out atomics and raw slot pointers.
unsafe impl Sync for Queue {}

impl Queue {
    /// Maps the queue described by `mi` and checks its header: the slot count must be a power of
    /// two, the slots must fit in the mapping, and a slot must hold at least `min_elem` bytes.
    ///
    /// Private to the crate: `mi` must be the mmap information the kernel just returned for an
    /// object of `chan`'s context, not mapped before. Called with another offset, it would take
    /// the pending mapping of a ring the crate is creating (rxe maps each once), or map an mlx5 UAR
    /// page, into which [`Queue::publish_producer`] and [`Queue::publish_consumer`] would store.
    pub(crate) fn map(
        chan: &Channel,
        mi: &uapi::mminfo,
        min_elem: usize,
        verb: Verb,
    ) -> Result<Queue> {
        let len = mi.size as usize;
        let protocol = |what: String| Error::Protocol { verb, what };
        if len < DATA_OFFSET {
            return Err(protocol(format!(
                "queue of {len} bytes is smaller than its header"
            )));
        }
        let map = chan.map(len, mi.offset)?;
        let base = NonNull::new(map.as_mut_ptr()).ok_or_else(|| protocol("null mapping".into()))?;
        // SAFETY: the mapping is at least DATA_OFFSET (384) bytes long and page aligned, so both header
        // words are in bounds and aligned; they are read once, before the queue is used.
        let (log2_elem, mask) = unsafe {
            let words = base.as_ptr().cast::<u32>();
            (words.read_volatile(), words.add(1).read_volatile())
        };
        let slots = u64::from(mask) + 1;
        if !slots.is_power_of_two() || log2_elem >= 16 {
            return Err(protocol(format!(
                "queue header: log2_elem_size {log2_elem}, index_mask {mask:#x}"
            )));
        }
        let elem = 1usize << log2_elem;
        if elem < min_elem {
            return Err(protocol(format!("slots of {elem} bytes, need {min_elem}")));
        }
        if DATA_OFFSET as u64 + (slots << log2_elem) > len as u64 {
            return Err(protocol(format!(
                "{slots} slots of {elem} bytes do not fit in {len} bytes"
            )));
        }
        Ok(Queue {
            map,
            base,
            mask,
            log2_elem,
        })
    }

    /// How many elements the queue holds (one slot always stays empty).
    #[inline]
    pub fn capacity(&self) -> u32 {
        self.mask
    }

    /// The size of one slot in bytes.
    pub fn elem_size(&self) -> usize {
        1 << self.log2_elem
    }

    /// The mapping's length in bytes.
    pub fn mapped_len(&self) -> usize {
        self.map.len()
    }

    #[inline]
    fn index(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: both index words lie inside the header, which `map` checked is in bounds; they are
        // 4-byte aligned (offsets 128 and 256 of a page-aligned mapping) and live as long as `self`.
        // The kernel accesses them only atomically (smp_load_acquire / smp_store_release).
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(offset).cast::<u32>()) }
    }

    /// The producer index, loaded with acquire ordering (we are the consumer: what the producer wrote
    /// before publishing it is visible).
    #[inline]
    pub fn load_producer(&self) -> u32 {
        self.index(PRODUCER_OFFSET).load(Ordering::Acquire) & self.mask
    }

    /// The consumer index, loaded with acquire ordering (we are the producer: the slots the consumer
    /// released are free to overwrite).
    #[inline]
    pub fn load_consumer(&self) -> u32 {
        self.index(CONSUMER_OFFSET).load(Ordering::Acquire) & self.mask
    }

    /// Our own producer index, as last published.
    #[inline]
    pub fn own_producer(&self) -> u32 {
        self.index(PRODUCER_OFFSET).load(Ordering::Relaxed) & self.mask
    }

    /// Our own consumer index, as last published.
    #[inline]
    pub fn own_consumer(&self) -> u32 {
        self.index(CONSUMER_OFFSET).load(Ordering::Relaxed) & self.mask
    }

    /// Publishes a new producer index with release ordering: the slots written before become visible
    /// to the kernel.
    #[inline]
    pub fn publish_producer(&self, index: u32) {
        self.index(PRODUCER_OFFSET)
            .store(index & self.mask, Ordering::Release);
    }

    /// Publishes a new consumer index with release ordering: the slots read before may be reused.
    #[inline]
    pub fn publish_consumer(&self, index: u32) {
        self.index(CONSUMER_OFFSET)
            .store(index & self.mask, Ordering::Release);
    }

    /// The index after `index`.
    #[inline]
    pub fn next(&self, index: u32) -> u32 {
        index.wrapping_add(1) & self.mask
    }

    /// How many elements lie between `from` (inclusive) and `to` (exclusive).
    #[inline]
    pub fn distance(&self, from: u32, to: u32) -> u32 {
        to.wrapping_sub(from) & self.mask
    }

    /// A pointer to slot `index` (masked), valid for `elem_size()` bytes while `self` lives.
    #[inline]
    pub fn slot(&self, index: u32) -> *mut u8 {
        let offset = DATA_OFFSET + (((index & self.mask) as usize) << self.log2_elem);
        // SAFETY: `map` checked that every slot lies inside the mapping, and the index is masked.
        unsafe { self.base.as_ptr().add(offset) }
    }
}

/// Writes receive work requests into a receive ring (a queue pair's RQ or an SRQ) and publishes the
/// producer index once: the body of both posts. The caller serialises producers on `q`. Stops at the
/// first request that finds the ring full or is invalid; those before it are posted, or with `ALL`
/// (a batch) none is.
///
/// # Safety
/// `q` must be a receive ring mapped with room for `max_sge` entries per slot; the device writes each
/// entry's memory until its completion (the callers' contract).
pub(crate) unsafe fn post_recv_wqes<'a, const ALL: bool, W: AsRef<crate::wr::RecvWr<'a>>>(
    q: &Queue,
    max_sge: u32,
    verb: Verb,
    wrs: &[W],
) -> std::result::Result<(), crate::wr::PostError> {
    use crate::wr::{PostError, MAX_MESSAGE};
    use zerocopy::{FromZeros, IntoBytes};
    const RECV_WQE_HEADER: usize = std::mem::size_of::<uapi::rxe_recv_wqe>();
    let mut producer = q.own_producer();
    let mut consumer = q.load_consumer();
    let mut result = Ok(());
    let mut posted = 0;
    for (index, wr) in wrs.iter().enumerate() {
        let wr = wr.as_ref();
        if q.next(producer) == consumer {
            consumer = q.load_consumer();
            if q.next(producer) == consumer {
                let error = Error::QueueFull {
                    verb,
                    capacity: q.capacity(),
                };
                result = Err(PostError { index, error });
                break;
            }
        }
        let bad = |what: String| PostError {
            index,
            error: Error::InvalidArgument { verb, what },
        };
        if wr.sges.len() > max_sge as usize {
            result = Err(bad(format!(
                "{} scatter entries (this queue takes {max_sge})",
                wr.sges.len()
            )));
            break;
        }
        let length: u64 = wr.sges.iter().map(|s| u64::from(s.length)).sum();
        if length > MAX_MESSAGE {
            result = Err(bad(format!(
                "{length} bytes of receive buffers (at most {MAX_MESSAGE})"
            )));
            break;
        }
        let mut wqe = uapi::rxe_recv_wqe::new_zeroed();
        wqe.wr_id = wr.wr_id;
        wqe.dma.length = length as u32;
        wqe.dma.resid = length as u32;
        wqe.dma.num_sge = wr.sges.len() as u32;
        let slot = q.slot(producer);
        let header = wqe.as_bytes();
        let sges = wr.sges.as_bytes();
        // SAFETY: the slot is free (the ring is not full) and ours until the producer index is
        // published; it holds the 40-byte header plus max_sge entries (this function's contract,
        // checked when mapping), and the entry count was checked above.
        unsafe {
            std::ptr::copy_nonoverlapping(header.as_ptr(), slot, header.len());
            std::ptr::copy_nonoverlapping(sges.as_ptr(), slot.add(RECV_WQE_HEADER), sges.len());
        }
        producer = q.next(producer);
        posted += 1;
    }
    if ALL && result.is_err() {
        // All or nothing: the slots written stay free, as nothing was published.
        posted = 0;
    }
    if posted > 0 {
        q.publish_producer(producer);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_offsets() {
        assert_eq!(DATA_OFFSET, 384);
        assert_eq!(PRODUCER_OFFSET, 128);
        assert_eq!(CONSUMER_OFFSET, 256);
    }
}
