//! mlx5 queue pairs (RC, UC, UD): one page-aligned buffer in user memory holding the receive queue
//! and then the send queue, a doorbell record, and a BlueFlame register the kernel picks.
//!
//! The sizes are rdma-core's (`mlx5_calc_sq_size`, `mlx5_calc_rq_size`): a send WQE is sized for
//! the transport's largest header ([`sq_overhead`]) plus `max_send_sge` data segments or
//! `max_inline_data` inline bytes, rounded to 64-byte basic blocks, and the send queue is the next
//! power of two of `max_send_wr` such WQEs; receive WQEs are `max_recv_sge` data segments rounded to
//! a power of two. `CREATE_QP` carries them in `mlx5_ib_create_qp`, with the user index by which
//! CQEs (version 1) name the QP; the answer names the BlueFlame register.
//!
//! Posting sends builds WQEs with [`SendQueue`] and rings once per list: the doorbell record's send
//! counter (release store after [`barrier::udma_to_device_barrier`]), then a BlueFlame copy of a
//! lone WQE or the 8-byte doorbell, alternating the register's halves. Posting receives writes data
//! segments (and a terminator when fewer than the maximum) and stores the receive counter. Neither
//! makes a system call. Completions find the QP through the context's table and retire its WQEs
//! (`QpShared`): send WQEs through the send queue's [`SendHandoff`], without the send queue's lock,
//! so that a poster and the poller of its send CQ never wait for each other. A move to RESET
//! removes the QP's CQEs from its CQs and starts the queues over, as rdma-core does.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use uverbs_uapi as uapi;
use zerocopy::byteorder::big_endian::U32;
use zerocopy::{FromZeros, IntoBytes};

use super::ah::Mlx5Ah;
use super::buf::{Dbrec, DbrecPool, DmaBuf};
use super::cq::{CqShared, Mlx5Cq};
use super::cqe::{cqe_opcode, Cqe64};
use super::doorbell::{RCV_DBR, SND_DBR};
use super::handoff::SendHandoff;
use super::poller::WqKey;
use super::sq::{QpType, Retired, SendPlan, SendQueue, SendQueueConfig, SendRing};
use super::srq::{Mlx5Srq, SrqShared};
use super::uar::Uars;
use super::wqe::{DataSeg, INVALID_LKEY, MAX_DS, MAX_WQE_COUNT, SEND_WQE_BB};
use super::{Mlx5Context, Resource};
use crate::backend::{CqBackend, QpBackend, SendStage, SrqBackend};
use crate::barrier;
use crate::cmd::{self, QpCreated, QpInit};
use crate::error::{Error, Result, Verb};
use crate::qp_state::state;
use crate::spin::SpinMutex;
use crate::ucontext::Ucontext;
use crate::wr::{send_needs_rts, PostError, RecvWr, SendWr, MAX_MESSAGE};

const DATA_SEG_SIZE: usize = 16;
/// `sizeof(struct mlx5_wqe_inl_data_seg)`.
const INLINE_HEADER_SIZE: usize = 4;

/// The work-queue limits of a context (from `GET_CONTEXT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest send WQE in bytes (`max_sq_desc_sz`).
    pub max_sq_desc_sz: u32,
    /// The largest receive WQE in bytes (`max_rq_desc_sz`).
    pub max_rq_desc_sz: u32,
    /// The most basic blocks a send queue may have (`max_send_wqebb`).
    pub max_send_wqebb: u32,
    /// The most receive WQEs (`max_recv_wr`).
    pub max_recv_wr: u32,
    /// The most SRQ WQEs (`max_srq_recv_wr`).
    pub max_srq_recv_wr: u32,
}

/// The send WQE overhead of a transport with its default operations (rdma-core's `sq_overhead`):
/// RC and UC may post memory-window binds and local invalidations, whose UMR WQEs (control, UMR
/// control, mkey context, 64 bytes of KLM) are the largest header, 192 bytes; UD adds the
/// 48-byte datagram segment to the control segment.
pub fn sq_overhead(qp_type: QpType) -> usize {
    match qp_type {
        QpType::Rc | QpType::Uc => 16 + 48 + 64 + 64,
        QpType::Ud => 16 + 48,
    }
}

/// The geometry of a queue pair's buffer, and the capacities that follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpSizes {
    /// Send basic blocks (a power of two; 0: no send queue).
    pub sq_wqe_cnt: u32,
    /// Send requests that may be outstanding (`sq.max_post`).
    pub sq_max_post: u32,
    /// Scatter/gather entries a send may carry: those asked for, as rdma-core has it (the WQE may
    /// hold more; rdma-core refuses them all the same).
    pub max_send_sge: u32,
    /// Inline bytes a send may carry.
    pub max_inline_data: u32,
    /// Receive WQEs (a power of two; 0: none, e.g. with an SRQ).
    pub rq_wqe_cnt: u32,
    /// log2 of a receive WQE's size.
    pub rq_wqe_shift: u32,
    /// Receive requests that may be outstanding.
    pub rq_max_post: u32,
    /// Data segments per receive WQE.
    pub rq_max_gs: u32,
    /// Where the send queue starts in the buffer (the receive queue's size).
    pub sq_offset: usize,
    /// The buffer's size.
    pub buf_len: usize,
}

