//! mlx5 WQE building: arbitrary send work requests (any opcode, flags, scatter lists, inline data,
//! UD destinations and address vectors) posted by `SendQueue::post` into a small ring, with
//! completions retiring them in between and doorbells rung.
//!
//! Must hold: no panic; nothing written outside the ring (it is a window of a larger buffer whose
//! guard bytes must stay intact); a refused request writes nothing and changes no counter; a posted
//! WQE starts at the producer counter, has `ceil(ds / 4)` blocks, and reads back (wrapping at the
//! ring end) as the segments its request implies, with `ds` counting exactly those; WQEs still
//! outstanding are never overwritten; the doorbell record is the producer counter, and a
//! BlueFlame copy is the WQE's blocks.
#![no_main]

use std::collections::VecDeque;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use zerocopy::FromBytes;

use uverbs_drivers::mlx5::doorbell::{BlueFlameReg, DoorbellRecord, UarWriter, SND_DBR};
use uverbs_drivers::mlx5::sq::{DoorbellWrite, PostedWqe, QpType, SendQueue, SendQueueConfig};
use uverbs_drivers::mlx5::wqe::{
    opcode, AtomicSeg, Av, CtrlSeg, DataSeg, DatagramSeg, RaddrSeg, EXTENDED_UD_AV, INLINE_SEG,
    MAX_DS,
};
use uverbs_drivers::wr::{self, SendWr, Sge, UdDest};

const GUARD: usize = 64;

#[derive(Arbitrary, Debug, Clone, Copy)]
struct FuzzSge {
    addr: u64,
    length: u32,
    lkey: u32,
}

#[derive(Arbitrary, Debug)]
struct FuzzWr {
    wr_id: u64,
    opcode: u8,
    flags: u8,
    imm_or_inv: u32,
    sges: Vec<FuzzSge>,
    inline: Vec<u8>,
    remote_addr: u64,
    rkey: u32,
    compare_add: u64,
    swap: u64,
    ud: Option<(u32, u32)>,
    av: Option<[u8; 48]>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Post(FuzzWr),
    /// The device completes the `n`-th outstanding WQE (and with it those before).
    Complete(u8),
    /// A completion naming any counter (stale or corrupt).
    CompleteRaw(u16),
    Doorbell {
        bf_reg_size: u16,
        prefer: bool,
    },
    Reset,
}

#[derive(Arbitrary, Debug)]
struct Input {
    log_blocks: u8,
    qp_type: u8,
    qpn: u32,
    max_send_wr: u8,
    max_send_sge: u8,
    max_inline_data: u16,
    sq_sig_all: bool,
    ops: Vec<Op>,
}

#[derive(Default)]
struct Uar(Vec<(usize, Vec<u8>)>);

impl UarWriter for Uar {
    fn write64_be(&mut self, offset: usize, value: [u8; 8]) {
        self.0.push((offset, value.to_vec()));
    }
    fn write_block64(&mut self, offset: usize, block: &[u8; 64]) {
        self.0.push((offset, block.to_vec()));
    }
}

/// Reads `len` bytes of the ring from `offset`, wrapping at its end.
fn read_wrapped(ring: &[u8], offset: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| ring[(offset + i) % ring.len()]).collect()
}

