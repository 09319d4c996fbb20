//! Queue pairs of the `next` API: the builder, the handshake, posting, and batches
//! ([`PostBatch`], [`PostOp`]) on uverbs' staged send path.

use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::sync::Arc;

use uverbs_drivers::backend::SendStage;
use uverbs_drivers::error::{Error as DriverError, Verb};
use uverbs_drivers::wr::send_flags;

use super::cq::CompletionQueue;
use super::device::PortAttr;
use super::error::{Error, Result};
use super::ffi;
use super::pd::{
    sges, AddressHandle, AddressHandleAttribute, LocalMemorySlice, ProtectionDomain, RecvRequest,
    SharedReceiveQueue,
};
use super::values::{QueuePairEndpoint, RemoteMemorySlice};
use crate::{QpAttr, RemoteMemory, SendRequest, Sge};

/// Builds a queue pair; from [`ProtectionDomain::create_qp`]. Settings that do not apply to the
/// queue pair's transport are ignored, as in `ibverbs`.
pub struct QueuePairBuilder {
    pd: ProtectionDomain,
    b: crate::QueuePairBuilder<'static>,
    qp_type: ffi::ibv_qp_type,
    port_num: u8,
    lid: u16,
    service_level: u8,
    traffic_class: u8,
    gid_index: Option<u32>,
    access: Option<ffi::ibv_access_flags>,
    min_rnr_timer: Option<u8>,
    timeout: Option<u8>,
    retry_count: Option<u8>,
    rnr_retry: Option<u8>,
    max_rd_atomic: Option<u8>,
    max_dest_rd_atomic: Option<u8>,
    path_mtu: Option<ffi::ibv_mtu>,
    rq_psn: Option<u32>,
}

impl fmt::Debug for QueuePairBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueuePairBuilder")
            .field("qp_type", &self.qp_type)
            .field("gid_index", &self.gid_index)
            .finish_non_exhaustive()
    }
}

impl QueuePairBuilder {
    pub(crate) fn new(
        pd: &ProtectionDomain,
        send: &CompletionQueue,
        recv: &CompletionQueue,
        qp_type: ffi::ibv_qp_type,
        port: PortAttr,
    ) -> QueuePairBuilder {
        let rc = qp_type == ffi::ibv_qp_type::IBV_QPT_RC;
        let connected = rc || qp_type == ffi::ibv_qp_type::IBV_QPT_UC;
        let b =
            crate::QueuePairBuilder::new(&pd.pd(), &send.inner.cq, &recv.inner.cq, qp_type as u32);
        QueuePairBuilder {
            pd: pd.clone(),
            b,
            qp_type,
            port_num: super::device::PORT_NUM,
            lid: port.lid,
            service_level: 0,
            traffic_class: 0,
            gid_index: None,
            access: connected.then_some(ffi::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE),
            min_rnr_timer: rc.then_some(16),
            timeout: rc.then_some(4),
            retry_count: rc.then_some(6),
            rnr_retry: rc.then_some(6),
            max_rd_atomic: rc.then_some(1),
            max_dest_rd_atomic: rc.then_some(1),
            path_mtu: connected.then_some(port.active_mtu()),
            rq_psn: connected.then_some(0),
        }
    }

    /// Lets the peer RDMA-read and -write (RC and UC).
    pub fn allow_remote_rw(&mut self) -> &mut Self {
        if let Some(a) = self.access {
            self.access = Some(
                a | ffi::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                    | ffi::ibv_access_flags::IBV_ACCESS_REMOTE_READ,
            );
        }
        self
    }

    /// The service level of the path to the peer (0 by default).
    pub fn set_service_level(&mut self, service_level: u8) -> &mut Self {
        self.service_level = service_level;
        self
    }

    /// The local GID table index the queue pair routes from (RoCE needs one).
    pub fn set_gid_index(&mut self, gid_index: u32) -> &mut Self {
        self.gid_index = Some(gid_index);
        self.b.set_gid_index(gid_index);
        self
    }

    /// The traffic class of a global route (0 by default).
    pub fn set_traffic_class(&mut self, traffic_class: u8) -> &mut Self {
        self.traffic_class = traffic_class;
        self
    }

    /// Transport retries (RC; 6 by default).
    ///
    /// # Panics
    /// As in `ibverbs`, on an RC queue pair when `count` is above 7.
    pub fn set_retry_count(&mut self, count: u8) -> &mut Self {
        if self.retry_count.is_some() {
            assert!(count <= 7, "a retry count of {count} (at most 7)");
            self.retry_count = Some(count);
        }
        self
    }

    /// RNR retries, 7 meaning for ever (RC; 6 by default).
    ///
    /// # Panics
    /// As in `ibverbs`, on an RC queue pair when `n` is above 7.
    pub fn set_rnr_retry(&mut self, n: u8) -> &mut Self {
        if self.rnr_retry.is_some() {
            assert!(n <= 7, "an RNR retry count of {n} (at most 7)");
            self.rnr_retry = Some(n);
        }
        self
    }

    /// Takes receives from `srq` instead of a receive queue of its own.
    pub fn set_srq(&mut self, srq: &SharedReceiveQueue) -> &mut Self {
        self.b.set_srq(&srq.srq());
        self
    }

    /// Creates the queue pair (in RESET).
    pub fn build(&self) -> Result<PreparedQueuePair> {
        let prepared = self
            .b
            .build()
            .map_err(|e| Error::from_uverbs(e, Error::CreateQueuePair))?;
        Ok(PreparedQueuePair {
            qp: QueuePair {
                qp: prepared.into_queue_pair(),
                _pd: self.pd.clone(),
            },
            lid: self.lid,
            port_num: self.port_num,
            service_level: self.service_level,
            traffic_class: self.traffic_class,
            gid_index: self.gid_index,
            access: self.access,
            min_rnr_timer: self.min_rnr_timer,
            timeout: self.timeout,
            retry_count: self.retry_count,
            rnr_retry: self.rnr_retry,
            max_rd_atomic: self.max_rd_atomic,
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            path_mtu: self.path_mtu,
            rq_psn: self.rq_psn,
        })
    }
}

