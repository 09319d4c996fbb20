//! rxe queue pairs: send and receive rings shared with the kernel.
//!
//! Posting a receive writes an `rxe_recv_wqe` into the receive ring and publishes the producer index:
//! no system call. Posting sends writes `rxe_send_wqe`s into the send ring, publishes the producer
//! index once, then rings the doorbell: one `POST_SEND` write with no work requests.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::ah::RxeAh;
use super::queue::{Queue, RingLock};
use crate::backend::{batch_interrupted, claim_staging, stage_token, QpBackend, SendStage};
use crate::chan::SendDoorbell;
use crate::cmd::{self, QpCreated, QpInit};
use crate::error::{Error, Result, Verb};
use crate::spin::SpinMutex;
use crate::ucontext::Ucontext;
use crate::wr::{
    self, opcode, send_flags, send_needs_rts, PostError, RecvWr, SendWr, Sge, MAX_MESSAGE,
    MULTICAST_QPN,
};

const SEND_WQE_HEADER: usize = std::mem::size_of::<uapi::rxe_send_wqe>();
const RECV_WQE_HEADER: usize = std::mem::size_of::<uapi::rxe_recv_wqe>();
const SGE_SIZE: usize = std::mem::size_of::<Sge>();

pub use crate::qp_state::state;

/// An rxe queue pair.
#[derive(Debug)]
pub struct RxeQp {
    ctx: Arc<Ucontext>,
    created: QpCreated,
    qp_type: u8,
    sq: Queue,
    rq: Option<Queue>,
    /// Serialises posters on each ring; the producer index is ours alone. The send ring's also
    /// keeps which batch ([`SendStage`]) has its slots past the producer index.
    sq_lock: SpinMutex<SqStaging>,
    rq_lock: RingLock,
    /// The send doorbell's command, built at creation.
    doorbell: Box<SendDoorbell>,
    /// The state as of the last successful modify (the kernel may since have moved it to ERR).
    state: AtomicU8,
    max_send_sge: u32,
    max_inline: u32,
    max_recv_sge: u32,
    /// The opcodes [`RxeQp::fast_length`] accepts on this queue pair (bit `1 << opcode`): those of
    /// [`RxeQp::check_send`]'s table that need no further check (not the local operations, not the
    /// atomics).
    fast_ops: u32,
    /// Whether this is a UD queue pair.
    is_ud: bool,
    /// `max_inline`, and no more than [`MAX_MESSAGE`].
    inline_limit: u64,
}

/// Which batch writes the send ring's slots past the producer index.
#[derive(Debug, Default)]
struct SqStaging {
    /// The open batch's token (0: none).
    open: u64,
    /// Where the open batch's next request goes: the producer index past its requests.
    cursor: u32,
}

/// The opcodes `fast_ops` may hold, by queue pair type (a subset of `check_send`'s table).
const fn fast_ops(qp_type: u8) -> u32 {
    const fn bit(op: u32) -> u32 {
        1 << op
    }
    match qp_type {
        uapi::IB_UVERBS_QPT_RC => {
            bit(opcode::RDMA_WRITE)
                | bit(opcode::RDMA_WRITE_WITH_IMM)
                | bit(opcode::SEND)
                | bit(opcode::SEND_WITH_IMM)
                | bit(opcode::RDMA_READ)
                | bit(opcode::SEND_WITH_INV)
        }
        uapi::IB_UVERBS_QPT_UC => {
            bit(opcode::RDMA_WRITE)
                | bit(opcode::RDMA_WRITE_WITH_IMM)
                | bit(opcode::SEND)
                | bit(opcode::SEND_WITH_IMM)
                | bit(opcode::SEND_WITH_INV)
        }
        _ => bit(opcode::SEND) | bit(opcode::SEND_WITH_IMM),
    }
}

