//! The HCA's tables (the firmware's contexts) and what it does to CQs and receive queues: writing
//! CQEs with their ownership bit, CQ overrun, arming and completion events, flushing, and taking
//! receive WQEs from RQ rings and SRQ lists.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, IntoBytes};

use super::mem;
use super::parse::{self, Ring, Sge, ZERO_LENGTH_MEANS};
use super::{CqDesc, HcaStats, MrDesc, ObjectKind, QpAttrs, QpDesc, SrqDesc};
// The CQE layout the HCA writes (`Cqe64`, `ErrCqe`, opcodes, syndromes, the owner bit), the doorbell
// record and UAR offsets it reads, and the data segment of receive WQEs are the hardware format;
// they are taken from the driver's definitions rather than written twice, so the model checks the
// driver's *use* of them (ring arithmetic, ordering, what is posted), not the layouts themselves:
// `drivers/tests/mlx5_golden.rs` checks those definitions against `mlx5dv.h`, independently of
// the driver and this model.
use uverbs_drivers::mlx5::cqe::{
    cqe_opcode, device_owner_bit, syndrome, Cqe64, ErrCqe, CQ_DB_REQ_NOT_SOL,
};
use uverbs_drivers::mlx5::doorbell::{CQ_ARM_DB, CQ_DOORBELL, CQ_SET_CI, RCV_DBR, SND_DBR};
use uverbs_drivers::mlx5::wqe::{DataSeg, INVALID_LKEY};

/// `enum ib_event_type` values the HCA raises.
pub(super) mod event {
    /// `IB_EVENT_CQ_ERR`.
    pub const CQ_ERR: u32 = 0;
    /// `IB_EVENT_QP_FATAL`.
    pub const QP_FATAL: u32 = 1;
    /// `IB_EVENT_QP_REQ_ERR`.
    pub const QP_REQ_ERR: u32 = 2;
    /// `IB_EVENT_QP_ACCESS_ERR`.
    pub const QP_ACCESS_ERR: u32 = 3;
    /// `IB_EVENT_COMM_EST`.
    pub const COMM_EST: u32 = 4;
    /// `IB_EVENT_SQ_DRAINED`.
    pub const SQ_DRAINED: u32 = 5;
    /// `IB_EVENT_PORT_ACTIVE`.
    pub const PORT_ACTIVE: u32 = 9;
    /// `IB_EVENT_PORT_ERR`.
    pub const PORT_ERR: u32 = 10;
    /// `IB_EVENT_SRQ_LIMIT_REACHED`.
    pub const SRQ_LIMIT_REACHED: u32 = 15;
    /// `IB_EVENT_QP_LAST_WQE_REACHED`.
    pub const QP_LAST_WQE_REACHED: u32 = 16;
}

/// `enum ib_qp_state`.
pub(super) mod qps {
    pub const RESET: u8 = 0;
    #[allow(dead_code)] // Named for completeness: the engine does nothing in INIT.
    pub const INIT: u8 = 1;
    pub const RTR: u8 = 2;
    pub const RTS: u8 = 3;
    pub const SQD: u8 = 4;
    pub const SQE: u8 = 5;
    pub const ERR: u8 = 6;
}

/// The value the HCA puts in a new CQ's arm word: bits 25..27 set, which no arm doorbell has, so
/// the driver's first arm (often the all-zero word `sn 0, REQ_NOT, ci 0`) reads as a change.
pub(super) const ARM_SENTINEL: u32 = 0x0e00_0000;

/// Something to tell the kernel half once the state lock is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    /// A completion event on a CQ.
    Completion(u32),
    /// An async event.
    Async {
        event_type: u32,
        kind: ObjectKind,
        element: u32,
    },
}

/// A CQ's arm: what the last arm doorbell asked for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arm {
    pub solicited: bool,
    pub ci: u32,
}