/// Setters of settings only some transports have: each sets its field where the transport has
/// it (the field is `Some`) and is ignored otherwise, as in `ibverbs`.
macro_rules! transport_setters {
    ($($(#[$doc:meta])* $name:ident($field:ident: $ty:ty);)+) => {
        impl QueuePairBuilder {
            $(
                $(#[$doc])*
                pub fn $name(&mut self, $field: $ty) -> &mut Self {
                    if self.$field.is_some() {
                        self.$field = Some($field);
                    }
                    self
                }
            )+
        }
    };
}

transport_setters! {
    /// What the peer may do to this queue pair's memory (RC and UC; local write by default).
    set_access(access: ffi::ibv_access_flags);
    /// The RNR NAK timer (RC; 16 by default).
    set_min_rnr_timer(min_rnr_timer: u8);
    /// The local ACK timeout, `4.096 µs × 2^timeout` (RC; 4 by default).
    set_timeout(timeout: u8);
    /// Outstanding RDMA reads and atomics this queue pair may start (RC; 1 by default).
    set_max_rd_atomic(max_rd_atomic: u8);
    /// Outstanding RDMA reads and atomics it may be the target of (RC; 1 by default).
    set_max_dest_rd_atomic(max_dest_rd_atomic: u8);
    /// The path MTU (RC and UC; the port's active MTU by default).
    set_path_mtu(path_mtu: ffi::ibv_mtu);
    /// The first receive PSN (RC and UC; 0 by default).
    set_rq_psn(rq_psn: u32);
}

/// Setters uverbs' own builder holds (capacities, the async events' context).
macro_rules! forwarded_setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty);)+) => {
        impl QueuePairBuilder {
            $(
                $(#[$doc])*
                pub fn $name(&mut self, $arg: $ty) -> &mut Self {
                    self.b.$name($arg);
                    self
                }
            )+
        }
    };
}

forwarded_setters! {
    /// The value the queue pair's async events carry.
    set_context(ctx: isize);
    /// Send requests that can be outstanding (1 by default).
    set_max_send_wr(max_send_wr: u32);
    /// Gather entries per send request (1 by default).
    set_max_send_sge(max_send_sge: u32);
    /// Receive requests that can be outstanding (1 by default).
    set_max_recv_wr(max_recv_wr: u32);
    /// Scatter entries per receive request (1 by default).
    set_max_recv_sge(max_recv_sge: u32);
    /// Bytes a send can carry inline (0 by default).
    set_max_inline_data(max_inline_data: u32);
}

/// A queue pair that exists but is not connected yet: give the peer its
/// [`endpoint`](PreparedQueuePair::endpoint), then [`handshake`](PreparedQueuePair::handshake)
/// with the peer's (or [`activate_ud`](PreparedQueuePair::activate_ud)).
pub struct PreparedQueuePair {
    qp: QueuePair,
    lid: u16,
    port_num: u8,
    service_level: u8,
    traffic_class: u8,
    gid_index: Option<u32>,
    access: Option<ffi::ibv_access_flags>,
    min_rnr_timer: Option<u8>,
    timeout: Option<u8>,
    retry_count: Option<u8>,
    rnr_retry: Option<u8>,
    max_rd_atomic: Option<u8>,
    max_dest_rd_atomic: Option<u8>,
    path_mtu: Option<ffi::ibv_mtu>,
    rq_psn: Option<u32>,
}

impl fmt::Debug for PreparedQueuePair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedQueuePair")
            .field("qp_num", &self.qp.qp_num())
            .finish_non_exhaustive()
    }
}

fn modify_error(e: io::Error) -> Error {
    Error::from_uverbs(e, Error::ModifyQueuePair)
}

impl PreparedQueuePair {
    /// The queue pair, still in RESET, for bringing up by hand ([`QueuePair::modify`]).
    pub fn into_queue_pair(self) -> QueuePair {
        self.qp
    }

    /// What the peer needs to connect: the queue pair's number, the port's LID, and the GID at
    /// the builder's GID index (if it set one).
    pub fn endpoint(&self) -> Result<QueuePairEndpoint> {
        let gid = match self.gid_index {
            Some(i) => Some(self.qp._pd.inner.ctx.query_gid(self.port_num, i)?),
            None => None,
        };
        Ok(QueuePairEndpoint {
            num: self.qp.qp_num(),
            lid: self.lid,
            gid,
        })
    }

