//! Completion queues: [`CompletionQueue`].

use std::collections::VecDeque;
use std::io;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use uverbs_drivers::backend::{CqBackend, CqInit};
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::verbs::Cq;

use std::os::fd::AsFd;

use crate::channel::CompletionChannel;
use crate::context::{Context, Inner as CtxInner};
use crate::ibv::{ibv_wc, ibv_wc_flags, ibv_wc_opcode, ibv_wc_status};
use uverbs_drivers::wc::TimestampedCompletion;

/// The kernel object and ring behind a completion queue, shared with the queue pairs that use it.
#[derive(Debug)]
pub(crate) struct CqInner {
    // Dropped before the others: the CQ is destroyed while its channel and context are still open.
    pub(crate) imp: Cq,
    pub(crate) id: isize,
    /// Whether its completions carry the device's clock (`IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION`).
    timestamps: bool,
    /// The user handle its events carry, under which the context finds it
    /// ([`crate::context::CqEvents`]).
    event_key: u64,
    pub(crate) _channel: Option<CompletionChannel>,
    pub(crate) _ctx: Arc<CtxInner>,
    /// What a lending poll gave back: a completion it took and nobody read, an error it met.
    parked: Parked,
}

/// What a lending poll gave back for the next poll of any kind, so that nothing is lost: the
/// completion `start_poll` took and nobody read (the `Completions` was dropped before its first
/// `next`), and an error [`Completions::next`] met (a corrupt CQE, say), which ends its iteration.
/// Completions come back before the error, oldest first.
#[derive(Debug, Default)]
struct Parked {
    /// Whether anything may be parked: the polls' only check (a relaxed load) on their fast path.
    any: AtomicBool,
    slot: Mutex<ParkedSlot>,
}

#[derive(Debug, Default)]
struct ParkedSlot {
    completions: VecDeque<TimestampedCompletion>,
    error: Option<Error>,
}

impl Parked {
    #[inline(always)]
    fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ParkedSlot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn park(&self, e: Error) {
        self.lock().error.get_or_insert(e);
        self.any.store(true, Ordering::Relaxed);
    }

    /// Gives back a completion taken off the ring and not read, ahead of everything parked.
    #[cold]
    fn park_completion(&self, c: TimestampedCompletion) {
        self.lock().completions.push_front(c);
        self.any.store(true, Ordering::Relaxed);
    }

    /// Up to `out.len()` parked completions as `T`s, or, with none parked, the parked error (then
    /// `Err`); `Ok(0)` when nothing was parked after all (another poll took it).
    #[cold]
    fn take<T>(
        &self,
        out: &mut [T],
        convert: impl Fn(TimestampedCompletion) -> T,
    ) -> Result<usize, Error> {
        let mut slot = self.lock();
        let mut n = 0;
        while n < out.len() {
            let Some(c) = slot.completions.pop_front() else {
                break;
            };
            out[n] = convert(c);
            n += 1;
        }
        let error = if n == 0 { slot.error.take() } else { None };
        self.any.store(
            !slot.completions.is_empty() || slot.error.is_some(),
            Ordering::Relaxed,
        );
        match error {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }
}

impl Drop for CqInner {
    fn drop(&mut self) {
        self._ctx.cq_events.remove(self.event_key);
    }
}

/// A completion queue: where work requests report that they finished.
///
/// Polling makes no system call. `CompletionQueue` is `Send + Sync`; concurrent pollers each get
/// distinct completions.
#[derive(Debug)]
pub struct CompletionQueue<'ctx> {
    pub(crate) inner: Arc<CqInner>,
    _ctx: PhantomData<&'ctx Context>,
}

