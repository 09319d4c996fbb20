//! mlx5 send work-queue entries: the 16-byte segments of `infiniband/mlx5dv.h` as zerocopy structs
//! with big-endian fields, with the opcodes, flags and limits of the WQE format.
//! [`SendQueue`](super::sq::SendQueue) builds WQEs out of them into the send ring.
//!
//! # WQE format
//!
//! A send WQE is a sequence of 16-byte segments ("octowords"), starting with a [`CtrlSeg`] at the
//! start of a 64-byte basic block (WQEBB, [`SEND_WQE_BB`]):
//!
//! | QP | opcode | segments after the control segment |
//! |---|---|---|
//! | RC | RDMA write/read | [`RaddrSeg`], data |
//! | RC | atomics | [`RaddrSeg`], [`AtomicSeg`], data (each [`DataSeg`] with byte count 8) |
//! | UC | RDMA write | [`RaddrSeg`], data |
//! | UD | sends | [`DatagramSeg`] (48 bytes), data |
//! | any | sends | data |
//!
//! "Data" is either one [`DataSeg`] per scatter/gather entry of non-zero length, or with
//! [`wr::send_flags::INLINE`] one inline segment: an [`InlineHeader`] (`byte_count | 0x8000_0000`),
//! the bytes, zero padding to a multiple of 16. The control segment's `ds` counts the WQE's
//! octowords (control included; at most [`MAX_DS`]); the WQE takes `ceil(ds / 4)` basic blocks, and
//! the producer counter `cur_post` advances by that many. The control segment carries
//! `cur_post & 0xffff` as the WQE index, which the CQE returns as `wqe_counter`.
//!
//! Where in the ring a WQE's octowords go (the wrap rule) is [`super::sq`]'s.
//!
//! [`wr::send_flags::INLINE`]: crate::wr::send_flags::INLINE

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// mlx5 WQE opcodes (`MLX5_OPCODE_*`), the low byte of the control segment's first word.
pub mod opcode {
    /// No operation.
    pub const NOP: u8 = 0x00;
    /// Send with invalidate.
    pub const SEND_INVAL: u8 = 0x01;
    /// RDMA write.
    pub const RDMA_WRITE: u8 = 0x08;
    /// RDMA write with immediate.
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    /// Send.
    pub const SEND: u8 = 0x0a;
    /// Send with immediate.
    pub const SEND_IMM: u8 = 0x0b;
    /// TCP segmentation offload (raw packet QPs).
    pub const TSO: u8 = 0x0e;
    /// RDMA read.
    pub const RDMA_READ: u8 = 0x10;
    /// Atomic compare and swap.
    pub const ATOMIC_CS: u8 = 0x11;
    /// Atomic fetch and add.
    pub const ATOMIC_FA: u8 = 0x12;
    /// Local invalidate.
    pub const LOCAL_INVAL: u8 = 0x1b;
    /// User-mode memory registration (memory-window bind, local invalidate in rdma-core).
    pub const UMR: u8 = 0x25;
}

/// Bits of the control segment's `fm_ce_se` byte (`MLX5_WQE_CTRL_*`).
pub mod fm_ce_se {
    /// Fence: wait for earlier RDMA reads and atomics (fence mode, bits 7:5).
    pub const FENCE: u8 = 4 << 5;
    /// Initiator small fence (fence mode 1), used after memory-window binds.
    pub const INITIATOR_SMALL_FENCE: u8 = 1 << 5;
    /// Generate a CQE (completion mode: "always").
    pub const CQ_UPDATE: u8 = 2 << 2;
    /// Solicited event.
    pub const SOLICITED: u8 = 1 << 1;
}

/// Size of a send basic block, the unit of `cur_post` (`MLX5_SEND_WQE_BB`).
pub const SEND_WQE_BB: usize = 64;
/// log2 of [`SEND_WQE_BB`] (`MLX5_SEND_WQE_SHIFT`).
pub const SEND_WQE_SHIFT: u32 = 6;
/// Marks a data segment as inline data (`MLX5_INLINE_SEG`).
pub const INLINE_SEG: u32 = 0x8000_0000;
/// In `dqp_dct`: the address vector is the extended (48-byte) one (`MLX5_EXTENDED_UD_AV`).
pub const EXTENDED_UD_AV: u32 = 0x8000_0000;
/// The lkey that ends a receive scatter list (`MLX5_INVALID_LKEY`).
pub const INVALID_LKEY: u32 = 0x100;
/// The largest `ds`: the field has 6 bits, so a WQE has at most 63 octowords (1008 bytes).
pub const MAX_DS: usize = 0x3f;
/// The most basic blocks a send queue may have: CQEs identify WQEs by a 16-bit counter.
pub const MAX_WQE_COUNT: usize = 1 << 16;
/// Size of a WQE segment unit (an octoword).
pub(super) const OCTOWORD: usize = 16;

