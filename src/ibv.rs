//! The `ibv_*` types of the `ibverbs` crate (0.9.2), with the same names, shapes and values, so that
//! programs written against it compile unchanged.
//!
//! `ibv_qp_type`, `ibv_wc_status`, `ibv_wc_opcode`, `ibv_qp_state` and `ibv_wr_opcode` are modules
//! holding `pub type Type = u32` and the constants, as bindgen's "constified enum modules" are;
//! `ibv_access_flags`, `ibv_wc_flags`, `ibv_send_flags` and `ibv_qp_attr_mask` are `u32` newtypes with
//! associated constants and bit operators; `ibv_gid_type` and `ibv_mtu` are `u32` aliases.
#![allow(non_camel_case_types, non_upper_case_globals)]

use std::fmt;

use uverbs_drivers::wc::WorkCompletion;

macro_rules! constified_enum_module {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $value:expr),+ $(,)? }) => {
        $(#[$meta])*
        pub mod $name {
            /// The enum's type: a C `unsigned int`.
            pub type Type = u32;
            $($(#[$vmeta])* pub const $variant: Type = $value;)+
        }
    };
}

constified_enum_module! {
    /// Queue pair transport types (`enum ibv_qp_type`).
    ibv_qp_type {
        /// Reliable connection.
        IBV_QPT_RC = ::uverbs_uapi::IB_UVERBS_QPT_RC as u32,
        /// Unreliable connection.
        IBV_QPT_UC = ::uverbs_uapi::IB_UVERBS_QPT_UC as u32,
        /// Unreliable datagram.
        IBV_QPT_UD = ::uverbs_uapi::IB_UVERBS_QPT_UD as u32,
        /// Raw packet.
        IBV_QPT_RAW_PACKET = ::uverbs_uapi::IB_UVERBS_QPT_RAW_PACKET as u32,
        /// XRC send side.
        IBV_QPT_XRC_SEND = ::uverbs_uapi::IB_UVERBS_QPT_XRC_INI as u32,
        /// XRC receive side.
        IBV_QPT_XRC_RECV = ::uverbs_uapi::IB_UVERBS_QPT_XRC_TGT as u32,
        /// Driver specific.
        IBV_QPT_DRIVER = ::uverbs_uapi::IB_UVERBS_QPT_DRIVER as u32,
    }
}

constified_enum_module! {
    /// Work completion status (`enum ibv_wc_status`).
    ibv_wc_status {
        /// Success.
        IBV_WC_SUCCESS = ::uverbs_uapi::IB_WC_SUCCESS,
        /// Local length error.
        IBV_WC_LOC_LEN_ERR = ::uverbs_uapi::IB_WC_LOC_LEN_ERR,
        /// Local QP operation error.
        IBV_WC_LOC_QP_OP_ERR = ::uverbs_uapi::IB_WC_LOC_QP_OP_ERR,
        /// Local EE context operation error.
        IBV_WC_LOC_EEC_OP_ERR = ::uverbs_uapi::IB_WC_LOC_EEC_OP_ERR,
        /// Local protection error.
        IBV_WC_LOC_PROT_ERR = ::uverbs_uapi::IB_WC_LOC_PROT_ERR,
        /// Flushed: the QP went to the error state.
        IBV_WC_WR_FLUSH_ERR = ::uverbs_uapi::IB_WC_WR_FLUSH_ERR,
        /// Memory window bind error.
        IBV_WC_MW_BIND_ERR = ::uverbs_uapi::IB_WC_MW_BIND_ERR,
        /// Bad response.
        IBV_WC_BAD_RESP_ERR = ::uverbs_uapi::IB_WC_BAD_RESP_ERR,
        /// Local access error.
        IBV_WC_LOC_ACCESS_ERR = ::uverbs_uapi::IB_WC_LOC_ACCESS_ERR,
        /// Remote invalid request.
        IBV_WC_REM_INV_REQ_ERR = ::uverbs_uapi::IB_WC_REM_INV_REQ_ERR,
        /// Remote access error.
        IBV_WC_REM_ACCESS_ERR = ::uverbs_uapi::IB_WC_REM_ACCESS_ERR,
        /// Remote operation error.
        IBV_WC_REM_OP_ERR = ::uverbs_uapi::IB_WC_REM_OP_ERR,
        /// Transport retries exceeded.
        IBV_WC_RETRY_EXC_ERR = ::uverbs_uapi::IB_WC_RETRY_EXC_ERR,
        /// RNR retries exceeded.
        IBV_WC_RNR_RETRY_EXC_ERR = ::uverbs_uapi::IB_WC_RNR_RETRY_EXC_ERR,
        /// Local RDD violation.
        IBV_WC_LOC_RDD_VIOL_ERR = 14,
        /// Remote invalid RD request.
        IBV_WC_REM_INV_RD_REQ_ERR = 15,
        /// Remote aborted.
        IBV_WC_REM_ABORT_ERR = ::uverbs_uapi::IB_WC_REM_ABORT_ERR,
        /// Invalid EE context number.
        IBV_WC_INV_EECN_ERR = 17,
        /// Invalid EE context state.
        IBV_WC_INV_EEC_STATE_ERR = 18,
        /// Fatal error.
        IBV_WC_FATAL_ERR = 19,
        /// Response timeout.
        IBV_WC_RESP_TIMEOUT_ERR = 20,
        /// General error.
        IBV_WC_GENERAL_ERR = ::uverbs_uapi::IB_WC_GENERAL_ERR,
        /// Tag matching error.
        IBV_WC_TM_ERR = 22,
        /// Tag matching rendezvous incomplete.
        IBV_WC_TM_RNDV_INCOMPLETE = 23,
    }
}

constified_enum_module! {
    /// Work completion opcodes (`enum ibv_wc_opcode`).
    ibv_wc_opcode {
        /// A send completed.
        IBV_WC_SEND = ::uverbs_uapi::IB_UVERBS_WC_SEND,
        /// An RDMA write completed.
        IBV_WC_RDMA_WRITE = ::uverbs_uapi::IB_UVERBS_WC_RDMA_WRITE,
        /// An RDMA read completed.
        IBV_WC_RDMA_READ = ::uverbs_uapi::IB_UVERBS_WC_RDMA_READ,
        /// A compare-and-swap completed.
        IBV_WC_COMP_SWAP = ::uverbs_uapi::IB_UVERBS_WC_COMP_SWAP,
        /// A fetch-and-add completed.
        IBV_WC_FETCH_ADD = ::uverbs_uapi::IB_UVERBS_WC_FETCH_ADD,
        /// A memory window bind completed.
        IBV_WC_BIND_MW = ::uverbs_uapi::IB_UVERBS_WC_BIND_MW,
        /// A local invalidate completed.
        IBV_WC_LOCAL_INV = ::uverbs_uapi::IB_UVERBS_WC_LOCAL_INV,
        /// A TSO send completed.
        IBV_WC_TSO = ::uverbs_uapi::IB_UVERBS_WC_TSO,
        /// A flush completed.
        IBV_WC_FLUSH = 8,
        /// An atomic write completed.
        IBV_WC_ATOMIC_WRITE = 9,
        /// A message was received.
        IBV_WC_RECV = ::uverbs_uapi::IB_WC_RECV,
        /// An RDMA write with immediate data was received.
        IBV_WC_RECV_RDMA_WITH_IMM = ::uverbs_uapi::IB_WC_RECV_RDMA_WITH_IMM,
        /// Tag matching: add.
        IBV_WC_TM_ADD = 130,
        /// Tag matching: delete.
        IBV_WC_TM_DEL = 131,
        /// Tag matching: sync.
        IBV_WC_TM_SYNC = 132,
        /// Tag matching: receive.
        IBV_WC_TM_RECV = 133,
        /// Tag matching: no tag.
        IBV_WC_TM_NO_TAG = 134,
        /// Driver specific.
        IBV_WC_DRIVER1 = 135,
        /// Driver specific.
        IBV_WC_DRIVER2 = 136,
        /// Driver specific.
        IBV_WC_DRIVER3 = 137,
    }
}

constified_enum_module! {
    /// Queue pair states (`enum ibv_qp_state`).
    ibv_qp_state {
        /// Reset.
        IBV_QPS_RESET = ::uverbs_uapi::IB_QPS_RESET as u32,
        /// Initialised.
        IBV_QPS_INIT = ::uverbs_uapi::IB_QPS_INIT as u32,
        /// Ready to receive.
        IBV_QPS_RTR = ::uverbs_uapi::IB_QPS_RTR as u32,
        /// Ready to send.
        IBV_QPS_RTS = ::uverbs_uapi::IB_QPS_RTS as u32,
        /// Send queue drained.
        IBV_QPS_SQD = ::uverbs_uapi::IB_QPS_SQD as u32,
        /// Send queue error.
        IBV_QPS_SQE = ::uverbs_uapi::IB_QPS_SQE as u32,
        /// Error.
        IBV_QPS_ERR = ::uverbs_uapi::IB_QPS_ERR as u32,
        /// Unknown.
        IBV_QPS_UNKNOWN = 7,
    }
}

constified_enum_module! {
    /// Send work request opcodes (`enum ibv_wr_opcode`).
    ibv_wr_opcode {
        /// RDMA write.
        IBV_WR_RDMA_WRITE = ::uverbs_uapi::IB_UVERBS_WR_RDMA_WRITE,
        /// RDMA write with immediate data.
        IBV_WR_RDMA_WRITE_WITH_IMM = ::uverbs_uapi::IB_UVERBS_WR_RDMA_WRITE_WITH_IMM,
        /// Send.
        IBV_WR_SEND = ::uverbs_uapi::IB_UVERBS_WR_SEND,
        /// Send with immediate data.
        IBV_WR_SEND_WITH_IMM = ::uverbs_uapi::IB_UVERBS_WR_SEND_WITH_IMM,
        /// RDMA read.
        IBV_WR_RDMA_READ = ::uverbs_uapi::IB_UVERBS_WR_RDMA_READ,
        /// Atomic compare and swap.
        IBV_WR_ATOMIC_CMP_AND_SWP = ::uverbs_uapi::IB_UVERBS_WR_ATOMIC_CMP_AND_SWP,
        /// Atomic fetch and add.
        IBV_WR_ATOMIC_FETCH_AND_ADD = ::uverbs_uapi::IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD,
        /// Local invalidate.
        IBV_WR_LOCAL_INV = ::uverbs_uapi::IB_UVERBS_WR_LOCAL_INV,
        /// Bind a memory window.
        IBV_WR_BIND_MW = ::uverbs_uapi::IB_UVERBS_WR_BIND_MW,
        /// Send with invalidate.
        IBV_WR_SEND_WITH_INV = ::uverbs_uapi::IB_UVERBS_WR_SEND_WITH_INV,
        /// TCP segmentation offload.
        IBV_WR_TSO = ::uverbs_uapi::IB_UVERBS_WR_TSO,
        /// Driver specific.
        IBV_WR_DRIVER1 = 11,
        /// Flush.
        IBV_WR_FLUSH = 14,
        /// Atomic write.
        IBV_WR_ATOMIC_WRITE = 15,
    }
}

macro_rules! bitfield_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $value:expr),+ $(,)? }) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Debug, Copy, Clone, Hash, PartialEq, Eq)]
        pub struct $name(pub u32);

        impl $name {
            $($(#[$vmeta])* pub const $variant: $name = $name($value);)+
        }

        impl std::ops::BitOr for $name {
            type Output = Self;
            #[inline]
            fn bitor(self, other: Self) -> Self {
                $name(self.0 | other.0)
            }
        }

        impl std::ops::BitOrAssign for $name {
            #[inline]
            fn bitor_assign(&mut self, rhs: Self) {
                self.0 |= rhs.0;
            }
        }

        impl std::ops::BitAnd for $name {
            type Output = Self;
            #[inline]
            fn bitand(self, other: Self) -> Self {
                $name(self.0 & other.0)
            }
        }

        impl std::ops::BitAndAssign for $name {
            #[inline]
            fn bitand_assign(&mut self, rhs: Self) {
                self.0 &= rhs.0;
            }
        }
    };
}