/// A completion queue context.
#[derive(Debug)]
pub(super) struct Cq {
    pub d: CqDesc,
    /// Producer index (free running).
    pub pi: u32,
    pub armed: Option<Arm>,
    /// Completion events raised (the arm sequence number the next valid arm carries, mod 4).
    pub sn: u32,
    /// The arm word of the doorbell record as last read.
    pub last_arm_word: u32,
}

/// The retransmission state of the WQE at the head of a send queue (RNR NAKs and ACK timeouts).
#[derive(Debug, Clone, Copy)]
pub(super) struct Retry {
    /// The WQE's producer counter.
    pub at: u32,
    /// When to try again; `None`: never (ACK timeout 0 is infinite).
    pub next: Option<Instant>,
    /// RNR retries left (7: unlimited).
    pub rnr_left: u8,
    /// Transport retries left.
    pub retry_left: u8,
}

/// What the HCA checks of a doorbell: the register writes that should follow a doorbell record
/// update.
#[derive(Debug, Default)]
pub(super) struct DoorbellWatch {
    /// The SND doorbell record value last seen.
    pub last_snd: u16,
    /// Producer counter up to which WQE boundaries were walked.
    pub walk: u32,
    /// A doorbell whose register write has not been seen yet.
    pub pending: Option<DbCheck>,
    /// The QP's BlueFlame buffers (the halves of its registers, as `engine::bf_buffers` lists them)
    /// as last read (`None` or missing: unknown).
    pub snap: Vec<Option<Vec<u8>>>,
}

/// A doorbell record update whose UAR write is awaited.
#[derive(Debug)]
pub(super) struct DbCheck {
    /// The first 8 bytes of the batch's last WQE: what an 8-byte doorbell writes.
    pub first8: [u8; 8],
    /// With a batch of one WQE, its blocks: what a BlueFlame copy writes.
    pub body: Option<Vec<u8>>,
    /// When to give up and count the doorbell as missing.
    pub deadline: Instant,
    /// The batch's WQEs as fetched, when the doorbell trace is on.
    pub traced: Option<super::trace::Batch>,
}

/// A queue pair context.
#[derive(Debug)]
pub(super) struct Qp {
    pub d: QpDesc,
    pub attrs: QpAttrs,
    /// SQ consumer counter in basic blocks (free running; the WQE index is its low 16 bits).
    pub sq_ci: u32,
    /// RQ WQEs consumed (free running).
    pub rq_ci: u32,
    pub retry: Option<Retry>,
    /// COMM_EST raised since the last move to RTR.
    pub comm_est_done: bool,
    /// SQ_DRAINED owed once the SQ is idle (entered SQD).
    pub drain_notify: bool,
    pub db: DoorbellWatch,
}

impl Qp {
    pub fn state(&self) -> u8 {
        self.attrs.state
    }

    pub fn ring(&self) -> Ring {
        Ring {
            space: self.d.space,
            base: self.d.buf + self.d.sq_offset,
            blocks: self.d.sq_wqe_cnt,
        }
    }

    /// The SND doorbell record word.
    pub fn snd(&self) -> u16 {
        // SAFETY: the QP's doorbell record, 8 bytes and 4-aligned, is live while the QP is in the
        // table (the mapping contract).
        unsafe { mem::load_be32(self.d.space, self.d.dbrec + 4 * SND_DBR) as u16 }
    }

    /// The RCV doorbell record word.
    pub fn rcv(&self) -> u16 {
        // SAFETY: as in `snd`.
        unsafe { mem::load_be32(self.d.space, self.d.dbrec + 4 * RCV_DBR) as u16 }
    }

    /// Basic blocks posted and not consumed.
    pub fn sq_posted(&self) -> u32 {
        u32::from(self.snd().wrapping_sub(self.sq_ci as u16))
    }
}

/// A shared receive queue context.
#[derive(Debug)]
pub(super) struct Srq {
    pub d: SrqDesc,
    /// The WQE the HCA takes next (it follows `next_wqe_index` from there).
    pub head: u16,
    /// WQEs consumed (free running).
    pub consumed: u32,
    pub limit: u32,
}

