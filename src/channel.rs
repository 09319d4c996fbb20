//! Completion channels: [`CompletionChannel`], where armed completion queues report that a
//! completion arrived, so a thread can sleep instead of polling.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use uverbs_drivers::cmd;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::event;

use crate::context::{Context, Inner as CtxInner};

#[derive(Debug)]
pub(crate) struct ChannelInner {
    pub(crate) fd: OwnedFd,
    ctx: Arc<CtxInner>,
}

/// A completion channel (`ibv_comp_channel`): a file that becomes readable when a completion queue
/// created with it and armed with [`crate::CompletionQueue::req_notify`] gets a completion.
///
/// The file works with `poll`/`epoll` ([`AsFd`]); it is non-blocking (a `read` with no event queued
/// fails with `EAGAIN`), and the waiting calls here poll before they read. With feature `tokio`,
/// `CompletionChannel::wait_async` waits on the tokio reactor. Each event names the completion
/// queue by the `id` it was created with; the queue must be armed again to get another event.
#[derive(Debug, Clone)]
pub struct CompletionChannel {
    pub(crate) inner: Arc<ChannelInner>,
}

impl CompletionChannel {
    pub(crate) fn new(ctx: &Context) -> io::Result<CompletionChannel> {
        let inner = ctx.inner();
        let fd = cmd::create_comp_channel(inner.ucontext())?;
        Ok(CompletionChannel {
            inner: Arc::new(ChannelInner {
                fd,
                ctx: Arc::clone(inner),
            }),
        })
    }

    /// The context the channel was created on.
    pub(crate) fn context(&self) -> &Arc<CtxInner> {
        &self.inner.ctx
    }

    fn read_event(&self, timeout: Option<Duration>) -> io::Result<Option<isize>> {
        // A CQ's events carry a key of the context; the table acknowledges the event to the CQ (as
        // `ibv_get_cq_event` does) and gives its `id`. (The kernel drops a CQ's queued events when
        // it is destroyed, so every key read names a live CQ; the key itself is the fallback.)
        Ok(
            event::read_comp_event(self.inner.fd.as_fd(), timeout)?.map(|key| {
                self.inner
                    .ctx
                    .cq_events
                    .completion(key)
                    .unwrap_or(key as isize)
            }),
        )
    }

    /// Waits for the next event and returns the `id` of the completion queue it is for
    /// (`ibv_get_cq_event`).
    pub fn get_event(&self) -> io::Result<isize> {
        self.read_event(None)?.ok_or_else(|| {
            Error::Protocol {
                verb: Verb::ReadEvent,
                what: "a wait without a timeout returned no event".into(),
            }
            .into()
        })
    }

    /// Waits up to `timeout` for an event: `Ok(None)` when none came.
    pub fn get_event_timeout(&self, timeout: Duration) -> io::Result<Option<isize>> {
        self.read_event(Some(timeout))
    }

    /// Returns an event if one is waiting, without blocking.
    pub fn try_get_event(&self) -> io::Result<Option<isize>> {
        self.read_event(Some(Duration::ZERO))
    }

    /// Waits for the next event without blocking the thread, on the tokio runtime the future runs
    /// on (feature `tokio`), and returns the `id` of the completion queue it is for.
    ///
    /// The channel's file is registered with the runtime's reactor (through `AsyncFd`, on a
    /// duplicate of the descriptor, so several tasks may wait at once) for as long as the future
    /// waits. Outside a tokio runtime this is an error; the runtime must have its I/O driver enabled
    /// (`enable_io`), or tokio panics.
    #[cfg(feature = "tokio")]
    pub async fn wait_async(&self) -> io::Result<isize> {
        crate::reactor::wait_readable_then(self.inner.fd.as_fd(), || {
            self.read_event(Some(Duration::ZERO))
        })
        .await
    }
}

impl AsFd for CompletionChannel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.fd.as_fd()
    }
}

impl AsRawFd for CompletionChannel {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.fd.as_raw_fd()
    }
}