fn align(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

impl QpSizes {
    /// rdma-core's `mlx5_calc_wq_size` for a queue pair of `qp_type` asking for `cap`, taking its
    /// receives from an SRQ when `srq`.
    pub fn new(
        limits: &Limits,
        qp_type: QpType,
        cap: &uapi::ib_uverbs_qp_cap,
        srq: bool,
    ) -> Result<QpSizes> {
        let bad = |what: String| Error::InvalidArgument {
            verb: Verb::CreateQp,
            what,
        };
        let desc = limits.max_sq_desc_sz as usize;
        let (mut sq_wqe_cnt, mut sq_max_post, mut max_inline_data, mut sq_size) = (0, 0, 0, 0);
        let mut max_send_sge = 0;
        if cap.max_send_wr > 0 {
            let overhead = sq_overhead(qp_type);
            let inline = if cap.max_inline_data > 0 {
                overhead + align(INLINE_HEADER_SIZE + cap.max_inline_data as usize, 16)
            } else {
                0
            };
            let max_gather = desc.saturating_sub(overhead) / DATA_SEG_SIZE;
            if cap.max_send_sge as usize > max_gather {
                return Err(bad(format!(
                    "{} send scatter/gather entries (at most {max_gather})",
                    cap.max_send_sge
                )));
            }
            let size = (overhead + cap.max_send_sge as usize * DATA_SEG_SIZE).max(inline);
            if size > desc {
                return Err(bad(format!(
                    "send WQEs of {size} bytes for {} inline bytes (at most {desc})",
                    cap.max_inline_data
                )));
            }
            let wqe_size = align(size, SEND_WQE_BB);
            if wqe_size > desc {
                return Err(bad(format!(
                    "send WQEs of {wqe_size} bytes (at most {desc})"
                )));
            }
            // A WQE has at most MAX_DS octowords: the control segment and the transport's own
            // segments (UD: the datagram's 3; RC/UC: an RDMA's remote address, and with the atomic
            // segment for entries) come first.
            let (data_after_sge, data_after_inline) = match qp_type {
                QpType::Ud => (MAX_DS - 4, MAX_DS - 4),
                QpType::Rc | QpType::Uc => (MAX_DS - 3, MAX_DS - 2),
            };
            let max_inline = data_after_inline * 16 - INLINE_HEADER_SIZE;
            if cap.max_inline_data as usize > max_inline {
                return Err(bad(format!(
                    "{} inline bytes (at most {max_inline} in a WQE of {MAX_DS} octowords)",
                    cap.max_inline_data
                )));
            }
            max_inline_data = wqe_size
                .saturating_sub(overhead + INLINE_HEADER_SIZE)
                .min(max_inline) as u32;
            if cap.max_send_sge as usize > data_after_sge {
                return Err(bad(format!(
                    "{} send scatter/gather entries (at most {data_after_sge})",
                    cap.max_send_sge
                )));
            }
            max_send_sge = cap.max_send_sge;
            if cap.max_send_wr as usize > 0x7fff_ffff / desc {
                return Err(bad(format!("{} send work requests", cap.max_send_wr)));
            }
            let wq_size = (cap.max_send_wr as usize * wqe_size).next_power_of_two();
            let cnt = wq_size / SEND_WQE_BB;
            if cnt > limits.max_send_wqebb as usize || cnt > MAX_WQE_COUNT {
                return Err(bad(format!(
                    "{} send work requests of {wqe_size} bytes ({cnt} basic blocks, at most {})",
                    cap.max_send_wr,
                    (limits.max_send_wqebb as usize).min(MAX_WQE_COUNT)
                )));
            }
            sq_wqe_cnt = cnt as u32;
            sq_max_post = (wq_size / wqe_size) as u32;
            sq_size = wq_size;
        }
        let (mut rq_wqe_cnt, mut rq_wqe_shift, mut rq_max_post, mut rq_max_gs, mut rq_size) =
            (0, 0, 0, 0, 0);
        if cap.max_recv_wr > 0 && !srq {
            if cap.max_recv_wr > limits.max_recv_wr {
                return Err(bad(format!(
                    "{} receive work requests (at most {})",
                    cap.max_recv_wr, limits.max_recv_wr
                )));
            }
            let size = DATA_SEG_SIZE * cap.max_recv_sge.max(1) as usize;
            if size > limits.max_rq_desc_sz as usize {
                return Err(bad(format!(
                    "{} receive scatter entries (at most {})",
                    cap.max_recv_sge,
                    limits.max_rq_desc_sz as usize / DATA_SEG_SIZE
                )));
            }
            let wqe_size = size.next_power_of_two();
            if wqe_size > limits.max_rq_desc_sz as usize {
                return Err(bad(format!(
                    "receive WQEs of {wqe_size} bytes (at most {})",
                    limits.max_rq_desc_sz
                )));
            }
            let wrs = cap
                .max_recv_wr
                .checked_next_power_of_two()
                .ok_or_else(|| bad(format!("{} receive work requests", cap.max_recv_wr)))?;
            let wq_size = (wrs as usize)
                .checked_mul(wqe_size)
                .ok_or_else(|| bad(format!("{} receive work requests", cap.max_recv_wr)))?
                .max(SEND_WQE_BB);
            rq_wqe_cnt = (wq_size / wqe_size) as u32;
            rq_wqe_shift = wqe_size.trailing_zeros();
            rq_max_post = rq_wqe_cnt;
            rq_max_gs = (wqe_size / DATA_SEG_SIZE) as u32;
            rq_size = wq_size;
        }
        Ok(QpSizes {
            sq_wqe_cnt,
            sq_max_post,
            max_send_sge,
            max_inline_data,
            rq_wqe_cnt,
            rq_wqe_shift,
            rq_max_post,
            rq_max_gs,
            sq_offset: rq_size,
            buf_len: rq_size + sq_size,
        })
    }
}

/// The driver data of `CREATE_QP`: the buffer, the doorbell record, the queues' geometry and the
/// user index (`0xffffff` with CQE version 0). No flags: the kernel picks the BlueFlame register,
/// and CQEs carry no scattered data.
pub fn create_qp_cmd(
    buf_addr: u64,
    db_addr: u64,
    sizes: &QpSizes,
    uidx: u32,
) -> uapi::mlx5_ib_create_qp {
    let mut cmd = uapi::mlx5_ib_create_qp::new_zeroed();
    cmd.buf_addr = buf_addr;
    cmd.db_addr = db_addr;
    cmd.sq_wqe_count = sizes.sq_wqe_cnt;
    cmd.rq_wqe_count = sizes.rq_wqe_cnt;
    cmd.rq_wqe_shift = sizes.rq_wqe_shift;
    cmd.uidx = uidx;
    cmd
}

/// The send ring: the SQ part of the QP buffer, as [`SendQueue`] takes it.
///
/// The device reads the ring concurrently (when it is the mlx5 model, from another thread of this
/// process), so no reference handed out may cover bytes the device could be reading while the
/// CPU writes them. Reads (`AsRef`) may cover the whole ring: the device only reads it too. Writes
/// ([`SendRing::wqe_mut`]) cover only the blocks of the WQE being built, which no posted,
/// uncompleted WQE occupies, so the device does not read them until the doorbell record publishes
/// them. All CPU-side access happens under the send queue's lock.
#[derive(Debug)]
pub struct SqRing {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a view of memory owned by the same `QpShared` as the `SendQueue` that holds it; see the
// type's documentation for why sharing it with the device is sound.
unsafe impl Send for SqRing {}

impl SqRing {
    /// The send ring of `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// The `len` bytes at `ptr` must stay valid for reads and writes as long as the ring lives,
    /// and nothing but this ring may write them. The device may read them only as the send queue
    /// protocol allows: the blocks of WQEs the doorbell record has published and whose completion
    /// the driver has not yet polled (nothing after a reset until new ones are published), so
    /// that the blocks [`SendRing::wqe_mut`] lends are never read concurrently.
    pub unsafe fn new(ptr: NonNull<u8>, len: usize) -> SqRing {
        SqRing { ptr, len }
    }
}

impl AsRef<[u8]> for SqRing {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `len` bytes at `ptr` are the SQ part of the QP buffer, alive as long as the
        // `QpShared` that owns both; nothing writes them while this borrow lasts (CPU writes need
        // `&mut self`, and the device only reads).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl SendRing for SqRing {
    #[inline(always)]
    fn wqe_mut(&mut self, offset: usize, len: usize) -> (&mut [u8], &mut [u8]) {
        assert!(
            offset < self.len && len <= self.len,
            "WQE blocks {offset}+{len} outside a send ring of {} bytes",
            self.len
        );
        let head = len.min(self.len - offset);
        // SAFETY: `[offset, offset + head)` and `[0, len - head)` are disjoint ranges inside the
        // ring (checked above: `len - head` is at most `offset` when the range wraps, and zero
        // otherwise), alive as long as the `QpShared` that owns it. `&mut self` (under the send
        // queue's lock) makes these the only CPU-side references, and the device does not read
        // these bytes: `SendQueue` asks only for blocks of no posted, uncompleted WQE.
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(offset), head),
                std::slice::from_raw_parts_mut(self.ptr.as_ptr(), len - head),
            )
        }
    }
}

