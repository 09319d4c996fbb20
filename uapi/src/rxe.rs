//! Soft-RoCE (rxe) driver ABI: `rdma/rdma_user_rxe.h`.
//!
//! Driver udata structs and the layout of the queues rxe shares with user space through mmap(2)
//! ([`rxe_queue_buf`] header, [`rxe_send_wqe`], [`rxe_recv_wqe`]; CQ slots hold an
//! [`ib_uverbs_wc`](crate::ib_uverbs_wc)).

use crate::{union_get, union_set};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

// enum (anonymous)
/// rxe address vector network type (`rxe_av.network_type`): `IPV4`.
pub const RXE_NETWORK_TYPE_IPV4: u8 = 1;
/// rxe address vector network type (`rxe_av.network_type`): `IPV6`.
pub const RXE_NETWORK_TYPE_IPV6: u8 = 2;

/// C `union rxe_gid`: a GID as 16 raw bytes or as `global { __be64 subnet_prefix; __be64 interface_id; }`.
///
/// Modelled as a struct holding the `raw` member, 8-byte aligned like the C union (its `__be64`
/// members); `global` is available through [`rxe_gid::subnet_prefix`] / [`rxe_gid::interface_id`].
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct rxe_gid {
    /// The GID bytes, network order.
    pub raw: [u8; 16],
}

const _: () = assert!(core::mem::size_of::<rxe_gid>() == 16);
const _: () = assert!(core::mem::align_of::<rxe_gid>() == 8);

/// C `struct sockaddr_in` (`linux/in.h`, 16 bytes), a member of the `rxe_av.sgid_addr`/`dgid_addr` unions.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct sockaddr_in {
    /// Address family (`AF_INET` = 2).
    pub sin_family: u16,
    /// Port. Big-endian on the wire (raw bytes in a native integer).
    pub sin_port: u16,
    /// IPv4 address (C `struct in_addr`). Big-endian on the wire (raw bytes in a native integer).
    pub sin_addr: u32,
    /// Padding to the size of `struct sockaddr`; zero.
    pub __pad: [u8; 8],
}

const _: () = assert!(core::mem::size_of::<sockaddr_in>() == 16);

/// C `struct sockaddr_in6` (`linux/in6.h`, 28 bytes), a member of the `rxe_av.sgid_addr`/`dgid_addr` unions.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct sockaddr_in6 {
    /// Address family (`AF_INET6` = 10).
    pub sin6_family: u16,
    /// Port. Big-endian on the wire (raw bytes in a native integer).
    pub sin6_port: u16,
    /// IPv6 flow information. Big-endian on the wire (raw bytes in a native integer).
    pub sin6_flowinfo: u32,
    /// IPv6 address (C `struct in6_addr`), network order.
    pub sin6_addr: [u8; 16],
    /// Scope id (interface index for link-local addresses).
    pub sin6_scope_id: u32,
}

const _: () = assert!(core::mem::size_of::<sockaddr_in6>() == 28);

/// rxe GRH part of an address vector (24 bytes; C has one byte of implicit tail padding, made explicit here).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_global_route {
    /// Destination GID.
    pub dgid: rxe_gid,
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Source GID table index.
    pub sgid_index: u8,
    /// Hop limit (IPv6 TTL).
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Explicit padding (1 byte at offset 23; implicit in C, no C field); zero.
    pub _pad: [u8; 1],
}

const _: () = assert!(core::mem::size_of::<rxe_global_route>() == 24);
const _: () = assert!(core::mem::align_of::<rxe_global_route>() == 8);

