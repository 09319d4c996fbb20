//! Types and flags used by the ioctl API: `rdma/ib_user_ioctl_verbs.h`.

use crate::verbs::ib_uverbs_query_port_resp;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// First optional access flag bit (the kernel ignores unsupported optional bits).
pub const IB_UVERBS_ACCESS_OPTIONAL_FIRST: u32 = 1 << 20;

/// Last optional access flag bit.
pub const IB_UVERBS_ACCESS_OPTIONAL_LAST: u32 = 1 << 29;

// enum ib_uverbs_core_support
/// Core support bit reported by GET_CONTEXT `CORE_SUPPORT` (u64): `OPTIONAL_MR_ACCESS`.
pub const IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS: u64 = 1 << 0;

// enum ib_uverbs_access_flags
/// Memory access flag (`enum ib_uverbs_access_flags`): `LOCAL_WRITE`.
pub const IB_UVERBS_ACCESS_LOCAL_WRITE: u32 = 1 << 0;
/// Memory access flag (`enum ib_uverbs_access_flags`): `REMOTE_WRITE`.
pub const IB_UVERBS_ACCESS_REMOTE_WRITE: u32 = 1 << 1;
/// Memory access flag (`enum ib_uverbs_access_flags`): `REMOTE_READ`.
pub const IB_UVERBS_ACCESS_REMOTE_READ: u32 = 1 << 2;
/// Memory access flag (`enum ib_uverbs_access_flags`): `REMOTE_ATOMIC`.
pub const IB_UVERBS_ACCESS_REMOTE_ATOMIC: u32 = 1 << 3;
/// Memory access flag (`enum ib_uverbs_access_flags`): `MW_BIND`.
pub const IB_UVERBS_ACCESS_MW_BIND: u32 = 1 << 4;
/// Memory access flag (`enum ib_uverbs_access_flags`): `ZERO_BASED`.
pub const IB_UVERBS_ACCESS_ZERO_BASED: u32 = 1 << 5;
/// Memory access flag (`enum ib_uverbs_access_flags`): `ON_DEMAND`.
pub const IB_UVERBS_ACCESS_ON_DEMAND: u32 = 1 << 6;
/// Memory access flag (`enum ib_uverbs_access_flags`): `HUGETLB`.
pub const IB_UVERBS_ACCESS_HUGETLB: u32 = 1 << 7;
/// Memory access flag (`enum ib_uverbs_access_flags`): `RELAXED_ORDERING`.
pub const IB_UVERBS_ACCESS_RELAXED_ORDERING: u32 = IB_UVERBS_ACCESS_OPTIONAL_FIRST;
/// Memory access flag (`enum ib_uverbs_access_flags`): `OPTIONAL_RANGE`.
pub const IB_UVERBS_ACCESS_OPTIONAL_RANGE: u32 =
    ((IB_UVERBS_ACCESS_OPTIONAL_LAST << 1) - 1) & !(IB_UVERBS_ACCESS_OPTIONAL_FIRST - 1);

// enum ib_uverbs_srq_type
/// SRQ type (`enum ib_uverbs_srq_type`): `BASIC`.
pub const IB_UVERBS_SRQT_BASIC: u32 = 0;
/// SRQ type (`enum ib_uverbs_srq_type`): `XRC`.
pub const IB_UVERBS_SRQT_XRC: u32 = 1;
/// SRQ type (`enum ib_uverbs_srq_type`): `TM`.
pub const IB_UVERBS_SRQT_TM: u32 = 2;

// enum ib_uverbs_wq_type
/// WQ type (`enum ib_uverbs_wq_type`): `WQT_RQ`.
pub const IB_UVERBS_WQT_RQ: u32 = 0;

// enum ib_uverbs_wq_flags
/// WQ creation flag (`enum ib_uverbs_wq_flags`): `CVLAN_STRIPPING`.
pub const IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING: u32 = 1 << 0;
/// WQ creation flag (`enum ib_uverbs_wq_flags`): `SCATTER_FCS`.
pub const IB_UVERBS_WQ_FLAGS_SCATTER_FCS: u32 = 1 << 1;
/// WQ creation flag (`enum ib_uverbs_wq_flags`): `DELAY_DROP`.
pub const IB_UVERBS_WQ_FLAGS_DELAY_DROP: u32 = 1 << 2;
/// WQ creation flag (`enum ib_uverbs_wq_flags`): `PCI_WRITE_END_PADDING`.
pub const IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING: u32 = 1 << 3;

