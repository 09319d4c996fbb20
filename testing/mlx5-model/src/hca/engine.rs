//! One round of the engine: arm doorbells, then every QP: its doorbell record and register writes,
//! its send queue (or flushing, in the error state), and the SQ-drained event.

use std::time::{Duration, Instant};

use super::exec::Outcome;
use super::parse;
use super::state::{event, qps, DbCheck, State};
use super::trace::{Batch, UarWrite};
use super::{mem, ObjectKind, QpDesc};
// The error syndromes of the CQEs the HCA writes are the hardware format's numbers, taken from the
// driver's definitions rather than written twice. `drivers/tests/mlx5_golden.rs` checks those
// definitions against `mlx5dv.h`, independently of the driver and this model.
use uverbs_drivers::mlx5::cqe::syndrome;

/// WQEs one QP may execute per round before the others get their turn.
const BUDGET: u32 = 32;
/// How long a doorbell record update may wait for its UAR write before it counts as missing (the
/// driver thread may be preempted between the two).
const DOORBELL_GRACE: Duration = Duration::from_millis(if cfg!(test) { 60 } else { 250 });

impl State {
    /// One engine round. Returns whether anything happened, and the earliest time a waiting WQE
    /// wants to be retried.
    pub fn round(&mut self, now: Instant) -> (bool, Option<Instant>) {
        self.poll_arms();
        let mut work = false;
        let mut wake = None;
        let qpns: Vec<u32> = self.qps.keys().copied().collect();
        for qpn in qpns {
            work |= self.service_qp(qpn, now, &mut wake);
        }
        (work, wake)
    }

    fn service_qp(&mut self, qpn: u32, now: Instant, wake: &mut Option<Instant>) -> bool {
        let Some(qp) = self.qps.get(&qpn) else {
            return false;
        };
        let state = qp.state();
        if state == qps::RESET {
            return false;
        }
        self.watch_doorbell(qpn, now);
        let work = match state {
            qps::ERR => self.flush(qpn),
            qps::RTS | qps::SQD => self.run_sq(qpn, now, wake),
            _ => false,
        };
        if let Some(qp) = self.qps.get_mut(&qpn) {
            if qp.state() == qps::SQD && qp.drain_notify && qp.retry.is_none() {
                qp.drain_notify = false;
                self.async_event(event::SQ_DRAINED, ObjectKind::Qp, qpn);
            }
        }
        work
    }

    /// Executes the QP's posted send WQEs in order, up to the budget. In SQD only a WQE already
    /// under way (waiting for a retry) is finished.
    fn run_sq(&mut self, qpn: u32, now: Instant, wake: &mut Option<Instant>) -> bool {
        let mut work = false;
        for _ in 0..BUDGET {
            let Some(qp) = self.qps.get(&qpn) else {
                break;
            };
            if qp.d.sq_wqe_cnt == 0 {
                break;
            }
            let ci = qp.sq_ci;
            let retry = qp.retry.filter(|r| r.at == ci);
            if !(qp.state() == qps::RTS || (qp.state() == qps::SQD && retry.is_some())) {
                break;
            }
            let posted = qp.sq_posted();
            if posted == 0 {
                break;
            }
            if let Some(r) = retry {
                match r.next {
                    None => break,
                    Some(t) if now < t => {
                        *wake = Some(wake.map_or(t, |w| w.min(t)));
                        break;
                    }
                    Some(_) => {}
                }
            }
            let (ring, transport) = (qp.ring(), qp.d.transport);
            // SAFETY: `posted` blocks from `ci` are published by the doorbell record (loaded
            // with Acquire) and not completed; the ring is live while the QP is in the table.
            let parsed = unsafe { parse::parse(ring, ci, posted, qpn, transport) };
            let w = match parsed {
                Ok(w) => w,
                Err(m) => {
                    let qp = self.qps.get_mut(&qpn).expect("present");
                    qp.sq_ci = ci.wrapping_add(m.skip);
                    qp.retry = None;
                    self.stats.malformed_wqes += 1;
                    self.req_err_cqe(qpn, ci as u16, m.opcode, syndrome::LOCAL_QP_OP_ERR);
                    self.async_event(event::QP_FATAL, ObjectKind::Qp, qpn);
                    self.fail_qp(qpn);
                    return true;
                }
            };
            let exec = self.execute(qpn, &w, ci, now);
            let failed = match exec.outcome {
                Outcome::Wait => {
                    let next = self
                        .qps
                        .get(&qpn)
                        .and_then(|q| q.retry)
                        .and_then(|r| r.next);
                    if let Some(t) = next {
                        *wake = Some(wake.map_or(t, |w| w.min(t)));
                    }
                    return work;
                }
                Outcome::Done(n) => {
                    self.complete(qpn, &w);
                    if w.signaled() {
                        self.req_cqe(qpn, w.index, w.opcode, n);
                    }
                    false
                }
                Outcome::Fail(s) => {
                    self.complete(qpn, &w);
                    self.req_err_cqe(qpn, w.index, w.opcode, s);
                    true
                }
            };
            work = true;
            for (responder, ev) in exec.responders {
                if let Some(e) = ev {
                    self.async_event(e, ObjectKind::Qp, responder);
                }
                self.fail_qp(responder);
            }
            if failed {
                self.fail_qp(qpn);
                break;
            }
        }
        work
    }

