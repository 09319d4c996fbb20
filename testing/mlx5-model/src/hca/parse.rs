//! Send WQE parsing: what the HCA fetches from the SQ ring, checked as the hardware checks it.
//!
//! A WQE is read as `ds` octowords from its first basic block, continuing at the ring's start
//! after its end (the wrap rule of `uverbs_drivers::mlx5::sq`). The control segment must name this
//! QP, carry the producer index the HCA expects, have a `ds` between 1 and 63 that fits the posted
//! blocks, opmod 0 and an opcode the transport has; then come the fixed segments of the opcode
//! (remote address, atomic operands, the 48-byte datagram segment) and the data: 16-byte data
//! segments or inline segments (`byte_count | 0x8000_0000`, the bytes, padding to 16). Anything else
//! is malformed: the hardware completes such a WQE with `LOCAL_QP_OP_ERR` and the QP fails.

use zerocopy::FromBytes;

use super::mem;
use super::{Space, Transport};
// The send WQE segments the HCA parses (control, datagram with its address vector, inline, opcodes)
// are the hardware format; they are taken from the driver's definitions rather than written twice,
// so the model checks what the driver posts, not the layouts themselves:
// `drivers/tests/mlx5_golden.rs` checks those definitions against `mlx5dv.h`, independently of the
// driver and this model.
use uverbs_drivers::mlx5::wqe::{opcode, Av, CtrlSeg, DatagramSeg, EXTENDED_UD_AV, INLINE_SEG};

/// Octoword size.
const OW: usize = 16;
/// The length a data segment with byte count 0 stands for (mlx5: 2 GiB).
pub(super) const ZERO_LENGTH_MEANS: u32 = 0x8000_0000;

/// A local buffer named by a data segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sge {
    pub addr: u64,
    pub len: u32,
    pub lkey: u32,
}

/// One piece of a WQE's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    /// A data segment.
    Sge(Sge),
    /// Inline bytes.
    Inline(Vec<u8>),
}

/// A parsed send WQE.
#[derive(Debug, Clone)]
pub(super) struct Wqe {
    /// The WQE index (the control segment's, equal to the expected producer index).
    pub index: u16,
    pub opcode: u8,
    /// Size in basic blocks.
    pub bbs: u32,
    pub fm_ce_se: u8,
    /// The immediate / invalidated rkey field, as its bytes are in the WQE (wire order).
    pub imm: [u8; 4],
    pub raddr: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
    /// UD: the address vector.
    pub av: Option<Av>,
    pub data: Vec<Piece>,
}

impl Wqe {
    /// Whether a CQE is generated on success (completion mode "always", `MLX5_WQE_CTRL_CQ_UPDATE`).
    pub fn signaled(&self) -> bool {
        (self.fm_ce_se >> 2) & 3 >= 2
    }

    /// The solicited-event flag.
    pub fn solicited(&self) -> bool {
        self.fm_ce_se & uverbs_drivers::mlx5::wqe::fm_ce_se::SOLICITED != 0
    }

    /// The data segments (for reads and atomics, which have no inline data).
    pub fn sges(&self) -> impl Iterator<Item = Sge> + '_ {
        self.data.iter().filter_map(|p| match p {
            Piece::Sge(s) => Some(*s),
            Piece::Inline(_) => None,
        })
    }
}

/// Why a WQE could not be executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Malformed {
    /// The opcode byte of the control segment (for the error CQE).
    pub opcode: u8,
    /// Basic blocks to skip: the WQE's size when its `ds` could be trusted, else 1.
    pub skip: u32,
    /// What was wrong (for diagnostics).
    pub what: &'static str,
}

/// Where a send ring is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ring {
    /// The process the ring is in.
    pub space: Space,
    /// Address of block 0.
    pub base: usize,
    /// Basic blocks (a power of two).
    pub blocks: u32,
}

