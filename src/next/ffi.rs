//! The C-named data types of libibverbs (and librdmacm) that the `ibverbs` crate's API names, as
//! its `ibverbs::ffi` (the `ibverbs-sys` crate) defines them: so that programs naming
//! `ibverbs::ffi::ibv_qp_type::IBV_QPT_RC`, `ffi::ibv_access_flags(x)` or `attr.phys_port_cnt` build
//! unchanged against `uverbs::next`.
//!
//! Only data is here: enums, bit sets and plain structs, with libibverbs' names, values and
//! layouts (rdma-core 63.0, the version `ibverbs-sys` vendors). There are no C functions and no
//! raw object types (`ibv_context`, `ibv_qp`, ...): uverbs has no libibverbs underneath.
//!
//! - C enums are Rust enums with the C names as variants (`ibv_qp_type::IBV_QPT_RC`) and the C
//!   values as discriminants, so `as u32` gives the C value. Like bindgen's, they have no
//!   `Default`.
//! - C enums used as bit sets are newtypes over `u32` (`ibv_access_flags(pub u32)`) with one
//!   associated constant per flag and `|`, `|=`, `&`, `&=`.
//! - Structs are `#[repr(C)]` with the C field names, and `Default` gives zeroes (or, where zero is
//!   not a value of a field's enum, the variant noted on the struct).
#![allow(non_camel_case_types, non_upper_case_globals)]

use std::ffi::c_char;
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign};

/// A big-endian 64-bit value as C holds it: the integer whose in-memory bytes are in network order.
pub type __be64 = u64;

/// Defines a C enum as a Rust enum with the C values, plus `from_raw`.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $repr:ident {
            $($(#[$vmeta:meta])* $variant:ident = $value:expr,)+
        }
    ) => {
        $(#[$meta])*
        #[repr($repr)]
        #[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $value,)+
        }

        impl $name {
            /// The variant whose C value this is, or `None` for a value the enum does not have.
            // The whole set is generated; a given enum's decoder may have no caller yet.
            #[allow(dead_code)]
            #[inline(always)]
            pub(crate) fn from_raw(raw: $repr) -> Option<Self> {
                // Each arm a constant: the compiler makes this a range check or a jump table.
                $(const $variant: $repr = $value;)+
                match raw {
                    $($variant => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

/// Defines a C flag enum as a `u32` newtype with one constant per flag and the bit operators.
macro_rules! c_bitfield {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$cmeta:meta])* const $flag:ident = $value:expr;)+
        }
    ) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, Default)]
        pub struct $name(pub u32);

        impl $name {
            $($(#[$cmeta])* pub const $flag: $name = $name($value);)+
        }

        impl BitOr for $name {
            type Output = $name;
            fn bitor(self, other: $name) -> $name {
                $name(self.0 | other.0)
            }
        }

        impl BitOrAssign for $name {
            fn bitor_assign(&mut self, other: $name) {
                self.0 |= other.0;
            }
        }

        impl BitAnd for $name {
            type Output = $name;
            fn bitand(self, other: $name) -> $name {
                $name(self.0 & other.0)
            }
        }

        impl BitAndAssign for $name {
            fn bitand_assign(&mut self, other: $name) {
                self.0 &= other.0;
            }
        }
    };
}

c_enum! {
    /// The transport of a queue pair (`enum ibv_qp_type`).
    pub enum ibv_qp_type: u32 {
        /// Reliable connection.
        IBV_QPT_RC = 2,
        /// Unreliable connection.
        IBV_QPT_UC = 3,
        /// Unreliable datagram.
        IBV_QPT_UD = 4,
        /// Raw Ethernet packets.
        IBV_QPT_RAW_PACKET = 8,
        /// The sending side of an XRC connection.
        IBV_QPT_XRC_SEND = 9,
        /// The receiving side of an XRC connection.
        IBV_QPT_XRC_RECV = 10,
        /// A driver-specific transport.
        IBV_QPT_DRIVER = 0xff,
    }
}

c_enum! {
    /// The state of a queue pair (`enum ibv_qp_state`).
    pub enum ibv_qp_state: u32 {
        /// Reset: just created, or reset.
        IBV_QPS_RESET = 0,
        /// Initialized: receives may be posted.
        IBV_QPS_INIT = 1,
        /// Ready to receive.
        IBV_QPS_RTR = 2,
        /// Ready to send.
        IBV_QPS_RTS = 3,
        /// Send queue drained.
        IBV_QPS_SQD = 4,
        /// Send queue error.
        IBV_QPS_SQE = 5,
        /// Error.
        IBV_QPS_ERR = 6,
        /// Unknown (used in queries only).
        IBV_QPS_UNKNOWN = 7,
    }
}

c_enum! {
    /// A path MTU (`enum ibv_mtu`); the value is not the size in bytes.
    pub enum ibv_mtu: u32 {
        /// 256 bytes.
        IBV_MTU_256 = 1,
        /// 512 bytes.
        IBV_MTU_512 = 2,
        /// 1024 bytes.
        IBV_MTU_1024 = 3,
        /// 2048 bytes.
        IBV_MTU_2048 = 4,
        /// 4096 bytes.
        IBV_MTU_4096 = 5,
    }
}

c_enum! {
    /// The logical state of a port (`enum ibv_port_state`).
    pub enum ibv_port_state: u32 {
        /// Reserved.
        IBV_PORT_NOP = 0,
        /// The link is down.
        IBV_PORT_DOWN = 1,
        /// The link is up, the subnet manager has not configured the port yet.
        IBV_PORT_INIT = 2,
        /// Configured, but not yet allowed to send data.
        IBV_PORT_ARMED = 3,
        /// Active: data can flow.
        IBV_PORT_ACTIVE = 4,
        /// Active, deferring to a fault.
        IBV_PORT_ACTIVE_DEFER = 5,
    }
}

c_enum! {
    /// The kind of a GID table entry (`enum ibv_gid_type`).
    pub enum ibv_gid_type: u32 {
        /// InfiniBand.
        IBV_GID_TYPE_IB = 0,
        /// RoCE version 1 (Ethernet frames).
        IBV_GID_TYPE_ROCE_V1 = 1,
        /// RoCE version 2 (UDP/IP).
        IBV_GID_TYPE_ROCE_V2 = 2,
    }
}

c_enum! {
    /// The transport a device speaks (`enum ibv_transport_type`).
    pub enum ibv_transport_type: i32 {
        /// Unknown.
        IBV_TRANSPORT_UNKNOWN = -1,
        /// InfiniBand (and RoCE).
        IBV_TRANSPORT_IB = 0,
        /// iWARP.
        IBV_TRANSPORT_IWARP = 1,
        /// Cisco usNIC.
        IBV_TRANSPORT_USNIC = 2,
        /// Cisco usNIC over UDP.
        IBV_TRANSPORT_USNIC_UDP = 3,
        /// Not specified by the device.
        IBV_TRANSPORT_UNSPECIFIED = 4,
    }
}