impl RxeQp {
    /// Creates a queue pair and maps its rings (the receive ring first, as rdma-core does).
    pub fn create(ctx: &Arc<Ucontext>, init: &QpInit) -> Result<RxeQp> {
        let mut resp = uapi::rxe_create_qp_resp::new_zeroed();
        let created = cmd::create_qp(ctx, init, resp.as_mut_bytes())?;
        let cap = created.cap;
        let mapped = (|| {
            // A queue pair on a shared receive queue has no receive ring: the kernel hands out no
            // mapping for one, and `rq_mi` is left as it was.
            let rq = match init.srq {
                Some(_) => None,
                None => Some(Queue::map(
                    ctx.channel(),
                    &resp.rq_mi,
                    RECV_WQE_HEADER + SGE_SIZE * cap.max_recv_sge as usize,
                    Verb::CreateQp,
                )?),
            };
            let payload = (SGE_SIZE * cap.max_send_sge as usize).max(cap.max_inline_data as usize);
            let sq = Queue::map(
                ctx.channel(),
                &resp.sq_mi,
                SEND_WQE_HEADER + payload,
                Verb::CreateQp,
            )?;
            Ok((sq, rq))
        })();
        let (sq, rq) = match mapped {
            Ok(m) => m,
            Err(e) => {
                // SAFETY: the object was made just above and is handed to no one; its handle is not
                // named again.
                let _ = unsafe { cmd::destroy_qp(ctx, created.handle) };
                return Err(e);
            }
        };
        let doorbell = SendDoorbell::new(created.handle);
        Ok(RxeQp {
            ctx: Arc::clone(ctx),
            created,
            qp_type: init.qp_type,
            sq,
            rq,
            sq_lock: SpinMutex::default(),
            rq_lock: RingLock::default(),
            doorbell,
            state: AtomicU8::new(state::RESET),
            max_send_sge: cap.max_send_sge,
            max_inline: cap.max_inline_data,
            max_recv_sge: cap.max_recv_sge,
            fast_ops: fast_ops(init.qp_type),
            is_ud: init.qp_type == uapi::IB_UVERBS_QPT_UD,
            inline_limit: u64::from(cap.max_inline_data).min(MAX_MESSAGE),
        })
    }

    /// The message length of a request that passes every check of [`RxeQp::check_send`], found
    /// without building an error; `None` for one that may not (or that needs the full checks:
    /// local operations, atomics), which then go through `check_send`.
    #[inline(always)]
    fn fast_length(&self, wr: &SendWr<'_>, ah_num: u32) -> Option<u64> {
        let op_ok = self.fast_ops.checked_shr(wr.opcode).unwrap_or(0) & 1 != 0;
        let dest_ok = match wr.ud {
            None => !self.is_ud,
            Some(d) => self.is_ud & (d.remote_qpn <= MULTICAST_QPN) & (ah_num != 0),
        };
        const FLAGS: u32 =
            send_flags::FENCE | send_flags::SIGNALED | send_flags::SOLICITED | send_flags::INLINE;
        if !(op_ok & dest_ok & wr.bind.is_none() & (wr.flags & !FLAGS == 0)) {
            return None;
        }
        if wr.flags & send_flags::INLINE != 0 {
            let length = wr.inline.len() as u64;
            (wr.sges.is_empty() & (wr.opcode != opcode::RDMA_READ) & (length <= self.inline_limit))
                .then_some(length)
        } else {
            if wr.sges.len() > self.max_send_sge as usize {
                return None;
            }
            let length = match wr.sges {
                [] => 0,
                [sge] => u64::from(sge.length),
                sges => sges.iter().map(|s| u64::from(s.length)).sum(),
            };
            (length <= MAX_MESSAGE).then_some(length)
        }
    }

