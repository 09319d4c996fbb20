//! Batches of work requests: [`SendBatch`] and [`RecvBatch`], the shape of the `ibverbs` crate's
//! next API (`PostBatch`, `PostOp`).
//!
//! A batch is started on a queue pair borrowed mutably ([`QueuePair::start_send`],
//! [`QueuePair::start_recv`]), so no other post on that handle can interleave with it; each
//! operation is one call; [`SendBatch::submit`] posts them all with one doorbell; a batch dropped
//! without being submitted posts nothing and leaves no trace on the queue.
//!
//! ```no_run
//! # use uverbs::{QueuePair, RemoteMemory, Sge};
//! # fn run(qp: &mut QueuePair<'_>, a: &[Sge], b: &[Sge], peer: RemoteMemory) -> std::io::Result<()> {
//! let mut batch = qp.start_send();
//! batch.write(1, a, peer); // unsignaled: no completion on success
//! batch.signaled().fenced().send(2, b); // one completion, for both
//! // SAFETY: `a` and `b` stay registered and untouched until request 2 completes.
//! unsafe { batch.submit() }?;
//! # Ok(()) }
//! ```
//!
//! As in `ibverbs`, the batch's own methods post unsignaled requests (on a queue pair built with
//! `set_sq_sig_all(false)`; otherwise every request completes), and [`SendBatch::signaled`],
//! [`fenced`](SendBatch::fenced), [`solicited`](SendBatch::solicited) and
//! [`to`](SendBatch::to) (the destination of a datagram) start a [`SendOp`] that the operation
//! ends.

use std::marker::PhantomData;

use uverbs_drivers::backend::SendStage;
use uverbs_drivers::wr::{send_flags, Sge};

use crate::ah::AddressHandle;
use crate::qp::QueuePair;
use crate::wr::{PostFailure, ReceiveRequest, RemoteMemory, SendRequest};

/// Send requests gathered on a queue pair and posted together by [`SendBatch::submit`], with one
/// doorbell; from [`QueuePair::start_send`].
///
/// All or nothing: when one request is refused (an opcode the queue pair's transport lacks, more
/// entries or inline bytes than it takes, a datagram without a destination or over the port's
/// MTU, not enough room in the queue), none is posted and [`PostFailure::index`] says which.
/// Dropped without `submit`, it posts nothing.
///
/// `'a` is how long the requests' scatter lists, inline data and address handles are borrowed:
/// until the batch is submitted or dropped.
///
/// Each request is checked and written into the send queue when it is added, past what the device
/// has been told of (no copy of the request is kept, and nothing is allocated); `submit`
/// publishes them all at once. Should another handle on the same queue pair (the connection
/// manager's) post while the batch is open, the batch is refused whole at `submit`.
#[must_use = "a batch posts nothing until it is submitted"]
pub struct SendBatch<'qp, 'a> {
    qp: &'qp QueuePair<'qp>,
    stage: SendStage,
    _requests: PhantomData<&'a ()>,
}

impl std::fmt::Debug for SendBatch<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendBatch")
            .field("qp_num", &self.qp.qp_num())
            .field("len", &self.stage.len())
            .finish()
    }
}

impl Drop for SendBatch<'_, '_> {
    /// Takes the requests back out of the send queue: nothing of the batch is posted. (Forgotten
    /// instead, the batch is posted by nobody either: the next post writes over it.)
    fn drop(&mut self) {
        if !self.stage.is_done() {
            self.qp.abandon_sends(&mut self.stage);
        }
    }
}

/// One request of a [`SendBatch`] being configured: flags and a datagram's destination, then the
/// operation (`send`, `write`, ...), which adds it to the batch.
#[must_use = "a request is added to the batch by its operation (send, write, ...)"]
pub struct SendOp<'b, 'qp, 'a> {
    batch: &'b mut SendBatch<'qp, 'a>,
    flags: u32,
    dest: Option<(&'a AddressHandle, u32, u32)>,
}

impl std::fmt::Debug for SendOp<'_, '_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendOp")
            .field("flags", &self.flags)
            .field("dest", &self.dest.map(|(_, qpn, qkey)| (qpn, qkey)))
            .finish_non_exhaustive()
    }
}

/// The flags a [`SendOp`] sets; the others (inline) come from the operation.
const OP_FLAGS: u32 = send_flags::SIGNALED | send_flags::FENCE | send_flags::SOLICITED;

impl<'qp, 'a> SendBatch<'qp, 'a> {
    pub(crate) fn new(qp: &'qp QueuePair<'qp>) -> SendBatch<'qp, 'a> {
        SendBatch {
            qp,
            stage: SendStage::new(),
            _requests: PhantomData,
        }
    }