    /// Connects to `remote`: RESET → INIT → RTR → RTS with the builder's settings.
    pub fn handshake(self, remote: QueuePairEndpoint) -> Result<QueuePair> {
        let qp = &self.qp.qp;
        qp.modify(&QpAttr {
            qp_state: Some(crate::ibv_qp_state::IBV_QPS_INIT),
            pkey_index: Some(0),
            port_num: Some(self.port_num),
            qp_access_flags: self.access.map(|a| crate::ibv_access_flags(a.0)),
            ..QpAttr::default()
        })
        .map_err(modify_error)?;
        let mut av = crate::AddressVector {
            dlid: remote.lid,
            sl: self.service_level,
            port_num: self.port_num,
            ..crate::AddressVector::default()
        };
        let mut sgid_index = 0;
        if let Some(gid) = remote.gid {
            let index = self.gid_index.ok_or(Error::GidMismatch)?;
            sgid_index = index;
            av.dgid = Some(crate::Gid::from(<[u8; 16]>::from(gid)));
            av.sgid_index = u8::try_from(index).map_err(|_| {
                modify_error(
                    DriverError::InvalidArgument {
                        verb: Verb::ModifyQp,
                        what: format!("GID index {index} (at most 255)"),
                    }
                    .into(),
                )
            })?;
            av.hop_limit = 0xff;
            av.traffic_class = self.traffic_class;
        }
        qp.modify(&QpAttr {
            qp_state: Some(crate::ibv_qp_state::IBV_QPS_RTR),
            dest_qp_num: Some(remote.num),
            ah_attr: Some(av),
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            min_rnr_timer: self.min_rnr_timer,
            path_mtu: self.path_mtu.map(|m| m as u32),
            rq_psn: self.rq_psn,
            ..QpAttr::default()
        })
        .map_err(|e| {
            let unroutable = matches!(e.raw_os_error(), Some(libc::ETIMEDOUT | libc::ENETUNREACH));
            if unroutable && remote.gid.is_some() {
                Error::ModifyQueuePair(io::Error::new(
                    e.kind(),
                    format!(
                        "resolving the route to the remote GID failed ({e}); on RoCE this \
                         usually means the remote GID does not answer on the network of the \
                         local GID at index {sgid_index}, or a firewall drops RoCE (UDP 4791) \
                         traffic"
                    ),
                ))
            } else {
                modify_error(e)
            }
        })?;
        qp.modify(&QpAttr {
            qp_state: Some(crate::ibv_qp_state::IBV_QPS_RTS),
            sq_psn: Some(0),
            timeout: self.timeout,
            retry_cnt: self.retry_count,
            rnr_retry: self.rnr_retry,
            max_rd_atomic: self.max_rd_atomic,
            ..QpAttr::default()
        })
        .map_err(modify_error)?;
        Ok(self.qp)
    }

    /// Brings a UD queue pair to RTS with Q_Key `qkey`: it then receives datagrams that carry
    /// it, and sends to whatever each request names ([`PostBatch::to`]).
    pub fn activate_ud(self, qkey: u32) -> Result<QueuePair> {
        let qp = &self.qp.qp;
        for attr in [
            QpAttr {
                qp_state: Some(crate::ibv_qp_state::IBV_QPS_INIT),
                pkey_index: Some(0),
                port_num: Some(self.port_num),
                qkey: Some(qkey),
                ..QpAttr::default()
            },
            QpAttr {
                qp_state: Some(crate::ibv_qp_state::IBV_QPS_RTR),
                ..QpAttr::default()
            },
            QpAttr {
                qp_state: Some(crate::ibv_qp_state::IBV_QPS_RTS),
                sq_psn: Some(0),
                ..QpAttr::default()
            },
        ] {
            qp.modify(&attr).map_err(modify_error)?;
        }
        Ok(self.qp)
    }
}

/// A queue pair. Dropping it destroys it (a destroy the kernel refuses is reported through
/// uverbs' drop-error hook, never a panic).
#[must_use = "QueuePair is immediately destroyed via drop() unless assigned to a variable"]
pub struct QueuePair {
    pub(crate) qp: crate::QueuePair<'static>,
    _pd: ProtectionDomain,
}

impl fmt::Debug for QueuePair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueuePair")
            .field("qp_num", &self.qp_num())
            .finish_non_exhaustive()
    }
}

impl QueuePair {
    /// The queue pair's number.
    pub fn qp_num(&self) -> u32 {
        self.qp.qp_num()
    }

    /// Modifies the queue pair with the attributes `attr` sets. A transition the verbs' state
    /// machine does not have is [`Error::InvalidQueuePairTransition`], attributes it does not
    /// take there or lacks [`Error::InvalidQueuePairAttributeMask`], both found before the kernel
    /// sees the request; the kernel's own refusals are [`Error::ModifyQueuePair`].
    pub fn modify(&mut self, attr: &QueuePairAttribute) -> Result<()> {
        let current = self.qp.state();
        self.qp
            .modify(&attr.attr)
            .map_err(|e| refused_modify(&e, current, &attr.attr).unwrap_or_else(|| modify_error(e)))
    }

    /// The queue pair's attributes and capacities, as the kernel reports them (`mask` is
    /// accepted for `ibverbs`' signature; uverbs always reads them all).
    pub fn query(
        &self,
        mask: ffi::ibv_qp_attr_mask,
    ) -> Result<(QueuePairAttribute, QueuePairInitAttribute)> {
        let _ = mask;
        let attr = self
            .qp
            .query()
            .map_err(|e| Error::from_uverbs(e, Error::QueryQueuePair))?;
        Ok((
            QueuePairAttribute {
                attr,
                cur_state: None,
            },
            QueuePairInitAttribute {
                caps: self.qp.caps(),
            },
        ))
    }

    /// Posts a signaled SEND of `local` with `wr_id`.
    ///
    /// # Safety
    /// The memory `local` names must stay allocated and unmodified until the send's completion has
    /// been polled.
    #[allow(unsafe_code)] // The contract is the API's.
    #[inline]
    pub unsafe fn post_send(&mut self, local: &[LocalMemorySlice], wr_id: u64) -> Result<()> {
        let mut batch = self.start_send();
        batch.signaled().send(wr_id, local);
        // SAFETY: this function's contract.
        unsafe { batch.submit() }
    }

    /// Posts a signaled UD SEND of `local` to `remote_qpn` at `ah` with Q_Key `remote_qkey`.
    ///
    /// # Safety
    /// As [`post_send`](QueuePair::post_send); `ah` must also stay alive until the completion.
    #[allow(unsafe_code)] // The contract is the API's.
    #[inline]
    pub unsafe fn post_send_ud(
        &mut self,
        local: &[LocalMemorySlice],
        ah: &AddressHandle,
        remote_qpn: u32,
        remote_qkey: u32,
        wr_id: u64,
    ) -> Result<()> {
        let mut batch = self.start_send();
        batch
            .signaled()
            .to(ah, remote_qpn, remote_qkey)
            .send(wr_id, local);
        // SAFETY: this function's contract.
        unsafe { batch.submit() }
    }