// enum ib_uverbs_qp_type
/// QP type (`enum ib_uverbs_qp_type`; `u8` like the `qp_type` fields, widen for the ioctl CONST_IN attr): `RC`.
pub const IB_UVERBS_QPT_RC: u8 = 2;
/// QP type (`enum ib_uverbs_qp_type`; `u8` like the `qp_type` fields, widen for the ioctl CONST_IN attr): `UC`.
pub const IB_UVERBS_QPT_UC: u8 = 3;
/// QP type (`enum ib_uverbs_qp_type`; `u8` like the `qp_type` fields, widen for the ioctl CONST_IN attr): `UD`.
pub const IB_UVERBS_QPT_UD: u8 = 4;
/// QP type (`enum ib_uverbs_qp_type`; `u8` like the `qp_type` fields, widen for the ioctl CONST_IN attr): `RAW_PACKET`.
pub const IB_UVERBS_QPT_RAW_PACKET: u8 = 8;
/// QP type (`enum ib_uverbs_qp_type`; `u8` like the `qp_type` fields, widen for the ioctl CONST_IN attr): `XRC_INI`.
pub const IB_UVERBS_QPT_XRC_INI: u8 = 9;
/// QP type (`enum ib_uverbs_qp_type`; `u8` like the `qp_type` fields, widen for the ioctl CONST_IN attr): `XRC_TGT`.
pub const IB_UVERBS_QPT_XRC_TGT: u8 = 10;
/// QP type (`enum ib_uverbs_qp_type`; `u8` like the `qp_type` fields, widen for the ioctl CONST_IN attr): `DRIVER`.
pub const IB_UVERBS_QPT_DRIVER: u8 = 0xFF;

// enum ib_uverbs_qp_create_flags
/// QP creation flag (`enum ib_uverbs_qp_create_flags`): `BLOCK_MULTICAST_LOOPBACK`.
pub const IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK: u32 = 1 << 1;
/// QP creation flag (`enum ib_uverbs_qp_create_flags`): `SCATTER_FCS`.
pub const IB_UVERBS_QP_CREATE_SCATTER_FCS: u32 = 1 << 8;
/// QP creation flag (`enum ib_uverbs_qp_create_flags`): `CVLAN_STRIPPING`.
pub const IB_UVERBS_QP_CREATE_CVLAN_STRIPPING: u32 = 1 << 9;
/// QP creation flag (`enum ib_uverbs_qp_create_flags`): `PCI_WRITE_END_PADDING`.
pub const IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING: u32 = 1 << 11;
/// QP creation flag (`enum ib_uverbs_qp_create_flags`): `SQ_SIG_ALL`.
pub const IB_UVERBS_QP_CREATE_SQ_SIG_ALL: u32 = 1 << 12;

