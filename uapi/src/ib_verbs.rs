//! Values the uverbs ABI carries whose C definitions live in the kernel's internal
//! `include/rdma/ib_verbs.h`, not in a uapi header: queue pair states and attribute-mask bits
//! (`ib_uverbs_modify_qp`, `ib_uverbs_query_qp`), send flags (`ib_uverbs_send_wr`, rxe's
//! `rxe_send_wr`), and the completion status values, receive opcodes and flags of
//! `ib_uverbs_wc`.
//!
//! The kernel copies these numbers to and from user space unchanged, so they are as much ABI as
//! the uapi headers. libibverbs' `<infiniband/verbs.h>` uses the same numbers for all of them
//! except the completion flags (its `IBV_WC_IP_CSUM_OK` is 4 and `IBV_WC_WITH_INV` 8, where the
//! kernel's `IB_WC_WITH_INVALIDATE` is 4); `tests/ib_verbs.rs` checks every value against
//! libibverbs' header where they agree and pins the kernel's where they do not.

/// `enum ib_qp_state`: reset.
pub const IB_QPS_RESET: u8 = 0;
/// `enum ib_qp_state`: initialised.
pub const IB_QPS_INIT: u8 = 1;
/// `enum ib_qp_state`: ready to receive.
pub const IB_QPS_RTR: u8 = 2;
/// `enum ib_qp_state`: ready to send.
pub const IB_QPS_RTS: u8 = 3;
/// `enum ib_qp_state`: send queue drained.
pub const IB_QPS_SQD: u8 = 4;
/// `enum ib_qp_state`: send queue error.
pub const IB_QPS_SQE: u8 = 5;
/// `enum ib_qp_state`: error.
pub const IB_QPS_ERR: u8 = 6;

/// `enum ib_qp_attr_mask`: `qp_state`.
pub const IB_QP_STATE: u32 = 1 << 0;
/// `enum ib_qp_attr_mask`: `cur_qp_state`.
pub const IB_QP_CUR_STATE: u32 = 1 << 1;
/// `enum ib_qp_attr_mask`: `en_sqd_async_notify`.
pub const IB_QP_EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
/// `enum ib_qp_attr_mask`: `qp_access_flags`.
pub const IB_QP_ACCESS_FLAGS: u32 = 1 << 3;
/// `enum ib_qp_attr_mask`: `pkey_index`.
pub const IB_QP_PKEY_INDEX: u32 = 1 << 4;
/// `enum ib_qp_attr_mask`: `port_num`.
pub const IB_QP_PORT: u32 = 1 << 5;
/// `enum ib_qp_attr_mask`: `qkey`.
pub const IB_QP_QKEY: u32 = 1 << 6;
/// `enum ib_qp_attr_mask`: the address vector.
pub const IB_QP_AV: u32 = 1 << 7;
/// `enum ib_qp_attr_mask`: `path_mtu`.
pub const IB_QP_PATH_MTU: u32 = 1 << 8;
/// `enum ib_qp_attr_mask`: `timeout`.
pub const IB_QP_TIMEOUT: u32 = 1 << 9;
/// `enum ib_qp_attr_mask`: `retry_cnt`.
pub const IB_QP_RETRY_CNT: u32 = 1 << 10;
/// `enum ib_qp_attr_mask`: `rnr_retry`.
pub const IB_QP_RNR_RETRY: u32 = 1 << 11;
/// `enum ib_qp_attr_mask`: `rq_psn`.
pub const IB_QP_RQ_PSN: u32 = 1 << 12;
/// `enum ib_qp_attr_mask`: `max_rd_atomic`.
pub const IB_QP_MAX_QP_RD_ATOMIC: u32 = 1 << 13;
/// `enum ib_qp_attr_mask`: the alternate path.
pub const IB_QP_ALT_PATH: u32 = 1 << 14;
/// `enum ib_qp_attr_mask`: `min_rnr_timer`.
pub const IB_QP_MIN_RNR_TIMER: u32 = 1 << 15;
/// `enum ib_qp_attr_mask`: `sq_psn`.
pub const IB_QP_SQ_PSN: u32 = 1 << 16;
/// `enum ib_qp_attr_mask`: `max_dest_rd_atomic`.
pub const IB_QP_MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
/// `enum ib_qp_attr_mask`: `path_mig_state`.
pub const IB_QP_PATH_MIG_STATE: u32 = 1 << 18;
/// `enum ib_qp_attr_mask`: `cap`.
pub const IB_QP_CAP: u32 = 1 << 19;
/// `enum ib_qp_attr_mask`: `dest_qp_num`.
pub const IB_QP_DEST_QPN: u32 = 1 << 20;
/// Every attribute the legacy `QUERY_QP`/`MODIFY_QP` commands know (`IB_QP_STATE` through
/// `IB_QP_DEST_QPN`, [`crate::IB_USER_LEGACY_LAST_QP_ATTR_MASK`] the last of them): a query of
/// everything.
pub const IB_QP_LEGACY_ALL: u32 = (1 << 21) - 1;

