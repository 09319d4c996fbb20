//! Completion queues.

use super::{dispatch, Backend, Cq, DeviceContext};
use crate::backend::{CqBackend, CqInit, Provider};
use crate::error::Result;
use crate::wc::WorkCompletion;

impl Cq {
    /// Creates a completion queue on `dev`.
    pub fn create(dev: &DeviceContext, init: &CqInit<'_>) -> Result<Cq> {
        dispatch!(Backend, &dev.backend, p => Provider::create_cq(p, init).map(Cq::from))
    }

    /// The kernel's handle.
    #[inline]
    pub fn handle(&self) -> u32 {
        dispatch!(Cq, self, cq => CqBackend::handle(cq))
    }

    /// The open device file the queue belongs to.
    pub fn ucontext(&self) -> &std::sync::Arc<crate::ucontext::Ucontext> {
        dispatch!(Cq, self, cq => CqBackend::ucontext(cq))
    }

    /// How many completions the queue holds.
    pub fn entries(&self) -> u32 {
        dispatch!(Cq, self, cq => CqBackend::entries(cq))
    }

    /// Fills `out` with up to `out.len()` completions, oldest first, and returns how many. No system
    /// call.
    #[inline]
    pub fn poll<C: From<WorkCompletion>>(&self, out: &mut [C]) -> Result<usize> {
        dispatch!(Cq, self, cq => CqBackend::poll(cq, out))
    }

    /// [`Cq::poll`] with each completion's device timestamp (a CQ created with timestamps).
    #[inline]
    pub fn poll_timestamped<C: From<crate::wc::TimestampedCompletion>>(
        &self,
        out: &mut [C],
    ) -> Result<usize> {
        dispatch!(Cq, self, cq => CqBackend::poll_timestamped(cq, out))
    }

    /// Arms the queue: its next completion (or next solicited one) raises an event on its channel.
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        dispatch!(Cq, self, cq => CqBackend::req_notify(cq, solicited_only))
    }

    /// `RESIZE_CQ`: room for at least `cqe` completions, those waiting kept; returns the new
    /// capacity.
    pub fn resize(&self, cqe: u32) -> Result<u32> {
        dispatch!(Cq, self, cq => CqBackend::resize(cq, cqe))
    }

    /// `EX_MODIFY_CQ`: completion events after `count` completions or `period_us` microseconds.
    pub fn moderate(&self, count: u16, period_us: u16) -> Result<()> {
        dispatch!(Cq, self, cq => CqBackend::moderate(cq, count, period_us))
    }

    /// A completion event of this queue was read from its channel; the backend may need to know
    /// (mlx5: the next arm carries the next sequence number).
    pub fn event(&self) {
        dispatch!(Cq, self, cq => CqBackend::event(cq))
    }
}
