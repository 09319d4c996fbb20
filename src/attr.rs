//! Device, port and GID attributes with readable accessors.
//!
//! Each type wraps the kernel's answer (available whole through `raw()`), and decodes its fields into
//! enums and flags. Enums keep values they do not know (`Unknown(n)`), so a newer kernel never turns
//! into an error or a wrong name.

use std::fmt;

use bitflags::bitflags;
use uverbs_drivers::uapi;
use uverbs_drivers::ucontext::{port_active_speed_ex, DeviceAttrs};

use crate::device::Guid;
use crate::ibv::ibv_gid_type;
pub use uverbs_drivers::gid::Gid;

/// Defines a `#[repr]`-less enum over a raw integer with an `Unknown` variant for other values.
macro_rules! enum_with_unknown {
    (
        $(#[$meta:meta])*
        pub enum $name:ident($ty:ty) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this version of uverbs does not know.
            Unknown($ty),
        }

        impl From<$ty> for $name {
            fn from(v: $ty) -> $name {
                match v {
                    $( x if x == $value => $name::$variant, )+
                    other => $name::Unknown(other),
                }
            }
        }

        impl From<$name> for $ty {
            fn from(v: $name) -> $ty {
                match v {
                    $( $name::$variant => $value, )+
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}

enum_with_unknown! {
    /// The logical state of a port (`enum ibv_port_state`).
    pub enum PortState(u8) {
        /// No state change.
        Nop = 0,
        /// Down.
        Down = 1,
        /// Initializing: link up, not yet configured by the subnet manager.
        Init = 2,
        /// Armed: configured, waiting to become active.
        Armed = 3,
        /// Active: can send and receive.
        Active = 4,
        /// Active, deferring.
        ActiveDefer = 5,
    }
}

impl PortState {
    /// The name `ibv_devinfo` prints for it ("PORT_ACTIVE"). (rdma-core's `ibv_port_state_str`
    /// says "active": [`PortState::verbs_str`].)
    pub fn as_str(self) -> &'static str {
        match self {
            PortState::Nop => "PORT_NOP",
            PortState::Down => "PORT_DOWN",
            PortState::Init => "PORT_INIT",
            PortState::Armed => "PORT_ARMED",
            PortState::Active => "PORT_ACTIVE",
            PortState::ActiveDefer => "PORT_ACTIVE_DEFER",
            PortState::Unknown(_) => "invalid state",
        }
    }

    /// The name rdma-core's `ibv_port_state_str` gives it ("active"; "unknown" for a value this
    /// crate does not know).
    pub fn verbs_str(self) -> &'static str {
        match self {
            PortState::Nop => "no state change (NOP)",
            PortState::Down => "down",
            PortState::Init => "init",
            PortState::Armed => "armed",
            PortState::Active => "active",
            PortState::ActiveDefer => "active defer",
            PortState::Unknown(_) => "unknown",
        }
    }
}

enum_with_unknown! {
    /// A path MTU (`enum ibv_mtu`).
    pub enum Mtu(u8) {
        /// 256 bytes.
        Mtu256 = 1,
        /// 512 bytes.
        Mtu512 = 2,
        /// 1024 bytes.
        Mtu1024 = 3,
        /// 2048 bytes.
        Mtu2048 = 4,
        /// 4096 bytes.
        Mtu4096 = 5,
    }
}

impl Mtu {
    /// The MTU in bytes, if it is a valid one.
    pub fn bytes(self) -> Option<u32> {
        match self {
            Mtu::Unknown(_) => None,
            known => Some(128 << u8::from(known)),
        }
    }

    /// The enum value for a size in bytes.
    pub fn from_bytes(bytes: u32) -> Option<Mtu> {
        match bytes {
            256 => Some(Mtu::Mtu256),
            512 => Some(Mtu::Mtu512),
            1024 => Some(Mtu::Mtu1024),
            2048 => Some(Mtu::Mtu2048),
            4096 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }
}

enum_with_unknown! {
    /// The link layer of a port.
    pub enum LinkLayer(u8) {
        /// Not reported (treated as InfiniBand).
        Unspecified = 0,
        /// InfiniBand.
        InfiniBand = 1,
        /// Ethernet (RoCE).
        Ethernet = 2,
    }
}

enum_with_unknown! {
    /// The active link width of a port.
    pub enum Width(u8) {
        /// 1 lane.
        X1 = 1,
        /// 4 lanes.
        X4 = 2,
        /// 8 lanes.
        X8 = 4,
        /// 12 lanes.
        X12 = 8,
        /// 2 lanes.
        X2 = 16,
    }
}

impl Width {
    /// The number of lanes.
    pub fn lanes(self) -> Option<u32> {
        match self {
            Width::X1 => Some(1),
            Width::X2 => Some(2),
            Width::X4 => Some(4),
            Width::X8 => Some(8),
            Width::X12 => Some(12),
            Width::Unknown(_) => None,
        }
    }
}

enum_with_unknown! {
    /// The active per-lane speed of a port (`active_speed`, or `active_speed_ex` where the kernel
    /// reports it).
    pub enum Speed(u32) {
        /// SDR, 2.5 Gb/s.
        Sdr = 1,
        /// DDR, 5 Gb/s.
        Ddr = 2,
        /// QDR, 10 Gb/s.
        Qdr = 4,
        /// FDR10, 10.3125 Gb/s.
        Fdr10 = 8,
        /// FDR, 14 Gb/s.
        Fdr = 16,
        /// EDR, 25 Gb/s.
        Edr = 32,
        /// HDR, 50 Gb/s.
        Hdr = 64,
        /// NDR, 100 Gb/s.
        Ndr = 128,
        /// XDR, 200 Gb/s.
        Xdr = 256,
    }
}

enum_with_unknown! {
    /// The physical state of a port.
    pub enum PhysState(u8) {
        /// Sleeping.
        Sleep = 1,
        /// Polling for a peer.
        Polling = 2,
        /// Disabled.
        Disabled = 3,
        /// Port configuration training.
        PortConfigurationTraining = 4,
        /// Link up.
        LinkUp = 5,
        /// Link error recovery.
        LinkErrorRecovery = 6,
        /// PHY test.
        PhyTest = 7,
    }
}

enum_with_unknown! {
    /// What atomic operations the device guarantees (`enum ibv_atomic_cap`).
    pub enum AtomicCap(u32) {
        /// No atomics.
        None = 0,
        /// Atomic with respect to this HCA's own operations.
        Hca = 1,
        /// Atomic with respect to everything, CPU included.
        Glob = 2,
    }
}

enum_with_unknown! {
    /// The kind of a GID table entry (`enum ibv_gid_type`).
    pub enum GidType(u32) {
        /// InfiniBand.
        Ib = uapi::IB_UVERBS_GID_TYPE_IB,
        /// RoCE v1 (Ethernet, EtherType 0x8915).
        RoceV1 = uapi::IB_UVERBS_GID_TYPE_ROCE_V1,
        /// RoCE v2 (UDP/IP, port 4791).
        RoceV2 = uapi::IB_UVERBS_GID_TYPE_ROCE_V2,
    }
}

enum_with_unknown! {
    /// The kind of node a device is (sysfs `node_type`, `enum rdma_node_type`).
    pub enum NodeType(u32) {
        /// A channel adapter (InfiniBand or RoCE HCA).
        Ca = 1,
        /// A switch.
        Switch = 2,
        /// A router.
        Router = 3,
        /// An iWARP RNIC.
        Rnic = 4,
        /// A usNIC.
        Usnic = 5,
        /// A usNIC over UDP.
        UsnicUdp = 6,
        /// Unspecified.
        Unspecified = 7,
    }
}

impl NodeType {
    /// The name rdma-core's `ibv_node_type_str` gives it ("InfiniBand channel adapter", "iWARP
    /// NIC"; "unknown" for a value this crate does not know). Also what `Display` writes.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::Ca => "InfiniBand channel adapter",
            NodeType::Switch => "InfiniBand switch",
            NodeType::Router => "InfiniBand router",
            NodeType::Rnic => "iWARP NIC",
            NodeType::Usnic => "usNIC",
            NodeType::UsnicUdp => "usNIC UDP",
            NodeType::Unspecified => "unspecified",
            NodeType::Unknown(_) => "unknown",
        }
    }
}

impl fmt::Display for NodeType {
    /// [`NodeType::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// On-demand paging capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OdpCaps {
    /// `IBV_ODP_SUPPORT*` bits.
    pub general_caps: u64,
    /// RC transport capabilities (`IBV_ODP_SUPPORT_SEND` ...).
    pub rc_caps: u32,
    /// UC transport capabilities.
    pub uc_caps: u32,
    /// UD transport capabilities.
    pub ud_caps: u32,
    /// XRC transport capabilities.
    pub xrc_caps: u32,
}

bitflags! {
    /// Device capability flags (`enum ibv_device_cap_flags`, the low 32 bits of the kernel's
    /// `device_cap_flags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct DeviceCapFlags: u64 {
        /// Resizing a QP's queues.
        const RESIZE_MAX_WR = 1;
        /// Bad P_Key counter.
        const BAD_PKEY_CNTR = 1 << 1;
        /// Bad Q_Key counter.
        const BAD_QKEY_CNTR = 1 << 2;
        /// Raw multicast.
        const RAW_MULTI = 1 << 3;
        /// Automatic path migration.
        const AUTO_PATH_MIG = 1 << 4;
        /// Changing the physical port of a QP.
        const CHANGE_PHY_PORT = 1 << 5;
        /// UD address vector port check.
        const UD_AV_PORT_ENFORCE = 1 << 6;
        /// Current QP state modifier.
        const CURR_QP_STATE_MOD = 1 << 7;
        /// Shutting down a port.
        const SHUTDOWN_PORT = 1 << 8;
        /// Initialising type.
        const INIT_TYPE = 1 << 9;
        /// Port active event.
        const PORT_ACTIVE_EVENT = 1 << 10;
        /// System image GUID.
        const SYS_IMAGE_GUID = 1 << 11;
        /// RC RNR NAK generation.
        const RC_RNR_NAK_GEN = 1 << 12;
        /// SRQ resizing.
        const SRQ_RESIZE = 1 << 13;
        /// N notify CQ.
        const N_NOTIFY_CQ = 1 << 14;
        /// Memory windows.
        const MEM_WINDOW = 1 << 17;
        /// UD IP checksum offload.
        const UD_IP_CSUM = 1 << 18;
        /// XRC.
        const XRC = 1 << 20;
        /// Memory management extensions.
        const MEM_MGT_EXTENSIONS = 1 << 21;
        /// Type 2A memory windows.
        const MEM_WINDOW_TYPE_2A = 1 << 23;
        /// Type 2B memory windows.
        const MEM_WINDOW_TYPE_2B = 1 << 24;
        /// RC IP checksum offload.
        const RC_IP_CSUM = 1 << 25;
        /// Raw IP checksum offload.
        const RAW_IP_CSUM = 1 << 26;
        /// Managed flow steering.
        const MANAGED_FLOW_STEERING = 1 << 29;
        /// Raw packet scatter FCS.
        const RAW_SCATTER_FCS = 1 << 34;
        /// PCI write end padding.
        const PCI_WRITE_END_PADDING = 1 << 36;
        /// Any other bit.
        const _ = !0;
    }
}

