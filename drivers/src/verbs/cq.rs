//! Completion queues.

use std::sync::Arc;

use super::{dispatch, Backend, Cq, DeviceContext};
use crate::backend::{CqBackend, CqInit, Provider};
use crate::error::Result;
use crate::ucontext::Ucontext;
use crate::wc::{TimestampedCompletion, WorkCompletion};

impl Cq {
    /// Creates a completion queue on `dev`.
    pub fn create(dev: &DeviceContext, init: &CqInit<'_>) -> Result<Cq> {
        dispatch!(Backend, &dev.backend, p => Provider::create_cq(p, init).map(Cq::from))
    }
}

/// The backend's queue, through a `match`.
impl CqBackend for Cq {
    #[inline]
    fn handle(&self) -> u32 {
        dispatch!(Cq, self, cq => CqBackend::handle(cq))
    }

    fn ucontext(&self) -> &Arc<Ucontext> {
        dispatch!(Cq, self, cq => CqBackend::ucontext(cq))
    }

    fn entries(&self) -> u32 {
        dispatch!(Cq, self, cq => CqBackend::entries(cq))
    }

    #[inline]
    fn poll<C: From<WorkCompletion>>(&self, out: &mut [C]) -> Result<usize> {
        dispatch!(Cq, self, cq => CqBackend::poll(cq, out))
    }

    /// Arms the queue: its next completion (or next solicited one) raises an event on its channel.
    fn req_notify(&self, solicited_only: bool) -> Result<()> {
        dispatch!(Cq, self, cq => CqBackend::req_notify(cq, solicited_only))
    }

    /// A completion event of this queue was read from its channel; the backend may need to know
    /// (mlx5: the next arm carries the next sequence number).
    fn event(&self) {
        dispatch!(Cq, self, cq => CqBackend::event(cq))
    }

    #[inline]
    fn poll_timestamped<C: From<TimestampedCompletion>>(&self, out: &mut [C]) -> Result<usize> {
        dispatch!(Cq, self, cq => CqBackend::poll_timestamped(cq, out))
    }

    #[inline(always)]
    fn poll_one(
        &self,
        out: &mut [TimestampedCompletion; 1],
        timestamps: bool,
    ) -> Result<(usize, bool)> {
        dispatch!(Cq, self, cq => CqBackend::poll_one(cq, out, timestamps))
    }

    fn resize(&self, cqe: u32) -> Result<u32> {
        dispatch!(Cq, self, cq => CqBackend::resize(cq, cqe))
    }

    fn moderate(&self, count: u16, period_us: u16) -> Result<()> {
        dispatch!(Cq, self, cq => CqBackend::moderate(cq, count, period_us))
    }
}
