//! mlx5 (ConnectX) driver ABI: `rdma/mlx5-abi.h`, `rdma/mlx5_user_ioctl_cmds.h`, `rdma/mlx5_user_ioctl_verbs.h`.
//!
//! Driver udata structs, mmap commands and the driver-namespace ioctl ids (`u16`, 0x1000 and up).
//! DEVX, flow-matcher and steering ids are included as plain ids; their payloads are firmware
//! command layouts and are not modelled.

use crate::UVERBS_ID_NS_SHIFT;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

// enum (anonymous)
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `SIGNATURE`.
pub const MLX5_QP_FLAG_SIGNATURE: u32 = 1 << 0;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `SCATTER_CQE`.
pub const MLX5_QP_FLAG_SCATTER_CQE: u32 = 1 << 1;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `TUNNEL_OFFLOADS`.
pub const MLX5_QP_FLAG_TUNNEL_OFFLOADS: u32 = 1 << 2;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `BFREG_INDEX`.
pub const MLX5_QP_FLAG_BFREG_INDEX: u32 = 1 << 3;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `TYPE_DCT`.
pub const MLX5_QP_FLAG_TYPE_DCT: u32 = 1 << 4;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `TYPE_DCI`.
pub const MLX5_QP_FLAG_TYPE_DCI: u32 = 1 << 5;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `TIR_ALLOW_SELF_LB_UC`.
pub const MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC: u32 = 1 << 6;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `TIR_ALLOW_SELF_LB_MC`.
pub const MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC: u32 = 1 << 7;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `ALLOW_SCATTER_CQE`.
pub const MLX5_QP_FLAG_ALLOW_SCATTER_CQE: u32 = 1 << 8;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `PACKET_BASED_CREDIT_MODE`.
pub const MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE: u32 = 1 << 9;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `UAR_PAGE_INDEX`.
pub const MLX5_QP_FLAG_UAR_PAGE_INDEX: u32 = 1 << 10;
/// mlx5 QP creation flag (`mlx5_ib_create_qp.flags`): `DCI_STREAM`.
pub const MLX5_QP_FLAG_DCI_STREAM: u32 = 1 << 11;

// enum (anonymous)
/// mlx5 SRQ creation flag (`mlx5_ib_create_srq.flags`): signature.
pub const MLX5_SRQ_FLAG_SIGNATURE: u32 = 1 << 0;

// enum (anonymous)
/// mlx5 WQ creation flag (`mlx5_ib_create_wq.flags`): signature.
pub const MLX5_WQ_FLAG_SIGNATURE: u32 = 1 << 0;

/// mlx5 per-driver uverbs ABI version (`uverbsN/abi_version`).
pub const MLX5_IB_UVERBS_ABI_VERSION: u32 = 1;

// enum mlx5_lib_caps
/// mlx5 library capability (`mlx5_ib_alloc_ucontext_req_v2.lib_caps`): `4K_UAR`.
pub const MLX5_LIB_CAP_4K_UAR: u64 = 1 << 0;
/// mlx5 library capability (`mlx5_ib_alloc_ucontext_req_v2.lib_caps`): `DYN_UAR`.
pub const MLX5_LIB_CAP_DYN_UAR: u64 = 1 << 1;

// enum mlx5_ib_alloc_uctx_v2_flags
/// mlx5 ucontext allocation flag (`mlx5_ib_alloc_ucontext_req_v2.flags`): DEVX.
pub const MLX5_IB_ALLOC_UCTX_DEVX: u32 = 1 << 0;

// enum mlx5_ib_alloc_ucontext_resp_mask
/// mlx5 ucontext response `comp_mask` bit: `CORE_CLOCK_OFFSET`.
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET: u32 = 1 << 0;
/// mlx5 ucontext response `comp_mask` bit: `DUMP_FILL_MKEY`.
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY: u32 = 1 << 1;
/// mlx5 ucontext response `comp_mask` bit: `ECE`.
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE: u32 = 1 << 2;
/// mlx5 ucontext response `comp_mask` bit: `SQD2RTS`.
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS: u32 = 1 << 3;
/// mlx5 ucontext response `comp_mask` bit: `REAL_TIME_TS`.
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS: u32 = 1 << 4;
/// mlx5 ucontext response `comp_mask` bit: `MKEY_UPDATE_TAG`.
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG: u32 = 1 << 5;

// enum mlx5_user_cmds_supp_uhw
/// mlx5 `cmds_supp_uhw` bit (commands accepting driver data): `QUERY_DEVICE`.
pub const MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE: u8 = 1 << 0;
/// mlx5 `cmds_supp_uhw` bit (commands accepting driver data): `CREATE_AH`.
pub const MLX5_USER_CMDS_SUPP_UHW_CREATE_AH: u8 = 1 << 1;

// enum mlx5_user_inline_mode
// The eth_min_inline response value is set to off-by-one vs the FW returned value to allow user-space to deal with older kernels.
/// mlx5 `eth_min_inline` value (off by one vs firmware): `NA`.
pub const MLX5_USER_INLINE_MODE_NA: u8 = 0;
/// mlx5 `eth_min_inline` value (off by one vs firmware): `NONE`.
pub const MLX5_USER_INLINE_MODE_NONE: u8 = 1;
/// mlx5 `eth_min_inline` value (off by one vs firmware): `L2`.
pub const MLX5_USER_INLINE_MODE_L2: u8 = 2;
/// mlx5 `eth_min_inline` value (off by one vs firmware): `IP`.
pub const MLX5_USER_INLINE_MODE_IP: u8 = 3;
/// mlx5 `eth_min_inline` value (off by one vs firmware): `TCP_UDP`.
pub const MLX5_USER_INLINE_MODE_TCP_UDP: u8 = 4;

// enum (anonymous)
/// mlx5 ucontext `flow_action_flags` bit: `GCM`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM: u16 = 1 << 0;
/// mlx5 ucontext `flow_action_flags` bit: `GCM_REQ_METADATA`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_REQ_METADATA: u16 = 1 << 1;
/// mlx5 ucontext `flow_action_flags` bit: `GCM_SPI_STEERING`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_SPI_STEERING: u16 = 1 << 2;
/// mlx5 ucontext `flow_action_flags` bit: `GCM_FULL_OFFLOAD`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_FULL_OFFLOAD: u16 = 1 << 3;
/// mlx5 ucontext `flow_action_flags` bit: `GCM_TX_IV_IS_ESN`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_TX_IV_IS_ESN: u16 = 1 << 4;

// enum mlx5_ib_cqe_comp_res_format
/// mlx5 CQE compression format: `HASH`.
pub const MLX5_IB_CQE_RES_FORMAT_HASH: u32 = 1 << 0;
/// mlx5 CQE compression format: `CSUM`.
pub const MLX5_IB_CQE_RES_FORMAT_CSUM: u32 = 1 << 1;
/// mlx5 CQE compression format: `CSUM_STRIDX`.
pub const MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX: u32 = 1 << 2;

// enum mlx5_ib_packet_pacing_cap_flags
/// mlx5 packet pacing capability flag: `PP_SUPPORT_BURST`.
pub const MLX5_IB_PP_SUPPORT_BURST: u8 = 1 << 0;

// enum mlx5_ib_mpw_caps
/// mlx5 multi-packet send WQE capability: `MPW_RESERVED`.
pub const MPW_RESERVED: u32 = 1 << 0;
/// mlx5 multi-packet send WQE capability: `ALLOW_MPW`.
pub const MLX5_IB_ALLOW_MPW: u32 = 1 << 1;
/// mlx5 multi-packet send WQE capability: `SUPPORT_EMPW`.
pub const MLX5_IB_SUPPORT_EMPW: u32 = 1 << 2;

// enum mlx5_ib_sw_parsing_offloads
/// mlx5 software parsing offload: `PARSING`.
pub const MLX5_IB_SW_PARSING: u32 = 1 << 0;
/// mlx5 software parsing offload: `PARSING_CSUM`.
pub const MLX5_IB_SW_PARSING_CSUM: u32 = 1 << 1;
/// mlx5 software parsing offload: `PARSING_LSO`.
pub const MLX5_IB_SW_PARSING_LSO: u32 = 1 << 2;