bitflags! {
    /// Port capability flags (`enum ibv_port_cap_flags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct PortCapFlags: u32 {
        /// Subnet manager.
        const SM = 1 << 1;
        /// Notice support.
        const NOTICE_SUP = 1 << 2;
        /// Trap support.
        const TRAP_SUP = 1 << 3;
        /// Optional IP/GID support.
        const OPT_IPD_SUP = 1 << 4;
        /// Automatic path migration.
        const AUTO_MIGR_SUP = 1 << 5;
        /// SL to VL mapping.
        const SL_MAP_SUP = 1 << 6;
        /// M_Key NVRAM.
        const MKEY_NVRAM = 1 << 7;
        /// P_Key NVRAM.
        const PKEY_NVRAM = 1 << 8;
        /// LED info.
        const LED_INFO_SUP = 1 << 9;
        /// System image GUID.
        const SYS_IMAGE_GUID_SUP = 1 << 11;
        /// P_Key switch external port trap.
        const PKEY_SW_EXT_PORT_TRAP_SUP = 1 << 12;
        /// Extended speeds.
        const EXTENDED_SPEEDS_SUP = 1 << 14;
        /// Capability mask 2.
        const CAP_MASK2_SUP = 1 << 15;
        /// Communication manager.
        const CM_SUP = 1 << 16;
        /// SNMP tunneling.
        const SNMP_TUNNEL_SUP = 1 << 17;
        /// Reinit.
        const REINIT_SUP = 1 << 18;
        /// Device management.
        const DEVICE_MGMT_SUP = 1 << 19;
        /// Vendor class.
        const VENDOR_CLASS_SUP = 1 << 20;
        /// DR notice.
        const DR_NOTICE_SUP = 1 << 21;
        /// Capability mask notice.
        const CAP_MASK_NOTICE_SUP = 1 << 22;
        /// Boot management.
        const BOOT_MGMT_SUP = 1 << 23;
        /// Link latency.
        const LINK_LATENCY_SUP = 1 << 24;
        /// Client reregistration.
        const CLIENT_REG_SUP = 1 << 25;
        /// IP-based GIDs (RoCE).
        const IP_BASED_GIDS = 1 << 26;
        /// Any other bit.
        const _ = !0;
    }
}

