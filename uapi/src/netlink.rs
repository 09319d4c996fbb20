//! The subset of `rdma/rdma_netlink.h` needed for device discovery over `NETLINK_RDMA`.
//!
//! Client ids, the `RDMA_NL_NLDEV` commands and attributes (all of `enum rdma_nldev_command` and
//! `enum rdma_nldev_attr`) and node types. IWPM, local-service (LS) and counter definitions are not
//! included.

// enum (anonymous)
/// RDMA netlink client (bits 10.. of `nlmsg_type`): `IWCM`.
pub const RDMA_NL_IWCM: u16 = 2;
/// RDMA netlink client (bits 10.. of `nlmsg_type`): `RSVD`.
pub const RDMA_NL_RSVD: u16 = 3;
/// RDMA netlink client (bits 10.. of `nlmsg_type`): `LS` (RDMA Local Services).
pub const RDMA_NL_LS: u16 = 4;
/// RDMA netlink client (bits 10.. of `nlmsg_type`): `NLDEV` (RDMA device interface).
pub const RDMA_NL_NLDEV: u16 = 5;
/// RDMA netlink client (bits 10.. of `nlmsg_type`): `NUM_CLIENTS`.
pub const RDMA_NL_NUM_CLIENTS: u16 = 6;

// enum (anonymous)
// For RDMA_NLDEV_ATTR_DEV_NODE_TYPE
/// Node type (`RDMA_NLDEV_ATTR_DEV_NODE_TYPE`, u8): `IB_CA` (IB values map to NodeInfo:NodeType).
pub const RDMA_NODE_IB_CA: u8 = 1;
/// Node type (`RDMA_NLDEV_ATTR_DEV_NODE_TYPE`, u8): `IB_SWITCH`.
pub const RDMA_NODE_IB_SWITCH: u8 = 2;
/// Node type (`RDMA_NLDEV_ATTR_DEV_NODE_TYPE`, u8): `IB_ROUTER`.
pub const RDMA_NODE_IB_ROUTER: u8 = 3;
/// Node type (`RDMA_NLDEV_ATTR_DEV_NODE_TYPE`, u8): `RNIC`.
pub const RDMA_NODE_RNIC: u8 = 4;
/// Node type (`RDMA_NLDEV_ATTR_DEV_NODE_TYPE`, u8): `USNIC`.
pub const RDMA_NODE_USNIC: u8 = 5;
/// Node type (`RDMA_NLDEV_ATTR_DEV_NODE_TYPE`, u8): `USNIC_UDP`.
pub const RDMA_NODE_USNIC_UDP: u8 = 6;
/// Node type (`RDMA_NLDEV_ATTR_DEV_NODE_TYPE`, u8): `UNSPECIFIED`.
pub const RDMA_NODE_UNSPECIFIED: u8 = 7;