bitfield_enum! {
    /// Memory region and queue pair access flags (`enum ibv_access_flags`).
    ibv_access_flags {
        /// The local HCA may write the memory.
        IBV_ACCESS_LOCAL_WRITE = ::uverbs_uapi::IB_UVERBS_ACCESS_LOCAL_WRITE,
        /// Peers may RDMA-write the memory.
        IBV_ACCESS_REMOTE_WRITE = ::uverbs_uapi::IB_UVERBS_ACCESS_REMOTE_WRITE,
        /// Peers may RDMA-read the memory.
        IBV_ACCESS_REMOTE_READ = ::uverbs_uapi::IB_UVERBS_ACCESS_REMOTE_READ,
        /// Peers may run atomics on the memory.
        IBV_ACCESS_REMOTE_ATOMIC = ::uverbs_uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC,
        /// Memory windows may be bound to the region.
        IBV_ACCESS_MW_BIND = ::uverbs_uapi::IB_UVERBS_ACCESS_MW_BIND,
        /// Addresses are offsets from the region's start.
        IBV_ACCESS_ZERO_BASED = ::uverbs_uapi::IB_UVERBS_ACCESS_ZERO_BASED,
        /// On-demand paging.
        IBV_ACCESS_ON_DEMAND = ::uverbs_uapi::IB_UVERBS_ACCESS_ON_DEMAND,
        /// Huge pages.
        IBV_ACCESS_HUGETLB = ::uverbs_uapi::IB_UVERBS_ACCESS_HUGETLB,
        /// Global flush.
        IBV_ACCESS_FLUSH_GLOBAL = 256,
        /// Persistent flush.
        IBV_ACCESS_FLUSH_PERSISTENT = 512,
        /// Relaxed ordering.
        IBV_ACCESS_RELAXED_ORDERING = ::uverbs_uapi::IB_UVERBS_ACCESS_RELAXED_ORDERING,
    }
}