// enum ib_uverbs_query_port_cap_flags
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `SM`.
pub const IB_UVERBS_PCF_SM: u32 = 1 << 1;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `NOTICE_SUP`.
pub const IB_UVERBS_PCF_NOTICE_SUP: u32 = 1 << 2;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `TRAP_SUP`.
pub const IB_UVERBS_PCF_TRAP_SUP: u32 = 1 << 3;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `OPT_IPD_SUP`.
pub const IB_UVERBS_PCF_OPT_IPD_SUP: u32 = 1 << 4;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `AUTO_MIGR_SUP`.
pub const IB_UVERBS_PCF_AUTO_MIGR_SUP: u32 = 1 << 5;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `SL_MAP_SUP`.
pub const IB_UVERBS_PCF_SL_MAP_SUP: u32 = 1 << 6;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `MKEY_NVRAM`.
pub const IB_UVERBS_PCF_MKEY_NVRAM: u32 = 1 << 7;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `PKEY_NVRAM`.
pub const IB_UVERBS_PCF_PKEY_NVRAM: u32 = 1 << 8;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `LED_INFO_SUP`.
pub const IB_UVERBS_PCF_LED_INFO_SUP: u32 = 1 << 9;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `SM_DISABLED`.
pub const IB_UVERBS_PCF_SM_DISABLED: u32 = 1 << 10;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `SYS_IMAGE_GUID_SUP`.
pub const IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP: u32 = 1 << 11;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `PKEY_SW_EXT_PORT_TRAP_SUP`.
pub const IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP: u32 = 1 << 12;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `EXTENDED_SPEEDS_SUP`.
pub const IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP: u32 = 1 << 14;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `CM_SUP`.
pub const IB_UVERBS_PCF_CM_SUP: u32 = 1 << 16;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `SNMP_TUNNEL_SUP`.
pub const IB_UVERBS_PCF_SNMP_TUNNEL_SUP: u32 = 1 << 17;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `REINIT_SUP`.
pub const IB_UVERBS_PCF_REINIT_SUP: u32 = 1 << 18;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `DEVICE_MGMT_SUP`.
pub const IB_UVERBS_PCF_DEVICE_MGMT_SUP: u32 = 1 << 19;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `VENDOR_CLASS_SUP`.
pub const IB_UVERBS_PCF_VENDOR_CLASS_SUP: u32 = 1 << 20;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `DR_NOTICE_SUP`.
pub const IB_UVERBS_PCF_DR_NOTICE_SUP: u32 = 1 << 21;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `CAP_MASK_NOTICE_SUP`.
pub const IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP: u32 = 1 << 22;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `BOOT_MGMT_SUP`.
pub const IB_UVERBS_PCF_BOOT_MGMT_SUP: u32 = 1 << 23;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `LINK_LATENCY_SUP`.
pub const IB_UVERBS_PCF_LINK_LATENCY_SUP: u32 = 1 << 24;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `CLIENT_REG_SUP`.
pub const IB_UVERBS_PCF_CLIENT_REG_SUP: u32 = 1 << 25;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `LINK_SPEED_WIDTH_TABLE_SUP` (isOtherLocalChangesNoticeSupported is aliased by IP_BASED_GIDS and is inaccessible).
pub const IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP: u32 = 1 << 27;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `VENDOR_SPECIFIC_MADS_TABLE_SUP`.
pub const IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP: u32 = 1 << 28;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `MCAST_PKEY_TRAP_SUPPRESSION_SUP`.
pub const IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP: u32 = 1 << 29;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `MCAST_FDB_TOP_SUP`.
pub const IB_UVERBS_PCF_MCAST_FDB_TOP_SUP: u32 = 1 << 30;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `HIERARCHY_INFO_SUP`.
pub const IB_UVERBS_PCF_HIERARCHY_INFO_SUP: u32 = 1 << 31;
/// Port capability flag (`ib_uverbs_query_port_resp.port_cap_flags`): `IP_BASED_GIDS` (NOTE this is an internal flag, not an IBA flag).
pub const IB_UVERBS_PCF_IP_BASED_GIDS: u32 = 1 << 26;

// enum ib_uverbs_query_port_flags
/// Port flag (`ib_uverbs_query_port_resp.flags`): `QPF_GRH_REQUIRED`.
pub const IB_UVERBS_QPF_GRH_REQUIRED: u8 = 1 << 0;

// enum ib_uverbs_flow_action_esp_keymat
/// ESP key material type: `AES_GCM`.
pub const IB_UVERBS_FLOW_ACTION_ESP_KEYMAT_AES_GCM: u32 = 0;

// enum ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo
/// ESP AES-GCM IV algorithm: `IV_ALGO_SEQ`.
pub const IB_UVERBS_FLOW_ACTION_IV_ALGO_SEQ: u32 = 0;

// enum ib_uverbs_flow_action_esp_replay
/// ESP replay protection type: `NONE`.
pub const IB_UVERBS_FLOW_ACTION_ESP_REPLAY_NONE: u32 = 0;
/// ESP replay protection type: `BMP`.
pub const IB_UVERBS_FLOW_ACTION_ESP_REPLAY_BMP: u32 = 1;