    /// The WQE at the head of the SQ is done: the consumer moves past it.
    fn complete(&mut self, qpn: u32, w: &parse::Wqe) {
        if let Some(qp) = self.qps.get_mut(&qpn) {
            qp.sq_ci = qp.sq_ci.wrapping_add(w.bbs);
            qp.retry = None;
        }
        self.stats.wqes += 1;
    }

    /// Watches the QP's SND doorbell record: on a new value, finds the last WQE of the new batch
    /// and expects its doorbell in the BlueFlame register (the first 8 bytes of its control
    /// segment, or with a batch of one WQE possibly the whole WQE); then checks the register until
    /// the write is seen, a newer doorbell supersedes it, or the grace period ends.
    fn watch_doorbell(&mut self, qpn: u32, now: Instant) {
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return;
        };
        if qp.d.sq_wqe_cnt == 0 {
            return;
        }
        let snd = qp.snd();
        if snd != qp.db.last_snd {
            self.stats.doorbells += 1;
            if let Some(superseded) = qp.db.pending.take() {
                self.stats.doorbells_unchecked += 1;
                qp.db.snap.clear();
                if let (Some(trace), Some(batch)) = (self.trace.as_mut(), &superseded.traced) {
                    trace.record(qpn, batch, UarWrite::Unchecked, None);
                }
            }
            let target = qp
                .db
                .walk
                .wrapping_add(u32::from(snd.wrapping_sub(qp.db.walk as u16)));
            let ring = qp.ring();
            let (mut pos, mut last, mut count) = (qp.db.walk, None, 0);
            let mut traced = self.trace.is_some().then(|| Batch {
                dbrec: snd,
                wqe_cnt: qp.d.sq_wqe_cnt,
                wqes: Vec::new(),
            });
            while pos != target && count <= qp.d.sq_wqe_cnt {
                // SAFETY: blocks between the last and the new doorbell record value are posted;
                // the ring is live.
                let ctrl = unsafe { ring.ctrl(pos) };
                let left = target.wrapping_sub(pos);
                let Some(bbs) = parse::ctrl_ds(&ctrl)
                    .map(parse::ds_blocks)
                    .filter(|&b| b <= left && ctrl.wqe_index() == pos as u16)
                else {
                    break;
                };
                last = Some((pos, bbs));
                if let Some(t) = traced.as_mut() {
                    // SAFETY: as above; the WQE is posted.
                    t.wqes.push((pos, unsafe { ring.blocks_at(pos, bbs) }));
                }
                pos = pos.wrapping_add(bbs);
                count += 1;
            }
            qp.db.walk = target;
            qp.db.last_snd = snd;
            if let (Some((start, bbs)), true) = (last, pos == target) {
                // SAFETY: as above; the last WQE of the batch is posted.
                let blocks = unsafe { ring.blocks_at(start, bbs) };
                let mut first8 = [0u8; 8];
                first8.copy_from_slice(&blocks[..8]);
                qp.db.pending = Some(DbCheck {
                    first8,
                    body: (count == 1).then_some(blocks),
                    deadline: now + DOORBELL_GRACE,
                    traced,
                });
            } else {
                self.stats.doorbells_unchecked += 1;
                if let (Some(trace), Some(batch)) = (self.trace.as_mut(), &traced) {
                    trace.record(qpn, batch, UarWrite::Unchecked, None);
                }
            }
        }
        self.check_doorbell(qpn, now);
    }

    /// Looks for the awaited register write of QP `qpn` in the BlueFlame buffers it may write
    /// (both halves of its register, or of each register of its UAR page that it may ring). A
    /// register shared with other QPs (the kernel's "medium class" bfregs, or a UAR object's page
    /// the library splits between QPs) may have been overwritten by a sharer before the engine
    /// looked: then a doorbell not found counts as unchecked when a sharer's doorbell is there,
    /// and a BlueFlame body that still differs from the ring when the grace period ends is not
    /// held against the QP (only a register of its own tells an 8-byte doorbell from a bad
    /// BlueFlame copy); one equal to the ring is a copy either way.
    fn check_doorbell(&mut self, qpn: u32, now: Instant) {
        let Some(qp) = self.qps.get(&qpn) else {
            return;
        };
        let Some(check) = &qp.db.pending else {
            return;
        };
        let half = qp.d.bf_buf_size as usize;
        let buffers = bf_buffers(&qp.d);
        // The verdict, and the buffer the write was found in with what it held.
        let (verdict, found) = if buffers.is_empty() {
            (UarWrite::Unchecked, None)
        } else {
            let regs = bf_registers(&qp.d);
            let sharers: Vec<u32> = self
                .qps
                .values()
                .filter(|q| q.d.qpn != qpn && bf_registers(&q.d).iter().any(|r| regs.contains(r)))
                .map(|q| q.d.qpn)
                .collect();
            // SAFETY: the QP's BlueFlame buffers are in its UAR page, live while the QP is in the
            // table, and 8-aligned (`bf_buffers`).
            let words: Vec<[u8; 8]> = buffers
                .iter()
                .map(|&at| unsafe { mem::read_mmio64(at) })
                .collect();
            match words.iter().position(|w| *w == check.first8) {
                None if now < check.deadline => return,
                None => {
                    let sharer_there = words.iter().any(|w| {
                        let named = u32::from_be_bytes([w[4], w[5], w[6], w[7]]) >> 8;
                        sharers.contains(&named)
                    });
                    let verdict = if sharer_there {
                        UarWrite::Unchecked
                    } else {
                        UarWrite::Missing
                    };
                    (verdict, None)
                }
                Some(h) => match &check.body {
                    Some(body) if body.len() <= half => {
                        let mut cur = vec![0u8; body.len()];
                        // SAFETY: inside one BlueFlame buffer (`body` is at most its size), as
                        // above.
                        unsafe { mem::read_mmio(buffers[h], &mut cur) };
                        let unchanged =
                            qp.db.snap.get(h).and_then(Option::as_ref).is_none_or(|s| {
                                s.len() >= cur.len() && s[8..cur.len()] == cur[8..]
                            });
                        if cur == *body {
                            (UarWrite::BlueFlame, Some((h, cur)))
                        } else if unchanged {
                            // Only the first 8 bytes changed: an 8-byte doorbell.
                            (UarWrite::Doorbell, Some((h, words[h].to_vec())))
                        } else if now < check.deadline {
                            // Perhaps a BlueFlame copy still being written: look again.
                            return;
                        } else if !sharers.is_empty() {
                            // A sharer may have written the rest since: no verdict on the body.
                            (UarWrite::Doorbell, Some((h, words[h].to_vec())))
                        } else {
                            (UarWrite::BadCopy, Some((h, cur)))
                        }
                    }
                    _ => (UarWrite::Doorbell, Some((h, words[h].to_vec()))),
                },
            }
        };
        match verdict {
            UarWrite::Missing => self.stats.doorbells_missing += 1,
            UarWrite::Unchecked => self.stats.doorbells_unchecked += 1,
            UarWrite::Doorbell => self.stats.uar_doorbells += 1,
            UarWrite::BlueFlame => self.stats.blueflame_copies += 1,
            UarWrite::BadCopy => self.stats.blueflame_mismatches += 1,
        }
        if let (Some(trace), Some(batch)) = (self.trace.as_mut(), &check.traced) {
            let found = found.as_ref().map(|(h, bytes)| (*h, bytes.as_slice()));
            trace.record(qpn, batch, verdict, found);
        }
        let qp = self.qps.get_mut(&qpn).expect("present");
        qp.db.pending = None;
        if half >= 8 {
            qp.db.snap = buffers
                .iter()
                .map(|&at| {
                    let mut snap = vec![0u8; half - half % 8];
                    // SAFETY: one live, 8-aligned BlueFlame buffer of the QP, as above.
                    unsafe { mem::read_mmio(at, &mut snap) };
                    Some(snap)
                })
                .collect();
        }
    }
}

/// The BlueFlame registers QP `d` may ring: `bf_regs` of them from `bf_reg` on, one every
/// `2 * bf_buf_size` bytes (just `bf_reg` when its buffers are too small to say where the next one
/// is); none when its register is unknown or misaligned (its doorbells go unchecked).
fn bf_registers(d: &QpDesc) -> Vec<usize> {
    let half = d.bf_buf_size as usize;
    if d.bf_reg == 0 || d.bf_reg % 8 != 0 {
        return Vec::new();
    }
    if half < 8 || half % 8 != 0 {
        return vec![d.bf_reg];
    }
    (0..d.bf_regs.max(1) as usize)
        .map(|r| d.bf_reg + r * 2 * half)
        .collect()
}

/// The BlueFlame buffers a doorbell of QP `d` may land in: both halves of each of its registers
/// (the driver alternates between them), or the register itself when it has no halves.
fn bf_buffers(d: &QpDesc) -> Vec<usize> {
    let half = d.bf_buf_size as usize;
    let regs = bf_registers(d);
    if half < 8 || half % 8 != 0 {
        return regs;
    }
    regs.into_iter().flat_map(|r| [r, r + half]).collect()
}
