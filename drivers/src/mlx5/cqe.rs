//! mlx5 completion queue entries: [`Cqe64`] (`struct mlx5_cqe64`) and [`ErrCqe`]
//! (`struct mlx5_err_cqe`) as zerocopy structs with big-endian fields, the syndrome → work
//! completion status table, and [`CqPoller`], which polls a caller-provided CQ buffer the way
//! rdma-core's `providers/mlx5/cq.c` does.
//!
//! # Ownership
//!
//! The CQ is a power-of-two number `ncqe` of 64- or 128-byte entries; with 128-byte entries the
//! `mlx5_cqe64` is the *second* half. Software keeps a free-running consumer index `ci`; the entry
//! at `ci & (ncqe - 1)` is software's when its opcode is not [`cqe_opcode::INVALID`] and its owner
//! bit equals `(ci & ncqe) != 0`. The device writes owner bit 0 on its first pass through the
//! ring, 1 on the second, and so on, so the expected parity flips at every wrap and entries left
//! from the previous pass read as the device's. At creation every entry's `op_own` is
//! `INVALID << 4` ([`init_buffer`]).
//!
//! After taking an entry, software increments `ci` and issues [`barrier::udma_from_device_barrier`]
//! before reading the rest of it; after a batch it stores `ci & 0xffffff` into the doorbell record
//! ([`CqPoller::update_consumer_index`]) so the device may reuse the entries.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::doorbell::{DoorbellRecordWriter, UarWriter, CQ_ARM_DB, CQ_DOORBELL, CQ_SET_CI};
use super::wqe::{opcode, Retired, SendQueue};
use crate::barrier;
use crate::error::{Error, Result, Verb};

/// CQE opcodes (`MLX5_CQE_*`), the high nibble of `op_own`.
pub mod cqe_opcode {
    /// A send WQE completed (requester).
    pub const REQ: u8 = 0;
    /// An RDMA write with immediate arrived (responder).
    pub const RESP_WR_IMM: u8 = 1;
    /// A send arrived.
    pub const RESP_SEND: u8 = 2;
    /// A send with immediate arrived.
    pub const RESP_SEND_IMM: u8 = 3;
    /// A send with invalidate arrived.
    pub const RESP_SEND_INV: u8 = 4;
    /// The CQ was resized.
    pub const RESIZE_CQ: u8 = 5;
    /// Tag matching without a packet.
    pub const NO_PACKET: u8 = 6;
    /// Signature error.
    pub const SIG_ERR: u8 = 12;
    /// A send WQE completed with an error.
    pub const REQ_ERR: u8 = 13;
    /// A receive WQE completed with an error.
    pub const RESP_ERR: u8 = 14;
    /// Not written by the device (yet).
    pub const INVALID: u8 = 15;
}

/// Error CQE syndromes (`MLX5_CQE_SYNDROME_*`).
pub mod syndrome {
    /// Local length error.
    pub const LOCAL_LENGTH_ERR: u8 = 0x01;
    /// Local QP operation error.
    pub const LOCAL_QP_OP_ERR: u8 = 0x02;
    /// Local protection error.
    pub const LOCAL_PROT_ERR: u8 = 0x04;
    /// Flushed.
    pub const WR_FLUSH_ERR: u8 = 0x05;
    /// Memory window bind error.
    pub const MW_BIND_ERR: u8 = 0x06;
    /// Bad response.
    pub const BAD_RESP_ERR: u8 = 0x10;
    /// Local access error.
    pub const LOCAL_ACCESS_ERR: u8 = 0x11;
    /// Remote invalid request.
    pub const REMOTE_INVAL_REQ_ERR: u8 = 0x12;
    /// Remote access error.
    pub const REMOTE_ACCESS_ERR: u8 = 0x13;
    /// Remote operation error.
    pub const REMOTE_OP_ERR: u8 = 0x14;
    /// Transport retries exceeded.
    pub const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;
    /// RNR retries exceeded.
    pub const RNR_RETRY_EXC_ERR: u8 = 0x16;
    /// Remote aborted.
    pub const REMOTE_ABORTED_ERR: u8 = 0x22;
}

pub use crate::wc::{wc_flags, wc_opcode, wc_status, WorkCompletion};

/// `op_own` bit: received data scattered into the CQE itself (`MLX5_INLINE_SCATTER_32`).
pub const INLINE_SCATTER_32: u8 = 0x4;
/// `op_own` bit: received data scattered into the 64 bytes before the CQE
/// (`MLX5_INLINE_SCATTER_64`).
pub const INLINE_SCATTER_64: u8 = 0x8;
/// `op_own` bit: the owner bit (`MLX5_CQE_OWNER_MASK`).
pub const OWNER_MASK: u8 = 1;
/// Arm command: next completion (`MLX5_CQ_DB_REQ_NOT`).
pub const CQ_DB_REQ_NOT: u32 = 0;
/// Arm command: next solicited completion (`MLX5_CQ_DB_REQ_NOT_SOL`).
pub const CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;

/// A completion queue entry (`struct mlx5_cqe64`, 64 bytes). The first 24 bytes also overlay
/// tag-matching data, which is not modelled.
#[repr(C)]
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
    Unaligned,
)]
pub struct Cqe64 {
    /// Reserved.
    pub rsvd0: [u8; 2],
    /// Striding RQ: WQE id.
    pub wqe_id: U16,
    /// Reserved.
    pub rsvd4: [u8; 13],
    /// Destination LID path bits (low 7 bits).
    pub ml_path: u8,
    /// Reserved.
    pub rsvd20: [u8; 4],
    /// Source LID.
    pub slid: U16,
    /// Source QP (bits 23:0), SL (27:24), GRH type (29:28, non-zero: GRH present).
    pub flags_rqpn: U32,
    /// Checksum flags.
    pub hds_ip_ext: u8,
    /// L3/L4 header types.
    pub l4_hdr_type_etc: u8,
    /// VLAN tag.
    pub vlan_info: U16,
    /// SRQ number or user index (low 24 bits).
    pub srqn_uidx: U32,
    /// Immediate data (wire order), invalidated rkey, or P_Key index (low 16 bits).
    pub imm_inval_pkey: U32,
    /// Application (tag matching).
    pub app: u8,
    /// Application operation.
    pub app_op: u8,
    /// Application info.
    pub app_info: U16,
    /// Bytes transferred.
    pub byte_cnt: U32,
    /// Completion timestamp.
    pub timestamp: U64,
    /// QPN (bits 23:0); on requester CQEs the WQE's mlx5 opcode in bits 31:24.
    pub sop_drop_qpn: U32,
    /// The WQE counter: the index of the completed WQE.
    pub wqe_counter: U16,
    /// Signature.
    pub signature: u8,
    /// Opcode (7:4), format (3:2; with bit 2 and 3 also the inline-scatter flags), solicited event
    /// (1), owner (0).
    pub op_own: u8,
}