impl Srq {
    /// WQEs posted and not consumed.
    fn available(&self) -> u32 {
        // SAFETY: the SRQ's doorbell record is live while the SRQ is in the table.
        let counter = unsafe { mem::load_be32(self.d.space, self.d.dbrec) };
        (counter.wrapping_sub(self.consumed)) & 0xffff
    }
}

/// A receive WQE the HCA is about to use.
#[derive(Debug, Clone)]
pub(super) struct RecvSlot {
    /// The WQE index the CQE reports.
    pub index: u16,
    pub sges: Vec<Sge>,
    /// The SRQ it comes from.
    pub srq: Option<u32>,
    /// The PD its buffers must be in.
    pub pdn: u32,
    /// SRQ: the WQE after it.
    next: u16,
}

/// The whole device state, behind the HCA's lock.
#[derive(Debug)]
pub(super) struct State {
    pub gids: Vec<[u8; 16]>,
    pub port_active: bool,
    pub mrs: HashMap<u32, MrDesc>,
    /// rkey → lkey.
    pub rkeys: HashMap<u32, u32>,
    pub cqs: BTreeMap<u32, Cq>,
    pub qps: BTreeMap<u32, Qp>,
    pub srqs: BTreeMap<u32, Srq>,
    pub mcast: HashMap<[u8; 16], BTreeSet<u32>>,
    /// UAR page → the CQ doorbell register's contents as last read.
    pub uar_seen: HashMap<usize, [u8; 8]>,
    pub events: Vec<Event>,
    pub stats: HcaStats,
    /// The doorbell trace, when the environment asks for one (`trace::TRACE_ENV`).
    pub trace: Option<super::trace::Trace>,
}

/// The vendor syndrome a ConnectX reports with a syndrome (best effort: the values commonly seen
/// in `ibv_wc.vendor_err`; only the flush one, 0xf9, is certain).
fn vendor_syndrome(s: u8) -> u8 {
    match s {
        syndrome::WR_FLUSH_ERR => 0xf9,
        syndrome::TRANSPORT_RETRY_EXC_ERR => 0x81,
        syndrome::RNR_RETRY_EXC_ERR => 0x82,
        syndrome::REMOTE_ACCESS_ERR => 0x88,
        syndrome::REMOTE_INVAL_REQ_ERR => 0x8a,
        syndrome::REMOTE_OP_ERR => 0x89,
        syndrome::LOCAL_LENGTH_ERR => 0x69,
        syndrome::LOCAL_PROT_ERR => 0x56,
        syndrome::LOCAL_QP_OP_ERR => 0x68,
        _ => 0,
    }
}

impl State {
    pub fn new(gids: Vec<[u8; 16]>) -> State {
        State {
            gids,
            port_active: true,
            mrs: HashMap::new(),
            rkeys: HashMap::new(),
            cqs: BTreeMap::new(),
            qps: BTreeMap::new(),
            srqs: BTreeMap::new(),
            mcast: HashMap::new(),
            uar_seen: HashMap::new(),
            events: Vec::new(),
            stats: HcaStats::default(),
            trace: super::trace::Trace::from_env(),
        }
    }

    pub fn async_event(&mut self, event_type: u32, kind: ObjectKind, element: u32) {
        self.events.push(Event::Async {
            event_type,
            kind,
            element,
        });
    }

    // ---------------------------------------------------------------------------------------
    // CQs
    // ---------------------------------------------------------------------------------------

