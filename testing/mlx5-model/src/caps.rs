//! What the model device is: the capabilities of a ConnectX-6 Dx on a 100 Gb/s RoCE port as
//! `mlx5_ib` reports them, less what this model does not do (memory windows, XRC, flow steering,
//! alternate paths, CQE compression), and the answers built from them
//! (`QUERY_DEVICE`, `QUERY_PORT`, `GET_CONTEXT`).

use uverbs_uapi as uapi;
use zerocopy::FromZeros;

use super::ModelConfig;

/// PCI vendor id (Mellanox).
pub(super) const VENDOR_ID: u32 = 0x02c9;
/// PCI device id of a ConnectX-6 Dx.
pub(super) const VENDOR_PART_ID: u32 = 4125;
/// Firmware 22.36.1010.
pub(super) const FW_VER: u64 = (22 << 32) | (36 << 16) | 1010;
/// The firmware version as sysfs prints it.
pub(super) const FW_VER_TEXT: &str = "22.36.1010";
/// sysfs `hca_type`.
pub(super) const HCA_TYPE: &str = "MT4125";
/// The PCI device id of a ConnectX-6 Dx (what libmlx5's `hca_table` matches).
pub(super) const PCI_DEVICE_ID: u32 = 0x101d;
/// sysfs `board_id`.
pub(super) const BOARD_ID: &str = "MT_0000000359";
/// sysfs `ports/1/rate`.
pub(super) const RATE_TEXT: &str = "100 Gb/sec (4X EDR)";

/// `log_max_qp`.
pub(super) const LOG_MAX_QP: u32 = 17;
/// `log_max_qp_sz`: WQEs (basic blocks) of a queue.
pub(super) const LOG_MAX_QP_SZ: u32 = 15;
/// `log_max_srq_sz`.
pub(super) const LOG_MAX_SRQ_SZ: u32 = 15;
/// `log_max_cq_sz`.
pub(super) const LOG_MAX_CQ_SZ: u32 = 22;
/// `max_wqe_sz_sq`.
pub(super) const MAX_WQE_SZ_SQ: u32 = 512;
/// `max_wqe_sz_rq`.
pub(super) const MAX_WQE_SZ_RQ: u32 = 512;
/// `1 << log_max_ra_res_qp` = `1 << log_max_ra_req_qp`.
pub(super) const MAX_RD_ATOMIC: u32 = 16;
/// `1 << log_bf_reg_size`.
pub(super) const BF_REG_SIZE: u32 = 512;
/// The port's GID table length (`roce_address_table_size`) of a ConnectX, unless more GIDs are
/// configured ([`gid_tbl_len`]).
pub(super) const GID_TBL_LEN: u32 = 255;
/// The most GIDs a model's port takes: more than the 2047 one `QUERY_GID_TABLE` attribute can
/// return (its length is 16 bits), so that a driver's handling of a long table can be tested.
pub(super) const MAX_GID_TBL_LEN: u32 = 4096;

/// The port's GID table length: a ConnectX's, or as many entries as are configured beyond it.
pub(super) fn gid_tbl_len(cfg: &ModelConfig) -> u32 {
    GID_TBL_LEN.max(u32::try_from(cfg.gids.len()).unwrap_or(u32::MAX))
}
/// P_Key table length of the device (`max_pkeys`).
pub(super) const MAX_PKEYS: u16 = 128;
/// `IB_PORT_CM_SUP | IB_UVERBS_PCF_IP_BASED_GIDS`.
pub(super) const PORT_CAP_FLAGS: u32 =
    uapi::IB_UVERBS_PCF_CM_SUP | uapi::IB_UVERBS_PCF_IP_BASED_GIDS;
/// `IB_DEVICE_BAD_PKEY_CNTR | BAD_QKEY_CNTR | CHANGE_PHY_PORT | PORT_ACTIVE_EVENT |
/// SYS_IMAGE_GUID | RC_RNR_NAK_GEN`: a ConnectX-6 Dx's flags without memory windows, XRC,
/// automatic path migration, memory management extensions, UD checksum offload and flow steering.
pub(super) const DEVICE_CAP_FLAGS: u64 = uapi::IB_UVERBS_DEVICE_BAD_PKEY_CNTR
    | uapi::IB_UVERBS_DEVICE_BAD_QKEY_CNTR
    | uapi::IB_UVERBS_DEVICE_CHANGE_PHY_PORT
    | uapi::IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT
    | uapi::IB_UVERBS_DEVICE_SYS_IMAGE_GUID
    | uapi::IB_UVERBS_DEVICE_RC_RNR_NAK_GEN;