    #[inline(always)]
    fn op(&mut self, flags: u32) -> SendOp<'_, 'qp, 'a> {
        SendOp {
            batch: self,
            flags,
            dest: None,
        }
    }

    /// The next request completes (`IBV_SEND_SIGNALED`): it produces a work completion.
    #[inline(always)]
    pub fn signaled(&mut self) -> SendOp<'_, 'qp, 'a> {
        self.op(send_flags::SIGNALED)
    }

    /// The next request waits for this queue pair's earlier RDMA reads and atomics to finish
    /// (`IBV_SEND_FENCE`).
    #[inline(always)]
    pub fn fenced(&mut self) -> SendOp<'_, 'qp, 'a> {
        self.op(send_flags::FENCE)
    }

    /// The next request is solicited (`IBV_SEND_SOLICITED`): it wakes a peer armed for solicited
    /// completions only.
    #[inline(always)]
    pub fn solicited(&mut self) -> SendOp<'_, 'qp, 'a> {
        self.op(send_flags::SOLICITED)
    }

    /// The next request is a datagram (UD) to queue pair `remote_qpn` at `ah` with Q_Key `qkey`.
    /// `ah` must stay alive until the send's completion has been polled (see
    /// [`submit`](SendBatch::submit)).
    #[inline(always)]
    pub fn to(&mut self, ah: &'a AddressHandle, remote_qpn: u32, qkey: u32) -> SendOp<'_, 'qp, 'a> {
        let mut op = self.op(0);
        op.dest = Some((ah, remote_qpn, qkey));
        op
    }

    /// An unsignaled SEND of the concatenation of `sges` ([`SendOp::send`]).
    #[inline(always)]
    pub fn send(&mut self, wr_id: u64, sges: &'a [Sge]) {
        self.op(0).send(wr_id, sges)
    }

    /// An unsignaled SEND with immediate data ([`SendOp::send_imm`]).
    #[inline(always)]
    pub fn send_imm(&mut self, wr_id: u64, sges: &'a [Sge], imm: u32) {
        self.op(0).send_imm(wr_id, sges, imm)
    }

    /// An unsignaled SEND of `data` copied inline ([`SendOp::send_inline`]).
    #[inline(always)]
    pub fn send_inline(&mut self, wr_id: u64, data: &'a [u8]) {
        self.op(0).send_inline(wr_id, data)
    }

    /// An unsignaled SEND of `data` inline with immediate data ([`SendOp::send_imm_inline`]).
    #[inline(always)]
    pub fn send_imm_inline(&mut self, wr_id: u64, data: &'a [u8], imm: u32) {
        self.op(0).send_imm_inline(wr_id, data, imm)
    }

    /// An unsignaled SEND with invalidate ([`SendOp::send_with_invalidate`]).
    #[inline(always)]
    pub fn send_with_invalidate(&mut self, wr_id: u64, sges: &'a [Sge], rkey: u32) {
        self.op(0).send_with_invalidate(wr_id, sges, rkey)
    }

    /// An unsignaled RDMA WRITE ([`SendOp::write`]).
    #[inline(always)]
    pub fn write(&mut self, wr_id: u64, sges: &'a [Sge], remote: RemoteMemory) {
        self.op(0).write(wr_id, sges, remote)
    }

    /// An unsignaled RDMA WRITE with immediate data ([`SendOp::write_imm`]).
    #[inline(always)]
    pub fn write_imm(&mut self, wr_id: u64, sges: &'a [Sge], remote: RemoteMemory, imm: u32) {
        self.op(0).write_imm(wr_id, sges, remote, imm)
    }

    /// An unsignaled RDMA WRITE of `data` inline ([`SendOp::write_inline`]).
    #[inline(always)]
    pub fn write_inline(&mut self, wr_id: u64, data: &'a [u8], remote: RemoteMemory) {
        self.op(0).write_inline(wr_id, data, remote)
    }

    /// An unsignaled RDMA WRITE of `data` inline with immediate data
    /// ([`SendOp::write_imm_inline`]).
    #[inline(always)]
    pub fn write_imm_inline(&mut self, wr_id: u64, data: &'a [u8], remote: RemoteMemory, imm: u32) {
        self.op(0).write_imm_inline(wr_id, data, remote, imm)
    }

    /// An unsignaled RDMA READ ([`SendOp::read`]).
    #[inline(always)]
    pub fn read(&mut self, wr_id: u64, sges: &'a [Sge], remote: RemoteMemory) {
        self.op(0).read(wr_id, sges, remote)
    }

    /// An unsignaled atomic compare-and-swap ([`SendOp::atomic_cmp_swap`]).
    #[inline(always)]
    pub fn atomic_cmp_swap(
        &mut self,
        wr_id: u64,
        sge: &'a [Sge; 1],
        remote: RemoteMemory,
        compare: u64,
        swap: u64,
    ) {
        self.op(0)
            .atomic_cmp_swap(wr_id, sge, remote, compare, swap)
    }

    /// An unsignaled atomic fetch-and-add ([`SendOp::atomic_fetch_add`]).
    #[inline(always)]
    pub fn atomic_fetch_add(
        &mut self,
        wr_id: u64,
        sge: &'a [Sge; 1],
        remote: RemoteMemory,
        add: u64,
    ) {
        self.op(0).atomic_fetch_add(wr_id, sge, remote, add)
    }

    /// How many requests the batch holds.
    pub fn len(&self) -> usize {
        self.stage.len()
    }

    /// Whether the batch holds no request.
    pub fn is_empty(&self) -> bool {
        self.stage.is_empty()
    }

    /// Posts every request of the batch, in order, and rings the doorbell once; all or nothing
    /// (see [`SendBatch`]). An empty batch posts nothing and succeeds.
    ///
    /// One failure is not a refusal: [`PostFailure::index`] equal to [`len`](SendBatch::len)
    /// says that every request was posted and the doorbell could not be rung (rxe's `write()`
    /// failed). The requests are the device's then, as after a success: keep their memory as the
    /// contract says (a later post's doorbell starts them).
    ///
    /// A datagram's address handle ([`SendBatch::to`]) must also stay alive until the send's
    /// completion has been polled (not for memory safety: the send would fail or go astray).
    ///
    /// # Safety
    /// As [`QueuePair::post_send_list`]: the memory the requests' entries name must stay
    /// allocated, and must not be written (for sends and RDMA writes) or accessed at all (for RDMA
    /// reads and atomics) until each request's completion has been polled (or, for an unsignaled
    /// one, a later request's). Inline data needs nothing: it was copied when its request was added.
    #[allow(unsafe_code)] // The contract is the API's; see the crate docs.
    #[inline]
    pub unsafe fn submit(mut self) -> Result<(), PostFailure> {
        // SAFETY: the requests' memory is covered by this function's contract.
        unsafe { self.qp.submit_sends(&mut self.stage) }
    }
}

