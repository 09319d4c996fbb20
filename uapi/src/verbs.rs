//! The legacy write(2) ABI and shared verbs types: `rdma/ib_user_verbs.h`.
//!
//! Command numbers, request/response structs (without their trailing flexible `driver_data[]`),
//! work requests/completions, and capability flags.

use crate::{union_get, union_set};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Global uverbs ABI version (`/sys/class/infiniband_verbs/abi_version`).
pub const IB_USER_VERBS_ABI_VERSION: u32 = 6;

/// First extended-only command number.
pub const IB_USER_VERBS_CMD_THRESHOLD: u32 = 50;

// enum ib_uverbs_write_cmds
/// Legacy write command number: `GET_CONTEXT`.
pub const IB_USER_VERBS_CMD_GET_CONTEXT: u32 = 0;
/// Legacy write command number: `QUERY_DEVICE`.
pub const IB_USER_VERBS_CMD_QUERY_DEVICE: u32 = 1;
/// Legacy write command number: `QUERY_PORT`.
pub const IB_USER_VERBS_CMD_QUERY_PORT: u32 = 2;
/// Legacy write command number: `ALLOC_PD`.
pub const IB_USER_VERBS_CMD_ALLOC_PD: u32 = 3;
/// Legacy write command number: `DEALLOC_PD`.
pub const IB_USER_VERBS_CMD_DEALLOC_PD: u32 = 4;
/// Legacy write command number: `CREATE_AH`.
pub const IB_USER_VERBS_CMD_CREATE_AH: u32 = 5;
/// Legacy write command number: `MODIFY_AH`.
pub const IB_USER_VERBS_CMD_MODIFY_AH: u32 = 6;
/// Legacy write command number: `QUERY_AH`.
pub const IB_USER_VERBS_CMD_QUERY_AH: u32 = 7;
/// Legacy write command number: `DESTROY_AH`.
pub const IB_USER_VERBS_CMD_DESTROY_AH: u32 = 8;
/// Legacy write command number: `REG_MR`.
pub const IB_USER_VERBS_CMD_REG_MR: u32 = 9;
/// Legacy write command number: `REG_SMR`.
pub const IB_USER_VERBS_CMD_REG_SMR: u32 = 10;
/// Legacy write command number: `REREG_MR`.
pub const IB_USER_VERBS_CMD_REREG_MR: u32 = 11;
/// Legacy write command number: `QUERY_MR`.
pub const IB_USER_VERBS_CMD_QUERY_MR: u32 = 12;
/// Legacy write command number: `DEREG_MR`.
pub const IB_USER_VERBS_CMD_DEREG_MR: u32 = 13;
/// Legacy write command number: `ALLOC_MW`.
pub const IB_USER_VERBS_CMD_ALLOC_MW: u32 = 14;
/// Legacy write command number: `BIND_MW`.
pub const IB_USER_VERBS_CMD_BIND_MW: u32 = 15;
/// Legacy write command number: `DEALLOC_MW`.
pub const IB_USER_VERBS_CMD_DEALLOC_MW: u32 = 16;
/// Legacy write command number: `CREATE_COMP_CHANNEL`.
pub const IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL: u32 = 17;
/// Legacy write command number: `CREATE_CQ`.
pub const IB_USER_VERBS_CMD_CREATE_CQ: u32 = 18;
/// Legacy write command number: `RESIZE_CQ`.
pub const IB_USER_VERBS_CMD_RESIZE_CQ: u32 = 19;
/// Legacy write command number: `DESTROY_CQ`.
pub const IB_USER_VERBS_CMD_DESTROY_CQ: u32 = 20;
/// Legacy write command number: `POLL_CQ`.
pub const IB_USER_VERBS_CMD_POLL_CQ: u32 = 21;
/// Legacy write command number: `PEEK_CQ`.
pub const IB_USER_VERBS_CMD_PEEK_CQ: u32 = 22;
/// Legacy write command number: `REQ_NOTIFY_CQ`.
pub const IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: u32 = 23;
/// Legacy write command number: `CREATE_QP`.
pub const IB_USER_VERBS_CMD_CREATE_QP: u32 = 24;
/// Legacy write command number: `QUERY_QP`.
pub const IB_USER_VERBS_CMD_QUERY_QP: u32 = 25;
/// Legacy write command number: `MODIFY_QP`.
pub const IB_USER_VERBS_CMD_MODIFY_QP: u32 = 26;
/// Legacy write command number: `DESTROY_QP`.
pub const IB_USER_VERBS_CMD_DESTROY_QP: u32 = 27;
/// Legacy write command number: `POST_SEND`.
pub const IB_USER_VERBS_CMD_POST_SEND: u32 = 28;
/// Legacy write command number: `POST_RECV`.
pub const IB_USER_VERBS_CMD_POST_RECV: u32 = 29;
/// Legacy write command number: `ATTACH_MCAST`.
pub const IB_USER_VERBS_CMD_ATTACH_MCAST: u32 = 30;
/// Legacy write command number: `DETACH_MCAST`.
pub const IB_USER_VERBS_CMD_DETACH_MCAST: u32 = 31;
/// Legacy write command number: `CREATE_SRQ`.
pub const IB_USER_VERBS_CMD_CREATE_SRQ: u32 = 32;
/// Legacy write command number: `MODIFY_SRQ`.
pub const IB_USER_VERBS_CMD_MODIFY_SRQ: u32 = 33;
/// Legacy write command number: `QUERY_SRQ`.
pub const IB_USER_VERBS_CMD_QUERY_SRQ: u32 = 34;
/// Legacy write command number: `DESTROY_SRQ`.
pub const IB_USER_VERBS_CMD_DESTROY_SRQ: u32 = 35;
/// Legacy write command number: `POST_SRQ_RECV`.
pub const IB_USER_VERBS_CMD_POST_SRQ_RECV: u32 = 36;
/// Legacy write command number: `OPEN_XRCD`.
pub const IB_USER_VERBS_CMD_OPEN_XRCD: u32 = 37;
/// Legacy write command number: `CLOSE_XRCD`.
pub const IB_USER_VERBS_CMD_CLOSE_XRCD: u32 = 38;
/// Legacy write command number: `CREATE_XSRQ`.
pub const IB_USER_VERBS_CMD_CREATE_XSRQ: u32 = 39;
/// Legacy write command number: `OPEN_QP`.
pub const IB_USER_VERBS_CMD_OPEN_QP: u32 = 40;

// enum (anonymous)
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `QUERY_DEVICE`.
pub const IB_USER_VERBS_EX_CMD_QUERY_DEVICE: u32 = IB_USER_VERBS_CMD_QUERY_DEVICE;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `CREATE_CQ`.
pub const IB_USER_VERBS_EX_CMD_CREATE_CQ: u32 = IB_USER_VERBS_CMD_CREATE_CQ;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `CREATE_QP`.
pub const IB_USER_VERBS_EX_CMD_CREATE_QP: u32 = IB_USER_VERBS_CMD_CREATE_QP;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `MODIFY_QP`.
pub const IB_USER_VERBS_EX_CMD_MODIFY_QP: u32 = IB_USER_VERBS_CMD_MODIFY_QP;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `CREATE_FLOW`.
pub const IB_USER_VERBS_EX_CMD_CREATE_FLOW: u32 = IB_USER_VERBS_CMD_THRESHOLD;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `DESTROY_FLOW`.
pub const IB_USER_VERBS_EX_CMD_DESTROY_FLOW: u32 = 51;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `CREATE_WQ`.
pub const IB_USER_VERBS_EX_CMD_CREATE_WQ: u32 = 52;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `MODIFY_WQ`.
pub const IB_USER_VERBS_EX_CMD_MODIFY_WQ: u32 = 53;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `DESTROY_WQ`.
pub const IB_USER_VERBS_EX_CMD_DESTROY_WQ: u32 = 54;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `CREATE_RWQ_IND_TBL`.
pub const IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL: u32 = 55;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `DESTROY_RWQ_IND_TBL`.
pub const IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL: u32 = 56;
/// Extended write command number (send with `IB_USER_VERBS_CMD_FLAG_EXTENDED`): `MODIFY_CQ`.
pub const IB_USER_VERBS_EX_CMD_MODIFY_CQ: u32 = 57;

/// Mask of the command number in `ib_uverbs_cmd_hdr.command`.
pub const IB_USER_VERBS_CMD_COMMAND_MASK: u32 = 0xff;

/// Flag in `ib_uverbs_cmd_hdr.command` selecting the extended command table.
pub const IB_USER_VERBS_CMD_FLAG_EXTENDED: u32 = 0x80000000;

// enum ib_uverbs_ex_create_cq_flags
/// EX_CREATE_CQ / CQ_CREATE flag: `TIMESTAMP_COMPLETION`.
pub const IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION: u32 = 1 << 0;
/// EX_CREATE_CQ / CQ_CREATE flag: `IGNORE_OVERRUN`.
pub const IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN: u32 = 1 << 1;