/// rxe address vector carried in UD send WQEs when the kernel gave no AH number (88 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_av {
    /// Port number.
    pub port_num: u8,
    /// `RXE_NETWORK_TYPE_IPV4` or `RXE_NETWORK_TYPE_IPV6`.
    pub network_type: u8,
    /// Destination MAC address.
    pub dmac: [u8; 6],
    /// GRH fields.
    pub grh: rxe_global_route,
    /// C union `sgid_addr` of `struct sockaddr_in` / `struct sockaddr_in6` (28 bytes, both at offset 0). A byte array because the union would otherwise need `unsafe`; the C union's 4-byte alignment needs no padding here (offset 32). See [`rxe_av::sgid_addr_in`] / [`rxe_av::sgid_addr_in6`].
    pub sgid_addr: [u8; 28],
    /// C union `dgid_addr` of `struct sockaddr_in` / `struct sockaddr_in6` (28 bytes, both at offset 0; offset 60). See [`rxe_av::dgid_addr_in`] / [`rxe_av::dgid_addr_in6`].
    pub dgid_addr: [u8; 28],
}

const _: () = assert!(core::mem::size_of::<rxe_av>() == 88);
const _: () = assert!(core::mem::align_of::<rxe_av>() == 8);

/// Member `rdma` of the C union `rxe_send_wr.wr` (RDMA read/write); at offset 0 of `wr` (offset 24 of `rxe_send_wr`).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_send_wr_rdma {
    /// Remote virtual address.
    pub remote_addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<rxe_send_wr_rdma>() == 16);
const _: () = assert!(core::mem::align_of::<rxe_send_wr_rdma>() == 8);

/// Member `atomic` of the C union `rxe_send_wr.wr` (atomics); at offset 0 of `wr` (offset 24 of `rxe_send_wr`).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_send_wr_atomic {
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

const _: () = assert!(core::mem::size_of::<rxe_send_wr_atomic>() == 32);
const _: () = assert!(core::mem::align_of::<rxe_send_wr_atomic>() == 8);

/// Member `ud` of the C union `rxe_send_wr.wr` (UD sends: AH number or full address vector); at offset 0 of `wr` (offset 24 of `rxe_send_wr`).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_send_wr_ud {
    /// Remote QP number.
    pub remote_qpn: u32,
    /// Remote Q_Key.
    pub remote_qkey: u32,
    /// P_Key table index.
    pub pkey_index: u16,
    /// Reserved; zero.
    pub reserved: u16,
    /// AH number from [`rxe_create_ah_resp`] (0: use `av`).
    pub ah_num: u32,
    /// Padding; zero.
    pub pad: [u32; 4],
    /// Full address vector (used when `ah_num` is 0).
    pub av: rxe_av,
}

const _: () = assert!(core::mem::size_of::<rxe_send_wr_ud>() == 120);
const _: () = assert!(core::mem::align_of::<rxe_send_wr_ud>() == 8);

/// Member `mw` of the C union `rxe_send_wr.wr` (memory window bind); at offset 0 of `wr` (offset 24 of `rxe_send_wr`).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_send_wr_mw {
    /// Virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u64,
    /// lkey of the MR the window binds to.
    pub mr_lkey: u32,
    /// rkey of the memory window.
    pub mw_rkey: u32,
    /// Remote key.
    pub rkey: u32,
    /// Access flags of the binding.
    pub access: u32,
}

const _: () = assert!(core::mem::size_of::<rxe_send_wr_mw>() == 32);
const _: () = assert!(core::mem::align_of::<rxe_send_wr_mw>() == 8);

/// rxe send work request, the first 144 bytes of [`rxe_send_wqe`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct rxe_send_wr {
    /// User work request id, returned in the completion.
    pub wr_id: u64,
    /// Reserved (was `num_sge` before ~6.1).
    pub reserved: u32,
    /// Opcode (kernel `enum ib_wr_opcode`; same values as `IB_UVERBS_WR_*`).
    pub opcode: u32,
    /// Send flags (kernel `enum ib_send_flags`: FENCE=1, SIGNALED=2, SOLICITED=4, INLINE=8, IP_CSUM=16).
    pub send_flags: u32,
    /// Union `ex`: `imm_data` (big-endian immediate) or `invalidate_rkey`; see the accessor methods.
    pub ex: u32,
    /// C union `wr` (120 bytes): `rdma` ([`rxe_send_wr_rdma`]), `atomic` ([`rxe_send_wr_atomic`]), `ud` ([`rxe_send_wr_ud`]), `mw` ([`rxe_send_wr_mw`]), all at offset 0 of the union (offset 24 of the struct). Use the accessor methods.
    pub wr: [u8; 120],
}

