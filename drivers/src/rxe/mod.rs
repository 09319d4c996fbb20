//! The rxe (soft-RoCE) backend.
//!
//! [`queue`] is the shared ring; [`cq`] and [`qp`] drive completion queues and queue pairs over it;
//! [`ah`] holds the address handles UD sends name.
//!
//! rxe's user context carries no driver data in either direction (the kernel's `rxe_alloc_ucontext`
//! ignores udata), and `QUERY_DEVICE` must be sent without any.

pub mod ah;
pub mod cq;
pub mod qp;
pub mod queue;
pub mod srq;

use crate::backend::ProviderContext;
use crate::discover::Driver;
use crate::error::Result;

/// The rxe part of a device context.
#[derive(Debug, Default)]
pub struct RxeContext {}

impl ProviderContext for RxeContext {
    const DRIVER: Driver = Driver::Rxe;
    /// `RXE_UVERBS_ABI_VERSION` is 2; rdma-core's provider accepts 1 and 2 (identical on 64-bit).
    const ABI_VERSIONS: (u32, u32) = (1, 2);

    fn context_request() -> (Vec<u8>, usize) {
        (Vec::new(), 0)
    }

    fn from_context_response(_resp: &[u8]) -> Result<Self> {
        Ok(RxeContext {})
    }

    /// rdma-core's `rxe_query_device`: "major.minor.sub_minor" from bits 63..32, 31..16, 15..0.
    fn format_fw_ver(raw: u64) -> String {
        format!("{}.{}.{}", raw >> 32, (raw >> 16) & 0xffff, raw & 0xffff)
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
