//! The model HCA: the silicon half of the mlx5 model.
//!
//! It owns the model's memory regions, completion queues, queue pairs and shared receive queues, as
//! the device's firmware tables do, and an engine thread that does what a ConnectX does on its own:
//! it watches each queue pair's doorbell record (and the UAR doorbell / BlueFlame writes), fetches
//! the new send WQEs from the SQ ring the driver wrote, parses them exactly as the hardware format
//! says, executes them against other model QPs in this process (SEND/RECV, RDMA WRITE/READ with and
//! without immediate, atomics, inline data, UD datagrams, multicast), enforces lkeys, rkeys, PDs and
//! access flags, consumes receive WQEs from RQ rings and SRQ lists, and writes 64-byte CQEs with the
//! right owner bit, `wqe_counter`, byte counts and error syndromes. It raises completion events on
//! armed CQs and async events through the sinks the kernel half gives it.
//!
//! All memory named here (rings, doorbell records, registered memory) is user memory in this same
//! process, named by address, exactly as the kernel hands the device DMA addresses. The kernel half
//! (`super::kernel`) checks that every range is mapped before it gives it to the HCA, and destroys an
//! object here before the driver may free its memory.

#![allow(dead_code)] // INTERFACE SKELETON: to be filled in by the HCA implementation.

use std::sync::Arc;

use nix::errno::Errno;

/// Where the HCA delivers events: implemented by the kernel half, which owns the event files.
pub trait EventSink: Send + Sync + std::fmt::Debug {
    /// A completion event for a CQ (the kernel half writes `ib_uverbs_comp_event_desc` with the CQ's
    /// user handle to the CQ's completion channel, if it has one).
    fn completion(&self, cqn: u32);
    /// An async event (`enum ib_event_type` value) for an object: `element` is the QP number, the CQ
    /// number, the SRQ number or the port number, as `kind` says (the kernel half maps it to the
    /// object's user handle, as the kernel's event file does).
    fn async_event(&self, event_type: u32, kind: ObjectKind, element: u32);
}

/// What an async event names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// A queue pair (by QPN).
    Qp,
    /// A completion queue (by CQN).
    Cq,
    /// A shared receive queue (by SRQN).
    Srq,
    /// A port (by number).
    Port,
}

/// A registered memory region (the device's MKey).
#[derive(Debug, Clone, Copy)]
pub struct MrDesc {
    /// The local key.
    pub lkey: u32,
    /// The remote key (mlx5: equal to the lkey).
    pub rkey: u32,
    /// The protection domain number.
    pub pdn: u32,
    /// The I/O virtual address the region starts at (what WQEs name).
    pub iova: u64,
    /// Where that is in this process.
    pub host: usize,
    /// The length in bytes.
    pub len: u64,
    /// `ib_access_flags` bits.
    pub access: u32,
}

/// A completion queue, as `CREATE_CQ` gave it.
#[derive(Debug, Clone, Copy)]
pub struct CqDesc {
    /// The CQ number.
    pub cqn: u32,
    /// The CQE buffer (page aligned), `ncqe * cqe_size` bytes.
    pub buf: usize,
    /// Entries: a power of two.
    pub ncqe: u32,
    /// 64 or 128 (with 128, the 64-byte CQE is the second half of each entry).
    pub cqe_size: u32,
    /// The doorbell record: two big-endian u32 words, `[SET_CI, ARM_DB]`.
    pub dbrec: usize,
    /// The UAR page whose `+0x20` register receives the arm doorbell.
    pub uar: usize,
    /// The CQE version of the context (0 or 1): with 1, `srqn_uidx` carries the QP's user index.
    pub cqe_version: u8,
}

/// The transport of a queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

/// A queue pair, as `CREATE_QP` gave it.
#[derive(Debug, Clone, Copy)]
pub struct QpDesc {
    /// The QP number.
    pub qpn: u32,
    /// The transport.
    pub transport: Transport,
    /// The protection domain number.
    pub pdn: u32,
    /// The work-queue buffer: the RQ at offset 0, the SQ after it (`sq_offset`).
    pub buf: usize,
    /// RQ WQEs (a power of two; 0 when the QP uses an SRQ or has no RQ).
    pub rq_wqe_cnt: u32,
    /// log2 of the RQ stride in bytes.
    pub rq_wqe_shift: u32,
    /// Where the SQ starts in `buf`.
    pub sq_offset: usize,
    /// SQ basic blocks of 64 bytes (a power of two).
    pub sq_wqe_cnt: u32,
    /// The doorbell record: big-endian u32 `[RCV counter, SND counter]`.
    pub dbrec: usize,
    /// The BlueFlame register (in a UAR page) this QP rings: 8-byte doorbells and BlueFlame copies.
    pub bf_reg: usize,
    /// The BlueFlame buffer size (half of `bf_reg_size`); the driver alternates between the halves.
    pub bf_buf_size: u32,
    /// The send CQ.
    pub send_cqn: u32,
    /// The receive CQ.
    pub recv_cqn: u32,
    /// The SRQ the QP receives from, if any.
    pub srqn: Option<u32>,
    /// The user index (CQE version 1) or 0xffffff.
    pub uidx: u32,
    /// Every send WQE generates a CQE (`sq_sig_all`).
    pub sq_sig_all: bool,
}

/// The address a connected QP sends to, or a UD AV's resolved destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathDesc {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Source GID index.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label.
    pub flow_label: u32,
    /// Service level.
    pub sl: u8,
    /// Destination LID (IB; 0 on RoCE).
    pub dlid: u16,
    /// Whether the path is global (always on RoCE).
    pub is_global: bool,
    /// Port number.
    pub port: u8,
}