// enum rdma_nldev_command
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_UNSPEC`.
pub const RDMA_NLDEV_CMD_UNSPEC: u16 = 0;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_GET` (can dump).
pub const RDMA_NLDEV_CMD_GET: u16 = 1;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_SET`.
pub const RDMA_NLDEV_CMD_SET: u16 = 2;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_NEWLINK`.
pub const RDMA_NLDEV_CMD_NEWLINK: u16 = 3;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_DELLINK`.
pub const RDMA_NLDEV_CMD_DELLINK: u16 = 4;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_PORT_GET` (can dump).
pub const RDMA_NLDEV_CMD_PORT_GET: u16 = 5;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_SYS_GET`.
pub const RDMA_NLDEV_CMD_SYS_GET: u16 = 6;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_SYS_SET`.
pub const RDMA_NLDEV_CMD_SYS_SET: u16 = 7;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_GET` (8 is free to use; can dump).
pub const RDMA_NLDEV_CMD_RES_GET: u16 = 9;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_QP_GET` (can dump).
pub const RDMA_NLDEV_CMD_RES_QP_GET: u16 = 10;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_CM_ID_GET` (can dump).
pub const RDMA_NLDEV_CMD_RES_CM_ID_GET: u16 = 11;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_CQ_GET` (can dump).
pub const RDMA_NLDEV_CMD_RES_CQ_GET: u16 = 12;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_MR_GET` (can dump).
pub const RDMA_NLDEV_CMD_RES_MR_GET: u16 = 13;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_PD_GET` (can dump).
pub const RDMA_NLDEV_CMD_RES_PD_GET: u16 = 14;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_GET_CHARDEV`: request with `DEV_INDEX` and `CHARDEV_TYPE` = "uverbs".
pub const RDMA_NLDEV_CMD_GET_CHARDEV: u16 = 15;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_STAT_SET`.
pub const RDMA_NLDEV_CMD_STAT_SET: u16 = 16;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_STAT_GET` (can dump).
pub const RDMA_NLDEV_CMD_STAT_GET: u16 = 17;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_STAT_DEL`.
pub const RDMA_NLDEV_CMD_STAT_DEL: u16 = 18;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_QP_GET_RAW`.
pub const RDMA_NLDEV_CMD_RES_QP_GET_RAW: u16 = 19;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_CQ_GET_RAW`.
pub const RDMA_NLDEV_CMD_RES_CQ_GET_RAW: u16 = 20;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_MR_GET_RAW`.
pub const RDMA_NLDEV_CMD_RES_MR_GET_RAW: u16 = 21;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_CTX_GET` (can dump).
pub const RDMA_NLDEV_CMD_RES_CTX_GET: u16 = 22;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_RES_SRQ_GET` (can dump).
pub const RDMA_NLDEV_CMD_RES_SRQ_GET: u16 = 23;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `CMD_STAT_GET_STATUS`.
pub const RDMA_NLDEV_CMD_STAT_GET_STATUS: u16 = 24;
/// RDMA_NL_NLDEV operation (low 10 bits of `nlmsg_type`): `NUM_OPS`.
pub const RDMA_NLDEV_NUM_OPS: u16 = 25;

// enum rdma_nldev_attr
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_UNSPEC` (don't change the order or add anything between, this is ABI!).
pub const RDMA_NLDEV_ATTR_UNSPEC: u16 = 0;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_PAD` (pad attribute for 64b alignment).
pub const RDMA_NLDEV_ATTR_PAD: u16 = RDMA_NLDEV_ATTR_UNSPEC;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DEV_INDEX` (identifier for ib_device; u32).
pub const RDMA_NLDEV_ATTR_DEV_INDEX: u16 = 1;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DEV_NAME` (string).
pub const RDMA_NLDEV_ATTR_DEV_NAME: u16 = 2;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_PORT_INDEX` (device index together with port index are identifiers for port/link properties. For RDMA_NLDEV_CMD_GET commamnd, port index will return number of available ports in ib_device, while for port specific operations, it will be real port index as it appears in sysfs. Port index follows sysfs notation and starts from 1 for the first port; u32).
pub const RDMA_NLDEV_ATTR_PORT_INDEX: u16 = 3;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_CAP_FLAGS` (device and port capabilities When used for port info, first 32-bits are CapabilityMask followed by 16-bit CapabilityMask2; u64).
pub const RDMA_NLDEV_ATTR_CAP_FLAGS: u16 = 4;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_FW_VERSION` (FW version; string).
pub const RDMA_NLDEV_ATTR_FW_VERSION: u16 = 5;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_NODE_GUID` (node GUID (in host byte order) associated with the RDMA device; u64).
pub const RDMA_NLDEV_ATTR_NODE_GUID: u16 = 6;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_SYS_IMAGE_GUID` (system image GUID (in host byte order) associated with this RDMA device and other devices which are part of a single system; u64).
pub const RDMA_NLDEV_ATTR_SYS_IMAGE_GUID: u16 = 7;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_SUBNET_PREFIX` (subnet prefix (in host byte order); u64).
pub const RDMA_NLDEV_ATTR_SUBNET_PREFIX: u16 = 8;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_LID` (local Identifier (LID), According to IB specification, It is 16-bit address assigned by the Subnet Manager. Extended to be 32-bit for OmniPath users; u32).
pub const RDMA_NLDEV_ATTR_LID: u16 = 9;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_SM_LID` (u32).
pub const RDMA_NLDEV_ATTR_SM_LID: u16 = 10;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_LMC` (LID mask control (LMC); u8).
pub const RDMA_NLDEV_ATTR_LMC: u16 = 11;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_PORT_STATE` (u8).
pub const RDMA_NLDEV_ATTR_PORT_STATE: u16 = 12;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_PORT_PHYS_STATE` (u8).
pub const RDMA_NLDEV_ATTR_PORT_PHYS_STATE: u16 = 13;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DEV_NODE_TYPE` (u8).
pub const RDMA_NLDEV_ATTR_DEV_NODE_TYPE: u16 = 14;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SUMMARY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_SUMMARY: u16 = 15;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SUMMARY_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY: u16 = 16;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SUMMARY_ENTRY_NAME` (string).
pub const RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME: u16 = 17;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SUMMARY_ENTRY_CURR` (u64).
pub const RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR: u16 = 18;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_QP` (nested table).
pub const RDMA_NLDEV_ATTR_RES_QP: u16 = 19;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_QP_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_QP_ENTRY: u16 = 20;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_LQPN` (local QPN; u32).
pub const RDMA_NLDEV_ATTR_RES_LQPN: u16 = 21;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_RQPN` (remote QPN, Applicable for RC and UC only IBTA 11.2.5.3 QUERY QUEUE PAIR; u32).
pub const RDMA_NLDEV_ATTR_RES_RQPN: u16 = 22;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_RQ_PSN` (receive Queue PSN, Applicable for RC and UC only 11.2.5.3 QUERY QUEUE PAIR; u32).
pub const RDMA_NLDEV_ATTR_RES_RQ_PSN: u16 = 23;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SQ_PSN` (send Queue PSN; u32).
pub const RDMA_NLDEV_ATTR_RES_SQ_PSN: u16 = 24;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_PATH_MIG_STATE` (u8).
pub const RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE: u16 = 25;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_TYPE` (QP types as visible to RDMA/core, the reserved QPT are not exported through this interface; u8).
pub const RDMA_NLDEV_ATTR_RES_TYPE: u16 = 26;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_STATE` (u8).
pub const RDMA_NLDEV_ATTR_RES_STATE: u16 = 27;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_PID` (process ID which created object, in case of kernel origin, PID won't exist; u32).
pub const RDMA_NLDEV_ATTR_RES_PID: u16 = 28;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_KERN_NAME` (the name of process created following resource. It will exist only for kernel objects. For user created objects, the user is supposed to read /proc/PID/comm file; string).
pub const RDMA_NLDEV_ATTR_RES_KERN_NAME: u16 = 29;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CM_ID` (nested table).
pub const RDMA_NLDEV_ATTR_RES_CM_ID: u16 = 30;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CM_ID_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY: u16 = 31;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_PS` (rdma_cm_id port space; u32).
pub const RDMA_NLDEV_ATTR_RES_PS: u16 = 32;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SRC_ADDR` (source and destination socket addresses; __kernel_sockaddr_storage).
pub const RDMA_NLDEV_ATTR_RES_SRC_ADDR: u16 = 33;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_DST_ADDR` (__kernel_sockaddr_storage).
pub const RDMA_NLDEV_ATTR_RES_DST_ADDR: u16 = 34;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CQ` (nested table).
pub const RDMA_NLDEV_ATTR_RES_CQ: u16 = 35;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CQ_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_CQ_ENTRY: u16 = 36;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CQE` (u32).
pub const RDMA_NLDEV_ATTR_RES_CQE: u16 = 37;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_USECNT` (u64).
pub const RDMA_NLDEV_ATTR_RES_USECNT: u16 = 38;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_POLL_CTX` (u8).
pub const RDMA_NLDEV_ATTR_RES_POLL_CTX: u16 = 39;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_MR` (nested table).
pub const RDMA_NLDEV_ATTR_RES_MR: u16 = 40;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_MR_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_MR_ENTRY: u16 = 41;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_RKEY` (u32).
pub const RDMA_NLDEV_ATTR_RES_RKEY: u16 = 42;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_LKEY` (u32).
pub const RDMA_NLDEV_ATTR_RES_LKEY: u16 = 43;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_IOVA` (u64).
pub const RDMA_NLDEV_ATTR_RES_IOVA: u16 = 44;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_MRLEN` (u64).
pub const RDMA_NLDEV_ATTR_RES_MRLEN: u16 = 45;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_PD` (nested table).
pub const RDMA_NLDEV_ATTR_RES_PD: u16 = 46;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_PD_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_PD_ENTRY: u16 = 47;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_LOCAL_DMA_LKEY` (u32).
pub const RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY: u16 = 48;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_UNSAFE_GLOBAL_RKEY` (u32).
pub const RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY: u16 = 49;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_NDEV_INDEX` (provides logical name and index of netdevice which is connected to physical port. This information is relevant for RoCE and iWARP. The netdevices which are associated with containers are supposed to be exported together with GID table once it will be exposed through the netlink. Because the associated netdevices are properties of GIDs; u32).
pub const RDMA_NLDEV_ATTR_NDEV_INDEX: u16 = 50;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_NDEV_NAME` (string).
pub const RDMA_NLDEV_ATTR_NDEV_NAME: u16 = 51;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DRIVER` (driver-specific attributes; nested table).
pub const RDMA_NLDEV_ATTR_DRIVER: u16 = 52;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DRIVER_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_DRIVER_ENTRY: u16 = 53;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DRIVER_STRING` (string).
pub const RDMA_NLDEV_ATTR_DRIVER_STRING: u16 = 54;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DRIVER_PRINT_TYPE` (u8 values from enum rdma_nldev_print_type; u8).
pub const RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE: u16 = 55;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DRIVER_S32` (s32).
pub const RDMA_NLDEV_ATTR_DRIVER_S32: u16 = 56;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DRIVER_U32` (u32).
pub const RDMA_NLDEV_ATTR_DRIVER_U32: u16 = 57;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DRIVER_S64` (s64).
pub const RDMA_NLDEV_ATTR_DRIVER_S64: u16 = 58;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DRIVER_U64` (u64).
pub const RDMA_NLDEV_ATTR_DRIVER_U64: u16 = 59;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_PDN` (indexes to get/set secific entry, for QP use RDMA_NLDEV_ATTR_RES_LQPN; u32).
pub const RDMA_NLDEV_ATTR_RES_PDN: u16 = 60;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CQN` (u32).
pub const RDMA_NLDEV_ATTR_RES_CQN: u16 = 61;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_MRN` (u32).
pub const RDMA_NLDEV_ATTR_RES_MRN: u16 = 62;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CM_IDN` (u32).
pub const RDMA_NLDEV_ATTR_RES_CM_IDN: u16 = 63;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CTXN` (u32).
pub const RDMA_NLDEV_ATTR_RES_CTXN: u16 = 64;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_LINK_TYPE` (identifies the rdma driver. eg: "rxe" or "siw"; string).
pub const RDMA_NLDEV_ATTR_LINK_TYPE: u16 = 65;
/// RDMA_NL_NLDEV netlink attribute type: `SYS_ATTR_NETNS_MODE` (net namespace mode for rdma subsystem: either shared or exclusive among multiple net namespaces; u8).
pub const RDMA_NLDEV_SYS_ATTR_NETNS_MODE: u16 = 66;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DEV_PROTOCOL` (device protocol, e.g. ib, iw, usnic, roce and opa; string).
pub const RDMA_NLDEV_ATTR_DEV_PROTOCOL: u16 = 67;
/// RDMA_NL_NLDEV netlink attribute type: `NET_NS_FD` (file descriptor handle of the net namespace object; u32).
pub const RDMA_NLDEV_NET_NS_FD: u16 = 68;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_CHARDEV_TYPE` (information about a chardev. CHARDEV_TYPE is the name of the chardev ABI (ie uverbs, umad, etc) CHARDEV_ABI signals the ABI revision (historical) CHARDEV_NAME is the kernel name for the /dev/ file (no directory) CHARDEV is the 64 bit dev_t for the inode; string).
pub const RDMA_NLDEV_ATTR_CHARDEV_TYPE: u16 = 69;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_CHARDEV_NAME` (string).
pub const RDMA_NLDEV_ATTR_CHARDEV_NAME: u16 = 70;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_CHARDEV_ABI` (u64).
pub const RDMA_NLDEV_ATTR_CHARDEV_ABI: u16 = 71;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_CHARDEV`: huge-encoded `dev_t` (u64).
pub const RDMA_NLDEV_ATTR_CHARDEV: u16 = 72;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_UVERBS_DRIVER_ID`: the device's `RDMA_DRIVER_*` id, needed for `ib_uverbs_ioctl_hdr.driver_id`; the kernel sends a u32 (`nla_put_u32`) despite the header comment; absent for drivers without driver-id binding.
pub const RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID: u16 = 73;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_MODE` (counter-specific attributes; u32).
pub const RDMA_NLDEV_ATTR_STAT_MODE: u16 = 74;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_RES` (u32).
pub const RDMA_NLDEV_ATTR_STAT_RES: u16 = 75;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_AUTO_MODE_MASK` (u32).
pub const RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK: u16 = 76;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_COUNTER` (nested table).
pub const RDMA_NLDEV_ATTR_STAT_COUNTER: u16 = 77;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_COUNTER_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY: u16 = 78;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_COUNTER_ID` (u32).
pub const RDMA_NLDEV_ATTR_STAT_COUNTER_ID: u16 = 79;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_HWCOUNTERS` (nested table).
pub const RDMA_NLDEV_ATTR_STAT_HWCOUNTERS: u16 = 80;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_HWCOUNTER_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY: u16 = 81;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_HWCOUNTER_ENTRY_NAME` (string).
pub const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME: u16 = 82;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_HWCOUNTER_ENTRY_VALUE` (u64).
pub const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE: u16 = 83;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_DEV_DIM` (CQ adaptive moderatio (DIM); u8).
pub const RDMA_NLDEV_ATTR_DEV_DIM: u16 = 84;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_RAW` (binary).
pub const RDMA_NLDEV_ATTR_RES_RAW: u16 = 85;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CTX` (nested table).
pub const RDMA_NLDEV_ATTR_RES_CTX: u16 = 86;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_CTX_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_CTX_ENTRY: u16 = 87;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SRQ` (nested table).
pub const RDMA_NLDEV_ATTR_RES_SRQ: u16 = 88;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SRQ_ENTRY` (nested table).
pub const RDMA_NLDEV_ATTR_RES_SRQ_ENTRY: u16 = 89;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_RES_SRQN` (u32).
pub const RDMA_NLDEV_ATTR_RES_SRQN: u16 = 90;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_MIN_RANGE` (u32).
pub const RDMA_NLDEV_ATTR_MIN_RANGE: u16 = 91;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_MAX_RANGE` (u32).
pub const RDMA_NLDEV_ATTR_MAX_RANGE: u16 = 92;
/// RDMA_NL_NLDEV netlink attribute type: `SYS_ATTR_COPY_ON_FORK` (u8).
pub const RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK: u16 = 93;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_HWCOUNTER_INDEX` (u32).
pub const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX: u16 = 94;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_STAT_HWCOUNTER_DYNAMIC` (u8).
pub const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC: u16 = 95;
/// RDMA_NL_NLDEV netlink attribute type: `ATTR_MAX` (always the end).
pub const RDMA_NLDEV_ATTR_MAX: u16 = 96;

/// Netlink protocol number of the RDMA netlink family (`NETLINK_RDMA` from `linux/netlink.h`), for socket(2).
pub const NETLINK_RDMA: i32 = 20;

/// `RDMA_NL_GET_TYPE(client, op)`: the `nlmsg_type` of RDMA netlink operation `op` of `client`.
pub const fn rdma_nl_get_type(client: u16, op: u16) -> u16 {
    (client << 10) + op
}

/// `RDMA_NL_GET_CLIENT(type)`: the client (e.g. `RDMA_NL_NLDEV`) of an RDMA netlink `nlmsg_type`.
pub const fn rdma_nl_get_client(nlmsg_type: u16) -> u16 {
    (nlmsg_type & (((1 << 6) - 1) << 10)) >> 10
}

/// `RDMA_NL_GET_OP(type)`: the operation (e.g. `RDMA_NLDEV_CMD_GET`) of an RDMA netlink `nlmsg_type`.
pub const fn rdma_nl_get_op(nlmsg_type: u16) -> u16 {
    nlmsg_type & ((1 << 10) - 1)
}
