//! Shared receive queues: [`SharedReceiveQueue`].

use std::io;
use std::sync::Arc;

use uverbs_drivers::backend::SrqBackend;
use uverbs_drivers::cmd::srq::SrqInit;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::verbs::Srq;

use crate::pd::{PdInner, ProtectionDomain};
use crate::wr::{PostFailure, ReceiveRequest};

/// The kernel object and ring behind a shared receive queue, shared with the queue pairs that use
/// it.
#[derive(Debug)]
pub(crate) struct SrqInner {
    // Dropped first: the SRQ is destroyed while its protection domain is still there.
    pub(crate) imp: Srq,
    id: isize,
    pub(crate) pd: Arc<PdInner>,
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
            pd: pd.inner.handle(),
            max_wr,
            max_sge,
            limit: 0,
            user_handle: id as u64,
        };
        let imp = Srq::create(&pd.inner.ctx.drv, &init)?;
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
        self.inner.imp.srqn()
    }

    /// The capacities it really has (at least those asked for).
    pub fn caps(&self) -> SrqCaps {
        SrqCaps {
            max_wr: self.inner.imp.capacity(),
            max_sge: self.inner.imp.max_sge(),
        }
    }

    /// Arms the limit (`ibv_modify_srq` with `IBV_SRQ_LIMIT`): once fewer than `limit` posted
    /// receives remain, the device reports [`crate::AsyncEventKind::SrqLimitReached`] with this
    /// queue's [`id`](SharedReceiveQueue::id) on the context's async event file, once, and disarms
    /// (the limit goes back to 0). `limit` 0 disarms; a limit above the capacity is an error.
    #[doc(alias = "set_limit")]
    #[doc(alias = "ibv_modify_srq")]
    pub fn arm(&self, limit: u32) -> io::Result<()> {
        Ok(self.inner.imp.set_limit(limit)?)
    }

    /// The limit as the device has it now (`ibv_query_srq`): what [`SharedReceiveQueue::arm`] set,
    /// or 0 once the limit event fired.
    pub fn limit(&self) -> io::Result<u32> {
        Ok(self.inner.imp.query()?.2)
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
        // SAFETY: the requests' memory is covered by this function's contract.
        unsafe { self.inner.imp.post_recv(requests) }.map_err(PostFailure::from)
    }
}