// enum mlx5_ib_query_dev_resp_flags
/// mlx5 query-device response flag: `FLAGS_CQE_128B_COMP` (support 128B CQE compression).
pub const MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP: u32 = 1 << 0;
/// mlx5 query-device response flag: `FLAGS_CQE_128B_PAD`.
pub const MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD: u32 = 1 << 1;
/// mlx5 query-device response flag: `PACKET_BASED_CREDIT_MODE`.
pub const MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE: u32 = 1 << 2;
/// mlx5 query-device response flag: `FLAGS_SCAT2CQE_DCT`.
pub const MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT: u32 = 1 << 3;

// enum mlx5_ib_tunnel_offloads
/// mlx5 tunnel offload capability: `VXLAN`.
pub const MLX5_IB_TUNNELED_OFFLOADS_VXLAN: u32 = 1 << 0;
/// mlx5 tunnel offload capability: `GRE`.
pub const MLX5_IB_TUNNELED_OFFLOADS_GRE: u32 = 1 << 1;
/// mlx5 tunnel offload capability: `GENEVE`.
pub const MLX5_IB_TUNNELED_OFFLOADS_GENEVE: u32 = 1 << 2;
/// mlx5 tunnel offload capability: `MPLS_GRE`.
pub const MLX5_IB_TUNNELED_OFFLOADS_MPLS_GRE: u32 = 1 << 3;
/// mlx5 tunnel offload capability: `MPLS_UDP`.
pub const MLX5_IB_TUNNELED_OFFLOADS_MPLS_UDP: u32 = 1 << 4;

// enum mlx5_ib_create_cq_flags
/// mlx5 CQ creation flag (`mlx5_ib_create_cq.flags`): `CQE_128B_PAD`.
pub const MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD: u16 = 1 << 0;
/// mlx5 CQ creation flag (`mlx5_ib_create_cq.flags`): `UAR_PAGE_INDEX`.
pub const MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX: u16 = 1 << 1;
/// mlx5 CQ creation flag (`mlx5_ib_create_cq.flags`): `REAL_TIME_TS`.
pub const MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS: u16 = 1 << 2;

// enum mlx5_rx_hash_function_flags
// RX Hash function flags
/// mlx5 RSS hash function: `FUNC_TOEPLITZ`.
pub const MLX5_RX_HASH_FUNC_TOEPLITZ: u8 = 1 << 0;

// enum mlx5_rx_hash_fields
// RX Hash flags, these flags allows to set which incoming packet's field should participates in RX Hash. Each flag represent certain packet's field, when the flag is set the field that is represented by the flag will participate in RX Hash calculation. Note: *IPV4 and *IPV6 flags can't be enabled together on the same QP and *TCP and *UDP flags can't be enabled together on the same QP.
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `SRC_IPV4`.
pub const MLX5_RX_HASH_SRC_IPV4: u64 = 1 << 0;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `DST_IPV4`.
pub const MLX5_RX_HASH_DST_IPV4: u64 = 1 << 1;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `SRC_IPV6`.
pub const MLX5_RX_HASH_SRC_IPV6: u64 = 1 << 2;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `DST_IPV6`.
pub const MLX5_RX_HASH_DST_IPV6: u64 = 1 << 3;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `SRC_PORT_TCP`.
pub const MLX5_RX_HASH_SRC_PORT_TCP: u64 = 1 << 4;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `DST_PORT_TCP`.
pub const MLX5_RX_HASH_DST_PORT_TCP: u64 = 1 << 5;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `SRC_PORT_UDP`.
pub const MLX5_RX_HASH_SRC_PORT_UDP: u64 = 1 << 6;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `DST_PORT_UDP`.
pub const MLX5_RX_HASH_DST_PORT_UDP: u64 = 1 << 7;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `IPSEC_SPI`.
pub const MLX5_RX_HASH_IPSEC_SPI: u64 = 1 << 8;
/// mlx5 RSS hash field (`rx_hash_fields_mask`): `INNER` (save bits for future fields).
pub const MLX5_RX_HASH_INNER: u64 = 1 << 31;

// enum mlx5_ib_create_qp_resp_mask
/// mlx5 CREATE_QP response `comp_mask` bit: `TIRN`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_TIRN: u32 = 1 << 0;
/// mlx5 CREATE_QP response `comp_mask` bit: `TISN`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_TISN: u32 = 1 << 1;
/// mlx5 CREATE_QP response `comp_mask` bit: `RQN`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_RQN: u32 = 1 << 2;
/// mlx5 CREATE_QP response `comp_mask` bit: `SQN`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_SQN: u32 = 1 << 3;
/// mlx5 CREATE_QP response `comp_mask` bit: `TIR_ICM_ADDR`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_TIR_ICM_ADDR: u32 = 1 << 4;

// enum mlx5_ib_create_wq_mask
/// mlx5 CREATE_WQ `comp_mask` bit: striding RQ.
pub const MLX5_IB_CREATE_WQ_STRIDING_RQ: u32 = 1 << 0;

// enum mlx5_ib_mmap_cmd
/// mlx5 mmap command (bits 8.. of the page offset): `REGULAR_PAGE`.
pub const MLX5_IB_MMAP_REGULAR_PAGE: u32 = 0;
/// mlx5 mmap command (bits 8.. of the page offset): `GET_CONTIGUOUS_PAGES`.
pub const MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES: u32 = 1;
/// mlx5 mmap command (bits 8.. of the page offset): `WC_PAGE`.
pub const MLX5_IB_MMAP_WC_PAGE: u32 = 2;
/// mlx5 mmap command (bits 8.. of the page offset): `NC_PAGE`.
pub const MLX5_IB_MMAP_NC_PAGE: u32 = 3;
/// mlx5 mmap command (bits 8.. of the page offset): `CORE_CLOCK` (5 is chosen in order to be compatible with old versions of libmlx5).
pub const MLX5_IB_MMAP_CORE_CLOCK: u32 = 5;
/// mlx5 mmap command (bits 8.. of the page offset): `ALLOC_WC`.
pub const MLX5_IB_MMAP_ALLOC_WC: u32 = 6;
/// mlx5 mmap command (bits 8.. of the page offset): `CLOCK_INFO`.
pub const MLX5_IB_MMAP_CLOCK_INFO: u32 = 7;
/// mlx5 mmap command (bits 8.. of the page offset): `DEVICE_MEM`.
pub const MLX5_IB_MMAP_DEVICE_MEM: u32 = 8;

// enum (anonymous)
/// mlx5 clock-info `sign` bit set while the kernel updates the page.
pub const MLX5_IB_CLOCK_INFO_KERNEL_UPDATING: u32 = 1;

// enum (anonymous)
// Bit indexes for the mlx5_alloc_ucontext_resp.clock_info_versions bitmap
/// Bit index in `clock_info_versions`: clock info version 1.
pub const MLX5_IB_CLOCK_INFO_V1: u32 = 0;

// enum mlx5_ib_create_flow_action_attrs
/// Attribute id of the FLOW_ACTION_ESP_CREATE method (driver namespace): mlx5 flags (this attribute belong to the driver namespace).
pub const MLX5_IB_ATTR_CREATE_FLOW_ACTION_FLAGS: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_dm_methods
/// Method id of `UVERBS_OBJECT_DM` (driver namespace): `MAP_OP_ADDR`.
pub const MLX5_IB_METHOD_DM_MAP_OP_ADDR: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `UVERBS_OBJECT_DM` (driver namespace): `QUERY`.
pub const MLX5_IB_METHOD_DM_QUERY: u16 = 0x1001;

// enum mlx5_ib_dm_map_op_addr_attrs
/// Attribute id of `MLX5_IB_METHOD_DM_MAP_OP_ADDR` (driver namespace): `REQ_HANDLE`.
pub const MLX5_IB_ATTR_DM_MAP_OP_ADDR_REQ_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DM_MAP_OP_ADDR` (driver namespace): `REQ_OP`.
pub const MLX5_IB_ATTR_DM_MAP_OP_ADDR_REQ_OP: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_DM_MAP_OP_ADDR` (driver namespace): `RESP_START_OFFSET`.
pub const MLX5_IB_ATTR_DM_MAP_OP_ADDR_RESP_START_OFFSET: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_DM_MAP_OP_ADDR` (driver namespace): `RESP_PAGE_INDEX`.
pub const MLX5_IB_ATTR_DM_MAP_OP_ADDR_RESP_PAGE_INDEX: u16 = 0x1003;

// enum mlx5_ib_query_dm_attrs
/// Attribute id of `MLX5_IB_METHOD_DM_QUERY` (driver namespace): `REQ_HANDLE`.
pub const MLX5_IB_ATTR_QUERY_DM_REQ_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DM_QUERY` (driver namespace): `RESP_START_OFFSET`.
pub const MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_DM_QUERY` (driver namespace): `RESP_PAGE_INDEX`.
pub const MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_DM_QUERY` (driver namespace): `RESP_LENGTH`.
pub const MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH: u16 = 0x1003;

