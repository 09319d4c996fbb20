//! mlx5 CQE parsing under a device that writes anything: arbitrary 64-byte CQEs (in 64- or 128-byte
//! entries) are produced into a CQ buffer, with the right owner bit or any other, or scribbled over
//! any entry, and `CqPoller` polls them against a real `SendQueue` and a receive queue.
//!
//! Must hold, whatever the bytes: no panic; one `poll_one` consumes at most the whole ring; `Ok(None)`
//! only when the entry at the consumer index is not software's; an error still consumes the entry;
//! every completion names a request that was posted and not yet completed (sends: the one its WQE
//! counter names, retiring the unsignaled ones before it; receives: the oldest); `clean` removes
//! exactly what its predicate selects and keeps the rest in order; the doorbell words are those of
//! the consumer index.
#![no_main]

use std::collections::VecDeque;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use zerocopy::IntoBytes;

use uverbs_drivers::mlx5::cqe::{
    cqe_opcode, device_owner_bit, init_buffer, is_sw_owned, wc_opcode, wc_status, Cqe64,
    WorkCompletion,
};
use uverbs_drivers::mlx5::doorbell::{
    DoorbellRecord, UarWriter, CQ_ARM_DB, CQ_DOORBELL, CQ_SET_CI,
};
use uverbs_drivers::mlx5::poller::{CompletionTarget, CqPoller, WqKey};
use uverbs_drivers::mlx5::sq::{QpType, Retired, SendQueue, SendQueueConfig};
use uverbs_drivers::wr::{SendWr, Sge};

/// Fields patched into a produced CQE, so that the fuzzer reaches the paths where it names a real
/// queue and WQE.
#[derive(Arbitrary, Debug)]
struct Aim {
    /// The CQE opcode (high nibble of `op_own`).
    opcode: u8,
    /// Name our queue pair (by QPN, user index or SRQ number, as the CQE version wants).
    ours: bool,
    /// The WQE counter of the `n`-th outstanding send.
    outstanding: u8,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// The device produces its next CQE, with the owner bit of its pass unless `raw_owner`.
    Produce {
        bytes: [u8; 64],
        aim: Option<Aim>,
        raw_owner: bool,
    },
    /// Any bytes over entry `entry` (mod the ring), its first or second half.
    Scribble {
        entry: u8,
        second_half: bool,
        bytes: [u8; 64],
    },
    PostSends {
        n: u8,
        signaled: u8,
    },
    PostRecvs {
        n: u8,
    },
    PollOne,
    Poll {
        max: u8,
    },
    Clean {
        qpn: u32,
    },
    Arm {
        solicited: bool,
    },
    Event,
    UpdateConsumerIndex,
}

#[derive(Arbitrary, Debug)]
struct Input {
    entry_128: bool,
    log_ncqe: u8,
    cqe_version: u8,
    cqn: u32,
    qpn: u32,
    user_index: u32,
    srqn: u32,
    /// `CqPoller::new` with an arbitrary geometry must refuse, not panic.
    odd_geometry: (u16, u16, u8),
    ops: Vec<Op>,
}

/// A send queue and a receive queue on one QP, with a shadow of what is outstanding.
struct Target {
    sq: SendQueue<Vec<u8>>,
    /// (WQE index, wr_id) of the sends posted and not retired, oldest first.
    sends: VecDeque<(u16, u64)>,
    /// wr_ids of the receives posted, oldest first.
    recvs: VecDeque<u64>,
    qpn: u32,
    user_index: u32,
    srqn: u32,
    cqe_version: u8,
    next_id: u64,
    /// What the last retire_recv handed out.
    last_recv: Option<u64>,
}

impl CompletionTarget for Target {
    fn retire_send(&mut self, key: WqKey, wqe_counter: u16) -> Option<Retired> {
        let r = self.sq.retire_send(key, wqe_counter)?;
        // The production lookup must agree with the shadow: the WQE is outstanding, and it and
        // everything before it are retired.
        let pos = self
            .sends
            .iter()
            .position(|&(index, _)| index == wqe_counter)
            .expect("retired a WQE that is not outstanding");
        assert_eq!(self.sends[pos].1, r.wr_id, "retired the wrong request");
        self.sends.drain(..=pos);
        assert_eq!(self.sq.outstanding() as usize, self.sends.len());
        Some(r)
    }

    fn retire_recv(&mut self, key: WqKey, _cqe: &Cqe64) -> Option<u64> {
        let ours = match key {
            WqKey::Qpn(n) => self.cqe_version == 0 && n == self.qpn,
            WqKey::Srqn(n) => self.cqe_version == 0 && n == self.srqn,
            WqKey::UserIndex(i) => self.cqe_version == 1 && i == self.user_index,
        };
        if !ours {
            return None;
        }
        self.last_recv = self.recvs.pop_front();
        self.last_recv
    }
}

#[derive(Default)]
struct Uar(Vec<(usize, [u8; 8])>);