// enum ib_uverbs_wc_opcode
/// Send-side completion opcode (`ib_uverbs_wc.opcode`): `SEND`.
pub const IB_UVERBS_WC_SEND: u32 = 0;
/// Send-side completion opcode (`ib_uverbs_wc.opcode`): `RDMA_WRITE`.
pub const IB_UVERBS_WC_RDMA_WRITE: u32 = 1;
/// Send-side completion opcode (`ib_uverbs_wc.opcode`): `RDMA_READ`.
pub const IB_UVERBS_WC_RDMA_READ: u32 = 2;
/// Send-side completion opcode (`ib_uverbs_wc.opcode`): `COMP_SWAP`.
pub const IB_UVERBS_WC_COMP_SWAP: u32 = 3;
/// Send-side completion opcode (`ib_uverbs_wc.opcode`): `FETCH_ADD`.
pub const IB_UVERBS_WC_FETCH_ADD: u32 = 4;
/// Send-side completion opcode (`ib_uverbs_wc.opcode`): `BIND_MW`.
pub const IB_UVERBS_WC_BIND_MW: u32 = 5;
/// Send-side completion opcode (`ib_uverbs_wc.opcode`): `LOCAL_INV`.
pub const IB_UVERBS_WC_LOCAL_INV: u32 = 6;
/// Send-side completion opcode (`ib_uverbs_wc.opcode`): `TSO`.
pub const IB_UVERBS_WC_TSO: u32 = 7;

// enum ib_uverbs_create_qp_mask
/// EX_CREATE_QP `comp_mask` bit: `IND_TABLE`.
pub const IB_UVERBS_CREATE_QP_MASK_IND_TABLE: u32 = 1 << 0;

// enum (anonymous)
/// All EX_CREATE_QP `comp_mask` bits the kernel supports.
pub const IB_UVERBS_CREATE_QP_SUP_COMP_MASK: u32 = IB_UVERBS_CREATE_QP_MASK_IND_TABLE;

// enum ib_uverbs_wr_opcode
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `RDMA_WRITE`.
pub const IB_UVERBS_WR_RDMA_WRITE: u32 = 0;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `RDMA_WRITE_WITH_IMM`.
pub const IB_UVERBS_WR_RDMA_WRITE_WITH_IMM: u32 = 1;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `SEND`.
pub const IB_UVERBS_WR_SEND: u32 = 2;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `SEND_WITH_IMM`.
pub const IB_UVERBS_WR_SEND_WITH_IMM: u32 = 3;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `RDMA_READ`.
pub const IB_UVERBS_WR_RDMA_READ: u32 = 4;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `ATOMIC_CMP_AND_SWP`.
pub const IB_UVERBS_WR_ATOMIC_CMP_AND_SWP: u32 = 5;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `ATOMIC_FETCH_AND_ADD`.
pub const IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD: u32 = 6;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `LOCAL_INV`.
pub const IB_UVERBS_WR_LOCAL_INV: u32 = 7;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `BIND_MW`.
pub const IB_UVERBS_WR_BIND_MW: u32 = 8;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `SEND_WITH_INV`.
pub const IB_UVERBS_WR_SEND_WITH_INV: u32 = 9;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `TSO`.
pub const IB_UVERBS_WR_TSO: u32 = 10;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `RDMA_READ_WITH_INV`.
pub const IB_UVERBS_WR_RDMA_READ_WITH_INV: u32 = 11;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `MASKED_ATOMIC_CMP_AND_SWP`.
pub const IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP: u32 = 12;
/// Send work request opcode (`ib_uverbs_send_wr.opcode`, also used by rxe WQEs): `MASKED_ATOMIC_FETCH_AND_ADD`.
pub const IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD: u32 = 13;

/// Maximum `log_ind_tbl_size` of an RWQ indirection table.
pub const IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE: u32 = 0x0d;

/// Maximum length of an IB device name, including the NUL.
pub const IB_DEVICE_NAME_MAX: usize = 64;

// enum ib_uverbs_device_cap_flags
// bits 9, 15, 16, 19, 22, 27, 30, 31, 32, 33, 35 and 37 may be set by old kernels and should not be used.
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `RESIZE_MAX_WR`.
pub const IB_UVERBS_DEVICE_RESIZE_MAX_WR: u64 = 1 << 0;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `BAD_PKEY_CNTR`.
pub const IB_UVERBS_DEVICE_BAD_PKEY_CNTR: u64 = 1 << 1;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `BAD_QKEY_CNTR`.
pub const IB_UVERBS_DEVICE_BAD_QKEY_CNTR: u64 = 1 << 2;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `RAW_MULTI`.
pub const IB_UVERBS_DEVICE_RAW_MULTI: u64 = 1 << 3;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `AUTO_PATH_MIG`.
pub const IB_UVERBS_DEVICE_AUTO_PATH_MIG: u64 = 1 << 4;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `CHANGE_PHY_PORT`.
pub const IB_UVERBS_DEVICE_CHANGE_PHY_PORT: u64 = 1 << 5;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `UD_AV_PORT_ENFORCE`.
pub const IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE: u64 = 1 << 6;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `CURR_QP_STATE_MOD`.
pub const IB_UVERBS_DEVICE_CURR_QP_STATE_MOD: u64 = 1 << 7;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `SHUTDOWN_PORT`.
pub const IB_UVERBS_DEVICE_SHUTDOWN_PORT: u64 = 1 << 8;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `PORT_ACTIVE_EVENT` (IB_UVERBS_DEVICE_INIT_TYPE = 1 << 9, (not in use)).
pub const IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT: u64 = 1 << 10;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `SYS_IMAGE_GUID`.
pub const IB_UVERBS_DEVICE_SYS_IMAGE_GUID: u64 = 1 << 11;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `RC_RNR_NAK_GEN`.
pub const IB_UVERBS_DEVICE_RC_RNR_NAK_GEN: u64 = 1 << 12;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `SRQ_RESIZE`.
pub const IB_UVERBS_DEVICE_SRQ_RESIZE: u64 = 1 << 13;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `N_NOTIFY_CQ`.
pub const IB_UVERBS_DEVICE_N_NOTIFY_CQ: u64 = 1 << 14;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `MEM_WINDOW`.
pub const IB_UVERBS_DEVICE_MEM_WINDOW: u64 = 1 << 17;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `UD_IP_CSUM`.
pub const IB_UVERBS_DEVICE_UD_IP_CSUM: u64 = 1 << 18;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `XRC`.
pub const IB_UVERBS_DEVICE_XRC: u64 = 1 << 20;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `MEM_MGT_EXTENSIONS`.
pub const IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS: u64 = 1 << 21;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `MEM_WINDOW_TYPE_2A`.
pub const IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A: u64 = 1 << 23;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `MEM_WINDOW_TYPE_2B`.
pub const IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B: u64 = 1 << 24;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `RC_IP_CSUM`.
pub const IB_UVERBS_DEVICE_RC_IP_CSUM: u64 = 1 << 25;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `RAW_IP_CSUM` (deprecated. Please use IB_UVERBS_RAW_PACKET_CAP_IP_CSUM).
pub const IB_UVERBS_DEVICE_RAW_IP_CSUM: u64 = 1 << 26;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `MANAGED_FLOW_STEERING`.
pub const IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING: u64 = 1 << 29;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `RAW_SCATTER_FCS` (deprecated. Please use IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS).
pub const IB_UVERBS_DEVICE_RAW_SCATTER_FCS: u64 = 1 << 34;
/// Device capability flag (`device_cap_flags_ex`, u64; the low 32 bits are also in `device_cap_flags`): `PCI_WRITE_END_PADDING`.
pub const IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING: u64 = 1 << 36;

// enum ib_uverbs_raw_packet_caps
/// Raw packet capability (`raw_packet_caps`): `CVLAN_STRIPPING`.
pub const IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING: u32 = 1 << 0;
/// Raw packet capability (`raw_packet_caps`): `SCATTER_FCS`.
pub const IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS: u32 = 1 << 1;
/// Raw packet capability (`raw_packet_caps`): `IP_CSUM`.
pub const IB_UVERBS_RAW_PACKET_CAP_IP_CSUM: u32 = 1 << 2;
/// Raw packet capability (`raw_packet_caps`): `DELAY_DROP`.
pub const IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP: u32 = 1 << 3;

/// Highest QP attribute-mask bit the legacy MODIFY_QP write command accepts (= kernel `IB_QP_DEST_QPN`);
/// higher bits need EX_MODIFY_QP.
///
/// Not in the 6.1 header: it was dropped from the uapi header long before 6.1 but the 6.1 kernel
/// still applies it internally (`ib_uverbs_modify_qp`); not checked by the C layout test.
pub const IB_USER_LEGACY_LAST_QP_ATTR_MASK: u32 = 1 << 20;

/// Highest QP attribute-mask bit EX_MODIFY_QP accepts (= kernel `IB_QP_RATE_LIMIT`).
///
/// Not in the 6.1 header (dropped from uapi like [`IB_USER_LEGACY_LAST_QP_ATTR_MASK`]); not checked
/// by the C layout test.
pub const IB_USER_LAST_QP_ATTR_MASK: u32 = 1 << 25;

/// Async event as read(2) from the async event fd (16 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_async_event_desc {
    /// User handle of the affected CQ/QP/SRQ/WQ, or the port number for port events.
    pub element: u64,
    /// Event type (kernel `enum ib_event_type`).
    pub event_type: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_async_event_desc>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_async_event_desc>() == 8);