/// The receive queue's bookkeeping: rdma-core's `struct mlx5_wq` for the RQ.
#[derive(Debug)]
struct RecvQueue {
    ring: NonNull<u8>,
    wqe_cnt: u32,
    shift: u32,
    max_post: u32,
    max_gs: u32,
    head: u32,
    tail: u32,
    wrid: Box<[u64]>,
}

// SAFETY: `ring` points into the buffer of the `QpShared` that owns this queue; it is written only
// under the queue's lock, and the device only reads it.
unsafe impl Send for RecvQueue {}

impl RecvQueue {
    /// Writes one receive WQE at the head; the caller publishes the counter.
    fn post(&mut self, wr: &RecvWr<'_>) -> Result<()> {
        if self.head.wrapping_sub(self.tail) >= self.max_post {
            return Err(Error::QueueFull {
                verb: Verb::PostRecv,
                capacity: self.max_post,
            });
        }
        let bad = |what: String| Error::InvalidArgument {
            verb: Verb::PostRecv,
            what,
        };
        if wr.sges.len() > self.max_gs as usize {
            return Err(bad(format!(
                "{} scatter entries (this queue pair takes {})",
                wr.sges.len(),
                self.max_gs
            )));
        }
        let length: u64 = wr.sges.iter().map(|s| u64::from(s.length)).sum();
        if length > MAX_MESSAGE {
            return Err(bad(format!(
                "{length} bytes of receive buffers (at most {MAX_MESSAGE})"
            )));
        }
        let idx = self.head & (self.wqe_cnt - 1);
        // SAFETY: idx < wqe_cnt, and the RQ is wqe_cnt WQEs of 1 << shift bytes from `ring`.
        let wqe = unsafe { self.ring.as_ptr().add((idx as usize) << self.shift) };
        let mut j = 0;
        for sge in wr.sges.iter().filter(|s| s.length != 0) {
            let seg = DataSeg::new(sge.length, sge.lkey, sge.addr);
            // SAFETY: segment j < max_gs of WQE idx, which is free (fewer than max_post = wqe_cnt
            // outstanding), so the device does not read it.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    seg.as_bytes().as_ptr(),
                    wqe.add(j * DATA_SEG_SIZE),
                    DATA_SEG_SIZE,
                )
            };
            j += 1;
        }
        if j < self.max_gs as usize {
            let end = DataSeg::new(0, INVALID_LKEY, 0);
            // SAFETY: as above, segment j < max_gs.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    end.as_bytes().as_ptr(),
                    wqe.add(j * DATA_SEG_SIZE),
                    DATA_SEG_SIZE,
                )
            };
        }
        self.wrid[idx as usize] = wr.wr_id;
        self.head = self.head.wrapping_add(1);
        Ok(())
    }

    /// The `wr_id` of the oldest outstanding receive, retiring it (receives complete in order).
    fn retire(&mut self) -> Option<u64> {
        if self.head == self.tail {
            return None;
        }
        let wr_id = self.wrid[(self.tail & (self.wqe_cnt - 1)) as usize];
        self.tail = self.tail.wrapping_add(1);
        Some(wr_id)
    }
}

