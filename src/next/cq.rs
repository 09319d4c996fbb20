//! Completion channels, completion queues and the lending poll of the `next` API.

use std::fmt;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use super::device::Context;
use super::error::{Error, Result};
use super::ffi;

/// A completion channel: a file that becomes readable when a completion queue built with it
/// ([`CompletionQueueBuilder::set_comp_channel`]) and armed ([`CompletionQueue::req_notify`]) gets
/// a completion. Any number of completion queues may share one; it works with `poll`/`epoll`
/// (non-blocking).
#[derive(Clone)]
pub struct CompletionChannel {
    pub(crate) ch: crate::CompletionChannel,
}

impl fmt::Debug for CompletionChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionChannel")
            .field("fd", &self.ch.as_raw_fd())
            .finish()
    }
}

impl CompletionChannel {
    pub(crate) fn new(ctx: &Context) -> Result<CompletionChannel> {
        let ch = ctx
            .ctx
            .create_comp_channel()
            .map_err(|e| Error::from_uverbs(e, Error::CreateCompletionChannel))?;
        Ok(CompletionChannel { ch })
    }

    /// The event waiting, if any, without blocking: the context of the completion queue it is for
    /// ([`CompletionQueueBuilder::set_context`]), acknowledged.
    pub fn get_event(&self) -> Result<Option<isize>> {
        self.ch
            .try_get_event()
            .map_err(|e| Error::from_uverbs(e, Error::PollCompletionQueue))
    }

    /// Waits for an event, up to `timeout` (`None`: for ever): the context of the completion queue
    /// it is for, or `None` when the time ran out.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<Option<isize>> {
        let got = match timeout {
            Some(t) => self.ch.get_event_timeout(t),
            None => self.ch.get_event().map(Some),
        };
        got.map_err(|e| Error::from_uverbs(e, Error::PollCompletionQueue))
    }
}

impl AsFd for CompletionChannel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.ch.as_fd()
    }
}

impl AsRawFd for CompletionChannel {
    fn as_raw_fd(&self) -> RawFd {
        self.ch.as_raw_fd()
    }
}

/// The fields a completion queue's completions always carry, as `ibverbs` always asks for them.
const ALWAYS: u32 = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_BYTE_LEN.0
    | ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_IMM.0
    | ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_QP_NUM.0
    | ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SRC_QP.0;

/// The fields every uverbs completion carries whether asked for or not.
const FREE: u32 = ALWAYS
    | ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SLID.0
    | ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SL.0
    | ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_DLID_PATH_BITS.0;

/// The device's clock in each completion.
const TIMESTAMP: u32 = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_COMPLETION_TIMESTAMP.0;
/// The device's clock in each completion, as wall-clock time.
const WALLCLOCK: u32 = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK.0;

/// Builds a completion queue; from [`Context::create_cq`].
#[must_use]
pub struct CompletionQueueBuilder {
    ctx: Context,
    min_cq_entries: i32,
    context: isize,
    comp_vector: u32,
    wc_flags: u32,
    channel: Option<CompletionChannel>,
}

impl fmt::Debug for CompletionQueueBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionQueueBuilder")
            .field("min_cq_entries", &self.min_cq_entries)
            .field("context", &self.context)
            .field("comp_vector", &self.comp_vector)
            .field("wc_flags", &self.wc_flags)
            .field("channel", &self.channel)
            .finish()
    }
}

impl CompletionQueueBuilder {
    pub(crate) fn new(ctx: Context, min_cq_entries: i32) -> CompletionQueueBuilder {
        CompletionQueueBuilder {
            ctx,
            min_cq_entries,
            context: 0,
            comp_vector: 0,
            wc_flags: 0,
            channel: None,
        }
    }

    /// The value the queue's events report ([`CompletionChannel::wait`]); 0 by default.
    pub fn set_context(&mut self, id: isize) -> &mut Self {
        self.context = id;
        self
    }

    /// The completion vector (below [`Context::num_comp_vectors`]); 0 by default.
    pub fn set_comp_vector(&mut self, comp_vector: u32) -> &mut Self {
        self.comp_vector = comp_vector;
        self
    }

    /// The optional fields the completions carry, beyond the byte count, immediate data and queue
    /// pair numbers they always carry. The source LID, service level and DLID path bits come
    /// with every uverbs completion anyway; the completion timestamp (and its wall-clock form)
    /// where the device has a clock ([`Error::Unsupported`] otherwise, at `build`); the others
    /// (VLAN, flow tag, tag matching) are [`Error::Unsupported`].
    pub fn set_wc_flags(&mut self, wc_flags: ffi::ibv_create_cq_wc_flags) -> &mut Self {
        self.wc_flags = wc_flags.0;
        self
    }