/// An error CQE (`struct mlx5_err_cqe`, 64 bytes): the same entry read with the error layout,
/// for opcodes [`cqe_opcode::REQ_ERR`] and [`cqe_opcode::RESP_ERR`].
#[repr(C)]
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
    Unaligned,
)]
pub struct ErrCqe {
    /// Reserved.
    pub rsvd0: [u8; 32],
    /// SRQ number or user index.
    pub srqn: U32,
    /// Reserved.
    pub rsvd1: [u8; 18],
    /// Vendor syndrome (`ibv_wc.vendor_err`).
    pub vendor_err_synd: u8,
    /// Syndrome ([`syndrome`]).
    pub syndrome: u8,
    /// The WQE's mlx5 opcode (31:24) and the QPN (23:0).
    pub s_wqe_opcode_qpn: U32,
    /// The WQE counter.
    pub wqe_counter: U16,
    /// Signature.
    pub signature: u8,
    /// As in [`Cqe64::op_own`].
    pub op_own: u8,
}

/// Whether an entry with this `op_own` is software's at consumer index `ci` in a CQ of `ncqe`
/// entries (rdma-core's `get_sw_cqe`).
pub fn is_sw_owned(op_own: u8, ci: u32, ncqe: u32) -> bool {
    op_own >> 4 != cqe_opcode::INVALID && (op_own & OWNER_MASK) == u8::from(ci & ncqe != 0)
}

/// The owner bit the device writes into the entry it produces as its `index`-th (free running) in a
/// CQ of `ncqe` entries: 0 on its first pass through the ring, 1 on the second, and so on.
pub fn device_owner_bit(index: u32, ncqe: u32) -> u8 {
    u8::from(index & ncqe != 0)
}

/// The work completion status of an error CQE's syndrome (rdma-core's `mlx5_handle_error_cqe`).
pub fn syndrome_status(syndrome: u8) -> u32 {
    match syndrome {
        syndrome::LOCAL_LENGTH_ERR => wc_status::LOC_LEN_ERR,
        syndrome::LOCAL_QP_OP_ERR => wc_status::LOC_QP_OP_ERR,
        syndrome::LOCAL_PROT_ERR => wc_status::LOC_PROT_ERR,
        syndrome::WR_FLUSH_ERR => wc_status::WR_FLUSH_ERR,
        syndrome::MW_BIND_ERR => wc_status::MW_BIND_ERR,
        syndrome::BAD_RESP_ERR => wc_status::BAD_RESP_ERR,
        syndrome::LOCAL_ACCESS_ERR => wc_status::LOC_ACCESS_ERR,
        syndrome::REMOTE_INVAL_REQ_ERR => wc_status::REM_INV_REQ_ERR,
        syndrome::REMOTE_ACCESS_ERR => wc_status::REM_ACCESS_ERR,
        syndrome::REMOTE_OP_ERR => wc_status::REM_OP_ERR,
        syndrome::TRANSPORT_RETRY_EXC_ERR => wc_status::RETRY_EXC_ERR,
        syndrome::RNR_RETRY_EXC_ERR => wc_status::RNR_RETRY_EXC_ERR,
        syndrome::REMOTE_ABORTED_ERR => wc_status::REM_ABORT_ERR,
        _ => wc_status::GENERAL_ERR,
    }
}

/// The work completion opcode and flags of a requester CQE for a WQE of mlx5 opcode `op`
/// (rdma-core's `handle_good_req`); `None` for opcodes this backend does not post.
pub fn send_wc_opcode(op: u8) -> Option<(u32, u32)> {
    Some(match op {
        opcode::RDMA_WRITE => (wc_opcode::RDMA_WRITE, 0),
        opcode::RDMA_WRITE_IMM => (wc_opcode::RDMA_WRITE, wc_flags::WITH_IMM),
        opcode::SEND | opcode::SEND_INVAL => (wc_opcode::SEND, 0),
        opcode::SEND_IMM => (wc_opcode::SEND, wc_flags::WITH_IMM),
        opcode::RDMA_READ => (wc_opcode::RDMA_READ, 0),
        opcode::ATOMIC_CS => (wc_opcode::COMP_SWAP, 0),
        opcode::ATOMIC_FA => (wc_opcode::FETCH_ADD, 0),
        opcode::TSO => (wc_opcode::TSO, 0),
        _ => return None,
    })
}

impl Cqe64 {
    /// The `mlx5_cqe64` of a CQ entry of 64 or 128 bytes (the last 64 bytes), copied out.
    pub fn from_entry(entry: &[u8]) -> Option<Cqe64> {
        match entry.len() {
            64 | 128 => Cqe64::read_from_bytes(&entry[entry.len() - 64..]).ok(),
            _ => None,
        }
    }

    /// The owner bit (`mlx5dv_get_cqe_owner`).
    pub fn owner(&self) -> u8 {
        self.op_own & OWNER_MASK
    }

    /// Sets the owner bit, keeping the rest of `op_own` (`mlx5dv_set_cqe_owner`).
    pub fn set_owner(&mut self, owner: u8) {
        self.op_own = (owner & OWNER_MASK) | (self.op_own & !OWNER_MASK);
    }

    /// The solicited-event bit (`mlx5dv_get_cqe_se`).
    pub fn se(&self) -> u8 {
        (self.op_own >> 1) & 1
    }

    /// The format field (`mlx5dv_get_cqe_format`); bits 0 and 1 of it are also
    /// [`INLINE_SCATTER_32`] and [`INLINE_SCATTER_64`].
    pub fn format(&self) -> u8 {
        (self.op_own >> 2) & 3
    }

    /// The CQE opcode ([`cqe_opcode`]; `mlx5dv_get_cqe_opcode`).
    pub fn opcode(&self) -> u8 {
        self.op_own >> 4
    }

    /// Whether this entry is software's at consumer index `ci` of a CQ of `ncqe` entries.
    pub fn is_sw_owned(&self, ci: u32, ncqe: u32) -> bool {
        is_sw_owned(self.op_own, ci, ncqe)
    }

    /// The local QP number.
    pub fn qpn(&self) -> u32 {
        self.sop_drop_qpn.get() & 0xff_ffff
    }

    /// On a requester CQE: the completed WQE's mlx5 opcode.
    pub fn send_opcode(&self) -> u8 {
        (self.sop_drop_qpn.get() >> 24) as u8
    }

    /// The SRQ number or user index (24 bits).
    pub fn srqn_uidx(&self) -> u32 {
        self.srqn_uidx.get() & 0xff_ffff
    }