/// `IB_LINK_LAYER_ETHERNET`.
pub(super) const LINK_LAYER_ETHERNET: u8 = 2;
/// `IB_WIDTH_4X`.
pub(super) const WIDTH_4X: u8 = 2;
/// `IB_SPEED_EDR` (25 Gb/s a lane).
pub(super) const SPEED_EDR: u8 = 32;
/// `IB_MTU_4096`.
pub(super) const MTU_4096: u8 = 5;
/// `IB_PORT_ACTIVE`, `IB_PORT_DOWN`.
pub(super) const PORT_ACTIVE: u8 = 4;
/// `IB_PORT_DOWN`.
pub(super) const PORT_DOWN: u8 = 1;
/// `IB_PORT_PHYS_STATE_LINK_UP`, `_DISABLED`.
pub(super) const PHYS_LINK_UP: u8 = 5;
/// `IB_PORT_PHYS_STATE_DISABLED`.
pub(super) const PHYS_DISABLED: u8 = 3;
/// `eth_min_inline`: the core's `MLX5_INLINE_MODE_NONE` (a ConnectX-5 and later need no headers
/// inline on Ethernet) plus one, which is `MLX5_USER_INLINE_MODE_NONE`.
pub(super) const ETH_MIN_INLINE: u8 = uapi::MLX5_USER_INLINE_MODE_NONE;
/// The free-running clock, in kHz.
pub(super) const HCA_CORE_CLOCK_KHZ: u64 = 1_000_000;

/// `ib_uverbs_query_device_resp` as `copy_query_dev_fields` fills it for this device.
pub(super) fn device_attr(cfg: &ModelConfig) -> uapi::ib_uverbs_query_device_resp {
    let mut r = uapi::ib_uverbs_query_device_resp::new_zeroed();
    let max_qp = 1u32 << LOG_MAX_QP;
    r.fw_ver = FW_VER;
    r.node_guid = cfg.node_guid.to_be();
    r.sys_image_guid = cfg.node_guid.to_be();
    r.max_mr_size = u64::MAX;
    r.page_size_cap = !0xfffu64;
    r.vendor_id = VENDOR_ID;
    r.vendor_part_id = VENDOR_PART_ID;
    r.hw_ver = 0;
    r.max_qp = max_qp;
    r.max_qp_wr = 1 << LOG_MAX_QP_SZ;
    r.device_cap_flags = DEVICE_CAP_FLAGS as u32;
    // min(max_wqe_sz_sq, 512) less the control and remote address segments, in data segments;
    // the receive side allows 32.
    r.max_sge = (MAX_WQE_SZ_SQ.min(512) - 16 - 16) / 16;
    r.max_sge_rd = (512 - 16 - 16) / 16;
    r.max_cq = 1 << 24;
    r.max_cqe = (1 << LOG_MAX_CQ_SZ) - 1;
    r.max_mr = 1 << 24;
    r.max_pd = 1 << 23;
    r.max_qp_rd_atom = MAX_RD_ATOMIC;
    r.max_qp_init_rd_atom = MAX_RD_ATOMIC;
    r.max_res_rd_atom = MAX_RD_ATOMIC * max_qp;
    r.atomic_cap = 1; // IB_ATOMIC_HCA
    r.max_mw = 0;
    r.max_mcast_grp = 1 << 21;
    r.max_mcast_qp_attach = 240;
    r.max_total_mcast_qp_attach = 240 << 21;
    r.max_ah = i32::MAX as u32;
    r.max_srq = 1 << 23;
    r.max_srq_wr = (1 << LOG_MAX_SRQ_SZ) - 1;
    r.max_srq_sge = MAX_WQE_SZ_RQ / 16 - 1;
    r.max_pkeys = MAX_PKEYS;
    r.local_ca_ack_delay = 16;
    r.phys_port_cnt = 1;
    r
}

