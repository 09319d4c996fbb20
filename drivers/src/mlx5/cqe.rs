//! mlx5 completion queue entries: [`Cqe64`] (`struct mlx5_cqe64`) and [`ErrCqe`]
//! (`struct mlx5_err_cqe`) as zerocopy structs with big-endian fields, the syndrome → work
//! completion status table, the ownership rule and the words the CQ doorbells write.
//! [`CqPoller`](super::poller::CqPoller) polls a caller-provided CQ buffer of them.
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
//! After taking an entry, software increments `ci` and issues [`udma_from_device_barrier`]
//! before reading the rest of it; after a batch it stores `ci & 0xffffff` into the doorbell record
//! ([`CqPoller::update_consumer_index`]) so the device may reuse the entries.
//!
//! [`udma_from_device_barrier`]: crate::barrier::udma_from_device_barrier
//! [`CqPoller::update_consumer_index`]: super::poller::CqPoller::update_consumer_index

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::wqe::opcode;

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

/// What arming a CQ writes (rdma-core's `mlx5_arm_cq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArmDoorbell {
    /// The doorbell record's arm word (`dbrec[MLX5_CQ_ARM_DB]`): `sn << 28 | cmd | ci`.
    pub dbrec: U32,
    /// The 64-bit UAR write at [`CQ_DOORBELL`], in device byte order: `(sn << 28 | cmd | ci) << 32 |
    /// cqn`, big-endian.
    ///
    /// [`CQ_DOORBELL`]: super::doorbell::CQ_DOORBELL
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

#[cfg(test)]
mod tests {
    use super::*;

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