// enum mlx5_ib_alloc_dm_attrs
/// Attribute id of `UVERBS_METHOD_DM_ALLOC` (driver namespace): `RESP_START_OFFSET`.
pub const MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `UVERBS_METHOD_DM_ALLOC` (driver namespace): `RESP_PAGE_INDEX`.
pub const MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX: u16 = 0x1001;
/// Attribute id of `UVERBS_METHOD_DM_ALLOC` (driver namespace): `REQ_TYPE`.
pub const MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE: u16 = 0x1002;

// enum mlx5_ib_devx_methods
/// Method id of `MLX5_IB_OBJECT_DEVX` (driver namespace): `OTHER`.
pub const MLX5_IB_METHOD_DEVX_OTHER: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `MLX5_IB_OBJECT_DEVX` (driver namespace): `QUERY_UAR`.
pub const MLX5_IB_METHOD_DEVX_QUERY_UAR: u16 = 0x1001;
/// Method id of `MLX5_IB_OBJECT_DEVX` (driver namespace): `QUERY_EQN`.
pub const MLX5_IB_METHOD_DEVX_QUERY_EQN: u16 = 0x1002;
/// Method id of `MLX5_IB_OBJECT_DEVX` (driver namespace): `SUBSCRIBE_EVENT`.
pub const MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT: u16 = 0x1003;

// enum mlx5_ib_devx_other_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_OTHER` (driver namespace): `IN`.
pub const MLX5_IB_ATTR_DEVX_OTHER_CMD_IN: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OTHER` (driver namespace): `OUT`.
pub const MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT: u16 = 0x1001;

// enum mlx5_ib_devx_obj_create_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_CREATE` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_CREATE` (driver namespace): `CMD_IN`.
pub const MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_CREATE` (driver namespace): `CMD_OUT`.
pub const MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_OUT: u16 = 0x1002;

// enum mlx5_ib_devx_query_uar_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_QUERY_UAR` (driver namespace): `USER_IDX`.
pub const MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_QUERY_UAR` (driver namespace): `DEV_IDX`.
pub const MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX: u16 = 0x1001;

// enum mlx5_ib_devx_obj_destroy_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_DESTROY`: the object handle.
pub const MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_devx_obj_modify_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_MODIFY` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_DEVX_OBJ_MODIFY_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_MODIFY` (driver namespace): `CMD_IN`.
pub const MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_IN: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_MODIFY` (driver namespace): `CMD_OUT`.
pub const MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_OUT: u16 = 0x1002;

// enum mlx5_ib_devx_obj_query_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_QUERY` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_QUERY` (driver namespace): `CMD_IN`.
pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_IN: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_QUERY` (driver namespace): `CMD_OUT`.
pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_OUT: u16 = 0x1002;

// enum mlx5_ib_devx_obj_query_async_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY` (driver namespace): `CMD_IN`.
pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_CMD_IN: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY` (driver namespace): `FD`.
pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_FD: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY` (driver namespace): `WR_ID`.
pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_WR_ID: u16 = 0x1003;
/// Attribute id of `MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY` (driver namespace): `OUT_LEN`.
pub const MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_OUT_LEN: u16 = 0x1004;

// enum mlx5_ib_devx_subscribe_event_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT` (driver namespace): `FD_HANDLE`.
pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT` (driver namespace): `OBJ_HANDLE`.
pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT` (driver namespace): `TYPE_NUM_LIST`.
pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT` (driver namespace): `FD_NUM`.
pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_NUM: u16 = 0x1003;
/// Attribute id of `MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT` (driver namespace): `COOKIE`.
pub const MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE: u16 = 0x1004;

// enum mlx5_ib_devx_query_eqn_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_QUERY_EQN` (driver namespace): `USER_VEC`.
pub const MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_QUERY_EQN` (driver namespace): `DEV_EQN`.
pub const MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN: u16 = 0x1001;

// enum mlx5_ib_devx_obj_methods
/// Method id of `MLX5_IB_OBJECT_DEVX_OBJ` (driver namespace): `CREATE`.
pub const MLX5_IB_METHOD_DEVX_OBJ_CREATE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `MLX5_IB_OBJECT_DEVX_OBJ` (driver namespace): `DESTROY`.
pub const MLX5_IB_METHOD_DEVX_OBJ_DESTROY: u16 = 0x1001;
/// Method id of `MLX5_IB_OBJECT_DEVX_OBJ` (driver namespace): `MODIFY`.
pub const MLX5_IB_METHOD_DEVX_OBJ_MODIFY: u16 = 0x1002;
/// Method id of `MLX5_IB_OBJECT_DEVX_OBJ` (driver namespace): `QUERY`.
pub const MLX5_IB_METHOD_DEVX_OBJ_QUERY: u16 = 0x1003;
/// Method id of `MLX5_IB_OBJECT_DEVX_OBJ` (driver namespace): `ASYNC_QUERY`.
pub const MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY: u16 = 0x1004;

// enum mlx5_ib_var_alloc_attrs
/// Attribute id of `MLX5_IB_METHOD_VAR_OBJ_ALLOC` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_VAR_OBJ_ALLOC_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_VAR_OBJ_ALLOC` (driver namespace): `MMAP_OFFSET`.
pub const MLX5_IB_ATTR_VAR_OBJ_ALLOC_MMAP_OFFSET: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_VAR_OBJ_ALLOC` (driver namespace): `MMAP_LENGTH`.
pub const MLX5_IB_ATTR_VAR_OBJ_ALLOC_MMAP_LENGTH: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_VAR_OBJ_ALLOC` (driver namespace): `PAGE_ID`.
pub const MLX5_IB_ATTR_VAR_OBJ_ALLOC_PAGE_ID: u16 = 0x1003;

// enum mlx5_ib_var_obj_destroy_attrs
/// Attribute id of `MLX5_IB_METHOD_VAR_OBJ_DESTROY`: the VAR handle.
pub const MLX5_IB_ATTR_VAR_OBJ_DESTROY_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_var_obj_methods
/// Method id of `MLX5_IB_OBJECT_VAR` (driver namespace): `ALLOC`.
pub const MLX5_IB_METHOD_VAR_OBJ_ALLOC: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `MLX5_IB_OBJECT_VAR` (driver namespace): `DESTROY`.
pub const MLX5_IB_METHOD_VAR_OBJ_DESTROY: u16 = 0x1001;

