//! The hand-off between a send queue's posters and its completion queue's poller: what
//! [`SendQueue`](super::sq::SendQueue) tells the poller about each posted WQE (its `wr_id`, where
//! it starts and how long it is), and what the poller tells the posters back (which WQEs are
//! retired, so their blocks and request slots may be reused).
//!
//! It is a single-producer, single-consumer ring of slots, one per basic block of the send
//! ring, indexed by block (a CQE names a WQE by the counter of the block it starts at,
//! `wqe_counter`). The producer is whoever posts (posters serialise among themselves with the send
//! queue's lock); the consumer is the poller of the queue pair's send CQ (pollers serialise with
//! that CQ's lock). Neither takes the other's lock: they share only atomics. Both indices count
//! blocks, as the device does: `head` is the block counter after the last WQE published, `bb_tail`
//! the one at the start of the oldest WQE not retired (the producer counts the requests between
//! them itself).
//!
//! * The producer writes a WQE's description (where it starts, its size, its opcode) into the
//!   slots of its blocks and its `wr_id` into the first (Relaxed), then publishes `head` with a
//!   Release store. The consumer loads `head` with Acquire before it trusts a slot, so a slot it
//!   accepts (a WQE that starts below that `head`) is read whole, as written: no torn `wr_id`.
//! * The consumer publishes `bb_tail` with a Release store. The producer loads it with Acquire
//!   before it reuses a slot or the blocks of a WQE, so the consumer's reads of the retired slots
//!   (and, through the CQE the consumer acquired, the device's reads of the retired WQEs) happen
//!   before the producer overwrites them.
//! * A slot is trusted only if the WQE it describes starts in `[bb_tail, head)` (outstanding) at
//!   the block the CQE names. Such a slot is not written again until it is retired, which only the
//!   consumer does; every other slot may be being rewritten, which atomics make harmless: a stale
//!   or corrupt `wqe_counter` gets `None`, never another request's `wr_id`.
//!
//! Each side keeps the other's last published value and reloads it only when that does not
//! suffice (the ring looks full to the producer, a slot looks unpublished to the consumer), so
//! in the steady state neither touches the cache line the other writes.
//!
//! `drivers/tests/loom_rings.rs` runs this code (built with `--cfg loom`, its atomics are loom's)
//! with a poster and a poller on two threads, over every interleaving; `docs/soundness.md` ("mlx5
//! send queue hand-off") has the argument for each ordering.

use std::sync::atomic::Ordering;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU32, AtomicU64};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU32, AtomicU64};

/// A completed send WQE: what [`SendHandoff::retire`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retired {
    /// The request's `wr_id`.
    pub wr_id: u64,
    /// The WQE's mlx5 [`opcode`](super::wqe::opcode).
    pub opcode: u8,
}

/// The orderings of the hand-off. Production code uses [`ORDERINGS`]; built with `--cfg loom`,
/// a test may weaken one ([`SendHandoff::set_orderings`]) to show that the model check catches it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Orderings {
    /// The producer's store of `head`, after the slot.
    pub publish_head: Ordering,
    /// The consumer's load of `head`, before the slot.
    pub load_head: Ordering,
    /// The consumer's store of `bb_tail`, after reading the slot.
    pub publish_retired: Ordering,
    /// The producer's load of `bb_tail`, before reusing slots and blocks.
    pub load_retired: Ordering,
}

/// The orderings the production code uses.
#[doc(hidden)]
pub const ORDERINGS: Orderings = Orderings {
    publish_head: Ordering::Release,
    load_head: Ordering::Acquire,
    publish_retired: Ordering::Release,
    load_retired: Ordering::Acquire,
};

/// One cache line: keeps what the producer writes off the line the consumer writes.
#[derive(Debug)]
#[repr(align(64))]
struct CacheLine<T>(T);