/// A device's attributes (`ibv_device_attr_ex`).
#[derive(Clone)]
pub struct DeviceAttr {
    raw: uapi::ib_uverbs_ex_query_device_resp,
    extended: bool,
    fw_ver: String,
}

impl DeviceAttr {
    pub(crate) fn new(a: DeviceAttrs, fw_ver: String) -> DeviceAttr {
        DeviceAttr {
            raw: a.resp,
            extended: a.extended,
            fw_ver,
        }
    }

    /// The kernel's answer, whole.
    pub fn raw(&self) -> &uapi::ib_uverbs_ex_query_device_resp {
        &self.raw
    }

    /// Whether the extended attributes (after [`DeviceAttr::raw`]`.base`) were reported.
    pub fn is_extended(&self) -> bool {
        self.extended
    }

    fn base(&self) -> &uapi::ib_uverbs_query_device_resp {
        &self.raw.base
    }

    /// The firmware version, formatted as the driver's rdma-core provider does.
    pub fn fw_ver(&self) -> &str {
        &self.fw_ver
    }

    /// The node GUID.
    pub fn node_guid(&self) -> Guid {
        Guid::from_be(self.base().node_guid)
    }

    /// The system image GUID.
    pub fn sys_image_guid(&self) -> Guid {
        Guid::from_be(self.base().sys_image_guid)
    }