bitfield_enum! {
    /// Work completion flags (`enum ibv_wc_flags`).
    ibv_wc_flags {
        /// A GRH is present in the receive buffer.
        IBV_WC_GRH = ::uverbs_uapi::IBV_WC_GRH,
        /// The completion carries immediate data.
        IBV_WC_WITH_IMM = ::uverbs_uapi::IBV_WC_WITH_IMM,
        /// The IP checksum was verified.
        IBV_WC_IP_CSUM_OK = ::uverbs_uapi::IBV_WC_IP_CSUM_OK,
        /// The completion carries an invalidated rkey.
        IBV_WC_WITH_INV = ::uverbs_uapi::IBV_WC_WITH_INV,
        /// Tag matching: sync request.
        IBV_WC_TM_SYNC_REQ = 16,
        /// Tag matching: match.
        IBV_WC_TM_MATCH = 32,
        /// Tag matching: data valid.
        IBV_WC_TM_DATA_VALID = 64,
    }
}

bitfield_enum! {
    /// Send flags (`enum ibv_send_flags`).
    ibv_send_flags {
        /// Fence.
        IBV_SEND_FENCE = ::uverbs_uapi::IB_SEND_FENCE,
        /// Generate a completion.
        IBV_SEND_SIGNALED = ::uverbs_uapi::IB_SEND_SIGNALED,
        /// Solicited event.
        IBV_SEND_SOLICITED = ::uverbs_uapi::IB_SEND_SOLICITED,
        /// Inline data.
        IBV_SEND_INLINE = ::uverbs_uapi::IB_SEND_INLINE,
        /// IP checksum offload.
        IBV_SEND_IP_CSUM = 16,
    }
}

