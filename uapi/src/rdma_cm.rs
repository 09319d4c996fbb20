//! The RDMA connection manager's user ABI: `/dev/infiniband/rdma_cm` (module `rdma_ucm`), from
//! `<rdma/rdma_user_cm.h>` (ABI version 4), plus the event numbers, which the kernel keeps in its
//! internal `rdma_cm.h` and librdmacm repeats in `<rdma/rdma_cma.h>`.
//!
//! Every command is one `write()` of an [`rdma_ucm_cmd_hdr`] followed by the command's struct;
//! commands with an answer carry a `response` user pointer that the kernel writes through.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::verbs::ib_uverbs_ah_attr;

/// The ABI version this module describes (`/sys/class/misc/rdma_cm/abi_version`).
pub const RDMA_USER_CM_ABI_VERSION: u32 = 4;
/// The largest private data any command carries (the port spaces allow less; see the kernel's
/// `cma.c`).
pub const RDMA_MAX_PRIVATE_DATA: usize = 256;

/// `CREATE_ID`: a new identifier on this file ([`rdma_ucm_create_id`]).
pub const RDMA_USER_CM_CMD_CREATE_ID: u32 = 0;
/// `DESTROY_ID` ([`rdma_ucm_destroy_id`]).
pub const RDMA_USER_CM_CMD_DESTROY_ID: u32 = 1;
/// `BIND_IP` (legacy, `sockaddr_in6` only; [`RDMA_USER_CM_CMD_BIND`] replaces it).
pub const RDMA_USER_CM_CMD_BIND_IP: u32 = 2;
/// `RESOLVE_IP` (legacy; [`RDMA_USER_CM_CMD_RESOLVE_ADDR`] replaces it).
pub const RDMA_USER_CM_CMD_RESOLVE_IP: u32 = 3;
/// `RESOLVE_ROUTE` ([`rdma_ucm_resolve_route`]).
pub const RDMA_USER_CM_CMD_RESOLVE_ROUTE: u32 = 4;
/// `QUERY_ROUTE` (legacy; [`RDMA_USER_CM_CMD_QUERY`] replaces it).
pub const RDMA_USER_CM_CMD_QUERY_ROUTE: u32 = 5;
/// `CONNECT` ([`rdma_ucm_connect`]).
pub const RDMA_USER_CM_CMD_CONNECT: u32 = 6;
/// `LISTEN` ([`rdma_ucm_listen`]).
pub const RDMA_USER_CM_CMD_LISTEN: u32 = 7;
/// `ACCEPT` ([`rdma_ucm_accept`]).
pub const RDMA_USER_CM_CMD_ACCEPT: u32 = 8;
/// `REJECT` ([`rdma_ucm_reject`]).
pub const RDMA_USER_CM_CMD_REJECT: u32 = 9;
/// `DISCONNECT` ([`rdma_ucm_disconnect`]).
pub const RDMA_USER_CM_CMD_DISCONNECT: u32 = 10;
/// `INIT_QP_ATTR`: the attributes that move a queue pair to a state ([`rdma_ucm_init_qp_attr`]).
pub const RDMA_USER_CM_CMD_INIT_QP_ATTR: u32 = 11;
/// `GET_EVENT`: the next event of the file ([`rdma_ucm_get_event`]).
pub const RDMA_USER_CM_CMD_GET_EVENT: u32 = 12;
/// `GET_OPTION` (not implemented by the kernel).
pub const RDMA_USER_CM_CMD_GET_OPTION: u32 = 13;
/// `SET_OPTION` ([`rdma_ucm_set_option`]).
pub const RDMA_USER_CM_CMD_SET_OPTION: u32 = 14;
/// `NOTIFY`: pass an async event of the queue pair on ([`rdma_ucm_notify`]).
pub const RDMA_USER_CM_CMD_NOTIFY: u32 = 15;
/// `JOIN_IP_MCAST` (legacy; [`RDMA_USER_CM_CMD_JOIN_MCAST`] replaces it).
pub const RDMA_USER_CM_CMD_JOIN_IP_MCAST: u32 = 16;
/// `LEAVE_MCAST` (takes an [`rdma_ucm_destroy_id`] naming the multicast id).
pub const RDMA_USER_CM_CMD_LEAVE_MCAST: u32 = 17;
/// `MIGRATE_ID`: move an identifier to another file ([`rdma_ucm_migrate_id`]).
pub const RDMA_USER_CM_CMD_MIGRATE_ID: u32 = 18;
/// `QUERY` ([`rdma_ucm_query`], option `RDMA_USER_CM_QUERY_*`).
pub const RDMA_USER_CM_CMD_QUERY: u32 = 19;
/// `BIND` ([`rdma_ucm_bind`]).
pub const RDMA_USER_CM_CMD_BIND: u32 = 20;
/// `RESOLVE_ADDR` ([`rdma_ucm_resolve_addr`]).
pub const RDMA_USER_CM_CMD_RESOLVE_ADDR: u32 = 21;
/// `JOIN_MCAST` ([`rdma_ucm_join_mcast`]).
pub const RDMA_USER_CM_CMD_JOIN_MCAST: u32 = 22;