    /// The largest memory region, in bytes.
    pub fn max_mr_size(&self) -> u64 {
        self.base().max_mr_size
    }

    /// Supported page sizes (a bit per power of two).
    pub fn page_size_cap(&self) -> u64 {
        self.base().page_size_cap
    }

    /// The IEEE vendor id.
    pub fn vendor_id(&self) -> u32 {
        self.base().vendor_id
    }

    /// The vendor's part id.
    pub fn vendor_part_id(&self) -> u32 {
        self.base().vendor_part_id
    }

    /// The hardware version.
    pub fn hw_ver(&self) -> u32 {
        self.base().hw_ver
    }

    /// Maximum number of QPs.
    pub fn max_qp(&self) -> u32 {
        self.base().max_qp
    }

    /// Maximum work requests per queue.
    pub fn max_qp_wr(&self) -> u32 {
        self.base().max_qp_wr
    }

    /// Capability flags: the base 32 bits, or the extended 64 where reported.
    pub fn device_cap_flags(&self) -> DeviceCapFlags {
        let ex = if self.extended {
            self.raw.device_cap_flags_ex
        } else {
            0
        };
        DeviceCapFlags::from_bits_retain(u64::from(self.base().device_cap_flags) | ex)
    }

    /// Maximum scatter/gather entries per work request.
    pub fn max_sge(&self) -> u32 {
        self.base().max_sge
    }