impl<'ctx> CompletionQueue<'ctx> {
    /// A handle on shared state (the queue keeps its context alive, so the lifetime is only the
    /// API's).
    pub(crate) fn from_shared(inner: Arc<CqInner>) -> CompletionQueue<'ctx> {
        CompletionQueue {
            inner,
            _ctx: PhantomData,
        }
    }

    pub(crate) fn new(
        ctx: &'ctx Context,
        min_cq_entries: i32,
        id: isize,
        channel: Option<&CompletionChannel>,
        comp_vector: u32,
        timestamps: bool,
    ) -> io::Result<CompletionQueue<'ctx>> {
        let inner = ctx.inner();
        let cqe = u32::try_from(min_cq_entries)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::InvalidArgument {
                verb: Verb::CreateCq,
                what: format!("{min_cq_entries} completion queue entries"),
            })?;
        if channel.is_some_and(|c| !Arc::ptr_eq(c.context(), inner)) {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateCq,
                what: "the completion channel belongs to another context".into(),
            }
            .into());
        }
        // The events carry a key of the context instead of `id`: reading one must also reach the
        // CQ, so the key must name this CQ alone.
        let event_key = inner.cq_events.next_key();
        let init = CqInit {
            cqe,
            user_handle: event_key,
            comp_vector,
            channel: channel.map(|c| c.inner.fd.as_fd()),
            flags: if timestamps {
                uverbs_drivers::uapi::IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
            } else {
                0
            },
        };
        let cq = Arc::new(CqInner {
            imp: Cq::create(&inner.drv, &init)?,
            id,
            timestamps,
            event_key,
            _channel: channel.cloned(),
            _ctx: Arc::clone(inner),
            parked: Parked::default(),
        });
        inner.cq_events.insert(event_key, id, &cq);
        Ok(CompletionQueue {
            inner: cq,
            _ctx: PhantomData,
        })
    }

    /// Takes up to `completions.len()` completions, oldest first, and returns the filled prefix;
    /// empty when none is waiting. Never blocks and makes no system call.
    ///
    /// When a completion's status is not success, only its `wr_id`, status, vendor error and
    /// `qp_num` are meaningful.
    #[inline]
    pub fn poll<'c>(&self, completions: &'c mut [ibv_wc]) -> io::Result<&'c mut [ibv_wc]> {
        if !self.inner.parked.is_empty() {
            let n = self
                .inner
                .parked
                .take(completions, |c| ibv_wc::from(c.wc))?;
            if n > 0 {
                return Ok(&mut completions[..n]);
            }
        }
        let n = self.inner.imp.poll(completions)?;
        Ok(&mut completions[..n])
    }

    /// [`poll`](Self::poll) with each completion's timestamp: the device's clock when the work
    /// completed, in its cycles (convert with [`crate::DeviceClock`]). For a queue created with
    /// [`crate::CqAttr::timestamps`]; any other is `InvalidArgument`. A completion in error has
    /// timestamp 0.
    pub fn poll_timestamped<'c>(
        &self,
        completions: &'c mut [TimestampedWc],
    ) -> io::Result<&'c mut [TimestampedWc]> {
        if !self.inner.timestamps {
            return Err(Error::InvalidArgument {
                verb: Verb::PollCq,
                what: "the completion queue was created without timestamps".into(),
            }
            .into());
        }
        if !self.inner.parked.is_empty() {
            let n = self.inner.parked.take(completions, TimestampedWc::from)?;
            if n > 0 {
                return Ok(&mut completions[..n]);
            }
        }
        let n = self.inner.imp.poll_timestamped(completions)?;
        Ok(&mut completions[..n])
    }

    /// Arms the queue: the next completion (or, with `solicited_only`, the next solicited one) makes
    /// its completion channel report an event (`ibv_req_notify_cq`). Fails for a queue created
    /// without a channel. On rxe this is a system call (`REQ_NOTIFY_CQ`); on mlx5 a doorbell.
    pub fn req_notify(&self, solicited_only: bool) -> io::Result<()> {
        if self.inner._channel.is_none() {
            return Err(Error::InvalidArgument {
                verb: Verb::ReqNotifyCq,
                what: "the completion queue has no completion channel".into(),
            }
            .into());
        }
        Ok(self.inner.imp.req_notify(solicited_only)?)
    }

    /// The `id` the queue was created with, which its channel's events carry.
    pub fn id(&self) -> isize {
        self.inner.id
    }

    /// How many completions the queue holds.
    pub fn capacity(&self) -> u32 {
        self.inner.imp.entries()
    }

    /// Gives the queue room for at least `min_cq_entries` completions (`ibv_resize_cq`), larger or
    /// smaller, keeping those waiting in order; returns the new [`capacity`](Self::capacity).
    /// Pollers on other threads and the queue pairs that use the queue carry on meanwhile.
    ///
    /// On rxe the kernel hands out a new ring and the old one stays mapped until the queue is
    /// dropped (a poller on another thread may still be looking at it): a few pages per resize. On
    /// mlx5 the driver allocates the new ring and copies the waiting completions into it, as
    /// libmlx5 does.
    /// Refused with a typed error: fewer than one entry (`InvalidArgument`), fewer than are
    /// waiting or more than the device allows (the kernel's `EINVAL`), a backend that cannot
    /// ([`Error::Unsupported`]).
    pub fn resize(&self, min_cq_entries: i32) -> io::Result<u32> {
        let cqe = u32::try_from(min_cq_entries)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::InvalidArgument {
                verb: Verb::ResizeCq,
                what: format!("{min_cq_entries} completion queue entries"),
            })?;
        Ok(self.inner.imp.resize(cqe)?)
    }

    /// Completion moderation (`ibv_modify_cq` with `IBV_CQ_ATTR_MODERATE`): the device raises a
    /// completion event once `count` completions have arrived or `period_us` microseconds have
    /// passed since the first, whichever comes first (0 and 0: every completion). Fewer events at
    /// a high rate, each reporting several completions. A system call. [`Error::Unsupported`] on
    /// rxe, which has no moderation; mlx5 takes periods up to 4095 µs.
    pub fn set_moderation(&self, count: u16, period_us: u16) -> io::Result<()> {
        Ok(self.inner.imp.moderate(count, period_us)?)
    }
}

