//! Completion queues: [`CompletionQueue`].

use std::io;
use std::marker::PhantomData;
use std::sync::Arc;

use uverbs_drivers::backend::Backend;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::mlx5::cq::Mlx5Cq;
use uverbs_drivers::rxe::cq::RxeCq;

use std::os::fd::AsFd;

use crate::channel::CompletionChannel;
use crate::context::{Context, Inner as CtxInner};
use crate::ibv::ibv_wc;

/// The backend's completion queue.
#[derive(Debug)]
pub(crate) enum CqImpl {
    Rxe(RxeCq),
    Mlx5(Mlx5Cq),
}

impl CqImpl {
    pub(crate) fn handle(&self) -> u32 {
        match self {
            CqImpl::Rxe(cq) => cq.handle(),
            CqImpl::Mlx5(cq) => cq.handle(),
        }
    }
}

/// The kernel object and ring behind a completion queue, shared with the queue pairs that use it.
#[derive(Debug)]
pub(crate) struct CqInner {
    // Dropped before the others: the CQ is destroyed while its channel and context are still open.
    pub(crate) imp: CqImpl,
    pub(crate) id: isize,
    /// The user handle of an mlx5 CQ's events, under which the context finds it
    /// ([`crate::context::CqEvents`]).
    pub(crate) event_key: Option<u64>,
    pub(crate) _channel: Option<CompletionChannel>,
    pub(crate) _ctx: Arc<CtxInner>,
}

impl Drop for CqInner {
    fn drop(&mut self) {
        if let Some(key) = self.event_key {
            self._ctx.cq_events.remove(key);
        }
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
    pub(crate) fn new(
        ctx: &'ctx Context,
        min_cq_entries: i32,
        id: isize,
        channel: Option<&CompletionChannel>,
        comp_vector: u32,
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
        let channel_fd = channel.map(|c| c.inner.fd.as_fd());
        let (imp, event_key) = match inner.drv.backend() {
            Backend::Rxe(_) => (
                CqImpl::Rxe(RxeCq::create(
                    &inner.drv,
                    cqe,
                    id as u64,
                    comp_vector,
                    channel_fd,
                )?),
                None,
            ),
            // The events of an mlx5 CQ carry a key of the context's instead of `id`: reading one
            // must also tell the CQ (its next arm carries the next sequence number), so the key
            // must name this CQ alone.
            Backend::Mlx5(_) => {
                let key = inner.cq_events.next_key();
                (
                    CqImpl::Mlx5(Mlx5Cq::create(
                        &inner.drv,
                        cqe,
                        key,
                        comp_vector,
                        channel_fd,
                    )?),
                    Some(key),
                )
            }
            _ => {
                return Err(Error::Unsupported {
                    verb: Verb::CreateCq,
                }
                .into())
            }
        };
        let cq = Arc::new(CqInner {
            imp,
            id,
            event_key,
            _channel: channel.cloned(),
            _ctx: Arc::clone(inner),
        });
        if let Some(key) = event_key {
            inner.cq_events.insert(key, id, &cq);
        }
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
        let n = match &self.inner.imp {
            CqImpl::Rxe(cq) => {
                let mut i = 0;
                cq.poll(completions.len(), |wc| {
                    completions[i] = ibv_wc::from_kernel(wc);
                    i += 1;
                })
            }
            CqImpl::Mlx5(cq) => {
                let mut i = 0;
                cq.poll(completions.len(), |wc| {
                    completions[i] = ibv_wc::from_kernel(wc);
                    i += 1;
                })?
            }
        };
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
        match &self.inner.imp {
            CqImpl::Rxe(cq) => Ok(self
                .inner
                ._ctx
                .drv
                .req_notify_cq(cq.handle(), solicited_only)?),
            CqImpl::Mlx5(cq) => {
                cq.req_notify(solicited_only);
                Ok(())
            }
        }
    }

    /// The `id` the queue was created with, which its channel's events carry.
    pub fn id(&self) -> isize {
        self.inner.id
    }

    /// How many completions the queue holds.
    pub fn capacity(&self) -> u32 {
        match &self.inner.imp {
            CqImpl::Rxe(cq) => cq.entries(),
            CqImpl::Mlx5(cq) => cq.entries(),
        }
    }
}