impl Default for rxe_send_wr {
    fn default() -> Self {
        FromZeros::new_zeroed()
    }
}

const _: () = assert!(core::mem::size_of::<rxe_send_wr>() == 144);
const _: () = assert!(core::mem::align_of::<rxe_send_wr>() == 8);

/// rxe scatter/gather element (16 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_sge {
    /// Virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key.
    pub lkey: u32,
}

const _: () = assert!(core::mem::size_of::<rxe_sge>() == 16);
const _: () = assert!(core::mem::align_of::<rxe_sge>() == 8);

/// Where to mmap(2) a kernel-shared rxe queue: mmap offset on the uverbs fd and size (16 bytes).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct mminfo {
    /// mmap(2) offset on the uverbs fd.
    pub offset: u64,
    /// Size in bytes to map.
    pub size: u32,
    /// Padding; zero.
    pub pad: u32,
}

const _: () = assert!(core::mem::size_of::<mminfo>() == 16);
const _: () = assert!(core::mem::align_of::<mminfo>() == 8);

/// Progress/DMA state of an rxe WQE (24 bytes); SGEs or inline data follow (C union of flexible arrays `inline_data[]` / `sge[]` omitted).
///
/// C flexible array member(s) omitted: `inline_data`, `sge` (at offset 24).
#[repr(C, align(8))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_dma_info {
    /// Total length of the WQE's data.
    pub length: u32,
    /// Bytes remaining (initially `length`).
    pub resid: u32,
    /// Current SGE index (initially 0).
    pub cur_sge: u32,
    /// Number of SGEs that follow.
    pub num_sge: u32,
    /// Offset within the current SGE (initially 0).
    pub sge_offset: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<rxe_dma_info>() == 24);
const _: () = assert!(core::mem::align_of::<rxe_dma_info>() == 8);

/// rxe send queue element as laid out in the shared SQ ring (208 bytes; SGEs or inline data follow).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_send_wqe {
    /// The send work request.
    pub wr: rxe_send_wr,
    /// Completion status (kernel use).
    pub status: u32,
    /// WQE state; the provider writes 0 (posted).
    pub state: u32,
    /// Remote address for RDMA/atomic operations.
    pub iova: u64,
    /// Opcode mask (kernel use).
    pub mask: u32,
    /// First PSN (kernel use).
    pub first_psn: u32,
    /// Last PSN (kernel use).
    pub last_psn: u32,
    /// Acknowledged length (kernel use).
    pub ack_length: u32,
    /// Send sequence number (kernel use).
    pub ssn: u32,
    /// Read/atomic outstanding (kernel use).
    pub has_rd_atomic: u32,
    /// Length and SGE progress; SGEs / inline data follow.
    pub dma: rxe_dma_info,
}

const _: () = assert!(core::mem::size_of::<rxe_send_wqe>() == 208);
const _: () = assert!(core::mem::align_of::<rxe_send_wqe>() == 8);

/// rxe receive queue element as laid out in the shared RQ/SRQ ring (40 bytes; SGEs follow).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_recv_wqe {
    /// User work request id, returned in the completion.
    pub wr_id: u64,
    /// Reserved (was `num_sge` before ~6.1).
    pub reserved: u32,
    /// Padding; zero.
    pub padding: u32,
    /// Length and SGE progress; SGEs follow.
    pub dma: rxe_dma_info,
}

