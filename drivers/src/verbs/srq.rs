//! Shared receive queues.

use super::{dispatch, Backend, DeviceContext, Srq};
use crate::backend::{Provider, SrqBackend};
use crate::cmd::srq::SrqInit;
use crate::error::Result;
use crate::wr::{PostError, RecvWr};

impl Srq {
    /// Creates a shared receive queue on `dev`.
    pub fn create(dev: &DeviceContext, init: &SrqInit) -> Result<Srq> {
        dispatch!(Backend, &dev.backend, p => Provider::create_srq(p, init).map(Srq::from))
    }

    /// The kernel's handle.
    pub fn handle(&self) -> u32 {
        dispatch!(Srq, self, srq => SrqBackend::handle(srq))
    }

    /// The open device file the queue belongs to.
    pub fn ucontext(&self) -> &std::sync::Arc<crate::ucontext::Ucontext> {
        dispatch!(Srq, self, srq => SrqBackend::ucontext(srq))
    }

    /// The SRQ number.
    pub fn srqn(&self) -> u32 {
        dispatch!(Srq, self, srq => SrqBackend::srqn(srq))
    }

    /// Receive work requests it really holds.
    pub fn capacity(&self) -> u32 {
        dispatch!(Srq, self, srq => SrqBackend::capacity(srq))
    }

    /// Scatter entries per receive work request.
    pub fn max_sge(&self) -> u32 {
        dispatch!(Srq, self, srq => SrqBackend::max_sge(srq))
    }

    /// Arms the limit event: once fewer than `limit` receives remain posted, the device reports
    /// `SRQ_LIMIT_REACHED` (0 disarms).
    pub fn set_limit(&self, limit: u32) -> Result<()> {
        dispatch!(Srq, self, srq => SrqBackend::set_limit(srq, limit))
    }

    /// `QUERY_SRQ`: (max_wr, max_sge, limit).
    pub fn query(&self) -> Result<(u32, u32, u32)> {
        dispatch!(Srq, self, srq => SrqBackend::query(srq))
    }

    /// Posts receive work requests: no system call. Stops at the first invalid request or the first
    /// that finds the queue full ([`PostError::index`]).
    ///
    /// # Safety
    /// The device writes each entry's memory until the receive completes: nothing may access or
    /// free it before the completion has been polled.
    #[inline]
    pub unsafe fn post_recv<'a, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        // SAFETY: the same contract, passed on.
        dispatch!(Srq, self, srq => unsafe { SrqBackend::post_recv(srq, wrs) })
    }
}
