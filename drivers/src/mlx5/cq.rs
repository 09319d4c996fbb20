//! mlx5 completion queues: a ring of 64-byte CQEs in user memory that the device writes, polled by
//! their owner bit without a system call.
//!
//! Creation allocates the ring (`ncqe` = the next power of two above the requested count, every
//! `op_own` set to invalid) and a doorbell record, and names both in `mlx5_ib_create_cq`. Polling is
//! [`CqPoller`]'s algorithm over the ring: the owner byte of the entry at the consumer
//! index is loaded atomically (acquire), then [`crate::barrier::udma_from_device_barrier`], then the
//! entry is copied out; each CQE's queue is found by its user index in the context's table, and its
//! `wr_id` by the send queue's WQE counter (retiring the unsignaled WQEs before it), the receive
//! queue's tail, or the SRQ's WQE index. After a batch the consumer index goes to the doorbell
//! record. Arming writes the arm word into the doorbell record and the 64-bit arm doorbell to UAR
//! page 0; each completion event read from the channel must be acknowledged with
//! [`CqBackend::event`], so the next arm carries the next sequence number.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;

use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::buf::{DbrecPool, DmaBuf};
use super::cqe::{self, Cqe64};
use super::poller::{CompletionTarget, CqPoller, CqeMemory, WqKey};
use super::sq::Retired;
use super::uar::Uars;
use super::{Mlx5Context, Resource, ResourceTable};
use crate::backend::{CqBackend, CqInit};
use crate::cmd;
use crate::error::{Error, Result, Verb};
use crate::spin::SpinMutex;
use crate::ucontext::Ucontext;
use crate::wc::{TimestampedCompletion, WorkCompletion};

/// The CQE size this backend uses (rdma-core's default).
pub const CQE_SIZE: usize = 64;
/// The most entries a CQ may have.
pub const MAX_CQ_ENTRIES: u32 = 1 << 24;

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_ring(offset: usize, len: usize, ring: usize) -> ! {
    panic!("CQ access of {len} bytes at {offset} in a {ring}-byte ring")
}

/// The CQ ring in DMA memory, as [`CqPoller`] reads it: atomic loads of owner bytes, copies
/// of entries software owns.
#[derive(Debug)]
pub struct CqRing {
    buf: DmaBuf,
    len: usize,
}

impl CqRing {
    /// A ring of `ncqe` entries of `entry_size` bytes, every entry invalid (`op_own` = 0xf0), as
    /// the kernel must get it. `entry_size` must be 64 or 128 and `ncqe` at least 1; a ring
    /// whose size overflows is refused (F32).
    pub fn new(ncqe: usize, entry_size: usize) -> Result<CqRing> {
        let len = ncqe
            .checked_mul(entry_size)
            .filter(|_| ncqe > 0 && matches!(entry_size, 64 | 128))
            .ok_or_else(|| Error::InvalidArgument {
                verb: Verb::CreateCq,
                what: format!("a ring of {ncqe} entries of {entry_size} bytes"),
            })?;
        let buf = DmaBuf::new(len, Verb::CreateCq)?;
        for i in 0..ncqe {
            // SAFETY: the entry's last byte is inside the buffer (i < ncqe, len <= buf.len()); the
            // buffer is not yet known to the device, and nothing else accesses it.
            unsafe {
                buf.as_ptr()
                    .add(i * entry_size + entry_size - 1)
                    .write(cqe::cqe_opcode::INVALID << 4)
            };
        }
        Ok(CqRing { buf, len })
    }

    /// The buffer's address.
    pub fn addr(&self) -> u64 {
        self.buf.addr()
    }

    #[inline]
    fn check(&self, offset: usize, len: usize) -> NonNull<u8> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            out_of_ring(offset, len, self.len);
        }
        // SAFETY: in bounds of the buffer (checked), which is non-null.
        unsafe { NonNull::new_unchecked(self.buf.as_ptr().add(offset)) }
    }
}

impl CqeMemory for CqRing {
    fn cqe_buffer_len(&self) -> usize {
        self.len
    }

    #[inline]
    fn load_op_own(&self, offset: usize) -> u8 {
        let p = self.check(offset, 1);
        // SAFETY: in bounds; the device stores this byte atomically (release) after the CQE body,
        // and every access from this side that may race with it is this atomic load.
        unsafe { AtomicU8::from_ptr(p.as_ptr()) }.load(Ordering::Acquire)
    }