c_enum! {
    /// The status of a work completion (`enum ibv_wc_status`).
    pub enum ibv_wc_status: u32 {
        /// The work request completed successfully.
        IBV_WC_SUCCESS = 0,
        /// Local length error.
        IBV_WC_LOC_LEN_ERR = 1,
        /// Local queue pair operation error.
        IBV_WC_LOC_QP_OP_ERR = 2,
        /// Local EE context operation error.
        IBV_WC_LOC_EEC_OP_ERR = 3,
        /// Local protection error.
        IBV_WC_LOC_PROT_ERR = 4,
        /// Flushed: the queue pair went to the error state.
        IBV_WC_WR_FLUSH_ERR = 5,
        /// Memory window bind error.
        IBV_WC_MW_BIND_ERR = 6,
        /// Bad response error.
        IBV_WC_BAD_RESP_ERR = 7,
        /// Local access error.
        IBV_WC_LOC_ACCESS_ERR = 8,
        /// Remote invalid request error.
        IBV_WC_REM_INV_REQ_ERR = 9,
        /// Remote access error.
        IBV_WC_REM_ACCESS_ERR = 10,
        /// Remote operation error.
        IBV_WC_REM_OP_ERR = 11,
        /// Transport retry counter exceeded.
        IBV_WC_RETRY_EXC_ERR = 12,
        /// RNR retry counter exceeded.
        IBV_WC_RNR_RETRY_EXC_ERR = 13,
        /// Local RDD violation error.
        IBV_WC_LOC_RDD_VIOL_ERR = 14,
        /// Remote invalid RD request.
        IBV_WC_REM_INV_RD_REQ_ERR = 15,
        /// Remote aborted error.
        IBV_WC_REM_ABORT_ERR = 16,
        /// Invalid EE context number.
        IBV_WC_INV_EECN_ERR = 17,
        /// Invalid EE context state.
        IBV_WC_INV_EEC_STATE_ERR = 18,
        /// Fatal error.
        IBV_WC_FATAL_ERR = 19,
        /// Response timeout error.
        IBV_WC_RESP_TIMEOUT_ERR = 20,
        /// General error.
        IBV_WC_GENERAL_ERR = 21,
        /// Tag matching error.
        IBV_WC_TM_ERR = 22,
        /// Tag matching rendezvous incomplete.
        IBV_WC_TM_RNDV_INCOMPLETE = 23,
    }
}

c_enum! {
    /// The operation a work completion is for (`enum ibv_wc_opcode`).
    pub enum ibv_wc_opcode: u32 {
        /// Send.
        IBV_WC_SEND = 0,
        /// RDMA write.
        IBV_WC_RDMA_WRITE = 1,
        /// RDMA read.
        IBV_WC_RDMA_READ = 2,
        /// Atomic compare and swap.
        IBV_WC_COMP_SWAP = 3,
        /// Atomic fetch and add.
        IBV_WC_FETCH_ADD = 4,
        /// Memory window bind.
        IBV_WC_BIND_MW = 5,
        /// Local invalidate.
        IBV_WC_LOCAL_INV = 6,
        /// TCP segmentation offload send.
        IBV_WC_TSO = 7,
        /// Flush.
        IBV_WC_FLUSH = 8,
        /// Atomic write.
        IBV_WC_ATOMIC_WRITE = 9,
        /// Receive (of a send).
        IBV_WC_RECV = 128,
        /// Receive of an RDMA write with immediate data.
        IBV_WC_RECV_RDMA_WITH_IMM = 129,
        /// Tag matching: tag added.
        IBV_WC_TM_ADD = 130,
        /// Tag matching: tag deleted.
        IBV_WC_TM_DEL = 131,
        /// Tag matching: sync.
        IBV_WC_TM_SYNC = 132,
        /// Tag matching: receive.
        IBV_WC_TM_RECV = 133,
        /// Tag matching: no tag.
        IBV_WC_TM_NO_TAG = 134,
        /// Driver-specific opcode 1.
        IBV_WC_DRIVER1 = 135,
        /// Driver-specific opcode 2.
        IBV_WC_DRIVER2 = 136,
        /// Driver-specific opcode 3.
        IBV_WC_DRIVER3 = 137,
    }
}

c_enum! {
    /// How atomic operations are guaranteed (`enum ibv_atomic_cap`).
    pub enum ibv_atomic_cap: u32 {
        /// No atomic operations.
        IBV_ATOMIC_NONE = 0,
        /// Atomic among the device's own operations.
        IBV_ATOMIC_HCA = 1,
        /// Atomic against every other access to the memory.
        IBV_ATOMIC_GLOB = 2,
    }
}

c_enum! {
    /// The advice `ibv_advise_mr` gives (`enum ib_uverbs_advise_mr_advice`; `ibverbs` re-exports it
    /// as `ibv_advise_mr_advice`).
    pub enum ib_uverbs_advise_mr_advice: u32 {
        /// Prefetch for reading.
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH = 0,
        /// Prefetch for writing.
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE = 1,
        /// Prefetch without faulting the pages in.
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = 2,
    }
}

c_enum! {
    /// The flags of `ibv_advise_mr` (`enum ib_uverbs_advise_mr_flag`; `ibverbs` re-exports it as
    /// `ibv_advise_mr_flags`). A Rust enum, not a bit set, as in `ibverbs-sys`.
    pub enum ib_uverbs_advise_mr_flag: u32 {
        /// Wait for the advice to complete.
        IB_UVERBS_ADVISE_MR_FLAG_FLUSH = 1,
    }
}

c_enum! {
    /// A connection manager event (`enum rdma_cm_event_type`).
    pub enum rdma_cm_event_type: u32 {
        /// The address was resolved.
        RDMA_CM_EVENT_ADDR_RESOLVED = 0,
        /// Resolving the address failed.
        RDMA_CM_EVENT_ADDR_ERROR = 1,
        /// The route was resolved.
        RDMA_CM_EVENT_ROUTE_RESOLVED = 2,
        /// Resolving the route failed.
        RDMA_CM_EVENT_ROUTE_ERROR = 3,
        /// A connection request arrived.
        RDMA_CM_EVENT_CONNECT_REQUEST = 4,
        /// A connection response arrived.
        RDMA_CM_EVENT_CONNECT_RESPONSE = 5,
        /// Establishing the connection failed.
        RDMA_CM_EVENT_CONNECT_ERROR = 6,
        /// The remote side is unreachable.
        RDMA_CM_EVENT_UNREACHABLE = 7,
        /// The remote side rejected the connection.
        RDMA_CM_EVENT_REJECTED = 8,
        /// The connection is established.
        RDMA_CM_EVENT_ESTABLISHED = 9,
        /// The connection was disconnected.
        RDMA_CM_EVENT_DISCONNECTED = 10,
        /// The device was removed.
        RDMA_CM_EVENT_DEVICE_REMOVAL = 11,
        /// A multicast join completed.
        RDMA_CM_EVENT_MULTICAST_JOIN = 12,
        /// A multicast error occurred.
        RDMA_CM_EVENT_MULTICAST_ERROR = 13,
        /// The local address changed.
        RDMA_CM_EVENT_ADDR_CHANGE = 14,
        /// The time-wait state ended.
        RDMA_CM_EVENT_TIMEWAIT_EXIT = 15,
        /// Address information was resolved.
        RDMA_CM_EVENT_ADDRINFO_RESOLVED = 16,
        /// Resolving address information failed.
        RDMA_CM_EVENT_ADDRINFO_ERROR = 17,
        /// A user event.
        RDMA_CM_EVENT_USER = 18,
        /// An internal event.
        RDMA_CM_EVENT_INTERNAL = 19,
    }
}

c_enum! {
    /// The port space of a connection manager identifier (`enum rdma_port_space`).
    pub enum rdma_port_space: u32 {
        /// IP over InfiniBand.
        RDMA_PS_IPOIB = 0x0002,
        /// Reliable, connected (TCP-like).
        RDMA_PS_TCP = 0x0106,
        /// Unreliable datagrams (UDP-like).
        RDMA_PS_UDP = 0x0111,
        /// Any InfiniBand service.
        RDMA_PS_IB = 0x013F,
    }
}

