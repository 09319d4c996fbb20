//! rxe shared receive queues: one receive ring, shared with the kernel, that the queue pairs created
//! with the SRQ take their receives from (they have no receive ring of their own).
//!
//! Posting writes an `rxe_recv_wqe` and its scatter entries into the ring and publishes the producer
//! index with release ordering: no system call, as for a queue pair's receive ring. The kernel's
//! responder takes a WQE (and advances the consumer index) when a message starts to arrive, and
//! reports `SRQ_LIMIT_REACHED` once, disarming the limit, when fewer than the limit remain posted.

use std::sync::Arc;

use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::queue::{Queue, RingLock};
use crate::backend::SrqBackend;
use crate::cmd;
use crate::cmd::srq::{attr_mask, SrqCreated, SrqInit};
use crate::error::{Error, Result, Verb};
use crate::ucontext::Ucontext;
use crate::wr::{PostError, RecvWr, Sge};

const RECV_WQE_HEADER: usize = std::mem::size_of::<uapi::rxe_recv_wqe>();
const SGE_SIZE: usize = std::mem::size_of::<Sge>();

/// An rxe shared receive queue.
#[derive(Debug)]
pub struct RxeSrq {
    ctx: Arc<Ucontext>,
    created: SrqCreated,
    queue: Queue,
    /// Serialises posters: the producer index is ours alone.
    lock: RingLock,
}

impl RxeSrq {
    /// Creates a shared receive queue and maps its ring.
    pub fn create(ctx: &Arc<Ucontext>, init: &SrqInit) -> Result<RxeSrq> {
        let mut resp = uapi::rxe_create_srq_resp::new_zeroed();
        let mut created = cmd::srq::create_srq(ctx, init, resp.as_mut_bytes())?;
        let queue = match Queue::map(
            ctx.channel(),
            &resp.mi,
            RECV_WQE_HEADER + SGE_SIZE * created.max_sge as usize,
            Verb::CreateSrq,
        ) {
            Ok(q) => q,
            Err(e) => {
                // Best effort: the SRQ is unusable without its ring; the error that matters is e.
                // SAFETY: the object was made just above and is handed to no one; its handle is not
                // named again.
                let _ = unsafe { cmd::srq::destroy_srq(ctx, created.handle) };
                return Err(e);
            }
        };
        // The driver data carries the SRQ number too; the ioctl's own answer may be absent on a
        // kernel that ignores the optional attribute.
        if created.srqn == 0 {
            created.srqn = resp.srq_num;
        }
        Ok(RxeSrq {
            ctx: Arc::clone(ctx),
            created,
            queue,
            lock: RingLock::default(),
        })
    }

    /// How many posted receives the kernel has not taken yet.
    pub fn posted(&self) -> u32 {
        let q = &self.queue;
        q.distance(q.load_consumer(), q.own_producer())
    }
}

impl SrqBackend for RxeSrq {
    fn handle(&self) -> u32 {
        self.created.handle
    }

    fn ucontext(&self) -> &Arc<Ucontext> {
        &self.ctx
    }

    fn srqn(&self) -> u32 {
        self.created.srqn
    }

    /// Receive work requests the ring really holds.
    fn capacity(&self) -> u32 {
        self.queue.capacity()
    }

    fn max_sge(&self) -> u32 {
        self.created.max_sge
    }

    /// Sets the limit (`MODIFY_SRQ` with `IB_SRQ_LIMIT`): once fewer than `limit` receives remain
    /// posted, the kernel reports `SRQ_LIMIT_REACHED` and sets the limit back to 0. `limit` 0
    /// disarms; a limit above the capacity is refused before the kernel sees it.
    fn set_limit(&self, limit: u32) -> Result<()> {
        if limit > self.capacity() {
            return Err(Error::InvalidArgument {
                verb: Verb::ModifySrq,
                what: format!(
                    "limit {limit} above the queue's capacity of {}",
                    self.capacity()
                ),
            });
        }
        // rxe reads a `rxe_modify_srq_cmd` on every MODIFY_SRQ (EINVAL without one) and writes a new
        // `mminfo` through its pointer only when resizing, which this does not ask for; the pointer
        // is still a live, writable mminfo for the whole command.
        let mut mi = uapi::mminfo::new_zeroed();
        let cmd = uapi::rxe_modify_srq_cmd {
            mmap_info_addr: std::ptr::addr_of_mut!(mi) as u64,
        };
        // SAFETY: the only address in the driver data is `mi`'s, a live, writable `mminfo` on this
        // stack frame for the whole command (see above).
        unsafe {
            cmd::srq::modify_srq(
                &self.ctx,
                self.created.handle,
                attr_mask::LIMIT,
                0,
                limit,
                cmd.as_bytes(),
            )
        }?;
        Ok(())
    }

    /// `QUERY_SRQ`: (max_wr, max_sge, limit) as the kernel has them.
    fn query(&self) -> Result<(u32, u32, u32)> {
        let r = cmd::srq::query_srq(&self.ctx, self.created.handle)?;
        Ok((r.max_wr, r.max_sge, r.srq_limit))
    }

    /// Posts receive work requests: no system call. The first request that is invalid, or finds the
    /// ring full, stops the post: it and those after it are not posted, those before it are
    /// ([`PostError::index`]).
    ///
    /// # Safety
    /// The device writes each entry's memory (through its memory region) until the receive completes:
    /// nothing may read or write it, or free it, before the completion has been polled.
    #[inline]
    unsafe fn post_recv<'a, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        let _guard = self.lock.lock();
        // SAFETY: the SRQ ring was mapped for max_sge entries per slot; the memory contract is this
        // function's.
        unsafe {
            super::queue::post_recv_wqes::<false, W>(
                &self.queue,
                self.created.max_sge,
                Verb::PostSrqRecv,
                wrs,
            )
        }
    }
}

impl Drop for RxeSrq {
    fn drop(&mut self) {
        // The kernel object goes first, then the ring is unmapped (the mapping holds its own reference
        // in the kernel, so either order is safe).
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::srq::destroy_srq(&self.ctx, self.created.handle) } {
            crate::report_drop_error("shared receive queue", &e);
        }
    }
}
