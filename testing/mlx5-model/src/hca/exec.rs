//! Executing one send WQE: the requester's local checks, the "wire" to the destination QP, the
//! responder's checks and effects, and what the requester learns back (success, an RNR NAK, a
//! lost packet, a NAK with a syndrome).
//!
//! Everything happens under the state lock in one step, which makes the model strictly in order:
//! WQEs of a QP execute one after the other, RDMA read and atomic results are in memory before the
//! requester's CQE, the responder's CQE is written before the requester's, and fences hold
//! trivially.

use std::time::{Duration, Instant};

use super::parse::{Piece, Sge, Wqe};
use super::state::{event, qps, RecvSlot, Retry, State};
use super::{mem, Space, Transport, PORT_MTU};
use uverbs_uapi as uapi;
// The CQE opcodes and error syndromes the HCA writes, and the WQE opcodes it executes, are the
// hardware format's numbers (PRM); they are taken from the driver's definitions rather than written
// twice. `drivers/tests/mlx5_golden.rs` checks those definitions against `mlx5dv.h`, independently of
// the driver and this model.
use uverbs_drivers::mlx5::cqe::{cqe_opcode, syndrome};
use uverbs_drivers::mlx5::wqe::opcode;

/// `ib_access_flags` bits.
pub(super) mod access {
    pub const LOCAL_WRITE: u32 = 1;
    pub const REMOTE_WRITE: u32 = 2;
    pub const REMOTE_READ: u32 = 4;
    pub const REMOTE_ATOMIC: u32 = 8;
}

/// Where registered memory is: the owner's address space and the address in it.
type Host = (Space, usize);

/// The largest message (2 GiB).
const MAX_MESSAGE: u64 = 1 << 31;
/// The destination QPN of multicast datagrams.
const MULTICAST_QPN: u32 = 0xff_ffff;

/// What happened to the requester's WQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Completed: the byte count of its CQE.
    Done(u32),
    /// Completed in error with this syndrome; the QP fails.
    Fail(u8),
    /// Not completed: an RNR NAK or a lost packet; the QP's `retry` says when to try again.
    Wait,
}

/// The result of executing a WQE.
#[derive(Debug)]
pub(super) struct Exec {
    pub outcome: Outcome,
    /// Responder QPs that failed, each with the async event to raise.
    pub responders: Vec<(u32, Option<u32>)>,
}

impl Exec {
    fn of(outcome: Outcome) -> Exec {
        Exec {
            outcome,
            responders: Vec::new(),
        }
    }
}

/// The IB RNR timer (`min_rnr_timer` encodings 0..=31), in microseconds.
const RNR_TIMER_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The delay an RNR NAK with timer `code` asks for.
pub(super) fn rnr_delay(code: u8) -> Duration {
    Duration::from_micros(RNR_TIMER_US[usize::from(code & 31)])
}

/// The local ACK timeout `4.096 µs × 2^code`; `None` for 0 (infinite).
pub(super) fn ack_timeout(code: u8) -> Option<Duration> {
    (code != 0).then(|| Duration::from_nanos(4096u64 << (code & 31)))
}

/// Whether a GID is a multicast group: `ff..` (IPv6), or an IPv4-mapped class D address.
pub(super) fn is_multicast(gid: &[u8; 16]) -> bool {
    gid[0] == 0xff || (is_ipv4_mapped(gid) && (224..=239).contains(&gid[12]))
}

fn is_ipv4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff]
}