/// The control segment that starts every send WQE (`struct mlx5_wqe_ctrl_seg`, 16 bytes).
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
pub struct CtrlSeg {
    /// `opmod << 24 | wqe_index << 8 | opcode`.
    pub opmod_idx_opcode: U32,
    /// `qpn << 8 | ds`.
    pub qpn_ds: U32,
    /// WQE signature (only with QP signatures enabled; 0 otherwise).
    pub signature: u8,
    /// DCI stream channel (DC only; reserved otherwise).
    pub dci_stream_channel_id: U16,
    /// Fence mode, completion mode, solicited event: [`fm_ce_se`] bits.
    pub fm_ce_se: u8,
    /// Immediate data (as it goes on the wire) or the rkey a send-with-invalidate invalidates.
    pub imm: U32,
}

impl CtrlSeg {
    /// A control segment, as `mlx5dv_set_ctrl_seg` fills it: `pi` is the WQE's first basic block
    /// (`cur_post`, wrapping at 0xffff), `ds` its size in octowords, `imm` the immediate (already in
    /// wire order) or invalidated rkey.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        pi: u16,
        opcode: u8,
        opmod: u8,
        qpn: u32,
        fm_ce_se: u8,
        ds: u8,
        signature: u8,
        imm: U32,
    ) -> CtrlSeg {
        CtrlSeg {
            opmod_idx_opcode: U32::new(
                (u32::from(opmod) << 24) | (u32::from(pi) << 8) | u32::from(opcode),
            ),
            qpn_ds: U32::new((qpn << 8) | u32::from(ds)),
            signature,
            dci_stream_channel_id: U16::ZERO,
            fm_ce_se,
            imm,
        }
    }

    /// The mlx5 opcode ([`opcode`]).
    pub fn opcode(&self) -> u8 {
        self.opmod_idx_opcode.get() as u8
    }

    /// The opcode modifier.
    pub fn opmod(&self) -> u8 {
        (self.opmod_idx_opcode.get() >> 24) as u8
    }

    /// The WQE index: the producer counter when the WQE was posted, modulo 2^16.
    pub fn wqe_index(&self) -> u16 {
        (self.opmod_idx_opcode.get() >> 8) as u16
    }

    /// The queue pair number.
    pub fn qpn(&self) -> u32 {
        self.qpn_ds.get() >> 8
    }

    /// The WQE size in octowords (the low byte; the device reads 6 bits).
    pub fn ds(&self) -> u8 {
        self.qpn_ds.get() as u8
    }
}

/// The remote address of an RDMA or atomic operation (`struct mlx5_wqe_raddr_seg`, 16 bytes).
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
pub struct RaddrSeg {
    /// Remote virtual address.
    pub raddr: U64,
    /// Remote key.
    pub rkey: U32,
    /// Reserved, zero.
    pub reserved: U32,
}

impl RaddrSeg {
    /// A remote-address segment (rdma-core's `set_raddr_seg`).
    pub fn new(raddr: u64, rkey: u32) -> RaddrSeg {
        RaddrSeg {
            raddr: U64::new(raddr),
            rkey: U32::new(rkey),
            reserved: U32::ZERO,
        }
    }
}

/// The operands of an atomic (`struct mlx5_wqe_atomic_seg`, 16 bytes).
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
pub struct AtomicSeg {
    /// The swap value (compare and swap) or the addend (fetch and add).
    pub swap_add: U64,
    /// The compare value (compare and swap; zero for fetch and add).
    pub compare: U64,
}

impl AtomicSeg {
    /// Operands of a compare and swap: write `swap` if the remote value equals `compare`.
    pub fn compare_swap(compare: u64, swap: u64) -> AtomicSeg {
        AtomicSeg {
            swap_add: U64::new(swap),
            compare: U64::new(compare),
        }
    }

    /// Operands of a fetch and add.
    pub fn fetch_add(add: u64) -> AtomicSeg {
        AtomicSeg {
            swap_add: U64::new(add),
            compare: U64::ZERO,
        }
    }
}

/// A pointer to local memory (`struct mlx5_wqe_data_seg`, 16 bytes).
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
pub struct DataSeg {
    /// Length in bytes.
    pub byte_count: U32,
    /// Local key of the memory region.
    pub lkey: U32,
    /// Virtual address.
    pub addr: U64,
}

impl DataSeg {
    /// A data segment, as `mlx5dv_set_data_seg` fills it.
    pub fn new(byte_count: u32, lkey: u32, addr: u64) -> DataSeg {
        DataSeg {
            byte_count: U32::new(byte_count),
            lkey: U32::new(lkey),
            addr: U64::new(addr),
        }
    }
}

/// The 4-byte header of an inline data segment (`struct mlx5_wqe_inl_data_seg`); the data follows
/// it directly, and the segment is padded to a multiple of 16 bytes.
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
pub struct InlineHeader {
    /// `length | INLINE_SEG`.
    pub byte_count: U32,
}

impl InlineHeader {
    /// The header of `len` inline bytes.
    pub fn new(len: u32) -> InlineHeader {
        InlineHeader {
            byte_count: U32::new(len | INLINE_SEG),
        }
    }

    /// The octowords an inline segment of `len` bytes takes, header and padding included.
    pub const fn octowords(len: usize) -> usize {
        (4 + len).div_ceil(OCTOWORD)
    }
}