c_bitfield! {
    /// Access rights of a memory region or queue pair (`enum ibv_access_flags`).
    pub struct ibv_access_flags {
        /// Local write.
        const IBV_ACCESS_LOCAL_WRITE = 1;
        /// Remote write.
        const IBV_ACCESS_REMOTE_WRITE = 1 << 1;
        /// Remote read.
        const IBV_ACCESS_REMOTE_READ = 1 << 2;
        /// Remote atomic operations.
        const IBV_ACCESS_REMOTE_ATOMIC = 1 << 3;
        /// Binding memory windows.
        const IBV_ACCESS_MW_BIND = 1 << 4;
        /// Zero-based addressing.
        const IBV_ACCESS_ZERO_BASED = 1 << 5;
        /// On-demand paging.
        const IBV_ACCESS_ON_DEMAND = 1 << 6;
        /// Huge pages back the memory.
        const IBV_ACCESS_HUGETLB = 1 << 7;
        /// Global visibility flush.
        const IBV_ACCESS_FLUSH_GLOBAL = 1 << 8;
        /// Persistence flush.
        const IBV_ACCESS_FLUSH_PERSISTENT = 1 << 9;
        /// Relaxed ordering (an optional flag: ignored where unsupported).
        const IBV_ACCESS_RELAXED_ORDERING = 1 << 20;
    }
}

c_bitfield! {
    /// The fields an extended completion queue reports (`enum ibv_create_cq_wc_flags`).
    pub struct ibv_create_cq_wc_flags {
        /// The byte count.
        const IBV_WC_EX_WITH_BYTE_LEN = 1 << 0;
        /// The immediate data.
        const IBV_WC_EX_WITH_IMM = 1 << 1;
        /// The local queue pair number.
        const IBV_WC_EX_WITH_QP_NUM = 1 << 2;
        /// The source queue pair number.
        const IBV_WC_EX_WITH_SRC_QP = 1 << 3;
        /// The source LID.
        const IBV_WC_EX_WITH_SLID = 1 << 4;
        /// The service level.
        const IBV_WC_EX_WITH_SL = 1 << 5;
        /// The destination LID path bits.
        const IBV_WC_EX_WITH_DLID_PATH_BITS = 1 << 6;
        /// The completion timestamp (device clock).
        const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP = 1 << 7;
        /// The customer VLAN.
        const IBV_WC_EX_WITH_CVLAN = 1 << 8;
        /// The flow tag.
        const IBV_WC_EX_WITH_FLOW_TAG = 1 << 9;
        /// Tag matching information.
        const IBV_WC_EX_WITH_TM_INFO = 1 << 10;
        /// The completion timestamp (wall clock).
        const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK = 1 << 11;
    }
}

c_bitfield! {
    /// The attributes a queue pair modify or query covers (`enum ibv_qp_attr_mask`).
    pub struct ibv_qp_attr_mask {
        /// `qp_state`.
        const IBV_QP_STATE = 1 << 0;
        /// `cur_qp_state`.
        const IBV_QP_CUR_STATE = 1 << 1;
        /// `en_sqd_async_notify`.
        const IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2;
        /// `qp_access_flags`.
        const IBV_QP_ACCESS_FLAGS = 1 << 3;
        /// `pkey_index`.
        const IBV_QP_PKEY_INDEX = 1 << 4;
        /// `port_num`.
        const IBV_QP_PORT = 1 << 5;
        /// `qkey`.
        const IBV_QP_QKEY = 1 << 6;
        /// `ah_attr`: the primary path.
        const IBV_QP_AV = 1 << 7;
        /// `path_mtu`.
        const IBV_QP_PATH_MTU = 1 << 8;
        /// `timeout`.
        const IBV_QP_TIMEOUT = 1 << 9;
        /// `retry_cnt`.
        const IBV_QP_RETRY_CNT = 1 << 10;
        /// `rnr_retry`.
        const IBV_QP_RNR_RETRY = 1 << 11;
        /// `rq_psn`.
        const IBV_QP_RQ_PSN = 1 << 12;
        /// `max_rd_atomic`.
        const IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
        /// `alt_ah_attr` and friends: the alternate path.
        const IBV_QP_ALT_PATH = 1 << 14;
        /// `min_rnr_timer`.
        const IBV_QP_MIN_RNR_TIMER = 1 << 15;
        /// `sq_psn`.
        const IBV_QP_SQ_PSN = 1 << 16;
        /// `max_dest_rd_atomic`.
        const IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
        /// `path_mig_state`.
        const IBV_QP_PATH_MIG_STATE = 1 << 18;
        /// `cap`.
        const IBV_QP_CAP = 1 << 19;
        /// `dest_qp_num`.
        const IBV_QP_DEST_QPN = 1 << 20;
        /// `rate_limit`.
        const IBV_QP_RATE_LIMIT = 1 << 25;
    }
}

c_bitfield! {
    /// Flags of a send work request (`enum ibv_send_flags`).
    pub struct ibv_send_flags {
        /// Wait for earlier RDMA reads and atomics first.
        const IBV_SEND_FENCE = 1 << 0;
        /// Generate a completion.
        const IBV_SEND_SIGNALED = 1 << 1;
        /// Set the solicited event indicator.
        const IBV_SEND_SOLICITED = 1 << 2;
        /// Send the data inline.
        const IBV_SEND_INLINE = 1 << 3;
        /// Offload the IP checksum.
        const IBV_SEND_IP_CSUM = 1 << 4;
    }
}

c_bitfield! {
    /// Flags of a work completion (`enum ibv_wc_flags`).
    pub struct ibv_wc_flags {
        /// A GRH is present (UD receives).
        const IBV_WC_GRH = 1 << 0;
        /// `imm_data` is valid.
        const IBV_WC_WITH_IMM = 1 << 1;
        /// The IP checksum was verified.
        const IBV_WC_IP_CSUM_OK = 1 << 2;
        /// `imm_data` holds an invalidated rkey.
        const IBV_WC_WITH_INV = 1 << 3;
        /// Tag matching: sync request.
        const IBV_WC_TM_SYNC_REQ = 1 << 4;
        /// Tag matching: matched.
        const IBV_WC_TM_MATCH = 1 << 5;
        /// Tag matching: data valid.
        const IBV_WC_TM_DATA_VALID = 1 << 6;
    }
}

/// A device's attributes (`struct ibv_device_attr`).
///
/// `Default` is all zeroes, with `atomic_cap` [`ibv_atomic_cap::IBV_ATOMIC_NONE`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ibv_device_attr {
    /// The firmware version, a NUL-terminated string.
    pub fw_ver: [c_char; 64],
    /// The node GUID, in network byte order.
    pub node_guid: __be64,
    /// The system image GUID, in network byte order.
    pub sys_image_guid: __be64,
    /// The largest memory region, in bytes.
    pub max_mr_size: u64,
    /// The page sizes supported (a bit per size).
    pub page_size_cap: u64,
    /// The IEEE vendor id.
    pub vendor_id: u32,
    /// The vendor's part id.
    pub vendor_part_id: u32,
    /// The hardware version.
    pub hw_ver: u32,
    /// The most queue pairs.
    pub max_qp: i32,
    /// The most outstanding work requests on a queue.
    pub max_qp_wr: i32,
    /// Capability flags (`IBV_DEVICE_*`).
    pub device_cap_flags: u32,
    /// The most scatter/gather entries of a send or receive request.
    pub max_sge: i32,
    /// The most scatter/gather entries of an RDMA read.
    pub max_sge_rd: i32,
    /// The most completion queues.
    pub max_cq: i32,
    /// The most entries of a completion queue.
    pub max_cqe: i32,
    /// The most memory regions.
    pub max_mr: i32,
    /// The most protection domains.
    pub max_pd: i32,
    /// The most outstanding RDMA reads and atomics a queue pair may be the target of.
    pub max_qp_rd_atom: i32,
    /// The same for an EE context.
    pub max_ee_rd_atom: i32,
    /// The most resources for incoming RDMA reads and atomics.
    pub max_res_rd_atom: i32,
    /// The most outstanding RDMA reads and atomics a queue pair may initiate.
    pub max_qp_init_rd_atom: i32,
    /// The same for an EE context.
    pub max_ee_init_rd_atom: i32,
    /// How atomics are guaranteed.
    pub atomic_cap: ibv_atomic_cap,
    /// The most EE contexts.
    pub max_ee: i32,
    /// The most RD domains.
    pub max_rdd: i32,
    /// The most memory windows.
    pub max_mw: i32,
    /// The most raw IPv6 datagram queue pairs.
    pub max_raw_ipv6_qp: i32,
    /// The most raw Ethertype datagram queue pairs.
    pub max_raw_ethy_qp: i32,
    /// The most multicast groups.
    pub max_mcast_grp: i32,
    /// The most queue pairs per multicast group.
    pub max_mcast_qp_attach: i32,
    /// The most queue pairs attached to multicast groups in all.
    pub max_total_mcast_qp_attach: i32,
    /// The most address handles.
    pub max_ah: i32,
    /// The most fast memory regions.
    pub max_fmr: i32,
    /// The most remaps per fast memory region.
    pub max_map_per_fmr: i32,
    /// The most shared receive queues.
    pub max_srq: i32,
    /// The most work requests of a shared receive queue.
    pub max_srq_wr: i32,
    /// The most scatter/gather entries of a shared receive queue's request.
    pub max_srq_sge: i32,
    /// The P_Key table's length.
    pub max_pkeys: u16,
    /// The local CA ack delay.
    pub local_ca_ack_delay: u8,
    /// The number of ports.
    pub phys_port_cnt: u8,
}

