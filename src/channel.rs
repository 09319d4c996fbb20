//! Completion channels: [`CompletionChannel`], where armed completion queues report that a
//! completion arrived, so a thread can sleep instead of polling.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::sys;

use crate::context::{Context, Inner as CtxInner};

#[derive(Debug)]
pub(crate) struct ChannelInner {
    pub(crate) fd: OwnedFd,
    _ctx: Arc<CtxInner>,
}

/// A completion channel (`ibv_comp_channel`): a file that becomes readable when a completion queue
/// created with it and armed with [`crate::CompletionQueue::req_notify`] gets a completion.
///
/// The file works with `poll`/`epoll` ([`AsFd`]). Each event names the completion queue by the `id`
/// it was created with; the queue must be armed again to get another event.
#[derive(Debug, Clone)]
pub struct CompletionChannel {
    pub(crate) inner: Arc<ChannelInner>,
}

impl CompletionChannel {
    pub(crate) fn new(ctx: &Context) -> io::Result<CompletionChannel> {
        let inner = ctx.inner();
        let fd = inner.drv.create_comp_channel()?;
        Ok(CompletionChannel {
            inner: Arc::new(ChannelInner {
                fd,
                _ctx: Arc::clone(inner),
            }),
        })
    }

    fn read_event(&self) -> io::Result<isize> {
        let mut buf = [0u8; 8];
        let n = sys::read_event(self.inner.fd.as_fd(), &mut buf)
            .map_err(|e| Error::kernel(Verb::ReadEvent, e))?;
        if n != buf.len() {
            return Err(Error::Protocol {
                verb: Verb::ReadEvent,
                what: format!("a {n}-byte completion event"),
            }
            .into());
        }
        Ok(u64::from_ne_bytes(buf) as isize)
    }

    /// Waits for the next event and returns the `id` of the completion queue it is for
    /// (`ibv_get_cq_event`).
    pub fn get_event(&self) -> io::Result<isize> {
        self.read_event()
    }

    /// Waits up to `timeout` for an event: `Ok(None)` when none came.
    pub fn get_event_timeout(&self, timeout: Duration) -> io::Result<Option<isize>> {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let ready = sys::wait_readable(self.inner.fd.as_fd(), ms)
            .map_err(|e| Error::kernel(Verb::ReadEvent, e))?;
        if ready {
            self.read_event().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Returns an event if one is waiting, without blocking.
    pub fn try_get_event(&self) -> io::Result<Option<isize>> {
        self.get_event_timeout(Duration::ZERO)
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