// enum ib_uverbs_flow_action_esp_flags
/// ESP flow action flag (`ib_uverbs_flow_action_esp.flags`): `INLINE_CRYPTO` (default).
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO: u32 = 0;
/// ESP flow action flag (`ib_uverbs_flow_action_esp.flags`): `FULL_OFFLOAD`.
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD: u32 = 1 << 0;
/// ESP flow action flag (`ib_uverbs_flow_action_esp.flags`): `TUNNEL` (default).
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TUNNEL: u32 = 0;
/// ESP flow action flag (`ib_uverbs_flow_action_esp.flags`): `TRANSPORT`.
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TRANSPORT: u32 = 1 << 1;
/// ESP flow action flag (`ib_uverbs_flow_action_esp.flags`): `DECRYPT` (default).
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_DECRYPT: u32 = 0;
/// ESP flow action flag (`ib_uverbs_flow_action_esp.flags`): `ENCRYPT`.
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ENCRYPT: u32 = 1 << 2;
/// ESP flow action flag (`ib_uverbs_flow_action_esp.flags`): `ESN_NEW_WINDOW`.
pub const IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW: u32 = 1 << 3;

// enum ib_uverbs_read_counters_flags
/// COUNTERS_READ flag: `PREFER_CACHED` (prefer read values from driver cache).
pub const IB_UVERBS_READ_COUNTERS_PREFER_CACHED: u32 = 1 << 0;

// enum ib_uverbs_advise_mr_advice
/// ADVISE_MR advice: `PREFETCH`.
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH: u32 = 0;
/// ADVISE_MR advice: `PREFETCH_WRITE`.
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE: u32 = 1;
/// ADVISE_MR advice: `PREFETCH_NO_FAULT`.
pub const IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT: u32 = 2;

// enum ib_uverbs_advise_mr_flag
/// ADVISE_MR flag: `FLUSH`.
pub const IB_UVERBS_ADVISE_MR_FLAG_FLUSH: u32 = 1 << 0;

// enum rdma_driver_id
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `UNKNOWN`.
pub const RDMA_DRIVER_UNKNOWN: u32 = 0;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `MLX5`.
pub const RDMA_DRIVER_MLX5: u32 = 1;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `MLX4`.
pub const RDMA_DRIVER_MLX4: u32 = 2;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `CXGB3`.
pub const RDMA_DRIVER_CXGB3: u32 = 3;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `CXGB4`.
pub const RDMA_DRIVER_CXGB4: u32 = 4;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `MTHCA`.
pub const RDMA_DRIVER_MTHCA: u32 = 5;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `BNXT_RE`.
pub const RDMA_DRIVER_BNXT_RE: u32 = 6;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `OCRDMA`.
pub const RDMA_DRIVER_OCRDMA: u32 = 7;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `NES`.
pub const RDMA_DRIVER_NES: u32 = 8;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `I40IW`.
pub const RDMA_DRIVER_I40IW: u32 = 9;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `IRDMA`.
pub const RDMA_DRIVER_IRDMA: u32 = RDMA_DRIVER_I40IW;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `VMW_PVRDMA`.
pub const RDMA_DRIVER_VMW_PVRDMA: u32 = 10;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `QEDR`.
pub const RDMA_DRIVER_QEDR: u32 = 11;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `HNS`.
pub const RDMA_DRIVER_HNS: u32 = 12;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `USNIC`.
pub const RDMA_DRIVER_USNIC: u32 = 13;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `RXE`.
pub const RDMA_DRIVER_RXE: u32 = 14;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `HFI1`.
pub const RDMA_DRIVER_HFI1: u32 = 15;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `QIB`.
pub const RDMA_DRIVER_QIB: u32 = 16;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `EFA`.
pub const RDMA_DRIVER_EFA: u32 = 17;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `SIW`.
pub const RDMA_DRIVER_SIW: u32 = 18;
/// Driver id (`enum rdma_driver_id`, `ib_uverbs_ioctl_hdr.driver_id`): `ERDMA`.
pub const RDMA_DRIVER_ERDMA: u32 = 19;

// enum ib_uverbs_gid_type
/// GID type (`ib_uverbs_gid_entry.gid_type`): `IB`.
pub const IB_UVERBS_GID_TYPE_IB: u32 = 0;
/// GID type (`ib_uverbs_gid_entry.gid_type`): `ROCE_V1`.
pub const IB_UVERBS_GID_TYPE_ROCE_V1: u32 = 1;
/// GID type (`ib_uverbs_gid_entry.gid_type`): `ROCE_V2`.
pub const IB_UVERBS_GID_TYPE_ROCE_V2: u32 = 2;