bitfield_enum! {
    /// Which `ibv_qp_attr` fields a modify or query uses (`enum ibv_qp_attr_mask`).
    ibv_qp_attr_mask {
        /// `qp_state`.
        IBV_QP_STATE = ::uverbs_uapi::IB_QP_STATE,
        /// `cur_qp_state`.
        IBV_QP_CUR_STATE = ::uverbs_uapi::IB_QP_CUR_STATE,
        /// `en_sqd_async_notify`.
        IBV_QP_EN_SQD_ASYNC_NOTIFY = ::uverbs_uapi::IB_QP_EN_SQD_ASYNC_NOTIFY,
        /// `qp_access_flags`.
        IBV_QP_ACCESS_FLAGS = ::uverbs_uapi::IB_QP_ACCESS_FLAGS,
        /// `pkey_index`.
        IBV_QP_PKEY_INDEX = ::uverbs_uapi::IB_QP_PKEY_INDEX,
        /// `port_num`.
        IBV_QP_PORT = ::uverbs_uapi::IB_QP_PORT,
        /// `qkey`.
        IBV_QP_QKEY = ::uverbs_uapi::IB_QP_QKEY,
        /// `ah_attr`.
        IBV_QP_AV = ::uverbs_uapi::IB_QP_AV,
        /// `path_mtu`.
        IBV_QP_PATH_MTU = ::uverbs_uapi::IB_QP_PATH_MTU,
        /// `timeout`.
        IBV_QP_TIMEOUT = ::uverbs_uapi::IB_QP_TIMEOUT,
        /// `retry_cnt`.
        IBV_QP_RETRY_CNT = ::uverbs_uapi::IB_QP_RETRY_CNT,
        /// `rnr_retry`.
        IBV_QP_RNR_RETRY = ::uverbs_uapi::IB_QP_RNR_RETRY,
        /// `rq_psn`.
        IBV_QP_RQ_PSN = ::uverbs_uapi::IB_QP_RQ_PSN,
        /// `max_rd_atomic`.
        IBV_QP_MAX_QP_RD_ATOMIC = ::uverbs_uapi::IB_QP_MAX_QP_RD_ATOMIC,
        /// `alt_ah_attr` and friends.
        IBV_QP_ALT_PATH = ::uverbs_uapi::IB_QP_ALT_PATH,
        /// `min_rnr_timer`.
        IBV_QP_MIN_RNR_TIMER = ::uverbs_uapi::IB_QP_MIN_RNR_TIMER,
        /// `sq_psn`.
        IBV_QP_SQ_PSN = ::uverbs_uapi::IB_QP_SQ_PSN,
        /// `max_dest_rd_atomic`.
        IBV_QP_MAX_DEST_RD_ATOMIC = ::uverbs_uapi::IB_QP_MAX_DEST_RD_ATOMIC,
        /// `path_mig_state`.
        IBV_QP_PATH_MIG_STATE = ::uverbs_uapi::IB_QP_PATH_MIG_STATE,
        /// `cap`.
        IBV_QP_CAP = ::uverbs_uapi::IB_QP_CAP,
        /// `dest_qp_num`.
        IBV_QP_DEST_QPN = ::uverbs_uapi::IB_QP_DEST_QPN,
        /// `rate_limit`.
        IBV_QP_RATE_LIMIT = 1 << 25,
    }
}