    /// Maximum scatter/gather entries per RDMA read.
    pub fn max_sge_rd(&self) -> u32 {
        self.base().max_sge_rd
    }

    /// Maximum number of CQs.
    pub fn max_cq(&self) -> u32 {
        self.base().max_cq
    }

    /// Maximum entries per CQ.
    pub fn max_cqe(&self) -> u32 {
        self.base().max_cqe
    }

    /// Maximum number of memory regions.
    pub fn max_mr(&self) -> u32 {
        self.base().max_mr
    }

    /// Maximum number of protection domains.
    pub fn max_pd(&self) -> u32 {
        self.base().max_pd
    }

    /// Maximum outstanding RDMA reads/atomics a QP can be the target of.
    pub fn max_qp_rd_atom(&self) -> u32 {
        self.base().max_qp_rd_atom
    }

    /// Maximum outstanding RDMA reads/atomics a QP can initiate.
    pub fn max_qp_init_rd_atom(&self) -> u32 {
        self.base().max_qp_init_rd_atom
    }

    /// Atomic guarantees.
    pub fn atomic_cap(&self) -> AtomicCap {
        AtomicCap::from(self.base().atomic_cap)
    }

    /// Maximum number of memory windows.
    pub fn max_mw(&self) -> u32 {
        self.base().max_mw
    }

    /// Maximum number of multicast groups.
    pub fn max_mcast_grp(&self) -> u32 {
        self.base().max_mcast_grp
    }

    /// Maximum QPs per multicast group.
    pub fn max_mcast_qp_attach(&self) -> u32 {
        self.base().max_mcast_qp_attach
    }

    /// Maximum number of address handles.
    pub fn max_ah(&self) -> u32 {
        self.base().max_ah
    }

    /// Maximum number of SRQs.
    pub fn max_srq(&self) -> u32 {
        self.base().max_srq
    }

    /// Maximum work requests per SRQ.
    pub fn max_srq_wr(&self) -> u32 {
        self.base().max_srq_wr
    }

    /// Maximum scatter entries per SRQ work request.
    pub fn max_srq_sge(&self) -> u32 {
        self.base().max_srq_sge
    }

    /// Maximum partition keys.
    pub fn max_pkeys(&self) -> u16 {
        self.base().max_pkeys
    }

    /// Local CA ACK delay.
    pub fn local_ca_ack_delay(&self) -> u8 {
        self.base().local_ca_ack_delay
    }

    /// Number of physical ports.
    pub fn phys_port_cnt(&self) -> u8 {
        self.base().phys_port_cnt
    }

    /// On-demand paging capabilities (extended attributes; zero when not reported).
    pub fn odp_caps(&self) -> OdpCaps {
        let o = &self.raw.odp_caps;
        OdpCaps {
            general_caps: o.general_caps,
            rc_caps: o.per_transport_caps.rc_odp_caps,
            uc_caps: o.per_transport_caps.uc_odp_caps,
            ud_caps: o.per_transport_caps.ud_odp_caps,
            xrc_caps: self.raw.xrc_odp_caps,
        }
    }

    /// The mask of valid completion timestamp bits (0: no timestamps).
    pub fn completion_timestamp_mask(&self) -> u64 {
        self.raw.timestamp_mask
    }

    /// The HCA core clock in kHz (extended attributes; 0 when not reported).
    pub fn hca_core_clock(&self) -> u64 {
        self.raw.hca_core_clock
    }
}

impl fmt::Debug for DeviceAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceAttr")
            .field("fw_ver", &self.fw_ver)
            .field("node_guid", &self.node_guid())
            .field("vendor_id", &self.vendor_id())
            .field("vendor_part_id", &self.vendor_part_id())
            .field("max_qp", &self.max_qp())
            .field("max_cq", &self.max_cq())
            .field("max_mr", &self.max_mr())
            .field("phys_port_cnt", &self.phys_port_cnt())
            .finish_non_exhaustive()
    }
}