/// Completion event as read(2) from a completion channel fd: the CQ's user handle (8 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_comp_event_desc {
    /// User handle (`user_handle` at creation) of the CQ that completed.
    pub cq_handle: u64,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_comp_event_desc>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_comp_event_desc>() == 8);

/// CQ moderation limits reported by EX_QUERY_DEVICE.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_cq_moderation_caps {
    /// Maximum `cq_count` of CQ moderation.
    pub max_cq_moderation_count: u16,
    /// Maximum `cq_period` of CQ moderation (us).
    pub max_cq_moderation_period: u16,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_cq_moderation_caps>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_cq_moderation_caps>() == 4);

/// Header of every legacy write(2) command (8 bytes): command number and in/out lengths in words.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_cmd_hdr {
    /// Command number (`IB_USER_VERBS_CMD_*`), OR `IB_USER_VERBS_CMD_FLAG_EXTENDED` for extended commands.
    pub command: u32,
    /// Legacy: total write length in 4-byte words (header included). Extended: core request length in 8-byte words.
    pub in_words: u16,
    /// Legacy: response buffer length in 4-byte words. Extended: core response length in 8-byte words.
    pub out_words: u16,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_cmd_hdr>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_cmd_hdr>() == 4);

/// Second header of extended write commands (16 bytes), following [`ib_uverbs_cmd_hdr`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_cmd_hdr {
    /// User pointer for the response (0 if none).
    pub response: u64,
    /// Driver request length in 8-byte words.
    pub provider_in_words: u16,
    /// Driver response length in 8-byte words.
    pub provider_out_words: u16,
    /// Reserved; must be 0.
    pub cmd_hdr_reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_cmd_hdr>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_cmd_hdr>() == 8);

/// Request of GET_CONTEXT (write path): only the response pointer; driver data follows.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 8).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_get_context {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_get_context>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_get_context>() == 8);

/// Response of GET_CONTEXT (write path): async fd and number of completion vectors; driver data follows.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 8).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_get_context_resp {
    /// File descriptor for async events.
    pub async_fd: u32,
    /// Number of completion vectors.
    pub num_comp_vectors: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_get_context_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_get_context_resp>() == 8);

/// Request of QUERY_DEVICE (write path): only the response pointer.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 8).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_device {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_device>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_device>() == 8);

/// Response of QUERY_DEVICE (write path): the device attributes (176 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_device_resp {
    /// Firmware version.
    pub fw_ver: u64,
    /// Node GUID (big-endian on the wire: raw bytes in a `u64`).
    pub node_guid: u64,
    /// System image GUID (big-endian on the wire: raw bytes in a `u64`).
    pub sys_image_guid: u64,
    /// Largest registrable memory region in bytes.
    pub max_mr_size: u64,
    /// Supported page sizes (bit mask).
    pub page_size_cap: u64,
    /// IEEE vendor id.
    pub vendor_id: u32,
    /// Vendor part id.
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Maximum number of QPs.
    pub max_qp: u32,
    /// Maximum work requests per QP.
    pub max_qp_wr: u32,
    /// Low 32 bits of the device capability flags (`IB_UVERBS_DEVICE_*`).
    pub device_cap_flags: u32,
    /// Maximum SGEs per work request.
    pub max_sge: u32,
    /// Maximum SGEs per RDMA read.
    pub max_sge_rd: u32,
    /// Maximum number of CQs.
    pub max_cq: u32,
    /// Maximum entries per CQ.
    pub max_cqe: u32,
    /// Maximum number of MRs.
    pub max_mr: u32,
    /// Maximum number of PDs.
    pub max_pd: u32,
    /// Maximum outstanding RDMA reads/atomics per QP as responder.
    pub max_qp_rd_atom: u32,
    /// Maximum outstanding RDMA reads/atomics per EE context.
    pub max_ee_rd_atom: u32,
    /// Maximum responder resources for RDMA reads/atomics.
    pub max_res_rd_atom: u32,
    /// Maximum outstanding RDMA reads/atomics per QP as initiator.
    pub max_qp_init_rd_atom: u32,
    /// Maximum outstanding RDMA reads/atomics per EE context as initiator.
    pub max_ee_init_rd_atom: u32,
    /// Atomic support (kernel `enum ib_atomic_cap`: NONE, HCA, GLOB).
    pub atomic_cap: u32,
    /// Maximum number of EE contexts.
    pub max_ee: u32,
    /// Maximum number of RD domains.
    pub max_rdd: u32,
    /// Maximum number of memory windows.
    pub max_mw: u32,
    /// Maximum raw IPv6 QPs.
    pub max_raw_ipv6_qp: u32,
    /// Maximum raw Ethertype QPs.
    pub max_raw_ethy_qp: u32,
    /// Maximum multicast groups.
    pub max_mcast_grp: u32,
    /// Maximum QPs per multicast group.
    pub max_mcast_qp_attach: u32,
    /// Maximum QP attachments over all multicast groups.
    pub max_total_mcast_qp_attach: u32,
    /// Maximum number of AHs.
    pub max_ah: u32,
    /// Maximum number of FMRs (obsolete).
    pub max_fmr: u32,
    /// Maximum maps per FMR (obsolete).
    pub max_map_per_fmr: u32,
    /// Maximum number of SRQs.
    pub max_srq: u32,
    /// Maximum work requests per SRQ.
    pub max_srq_wr: u32,
    /// Maximum SGEs per SRQ work request.
    pub max_srq_sge: u32,
    /// P_Key table size.
    pub max_pkeys: u16,
    /// Local CA ACK delay (encoded).
    pub local_ca_ack_delay: u8,
    /// Number of physical ports.
    pub phys_port_cnt: u8,
    /// Reserved; zero.
    pub reserved: [u8; 4],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_device_resp>() == 176);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_device_resp>() == 8);

/// Request of EX_QUERY_DEVICE (extended write): comp_mask and reserved, both 0.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_query_device {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_query_device>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_query_device>() == 4);

/// Per-transport ODP capabilities (`ib_uverbs_odp_caps.per_transport_caps`; an anonymous C struct type, named here).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_odp_caps_per_transport_caps {
    /// ODP operations supported on RC QPs.
    pub rc_odp_caps: u32,
    /// ODP operations supported on UC QPs.
    pub uc_odp_caps: u32,
    /// ODP operations supported on UD QPs.
    pub ud_odp_caps: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_odp_caps_per_transport_caps>() == 12);
const _: () = assert!(core::mem::align_of::<ib_uverbs_odp_caps_per_transport_caps>() == 4);

/// On-demand-paging capabilities reported by EX_QUERY_DEVICE.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_odp_caps {
    /// General ODP capabilities.
    pub general_caps: u64,
    /// Per-transport ODP capabilities (C anonymous struct type, named here).
    pub per_transport_caps: ib_uverbs_odp_caps_per_transport_caps,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_odp_caps>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_odp_caps>() == 8);

/// RSS (receive side scaling) capabilities reported by EX_QUERY_DEVICE.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_rss_caps {
    /// Corresponding bit will be set if qp type from 'enum ib_qp_type' is supported, e.g. supported_qpts |= 1 << IB_QPT_UD.
    pub supported_qpts: u32,
    /// Maximum number of RWQ indirection tables.
    pub max_rwq_indirection_tables: u32,
    /// Maximum entries per RWQ indirection table.
    pub max_rwq_indirection_table_size: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_rss_caps>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_rss_caps>() == 4);

/// Tag-matching capabilities reported by EX_QUERY_DEVICE.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_tm_caps {
    /// Max size of rendezvous request message.
    pub max_rndv_hdr_size: u32,
    /// Max number of entries in tag matching list.
    pub max_num_tags: u32,
    /// TM flags.
    pub flags: u32,
    /// Max number of outstanding list operations.
    pub max_ops: u32,
    /// Max number of SGE in tag matching entry.
    pub max_sge: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_tm_caps>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_tm_caps>() == 4);

/// Response of EX_QUERY_DEVICE: the legacy response followed by extended attributes; `response_length` says how much the kernel filled.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_query_device_resp {
    /// The legacy QUERY_DEVICE response.
    pub base: ib_uverbs_query_device_resp,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// On-demand paging capabilities.
    pub odp_caps: ib_uverbs_odp_caps,
    /// Valid bits of completion timestamps.
    pub timestamp_mask: u64,
    /// In KHZ.
    pub hca_core_clock: u64,
    /// Full 64-bit device capability flags (`IB_UVERBS_DEVICE_*`).
    pub device_cap_flags_ex: u64,
    /// RSS capabilities.
    pub rss_caps: ib_uverbs_rss_caps,
    /// Maximum number of receive WQs.
    pub max_wq_type_rq: u32,
    /// `IB_UVERBS_RAW_PACKET_CAP_*`.
    pub raw_packet_caps: u32,
    /// Tag-matching capabilities.
    pub tm_caps: ib_uverbs_tm_caps,
    /// CQ moderation capabilities.
    pub cq_moderation_caps: ib_uverbs_cq_moderation_caps,
    /// Maximum device memory allocation in bytes.
    pub max_dm_size: u64,
    /// ODP operations supported on XRC QPs.
    pub xrc_odp_caps: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_query_device_resp>() == 304);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_query_device_resp>() == 8);