    /// Every check of a send request, with the error for the first it fails: the slow path, for
    /// the requests [`RxeQp::fast_length`] does not take. The checks are those of every backend
    /// ([`wr::check_send`]), then rxe's own: the address handle has a number (the kernel's 0 is
    /// none).
    #[cold]
    #[inline(never)]
    fn check_send(&self, wr: &SendWr<'_>, ah: Option<&RxeAh>) -> Result<()> {
        let limits = wr::SendLimits {
            qp_type: self.qp_type,
            max_send_sge: self.max_send_sge,
            max_inline_data: self.max_inline,
            // rxe builds every opcode the verbs allow.
            opcodes: wr::verbs_opcodes(self.qp_type),
        };
        wr::check_send(wr, ah.is_some(), &limits)?;
        if ah.is_some_and(|a| a.ah_num() == 0) {
            return Err(Error::InvalidArgument {
                verb: Verb::PostSend,
                what: "address handle number 0".into(),
            });
        }
        Ok(())
    }

    /// Moves the queue pair to ERR again after receives were posted in ERR, so that rxe flushes them.
    #[cold]
    #[inline(never)]
    fn reflush(
        &self,
        count: usize,
        posted: &std::result::Result<(), PostError>,
    ) -> std::result::Result<(), PostError> {
        let posted_count = match posted {
            Ok(()) => count,
            Err(e) => e.index,
        };
        if posted_count == 0 {
            return Ok(());
        }
        let mut req = uapi::ib_uverbs_modify_qp::new_zeroed();
        req.attr_mask = crate::qp_state::mask::STATE;
        req.qp_state = state::ERR;
        self.modify(&req).map_err(|error| PostError {
            index: posted_count,
            error,
        })
    }
}

impl RxeQp {
    /// Takes back the batch of `token`'s slots, if it still has them (nothing was published).
    #[cold]
    fn abandon_staged(&self, token: u64) {
        if token != 0 {
            let mut staging = self.sq_lock.lock();
            if staging.open == token {
                staging.open = 0;
            }
        }
    }
}

/// The error of a post that found the send ring full (out of line: the loop only branches to it).
#[cold]
#[inline(never)]
fn queue_full(index: usize, capacity: u32) -> PostError {
    PostError {
        index,
        error: Error::QueueFull {
            verb: Verb::PostSend,
            capacity,
        },
    }
}

