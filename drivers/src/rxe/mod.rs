//! The rxe (soft-RoCE) backend.
//!
//! [`queue`] is the shared ring; [`cq`] and [`qp`] drive completion queues and queue pairs over it;
//! [`ah`] holds the address handles UD sends name.
//!
//! rxe's user context carries no driver data in either direction (the kernel's `rxe_alloc_ucontext`
//! ignores udata), and `QUERY_DEVICE` must be sent without any.
//!
//! [`queue`]: crate::rxe::queue
//! [`cq`]: crate::rxe::cq
//! [`qp`]: crate::rxe::qp
//! [`ah`]: crate::rxe::ah

pub mod ah;
pub mod cq;
pub mod qp;
pub mod queue;
mod rings;
pub mod srq;

use std::sync::Arc;

use crate::backend::{AhInit, Capability, CqInit, Provider, SrqBackend};
use crate::cmd::srq::SrqInit;
use crate::cmd::QpInit;
use crate::error::{Error, Result, Verb};
use crate::ucontext::Ucontext;

/// The rxe device context: rxe keeps no per-context state in user space.
#[derive(Debug)]
pub struct RxeContext {
    uctx: Arc<Ucontext>,
}

impl Provider for RxeContext {
    /// `RXE_UVERBS_ABI_VERSION` is 2; rdma-core's provider accepts 1 and 2 (identical on 64-bit).
    const ABI_VERSIONS: (u32, u32) = (1, 2);

    type Cq = cq::RxeCq;
    type Qp = qp::RxeQp;
    type Srq = srq::RxeSrq;
    type Ah = ah::RxeAh;

    fn context_request() -> (Vec<u8>, usize) {
        (Vec::new(), 0)
    }

    fn from_context_response(uctx: Arc<Ucontext>, _resp: &[u8]) -> Result<Self> {
        Ok(RxeContext { uctx })
    }

    /// rdma-core's `rxe_query_device`: "major.minor.sub_minor" from bits 63..32, 31..16, 15..0.
    fn format_fw_ver(raw: u64) -> String {
        format!("{}.{}.{}", raw >> 32, (raw >> 16) & 0xffff, raw & 0xffff)
    }

    fn ucontext(&self) -> &Arc<Ucontext> {
        &self.uctx
    }

    /// rxe binds type 2 windows by work request, resizes CQs (the kernel copies the ring) and
    /// passes moderation on to the kernel (whose rxe reports none, and refuses it). Its kernel
    /// driver registers no dma-bufs and changes a region's protection domain and access only, not
    /// its memory.
    fn supports(&self, capability: Capability) -> bool {
        matches!(
            capability,
            Capability::MemoryWindows | Capability::CqResize | Capability::CqModeration
        )
    }

    fn create_cq(self: &Arc<Self>, init: &CqInit<'_>) -> Result<cq::RxeCq> {
        cq::RxeCq::create(&self.uctx, init)
    }

    fn create_qp(
        self: &Arc<Self>,
        init: &QpInit,
        _send: &cq::RxeCq,
        _recv: &cq::RxeCq,
        srq: Option<&srq::RxeSrq>,
    ) -> Result<qp::RxeQp> {
        // The kernel finds the CQs and the SRQ by the handles in `init`.
        if init.srq != srq.map(SrqBackend::handle) {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateQp,
                what: "the shared receive queue does not match the request".into(),
            });
        }
        qp::RxeQp::create(&self.uctx, init)
    }

    fn create_srq(self: &Arc<Self>, init: &SrqInit) -> Result<srq::RxeSrq> {
        srq::RxeSrq::create(&self.uctx, init)
    }

    fn create_ah(self: &Arc<Self>, pd: u32, init: &AhInit) -> Result<ah::RxeAh> {
        ah::RxeAh::create(&self.uctx, pd, &init.attr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fw_ver_format() {
        assert_eq!(RxeContext::format_fw_ver(0), "0.0.0");
        assert_eq!(
            RxeContext::format_fw_ver((1 << 32) | (2 << 16) | 3),
            "1.2.3"
        );
    }
}