/// Request of QUERY_PORT (write path): response pointer and port number.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 16).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_port {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Port number (1-based).
    pub port_num: u8,
    /// Reserved; zero.
    pub reserved: [u8; 7],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_port>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_port>() == 8);

/// Response of QUERY_PORT (write path) and first part of [`ib_uverbs_query_port_resp_ex`](crate::ib_uverbs_query_port_resp_ex) (40 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_port_resp {
    /// Port capability flags (`IB_UVERBS_PCF_*`).
    pub port_cap_flags: u32,
    /// Maximum message size in bytes.
    pub max_msg_sz: u32,
    /// Bad P_Key counter.
    pub bad_pkey_cntr: u32,
    /// Q_Key violation counter.
    pub qkey_viol_cntr: u32,
    /// GID table length.
    pub gid_tbl_len: u32,
    /// P_Key table length.
    pub pkey_tbl_len: u16,
    /// Port LID.
    pub lid: u16,
    /// Subnet manager LID.
    pub sm_lid: u16,
    /// Port state (kernel `enum ib_port_state`: DOWN=1, INIT, ARMED, ACTIVE, ACTIVE_DEFER).
    pub state: u8,
    /// Maximum MTU (kernel `enum ib_mtu`).
    pub max_mtu: u8,
    /// Active MTU (kernel `enum ib_mtu`).
    pub active_mtu: u8,
    /// LID mask control.
    pub lmc: u8,
    /// Maximum number of virtual lanes.
    pub max_vl_num: u8,
    /// Subnet manager service level.
    pub sm_sl: u8,
    /// Subnet timeout (encoded).
    pub subnet_timeout: u8,
    /// InitTypeReply.
    pub init_type_reply: u8,
    /// Active link width (encoded).
    pub active_width: u8,
    /// Active link speed (encoded).
    pub active_speed: u8,
    /// Physical port state.
    pub phys_state: u8,
    /// Link layer (0 unspecified, 1 InfiniBand, 2 Ethernet).
    pub link_layer: u8,
    /// `IB_UVERBS_QPF_*`.
    pub flags: u8,
    /// Reserved; zero.
    pub reserved: u8,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_port_resp>() == 40);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_port_resp>() == 4);

/// Request of ALLOC_PD (write path): only the response pointer.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 8).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_alloc_pd {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_alloc_pd>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_alloc_pd>() == 8);

/// Response of ALLOC_PD: the new PD handle; driver data follows.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 4).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_alloc_pd_resp {
    /// Handle of the protection domain.
    pub pd_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_alloc_pd_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_alloc_pd_resp>() == 4);

/// Request of DEALLOC_PD: the PD handle.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_dealloc_pd {
    /// Handle of the protection domain.
    pub pd_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_dealloc_pd>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_dealloc_pd>() == 4);

/// Request of OPEN_XRCD: response pointer, inode fd and open flags.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 16).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_open_xrcd {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// File descriptor.
    pub fd: u32,
    /// Open flags (`O_CREAT`, `O_EXCL`).
    pub oflags: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_open_xrcd>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_open_xrcd>() == 8);

/// Response of OPEN_XRCD: the XRC domain handle.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 4).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_open_xrcd_resp {
    /// Handle of the XRC domain.
    pub xrcd_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_open_xrcd_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_open_xrcd_resp>() == 4);

/// Request of CLOSE_XRCD: the XRC domain handle.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_close_xrcd {
    /// Handle of the XRC domain.
    pub xrcd_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_close_xrcd>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_close_xrcd>() == 4);

/// Request of REG_MR (write path): address range, IO virtual address, PD and access flags (40 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 40).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_reg_mr {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Start virtual address of the memory region.
    pub start: u64,
    /// Length in bytes.
    pub length: u64,
    /// IO virtual address the region is accessed with.
    pub hca_va: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Access flags (`IB_UVERBS_ACCESS_*`).
    pub access_flags: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_reg_mr>() == 40);
const _: () = assert!(core::mem::align_of::<ib_uverbs_reg_mr>() == 8);

/// Response of REG_MR: MR handle and keys (12 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 12).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_reg_mr_resp {
    /// Handle of the MR.
    pub mr_handle: u32,
    /// Local key.
    pub lkey: u32,
    /// Remote key.
    pub rkey: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_reg_mr_resp>() == 12);
const _: () = assert!(core::mem::align_of::<ib_uverbs_reg_mr_resp>() == 4);

/// Request of REREG_MR: what to change (flags) and the new range/PD/access.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 48).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_rereg_mr {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the MR.
    pub mr_handle: u32,
    /// What to change (kernel `IB_MR_REREG_TRANS` = 1, `IB_MR_REREG_PD` = 2, `IB_MR_REREG_ACCESS` = 4).
    pub flags: u32,
    /// Start virtual address of the memory region.
    pub start: u64,
    /// Length in bytes.
    pub length: u64,
    /// IO virtual address the region is accessed with.
    pub hca_va: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Access flags (`IB_UVERBS_ACCESS_*`).
    pub access_flags: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_rereg_mr>() == 48);
const _: () = assert!(core::mem::align_of::<ib_uverbs_rereg_mr>() == 8);

/// Response of REREG_MR: the new keys.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 8).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_rereg_mr_resp {
    /// Local key.
    pub lkey: u32,
    /// Remote key.
    pub rkey: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_rereg_mr_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_rereg_mr_resp>() == 8);

/// Request of DEREG_MR: the MR handle.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_dereg_mr {
    /// Handle of the MR.
    pub mr_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_dereg_mr>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_dereg_mr>() == 4);

/// Request of ALLOC_MW: PD handle and memory window type.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 16).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_alloc_mw {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Memory window type (1 or 2).
    pub mw_type: u8,
    /// Reserved; zero.
    pub reserved: [u8; 3],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_alloc_mw>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_alloc_mw>() == 8);

/// Response of ALLOC_MW: MW handle and rkey.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 8).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_alloc_mw_resp {
    /// Handle of the memory window.
    pub mw_handle: u32,
    /// Remote key.
    pub rkey: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_alloc_mw_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_alloc_mw_resp>() == 8);

/// Request of DEALLOC_MW: the MW handle.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_dealloc_mw {
    /// Handle of the memory window.
    pub mw_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_dealloc_mw>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_dealloc_mw>() == 4);

/// Request of CREATE_COMP_CHANNEL: only the response pointer.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_comp_channel {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_comp_channel>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_comp_channel>() == 8);

/// Response of CREATE_COMP_CHANNEL: the new completion channel fd.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_comp_channel_resp {
    /// File descriptor.
    pub fd: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_comp_channel_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_comp_channel_resp>() == 4);

/// Request of CREATE_CQ (write path, 32 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 32).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_cq {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// Number of CQ entries (requested or actual).
    pub cqe: u32,
    /// Completion vector (interrupt) index, below the context's `num_comp_vectors`.
    pub comp_vector: u32,
    /// Completion channel fd, or -1 for none.
    pub comp_channel: i32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_cq>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_cq>() == 8);

/// Request of EX_CREATE_CQ (extended write, 32 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_create_cq {
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// Number of CQ entries (requested or actual).
    pub cqe: u32,
    /// Completion vector (interrupt) index, below the context's `num_comp_vectors`.
    pub comp_vector: u32,
    /// Completion channel fd, or -1 for none.
    pub comp_channel: i32,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Bitmask of ib_uverbs_ex_create_cq_flags.
    pub flags: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_cq>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_create_cq>() == 8);

/// Response of CREATE_CQ: CQ handle and actual number of CQEs; driver data follows.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 8).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_cq_resp {
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Number of CQ entries (requested or actual).
    pub cqe: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_cq_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_cq_resp>() == 8);

/// Response of EX_CREATE_CQ (16 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_create_cq_resp {
    /// The non-extended part.
    pub base: ib_uverbs_create_cq_resp,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_cq_resp>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_create_cq_resp>() == 8);

/// Request of RESIZE_CQ: CQ handle and new size.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 16).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_resize_cq {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Number of CQ entries (requested or actual).
    pub cqe: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_resize_cq>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_resize_cq>() == 8);

/// Response of RESIZE_CQ: actual new size.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 8).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_resize_cq_resp {
    /// Number of CQ entries (requested or actual).
    pub cqe: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_resize_cq_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_resize_cq_resp>() == 8);

/// Request of POLL_CQ (kernel-mediated polling): CQ handle and max entries.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_poll_cq {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Maximum number of completions to return.
    pub ne: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_poll_cq>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_poll_cq>() == 8);

/// Work completion as returned by POLL_CQ and as written by rxe into its CQ ring (48 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_wc {
    /// User work request id, returned in the completion.
    pub wr_id: u64,
    /// Completion status (kernel `enum ib_wc_status`; 0 = success).
    pub status: u32,
    /// Completion opcode (`IB_UVERBS_WC_*` for sends; kernel `IB_WC_RECV` = 128 etc. for receives).
    pub opcode: u32,
    /// Vendor error syndrome.
    pub vendor_err: u32,
    /// Bytes received.
    pub byte_len: u32,
    /// Union `ex`: `imm_data` (big-endian immediate) or `invalidate_rkey`; see the accessor methods.
    pub ex: u32,
    /// Local QP number.
    pub qp_num: u32,
    /// Remote QP number (UD).
    pub src_qp: u32,
    /// Completion flags (kernel `enum ib_wc_flags`).
    pub wc_flags: u32,
    /// P_Key table index.
    pub pkey_index: u16,
    /// Source LID.
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// Destination LID path bits.
    pub dlid_path_bits: u8,
    /// Port number (switch/router only).
    pub port_num: u8,
    /// Reserved; zero.
    pub reserved: u8,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_wc>() == 48);