/// Fills one send WQE in place: the fields the kernel reads, and its own bookkeeping fields zeroed
/// (as a fresh WQE has them). Only the address vector of the union's `ud` member (read for an
/// address handle number of 0, which [`RxeQp::check_send`] refuses) is left as it was.
///
/// # Safety
/// `slot` must be a free, 8-byte aligned slot of the send ring with room for the header and the
/// request's payload (checked: at most `max_send_sge` entries, or `max_inline` bytes inline);
/// `length` must be the request's message length.
#[inline(always)]
unsafe fn write_send_wqe(slot: *mut u8, wr: &SendWr<'_>, length: u32, ah_num: u32) {
    use std::ptr::addr_of_mut;
    const UNION: usize = std::mem::offset_of!(uapi::rxe_send_wr, wr);
    let wqe = slot.cast::<uapi::rxe_send_wqe>();
    debug_assert!(wqe.is_aligned());
    // SAFETY: the slot holds a whole rxe_send_wqe, is aligned for it (the ring's slots are 8-byte
    // aligned powers of two of at least 256 bytes) and is ours; every write goes through raw
    // pointers to plain integer fields, with no reference to the slot made.
    unsafe {
        addr_of_mut!((*wqe).wr.wr_id).write(wr.wr_id);
        addr_of_mut!((*wqe).wr.reserved).write(0);
        addr_of_mut!((*wqe).wr.opcode).write(wr.opcode);
        addr_of_mut!((*wqe).wr.send_flags).write(wr.flags);
        addr_of_mut!((*wqe).wr.ex).write(wr.imm_or_inv);
        // The union: the first 32 bytes hold every member the kernel reads here (all of `rdma`,
        // `atomic` and `mw`, and `ud` up to its address vector); what a request does not use is 0.
        let union = slot.add(UNION);
        let mut iova = 0;
        if wr.is_rdma() {
            union
                .cast::<uapi::rxe_send_wr_rdma>()
                .write(uapi::rxe_send_wr_rdma {
                    remote_addr: wr.remote_addr,
                    rkey: wr.rkey,
                    reserved: 0,
                });
            union.add(16).cast::<[u64; 2]>().write([0; 2]);
            iova = wr.remote_addr;
        } else if wr.is_atomic() {
            union
                .cast::<uapi::rxe_send_wr_atomic>()
                .write(uapi::rxe_send_wr_atomic {
                    remote_addr: wr.remote_addr,
                    compare_add: wr.compare_add,
                    swap: wr.swap,
                    rkey: wr.rkey,
                    reserved: 0,
                });
            iova = wr.remote_addr;
        } else if let Some(b) = wr.bind {
            union
                .cast::<uapi::rxe_send_wr_mw>()
                .write(uapi::rxe_send_wr_mw {
                    addr: b.addr,
                    length: b.length,
                    mr_lkey: b.mr_lkey,
                    mw_rkey: b.mw_rkey,
                    rkey: b.new_rkey,
                    access: b.access,
                });
        } else if let Some(ud) = wr.ud {
            let u = union.cast::<uapi::rxe_send_wr_ud>();
            addr_of_mut!((*u).remote_qpn).write(ud.remote_qpn);
            addr_of_mut!((*u).remote_qkey).write(ud.remote_qkey);
            addr_of_mut!((*u).pkey_index).write(0);
            addr_of_mut!((*u).reserved).write(0);
            addr_of_mut!((*u).ah_num).write(ah_num);
            addr_of_mut!((*u).pad).write([0; 4]);
        } else {
            union.cast::<[u64; 4]>().write([0; 4]);
        }
        addr_of_mut!((*wqe).status).write(0);
        addr_of_mut!((*wqe).state).write(0);
        addr_of_mut!((*wqe).iova).write(iova);
        addr_of_mut!((*wqe).mask).write(0);
        addr_of_mut!((*wqe).first_psn).write(0);
        addr_of_mut!((*wqe).last_psn).write(0);
        addr_of_mut!((*wqe).ack_length).write(0);
        addr_of_mut!((*wqe).ssn).write(0);
        addr_of_mut!((*wqe).has_rd_atomic).write(0);
        addr_of_mut!((*wqe).dma).write(uapi::rxe_dma_info {
            length,
            resid: length,
            cur_sge: 0,
            num_sge: wr.sges.len() as u32,
            sge_offset: 0,
            reserved: 0,
        });
        // The payload area starts right after the header and holds max(max_send_sge * 16,
        // max_inline) bytes (checked at mapping); the checks kept the request within those limits.
        let payload = slot.add(SEND_WQE_HEADER);
        if wr.flags & send_flags::INLINE != 0 {
            std::ptr::copy_nonoverlapping(wr.inline.as_ptr(), payload, wr.inline.len());
        } else {
            let sges = payload.cast::<Sge>();
            match wr.sges {
                [] => {}
                [sge] => sges.write(*sge),
                list => std::ptr::copy_nonoverlapping(list.as_ptr(), sges, list.len()),
            }
        }
    }
}

impl QpBackend for RxeQp {
    type Ah = RxeAh;

    fn handle(&self) -> u32 {
        self.created.handle
    }

    fn qpn(&self) -> u32 {
        self.created.qpn
    }

    /// The capacities: send and receive work requests as the rings really hold them, SGEs and inline
    /// bytes as the kernel granted them.
    fn cap(&self) -> uapi::ib_uverbs_qp_cap {
        uapi::ib_uverbs_qp_cap {
            max_send_wr: self.sq.capacity(),
            max_recv_wr: self.rq.as_ref().map_or(0, Queue::capacity),
            max_send_sge: self.max_send_sge,
            max_recv_sge: self.max_recv_sge,
            max_inline_data: self.max_inline,
        }
    }