impl<'a> SendOp<'_, '_, 'a> {
    /// Also signaled ([`SendBatch::signaled`]).
    #[inline(always)]
    pub fn signaled(mut self) -> Self {
        self.flags |= send_flags::SIGNALED;
        self
    }

    /// Also fenced ([`SendBatch::fenced`]).
    #[inline(always)]
    pub fn fenced(mut self) -> Self {
        self.flags |= send_flags::FENCE;
        self
    }

    /// Also solicited ([`SendBatch::solicited`]).
    #[inline(always)]
    pub fn solicited(mut self) -> Self {
        self.flags |= send_flags::SOLICITED;
        self
    }

    /// Also a datagram to `remote_qpn` at `ah` ([`SendBatch::to`]).
    #[inline(always)]
    pub fn to(mut self, ah: &'a AddressHandle, remote_qpn: u32, qkey: u32) -> Self {
        self.dest = Some((ah, remote_qpn, qkey));
        self
    }

    /// Adds `r` with this op's flags and destination.
    #[inline(always)]
    fn push(self, mut r: SendRequest<'a>) {
        r.wr.flags = (r.wr.flags & !OP_FLAGS) | self.flags;
        if let Some((ah, qpn, qkey)) = self.dest {
            r = r.ud(ah, qpn, qkey);
        }
        let batch = self.batch;
        batch.qp.stage_send(&mut batch.stage, &r);
    }

    /// SEND the concatenation of `sges` to the peer's next receive.
    #[inline(always)]
    pub fn send(self, wr_id: u64, sges: &'a [Sge]) {
        self.push(SendRequest::send(wr_id, sges))
    }

    /// SEND with 32 bits of immediate data (host order; see [`SendRequest::send_with_imm`]).
    #[inline(always)]
    pub fn send_imm(self, wr_id: u64, sges: &'a [Sge], imm: u32) {
        self.push(SendRequest::send_with_imm(wr_id, sges, imm))
    }

    /// SEND `data`, copied into the send queue by this call (at most the queue pair's
    /// `max_inline_data` bytes).
    #[inline(always)]
    pub fn send_inline(self, wr_id: u64, data: &'a [u8]) {
        self.push(SendRequest::send_inline(wr_id, data))
    }

    /// SEND `data` inline with 32 bits of immediate data (host order).
    #[inline(always)]
    pub fn send_imm_inline(self, wr_id: u64, data: &'a [u8], imm: u32) {
        self.push(SendRequest::send_inline(wr_id, data).with_imm(imm))
    }