impl Ring {
    /// Address of block `counter` (free-running counter).
    fn block(&self, counter: u32) -> usize {
        self.base + ((counter & (self.blocks - 1)) as usize) * 64
    }

    /// Reads `out.len()` bytes (a multiple of 16) from the start of block `counter`, wrapping
    /// at the end of the ring.
    ///
    /// # Safety
    /// The ring satisfies the mapping contract and the blocks read are posted (published by the
    /// doorbell record) and not yet completed.
    unsafe fn read_wrapping(&self, counter: u32, out: &mut [u8]) {
        let ring_len = self.blocks as usize * 64;
        let start = ((counter & (self.blocks - 1)) as usize) * 64;
        let first = out.len().min(ring_len - start);
        // SAFETY: `start .. start + first` is inside the ring; the caller vouches for the ring.
        unsafe { mem::read(self.space, self.base + start, &mut out[..first]) };
        let mut done = first;
        while done < out.len() {
            let n = (out.len() - done).min(ring_len);
            // SAFETY: from the ring's start, at most its length.
            unsafe { mem::read(self.space, self.base, &mut out[done..done + n]) };
            done += n;
        }
    }

    /// The control segment of the block at `counter`.
    ///
    /// # Safety
    /// As [`Ring::read_wrapping`] for that block.
    pub unsafe fn ctrl(&self, counter: u32) -> CtrlSeg {
        let mut b = [0u8; 16];
        // SAFETY: the block is inside the ring (masked); the caller vouches for the ring.
        unsafe { mem::read(self.space, self.block(counter), &mut b) };
        CtrlSeg::read_from_bytes(&b).expect("16 bytes")
    }

    /// The raw bytes of `bbs` blocks from `counter`, wrapping (what a BlueFlame copy holds).
    ///
    /// # Safety
    /// As [`Ring::read_wrapping`].
    pub unsafe fn blocks_at(&self, counter: u32, bbs: u32) -> Vec<u8> {
        let mut v = vec![0u8; bbs as usize * 64];
        // SAFETY: the caller's contract.
        unsafe { self.read_wrapping(counter, &mut v) };
        v
    }
}

/// The `ds` of a control segment if it is valid (1..=63, the upper bits of the byte zero).
pub(super) fn ctrl_ds(ctrl: &CtrlSeg) -> Option<u8> {
    let ds = ctrl.ds();
    (1..=0x3f).contains(&ds).then_some(ds)
}

/// Basic blocks of a WQE of `ds` octowords.
pub(super) fn ds_blocks(ds: u8) -> u32 {
    u32::from(ds).div_ceil(4)
}

/// Whether `op` is a send opcode the transport has (and the model executes).
fn valid_opcode(transport: Transport, op: u8) -> bool {
    use opcode::*;
    match transport {
        Transport::Rc => matches!(
            op,
            NOP | SEND
                | SEND_IMM
                | SEND_INVAL
                | RDMA_WRITE
                | RDMA_WRITE_IMM
                | RDMA_READ
                | ATOMIC_CS
                | ATOMIC_FA
        ),
        Transport::Uc => matches!(op, NOP | SEND | SEND_IMM | RDMA_WRITE | RDMA_WRITE_IMM),
        Transport::Ud => matches!(op, NOP | SEND | SEND_IMM),
    }
}