/// The 40 bytes a ConnectX (RoCE v2) writes before a received datagram: the IPv6 header, or for
/// IPv4-mapped GIDs 20 zero bytes and the IPv4 header. `len` is the datagram's payload.
fn grh(sgid: &[u8; 16], dgid: &[u8; 16], tclass: u8, flow: u32, hop: u8, len: usize) -> [u8; 40] {
    // UDP (8) + BTH (12) + DETH (8) + payload + ICRC (4).
    let l4 = 8 + 12 + 8 + len + 4;
    let mut g = [0u8; 40];
    if is_ipv4_mapped(sgid) {
        let h = &mut g[20..];
        h[0] = 0x45;
        h[1] = tclass;
        h[2..4].copy_from_slice(&((20 + l4) as u16).to_be_bytes());
        h[6] = 0x40; // Don't fragment.
        h[8] = hop;
        h[9] = 17; // UDP.
        h[12..16].copy_from_slice(&sgid[12..]);
        h[16..20].copy_from_slice(&dgid[12..]);
        let check = uverbs_drivers::gid::ipv4_checksum((&*h).try_into().expect("20 bytes"));
        h[10..12].copy_from_slice(&check.to_be_bytes());
    } else {
        let w0 = (6u32 << 28) | (u32::from(tclass) << 20) | (flow & 0xf_ffff);
        g[0..4].copy_from_slice(&w0.to_be_bytes());
        g[4..6].copy_from_slice(&(l4 as u16).to_be_bytes());
        g[6] = 17; // UDP (RoCE v2).
        g[7] = hop;
        g[8..24].copy_from_slice(sgid);
        g[24..40].copy_from_slice(dgid);
    }
    g
}

impl State {
    /// The host address of `len` bytes at `addr` of the region `lkey` names, if the region is in
    /// PD `pdn`, grants `need` and holds the range.
    fn local(&self, pdn: u32, lkey: u32, addr: u64, len: u64, need: u32) -> Option<Host> {
        let mr = self.mrs.get(&lkey)?;
        Self::in_region(mr, pdn, addr, len, need)
    }

    /// As [`State::local`], for the region an rkey names.
    fn remote(&self, pdn: u32, rkey: u32, addr: u64, len: u64, need: u32) -> Option<Host> {
        let mr = self.mrs.get(self.rkeys.get(&rkey)?)?;
        if mr.rkey != rkey {
            return None;
        }
        Self::in_region(mr, pdn, addr, len, need)
    }

    /// The host range, checked: PD, access, bounds; and for an on-demand region, that its pages
    /// can be faulted in now (a pinned region's were checked when it was registered). A page that
    /// cannot is an access error, as a ConnectX's failed page fault is. (The model checks the
    /// process's mappings, then copies: memory the process unmaps between the two, while the device
    /// uses it, is out of what the model models.)
    fn in_region(mr: &super::MrDesc, pdn: u32, addr: u64, len: u64, need: u32) -> Option<Host> {
        let off = addr.checked_sub(mr.iova)?;
        let ok = mr.pdn == pdn && mr.access & need == need && off.checked_add(len)? <= mr.len;
        let host = mr.host.checked_add(usize::try_from(off).ok()?)?;
        if ok && mr.access & uapi::IB_UVERBS_ACCESS_ON_DEMAND != 0 {
            let writes = uapi::IB_UVERBS_ACCESS_LOCAL_WRITE
                | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE
                | uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC;
            if !crate::uaccess::faultable(mr.space, host as u64, len, need & writes != 0) {
                return None;
            }
        }
        ok.then_some((mr.space, host))
    }

    /// Reads a WQE's data (gather list or inline bytes) from local memory.
    fn gather(&self, pdn: u32, data: &[Piece]) -> Result<Vec<u8>, u8> {
        let mut total = 0u64;
        let mut plan = Vec::with_capacity(data.len());
        for p in data {
            match p {
                Piece::Sge(s) => {
                    total += u64::from(s.len);
                    if total > MAX_MESSAGE {
                        return Err(syndrome::LOCAL_LENGTH_ERR);
                    }
                    let host = self
                        .local(pdn, s.lkey, s.addr, u64::from(s.len), 0)
                        .ok_or(syndrome::LOCAL_PROT_ERR)?;
                    plan.push(Some((host, s.len as usize)));
                }
                Piece::Inline(b) => {
                    total += b.len() as u64;
                    plan.push(None);
                }
            }
        }
        if total > MAX_MESSAGE {
            return Err(syndrome::LOCAL_LENGTH_ERR);
        }
        let mut out = vec![0u8; total as usize];
        let mut at = 0;
        for (p, range) in data.iter().zip(plan) {
            match (p, range) {
                (_, Some((host, n))) => {
                    // SAFETY: a checked range of a registered region (the mapping contract).
                    unsafe { mem::read(host.0, host.1, &mut out[at..at + n]) };
                    at += n;
                }
                (Piece::Inline(b), None) => {
                    out[at..at + b.len()].copy_from_slice(b);
                    at += b.len();
                }
                (Piece::Sge(_), None) => unreachable!("every entry has a range"),
            }
        }
        Ok(out)
    }

