//! Shared receive queues: [`SharedReceiveQueue`].

use std::io;
use std::sync::Arc;

use uverbs_drivers::backend::Backend;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::mlx5::srq::Mlx5Srq;
use uverbs_drivers::rxe::srq::RxeSrq;
use uverbs_drivers::srq::SrqInit;

use crate::pd::{PdInner, ProtectionDomain};
use crate::wr::{PostFailure, ReceiveRequest};

/// The backend's shared receive queue.
#[derive(Debug)]
pub(crate) enum SrqImpl {
    Rxe(RxeSrq),
    Mlx5(Mlx5Srq),
}

/// The kernel object and ring behind a shared receive queue, shared with the queue pairs that use
/// it.
#[derive(Debug)]
pub(crate) struct SrqInner {
    // Dropped first: the SRQ is destroyed while its protection domain is still there.
    pub(crate) imp: SrqImpl,
    id: isize,
    pub(crate) pd: Arc<PdInner>,
}

impl SrqInner {
    pub(crate) fn handle(&self) -> u32 {
        match &self.imp {
            SrqImpl::Rxe(srq) => srq.handle(),
            SrqImpl::Mlx5(srq) => srq.handle(),
        }
    }
}

/// The capacities of a shared receive queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SrqCaps {
    /// Receive work requests that can be outstanding.
    pub max_wr: u32,
    /// Scatter entries per receive work request.
    pub max_sge: u32,
}

/// A shared receive queue (`ibv_srq`): one pool of receive work requests that any number of queue
/// pairs, created with [`crate::QueuePairBuilder::set_srq`], take their incoming messages from.
/// Each receive completion's `qp_num` says which queue pair received it.
///
/// Posting makes no system call. It keeps its protection domain alive, and the queue pairs using it
/// keep it alive. `Send + Sync`: posts from several threads are serialised.
#[derive(Debug)]
pub struct SharedReceiveQueue {
    pub(crate) inner: Arc<SrqInner>,
}

impl SharedReceiveQueue {
    pub(crate) fn new(
        pd: &ProtectionDomain<'_>,
        max_wr: u32,
        max_sge: u32,
        id: isize,
    ) -> io::Result<SharedReceiveQueue> {
        if max_wr == 0 {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateSrq,
                what: "a shared receive queue needs room for at least one work request".into(),
            }
            .into());
        }
        let init = SrqInit {
            pd: pd.inner.handle,
            max_wr,
            max_sge,
            limit: 0,
            user_handle: id as u64,
        };
        let ctx = &pd.inner.ctx.drv;
        let imp = match ctx.backend() {
            Backend::Rxe(_) => SrqImpl::Rxe(RxeSrq::create(ctx, &init)?),
            Backend::Mlx5(_) => SrqImpl::Mlx5(Mlx5Srq::create(ctx, &init)?),
            _ => {
                return Err(Error::Unsupported {
                    verb: Verb::CreateSrq,
                }
                .into())
            }
        };
        Ok(SharedReceiveQueue {
            inner: Arc::new(SrqInner {
                imp,
                id,
                pd: Arc::clone(&pd.inner),
            }),
        })
    }

    /// The `id` it was created with, which its async events carry
    /// ([`crate::AsyncEvent::element`]).
    pub fn id(&self) -> isize {
        self.inner.id
    }

    /// The SRQ number.
    pub fn srq_num(&self) -> u32 {
        match &self.inner.imp {
            SrqImpl::Rxe(srq) => srq.srqn(),
            SrqImpl::Mlx5(srq) => srq.srqn(),
        }
    }

    /// The capacities it really has (at least those asked for).
    pub fn caps(&self) -> SrqCaps {
        match &self.inner.imp {
            SrqImpl::Rxe(srq) => SrqCaps {
                max_wr: srq.capacity(),
                max_sge: srq.max_sge(),
            },
            SrqImpl::Mlx5(srq) => SrqCaps {
                max_wr: srq.capacity(),
                max_sge: srq.max_sge(),
            },
        }
    }

    /// Arms the limit (`ibv_modify_srq` with `IBV_SRQ_LIMIT`): once fewer than `limit` posted
    /// receives remain, the device reports [`crate::AsyncEventKind::SrqLimitReached`] with this
    /// queue's [`id`](SharedReceiveQueue::id) on the context's async event file, once, and disarms
    /// (the limit goes back to 0). `limit` 0 disarms; a limit above the capacity is an error.
    #[doc(alias = "set_limit")]
    #[doc(alias = "ibv_modify_srq")]
    pub fn arm(&self, limit: u32) -> io::Result<()> {
        match &self.inner.imp {
            SrqImpl::Rxe(srq) => srq.set_limit(limit)?,
            SrqImpl::Mlx5(srq) => srq.set_limit(limit)?,
        }
        Ok(())
    }

    /// The limit as the device has it now (`ibv_query_srq`): what [`SharedReceiveQueue::arm`] set,
    /// or 0 once the limit event fired.
    pub fn limit(&self) -> io::Result<u32> {
        match &self.inner.imp {
            SrqImpl::Rxe(srq) => Ok(srq.query()?.2),
            SrqImpl::Mlx5(srq) => Ok(srq.query()?.2),
        }
    }

    /// Posts a list of receive requests (no system call). Checked one by one: the first that is
    /// invalid (too many scatter entries), or finds the queue full, stops the post, and
    /// [`PostFailure::index`] says which; those before it were posted, it and those after were not.
    ///
    /// # Safety
    /// The memory the requests' entries name must stay allocated and untouched until each request's
    /// completion has been polled: the device writes it.
    #[allow(unsafe_code)] // The contract is the API's; see the crate docs.
    pub unsafe fn post_receive_list(
        &self,
        requests: &[ReceiveRequest<'_>],
    ) -> Result<(), PostFailure> {
        match &self.inner.imp {
            // SAFETY: the requests' memory is covered by this function's contract.
            SrqImpl::Rxe(srq) => unsafe { srq.post_recv(requests) }.map_err(PostFailure::from),
            // SAFETY: as above.
            SrqImpl::Mlx5(srq) => unsafe { srq.post_recv(requests) }.map_err(PostFailure::from),
        }
    }
}