// enum mlx5_ib_uar_alloc_attrs
/// Attribute id of `MLX5_IB_METHOD_UAR_OBJ_ALLOC` (driver namespace): `HANDLE`: IDR, new object.
pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_UAR_OBJ_ALLOC` (driver namespace): `TYPE`: CONST_IN `MLX5_IB_UAPI_UAR_ALLOC_TYPE_*`.
pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_UAR_OBJ_ALLOC` (driver namespace): `MMAP_OFFSET`: PTR_OUT u64: mmap(2) offset on the uverbs fd.
pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_UAR_OBJ_ALLOC` (driver namespace): `MMAP_LENGTH`: PTR_OUT u32.
pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH: u16 = 0x1003;
/// Attribute id of `MLX5_IB_METHOD_UAR_OBJ_ALLOC` (driver namespace): `PAGE_ID`: PTR_OUT u32: the UAR page index for QP/CQ creation.
pub const MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID: u16 = 0x1004;

// enum mlx5_ib_uar_obj_destroy_attrs
/// Attribute id of `MLX5_IB_METHOD_UAR_OBJ_DESTROY`: the UAR handle.
pub const MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_uar_obj_methods
/// Method id of `MLX5_IB_OBJECT_UAR` (driver namespace): `ALLOC`.
pub const MLX5_IB_METHOD_UAR_OBJ_ALLOC: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `MLX5_IB_OBJECT_UAR` (driver namespace): `DESTROY`.
pub const MLX5_IB_METHOD_UAR_OBJ_DESTROY: u16 = 0x1001;

// enum mlx5_ib_devx_umem_reg_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_UMEM_REG` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_UMEM_REG` (driver namespace): `ADDR`.
pub const MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_DEVX_UMEM_REG` (driver namespace): `LEN`.
pub const MLX5_IB_ATTR_DEVX_UMEM_REG_LEN: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_DEVX_UMEM_REG` (driver namespace): `ACCESS`.
pub const MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS: u16 = 0x1003;
/// Attribute id of `MLX5_IB_METHOD_DEVX_UMEM_REG` (driver namespace): `OUT_ID`.
pub const MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID: u16 = 0x1004;
/// Attribute id of `MLX5_IB_METHOD_DEVX_UMEM_REG` (driver namespace): `PGSZ_BITMAP`.
pub const MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP: u16 = 0x1005;
/// Attribute id of `MLX5_IB_METHOD_DEVX_UMEM_REG` (driver namespace): `DMABUF_FD`.
pub const MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD: u16 = 0x1006;

// enum mlx5_ib_devx_umem_dereg_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_UMEM_DEREG`: the umem handle.
pub const MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_pp_obj_methods
/// Method id of `MLX5_IB_OBJECT_PP` (driver namespace): `ALLOC`.
pub const MLX5_IB_METHOD_PP_OBJ_ALLOC: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `MLX5_IB_OBJECT_PP` (driver namespace): `DESTROY`.
pub const MLX5_IB_METHOD_PP_OBJ_DESTROY: u16 = 0x1001;

// enum mlx5_ib_pp_alloc_attrs
/// Attribute id of `MLX5_IB_METHOD_PP_OBJ_ALLOC` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_PP_OBJ_ALLOC_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_PP_OBJ_ALLOC` (driver namespace): `CTX`.
pub const MLX5_IB_ATTR_PP_OBJ_ALLOC_CTX: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_PP_OBJ_ALLOC` (driver namespace): `FLAGS`.
pub const MLX5_IB_ATTR_PP_OBJ_ALLOC_FLAGS: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_PP_OBJ_ALLOC` (driver namespace): `INDEX`.
pub const MLX5_IB_ATTR_PP_OBJ_ALLOC_INDEX: u16 = 0x1003;

// enum mlx5_ib_pp_obj_destroy_attrs
/// Attribute id of `MLX5_IB_METHOD_PP_OBJ_DESTROY`: the packet pacing handle.
pub const MLX5_IB_ATTR_PP_OBJ_DESTROY_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_devx_umem_methods
/// Method id of `MLX5_IB_OBJECT_DEVX_UMEM` (driver namespace): `REG`.
pub const MLX5_IB_METHOD_DEVX_UMEM_REG: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `MLX5_IB_OBJECT_DEVX_UMEM` (driver namespace): `DEREG`.
pub const MLX5_IB_METHOD_DEVX_UMEM_DEREG: u16 = 0x1001;

// enum mlx5_ib_devx_async_cmd_fd_alloc_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC`: the new fd.
pub const MLX5_IB_ATTR_DEVX_ASYNC_CMD_FD_ALLOC_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_devx_async_event_fd_alloc_attrs
/// Attribute id of `MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC` (driver namespace): `FLAGS`.
pub const MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_FLAGS: u16 = 0x1001;

// enum mlx5_ib_devx_async_cmd_fd_methods
/// Method id of `MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD`: allocate the fd.
pub const MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_devx_async_event_fd_methods
/// Method id of `MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD`: allocate the fd.
pub const MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_objects
/// mlx5 driver object id (driver namespace): `DEVX`.
pub const MLX5_IB_OBJECT_DEVX: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// mlx5 driver object id (driver namespace): `DEVX_OBJ`.
pub const MLX5_IB_OBJECT_DEVX_OBJ: u16 = 0x1001;
/// mlx5 driver object id (driver namespace): `DEVX_UMEM`.
pub const MLX5_IB_OBJECT_DEVX_UMEM: u16 = 0x1002;
/// mlx5 driver object id (driver namespace): `FLOW_MATCHER`.
pub const MLX5_IB_OBJECT_FLOW_MATCHER: u16 = 0x1003;
/// mlx5 driver object id (driver namespace): `DEVX_ASYNC_CMD_FD`.
pub const MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD: u16 = 0x1004;
/// mlx5 driver object id (driver namespace): `DEVX_ASYNC_EVENT_FD`.
pub const MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD: u16 = 0x1005;
/// mlx5 driver object id (driver namespace): `VAR`.
pub const MLX5_IB_OBJECT_VAR: u16 = 0x1006;
/// mlx5 driver object id (driver namespace): `PP`.
pub const MLX5_IB_OBJECT_PP: u16 = 0x1007;
/// mlx5 driver object id (driver namespace): `UAR`.
pub const MLX5_IB_OBJECT_UAR: u16 = 0x1008;
/// mlx5 driver object id (driver namespace): `STEERING_ANCHOR`.
pub const MLX5_IB_OBJECT_STEERING_ANCHOR: u16 = 0x1009;

// enum mlx5_ib_flow_matcher_create_attrs
/// Attribute id of `MLX5_IB_METHOD_FLOW_MATCHER_CREATE` (driver namespace): `CREATE_HANDLE`.
pub const MLX5_IB_ATTR_FLOW_MATCHER_CREATE_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_FLOW_MATCHER_CREATE` (driver namespace): `MATCH_MASK`.
pub const MLX5_IB_ATTR_FLOW_MATCHER_MATCH_MASK: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_FLOW_MATCHER_CREATE` (driver namespace): `FLOW_TYPE`.
pub const MLX5_IB_ATTR_FLOW_MATCHER_FLOW_TYPE: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_FLOW_MATCHER_CREATE` (driver namespace): `MATCH_CRITERIA`.
pub const MLX5_IB_ATTR_FLOW_MATCHER_MATCH_CRITERIA: u16 = 0x1003;
/// Attribute id of `MLX5_IB_METHOD_FLOW_MATCHER_CREATE` (driver namespace): `FLOW_FLAGS`.
pub const MLX5_IB_ATTR_FLOW_MATCHER_FLOW_FLAGS: u16 = 0x1004;
/// Attribute id of `MLX5_IB_METHOD_FLOW_MATCHER_CREATE` (driver namespace): `FT_TYPE`.
pub const MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE: u16 = 0x1005;

// enum mlx5_ib_flow_matcher_destroy_attrs
/// Attribute id of `MLX5_IB_METHOD_FLOW_MATCHER_DESTROY`: the matcher handle.
pub const MLX5_IB_ATTR_FLOW_MATCHER_DESTROY_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_flow_matcher_methods
/// Method id of `MLX5_IB_OBJECT_FLOW_MATCHER` (driver namespace): `CREATE`.
pub const MLX5_IB_METHOD_FLOW_MATCHER_CREATE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `MLX5_IB_OBJECT_FLOW_MATCHER` (driver namespace): `DESTROY`.
pub const MLX5_IB_METHOD_FLOW_MATCHER_DESTROY: u16 = 0x1001;

// enum mlx5_ib_flow_steering_anchor_create_attrs
/// Attribute id of `MLX5_IB_METHOD_STEERING_ANCHOR_CREATE` (driver namespace): `CREATE_HANDLE`.
pub const MLX5_IB_ATTR_STEERING_ANCHOR_CREATE_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_STEERING_ANCHOR_CREATE` (driver namespace): `FT_TYPE`.
pub const MLX5_IB_ATTR_STEERING_ANCHOR_FT_TYPE: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_STEERING_ANCHOR_CREATE` (driver namespace): `PRIORITY`.
pub const MLX5_IB_ATTR_STEERING_ANCHOR_PRIORITY: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_STEERING_ANCHOR_CREATE` (driver namespace): `FT_ID`.
pub const MLX5_IB_ATTR_STEERING_ANCHOR_FT_ID: u16 = 0x1003;

// enum mlx5_ib_flow_steering_anchor_destroy_attrs
/// Attribute id of `MLX5_IB_METHOD_STEERING_ANCHOR_DESTROY`: the anchor handle.
pub const MLX5_IB_ATTR_STEERING_ANCHOR_DESTROY_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_steering_anchor_methods
/// Method id of `MLX5_IB_OBJECT_STEERING_ANCHOR` (driver namespace): `CREATE`.
pub const MLX5_IB_METHOD_STEERING_ANCHOR_CREATE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `MLX5_IB_OBJECT_STEERING_ANCHOR` (driver namespace): `DESTROY`.
pub const MLX5_IB_METHOD_STEERING_ANCHOR_DESTROY: u16 = 0x1001;