/// The kind of a GID table entry (`enum ibv_gid_type`): 0 IB, 1 RoCE v1, 2 RoCE v2.
pub type ibv_gid_type = u32;
/// InfiniBand GID.
pub const IBV_GID_TYPE_IB: ibv_gid_type = 0;
/// RoCE v1 GID.
pub const IBV_GID_TYPE_ROCE_V1: ibv_gid_type = 1;
/// RoCE v2 GID.
pub const IBV_GID_TYPE_ROCE_V2: ibv_gid_type = 2;

/// A path MTU (`enum ibv_mtu`): 1 = 256 bytes ... 5 = 4096 bytes.
pub type ibv_mtu = u32;
/// 256 bytes.
pub const IBV_MTU_256: ibv_mtu = 1;
/// 512 bytes.
pub const IBV_MTU_512: ibv_mtu = 2;
/// 1024 bytes.
pub const IBV_MTU_1024: ibv_mtu = 3;
/// 2048 bytes.
pub const IBV_MTU_2048: ibv_mtu = 4;
/// 4096 bytes.
pub const IBV_MTU_4096: ibv_mtu = 5;

pub use uverbs_drivers::gid::{ibv_gid, ibv_gid_global};

/// A work completion (`struct ibv_wc`), 48 bytes in the C layout.
///
/// As in `ibverbs`, `wr_id`, `status`, `opcode`, `vendor_err` and `byte_len` are read through
/// accessors; when the status is not success only `wr_id`, the status, `vendor_err` and `qp_num` are
/// meaningful. `imm_data` is as it came off the wire (network byte order).
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct ibv_wc {
    wr_id: u64,
    status: ibv_wc_status::Type,
    opcode: ibv_wc_opcode::Type,
    vendor_err: u32,
    byte_len: u32,
    /// Immediate data (network byte order), or the invalidated rkey.
    pub imm_data: u32,
    /// The local queue pair number.
    pub qp_num: u32,
    /// The remote queue pair number (UD).
    pub src_qp: u32,
    /// Completion flags.
    pub wc_flags: ibv_wc_flags,
    /// P_Key index (GSI).
    pub pkey_index: u16,
    /// Source LID (UD on InfiniBand).
    pub slid: u16,
    /// Service level (UD).
    pub sl: u8,
    /// Destination LID path bits (UD on InfiniBand).
    pub dlid_path_bits: u8,
}