impl Default for ibv_device_attr {
    fn default() -> Self {
        ibv_device_attr {
            fw_ver: [0; 64],
            node_guid: 0,
            sys_image_guid: 0,
            max_mr_size: 0,
            page_size_cap: 0,
            vendor_id: 0,
            vendor_part_id: 0,
            hw_ver: 0,
            max_qp: 0,
            max_qp_wr: 0,
            device_cap_flags: 0,
            max_sge: 0,
            max_sge_rd: 0,
            max_cq: 0,
            max_cqe: 0,
            max_mr: 0,
            max_pd: 0,
            max_qp_rd_atom: 0,
            max_ee_rd_atom: 0,
            max_res_rd_atom: 0,
            max_qp_init_rd_atom: 0,
            max_ee_init_rd_atom: 0,
            atomic_cap: ibv_atomic_cap::IBV_ATOMIC_NONE,
            max_ee: 0,
            max_rdd: 0,
            max_mw: 0,
            max_raw_ipv6_qp: 0,
            max_raw_ethy_qp: 0,
            max_mcast_grp: 0,
            max_mcast_qp_attach: 0,
            max_total_mcast_qp_attach: 0,
            max_ah: 0,
            max_fmr: 0,
            max_map_per_fmr: 0,
            max_srq: 0,
            max_srq_wr: 0,
            max_srq_sge: 0,
            max_pkeys: 0,
            local_ca_ack_delay: 0,
            phys_port_cnt: 0,
        }
    }
}

/// A port's attributes (`struct ibv_port_attr`).
///
/// `Default` is all zeroes, with `state` [`ibv_port_state::IBV_PORT_NOP`] and both MTUs
/// [`ibv_mtu::IBV_MTU_256`] (C's zero is no `ibv_mtu`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ibv_port_attr {
    /// The logical state.
    pub state: ibv_port_state,
    /// The largest MTU the port supports.
    pub max_mtu: ibv_mtu,
    /// The MTU in use.
    pub active_mtu: ibv_mtu,
    /// The GID table's length.
    pub gid_tbl_len: i32,
    /// Capability flags (`IBV_PORT_*`).
    pub port_cap_flags: u32,
    /// The largest message, in bytes.
    pub max_msg_sz: u32,
    /// The bad P_Key counter.
    pub bad_pkey_cntr: u32,
    /// The Q_Key violation counter.
    pub qkey_viol_cntr: u32,
    /// The P_Key table's length.
    pub pkey_tbl_len: u16,
    /// The base LID.
    pub lid: u16,
    /// The subnet manager's LID.
    pub sm_lid: u16,
    /// The LID mask control.
    pub lmc: u8,
    /// The most virtual lanes.
    pub max_vl_num: u8,
    /// The subnet manager's service level.
    pub sm_sl: u8,
    /// The subnet propagation delay.
    pub subnet_timeout: u8,
    /// The type of initialization the subnet manager performed.
    pub init_type_reply: u8,
    /// The active link width (`IBV_WIDTH_*` bits).
    pub active_width: u8,
    /// The active link speed (`IBV_SPEED_*` bits; see `active_speed_ex`).
    pub active_speed: u8,
    /// The physical state.
    pub phys_state: u8,
    /// The link layer (`IBV_LINK_LAYER_*`).
    pub link_layer: u8,
    /// Flags (`IBV_QPF_*`).
    pub flags: u8,
    /// More capability flags (`IBV_PORT_*2`).
    pub port_cap_flags2: u16,
    /// The active link speed, for speeds `active_speed` cannot express (0 if none).
    pub active_speed_ex: u32,
}

impl Default for ibv_port_attr {
    fn default() -> Self {
        ibv_port_attr {
            state: ibv_port_state::IBV_PORT_NOP,
            max_mtu: ibv_mtu::IBV_MTU_256,
            active_mtu: ibv_mtu::IBV_MTU_256,
            gid_tbl_len: 0,
            port_cap_flags: 0,
            max_msg_sz: 0,
            bad_pkey_cntr: 0,
            qkey_viol_cntr: 0,
            pkey_tbl_len: 0,
            lid: 0,
            sm_lid: 0,
            lmc: 0,
            max_vl_num: 0,
            sm_sl: 0,
            subnet_timeout: 0,
            init_type_reply: 0,
            active_width: 0,
            active_speed: 0,
            phys_state: 0,
            link_layer: 0,
            flags: 0,
            port_cap_flags2: 0,
            active_speed_ex: 0,
        }
    }
}

/// The per-transport part of [`ibv_odp_caps`] (an anonymous struct in C; this is bindgen's name).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_odp_caps__bindgen_ty_1 {
    /// On-demand paging capabilities of RC queue pairs (`IBV_ODP_SUPPORT_*`).
    pub rc_odp_caps: u32,
    /// The same for UC.
    pub uc_odp_caps: u32,
    /// The same for UD.
    pub ud_odp_caps: u32,
}

/// On-demand paging capabilities (`struct ibv_odp_caps`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_odp_caps {
    /// General capabilities (`IBV_ODP_SUPPORT*`).
    pub general_caps: u64,
    /// Capabilities per transport.
    pub per_transport_caps: ibv_odp_caps__bindgen_ty_1,
}

/// TCP segmentation offload capabilities (`struct ibv_tso_caps`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_tso_caps {
    /// The largest segment, in bytes.
    pub max_tso: u32,
    /// The queue pair types that support it (a bit per `ibv_qp_type`).
    pub supported_qpts: u32,
}

/// Receive side scaling capabilities (`struct ibv_rss_caps`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_rss_caps {
    /// The queue pair types that support it (a bit per `ibv_qp_type`).
    pub supported_qpts: u32,
    /// The most indirection tables.
    pub max_rwq_indirection_tables: u32,
    /// The largest indirection table.
    pub max_rwq_indirection_table_size: u32,
    /// The fields that can be hashed (`IBV_RX_HASH_*`).
    pub rx_hash_fields_mask: u64,
    /// The hash functions (`IBV_RX_HASH_FUNC_*`).
    pub rx_hash_function: u8,
}