    /// Where `len` bytes scattered over `sges` (local, written) go: `LOCAL_LENGTH_ERR` if the
    /// list is too short, `LOCAL_PROT_ERR` if an entry that receives bytes is not writable
    /// registered memory of PD `pdn`.
    fn scatter_plan(&self, pdn: u32, sges: &[Sge], len: usize) -> Result<Vec<(Host, usize)>, u8> {
        let capacity: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
        if capacity < len as u64 {
            return Err(syndrome::LOCAL_LENGTH_ERR);
        }
        let mut plan = Vec::new();
        let mut left = len;
        for s in sges {
            if left == 0 {
                break;
            }
            let n = left.min(s.len as usize);
            let host = self
                .local(pdn, s.lkey, s.addr, n as u64, access::LOCAL_WRITE)
                .ok_or(syndrome::LOCAL_PROT_ERR)?;
            plan.push((host, n));
            left -= n;
        }
        Ok(plan)
    }

    /// Writes `parts`, concatenated, along a plan from [`State::scatter_plan`].
    fn scatter(plan: &[(Host, usize)], parts: &[&[u8]]) {
        let mut bytes = parts.iter().flat_map(|p| p.iter().copied());
        for &(host, n) in plan {
            let chunk: Vec<u8> = bytes.by_ref().take(n).collect();
            // SAFETY: a checked, writable range of a registered region (the mapping contract).
            unsafe { mem::write(host.0, host.1, &chunk) };
        }
    }