const _: () = assert!(core::mem::align_of::<ib_uverbs_wc>() == 8);

/// Response header of POLL_CQ; `count` [`ib_uverbs_wc`] entries follow (C flexible array `wc[]` omitted).
///
/// C flexible array member(s) omitted: `wc` (at offset 8).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_poll_cq_resp {
    /// Number of completions returned.
    pub count: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_poll_cq_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_poll_cq_resp>() == 8);

/// Request of REQ_NOTIFY_CQ: arm the CQ for the next (or next solicited) completion.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_req_notify_cq {
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Non-zero: only notify on solicited completions.
    pub solicited_only: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_req_notify_cq>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_req_notify_cq>() == 4);

/// Request of DESTROY_CQ (write path).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_destroy_cq {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_cq>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_destroy_cq>() == 8);

/// Response of DESTROY_CQ (and of the CQ_DESTROY ioctl `RESP` attr): events reported so far.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_destroy_cq_resp {
    /// Completion events reported so far for this CQ.
    pub comp_events_reported: u32,
    /// Async events reported so far for this CQ.
    pub async_events_reported: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_cq_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_destroy_cq_resp>() == 4);

/// GRH part of an address vector (24 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_global_route {
    /// Destination GID (16 bytes, network order).
    pub dgid: [u8; 16],
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Source GID table index.
    pub sgid_index: u8,
    /// Hop limit (IPv6 TTL).
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Reserved; zero.
    pub reserved: u8,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_global_route>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_global_route>() == 4);

/// Address vector used by CREATE_AH and in [`ib_uverbs_qp_attr`] (32 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ah_attr {
    /// Global routing header fields.
    pub grh: ib_uverbs_global_route,
    /// Destination LID.
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Source path bits.
    pub src_path_bits: u8,
    /// Static rate (kernel `enum ib_rate`).
    pub static_rate: u8,
    /// Non-zero: the GRH fields are valid.
    pub is_global: u8,
    /// Port number (1-based).
    pub port_num: u8,
    /// Reserved; zero.
    pub reserved: u8,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ah_attr>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ah_attr>() == 4);

/// QP attributes in the kernel's legacy layout (not used by any current command; kept for ABI completeness).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_qp_attr {
    /// Mask of valid attributes.
    pub qp_attr_mask: u32,
    /// QP state (kernel `enum ib_qp_state`: RESET=0, INIT, RTR, RTS, SQD, SQE, ERR).
    pub qp_state: u32,
    /// Assumed current QP state.
    pub cur_qp_state: u32,
    /// Path MTU (kernel `enum ib_mtu`: 256=1 … 4096=5).
    pub path_mtu: u32,
    /// Path migration state.
    pub path_mig_state: u32,
    /// Q_Key.
    pub qkey: u32,
    /// Receive queue packet sequence number.
    pub rq_psn: u32,
    /// Send queue packet sequence number.
    pub sq_psn: u32,
    /// Destination QP number.
    pub dest_qp_num: u32,
    /// Remote access flags (`IB_UVERBS_ACCESS_*`).
    pub qp_access_flags: u32,
    /// Primary path address vector.
    pub ah_attr: ib_uverbs_ah_attr,
    /// Alternate path address vector.
    pub alt_ah_attr: ib_uverbs_ah_attr,
    /// Ib_qp_cap.
    pub max_send_wr: u32,
    /// Maximum outstanding receive work requests.
    pub max_recv_wr: u32,
    /// Maximum SGEs per send work request.
    pub max_send_sge: u32,
    /// Maximum SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Maximum inline data bytes per send work request.
    pub max_inline_data: u32,
    /// P_Key table index.
    pub pkey_index: u16,
    /// P_Key index of the alternate path.
    pub alt_pkey_index: u16,
    /// Request an async event when the SQ drains (SQD).
    pub en_sqd_async_notify: u8,
    /// SQ is draining (QUERY_QP).
    pub sq_draining: u8,
    /// Outstanding RDMA reads/atomics as initiator.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads/atomics as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (encoded).
    pub min_rnr_timer: u8,
    /// Port number (1-based).
    pub port_num: u8,
    /// Local ACK timeout (4.096 us * 2^timeout).
    pub timeout: u8,
    /// Transport retry count.
    pub retry_cnt: u8,
    /// RNR retry count (7 = infinite).
    pub rnr_retry: u8,
    /// Port of the alternate path.
    pub alt_port_num: u8,
    /// Local ACK timeout of the alternate path.
    pub alt_timeout: u8,
    /// Reserved; zero.
    pub reserved: [u8; 5],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_qp_attr>() == 144);
const _: () = assert!(core::mem::align_of::<ib_uverbs_qp_attr>() == 4);

/// Request of CREATE_QP (write path, 56 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 56).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_qp {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Handle of the send CQ.
    pub send_cq_handle: u32,
    /// Handle of the receive CQ.
    pub recv_cq_handle: u32,
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Maximum outstanding send work requests.
    pub max_send_wr: u32,
    /// Maximum outstanding receive work requests.
    pub max_recv_wr: u32,
    /// Maximum SGEs per send work request.
    pub max_send_sge: u32,
    /// Maximum SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Maximum inline data bytes per send work request.
    pub max_inline_data: u32,
    /// Non-zero: every send WR generates a completion.
    pub sq_sig_all: u8,
    /// QP type (`IB_UVERBS_QPT_*`).
    pub qp_type: u8,
    /// Non-zero if the QP uses an SRQ.
    pub is_srq: u8,
    /// Reserved; zero.
    pub reserved: u8,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_qp>() == 56);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_qp>() == 8);

/// Request of EX_CREATE_QP (extended write, 64 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_create_qp {
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Handle of the send CQ.
    pub send_cq_handle: u32,
    /// Handle of the receive CQ.
    pub recv_cq_handle: u32,
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Maximum outstanding send work requests.
    pub max_send_wr: u32,
    /// Maximum outstanding receive work requests.
    pub max_recv_wr: u32,
    /// Maximum SGEs per send work request.
    pub max_send_sge: u32,
    /// Maximum SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Maximum inline data bytes per send work request.
    pub max_inline_data: u32,
    /// Non-zero: every send WR generates a completion.
    pub sq_sig_all: u8,
    /// QP type (`IB_UVERBS_QPT_*`).
    pub qp_type: u8,
    /// Non-zero if the QP uses an SRQ.
    pub is_srq: u8,
    /// Reserved; zero.
    pub reserved: u8,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Creation flags.
    pub create_flags: u32,
    /// Handle of the RWQ indirection table (RSS QPs).
    pub rwq_ind_tbl_handle: u32,
    /// Source QP number (underlay QPs).
    pub source_qpn: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_qp>() == 64);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_create_qp>() == 8);

/// Request of OPEN_QP (open a shareable XRC target QP by number).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 32).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_open_qp {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// QP number.
    pub qpn: u32,
    /// QP type (`IB_UVERBS_QPT_*`).
    pub qp_type: u8,
    /// Reserved; zero.
    pub reserved: [u8; 7],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_open_qp>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_open_qp>() == 8);

/// Response of CREATE_QP and OPEN_QP: handle, QP number and actual capabilities (32 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 32).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_qp_resp {
    /// Handle of the QP.
    pub qp_handle: u32,
    /// QP number.
    pub qpn: u32,
    /// Maximum outstanding send work requests.
    pub max_send_wr: u32,
    /// Maximum outstanding receive work requests.
    pub max_recv_wr: u32,
    /// Maximum SGEs per send work request.
    pub max_send_sge: u32,
    /// Maximum SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Maximum inline data bytes per send work request.
    pub max_inline_data: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_qp_resp>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_qp_resp>() == 4);

/// Response of EX_CREATE_QP (40 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_create_qp_resp {
    /// The non-extended part.
    pub base: ib_uverbs_create_qp_resp,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_qp_resp>() == 40);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_create_qp_resp>() == 4);

/// Address path in QUERY_QP / MODIFY_QP (32 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_qp_dest {
    /// Destination GID (16 bytes, network order).
    pub dgid: [u8; 16],
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Destination LID.
    pub dlid: u16,
    /// Reserved; zero.
    pub reserved: u16,
    /// Source GID table index.
    pub sgid_index: u8,
    /// Hop limit (IPv6 TTL).
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Service level.
    pub sl: u8,
    /// Source path bits.
    pub src_path_bits: u8,
    /// Static rate (kernel `enum ib_rate`).
    pub static_rate: u8,
    /// Non-zero: the GRH fields are valid.
    pub is_global: u8,
    /// Port number (1-based).
    pub port_num: u8,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_qp_dest>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_qp_dest>() == 4);

/// Request of QUERY_QP: QP handle and attribute mask.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 16).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_qp {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Mask of the attributes to modify/query.
    pub attr_mask: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_qp>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_qp>() == 8);