/// AES-GCM key material for an ESP flow action (`UVERBS_ATTR_FLOW_ACTION_ESP_KEYMAT`).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_action_esp_keymat_aes_gcm {
    /// Initialization vector.
    pub iv: u64,
    /// Use enum ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo.
    pub iv_algo: u32,
    /// Salt.
    pub salt: u32,
    /// ICV (integrity check value) length in bytes.
    pub icv_len: u32,
    /// Key length in bytes.
    pub key_len: u32,
    /// AES key (up to 256 bits).
    pub aes_key: [u32; 8],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_action_esp_keymat_aes_gcm>() == 56);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_action_esp_keymat_aes_gcm>() == 8);

/// Bitmap replay protection parameters for an ESP flow action.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_action_esp_replay_bmp {
    /// Size in bytes.
    pub size: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_action_esp_replay_bmp>() == 4);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_action_esp_replay_bmp>() == 4);

/// One element of the linked list of encapsulation headers of an ESP flow action (tunnel mode).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_action_esp_encap {
    /// This struct represents a list of pointers to flow_xxxx_filter that encapsulates the payload in ESP tunnel mode. pointer to a flow_xxxx_filter (user pointer to `void *`).
    pub val_ptr: u64,
    /// User pointer to the next [`ib_uverbs_flow_action_esp_encap`] (0 ends the list) (user pointer to `struct ib_uverbs_flow_action_esp_encap *`).
    pub next_ptr: u64,
    /// Len of the filter struct val_ptr points to.
    pub len: u16,
    /// Use flow_spec_type enum.
    pub r#type: u16,
    /// Explicit padding (4 bytes at offset 20; implicit in C, no C field); zero.
    pub _pad: [u8; 4],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_action_esp_encap>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_action_esp_encap>() == 8);

/// Core ESP flow action attributes (`UVERBS_ATTR_FLOW_ACTION_ESP_ATTRS`).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_flow_action_esp {
    /// ESP SPI.
    pub spi: u32,
    /// ESP sequence number.
    pub seq: u32,
    /// Traffic flow confidentiality padding.
    pub tfc_pad: u32,
    /// `IB_UVERBS_FLOW_ACTION_ESP_FLAGS_*`.
    pub flags: u32,
    /// Hard limit on packets.
    pub hard_limit_pkts: u64,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_flow_action_esp>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_flow_action_esp>() == 8);

/// Response of the QUERY_PORT ioctl (`UVERBS_ATTR_QUERY_PORT_RESP`, 48 bytes): the legacy response plus `port_cap_flags2`. Newer kernels (~6.7) turn the first two reserved bytes into `active_speed_ex`; this is the 6.1 layout.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_query_port_resp_ex {
    /// The legacy QUERY_PORT response.
    pub legacy_resp: ib_uverbs_query_port_resp,
    /// Port capability flags 2 (kernel `IB_PORT_*_SUP` in CapabilityMask2).
    pub port_cap_flags2: u16,
    /// Reserved in 6.1 (newer kernels: bytes 0..2 are `active_speed_ex`).
    pub reserved: [u8; 6],
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_query_port_resp_ex>() == 48);
const _: () = assert!(core::mem::align_of::<ib_uverbs_query_port_resp_ex>() == 4);

/// QP capabilities (work requests, SGEs, inline size) for QP_CREATE `CAP` / `RESP_CAP` (20 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_qp_cap {
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
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_qp_cap>() == 20);
const _: () = assert!(core::mem::align_of::<ib_uverbs_qp_cap>() == 4);

/// One GID table entry as returned by QUERY_GID_ENTRY / QUERY_GID_TABLE (32 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_gid_entry {
    /// The GID (16 bytes, network order).
    pub gid: [u64; 2],
    /// GID table index.
    pub gid_index: u32,
    /// Port number (1-based).
    pub port_num: u32,
    /// GID type (`IB_UVERBS_GID_TYPE_*`).
    pub gid_type: u32,
    /// ifindex of the associated netdev; 0 if none.
    pub netdev_ifindex: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_gid_entry>() == 32);
const _: () = assert!(core::mem::align_of::<ib_uverbs_gid_entry>() == 8);