/// Packet pacing capabilities (`struct ibv_packet_pacing_caps`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_packet_pacing_caps {
    /// The lowest rate limit, in kbps.
    pub qp_rate_limit_min: u32,
    /// The highest rate limit, in kbps.
    pub qp_rate_limit_max: u32,
    /// The queue pair types that support it (a bit per `ibv_qp_type`).
    pub supported_qpts: u32,
}

/// Tag matching capabilities (`struct ibv_tm_caps`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_tm_caps {
    /// The largest rendezvous request header.
    pub max_rndv_hdr_size: u32,
    /// The most tagged buffers in a matching list.
    pub max_num_tags: u32,
    /// Flags (`IBV_TM_CAP_*`).
    pub flags: u32,
    /// The most outstanding list operations.
    pub max_ops: u32,
    /// The most scatter/gather entries of a tagged buffer.
    pub max_sge: u32,
}

/// Completion queue moderation capabilities (`struct ibv_cq_moderation_caps`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_cq_moderation_caps {
    /// The largest completion count.
    pub max_cq_count: u16,
    /// The longest period, in microseconds.
    pub max_cq_period: u16,
}

/// PCIe atomic operation capabilities (`struct ibv_pci_atomic_caps`), each a bit set of operand
/// sizes (`IBV_PCI_ATOMIC_OPERATION_*_BYTE_SIZE_SUP`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_pci_atomic_caps {
    /// Fetch and add.
    pub fetch_add: u16,
    /// Swap.
    pub swap: u16,
    /// Compare and swap.
    pub compare_swap: u16,
}

/// A device's extended attributes (`struct ibv_device_attr_ex`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_device_attr_ex {
    /// The attributes of `ibv_query_device`.
    pub orig_attr: ibv_device_attr,
    /// Which optional fields are valid.
    pub comp_mask: u32,
    /// On-demand paging capabilities.
    pub odp_caps: ibv_odp_caps,
    /// The bits of the completion timestamp that are valid.
    pub completion_timestamp_mask: u64,
    /// The device clock's frequency, in kHz.
    pub hca_core_clock: u64,
    /// Extended capability flags (`IBV_DEVICE_*`).
    pub device_cap_flags_ex: u64,
    /// TCP segmentation offload capabilities.
    pub tso_caps: ibv_tso_caps,
    /// Receive side scaling capabilities.
    pub rss_caps: ibv_rss_caps,
    /// The most receive work queues.
    pub max_wq_type_rq: u32,
    /// Packet pacing capabilities.
    pub packet_pacing_caps: ibv_packet_pacing_caps,
    /// Raw packet capabilities (`IBV_RAW_PACKET_CAP_*`).
    pub raw_packet_caps: u32,
    /// Tag matching capabilities.
    pub tm_caps: ibv_tm_caps,
    /// Completion queue moderation capabilities.
    pub cq_mod_caps: ibv_cq_moderation_caps,
    /// The most device memory, in bytes.
    pub max_dm_size: u64,
    /// PCIe atomic operation capabilities.
    pub pci_atomic_caps: ibv_pci_atomic_caps,
    /// On-demand paging capabilities of XRC queue pairs.
    pub xrc_odp_caps: u32,
    /// The number of ports, where it does not fit `orig_attr.phys_port_cnt`.
    pub phys_port_cnt_ex: u32,
}

/// A scatter/gather entry (`struct ibv_sge`): a piece of registered memory.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_sge {
    /// The start address.
    pub addr: u64,
    /// The length in bytes.
    pub length: u32,
    /// The local key of the memory region it lies in.
    pub lkey: u32,
}

/// A global identifier as C holds it (`union ibv_gid`): 16 bytes in network order.
///
/// In C (and in `ibverbs-sys`) this is a union of `raw` and `global { subnet_prefix,
/// interface_id }`. Here it is a struct with only `raw`, so that reading it needs no `unsafe`;
/// `Gid::subnet_prefix` and `Gid::interface_id` give the other view. Size and alignment (8) are
/// C's.
#[repr(C, align(8))]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ibv_gid {
    /// The bytes, in network order.
    pub raw: [u8; 16],
}

/// An entry of a port's GID table (`struct ibv_gid_entry`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_gid_entry {
    /// The GID.
    pub gid: ibv_gid,
    /// Its index in the table.
    pub gid_index: u32,
    /// The port, from 1.
    pub port_num: u32,
    /// Its type, an [`ibv_gid_type`] value.
    pub gid_type: u32,
    /// The interface index of its network device (0 for none).
    pub ndev_ifindex: u32,
}

/// A work completion (`struct ibv_wc`), as `ibverbs-sys` hand-writes it: the identifying fields
/// behind accessors, the rest public.
///
/// No API of `uverbs::next` returns one (completions are read through `WorkCompletion`); it
/// exists because `ibverbs` re-exports it. `Default` is all zeroes with `status`
/// [`ibv_wc_status::IBV_WC_GENERAL_ERR`] and `opcode` [`ibv_wc_opcode::IBV_WC_LOCAL_INV`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ibv_wc {
    wr_id: u64,
    status: ibv_wc_status,
    opcode: ibv_wc_opcode,
    vendor_err: u32,
    byte_len: u32,
    /// The immediate data in network byte order (with [`ibv_wc_flags::IBV_WC_WITH_IMM`]), or the
    /// invalidated rkey (with [`ibv_wc_flags::IBV_WC_WITH_INV`]); a union in C.
    pub imm_data: u32,
    /// The local queue pair number.
    pub qp_num: u32,
    /// The remote queue pair number (UD receives).
    pub src_qp: u32,
    /// Flags.
    pub wc_flags: ibv_wc_flags,
    /// The P_Key index (GSI queue pairs).
    pub pkey_index: u16,
    /// The source LID (UD receives).
    pub slid: u16,
    /// The service level (UD receives).
    pub sl: u8,
    /// The destination LID path bits (UD receives).
    pub dlid_path_bits: u8,
}

impl Default for ibv_wc {
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
    /// A completion with these fields (`imm_data` as C holds it, in network byte order): for
    /// the tests of the accessors (no API of this module makes an `ibv_wc`).
    #[cfg(test)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        wr_id: u64,
        status: ibv_wc_status,
        opcode: ibv_wc_opcode,
        vendor_err: u32,
        byte_len: u32,
        imm_data: u32,
        qp_num: u32,
        src_qp: u32,
        wc_flags: ibv_wc_flags,
        pkey_index: u16,
        slid: u16,
        sl: u8,
        dlid_path_bits: u8,
    ) -> ibv_wc {
        ibv_wc {
            wr_id,
            status,
            opcode,
            vendor_err,
            byte_len,
            imm_data,
            qp_num,
            src_qp,
            wc_flags,
            pkey_index,
            slid,
            sl,
            dlid_path_bits,
        }
    }

    /// The id of the work request this completes.
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }

    /// The number of bytes transferred.
    pub fn len(&self) -> usize {
        self.byte_len as usize
    }

    /// Whether the work request succeeded (`IBV_WC_SUCCESS`).
    pub fn is_valid(&self) -> bool {
        self.status == ibv_wc_status::IBV_WC_SUCCESS
    }

    /// The status and the vendor's error syndrome, if the work request failed.
    pub fn error(&self) -> Option<(ibv_wc_status, u32)> {
        if self.is_valid() {
            None
        } else {
            Some((self.status, self.vendor_err))
        }
    }

    /// The operation completed.
    pub fn opcode(&self) -> ibv_wc_opcode {
        self.opcode
    }

    /// The immediate data in host byte order, if the work request succeeded and carried some.
    pub fn imm_data(&self) -> Option<u32> {
        if self.is_valid() && (self.wc_flags & ibv_wc_flags::IBV_WC_WITH_IMM).0 != 0 {
            Some(u32::from_be(self.imm_data))
        } else {
            None
        }
    }
}