/// Response of QUERY_QP (128 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 128).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_qp_resp {
    /// Primary path.
    pub dest: ib_uverbs_qp_dest,
    /// Alternate path.
    pub alt_dest: ib_uverbs_qp_dest,
    /// Maximum outstanding send work requests.
    pub max_send_wr: u32,
    /// Maximum outstanding receive work requests.
    pub max_recv_wr: u32,
    /// Maximum SGEs per send work request.
    pub max_send_sge: u32,
    /// Maximum SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Maximum inline data bytes per send work request.
    pub max_inline_data: u32,
    /// Q_Key.
    pub qkey: u32,
    /// Receive queue packet sequence number.
    pub rq_psn: u32,
    /// Send queue packet sequence number.
    pub sq_psn: u32,
    /// Destination QP number.
    pub dest_qp_num: u32,
    /// Remote access flags (`IB_UVERBS_ACCESS_*`).
    pub qp_access_flags: u32,
    /// P_Key table index.
    pub pkey_index: u16,
    /// P_Key index of the alternate path.
    pub alt_pkey_index: u16,
    /// QP state (kernel `enum ib_qp_state`: RESET=0, INIT, RTR, RTS, SQD, SQE, ERR).
    pub qp_state: u8,
    /// Assumed current QP state.
    pub cur_qp_state: u8,
    /// Path MTU (kernel `enum ib_mtu`: 256=1 … 4096=5).
    pub path_mtu: u8,
    /// Path migration state.
    pub path_mig_state: u8,
    /// SQ is draining (QUERY_QP).
    pub sq_draining: u8,
    /// Outstanding RDMA reads/atomics as initiator.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads/atomics as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (encoded).
    pub min_rnr_timer: u8,
    /// Port number (1-based).
    pub port_num: u8,
    /// Local ACK timeout (4.096 us * 2^timeout).
    pub timeout: u8,
    /// Transport retry count.
    pub retry_cnt: u8,
    /// RNR retry count (7 = infinite).
    pub rnr_retry: u8,
    /// Port of the alternate path.
    pub alt_port_num: u8,
    /// Local ACK timeout of the alternate path.
    pub alt_timeout: u8,
    /// Non-zero: every send WR generates a completion.
    pub sq_sig_all: u8,
    /// Reserved; zero.
    pub reserved: [u8; 5],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_qp_resp>() == 128);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_qp_resp>() == 8);

/// Request of MODIFY_QP (write path, 112 bytes; no response).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 112).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_modify_qp {
    /// Primary path.
    pub dest: ib_uverbs_qp_dest,
    /// Alternate path.
    pub alt_dest: ib_uverbs_qp_dest,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Mask of the attributes to modify/query.
    pub attr_mask: u32,
    /// Q_Key.
    pub qkey: u32,
    /// Receive queue packet sequence number.
    pub rq_psn: u32,
    /// Send queue packet sequence number.
    pub sq_psn: u32,
    /// Destination QP number.
    pub dest_qp_num: u32,
    /// Remote access flags (`IB_UVERBS_ACCESS_*`).
    pub qp_access_flags: u32,
    /// P_Key table index.
    pub pkey_index: u16,
    /// P_Key index of the alternate path.
    pub alt_pkey_index: u16,
    /// QP state (kernel `enum ib_qp_state`: RESET=0, INIT, RTR, RTS, SQD, SQE, ERR).
    pub qp_state: u8,
    /// Assumed current QP state.
    pub cur_qp_state: u8,
    /// Path MTU (kernel `enum ib_mtu`: 256=1 … 4096=5).
    pub path_mtu: u8,
    /// Path migration state.
    pub path_mig_state: u8,
    /// Request an async event when the SQ drains (SQD).
    pub en_sqd_async_notify: u8,
    /// Outstanding RDMA reads/atomics as initiator.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads/atomics as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (encoded).
    pub min_rnr_timer: u8,
    /// Port number (1-based).
    pub port_num: u8,
    /// Local ACK timeout (4.096 us * 2^timeout).
    pub timeout: u8,
    /// Transport retry count.
    pub retry_cnt: u8,
    /// RNR retry count (7 = infinite).
    pub rnr_retry: u8,
    /// Port of the alternate path.
    pub alt_port_num: u8,
    /// Local ACK timeout of the alternate path.
    pub alt_timeout: u8,
    /// Reserved; zero.
    pub reserved: [u8; 2],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_modify_qp>() == 112);
const _: () = assert!(core::mem::align_of::<ib_uverbs_modify_qp>() == 8);

/// Request of EX_MODIFY_QP: the legacy request plus rate limit (120 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_modify_qp {
    /// The non-extended part.
    pub base: ib_uverbs_modify_qp,
    /// Packet pacing rate limit in kbps (0 = unlimited).
    pub rate_limit: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_modify_qp>() == 120);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_modify_qp>() == 8);

/// Response of EX_MODIFY_QP.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_modify_qp_resp {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_modify_qp_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_modify_qp_resp>() == 4);

/// Request of DESTROY_QP (write path).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_destroy_qp {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_qp>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_destroy_qp>() == 8);

/// Response of DESTROY_QP (and of the QP_DESTROY ioctl `RESP` attr): async events reported so far.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_destroy_qp_resp {
    /// Async events reported so far for this object.
    pub events_reported: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_qp_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_destroy_qp_resp>() == 4);

/// Scatter/gather element (16 bytes); documents the ABI of the SGE arrays in POST_SEND/POST_RECV.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_sge {
    /// Virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key.
    pub lkey: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_sge>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_sge>() == 8);

/// Member `rdma` of the C union `ib_uverbs_send_wr.wr` (RDMA read/write); at offset 0 of `wr`.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_send_wr_rdma {
    /// Remote virtual address.
    pub remote_addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_send_wr_rdma>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_send_wr_rdma>() == 8);

/// Member `atomic` of the C union `ib_uverbs_send_wr.wr` (atomics); at offset 0 of `wr`.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_send_wr_atomic {
    /// Remote virtual address.
    pub remote_addr: u64,
    /// Compare value (CMP_AND_SWP) or add value (FETCH_AND_ADD).
    pub compare_add: u64,
    /// Swap value (CMP_AND_SWP).
    pub swap: u64,
    /// Remote key.
    pub rkey: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_send_wr_atomic>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_send_wr_atomic>() == 8);

/// Member `ud` of the C union `ib_uverbs_send_wr.wr` (UD sends); at offset 0 of `wr`.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_send_wr_ud {
    /// Address handle.
    pub ah: u32,
    /// Remote QP number.
    pub remote_qpn: u32,
    /// Remote Q_Key.
    pub remote_qkey: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_send_wr_ud>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_send_wr_ud>() == 4);

/// Send work request as passed to POST_SEND (56 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_send_wr {
    /// User work request id, returned in the completion.
    pub wr_id: u64,
    /// Number of SGEs.
    pub num_sge: u32,
    /// Opcode (`IB_UVERBS_WR_*`).
    pub opcode: u32,
    /// Send flags (kernel `enum ib_send_flags`: FENCE=1, SIGNALED=2, SOLICITED=4, INLINE=8, IP_CSUM=16).
    pub send_flags: u32,
    /// Union `ex`: `imm_data` (big-endian immediate) or `invalidate_rkey`; see the accessor methods.
    pub ex: u32,
    /// C union `wr` (32 bytes): `rdma` ([`ib_uverbs_send_wr_rdma`]), `atomic` ([`ib_uverbs_send_wr_atomic`]), `ud` ([`ib_uverbs_send_wr_ud`]), all at offset 0 of the union (offset 24 of the struct). Use the accessor methods.
    pub wr: [u8; 32],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_send_wr>() == 56);
const _: () = assert!(core::mem::align_of::<ib_uverbs_send_wr>() == 8);

/// Request of POST_SEND; `wr_count` send WRs of `wqe_size` bytes and `sge_count` SGEs follow (rxe uses it with `wr_count` 0 as a doorbell).
///
/// C flexible array member(s) omitted: `send_wr` (at offset 24).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_post_send {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Number of work requests that follow.
    pub wr_count: u32,
    /// Total number of SGEs that follow.
    pub sge_count: u32,
    /// Size in bytes of each work request that follows.
    pub wqe_size: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_post_send>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_post_send>() == 8);

/// Response of POST_SEND: index of the first failed WR.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_post_send_resp {
    /// Index of the first work request that failed.
    pub bad_wr: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_post_send_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_post_send_resp>() == 4);

/// Receive work request as passed to POST_RECV / POST_SRQ_RECV.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_recv_wr {
    /// User work request id, returned in the completion.
    pub wr_id: u64,
    /// Number of SGEs.
    pub num_sge: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_recv_wr>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_recv_wr>() == 8);

/// Request of POST_RECV; receive WRs and SGEs follow.
///
/// C flexible array member(s) omitted: `recv_wr` (at offset 24).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_post_recv {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Number of work requests that follow.
    pub wr_count: u32,
    /// Total number of SGEs that follow.
    pub sge_count: u32,
    /// Size in bytes of each work request that follows.
    pub wqe_size: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_post_recv>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_post_recv>() == 8);

/// Response of POST_RECV: index of the first failed WR.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_post_recv_resp {
    /// Index of the first work request that failed.
    pub bad_wr: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_post_recv_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_post_recv_resp>() == 4);