/// What a QP shares with the CQs that complete its work requests.
#[derive(Debug)]
pub(crate) struct QpShared {
    /// The posters' side of the send queue (they serialise with its lock).
    sq: Option<SpinMutex<SendQueue<SqRing>>>,
    /// The send queue's hand-off, the poller's side: [`SendHandoff::retire`] under the send CQ's
    /// lock alone, which also makes the poller of that CQ its only consumer.
    sq_handoff: Option<Arc<SendHandoff>>,
    /// The send CQ's number: only its poller retires send WQEs.
    send_cqn: u32,
    rq: Option<SpinMutex<RecvQueue>>,
    srq: Option<Arc<SrqShared>>,
    dbrec: Dbrec,
    /// The RQ and SQ memory (`sq`, `rq` point into it).
    _buf: DmaBuf,
}

impl QpShared {
    /// A QP with no rings (for tests of the tables that file QPs).
    #[cfg(test)]
    pub(crate) fn bare(dbrec: Dbrec, buf: DmaBuf) -> QpShared {
        QpShared {
            sq: None,
            sq_handoff: None,
            send_cqn: 0,
            rq: None,
            srq: None,
            dbrec,
            _buf: buf,
        }
    }

    #[inline]
    fn sq(&self) -> Option<crate::spin::SpinGuard<'_, SendQueue<SqRing>>> {
        self.sq.as_ref().map(|m| m.lock())
    }

    #[inline]
    fn rq(&self) -> Option<crate::spin::SpinGuard<'_, RecvQueue>> {
        self.rq.as_ref().map(|m| m.lock())
    }

    /// Retires the send WQE a completion of CQ `cqn` names, and the unsignaled ones before it:
    /// `None` unless `cqn` is the send CQ (whose lock the caller holds: one consumer of the
    /// hand-off at a time). Takes no lock of the send queue.
    #[inline]
    pub(crate) fn retire_send(&self, cqn: u32, wqe_counter: u16) -> Option<Retired> {
        if cqn != self.send_cqn {
            return None;
        }
        self.sq_handoff.as_ref()?.retire(wqe_counter)
    }

    /// The `wr_id` of the receive a completion names: the SRQ's WQE it names, or the oldest of the
    /// receive queue.
    #[inline]
    pub(crate) fn retire_recv(&self, cqe: &Cqe64) -> Option<u64> {
        match &self.srq {
            Some(srq) => srq.complete(cqe.wqe_counter.get()),
            None => self.rq()?.retire(),
        }
    }
}

/// Whether a CQE completes a receive (rdma-core's `is_responder`).
fn is_responder(cqe: &Cqe64) -> bool {
    matches!(
        cqe.opcode(),
        cqe_opcode::RESP_WR_IMM
            | cqe_opcode::RESP_SEND
            | cqe_opcode::RESP_SEND_IMM
            | cqe_opcode::RESP_SEND_INV
            | cqe_opcode::RESP_ERR
    )
}

/// An mlx5 queue pair.
#[derive(Debug)]
pub struct Mlx5Qp {
    ctx: Arc<Ucontext>,
    m: Arc<Mlx5Context>,
    created: QpCreated,
    qp_type: u8,
    key: WqKey,
    shared: Arc<QpShared>,
    /// The send queue's plan ([`SendPlan`]), read without its lock.
    send_plan: Option<SendPlan>,
    send_cq: Arc<CqShared>,
    recv_cq: Arc<CqShared>,
    uars: Arc<Uars>,
    bfreg: u32,
    cap: uapi::ib_uverbs_qp_cap,
    /// The state as of the last successful modify (the device may since have moved it to ERR).
    state: AtomicU8,
}