/// The name `ibverbs` re-exports from `ibverbs-sys` (`struct ibv_send_wr`).
///
/// uverbs has no raw send request: sends are posted through `QueuePair`'s methods and
/// `PostBatch`. This struct exists only so that the name resolves; nothing takes or returns it,
/// and its fields are a summary of C's, not its layout.
#[derive(Debug, Default, Clone, Copy)]
pub struct ibv_send_wr {
    /// The work request id.
    pub wr_id: u64,
    /// The number of scatter/gather entries.
    pub num_sge: i32,
    /// The operation (`IBV_WR_*`).
    pub opcode: u32,
    /// Flags ([`ibv_send_flags`] bits).
    pub send_flags: u32,
    /// The immediate data, in network byte order.
    pub imm_data: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    /// Checks a C enum's values, `from_raw` of each, and (by an exhaustive match) that the Rust
    /// enum has no variant the table lacks.
    macro_rules! check_enum {
        ($ty:ident { $($variant:ident = $value:expr,)+ }) => {{
            $(
                assert_eq!(
                    $ty::$variant as i64,
                    $value,
                    concat!(stringify!($ty), "::", stringify!($variant))
                );
                assert_eq!($ty::from_raw($value), Some($ty::$variant));
            )+
            let every = |v: $ty| match v {
                $($ty::$variant => (),)+
            };
            let _ = every;
        }};
    }

    /// Checks the flags of a C flag enum.
    macro_rules! check_bits {
        ($ty:ident { $($flag:ident = $value:expr,)+ }) => {
            $(
                assert_eq!(
                    $ty::$flag.0,
                    $value,
                    concat!(stringify!($ty), "::", stringify!($flag))
                );
            )+
        };
    }

    /// The values of libibverbs' and librdmacm's enums. This table was generated by a C program
    /// compiled against rdma-core 63.0's `libibverbs/verbs.h`, `librdmacm/rdma_cma.h` and
    /// `kernel-headers/rdma/ib_user_ioctl_verbs.h` (the rdma-core commit `ibverbs-sys` vendors,
    /// 9589cf6f), printing each constant with `printf("%lld")`.
    #[test]
    fn enum_values_are_the_c_values() {
        check_enum!(ibv_qp_type {
            IBV_QPT_RC = 2,
            IBV_QPT_UC = 3,
            IBV_QPT_UD = 4,
            IBV_QPT_RAW_PACKET = 8,
            IBV_QPT_XRC_SEND = 9,
            IBV_QPT_XRC_RECV = 10,
            IBV_QPT_DRIVER = 255,
        });
        check_enum!(ibv_qp_state {
            IBV_QPS_RESET = 0,
            IBV_QPS_INIT = 1,
            IBV_QPS_RTR = 2,
            IBV_QPS_RTS = 3,
            IBV_QPS_SQD = 4,
            IBV_QPS_SQE = 5,
            IBV_QPS_ERR = 6,
            IBV_QPS_UNKNOWN = 7,
        });
        check_enum!(ibv_mtu {
            IBV_MTU_256 = 1,
            IBV_MTU_512 = 2,
            IBV_MTU_1024 = 3,
            IBV_MTU_2048 = 4,
            IBV_MTU_4096 = 5,
        });
        check_enum!(ibv_port_state {
            IBV_PORT_NOP = 0,
            IBV_PORT_DOWN = 1,
            IBV_PORT_INIT = 2,
            IBV_PORT_ARMED = 3,
            IBV_PORT_ACTIVE = 4,
            IBV_PORT_ACTIVE_DEFER = 5,
        });
        check_enum!(ibv_gid_type {
            IBV_GID_TYPE_IB = 0,
            IBV_GID_TYPE_ROCE_V1 = 1,
            IBV_GID_TYPE_ROCE_V2 = 2,
        });
        check_enum!(ibv_transport_type {
            IBV_TRANSPORT_UNKNOWN = -1,
            IBV_TRANSPORT_IB = 0,
            IBV_TRANSPORT_IWARP = 1,
            IBV_TRANSPORT_USNIC = 2,
            IBV_TRANSPORT_USNIC_UDP = 3,
            IBV_TRANSPORT_UNSPECIFIED = 4,
        });
        check_enum!(ibv_wc_status {
            IBV_WC_SUCCESS = 0,
            IBV_WC_LOC_LEN_ERR = 1,
            IBV_WC_LOC_QP_OP_ERR = 2,
            IBV_WC_LOC_EEC_OP_ERR = 3,
            IBV_WC_LOC_PROT_ERR = 4,
            IBV_WC_WR_FLUSH_ERR = 5,
            IBV_WC_MW_BIND_ERR = 6,
            IBV_WC_BAD_RESP_ERR = 7,
            IBV_WC_LOC_ACCESS_ERR = 8,
            IBV_WC_REM_INV_REQ_ERR = 9,
            IBV_WC_REM_ACCESS_ERR = 10,
            IBV_WC_REM_OP_ERR = 11,
            IBV_WC_RETRY_EXC_ERR = 12,
            IBV_WC_RNR_RETRY_EXC_ERR = 13,
            IBV_WC_LOC_RDD_VIOL_ERR = 14,
            IBV_WC_REM_INV_RD_REQ_ERR = 15,
            IBV_WC_REM_ABORT_ERR = 16,
            IBV_WC_INV_EECN_ERR = 17,
            IBV_WC_INV_EEC_STATE_ERR = 18,
            IBV_WC_FATAL_ERR = 19,
            IBV_WC_RESP_TIMEOUT_ERR = 20,
            IBV_WC_GENERAL_ERR = 21,
            IBV_WC_TM_ERR = 22,
            IBV_WC_TM_RNDV_INCOMPLETE = 23,
        });
        check_enum!(ibv_wc_opcode {
            IBV_WC_SEND = 0,
            IBV_WC_RDMA_WRITE = 1,
            IBV_WC_RDMA_READ = 2,
            IBV_WC_COMP_SWAP = 3,
            IBV_WC_FETCH_ADD = 4,
            IBV_WC_BIND_MW = 5,
            IBV_WC_LOCAL_INV = 6,
            IBV_WC_TSO = 7,
            IBV_WC_FLUSH = 8,
            IBV_WC_ATOMIC_WRITE = 9,
            IBV_WC_RECV = 128,
            IBV_WC_RECV_RDMA_WITH_IMM = 129,
            IBV_WC_TM_ADD = 130,
            IBV_WC_TM_DEL = 131,
            IBV_WC_TM_SYNC = 132,
            IBV_WC_TM_RECV = 133,
            IBV_WC_TM_NO_TAG = 134,
            IBV_WC_DRIVER1 = 135,
            IBV_WC_DRIVER2 = 136,
            IBV_WC_DRIVER3 = 137,
        });
        check_enum!(ibv_atomic_cap {
            IBV_ATOMIC_NONE = 0,
            IBV_ATOMIC_HCA = 1,
            IBV_ATOMIC_GLOB = 2,
        });
        check_enum!(ib_uverbs_advise_mr_advice {
            IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH = 0,
            IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE = 1,
            IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = 2,
        });
        check_enum!(ib_uverbs_advise_mr_flag {
            IB_UVERBS_ADVISE_MR_FLAG_FLUSH = 1,
        });
        check_enum!(rdma_cm_event_type {
            RDMA_CM_EVENT_ADDR_RESOLVED = 0,
            RDMA_CM_EVENT_ADDR_ERROR = 1,
            RDMA_CM_EVENT_ROUTE_RESOLVED = 2,
            RDMA_CM_EVENT_ROUTE_ERROR = 3,
            RDMA_CM_EVENT_CONNECT_REQUEST = 4,
            RDMA_CM_EVENT_CONNECT_RESPONSE = 5,
            RDMA_CM_EVENT_CONNECT_ERROR = 6,
            RDMA_CM_EVENT_UNREACHABLE = 7,
            RDMA_CM_EVENT_REJECTED = 8,
            RDMA_CM_EVENT_ESTABLISHED = 9,
            RDMA_CM_EVENT_DISCONNECTED = 10,
            RDMA_CM_EVENT_DEVICE_REMOVAL = 11,
            RDMA_CM_EVENT_MULTICAST_JOIN = 12,
            RDMA_CM_EVENT_MULTICAST_ERROR = 13,
            RDMA_CM_EVENT_ADDR_CHANGE = 14,
            RDMA_CM_EVENT_TIMEWAIT_EXIT = 15,
            RDMA_CM_EVENT_ADDRINFO_RESOLVED = 16,
            RDMA_CM_EVENT_ADDRINFO_ERROR = 17,
            RDMA_CM_EVENT_USER = 18,
            RDMA_CM_EVENT_INTERNAL = 19,
        });
        check_enum!(rdma_port_space {
            RDMA_PS_IPOIB = 2,
            RDMA_PS_TCP = 262,
            RDMA_PS_UDP = 273,
            RDMA_PS_IB = 319,
        });
    }