    #[inline]
    fn read(&self, offset: usize, out: &mut [u8]) {
        let p = self.check(offset, out.len());
        // SAFETY: in bounds; `CqPoller` reads only entries software owns (their owner byte
        // was loaded with acquire ordering first), which the device does not write until the
        // consumer index published after this read passes them.
        unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), out.as_mut_ptr(), out.len()) };
    }

    #[inline]
    fn write(&mut self, offset: usize, data: &[u8]) {
        let p = self.check(offset, data.len());
        // SAFETY: in bounds; only entries software owns are written (CQ cleaning), which the device
        // neither reads nor writes until the consumer index passes them.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p.as_ptr(), data.len()) };
    }

    #[inline]
    fn store_op_own(&mut self, offset: usize, value: u8) {
        let p = self.check(offset, 1);
        // SAFETY: in bounds; the device (the model's HCA thread when arming) may load this byte at
        // any time, atomically, so it is only ever stored atomically here; release orders the body
        // written before it.
        unsafe { AtomicU8::from_ptr(p.as_ptr()) }.store(value, Ordering::Release);
    }
}

#[derive(Debug)]
struct CqState {
    cq: CqPoller<CqRing>,
    /// An error met after some completions were returned: reported by the next poll.
    error: Option<Error>,
    /// The queue the last CQE named, and the resource table's generation when it was looked up:
    /// kept across polls, so that polling one completion at a time does not look the queue up
    /// (a read lock and a reference count) every time. Dropped when the table changes, and when a
    /// queue pair cleans this CQ out (it is being destroyed or reset). Never the last reference to
    /// its queue: a queue pair destroyed in the kernel cleans its CQs (which drops this) while it
    /// still holds its own reference, and no CQE names it after that clean, so no poll caches it
    /// again; an SRQ is cached only for CQEs of its queue pairs, which hold it. So replacing the
    /// cache under the lock never frees a queue's rings (debug builds assert it).
    cached: Option<(WqKey, Resource, u64)>,
    /// Set while `RESIZE_CQ` is under way (its system calls are made without this lock): the device
    /// is moving to the new ring and the waiting completions are copied over after it, so pollers
    /// take nothing meanwhile.
    resizing: bool,
    /// An arm asked for during a resize (`Some(solicited only)`), rung by the resize on the new ring.
    pending_arm: Option<bool>,
}

/// What a CQ shares with the queue pairs that complete on it (they clean it out when reset or
/// destroyed).
#[derive(Debug)]
pub(crate) struct CqShared {
    cqn: u32,
    state: SpinMutex<CqState>,
    dbrec: super::buf::Dbrec,
    /// Serialises resizes, whose system calls it is held across, with cleans (a queue pair's
    /// destroy or reset), which must not touch the old ring while the device is moving to the new
    /// one (rdma-core holds the CQ's spin lock across both). No poller takes it: pollers meet a
    /// resize through `CqState::resizing`.
    resize: std::sync::Mutex<()>,
}

impl CqShared {
    #[inline]
    fn lock(&self) -> crate::spin::SpinGuard<'_, CqState> {
        self.state.lock()
    }

    /// Removes the CQEs `remove` selects (a queue pair's, when it is reset or destroyed) and tells
    /// the device about the freed entries; then, still under the CQ's lock (so that no poller of
    /// this CQ runs meanwhile), calls `then` (a reset queue pair starts its send queue over).
    pub(crate) fn clean(&self, remove: impl FnMut(&Cqe64) -> bool, then: impl FnOnce()) {
        // Waits for a resize in progress (F30): the old ring holds the resize CQE the copy needs,
        // and the device is moving to the new ring.
        let _resize = self.resize.lock().unwrap_or_else(|p| p.into_inner());
        let mut st = self.lock();
        let cached = st.cached.take();
        if st.cq.clean(remove) > 0 {
            st.cq.update_consumer_index(&mut &self.dbrec);
        }
        then();
        drop(st);
        // Outside the lock: not the last reference (see `CqState::cached`), but a queue's
        // reference is dropped where no poller waits, on principle.
        drop(cached);
    }
}

/// An mlx5 completion queue.
#[derive(Debug)]
pub struct Mlx5Cq {
    ctx: Arc<Ucontext>,
    m: Arc<Mlx5Context>,
    handle: u32,
    entries: AtomicU32,
    shared: Arc<CqShared>,
    uars: Arc<Uars>,
}

