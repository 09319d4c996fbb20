//! The mlx5 completion queue poller: [`CqPoller`] polls a caller-provided buffer of the CQEs of
//! [`super::cqe`] in order, the way rdma-core's `providers/mlx5/cq.c` does: it takes each entry by
//! the [ownership rule](super::cqe#ownership), finds the work queue it names through a
//! [`CompletionTarget`] and turns it into a [`WorkCompletion`]. It also cleans a queue's entries
//! out of the CQ, publishes the consumer index and arms the CQ. [`CqeMemory`] is the memory it
//! reads the entries from.

use zerocopy::byteorder::big_endian::U32;
use zerocopy::IntoBytes;

use super::cqe::{
    arm_doorbell, consumer_index_record, cqe_opcode, is_sw_owned, send_wc_opcode, wc_flags,
    wc_opcode, ArmDoorbell, Cqe64, WorkCompletion, OWNER_MASK,
};
use super::doorbell::{DoorbellRecordWriter, UarWriter, CQ_ARM_DB, CQ_DOORBELL, CQ_SET_CI};
use super::sq::{Retired, SendQueue};
use crate::barrier;
use crate::error::{Error, Result, Verb};

/// How a CQE names its work queue, as rdma-core looks it up (`get_req_context`, `get_cur_rsc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WqKey {
    /// CQE version 0: by QP number.
    Qpn(u32),
    /// CQE version 0, receive completions of an SRQ: by SRQ number.
    Srqn(u32),
    /// CQE version 1: by the user index given at QP or SRQ creation.
    UserIndex(u32),
}

/// The work queues a CQ reports on: where a [`CqPoller`] finds the `wr_id` of each CQE.
pub trait CompletionTarget {
    /// Retires the send WQE a requester CQE names (`key`, `wqe_counter`; see
    /// [`SendQueue::retire`]). `None` when `key` names no send queue here or no such WQE is
    /// outstanding.
    fn retire_send(&mut self, key: WqKey, wqe_counter: u16) -> Option<Retired>;

    /// The `wr_id` of the receive WQE a responder CQE names, retiring it. `None` when there is no
    /// such receive queue here (the default: none at all).
    fn retire_recv(&mut self, key: WqKey, cqe: &Cqe64) -> Option<u64> {
        let _ = (key, cqe);
        None
    }
}

impl<B: AsRef<[u8]>> CompletionTarget for SendQueue<B> {
    #[inline]
    fn retire_send(&mut self, key: WqKey, wqe_counter: u16) -> Option<Retired> {
        let cfg = self.config();
        let ours = match key {
            WqKey::Qpn(qpn) => qpn == cfg.qpn,
            WqKey::UserIndex(uidx) => cfg.user_index == Some(uidx),
            WqKey::Srqn(_) => false,
        };
        if ours {
            self.retire(wqe_counter)
        } else {
            None
        }
    }
}

/// The memory of a CQ buffer, as a [`CqPoller`] reads it.
///
/// The device writes entries while software reads others, so a real CQ buffer cannot be a byte
/// slice: the owner byte of the entry at the consumer index may be in the middle of being written.
/// [`CqeMemory::load_op_own`] reads it with an atomic acquire load; the rest of the entry is read
/// ([`CqeMemory::read`]) only once that load said software owns it, when the device no longer
/// writes it. Any `AsRef<[u8]> + AsMut<[u8]>` (a `Vec<u8>` in tests) is a `CqeMemory`.
pub trait CqeMemory {
    /// The buffer's length in bytes.
    fn cqe_buffer_len(&self) -> usize;

    /// The byte at `offset` (an entry's `op_own`), loaded with acquire ordering.
    fn load_op_own(&self, offset: usize) -> u8;

    /// Copies `out.len()` bytes from `offset` (entries software owns).
    fn read(&self, offset: usize, out: &mut [u8]);

    /// Writes `data` at `offset` (entries software owns: rearranging them when a QP is cleaned out).
    /// Never an entry's `op_own` byte, which goes through [`CqeMemory::store_op_own`].
    fn write(&mut self, offset: usize, data: &[u8]);