/// Request of POST_SRQ_RECV; receive WRs and SGEs follow.
///
/// C flexible array member(s) omitted: `recv` (at offset 24).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_post_srq_recv {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Number of work requests that follow.
    pub wr_count: u32,
    /// Total number of SGEs that follow.
    pub sge_count: u32,
    /// Size in bytes of each work request that follows.
    pub wqe_size: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_post_srq_recv>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_post_srq_recv>() == 8);

/// Response of POST_SRQ_RECV: index of the first failed WR.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_post_srq_recv_resp {
    /// Index of the first work request that failed.
    pub bad_wr: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_post_srq_recv_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_post_srq_recv_resp>() == 4);

/// Request of CREATE_AH (56 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 56).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_ah {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Reserved; zero.
    pub reserved: u32,
    /// The address vector.
    pub attr: ib_uverbs_ah_attr,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_ah>() == 56);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_ah>() == 8);

/// Response of CREATE_AH: the AH handle; driver data follows.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 4).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_ah_resp {
    /// Handle of the address handle.
    pub ah_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_ah_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_ah_resp>() == 4);

/// Request of DESTROY_AH: the AH handle.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_destroy_ah {
    /// Handle of the address handle.
    pub ah_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_ah>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_destroy_ah>() == 4);

/// Request of ATTACH_MCAST: attach a UD QP to a multicast group.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 24).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_attach_mcast {
    /// GID (16 bytes, network order).
    pub gid: [u8; 16],
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Multicast LID.
    pub mlid: u16,
    /// Reserved; zero.
    pub reserved: u16,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_attach_mcast>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_attach_mcast>() == 8);

/// Request of DETACH_MCAST: detach a UD QP from a multicast group.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 24).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_detach_mcast {
    /// GID (16 bytes, network order).
    pub gid: [u8; 16],
    /// Handle of the QP.
    pub qp_handle: u32,
    /// Multicast LID.
    pub mlid: u16,
    /// Reserved; zero.
    pub reserved: u16,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_detach_mcast>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_detach_mcast>() == 8);

/// Header common to all flow specifications (type and size).
///
/// C flexible array member(s) omitted: `flow_spec_data` (at offset 8).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_hdr {
    /// Flow spec type (kernel `enum ib_flow_spec_type`).
    pub r#type: u32,
    /// Size in bytes of the whole spec.
    pub size: u16,
    /// Reserved; zero.
    pub reserved: u16,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_hdr>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_hdr>() == 8);

/// Ethernet L2 match values/masks of a flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_eth_filter {
    /// Destination MAC address.
    pub dst_mac: [u8; 6],
    /// Source MAC address.
    pub src_mac: [u8; 6],
    /// Ethertype. Big-endian on the wire (raw bytes in a native integer).
    pub ether_type: u16,
    /// VLAN tag. Big-endian on the wire (raw bytes in a native integer).
    pub vlan_tag: u16,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_eth_filter>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_eth_filter>() == 2);

/// Ethernet flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_eth {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Match values.
    pub val: ib_uverbs_flow_eth_filter,
    /// Match mask.
    pub mask: ib_uverbs_flow_eth_filter,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_eth>() == 40);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_eth>() == 8);

/// IPv4 match values/masks of a flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_ipv4_filter {
    /// Source IP address (network order). Big-endian on the wire (raw bytes in a native integer).
    pub src_ip: u32,
    /// Destination IP address (network order). Big-endian on the wire (raw bytes in a native integer).
    pub dst_ip: u32,
    /// IP protocol.
    pub proto: u8,
    /// Type of service.
    pub tos: u8,
    /// Time to live.
    pub ttl: u8,
    /// IPv4 header flags.
    pub flags: u8,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_ipv4_filter>() == 12);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_ipv4_filter>() == 4);

/// IPv4 flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_ipv4 {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Match values.
    pub val: ib_uverbs_flow_ipv4_filter,
    /// Match mask.
    pub mask: ib_uverbs_flow_ipv4_filter,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_ipv4>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_ipv4>() == 8);

/// TCP/UDP port match values/masks of a flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_tcp_udp_filter {
    /// Destination port. Big-endian on the wire (raw bytes in a native integer).
    pub dst_port: u16,
    /// Source port. Big-endian on the wire (raw bytes in a native integer).
    pub src_port: u16,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_tcp_udp_filter>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_tcp_udp_filter>() == 2);

/// TCP/UDP flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_tcp_udp {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Match values.
    pub val: ib_uverbs_flow_tcp_udp_filter,
    /// Match mask.
    pub mask: ib_uverbs_flow_tcp_udp_filter,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_tcp_udp>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_tcp_udp>() == 8);

/// IPv6 match values/masks of a flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_ipv6_filter {
    /// Source IP address (network order).
    pub src_ip: [u8; 16],
    /// Destination IP address (network order).
    pub dst_ip: [u8; 16],
    /// IPv6 flow label. Big-endian on the wire (raw bytes in a native integer).
    pub flow_label: u32,
    /// Next header.
    pub next_hdr: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit (IPv6 TTL).
    pub hop_limit: u8,
    /// Reserved; zero.
    pub reserved: u8,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_ipv6_filter>() == 40);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_ipv6_filter>() == 4);

/// IPv6 flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_ipv6 {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Match values.
    pub val: ib_uverbs_flow_ipv6_filter,
    /// Match mask.
    pub mask: ib_uverbs_flow_ipv6_filter,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_ipv6>() == 88);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_ipv6>() == 8);

/// Flow action: tag matching packets with `tag_id`.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_action_tag {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Tag value.
    pub tag_id: u32,
    /// Reserved; zero.
    pub reserved1: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_action_tag>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_action_tag>() == 8);

/// Flow action: drop matching packets.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_action_drop {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_action_drop>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_action_drop>() == 8);

/// Flow action: apply a flow action object (by handle).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_action_handle {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Object handle.
    pub handle: u32,
    /// Reserved; zero.
    pub reserved1: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_action_handle>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_action_handle>() == 8);

/// Flow action: count matching packets in a counters object (by handle).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_action_count {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Object handle.
    pub handle: u32,
    /// Reserved; zero.
    pub reserved1: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_action_count>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_action_count>() == 8);

/// Tunnel id match value/mask of a flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_tunnel_filter {
    /// Tunnel id (e.g. VXLAN VNI). Big-endian on the wire (raw bytes in a native integer).
    pub tunnel_id: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_tunnel_filter>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_tunnel_filter>() == 4);

/// Tunnel (VXLAN etc.) flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_tunnel {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Match values.
    pub val: ib_uverbs_flow_tunnel_filter,
    /// Match mask.
    pub mask: ib_uverbs_flow_tunnel_filter,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_tunnel>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_tunnel>() == 8);

/// ESP (SPI and sequence) match values/masks of a flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_esp_filter {
    /// ESP SPI.
    pub spi: u32,
    /// ESP sequence number.
    pub seq: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_esp_filter>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_esp_filter>() == 4);

/// ESP flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_esp {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Match values.
    pub val: ib_uverbs_flow_spec_esp_filter,
    /// Match mask.
    pub mask: ib_uverbs_flow_spec_esp_filter,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_esp>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_esp>() == 8);

/// GRE match values/masks of a flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_gre_filter {
    /// C_ks_res0_ver field is bits 0-15 in offset 0 of a standard GRE header: bit 0 - C - checksum bit. bit 1 - reserved. set to 0. bit 2 - key bit. bit 3 - sequence number bit. bits 4:12 - reserved. set to 0. bits 13:15 - GRE version. Big-endian on the wire (raw bytes in a native integer).
    pub c_ks_res0_ver: u16,
    /// Protocol of the encapsulated packet. Big-endian on the wire (raw bytes in a native integer).
    pub protocol: u16,
    /// GRE key. Big-endian on the wire (raw bytes in a native integer).
    pub key: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_gre_filter>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_gre_filter>() == 4);

/// GRE flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_gre {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Match values.
    pub val: ib_uverbs_flow_gre_filter,
    /// Match mask.
    pub mask: ib_uverbs_flow_gre_filter,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_gre>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_gre>() == 8);

/// MPLS label match value/mask of a flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_mpls_filter {
    /// The field includes the entire MPLS label: bits 0:19 - label field. bits 20:22 - traffic class field. bits 23 - bottom of stack bit. bits 24:31 - ttl field. Big-endian on the wire (raw bytes in a native integer).
    pub label: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_mpls_filter>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_mpls_filter>() == 4);

/// MPLS flow specification.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_spec_mpls {
    /// Flow spec header (C anonymous union of `hdr` and its inlined `type`/`size`/`reserved`).
    pub hdr: ib_uverbs_flow_spec_hdr,
    /// Match values.
    pub val: ib_uverbs_flow_mpls_filter,
    /// Match mask.
    pub mask: ib_uverbs_flow_mpls_filter,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_spec_mpls>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_spec_mpls>() == 8);

