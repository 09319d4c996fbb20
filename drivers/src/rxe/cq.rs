//! rxe completion queues: the kernel writes `struct ib_uverbs_wc` records into a shared ring and we
//! read them without a system call.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::queue::Queue;
use super::rings::RingHistory;
use crate::backend::{CqBackend, CqInit};
use crate::cmd;
use crate::error::{Result, Verb};
use crate::ucontext::Ucontext;
use crate::wc::WorkCompletion;

/// An rxe completion queue.
///
/// `RESIZE_CQ` gives it a new ring (the kernel copies the waiting completions over), so the ring
/// is reached through a `RingHistory` (`rxe::rings`). A poller may have loaded the old ring just before a
/// resize and still look at its indices in its lock-free emptiness check, so a replaced ring stays
/// mapped until the CQ is destroyed (the kernel no longer writes it): each resize keeps one more
/// mapping, which `resize`'s callers are told.
#[derive(Debug)]
pub struct RxeCq {
    ctx: Arc<Ucontext>,
    handle: u32,
    entries: AtomicU32,
    /// Every ring the CQ has had, the current one last; its lock serialises consumers (the
    /// consumer index is ours alone, and two pollers must not hand out the same completion).
    rings: RingHistory<Queue>,
}

impl RxeCq {
    /// Creates a CQ with room for at least `init.cqe` completions and maps its ring.
    pub fn create(ctx: &Arc<Ucontext>, init: &CqInit<'_>) -> Result<RxeCq> {
        let mut resp = uapi::rxe_create_cq_resp::new_zeroed();
        let (handle, entries) = cmd::create_cq(
            ctx,
            init.cqe,
            init.user_handle,
            init.comp_vector,
            init.channel,
            init.flags,
            resp.as_mut_bytes(),
        )?;
        let wc_size = std::mem::size_of::<uapi::ib_uverbs_wc>();
        let queue = match Queue::map(ctx.channel(), &resp.mi, wc_size, Verb::CreateCq) {
            Ok(q) => q,
            Err(e) => {
                // Best effort: the mapping failed, so the CQ is unusable; the error that matters is e.
                // SAFETY: the object was made just above and is handed to no one; its handle is not
                // named again.
                let _ = unsafe { cmd::destroy_cq(ctx, handle) };
                return Err(e);
            }
        };
        let entries = entries.min(queue.capacity());
        Ok(RxeCq {
            ctx: Arc::clone(ctx),
            handle,
            entries: AtomicU32::new(entries),
            rings: RingHistory::new(queue),
        })
    }

    /// The ring the kernel fills now.
    #[inline]
    fn queue(&self) -> &Queue {
        self.rings.current()
    }

    /// How many completions are waiting.
    pub fn pending(&self) -> u32 {
        let q = self.queue();
        q.distance(q.own_consumer(), q.load_producer())
    }
}

impl CqBackend for RxeCq {
    fn handle(&self) -> u32 {
        self.handle
    }

    fn ucontext(&self) -> &Arc<Ucontext> {
        &self.ctx
    }

    fn entries(&self) -> u32 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Takes up to `out.len()` completions, oldest first; returns how many.
    ///
    /// No system call: the producer index is loaded with acquire ordering, the records are copied out,
    /// and the consumer index is published with release ordering once for the batch.
    #[inline]
    fn poll<C: From<WorkCompletion>>(&self, out: &mut [C]) -> Result<usize> {
        let q = self.queue();
        // Nothing waiting: return without taking the lock (the common case of a poller spinning on
        // an empty queue). The consumer index is loaded first: it never passes the producer index,
        // so if it equals the producer index loaded after it, the queue was empty in between (with
        // other pollers taking completions meanwhile, this poll may also see nothing where they
        // took everything, as it might have with the lock).
        if q.own_consumer() == q.load_producer() {
            return Ok(0);
        }
        // A resize may have replaced the ring since the check; while one is under way the queue
        // is empty to pollers.
        let Some((_guard, q)) = self.rings.lock() else {
            return Ok(0);
        };
        let producer = q.load_producer();
        let mut consumer = q.own_consumer();
        let mut n = 0;
        while n < out.len() && consumer != producer {
            let mut wc = uapi::ib_uverbs_wc::new_zeroed();
            let bytes = wc.as_mut_bytes();
            // SAFETY: the slot lies in the mapping and holds at least size_of::<ib_uverbs_wc>()
            // bytes
            // (checked when mapping); the kernel finished writing it before it published a producer
            // index past it (acquire load above), and does not touch it again until we publish our
            // consumer index past it.
            unsafe {
                std::ptr::copy_nonoverlapping(q.slot(consumer), bytes.as_mut_ptr(), bytes.len())
            };
            out[n] = C::from(WorkCompletion::from_kernel(&wc));
            consumer = q.next(consumer);
            n += 1;
        }
        if n > 0 {
            q.publish_consumer(consumer);
        }
        Ok(n)
    }

    /// `REQ_NOTIFY_CQ`: rxe arms its CQs in the kernel, so this is a system call.
    fn req_notify(&self, solicited_only: bool) -> Result<()> {
        cmd::req_notify_cq(&self.ctx, self.handle, solicited_only)
    }

    /// `RESIZE_CQ`: the kernel allocates a ring of at least `cqe` entries, copies the waiting
    /// completions into it and hands it out to map; returns its capacity. Serialised with pollers.
    /// The old ring stays mapped until the CQ is destroyed (see [`RxeCq`]).
    fn resize(&self, cqe: u32) -> Result<u32> {
        let mut granted = 0;
        // The system calls are made with no poller lock held; pollers find the queue empty
        // meanwhile (the kernel is moving its completions), and resizes are serialised.
        let queue = self.rings.replace(|_| {
            let mut resp = uapi::rxe_resize_cq_resp::new_zeroed();
            // SAFETY: no driver request: the command names no memory of ours but `resp`.
            granted =
                unsafe { cmd::resize_cq(&self.ctx, self.handle, cqe, &[], resp.as_mut_bytes()) }?;
            let wc_size = std::mem::size_of::<uapi::ib_uverbs_wc>();
            // If this fails, the kernel fills a ring we could not map and this CQ completes
            // nothing more; the error says why.
            Queue::map(self.ctx.channel(), &resp.mi, wc_size, Verb::ResizeCq)
        })?;
        let entries = granted.min(queue.capacity());
        self.entries.store(entries, Ordering::Relaxed);
        Ok(entries)
    }

    /// rxe has no moderation: the kernel answers `EOPNOTSUPP`, [`crate::Error::Unsupported`].
    fn moderate(&self, count: u16, period_us: u16) -> Result<()> {
        cmd::modify_cq(&self.ctx, self.handle, count, period_us)
    }
}

impl Drop for RxeCq {
    fn drop(&mut self) {
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::destroy_cq(&self.ctx, self.handle) } {
            crate::report_drop_error("completion queue", &e);
        }
    }
}

/// Reads a completion record from raw bytes (for tests and tools).
pub fn wc_from_bytes(bytes: &[u8]) -> Option<uapi::ib_uverbs_wc> {
    uapi::ib_uverbs_wc::read_from_prefix(bytes)
        .ok()
        .map(|(wc, _)| wc)
}