    /// Posts a receive into `local` with `wr_id`.
    ///
    /// # Safety
    /// The memory `local` names must stay allocated and untouched until the receive's completion
    /// has been polled: the device writes it.
    #[allow(unsafe_code)] // The contract is the API's.
    #[inline]
    pub unsafe fn post_receive(&mut self, local: &[LocalMemorySlice], wr_id: u64) -> Result<()> {
        // SAFETY: this function's contract.
        unsafe { self.post_recv([RecvRequest::new(wr_id, local)]) }
    }

    /// Posts receives, in order; an empty list posts nothing. All or nothing: when one is refused
    /// (too many entries, no room), none is posted.
    ///
    /// # Safety
    /// As [`post_receive`](QueuePair::post_receive), for every request.
    #[allow(unsafe_code)] // The contract is the API's.
    pub unsafe fn post_recv<'a>(&mut self, mut recvs: impl AsMut<[RecvRequest<'a>]>) -> Result<()> {
        let recvs = recvs.as_mut();
        if recvs.is_empty() {
            return Ok(());
        }
        let posted = match recvs {
            // SAFETY: this function's contract.
            [one] => unsafe { self.qp.post_recv_batch(&[one.r]) },
            many => {
                let requests: Vec<crate::ReceiveRequest<'_>> = many.iter().map(|r| r.r).collect();
                // SAFETY: this function's contract.
                unsafe { self.qp.post_recv_batch(&requests) }
            }
        };
        posted.map_err(|f| Error::from_uverbs(f.into(), Error::PostReceive))
    }

    /// Posts a signaled RDMA WRITE of `local` to `remote` (with immediate data, host order, when
    /// `imm_data` is `Some`).
    ///
    /// # Safety
    /// As [`post_send`](QueuePair::post_send).
    #[allow(unsafe_code)] // The contract is the API's.
    #[inline]
    pub unsafe fn post_write(
        &mut self,
        local: &[LocalMemorySlice],
        remote: RemoteMemorySlice,
        wr_id: u64,
        imm_data: Option<u32>,
    ) -> Result<()> {
        let mut batch = self.start_send();
        match imm_data {
            Some(imm) => batch.signaled().write_imm(wr_id, local, remote, imm),
            None => batch.signaled().write(wr_id, local, remote),
        }
        // SAFETY: this function's contract.
        unsafe { batch.submit() }
    }

    /// Posts a signaled RDMA READ of `remote` into `local`.
    ///
    /// # Safety
    /// As [`post_receive`](QueuePair::post_receive): the device writes `local`.
    #[allow(unsafe_code)] // The contract is the API's.
    #[inline]
    pub unsafe fn post_read(
        &mut self,
        local: &[LocalMemorySlice],
        remote: RemoteMemorySlice,
        wr_id: u64,
    ) -> Result<()> {
        let mut batch = self.start_send();
        batch.signaled().read(wr_id, local, remote);
        // SAFETY: this function's contract.
        unsafe { batch.submit() }
    }

    /// Starts a batch of send requests, posted together by [`PostBatch::submit`] with one
    /// doorbell.
    #[inline(always)]
    pub fn start_send(&mut self) -> PostBatch<'_> {
        PostBatch {
            qp: &self.qp,
            stage: SendStage::new(),
            _not_send: PhantomData,
        }
    }
}

/// The refusal of uverbs' state machine check as `ibverbs`' errors: a transition the verbs do not
/// have, or attributes the transition does not take (`invalid`) or needs (`needed`).
fn refused_modify(e: &io::Error, current: u32, attr: &QpAttr) -> Option<Error> {
    use uverbs_drivers::qp_state::Refusal;
    let DriverError::InvalidModify { refusal, .. } = e.get_ref()?.downcast_ref::<DriverError>()?
    else {
        return None;
    };
    let state =
        |s: u32| ffi::ibv_qp_state::from_raw(s).unwrap_or(ffi::ibv_qp_state::IBV_QPS_UNKNOWN);
    let (current, next) = (state(current), state(attr.qp_state.unwrap_or(current)));
    Some(match *refusal {
        Refusal::Transition { .. } => Error::InvalidQueuePairTransition { current, next },
        Refusal::Missing(needed) => Error::InvalidQueuePairAttributeMask {
            current,
            next,
            invalid: ffi::ibv_qp_attr_mask(0),
            needed: ffi::ibv_qp_attr_mask(needed),
        },
        Refusal::Unexpected(invalid) => Error::InvalidQueuePairAttributeMask {
            current,
            next,
            invalid: ffi::ibv_qp_attr_mask(invalid),
            needed: ffi::ibv_qp_attr_mask(0),
        },
    })
}

/// Send requests on a queue pair, posted together by [`submit`](PostBatch::submit) with one
/// doorbell; from [`QueuePair::start_send`]. Each request is checked and written into the send
/// queue when it is added (its scatter list and inline data are copied then), unpublished; a
/// batch dropped without `submit` posts nothing. The batch's own methods post unsignaled
/// requests; [`signaled`](PostBatch::signaled), [`fenced`](PostBatch::fenced),
/// [`solicited`](PostBatch::solicited) and [`to`](PostBatch::to) start a [`PostOp`].
///
/// One batch at a time, and one request at a time within it:
///
/// ```compile_fail
/// # use uverbs::next as ibverbs;
/// # fn two_batches(qp: &mut ibverbs::QueuePair) {
/// let first = qp.start_send();
/// let second = qp.start_send(); // `*qp` is already borrowed by `first`
/// let _ = (first, second);
/// # }
/// ```
///
/// ```compile_fail
/// # use uverbs::next as ibverbs;
/// # fn two_requests(qp: &mut ibverbs::QueuePair) {
/// let mut batch = qp.start_send();
/// let first = batch.signaled();
/// let second = batch.signaled(); // `batch` is already borrowed by `first`
/// let _ = (first, second);
/// # }
/// ```
#[must_use = "a started batch must be `.submit()`ed (otherwise it is aborted on drop)"]
pub struct PostBatch<'qp> {
    qp: &'qp crate::QueuePair<'static>,
    stage: SendStage,
    /// As in `ibverbs`, a batch stays on its thread.
    _not_send: PhantomData<*const ()>,
}