/// Port space of IPoIB (`enum rdma_ucm_port_space`).
pub const RDMA_PS_IPOIB: u16 = 0x0002;
/// Port space of native InfiniBand service ids.
pub const RDMA_PS_IB: u16 = 0x013F;
/// The reliable-connection port space (TCP-like: RC queue pairs).
pub const RDMA_PS_TCP: u16 = 0x0106;
/// The datagram port space (UDP-like: UD queue pairs, multicast).
pub const RDMA_PS_UDP: u16 = 0x0111;

/// `QUERY` option: addresses, device and port ([`rdma_ucm_query_addr_resp`]).
pub const RDMA_USER_CM_QUERY_ADDR: u32 = 0;
/// `QUERY` option: path records ([`rdma_ucm_query_path_resp`]).
pub const RDMA_USER_CM_QUERY_PATH: u32 = 1;
/// `QUERY` option: the source and destination GIDs, as `sockaddr_ib`s in an
/// [`rdma_ucm_query_addr_resp`].
pub const RDMA_USER_CM_QUERY_GID: u32 = 2;

/// Join a multicast group as a full member.
pub const RDMA_MC_JOIN_FLAG_FULLMEMBER: u16 = 0;
/// Join a multicast group as a send-only full member.
pub const RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER: u16 = 1;
/// The first unused join flag.
pub const RDMA_MC_JOIN_FLAG_RESERVED: u16 = 2;

/// `SET_OPTION` level of the identifier's own options.
pub const RDMA_OPTION_ID: u32 = 0;
/// `SET_OPTION` level of InfiniBand options.
pub const RDMA_OPTION_IB: u32 = 1;
/// Identifier option: type of service (`u8`).
pub const RDMA_OPTION_ID_TOS: u32 = 0;
/// Identifier option: reuse the address (`int`).
pub const RDMA_OPTION_ID_REUSEADDR: u32 = 1;
/// Identifier option: an IPv6 identifier does not take IPv4 (`int`).
pub const RDMA_OPTION_ID_AFONLY: u32 = 2;
/// Identifier option: the local ACK timeout (`u8`).
pub const RDMA_OPTION_ID_ACK_TIMEOUT: u32 = 3;
/// InfiniBand option: set the path record.
pub const RDMA_OPTION_IB_PATH: u32 = 1;

