//! Completion queues: [`CompletionQueue`].

use std::io;
use std::marker::PhantomData;
use std::sync::Arc;

use uverbs_drivers::backend::{CqBackend, CqInit};
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::verbs::Cq;

use std::os::fd::AsFd;

use crate::channel::CompletionChannel;
use crate::context::{Context, Inner as CtxInner};
use crate::ibv::ibv_wc;

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