/// What the consumer writes.
#[derive(Debug)]
struct Consumer {
    /// The block counter at the start of the oldest WQE not retired.
    bb_tail: AtomicU32,
    /// The consumer's last load of `head` (only the consumer reads or writes it).
    seen_head: AtomicU32,
}

/// The hand-off of one WQE, at the slot of each of its blocks.
#[derive(Debug)]
struct Slot {
    wr_id: AtomicU64,
    /// [`meta`]: the block counter the WQE starts at, its size in blocks and its mlx5 opcode.
    meta: AtomicU64,
}

/// Packs a slot's description of a WQE.
#[inline(always)]
fn meta(start: u32, bbs: u32, opcode: u8) -> u64 {
    u64::from(start) | u64::from(bbs as u8) << 32 | u64::from(opcode) << 40
}

/// The shared half of a send queue: see the [module documentation](self).
#[derive(Debug)]
pub struct SendHandoff {
    /// The block counter after the last WQE published (free running; the producer's only shared
    /// write besides the slots).
    head: CacheLine<AtomicU32>,
    consumer: CacheLine<Consumer>,
    slots: Box<[Slot]>,
    /// Blocks in the ring, less one.
    mask: u32,
    #[cfg(loom)]
    ord: Orderings,
}

impl SendHandoff {
    /// The hand-off of a send ring of `wqe_cnt` basic blocks (a power of two, at most 2^16):
    /// nothing posted or retired.
    pub(crate) fn new(wqe_cnt: u32) -> SendHandoff {
        debug_assert!(wqe_cnt.is_power_of_two() && wqe_cnt <= 1 << 16);
        SendHandoff {
            head: CacheLine(AtomicU32::new(0)),
            consumer: CacheLine(Consumer {
                bb_tail: AtomicU32::new(0),
                seen_head: AtomicU32::new(0),
            }),
            slots: (0..wqe_cnt)
                .map(|_| Slot {
                    wr_id: AtomicU64::new(0),
                    meta: AtomicU64::new(0),
                })
                .collect(),
            mask: wqe_cnt - 1,
            #[cfg(loom)]
            ord: ORDERINGS,
        }
    }

    #[inline(always)]
    fn ord(&self) -> Orderings {
        #[cfg(loom)]
        return self.ord;
        #[cfg(not(loom))]
        ORDERINGS
    }

    /// Replaces the orderings (loom builds only: to show that a weaker one is caught).
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn set_orderings(&mut self, ord: Orderings) {
        self.ord = ord;
    }

    /// Producer: `bb_tail` as the consumer last published it, loaded with acquire ordering: the
    /// slots and blocks before it are free.
    #[inline(always)]
    pub(crate) fn load_retired(&self) -> u32 {
        self.consumer.0.bb_tail.load(self.ord().load_retired)
    }

    /// Producer: hands over a WQE of `bbs` blocks (1 to 16, at most the ring's) from block counter
    /// `start` (`head`, the end of the one before), and publishes it with a release store of
    /// `head`. The blocks must be free (before `bb_tail` plus the ring's size, as last loaded).
    #[cfg(test)]
    pub(crate) fn publish(&self, start: u32, bbs: u32, wr_id: u64, opcode: u8) {
        self.stage(start, bbs, wr_id, opcode);
        self.publish_head(start.wrapping_add(bbs));
    }

    /// Producer: writes the description of a WQE of `bbs` blocks from block counter `start` into
    /// its slots without publishing it: the consumer trusts no slot at or past `head`, so a staged
    /// WQE is invisible until [`publish_head`](Self::publish_head) moves `head` past it, and one
    /// never published is simply written over by the next (every slot a WQE covers is rewritten
    /// before `head` passes it). The blocks must be free, as for [`publish`](Self::publish).
    #[inline(always)]
    pub(crate) fn stage(&self, start: u32, bbs: u32, wr_id: u64, opcode: u8) {
        let m = meta(start, bbs, opcode);
        let slot = &self.slots[(start & self.mask) as usize];
        slot.wr_id.store(wr_id, Ordering::Relaxed);
        slot.meta.store(m, Ordering::Relaxed);
        if bbs > 1 {
            self.mark_inside(start, bbs, m);
        }
    }