    /// The state as of the last successful [`QpBackend::modify`].
    #[inline]
    fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// `MODIFY_QP`; on success the tracked state follows.
    fn modify(&self, req: &uapi::ib_uverbs_modify_qp) -> Result<()> {
        let mut req = *req;
        req.qp_handle = self.created.handle;
        // SAFETY: the queue pair is this object's own; the kernel holds its rings' state.
        unsafe { cmd::modify_qp(&self.ctx, &req) }?;
        if req.attr_mask & crate::qp_state::mask::STATE != 0 {
            self.state.store(req.qp_state, Ordering::Release);
            if req.qp_state == state::RESET {
                // The kernel started the rings over: a batch open across the reset is refused.
                self.sq_lock.lock().open = 0;
            }
        }
        Ok(())
    }

    /// `QUERY_QP`.
    fn query(&self, attr_mask: u32) -> Result<uapi::ib_uverbs_query_qp_resp> {
        cmd::query_qp(&self.ctx, self.created.handle, attr_mask)
    }

    /// Posts send requests: stops at the first refused, or (`ALL`) posts none of them then.
    ///
    /// # Safety
    /// As [`QpBackend::post_send`].
    #[inline(always)]
    unsafe fn post_sends<'a, const ALL: bool, W: AsRef<SendWr<'a>>>(
        &self,
        wrs: &[W],
        ah: impl Fn(&W) -> Option<&RxeAh>,
    ) -> std::result::Result<(), PostError> {
        let current = self.state();
        if current != state::RTS {
            return Err(send_needs_rts(current));
        }
        let mut failure = None;
        let mut posted = 0;
        {
            let mut staging = self.sq_lock.lock();
            // A batch left open loses its slots to this post.
            staging.open = 0;
            let q = &self.sq;
            let mut producer = q.own_producer();
            let mut consumer = q.load_consumer();
            for (index, w) in wrs.iter().enumerate() {
                let wr = w.as_ref();
                let ah = ah(w);
                let ah_num = ah.map_or(0, RxeAh::ah_num);
                let length = match self.fast_length(wr, ah_num) {
                    Some(length) => length,
                    None => match self.check_send(wr, ah) {
                        Ok(()) => wr.length(),
                        Err(error) => {
                            failure = Some(PostError { index, error });
                            break;
                        }
                    },
                };
                let next = q.next(producer);
                if next == consumer {
                    consumer = q.load_consumer();
                    if next == consumer {
                        failure = Some(queue_full(index, q.capacity()));
                        break;
                    }
                }
                // SAFETY: the slot at `producer` is free (the ring is not full) and ours until we
                // publish the producer index; the checks bounded what goes in by the slot's payload
                // size, and `length` is the request's (at most MAX_MESSAGE, so it fits in 32 bits).
                unsafe { write_send_wqe(q.slot(producer), wr, length as u32, ah_num) };
                producer = next;
                posted += 1;
            }
            if ALL && failure.is_some() {
                // Nothing was published: the slots written stay free.
                posted = 0;
            }
            if posted > 0 {
                q.publish_producer(producer);
            }
        }
        // Ring when something was posted, and also when the ring was found full: the kernel then has
        // work queued, and the doorbell makes sure it is working through it (rdma-core's provider
        // rings after every post, successful or not).
        let full = matches!(
            failure,
            Some(PostError {
                error: Error::QueueFull { .. },
                ..
            })
        );
        if posted > 0 || full {
            if let Err(error) = self.ctx.channel().ring_send_doorbell(&self.doorbell) {
                return Err(PostError {
                    index: posted,
                    error,
                });
            }
        }
        failure.map_or(Ok(()), Err)
    }