    /// The source QP of a received datagram.
    pub fn src_qp(&self) -> u32 {
        self.flags_rqpn.get() & 0xff_ffff
    }

    /// The service level of a received packet.
    pub fn sl(&self) -> u8 {
        ((self.flags_rqpn.get() >> 24) & 0xf) as u8
    }

    /// Whether the received packet had a GRH.
    pub fn grh(&self) -> bool {
        (self.flags_rqpn.get() >> 28) & 3 != 0
    }

    /// The byte count.
    pub fn byte_count(&self) -> u32 {
        self.byte_cnt.get()
    }

    /// The immediate data as it came off the wire: the four bytes, read as a native `u32` (the
    /// `ibv_wc.imm_data` convention).
    pub fn imm_data(&self) -> u32 {
        u32::from_ne_bytes(self.imm_inval_pkey.to_bytes())
    }

    /// The rkey a send with invalidate invalidated.
    pub fn invalidated_rkey(&self) -> u32 {
        self.imm_inval_pkey.get()
    }

    /// The P_Key index (GSI).
    pub fn pkey_index(&self) -> u16 {
        self.imm_inval_pkey.get() as u16
    }

    /// Destination LID path bits.
    pub fn dlid_path_bits(&self) -> u8 {
        self.ml_path & 0x7f
    }

    /// The error view of this entry.
    pub fn as_err(&self) -> ErrCqe {
        ErrCqe::read_from_bytes(self.as_bytes()).expect("same size")
    }
}

impl ErrCqe {
    /// The work completion status ([`syndrome_status`] of the syndrome).
    pub fn status(&self) -> u32 {
        syndrome_status(self.syndrome)
    }

    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.s_wqe_opcode_qpn.get() & 0xff_ffff
    }

    /// The failed WQE's mlx5 opcode.
    pub fn wqe_opcode(&self) -> u8 {
        (self.s_wqe_opcode_qpn.get() >> 24) as u8
    }
}

/// Sets every entry of a new CQ buffer to invalid (`op_own = INVALID << 4`), as rdma-core's
/// `mlx5_alloc_cq_buf` does before the buffer is given to the kernel. `entry_size` is 64 or 128.
pub fn init_buffer(buf: &mut [u8], entry_size: usize) {
    for entry in buf.chunks_exact_mut(entry_size) {
        entry[entry_size - 1] = cqe_opcode::INVALID << 4;
    }
}

/// How a CQE names its work queue, as rdma-core looks it up (`get_req_context`, `get_cur_rsc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WqKey {
    /// CQE version 0: by QP number.
    Qpn(u32),
    /// CQE version 0, receive completions of an SRQ: by SRQ number.
    Srqn(u32),
    /// CQE version 1: by the user index given at QP or SRQ creation.
    UserIndex(u32),
}

/// The work queues a CQ reports on: where a [`CqPoller`] finds the `wr_id` of each CQE.
pub trait CompletionTarget {
    /// Retires the send WQE a requester CQE names (`key`, `wqe_counter`; see
    /// [`SendQueue::retire`]). `None` when `key` names no send queue here or no such WQE is
    /// outstanding.
    fn retire_send(&mut self, key: WqKey, wqe_counter: u16) -> Option<Retired>;

    /// The `wr_id` of the receive WQE a responder CQE names, retiring it. `None` when there is no
    /// such receive queue here (the default: none at all).
    fn retire_recv(&mut self, key: WqKey, cqe: &Cqe64) -> Option<u64> {
        let _ = (key, cqe);
        None
    }
}

impl<B: AsRef<[u8]>> CompletionTarget for SendQueue<B> {
    fn retire_send(&mut self, key: WqKey, wqe_counter: u16) -> Option<Retired> {
        let cfg = self.config();
        let ours = match key {
            WqKey::Qpn(qpn) => qpn == cfg.qpn,
            WqKey::UserIndex(uidx) => cfg.user_index == Some(uidx),
            WqKey::Srqn(_) => false,
        };
        if ours {
            self.retire(wqe_counter)
        } else {
            None
        }
    }
}

/// What arming a CQ writes (rdma-core's `mlx5_arm_cq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArmDoorbell {
    /// The doorbell record's arm word (`dbrec[MLX5_CQ_ARM_DB]`): `sn << 28 | cmd | ci`.
    pub dbrec: U32,
    /// The 64-bit UAR write at [`CQ_DOORBELL`], in device byte order: `(sn << 28 | cmd | ci) << 32 |
    /// cqn`, big-endian.
    pub uar: [u8; 8],
}

/// The doorbell record's consumer word for consumer index `ci`: `ci & 0xffffff`, big-endian.
pub fn consumer_index_record(ci: u32) -> U32 {
    U32::new(ci & 0xff_ffff)
}

/// What arming CQ `cqn` writes at consumer index `ci` after `arm_sn` completion events, for the next
/// completion or (`solicited`) the next solicited one: `v = (arm_sn & 3) << 28 | cmd | (ci &
/// 0xffffff)` into the doorbell record, `v << 32 | cqn` to the UAR (rdma-core's `mlx5_arm_cq`).
pub fn arm_doorbell(ci: u32, arm_sn: u32, cqn: u32, solicited: bool) -> ArmDoorbell {
    let cmd = if solicited {
        CQ_DB_REQ_NOT_SOL
    } else {
        CQ_DB_REQ_NOT
    };
    let v = ((arm_sn & 3) << 28) | cmd | (ci & 0xff_ffff);
    ArmDoorbell {
        dbrec: U32::new(v),
        uar: ((u64::from(v) << 32) | u64::from(cqn)).to_be_bytes(),
    }
}

/// The memory of a CQ buffer, as a [`CqPoller`] reads it.
///
/// The device writes entries while software reads others, so a real CQ buffer cannot be a byte
/// slice: the owner byte of the entry at the consumer index may be in the middle of being written.
/// [`CqeMemory::load_op_own`] reads it with an atomic acquire load; the rest of the entry is read
/// ([`CqeMemory::read`]) only once that load said software owns it, when the device no longer
/// writes it. Any `AsRef<[u8]> + AsMut<[u8]>` (a `Vec<u8>` in tests) is a `CqeMemory`.
pub trait CqeMemory {
    /// The buffer's length in bytes.
    fn cqe_buffer_len(&self) -> usize;

    /// The byte at `offset` (an entry's `op_own`), loaded with acquire ordering.
    fn load_op_own(&self, offset: usize) -> u8;

    /// Copies `out.len()` bytes from `offset` (entries software owns).
    fn read(&self, offset: usize, out: &mut [u8]);

    /// Writes `data` at `offset` (entries software owns: rearranging them when a QP is cleaned out).
    /// Never an entry's `op_own` byte, which goes through [`CqeMemory::store_op_own`].
    fn write(&mut self, offset: usize, data: &[u8]);