const _: () = assert!(core::mem::size_of::<rxe_recv_wqe>() == 40);
const _: () = assert!(core::mem::align_of::<rxe_recv_wqe>() == 8);

/// rxe driver response of CREATE_AH: the AH number to put in UD WQEs.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_create_ah_resp {
    /// AH number to put in `rxe_send_wr.wr.ud.ah_num` (0: use the `av` instead).
    pub ah_num: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<rxe_create_ah_resp>() == 8);
const _: () = assert!(core::mem::align_of::<rxe_create_ah_resp>() == 4);

/// rxe driver response of CREATE_CQ: where to mmap the CQ ring.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_create_cq_resp {
    /// mmap information of the queue.
    pub mi: mminfo,
}

const _: () = assert!(core::mem::size_of::<rxe_create_cq_resp>() == 16);
const _: () = assert!(core::mem::align_of::<rxe_create_cq_resp>() == 8);

/// rxe driver response of RESIZE_CQ: where to mmap the new CQ ring.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_resize_cq_resp {
    /// mmap information of the queue.
    pub mi: mminfo,
}

const _: () = assert!(core::mem::size_of::<rxe_resize_cq_resp>() == 16);
const _: () = assert!(core::mem::align_of::<rxe_resize_cq_resp>() == 8);

/// rxe driver response of CREATE_QP: where to mmap the RQ and SQ rings.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_create_qp_resp {
    /// mmap information of the receive queue (unused with an SRQ).
    pub rq_mi: mminfo,
    /// mmap information of the send queue.
    pub sq_mi: mminfo,
}

const _: () = assert!(core::mem::size_of::<rxe_create_qp_resp>() == 32);
const _: () = assert!(core::mem::align_of::<rxe_create_qp_resp>() == 8);

/// rxe driver response of CREATE_SRQ: where to mmap the SRQ ring, and the SRQ number.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_create_srq_resp {
    /// mmap information of the queue.
    pub mi: mminfo,
    /// SRQ number.
    pub srq_num: u32,
    /// Reserved; zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<rxe_create_srq_resp>() == 24);
const _: () = assert!(core::mem::align_of::<rxe_create_srq_resp>() == 8);

/// rxe driver request of MODIFY_SRQ (resize): user pointer where the kernel writes the new [`mminfo`].
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_modify_srq_cmd {
    /// User pointer to an [`mminfo`] the kernel fills with the new ring location.
    pub mmap_info_addr: u64,
}

const _: () = assert!(core::mem::size_of::<rxe_modify_srq_cmd>() == 8);
const _: () = assert!(core::mem::align_of::<rxe_modify_srq_cmd>() == 8);

/// Header of every kernel-shared rxe queue (384 bytes: sizes and producer/consumer indices on separate cache lines); the slots follow (C flexible array `data[]` omitted).
///
/// C flexible array member(s) omitted: `data` (at offset 384).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct rxe_queue_buf {
    /// log2 of the slot size in bytes.
    pub log2_elem_size: u32,
    /// Number of slots minus one (slots is a power of two).
    pub index_mask: u32,
    /// Pads `producer_index` to its own cache line (offset 128).
    pub pad_1: [u32; 30],
    /// Producer index (already masked).
    pub producer_index: u32,
    /// Pads `consumer_index` to its own cache line (offset 256).
    pub pad_2: [u32; 31],
    /// Consumer index (already masked).
    pub consumer_index: u32,
    /// Pads the header to 384 bytes; slot 0 starts at offset 384.
    pub pad_3: [u32; 31],
}

const _: () = assert!(core::mem::size_of::<rxe_queue_buf>() == 384);
const _: () = assert!(core::mem::align_of::<rxe_queue_buf>() == 4);

impl rxe_gid {
    /// `global.subnet_prefix` (bytes 0..8): big-endian on the wire, returned as the raw bytes in a `u64`.
    pub fn subnet_prefix(&self) -> u64 {
        union_get::<u64, 16>(&self.raw)
    }