    /// The completion channel the queue reports to when armed.
    pub fn set_comp_channel(&mut self, channel: &CompletionChannel) -> &mut Self {
        self.channel = Some(channel.clone());
        self
    }

    /// Creates the completion queue.
    pub fn build(&self) -> Result<CompletionQueue> {
        let flags = self.wc_flags | ALWAYS;
        if flags & !(FREE | TIMESTAMP | WALLCLOCK) != 0 {
            return Err(Error::Unsupported);
        }
        let timestamps = flags & (TIMESTAMP | WALLCLOCK) != 0;
        let clock = if flags & WALLCLOCK != 0 {
            Some(
                self.ctx
                    .ctx
                    .device_clock()
                    .map_err(|e| Error::from_uverbs(e, Error::CreateCompletionQueue))?,
            )
        } else {
            None
        };
        let attr = crate::CqAttr {
            min_entries: self.min_cq_entries,
            id: self.context,
            channel: self.channel.as_ref().map(|c| &c.ch),
            comp_vector: self.comp_vector,
            timestamps,
        };
        let cq = self
            .ctx
            .ctx
            .create_cq_ex(&attr)
            .map_err(|e| Error::from_uverbs(e, Error::CreateCompletionQueue))?;
        Ok(CompletionQueue {
            inner: Arc::new(CqShared {
                cq: crate::CompletionQueue::from_shared(Arc::clone(&cq.inner)),
                channel: self.channel.clone(),
                flags,
                clock,
            }),
        })
    }
}

/// What the clones of a [`CompletionQueue`] share.
pub(crate) struct CqShared {
    pub(crate) cq: crate::CompletionQueue<'static>,
    channel: Option<CompletionChannel>,
    /// The `ibv_create_cq_wc_flags` asked for.
    flags: u32,
    /// The device's clock, for wall-clock timestamps.
    clock: Option<crate::DeviceClock>,
}

/// A completion queue; cheap to clone (the clones are the same queue), and kept alive by the
/// queue pairs that report to it.
#[must_use]
#[derive(Clone)]
pub struct CompletionQueue {
    pub(crate) inner: Arc<CqShared>,
}

impl fmt::Debug for CompletionQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("capacity", &self.inner.cq.capacity())
            .finish_non_exhaustive()
    }
}

impl CompletionQueue {
    /// Starts a lending poll: `Ok(None)` when no completion is waiting, else the
    /// [`Completions`] whose [`next`](Completions::next) lends each waiting completion, read in
    /// place through [`WorkCompletion`]'s methods. Never blocks; no system call. A corrupt or
    /// stale entry of the device's ring is [`Error::PollCompletionQueue`].
    #[inline(always)]
    pub fn poll(&self) -> Result<Option<Completions<'_>>> {
        match self.inner.cq.start_poll() {
            Ok(Some(c)) => Ok(Some(Completions { c, cq: &self.inner })),
            Ok(None) => Ok(None),
            Err(e) => Err(Error::from_uverbs(e, Error::PollCompletionQueue)),
        }
    }

    /// Arms the queue: its channel gets an event at the next completion (only a solicited one,
    /// with `solicited_only`).
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        self.inner
            .cq
            .req_notify(solicited_only)
            .map_err(|e| Error::from_uverbs(e, Error::PollCompletionQueue))
    }

    /// The channel the queue reports to, if it was built with one.
    pub fn comp_channel(&self) -> Option<&CompletionChannel> {
        self.inner.channel.as_ref()
    }
}

/// The completions of one [`CompletionQueue::poll`]; [`next`](Completions::next) lends them one
/// at a time (a lending iterator: not an [`Iterator`]). Completions not reached when it is dropped
/// stay for the next poll.
#[must_use]
pub struct Completions<'cq> {
    c: crate::Completions<'cq>,
    cq: &'cq CqShared,
}

impl fmt::Debug for Completions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completions").finish_non_exhaustive()
    }
}

impl Completions<'_> {
    /// The next completion, or `None` when the poll is over.
    #[allow(clippy::should_implement_trait)] // A lending iterator: the item borrows `self`.
    #[inline(always)]
    pub fn next(&mut self) -> Option<WorkCompletion<'_>> {
        let cq = self.cq;
        self.c.next().map(|c| WorkCompletion { c, cq })
    }
}