/// Fetches and parses the WQE at producer counter `ci` of the ring of QP `qpn`, of which `posted`
/// blocks (from `ci`) are published by the doorbell record.
///
/// # Safety
/// The ring satisfies the mapping contract, and the `posted` blocks from `ci` are published.
pub(super) unsafe fn parse(
    ring: Ring,
    ci: u32,
    posted: u32,
    qpn: u32,
    transport: Transport,
) -> Result<Wqe, Malformed> {
    // SAFETY: `posted >= 1`, so the block at `ci` is published (caller's contract).
    let ctrl = unsafe { ring.ctrl(ci) };
    let op = ctrl.opcode();
    let bad = |skip: u32, what: &'static str| Malformed {
        opcode: op,
        skip,
        what,
    };
    let Some(ds) = ctrl_ds(&ctrl) else {
        return Err(bad(1, "ds is 0 or over 63"));
    };
    let bbs = ds_blocks(ds);
    if bbs > posted {
        return Err(bad(posted, "the WQE runs past the doorbell record"));
    }
    if ctrl.wqe_index() != ci as u16 {
        return Err(bad(bbs, "the WQE index is not the producer index"));
    }
    if ctrl.qpn() != qpn {
        return Err(bad(bbs, "the control segment names another QP"));
    }
    if ctrl.opmod() != 0 {
        return Err(bad(bbs, "opcode modifier"));
    }
    if !valid_opcode(transport, op) {
        return Err(bad(bbs, "an opcode this transport does not have"));
    }
    let len = usize::from(ds) * OW;
    let mut b = vec![0u8; len];
    // SAFETY: `bbs <= posted` blocks from `ci` are published; `len <= bbs * 64`.
    unsafe { ring.read_wrapping(ci, &mut b) };

    let mut wqe = Wqe {
        index: ci as u16,
        opcode: op,
        bbs,
        fm_ce_se: ctrl.fm_ce_se,
        imm: ctrl.imm.to_bytes(),
        raddr: 0,
        rkey: 0,
        swap_add: 0,
        compare: 0,
        av: None,
        data: Vec::new(),
    };
    if op == opcode::NOP {
        return Ok(wqe);
    }
    let be32 = |at: usize| u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let be64 = |at: usize| u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let mut pos = OW;
    let need = |pos: usize, n: usize| {
        if pos + n > len {
            Err(bad(bbs, "ds too small for the opcode's segments"))
        } else {
            Ok(())
        }
    };
    match op {
        opcode::RDMA_WRITE | opcode::RDMA_WRITE_IMM | opcode::RDMA_READ => {
            need(pos, OW)?;
            wqe.raddr = be64(pos);
            wqe.rkey = be32(pos + 8);
            pos += OW;
        }
        opcode::ATOMIC_CS | opcode::ATOMIC_FA => {
            need(pos, 2 * OW)?;
            wqe.raddr = be64(pos);
            wqe.rkey = be32(pos + 8);
            wqe.swap_add = be64(pos + OW);
            wqe.compare = be64(pos + OW + 8);
            pos += 2 * OW;
        }
        _ if transport == Transport::Ud => {
            need(pos, 3 * OW)?;
            let dg = DatagramSeg::read_from_bytes(&b[pos..pos + 3 * OW]).expect("48 bytes");
            if dg.av.dqp_dct.get() & EXTENDED_UD_AV == 0 {
                return Err(bad(bbs, "a datagram segment without the extended AV"));
            }
            wqe.av = Some(dg.av);
            pos += 3 * OW;
        }
        _ => {}
    }
    while pos < len {
        let word = be32(pos);
        if word & INLINE_SEG != 0 {
            let n = (word & !INLINE_SEG) as usize;
            if pos + 4 + n > len {
                return Err(bad(bbs, "inline data longer than the WQE"));
            }
            wqe.data
                .push(Piece::Inline(b[pos + 4..pos + 4 + n].to_vec()));
            pos += (4 + n).div_ceil(OW) * OW;
        } else {
            need(pos, OW)?;
            let len = if word == 0 { ZERO_LENGTH_MEANS } else { word };
            wqe.data.push(Piece::Sge(Sge {
                addr: be64(pos + 8),
                len,
                lkey: be32(pos + 4),
            }));
            pos += OW;
        }
    }
    let inline = wqe.data.iter().any(|p| matches!(p, Piece::Inline(_)));
    match op {
        opcode::RDMA_READ | opcode::ATOMIC_CS | opcode::ATOMIC_FA if inline => {
            Err(bad(bbs, "inline data in an RDMA read or atomic"))
        }
        _ => Ok(wqe),
    }
}