/// The attributes `MODIFY_QP` may set (`ib_uverbs_modify_qp` decoded); which ones apply is `mask`
/// (`IB_QP_*` / `ibv_qp_attr_mask` bits). The kernel half has already checked the transition and the
/// mask against the verbs state table.
#[derive(Debug, Clone, Copy, Default)]
pub struct QpAttrs {
    /// `ib_qp_state` target.
    pub state: u8,
    /// Access flags for remote operations.
    pub access: u32,
    /// Port.
    pub port: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Path MTU (`ib_mtu`: 1 = 256 … 5 = 4096).
    pub path_mtu: u8,
    /// Destination QP number (connected).
    pub dest_qpn: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Outstanding RDMA reads / atomics as initiator.
    pub max_rd_atomic: u8,
    /// … as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (encoded).
    pub min_rnr_timer: u8,
    /// Local ACK timeout (encoded: 4.096 µs × 2^timeout; 0 = infinite).
    pub timeout: u8,
    /// Retries on transport errors.
    pub retry_cnt: u8,
    /// Retries on RNR NAKs (7 = infinite).
    pub rnr_retry: u8,
    /// Primary path.
    pub path: PathDesc,
    /// Which fields apply.
    pub mask: u32,
}

/// A shared receive queue, as `CREATE_SRQ` gave it.
#[derive(Debug, Clone, Copy)]
pub struct SrqDesc {
    /// The SRQ number.
    pub srqn: u32,
    /// The protection domain number.
    pub pdn: u32,
    /// The WQE buffer: `wqe_cnt` WQEs of `1 << wqe_shift` bytes, each a next segment and data
    /// segments, linked through `next_wqe_index`.
    pub buf: usize,
    /// WQEs (a power of two).
    pub wqe_cnt: u32,
    /// log2 of the WQE stride.
    pub wqe_shift: u32,
    /// The doorbell record: big-endian u32 `[counter]`.
    pub dbrec: usize,
    /// The user index (CQE version 1).
    pub uidx: u32,
}

/// The model HCA. Shared by the kernel half and the engine thread; the engine stops when the last
/// `Arc` is dropped.
#[derive(Debug)]
pub struct Hca {
    _private: (),
}

impl Hca {
    /// A new HCA with one port whose GID table is `gids` (index → GID), delivering events to `sink`.
    pub fn new(gids: Vec<[u8; 16]>, sink: Arc<dyn EventSink>) -> Arc<Hca> {
        let _ = (gids, sink);
        todo!()
    }

    /// Adds an MKey.
    pub fn reg_mr(&self, mr: MrDesc) {
        let _ = mr;
        todo!()
    }

    /// Removes an MKey: from now on WQEs naming it fail with the protection / access syndromes.
    pub fn dereg_mr(&self, lkey: u32) {
        let _ = lkey;
        todo!()
    }

    /// Adds a CQ.
    pub fn create_cq(&self, cq: CqDesc) {
        let _ = cq;
        todo!()
    }

    /// Removes a CQ (the kernel half refuses while QPs or SRQs use it: EBUSY). When this returns the
    /// HCA no longer touches the CQ's memory.
    pub fn destroy_cq(&self, cqn: u32) {
        let _ = cqn;
        todo!()
    }

    /// Adds a QP in RESET.
    pub fn create_qp(&self, qp: QpDesc) {
        let _ = qp;
        todo!()
    }

    /// Applies a checked state transition; moving to ERROR flushes every outstanding WQE with
    /// `WR_FLUSH_ERR`, moving to RESET forgets the queues' positions.
    pub fn modify_qp(&self, qpn: u32, attrs: &QpAttrs) -> Result<(), Errno> {
        let _ = (qpn, attrs);
        todo!()
    }

    /// The QP's current attributes (state included).
    pub fn query_qp(&self, qpn: u32) -> Option<QpAttrs> {
        let _ = qpn;
        todo!()
    }

    /// Removes a QP. When this returns the HCA no longer touches its memory.
    pub fn destroy_qp(&self, qpn: u32) {
        let _ = qpn;
        todo!()
    }

    /// Adds an SRQ.
    pub fn create_srq(&self, srq: SrqDesc) {
        let _ = srq;
        todo!()
    }

    /// Arms the SRQ limit event: when fewer than `limit` WQEs remain, one `SRQ_LIMIT_REACHED` is raised
    /// and the limit disarms (0 disarms).
    pub fn set_srq_limit(&self, srqn: u32, limit: u32) {
        let _ = (srqn, limit);
        todo!()
    }

    /// The SRQ's armed limit.
    pub fn srq_limit(&self, srqn: u32) -> u32 {
        let _ = srqn;
        todo!()
    }

    /// Removes an SRQ.
    pub fn destroy_srq(&self, srqn: u32) {
        let _ = srqn;
        todo!()
    }

    /// Attaches a UD QP to a multicast group.
    pub fn attach_mcast(&self, qpn: u32, gid: [u8; 16]) -> Result<(), Errno> {
        let _ = (qpn, gid);
        todo!()
    }

    /// Detaches it.
    pub fn detach_mcast(&self, qpn: u32, gid: [u8; 16]) -> Result<(), Errno> {
        let _ = (qpn, gid);
        todo!()
    }

    /// Sets the port's state (ACTIVE or DOWN), raising PORT_ACTIVE / PORT_ERR.
    pub fn set_port_active(&self, active: bool) {
        let _ = active;
        todo!()
    }
}