impl UarWriter for Uar {
    fn write64_be(&mut self, offset: usize, value: [u8; 8]) {
        self.0.push((offset, value));
    }
    fn write_block64(&mut self, _: usize, _: &[u8; 64]) {
        panic!("a CQ never writes BlueFlame blocks");
    }
}

fn op_own_at(cq: &CqPoller<Vec<u8>>, index: u32, size: usize) -> u8 {
    let at = (index & (cq.entries() - 1)) as usize * size + size - 1;
    cq.buffer()[at]
}

/// Software-owned entries from the consumer index on (at most the ring).
fn owned(cq: &CqPoller<Vec<u8>>, size: usize) -> u32 {
    let (ci, n) = (cq.consumer_index(), cq.entries());
    (0..n)
        .take_while(|&k| {
            is_sw_owned(
                op_own_at(cq, ci.wrapping_add(k), size),
                ci.wrapping_add(k),
                n,
            )
        })
        .count() as u32
}

fn check_completion(t: &Target, wc: &WorkCompletion, sends_before: &VecDeque<(u16, u64)>) {
    assert!(wc.qp_num <= 0xff_ffff);
    let valid_status = [
        wc_status::SUCCESS,
        wc_status::LOC_LEN_ERR,
        wc_status::LOC_QP_OP_ERR,
        wc_status::LOC_PROT_ERR,
        wc_status::WR_FLUSH_ERR,
        wc_status::MW_BIND_ERR,
        wc_status::BAD_RESP_ERR,
        wc_status::LOC_ACCESS_ERR,
        wc_status::REM_INV_REQ_ERR,
        wc_status::REM_ACCESS_ERR,
        wc_status::REM_OP_ERR,
        wc_status::RETRY_EXC_ERR,
        wc_status::RNR_RETRY_EXC_ERR,
        wc_status::REM_ABORT_ERR,
        wc_status::GENERAL_ERR,
    ];
    assert!(valid_status.contains(&wc.status), "status {}", wc.status);
    if wc.opcode == wc_opcode::RECV || wc.opcode == wc_opcode::RECV_RDMA_WITH_IMM {
        assert_eq!(
            Some(wc.wr_id),
            t.last_recv,
            "a receive completion for another request"
        );
    } else {
        assert!(
            sends_before.iter().any(|&(_, id)| id == wc.wr_id),
            "a send completion for a request that is not outstanding"
        );
    }
}