/// Flow steering rule header; `num_of_specs` flow specifications follow (C flexible array `flow_specs[]` omitted).
///
/// C flexible array member(s) omitted: `flow_specs` (at offset 16).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_attr {
    /// Flow rule type (kernel `enum ib_flow_attr_type`).
    pub r#type: u32,
    /// Size in bytes of this header plus all specs.
    pub size: u16,
    /// Rule priority.
    pub priority: u16,
    /// Number of flow specifications that follow.
    pub num_of_specs: u8,
    /// Reserved; zero.
    pub reserved: [u8; 2],
    /// Port number.
    pub port: u8,
    /// Flow rule flags (kernel `enum ib_flow_flags`).
    pub flags: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_attr>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_attr>() == 8);

/// Request of EX_CREATE_FLOW: QP handle and the flow rule.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_flow {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Handle of the QP.
    pub qp_handle: u32,
    /// The flow rule.
    pub flow_attr: ib_uverbs_flow_attr,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_flow>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_flow>() == 8);

/// Response of EX_CREATE_FLOW: the flow handle.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_flow_resp {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Handle of the flow.
    pub flow_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_flow_resp>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_flow_resp>() == 4);

/// Request of EX_DESTROY_FLOW: the flow handle.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_destroy_flow {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Handle of the flow.
    pub flow_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_flow>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_destroy_flow>() == 4);

/// Request of CREATE_SRQ (write path, basic SRQ, 32 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 32).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_srq {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// Maximum SGEs per work request.
    pub max_sge: u32,
    /// SRQ limit: an SRQ_LIMIT_REACHED event fires when fewer WRs remain.
    pub srq_limit: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_srq>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_srq>() == 8);

/// Request of CREATE_XSRQ (SRQ of any type: basic, XRC, tag matching).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 48).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_xsrq {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// SRQ type (`IB_UVERBS_SRQT_*`).
    pub srq_type: u32,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// Maximum SGEs per work request.
    pub max_sge: u32,
    /// SRQ limit: an SRQ_LIMIT_REACHED event fires when fewer WRs remain.
    pub srq_limit: u32,
    /// Maximum number of tags (tag-matching SRQ).
    pub max_num_tags: u32,
    /// Handle of the XRC domain.
    pub xrcd_handle: u32,
    /// Handle of the CQ.
    pub cq_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_xsrq>() == 48);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_xsrq>() == 8);

/// Response of CREATE_SRQ / CREATE_XSRQ: handle, actual limits and SRQ number (16 bytes).
///
/// C flexible array member(s) omitted: `driver_data` (at offset 16).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_create_srq_resp {
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// Maximum SGEs per work request.
    pub max_sge: u32,
    /// SRQ number.
    pub srqn: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_create_srq_resp>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_create_srq_resp>() == 4);

/// Request of MODIFY_SRQ: resize (`max_wr`) and/or set the limit.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 16).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_modify_srq {
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Mask of the attributes to modify/query.
    pub attr_mask: u32,
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// SRQ limit: an SRQ_LIMIT_REACHED event fires when fewer WRs remain.
    pub srq_limit: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_modify_srq>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_modify_srq>() == 8);

/// Request of QUERY_SRQ: the SRQ handle.
///
/// C flexible array member(s) omitted: `driver_data` (at offset 16).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_srq {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_srq>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_srq>() == 8);

/// Response of QUERY_SRQ: current limits.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_srq_resp {
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// Maximum SGEs per work request.
    pub max_sge: u32,
    /// SRQ limit: an SRQ_LIMIT_REACHED event fires when fewer WRs remain.
    pub srq_limit: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_srq_resp>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_srq_resp>() == 4);

/// Request of DESTROY_SRQ (write path).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_destroy_srq {
    /// User pointer where the kernel writes the response (legacy write path; ignored when sent through INVOKE_WRITE with `CORE_OUT`).
    pub response: u64,
    /// Handle of the SRQ.
    pub srq_handle: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_srq>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_destroy_srq>() == 8);

/// Response of DESTROY_SRQ (and of the SRQ_DESTROY ioctl `RESP` attr): async events reported so far.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_destroy_srq_resp {
    /// Async events reported so far for this object.
    pub events_reported: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_srq_resp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_destroy_srq_resp>() == 4);

/// Request of EX_CREATE_WQ (receive work queue for RSS).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_create_wq {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// WQ type (`IB_UVERBS_WQT_*`).
    pub wq_type: u32,
    /// Opaque user value reported back in events/completions for this object.
    pub user_handle: u64,
    /// Handle of the protection domain.
    pub pd_handle: u32,
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// Maximum SGEs per work request.
    pub max_sge: u32,
    /// Use enum ib_wq_flags.
    pub create_flags: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_wq>() == 40);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_create_wq>() == 8);

/// Response of EX_CREATE_WQ.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_create_wq_resp {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// Handle of the WQ.
    pub wq_handle: u32,
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// Maximum SGEs per work request.
    pub max_sge: u32,
    /// WQ number.
    pub wqn: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_wq_resp>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_create_wq_resp>() == 4);

/// Request of EX_DESTROY_WQ.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_destroy_wq {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Handle of the WQ.
    pub wq_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_destroy_wq>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_destroy_wq>() == 4);

/// Response of EX_DESTROY_WQ.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_destroy_wq_resp {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// Async events reported so far for this object.
    pub events_reported: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_destroy_wq_resp>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_destroy_wq_resp>() == 4);

/// Request of EX_MODIFY_WQ (state and flags).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_modify_wq {
    /// Mask of the attributes to modify/query.
    pub attr_mask: u32,
    /// Handle of the WQ.
    pub wq_handle: u32,
    /// New WQ state.
    pub wq_state: u32,
    /// Assumed current WQ state.
    pub curr_wq_state: u32,
    /// Use enum ib_wq_flags.
    pub flags: u32,
    /// Use enum ib_wq_flags.
    pub flags_mask: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_modify_wq>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_modify_wq>() == 4);

/// Request of EX_CREATE_RWQ_IND_TBL; `1 << log_ind_tbl_size` u32 WQ handles follow (C flexible array `wq_handles[]` omitted).
///
/// C flexible array member(s) omitted: `wq_handles` (at offset 8).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_create_rwq_ind_table {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// log2 of the number of WQ handles in the table.
    pub log_ind_tbl_size: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_rwq_ind_table>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_create_rwq_ind_table>() == 4);

/// Response of EX_CREATE_RWQ_IND_TBL.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_create_rwq_ind_table_resp {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// Handle of the RWQ indirection table.
    pub ind_tbl_handle: u32,
    /// Indirection table number.
    pub ind_tbl_num: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_rwq_ind_table_resp>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_create_rwq_ind_table_resp>() == 4);

/// Request of EX_DESTROY_RWQ_IND_TBL.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_destroy_rwq_ind_table {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Handle of the RWQ indirection table.
    pub ind_tbl_handle: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_destroy_rwq_ind_table>() == 8);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_destroy_rwq_ind_table>() == 4);

/// CQ moderation parameters (count and period).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_cq_moderation {
    /// Completions to coalesce before an event.
    pub cq_count: u16,
    /// Coalescing period in microseconds.
    pub cq_period: u16,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_cq_moderation>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_cq_moderation>() == 2);

/// Request of EX_MODIFY_CQ (CQ moderation).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ex_modify_cq {
    /// Handle of the CQ.
    pub cq_handle: u32,
    /// Which moderation parameters to change.
    pub attr_mask: u32,
    /// The moderation parameters.
    pub attr: ib_uverbs_cq_moderation,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_modify_cq>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ex_modify_cq>() == 4);

impl ib_uverbs_wc {
    /// `ex.imm_data`: the immediate value, big-endian on the wire (raw bytes in a `u32`).
    pub const fn imm_data(&self) -> u32 {
        self.ex
    }

    /// `ex.invalidate_rkey`: the rkey invalidated by a SEND_WITH_INV.
    pub const fn invalidate_rkey(&self) -> u32 {
        self.ex
    }
}

impl ib_uverbs_send_wr {
    /// `ex.imm_data`: the immediate value, big-endian on the wire (raw bytes in a `u32`).
    pub const fn imm_data(&self) -> u32 {
        self.ex
    }

    /// `ex.invalidate_rkey`: the rkey to invalidate (SEND_WITH_INV).
    pub const fn invalidate_rkey(&self) -> u32 {
        self.ex
    }

    /// Reads union member `wr.rdma`.
    pub fn rdma(&self) -> ib_uverbs_send_wr_rdma {
        union_get(&self.wr)
    }

    /// Writes union member `wr.rdma` (the rest of `wr` is zeroed).
    pub fn set_rdma(&mut self, rdma: &ib_uverbs_send_wr_rdma) {
        union_set(&mut self.wr, rdma);
    }

    /// Reads union member `wr.atomic`.
    pub fn atomic(&self) -> ib_uverbs_send_wr_atomic {
        union_get(&self.wr)
    }

    /// Writes union member `wr.atomic`.
    pub fn set_atomic(&mut self, atomic: &ib_uverbs_send_wr_atomic) {
        union_set(&mut self.wr, atomic);
    }

    /// Reads union member `wr.ud`.
    pub fn ud(&self) -> ib_uverbs_send_wr_ud {
        union_get(&self.wr)
    }

    /// Writes union member `wr.ud` (the rest of `wr` is zeroed).
    pub fn set_ud(&mut self, ud: &ib_uverbs_send_wr_ud) {
        union_set(&mut self.wr, ud);
    }
}