/// Event: the address resolved (`enum rdma_cm_event_type`).
pub const RDMA_CM_EVENT_ADDR_RESOLVED: u32 = 0;
/// Event: address resolution failed.
pub const RDMA_CM_EVENT_ADDR_ERROR: u32 = 1;
/// Event: the route resolved.
pub const RDMA_CM_EVENT_ROUTE_RESOLVED: u32 = 2;
/// Event: route resolution failed.
pub const RDMA_CM_EVENT_ROUTE_ERROR: u32 = 3;
/// Event: a connection request arrived at a listener (the event names a new identifier).
pub const RDMA_CM_EVENT_CONNECT_REQUEST: u32 = 4;
/// Event: the peer answered a connect (only when the identifier has no kernel queue pair).
pub const RDMA_CM_EVENT_CONNECT_RESPONSE: u32 = 5;
/// Event: establishing the connection failed.
pub const RDMA_CM_EVENT_CONNECT_ERROR: u32 = 6;
/// Event: the peer could not be reached (or did not answer in time).
pub const RDMA_CM_EVENT_UNREACHABLE: u32 = 7;
/// Event: the peer rejected the connection.
pub const RDMA_CM_EVENT_REJECTED: u32 = 8;
/// Event: the connection is established.
pub const RDMA_CM_EVENT_ESTABLISHED: u32 = 9;
/// Event: the connection was disconnected.
pub const RDMA_CM_EVENT_DISCONNECTED: u32 = 10;
/// Event: the device went away.
pub const RDMA_CM_EVENT_DEVICE_REMOVAL: u32 = 11;
/// Event: a multicast join completed.
pub const RDMA_CM_EVENT_MULTICAST_JOIN: u32 = 12;
/// Event: a multicast group failed.
pub const RDMA_CM_EVENT_MULTICAST_ERROR: u32 = 13;
/// Event: the address changed (the network device's address or bonding).
pub const RDMA_CM_EVENT_ADDR_CHANGE: u32 = 14;
/// Event: the connection's time-wait state ended; its queue pair may be reused.
pub const RDMA_CM_EVENT_TIMEWAIT_EXIT: u32 = 15;

/// Address family of `sockaddr_ib` (`AF_IB`), in which `QUERY_GID` reports GIDs.
pub const AF_IB: u16 = 27;

/// C `struct __kernel_sockaddr_storage` (`linux/socket.h`, 128 bytes, 8-aligned): any socket address.
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct __kernel_sockaddr_storage {
    /// The address family (`AF_INET`, `AF_INET6`, `AF_IB`).
    pub ss_family: u16,
    /// The family's address bytes (a `sockaddr_in`, `sockaddr_in6` or `sockaddr_ib` after the family).
    pub __data: [u8; 126],
}

impl Default for __kernel_sockaddr_storage {
    fn default() -> Self {
        Self {
            ss_family: 0,
            __data: [0; 126],
        }
    }
}

const _: () = assert!(core::mem::size_of::<__kernel_sockaddr_storage>() == 128);

/// C `struct sockaddr_ib` (librdmacm's `<infiniband/ib.h>`, 48 bytes): how `QUERY_GID` reports GIDs.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct sockaddr_ib {
    /// [`AF_IB`].
    pub sib_family: u16,
    /// The P_Key. Big-endian on the wire.
    pub sib_pkey: u16,
    /// The flow label. Big-endian on the wire.
    pub sib_flowinfo: u32,
    /// The GID (C `struct ib_addr`), network order.
    pub sib_addr: [u8; 16],
    /// The service id. Big-endian on the wire.
    pub sib_sid: u64,
    /// The service id mask. Big-endian on the wire.
    pub sib_sid_mask: u64,
    /// The scope id.
    pub sib_scope_id: u64,
}

const _: () = assert!(core::mem::size_of::<sockaddr_ib>() == 48);

/// The header of every command written to the file (8 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_cmd_hdr {
    /// The command (`RDMA_USER_CM_CMD_*`).
    pub cmd: u32,
    /// Bytes of the command struct after this header.
    pub r#in: u16,
    /// Bytes of the response the command's `response` pointer has room for.
    pub out: u16,
}