fuzz_target!(|input: Input| {
    // Arbitrary geometries are refused cleanly.
    let (len, size, version) = input.odd_geometry;
    let _ = CqPoller::new(vec![0u8; usize::from(len)], usize::from(size), 1, version);

    let size = if input.entry_128 { 128 } else { 64 };
    let ncqe = 1u32 << (input.log_ncqe % 6);
    let cqe_version = input.cqe_version % 2;
    let mut buf = vec![0u8; ncqe as usize * size];
    init_buffer(&mut buf, size);
    let mut cq = CqPoller::new(buf, size, input.cqn, cqe_version).expect("valid geometry");
    let qpn = input.qpn & 0xff_ffff;
    let user_index = input.user_index & 0xff_ffff;
    let srqn = input.srqn & 0xff_ffff;
    let cfg = SendQueueConfig {
        qpn,
        user_index: (cqe_version == 1).then_some(user_index),
        qp_type: QpType::Rc,
        max_send_wr: 16,
        max_send_sge: 2,
        max_inline_data: 0,
        sq_sig_all: false,
    };
    let mut t = Target {
        sq: SendQueue::new(vec![0u8; 16 * 64], cfg).expect("valid queue"),
        sends: VecDeque::new(),
        recvs: VecDeque::new(),
        qpn,
        user_index,
        srqn,
        cqe_version,
        next_id: 1,
        last_recv: None,
    };
    let sges = [Sge {
        addr: 0x1000,
        length: 8,
        lkey: 1,
    }];
    // The device's free-running producer index.
    let mut pi = 0u32;

    for op in input.ops.iter().take(256) {
        match op {
            Op::Produce {
                bytes,
                aim,
                raw_owner,
            } => {
                let mut entry = *bytes;
                if let Some(aim) = aim {
                    let mut cqe = Cqe64::from_entry(&entry).expect("64 bytes");
                    cqe.op_own = (aim.opcode << 4) | (cqe.op_own & 0x0f);
                    if aim.ours {
                        let key = match (cqe_version, aim.opcode) {
                            (1, _) => user_index,
                            (_, cqe_opcode::REQ | cqe_opcode::REQ_ERR) => 0,
                            _ => srqn,
                        };
                        cqe.srqn_uidx = key.into();
                        let top = cqe.sop_drop_qpn.get() & 0xff00_0000;
                        cqe.sop_drop_qpn = (top | qpn).into();
                    }
                    if !t.sends.is_empty() {
                        let (index, _) = t.sends[usize::from(aim.outstanding) % t.sends.len()];
                        cqe.wqe_counter = index.into();
                    }
                    entry.copy_from_slice(cqe.as_bytes());
                }
                if !raw_owner {
                    entry[63] = (entry[63] & !1) | device_owner_bit(pi, ncqe);
                }
                let at = (pi & (ncqe - 1)) as usize * size + size - 64;
                cq.buffer_mut()[at..at + 64].copy_from_slice(&entry);
                pi = pi.wrapping_add(1);
            }
            Op::Scribble {
                entry,
                second_half,
                bytes,
            } => {
                let e = u32::from(*entry) & (ncqe - 1);
                let half = if size == 128 && *second_half { 64 } else { 0 };
                let at = e as usize * size + half;
                cq.buffer_mut()[at..at + 64].copy_from_slice(bytes);
            }
            Op::PostSends { n, signaled } => {
                for i in 0..(n % 8) {
                    let mut wr = SendWr::send(t.next_id, &sges);
                    if signaled & (1 << i) == 0 {
                        wr.flags = 0;
                    }
                    match t.sq.post(&wr, None) {
                        Ok(w) => {
                            t.sends.push_back((w.index, t.next_id));
                            t.next_id += 1;
                        }
                        Err(_) => break,
                    }
                }
            }
            Op::PostRecvs { n } => {
                for _ in 0..(n % 8) {
                    t.recvs.push_back(t.next_id);
                    t.next_id += 1;
                }
            }
            Op::PollOne => {
                let ci0 = cq.consumer_index();
                let before = t.sends.clone();
                t.last_recv = None;
                let r = cq.poll_one(&mut t);
                let ci1 = cq.consumer_index();
                assert!(
                    ci1.wrapping_sub(ci0) <= ncqe,
                    "one poll consumed more than the ring"
                );
                match r {
                    Ok(None) => {
                        assert!(!is_sw_owned(op_own_at(&cq, ci1, size), ci1, ncqe));
                    }
                    Ok(Some(wc)) => {
                        assert_ne!(ci0, ci1);
                        check_completion(&t, &wc, &before);
                    }
                    Err(_) => assert_ne!(ci0, ci1, "an error CQE is consumed"),
                }
            }
            Op::Poll { max } => {
                let mut out = vec![WorkCompletion::default(); usize::from(max % 16)];
                let ci0 = cq.consumer_index();
                if let Ok(n) = cq.poll(&mut t, &mut out) {
                    assert!(n <= out.len());
                    assert!(cq.consumer_index().wrapping_sub(ci0) as usize >= n);
                }
            }
            Op::Clean { qpn: victim } => {
                let victim = if victim & 1 == 0 {
                    qpn
                } else {
                    victim & 0xff_ffff
                };
                let ci0 = cq.consumer_index();
                let owned0 = owned(&cq, size);
                let mut seen = Vec::new();
                let freed = cq.clean(|c| {
                    seen.push(*c);
                    c.qpn() == victim
                });
                assert_eq!(seen.len() as u32, owned0, "clean sees each owned CQE once");
                let removed = seen.iter().filter(|c| c.qpn() == victim).count() as u32;
                assert_eq!(freed, removed);
                assert_eq!(cq.consumer_index(), ci0.wrapping_add(freed));
                assert_eq!(owned(&cq, size), owned0 - freed);
                // The kept CQEs are there, oldest first, with their contents (but the owner bit).
                let mut kept: Vec<Cqe64> = seen.into_iter().filter(|c| c.qpn() != victim).collect();
                kept.reverse();
                let ci = cq.consumer_index();
                for (k, want) in kept.iter().enumerate() {
                    let index = ci.wrapping_add(k as u32);
                    let at = (index & (ncqe - 1)) as usize * size + size - 64;
                    let got = Cqe64::from_entry(&cq.buffer()[at..at + 64]).expect("64 bytes");
                    let mut want = *want;
                    want.set_owner(got.owner());
                    assert_eq!(got, want, "a kept CQE moved or changed");
                }
            }
            Op::Arm { solicited } => {
                let mut dbrec = DoorbellRecord::default();
                let mut uar = Uar::default();
                cq.arm(*solicited, &mut dbrec, &mut uar);
                let word = dbrec.0[CQ_ARM_DB].get();
                assert_eq!(word & 0xff_ffff, cq.consumer_index() & 0xff_ffff);
                assert_eq!(uar.0.len(), 1);
                let (offset, value) = uar.0[0];
                assert_eq!(offset, CQ_DOORBELL);
                assert_eq!(
                    u64::from_be_bytes(value),
                    (u64::from(word) << 32) | u64::from(input.cqn)
                );
                assert_eq!(
                    dbrec.0[CQ_SET_CI].get(),
                    0,
                    "arming leaves the consumer word alone"
                );
            }
            Op::Event => cq.event(),
            Op::UpdateConsumerIndex => {
                let mut dbrec = DoorbellRecord::default();
                cq.update_consumer_index(&mut dbrec);
                assert_eq!(dbrec.0[CQ_SET_CI].get(), cq.consumer_index() & 0xff_ffff);
            }
        }
    }
});
