//! The mlx5 (ConnectX) backend: the user context's driver data.
//!
//! `GET_CONTEXT` carries `struct mlx5_ib_alloc_ucontext_req_v2` and returns
//! `struct mlx5_ib_alloc_ucontext_resp`, whose fields (BlueFlame register size, UAR counts, CQE
//! version, maximum WQE sizes) every later mlx5 command depends on. The request asks for what
//! rdma-core's provider asks for by default, except dynamic UARs and DEVX, which this backend does not
//! use: the kernel then hands out `total_num_bfregs` static BlueFlame registers.
//!
//! The data path, as models over caller-provided buffers: [`wqe`] (send WQE segments and the
//! [`wqe::SendQueue`] that builds them into the SQ ring), [`cqe`] (CQE views and the
//! [`cqe::CompletionQueue`] that polls them) and [`doorbell`] (doorbell records, UAR writes,
//! BlueFlame registers). `drivers/tests/mlx5_golden.rs` checks them byte for byte against rdma-core's
//! `<infiniband/mlx5dv.h>`.

pub mod cqe;
pub mod doorbell;
#[cfg(feature = "mlx5-model")]
pub mod model;
pub mod wqe;

use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::discover::Driver;
use crate::error::{Error, Result, Verb};
use crate::provider::ProviderContext;

/// BlueFlame registers asked for (rdma-core's default, `MLX5_TOTAL_UUARS`).
pub const TOTAL_BFREGS: u32 = 16;
/// Of those, low-latency ones (rdma-core's default, `MLX5_NUM_LOW_LAT_UUARS`).
pub const LOW_LATENCY_BFREGS: u32 = 4;
/// The newest CQE format this backend parses.
pub const MAX_CQE_VERSION: u8 = 1;

/// The mlx5 part of a device context: the kernel's answer to `GET_CONTEXT`.
#[derive(Debug, Clone)]
pub struct Mlx5Context {
    resp: uapi::mlx5_ib_alloc_ucontext_resp,
}

impl Mlx5Context {
    /// The request this backend sends.
    pub fn request() -> uapi::mlx5_ib_alloc_ucontext_req_v2 {
        let mut req = uapi::mlx5_ib_alloc_ucontext_req_v2::new_zeroed();
        req.total_num_bfregs = TOTAL_BFREGS;
        req.num_low_latency_bfregs = LOW_LATENCY_BFREGS;
        req.max_cqe_version = MAX_CQE_VERSION;
        req.lib_caps = uapi::MLX5_LIB_CAP_4K_UAR;
        req
    }

    /// The kernel's response, as it came.
    pub fn response(&self) -> &uapi::mlx5_ib_alloc_ucontext_resp {
        &self.resp
    }

    /// The CQE format the kernel chose (0 or 1).
    pub fn cqe_version(&self) -> u8 {
        self.resp.cqe_version
    }

    /// The size of one BlueFlame register, in bytes (the write-combining buffer is half of it).
    pub fn bf_reg_size(&self) -> u32 {
        self.resp.bf_reg_size
    }
}

impl ProviderContext for Mlx5Context {
    const DRIVER: Driver = Driver::Mlx5;
    /// `MLX5_IB_UVERBS_ABI_VERSION`.
    const ABI_VERSIONS: (u32, u32) = (1, 1);

    fn context_request() -> (Vec<u8>, usize) {
        (
            Self::request().as_bytes().to_vec(),
            std::mem::size_of::<uapi::mlx5_ib_alloc_ucontext_resp>(),
        )
    }

    fn from_context_response(resp: &[u8]) -> Result<Self> {
        let resp = uapi::mlx5_ib_alloc_ucontext_resp::read_from_bytes(resp).map_err(|_| {
            Error::Protocol {
                verb: Verb::GetContext,
                what: format!("mlx5 context response of {} bytes", resp.len()),
            }
        })?;
        if resp.cqe_version > MAX_CQE_VERSION {
            return Err(Error::Protocol {
                verb: Verb::GetContext,
                what: format!(
                    "mlx5 CQE version {} is newer than {MAX_CQE_VERSION}",
                    resp.cqe_version
                ),
            });
        }
        Ok(Mlx5Context { resp })
    }

    /// rdma-core's `mlx5_query_device_ex`: "major.minor.subminor" with a four-digit subminor.
    fn format_fw_ver(raw: u64) -> String {
        format!("{}.{}.{:04}", raw >> 32, (raw >> 16) & 0xffff, raw & 0xffff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes() {
        let (req, resp_len) = Mlx5Context::context_request();
        assert_eq!(req.len(), 32);
        assert_eq!(&req[0..4], &16u32.to_ne_bytes());
        assert_eq!(&req[4..8], &4u32.to_ne_bytes());
        assert_eq!(&req[8..16], &[0u8; 8], "no DEVX, no comp_mask");
        assert_eq!(req[16], 1, "max_cqe_version");
        assert_eq!(&req[24..32], &1u64.to_ne_bytes(), "4K UAR, no dynamic UAR");
        assert_eq!(
            resp_len,
            std::mem::size_of::<uapi::mlx5_ib_alloc_ucontext_resp>()
        );
    }

    #[test]
    fn response_is_checked() {
        let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
        resp.bf_reg_size = 512;
        resp.cqe_version = 1;
        let ctx = Mlx5Context::from_context_response(resp.as_bytes()).unwrap();
        assert_eq!((ctx.bf_reg_size(), ctx.cqe_version()), (512, 1));
        resp.cqe_version = 2;
        assert!(Mlx5Context::from_context_response(resp.as_bytes()).is_err());
        assert!(Mlx5Context::from_context_response(&[0u8; 3]).is_err());
    }

    #[test]
    fn fw_ver_format() {
        assert_eq!(
            Mlx5Context::format_fw_ver((16 << 32) | (35 << 16) | 2000),
            "16.35.2000"
        );
        assert_eq!(
            Mlx5Context::format_fw_ver((20 << 32) | (31 << 16) | 12),
            "20.31.0012"
        );
    }
}