    /// Stores an entry's `op_own` byte (of an entry software owns, when cleaning), with release
    /// ordering after the entry's other bytes: the device may load that byte at any time (it reads
    /// the entries past an armed consumer index to decide whether to raise an event), atomically,
    /// so this store must be atomic too. The default suits memory no other thread reads.
    fn store_op_own(&mut self, offset: usize, value: u8) {
        self.write(offset, &[value]);
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> CqeMemory for B {
    fn cqe_buffer_len(&self) -> usize {
        self.as_ref().len()
    }

    fn load_op_own(&self, offset: usize) -> u8 {
        self.as_ref()[offset]
    }

    fn read(&self, offset: usize, out: &mut [u8]) {
        out.copy_from_slice(&self.as_ref()[offset..offset + out.len()]);
    }

    fn write(&mut self, offset: usize, data: &[u8]) {
        self.as_mut()[offset..offset + data.len()].copy_from_slice(data);
    }
}

/// A completion queue: polls a caller-provided buffer of CQEs in order, tracking the consumer index
/// and with it the ownership parity (see the [ownership rule](super::cqe#ownership)).
#[derive(Debug)]
pub struct CqPoller<B> {
    buf: B,
    ncqe: u32,
    entry_size: usize,
    cqn: u32,
    cqe_version: u8,
    /// Consumer index (free running).
    ci: u32,
    /// Completion events consumed (`arm_sn`).
    arm_sn: u32,
}

impl<B: CqeMemory> CqPoller<B> {
    /// A CQ over `buf`: a power-of-two number of entries of `entry_size` (64 or 128) bytes,
    /// initialized with [`init_buffer`] when it was given to the kernel. `cqn` is the kernel's CQ
    /// number, `cqe_version` the context's (0 or 1: whether CQEs name QPs by number or user index).
    ///
    /// [`init_buffer`]: super::cqe::init_buffer
    pub fn new(buf: B, entry_size: usize, cqn: u32, cqe_version: u8) -> Result<CqPoller<B>> {
        let len = buf.cqe_buffer_len();
        let bad = |what: String| Error::InvalidArgument {
            verb: Verb::CreateCq,
            what,
        };
        if entry_size != 64 && entry_size != 128 {
            return Err(bad(format!("CQE size {entry_size} (64 or 128)")));
        }
        let ncqe = len / entry_size;
        if len % entry_size != 0 || !ncqe.is_power_of_two() || ncqe > 1 << 24 {
            return Err(bad(format!(
                "a CQ buffer of {len} bytes (a power of two number of {entry_size}-byte entries, at most 2^24)"
            )));
        }
        if cqe_version > 1 {
            return Err(bad(format!("CQE version {cqe_version}")));
        }
        Ok(CqPoller {
            buf,
            ncqe: ncqe as u32,
            entry_size,
            cqn,
            cqe_version,
            ci: 0,
            arm_sn: 0,
        })
    }

    /// The number of entries.
    pub fn entries(&self) -> u32 {
        self.ncqe
    }

    /// The consumer index (free running).
    pub fn consumer_index(&self) -> u32 {
        self.ci
    }

    /// Whether the entry at the consumer index is software's (a completion is waiting there), by
    /// its owner bit alone: a hint, read without the barrier that taking it needs.
    #[inline(always)]
    pub fn ready(&self) -> bool {
        is_sw_owned(
            self.buf.load_op_own(self.cqe_offset(self.ci) + 63),
            self.ci,
            self.ncqe,
        )
    }

    /// The timestamp of the CQE the consumer index passed last (the one behind the completion
    /// [`poll_into`](CqPoller::poll_into) just returned), or 0 if it is an error CQE, whose bytes
    /// there are other fields. Only while that entry is still software's: before
    /// [`update_consumer_index`](CqPoller::update_consumer_index) hands it back to the device.
    pub fn last_timestamp(&self) -> u64 {
        let at = self.cqe_offset(self.ci.wrapping_sub(1));
        const _: () = assert!(std::mem::offset_of!(Cqe64, timestamp) == 48);
        let op = self.buf.load_op_own(at + 63) >> 4;
        if op == cqe_opcode::REQ_ERR || op == cqe_opcode::RESP_ERR {
            return 0;
        }
        let mut ts = [0u8; 8];
        self.buf.read(at + 48, &mut ts);
        u64::from_be_bytes(ts)
    }

    /// The buffer.
    pub fn buffer(&self) -> &B {
        &self.buf
    }

    /// The buffer, to play the device in tests.
    pub fn buffer_mut(&mut self) -> &mut B {
        &mut self.buf
    }

    /// The entry at the consumer index if software owns it: takes it (the consumer index
    /// advances), then issues [`barrier::udma_from_device_barrier`] and copies it out (rdma-core's
    /// `mlx5_get_next_cqe`). `None` when the CQ is empty.
    pub fn next_cqe(&mut self) -> Option<Cqe64> {
        let cqe = self.cqe_offset(self.ci);
        if !is_sw_owned(self.buf.load_op_own(cqe + 63), self.ci, self.ncqe) {
            return None;
        }
        self.ci = self.ci.wrapping_add(1);
        barrier::udma_from_device_barrier();
        Some(self.read_cqe(cqe))
    }

    /// The byte offset of the `mlx5_cqe64` of entry `index` (free running): the entry itself, or
    /// its second half with 128-byte entries.
    fn cqe_offset(&self, index: u32) -> usize {
        (index & (self.ncqe - 1)) as usize * self.entry_size + self.entry_size - 64
    }

    fn read_cqe(&self, offset: usize) -> Cqe64 {
        let mut cqe = Cqe64::default();
        self.buf.read(offset, cqe.as_mut_bytes());
        cqe
    }

    /// Removes the completions `remove` selects from the entries software owns, moving the later
    /// ones up so the rest stay in order, and advances the consumer index past the freed entries
    /// (rdma-core's `__mlx5_cq_clean`, used when a QP is destroyed or reset: its CQEs must not be
    /// polled afterwards). `remove` sees every CQE from the newest to the oldest, each once. Returns
    /// how many were removed; when that is not 0, follow with
    /// [`update_consumer_index`](CqPoller::update_consumer_index) (rdma-core issues
    /// [`barrier::udma_to_device_barrier`] first, which the doorbell record's release store
    /// includes).
    ///
    /// The device may add entries while this runs; they are past the ones looked at, so the QP being
    /// cleaned out must no longer produce completions (it is destroyed or in RESET).
    pub fn clean(&mut self, mut remove: impl FnMut(&Cqe64) -> bool) -> u32 {
        let mut prod = self.ci;
        while is_sw_owned(
            self.buf.load_op_own(self.cqe_offset(prod) + 63),
            prod,
            self.ncqe,
        ) {
            prod = prod.wrapping_add(1);
            if prod.wrapping_sub(self.ci) == self.ncqe {
                break;
            }
        }
        barrier::udma_from_device_barrier();
        let mut freed = 0u32;
        let mut entry = vec![0u8; self.entry_size];
        while prod != self.ci {
            prod = prod.wrapping_sub(1);
            let cqe = self.read_cqe(self.cqe_offset(prod));
            if remove(&cqe) {
                freed += 1;
            } else if freed > 0 {
                let size = self.entry_size;
                let src = (prod & (self.ncqe - 1)) as usize * size;
                let dst_index = prod.wrapping_add(freed);
                let dst = (dst_index & (self.ncqe - 1)) as usize * size;
                // The destination keeps its own owner bit: the parity of its place in the ring.
                let owner = self.buf.load_op_own(dst + size - 1) & OWNER_MASK;
                self.buf.read(src, &mut entry);
                // The body, then `op_own` atomically: the device may be loading it (arming).
                self.buf.write(dst, &entry[..size - 1]);
                self.buf
                    .store_op_own(dst + size - 1, (entry[size - 1] & !OWNER_MASK) | owner);
            }
        }
        self.ci = self.ci.wrapping_add(freed);
        freed
    }

    fn key(&self, cqe: &Cqe64, receive: bool) -> WqKey {
        match (self.cqe_version, receive) {
            (1, _) => WqKey::UserIndex(cqe.srqn_uidx()),
            (_, true) if cqe.srqn_uidx() != 0 => WqKey::Srqn(cqe.srqn_uidx()),
            _ => WqKey::Qpn(cqe.qpn()),
        }
    }

    /// Polls one completion (rdma-core's `mlx5_poll_one` / `mlx5_parse_cqe`): `Ok(None)` when the
    /// CQ is empty. Resize CQEs are skipped. A CQE that names no queue of `target` (or no
    /// outstanding WQE), or that has an opcode this backend does not use (tag matching,
    /// signature errors), is consumed and reported as an error, as rdma-core does.
    pub fn poll_one(
        &mut self,
        target: &mut impl CompletionTarget,
    ) -> Result<Option<WorkCompletion>> {
        let mut wc = WorkCompletion::default();
        Ok(self.poll_into(target, &mut wc)?.then_some(wc))
    }

    /// [`poll_one`](CqPoller::poll_one) into `wc`: `Ok(true)` when it polled a completion
    /// (all of `wc` written), `Ok(false)` when the CQ is empty (`wc` untouched).
    ///
    /// A successful requester CQE, the common case, is read straight into `wc`: after the owner
    /// byte's acquire load and [`barrier::udma_from_device_barrier`], only the words it needs (user
    /// index, byte count, opcode and QPN, WQE counter); the other CQEs go the general way.
    #[inline]
    pub fn poll_into(
        &mut self,
        target: &mut impl CompletionTarget,
        wc: &mut WorkCompletion,
    ) -> Result<bool> {
        let offset = self.cqe_offset(self.ci);
        let op_own = self.buf.load_op_own(offset + 63);
        if !is_sw_owned(op_own, self.ci, self.ncqe) {
            return Ok(false);
        }
        if op_own >> 4 != cqe_opcode::REQ {
            return self.poll_into_general(target, wc);
        }
        self.ci = self.ci.wrapping_add(1);
        barrier::udma_from_device_barrier();
        self.take_req(offset, self.cqe_version == 1, target, wc)?;
        Ok(true)
    }

    /// The rest of a successful requester CQE at `offset`, which software owns and the consumer
    /// index has passed (after the barrier): its send WQE retired and its completion in `wc`.
    #[inline(always)]
    fn take_req(
        &self,
        offset: usize,
        by_user_index: bool,
        target: &mut impl CompletionTarget,
        wc: &mut WorkCompletion,
    ) -> Result<()> {
        // Bytes 32..64 of the CQE: srqn_uidx at 0, byte_cnt at 12, sop_drop_qpn at 24,
        // wqe_counter at 28.
        const _: () = assert!(
            std::mem::offset_of!(Cqe64, srqn_uidx) == 32
                && std::mem::offset_of!(Cqe64, byte_cnt) == 44
                && std::mem::offset_of!(Cqe64, sop_drop_qpn) == 56
                && std::mem::offset_of!(Cqe64, wqe_counter) == 60
        );
        let mut tail = [0u8; 32];
        self.buf.read(offset + 32, &mut tail);
        let word =
            |at: usize| u32::from_be_bytes([tail[at], tail[at + 1], tail[at + 2], tail[at + 3]]);
        let sop_drop_qpn = word(24);
        let qpn = sop_drop_qpn & 0xff_ffff;
        let key = if by_user_index {
            WqKey::UserIndex(word(0) & 0xff_ffff)
        } else {
            WqKey::Qpn(qpn)
        };
        let Some(retired) = target.retire_send(key, u16::from_be_bytes([tail[28], tail[29]]))
        else {
            return Err(self.req_error(offset, false));
        };
        let Some((opcode, wc_flags)) = send_wc_opcode((sop_drop_qpn >> 24) as u8) else {
            return Err(self.req_error(offset, true));
        };
        *wc = WorkCompletion {
            wr_id: retired.wr_id,
            opcode,
            wc_flags,
            byte_len: match opcode {
                wc_opcode::RDMA_READ => word(12),
                wc_opcode::COMP_SWAP | wc_opcode::FETCH_ADD => 8,
                _ => 0,
            },
            qp_num: qpn,
            ..WorkCompletion::default()
        };
        Ok(())
    }

    /// The error of a requester CQE `poll_into` took at `offset` (still software's: the consumer
    /// index has not been published): no such send WQE outstanding, or (`opcode`) an mlx5 opcode
    /// this backend does not post.
    #[cold]
    #[inline(never)]
    fn req_error(&self, offset: usize, opcode: bool) -> Error {
        let cqe = self.read_cqe(offset);
        let what = if opcode {
            format!("a send CQE for mlx5 opcode {:#x}", cqe.send_opcode())
        } else {
            format!(
                "a send CQE for QP {:#x} (user index {:#x}), WQE {:#x}, that no queue expects",
                cqe.qpn(),
                cqe.srqn_uidx(),
                cqe.wqe_counter.get()
            )
        };
        Error::Protocol {
            verb: Verb::PollCq,
            what,
        }
    }

    /// `poll_into` for CQEs other than successful requester ones.
    #[inline(never)]
    fn poll_into_general(
        &mut self,
        target: &mut impl CompletionTarget,
        wc: &mut WorkCompletion,
    ) -> Result<bool> {
        match self.poll_one_general(target)? {
            Some(c) => {
                *wc = c;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn poll_one_general(
        &mut self,
        target: &mut impl CompletionTarget,
    ) -> Result<Option<WorkCompletion>> {
        loop {
            let Some(cqe) = self.next_cqe() else {
                return Ok(None);
            };
            let op = cqe.opcode();
            let mut wc = WorkCompletion {
                qp_num: cqe.qpn(),
                ..WorkCompletion::default()
            };
            let orphan = |what: &str| {
                Error::Protocol {
                verb: Verb::PollCq,
                what: format!(
                    "a {what} CQE for QP {:#x} (user index {:#x}), WQE {:#x}, that no queue expects",
                    cqe.qpn(),
                    cqe.srqn_uidx(),
                    cqe.wqe_counter.get()
                ),
            }
            };
            match op {
                cqe_opcode::REQ => {
                    let key = self.key(&cqe, false);
                    let retired = target
                        .retire_send(key, cqe.wqe_counter.get())
                        .ok_or_else(|| orphan("send"))?;
                    let (opcode, flags) =
                        send_wc_opcode(cqe.send_opcode()).ok_or_else(|| Error::Protocol {
                            verb: Verb::PollCq,
                            what: format!("a send CQE for mlx5 opcode {:#x}", cqe.send_opcode()),
                        })?;
                    wc.wr_id = retired.wr_id;
                    wc.opcode = opcode;
                    wc.wc_flags = flags;
                    wc.byte_len = match opcode {
                        wc_opcode::RDMA_READ => cqe.byte_count(),
                        wc_opcode::COMP_SWAP | wc_opcode::FETCH_ADD => 8,
                        _ => 0,
                    };
                }
                cqe_opcode::RESP_WR_IMM
                | cqe_opcode::RESP_SEND
                | cqe_opcode::RESP_SEND_IMM
                | cqe_opcode::RESP_SEND_INV => {
                    let key = self.key(&cqe, true);
                    wc.wr_id = target
                        .retire_recv(key, &cqe)
                        .ok_or_else(|| orphan("receive"))?;
                    wc.byte_len = cqe.byte_count();
                    (wc.opcode, wc.wc_flags, wc.imm_data) = match op {
                        cqe_opcode::RESP_WR_IMM => (
                            wc_opcode::RECV_RDMA_WITH_IMM,
                            wc_flags::WITH_IMM,
                            cqe.imm_data(),
                        ),
                        cqe_opcode::RESP_SEND_IMM => {
                            (wc_opcode::RECV, wc_flags::WITH_IMM, cqe.imm_data())
                        }
                        cqe_opcode::RESP_SEND_INV => {
                            (wc_opcode::RECV, wc_flags::WITH_INV, cqe.invalidated_rkey())
                        }
                        _ => (wc_opcode::RECV, 0, 0),
                    };
                    if cqe.grh() {
                        wc.wc_flags |= wc_flags::GRH;
                    }
                    wc.slid = cqe.slid.get();
                    wc.sl = cqe.sl();
                    wc.src_qp = cqe.src_qp();
                    wc.dlid_path_bits = cqe.dlid_path_bits();
                    wc.pkey_index = cqe.pkey_index();
                }
                cqe_opcode::REQ_ERR | cqe_opcode::RESP_ERR => {
                    let err = cqe.as_err();
                    wc.status = err.status();
                    wc.vendor_err = u32::from(err.vendor_err_synd);
                    if op == cqe_opcode::REQ_ERR {
                        let key = self.key(&cqe, false);
                        let retired = target
                            .retire_send(key, err.wqe_counter.get())
                            .ok_or_else(|| orphan("send error"))?;
                        wc.wr_id = retired.wr_id;
                        wc.opcode = send_wc_opcode(retired.opcode).map_or(0, |(o, _)| o);
                    } else {
                        let key = self.key(&cqe, true);
                        wc.wr_id = target
                            .retire_recv(key, &cqe)
                            .ok_or_else(|| orphan("receive error"))?;
                        wc.opcode = wc_opcode::RECV;
                    }
                }
                cqe_opcode::RESIZE_CQ => continue,
                _ => {
                    return Err(Error::Protocol {
                        verb: Verb::PollCq,
                        what: format!("a CQE with opcode {op}"),
                    })
                }
            }
            return Ok(Some(wc));
        }
    }

    /// Polls up to `out.len()` completions into `out`; returns how many. Stops at the first error
    /// (the completions before it are in `out`, and consumed). Follow it with
    /// [`update_consumer_index`](CqPoller::update_consumer_index).
    ///
    /// The loop keeps the consumer index and the ring's geometry in locals: the barrier after each
    /// owner check orders memory, so fields of `self` would be loaded again for every entry.
    pub fn poll(
        &mut self,
        target: &mut impl CompletionTarget,
        out: &mut [WorkCompletion],
    ) -> Result<usize> {
        let (ncqe, size) = (self.ncqe, self.entry_size);
        let by_user_index = self.cqe_version == 1;
        let mut ci = self.ci;
        let mut n = 0;
        let result = loop {
            let Some(wc) = out.get_mut(n) else {
                break Ok(n);
            };
            let offset = (ci & (ncqe - 1)) as usize * size + size - 64;
            let op_own = self.buf.load_op_own(offset + 63);
            if !is_sw_owned(op_own, ci, ncqe) {
                break Ok(n);
            }
            if op_own >> 4 != cqe_opcode::REQ {
                self.ci = ci;
                let polled = self.poll_into_general(target, wc);
                ci = self.ci;
                match polled {
                    Ok(true) => n += 1,
                    Ok(false) => break Ok(n),
                    Err(e) => break Err(e),
                }
                continue;
            }
            ci = ci.wrapping_add(1);
            barrier::udma_from_device_barrier();
            if let Err(e) = self.take_req(offset, by_user_index, target, wc) {
                break Err(e);
            }
            n += 1;
        };
        self.ci = ci;
        result
    }

    /// The doorbell record's consumer word (`dbrec[MLX5_CQ_SET_CI]`): `ci & 0xffffff`.
    pub fn consumer_index_record(&self) -> U32 {
        consumer_index_record(self.ci)
    }

    /// Tells the device which entries it may reuse: stores
    /// [`consumer_index_record`](CqPoller::consumer_index_record) into `dbrec`
    /// (rdma-core's `update_cons_index`, once per poll batch).
    pub fn update_consumer_index(&self, dbrec: &mut impl DoorbellRecordWriter) {
        dbrec.store(CQ_SET_CI, self.consumer_index_record());
    }

    /// What arming the CQ for the next completion (or the next solicited one) writes.
    pub fn arm_doorbell(&self, solicited: bool) -> ArmDoorbell {
        arm_doorbell(self.ci, self.arm_sn, self.cqn, solicited)
    }

    /// Arms the CQ (rdma-core's `mlx5_arm_cq`): the arm word into the doorbell record,
    /// [`barrier::mmio_wc_start`], the 64-bit write at [`CQ_DOORBELL`] of `uar` (the UAR page),
    /// [`barrier::mmio_flush_writes`].
    pub fn arm(
        &self,
        solicited: bool,
        dbrec: &mut impl DoorbellRecordWriter,
        uar: &mut impl UarWriter,
    ) {
        let db = self.arm_doorbell(solicited);
        dbrec.store(CQ_ARM_DB, db.dbrec);
        barrier::mmio_wc_start();
        uar.write64_be(CQ_DOORBELL, db.uar);
        barrier::mmio_flush_writes();
    }

    /// Moves to `buf`, a ring of `ncqe` entries the device has just been switched to by
    /// `RESIZE_CQ` (rdma-core's `mlx5_cq_resize_copy_cqes`): the device wrote a resize CQE into the
    /// old ring after the entries still waiting, and writes its next CQEs into the new ring from the
    /// index after that one. The waiting entries are copied to the new ring one place on (each with
    /// the owner bit of its new place), and the consumer index steps over the resize CQE, so they
    /// are polled next, in order. Returns the old ring.
    ///
    /// `buf` must be initialised as [`CqPoller::new`] requires, with entries of the same size. A
    /// ring without the resize CQE where it must be is an [`Error::Protocol`]: the copy stops
    /// there, and the poller moves to the new ring anyway (the device writes only there now). The
    /// old ring comes back either way, for the caller to free outside its lock.
    pub fn resize(&mut self, buf: B, ncqe: u32) -> (B, Result<()>) {
        let old_n = self.ncqe;
        let old = std::mem::replace(&mut self.buf, buf);
        let old_offset = |i: u32| (i & (old_n - 1)) as usize * self.entry_size;
        let mut i = self.ci;
        let mut entry = vec![0u8; self.entry_size];
        let mut result = Ok(());
        loop {
            let at = old_offset(i);
            let op_own = old.load_op_own(at + self.entry_size - 1);
            if !is_sw_owned(op_own, i, old_n) || i.wrapping_sub(self.ci) >= old_n {
                result = Err(Error::Protocol {
                    verb: Verb::ResizeCq,
                    what: format!(
                        "no resize CQE in the old ring after {} waiting entries",
                        i.wrapping_sub(self.ci)
                    ),
                });
                break;
            }
            barrier::udma_from_device_barrier();
            if op_own >> 4 == super::cqe::cqe_opcode::RESIZE_CQ {
                break;
            }
            let next = i.wrapping_add(1);
            if next.wrapping_sub(self.ci) >= ncqe {
                result = Err(Error::Protocol {
                    verb: Verb::ResizeCq,
                    what: format!("more waiting completions than the new ring's {ncqe} entries"),
                });
                break;
            }
            old.read(at, &mut entry);
            let dst = (next & (ncqe - 1)) as usize * self.entry_size;
            let last = self.entry_size - 1;
            self.buf.write(dst, &entry[..last]);
            let owner = u8::from(next & ncqe != 0);
            self.buf
                .store_op_own(dst + last, (entry[last] & !OWNER_MASK) | owner);
            i = next;
        }
        self.ncqe = ncqe;
        self.ci = self.ci.wrapping_add(1);
        (old, result)
    }

    /// Counts a completion event read from the completion channel, so the next arm carries the
    /// next sequence number (rdma-core's `mlx5_cq_event`).
    pub fn event(&mut self) {
        self.arm_sn = self.arm_sn.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use zerocopy::byteorder::big_endian::U16;
    use zerocopy::FromBytes;

    use super::*;
    use crate::mlx5::cqe::{device_owner_bit, init_buffer, syndrome, wc_status, ErrCqe};
    use crate::mlx5::doorbell::DoorbellRecord;
    use crate::mlx5::sq::{QpType, SendQueueConfig};
    use crate::mlx5::wqe::opcode;
    use crate::wr::{self, SendWr, Sge};

    /// Plays the device: writes `cqe` as the `index`-th entry it produces, with the owner bit of
    /// that pass.
    fn produce(cq: &mut CqPoller<Vec<u8>>, index: u32, mut cqe: Cqe64) {
        let (n, size) = (cq.entries(), cq.entry_size);
        cqe.set_owner(device_owner_bit(index, n));
        let at = (index & (n - 1)) as usize * size + size - 64;
        cq.buffer_mut()[at..at + 64].copy_from_slice(cqe.as_bytes());
    }

    fn req_cqe(qpn: u32, op: u8, wqe_counter: u16) -> Cqe64 {
        Cqe64 {
            sop_drop_qpn: U32::new((u32::from(op) << 24) | qpn),
            wqe_counter: U16::new(wqe_counter),
            op_own: cqe_opcode::REQ << 4,
            ..Cqe64::default()
        }
    }

    fn new_cq(n: usize, size: usize) -> CqPoller<Vec<u8>> {
        let mut buf = vec![0u8; n * size];
        init_buffer(&mut buf, size);
        CqPoller::new(buf, size, 0x99, 0).unwrap()
    }

    fn sq_cfg() -> SendQueueConfig {
        SendQueueConfig {
            qpn: 0x51,
            user_index: Some(7),
            qp_type: QpType::Rc,
            max_send_wr: 64,
            max_send_sge: 4,
            max_inline_data: 64,
            sq_sig_all: false,
        }
    }

    /// The device's side of a resize: the resize CQE at `index` of the old ring.
    fn resize_cqe() -> Cqe64 {
        Cqe64 {
            op_own: cqe_opcode::RESIZE_CQ << 4,
            ..Cqe64::default()
        }
    }

    #[test]
    fn a_resize_carries_the_waiting_cqes_over_in_order_across_wraps() {
        for size in [64, 128] {
            // Old ring of 4, consumer at 6 (second pass): entries 6, 7, 8 wait (8 wraps to slot
            // 0, third pass), the resize CQE is the 9th.
            let mut cq = new_cq(4, size);
            for i in 0..6 {
                produce(&mut cq, i, req_cqe(0x51, opcode::SEND, i as u16));
                assert!(cq.next_cqe().is_some());
            }
            for i in 6..9 {
                produce(&mut cq, i, req_cqe(0x51, opcode::SEND, 100 + i as u16));
            }
            produce(&mut cq, 9, resize_cqe());
            let mut new = vec![0u8; 16 * size];
            init_buffer(&mut new, size);
            let (old, moved) = cq.resize(new, 16);
            moved.unwrap();
            assert_eq!(old.len(), 4 * size);
            assert_eq!((cq.entries(), cq.consumer_index()), (16, 7));
            // The device goes on at 10 in the new ring.
            produce(&mut cq, 10, req_cqe(0x51, opcode::SEND, 110));
            let got: Vec<u16> = std::iter::from_fn(|| cq.next_cqe())
                .map(|c| c.wqe_counter.get())
                .collect();
            assert_eq!(got, [106, 107, 108, 110], "{size}-byte entries");
            assert!(cq.next_cqe().is_none());
        }
    }

    #[test]
    fn the_last_cqes_timestamp_is_read_only_for_a_successful_one() {
        let mut cq = new_cq(4, 64);
        let mut buf = vec![0u8; 64 * 64];
        let mut sq = SendQueue::new(&mut buf[..], sq_cfg()).unwrap();
        let sges = [Sge {
            addr: 0x1000,
            length: 8,
            lkey: 1,
        }];
        let idx: Vec<u16> = [1u64, 2]
            .iter()
            .map(|&id| sq.post(&SendWr::send(id, &sges), None).unwrap().index)
            .collect();
        let mut ok = req_cqe(0x51, opcode::SEND, idx[0]);
        ok.timestamp = zerocopy::byteorder::big_endian::U64::new(0x0123_4567_89ab_cdef);
        produce(&mut cq, 0, ok);
        let wc = cq.poll_one(&mut sq).unwrap().unwrap();
        assert_eq!(wc.wr_id, 1);
        assert_eq!(cq.last_timestamp(), 0x0123_4567_89ab_cdef);
        // An error CQE's bytes 48..56 are other fields: no timestamp.
        let mut err = Cqe64 {
            op_own: cqe_opcode::REQ_ERR << 4,
            sop_drop_qpn: U32::new(0x51),
            wqe_counter: U16::new(idx[1]),
            ..Cqe64::default()
        };
        err.timestamp = zerocopy::byteorder::big_endian::U64::new(u64::MAX);
        produce(&mut cq, 1, err);
        let wc = cq.poll_one(&mut sq).unwrap().unwrap();
        assert_eq!(wc.wr_id, 2);
        assert_eq!(cq.last_timestamp(), 0);
    }

    #[test]
    fn a_resize_without_its_cqe_or_into_too_small_a_ring_is_a_protocol_error() {
        // No resize CQE after the waiting entry: the copy stops there, the poller moves anyway.
        let mut cq = new_cq(4, 64);
        produce(&mut cq, 0, req_cqe(0x51, opcode::SEND, 1));
        let mut new = vec![0u8; 8 * 64];
        init_buffer(&mut new, 64);
        let (old, moved) = cq.resize(new, 8);
        assert_eq!(old.len(), 4 * 64, "the old ring comes back with the error");
        match moved {
            Err(Error::Protocol {
                verb: Verb::ResizeCq,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(cq.entries(), 8);
        // Three waiting entries do not fit after the resize CQE's place in a ring of 2.
        let mut cq = new_cq(4, 64);
        for i in 0..3 {
            produce(&mut cq, i, req_cqe(0x51, opcode::SEND, i as u16));
        }
        produce(&mut cq, 3, resize_cqe());
        let mut new = vec![0u8; 2 * 64];
        init_buffer(&mut new, 64);
        assert!(matches!(
            cq.resize(new, 2).1,
            Err(Error::Protocol {
                verb: Verb::ResizeCq,
                ..
            })
        ));
    }

    #[test]
    fn fresh_buffer_is_empty_for_both_sizes() {
        for size in [64, 128] {
            let mut cq = new_cq(8, size);
            assert!(cq.next_cqe().is_none());
            assert_eq!(cq.consumer_index(), 0);
        }
        assert!(CqPoller::new(vec![0u8; 3 * 64], 64, 1, 0).is_err());
        assert!(CqPoller::new(vec![0u8; 4 * 64], 96, 1, 0).is_err());
    }

    #[test]
    fn parity_across_several_wraps_with_128_byte_entries() {
        let mut cq = new_cq(4, 128);
        let mut buf = vec![0u8; 64 * 64];
        let mut sq = SendQueue::new(&mut buf[..], sq_cfg()).unwrap();
        let sges = [Sge {
            addr: 1,
            length: 1,
            lkey: 2,
        }];
        let mut produced = 0u32;
        for round in 0..5u64 {
            // Post 3 requests, the device completes them; some rounds leave entries unconsumed
            // across a wrap boundary until the next poll.
            let mut idx = Vec::new();
            for i in 0..3 {
                let w = sq.post(&SendWr::send(round * 10 + i, &sges), None).unwrap();
                idx.push(w.index);
            }
            for &i in &idx {
                produce(&mut cq, produced, req_cqe(0x51, opcode::SEND, i));
                produced += 1;
            }
            for i in 0..3 {
                let wc = cq.poll_one(&mut sq).unwrap().unwrap();
                assert_eq!(wc.wr_id, round * 10 + i);
                assert_eq!(
                    (wc.status, wc.opcode, wc.qp_num),
                    (0, wc_opcode::SEND, 0x51)
                );
            }
            // Stale entries from the previous pass are not taken.
            assert!(cq.poll_one(&mut sq).unwrap().is_none());
        }
        assert_eq!(cq.consumer_index(), 15);
        let mut dbrec = DoorbellRecord::default();
        cq.update_consumer_index(&mut dbrec);
        assert_eq!(dbrec.as_bytes(), &[0, 0, 0, 15, 0, 0, 0, 0]);
    }

    #[test]
    fn unsignaled_retired_by_a_later_completion() {
        let mut cq = new_cq(8, 64);
        let mut buf = vec![0u8; 8 * 64];
        let mut sq = SendQueue::new(&mut buf[..], sq_cfg()).unwrap();
        let sges = [Sge {
            addr: 1,
            length: 8,
            lkey: 2,
        }];
        let mut quiet = SendWr::send(0, &sges);
        quiet.flags = 0;
        for id in 0..7 {
            quiet.wr_id = id;
            sq.post(&quiet, None).unwrap();
        }
        let mut read = SendWr::send(100, &sges);
        read.opcode = wr::opcode::RDMA_READ;
        let w = sq.post(&read, None).unwrap();
        assert_eq!(sq.outstanding(), 8);
        assert!(sq.post(&quiet, None).is_err(), "ring full");
        let mut cqe = req_cqe(0x51, opcode::RDMA_READ, w.index);
        cqe.byte_cnt = U32::new(8);
        produce(&mut cq, 0, cqe);
        let wc = cq.poll_one(&mut sq).unwrap().unwrap();
        assert_eq!(
            (wc.wr_id, wc.opcode, wc.byte_len),
            (100, wc_opcode::RDMA_READ, 8)
        );
        assert_eq!(sq.outstanding(), 0);
        assert_eq!(sq.free_blocks(), 8);
        // A completion for an unsignaled request that was already retired is refused.
        produce(&mut cq, 1, req_cqe(0x51, opcode::SEND, 3));
        assert!(matches!(cq.poll_one(&mut sq), Err(Error::Protocol { .. })));
        assert_eq!(cq.consumer_index(), 2, "consumed anyway");
    }

    #[test]
    fn user_index_lookup_and_errors() {
        let mut buf = vec![0u8; 4 * 64];
        init_buffer(&mut buf, 64);
        let mut cq = CqPoller::new(buf, 64, 3, 1).unwrap();
        let mut ring = vec![0u8; 4 * 64];
        let mut sq = SendQueue::new(&mut ring[..], sq_cfg()).unwrap();
        let sges = [Sge {
            addr: 1,
            length: 8,
            lkey: 2,
        }];
        let mut cas = SendWr::send(5, &sges);
        cas.opcode = wr::opcode::ATOMIC_CMP_AND_SWP;
        let w = sq.post(&cas, None).unwrap();
        let mut err = ErrCqe {
            srqn: U32::new(7),
            vendor_err_synd: 0x81,
            syndrome: syndrome::REMOTE_ACCESS_ERR,
            s_wqe_opcode_qpn: U32::new((u32::from(opcode::ATOMIC_CS) << 24) | 0x51),
            wqe_counter: U16::new(w.index),
            op_own: cqe_opcode::REQ_ERR << 4,
            ..ErrCqe::default()
        };
        // Wrong user index: nobody's.
        err.srqn = U32::new(8);
        let mut buf_cqe = Cqe64::read_from_bytes(err.as_bytes()).unwrap();
        buf_cqe.set_owner(0);
        cq.buffer_mut()[..64].copy_from_slice(buf_cqe.as_bytes());
        assert!(cq.poll_one(&mut sq).is_err());
        err.srqn = U32::new(7);
        let cqe = Cqe64::read_from_bytes(err.as_bytes()).unwrap();
        cq.buffer_mut()[64..128].copy_from_slice(cqe.as_bytes());
        let wc = cq.poll_one(&mut sq).unwrap().unwrap();
        assert_eq!(
            (wc.wr_id, wc.status, wc.vendor_err, wc.opcode),
            (5, wc_status::REM_ACCESS_ERR, 0x81, wc_opcode::COMP_SWAP)
        );
    }

    struct Rq(Vec<u64>);

    impl CompletionTarget for Rq {
        fn retire_send(&mut self, _: WqKey, _: u16) -> Option<Retired> {
            None
        }
        fn retire_recv(&mut self, key: WqKey, cqe: &Cqe64) -> Option<u64> {
            (key == WqKey::Qpn(0x51)).then(|| self.0[cqe.wqe_counter.get() as usize])
        }
    }

    #[test]
    fn receive_completions() {
        let mut cq = new_cq(2, 64);
        let mut rq = Rq(vec![40, 41, 42]);
        let mut cqe = Cqe64 {
            sop_drop_qpn: U32::new(0x51),
            flags_rqpn: U32::new((1 << 28) | (5 << 24) | 0xabcd),
            imm_inval_pkey: U32::new(0x0102_0304),
            byte_cnt: U32::new(1000),
            slid: U16::new(9),
            ml_path: 0xff,
            wqe_counter: U16::new(1),
            op_own: cqe_opcode::RESP_SEND_IMM << 4 | 2,
            ..Cqe64::default()
        };
        produce(&mut cq, 0, cqe);
        let wc = cq.poll_one(&mut rq).unwrap().unwrap();
        assert_eq!(wc.wr_id, 41);
        assert_eq!(wc.opcode, wc_opcode::RECV);
        assert_eq!(wc.wc_flags, wc_flags::WITH_IMM | wc_flags::GRH);
        assert_eq!(wc.imm_data.to_ne_bytes(), [1, 2, 3, 4]);
        assert_eq!(
            (
                wc.byte_len,
                wc.src_qp,
                wc.sl,
                wc.slid,
                wc.dlid_path_bits,
                wc.pkey_index
            ),
            (1000, 0xabcd, 5, 9, 0x7f, 0x0304)
        );
        assert_eq!(
            (wc.wc_flags, wc.opcode),
            (wc_flags::GRH | wc_flags::WITH_IMM, wc_opcode::RECV)
        );
        cqe.op_own = cqe_opcode::RESP_SEND_INV << 4;
        cqe.wqe_counter = U16::new(2);
        produce(&mut cq, 1, cqe);
        // A resize CQE in between is skipped.
        produce(
            &mut cq,
            2,
            Cqe64 {
                op_own: cqe_opcode::RESIZE_CQ << 4,
                ..Cqe64::default()
            },
        );
        let wc = cq.poll_one(&mut rq).unwrap().unwrap();
        assert_eq!((wc.wr_id, wc.imm_data, wc.wc_flags), (42, 0x0102_0304, 9));
        let mut out = [WorkCompletion::default(); 4];
        produce(
            &mut cq,
            3,
            Cqe64 {
                op_own: cqe_opcode::RESP_SEND << 4,
                sop_drop_qpn: U32::new(0x51),
                ..Cqe64::default()
            },
        );
        assert_eq!(cq.poll(&mut rq, &mut out).unwrap(), 1);
        assert_eq!(out[0].wr_id, 40);
    }

    #[test]
    fn arm_values() {
        let mut cq = new_cq(4, 64);
        cq.ci = 0x0123_4567;
        let db = cq.arm_doorbell(false);
        assert_eq!(db.dbrec.get(), 0x0023_4567);
        assert_eq!(db.uar, [0x00, 0x23, 0x45, 0x67, 0, 0, 0, 0x99]);
        cq.event();
        cq.event();
        cq.event();
        cq.event();
        cq.event();
        let db = cq.arm_doorbell(true);
        assert_eq!(db.dbrec.get(), (1 << 28) | (1 << 24) | 0x23_4567);
        #[derive(Default)]
        struct Uar(Vec<(usize, [u8; 8])>);
        impl UarWriter for Uar {
            fn write64_be(&mut self, offset: usize, value: [u8; 8]) {
                self.0.push((offset, value));
            }
            fn write_block64(&mut self, _: usize, _: &[u8; 64]) {
                unreachable!()
            }
        }
        let mut uar = Uar::default();
        let mut dbrec = DoorbellRecord::default();
        cq.arm(true, &mut dbrec, &mut uar);
        assert_eq!(uar.0, vec![(0x20, db.uar)]);
        assert_eq!(dbrec.0[CQ_ARM_DB], db.dbrec);
        assert_eq!(dbrec.0[CQ_SET_CI].get(), 0);
    }

    #[test]
    fn clean_removes_one_queue_and_keeps_the_order_of_the_rest() {
        // 4 entries of 128 bytes; entries 0..2 consumed, then 5 produced (wrapping): QPs 1, 2, 1,
        // 2, 2 at indices 2..7.
        let mut cq = new_cq(4, 128);
        let owners = [1u32, 2];
        for i in 0..2 {
            produce(
                &mut cq,
                i,
                req_cqe(owners[i as usize], opcode::SEND, i as u16),
            );
        }
        assert!(cq.next_cqe().is_some() && cq.next_cqe().is_some());
        for (i, qpn) in [(2u32, 1u32), (3, 2), (4, 1), (5, 2)] {
            produce(&mut cq, i, req_cqe(qpn, opcode::SEND, i as u16));
        }
        let mut seen = Vec::new();
        let freed = cq.clean(|c| {
            seen.push(c.wqe_counter.get());
            c.qpn() == 1
        });
        assert_eq!(freed, 2);
        assert_eq!(seen, vec![5, 4, 3, 2], "newest first");
        assert_eq!(cq.consumer_index(), 4);
        // What is left: QP 2's entries 3 and 5, now at indices 4 and 5, with their slots' owner
        // bits; the entry after them is still the device's.
        let a = cq.next_cqe().unwrap();
        let b = cq.next_cqe().unwrap();
        assert_eq!((a.qpn(), a.wqe_counter.get()), (2, 3));
        assert_eq!((b.qpn(), b.wqe_counter.get()), (2, 5));
        assert!(cq.next_cqe().is_none());
        // The device's next entry (index 6) is found where it belongs.
        produce(&mut cq, 6, req_cqe(2, opcode::SEND, 6));
        assert_eq!(cq.next_cqe().unwrap().wqe_counter.get(), 6);
        // Nothing to remove: nothing moves.
        produce(&mut cq, 7, req_cqe(2, opcode::SEND, 7));
        assert_eq!(cq.clean(|_| false), 0);
        assert_eq!(cq.next_cqe().unwrap().wqe_counter.get(), 7);
    }
}