const _: () = assert!(std::mem::size_of::<ibv_wc>() == 48);

impl Default for ibv_wc {
    /// An invalid completion (status `IBV_WC_GENERAL_ERR`), as in `ibverbs`.
    fn default() -> Self {
        ibv_wc {
            wr_id: 0,
            status: ibv_wc_status::IBV_WC_GENERAL_ERR,
            opcode: ibv_wc_opcode::IBV_WC_LOCAL_INV,
            vendor_err: 0,
            byte_len: 0,
            imm_data: 0,
            qp_num: 0,
            src_qp: 0,
            wc_flags: ibv_wc_flags(0),
            pkey_index: 0,
            slid: 0,
            sl: 0,
            dlid_path_bits: 0,
        }
    }
}

#[allow(clippy::len_without_is_empty)]
impl ibv_wc {
    /// The work request id given when the request was posted.
    #[inline]
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }

    /// The number of bytes transferred (received messages and RDMA reads).
    #[inline]
    pub fn len(&self) -> usize {
        self.byte_len as usize
    }

    /// Whether the work request completed successfully.
    #[inline]
    pub fn is_valid(&self) -> bool {
        self.status == ibv_wc_status::IBV_WC_SUCCESS
    }

    /// The status and vendor error, if the work request failed.
    #[inline]
    pub fn error(&self) -> Option<(ibv_wc_status::Type, u32)> {
        match self.status {
            ibv_wc_status::IBV_WC_SUCCESS => None,
            status => Some((status, self.vendor_err)),
        }
    }

    /// The operation that completed.
    #[inline]
    pub fn opcode(&self) -> ibv_wc_opcode::Type {
        self.opcode
    }

    /// The immediate data, if the completion carries some (network byte order).
    #[inline]
    pub fn imm_data(&self) -> Option<u32> {
        if self.is_valid() && (self.wc_flags & ibv_wc_flags::IBV_WC_WITH_IMM).0 != 0 {
            Some(self.imm_data)
        } else {
            None
        }
    }

    /// The rkey a SEND with invalidate invalidated, for a successful receive completion with
    /// `IBV_WC_WITH_INV` (libibverbs keeps it in `imm_data`, host order).
    pub fn invalidated_rkey(&self) -> Option<u32> {
        if self.is_valid() && (self.wc_flags & ibv_wc_flags::IBV_WC_WITH_INV).0 != 0 {
            Some(self.imm_data)
        } else {
            None
        }
    }

    /// The status (`ibv_wc_status::*`), also when it is success.
    #[inline]
    pub fn status(&self) -> ibv_wc_status::Type {
        self.status
    }

    /// The vendor error (meaningful when the status is not success).
    #[inline]
    pub fn vendor_err(&self) -> u32 {
        self.vendor_err
    }
}

