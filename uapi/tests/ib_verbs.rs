//! The values of `uverbs_uapi::ib_verbs` (from the kernel's internal `ib_verbs.h`, which no uapi
//! header carries) against libibverbs' `<infiniband/verbs.h>`, which uses the same numbers for QP
//! states, attribute masks, send flags, completion status and receive opcodes; the completion
//! flags, where the two differ, are pinned to the kernel's values, and libibverbs' own
//! (`IBV_WC_*`, the numbering users see) are checked against its header.

mod common;

use uverbs_uapi::*;

/// `(Rust value, the libibverbs C expression it must equal)`.
fn table() -> Vec<(i128, &'static str)> {
    macro_rules! same {
        ($($rust:ident = $c:ident),+ $(,)?) => { vec![$((i128::from($rust), stringify!($c))),+] };
    }
    same![
        IB_QPS_RESET = IBV_QPS_RESET,
        IB_QPS_INIT = IBV_QPS_INIT,
        IB_QPS_RTR = IBV_QPS_RTR,
        IB_QPS_RTS = IBV_QPS_RTS,
        IB_QPS_SQD = IBV_QPS_SQD,
        IB_QPS_SQE = IBV_QPS_SQE,
        IB_QPS_ERR = IBV_QPS_ERR,
        IB_QP_STATE = IBV_QP_STATE,
        IB_QP_CUR_STATE = IBV_QP_CUR_STATE,
        IB_QP_EN_SQD_ASYNC_NOTIFY = IBV_QP_EN_SQD_ASYNC_NOTIFY,
        IB_QP_ACCESS_FLAGS = IBV_QP_ACCESS_FLAGS,
        IB_QP_PKEY_INDEX = IBV_QP_PKEY_INDEX,
        IB_QP_PORT = IBV_QP_PORT,
        IB_QP_QKEY = IBV_QP_QKEY,
        IB_QP_AV = IBV_QP_AV,
        IB_QP_PATH_MTU = IBV_QP_PATH_MTU,
        IB_QP_TIMEOUT = IBV_QP_TIMEOUT,
        IB_QP_RETRY_CNT = IBV_QP_RETRY_CNT,
        IB_QP_RNR_RETRY = IBV_QP_RNR_RETRY,
        IB_QP_RQ_PSN = IBV_QP_RQ_PSN,
        IB_QP_MAX_QP_RD_ATOMIC = IBV_QP_MAX_QP_RD_ATOMIC,
        IB_QP_ALT_PATH = IBV_QP_ALT_PATH,
        IB_QP_MIN_RNR_TIMER = IBV_QP_MIN_RNR_TIMER,
        IB_QP_SQ_PSN = IBV_QP_SQ_PSN,
        IB_QP_MAX_DEST_RD_ATOMIC = IBV_QP_MAX_DEST_RD_ATOMIC,
        IB_QP_PATH_MIG_STATE = IBV_QP_PATH_MIG_STATE,
        IB_QP_CAP = IBV_QP_CAP,
        IB_QP_DEST_QPN = IBV_QP_DEST_QPN,
        IB_SEND_FENCE = IBV_SEND_FENCE,
        IB_SEND_SIGNALED = IBV_SEND_SIGNALED,
        IB_SEND_SOLICITED = IBV_SEND_SOLICITED,
        IB_SEND_INLINE = IBV_SEND_INLINE,
        IB_WC_SUCCESS = IBV_WC_SUCCESS,
        IB_WC_LOC_LEN_ERR = IBV_WC_LOC_LEN_ERR,
        IB_WC_LOC_QP_OP_ERR = IBV_WC_LOC_QP_OP_ERR,
        IB_WC_LOC_EEC_OP_ERR = IBV_WC_LOC_EEC_OP_ERR,
        IB_WC_LOC_PROT_ERR = IBV_WC_LOC_PROT_ERR,
        IB_WC_WR_FLUSH_ERR = IBV_WC_WR_FLUSH_ERR,
        IB_WC_MW_BIND_ERR = IBV_WC_MW_BIND_ERR,
        IB_WC_BAD_RESP_ERR = IBV_WC_BAD_RESP_ERR,
        IB_WC_LOC_ACCESS_ERR = IBV_WC_LOC_ACCESS_ERR,
        IB_WC_REM_INV_REQ_ERR = IBV_WC_REM_INV_REQ_ERR,
        IB_WC_REM_ACCESS_ERR = IBV_WC_REM_ACCESS_ERR,
        IB_WC_REM_OP_ERR = IBV_WC_REM_OP_ERR,
        IB_WC_RETRY_EXC_ERR = IBV_WC_RETRY_EXC_ERR,
        IB_WC_RNR_RETRY_EXC_ERR = IBV_WC_RNR_RETRY_EXC_ERR,
        IB_WC_REM_ABORT_ERR = IBV_WC_REM_ABORT_ERR,
        IB_WC_GENERAL_ERR = IBV_WC_GENERAL_ERR,
        IB_WC_RECV = IBV_WC_RECV,
        IB_WC_RECV_RDMA_WITH_IMM = IBV_WC_RECV_RDMA_WITH_IMM,
        IB_WC_GRH = IBV_WC_GRH,
        IB_WC_WITH_IMM = IBV_WC_WITH_IMM,
        IB_SRQ_MAX_WR = IBV_SRQ_MAX_WR,
        IB_SRQ_LIMIT = IBV_SRQ_LIMIT,
        IB_MR_REREG_TRANS = IBV_REREG_MR_CHANGE_TRANSLATION,
        IB_MR_REREG_PD = IBV_REREG_MR_CHANGE_PD,
        IB_MR_REREG_ACCESS = IBV_REREG_MR_CHANGE_ACCESS,
        IB_CQ_MODERATE = IBV_CQ_ATTR_MODERATE,
        IB_ODP_SUPPORT = IBV_ODP_SUPPORT,
        IB_ODP_SUPPORT_IMPLICIT = IBV_ODP_SUPPORT_IMPLICIT,
        IB_ODP_SUPPORT_SEND = IBV_ODP_SUPPORT_SEND,
        IB_ODP_SUPPORT_RECV = IBV_ODP_SUPPORT_RECV,
        IB_ODP_SUPPORT_WRITE = IBV_ODP_SUPPORT_WRITE,
        IB_ODP_SUPPORT_READ = IBV_ODP_SUPPORT_READ,
        IB_ODP_SUPPORT_ATOMIC = IBV_ODP_SUPPORT_ATOMIC,
        IB_ODP_SUPPORT_SRQ_RECV = IBV_ODP_SUPPORT_SRQ_RECV,
        IBV_WC_GRH = IBV_WC_GRH,
        IBV_WC_WITH_IMM = IBV_WC_WITH_IMM,
        IBV_WC_IP_CSUM_OK = IBV_WC_IP_CSUM_OK,
        IBV_WC_WITH_INV = IBV_WC_WITH_INV,
        // The work-request and send-completion opcodes of the uapi header agree with libibverbs'.
        IB_UVERBS_WR_SEND = IBV_WR_SEND,
        IB_UVERBS_WR_SEND_WITH_IMM = IBV_WR_SEND_WITH_IMM,
        IB_UVERBS_WR_RDMA_WRITE = IBV_WR_RDMA_WRITE,
        IB_UVERBS_WR_RDMA_WRITE_WITH_IMM = IBV_WR_RDMA_WRITE_WITH_IMM,
        IB_UVERBS_WR_RDMA_READ = IBV_WR_RDMA_READ,
        IB_UVERBS_WR_ATOMIC_CMP_AND_SWP = IBV_WR_ATOMIC_CMP_AND_SWP,
        IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD = IBV_WR_ATOMIC_FETCH_AND_ADD,
        IB_UVERBS_WR_LOCAL_INV = IBV_WR_LOCAL_INV,
        IB_UVERBS_WR_BIND_MW = IBV_WR_BIND_MW,
        IB_UVERBS_WR_SEND_WITH_INV = IBV_WR_SEND_WITH_INV,
        IB_UVERBS_WC_SEND = IBV_WC_SEND,
        IB_UVERBS_WC_RDMA_WRITE = IBV_WC_RDMA_WRITE,
        IB_UVERBS_WC_RDMA_READ = IBV_WC_RDMA_READ,
        IB_UVERBS_WC_COMP_SWAP = IBV_WC_COMP_SWAP,
        IB_UVERBS_WC_FETCH_ADD = IBV_WC_FETCH_ADD,
        IB_UVERBS_WC_BIND_MW = IBV_WC_BIND_MW,
        IB_UVERBS_WC_LOCAL_INV = IBV_WC_LOCAL_INV,
    ]
}

#[test]
fn ib_verbs_values_match_libibverbs() {
    let table = table();
    assert_eq!(table.len(), 87, "entries in the table");
    common::assert_matches_c(
        "ib_verbs",
        "#include <infiniband/verbs.h>\n",
        "libibverbs-dev",
        &table,
    );
}

/// Where the kernel and libibverbs differ, the kernel's numbers (`include/rdma/ib_verbs.h`).
#[test]
fn completion_flags_are_the_kernels() {
    assert_eq!(IB_WC_WITH_INVALIDATE, 4);
    assert_eq!(
        IB_QP_LEGACY_ALL,
        (IB_USER_LEGACY_LAST_QP_ATTR_MASK << 1) - 1
    );
    assert_eq!(IB_QP_LEGACY_ALL, u32::MAX >> 11);
}