/// `enum ib_send_flags`: wait for earlier RDMA reads and atomics.
pub const IB_SEND_FENCE: u32 = 1 << 0;
/// `enum ib_send_flags`: produce a completion.
pub const IB_SEND_SIGNALED: u32 = 1 << 1;
/// `enum ib_send_flags`: solicited event at the receiver.
pub const IB_SEND_SOLICITED: u32 = 1 << 2;
/// `enum ib_send_flags`: the data is inline in the request.
pub const IB_SEND_INLINE: u32 = 1 << 3;

/// `enum ib_wc_status`: success.
pub const IB_WC_SUCCESS: u32 = 0;
/// `enum ib_wc_status`: local length error.
pub const IB_WC_LOC_LEN_ERR: u32 = 1;
/// `enum ib_wc_status`: local QP operation error.
pub const IB_WC_LOC_QP_OP_ERR: u32 = 2;
/// `enum ib_wc_status`: local EE context operation error.
pub const IB_WC_LOC_EEC_OP_ERR: u32 = 3;
/// `enum ib_wc_status`: local protection error.
pub const IB_WC_LOC_PROT_ERR: u32 = 4;
/// `enum ib_wc_status`: flushed.
pub const IB_WC_WR_FLUSH_ERR: u32 = 5;
/// `enum ib_wc_status`: memory window bind error.
pub const IB_WC_MW_BIND_ERR: u32 = 6;
/// `enum ib_wc_status`: bad response.
pub const IB_WC_BAD_RESP_ERR: u32 = 7;
/// `enum ib_wc_status`: local access error.
pub const IB_WC_LOC_ACCESS_ERR: u32 = 8;
/// `enum ib_wc_status`: remote invalid request.
pub const IB_WC_REM_INV_REQ_ERR: u32 = 9;
/// `enum ib_wc_status`: remote access error.
pub const IB_WC_REM_ACCESS_ERR: u32 = 10;
/// `enum ib_wc_status`: remote operation error.
pub const IB_WC_REM_OP_ERR: u32 = 11;
/// `enum ib_wc_status`: transport retries exceeded.
pub const IB_WC_RETRY_EXC_ERR: u32 = 12;
/// `enum ib_wc_status`: RNR retries exceeded.
pub const IB_WC_RNR_RETRY_EXC_ERR: u32 = 13;
/// `enum ib_wc_status`: remote aborted.
pub const IB_WC_REM_ABORT_ERR: u32 = 16;
/// `enum ib_wc_status`: any other error.
pub const IB_WC_GENERAL_ERR: u32 = 21;

/// `enum ib_wc_opcode`: a receive (the send opcodes are the uapi's `IB_UVERBS_WC_*`).
pub const IB_WC_RECV: u32 = 1 << 7;
/// `enum ib_wc_opcode`: an RDMA write with immediate data consumed a receive.
pub const IB_WC_RECV_RDMA_WITH_IMM: u32 = IB_WC_RECV + 1;