/// A completion lent by [`Completions::next`], read through its methods. When it failed, only
/// [`wr_id`](WorkCompletion::wr_id), the status, the vendor error and
/// [`qp_num`](WorkCompletion::qp_num) are meaningful.
pub struct WorkCompletion<'iter> {
    c: crate::Completion<'iter>,
    cq: &'iter CqShared,
}

impl fmt::Debug for WorkCompletion<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkCompletion")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .field("opcode", &self.c.opcode())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[allow(clippy::len_without_is_empty)] // `len` is the message's.
impl WorkCompletion<'_> {
    #[inline(always)]
    fn status(&self) -> ffi::ibv_wc_status {
        ffi::ibv_wc_status::from_raw(self.c.status())
            .unwrap_or(ffi::ibv_wc_status::IBV_WC_GENERAL_ERR)
    }

    /// The work request id given when the request was posted.
    #[inline(always)]
    pub fn wr_id(&self) -> u64 {
        self.c.wr_id()
    }

    /// Whether the request succeeded.
    #[inline(always)]
    pub fn is_success(&self) -> bool {
        self.c.is_success()
    }

    /// `Ok(())` on success, else the status and the vendor error.
    #[inline(always)]
    pub fn ok(&self) -> std::result::Result<(), (ffi::ibv_wc_status, u32)> {
        match self.error() {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// The status and the vendor error, if the request failed.
    #[inline(always)]
    pub fn error(&self) -> Option<(ffi::ibv_wc_status, u32)> {
        self.c.error().map(|(_, vendor)| (self.status(), vendor))
    }

    /// The operation that completed.
    #[inline(always)]
    pub fn opcode(&self) -> ffi::ibv_wc_opcode {
        ffi::ibv_wc_opcode::from_raw(self.c.opcode()).unwrap_or(ffi::ibv_wc_opcode::IBV_WC_SEND)
    }

    /// Bytes received, read (RDMA READ) or 8 (atomics).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.c.len()
    }

    /// The immediate data of a successful completion that carries some, in host order.
    #[inline(always)]
    pub fn imm_data(&self) -> Option<u32> {
        self.c.imm_data()
    }

    /// The local queue pair's number.
    #[inline(always)]
    pub fn qp_num(&self) -> u32 {
        self.c.qp_num()
    }

    /// The sending queue pair's number (UD receives).
    #[inline(always)]
    pub fn src_qp(&self) -> u32 {
        self.c.src_qp()
    }

    /// The device's clock when the request completed (0 for a failed one).
    ///
    /// # Panics
    /// As in `ibverbs`, when the queue was not built with
    /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`.
    #[inline(always)]
    pub fn completion_timestamp(&self) -> u64 {
        assert!(
            self.cq.flags & TIMESTAMP != 0,
            "completion queue was not created with timestamps"
        );
        self.c.timestamp().unwrap_or(0)
    }

    /// The wall-clock time the request completed, in nanoseconds since the Unix epoch (0 for a
    /// failed one).
    ///
    /// # Panics
    /// As in `ibverbs`, when the queue was not built with
    /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK`.
    #[inline(always)]
    pub fn completion_wallclock_ns(&self) -> u64 {
        let clock = match &self.cq.clock {
            Some(c) if self.cq.flags & WALLCLOCK != 0 => c,
            _ => panic!("completion queue was not created with wallclock timestamps"),
        };
        self.c.timestamp().map_or(0, |t| clock.to_unix_nanos(t))
    }

    /// The completion's flags (`IBV_WC_GRH`, `IBV_WC_WITH_IMM`, `IBV_WC_WITH_INV`).
    #[inline(always)]
    pub fn wc_flags(&self) -> ffi::ibv_wc_flags {
        ffi::ibv_wc_flags(self.c.wc_flags().0)
    }

    /// Whether a UD receive's buffer starts with the packet's GRH.
    #[inline(always)]
    pub fn has_grh(&self) -> bool {
        self.c.has_grh()
    }

    /// The source LID (UD receives). Every uverbs completion carries it: unlike `ibverbs`, this
    /// never panics.
    #[inline(always)]
    pub fn slid(&self) -> u32 {
        u32::from(self.c.slid())
    }

    /// The service level (UD receives); never panics (see [`slid`](WorkCompletion::slid)).
    #[inline(always)]
    pub fn sl(&self) -> u8 {
        self.c.sl()
    }

    /// The destination LID path bits (UD receives); never panics (see
    /// [`slid`](WorkCompletion::slid)).
    #[inline(always)]
    pub fn dlid_path_bits(&self) -> u8 {
        self.c.dlid_path_bits()
    }
}