/// `CREATE_ID` (24 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_create_id {
    /// The caller's cookie, returned in every event of the identifier.
    pub uid: u64,
    /// User pointer to an [`rdma_ucm_create_id_resp`].
    pub response: u64,
    /// The port space (`RDMA_PS_*`).
    pub ps: u16,
    /// The queue pair type (`IB_QPT_RC`, `IB_QPT_UD`).
    pub qp_type: u8,
    /// Reserved; zero.
    pub reserved: [u8; 5],
}

/// The answer to `CREATE_ID` and to the joins: the kernel's id.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_create_id_resp {
    /// The identifier's handle on this file.
    pub id: u32,
}

/// `DESTROY_ID` and `LEAVE_MCAST` (16 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_destroy_id {
    /// User pointer to an [`rdma_ucm_destroy_id_resp`].
    pub response: u64,
    /// The identifier (or multicast id).
    pub id: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

/// The answer to `DESTROY_ID`: how many events of the identifier the kernel handed out.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_destroy_id_resp {
    /// Events of the identifier read with `GET_EVENT`.
    pub events_reported: u32,
}

/// `BIND` (136 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_bind {
    /// The identifier.
    pub id: u32,
    /// Bytes of `addr` in use.
    pub addr_size: u16,
    /// Reserved; zero.
    pub reserved: u16,
    /// The local address.
    pub addr: __kernel_sockaddr_storage,
}

/// `RESOLVE_ADDR` (272 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_resolve_addr {
    /// The identifier.
    pub id: u32,
    /// How long resolution may take.
    pub timeout_ms: u32,
    /// Bytes of `src_addr` in use (0: any source).
    pub src_size: u16,
    /// Bytes of `dst_addr` in use.
    pub dst_size: u16,
    /// Reserved; zero.
    pub reserved: u32,
    /// The source address (optional).
    pub src_addr: __kernel_sockaddr_storage,
    /// The destination address.
    pub dst_addr: __kernel_sockaddr_storage,
}

/// `RESOLVE_ROUTE` (8 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_resolve_route {
    /// The identifier.
    pub id: u32,
    /// How long resolution may take.
    pub timeout_ms: u32,
}

/// `QUERY` (16 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_query {
    /// User pointer to the answer.
    pub response: u64,
    /// The identifier.
    pub id: u32,
    /// What to report (`RDMA_USER_CM_QUERY_*`).
    pub option: u32,
}

/// The answer to `QUERY` with [`RDMA_USER_CM_QUERY_ADDR`] or [`RDMA_USER_CM_QUERY_GID`] (280 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_query_addr_resp {
    /// The node GUID of the device the identifier is bound to (0: none yet). Big-endian on the wire.
    pub node_guid: u64,
    /// The port (0: none yet).
    pub port_num: u8,
    /// Reserved; zero.
    pub reserved: u8,
    /// The P_Key. Big-endian on the wire.
    pub pkey: u16,
    /// Bytes of `src_addr` in use.
    pub src_size: u16,
    /// Bytes of `dst_addr` in use.
    pub dst_size: u16,
    /// The local address (a `sockaddr_ib` for `QUERY_GID`).
    pub src_addr: __kernel_sockaddr_storage,
    /// The peer's address (a `sockaddr_ib` for `QUERY_GID`).
    pub dst_addr: __kernel_sockaddr_storage,
    /// The device's index (as netlink numbers devices).
    pub ibdev_index: u32,
    /// Reserved; zero.
    pub reserved1: u32,
}

/// One path record in a [`rdma_ucm_query_path_resp`] (72 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct ib_path_rec_data {
    /// `IB_PATH_*` flags (primary, outbound, ...).
    pub flags: u32,
    /// Reserved; zero.
    pub reserved: u32,
    /// The path record, in the wire format of the subnet administrator.
    pub path_rec: [u32; 16],
}