impl Mlx5Qp {
    /// Creates a queue pair completing on `send_cq` and `recv_cq`, taking its receives from `srq`
    /// when given (then `init.srq` must be its handle).
    pub fn create(
        m: &Arc<Mlx5Context>,
        init: &QpInit,
        send_cq: &Mlx5Cq,
        recv_cq: &Mlx5Cq,
        srq: Option<&Mlx5Srq>,
    ) -> Result<Mlx5Qp> {
        let ctx = m.ucontext();
        let qp_type = match init.qp_type {
            uapi::IB_UVERBS_QPT_RC => QpType::Rc,
            uapi::IB_UVERBS_QPT_UC => QpType::Uc,
            uapi::IB_UVERBS_QPT_UD => QpType::Ud,
            _ => {
                return Err(Error::Unsupported {
                    verb: Verb::CreateQp,
                })
            }
        };
        if init.srq != srq.map(SrqBackend::handle)
            || init.send_cq != send_cq.handle()
            || init.recv_cq != recv_cq.handle()
        {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateQp,
                what: "the CQs and SRQ given are not those the request names".into(),
            });
        }
        let sizes = QpSizes::new(&m.limits(), qp_type, &init.cap, srq.is_some())?;
        let uars = Arc::clone(m.uars()?);
        let buf = DmaBuf::new(sizes.buf_len, Verb::CreateQp)?;
        let dbrec = DbrecPool::alloc(m.dbrecs())?;
        let uidx = if m.cqe_version() == 1 {
            Some(m.resources.reserve(Verb::CreateQp)?)
        } else {
            None
        };
        let cmd = create_qp_cmd(buf.addr(), dbrec.addr(), &sizes, uidx.unwrap_or(0xff_ffff));
        let mut resp = uapi::mlx5_ib_create_qp_resp::new_zeroed();
        let mut kernel_init = *init;
        kernel_init.cap.max_inline_data = sizes.max_inline_data;
        // SAFETY: `cmd` names `buf` and `dbrec`, allocated here for this QP's device alone; they
        // move into the `Mlx5Qp` (or are freed by `fail` only once the kernel QP is destroyed,
        // else leaked), whose `Drop` frees them only after `destroy_qp` succeeded.
        let created = unsafe {
            cmd::create_qp_with_udata(ctx, &kernel_init, cmd.as_bytes(), resp.as_mut_bytes())
        };
        let created = match created {
            Ok(c) => c,
            Err(e) => {
                if let Some(u) = uidx {
                    m.resources.remove(WqKey::UserIndex(u));
                }
                if e.may_have_run() {
                    // A model daemon may hold them: never freed.
                    std::mem::forget(buf);
                    std::mem::forget(dbrec);
                }
                return Err(e);
            }
        };
        let fail = |e: Error, buf: DmaBuf, dbrec: Dbrec| {
            // SAFETY: the object was made just above and is handed to no one; its handle is not
            // named again.
            if unsafe { cmd::destroy_qp(ctx, created.handle) }.is_err() {
                // The device may still use them.
                std::mem::forget(buf);
                std::mem::forget(dbrec);
            }
            if let Some(u) = uidx {
                m.resources.remove(WqKey::UserIndex(u));
            }
            e
        };
        if uars.bfreg(resp.bfreg_index).is_none() || created.qpn > 0xff_ffff {
            let e = Error::Protocol {
                verb: Verb::CreateQp,
                what: format!(
                    "QP {:#x} on BlueFlame register {} of {}",
                    created.qpn,
                    resp.bfreg_index,
                    uars.layout().bfregs()
                ),
            };
            return Err(fail(e, buf, dbrec));
        }
        let base = NonNull::new(buf.as_ptr()).expect("a mapping is not null");
        let sq = if sizes.sq_wqe_cnt > 0 {
            // SAFETY: the SQ starts at sq_offset and is sq_wqe_cnt blocks long, inside the buffer.
            let ptr = unsafe { NonNull::new_unchecked(base.as_ptr().add(sizes.sq_offset)) };
            // SAFETY: those bytes live in `buf`, which the `QpShared` holding this ring owns;
            // only this ring's `SendQueue` writes them, and the device (hardware or the model)
            // reads only the WQEs published and not yet completed, as `SqRing::new` requires.
            let ring = unsafe { SqRing::new(ptr, sizes.sq_wqe_cnt as usize * SEND_WQE_BB) };
            let cfg = SendQueueConfig {
                qpn: created.qpn,
                user_index: uidx,
                qp_type,
                max_send_wr: sizes.sq_max_post,
                max_send_sge: sizes.max_send_sge,
                max_inline_data: sizes.max_inline_data,
                sq_sig_all: init.sq_sig_all,
            };
            match SendQueue::new(ring, cfg) {
                Ok(sq) => Some((Arc::clone(sq.handoff()), SpinMutex::new(sq))),
                Err(e) => return Err(fail(e, buf, dbrec)),
            }
        } else {
            None
        };
        let (sq_handoff, sq) = sq.unzip();
        let send_plan = sq.as_ref().map(|sq| *sq.lock().plan());
        let rq = (sizes.rq_wqe_cnt > 0).then(|| {
            SpinMutex::new(RecvQueue {
                ring: base,
                wqe_cnt: sizes.rq_wqe_cnt,
                shift: sizes.rq_wqe_shift,
                max_post: sizes.rq_max_post,
                max_gs: sizes.rq_max_gs,
                head: 0,
                tail: 0,
                wrid: vec![0; sizes.rq_wqe_cnt as usize].into_boxed_slice(),
            })
        });
        let shared = Arc::new(QpShared {
            sq,
            sq_handoff,
            send_cqn: send_cq.cqn(),
            rq,
            srq: srq.map(|s| Arc::clone(s.shared())),
            dbrec,
            _buf: buf,
        });
        let key = match uidx {
            Some(u) => WqKey::UserIndex(u),
            None => WqKey::Qpn(created.qpn),
        };
        m.resources.insert(key, Resource::Qp(Arc::clone(&shared)));
        let cap = uapi::ib_uverbs_qp_cap {
            max_send_wr: sizes.sq_max_post,
            max_recv_wr: sizes.rq_max_post,
            max_send_sge: sizes.max_send_sge,
            max_recv_sge: sizes.rq_max_gs,
            max_inline_data: sizes.max_inline_data,
        };
        Ok(Mlx5Qp {
            ctx: Arc::clone(ctx),
            m: Arc::clone(m),
            created,
            qp_type: init.qp_type,
            key,
            shared,
            send_plan,
            send_cq: Arc::clone(send_cq.shared()),
            recv_cq: Arc::clone(recv_cq.shared()),
            uars,
            bfreg: resp.bfreg_index,
            cap,
            state: AtomicU8::new(state::RESET),
        })
    }

    /// The transport (`IB_UVERBS_QPT_*`).
    pub fn qp_type(&self) -> u8 {
        self.qp_type
    }

    /// The BlueFlame register the kernel gave the queue pair.
    pub fn bfreg_index(&self) -> u32 {
        self.bfreg
    }

    /// Removes this queue pair's completions from its CQs (rdma-core's `mlx5_cq_clean`); with
    /// `reset`, then starts the send queue over, under the send CQ's lock (no retirement of its
    /// WQEs runs meanwhile) and then the send queue's.
    fn clean_cqs(&self, reset: bool) {
        let key = self.key;
        // A resize CQE names no queue (its user index and QP number fields are 0): never ours.
        let ours = move |c: &Cqe64| {
            c.op_own >> 4 != cqe_opcode::RESIZE_CQ
                && match key {
                    WqKey::UserIndex(u) => c.srqn_uidx() == u,
                    WqKey::Qpn(n) => c.qpn() == n,
                    WqKey::Srqn(_) => false,
                }
        };
        let srq = self.shared.srq.as_ref();
        let recv = |c: &Cqe64| {
            if !ours(c) {
                return false;
            }
            if let Some(srq) = srq.filter(|_| is_responder(c)) {
                srq.complete(c.wqe_counter.get());
            }
            true
        };
        let reset_sq = || {
            if reset {
                if let Some(mut sq) = self.shared.sq() {
                    sq.reset();
                }
            }
        };
        if Arc::ptr_eq(&self.send_cq, &self.recv_cq) {
            self.recv_cq.clean(recv, reset_sq);
        } else {
            self.recv_cq.clean(recv, || ());
            self.send_cq.clean(ours, reset_sq);
        }
    }
}