// enum mlx5_ib_device_query_context_attrs
/// Attribute id of `UVERBS_METHOD_QUERY_CONTEXT` (driver namespace): the mlx5 ucontext response.
pub const MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX: u16 = 1 << UVERBS_ID_NS_SHIFT;

/// Number of dwords in [`mlx5_ib_match_params`].
pub const MLX5_IB_DW_MATCH_PARAM: usize = 0xA0;

// enum mlx5_ib_flow_type
/// mlx5 flow matcher flow type: `NORMAL`.
pub const MLX5_IB_FLOW_TYPE_NORMAL: u32 = 0;
/// mlx5 flow matcher flow type: `SNIFFER`.
pub const MLX5_IB_FLOW_TYPE_SNIFFER: u32 = 1;
/// mlx5 flow matcher flow type: `ALL_DEFAULT`.
pub const MLX5_IB_FLOW_TYPE_ALL_DEFAULT: u32 = 2;
/// mlx5 flow matcher flow type: `MC_DEFAULT`.
pub const MLX5_IB_FLOW_TYPE_MC_DEFAULT: u32 = 3;

// enum mlx5_ib_create_flow_flags
/// mlx5 CREATE_FLOW flag: `DEFAULT_MISS`.
pub const MLX5_IB_ATTR_CREATE_FLOW_FLAGS_DEFAULT_MISS: u32 = 1 << 0;
/// mlx5 CREATE_FLOW flag: `DROP`.
pub const MLX5_IB_ATTR_CREATE_FLOW_FLAGS_DROP: u32 = 1 << 1;

// enum mlx5_ib_create_flow_attrs
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_CREATE_FLOW_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `MATCH_VALUE`.
pub const MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `DEST_QP`.
pub const MLX5_IB_ATTR_CREATE_FLOW_DEST_QP: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `DEST_DEVX`.
pub const MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX: u16 = 0x1003;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `MATCHER`.
pub const MLX5_IB_ATTR_CREATE_FLOW_MATCHER: u16 = 0x1004;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `ARR_FLOW_ACTIONS`.
pub const MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS: u16 = 0x1005;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `TAG`.
pub const MLX5_IB_ATTR_CREATE_FLOW_TAG: u16 = 0x1006;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `ARR_COUNTERS_DEVX`.
pub const MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX: u16 = 0x1007;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `ARR_COUNTERS_DEVX_OFFSET`.
pub const MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX_OFFSET: u16 = 0x1008;
/// Attribute id of `MLX5_IB_METHOD_CREATE_FLOW` (driver namespace): `FLAGS`.
pub const MLX5_IB_ATTR_CREATE_FLOW_FLAGS: u16 = 0x1009;

// enum mlx5_ib_destroy_flow_attrs
/// Attribute id of `MLX5_IB_METHOD_DESTROY_FLOW`: the flow handle.
pub const MLX5_IB_ATTR_DESTROY_FLOW_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_flow_methods
/// Method id of `UVERBS_OBJECT_FLOW` (driver namespace): `CREATE_FLOW`.
pub const MLX5_IB_METHOD_CREATE_FLOW: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `UVERBS_OBJECT_FLOW` (driver namespace): `DESTROY_FLOW`.
pub const MLX5_IB_METHOD_DESTROY_FLOW: u16 = 0x1001;

// enum mlx5_ib_flow_action_methods
/// Method id of `UVERBS_OBJECT_FLOW_ACTION` (driver namespace): `MODIFY_HEADER`.
pub const MLX5_IB_METHOD_FLOW_ACTION_CREATE_MODIFY_HEADER: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Method id of `UVERBS_OBJECT_FLOW_ACTION` (driver namespace): `PACKET_REFORMAT`.
pub const MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT: u16 = 0x1001;

// enum mlx5_ib_create_flow_action_create_modify_header_attrs
/// Attribute id of `MLX5_IB_METHOD_FLOW_ACTION_CREATE_MODIFY_HEADER` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_CREATE_MODIFY_HEADER_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_FLOW_ACTION_CREATE_MODIFY_HEADER` (driver namespace): `ACTIONS_PRM`.
pub const MLX5_IB_ATTR_CREATE_MODIFY_HEADER_ACTIONS_PRM: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_FLOW_ACTION_CREATE_MODIFY_HEADER` (driver namespace): `FT_TYPE`.
pub const MLX5_IB_ATTR_CREATE_MODIFY_HEADER_FT_TYPE: u16 = 0x1002;

// enum mlx5_ib_create_flow_action_create_packet_reformat_attrs
/// Attribute id of `MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT` (driver namespace): `TYPE`.
pub const MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_TYPE: u16 = 0x1001;
/// Attribute id of `MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT` (driver namespace): `FT_TYPE`.
pub const MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_FT_TYPE: u16 = 0x1002;
/// Attribute id of `MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT` (driver namespace): `DATA_BUF`.
pub const MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_DATA_BUF: u16 = 0x1003;

// enum mlx5_ib_query_pd_attrs
/// Attribute id of `MLX5_IB_METHOD_PD_QUERY` (driver namespace): `HANDLE`.
pub const MLX5_IB_ATTR_QUERY_PD_HANDLE: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_PD_QUERY` (driver namespace): `RESP_PDN`.
pub const MLX5_IB_ATTR_QUERY_PD_RESP_PDN: u16 = 0x1001;

// enum mlx5_ib_pd_methods
/// Method id of `UVERBS_OBJECT_PD` (driver namespace): query the PD number.
pub const MLX5_IB_METHOD_PD_QUERY: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_device_methods
/// Method id of `UVERBS_OBJECT_DEVICE` (driver namespace): mlx5 query port.
pub const MLX5_IB_METHOD_QUERY_PORT: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum mlx5_ib_query_port_attrs
/// Attribute id of `MLX5_IB_METHOD_QUERY_PORT` (driver namespace): `PORT_PORT_NUM`.
pub const MLX5_IB_ATTR_QUERY_PORT_PORT_NUM: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// Attribute id of `MLX5_IB_METHOD_QUERY_PORT` (driver namespace): `PORT`.
pub const MLX5_IB_ATTR_QUERY_PORT: u16 = 0x1001;

// enum mlx5_ib_uapi_flow_action_flags
/// mlx5 flow action flag: `REQUIRE_METADATA`.
pub const MLX5_IB_UAPI_FLOW_ACTION_FLAGS_REQUIRE_METADATA: u32 = 1 << 0;

// enum mlx5_ib_uapi_flow_table_type
/// mlx5 flow table type: `NIC_RX`.
pub const MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_RX: u32 = 0x0;
/// mlx5 flow table type: `NIC_TX`.
pub const MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_TX: u32 = 0x1;
/// mlx5 flow table type: `FDB`.
pub const MLX5_IB_UAPI_FLOW_TABLE_TYPE_FDB: u32 = 0x2;
/// mlx5 flow table type: `RDMA_RX`.
pub const MLX5_IB_UAPI_FLOW_TABLE_TYPE_RDMA_RX: u32 = 0x3;
/// mlx5 flow table type: `RDMA_TX`.
pub const MLX5_IB_UAPI_FLOW_TABLE_TYPE_RDMA_TX: u32 = 0x4;

// enum mlx5_ib_uapi_flow_action_packet_reformat_type
/// mlx5 packet reformat type: `L2_TUNNEL_TO_L2`.
pub const MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2: u32 = 0x0;
/// mlx5 packet reformat type: `L2_TO_L2_TUNNEL`.
pub const MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL: u32 = 0x1;
/// mlx5 packet reformat type: `L3_TUNNEL_TO_L2`.
pub const MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2: u32 = 0x2;
/// mlx5 packet reformat type: `L2_TO_L3_TUNNEL`.
pub const MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL: u32 = 0x3;

// enum mlx5_ib_uapi_dm_type
/// mlx5 device memory type (`MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE`): `MEMIC`.
pub const MLX5_IB_UAPI_DM_TYPE_MEMIC: u32 = 0;
/// mlx5 device memory type (`MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE`): `STEERING_SW_ICM`.
pub const MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM: u32 = 1;
/// mlx5 device memory type (`MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE`): `HEADER_MODIFY_SW_ICM`.
pub const MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_SW_ICM: u32 = 2;
/// mlx5 device memory type (`MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE`): `HEADER_MODIFY_PATTERN_SW_ICM`.
pub const MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM: u32 = 3;