/// The answer to `QUERY` with [`RDMA_USER_CM_QUERY_PATH`] (8 bytes, then `num_paths`
/// [`ib_path_rec_data`]s).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_query_path_resp {
    /// Path records that follow.
    pub num_paths: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

/// Connection parameters of `CONNECT`, `ACCEPT` and of connection events (272 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct rdma_ucm_conn_param {
    /// The queue pair number (of the caller's queue pair; of the peer's in events).
    pub qp_num: u32,
    /// The Q_Key (datagrams).
    pub qkey: u32,
    /// Private data for the peer.
    pub private_data: [u8; RDMA_MAX_PRIVATE_DATA],
    /// Bytes of `private_data` in use.
    pub private_data_len: u8,
    /// Non-zero: the queue pair uses a shared receive queue.
    pub srq: u8,
    /// RDMA reads and atomics the caller accepts as target.
    pub responder_resources: u8,
    /// RDMA reads and atomics the caller issues at once.
    pub initiator_depth: u8,
    /// Non-zero: the hardware does end-to-end flow control.
    pub flow_control: u8,
    /// Transport retries.
    pub retry_count: u8,
    /// RNR retries (7: forever).
    pub rnr_retry_count: u8,
    /// Non-zero: these parameters are set.
    pub valid: u8,
}

impl Default for rdma_ucm_conn_param {
    fn default() -> Self {
        Self::new_zeroed()
    }
}

/// Datagram parameters of connection events on [`RDMA_PS_UDP`] identifiers (304 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct rdma_ucm_ud_param {
    /// The peer's queue pair number.
    pub qp_num: u32,
    /// The peer's Q_Key.
    pub qkey: u32,
    /// The address vector that reaches the peer.
    pub ah_attr: ib_uverbs_ah_attr,
    /// The peer's private data.
    pub private_data: [u8; RDMA_MAX_PRIVATE_DATA],
    /// Bytes of `private_data` in use.
    pub private_data_len: u8,
    /// Reserved; zero.
    pub reserved: [u8; 7],
}

impl Default for rdma_ucm_ud_param {
    fn default() -> Self {
        Self::new_zeroed()
    }
}

/// Enhanced connection establishment options (8 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_ece {
    /// The vendor (0: none).
    pub vendor_id: u32,
    /// Vendor-specific options.
    pub attr_mod: u32,
}

/// `CONNECT` (288 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_connect {
    /// The connection parameters.
    pub conn_param: rdma_ucm_conn_param,
    /// The identifier.
    pub id: u32,
    /// Reserved; zero.
    pub reserved: u32,
    /// Enhanced connection establishment options.
    pub ece: rdma_ucm_ece,
}

/// `LISTEN` (8 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_listen {
    /// The identifier.
    pub id: u32,
    /// Connection requests that may wait to be accepted.
    pub backlog: u32,
}

/// `ACCEPT` (296 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_accept {
    /// The identifier's new cookie.
    pub uid: u64,
    /// The connection parameters.
    pub conn_param: rdma_ucm_conn_param,
    /// The identifier (from the connection request).
    pub id: u32,
    /// Reserved; zero.
    pub reserved: u32,
    /// Enhanced connection establishment options.
    pub ece: rdma_ucm_ece,
}

/// `REJECT` (264 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct rdma_ucm_reject {
    /// The identifier (from the connection request).
    pub id: u32,
    /// Bytes of `private_data` in use.
    pub private_data_len: u8,
    /// The reject reason (0: the kernel's default, consumer-defined).
    pub reason: u8,
    /// Reserved; zero.
    pub reserved: [u8; 2],
    /// Private data for the peer.
    pub private_data: [u8; RDMA_MAX_PRIVATE_DATA],
}

impl Default for rdma_ucm_reject {
    fn default() -> Self {
        Self::new_zeroed()
    }
}

/// `DISCONNECT` (4 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_disconnect {
    /// The identifier.
    pub id: u32,
}