/// The CQ geometry rdma-core uses for a request of `cqe` entries: `ncqe`, a power of two above it.
pub fn cq_entries(cqe: u32) -> Result<u32> {
    let bad = || Error::InvalidArgument {
        verb: Verb::CreateCq,
        what: format!(
            "{cqe} completion queue entries (at most {})",
            MAX_CQ_ENTRIES - 1
        ),
    };
    if cqe >= MAX_CQ_ENTRIES {
        return Err(bad());
    }
    Ok((cqe + 1).next_power_of_two())
}

/// The driver data of `CREATE_CQ`: the ring and the doorbell record, 64-byte CQEs, the default
/// (first static) UAR page.
pub fn create_cq_cmd(buf_addr: u64, db_addr: u64) -> uapi::mlx5_ib_create_cq {
    let mut cmd = uapi::mlx5_ib_create_cq::new_zeroed();
    cmd.buf_addr = buf_addr;
    cmd.db_addr = db_addr;
    cmd.cqe_size = CQE_SIZE as u32;
    cmd
}

impl Mlx5Cq {
    /// Creates a CQ with room for at least `init.cqe` completions.
    pub fn create(m: &Arc<Mlx5Context>, init: &CqInit<'_>) -> Result<Mlx5Cq> {
        let ctx = m.ucontext();
        let ncqe = cq_entries(init.cqe)?;
        let uars = Arc::clone(m.uars()?);
        let ring = CqRing::new(ncqe as usize, CQE_SIZE)?;
        let dbrec = DbrecPool::alloc(m.dbrecs())?;
        let cmd = create_cq_cmd(ring.addr(), dbrec.addr());
        let mut resp = uapi::mlx5_ib_create_cq_resp::new_zeroed();
        // SAFETY: `cmd` names `ring` and `dbrec`, allocated here for this CQ's device alone; they
        // move into the `Mlx5Cq` (or, on the error paths below, are freed only once the kernel CQ
        // is destroyed, else leaked), and its `Drop` frees them only after `destroy_cq` succeeded.
        let created = unsafe {
            cmd::create_cq_with_flags(
                ctx,
                ncqe - 1,
                init.user_handle,
                init.comp_vector,
                init.channel,
                init.flags,
                cmd.as_bytes(),
                resp.as_mut_bytes(),
            )
        };
        let (handle, granted) = match created {
            Ok(c) => c,
            Err(e) => {
                if e.may_have_run() {
                    // A model daemon may hold them: never freed.
                    std::mem::forget(ring);
                    std::mem::forget(dbrec);
                }
                return Err(e);
            }
        };
        if granted >= ncqe {
            // Best effort: the CQ is unusable; the error that matters is this one. The memory is
            // freed only if the kernel let go of it.
            // SAFETY: the object was made just above and is handed to no one; its handle is not
            // named again.
            if unsafe { cmd::destroy_cq(ctx, handle) }.is_err() {
                std::mem::forget(ring);
                std::mem::forget(dbrec);
            }
            return Err(Error::Protocol {
                verb: Verb::CreateCq,
                what: format!("{granted} entries granted in a ring of {ncqe}"),
            });
        }
        let cq = CqPoller::new(ring, CQE_SIZE, resp.cqn, m.cqe_version())
            .expect("a power-of-two ring of 64-byte entries; the CQE version was checked at open");
        Ok(Mlx5Cq {
            ctx: Arc::clone(ctx),
            m: Arc::clone(m),
            handle,
            entries: AtomicU32::new(granted),
            shared: Arc::new(CqShared {
                cqn: resp.cqn,
                state: SpinMutex::new(CqState {
                    cq,
                    error: None,
                    cached: None,
                    resizing: false,
                    pending_arm: None,
                }),
                dbrec,
                resize: std::sync::Mutex::new(()),
            }),
            uars,
        })
    }

    /// The CQ number.
    pub fn cqn(&self) -> u32 {
        self.shared.cqn
    }

    pub(crate) fn shared(&self) -> &Arc<CqShared> {
        &self.shared
    }

    /// The poll loop: `make` builds each output from the completion and, with `TIMESTAMP`, the
    /// CQE's timestamp (0 and never read otherwise).
    #[inline(always)]
    fn poll_impl<C, const TIMESTAMP: bool>(
        &self,
        out: &mut [C],
        make: impl Fn(WorkCompletion, u64) -> C,
    ) -> Result<usize> {
        self.poll_hinted::<C, TIMESTAMP, false>(out, make)
            .map(|(n, _)| n)
    }