    /// Stores an entry's `op_own` byte (of an entry software owns, when cleaning), with release
    /// ordering after the entry's other bytes: the device may load that byte at any time (it reads
    /// the entries past an armed consumer index to decide whether to raise an event), atomically,
    /// so this store must be atomic too. The default suits memory no other thread reads.
    fn store_op_own(&mut self, offset: usize, value: u8) {
        self.write(offset, &[value]);
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> CqeMemory for B {
    fn cqe_buffer_len(&self) -> usize {
        self.as_ref().len()
    }

    fn load_op_own(&self, offset: usize) -> u8 {
        self.as_ref()[offset]
    }

    fn read(&self, offset: usize, out: &mut [u8]) {
        out.copy_from_slice(&self.as_ref()[offset..offset + out.len()]);
    }

    fn write(&mut self, offset: usize, data: &[u8]) {
        self.as_mut()[offset..offset + data.len()].copy_from_slice(data);
    }
}

/// A completion queue: polls a caller-provided buffer of CQEs in order, tracking the consumer index
/// and with it the ownership parity (see the [module documentation](self)).
#[derive(Debug)]
pub struct CqPoller<B> {
    buf: B,
    ncqe: u32,
    entry_size: usize,
    cqn: u32,
    cqe_version: u8,
    /// Consumer index (free running).
    ci: u32,
    /// Completion events consumed (`arm_sn`).
    arm_sn: u32,
}

impl<B: CqeMemory> CqPoller<B> {
    /// A CQ over `buf`: a power-of-two number of entries of `entry_size` (64 or 128) bytes,
    /// initialized with [`init_buffer`] when it was given to the kernel. `cqn` is the kernel's CQ
    /// number, `cqe_version` the context's (0 or 1: whether CQEs name QPs by number or user index).
    pub fn new(buf: B, entry_size: usize, cqn: u32, cqe_version: u8) -> Result<CqPoller<B>> {
        let len = buf.cqe_buffer_len();
        let bad = |what: String| Error::InvalidArgument {
            verb: Verb::CreateCq,
            what,
        };
        if entry_size != 64 && entry_size != 128 {
            return Err(bad(format!("CQE size {entry_size} (64 or 128)")));
        }
        let ncqe = len / entry_size;
        if len % entry_size != 0 || !ncqe.is_power_of_two() || ncqe > 1 << 24 {
            return Err(bad(format!(
                "a CQ buffer of {len} bytes (a power of two number of {entry_size}-byte entries, at most 2^24)"
            )));
        }
        if cqe_version > 1 {
            return Err(bad(format!("CQE version {cqe_version}")));
        }
        Ok(CqPoller {
            buf,
            ncqe: ncqe as u32,
            entry_size,
            cqn,
            cqe_version,
            ci: 0,
            arm_sn: 0,
        })
    }

    /// The number of entries.
    pub fn entries(&self) -> u32 {
        self.ncqe
    }

    /// The consumer index (free running).
    pub fn consumer_index(&self) -> u32 {
        self.ci
    }

    /// The buffer.
    pub fn buffer(&self) -> &B {
        &self.buf
    }

    /// The buffer, to play the device in tests.
    pub fn buffer_mut(&mut self) -> &mut B {
        &mut self.buf
    }

    /// The entry at the consumer index if software owns it: takes it (the consumer index
    /// advances), then issues [`barrier::udma_from_device_barrier`] and copies it out (rdma-core's
    /// `mlx5_get_next_cqe`). `None` when the CQ is empty.
    pub fn next_cqe(&mut self) -> Option<Cqe64> {
        let cqe = self.cqe_offset(self.ci);
        if !is_sw_owned(self.buf.load_op_own(cqe + 63), self.ci, self.ncqe) {
            return None;
        }
        self.ci = self.ci.wrapping_add(1);
        barrier::udma_from_device_barrier();
        Some(self.read_cqe(cqe))
    }

    /// The byte offset of the `mlx5_cqe64` of entry `index` (free running): the entry itself, or
    /// its second half with 128-byte entries.
    fn cqe_offset(&self, index: u32) -> usize {
        (index & (self.ncqe - 1)) as usize * self.entry_size + self.entry_size - 64
    }

    fn read_cqe(&self, offset: usize) -> Cqe64 {
        let mut cqe = Cqe64::default();
        self.buf.read(offset, cqe.as_mut_bytes());
        cqe
    }

    /// Removes the completions `remove` selects from the entries software owns, moving the later
    /// ones up so the rest stay in order, and advances the consumer index past the freed entries
    /// (rdma-core's `__mlx5_cq_clean`, used when a QP is destroyed or reset: its CQEs must not be
    /// polled afterwards). `remove` sees every CQE from the newest to the oldest, each once. Returns
    /// how many were removed; when that is not 0, follow with
    /// [`update_consumer_index`](CqPoller::update_consumer_index) (rdma-core issues
    /// [`barrier::udma_to_device_barrier`] first, which the doorbell record's release store
    /// includes).
    ///
    /// The device may add entries while this runs; they are past the ones looked at, so the QP being
    /// cleaned out must no longer produce completions (it is destroyed or in RESET).
    pub fn clean(&mut self, mut remove: impl FnMut(&Cqe64) -> bool) -> u32 {
        let mut prod = self.ci;
        while is_sw_owned(
            self.buf.load_op_own(self.cqe_offset(prod) + 63),
            prod,
            self.ncqe,
        ) {
            prod = prod.wrapping_add(1);
            if prod.wrapping_sub(self.ci) == self.ncqe {
                break;
            }
        }
        barrier::udma_from_device_barrier();
        let mut freed = 0u32;
        let mut entry = vec![0u8; self.entry_size];
        while prod != self.ci {
            prod = prod.wrapping_sub(1);
            let cqe = self.read_cqe(self.cqe_offset(prod));
            if remove(&cqe) {
                freed += 1;
            } else if freed > 0 {
                let size = self.entry_size;
                let src = (prod & (self.ncqe - 1)) as usize * size;
                let dst_index = prod.wrapping_add(freed);
                let dst = (dst_index & (self.ncqe - 1)) as usize * size;
                // The destination keeps its own owner bit: the parity of its place in the ring.
                let owner = self.buf.load_op_own(dst + size - 1) & OWNER_MASK;
                self.buf.read(src, &mut entry);
                // The body, then `op_own` atomically: the device may be loading it (arming).
                self.buf.write(dst, &entry[..size - 1]);
                self.buf
                    .store_op_own(dst + size - 1, (entry[size - 1] & !OWNER_MASK) | owner);
            }
        }
        self.ci = self.ci.wrapping_add(freed);
        freed
    }

    fn key(&self, cqe: &Cqe64, receive: bool) -> WqKey {
        match (self.cqe_version, receive) {
            (1, _) => WqKey::UserIndex(cqe.srqn_uidx()),
            (_, true) if cqe.srqn_uidx() != 0 => WqKey::Srqn(cqe.srqn_uidx()),
            _ => WqKey::Qpn(cqe.qpn()),
        }
    }

    /// Polls one completion (rdma-core's `mlx5_poll_one` / `mlx5_parse_cqe`): `Ok(None)` when the
    /// CQ is empty. Resize CQEs are skipped. A CQE that names no queue of `target` (or no
    /// outstanding WQE), or that has an opcode this backend does not use (tag matching,
    /// signature errors), is consumed and reported as an error, as rdma-core does.
    pub fn poll_one(
        &mut self,
        target: &mut impl CompletionTarget,
    ) -> Result<Option<WorkCompletion>> {
        let mut wc = WorkCompletion::default();
        Ok(self.poll_into(target, &mut wc)?.then_some(wc))
    }

    /// [`poll_one`](CqPoller::poll_one) into `wc`: `Ok(true)` when it polled a completion
    /// (all of `wc` written), `Ok(false)` when the CQ is empty (`wc` untouched).
    ///
    /// A successful requester CQE, the common case, is read straight into `wc`: after the owner
    /// byte's acquire load and [`barrier::udma_from_device_barrier`], only the words it needs (user
    /// index, byte count, opcode and QPN, WQE counter); the other CQEs go the general way.
    #[inline]
    pub fn poll_into(
        &mut self,
        target: &mut impl CompletionTarget,
        wc: &mut WorkCompletion,
    ) -> Result<bool> {
        let offset = self.cqe_offset(self.ci);
        let op_own = self.buf.load_op_own(offset + 63);
        if !is_sw_owned(op_own, self.ci, self.ncqe) {
            return Ok(false);
        }
        if op_own >> 4 != cqe_opcode::REQ {
            return self.poll_into_general(target, wc);
        }
        self.ci = self.ci.wrapping_add(1);
        barrier::udma_from_device_barrier();
        // Bytes 32..64 of the CQE: srqn_uidx at 0, byte_cnt at 12, sop_drop_qpn at 24,
        // wqe_counter at 28.
        const _: () = assert!(
            std::mem::offset_of!(Cqe64, srqn_uidx) == 32
                && std::mem::offset_of!(Cqe64, byte_cnt) == 44
                && std::mem::offset_of!(Cqe64, sop_drop_qpn) == 56
                && std::mem::offset_of!(Cqe64, wqe_counter) == 60
        );
        let mut tail = [0u8; 32];
        self.buf.read(offset + 32, &mut tail);
        let word =
            |at: usize| u32::from_be_bytes([tail[at], tail[at + 1], tail[at + 2], tail[at + 3]]);
        let sop_drop_qpn = word(24);
        let qpn = sop_drop_qpn & 0xff_ffff;
        let key = if self.cqe_version == 1 {
            WqKey::UserIndex(word(0) & 0xff_ffff)
        } else {
            WqKey::Qpn(qpn)
        };
        let Some(retired) = target.retire_send(key, u16::from_be_bytes([tail[28], tail[29]]))
        else {
            return Err(self.req_error(offset, false));
        };
        let Some((opcode, wc_flags)) = send_wc_opcode((sop_drop_qpn >> 24) as u8) else {
            return Err(self.req_error(offset, true));
        };
        *wc = WorkCompletion {
            wr_id: retired.wr_id,
            opcode,
            wc_flags,
            byte_len: match opcode {
                wc_opcode::RDMA_READ => word(12),
                wc_opcode::COMP_SWAP | wc_opcode::FETCH_ADD => 8,
                _ => 0,
            },
            qp_num: qpn,
            ..WorkCompletion::default()
        };
        Ok(true)
    }

    /// The error of a requester CQE `poll_into` took at `offset` (still software's: the consumer
    /// index has not been published): no such send WQE outstanding, or (`opcode`) an mlx5 opcode
    /// this backend does not post.
    #[cold]
    #[inline(never)]
    fn req_error(&self, offset: usize, opcode: bool) -> Error {
        let cqe = self.read_cqe(offset);
        let what = if opcode {
            format!("a send CQE for mlx5 opcode {:#x}", cqe.send_opcode())
        } else {
            format!(
                "a send CQE for QP {:#x} (user index {:#x}), WQE {:#x}, that no queue expects",
                cqe.qpn(),
                cqe.srqn_uidx(),
                cqe.wqe_counter.get()
            )
        };
        Error::Protocol {
            verb: Verb::PollCq,
            what,
        }
    }

    /// `poll_into` for CQEs other than successful requester ones.
    #[inline(never)]
    fn poll_into_general(
        &mut self,
        target: &mut impl CompletionTarget,
        wc: &mut WorkCompletion,
    ) -> Result<bool> {
        match self.poll_one_general(target)? {
            Some(c) => {
                *wc = c;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn poll_one_general(
        &mut self,
        target: &mut impl CompletionTarget,
    ) -> Result<Option<WorkCompletion>> {
        loop {
            let Some(cqe) = self.next_cqe() else {
                return Ok(None);
            };
            let op = cqe.opcode();
            let mut wc = WorkCompletion {
                qp_num: cqe.qpn(),
                ..WorkCompletion::default()
            };
            let orphan = |what: &str| {
                Error::Protocol {
                verb: Verb::PollCq,
                what: format!(
                    "a {what} CQE for QP {:#x} (user index {:#x}), WQE {:#x}, that no queue expects",
                    cqe.qpn(),
                    cqe.srqn_uidx(),
                    cqe.wqe_counter.get()
                ),
            }
            };
            match op {
                cqe_opcode::REQ => {
                    let key = self.key(&cqe, false);
                    let retired = target
                        .retire_send(key, cqe.wqe_counter.get())
                        .ok_or_else(|| orphan("send"))?;
                    let (opcode, flags) =
                        send_wc_opcode(cqe.send_opcode()).ok_or_else(|| Error::Protocol {
                            verb: Verb::PollCq,
                            what: format!("a send CQE for mlx5 opcode {:#x}", cqe.send_opcode()),
                        })?;
                    wc.wr_id = retired.wr_id;
                    wc.opcode = opcode;
                    wc.wc_flags = flags;
                    wc.byte_len = match opcode {
                        wc_opcode::RDMA_READ => cqe.byte_count(),
                        wc_opcode::COMP_SWAP | wc_opcode::FETCH_ADD => 8,
                        _ => 0,
                    };
                }
                cqe_opcode::RESP_WR_IMM
                | cqe_opcode::RESP_SEND
                | cqe_opcode::RESP_SEND_IMM
                | cqe_opcode::RESP_SEND_INV => {
                    let key = self.key(&cqe, true);
                    wc.wr_id = target
                        .retire_recv(key, &cqe)
                        .ok_or_else(|| orphan("receive"))?;
                    wc.byte_len = cqe.byte_count();
                    (wc.opcode, wc.wc_flags, wc.imm_data) = match op {
                        cqe_opcode::RESP_WR_IMM => (
                            wc_opcode::RECV_RDMA_WITH_IMM,
                            wc_flags::WITH_IMM,
                            cqe.imm_data(),
                        ),
                        cqe_opcode::RESP_SEND_IMM => {
                            (wc_opcode::RECV, wc_flags::WITH_IMM, cqe.imm_data())
                        }
                        cqe_opcode::RESP_SEND_INV => {
                            (wc_opcode::RECV, wc_flags::WITH_INV, cqe.invalidated_rkey())
                        }
                        _ => (wc_opcode::RECV, 0, 0),
                    };
                    if cqe.grh() {
                        wc.wc_flags |= wc_flags::GRH;
                    }
                    wc.slid = cqe.slid.get();
                    wc.sl = cqe.sl();
                    wc.src_qp = cqe.src_qp();
                    wc.dlid_path_bits = cqe.dlid_path_bits();
                    wc.pkey_index = cqe.pkey_index();
                }
                cqe_opcode::REQ_ERR | cqe_opcode::RESP_ERR => {
                    let err = cqe.as_err();
                    wc.status = err.status();
                    wc.vendor_err = u32::from(err.vendor_err_synd);
                    if op == cqe_opcode::REQ_ERR {
                        let key = self.key(&cqe, false);
                        let retired = target
                            .retire_send(key, err.wqe_counter.get())
                            .ok_or_else(|| orphan("send error"))?;
                        wc.wr_id = retired.wr_id;
                        wc.opcode = send_wc_opcode(retired.opcode).map_or(0, |(o, _)| o);
                    } else {
                        let key = self.key(&cqe, true);
                        wc.wr_id = target
                            .retire_recv(key, &cqe)
                            .ok_or_else(|| orphan("receive error"))?;
                        wc.opcode = wc_opcode::RECV;
                    }
                }
                cqe_opcode::RESIZE_CQ => continue,
                _ => {
                    return Err(Error::Protocol {
                        verb: Verb::PollCq,
                        what: format!("a CQE with opcode {op}"),
                    })
                }
            }
            return Ok(Some(wc));
        }
    }

    /// Polls up to `out.len()` completions into `out`; returns how many. Stops at the first error
    /// (the completions before it are in `out`, and consumed). Follow it with
    /// [`update_consumer_index`](CqPoller::update_consumer_index).
    pub fn poll(
        &mut self,
        target: &mut impl CompletionTarget,
        out: &mut [WorkCompletion],
    ) -> Result<usize> {
        for (n, slot) in out.iter_mut().enumerate() {
            if !self.poll_into(target, slot)? {
                return Ok(n);
            }
        }
        Ok(out.len())
    }

    /// The doorbell record's consumer word (`dbrec[MLX5_CQ_SET_CI]`): `ci & 0xffffff`.
    pub fn consumer_index_record(&self) -> U32 {
        consumer_index_record(self.ci)
    }

    /// Tells the device which entries it may reuse: stores
    /// [`consumer_index_record`](CqPoller::consumer_index_record) into `dbrec`
    /// (rdma-core's `update_cons_index`, once per poll batch).
    pub fn update_consumer_index(&self, dbrec: &mut impl DoorbellRecordWriter) {
        dbrec.store(CQ_SET_CI, self.consumer_index_record());
    }

    /// What arming the CQ for the next completion (or the next solicited one) writes.
    pub fn arm_doorbell(&self, solicited: bool) -> ArmDoorbell {
        arm_doorbell(self.ci, self.arm_sn, self.cqn, solicited)
    }

    /// Arms the CQ (rdma-core's `mlx5_arm_cq`): the arm word into the doorbell record,
    /// [`barrier::mmio_wc_start`], the 64-bit write at [`CQ_DOORBELL`] of `uar` (the UAR page),
    /// [`barrier::mmio_flush_writes`].
    pub fn arm(
        &self,
        solicited: bool,
        dbrec: &mut impl DoorbellRecordWriter,
        uar: &mut impl UarWriter,
    ) {
        let db = self.arm_doorbell(solicited);
        dbrec.store(CQ_ARM_DB, db.dbrec);
        barrier::mmio_wc_start();
        uar.write64_be(CQ_DOORBELL, db.uar);
        barrier::mmio_flush_writes();
    }

    /// Counts a completion event read from the completion channel, so the next arm carries the
    /// next sequence number (rdma-core's `mlx5_cq_event`).
    pub fn event(&mut self) {
        self.arm_sn = self.arm_sn.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx5::doorbell::DoorbellRecord;
    use crate::mlx5::wqe::{QpType, SendQueueConfig};
    use crate::wr::{self, SendWr, Sge};

    /// Plays the device: writes `cqe` as the `index`-th entry it produces, with the owner bit of
    /// that pass.
    fn produce(cq: &mut CqPoller<Vec<u8>>, index: u32, mut cqe: Cqe64) {
        let (n, size) = (cq.entries(), cq.entry_size);
        cqe.set_owner(device_owner_bit(index, n));
        let at = (index & (n - 1)) as usize * size + size - 64;
        cq.buffer_mut()[at..at + 64].copy_from_slice(cqe.as_bytes());
    }

    fn req_cqe(qpn: u32, op: u8, wqe_counter: u16) -> Cqe64 {
        Cqe64 {
            sop_drop_qpn: U32::new((u32::from(op) << 24) | qpn),
            wqe_counter: U16::new(wqe_counter),
            op_own: cqe_opcode::REQ << 4,
            ..Cqe64::default()
        }
    }

    fn new_cq(n: usize, size: usize) -> CqPoller<Vec<u8>> {
        let mut buf = vec![0u8; n * size];
        init_buffer(&mut buf, size);
        CqPoller::new(buf, size, 0x99, 0).unwrap()
    }

    fn sq_cfg() -> SendQueueConfig {
        SendQueueConfig {
            qpn: 0x51,
            user_index: Some(7),
            qp_type: QpType::Rc,
            max_send_wr: 64,
            max_send_sge: 4,
            max_inline_data: 64,
            sq_sig_all: false,
        }
    }

    #[test]
    fn struct_sizes() {
        assert_eq!(std::mem::size_of::<Cqe64>(), 64);
        assert_eq!(std::mem::size_of::<ErrCqe>(), 64);
        assert_eq!(std::mem::offset_of!(Cqe64, flags_rqpn), 24);
        assert_eq!(std::mem::offset_of!(Cqe64, sop_drop_qpn), 56);
        assert_eq!(std::mem::offset_of!(ErrCqe, syndrome), 55);
    }

    #[test]
    fn ownership_parity() {
        // ncqe 4: pass 0 wants owner 0, pass 1 owner 1, pass 2 owner 0 ...
        for ci in 0..32u32 {
            let want = ((ci / 4) & 1) as u8;
            assert!(is_sw_owned(want, ci, 4));
            assert!(!is_sw_owned(want ^ 1, ci, 4));
            assert!(!is_sw_owned(0xf0 | want, ci, 4), "INVALID never");
        }
    }

    #[test]
    fn fresh_buffer_is_empty_for_both_sizes() {
        for size in [64, 128] {
            let mut cq = new_cq(8, size);
            assert!(cq.next_cqe().is_none());
            assert_eq!(cq.consumer_index(), 0);
        }
        assert!(CqPoller::new(vec![0u8; 3 * 64], 64, 1, 0).is_err());
        assert!(CqPoller::new(vec![0u8; 4 * 64], 96, 1, 0).is_err());
    }

    #[test]
    fn parity_across_several_wraps_with_128_byte_entries() {
        let mut cq = new_cq(4, 128);
        let mut buf = vec![0u8; 64 * 64];
        let mut sq = SendQueue::new(&mut buf[..], sq_cfg()).unwrap();
        let sges = [Sge {
            addr: 1,
            length: 1,
            lkey: 2,
        }];
        let mut produced = 0u32;
        for round in 0..5u64 {
            // Post 3 requests, the device completes them; some rounds leave entries unconsumed
            // across a wrap boundary until the next poll.
            let mut idx = Vec::new();
            for i in 0..3 {
                let w = sq.post(&SendWr::send(round * 10 + i, &sges), None).unwrap();
                idx.push(w.index);
            }
            for &i in &idx {
                produce(&mut cq, produced, req_cqe(0x51, opcode::SEND, i));
                produced += 1;
            }
            for i in 0..3 {
                let wc = cq.poll_one(&mut sq).unwrap().unwrap();
                assert_eq!(wc.wr_id, round * 10 + i);
                assert_eq!(
                    (wc.status, wc.opcode, wc.qp_num),
                    (0, wc_opcode::SEND, 0x51)
                );
            }
            // Stale entries from the previous pass are not taken.
            assert!(cq.poll_one(&mut sq).unwrap().is_none());
        }
        assert_eq!(cq.consumer_index(), 15);
        let mut dbrec = DoorbellRecord::default();
        cq.update_consumer_index(&mut dbrec);
        assert_eq!(dbrec.as_bytes(), &[0, 0, 0, 15, 0, 0, 0, 0]);
    }

    #[test]
    fn unsignaled_retired_by_a_later_completion() {
        let mut cq = new_cq(8, 64);
        let mut buf = vec![0u8; 8 * 64];
        let mut sq = SendQueue::new(&mut buf[..], sq_cfg()).unwrap();
        let sges = [Sge {
            addr: 1,
            length: 8,
            lkey: 2,
        }];
        let mut quiet = SendWr::send(0, &sges);
        quiet.flags = 0;
        for id in 0..7 {
            quiet.wr_id = id;
            sq.post(&quiet, None).unwrap();
        }
        let mut read = SendWr::send(100, &sges);
        read.opcode = wr::opcode::RDMA_READ;
        let w = sq.post(&read, None).unwrap();
        assert_eq!(sq.outstanding(), 8);
        assert!(sq.post(&quiet, None).is_err(), "ring full");
        let mut cqe = req_cqe(0x51, opcode::RDMA_READ, w.index);
        cqe.byte_cnt = U32::new(8);
        produce(&mut cq, 0, cqe);
        let wc = cq.poll_one(&mut sq).unwrap().unwrap();
        assert_eq!(
            (wc.wr_id, wc.opcode, wc.byte_len),
            (100, wc_opcode::RDMA_READ, 8)
        );
        assert_eq!(sq.outstanding(), 0);
        assert_eq!(sq.free_blocks(), 8);
        // A completion for an unsignaled request that was already retired is refused.
        produce(&mut cq, 1, req_cqe(0x51, opcode::SEND, 3));
        assert!(matches!(cq.poll_one(&mut sq), Err(Error::Protocol { .. })));
        assert_eq!(cq.consumer_index(), 2, "consumed anyway");
    }

    #[test]
    fn user_index_lookup_and_errors() {
        let mut buf = vec![0u8; 4 * 64];
        init_buffer(&mut buf, 64);
        let mut cq = CqPoller::new(buf, 64, 3, 1).unwrap();
        let mut ring = vec![0u8; 4 * 64];
        let mut sq = SendQueue::new(&mut ring[..], sq_cfg()).unwrap();
        let sges = [Sge {
            addr: 1,
            length: 8,
            lkey: 2,
        }];
        let mut cas = SendWr::send(5, &sges);
        cas.opcode = wr::opcode::ATOMIC_CMP_AND_SWP;
        let w = sq.post(&cas, None).unwrap();
        let mut err = ErrCqe {
            srqn: U32::new(7),
            vendor_err_synd: 0x81,
            syndrome: syndrome::REMOTE_ACCESS_ERR,
            s_wqe_opcode_qpn: U32::new((u32::from(opcode::ATOMIC_CS) << 24) | 0x51),
            wqe_counter: U16::new(w.index),
            op_own: cqe_opcode::REQ_ERR << 4,
            ..ErrCqe::default()
        };
        // Wrong user index: nobody's.
        err.srqn = U32::new(8);
        let mut buf_cqe = Cqe64::read_from_bytes(err.as_bytes()).unwrap();
        buf_cqe.set_owner(0);
        cq.buffer_mut()[..64].copy_from_slice(buf_cqe.as_bytes());
        assert!(cq.poll_one(&mut sq).is_err());
        err.srqn = U32::new(7);
        let cqe = Cqe64::read_from_bytes(err.as_bytes()).unwrap();
        cq.buffer_mut()[64..128].copy_from_slice(cqe.as_bytes());
        let wc = cq.poll_one(&mut sq).unwrap().unwrap();
        assert_eq!(
            (wc.wr_id, wc.status, wc.vendor_err, wc.opcode),
            (5, wc_status::REM_ACCESS_ERR, 0x81, wc_opcode::COMP_SWAP)
        );
    }

    struct Rq(Vec<u64>);

    impl CompletionTarget for Rq {
        fn retire_send(&mut self, _: WqKey, _: u16) -> Option<Retired> {
            None
        }
        fn retire_recv(&mut self, key: WqKey, cqe: &Cqe64) -> Option<u64> {
            (key == WqKey::Qpn(0x51)).then(|| self.0[cqe.wqe_counter.get() as usize])
        }
    }

    #[test]
    fn receive_completions() {
        let mut cq = new_cq(2, 64);
        let mut rq = Rq(vec![40, 41, 42]);
        let mut cqe = Cqe64 {
            sop_drop_qpn: U32::new(0x51),
            flags_rqpn: U32::new((1 << 28) | (5 << 24) | 0xabcd),
            imm_inval_pkey: U32::new(0x0102_0304),
            byte_cnt: U32::new(1000),
            slid: U16::new(9),
            ml_path: 0xff,
            wqe_counter: U16::new(1),
            op_own: cqe_opcode::RESP_SEND_IMM << 4 | 2,
            ..Cqe64::default()
        };
        produce(&mut cq, 0, cqe);
        let wc = cq.poll_one(&mut rq).unwrap().unwrap();
        assert_eq!(wc.wr_id, 41);
        assert_eq!(wc.opcode, wc_opcode::RECV);
        assert_eq!(wc.wc_flags, wc_flags::WITH_IMM | wc_flags::GRH);
        assert_eq!(wc.imm_data.to_ne_bytes(), [1, 2, 3, 4]);
        assert_eq!(
            (
                wc.byte_len,
                wc.src_qp,
                wc.sl,
                wc.slid,
                wc.dlid_path_bits,
                wc.pkey_index
            ),
            (1000, 0xabcd, 5, 9, 0x7f, 0x0304)
        );
        assert_eq!(
            (wc.wc_flags, wc.opcode),
            (wc_flags::GRH | wc_flags::WITH_IMM, wc_opcode::RECV)
        );
        cqe.op_own = cqe_opcode::RESP_SEND_INV << 4;
        cqe.wqe_counter = U16::new(2);
        produce(&mut cq, 1, cqe);
        // A resize CQE in between is skipped.
        produce(
            &mut cq,
            2,
            Cqe64 {
                op_own: cqe_opcode::RESIZE_CQ << 4,
                ..Cqe64::default()
            },
        );
        let wc = cq.poll_one(&mut rq).unwrap().unwrap();
        assert_eq!((wc.wr_id, wc.imm_data, wc.wc_flags), (42, 0x0102_0304, 9));
        let mut out = [WorkCompletion::default(); 4];
        produce(
            &mut cq,
            3,
            Cqe64 {
                op_own: cqe_opcode::RESP_SEND << 4,
                sop_drop_qpn: U32::new(0x51),
                ..Cqe64::default()
            },
        );
        assert_eq!(cq.poll(&mut rq, &mut out).unwrap(), 1);
        assert_eq!(out[0].wr_id, 40);
    }

    #[test]
    fn arm_values() {
        let mut cq = new_cq(4, 64);
        cq.ci = 0x0123_4567;
        let db = cq.arm_doorbell(false);
        assert_eq!(db.dbrec.get(), 0x0023_4567);
        assert_eq!(db.uar, [0x00, 0x23, 0x45, 0x67, 0, 0, 0, 0x99]);
        cq.event();
        cq.event();
        cq.event();
        cq.event();
        cq.event();
        let db = cq.arm_doorbell(true);
        assert_eq!(db.dbrec.get(), (1 << 28) | (1 << 24) | 0x23_4567);
        #[derive(Default)]
        struct Uar(Vec<(usize, [u8; 8])>);
        impl UarWriter for Uar {
            fn write64_be(&mut self, offset: usize, value: [u8; 8]) {
                self.0.push((offset, value));
            }
            fn write_block64(&mut self, _: usize, _: &[u8; 64]) {
                unreachable!()
            }
        }
        let mut uar = Uar::default();
        let mut dbrec = DoorbellRecord::default();
        cq.arm(true, &mut dbrec, &mut uar);
        assert_eq!(uar.0, vec![(0x20, db.uar)]);
        assert_eq!(dbrec.0[CQ_ARM_DB], db.dbrec);
        assert_eq!(dbrec.0[CQ_SET_CI].get(), 0);
    }

    #[test]
    fn clean_removes_one_queue_and_keeps_the_order_of_the_rest() {
        // 4 entries of 128 bytes; entries 0..2 consumed, then 5 produced (wrapping): QPs 1, 2, 1,
        // 2, 2 at indices 2..7.
        let mut cq = new_cq(4, 128);
        let owners = [1u32, 2];
        for i in 0..2 {
            produce(
                &mut cq,
                i,
                req_cqe(owners[i as usize], opcode::SEND, i as u16),
            );
        }
        assert!(cq.next_cqe().is_some() && cq.next_cqe().is_some());
        for (i, qpn) in [(2u32, 1u32), (3, 2), (4, 1), (5, 2)] {
            produce(&mut cq, i, req_cqe(qpn, opcode::SEND, i as u16));
        }
        let mut seen = Vec::new();
        let freed = cq.clean(|c| {
            seen.push(c.wqe_counter.get());
            c.qpn() == 1
        });
        assert_eq!(freed, 2);
        assert_eq!(seen, vec![5, 4, 3, 2], "newest first");
        assert_eq!(cq.consumer_index(), 4);
        // What is left: QP 2's entries 3 and 5, now at indices 4 and 5, with their slots' owner
        // bits; the entry after them is still the device's.
        let a = cq.next_cqe().unwrap();
        let b = cq.next_cqe().unwrap();
        assert_eq!((a.qpn(), a.wqe_counter.get()), (2, 3));
        assert_eq!((b.qpn(), b.wqe_counter.get()), (2, 5));
        assert!(cq.next_cqe().is_none());
        // The device's next entry (index 6) is found where it belongs.
        produce(&mut cq, 6, req_cqe(2, opcode::SEND, 6));
        assert_eq!(cq.next_cqe().unwrap().wqe_counter.get(), 6);
        // Nothing to remove: nothing moves.
        produce(&mut cq, 7, req_cqe(2, opcode::SEND, 7));
        assert_eq!(cq.clean(|_| false), 0);
        assert_eq!(cq.next_cqe().unwrap().wqe_counter.get(), 7);
    }

    #[test]
    fn syndrome_table() {
        assert_eq!(
            syndrome_status(syndrome::WR_FLUSH_ERR),
            wc_status::WR_FLUSH_ERR
        );
        assert_eq!(
            syndrome_status(syndrome::REMOTE_ABORTED_ERR),
            wc_status::REM_ABORT_ERR
        );
        assert_eq!(syndrome_status(0x99), wc_status::GENERAL_ERR);
        assert_eq!(syndrome_status(0), wc_status::GENERAL_ERR);
    }
}