    /// `global.interface_id` (bytes 8..16): big-endian on the wire, returned as the raw bytes in a `u64`.
    pub fn interface_id(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.raw[8..]);
        u64::from_ne_bytes(b)
    }
}

impl rxe_av {
    /// Reads union member `sgid_addr._sockaddr_in`.
    pub fn sgid_addr_in(&self) -> sockaddr_in {
        union_get(&self.sgid_addr)
    }

    /// Writes union member `sgid_addr._sockaddr_in` (the remaining 12 bytes are zeroed).
    pub fn set_sgid_addr_in(&mut self, addr: &sockaddr_in) {
        union_set(&mut self.sgid_addr, addr);
    }

    /// Reads union member `sgid_addr._sockaddr_in6`.
    pub fn sgid_addr_in6(&self) -> sockaddr_in6 {
        union_get(&self.sgid_addr)
    }

    /// Writes union member `sgid_addr._sockaddr_in6`.
    pub fn set_sgid_addr_in6(&mut self, addr: &sockaddr_in6) {
        union_set(&mut self.sgid_addr, addr);
    }

    /// Reads union member `dgid_addr._sockaddr_in`.
    pub fn dgid_addr_in(&self) -> sockaddr_in {
        union_get(&self.dgid_addr)
    }

    /// Writes union member `dgid_addr._sockaddr_in` (the remaining 12 bytes are zeroed).
    pub fn set_dgid_addr_in(&mut self, addr: &sockaddr_in) {
        union_set(&mut self.dgid_addr, addr);
    }

    /// Reads union member `dgid_addr._sockaddr_in6`.
    pub fn dgid_addr_in6(&self) -> sockaddr_in6 {
        union_get(&self.dgid_addr)
    }

    /// Writes union member `dgid_addr._sockaddr_in6`.
    pub fn set_dgid_addr_in6(&mut self, addr: &sockaddr_in6) {
        union_set(&mut self.dgid_addr, addr);
    }
}

impl rxe_send_wr {
    /// `ex.imm_data`: the immediate value, big-endian on the wire (raw bytes in a `u32`).
    pub const fn imm_data(&self) -> u32 {
        self.ex
    }

    /// `ex.invalidate_rkey`: the rkey to invalidate (SEND_WITH_INV / LOCAL_INV).
    pub const fn invalidate_rkey(&self) -> u32 {
        self.ex
    }

    /// Reads union member `wr.rdma`.
    pub fn rdma(&self) -> rxe_send_wr_rdma {
        union_get(&self.wr)
    }

    /// Writes union member `wr.rdma` (the rest of `wr` is zeroed).
    pub fn set_rdma(&mut self, rdma: &rxe_send_wr_rdma) {
        union_set(&mut self.wr, rdma);
    }

    /// Reads union member `wr.atomic`.
    pub fn atomic(&self) -> rxe_send_wr_atomic {
        union_get(&self.wr)
    }

    /// Writes union member `wr.atomic` (the rest of `wr` is zeroed).
    pub fn set_atomic(&mut self, atomic: &rxe_send_wr_atomic) {
        union_set(&mut self.wr, atomic);
    }

    /// Reads union member `wr.ud`.
    pub fn ud(&self) -> rxe_send_wr_ud {
        union_get(&self.wr)
    }

    /// Writes union member `wr.ud` (it fills the whole union).
    pub fn set_ud(&mut self, ud: &rxe_send_wr_ud) {
        union_set(&mut self.wr, ud);
    }

    /// Reads union member `wr.mw`.
    pub fn mw(&self) -> rxe_send_wr_mw {
        union_get(&self.wr)
    }

    /// Writes union member `wr.mw` (the rest of `wr` is zeroed).
    pub fn set_mw(&mut self, mw: &rxe_send_wr_mw) {
        union_set(&mut self.wr, mw);
    }
}