    /// [`poll_impl`](Self::poll_impl), and, with `HINT`, whether another completion was waiting
    /// when it stopped (`out` full and the next entry written: a hint; `false` without `HINT`).
    #[inline(always)]
    fn poll_hinted<C, const TIMESTAMP: bool, const HINT: bool>(
        &self,
        out: &mut [C],
        make: impl Fn(WorkCompletion, u64) -> C,
    ) -> Result<(usize, bool)> {
        let m = &self.m;
        let mut guard = self.shared.lock();
        let st = &mut *guard;
        if st.resizing {
            // The device is moving to a new ring: nothing to take until the resize is done.
            return Ok((0, false));
        }
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        let start = st.cq.consumer_index();
        let mut target = Resolver {
            cqn: self.shared.cqn,
            table: &m.resources,
            generation: m.resources.generation(),
            cached: &mut st.cached,
        };
        let mut n = 0;
        let mut error = None;
        let mut c = WorkCompletion::default();
        while n < out.len() {
            match st.cq.poll_into(&mut target, &mut c) {
                Ok(true) => {
                    let timestamp = if TIMESTAMP { st.cq.last_timestamp() } else { 0 };
                    out[n] = make(c, timestamp);
                    n += 1;
                }
                Ok(false) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        if st.cq.consumer_index() != start {
            st.cq.update_consumer_index(&mut &self.shared.dbrec);
        }
        match error {
            Some(e) if n == 0 => Err(e),
            Some(e) => {
                st.error = Some(e);
                Ok((n, true))
            }
            None => Ok((n, HINT && n == out.len() && st.cq.ready())),
        }
    }

    /// Rings the arm doorbell, under the CQ's lock (`st`).
    fn arm(&self, st: &CqState, solicited: bool) {
        // SAFETY: `arm` stores one 64-bit arm doorbell for this CQ, which this value owns, and the
        // writer lives for this statement, while `self.uars` keeps the page mapped.
        let mut uar = unsafe { self.uars.cq_uar() };
        st.cq.arm(solicited, &mut &self.shared.dbrec, &mut uar);
    }
}

impl CqBackend for Mlx5Cq {
    fn handle(&self) -> u32 {
        self.handle
    }

    fn ucontext(&self) -> &Arc<Ucontext> {
        &self.ctx
    }

    /// How many completions the queue holds (the kernel's answer: the ring's entries less one).
    fn entries(&self) -> u32 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Takes up to `out.len()` completions, oldest first; returns how many.
    ///
    /// No system call. A CQE that names no queue of this context, or no outstanding work request,
    /// is consumed and reported as an [`Error::Protocol`]; when completions came before it, they are
    /// returned and the error is reported by the next poll.
    #[inline]
    fn poll<C: From<WorkCompletion>>(&self, out: &mut [C]) -> Result<usize> {
        self.poll_impl::<C, false>(out, |c, _| C::from(c))
    }

    #[inline(always)]
    fn poll_one(
        &self,
        out: &mut [TimestampedCompletion; 1],
        timestamps: bool,
    ) -> Result<(usize, bool)> {
        // Without timestamps, `timestamp` is 0, as `TimestampedCompletion::from` leaves it.
        let make = |wc, timestamp| TimestampedCompletion { wc, timestamp };
        if timestamps {
            self.poll_hinted::<_, true, true>(out, make)
        } else {
            self.poll_hinted::<_, false, true>(out, make)
        }
    }

    /// Arms the CQ: its next completion (or, with `solicited`, its next solicited one) raises a
    /// completion event on its channel. No system call: the arm word goes into the doorbell record
    /// and the arm doorbell to UAR page 0 (rdma-core's `mlx5_arm_cq`).
    fn req_notify(&self, solicited: bool) -> Result<()> {
        let mut st = self.shared.lock();
        if st.resizing {
            // The resize arms the new ring when it is done (for any completion if either asked).
            st.pending_arm = Some(st.pending_arm.unwrap_or(true) && solicited);
            return Ok(());
        }
        self.arm(&st, solicited);
        Ok(())
    }

    /// Acknowledges a completion event of this CQ read from its channel (rdma-core's
    /// `mlx5_cq_event`, from `ibv_get_cq_event`): the next arm carries the next sequence number.
    fn event(&self) {
        self.shared.lock().cq.event();
    }

    /// [`CqBackend::poll`] with each completion's timestamp, read from its CQE while the entry is
    /// still software's (a plain poll never reads it).
    #[inline]
    fn poll_timestamped<C: From<TimestampedCompletion>>(&self, out: &mut [C]) -> Result<usize> {
        self.poll_impl::<C, true>(out, |wc, timestamp| {
            C::from(TimestampedCompletion { wc, timestamp })
        })
    }

    /// `RESIZE_CQ` (rdma-core's `mlx5_resize_cq`): a new ring of the next power of two above
    /// `cqe`, handed to the kernel with `mlx5_ib_resize_cq`; the device writes a resize CQE into
    /// the old ring and moves to the new one, and the completions still waiting in the old ring
    /// are copied over ([`CqPoller::resize`]). Serialised with pollers by the CQ's lock; the old
    /// ring is freed once the kernel has let go of it (its answer).
    fn resize(&self, cqe: u32) -> Result<u32> {
        let ncqe = cq_entries(cqe).map_err(|e| match e {
            Error::InvalidArgument { what, .. } => Error::InvalidArgument {
                verb: Verb::ResizeCq,
                what,
            },
            e => e,
        })?;
        let _resize = self.shared.resize.lock().unwrap_or_else(|p| p.into_inner());
        if ncqe == self.shared.lock().cq.entries() {
            return Ok(self.entries());
        }
        // The system calls (the new ring's mapping, RESIZE_CQ) are made with no spin lock held:
        // pollers find the queue empty meanwhile, and an arm waits for the new ring.
        let ring = CqRing::new(ncqe as usize, CQE_SIZE)?;
        let mut cmd = uapi::mlx5_ib_resize_cq::new_zeroed();
        cmd.buf_addr = ring.addr();
        cmd.cqe_size = CQE_SIZE as u16;
        self.shared.lock().resizing = true;
        // SAFETY: `cmd` names `ring`, allocated here for this CQ's device alone; on success it
        // moves into the poller (and so lives until the CQ is destroyed, or another resize hands it
        // back after the kernel let go of it); on failure the kernel did not keep it.
        let granted = unsafe {
            crate::cmd::resize_cq(&self.ctx, self.handle, ncqe - 1, cmd.as_bytes(), &mut [])
        };
        let mut st = self.shared.lock();
        st.resizing = false;
        let (old, cached, moved) = match granted {
            Ok(granted) => {
                let cached = st.cached.take();
                let (old, moved) = st.cq.resize(ring, ncqe);
                // The consumer index stepped over the resize CQE: tell the device.
                st.cq.update_consumer_index(&mut &self.shared.dbrec);
                self.entries.store(granted, Ordering::Relaxed);
                (old, cached, moved.map(|()| granted))
            }
            // A model daemon whose connection broke may have moved to the new ring: keep both.
            Err(e) if e.may_have_run() => {
                std::mem::forget(ring);
                return Err(e);
            }
            // The kernel kept the old ring; the new one goes.
            Err(e) => (ring, None, Err(e)),
        };
        if let Some(solicited) = st.pending_arm.take() {
            self.arm(&st, solicited);
        }
        drop(st);
        // The old ring (or the refused new one) and the cached queue are freed with no lock held:
        // the kernel let go of the ring when it answered.
        drop((old, cached));
        moved
    }

    /// A system call: the kernel programs the moderation into the CQ context.
    fn moderate(&self, count: u16, period_us: u16) -> Result<()> {
        cmd::modify_cq(&self.ctx, self.handle, count, period_us)
    }
}

impl Drop for Mlx5Cq {
    fn drop(&mut self) {
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::destroy_cq(&self.ctx, self.handle) } {
            crate::report_drop_error("completion queue", &e);
            // The device may still write the ring and read the doorbell record: keep them.
            std::mem::forget(Arc::clone(&self.shared));
        }
    }
}

/// Finds the queues CQEs name, in the context's table (one lookup per run of CQEs of the same
/// queue).
struct Resolver<'t> {
    /// The CQ being polled: send WQEs are retired only by their queue pair's send CQ.
    cqn: u32,
    table: &'t ResourceTable,
    /// The table's generation when this poll began.
    generation: u64,
    /// The CQ's [`CqState::cached`].
    cached: &'t mut Option<(WqKey, Resource, u64)>,
}