    /// Producer: publishes every WQE staged below block counter `head` (release: their slots are
    /// whole before the consumer trusts them).
    #[inline(always)]
    pub(crate) fn publish_head(&self, head: u32) {
        self.head.0.store(head, self.ord().publish_head);
    }

    /// Gives the slots of a WQE's blocks after its first the WQE's description too: a counter
    /// naming such a block is not the WQE's start, so it retires nothing, and every slot is
    /// rewritten on each pass over the ring (none keeps a description from before a reset).
    #[cold]
    fn mark_inside(&self, start: u32, bbs: u32, m: u64) {
        for b in 1..bbs {
            let slot = &self.slots[(start.wrapping_add(b) & self.mask) as usize];
            slot.meta.store(m, Ordering::Relaxed);
        }
    }

    /// Consumer: retires the WQE a completion names by `wqe_counter`, and with it every earlier
    /// one (they completed before it, unsignaled or not), and returns its `wr_id` and opcode.
    /// `None` if no outstanding WQE starts at that counter (a stale or corrupt CQE, or one whose
    /// WQE is not published).
    ///
    /// One consumer at a time: calls of `retire` (and [`reset`](Self::reset)) must not overlap.
    /// Nothing unsound follows if they do (the hand-off is atomics only), but two overlapping
    /// consumers could both retire one request. The backend calls it only under the lock of the
    /// queue pair's send CQ.
    ///
    /// rdma-core: `idx = wqe_ctr & (wqe_cnt - 1); wr_id = wrid[idx]; tail = wqe_head[idx] + 1`.
    #[inline]
    pub fn retire(&self, wqe_counter: u16) -> Option<Retired> {
        let consumer = &self.consumer.0;
        // The consumer's own word: only it (or a reset, ordered before by the CQ's lock) writes it.
        let bb_tail = consumer.bb_tail.load(Ordering::Relaxed);
        let slot = &self.slots[(u32::from(wqe_counter) & self.mask) as usize];
        // Outstanding (between `bb_tail` and `head`) and starting at the block the CQE names.
        let accept = |meta: u64, head: u32| {
            let start = meta as u32;
            (start.wrapping_sub(bb_tail) < head.wrapping_sub(bb_tail))
                & (start as u16 == wqe_counter)
        };
        // `seen_head` was loaded with acquire ordering earlier (by this consumer, or one before it
        // that the CQ's lock orders before this one): the slots of the WQEs before it are whole.
        let mut meta = slot.meta.load(Ordering::Relaxed);
        if !accept(meta, consumer.seen_head.load(Ordering::Relaxed)) {
            let head = self.head.0.load(self.ord().load_head);
            consumer.seen_head.store(head, Ordering::Relaxed);
            // Loaded again after `head`: a slot is trusted only after the load that covers it.
            meta = slot.meta.load(Ordering::Relaxed);
            if !accept(meta, head) {
                return None;
            }
        }
        let wr_id = slot.wr_id.load(Ordering::Relaxed);
        let end = (meta as u32).wrapping_add(u32::from((meta >> 32) as u8));
        consumer.bb_tail.store(end, self.ord().publish_retired);
        Some(Retired {
            wr_id,
            opcode: (meta >> 40) as u8,
        })
    }

    /// Forgets every WQE: `head` and `bb_tail` go to 0, where the producer's block counter starts
    /// over. Both sides' exclusive: the producer's (`&mut SendQueue`, under the send queue's lock)
    /// and the consumer's (the backend holds the send CQ's lock).
    pub(crate) fn reset(&self) {
        self.head.0.store(0, self.ord().publish_head);
        let consumer = &self.consumer.0;
        consumer.seen_head.store(0, Ordering::Relaxed);
        consumer.bb_tail.store(0, self.ord().publish_retired);
    }
}