/// The WQE a request must become, octoword by octoword after the control segment, or `None` if the
/// queue must refuse it. An independent statement of the format (mlx5dv.h, rdma-core's
/// `_mlx5_post_send`), not the production code.
fn expected_segments(
    cfg: &SendQueueConfig,
    wr: &SendWr<'_>,
    av: Option<&Av>,
) -> Option<(u8, Vec<u8>)> {
    use wr::opcode as op;
    let rc = cfg.qp_type == QpType::Rc;
    let ud = cfg.qp_type == QpType::Ud;
    let atomic = matches!(wr.opcode, op::ATOMIC_CMP_AND_SWP | op::ATOMIC_FETCH_AND_ADD);
    let rdma = matches!(
        wr.opcode,
        op::RDMA_WRITE | op::RDMA_WRITE_WITH_IMM | op::RDMA_READ
    );
    let mlx5 = match wr.opcode {
        op::SEND => opcode::SEND,
        op::SEND_WITH_IMM => opcode::SEND_IMM,
        op::RDMA_WRITE if !ud => opcode::RDMA_WRITE,
        op::RDMA_WRITE_WITH_IMM if !ud => opcode::RDMA_WRITE_IMM,
        op::SEND_WITH_INV if rc => opcode::SEND_INVAL,
        op::RDMA_READ if rc => opcode::RDMA_READ,
        op::ATOMIC_CMP_AND_SWP if rc => opcode::ATOMIC_CS,
        op::ATOMIC_FETCH_AND_ADD if rc => opcode::ATOMIC_FA,
        _ => return None,
    };
    if wr.flags & !0xf != 0 {
        return None;
    }
    if ud != (wr.ud.is_some() && av.is_some()) || (!ud && (wr.ud.is_some() || av.is_some())) {
        return None;
    }
    if wr.ud.is_some_and(|d| d.remote_qpn > 0xff_ffff) {
        return None;
    }
    let inline = wr.flags & wr::send_flags::INLINE != 0;
    let length: u64 = if inline {
        wr.inline.len() as u64
    } else {
        wr.sges.iter().map(|s| u64::from(s.length)).sum()
    };
    if length > wr::MAX_MESSAGE {
        return None;
    }
    if inline {
        if !wr.sges.is_empty()
            || wr.opcode == op::RDMA_READ
            || atomic
            || length > u64::from(cfg.max_inline_data)
        {
            return None;
        }
    } else if wr.sges.len() > cfg.max_send_sge as usize {
        return None;
    }
    if atomic && (length < 8 || !wr.remote_addr.is_multiple_of(8)) {
        return None;
    }
    let mut segs = Vec::new();
    if let (true, Some(av), Some(d)) = (ud, av, wr.ud) {
        let mut av = *av;
        av.dqp_dct = (d.remote_qpn | EXTENDED_UD_AV).into();
        av.qkey = d.remote_qkey.into();
        segs.extend_from_slice(zerocopy::IntoBytes::as_bytes(&DatagramSeg { av }));
    } else if rdma || atomic {
        segs.extend_from_slice(zerocopy::IntoBytes::as_bytes(&RaddrSeg::new(
            wr.remote_addr,
            wr.rkey,
        )));
        if atomic {
            let a = if wr.opcode == op::ATOMIC_CMP_AND_SWP {
                AtomicSeg::compare_swap(wr.compare_add, wr.swap)
            } else {
                AtomicSeg::fetch_add(wr.compare_add)
            };
            segs.extend_from_slice(zerocopy::IntoBytes::as_bytes(&a));
        }
    }
    if inline {
        if !wr.inline.is_empty() {
            segs.extend_from_slice(&(wr.inline.len() as u32 | INLINE_SEG).to_be_bytes());
            segs.extend_from_slice(wr.inline);
            while !segs.len().is_multiple_of(16) {
                segs.push(0);
            }
        }
    } else {
        for s in wr.sges.iter().filter(|s| s.length != 0) {
            let len = if atomic { 8 } else { s.length };
            segs.extend_from_slice(zerocopy::IntoBytes::as_bytes(&DataSeg::new(
                len, s.lkey, s.addr,
            )));
        }
    }
    if 1 + segs.len() / 16 > MAX_DS {
        return None;
    }
    Some((mlx5, segs))
}