impl fmt::Debug for PostBatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostBatch")
            .field("qp_num", &self.qp.qp_num())
            .field("len", &self.stage.len())
            .finish()
    }
}

impl Drop for PostBatch<'_> {
    fn drop(&mut self) {
        if !self.stage.is_done() {
            self.qp.abandon_sends(&mut self.stage);
        }
    }
}

/// A failed `submit` of `len` requests as an error: refused (nothing posted), or every request
/// posted and the doorbell not rung.
#[cold]
fn posted_or_refused(f: crate::PostFailure, len: usize) -> Error {
    if len > 0 && f.index == len {
        let kind = f.error.kind();
        return Error::PostSend(io::Error::new(
            kind,
            format!(
                "every request of the batch was posted (their memory is the device's until they \
                 complete), but the doorbell could not be rung: {}",
                f.error
            ),
        ));
    }
    Error::from_uverbs(f.into(), Error::PostSend)
}

/// The flags a [`PostOp`] sets.
const OP_FLAGS: u32 = send_flags::SIGNALED | send_flags::FENCE | send_flags::SOLICITED;

/// A remote slice as uverbs' remote memory.
#[inline(always)]
fn remote_memory(r: RemoteMemorySlice) -> RemoteMemory {
    RemoteMemory {
        addr: r.addr,
        rkey: r.rkey,
        len: r.len as u64,
    }
}

impl<'qp> PostBatch<'qp> {
    #[inline(always)]
    fn op(&mut self, flags: u32) -> PostOp<'_, 'qp> {
        PostOp {
            batch: self,
            flags,
            dest: None,
        }
    }

    /// The next request produces a completion (`IBV_SEND_SIGNALED`).
    #[inline(always)]
    pub fn signaled(&mut self) -> PostOp<'_, 'qp> {
        self.op(send_flags::SIGNALED)
    }

    /// The next request waits for this queue pair's earlier RDMA reads and atomics
    /// (`IBV_SEND_FENCE`).
    #[inline(always)]
    pub fn fenced(&mut self) -> PostOp<'_, 'qp> {
        self.op(send_flags::FENCE)
    }

    /// The next request is solicited (`IBV_SEND_SOLICITED`).
    #[inline(always)]
    pub fn solicited(&mut self) -> PostOp<'_, 'qp> {
        self.op(send_flags::SOLICITED)
    }

    /// The next request is a datagram (UD) to `remote_qpn` at `ah` with Q_Key `remote_qkey`.
    #[inline(always)]
    pub fn to(&mut self, ah: &AddressHandle, remote_qpn: u32, remote_qkey: u32) -> PostOp<'_, 'qp> {
        let mut op = self.op(0);
        op.dest = Some((Arc::clone(&ah.ah), remote_qpn, remote_qkey));
        op
    }

    /// An unsignaled SEND of `local`.
    #[inline(always)]
    pub fn send(&mut self, wr_id: u64, local: &[LocalMemorySlice]) {
        self.op(0).send(wr_id, local)
    }

    /// An unsignaled SEND with immediate data (host order).
    #[inline(always)]
    pub fn send_imm(&mut self, wr_id: u64, local: &[LocalMemorySlice], imm: u32) {
        self.op(0).send_imm(wr_id, local, imm)
    }

    /// An unsignaled RDMA WRITE of `local` to `remote`.
    #[inline(always)]
    pub fn write(&mut self, wr_id: u64, local: &[LocalMemorySlice], remote: RemoteMemorySlice) {
        self.op(0).write(wr_id, local, remote)
    }

    /// An unsignaled RDMA WRITE with immediate data (host order).
    #[inline(always)]
    pub fn write_imm(
        &mut self,
        wr_id: u64,
        local: &[LocalMemorySlice],
        remote: RemoteMemorySlice,
        imm: u32,
    ) {
        self.op(0).write_imm(wr_id, local, remote, imm)
    }

    /// An unsignaled SEND of `data`, copied now.
    #[inline(always)]
    pub fn send_inline(&mut self, wr_id: u64, data: &[u8]) {
        self.op(0).send_inline(wr_id, data)
    }

    /// An unsignaled SEND of `data` inline with immediate data (host order).
    #[inline(always)]
    pub fn send_imm_inline(&mut self, wr_id: u64, data: &[u8], imm: u32) {
        self.op(0).send_imm_inline(wr_id, data, imm)
    }

    /// An unsignaled RDMA WRITE of `data`, copied now, to `remote`.
    #[inline(always)]
    pub fn write_inline(&mut self, wr_id: u64, data: &[u8], remote: RemoteMemorySlice) {
        self.op(0).write_inline(wr_id, data, remote)
    }

    /// An unsignaled RDMA WRITE of `data` inline with immediate data (host order).
    #[inline(always)]
    pub fn write_imm_inline(
        &mut self,
        wr_id: u64,
        data: &[u8],
        remote: RemoteMemorySlice,
        imm: u32,
    ) {
        self.op(0).write_imm_inline(wr_id, data, remote, imm)
    }

    /// An unsignaled RDMA READ of `remote` into `local`.
    #[inline(always)]
    pub fn read(&mut self, wr_id: u64, local: &[LocalMemorySlice], remote: RemoteMemorySlice) {
        self.op(0).read(wr_id, local, remote)
    }