/// A completion with the device's clock when it completed, from
/// [`CompletionQueue::poll_timestamped`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TimestampedWc {
    /// The completion.
    pub wc: ibv_wc,
    /// The device's clock, in its cycles (0 for a completion in error).
    pub timestamp: u64,
}

impl From<uverbs_drivers::wc::TimestampedCompletion> for TimestampedWc {
    #[inline]
    fn from(c: uverbs_drivers::wc::TimestampedCompletion) -> TimestampedWc {
        TimestampedWc {
            wc: ibv_wc::from(c.wc),
            timestamp: c.timestamp,
        }
    }
}

impl CompletionQueue<'_> {
    /// Starts a lending poll: `Ok(None)` when no completion is waiting, else the [`Completions`]
    /// whose [`next`](Completions::next) lends them one at a time, oldest first, each a
    /// [`Completion`] read through methods. Each is taken from the queue when `next` gets to it,
    /// so dropping the iteration early (a `break`) leaves the rest for the next poll. Never
    /// blocks and makes no system call; no lock of the queue is held while the caller looks at a
    /// completion, so anything may be done meanwhile, this queue's other polls included (they get
    /// other completions).
    ///
    /// ```no_run
    /// # fn drain(cq: &uverbs::CompletionQueue<'_>) -> std::io::Result<u64> {
    /// let mut bytes = 0;
    /// while let Some(mut completions) = cq.start_poll()? {
    ///     while let Some(c) = completions.next() {
    ///         match c.ok() {
    ///             Ok(()) => bytes += c.len() as u64,
    ///             Err((status, _)) => eprintln!("request {} failed: {status}", c.wr_id()),
    ///         }
    ///     }
    /// }
    /// # Ok(bytes) }
    /// ```
    ///
    /// An error the device's ring gives (a corrupt or stale completion entry) is this call's, or,
    /// met by `next` after completions were lent, ends that iteration and is the next poll's.
    #[inline(always)]
    pub fn start_poll(&self) -> io::Result<Option<Completions<'_>>> {
        let mut one = [TimestampedCompletion::default()];
        // Parked completions are older than any in the ring: the ring may hold more.
        if !self.inner.parked.is_empty() && self.inner.parked.take(&mut one, |c| c)? == 1 {
            return Ok(Some(Completions {
                cur: one[0],
                state: Lending::Fresh { more: true },
                cq: &self.inner,
            }));
        }
        let (n, more) = self.inner.poll_one(&mut one)?;
        // Built only when one was taken: a `Completions` dropped unread parks its completion.
        if n == 1 {
            Ok(Some(Completions {
                cur: one[0],
                state: Lending::Fresh { more },
                cq: &self.inner,
            }))
        } else {
            Ok(None)
        }
    }
}