/// `enum ib_wc_flags`: a GRH is present.
pub const IB_WC_GRH: u32 = 1 << 0;
/// `enum ib_wc_flags`: the completion carries immediate data.
pub const IB_WC_WITH_IMM: u32 = 1 << 1;
/// `enum ib_wc_flags`: the completion carries an invalidated rkey (libibverbs' `IBV_WC_WITH_INV`
/// is `1 << 3`).
pub const IB_WC_WITH_INVALIDATE: u32 = 1 << 2;

/// libibverbs' `enum ibv_wc_flags`, the numbering completions reach users in: a GRH is present
/// (as the kernel's [`IB_WC_GRH`]).
pub const IBV_WC_GRH: u32 = IB_WC_GRH;
/// libibverbs' `enum ibv_wc_flags`: immediate data (as the kernel's [`IB_WC_WITH_IMM`]).
pub const IBV_WC_WITH_IMM: u32 = IB_WC_WITH_IMM;
/// libibverbs' `enum ibv_wc_flags`: the IP checksum was verified (no kernel counterpart).
pub const IBV_WC_IP_CSUM_OK: u32 = 1 << 2;
/// libibverbs' `enum ibv_wc_flags`: the completion carries an invalidated rkey (the kernel's
/// [`IB_WC_WITH_INVALIDATE`], renumbered).
pub const IBV_WC_WITH_INV: u32 = 1 << 3;

/// `enum ib_srq_attr_mask` (`MODIFY_SRQ`): resize the queue (`max_wr`).
pub const IB_SRQ_MAX_WR: u32 = 1 << 0;
/// `enum ib_srq_attr_mask` (`MODIFY_SRQ`): set the limit (`srq_limit`), which arms the limit event.
pub const IB_SRQ_LIMIT: u32 = 1 << 1;

/// `enum ib_mr_rereg_flags` (`REREG_MR`): change the region's memory (address, length, IOVA).
pub const IB_MR_REREG_TRANS: u32 = 1 << 0;
/// `enum ib_mr_rereg_flags` (`REREG_MR`): move the region to another protection domain.
pub const IB_MR_REREG_PD: u32 = 1 << 1;
/// `enum ib_mr_rereg_flags` (`REREG_MR`): change the access flags.
pub const IB_MR_REREG_ACCESS: u32 = 1 << 2;

/// `enum ib_cq_attr_mask` (`EX_MODIFY_CQ`): change the moderation (`cq_count`, `cq_period`).
pub const IB_CQ_MODERATE: u32 = 1 << 0;

/// `enum ib_odp_general_cap_bits`: the device pages registered memory in on demand.
pub const IB_ODP_SUPPORT: u64 = 1 << 0;
/// `enum ib_odp_general_cap_bits`: implicit on-demand regions (the whole address space).
pub const IB_ODP_SUPPORT_IMPLICIT: u64 = 1 << 1;
/// `enum ib_odp_transport_cap_bits`: sends from on-demand memory.
pub const IB_ODP_SUPPORT_SEND: u32 = 1 << 0;
/// `enum ib_odp_transport_cap_bits`: receives into on-demand memory.
pub const IB_ODP_SUPPORT_RECV: u32 = 1 << 1;
/// `enum ib_odp_transport_cap_bits`: RDMA WRITEs into on-demand memory.
pub const IB_ODP_SUPPORT_WRITE: u32 = 1 << 2;
/// `enum ib_odp_transport_cap_bits`: RDMA READs of on-demand memory.
pub const IB_ODP_SUPPORT_READ: u32 = 1 << 3;
/// `enum ib_odp_transport_cap_bits`: atomics on on-demand memory.
pub const IB_ODP_SUPPORT_ATOMIC: u32 = 1 << 4;
/// `enum ib_odp_transport_cap_bits`: receives from a shared receive queue into on-demand memory.
pub const IB_ODP_SUPPORT_SRQ_RECV: u32 = 1 << 5;