    /// A new CQ context. Marks the arm word "never armed" and remembers the UAR register's
    /// contents, so that neither reads as an arm doorbell.
    pub fn add_cq(&mut self, d: CqDesc) {
        // SAFETY: the CQ's doorbell record is live from now on (the mapping contract); the driver
        // does not arm a CQ before CREATE_CQ has returned its number.
        unsafe { mem::store_be32(d.space, d.dbrec + 4 * CQ_ARM_DB, ARM_SENTINEL) };
        if d.uar != 0 {
            self.uar_seen.entry(d.uar).or_insert_with(|| {
                // SAFETY: the UAR page is mapped while a CQ uses it; +0x20 is 8-aligned.
                unsafe { mem::read_mmio64(d.uar + CQ_DOORBELL) }
            });
        }
        self.cqs.insert(
            d.cqn,
            Cq {
                d,
                pi: 0,
                armed: None,
                sn: 0,
                last_arm_word: ARM_SENTINEL,
            },
        );
    }

    /// Moves CQ `cqn` to the ring at `buf` of `ncqe` entries of `cqe_size` bytes (firmware's
    /// `MODIFY_CQ` with the resize bit, as ConnectX does it): a resize CQE goes into the old ring
    /// after the entries still waiting, and the next CQE into the new ring at the index after it.
    /// Returns the old entry count; `EINVAL` for an unknown CQ, a full old ring (no room for the
    /// resize CQE) or a new ring too small for the waiting entries.
    pub fn resize_cq(
        &mut self,
        cqn: u32,
        buf: usize,
        ncqe: u32,
        cqe_size: u32,
    ) -> Result<u32, nix::errno::Errno> {
        use nix::errno::Errno;
        let cq = self.cqs.get_mut(&cqn).ok_or(Errno::EINVAL)?;
        let n = cq.d.ncqe;
        // SAFETY: the CQ's doorbell record is live while the CQ is in the table.
        let ci = unsafe { mem::load_be32(cq.d.space, cq.d.dbrec + 4 * CQ_SET_CI) } & 0xff_ffff;
        let waiting = cq.pi.wrapping_sub(ci) & 0xff_ffff;
        if waiting >= n || waiting >= ncqe {
            return Err(Errno::EINVAL);
        }
        let mut cqe = Cqe64 {
            op_own: cqe_opcode::RESIZE_CQ << 4,
            ..Cqe64::default()
        };
        cqe.set_owner(device_owner_bit(cq.pi, n));
        let size = cq.d.cqe_size as usize;
        let at = cq.d.buf + (cq.pi & (n - 1)) as usize * size + (size - 64);
        let bytes: [u8; 64] = cqe.as_bytes().try_into().expect("64 bytes");
        // SAFETY: as in `push_cqe`: inside the old ring, in an entry software released.
        unsafe { mem::publish_cqe(cq.d.space, at, &bytes) };
        cq.pi = cq.pi.wrapping_add(1);
        cq.d.buf = buf;
        cq.d.ncqe = ncqe;
        cq.d.cqe_size = cqe_size;
        Ok(n)
    }