/// `ib_uverbs_ex_query_device_resp` of `ib_uverbs_ex_query_device` (without `response_length`).
pub(super) fn device_attr_ex(cfg: &ModelConfig) -> uapi::ib_uverbs_ex_query_device_resp {
    let mut r = uapi::ib_uverbs_ex_query_device_resp::new_zeroed();
    r.base = device_attr(cfg);
    r.timestamp_mask = (1u64 << 63) - 1;
    r.hca_core_clock = HCA_CORE_CLOCK_KHZ;
    r.device_cap_flags_ex = DEVICE_CAP_FLAGS;
    // On-demand paging as mlx5_ib reports a ConnectX's (`mlx5_ib_internal_fill_odp_caps`): RC
    // all of it, UD sends and SRQ receives; implicit regions. No XRC (the model has no XRC).
    use uapi::ib_verbs::*;
    r.odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
    r.odp_caps.per_transport_caps.rc_odp_caps = IB_ODP_SUPPORT_SEND
        | IB_ODP_SUPPORT_RECV
        | IB_ODP_SUPPORT_WRITE
        | IB_ODP_SUPPORT_READ
        | IB_ODP_SUPPORT_ATOMIC
        | IB_ODP_SUPPORT_SRQ_RECV;
    r.odp_caps.per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_SRQ_RECV;
    // CQ moderation as `mlx5_ib_query_device` reports it for an HCA with `cq_moderation`:
    // `MLX5_MAX_CQ_COUNT` and `MLX5_MAX_CQ_PERIOD`, the CQ context's 16- and 12-bit fields (what
    // `EX_MODIFY_CQ` accepts, `objects/cq.rs`).
    r.cq_moderation_caps.max_cq_moderation_count = u16::MAX;
    r.cq_moderation_caps.max_cq_moderation_period = (1 << 12) - 1;
    r
}

/// `ib_uverbs_query_port_resp` as `copy_port_attr_to_resp` fills it from `mlx5_query_port_roce`.
pub(super) fn port_attr(cfg: &ModelConfig, active: bool) -> uapi::ib_uverbs_query_port_resp {
    let mut r = uapi::ib_uverbs_query_port_resp::new_zeroed();
    r.port_cap_flags = PORT_CAP_FLAGS;
    r.max_msg_sz = 1 << 30;
    r.gid_tbl_len = gid_tbl_len(cfg);
    r.pkey_tbl_len = 1;
    r.max_mtu = MTU_4096;
    if active {
        r.state = PORT_ACTIVE;
        r.phys_state = PHYS_LINK_UP;
    } else {
        r.state = PORT_DOWN;
        r.phys_state = PHYS_DISABLED;
    }
    r.active_mtu = cfg.active_mtu().min(MTU_4096);
    r.active_width = WIDTH_4X;
    r.active_speed = SPEED_EDR;
    r.link_layer = LINK_LAYER_ETHERNET;
    r.flags = uapi::IB_UVERBS_QPF_GRH_REQUIRED;
    r
}

/// The fixed part of `mlx5_ib_alloc_ucontext_resp` (`set_ucontext_resp`).
pub(super) fn ucontext_resp() -> uapi::mlx5_ib_alloc_ucontext_resp {
    let mut r = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
    r.qp_tab_size = 1 << LOG_MAX_QP;
    r.bf_reg_size = BF_REG_SIZE;
    r.cache_line_size = 64;
    r.max_sq_desc_sz = MAX_WQE_SZ_SQ as u16;
    r.max_rq_desc_sz = MAX_WQE_SZ_RQ as u16;
    r.max_send_wqebb = 1 << LOG_MAX_QP_SZ;
    r.max_recv_wr = 1 << LOG_MAX_QP_SZ;
    r.max_srq_recv_wr = 1 << LOG_MAX_SRQ_SZ;
    r.clock_info_versions = 1 << uapi::MLX5_IB_CLOCK_INFO_V1;
    r.num_ports = 1;
    r.cmds_supp_uhw =
        uapi::MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE | uapi::MLX5_USER_CMDS_SUPP_UHW_CREATE_AH;
    r.eth_min_inline = ETH_MIN_INLINE;
    r.log_uar_size = 12;
    r
}

/// The `mlx5_ib_query_device_resp` of `EX_QUERY_DEVICE` with driver data: no TSO, RSS, CQE
/// compression, packet pacing, multi-packet WQEs, software parsing, striding RQ, tunnel offloads
/// or DC on this model.
pub(super) fn mlx5_query_device_resp() -> uapi::mlx5_ib_query_device_resp {
    uapi::mlx5_ib_query_device_resp::new_zeroed()
}