    /// The flag values, generated as the enum table above was (`printf("%llu")` of each).
    #[test]
    fn flag_values_are_the_c_values() {
        check_bits!(ibv_access_flags {
            IBV_ACCESS_LOCAL_WRITE = 1,
            IBV_ACCESS_REMOTE_WRITE = 2,
            IBV_ACCESS_REMOTE_READ = 4,
            IBV_ACCESS_REMOTE_ATOMIC = 8,
            IBV_ACCESS_MW_BIND = 16,
            IBV_ACCESS_ZERO_BASED = 32,
            IBV_ACCESS_ON_DEMAND = 64,
            IBV_ACCESS_HUGETLB = 128,
            IBV_ACCESS_FLUSH_GLOBAL = 256,
            IBV_ACCESS_FLUSH_PERSISTENT = 512,
            IBV_ACCESS_RELAXED_ORDERING = 1048576,
        });
        check_bits!(ibv_create_cq_wc_flags {
            IBV_WC_EX_WITH_BYTE_LEN = 1,
            IBV_WC_EX_WITH_IMM = 2,
            IBV_WC_EX_WITH_QP_NUM = 4,
            IBV_WC_EX_WITH_SRC_QP = 8,
            IBV_WC_EX_WITH_SLID = 16,
            IBV_WC_EX_WITH_SL = 32,
            IBV_WC_EX_WITH_DLID_PATH_BITS = 64,
            IBV_WC_EX_WITH_COMPLETION_TIMESTAMP = 128,
            IBV_WC_EX_WITH_CVLAN = 256,
            IBV_WC_EX_WITH_FLOW_TAG = 512,
            IBV_WC_EX_WITH_TM_INFO = 1024,
            IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK = 2048,
        });
        check_bits!(ibv_qp_attr_mask {
            IBV_QP_STATE = 1,
            IBV_QP_CUR_STATE = 2,
            IBV_QP_EN_SQD_ASYNC_NOTIFY = 4,
            IBV_QP_ACCESS_FLAGS = 8,
            IBV_QP_PKEY_INDEX = 16,
            IBV_QP_PORT = 32,
            IBV_QP_QKEY = 64,
            IBV_QP_AV = 128,
            IBV_QP_PATH_MTU = 256,
            IBV_QP_TIMEOUT = 512,
            IBV_QP_RETRY_CNT = 1024,
            IBV_QP_RNR_RETRY = 2048,
            IBV_QP_RQ_PSN = 4096,
            IBV_QP_MAX_QP_RD_ATOMIC = 8192,
            IBV_QP_ALT_PATH = 16384,
            IBV_QP_MIN_RNR_TIMER = 32768,
            IBV_QP_SQ_PSN = 65536,
            IBV_QP_MAX_DEST_RD_ATOMIC = 131072,
            IBV_QP_PATH_MIG_STATE = 262144,
            IBV_QP_CAP = 524288,
            IBV_QP_DEST_QPN = 1048576,
            IBV_QP_RATE_LIMIT = 33554432,
        });
        check_bits!(ibv_send_flags {
            IBV_SEND_FENCE = 1,
            IBV_SEND_SIGNALED = 2,
            IBV_SEND_SOLICITED = 4,
            IBV_SEND_INLINE = 8,
            IBV_SEND_IP_CSUM = 16,
        });
        check_bits!(ibv_wc_flags {
            IBV_WC_GRH = 1,
            IBV_WC_WITH_IMM = 2,
            IBV_WC_IP_CSUM_OK = 4,
            IBV_WC_WITH_INV = 8,
            IBV_WC_TM_SYNC_REQ = 16,
            IBV_WC_TM_MATCH = 32,
            IBV_WC_TM_DATA_VALID = 64,
        });
    }

    #[test]
    fn from_raw_refuses_values_c_does_not_have() {
        assert_eq!(ibv_qp_type::from_raw(0), None);
        assert_eq!(ibv_qp_type::from_raw(1), None);
        assert_eq!(ibv_mtu::from_raw(0), None);
        assert_eq!(ibv_mtu::from_raw(6), None);
        assert_eq!(ibv_qp_state::from_raw(8), None);
        assert_eq!(ibv_transport_type::from_raw(-2), None);
        assert_eq!(ibv_wc_opcode::from_raw(10), None);
        assert_eq!(ibv_wc_status::from_raw(24), None);
        assert_eq!(rdma_cm_event_type::from_raw(20), None);
    }

    #[test]
    fn bit_operators_and_debug() {
        let mut a =
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_READ;
        assert_eq!(a, ibv_access_flags(5));
        a |= ibv_access_flags::IBV_ACCESS_REMOTE_WRITE;
        assert_eq!(a.0, 7);
        assert_eq!((a & ibv_access_flags::IBV_ACCESS_REMOTE_WRITE).0, 2);
        a &= ibv_access_flags(6);
        assert_eq!(a.0, 6);
        assert_eq!(ibv_access_flags::default().0, 0);
        assert_eq!(
            format!("{:?}", ibv_qp_attr_mask::IBV_QP_ACCESS_FLAGS),
            "ibv_qp_attr_mask(8)"
        );
        assert_eq!(format!("{:?}", ibv_qp_state::IBV_QPS_RTS), "IBV_QPS_RTS");
        assert_eq!(ibv_qp_type::IBV_QPT_UD as u32, 4);
        assert_eq!(ibv_transport_type::IBV_TRANSPORT_UNKNOWN as i32, -1);
    }