    /// SEND with invalidate of `rkey` at the peer ([`SendRequest::send_with_invalidate`]).
    #[inline(always)]
    pub fn send_with_invalidate(self, wr_id: u64, sges: &'a [Sge], rkey: u32) {
        self.push(SendRequest::send_with_invalidate(wr_id, sges, rkey))
    }

    /// RDMA WRITE `sges` to `remote`.
    #[inline(always)]
    pub fn write(self, wr_id: u64, sges: &'a [Sge], remote: RemoteMemory) {
        self.push(SendRequest::rdma_write(wr_id, sges, remote))
    }

    /// RDMA WRITE with immediate data (host order): the peer gets a completion carrying `imm`.
    #[inline(always)]
    pub fn write_imm(self, wr_id: u64, sges: &'a [Sge], remote: RemoteMemory, imm: u32) {
        self.push(SendRequest::rdma_write_with_imm(wr_id, sges, remote, imm))
    }

    /// RDMA WRITE `data` inline to `remote`.
    #[inline(always)]
    pub fn write_inline(self, wr_id: u64, data: &'a [u8], remote: RemoteMemory) {
        self.push(SendRequest::rdma_write_inline(wr_id, data, remote))
    }

    /// RDMA WRITE `data` inline to `remote`, with immediate data (host order).
    #[inline(always)]
    pub fn write_imm_inline(self, wr_id: u64, data: &'a [u8], remote: RemoteMemory, imm: u32) {
        self.push(SendRequest::rdma_write_inline(wr_id, data, remote).with_write_imm(imm))
    }

    /// RDMA READ from `remote` into `sges`.
    #[inline(always)]
    pub fn read(self, wr_id: u64, sges: &'a [Sge], remote: RemoteMemory) {
        self.push(SendRequest::rdma_read(wr_id, sges, remote))
    }

    /// Atomic compare-and-swap of the 8 bytes at `remote` (8-byte aligned); the original value
    /// lands in `sge` ([`SendRequest::compare_and_swap`]).
    #[inline(always)]
    pub fn atomic_cmp_swap(
        self,
        wr_id: u64,
        sge: &'a [Sge; 1],
        remote: RemoteMemory,
        compare: u64,
        swap: u64,
    ) {
        self.push(SendRequest::compare_and_swap(
            wr_id, sge, remote, compare, swap,
        ))
    }

    /// Atomic fetch-and-add of `add` to the 8 bytes at `remote` (8-byte aligned); the original
    /// value lands in `sge` ([`SendRequest::fetch_and_add`]).
    #[inline(always)]
    pub fn atomic_fetch_add(self, wr_id: u64, sge: &'a [Sge; 1], remote: RemoteMemory, add: u64) {
        self.push(SendRequest::fetch_and_add(wr_id, sge, remote, add))
    }
}

/// Receive requests gathered on a queue pair and posted together by [`RecvBatch::submit`], all or
/// nothing; from [`QueuePair::start_recv`]. Dropped without `submit`, it posts nothing.
#[must_use = "a batch posts nothing until it is submitted"]
pub struct RecvBatch<'qp, 'a> {
    qp: &'qp QueuePair<'qp>,
    requests: Vec<ReceiveRequest<'a>>,
}

impl std::fmt::Debug for RecvBatch<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBatch")
            .field("qp_num", &self.qp.qp_num())
            .field("requests", &self.requests)
            .finish()
    }
}

impl<'qp, 'a> RecvBatch<'qp, 'a> {
    pub(crate) fn new(qp: &'qp QueuePair<'qp>) -> RecvBatch<'qp, 'a> {
        RecvBatch {
            qp,
            requests: Vec::new(),
        }
    }

    /// A receive into the concatenation of `sges`.
    pub fn recv(&mut self, wr_id: u64, sges: &'a [Sge]) {
        self.requests.push(ReceiveRequest::new(wr_id, sges));
    }

    /// How many requests the batch holds.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether the batch holds no request.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Posts the batch's receives, in order, all or nothing: when one is refused (more entries
    /// than the queue takes, not enough room, a queue pair without a receive queue of its own),
    /// none is posted and [`PostFailure::index`] says which. An empty batch posts nothing and
    /// succeeds.
    ///
    /// # Safety
    /// As [`QueuePair::post_receive_list`]: the memory the requests' entries name must stay
    /// allocated and untouched until each request's completion has been polled.
    #[allow(unsafe_code)] // The contract is the API's; see the crate docs.
    pub unsafe fn submit(self) -> Result<(), PostFailure> {
        if self.requests.is_empty() {
            return Ok(());
        }
        // SAFETY: the requests' memory is covered by this function's contract.
        unsafe { self.qp.post_recv_batch(&self.requests) }
    }
}