/// A port's attributes (`ibv_port_attr`).
#[derive(Clone)]
pub struct PortAttr {
    raw: uapi::ib_uverbs_query_port_resp_ex,
}

impl PortAttr {
    pub(crate) fn new(raw: uapi::ib_uverbs_query_port_resp_ex) -> PortAttr {
        PortAttr { raw }
    }

    /// The kernel's answer, whole.
    pub fn raw(&self) -> &uapi::ib_uverbs_query_port_resp_ex {
        &self.raw
    }

    fn legacy(&self) -> &uapi::ib_uverbs_query_port_resp {
        &self.raw.legacy_resp
    }

    /// The logical state.
    pub fn state(&self) -> PortState {
        PortState::from(self.legacy().state)
    }

    /// The largest MTU the port supports.
    pub fn max_mtu(&self) -> Mtu {
        Mtu::from(self.legacy().max_mtu)
    }

    /// The MTU in use.
    pub fn active_mtu(&self) -> Mtu {
        Mtu::from(self.legacy().active_mtu)
    }

    /// Length of the GID table.
    pub fn gid_tbl_len(&self) -> u32 {
        self.legacy().gid_tbl_len
    }

    /// Capability flags.
    pub fn port_cap_flags(&self) -> PortCapFlags {
        PortCapFlags::from_bits_retain(self.legacy().port_cap_flags)
    }

    /// The second capability mask (`port_cap_flags2`; 0 from the write path).
    pub fn port_cap_flags2(&self) -> u16 {
        self.raw.port_cap_flags2
    }

    /// The largest message, in bytes.
    pub fn max_msg_sz(&self) -> u32 {
        self.legacy().max_msg_sz
    }

    /// Bad P_Key counter.
    pub fn bad_pkey_cntr(&self) -> u32 {
        self.legacy().bad_pkey_cntr
    }

    /// Q_Key violation counter.
    pub fn qkey_viol_cntr(&self) -> u32 {
        self.legacy().qkey_viol_cntr
    }

    /// Length of the P_Key table.
    pub fn pkey_tbl_len(&self) -> u16 {
        self.legacy().pkey_tbl_len
    }

    /// The port's LID (InfiniBand).
    pub fn lid(&self) -> u16 {
        self.legacy().lid
    }

    /// The subnet manager's LID.
    pub fn sm_lid(&self) -> u16 {
        self.legacy().sm_lid
    }

    /// The LID mask control.
    pub fn lmc(&self) -> u8 {
        self.legacy().lmc
    }

    /// The number of virtual lanes (encoded as in the PortInfo: 1 = VL0, 2 = VL0-1, 3 = VL0-3, ...).
    pub fn max_vl_num(&self) -> u8 {
        self.legacy().max_vl_num
    }

    /// The subnet manager's service level.
    pub fn sm_sl(&self) -> u8 {
        self.legacy().sm_sl
    }

    /// The subnet timeout.
    pub fn subnet_timeout(&self) -> u8 {
        self.legacy().subnet_timeout
    }

    /// The init type reply.
    pub fn init_type_reply(&self) -> u8 {
        self.legacy().init_type_reply
    }

    /// The link width.
    pub fn active_width(&self) -> Width {
        Width::from(self.legacy().active_width)
    }

    /// The raw `active_speed` code (8 bits; see [`PortAttr::speed`]).
    pub fn active_speed(&self) -> u8 {
        self.legacy().active_speed
    }

    /// `active_speed_ex` (kernels 6.7 and newer; 0 otherwise).
    pub fn active_speed_ex(&self) -> u32 {
        port_active_speed_ex(&self.raw)
    }

    /// The per-lane speed: `active_speed_ex` where reported, else `active_speed`.
    pub fn speed(&self) -> Speed {
        match self.active_speed_ex() {
            0 => Speed::from(u32::from(self.active_speed())),
            ex => Speed::from(ex),
        }
    }

    /// The physical state.
    pub fn phys_state(&self) -> PhysState {
        PhysState::from(self.legacy().phys_state)
    }