// enum mlx5_ib_uapi_devx_create_event_channel_flags
/// mlx5 DEVX event channel flag: `CR_EV_CH_FLAGS_OMIT_DATA`.
pub const MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA: u32 = 1 << 0;

// enum mlx5_ib_uapi_pp_alloc_flags
/// mlx5 packet pacing allocation flag: `DEDICATED_INDEX`.
pub const MLX5_IB_UAPI_PP_ALLOC_FLAGS_DEDICATED_INDEX: u32 = 1 << 0;

// enum mlx5_ib_uapi_uar_alloc_type
/// mlx5 UAR allocation type (`MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE`): `BF`.
pub const MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF: u32 = 0x0;
/// mlx5 UAR allocation type (`MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE`): `NC`.
pub const MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC: u32 = 0x1;

// enum mlx5_ib_uapi_query_port_flags
/// mlx5 query port flag (`mlx5_ib_uapi_query_port.flags`): `VPORT`.
pub const MLX5_IB_UAPI_QUERY_PORT_VPORT: u64 = 1 << 0;
/// mlx5 query port flag (`mlx5_ib_uapi_query_port.flags`): `VPORT_VHCA_ID`.
pub const MLX5_IB_UAPI_QUERY_PORT_VPORT_VHCA_ID: u64 = 1 << 1;
/// mlx5 query port flag (`mlx5_ib_uapi_query_port.flags`): `VPORT_STEERING_ICM_RX`.
pub const MLX5_IB_UAPI_QUERY_PORT_VPORT_STEERING_ICM_RX: u64 = 1 << 2;
/// mlx5 query port flag (`mlx5_ib_uapi_query_port.flags`): `VPORT_STEERING_ICM_TX`.
pub const MLX5_IB_UAPI_QUERY_PORT_VPORT_STEERING_ICM_TX: u64 = 1 << 3;
/// mlx5 query port flag (`mlx5_ib_uapi_query_port.flags`): `VPORT_REG_C0`.
pub const MLX5_IB_UAPI_QUERY_PORT_VPORT_REG_C0: u64 = 1 << 4;
/// mlx5 query port flag (`mlx5_ib_uapi_query_port.flags`): `ESW_OWNER_VHCA_ID`.
pub const MLX5_IB_UAPI_QUERY_PORT_ESW_OWNER_VHCA_ID: u64 = 1 << 5;

/// mlx5 driver request of GET_CONTEXT, version 1 (8 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_alloc_ucontext_req {
    /// Requested total number of BlueFlame registers (static UAR mode).
    pub total_num_bfregs: u32,
    /// Requested number of low-latency (dedicated) BlueFlame registers.
    pub num_low_latency_bfregs: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_alloc_ucontext_req>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_alloc_ucontext_req>() == 4);

/// mlx5 driver request of GET_CONTEXT, version 2 (32 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_alloc_ucontext_req_v2 {
    /// Requested total number of BlueFlame registers (static UAR mode).
    pub total_num_bfregs: u32,
    /// Requested number of low-latency (dedicated) BlueFlame registers.
    pub num_low_latency_bfregs: u32,
    /// `MLX5_IB_ALLOC_UCTX_*`.
    pub flags: u32,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Highest CQE version the library supports.
    pub max_cqe_version: u8,
    /// Reserved; zero.
    pub reserved0: u8,
    /// Reserved; zero.
    pub reserved1: u16,
    /// Reserved; zero.
    pub reserved2: u32,
    /// Library capabilities (`MLX5_LIB_CAP_*`).
    pub lib_caps: u64,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_alloc_ucontext_req_v2>() == 32);
const _: () = assert!(core::mem::align_of::<mlx5_ib_alloc_ucontext_req_v2>() == 8);

/// mlx5 driver response of GET_CONTEXT (72 bytes in 6.1).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_alloc_ucontext_resp {
    /// QP table size.
    pub qp_tab_size: u32,
    /// BlueFlame register size in bytes.
    pub bf_reg_size: u32,
    /// Total static BlueFlame registers (0 in dynamic UAR mode).
    pub tot_bfregs: u32,
    /// CPU cache line size.
    pub cache_line_size: u32,
    /// Maximum send WQE size in bytes.
    pub max_sq_desc_sz: u16,
    /// Maximum receive WQE size in bytes.
    pub max_rq_desc_sz: u16,
    /// Maximum send WQE basic blocks per SQ.
    pub max_send_wqebb: u32,
    /// Maximum outstanding receive work requests.
    pub max_recv_wr: u32,
    /// Maximum receive work requests per SRQ.
    pub max_srq_recv_wr: u32,
    /// Number of ports.
    pub num_ports: u16,
    /// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_*`.
    pub flow_action_flags: u16,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// Negotiated CQE version.
    pub cqe_version: u8,
    /// Commands accepting driver data (`MLX5_USER_CMDS_SUPP_UHW_*`).
    pub cmds_supp_uhw: u8,
    /// Minimum Ethernet inline mode plus one (`MLX5_USER_INLINE_MODE_*`).
    pub eth_min_inline: u8,
    /// Supported clock-info page versions (bit `MLX5_IB_CLOCK_INFO_V1`).
    pub clock_info_versions: u8,
    /// mmap offset of the HCA core clock page.
    pub hca_core_clock_offset: u64,
    /// log2 of the UAR size.
    pub log_uar_size: u32,
    /// UARs per system page.
    pub num_uars_per_page: u32,
    /// Number of dynamic BlueFlame registers.
    pub num_dyn_bfregs: u32,
    /// Memory key that fills with a pattern.
    pub dump_fill_mkey: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_alloc_ucontext_resp>() == 72);
const _: () = assert!(core::mem::align_of::<mlx5_ib_alloc_ucontext_resp>() == 8);

/// mlx5 driver response of ALLOC_PD: the PD number.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_alloc_pd_resp {
    /// PD number.
    pub pdn: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_alloc_pd_resp>() == 4);
const _: () = assert!(core::mem::align_of::<mlx5_ib_alloc_pd_resp>() == 4);

/// mlx5 TSO (TCP segmentation offload) capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_tso_caps {
    /// Maximum tso payload size in bytes.
    pub max_tso: u32,
    /// Corresponding bit will be set if qp type from 'enum ib_qp_type' is supported, e.g. supported_qpts |= 1 << IB_QPT_UD.
    pub supported_qpts: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_tso_caps>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_tso_caps>() == 4);

/// mlx5 RSS hash capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_rss_caps {
    /// Enum mlx5_rx_hash_fields.
    pub rx_hash_fields_mask: u64,
    /// Enum mlx5_rx_hash_function_flags.
    pub rx_hash_function: u8,
    /// Reserved; zero.
    pub reserved: [u8; 7],
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_rss_caps>() == 16);
const _: () = assert!(core::mem::align_of::<mlx5_ib_rss_caps>() == 8);

/// mlx5 CQE compression capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_cqe_comp_caps {
    /// Maximum CQEs per compressed session.
    pub max_num: u32,
    /// Enum mlx5_ib_cqe_comp_res_format.
    pub supported_format: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_cqe_comp_caps>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_cqe_comp_caps>() == 4);

/// mlx5 packet pacing (rate limit) capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_packet_pacing_caps {
    /// Minimum rate limit in kbps.
    pub qp_rate_limit_min: u32,
    /// In kpbs.
    pub qp_rate_limit_max: u32,
    /// Corresponding bit will be set if qp type from 'enum ib_qp_type' is supported, e.g. supported_qpts |= 1 << IB_QPT_RAW_PACKET.
    pub supported_qpts: u32,
    /// Enum mlx5_ib_packet_pacing_cap_flags.
    pub cap_flags: u8,
    /// Reserved; zero.
    pub reserved: [u8; 3],
}

const _: () = assert!(core::mem::size_of::<mlx5_packet_pacing_caps>() == 16);
const _: () = assert!(core::mem::align_of::<mlx5_packet_pacing_caps>() == 4);

