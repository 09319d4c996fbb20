//! Shared receive queues.

use std::sync::Arc;

use super::{dispatch, Backend, DeviceContext, Srq};
use crate::backend::{Provider, SrqBackend};
use crate::cmd::srq::SrqInit;
use crate::error::Result;
use crate::ucontext::Ucontext;
use crate::wr::{PostError, RecvWr};

impl Srq {
    /// Creates a shared receive queue on `dev`.
    pub fn create(dev: &DeviceContext, init: &SrqInit) -> Result<Srq> {
        dispatch!(Backend, &dev.backend, p => Provider::create_srq(p, init).map(Srq::from))
    }
}

/// The backend's queue, through a `match`.
impl SrqBackend for Srq {
    fn handle(&self) -> u32 {
        dispatch!(Srq, self, srq => SrqBackend::handle(srq))
    }

    fn ucontext(&self) -> &Arc<Ucontext> {
        dispatch!(Srq, self, srq => SrqBackend::ucontext(srq))
    }

    fn srqn(&self) -> u32 {
        dispatch!(Srq, self, srq => SrqBackend::srqn(srq))
    }

    fn capacity(&self) -> u32 {
        dispatch!(Srq, self, srq => SrqBackend::capacity(srq))
    }

    fn max_sge(&self) -> u32 {
        dispatch!(Srq, self, srq => SrqBackend::max_sge(srq))
    }

    /// Arms the limit event: once fewer than `limit` receives remain posted, the device reports
    /// `SRQ_LIMIT_REACHED` (0 disarms).
    fn set_limit(&self, limit: u32) -> Result<()> {
        dispatch!(Srq, self, srq => SrqBackend::set_limit(srq, limit))
    }

    fn query(&self) -> Result<(u32, u32, u32)> {
        dispatch!(Srq, self, srq => SrqBackend::query(srq))
    }

    /// Posts receive work requests: no system call. Stops at the first invalid request or the first
    /// that finds the queue full ([`PostError::index`]).
    ///
    /// # Safety
    /// The device writes each entry's memory until the receive completes: nothing may access or
    /// free it before the completion has been polled.
    #[inline]
    unsafe fn post_recv<'a, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        // SAFETY: the same contract, passed on.
        dispatch!(Srq, self, srq => unsafe { SrqBackend::post_recv(srq, wrs) })
    }
}