fuzz_target!(|input: Input| {
    let blocks = 1usize << (input.log_blocks % 6);
    let qp_type = [QpType::Rc, QpType::Uc, QpType::Ud][usize::from(input.qp_type % 3)];
    let cfg = SendQueueConfig {
        qpn: input.qpn & 0xff_ffff,
        user_index: None,
        qp_type,
        max_send_wr: u32::from(input.max_send_wr % 40).max(1),
        max_send_sge: u32::from(input.max_send_sge % 80),
        max_inline_data: u32::from(input.max_inline_data % 1100),
        sq_sig_all: input.sq_sig_all,
    };
    let len = blocks * 64;
    let mut mem = vec![0xa5u8; GUARD + len + GUARD];
    let (head, rest) = mem.split_at_mut(GUARD);
    let (ring, tail) = rest.split_at_mut(len);
    let mut sq = SendQueue::new(ring, cfg).expect("a valid ring");
    // Outstanding WQEs, oldest first, with the bytes they were posted with.
    let mut outstanding: VecDeque<(PostedWqe, u64, Vec<u8>)> = VecDeque::new();

    for op in input.ops.iter().take(128) {
        match op {
            Op::Post(f) => {
                let sges: Vec<Sge> = f
                    .sges
                    .iter()
                    .take(100)
                    .map(|s| Sge {
                        addr: s.addr,
                        length: s.length,
                        lkey: s.lkey,
                    })
                    .collect();
                let inline = &f.inline[..f.inline.len().min(1200)];
                let wr = SendWr {
                    wr_id: f.wr_id,
                    opcode: u32::from(f.opcode % 12),
                    flags: u32::from(f.flags) & 0x1f,
                    imm_or_inv: f.imm_or_inv,
                    sges: &sges,
                    inline,
                    remote_addr: f.remote_addr,
                    rkey: f.rkey,
                    compare_add: f.compare_add,
                    swap: f.swap,
                    ud: f.ud.map(|(remote_qpn, remote_qkey)| UdDest {
                        remote_qpn,
                        remote_qkey,
                    }),
                    bind: None,
                };
                let av = f.av.map(|b| Av::read_from_bytes(&b[..]).expect("48 bytes"));
                let before_ring = sq.ring().to_vec();
                let (pi, outs, free) = (sq.producer_index(), sq.outstanding(), sq.free_blocks());
                let expected = expected_segments(&cfg, &wr, av.as_ref());
                match sq.post(&wr, av.as_ref()) {
                    Err(_) => {
                        assert_eq!(
                            sq.ring(),
                            &before_ring[..],
                            "a refused request wrote the ring"
                        );
                        assert_eq!(
                            (sq.producer_index(), sq.outstanding(), sq.free_blocks()),
                            (pi, outs, free)
                        );
                    }
                    Ok(w) => {
                        let (mlx5, segs) =
                            expected.expect("a request the format does not allow was posted");
                        assert_eq!(w.offset, (pi as usize % blocks) * 64);
                        assert_eq!(w.index, pi as u16);
                        assert_eq!(usize::from(w.ds), 1 + segs.len() / 16);
                        assert!(usize::from(w.ds) <= MAX_DS);
                        assert_eq!(w.bbs as usize, usize::from(w.ds).div_ceil(4));
                        assert!(w.bbs <= free, "posted over blocks in use");
                        assert_eq!(sq.producer_index(), pi.wrapping_add(w.bbs));
                        assert!(sq.outstanding() <= cfg.max_send_wr);
                        let bytes = read_wrapped(sq.ring(), w.offset, usize::from(w.ds) * 16);
                        let ctrl = CtrlSeg::read_from_bytes(&bytes[..16]).expect("16 bytes");
                        assert_eq!(ctrl.opcode(), mlx5);
                        assert_eq!(ctrl.wqe_index(), w.index);
                        assert_eq!(ctrl.qpn(), cfg.qpn);
                        assert_eq!(ctrl.ds(), w.ds);
                        let signaled = cfg.sq_sig_all || wr.flags & wr::send_flags::SIGNALED != 0;
                        assert_eq!(ctrl.fm_ce_se & 0x08 != 0, signaled);
                        assert_eq!(&bytes[16..], &segs[..], "the WQE's segments");
                        // Only the WQE's blocks changed.
                        let mut touched = vec![false; len];
                        for i in 0..w.bbs as usize * 64 {
                            touched[(w.offset + i) % len] = true;
                        }
                        for (i, (a, b)) in sq.ring().iter().zip(&before_ring).enumerate() {
                            assert!(touched[i] || a == b, "a byte outside the WQE changed");
                        }
                        let whole = read_wrapped(sq.ring(), w.offset, w.bbs as usize * 64);
                        outstanding.push_back((w, f.wr_id, whole));
                    }
                }
            }
            Op::Complete(n) => {
                if outstanding.is_empty() {
                    continue;
                }
                let k = usize::from(*n) % outstanding.len();
                let (w, id, _) = outstanding[k].clone();
                let r = sq.retire(w.index).expect("an outstanding WQE retires");
                assert_eq!(r.wr_id, id);
                outstanding.drain(..=k);
                assert_eq!(sq.outstanding() as usize, outstanding.len());
            }
            Op::CompleteRaw(counter) => {
                let known = outstanding.iter().position(|(w, _, _)| w.index == *counter);
                let outs = sq.outstanding();
                match (sq.retire(*counter), known) {
                    (None, None) => assert_eq!(sq.outstanding(), outs),
                    (Some(r), Some(k)) => {
                        assert_eq!(r.wr_id, outstanding[k].1);
                        outstanding.drain(..=k);
                    }
                    (got, want) => {
                        panic!("retire({counter}) gave {got:?}, outstanding at {want:?}")
                    }
                }
            }
            Op::Doorbell {
                bf_reg_size,
                prefer,
            } => {
                let mut bf = BlueFlameReg::new(usize::from(*bf_reg_size % 2048) & !63);
                bf.prefer = *prefer;
                let plan = sq.plan_doorbell(&bf);
                let mut dbrec = DoorbellRecord::default();
                let mut uar = Uar::default();
                let n = sq.ring_doorbell(&mut dbrec, &mut bf, &mut uar);
                match plan {
                    None => {
                        assert_eq!(n, 0);
                        assert!(uar.0.is_empty());
                    }
                    Some(DoorbellWrite::BlueFlame(w)) => {
                        assert!(n > 0);
                        assert_eq!(uar.0.len(), w.bbs as usize);
                        let copied: Vec<u8> = uar.0.iter().flat_map(|(_, b)| b.clone()).collect();
                        assert_eq!(
                            copied,
                            read_wrapped(sq.ring(), w.offset, w.bbs as usize * 64)
                        );
                    }
                    Some(DoorbellWrite::Register(db)) => {
                        assert!(n > 0);
                        assert_eq!(uar.0.len(), 1);
                        assert_eq!(uar.0[0].1, db.to_vec());
                    }
                }
                if n > 0 {
                    assert_eq!(dbrec.0[SND_DBR].get(), sq.producer_index() & 0xffff);
                }
            }
            Op::Reset => {
                sq.reset();
                outstanding.clear();
            }
        }
        // Outstanding WQEs are never overwritten.
        for (w, _, bytes) in &outstanding {
            assert_eq!(
                &read_wrapped(sq.ring(), w.offset, bytes.len()),
                bytes,
                "an outstanding WQE was overwritten"
            );
        }
    }
    drop(sq);
    assert!(head.iter().all(|&b| b == 0xa5), "written before the ring");
    assert!(tail.iter().all(|&b| b == 0xa5), "written after the ring");
});
