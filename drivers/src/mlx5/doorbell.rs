//! Doorbells of the mlx5 data path: the doorbell record in host memory, the UAR/BlueFlame register
//! it is followed by, and the state of one BlueFlame register.
//!
//! A work queue or CQ tells the device about new work in two steps: it stores its counter into its
//! *doorbell record* (two big-endian 32-bit words in ordinary memory that the device reads by DMA),
//! then, for send queues and CQ arming, writes 64 bits to its *UAR* page (device memory). A send
//! doorbell may instead copy the whole WQE into the write-combining *BlueFlame* buffer, which saves
//! the device a DMA read. The stores go through [`UarWriter`], so that the sequences (and their
//! barriers, [`crate::barrier`]) can be exercised against memory in tests.

use zerocopy::byteorder::big_endian::U32;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Index of the receive counter in a QP's doorbell record (`MLX5_RCV_DBR`).
pub const RCV_DBR: usize = 0;
/// Index of the send counter in a QP's doorbell record (`MLX5_SND_DBR`).
pub const SND_DBR: usize = 1;
/// Index of the consumer index in a CQ's doorbell record (`MLX5_CQ_SET_CI`).
pub const CQ_SET_CI: usize = 0;
/// Index of the arm word in a CQ's doorbell record (`MLX5_CQ_ARM_DB`).
pub const CQ_ARM_DB: usize = 1;
/// Offset of the CQ arm doorbell in a UAR page (`MLX5_CQ_DOORBELL`).
pub const CQ_DOORBELL: usize = 0x20;
/// Offset of the first BlueFlame register in a 4 KiB UAR (`MLX5_BF_OFFSET`).
pub const BF_OFFSET: usize = 0x800;

/// A doorbell record: `__be32 dbrec[2]`, 8 bytes the device reads by DMA. For a QP, word
/// [`RCV_DBR`] holds the receive counter and word [`SND_DBR`] the send counter; for a CQ, word
/// [`CQ_SET_CI`] holds the consumer index and word [`CQ_ARM_DB`] the last arm command.
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
pub struct DoorbellRecord(pub [U32; 2]);

/// Stores a word of a doorbell record. [`DoorbellRecord`] is the plain-memory version (tests,
/// golden vectors); the backend's records in memory the device reads implement it with an atomic
/// release store of each word (`crate::mlx5::buf::Dbrec`).
pub trait DoorbellRecordWriter {
    /// Stores `value` (already big-endian) into word `index` (0 or 1) of the record.
    fn store(&mut self, index: usize, value: U32);
}

impl DoorbellRecordWriter for DoorbellRecord {
    fn store(&mut self, index: usize, value: U32) {
        self.0[index] = value;
    }
}

/// Stores into a UAR page, with the semantics rdma-core's `util/mmio.h` gives them. Offsets are in
/// bytes from the start of the register the writer stands for (a BlueFlame register for send
/// doorbells, the UAR page for CQ arming).
pub trait UarWriter {
    /// One 64-bit store of `value`, whose bytes are already in device (big-endian) order:
    /// `mmio_write64_be`.
    fn write64_be(&mut self, offset: usize, value: [u8; 8]);

    /// 64 bytes as eight 64-bit stores in ascending order: `mmio_memcpy_x64` (never a `memcpy`,
    /// which may store in any order).
    fn write_block64(&mut self, offset: usize, block: &[u8; 64]);

    /// Whole 64-byte blocks (`blocks.len()` a multiple of 64), one after the other from `offset`,
    /// each as [`write_block64`](UarWriter::write_block64) writes it: `mlx5_bf_copy`'s loop. A
    /// writer may check the range once and store wider than 64 bits (a write-combining register
    /// takes the line however it is stored, and the flush after it orders it as a whole).
    #[inline]
    fn write_blocks64(&mut self, offset: usize, blocks: &[u8]) {
        for (i, block) in blocks.chunks_exact(64).enumerate() {
            let block = block.try_into().expect("64 bytes");
            self.write_block64(offset + i * 64, block);
        }
    }
}

/// One BlueFlame register as a send queue uses it: rdma-core's `struct mlx5_bf`, less the pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlueFlameReg {
    /// Size of each of the register's two halves (`bf_reg_size / 2`); 0 for a doorbell-only
    /// register.
    pub buf_size: usize,
    /// Which half the next doorbell goes to (0 or `buf_size`); toggled after each doorbell.
    pub offset: usize,
    /// Whether whole WQEs may be copied here: false for bfreg 0 (`uuarn == 0`), which is
    /// doorbell-only, and when BlueFlame is turned off (rdma-core's `MLX5_SHUT_UP_BF`).
    pub enabled: bool,
    /// Copy non-inline WQEs too (rdma-core's `prefer_bf`, on by default; `MLX5_POST_SEND_PREFER_BF`).
    pub prefer: bool,
}

impl BlueFlameReg {
    /// A BlueFlame register of `bf_reg_size` bytes (the context's `bf_reg_size`), enabled, preferring
    /// BlueFlame as rdma-core does by default.
    pub fn new(bf_reg_size: usize) -> BlueFlameReg {
        BlueFlameReg {
            buf_size: bf_reg_size / 2,
            offset: 0,
            enabled: bf_reg_size >= 128,
            prefer: true,
        }
    }

    /// A doorbell-only register (bfreg 0, or BlueFlame turned off): every doorbell is one 64-bit
    /// store at offset 0.
    pub fn doorbell_only() -> BlueFlameReg {
        BlueFlameReg {
            buf_size: 0,
            offset: 0,
            enabled: false,
            prefer: false,
        }
    }

    /// Switches to the other half (`bf->offset ^= bf->buf_size`).
    pub fn toggle(&mut self) {
        self.offset ^= self.buf_size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_is_two_be_words() {
        let mut rec = DoorbellRecord::default();
        rec.0[SND_DBR] = U32::new(0x1234);
        assert_eq!(rec.as_bytes(), &[0, 0, 0, 0, 0, 0, 0x12, 0x34]);
        assert_eq!(std::mem::size_of::<DoorbellRecord>(), 8);
    }

    #[test]
    fn bf_halves_alternate() {
        let mut bf = BlueFlameReg::new(512);
        assert_eq!((bf.buf_size, bf.offset, bf.enabled), (256, 0, true));
        bf.toggle();
        assert_eq!(bf.offset, 256);
        bf.toggle();
        assert_eq!(bf.offset, 0);
        let mut db = BlueFlameReg::doorbell_only();
        db.toggle();
        assert_eq!(db.offset, 0);
    }
}