/// mlx5 software parsing offload capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_sw_parsing_caps {
    /// Enum mlx5_ib_sw_parsing_offloads.
    pub sw_parsing_offloads: u32,
    /// Corresponding bit will be set if qp type from 'enum ib_qp_type' is supported, e.g. supported_qpts |= 1 << IB_QPT_RAW_PACKET.
    pub supported_qpts: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_sw_parsing_caps>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_sw_parsing_caps>() == 4);

/// mlx5 striding (multi-packet) RQ capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_striding_rq_caps {
    /// Minimum log2 stride size in bytes.
    pub min_single_stride_log_num_of_bytes: u32,
    /// Maximum log2 stride size in bytes.
    pub max_single_stride_log_num_of_bytes: u32,
    /// Minimum log2 strides per WQE.
    pub min_single_wqe_log_num_of_strides: u32,
    /// Maximum log2 strides per WQE.
    pub max_single_wqe_log_num_of_strides: u32,
    /// Corresponding bit will be set if qp type from 'enum ib_qp_type' is supported, e.g. supported_qpts |= 1 << IB_QPT_RAW_PACKET.
    pub supported_qpts: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_striding_rq_caps>() == 24);
const _: () = assert!(core::mem::align_of::<mlx5_ib_striding_rq_caps>() == 4);

/// mlx5 DCI stream capabilities.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_dci_streams_caps {
    /// Maximum log2 of concurrent DCI streams.
    pub max_log_num_concurent: u8,
    /// Maximum log2 of errored DCI streams.
    pub max_log_num_errored: u8,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_dci_streams_caps>() == 2);

/// mlx5 driver response of EX_QUERY_DEVICE (104 bytes in 6.1; newer kernels append `reg_c0`).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_query_device_resp {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// TSO capabilities.
    pub tso_caps: mlx5_ib_tso_caps,
    /// RSS capabilities.
    pub rss_caps: mlx5_ib_rss_caps,
    /// CQE compression capabilities.
    pub cqe_comp_caps: mlx5_ib_cqe_comp_caps,
    /// Packet pacing capabilities.
    pub packet_pacing_caps: mlx5_packet_pacing_caps,
    /// Multi-packet send WQE support (`MLX5_IB_ALLOW_MPW`, `MLX5_IB_SUPPORT_EMPW`).
    pub mlx5_ib_support_multi_pkt_send_wqes: u32,
    /// Use enum mlx5_ib_query_dev_resp_flags.
    pub flags: u32,
    /// Software parsing capabilities.
    pub sw_parsing_caps: mlx5_ib_sw_parsing_caps,
    /// Striding RQ capabilities.
    pub striding_rq_caps: mlx5_ib_striding_rq_caps,
    /// Enum mlx5_ib_tunnel_offloads.
    pub tunnel_offloads_caps: u32,
    /// DCI stream capabilities.
    pub dci_streams_caps: mlx5_ib_dci_streams_caps,
    /// Reserved; zero.
    pub reserved: u16,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_query_device_resp>() == 104);
const _: () = assert!(core::mem::align_of::<mlx5_ib_query_device_resp>() == 8);

/// mlx5 driver request of CREATE_CQ: CQ buffer, doorbell record and CQE format (32 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_cq {
    /// User virtual address of the queue buffer.
    pub buf_addr: u64,
    /// User virtual address of the doorbell record.
    pub db_addr: u64,
    /// CQE size in bytes (64 or 128).
    pub cqe_size: u32,
    /// Enable CQE compression.
    pub cqe_comp_en: u8,
    /// CQE compression format (`MLX5_IB_CQE_RES_FORMAT_*`).
    pub cqe_comp_res_format: u8,
    /// `MLX5_IB_CREATE_CQ_FLAGS_*`.
    pub flags: u16,
    /// UAR page for the CQ doorbell (with `MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX`).
    pub uar_page_index: u16,
    /// Reserved; zero.
    pub reserved0: u16,
    /// Reserved; zero.
    pub reserved1: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_cq>() == 32);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_cq>() == 8);

/// mlx5 driver response of CREATE_CQ: the CQ number.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_cq_resp {
    /// CQ number.
    pub cqn: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_cq_resp>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_cq_resp>() == 4);

/// mlx5 driver request of RESIZE_CQ: the new CQ buffer.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_resize_cq {
    /// User virtual address of the queue buffer.
    pub buf_addr: u64,
    /// CQE size in bytes (64 or 128).
    pub cqe_size: u16,
    /// Reserved; zero.
    pub reserved0: u16,
    /// Reserved; zero.
    pub reserved1: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_resize_cq>() == 16);
const _: () = assert!(core::mem::align_of::<mlx5_ib_resize_cq>() == 8);

/// mlx5 driver request of CREATE_SRQ: SRQ buffer, doorbell record, user index (32 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_srq {
    /// User virtual address of the queue buffer.
    pub buf_addr: u64,
    /// User virtual address of the doorbell record.
    pub db_addr: u64,
    /// `MLX5_SRQ_FLAG_*`.
    pub flags: u32,
    /// Explicit padding (optional on i386).
    pub reserved0: u32,
    /// User index reported in CQEs (cqe_version 1), or `0xffffff`.
    pub uidx: u32,
    /// Reserved; zero.
    pub reserved1: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_srq>() == 32);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_srq>() == 8);

/// mlx5 driver response of CREATE_SRQ: the SRQ number.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_srq_resp {
    /// SRQ number.
    pub srqn: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_srq_resp>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_srq_resp>() == 4);

/// mlx5 DCI stream configuration in [`mlx5_ib_create_qp`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_qp_dci_streams {
    /// log2 of concurrent DCI streams.
    pub log_num_concurent: u8,
    /// log2 of errored DCI streams.
    pub log_num_errored: u8,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_qp_dci_streams>() == 2);

/// mlx5 driver request of CREATE_QP: WQ buffer, doorbell record, sizes, flags, user index, UAR (56 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_qp {
    /// User virtual address of the queue buffer.
    pub buf_addr: u64,
    /// User virtual address of the doorbell record.
    pub db_addr: u64,
    /// Number of SQ WQE basic blocks (64 bytes each).
    pub sq_wqe_count: u32,
    /// Number of RQ WQEs (power of two).
    pub rq_wqe_count: u32,
    /// log2 of the RQ WQE stride.
    pub rq_wqe_shift: u32,
    /// `MLX5_QP_FLAG_*`.
    pub flags: u32,
    /// User index reported in CQEs (cqe_version 1), or `0xffffff`.
    pub uidx: u32,
    /// BlueFlame register / UAR index of the QP's doorbell.
    pub bfreg_index: u32,
    /// C anonymous union `sq_buf_addr` / `access_key` (offset 40): separate SQ buffer (raw-packet QPs) or DCT access key. See [`mlx5_ib_create_qp::access_key`].
    pub sq_buf_addr: u64,
    /// Enhanced connection establishment options.
    pub ece_options: u32,
    /// DCI stream configuration.
    pub dci_streams: mlx5_ib_create_qp_dci_streams,
    /// Reserved; zero.
    pub reserved: u16,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_qp>() == 56);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_qp>() == 8);

/// mlx5 driver request of CREATE_QP for an RSS raw-packet QP (hash configuration).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct mlx5_ib_create_qp_rss {
    /// Enum mlx5_rx_hash_fields.
    pub rx_hash_fields_mask: u64,
    /// Enum mlx5_rx_hash_function_flags.
    pub rx_hash_function: u8,
    /// Valid only for Toeplitz.
    pub rx_key_len: u8,
    /// Reserved; zero.
    pub reserved: [u8; 6],
    /// Valid only for Toeplitz.
    pub rx_hash_key: [u8; 128],
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// `MLX5_QP_FLAG_*` (tunnel offloads, self-loopback).
    pub flags: u32,
}

impl Default for mlx5_ib_create_qp_rss {
    fn default() -> Self {
        FromZeros::new_zeroed()
    }
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_qp_rss>() == 152);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_qp_rss>() == 8);

/// mlx5 driver response of CREATE_QP (40 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_qp_resp {
    /// BlueFlame register / UAR index of the QP's doorbell.
    pub bfreg_index: u32,
    /// Enhanced connection establishment options.
    pub ece_options: u32,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// TIR number (raw-packet QPs).
    pub tirn: u32,
    /// TIS number (raw-packet QPs).
    pub tisn: u32,
    /// RQ number (raw-packet QPs).
    pub rqn: u32,
    /// SQ number (raw-packet QPs).
    pub sqn: u32,
    /// Reserved; zero.
    pub reserved1: u32,
    /// TIR ICM address (raw-packet QPs).
    pub tir_icm_addr: u64,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_qp_resp>() == 40);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_qp_resp>() == 8);