impl Mlx5Qp {
    /// Rings the doorbell for the requests committed since the last one (none: writes nothing).
    ///
    /// # Safety
    /// The committed requests are the device's from here: their memory must be as
    /// [`QpBackend::post_sends`] requires.
    #[inline(always)]
    unsafe fn ring(&self, sq: &mut SendQueue<SqRing>) {
        if sq.pending() == 0 {
            return;
        }
        let reg = self.uars.bfreg(self.bfreg).expect("checked at creation");
        let mut bf = reg.state.lock();
        // SAFETY: the size is the layout's of the `Uars` the register is in, which `self.uars`
        // keeps mapped for this block; `bf` is the register's lock, held while `uar` is used;
        // `ring_doorbell` writes this queue pair's doorbell and WQEs, whose requests this
        // function's caller vouched for.
        let mut uar = unsafe { reg.writer(self.uars.layout().bf_reg_size) };
        sq.ring_doorbell(&mut &self.shared.dbrec, &mut bf, &mut uar);
    }

    /// Takes back the staging of `token`, if it is still the send queue's open one.
    #[cold]
    fn abandon_staged(&self, token: u64) {
        if let (Some(sq), true) = (self.shared.sq.as_ref(), token != 0) {
            sq.lock().abandon(token);
        }
    }
}

impl QpBackend for Mlx5Qp {
    type Ah = Mlx5Ah;

    fn handle(&self) -> u32 {
        self.created.handle
    }

    fn qpn(&self) -> u32 {
        self.created.qpn
    }

    /// The capacities, as rdma-core reports them: send and receive work requests as the queues
    /// hold them, the send entries asked for, receive entries and inline bytes as the WQEs hold
    /// them.
    fn cap(&self) -> uapi::ib_uverbs_qp_cap {
        self.cap
    }

    /// The state as of the last successful [`QpBackend::modify`].
    #[inline]
    fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// `MODIFY_QP`; on success the tracked state follows. A move to RESET removes the queue pair's
    /// completions from its CQs (returning SRQ WQEs they held to the SRQ) and empties its queues,
    /// as rdma-core's `mlx5_modify_qp` does.
    fn modify(&self, req: &uapi::ib_uverbs_modify_qp) -> Result<()> {
        let mut req = *req;
        req.qp_handle = self.created.handle;
        // SAFETY: the queue pair is this object's own, and it follows the state change itself
        // (below).
        unsafe { cmd::modify_qp(&self.ctx, &req) }?;
        if req.attr_mask & crate::qp_state::mask::STATE != 0 {
            if req.qp_state == state::RESET {
                self.clean_cqs(true);
                if let Some(mut rq) = self.shared.rq() {
                    rq.head = 0;
                    rq.tail = 0;
                }
                self.shared.dbrec.store(RCV_DBR, U32::ZERO);
                self.shared.dbrec.store(SND_DBR, U32::ZERO);
            }
            self.state.store(req.qp_state, Ordering::Release);
        }
        Ok(())
    }

    /// `QUERY_QP`.
    fn query(&self, attr_mask: u32) -> Result<uapi::ib_uverbs_query_qp_resp> {
        cmd::query_qp(&self.ctx, self.created.handle, attr_mask)
    }

    /// Posts send requests: stops at the first refused, or (`ALL`) posts none of them then (they
    /// are staged, and the staging is abandoned: nothing was published).
    ///
    /// # Safety
    /// As [`QpBackend::post_send`].
    #[inline(always)]
    unsafe fn post_sends<'a, const ALL: bool, W: AsRef<SendWr<'a>>>(
        &self,
        wrs: &[W],
        ah: impl Fn(&W) -> Option<&Mlx5Ah>,
    ) -> std::result::Result<(), PostError> {
        let current = self.state();
        if current != state::RTS {
            return Err(send_needs_rts(current));
        }
        let Some(mut sq) = self.shared.sq() else {
            return Err(PostError {
                index: 0,
                error: Error::QueueFull {
                    verb: Verb::PostSend,
                    capacity: 0,
                },
            });
        };
        let mut failure = None;
        let mut token = 0;
        for (index, w) in wrs.iter().enumerate() {
            if let Err(error) = sq.stage(&mut token, w.as_ref(), ah(w).map(Mlx5Ah::av)) {
                failure = Some(PostError { index, error });
                break;
            }
        }
        if ALL && failure.is_some() {
            // All or nothing: nothing was published; the queue is as it was.
            sq.abandon(token);
            return failure.map_or(Ok(()), Err);
        }
        // Our own staging, opened under this lock: it is the open one.
        let committed = sq.commit(token);
        debug_assert!(committed.is_ok());
        // SAFETY: the requests committed are this call's, which its caller vouched for.
        unsafe { self.ring(&mut sq) };
        failure.map_or(Ok(()), Err)
    }

    #[inline(always)]
    fn stage_send(&self, stage: &mut SendStage, wr: &SendWr<'_>, ah: Option<&Mlx5Ah>) {
        if stage.skip_if_refused() {
            return;
        }
        let Some(sq) = self.shared.sq.as_ref() else {
            return stage.refuse(Error::QueueFull {
                verb: Verb::PostSend,
                capacity: 0,
            });
        };
        let av = ah.map(Mlx5Ah::av);
        // The request's rules first, against the plan, outside the lock; one that breaks one
        // goes the checked way, which says which.
        let staged = match self.send_plan.as_ref().and_then(|p| p.fast_shape(wr, av)) {
            Some(shape) => sq.lock().stage_shaped(&mut stage.token, wr, av, shape),
            None => sq.lock().stage(&mut stage.token, wr, av),
        };
        match staged {
            Ok(_) => stage.added(),
            Err(error) => stage.refuse(error),
        }
    }

    /// # Safety
    /// As [`QpBackend::submit_sends`].
    #[inline(always)]
    unsafe fn submit_sends(&self, stage: &mut SendStage) -> std::result::Result<(), PostError> {
        if let Some(failure) = stage.finish() {
            self.abandon_staged(stage.token);
            return Err(failure);
        }
        let Some(sq) = self.shared.sq.as_ref().filter(|_| stage.token != 0) else {
            return Ok(());
        };
        let current = self.state();
        if current != state::RTS {
            self.abandon_staged(stage.token);
            return Err(send_needs_rts(current));
        }
        let mut sq = sq.lock();
        if let Err(error) = sq.commit(stage.token) {
            return Err(PostError { index: 0, error });
        }
        // SAFETY: the requests committed are the batch's, which this call's caller vouched for.
        unsafe { self.ring(&mut sq) };
        Ok(())
    }