impl CqInner {
    /// Takes at most one completion into `one`, with its timestamp on a timestamped queue, and
    /// whether another may be waiting behind it.
    #[inline(always)]
    fn poll_one(&self, one: &mut [TimestampedCompletion; 1]) -> Result<(usize, bool), Error> {
        self.imp.poll_one(one, self.timestamps)
    }
}

/// A lending poll of a [`CompletionQueue`], from [`CompletionQueue::start_poll`]: [`next`] lends
/// the waiting completions one at a time ([`Completion`] borrows the `Completions`, so it cannot be
/// an [`Iterator`]).
///
/// [`next`]: Completions::next
#[must_use = "the completions are read with `next`"]
pub struct Completions<'cq> {
    /// The completion `next` lends.
    cur: TimestampedCompletion,
    state: Lending,
    cq: &'cq CqInner,
}

/// Where a [`Completions`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lending {
    /// `cur` is taken and not lent yet; `more`: another may be waiting behind it.
    Fresh { more: bool },
    /// `cur` was lent: the next `next` polls.
    Lent,
    /// A poll found none (or an error), or `cur` was lent when the ring had no other completion
    /// written behind it (the next `next` would have found none then): the iteration is over, and
    /// stays over.
    Ended,
}

impl Drop for Completions<'_> {
    /// Gives the completion `start_poll` took back for the next poll, if `next` never lent it.
    /// (Forgotten instead, the completion is lost, as completions read and ignored are.)
    #[inline]
    fn drop(&mut self) {
        if let Lending::Fresh { .. } = self.state {
            self.cq.parked.park_completion(self.cur);
        }
    }
}

impl std::fmt::Debug for Completions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completions").finish_non_exhaustive()
    }
}

impl Completions<'_> {
    /// The next completion, or `None` when none is waiting (none had been written behind the
    /// last one lent when that one was taken, or a poll found none; or an error ended the poll:
    /// the next poll reports it). After the first `None` it stays `None` (completions that arrive later
    /// are the next [`CompletionQueue::start_poll`]'s), as `ibverbs`' iteration ends there.
    #[allow(clippy::should_implement_trait)] // A lending iterator: the item borrows `self`.
    #[inline(always)]
    pub fn next(&mut self) -> Option<Completion<'_>> {
        let more = match self.state {
            Lending::Fresh { more } => more,
            Lending::Ended => return None,
            Lending::Lent => {
                let mut one = [TimestampedCompletion::default()];
                match self.cq.poll_one(&mut one) {
                    Ok((1, more)) => {
                        self.cur = one[0];
                        more
                    }
                    Ok(_) => {
                        self.state = Lending::Ended;
                        return None;
                    }
                    Err(e) => {
                        self.cq.parked.park(e);
                        self.state = Lending::Ended;
                        return None;
                    }
                }
            }
        };
        self.state = if more { Lending::Lent } else { Lending::Ended };
        Some(Completion {
            c: &self.cur,
            timestamps: self.cq.timestamps,
        })
    }
}

/// One work completion of a [`Completions`], read through its methods. When the status is not
/// success, only [`wr_id`](Completion::wr_id), the status, the vendor error and
/// [`qp_num`](Completion::qp_num) are meaningful.
#[derive(Clone, Copy)]
pub struct Completion<'c> {
    c: &'c TimestampedCompletion,
    timestamps: bool,
}