/// An address vector (`struct mlx5_wqe_av`, 48 bytes): where a UD datagram goes. An address
/// handle holds one, filled in at creation; each send copies it into its [`DatagramSeg`] and sets
/// the destination QP and Q_Key.
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
pub struct Av {
    /// Q_Key (UD): `key.qkey.qkey`. With DC the first 8 bytes are one 64-bit `dc_key`
    /// ([`Av::set_dc_key`]).
    pub qkey: U32,
    /// `key.qkey.reserved`.
    pub key_reserved: U32,
    /// Destination QP (or DCT) number, with [`EXTENDED_UD_AV`].
    pub dqp_dct: U32,
    /// `static_rate << 4 | sl` (IB: `sl & 0xf`; RoCE: `(sl & 7) << 1`).
    pub stat_rate_sl: u8,
    /// Force loopback and source path bits (IB).
    pub fl_mlid: u8,
    /// Destination LID (IB).
    pub rlid: U16,
    /// Reserved.
    pub reserved0: [u8; 4],
    /// Destination MAC (RoCE).
    pub rmac: [u8; 6],
    /// GRH traffic class / IPv6 traffic class / IPv4 TOS.
    pub tclass: u8,
    /// GRH hop limit / IPv6 hop limit / IPv4 TTL.
    pub hop_limit: u8,
    /// `grh << 30 | sgid_index << 20 | flow_label` ([`Av::grh_gid_fl`]).
    pub grh_gid_fl: U32,
    /// Destination GID (or IP address).
    pub rgid: [u8; 16],
}

impl Av {
    /// The `grh_gid_fl` word: the GRH-present bit (IB global routes; 0 on RoCE), the source GID
    /// index and the 20-bit flow label (rdma-core's `mlx5_create_ah`).
    pub fn grh_gid_fl(grh: bool, sgid_index: u8, flow_label: u32) -> U32 {
        U32::new((u32::from(grh) << 30) | (u32::from(sgid_index) << 20) | (flow_label & 0xf_ffff))
    }

    /// The 64-bit DC access key that overlays the Q_Key and the word after it.
    pub fn dc_key(&self) -> u64 {
        (u64::from(self.qkey.get()) << 32) | u64::from(self.key_reserved.get())
    }

    /// Sets the 64-bit key (`mlx5dv_set_dgram_seg` always writes all 64 bits: a UD Q_Key `q` is
    /// the key `q << 32`).
    pub fn set_dc_key(&mut self, key: u64) {
        self.qkey = U32::new((key >> 32) as u32);
        self.key_reserved = U32::new(key as u32);
    }

    /// The destination queue pair (24 bits).
    pub fn dest_qpn(&self) -> u32 {
        self.dqp_dct.get() & 0xff_ffff
    }
}

/// The datagram segment of a UD send (`struct mlx5_wqe_datagram_seg`): an address vector.
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
pub struct DatagramSeg {
    /// The address vector.
    pub av: Av,
}

impl DatagramSeg {
    /// The datagram segment of a send to `remote_qpn` with `qkey` through an address handle whose
    /// vector is `av` (rdma-core's `_set_datagram_seg`: the vector, then `dqp_dct = remote_qpn |
    /// MLX5_EXTENDED_UD_AV` and the Q_Key).
    pub fn new(av: &Av, remote_qpn: u32, qkey: u32) -> DatagramSeg {
        let mut av = *av;
        av.dqp_dct = U32::new(remote_qpn | EXTENDED_UD_AV);
        av.qkey = U32::new(qkey);
        DatagramSeg { av }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_sizes() {
        assert_eq!(std::mem::size_of::<CtrlSeg>(), 16);
        assert_eq!(std::mem::size_of::<RaddrSeg>(), 16);
        assert_eq!(std::mem::size_of::<AtomicSeg>(), 16);
        assert_eq!(std::mem::size_of::<DataSeg>(), 16);
        assert_eq!(std::mem::size_of::<InlineHeader>(), 4);
        assert_eq!(std::mem::size_of::<Av>(), 48);
        assert_eq!(std::mem::size_of::<DatagramSeg>(), 48);
        assert_eq!(std::mem::offset_of!(CtrlSeg, fm_ce_se), 11);
        assert_eq!(std::mem::offset_of!(Av, rgid), 32);
    }

    #[test]
    fn ctrl_fields_round_trip() {
        let c = CtrlSeg::new(
            0xfffe,
            opcode::RDMA_READ,
            3,
            0xff_ffff,
            0x8a,
            63,
            0,
            U32::ZERO,
        );
        assert_eq!(
            (c.wqe_index(), c.opcode(), c.opmod(), c.qpn(), c.ds()),
            (0xfffe, 0x10, 3, 0xff_ffff, 63)
        );
        assert_eq!(
            c.as_bytes(),
            &[3, 0xff, 0xfe, 0x10, 0xff, 0xff, 0xff, 63, 0, 0, 0, 0x8a, 0, 0, 0, 0]
        );
    }
}