    fn abandon_sends(&self, stage: &mut SendStage) {
        stage.finish();
        self.abandon_staged(stage.token);
    }

    /// Posts receive requests: stops at the first refused, or (`ALL`) posts none of them then.
    ///
    /// # Safety
    /// As [`QpBackend::post_recv`].
    #[inline(always)]
    unsafe fn post_recvs<'a, const ALL: bool, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        if self.shared.srq.is_some() {
            return Err(PostError {
                index: 0,
                error: Error::InvalidArgument {
                    verb: Verb::PostRecv,
                    what: "the queue pair has no receive queue (it takes its receives from a \
                           shared receive queue: post them there)"
                        .into(),
                },
            });
        }
        let current = self.state();
        if current == state::RESET {
            return Err(PostError {
                index: 0,
                error: Error::WrongState {
                    verb: Verb::PostRecv,
                    state: current,
                    needed: "INIT or later",
                },
            });
        }
        let Some(mut rq) = self.shared.rq() else {
            return Err(PostError {
                index: 0,
                error: Error::QueueFull {
                    verb: Verb::PostRecv,
                    capacity: 0,
                },
            });
        };
        let mut result = Ok(());
        let mut posted = 0;
        let head = rq.head;
        for (index, wr) in wrs.iter().enumerate() {
            if let Err(error) = rq.post(wr.as_ref()) {
                result = Err(PostError { index, error });
                break;
            }
            posted += 1;
        }
        if ALL && result.is_err() {
            // All or nothing: the WQEs written past the published head are free again.
            rq.head = head;
            posted = 0;
        }
        if posted > 0 {
            barrier::udma_to_device_barrier();
            self.shared.dbrec.store(RCV_DBR, U32::new(rq.head & 0xffff));
        }
        result
    }
}