    /// Writes a CQE as the next entry of CQ `cqn` (its owner bit is set here), or drops it with
    /// a CQ_ERR event when the CQ is full. `se`: the entry wakes a solicited-only arm.
    pub fn push_cqe(&mut self, cqn: u32, mut cqe: Cqe64) {
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            self.stats.cqes_lost += 1;
            return;
        };
        let n = cq.d.ncqe;
        // SAFETY: the CQ's doorbell record is live while the CQ is in the table.
        let ci = unsafe { mem::load_be32(cq.d.space, cq.d.dbrec + 4 * CQ_SET_CI) } & 0xff_ffff;
        if cq.pi.wrapping_sub(ci) & 0xff_ffff >= n {
            self.stats.cq_overruns += 1;
            self.async_event(event::CQ_ERR, ObjectKind::Cq, cqn);
            return;
        }
        cqe.set_owner(device_owner_bit(cq.pi, n));
        // The device clock when the CQE is written (a ConnectX stamps every CQE but an error
        // CQE, whose bytes there are its syndromes).
        let op = cqe.op_own >> 4;
        if op != cqe_opcode::REQ_ERR && op != cqe_opcode::RESP_ERR {
            cqe.timestamp = zerocopy::byteorder::big_endian::U64::new(super::device_clock());
        }
        let size = cq.d.cqe_size as usize;
        let at = cq.d.buf + (cq.pi & (n - 1)) as usize * size + (size - 64);
        let bytes: [u8; 64] = cqe.as_bytes().try_into().expect("64 bytes");
        // SAFETY: the entry lies inside the CQ buffer (index masked by ncqe), which is live while
        // the CQ is in the table; the consumer index says software released it.
        unsafe { mem::publish_cqe(cq.d.space, at, &bytes) };
        cq.pi = cq.pi.wrapping_add(1);
        self.stats.cqes += 1;
        if let Some(arm) = cq.armed {
            if !arm.solicited || wakes_solicited(cqe.op_own) {
                self.fire(cqn);
            }
        }
    }

    /// Raises the completion event of an armed CQ and disarms it.
    fn fire(&mut self, cqn: u32) {
        if let Some(cq) = self.cqs.get_mut(&cqn) {
            cq.armed = None;
            cq.sn = cq.sn.wrapping_add(1);
            self.stats.completion_events += 1;
            self.events.push(Event::Completion(cqn));
        }
    }

    /// An arm doorbell `word` (`sn << 28 | cmd | ci`) for CQ `cqn`.
    fn arm(&mut self, cqn: u32, word: u32) {
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            return;
        };
        if word & 0x0e00_0000 != 0 {
            self.stats.bad_arms += 1;
            return;
        }
        if (word >> 28) & 3 != cq.sn & 3 {
            // An arm for an event already raised (the driver counts events it consumed and
            // carries the count; the device ignores stale arms).
            self.stats.stale_arms += 1;
            return;
        }
        let arm = Arm {
            solicited: word & CQ_DB_REQ_NOT_SOL != 0,
            ci: word & 0xff_ffff,
        };
        cq.armed = Some(arm);
        self.stats.arms += 1;
        // Entries already written past the armed consumer index count.
        let n = cq.d.ncqe;
        let beyond = cq.pi.wrapping_sub(arm.ci) & 0xff_ffff;
        if beyond == 0 || beyond > 1 << 23 {
            return;
        }
        let beyond = beyond.min(n);
        let size = cq.d.cqe_size as usize;
        let wake = !arm.solicited
            || (0..beyond).any(|k| {
                let idx = cq.pi.wrapping_sub(1 + k) & (n - 1);
                let at = cq.d.buf + idx as usize * size + size - 1;
                // SAFETY: the `op_own` byte of an entry of the live CQ buffer.
                wakes_solicited(unsafe { mem::load_op_own(cq.d.space, at) })
            });
        if wake {
            self.fire(cqn);
        }
    }

    /// Reads every CQ's arm word and the UAR CQ doorbell registers; acts on new arms.
    pub fn poll_arms(&mut self) {
        let cqns: Vec<u32> = self.cqs.keys().copied().collect();
        for &cqn in &cqns {
            let cq = &self.cqs[&cqn];
            // SAFETY: the CQ's doorbell record is live while the CQ is in the table.
            let w = unsafe { mem::load_be32(cq.d.space, cq.d.dbrec + 4 * CQ_ARM_DB) };
            if w != cq.last_arm_word {
                self.cqs.get_mut(&cqn).expect("present").last_arm_word = w;
                self.arm(cqn, w);
            }
        }
        let uars: BTreeSet<usize> = self
            .cqs
            .values()
            .map(|c| c.d.uar)
            .filter(|&u| u != 0)
            .collect();
        for uar in uars {
            // SAFETY: a UAR page some live CQ uses; +0x20 is 8-aligned.
            let raw = unsafe { mem::read_mmio64(uar + CQ_DOORBELL) };
            if self.uar_seen.get(&uar) == Some(&raw) {
                continue;
            }
            self.uar_seen.insert(uar, raw);
            let v = u64::from_be_bytes(raw);
            let (word, cqn) = ((v >> 32) as u32, v as u32);
            let Some(cq) = self.cqs.get(&cqn) else {
                self.stats.arm_doorbell_mismatches += 1;
                continue;
            };
            // SAFETY: as above.
            let dbrec_word = unsafe { mem::load_be32(cq.d.space, cq.d.dbrec + 4 * CQ_ARM_DB) };
            if dbrec_word != word {
                // The register says one thing and the doorbell record another.
                self.stats.arm_doorbell_mismatches += 1;
            }
            if dbrec_word != cq.last_arm_word {
                self.cqs.get_mut(&cqn).expect("present").last_arm_word = dbrec_word;
            }
            self.arm(cqn, word);
        }
    }

    fn cqe_version(&self, cqn: u32) -> u8 {
        self.cqs.get(&cqn).map_or(1, |c| c.d.cqe_version)
    }

    /// The requester CQE of a completed send WQE.
    pub fn req_cqe(&mut self, qpn: u32, index: u16, op: u8, byte_cnt: u32) {
        let Some(qp) = self.qps.get(&qpn) else { return };
        let (cqn, uidx) = (qp.d.send_cqn, qp.d.uidx);
        let cqe = Cqe64 {
            srqn_uidx: U32::new(if self.cqe_version(cqn) == 1 { uidx } else { 0 }),
            byte_cnt: U32::new(byte_cnt),
            sop_drop_qpn: U32::new((u32::from(op) << 24) | qpn),
            wqe_counter: U16::new(index),
            op_own: cqe_opcode::REQ << 4,
            ..Cqe64::default()
        };
        self.stats.send_cqes += 1;
        self.push_cqe(cqn, cqe);
    }

    /// The error CQE of a send WQE.
    pub fn req_err_cqe(&mut self, qpn: u32, index: u16, op: u8, synd: u8) {
        let Some(qp) = self.qps.get(&qpn) else { return };
        let (cqn, uidx) = (qp.d.send_cqn, qp.d.uidx);
        let err = ErrCqe {
            srqn: U32::new(if self.cqe_version(cqn) == 1 { uidx } else { 0 }),
            vendor_err_synd: vendor_syndrome(synd),
            syndrome: synd,
            s_wqe_opcode_qpn: U32::new((u32::from(op) << 24) | qpn),
            wqe_counter: U16::new(index),
            op_own: cqe_opcode::REQ_ERR << 4,
            ..ErrCqe::default()
        };
        self.count_err(synd);
        self.push_cqe(
            cqn,
            Cqe64::read_from_bytes(err.as_bytes()).expect("same size"),
        );
    }

    fn count_err(&mut self, synd: u8) {
        if synd == syndrome::WR_FLUSH_ERR {
            self.stats.flush_cqes += 1;
        } else {
            self.stats.error_cqes += 1;
        }
    }

    /// `srqn_uidx` of a receive CQE of QP `qpn` on CQ `cqn`.
    fn recv_srqn_uidx(&self, cqn: u32, qp: &QpDesc) -> u32 {
        if self.cqe_version(cqn) == 1 {
            qp.uidx
        } else {
            qp.srqn.unwrap_or(0)
        }
    }

    /// A successful receive CQE on QP `qpn`.
    #[allow(clippy::too_many_arguments)]
    pub fn resp_cqe(
        &mut self,
        qpn: u32,
        index: u16,
        op: u8,
        byte_cnt: u32,
        imm: [u8; 4],
        flags_rqpn: u32,
        se: bool,
    ) {
        let Some(qp) = self.qps.get(&qpn) else { return };
        let cqn = qp.d.recv_cqn;
        let cqe = Cqe64 {
            flags_rqpn: U32::new(flags_rqpn),
            srqn_uidx: U32::new(self.recv_srqn_uidx(cqn, &qp.d)),
            imm_inval_pkey: U32::from_bytes(imm),
            byte_cnt: U32::new(byte_cnt),
            sop_drop_qpn: U32::new(qpn),
            wqe_counter: U16::new(index),
            op_own: (op << 4) | (u8::from(se) << 1),
            ..Cqe64::default()
        };
        self.stats.recv_cqes += 1;
        self.push_cqe(cqn, cqe);
    }

    /// The error CQE of a receive WQE.
    pub fn resp_err_cqe(&mut self, qpn: u32, index: u16, synd: u8) {
        let Some(qp) = self.qps.get(&qpn) else { return };
        let cqn = qp.d.recv_cqn;
        let err = ErrCqe {
            srqn: U32::new(self.recv_srqn_uidx(cqn, &qp.d)),
            vendor_err_synd: vendor_syndrome(synd),
            syndrome: synd,
            s_wqe_opcode_qpn: U32::new(qpn),
            wqe_counter: U16::new(index),
            op_own: cqe_opcode::RESP_ERR << 4,
            ..ErrCqe::default()
        };
        self.count_err(synd);
        self.push_cqe(
            cqn,
            Cqe64::read_from_bytes(err.as_bytes()).expect("same size"),
        );
    }

    // ---------------------------------------------------------------------------------------
    // Errors and flushing
    // ---------------------------------------------------------------------------------------

    /// Moves a QP to the error state (if it is not there) and flushes it.
    pub fn fail_qp(&mut self, qpn: u32) {
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return;
        };
        if qp.attrs.state != qps::ERR {
            qp.attrs.state = qps::ERR;
            qp.retry = None;
            qp.drain_notify = false;
            if qp.d.srqn.is_some() {
                self.async_event(event::QP_LAST_WQE_REACHED, ObjectKind::Qp, qpn);
            }
        }
        self.flush(qpn);
    }

    /// Completes every posted WQE of a QP in the error state with `WR_FLUSH_ERR`: one error CQE
    /// per send WQE (signaled or not, each with its own WQE index) and per RQ WQE. WQEs of an
    /// SRQ stay in the SRQ. Returns whether anything was flushed.
    pub fn flush(&mut self, qpn: u32) -> bool {
        let mut work = false;
        loop {
            let Some(qp) = self.qps.get_mut(&qpn) else {
                return work;
            };
            if qp.d.sq_wqe_cnt == 0 {
                break;
            }
            let posted = qp.sq_posted();
            if posted == 0 {
                break;
            }
            let ci = qp.sq_ci;
            // SAFETY: the block at `ci` is posted (published by the doorbell record) and the ring
            // is live while the QP is in the table.
            let ctrl = unsafe { qp.ring().ctrl(ci) };
            let whole = parse::ctrl_ds(&ctrl)
                .map(parse::ds_blocks)
                .filter(|&b| b <= posted && ctrl.wqe_index() == ci as u16);
            match whole {
                Some(bbs) => {
                    qp.sq_ci = ci.wrapping_add(bbs);
                    self.req_err_cqe(qpn, ci as u16, ctrl.opcode(), syndrome::WR_FLUSH_ERR);
                }
                None => {
                    // Not the start of a WQE the driver posted: skip the block.
                    qp.sq_ci = ci.wrapping_add(1);
                    self.stats.malformed_wqes += 1;
                }
            }
            work = true;
        }
        loop {
            let Some(qp) = self.qps.get_mut(&qpn) else {
                return work;
            };
            if qp.d.srqn.is_some() || qp.d.rq_wqe_cnt == 0 {
                break;
            }
            let posted = u32::from(qp.rcv().wrapping_sub(qp.rq_ci as u16));
            if posted == 0 {
                break;
            }
            let index = qp.rq_ci as u16;
            qp.rq_ci = qp.rq_ci.wrapping_add(1);
            self.resp_err_cqe(qpn, index, syndrome::WR_FLUSH_ERR);
            work = true;
        }
        work
    }

    // ---------------------------------------------------------------------------------------
    // Receive queues
    // ---------------------------------------------------------------------------------------

    /// The receive WQE the next message to QP `qpn` would use, without taking it. `None` when
    /// none is posted.
    pub fn peek_recv(&mut self, qpn: u32) -> Option<RecvSlot> {
        let qp = self.qps.get(&qpn)?;
        if let Some(srqn) = qp.d.srqn {
            let srq = self.srqs.get(&srqn)?;
            if srq.available() == 0 {
                return None;
            }
            let stride = 1usize << srq.d.wqe_shift;
            let at = srq.d.buf + (usize::from(srq.head) & (srq.d.wqe_cnt as usize - 1)) * stride;
            let mut b = vec![0u8; stride];
            // SAFETY: a WQE of the live SRQ buffer, posted (the counter, loaded with Acquire,
            // says so).
            unsafe { mem::read(srq.d.space, at, &mut b) };
            let next = u16::from_be_bytes([b[2], b[3]]);
            return Some(RecvSlot {
                index: srq.head,
                sges: data_segments(&b[16..]),
                srq: Some(srqn),
                pdn: srq.d.pdn,
                next,
            });
        }
        if qp.d.rq_wqe_cnt == 0 {
            return None;
        }
        let posted = u32::from(qp.rcv().wrapping_sub(qp.rq_ci as u16));
        if posted == 0 {
            return None;
        }
        if posted > qp.d.rq_wqe_cnt {
            self.stats.rq_overruns += 1;
        }
        let stride = 1usize << qp.d.rq_wqe_shift;
        let at = qp.d.buf + (qp.rq_ci & (qp.d.rq_wqe_cnt - 1)) as usize * stride;
        let mut b = vec![0u8; stride];
        // SAFETY: a posted WQE of the live RQ ring.
        unsafe { mem::read(qp.d.space, at, &mut b) };
        Some(RecvSlot {
            index: qp.rq_ci as u16,
            sges: data_segments(&b),
            srq: None,
            pdn: qp.d.pdn,
            next: 0,
        })
    }

    /// Takes the receive WQE `peek_recv` returned; raises the SRQ limit event if the SRQ drops
    /// below its limit.
    pub fn consume_recv(&mut self, qpn: u32, slot: &RecvSlot) {
        match slot.srq {
            Some(srqn) => {
                let Some(srq) = self.srqs.get_mut(&srqn) else {
                    return;
                };
                srq.head = slot.next;
                srq.consumed = srq.consumed.wrapping_add(1);
                if srq.limit > 0 && srq.available() < srq.limit {
                    srq.limit = 0;
                    self.async_event(event::SRQ_LIMIT_REACHED, ObjectKind::Srq, srqn);
                }
            }
            None => {
                if let Some(qp) = self.qps.get_mut(&qpn) {
                    qp.rq_ci = qp.rq_ci.wrapping_add(1);
                }
            }
        }
    }
}

/// Whether a CQE wakes a solicited-only arm: the solicited-event bit, or an error.
fn wakes_solicited(op_own: u8) -> bool {
    let op = op_own >> 4;
    op_own & 2 != 0 || op == cqe_opcode::REQ_ERR || op == cqe_opcode::RESP_ERR
}

/// The data segments of a receive WQE, up to the `MLX5_INVALID_LKEY` terminator or the end of the
/// stride.
fn data_segments(b: &[u8]) -> Vec<Sge> {
    let mut out = Vec::new();
    for chunk in b.chunks_exact(16) {
        let seg = DataSeg::read_from_bytes(chunk).expect("16 bytes");
        if seg.lkey.get() == INVALID_LKEY {
            break;
        }
        let len = match seg.byte_count.get() {
            0 => ZERO_LENGTH_MEANS,
            n => n,
        };
        out.push(Sge {
            addr: seg.addr.get(),
            len,
            lkey: seg.lkey.get(),
        });
    }
    out
}