    /// The link layer.
    pub fn link_layer(&self) -> LinkLayer {
        LinkLayer::from(self.legacy().link_layer)
    }

    /// `IBV_QPF_GRH_REQUIRED` and friends (`flags` of the response).
    pub fn flags(&self) -> u8 {
        self.legacy().flags
    }
}

impl fmt::Debug for PortAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortAttr")
            .field("state", &self.state())
            .field("active_mtu", &self.active_mtu())
            .field("link_layer", &self.link_layer())
            .field("gid_tbl_len", &self.gid_tbl_len())
            .finish_non_exhaustive()
    }
}

/// An entry of a device's GID table (`struct ibv_gid_entry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GidEntry {
    /// The GID.
    pub gid: Gid,
    /// Its index in the port's table.
    pub gid_index: u32,
    /// The port, from 1.
    pub port_num: u32,
    /// Its type (`IBV_GID_TYPE_*`, as in `ibverbs`); [`GidEntry::kind`] decodes it.
    pub gid_type: ibv_gid_type,
    /// The interface index of its network device (0 for none).
    pub ndev_ifindex: u32,
}

impl GidEntry {
    /// The entry's type, decoded.
    pub fn kind(&self) -> GidType {
        GidType::from(self.gid_type)
    }
}

impl From<&uapi::ib_uverbs_gid_entry> for GidEntry {
    fn from(e: &uapi::ib_uverbs_gid_entry) -> GidEntry {
        let mut raw = [0u8; 16];
        raw[..8].copy_from_slice(&e.gid[0].to_ne_bytes());
        raw[8..].copy_from_slice(&e.gid[1].to_ne_bytes());
        GidEntry {
            gid: Gid::from_bytes(raw),
            gid_index: e.gid_index,
            port_num: e.port_num,
            gid_type: e.gid_type,
            ndev_ifindex: e.netdev_ifindex,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_keep_unknown_values() {
        assert_eq!(PortState::from(4), PortState::Active);
        assert_eq!(PortState::from(9), PortState::Unknown(9));
        assert_eq!(u8::from(PortState::Unknown(9)), 9);
        assert_eq!(Mtu::from(3).bytes(), Some(1024));
        assert_eq!(Mtu::from(0).bytes(), None);
        assert_eq!(Mtu::from_bytes(4096), Some(Mtu::Mtu4096));
        assert_eq!(Width::from(16).lanes(), Some(2));
    }

    #[test]
    fn gid_formats_and_splits() {
        let mut raw = [0u8; 16];
        raw[0] = 0xfe;
        raw[1] = 0x80;
        raw[15] = 1;
        let g = Gid::from_bytes(raw);
        assert_eq!(g.to_string(), "fe80:0000:0000:0000:0000:0000:0000:0001");
        assert_eq!(g.subnet_prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(g.interface_id(), 1);
        assert_eq!(
            g.to_ipv6(),
            "fe80::1".parse::<std::net::Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn gid_entry_from_kernel_bytes() {
        let mut e = uapi::ib_uverbs_gid_entry::default();
        let bytes: [u8; 16] = "::ffff:127.0.0.1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets();
        e.gid = [
            u64::from_ne_bytes(bytes[..8].try_into().unwrap()),
            u64::from_ne_bytes(bytes[8..].try_into().unwrap()),
        ];
        e.gid_index = 1;
        e.port_num = 1;
        e.gid_type = uapi::IB_UVERBS_GID_TYPE_ROCE_V2;
        let g = GidEntry::from(&e);
        assert_eq!(g.gid.to_string(), "0000:0000:0000:0000:0000:ffff:7f00:0001");
        assert_eq!(g.kind(), GidType::RoceV2);
    }

    #[test]
    fn speed_prefers_the_extended_field() {
        let mut raw = uapi::ib_uverbs_query_port_resp_ex::default();
        raw.legacy_resp.active_speed = 32;
        assert_eq!(PortAttr::new(raw).speed(), Speed::Edr);
        raw.reserved[2..6].copy_from_slice(&256u32.to_ne_bytes());
        assert_eq!(PortAttr::new(raw).speed(), Speed::Xdr);
    }
}