impl std::fmt::Debug for Completion<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .field("opcode", &self.opcode())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[allow(clippy::len_without_is_empty)] // `len` is the message's, as `ibv_wc::len`.
impl Completion<'_> {
    /// The work request id given when the request was posted.
    #[inline]
    pub fn wr_id(&self) -> u64 {
        self.c.wc.wr_id
    }

    /// The status (`ibv_wc_status::*`), also when it is success.
    #[inline]
    pub fn status(&self) -> ibv_wc_status::Type {
        self.c.wc.status
    }

    /// Whether the request succeeded.
    #[inline]
    pub fn is_success(&self) -> bool {
        self.c.wc.status == ibv_wc_status::IBV_WC_SUCCESS
    }

    /// `Ok(())` on success, else the status and the vendor error.
    #[inline]
    pub fn ok(&self) -> Result<(), (ibv_wc_status::Type, u32)> {
        match self.error() {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// The status and the vendor error, if the request failed.
    #[inline]
    pub fn error(&self) -> Option<(ibv_wc_status::Type, u32)> {
        (!self.is_success()).then_some((self.c.wc.status, self.c.wc.vendor_err))
    }

    /// The operation that completed (`ibv_wc_opcode::*`).
    #[inline]
    pub fn opcode(&self) -> ibv_wc_opcode::Type {
        self.c.wc.opcode
    }

    /// Bytes received, read (RDMA READ) or 8 (atomics).
    #[inline]
    pub fn len(&self) -> usize {
        self.c.wc.byte_len as usize
    }

    /// The immediate data a successful completion carries (`IBV_WC_WITH_IMM`), in host order (as
    /// the sender gave it).
    #[inline]
    pub fn imm_data(&self) -> Option<u32> {
        (self.is_success() && self.c.wc.wc_flags & ibv_wc_flags::IBV_WC_WITH_IMM.0 != 0)
            .then_some(u32::from_be(self.c.wc.imm_data))
    }

    /// The rkey a SEND with invalidate invalidated (`IBV_WC_WITH_INV`).
    #[inline]
    pub fn invalidated_rkey(&self) -> Option<u32> {
        (self.is_success() && self.c.wc.wc_flags & ibv_wc_flags::IBV_WC_WITH_INV.0 != 0)
            .then_some(self.c.wc.imm_data)
    }

    /// The local queue pair's number.
    #[inline]
    pub fn qp_num(&self) -> u32 {
        self.c.wc.qp_num
    }

    /// The sending queue pair's number (UD receives).
    #[inline]
    pub fn src_qp(&self) -> u32 {
        self.c.wc.src_qp
    }

    /// The completion's flags (`IBV_WC_GRH`, `IBV_WC_WITH_IMM`, ...).
    #[inline]
    pub fn wc_flags(&self) -> ibv_wc_flags {
        ibv_wc_flags(self.c.wc.wc_flags)
    }

    /// Whether a UD receive's buffer starts with the 40-byte GRH (`IBV_WC_GRH`).
    #[inline]
    pub fn has_grh(&self) -> bool {
        self.c.wc.wc_flags & ibv_wc_flags::IBV_WC_GRH.0 != 0
    }

    /// The P_Key index (UD receives).
    #[inline]
    pub fn pkey_index(&self) -> u16 {
        self.c.wc.pkey_index
    }

    /// The source LID (UD receives on InfiniBand).
    #[inline]
    pub fn slid(&self) -> u16 {
        self.c.wc.slid
    }

    /// The service level (UD receives).
    #[inline]
    pub fn sl(&self) -> u8 {
        self.c.wc.sl
    }

    /// The destination LID path bits (UD receives on InfiniBand).
    #[inline]
    pub fn dlid_path_bits(&self) -> u8 {
        self.c.wc.dlid_path_bits
    }

    /// The device's clock when the work completed, in its cycles (convert with
    /// [`crate::DeviceClock`]): `Some` for a successful completion of a queue created with
    /// [`crate::CqAttr::timestamps`], else `None`.
    #[inline]
    pub fn timestamp(&self) -> Option<u64> {
        (self.timestamps && self.is_success()).then_some(self.c.timestamp)
    }

    /// The completion as `ibverbs` 0.9.2's `ibv_wc` (immediate data in network order there).
    #[inline]
    pub fn to_wc(&self) -> ibv_wc {
        ibv_wc::from(self.c.wc)
    }
}