    /// An unsignaled atomic compare-and-swap ([`PostOp::atomic_cmp_swap`]).
    #[inline(always)]
    pub fn atomic_cmp_swap(
        &mut self,
        wr_id: u64,
        local: &[LocalMemorySlice],
        remote: RemoteMemorySlice,
        compare: u64,
        swap: u64,
    ) {
        self.op(0)
            .atomic_cmp_swap(wr_id, local, remote, compare, swap)
    }

    /// An unsignaled atomic fetch-and-add ([`PostOp::atomic_fetch_add`]).
    #[inline(always)]
    pub fn atomic_fetch_add(
        &mut self,
        wr_id: u64,
        local: &[LocalMemorySlice],
        remote: RemoteMemorySlice,
        add: u64,
    ) {
        self.op(0).atomic_fetch_add(wr_id, local, remote, add)
    }

    /// Posts the batch's requests, in order, with one doorbell; all or nothing: when a request
    /// was refused (an opcode the transport lacks, too many entries or inline bytes, no room),
    /// none is posted and the error is [`Error::PostSend`] naming it. An empty batch posts
    /// nothing.
    ///
    /// One failure is not a refusal: every request was posted and the doorbell could not be rung
    /// (rxe's `write()` failed, the device gone, say). The error is then [`Error::PostSend`] whose
    /// message begins "every request of the batch was posted", and the requests are the
    /// device's, as after a success.
    ///
    /// # Safety
    /// The memory every request names must stay allocated, and unmodified (sends, writes) or
    /// untouched (reads, atomics), until each request's completion has been polled (for an
    /// unsignaled one, a later request's), also after an error saying that every request was
    /// posted; a datagram's address handle must stay alive as long.
    #[allow(unsafe_code)] // The contract is the API's.
    #[inline(always)]
    pub unsafe fn submit(mut self) -> Result<()> {
        let len = self.stage.len();
        // SAFETY: the requests' memory is covered by this function's contract.
        unsafe { self.qp.submit_sends(&mut self.stage) }.map_err(|f| posted_or_refused(f, len))
    }
}

/// One request of a [`PostBatch`] being configured; its operation (`send`, `write`, ...) adds
/// it.
pub struct PostOp<'b, 'qp> {
    batch: &'b mut PostBatch<'qp>,
    flags: u32,
    /// The destination of a datagram, held until the operation has added the request (which
    /// copies the address vector on mlx5 and names the handle by its kernel number on rxe: the
    /// handle must live until the completion, as `submit`'s contract says).
    dest: Option<(Arc<crate::AddressHandle>, u32, u32)>,
}

impl fmt::Debug for PostOp<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostOp")
            .field("flags", &self.flags)
            .finish_non_exhaustive()
    }
}

impl PostOp<'_, '_> {
    /// Also signaled.
    #[inline(always)]
    pub fn signaled(mut self) -> Self {
        self.flags |= send_flags::SIGNALED;
        self
    }

    /// Also fenced.
    #[inline(always)]
    pub fn fenced(mut self) -> Self {
        self.flags |= send_flags::FENCE;
        self
    }

    /// Also solicited.
    #[inline(always)]
    pub fn solicited(mut self) -> Self {
        self.flags |= send_flags::SOLICITED;
        self
    }

    /// Also a datagram to `remote_qpn` at `ah` with Q_Key `remote_qkey`.
    #[inline(always)]
    pub fn to(mut self, ah: &AddressHandle, remote_qpn: u32, remote_qkey: u32) -> Self {
        self.dest = Some((Arc::clone(&ah.ah), remote_qpn, remote_qkey));
        self
    }

    /// Adds `r` with this op's flags and destination.
    #[inline(always)]
    fn add(self, mut r: SendRequest<'_>) {
        r.wr.flags = (r.wr.flags & !OP_FLAGS) | self.flags;
        let batch = self.batch;
        match &self.dest {
            Some((ah, qpn, qkey)) => {
                let r = r.ud(ah, *qpn, *qkey);
                batch.qp.stage_send(&mut batch.stage, &r);
            }
            None => batch.qp.stage_send(&mut batch.stage, &r),
        }
    }

    /// A SEND of `local`.
    #[inline(always)]
    pub fn send(self, wr_id: u64, local: &[LocalMemorySlice]) {
        self.add(SendRequest::send(wr_id, sges(local)))
    }

    /// A SEND of `data`, copied now (at most the queue pair's `max_inline_data` bytes).
    #[inline(always)]
    pub fn send_inline(self, wr_id: u64, data: &[u8]) {
        self.add(SendRequest::send_inline(wr_id, data))
    }

    /// A SEND of `data` inline with immediate data (host order).
    #[inline(always)]
    pub fn send_imm_inline(self, wr_id: u64, data: &[u8], imm: u32) {
        self.add(SendRequest::send_inline(wr_id, data).with_imm(imm))
    }

    /// An RDMA WRITE of `data`, copied now, to `remote`.
    #[inline(always)]
    pub fn write_inline(self, wr_id: u64, data: &[u8], remote: RemoteMemorySlice) {
        self.add(SendRequest::rdma_write_inline(
            wr_id,
            data,
            remote_memory(remote),
        ))
    }

    /// An RDMA WRITE of `data` inline with immediate data (host order).
    #[inline(always)]
    pub fn write_imm_inline(self, wr_id: u64, data: &[u8], remote: RemoteMemorySlice, imm: u32) {
        self.add(
            SendRequest::rdma_write_inline(wr_id, data, remote_memory(remote)).with_write_imm(imm),
        )
    }