    /// Puts a message into a receive WQE of QP `qpn`: consumes it, and on an error writes its
    /// error CQE. Returns the byte count.
    fn deliver(&mut self, qpn: u32, slot: &RecvSlot, parts: &[&[u8]]) -> Result<u32, u8> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let plan = self.scatter_plan(slot.pdn, &slot.sges, len);
        self.consume_recv(qpn, slot);
        match plan {
            Ok(plan) => {
                Self::scatter(&plan, parts);
                Ok(len as u32)
            }
            Err(s) => {
                self.resp_err_cqe(qpn, slot.index, s);
                Err(s)
            }
        }
    }

    /// The requester's WQE at `at` found no receive WQE (`rnr`, with the responder's timer) or
    /// lost its packet: schedules the retry or fails with the retry-exceeded syndromes.
    fn retry(&mut self, qpn: u32, at: u32, rnr: Option<u8>, now: Instant) -> Outcome {
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return Outcome::Wait;
        };
        let first = qp.retry.filter(|r| r.at == at).is_none();
        let mut r = qp.retry.filter(|r| r.at == at).unwrap_or(Retry {
            at,
            next: None,
            rnr_left: qp.attrs.rnr_retry.min(7),
            retry_left: qp.attrs.retry_cnt.min(7),
        });
        match rnr {
            Some(timer) => {
                self.stats.rnr_naks += 1;
                if r.rnr_left == 0 {
                    qp.retry = None;
                    return Outcome::Fail(syndrome::RNR_RETRY_EXC_ERR);
                }
                if r.rnr_left != 7 {
                    r.rnr_left -= 1;
                }
                r.next = Some(now + rnr_delay(timer));
            }
            None => {
                if !first {
                    // The ACK timer expired: resend, if retries are left.
                    if r.retry_left == 0 {
                        qp.retry = None;
                        return Outcome::Fail(syndrome::TRANSPORT_RETRY_EXC_ERR);
                    }
                    r.retry_left -= 1;
                }
                self.stats.packets_lost += 1;
                r.next = ack_timeout(qp.attrs.timeout).map(|t| now + t);
            }
        }
        qp.retry = Some(r);
        Outcome::Wait
    }

    /// Executes the WQE `w` of QP `qpn` (in RTS, or SQD finishing it).
    pub fn execute(&mut self, qpn: u32, w: &Wqe, at: u32, now: Instant) -> Exec {
        let Some(qp) = self.qps.get(&qpn) else {
            return Exec::of(Outcome::Wait);
        };
        if w.opcode == opcode::NOP {
            return Exec::of(Outcome::Done(0));
        }
        match qp.d.transport {
            Transport::Ud => self.ud(qpn, w),
            t => self.connected(qpn, t, w, at, now),
        }
    }

    /// Whether a packet from QP `qpn` reaches QP `dq` over a connection.
    fn reachable(&self, qpn: u32, transport: Transport, dq: u32) -> bool {
        let src = &self.qps[&qpn];
        let Some(dst) = self.qps.get(&dq) else {
            return false;
        };
        self.port_active
            && self.gids.contains(&src.attrs.path.dgid)
            && dst.d.transport == transport
            && matches!(dst.state(), qps::RTR | qps::RTS | qps::SQD | qps::SQE)
    }

    /// A responder that just received its first packet in RTR raises COMM_EST.
    fn first_packet(&mut self, dq: u32) {
        if let Some(d) = self.qps.get_mut(&dq) {
            if d.state() == qps::RTR && !d.comm_est_done {
                d.comm_est_done = true;
                self.async_event(event::COMM_EST, super::ObjectKind::Qp, dq);
            }
        }
    }

    fn connected(
        &mut self,
        qpn: u32,
        transport: Transport,
        w: &Wqe,
        at: u32,
        now: Instant,
    ) -> Exec {
        let rc = transport == Transport::Rc;
        let src = &self.qps[&qpn];
        let (pdn, dq, sl) = (src.d.pdn, src.attrs.dest_qpn, src.attrs.path.sl);
        let op = w.opcode;
        let read_like = matches!(
            op,
            opcode::RDMA_READ | opcode::ATOMIC_CS | opcode::ATOMIC_FA
        );

        // The requester's local checks.
        let sges: Vec<Sge> = w.sges().collect();
        let mut data = Vec::new();
        let mut local_plan = Vec::new();
        let len = if read_like {
            let len = if op == opcode::RDMA_READ {
                let total: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
                if total > MAX_MESSAGE {
                    return Exec::of(Outcome::Fail(syndrome::LOCAL_LENGTH_ERR));
                }
                total as usize
            } else {
                8
            };
            match self.scatter_plan(pdn, &sges, len) {
                Ok(p) => local_plan = p,
                Err(s) => return Exec::of(Outcome::Fail(s)),
            }
            len
        } else {
            match self.gather(pdn, &w.data) {
                Ok(d) => data = d,
                Err(s) => return Exec::of(Outcome::Fail(s)),
            }
            data.len()
        };

        // The wire.
        if !self.reachable(qpn, transport, dq) {
            return if rc {
                Exec::of(self.retry(qpn, at, None, now))
            } else {
                self.stats.packets_lost += 1;
                Exec::of(Outcome::Done(len as u32))
            };
        }
        self.first_packet(dq);
        let dst = &self.qps[&dq];
        let (dpdn, daccess, dtimer) = (dst.d.pdn, dst.attrs.access, dst.attrs.min_rnr_timer);
        let flags_rqpn = (u32::from(sl & 0xf) << 24) | qpn;
        let se = w.solicited();
        // A responder error. RC: the responder fails (raising `event`) and NAKs, the requester
        // fails with `synd`. UC has no NAKs: the requester never hears of it; the responder drops
        // the message, and fails only when a receive WQE completed in error (`wqe_error`).
        let nak = |synd: u8, event: Option<u32>, wqe_error: bool| Exec {
            outcome: if rc {
                Outcome::Fail(synd)
            } else {
                Outcome::Done(len as u32)
            },
            responders: match (rc, wqe_error) {
                (true, _) => vec![(dq, event)],
                (false, true) => vec![(dq, None)],
                (false, false) => Vec::new(),
            },
        };

        // Operations that consume a receive WQE look for one first (else: RNR NAK).
        let slot = if matches!(
            op,
            opcode::SEND | opcode::SEND_IMM | opcode::SEND_INVAL | opcode::RDMA_WRITE_IMM
        ) {
            match self.peek_recv(dq) {
                Some(s) => Some(s),
                None if rc => return Exec::of(self.retry(qpn, at, Some(dtimer), now)),
                None => {
                    self.stats.packets_dropped += 1;
                    return Exec::of(Outcome::Done(len as u32));
                }
            }
        } else {
            None
        };

        match op {
            opcode::SEND | opcode::SEND_IMM | opcode::SEND_INVAL => {
                let slot = slot.expect("looked up above");
                match self.deliver(dq, &slot, &[&data]) {
                    Ok(n) => {
                        let (cqe_op, imm) = match op {
                            opcode::SEND => (cqe_opcode::RESP_SEND, [0; 4]),
                            opcode::SEND_IMM => (cqe_opcode::RESP_SEND_IMM, w.imm),
                            _ => (cqe_opcode::RESP_SEND_INV, w.imm),
                        };
                        self.resp_cqe(dq, slot.index, cqe_op, n, imm, flags_rqpn, se);
                        Exec::of(Outcome::Done(len as u32))
                    }
                    Err(syndrome::LOCAL_LENGTH_ERR) => nak(
                        syndrome::REMOTE_INVAL_REQ_ERR,
                        Some(event::QP_REQ_ERR),
                        true,
                    ),
                    Err(_) => nak(syndrome::REMOTE_OP_ERR, None, true),
                }
            }
            opcode::RDMA_WRITE | opcode::RDMA_WRITE_IMM => {
                if len > 0 {
                    let host = self
                        .remote(dpdn, w.rkey, w.raddr, len as u64, access::REMOTE_WRITE)
                        .filter(|_| daccess & access::REMOTE_WRITE != 0);
                    let Some(host) = host else {
                        self.stats.remote_access_errors += 1;
                        return nak(
                            syndrome::REMOTE_ACCESS_ERR,
                            Some(event::QP_ACCESS_ERR),
                            false,
                        );
                    };
                    // SAFETY: a checked, remotely writable range of a registered region.
                    unsafe { mem::write(host.0, host.1, &data) };
                }
                if let Some(slot) = slot {
                    self.consume_recv(dq, &slot);
                    let imm = w.imm;
                    let op = cqe_opcode::RESP_WR_IMM;
                    self.resp_cqe(dq, slot.index, op, len as u32, imm, flags_rqpn, se);
                }
                Exec::of(Outcome::Done(len as u32))
            }
            opcode::RDMA_READ => {
                let mut buf = vec![0u8; len];
                if len > 0 {
                    let host = self
                        .remote(dpdn, w.rkey, w.raddr, len as u64, access::REMOTE_READ)
                        .filter(|_| daccess & access::REMOTE_READ != 0);
                    let Some(host) = host else {
                        self.stats.remote_access_errors += 1;
                        return nak(
                            syndrome::REMOTE_ACCESS_ERR,
                            Some(event::QP_ACCESS_ERR),
                            false,
                        );
                    };
                    // SAFETY: a checked, remotely readable range of a registered region.
                    unsafe { mem::read(host.0, host.1, &mut buf) };
                }
                Self::scatter(&local_plan, &[&buf]);
                Exec::of(Outcome::Done(len as u32))
            }
            opcode::ATOMIC_CS | opcode::ATOMIC_FA => {
                if w.raddr % 8 != 0 {
                    return nak(
                        syndrome::REMOTE_INVAL_REQ_ERR,
                        Some(event::QP_REQ_ERR),
                        false,
                    );
                }
                let host = self
                    .remote(dpdn, w.rkey, w.raddr, 8, access::REMOTE_ATOMIC)
                    .filter(|_| daccess & access::REMOTE_ATOMIC != 0);
                let Some(host) = host else {
                    self.stats.remote_access_errors += 1;
                    return nak(
                        syndrome::REMOTE_ACCESS_ERR,
                        Some(event::QP_ACCESS_ERR),
                        false,
                    );
                };
                if host.1 % 8 != 0 {
                    return nak(
                        syndrome::REMOTE_INVAL_REQ_ERR,
                        Some(event::QP_REQ_ERR),
                        false,
                    );
                }
                let orig = if op == opcode::ATOMIC_CS {
                    // SAFETY: a checked, 8-byte aligned, remotely atomic-accessible word.
                    unsafe { mem::atomic_cas(host.0, host.1, w.compare, w.swap_add) }
                } else {
                    // SAFETY: as above.
                    unsafe { mem::atomic_fetch_add(host.0, host.1, w.swap_add) }
                };
                // Atomic responses are delivered in host byte order (ConnectX-4 and later, with
                // the requester endianness mode mlx5_core sets: the returned value reads as a
                // native u64).
                Self::scatter(&local_plan, &[&orig.to_ne_bytes()]);
                Exec::of(Outcome::Done(8))
            }
            _ => Exec::of(Outcome::Fail(syndrome::LOCAL_QP_OP_ERR)),
        }
    }

    fn ud(&mut self, qpn: u32, w: &Wqe) -> Exec {
        let src = &self.qps[&qpn];
        let (pdn, own_qkey) = (src.d.pdn, src.attrs.qkey);
        let data = match self.gather(pdn, &w.data) {
            Ok(d) => d,
            Err(s) => return Exec::of(Outcome::Fail(s)),
        };
        if data.len() > PORT_MTU as usize {
            return Exec::of(Outcome::Fail(syndrome::LOCAL_LENGTH_ERR));
        }
        let av = w.av.expect("UD WQEs carry an address vector");
        let gfl = av.grh_gid_fl.get();
        let Some(sgid) = self.gids.get(((gfl >> 20) & 0xff) as usize).copied() else {
            return Exec::of(Outcome::Fail(syndrome::LOCAL_QP_OP_ERR));
        };
        let dgid = av.rgid;
        let dqpn = av.dest_qpn();
        // A Q_Key with the high bit set means "the sending QP's own" (IB).
        let qkey = match av.qkey.get() {
            k if k & 0x8000_0000 != 0 => own_qkey,
            k => k,
        };
        let targets: Vec<u32> = if !self.port_active {
            Vec::new()
        } else if dqpn == MULTICAST_QPN {
            if is_multicast(&dgid) {
                self.mcast
                    .get(&dgid)
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default()
            } else {
                Vec::new()
            }
        } else if self.gids.contains(&dgid) {
            vec![dqpn]
        } else {
            Vec::new()
        };
        if targets.is_empty() {
            self.stats.packets_dropped += 1;
        }
        let header = grh(
            &sgid,
            &dgid,
            av.tclass,
            gfl & 0xf_ffff,
            av.hop_limit,
            data.len(),
        );
        let l3 = if is_ipv4_mapped(&sgid) { 2 } else { 1 };
        let sl = (av.stat_rate_sl >> 1) & 7;
        let flags_rqpn = (l3 << 28) | (u32::from(sl) << 24) | qpn;
        let (cqe_op, imm) = if w.opcode == opcode::SEND_IMM {
            (cqe_opcode::RESP_SEND_IMM, w.imm)
        } else {
            (cqe_opcode::RESP_SEND, [0; 4])
        };
        let mut exec = Exec::of(Outcome::Done(data.len() as u32));
        for t in targets {
            let ok = self.qps.get(&t).is_some_and(|d| {
                d.d.transport == Transport::Ud
                    && matches!(d.state(), qps::RTR | qps::RTS | qps::SQD | qps::SQE)
                    && d.attrs.qkey == qkey
            });
            let slot = if ok { self.peek_recv(t) } else { None };
            let Some(slot) = slot else {
                self.stats.packets_dropped += 1;
                continue;
            };
            match self.deliver(t, &slot, &[&header, &data]) {
                Ok(n) => self.resp_cqe(t, slot.index, cqe_op, n, imm, flags_rqpn, w.solicited()),
                Err(_) => exec.responders.push((t, None)),
            }
        }
        exec
    }
}