impl Drop for Mlx5Qp {
    fn drop(&mut self) {
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::destroy_qp(&self.ctx, self.created.handle) } {
            crate::report_drop_error("queue pair", &e);
            // The device may still use the buffer and the doorbell record: keep them.
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        self.clean_cqs(false);
        self.m
            .resources
            .remove_own(self.key, &Resource::Qp(Arc::clone(&self.shared)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CX6: Limits = Limits {
        max_sq_desc_sz: 1024,
        max_rq_desc_sz: 512,
        max_send_wqebb: 1 << 15,
        max_recv_wr: 1 << 15,
        max_srq_recv_wr: 1 << 15,
    };

    fn cap(send: u32, recv: u32, ssge: u32, rsge: u32, inline: u32) -> uapi::ib_uverbs_qp_cap {
        uapi::ib_uverbs_qp_cap {
            max_send_wr: send,
            max_recv_wr: recv,
            max_send_sge: ssge,
            max_recv_sge: rsge,
            max_inline_data: inline,
        }
    }

    #[test]
    fn rc_sizes_as_rdma_core() {
        // One entry: 192 + 16 = 208 -> 256-byte WQEs; 4 of them in 1024 bytes (16 blocks).
        let s = QpSizes::new(&CX6, QpType::Rc, &cap(4, 4, 1, 1, 0), false).unwrap();
        assert_eq!(
            (
                s.sq_wqe_cnt,
                s.sq_max_post,
                s.max_inline_data,
                s.max_send_sge
            ),
            (16, 4, 256 - 192 - 4, 1)
        );
        assert_eq!(
            (s.rq_wqe_cnt, s.rq_wqe_shift, s.rq_max_post, s.rq_max_gs),
            (4, 4, 4, 1)
        );
        assert_eq!((s.sq_offset, s.buf_len), (64, 64 + 1024));
        // 3 send WRs of 256 bytes: 768 -> 1024, max_post 4.
        let s = QpSizes::new(&CX6, QpType::Rc, &cap(3, 3, 1, 3, 0), false).unwrap();
        assert_eq!((s.sq_wqe_cnt, s.sq_max_post), (16, 4));
        assert_eq!((s.rq_wqe_cnt, s.rq_wqe_shift, s.rq_max_gs), (4, 6, 4));
        // Inline wins: 192 + align(4 + 200, 16) = 400 -> 448.
        let s = QpSizes::new(&CX6, QpType::Uc, &cap(2, 0, 1, 0, 200), false).unwrap();
        assert_eq!(s.max_inline_data, 448 - 192 - 4);
        assert_eq!((s.sq_wqe_cnt, s.sq_max_post), (16, 2));
        assert_eq!((s.rq_wqe_cnt, s.sq_offset), (0, 0));
    }

    #[test]
    fn ud_sizes_and_srq() {
        // 64 + 16 = 80 -> 128-byte WQEs.
        let s = QpSizes::new(&CX6, QpType::Ud, &cap(8, 100, 1, 1, 0), true).unwrap();
        assert_eq!(
            (
                s.sq_wqe_cnt,
                s.sq_max_post,
                s.max_inline_data,
                s.max_send_sge
            ),
            (16, 8, 60, 1)
        );
        // The largest WQEs: the 63-octoword limit caps entries and inline bytes.
        let s = QpSizes::new(&CX6, QpType::Ud, &cap(1, 0, 59, 0, 0), false).unwrap();
        assert_eq!((s.max_send_sge, s.max_inline_data), (59, 59 * 16 - 4));
        let s = QpSizes::new(&CX6, QpType::Rc, &cap(1, 0, 52, 0, 0), false).unwrap();
        assert_eq!((s.max_send_sge, s.max_inline_data), (52, 1024 - 192 - 4));
        assert_eq!(
            (s.rq_wqe_cnt, s.rq_max_post, s.rq_max_gs, s.sq_offset),
            (0, 0, 0, 0)
        );
        // A small RQ is at least one basic block: 2 WQEs of 16 bytes -> 4 WQEs.
        let s = QpSizes::new(&CX6, QpType::Ud, &cap(1, 2, 1, 1, 0), false).unwrap();
        assert_eq!((s.rq_wqe_cnt, s.rq_max_post, s.sq_offset), (4, 4, 64));
        // No send queue.
        let s = QpSizes::new(&CX6, QpType::Rc, &cap(0, 1, 1, 1, 64), false).unwrap();
        assert_eq!((s.sq_wqe_cnt, s.sq_max_post, s.max_inline_data), (0, 0, 0));
    }

    #[test]
    fn refusals() {
        // (1024 - 192) / 16 = 52 entries at most.
        assert!(QpSizes::new(&CX6, QpType::Rc, &cap(1, 1, 53, 1, 0), false).is_err());
        assert!(QpSizes::new(&CX6, QpType::Rc, &cap(1, 1, 52, 1, 0), false).is_ok());
        assert!(QpSizes::new(&CX6, QpType::Rc, &cap(1, 1, 1, 1, 1024), false).is_err());
        assert!(QpSizes::new(&CX6, QpType::Rc, &cap(1, 1, 1, 33, 0), false).is_err());
        assert!(QpSizes::new(&CX6, QpType::Rc, &cap(1, 1 << 16, 1, 1, 0), false).is_err());
        // 2^15 basic blocks at most: 8192 WQEs of 256 bytes.
        assert!(QpSizes::new(&CX6, QpType::Rc, &cap(8192, 1, 1, 1, 0), false).is_ok());
        assert!(QpSizes::new(&CX6, QpType::Rc, &cap(8193, 1, 1, 1, 0), false).is_err());
    }

    #[test]
    fn udata_bytes() {
        let s = QpSizes::new(&CX6, QpType::Rc, &cap(4, 4, 1, 1, 0), false).unwrap();
        let cmd = create_qp_cmd(0x10_0000, 0x20_0040, &s, 5);
        let b = cmd.as_bytes();
        assert_eq!(b.len(), 56);
        assert_eq!(&b[0..8], &0x10_0000u64.to_ne_bytes());
        assert_eq!(&b[8..16], &0x20_0040u64.to_ne_bytes());
        assert_eq!(&b[16..20], &16u32.to_ne_bytes(), "sq_wqe_count");
        assert_eq!(&b[20..24], &4u32.to_ne_bytes(), "rq_wqe_count");
        assert_eq!(&b[24..28], &4u32.to_ne_bytes(), "rq_wqe_shift");
        assert_eq!(&b[28..32], &0u32.to_ne_bytes(), "flags");
        assert_eq!(&b[32..36], &5u32.to_ne_bytes(), "uidx");
        assert!(b[36..].iter().all(|&x| x == 0));
    }

    /// Only the send CQ's poller retires send WQEs: it is the hand-off's one consumer, under that
    /// CQ's lock. A requester CQE on another CQ (the receive CQ) retires nothing.
    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf: madvise(2) is not supported by Miri")]
    fn send_wqes_are_retired_only_through_the_send_cq() {
        let pool = super::super::buf::DbrecPool::new(64);
        let mut shared = QpShared::bare(
            pool.alloc().unwrap(),
            DmaBuf::new(4096, Verb::CreateQp).unwrap(),
        );
        let handoff = Arc::new(SendHandoff::new(4));
        handoff.publish(0, 1, 77, super::super::wqe::opcode::SEND);
        shared.sq_handoff = Some(Arc::clone(&handoff));
        shared.send_cqn = 5;
        assert_eq!(shared.retire_send(6, 0), None, "another CQ");
        assert_eq!(shared.retire_send(5, 0).map(|r| r.wr_id), Some(77));
        assert_eq!(shared.retire_send(5, 0), None, "retired");
    }

    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf: madvise(2) is not supported by Miri")]
    fn receive_wqes_and_terminator() {
        let buf = DmaBuf::new(4096, Verb::CreateQp).unwrap();
        let mut rq = RecvQueue {
            ring: NonNull::new(buf.as_ptr()).unwrap(),
            wqe_cnt: 2,
            shift: 6,
            max_post: 2,
            max_gs: 4,
            head: 0,
            tail: 0,
            wrid: vec![0; 2].into_boxed_slice(),
        };
        let sges = [
            crate::wr::Sge {
                addr: 0x1000,
                length: 10,
                lkey: 3,
            },
            crate::wr::Sge {
                addr: 0x2000,
                length: 0,
                lkey: 3,
            },
            crate::wr::Sge {
                addr: 0x3000,
                length: 20,
                lkey: 4,
            },
        ];
        rq.post(&RecvWr {
            wr_id: 1,
            sges: &sges,
        })
        .unwrap();
        let full = [sges[0]; 4];
        rq.post(&RecvWr {
            wr_id: 2,
            sges: &full,
        })
        .unwrap();
        assert!(matches!(
            rq.post(&RecvWr {
                wr_id: 3,
                sges: &[]
            }),
            Err(Error::QueueFull { capacity: 2, .. })
        ));
        // SAFETY: the test owns the buffer; 128 bytes are the two WQEs.
        let b = unsafe { std::slice::from_raw_parts(buf.as_ptr(), 128) };
        assert_eq!(&b[0..16], DataSeg::new(10, 3, 0x1000).as_bytes());
        assert_eq!(
            &b[16..32],
            DataSeg::new(20, 4, 0x3000).as_bytes(),
            "empty skipped"
        );
        assert_eq!(&b[32..48], DataSeg::new(0, INVALID_LKEY, 0).as_bytes());
        assert_eq!(
            &b[112..128],
            DataSeg::new(10, 3, 0x1000).as_bytes(),
            "no terminator"
        );
        assert_eq!(rq.retire(), Some(1));
        assert_eq!(rq.retire(), Some(2));
        assert_eq!(rq.retire(), None);
        let five = [sges[0]; 5];
        assert!(matches!(
            rq.post(&RecvWr {
                wr_id: 4,
                sges: &five
            }),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