/// `INIT_QP_ATTR` (16 bytes); the answer is an
/// [`ib_uverbs_qp_attr`](crate::verbs::ib_uverbs_qp_attr).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_init_qp_attr {
    /// User pointer to an `ib_uverbs_qp_attr`.
    pub response: u64,
    /// The identifier.
    pub id: u32,
    /// The state to compute the attributes for (`IB_QPS_INIT`, `IB_QPS_RTR`, `IB_QPS_RTS`).
    pub qp_state: u32,
}

/// `NOTIFY` (8 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_notify {
    /// The identifier.
    pub id: u32,
    /// The async event (`enum ib_event_type`).
    pub event: u32,
}

/// `JOIN_MCAST` (152 bytes); the answer is an [`rdma_ucm_create_id_resp`] naming the membership.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_join_mcast {
    /// User pointer to an [`rdma_ucm_create_id_resp`].
    pub response: u64,
    /// The membership's cookie, returned in its events.
    pub uid: u64,
    /// The identifier.
    pub id: u32,
    /// Bytes of `addr` in use.
    pub addr_size: u16,
    /// `RDMA_MC_JOIN_FLAG_*`.
    pub join_flags: u16,
    /// The group's address.
    pub addr: __kernel_sockaddr_storage,
}

/// `GET_EVENT` (8 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_get_event {
    /// User pointer to an [`rdma_ucm_event_resp`].
    pub response: u64,
}

/// One event, the answer to `GET_EVENT` (336 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct rdma_ucm_event_resp {
    /// The cookie of the identifier (or membership) the event is about.
    pub uid: u64,
    /// The kernel's id of the identifier: for a connection request, the new identifier's.
    pub id: u32,
    /// The event (`RDMA_CM_EVENT_*`).
    pub event: u32,
    /// The event's status: 0, a negative errno, or (for `REJECTED`) the reject reason.
    pub status: u32,
    /// C union `param` of `struct rdma_ucm_conn_param conn` and `struct rdma_ucm_ud_param ud`
    /// (304 bytes): views [`rdma_ucm_event_resp::conn`] and [`rdma_ucm_event_resp::ud`].
    pub param: [u8; 304],
    /// Reserved; zero.
    pub reserved: u32,
    /// Enhanced connection establishment options of the peer.
    pub ece: rdma_ucm_ece,
}

impl Default for rdma_ucm_event_resp {
    fn default() -> Self {
        Self::new_zeroed()
    }
}

impl rdma_ucm_event_resp {
    /// Reads union member `param.conn` (reliable port spaces).
    pub fn conn(&self) -> rdma_ucm_conn_param {
        rdma_ucm_conn_param::read_from_prefix(&self.param[..])
            .map(|(p, _)| p)
            .unwrap_or_default()
    }

    /// Reads union member `param.ud` (datagram port spaces).
    pub fn ud(&self) -> rdma_ucm_ud_param {
        rdma_ucm_ud_param::read_from_bytes(&self.param[..]).unwrap_or_default()
    }
}

/// `SET_OPTION` (24 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_set_option {
    /// User pointer to the value.
    pub optval: u64,
    /// The identifier.
    pub id: u32,
    /// `RDMA_OPTION_ID` or `RDMA_OPTION_IB`.
    pub level: u32,
    /// The option (`RDMA_OPTION_ID_*`, `RDMA_OPTION_IB_*`).
    pub optname: u32,
    /// Bytes of the value.
    pub optlen: u32,
}

/// `MIGRATE_ID` (16 bytes); the answer is an [`rdma_ucm_migrate_resp`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_migrate_id {
    /// User pointer to an [`rdma_ucm_migrate_resp`].
    pub response: u64,
    /// The identifier.
    pub id: u32,
    /// The file descriptor of the event channel to move it to.
    pub fd: u32,
}

/// The answer to `MIGRATE_ID`.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rdma_ucm_migrate_resp {
    /// Events of the identifier handed out on the old file.
    pub events_reported: u32,
}
