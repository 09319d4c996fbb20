//! Work completions as every backend delivers them: [`WorkCompletion`], the contents of libibverbs'
//! `struct ibv_wc` in its numbering, built once by the backend from its ring (rxe's
//! `ib_uverbs_wc` records, mlx5's CQEs) and handed up unchanged.

use uverbs_uapi as uapi;

/// Work completion statuses (`enum ib_wc_status`; libibverbs' `ibv_wc_status` has the same values),
/// by short names; the values are `uverbs_uapi`'s.
pub mod wc_status {
    pub use uverbs_uapi::{
        IB_WC_BAD_RESP_ERR as BAD_RESP_ERR, IB_WC_GENERAL_ERR as GENERAL_ERR,
        IB_WC_LOC_ACCESS_ERR as LOC_ACCESS_ERR, IB_WC_LOC_LEN_ERR as LOC_LEN_ERR,
        IB_WC_LOC_PROT_ERR as LOC_PROT_ERR, IB_WC_LOC_QP_OP_ERR as LOC_QP_OP_ERR,
        IB_WC_MW_BIND_ERR as MW_BIND_ERR, IB_WC_REM_ABORT_ERR as REM_ABORT_ERR,
        IB_WC_REM_ACCESS_ERR as REM_ACCESS_ERR, IB_WC_REM_INV_REQ_ERR as REM_INV_REQ_ERR,
        IB_WC_REM_OP_ERR as REM_OP_ERR, IB_WC_RETRY_EXC_ERR as RETRY_EXC_ERR,
        IB_WC_RNR_RETRY_EXC_ERR as RNR_RETRY_EXC_ERR, IB_WC_SUCCESS as SUCCESS,
        IB_WC_WR_FLUSH_ERR as WR_FLUSH_ERR,
    };
}

/// Work completion opcodes (`enum ib_wc_opcode`; libibverbs' `ibv_wc_opcode` has the same values),
/// by short names; the values are `uverbs_uapi`'s.
pub mod wc_opcode {
    pub use uverbs_uapi::{
        IB_UVERBS_WC_BIND_MW as BIND_MW, IB_UVERBS_WC_COMP_SWAP as COMP_SWAP,
        IB_UVERBS_WC_FETCH_ADD as FETCH_ADD, IB_UVERBS_WC_LOCAL_INV as LOCAL_INV,
        IB_UVERBS_WC_RDMA_READ as RDMA_READ, IB_UVERBS_WC_RDMA_WRITE as RDMA_WRITE,
        IB_UVERBS_WC_SEND as SEND, IB_UVERBS_WC_TSO as TSO, IB_WC_RECV as RECV,
        IB_WC_RECV_RDMA_WITH_IMM as RECV_RDMA_WITH_IMM,
    };
}

/// Work completion flags in libibverbs' numbering (`enum ibv_wc_flags`), by short names; the
/// values are `uverbs_uapi`'s.
pub mod wc_flags {
    pub use uverbs_uapi::{
        IBV_WC_GRH as GRH, IBV_WC_IP_CSUM_OK as IP_CSUM_OK, IBV_WC_WITH_IMM as WITH_IMM,
        IBV_WC_WITH_INV as WITH_INV,
    };
}

/// A work completion: `struct ibv_wc`'s fields, in its order and numbering ([`wc_status`],
/// [`wc_opcode`], [`wc_flags`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkCompletion {
    /// The request's `wr_id`.
    pub wr_id: u64,
    /// [`wc_status`].
    pub status: u32,
    /// [`wc_opcode`]. On an error, rdma-core's mlx5 leaves it unset; here it is the failed
    /// request's (sends) or [`wc_opcode::RECV`] (receives).
    pub opcode: u32,
    /// The vendor syndrome of an error.
    pub vendor_err: u32,
    /// Bytes received, read (RDMA read) or 8 (atomics); 0 for other sends.
    pub byte_len: u32,
    /// Immediate data (wire order) with [`wc_flags::WITH_IMM`], the invalidated rkey with
    /// [`wc_flags::WITH_INV`].
    pub imm_data: u32,
    /// The local QP number.
    pub qp_num: u32,
    /// The remote QP number (UD).
    pub src_qp: u32,
    /// [`wc_flags`].
    pub wc_flags: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Source LID.
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// Destination LID path bits.
    pub dlid_path_bits: u8,
}

/// A completion and the device's clock when the work completed (mlx5: the CQE's timestamp, in
/// the device's cycles, `hca_core_clock` kHz; 0 for a completion in error): what a timestamped
/// poll (`CqBackend::poll_timestamped`) hands out. Kept apart from [`WorkCompletion`], so that a
/// plain poll neither reads nor stores it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimestampedCompletion {
    /// The completion.
    pub wc: WorkCompletion,
    /// The device's clock.
    pub timestamp: u64,
}

impl From<WorkCompletion> for TimestampedCompletion {
    /// The completion with no timestamp (0), for a poll that reads none.
    #[inline(always)]
    fn from(wc: WorkCompletion) -> TimestampedCompletion {
        TimestampedCompletion { wc, timestamp: 0 }
    }
}

impl WorkCompletion {
    /// The completion a kernel `ib_uverbs_wc` record reports (rxe's ring): the same numbers,
    /// except the with-invalidate flag, which the kernel numbers `IB_WC_WITH_INVALIDATE` (4) and
    /// libibverbs `IBV_WC_WITH_INV` (8).
    #[inline]
    pub fn from_kernel(wc: &uapi::ib_uverbs_wc) -> WorkCompletion {
        let mut flags = wc.wc_flags & (uapi::IB_WC_GRH | uapi::IB_WC_WITH_IMM);
        if wc.wc_flags & uapi::IB_WC_WITH_INVALIDATE != 0 {
            flags |= wc_flags::WITH_INV;
        }
        WorkCompletion {
            wr_id: wc.wr_id,
            status: wc.status,
            opcode: wc.opcode,
            vendor_err: wc.vendor_err,
            byte_len: wc.byte_len,
            imm_data: wc.ex,
            qp_num: wc.qp_num,
            src_qp: wc.src_qp,
            wc_flags: flags,
            pkey_index: wc.pkey_index,
            slid: wc.slid,
            sl: wc.sl,
            dlid_path_bits: wc.dlid_path_bits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    #[test]
    fn kernel_flags_are_renumbered() {
        let mut k = uapi::ib_uverbs_wc::new_zeroed();
        k.wc_flags = uapi::IB_WC_GRH | uapi::IB_WC_WITH_IMM | uapi::IB_WC_WITH_INVALIDATE;
        k.ex = 0x1234;
        let wc = WorkCompletion::from_kernel(&k);
        assert_eq!(
            wc.wc_flags,
            wc_flags::GRH | wc_flags::WITH_IMM | wc_flags::WITH_INV
        );
        assert_eq!(wc.wc_flags & wc_flags::IP_CSUM_OK, 0);
        assert_eq!(wc.imm_data, 0x1234);
    }
}