impl From<WorkCompletion> for ibv_wc {
    /// The backend's completion, field for field: both are `struct ibv_wc`'s contents in
    /// libibverbs' numbering.
    #[inline(always)]
    fn from(wc: WorkCompletion) -> ibv_wc {
        ibv_wc {
            wr_id: wc.wr_id,
            status: wc.status,
            opcode: wc.opcode,
            vendor_err: wc.vendor_err,
            byte_len: wc.byte_len,
            imm_data: wc.imm_data,
            qp_num: wc.qp_num,
            src_qp: wc.src_qp,
            wc_flags: ibv_wc_flags(wc.wc_flags),
            pkey_index: wc.pkey_index,
            slid: wc.slid,
            sl: wc.sl,
            dlid_path_bits: wc.dlid_path_bits,
        }
    }
}

/// The name rdma-core's `ibv_wc_status_str` gives a status.
pub fn wc_status_str(status: ibv_wc_status::Type) -> &'static str {
    const NAMES: [&str; 24] = [
        "success",
        "local length error",
        "local QP operation error",
        "local EE context operation error",
        "local protection error",
        "Work Request Flushed Error",
        "memory management operation error",
        "bad response error",
        "local access error",
        "remote invalid request error",
        "remote access error",
        "remote operation error",
        "transport retry counter exceeded",
        "RNR retry counter exceeded",
        "local RDD violation error",
        "remote invalid RD request",
        "aborted error",
        "invalid EE context number",
        "invalid EE context state",
        "fatal error",
        "response timeout error",
        "general error",
        "TM error",
        "TM software rendezvous",
    ];
    NAMES.get(status as usize).copied().unwrap_or("unknown")
}

impl fmt::Display for ibv_access_flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wc_layout_is_the_c_layout() {
        assert_eq!(std::mem::size_of::<ibv_wc>(), 48);
        assert_eq!(std::mem::align_of::<ibv_wc>(), 8);
        assert_eq!(std::mem::offset_of!(ibv_wc, imm_data), 24);
        assert_eq!(std::mem::offset_of!(ibv_wc, wc_flags), 36);
        assert_eq!(std::mem::offset_of!(ibv_wc, dlid_path_bits), 45);
    }

    #[test]
    fn default_wc_is_invalid() {
        let wc = ibv_wc::default();
        assert!(!wc.is_valid());
        assert_eq!(wc.error(), Some((ibv_wc_status::IBV_WC_GENERAL_ERR, 0)));
        assert_eq!(wc.imm_data(), None);
    }

    #[test]
    fn backend_completions_keep_their_flags() {
        let wc = ibv_wc::from(WorkCompletion {
            wc_flags: ::uverbs_uapi::IBV_WC_GRH | ::uverbs_uapi::IBV_WC_WITH_INV,
            imm_data: 0x1234_5678,
            ..Default::default()
        });
        assert_eq!(
            wc.wc_flags,
            ibv_wc_flags::IBV_WC_GRH | ibv_wc_flags::IBV_WC_WITH_INV
        );
        assert_eq!(wc.invalidated_rkey(), Some(0x1234_5678));
        assert_eq!(wc.imm_data(), None);
    }

    #[test]
    fn flags_combine() {
        let a = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_READ;
        assert_eq!(a.0, 5);
        assert_eq!((a & ibv_access_flags::IBV_ACCESS_REMOTE_READ).0, 4);
        assert_eq!(
            wc_status_str(ibv_wc_status::IBV_WC_WR_FLUSH_ERR),
            "Work Request Flushed Error"
        );
    }
}