/// mlx5 driver request of ALLOC_MW.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_alloc_mw {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Number of KLM entries.
    pub num_klms: u8,
    /// Reserved; zero.
    pub reserved1: u8,
    /// Reserved; zero.
    pub reserved2: u16,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_alloc_mw>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_alloc_mw>() == 4);

/// mlx5 driver request of EX_CREATE_WQ.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_wq {
    /// User virtual address of the queue buffer.
    pub buf_addr: u64,
    /// User virtual address of the doorbell record.
    pub db_addr: u64,
    /// Number of RQ WQEs (power of two).
    pub rq_wqe_count: u32,
    /// log2 of the RQ WQE stride.
    pub rq_wqe_shift: u32,
    /// User index reported in CQEs.
    pub user_index: u32,
    /// `MLX5_WQ_FLAG_*`.
    pub flags: u32,
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// log2 stride size in bytes (striding RQ).
    pub single_stride_log_num_of_bytes: u32,
    /// log2 strides per WQE (striding RQ).
    pub single_wqe_log_num_of_strides: u32,
    /// Enable the two-byte shift (striding RQ).
    pub two_byte_shift_en: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_wq>() == 48);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_wq>() == 8);

/// mlx5 driver response of CREATE_AH: the resolved destination MAC (16 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_ah_resp {
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// Destination MAC address.
    pub dmac: [u8; 6],
    /// Reserved; zero.
    pub reserved: [u8; 6],
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_ah_resp>() == 16);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_ah_resp>() == 4);

/// mlx5 packet pacing burst parameters in [`mlx5_ib_modify_qp`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_burst_info {
    /// Maximum burst size in bytes.
    pub max_burst_sz: u32,
    /// Typical packet size in bytes.
    pub typical_pkt_sz: u16,
    /// Reserved; zero.
    pub reserved: u16,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_burst_info>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_burst_info>() == 4);

/// mlx5 driver request of EX_MODIFY_QP.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_modify_qp {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Packet pacing burst parameters.
    pub burst_info: mlx5_ib_burst_info,
    /// Enhanced connection establishment options.
    pub ece_options: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_modify_qp>() == 16);
const _: () = assert!(core::mem::align_of::<mlx5_ib_modify_qp>() == 4);

/// mlx5 driver response of EX_MODIFY_QP.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_modify_qp_resp {
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// DCT number.
    pub dctn: u32,
    /// Enhanced connection establishment options.
    pub ece_options: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_modify_qp_resp>() == 16);
const _: () = assert!(core::mem::align_of::<mlx5_ib_modify_qp_resp>() == 4);

/// mlx5 driver response of EX_CREATE_WQ.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_wq_resp {
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_wq_resp>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_wq_resp>() == 4);

/// mlx5 driver response of EX_CREATE_RWQ_IND_TBL.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_rwq_ind_tbl_resp {
    /// Number of response bytes the kernel actually filled in.
    pub response_length: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_rwq_ind_tbl_resp>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_rwq_ind_tbl_resp>() == 4);

/// mlx5 driver request of EX_MODIFY_WQ.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_modify_wq {
    /// Mask of valid optional/extension fields (0 if none).
    pub comp_mask: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_modify_wq>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_modify_wq>() == 4);

/// mlx5 clock-info page (mmap command `MLX5_IB_MMAP_CLOCK_INFO`) for converting HCA timestamps to ns.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_clock_info {
    /// Sequence counter; odd (`MLX5_IB_CLOCK_INFO_KERNEL_UPDATING`) while the kernel updates the page.
    pub sign: u32,
    /// Reserved.
    pub resv: u32,
    /// Nanoseconds at `cycles`.
    pub nsec: u64,
    /// HCA clock cycles at `nsec`.
    pub cycles: u64,
    /// Fractional nanoseconds.
    pub frac: u64,
    /// Cycles to ns multiplier.
    pub mult: u32,
    /// Cycles to ns shift.
    pub shift: u32,
    /// Match mask.
    pub mask: u64,
    /// Clock overflow period.
    pub overflow_period: u64,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_clock_info>() == 56);
const _: () = assert!(core::mem::align_of::<mlx5_ib_clock_info>() == 8);

/// mlx5 flow counter description entry.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_flow_counters_desc {
    /// Counter description.
    pub description: u32,
    /// Counter index.
    pub index: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_flow_counters_desc>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_flow_counters_desc>() == 4);

/// mlx5 flow counters binding in [`mlx5_ib_create_flow`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_flow_counters_data {
    /// User pointer to an array of [`mlx5_ib_flow_counters_desc`] (user pointer to `struct mlx5_ib_flow_counters_desc *`).
    pub counters_data: u64,
    /// Number of counters.
    pub ncounters: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_flow_counters_data>() == 16);
const _: () = assert!(core::mem::align_of::<mlx5_ib_flow_counters_data>() == 8);

/// mlx5 driver request of EX_CREATE_FLOW; counters data entries follow (C flexible array `data[]` omitted).
///
/// C flexible array member(s) omitted: `data` (at offset 8).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_create_flow {
    /// Number of counters data entries that follow.
    pub ncounters_data: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_create_flow>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_create_flow>() == 8);

/// mlx5 flow matcher match parameters (`MLX5_IB_DW_MATCH_PARAM` dwords).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct mlx5_ib_match_params {
    /// Match parameter dwords.
    pub match_params: [u32; 160],
}

impl Default for mlx5_ib_match_params {
    fn default() -> Self {
        FromZeros::new_zeroed()
    }
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_match_params>() == 640);
const _: () = assert!(core::mem::align_of::<mlx5_ib_match_params>() == 4);

/// Header of a DEVX async command completion read from the async cmd fd; output data follows (C flexible array `out_data[]` omitted).
///
/// C flexible array member(s) omitted: `out_data` (at offset 8).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_uapi_devx_async_cmd_hdr {
    /// User work request id, returned in the completion.
    pub wr_id: u64,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_uapi_devx_async_cmd_hdr>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_uapi_devx_async_cmd_hdr>() == 8);

/// Header of a DEVX event read from the async event fd; event data follows (C flexible array `out_data[]` omitted).
///
/// C flexible array member(s) omitted: `out_data` (at offset 8).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_uapi_devx_async_event_hdr {
    /// Cookie given at subscription.
    pub cookie: u64,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_uapi_devx_async_event_hdr>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_uapi_devx_async_event_hdr>() == 8);

/// mlx5 register value/mask pair.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_uapi_reg {
    /// Register value.
    pub value: u32,
    /// Register mask.
    pub mask: u32,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_uapi_reg>() == 8);
const _: () = assert!(core::mem::align_of::<mlx5_ib_uapi_reg>() == 4);

/// Response of the mlx5 QUERY_PORT driver method (vport information).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mlx5_ib_uapi_query_port {
    /// `MLX5_IB_UAPI_QUERY_PORT_*`: which of the following fields are valid.
    pub flags: u64,
    /// Vport number.
    pub vport: u16,
    /// Vport VHCA id.
    pub vport_vhca_id: u16,
    /// E-switch owner VHCA id.
    pub esw_owner_vhca_id: u16,
    /// Reserved; zero.
    pub rsvd0: u16,
    /// Vport RX steering ICM address.
    pub vport_steering_icm_rx: u64,
    /// Vport TX steering ICM address.
    pub vport_steering_icm_tx: u64,
    /// Metadata register C0 value/mask.
    pub reg_c0: mlx5_ib_uapi_reg,
}

const _: () = assert!(core::mem::size_of::<mlx5_ib_uapi_query_port>() == 40);
const _: () = assert!(core::mem::align_of::<mlx5_ib_uapi_query_port>() == 8);

impl mlx5_ib_create_qp {
    /// `access_key`: the other member of the anonymous union with `sq_buf_addr` (DCT access key).
    pub const fn access_key(&self) -> u64 {
        self.sq_buf_addr
    }

    /// Sets `access_key` (shares its storage with `sq_buf_addr`).
    pub fn set_access_key(&mut self, access_key: u64) {
        self.sq_buf_addr = access_key;
    }
}