    #[inline(always)]
    fn stage_send(&self, stage: &mut SendStage, wr: &SendWr<'_>, ah: Option<&RxeAh>) {
        if stage.skip_if_refused() {
            return;
        }
        let ah_num = ah.map_or(0, RxeAh::ah_num);
        let length = match self.fast_length(wr, ah_num) {
            Some(length) => length,
            None => match self.check_send(wr, ah) {
                Ok(()) => wr.length(),
                Err(error) => return stage.refuse(error),
            },
        };
        let q = &self.sq;
        let mut staging = self.sq_lock.lock();
        match claim_staging(staging.open, stage.token) {
            Ok(false) => {}
            Ok(true) => {
                // The batch's first request: the slots from the producer index on are its own
                // until another post takes them back.
                staging.open = stage_token();
                stage.token = staging.open;
                staging.cursor = q.own_producer();
            }
            Err(error) => {
                drop(staging);
                return stage.refuse(error);
            }
        }
        let next = q.next(staging.cursor);
        if next == q.load_consumer() {
            drop(staging);
            return stage.refuse(queue_full(0, q.capacity()).error);
        }
        // SAFETY: the slot at the cursor is free (the ring is not full up to it) and this batch's
        // (its token is the open one, under the lock: no other poster writes past the producer
        // index until it takes the slots back); the checks bounded what goes in by the slot's
        // payload size, and `length` is the request's (at most MAX_MESSAGE: it fits in 32 bits).
        unsafe { write_send_wqe(q.slot(staging.cursor), wr, length as u32, ah_num) };
        staging.cursor = next;
        stage.added();
    }

    /// # Safety
    /// As [`QpBackend::submit_sends`].
    #[inline(always)]
    unsafe fn submit_sends(&self, stage: &mut SendStage) -> std::result::Result<(), PostError> {
        if let Some(failure) = stage.finish() {
            self.abandon_staged(stage.token);
            return Err(failure);
        }
        if stage.token == 0 {
            return Ok(());
        }
        let current = self.state();
        if current != state::RTS {
            self.abandon_staged(stage.token);
            return Err(send_needs_rts(current));
        }
        {
            let mut staging = self.sq_lock.lock();
            if staging.open != stage.token {
                return Err(PostError {
                    index: 0,
                    error: batch_interrupted(),
                });
            }
            staging.open = 0;
            self.sq.publish_producer(staging.cursor);
        }
        self.ctx
            .channel()
            .ring_send_doorbell(&self.doorbell)
            .map_err(|error| PostError {
                index: stage.len(),
                error,
            })
    }

    fn abandon_sends(&self, stage: &mut SendStage) {
        stage.finish();
        self.abandon_staged(stage.token);
    }

    /// Posts receive requests: stops at the first refused, or (`ALL`) posts none of them then.
    ///
    /// # Safety
    /// As [`QpBackend::post_recv`].
    #[inline(always)]
    unsafe fn post_recvs<'a, const ALL: bool, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        let current = self.state();
        let Some(q) = self.rq.as_ref() else {
            return Err(PostError {
                index: 0,
                error: Error::InvalidArgument {
                    verb: Verb::PostRecv,
                    what: "the queue pair has no receive queue (it takes its receives from a \
                           shared receive queue: post them there)"
                        .into(),
                },
            });
        };
        if current == state::RESET {
            return Err(PostError {
                index: 0,
                error: Error::WrongState {
                    verb: Verb::PostRecv,
                    state: current,
                    needed: "INIT or later",
                },
            });
        }
        let posted = {
            let _guard = self.rq_lock.lock();
            // SAFETY: the receive ring was mapped for max_recv_sge entries per slot; the memory
            // contract is this function's.
            unsafe {
                super::queue::post_recv_wqes::<ALL, W>(q, self.max_recv_sge, Verb::PostRecv, wrs)
            }
        };
        if current == state::ERR && !(ALL && posted.is_err()) {
            // rxe flushes the receive ring only when its responder runs, which a move to ERR
            // schedules once: receives posted after that would never complete. Verbs require them
            // to be flushed, so ask again (a modify to ERR from ERR only reschedules the flush).
            self.reflush(wrs.len(), &posted)?;
        }
        posted
    }
}

impl Drop for RxeQp {
    fn drop(&mut self) {
        // The kernel object goes first; the rings are unmapped after (the mappings hold their own
        // reference in the kernel, so this order is safe either way).
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::destroy_qp(&self.ctx, self.created.handle) } {
            crate::report_drop_error("queue pair", &e);
        }
    }
}