impl Resolver<'_> {
    #[inline]
    fn get(&mut self, key: WqKey) -> Option<&Resource> {
        let hit = matches!(self.cached, Some((k, _, g)) if *k == key && *g == self.generation);
        if !hit {
            let r = self.table.lookup(key)?;
            let old = self.cached.replace((key, r, self.generation));
            // Dropped under the CQ's lock, so it must not be the last reference to its queue
            // (whose rings would be unmapped here): see `CqState::cached`.
            debug_assert!(
                old.as_ref().is_none_or(|(_, r, _)| r.is_shared()),
                "the CQ's cache held the last reference to a destroyed queue"
            );
        }
        self.cached.as_ref().map(|(_, r, _)| r)
    }
}

impl CompletionTarget for Resolver<'_> {
    #[inline]
    fn retire_send(&mut self, key: WqKey, wqe_counter: u16) -> Option<Retired> {
        let cqn = self.cqn;
        match self.get(key)? {
            Resource::Qp(qp) => qp.retire_send(cqn, wqe_counter),
            Resource::Srq(_) => None,
        }
    }

    #[inline]
    fn retire_recv(&mut self, key: WqKey, cqe: &Cqe64) -> Option<u64> {
        match self.get(key)? {
            Resource::Qp(qp) => qp.retire_recv(cqe),
            Resource::Srq(srq) => srq.complete(cqe.wqe_counter.get()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// F32 (found by review): `CqRing::new` and `DmaBuf::new` are public and sized their buffers
    /// with unchecked arithmetic: `ncqe * entry_size` wrapped to 64 for `usize::MAX / 64 + 2`
    /// entries, one page was mapped, and the initialisation loop wrote a byte every 64 past it (a
    /// segfault in release builds); `entry_size` 0 wrote at `add(usize::MAX)`; `DmaBuf::new` of
    /// nearly `usize::MAX` bytes rounded to 0. All are refused now.
    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf: madvise(2) is not supported by Miri")]
    fn ring_sizes_that_overflow_are_refused() {
        for (n, size) in [
            (usize::MAX / 64 + 2, 64),
            (1, 0),
            (0, 64),
            (4, 96),
            (usize::MAX, 128),
        ] {
            match CqRing::new(n, size) {
                Err(Error::InvalidArgument {
                    verb: Verb::CreateCq,
                    ..
                }) => {}
                other => panic!("CqRing::new({n}, {size}): {:?}", other.map(|r| r.len)),
            }
        }
        assert!(DmaBuf::new(usize::MAX - 10, Verb::CreateCq).is_err());
        let ring = CqRing::new(4, 64).unwrap();
        assert_eq!(ring.len, 256);
    }

    #[test]
    fn geometry() {
        assert_eq!(cq_entries(1).unwrap(), 2);
        assert_eq!(cq_entries(16).unwrap(), 32);
        assert_eq!(cq_entries(15).unwrap(), 16);
        assert_eq!(cq_entries(0).unwrap(), 1);
        assert_eq!(cq_entries(MAX_CQ_ENTRIES - 1).unwrap(), MAX_CQ_ENTRIES);
        assert!(cq_entries(MAX_CQ_ENTRIES).is_err());
    }

    #[test]
    fn udata_bytes() {
        let cmd = create_cq_cmd(0x1122_3344_5566_7000, 0xaabb_ccdd_0000_0040);
        let b = cmd.as_bytes();
        assert_eq!(b.len(), 32);
        assert_eq!(&b[0..8], &0x1122_3344_5566_7000u64.to_ne_bytes());
        assert_eq!(&b[8..16], &0xaabb_ccdd_0000_0040u64.to_ne_bytes());
        assert_eq!(&b[16..20], &64u32.to_ne_bytes());
        assert!(
            b[20..].iter().all(|&x| x == 0),
            "no compression, flags, UAR index"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf: madvise(2) is not supported by Miri")]
    fn ring_starts_invalid_and_polls_empty() {
        let ring = CqRing::new(8, 64).unwrap();
        for i in 0..8 {
            assert_eq!(ring.load_op_own(i * 64 + 63), 0xf0);
        }
        let mut cq = CqPoller::new(ring, 64, 5, 1).unwrap();
        assert!(cq.next_cqe().is_none());
        // Play the device: a CQE at index 0 with owner 0.
        let mut e = Cqe64 {
            op_own: cqe::cqe_opcode::REQ << 4,
            ..Cqe64::default()
        };
        e.wqe_counter = 7.into();
        cq.buffer_mut().write(0, e.as_bytes());
        assert_eq!(cq.next_cqe().unwrap().wqe_counter.get(), 7);
        assert!(cq.next_cqe().is_none());
    }
}