    /// Sizes, alignments and offsets of the C structs, printed by the same C program as the
    /// tables above (`sizeof`, `_Alignof`, `offsetof`, x86_64, rdma-core 63.0 headers).
    #[test]
    fn layouts_are_the_c_layouts() {
        assert_eq!((size_of::<ibv_wc>(), align_of::<ibv_wc>()), (48, 8));
        assert_eq!(offset_of!(ibv_wc, wr_id), 0);
        assert_eq!(offset_of!(ibv_wc, status), 8);
        assert_eq!(offset_of!(ibv_wc, opcode), 12);
        assert_eq!(offset_of!(ibv_wc, vendor_err), 16);
        assert_eq!(offset_of!(ibv_wc, byte_len), 20);
        assert_eq!(offset_of!(ibv_wc, imm_data), 24);
        assert_eq!(offset_of!(ibv_wc, qp_num), 28);
        assert_eq!(offset_of!(ibv_wc, src_qp), 32);
        assert_eq!(offset_of!(ibv_wc, wc_flags), 36);
        assert_eq!(offset_of!(ibv_wc, pkey_index), 40);
        assert_eq!(offset_of!(ibv_wc, slid), 42);
        assert_eq!(offset_of!(ibv_wc, sl), 44);
        assert_eq!(offset_of!(ibv_wc, dlid_path_bits), 45);

        assert_eq!((size_of::<ibv_sge>(), align_of::<ibv_sge>()), (16, 8));
        assert_eq!(offset_of!(ibv_sge, length), 8);
        assert_eq!(offset_of!(ibv_sge, lkey), 12);

        assert_eq!(
            (size_of::<ibv_port_attr>(), align_of::<ibv_port_attr>()),
            (56, 4)
        );
        assert_eq!(offset_of!(ibv_port_attr, gid_tbl_len), 12);
        assert_eq!(offset_of!(ibv_port_attr, pkey_tbl_len), 32);
        assert_eq!(offset_of!(ibv_port_attr, lid), 34);
        assert_eq!(offset_of!(ibv_port_attr, link_layer), 46);
        assert_eq!(offset_of!(ibv_port_attr, flags), 47);
        assert_eq!(offset_of!(ibv_port_attr, port_cap_flags2), 48);
        assert_eq!(offset_of!(ibv_port_attr, active_speed_ex), 52);

        assert_eq!(
            (size_of::<ibv_device_attr>(), align_of::<ibv_device_attr>()),
            (232, 8)
        );
        assert_eq!(offset_of!(ibv_device_attr, node_guid), 64);
        assert_eq!(offset_of!(ibv_device_attr, sys_image_guid), 72);
        assert_eq!(offset_of!(ibv_device_attr, vendor_id), 96);
        assert_eq!(offset_of!(ibv_device_attr, atomic_cap), 164);
        assert_eq!(offset_of!(ibv_device_attr, max_pkeys), 224);
        assert_eq!(offset_of!(ibv_device_attr, local_ca_ack_delay), 226);
        assert_eq!(offset_of!(ibv_device_attr, phys_port_cnt), 227);

        assert_eq!((size_of::<ibv_gid>(), align_of::<ibv_gid>()), (16, 8));
        assert_eq!(
            (size_of::<ibv_gid_entry>(), align_of::<ibv_gid_entry>()),
            (32, 8)
        );
        assert_eq!(offset_of!(ibv_gid_entry, gid_index), 16);
        assert_eq!(offset_of!(ibv_gid_entry, port_num), 20);
        assert_eq!(offset_of!(ibv_gid_entry, gid_type), 24);
        assert_eq!(offset_of!(ibv_gid_entry, ndev_ifindex), 28);

        assert_eq!(
            (size_of::<ibv_odp_caps>(), align_of::<ibv_odp_caps>()),
            (24, 8)
        );
        assert_eq!(
            (size_of::<ibv_tso_caps>(), align_of::<ibv_tso_caps>()),
            (8, 4)
        );
        assert_eq!(
            (size_of::<ibv_rss_caps>(), align_of::<ibv_rss_caps>()),
            (32, 8)
        );
        assert_eq!(size_of::<ibv_packet_pacing_caps>(), 12);
        assert_eq!(size_of::<ibv_tm_caps>(), 20);
        assert_eq!(size_of::<ibv_cq_moderation_caps>(), 4);
        assert_eq!(size_of::<ibv_pci_atomic_caps>(), 6);

        assert_eq!(
            (
                size_of::<ibv_device_attr_ex>(),
                align_of::<ibv_device_attr_ex>()
            ),
            (400, 8)
        );
        assert_eq!(offset_of!(ibv_device_attr_ex, comp_mask), 232);
        assert_eq!(offset_of!(ibv_device_attr_ex, odp_caps), 240);
        assert_eq!(
            offset_of!(ibv_device_attr_ex, completion_timestamp_mask),
            264
        );
        assert_eq!(offset_of!(ibv_device_attr_ex, hca_core_clock), 272);
        assert_eq!(offset_of!(ibv_device_attr_ex, device_cap_flags_ex), 280);
        assert_eq!(offset_of!(ibv_device_attr_ex, tso_caps), 288);
        assert_eq!(offset_of!(ibv_device_attr_ex, rss_caps), 296);
        assert_eq!(offset_of!(ibv_device_attr_ex, max_wq_type_rq), 328);
        assert_eq!(offset_of!(ibv_device_attr_ex, packet_pacing_caps), 332);
        assert_eq!(offset_of!(ibv_device_attr_ex, raw_packet_caps), 344);
        assert_eq!(offset_of!(ibv_device_attr_ex, tm_caps), 348);
        assert_eq!(offset_of!(ibv_device_attr_ex, cq_mod_caps), 368);
        assert_eq!(offset_of!(ibv_device_attr_ex, max_dm_size), 376);
        assert_eq!(offset_of!(ibv_device_attr_ex, pci_atomic_caps), 384);
        assert_eq!(offset_of!(ibv_device_attr_ex, xrc_odp_caps), 392);
        assert_eq!(offset_of!(ibv_device_attr_ex, phys_port_cnt_ex), 396);
    }

    #[test]
    fn work_completion_accessors() {
        let d = ibv_wc::default();
        assert_eq!(d.error(), Some((ibv_wc_status::IBV_WC_GENERAL_ERR, 0)));
        assert_eq!(d.opcode(), ibv_wc_opcode::IBV_WC_LOCAL_INV);
        assert!(!d.is_valid());

        let wc = ibv_wc::new(
            7,
            ibv_wc_status::IBV_WC_SUCCESS,
            ibv_wc_opcode::IBV_WC_RECV,
            0,
            100,
            0x1234_5678u32.to_be(),
            11,
            12,
            ibv_wc_flags::IBV_WC_WITH_IMM,
            0,
            3,
            1,
            0,
        );
        assert!(wc.is_valid());
        assert_eq!(wc.wr_id(), 7);
        assert_eq!(wc.len(), 100);
        assert_eq!(wc.error(), None);
        assert_eq!(wc.opcode(), ibv_wc_opcode::IBV_WC_RECV);
        assert_eq!(wc.imm_data(), Some(0x1234_5678));
        assert_eq!((wc.qp_num, wc.src_qp, wc.slid, wc.sl), (11, 12, 3, 1));

        let mut no_imm = wc;
        no_imm.wc_flags = ibv_wc_flags(0);
        assert_eq!(no_imm.imm_data(), None);
        let failed = ibv_wc::new(
            8,
            ibv_wc_status::IBV_WC_REM_ACCESS_ERR,
            ibv_wc_opcode::IBV_WC_RDMA_WRITE,
            0x88,
            0,
            0,
            0,
            0,
            ibv_wc_flags::IBV_WC_WITH_IMM,
            0,
            0,
            0,
            0,
        );
        assert_eq!(failed.imm_data(), None);
        assert_eq!(
            failed.error(),
            Some((ibv_wc_status::IBV_WC_REM_ACCESS_ERR, 0x88))
        );
    }

    #[test]
    fn defaults() {
        let d = ibv_device_attr::default();
        assert_eq!(d.fw_ver, [0; 64]);
        assert_eq!(d.atomic_cap, ibv_atomic_cap::IBV_ATOMIC_NONE);
        let p = ibv_port_attr::default();
        assert_eq!(p.state, ibv_port_state::IBV_PORT_NOP);
        assert_eq!(p.active_mtu, ibv_mtu::IBV_MTU_256);
        let x = ibv_device_attr_ex::default();
        assert_eq!(x.orig_attr.phys_port_cnt, 0);
        assert_eq!(ibv_gid::default().raw, [0; 16]);
        assert_eq!(ibv_send_wr::default().num_sge, 0);
    }
}