    /// A SEND of the concatenation of `bufs`, copied now.
    #[inline(always)]
    pub fn send_inline_list(mut self, wr_id: u64, bufs: &[io::IoSlice<'_>]) {
        if let Some(data) = self.inline_list(bufs) {
            self.send_inline(wr_id, &data)
        }
    }

    /// A SEND of the concatenation of `bufs` inline with immediate data (host order).
    #[inline(always)]
    pub fn send_imm_inline_list(mut self, wr_id: u64, bufs: &[io::IoSlice<'_>], imm: u32) {
        if let Some(data) = self.inline_list(bufs) {
            self.send_imm_inline(wr_id, &data, imm)
        }
    }

    /// An RDMA WRITE of the concatenation of `bufs`, copied now, to `remote`.
    #[inline(always)]
    pub fn write_inline_list(
        mut self,
        wr_id: u64,
        bufs: &[io::IoSlice<'_>],
        remote: RemoteMemorySlice,
    ) {
        if let Some(data) = self.inline_list(bufs) {
            self.write_inline(wr_id, &data, remote)
        }
    }

    /// An RDMA WRITE of the concatenation of `bufs` inline with immediate data (host order).
    #[inline(always)]
    pub fn write_imm_inline_list(
        mut self,
        wr_id: u64,
        bufs: &[io::IoSlice<'_>],
        remote: RemoteMemorySlice,
        imm: u32,
    ) {
        if let Some(data) = self.inline_list(bufs) {
            self.write_imm_inline(wr_id, &data, remote, imm)
        }
    }

    /// A SEND of `local` with immediate data (host order).
    #[inline(always)]
    pub fn send_imm(self, wr_id: u64, local: &[LocalMemorySlice], imm: u32) {
        self.add(SendRequest::send_with_imm(wr_id, sges(local), imm))
    }

    /// An RDMA WRITE of `local` to `remote`.
    #[inline(always)]
    pub fn write(self, wr_id: u64, local: &[LocalMemorySlice], remote: RemoteMemorySlice) {
        self.add(SendRequest::rdma_write(
            wr_id,
            sges(local),
            remote_memory(remote),
        ))
    }

    /// An RDMA WRITE of `local` to `remote` with immediate data (host order).
    #[inline(always)]
    pub fn write_imm(
        self,
        wr_id: u64,
        local: &[LocalMemorySlice],
        remote: RemoteMemorySlice,
        imm: u32,
    ) {
        self.add(SendRequest::rdma_write_with_imm(
            wr_id,
            sges(local),
            remote_memory(remote),
            imm,
        ))
    }

    /// An RDMA READ of `remote` into `local`.
    #[inline(always)]
    pub fn read(self, wr_id: u64, local: &[LocalMemorySlice], remote: RemoteMemorySlice) {
        self.add(SendRequest::rdma_read(
            wr_id,
            sges(local),
            remote_memory(remote),
        ))
    }

    /// The concatenation of `bufs`, or the refusal of a list longer than the queue pair's inline
    /// room (refused before anything is allocated for it).
    #[cold]
    fn inline_list(&mut self, bufs: &[io::IoSlice<'_>]) -> Option<Vec<u8>> {
        let total = bufs.iter().try_fold(0usize, |t, b| t.checked_add(b.len()));
        let room = self.batch.qp.caps().max_inline_data as usize;
        match total {
            Some(total) if total <= room => Some(gather(bufs, total)),
            _ => {
                if !self.batch.stage.skip_if_refused() {
                    self.batch.stage.refuse(DriverError::InvalidArgument {
                        verb: Verb::PostSend,
                        what: format!(
                            "{} bytes of inline data, the queue pair takes at most {room}",
                            total.map_or_else(|| "more than usize::MAX".into(), |t| t.to_string())
                        ),
                    });
                }
                None
            }
        }
    }

    /// The one entry of an atomic's result, or the refusal of a request with another count.
    #[inline(always)]
    fn atomic_entry<'l>(&mut self, local: &'l [LocalMemorySlice]) -> Option<&'l [Sge; 1]> {
        let entry = <&[Sge; 1]>::try_from(sges(local)).ok();
        if entry.is_none() && !self.batch.stage.skip_if_refused() {
            self.batch.stage.refuse(DriverError::InvalidArgument {
                verb: Verb::PostSend,
                what: format!(
                    "an atomic operation's result goes to exactly one 8-byte entry, not {}",
                    local.len()
                ),
            });
        }
        entry
    }

    /// An atomic compare-and-swap of the 8 bytes at `remote` (8-byte aligned): they become `swap`
    /// if they equal `compare`; the original value lands in `local` (one 8-byte entry).
    #[inline(always)]
    pub fn atomic_cmp_swap(
        mut self,
        wr_id: u64,
        local: &[LocalMemorySlice],
        remote: RemoteMemorySlice,
        compare: u64,
        swap: u64,
    ) {
        if let Some(entry) = self.atomic_entry(local) {
            self.add(SendRequest::compare_and_swap(
                wr_id,
                entry,
                remote_memory(remote),
                compare,
                swap,
            ))
        }
    }

    /// An atomic fetch-and-add of `add` to the 8 bytes at `remote` (8-byte aligned); the original
    /// value lands in `local` (one 8-byte entry).
    #[inline(always)]
    pub fn atomic_fetch_add(
        mut self,
        wr_id: u64,
        local: &[LocalMemorySlice],
        remote: RemoteMemorySlice,
        add: u64,
    ) {
        if let Some(entry) = self.atomic_entry(local) {
            self.add(SendRequest::fetch_and_add(
                wr_id,
                entry,
                remote_memory(remote),
                add,
            ))
        }
    }
}

/// The concatenation of `bufs`, `total` bytes (inline data is copied into the request anyway).
fn gather(bufs: &[io::IoSlice<'_>], total: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(total);
    for b in bufs {
        data.extend_from_slice(b);
    }
    data
}

/// Attributes for [`QueuePair::modify`] (each setter adds its bit to the mask) and from
/// [`QueuePair::query`].
#[derive(Clone, Debug, Default)]
pub struct QueuePairAttribute {
    attr: QpAttr,
    /// The current state a program asserts (`IBV_QP_CUR_STATE`): uverbs knows it, and checks
    /// the transition itself.
    cur_state: Option<ffi::ibv_qp_state>,
}

impl QueuePairAttribute {
    /// No attribute set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The attributes of uverbs' `attr` (the connection manager's `init_qp_attr`).
    pub(crate) fn from_uverbs(attr: QpAttr) -> Self {
        QueuePairAttribute {
            attr,
            cur_state: None,
        }
    }

    /// The bits of the attributes set (`IBV_QP_*`).
    pub fn mask(&self) -> ffi::ibv_qp_attr_mask {
        let cur = if self.cur_state.is_some() {
            ffi::ibv_qp_attr_mask::IBV_QP_CUR_STATE.0
        } else {
            0
        };
        ffi::ibv_qp_attr_mask(self.attr.mask() | cur)
    }

    /// The state to move to.
    pub fn set_state(&mut self, state: ffi::ibv_qp_state) -> &mut Self {
        self.attr.qp_state = Some(state as u32);
        self
    }

    /// The state the queue pair is in.
    pub fn set_current_state(&mut self, state: ffi::ibv_qp_state) -> &mut Self {
        self.cur_state = Some(state);
        self
    }

    /// What the peer may do to this queue pair's memory.
    pub fn set_access_flags(&mut self, access_flags: ffi::ibv_access_flags) -> &mut Self {
        self.attr.qp_access_flags = Some(crate::ibv_access_flags(access_flags.0));
        self
    }

    /// The path MTU.
    pub fn set_path_mtu(&mut self, path_mtu: ffi::ibv_mtu) -> &mut Self {
        self.attr.path_mtu = Some(path_mtu as u32);
        self
    }

    /// The path to the peer.
    pub fn set_address_vector(&mut self, ah_attr: &AddressHandleAttribute) -> &mut Self {
        self.attr.ah_attr = Some(*ah_attr.av());
        self
    }

    /// The state (of a query, or as set).
    pub fn state(&self) -> ffi::ibv_qp_state {
        self.attr
            .qp_state
            .and_then(ffi::ibv_qp_state::from_raw)
            .unwrap_or(ffi::ibv_qp_state::IBV_QPS_RESET)
    }

    /// What the peer may do to this queue pair's memory.
    pub fn access_flags(&self) -> ffi::ibv_access_flags {
        ffi::ibv_access_flags(self.attr.qp_access_flags.map_or(0, |a| a.0))
    }

    /// The path MTU.
    pub fn path_mtu(&self) -> ffi::ibv_mtu {
        self.attr
            .path_mtu
            .and_then(ffi::ibv_mtu::from_raw)
            .unwrap_or(ffi::ibv_mtu::IBV_MTU_256)
    }
}

/// The setter (which adds the attribute's bit to the mask) and the getter (0 where the attribute
/// is not set) of each plain attribute.
macro_rules! plain_attributes {
    ($($(#[$doc:meta])* $set:ident / $get:ident: $field:ident: $ty:ty;)+) => {
        impl QueuePairAttribute {
            $(
                $(#[$doc])*
                pub fn $set(&mut self, value: $ty) -> &mut Self {
                    self.attr.$field = Some(value);
                    self
                }

                $(#[$doc])*
                pub fn $get(&self) -> $ty {
                    self.attr.$field.unwrap_or(0)
                }
            )+
        }
    };
}

plain_attributes! {
    /// The P_Key index.
    set_pkey_index / pkey_index: pkey_index: u16;
    /// The port.
    set_port / port: port_num: u8;
    /// The peer's queue pair number.
    set_dest_qp_num / dest_qp_num: dest_qp_num: u32;
    /// The first receive PSN.
    set_rq_psn / rq_psn: rq_psn: u32;
    /// The first send PSN.
    set_sq_psn / sq_psn: sq_psn: u32;
    /// Outstanding RDMA reads and atomics this queue pair may start.
    set_max_rd_atomic / max_rd_atomic: max_rd_atomic: u8;
    /// Outstanding RDMA reads and atomics it may be the target of.
    set_max_dest_rd_atomic / max_dest_rd_atomic: max_dest_rd_atomic: u8;
    /// The RNR NAK timer.
    set_min_rnr_timer / min_rnr_timer: min_rnr_timer: u8;
    /// The local ACK timeout.
    set_timeout / timeout: timeout: u8;
    /// Transport retries.
    set_retry_count / retry_count: retry_cnt: u8;
    /// RNR retries (7: for ever).
    set_rnr_retry / rnr_retry: rnr_retry: u8;
    /// The Q_Key (UD).
    set_qkey / qkey: qkey: u32;
}

/// The capacities a queue pair was created with, from [`QueuePair::query`].
#[derive(Debug)]
pub struct QueuePairInitAttribute {
    caps: crate::QpCaps,
}

impl QueuePairInitAttribute {
    /// Send requests that can be outstanding.
    pub fn max_send_wr(&self) -> u32 {
        self.caps.max_send_wr
    }

    /// Receive requests that can be outstanding.
    pub fn max_recv_wr(&self) -> u32 {
        self.caps.max_recv_wr
    }

    /// Gather entries per send request.
    pub fn max_send_sge(&self) -> u32 {
        self.caps.max_send_sge
    }

    /// Scatter entries per receive request.
    pub fn max_recv_sge(&self) -> u32 {
        self.caps.max_recv_sge
    }

    /// Bytes a send can carry inline.
    pub fn max_inline_data(&self) -> u32 {
        self.caps.max_inline_data
    }
}
