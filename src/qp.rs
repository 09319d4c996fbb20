//! Queue pairs: [`QueuePairBuilder`] → [`PreparedQueuePair`] → [`QueuePair`], as in `ibverbs`, plus
//! explicit [`QueuePair::modify`] / [`QueuePair::query`] for those who drive the state machine.

use std::io;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use uverbs_drivers::cmd::QpInit;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::qp_state::{self, mask};
use uverbs_drivers::uapi;
use uverbs_drivers::verbs::Qp;
use uverbs_drivers::wr::{PostError, RecvWr, SendWr};

use crate::attr::GidEntry;
use crate::cq::{CompletionQueue, CqInner};
use crate::ibv::{ibv_access_flags, ibv_qp_state, ibv_qp_type};
use crate::mr::{MemoryRegion, MrRange};
use crate::pd::{PdInner, ProtectionDomain};
use crate::srq::{SharedReceiveQueue, SrqInner};
use crate::wr::{PostFailure, ReceiveRequest, SendRequest};
use crate::Gid;

/// The port `ibverbs` uses for everything.
const PORT_NUM: u8 = 1;

/// A queue pair's kernel object and rings, and what it keeps alive.
#[derive(Debug)]
struct QpInner {
    // Dropped first: the QP is destroyed before its CQs and PD can go.
    imp: Qp,
    _send_cq: Arc<CqInner>,
    _recv_cq: Arc<CqInner>,
    _srq: Option<Arc<SrqInner>>,
    pd: Arc<PdInner>,
    qp_type: u8,
    /// The multicast groups it is attached to: the kernel refuses to destroy it before they are
    /// detached.
    mcast: Mutex<Vec<(Gid, u16)>>,
}

impl Drop for QpInner {
    fn drop(&mut self) {
        let groups = self.mcast.get_mut().unwrap_or_else(|p| p.into_inner());
        for (gid, lid) in groups.drain(..) {
            if let Err(e) =
                self.pd
                    .ctx
                    .ucontext()
                    .detach_mcast(self.imp.handle(), &gid.bytes(), lid)
            {
                uverbs_drivers::report_drop_error("multicast attachment", &e);
            }
        }
    }
}

/// Setters of settings only some transports have, as `ibverbs` has them: each sets the builder's
/// field of the same name where the transport has that setting (the field is `Some`) and is
/// ignored otherwise.
macro_rules! transport_setters {
    ($($(#[$doc:meta])* $name:ident($field:ident: $ty:ty);)+) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self, $field: $ty) -> &mut Self {
                if self.$field.is_some() {
                    self.$field = Some($field);
                }
                self
            }
        )+
    };
}

/// Setters of the capacities asked for at creation ([`QpCaps`], the field of the same name).
macro_rules! capacity_setters {
    ($($(#[$doc:meta])* $name:ident($field:ident);)+) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self, $field: u32) -> &mut Self {
                self.cap.$field = $field;
                self
            }
        )+
    };
}

/// The capacities of a queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QpCaps {
    /// Send work requests that can be outstanding.
    pub max_send_wr: u32,
    /// Receive work requests that can be outstanding.
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send work request.
    pub max_send_sge: u32,
    /// Scatter entries per receive work request.
    pub max_recv_sge: u32,
    /// Bytes a send can carry inline.
    pub max_inline_data: u32,
}

/// Builds a queue pair; from [`ProtectionDomain::create_qp`]. The setters are those of `ibverbs`
/// (which ignore settings that do not apply to the transport), plus capacity and signaling ones.
#[derive(Debug)]
pub struct QueuePairBuilder<'res> {
    pd: Arc<PdInner>,
    gid_table: Vec<GidEntry>,
    lid: u16,
    send: Arc<CqInner>,
    recv: Arc<CqInner>,
    srq: Option<Arc<SrqInner>>,
    qp_type: ibv_qp_type::Type,
    ctx: isize,
    cap: QpCaps,
    sq_sig_all: bool,
    gid_index: Option<u32>,
    access: Option<ibv_access_flags>,
    timeout: Option<u8>,
    retry_count: Option<u8>,
    rnr_retry: Option<u8>,
    min_rnr_timer: Option<u8>,
    max_rd_atomic: Option<u8>,
    max_dest_rd_atomic: Option<u8>,
    path_mtu: Option<u32>,
    rq_psn: Option<u32>,
    sq_psn: u32,
    qkey: Option<u32>,
    _res: PhantomData<&'res ()>,
}

impl<'res> QueuePairBuilder<'res> {
    pub(crate) fn new(
        pd: &ProtectionDomain<'_>,
        send: &CompletionQueue<'_>,
        recv: &CompletionQueue<'_>,
        qp_type: ibv_qp_type::Type,
    ) -> QueuePairBuilder<'res> {
        let rc = qp_type == ibv_qp_type::IBV_QPT_RC;
        let connected = rc || qp_type == ibv_qp_type::IBV_QPT_UC;
        let ctx = pd.ctx.inner();
        let default_mtu = ctx
            .port1
            .as_ref()
            .map(|p| u32::from(u8::from(p.active_mtu())));
        QueuePairBuilder {
            pd: Arc::clone(&pd.inner),
            gid_table: pd.ctx.gid_table().to_vec(),
            lid: ctx.port1.as_ref().map_or(0, |p| p.lid()),
            send: Arc::clone(&send.inner),
            recv: Arc::clone(&recv.inner),
            srq: None,
            qp_type,
            ctx: 0,
            cap: QpCaps {
                max_send_wr: 1,
                max_recv_wr: 1,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            gid_index: None,
            access: connected.then_some(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE),
            min_rnr_timer: rc.then_some(16),
            retry_count: rc.then_some(6),
            rnr_retry: rc.then_some(6),
            timeout: rc.then_some(4),
            max_rd_atomic: rc.then_some(1),
            max_dest_rd_atomic: rc.then_some(1),
            path_mtu: if connected { default_mtu } else { None },
            rq_psn: connected.then_some(0),
            sq_psn: 0,
            qkey: (qp_type == ibv_qp_type::IBV_QPT_UD).then_some(0),
            _res: PhantomData,
        }
    }

    transport_setters! {
        /// Access the remote side has to this QP's memory (RC and UC).
        set_access(access: ibv_access_flags);
        /// The minimum RNR NAK timer (RC).
        set_min_rnr_timer(min_rnr_timer: u8);
        /// The local ACK timeout, `4.096 µs × 2^timeout` (RC).
        set_timeout(timeout: u8);
        /// Transport retries before an error, 0..=7 (RC). Checked by `build`.
        set_retry_count(retry_count: u8);
        /// RNR retries before an error, 0..=7 with 7 meaning forever (RC). Checked by `build`.
        set_rnr_retry(rnr_retry: u8);
        /// Outstanding RDMA reads and atomics this QP may initiate (RC).
        set_max_rd_atomic(max_rd_atomic: u8);
        /// Outstanding RDMA reads and atomics this QP may be the target of (RC).
        set_max_dest_rd_atomic(max_dest_rd_atomic: u8);
        /// The first receive PSN (RC and UC).
        set_rq_psn(rq_psn: u32);
        /// The Q_Key of a UD queue pair (0 by default): it receives only datagrams that carry it, so
        /// its peers need it along with its [`QueuePairEndpoint`]. Ignored for RC and UC.
        set_qkey(qkey: u32);
    }

    capacity_setters! {
        /// Send work requests that can be outstanding.
        set_max_send_wr(max_send_wr);
        /// Receive work requests that can be outstanding.
        set_max_recv_wr(max_recv_wr);
        /// Scatter/gather entries per send work request.
        set_max_send_sge(max_send_sge);
        /// Scatter entries per receive work request.
        set_max_recv_sge(max_recv_sge);
        /// Bytes a send can carry inline.
        set_max_inline_data(max_inline_data);
    }

    /// Lets the remote side RDMA-read and -write (RC and UC).
    pub fn allow_remote_rw(&mut self) -> &mut Self {
        if let Some(a) = self.access {
            self.access = Some(
                a | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                    | ibv_access_flags::IBV_ACCESS_REMOTE_READ,
            );
        }
        self
    }

    /// The local GID table index used for global routing (RoCE needs one). Checked by `build`.
    pub fn set_gid_index(&mut self, gid_index: u32) -> &mut Self {
        self.gid_index = Some(gid_index);
        self
    }

    /// The path MTU as `ibv_mtu` (1 = 256 ... 5 = 4096) (RC and UC). Checked by `build`.
    pub fn set_path_mtu(&mut self, path_mtu: u32) -> &mut Self {
        if self.path_mtu.is_some() || self.access.is_some() {
            self.path_mtu = Some(path_mtu);
        }
        self
    }

    /// The first send PSN (0 by default, as in `ibverbs`).
    pub fn set_sq_psn(&mut self, sq_psn: u32) -> &mut Self {
        self.sq_psn = sq_psn;
        self
    }

    /// The opaque value the kernel reports in this queue pair's async events.
    pub fn set_context(&mut self, ctx: isize) -> &mut Self {
        self.ctx = ctx;
        self
    }

    /// Takes receives from `srq` instead of a receive queue of its own: incoming messages consume
    /// the shared queue's requests, whose completions go to this queue pair's receive completion
    /// queue with its `qp_num`. The queue pair keeps `srq` alive; posting receives to the queue pair
    /// itself is then an error, and the receive capacities are not used. `srq` must be of the same
    /// context (checked by `build`).
    pub fn set_srq(&mut self, srq: &SharedReceiveQueue) -> &mut Self {
        self.srq = Some(Arc::clone(&srq.inner));
        self
    }

    /// Whether every send completes with a completion, signaled or not (`sq_sig_all`).
    pub fn set_sq_sig_all(&mut self, all: bool) -> &mut Self {
        self.sq_sig_all = all;
        self
    }

    fn check(&self) -> Result<(), Error> {
        let bad = |what: String| Error::InvalidArgument {
            verb: Verb::CreateQp,
            what,
        };
        if let Some(i) = self.gid_index {
            // An address vector's `sgid_index` is 8 bits (`ibv_ah_attr`, the kernel's
            // `ib_uverbs_global_route`): a larger index cannot be used to connect.
            if i > u32::from(u8::MAX) {
                return Err(bad(format!(
                    "GID index {i} (an address vector's sgid_index is 8 bits)"
                )));
            }
            if !self
                .gid_table
                .iter()
                .any(|e| e.gid_index == i && e.port_num == u32::from(PORT_NUM))
            {
                return Err(bad(format!(
                    "GID index {i} is not a valid entry of port {PORT_NUM}"
                )));
            }
        }
        if let Some(n) = self.retry_count.filter(|&n| n > 7) {
            return Err(bad(format!("retry count {n} (at most 7)")));
        }
        if let Some(n) = self.rnr_retry.filter(|&n| n > 7) {
            return Err(bad(format!("RNR retry count {n} (at most 7)")));
        }
        if let Some(t) = self.timeout.filter(|&t| t > 31) {
            return Err(bad(format!("timeout {t} (at most 31)")));
        }
        if let Some(m) = self.path_mtu.filter(|m| !(1..=5).contains(m)) {
            return Err(bad(format!("path MTU {m} (ibv_mtu is 1..=5)")));
        }
        for (name, psn) in [
            ("rq_psn", self.rq_psn.unwrap_or(0)),
            ("sq_psn", self.sq_psn),
        ] {
            if psn >= 1 << 24 {
                return Err(bad(format!("{name} {psn:#x} does not fit in 24 bits")));
            }
        }
        let t = self.qp_type;
        if t != ibv_qp_type::IBV_QPT_RC
            && t != ibv_qp_type::IBV_QPT_UC
            && t != ibv_qp_type::IBV_QPT_UD
        {
            return Err(Error::Unsupported {
                verb: Verb::CreateQp,
            });
        }
        Ok(())
    }

    /// Creates the queue pair (in RESET).
    pub fn build(&self) -> io::Result<PreparedQueuePair<'res>> {
        self.check()?;
        let ctx = &self.pd.ctx;
        let mut init = QpInit {
            pd: self.pd.handle(),
            send_cq: self.send.imp.handle(),
            recv_cq: self.recv.imp.handle(),
            qp_type: self.qp_type as u8,
            cap: uapi::ib_uverbs_qp_cap {
                max_send_wr: self.cap.max_send_wr,
                max_recv_wr: self.cap.max_recv_wr,
                max_send_sge: self.cap.max_send_sge,
                max_recv_sge: self.cap.max_recv_sge,
                max_inline_data: self.cap.max_inline_data,
            },
            sq_sig_all: self.sq_sig_all,
            user_handle: self.ctx as u64,
            srq: self.srq.as_ref().map(|srq| srq.imp.handle()),
        };
        // Handles name objects of one device file: a completion queue (or SRQ) of another context
        // has a handle that names an unrelated object of this one, or none.
        for (cq, which) in [(&self.send, "send"), (&self.recv, "receive")] {
            if !Arc::ptr_eq(&cq._ctx, ctx) {
                return Err(Error::InvalidArgument {
                    verb: Verb::CreateQp,
                    what: format!("the {which} completion queue belongs to another context"),
                }
                .into());
            }
        }
        if let Some(srq) = &self.srq {
            if !Arc::ptr_eq(&srq.pd.ctx, ctx) {
                return Err(Error::InvalidArgument {
                    verb: Verb::CreateQp,
                    what: "the shared receive queue belongs to another context".into(),
                }
                .into());
            }
            init.cap.max_recv_wr = 0;
            init.cap.max_recv_sge = 0;
        }
        let srq = self.srq.as_deref().map(|s| &s.imp);
        let imp = Qp::create(&ctx.drv, &init, &self.send.imp, &self.recv.imp, srq)?;
        let gid = self.gid_index.and_then(|i| {
            self.gid_table
                .iter()
                .find(|e| e.gid_index == i && e.port_num == u32::from(PORT_NUM))
                .copied()
        });
        Ok(PreparedQueuePair {
            qp: QueuePair {
                inner: Arc::new(QpInner {
                    imp,
                    _send_cq: Arc::clone(&self.send),
                    _recv_cq: Arc::clone(&self.recv),
                    _srq: self.srq.clone(),
                    pd: Arc::clone(&self.pd),
                    qp_type: self.qp_type as u8,
                    mcast: Mutex::default(),
                }),
                _res: PhantomData,
            },
            lid: self.lid,
            gid,
            access: self.access,
            timeout: self.timeout,
            retry_count: self.retry_count,
            rnr_retry: self.rnr_retry,
            min_rnr_timer: self.min_rnr_timer,
            max_rd_atomic: self.max_rd_atomic,
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            path_mtu: self.path_mtu,
            rq_psn: self.rq_psn,
            sq_psn: self.sq_psn,
            qkey: self.qkey,
        })
    }
}

/// How a peer reaches a queue pair: its number, and the port's LID (InfiniBand) or a GID (RoCE).
/// Exchange it over any channel; it serializes (feature `serde`) as `ibverbs`' does.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct QueuePairEndpoint {
    /// The queue pair number.
    pub num: u32,
    /// The port's LID.
    pub lid: u16,
    /// The GID for global routing.
    pub gid: Option<Gid>,
}

/// A queue pair that exists but is not connected yet: share its [`PreparedQueuePair::endpoint`], then
/// [`PreparedQueuePair::handshake`] with the peer's.
#[derive(Debug)]
pub struct PreparedQueuePair<'res> {
    qp: QueuePair<'res>,
    lid: u16,
    gid: Option<GidEntry>,
    access: Option<ibv_access_flags>,
    min_rnr_timer: Option<u8>,
    timeout: Option<u8>,
    retry_count: Option<u8>,
    rnr_retry: Option<u8>,
    max_rd_atomic: Option<u8>,
    max_dest_rd_atomic: Option<u8>,
    path_mtu: Option<u32>,
    rq_psn: Option<u32>,
    sq_psn: u32,
    qkey: Option<u32>,
}

impl<'res> PreparedQueuePair<'res> {
    /// What the peer needs to connect to this queue pair. For a UD queue pair, what senders need to
    /// reach it: its number and GID (for their address handle), and besides, its Q_Key
    /// ([`QueuePairBuilder::set_qkey`]), which the endpoint does not carry.
    pub fn endpoint(&self) -> QueuePairEndpoint {
        QueuePairEndpoint {
            num: self.qp.qp_num(),
            lid: self.lid,
            gid: self.gid.map(|e| e.gid),
        }
    }

    /// Connects to `remote`: RESET → INIT → RTR → RTS with the builder's settings (port 1, P_Key
    /// index 0; a GRH with hop limit 255 when the remote has a GID). A UD queue pair has no peer:
    /// for it this is [`PreparedQueuePair::activate_ud`], and `remote` is not used.
    pub fn handshake(self, remote: QueuePairEndpoint) -> io::Result<QueuePair<'res>> {
        if self.qkey.is_some() {
            return self.activate_ud();
        }
        let qp = self.qp;
        qp.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
            pkey_index: Some(0),
            port_num: Some(PORT_NUM),
            qp_access_flags: self.access,
            ..QpAttr::default()
        })?;
        let dest = match remote.gid {
            Some(gid) => {
                let sgid_index = self
                    .gid
                    .ok_or_else(|| io::Error::other("gid was set for remote but not local"))?;
                AddressVector {
                    dgid: Some(gid),
                    // `build` refused indices above 255.
                    sgid_index: u8::try_from(sgid_index.gid_index).map_err(|_| {
                        Error::InvalidArgument {
                            verb: Verb::ModifyQp,
                            what: format!("GID index {} (at most 255)", sgid_index.gid_index),
                        }
                    })?,
                    hop_limit: 0xff,
                    dlid: remote.lid,
                    port_num: PORT_NUM,
                    ..AddressVector::default()
                }
            }
            None => AddressVector {
                dlid: remote.lid,
                port_num: PORT_NUM,
                ..AddressVector::default()
            },
        };
        qp.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTR),
            dest_qp_num: Some(remote.num),
            ah_attr: Some(dest),
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            min_rnr_timer: self.min_rnr_timer,
            path_mtu: self.path_mtu,
            rq_psn: self.rq_psn,
            ..QpAttr::default()
        })?;
        qp.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTS),
            sq_psn: Some(self.sq_psn),
            timeout: self.timeout,
            retry_cnt: self.retry_count,
            rnr_retry: self.rnr_retry,
            max_rd_atomic: self.max_rd_atomic,
            ..QpAttr::default()
        })?;
        Ok(qp)
    }

    /// Brings a UD queue pair to RTS: RESET → INIT (port 1, P_Key index 0, the builder's Q_Key) →
    /// RTR → RTS (the builder's send PSN). It then receives the datagrams that carry its Q_Key and
    /// sends to whatever each request names ([`crate::SendRequest::send_ud`]). An RC or UC queue
    /// pair needs its peer ([`PreparedQueuePair::handshake`]): for one this is an
    /// [`Error::InvalidArgument`] and the queue pair stays in RESET.
    pub fn activate_ud(self) -> io::Result<QueuePair<'res>> {
        let Some(qkey) = self.qkey else {
            return Err(Error::InvalidArgument {
                verb: Verb::ModifyQp,
                what: "only a UD queue pair is activated without a peer (use handshake)".into(),
            }
            .into());
        };
        let qp = self.qp;
        qp.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
            pkey_index: Some(0),
            port_num: Some(PORT_NUM),
            qkey: Some(qkey),
            ..QpAttr::default()
        })?;
        qp.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTR),
            ..QpAttr::default()
        })?;
        qp.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTS),
            sq_psn: Some(self.sq_psn),
            ..QpAttr::default()
        })?;
        Ok(qp)
    }

    /// The queue pair itself, still in RESET, for driving the state machine by hand with
    /// [`QueuePair::modify`].
    pub fn into_queue_pair(self) -> QueuePair<'res> {
        self.qp
    }
}

/// An address vector: how packets reach the peer (`ibv_ah_attr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressVector {
    /// The destination GID; `Some` makes the route global (a GRH; RoCE needs it).
    pub dgid: Option<Gid>,
    /// The local GID table index the packets come from.
    pub sgid_index: u8,
    /// The IPv6 hop limit / IPv4 TTL.
    pub hop_limit: u8,
    /// The traffic class.
    pub traffic_class: u8,
    /// The flow label.
    pub flow_label: u32,
    /// The destination LID (InfiniBand).
    pub dlid: u16,
    /// The service level.
    pub sl: u8,
    /// The source path bits.
    pub src_path_bits: u8,
    /// The static rate.
    pub static_rate: u8,
    /// The local port.
    pub port_num: u8,
}

/// Queue pair attributes for [`QueuePair::modify`] (the fields that are `Some` form the attribute
/// mask) and from [`QueuePair::query`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QpAttr {
    /// The state to move to.
    pub qp_state: Option<ibv_qp_state::Type>,
    /// Access the peer has to this QP's memory.
    pub qp_access_flags: Option<ibv_access_flags>,
    /// The P_Key index.
    pub pkey_index: Option<u16>,
    /// The port.
    pub port_num: Option<u8>,
    /// The Q_Key (UD).
    pub qkey: Option<u32>,
    /// The path to the peer.
    pub ah_attr: Option<AddressVector>,
    /// The path MTU (`ibv_mtu`).
    pub path_mtu: Option<u32>,
    /// The local ACK timeout.
    pub timeout: Option<u8>,
    /// Transport retries.
    pub retry_cnt: Option<u8>,
    /// RNR retries (7: forever).
    pub rnr_retry: Option<u8>,
    /// The first receive PSN.
    pub rq_psn: Option<u32>,
    /// The first send PSN.
    pub sq_psn: Option<u32>,
    /// Outstanding reads/atomics initiated.
    pub max_rd_atomic: Option<u8>,
    /// Outstanding reads/atomics as target.
    pub max_dest_rd_atomic: Option<u8>,
    /// The RNR NAK timer.
    pub min_rnr_timer: Option<u8>,
    /// The peer's queue pair number.
    pub dest_qp_num: Option<u32>,
}

impl QpAttr {
    /// The attribute mask (`IBV_QP_*` bits) of the fields that are set.
    pub fn mask(&self) -> u32 {
        let bits = [
            (self.qp_state.is_some(), mask::STATE),
            (self.qp_access_flags.is_some(), mask::ACCESS_FLAGS),
            (self.pkey_index.is_some(), mask::PKEY_INDEX),
            (self.port_num.is_some(), mask::PORT),
            (self.qkey.is_some(), mask::QKEY),
            (self.ah_attr.is_some(), mask::AV),
            (self.path_mtu.is_some(), mask::PATH_MTU),
            (self.timeout.is_some(), mask::TIMEOUT),
            (self.retry_cnt.is_some(), mask::RETRY_CNT),
            (self.rnr_retry.is_some(), mask::RNR_RETRY),
            (self.rq_psn.is_some(), mask::RQ_PSN),
            (self.sq_psn.is_some(), mask::SQ_PSN),
            (self.max_rd_atomic.is_some(), mask::MAX_QP_RD_ATOMIC),
            (self.max_dest_rd_atomic.is_some(), mask::MAX_DEST_RD_ATOMIC),
            (self.min_rnr_timer.is_some(), mask::MIN_RNR_TIMER),
            (self.dest_qp_num.is_some(), mask::DEST_QPN),
        ];
        bits.iter()
            .filter(|(set, _)| *set)
            .fold(0, |m, (_, bit)| m | bit)
    }

    fn to_kernel(self) -> Result<uapi::ib_uverbs_modify_qp, Error> {
        let bad = |what: String| Error::InvalidArgument {
            verb: Verb::ModifyQp,
            what,
        };
        let mut k = uapi::ib_uverbs_modify_qp {
            attr_mask: self.mask(),
            ..Default::default()
        };
        if let Some(s) = self.qp_state {
            k.qp_state = u8::try_from(s)
                .ok()
                .filter(|&s| s <= 6)
                .ok_or_else(|| bad(format!("QP state {s}")))?;
        }
        if let Some(a) = self.qp_access_flags {
            k.qp_access_flags = a.0;
        }
        k.pkey_index = self.pkey_index.unwrap_or(0);
        k.port_num = self.port_num.unwrap_or(0);
        k.qkey = self.qkey.unwrap_or(0);
        if let Some(av) = self.ah_attr {
            let mut d = uapi::ib_uverbs_qp_dest::default();
            if let Some(gid) = av.dgid {
                d.dgid = gid.bytes();
                d.is_global = 1;
                d.sgid_index = av.sgid_index;
                d.hop_limit = av.hop_limit;
                d.traffic_class = av.traffic_class;
                d.flow_label = av.flow_label;
            }
            d.dlid = av.dlid;
            d.sl = av.sl;
            d.src_path_bits = av.src_path_bits;
            d.static_rate = av.static_rate;
            d.port_num = av.port_num;
            k.dest = d;
        }
        if let Some(m) = self.path_mtu {
            k.path_mtu = u8::try_from(m)
                .ok()
                .filter(|m| (1..=5).contains(m))
                .ok_or_else(|| bad(format!("path MTU {m}")))?;
        }
        for (name, v, max) in [
            ("timeout", self.timeout, 31),
            ("retry_cnt", self.retry_cnt, 7),
            ("rnr_retry", self.rnr_retry, 7),
        ] {
            if let Some(v) = v.filter(|&v| v > max) {
                return Err(bad(format!("{name} {v} (at most {max})")));
            }
        }
        for (name, v) in [
            ("rq_psn", self.rq_psn),
            ("sq_psn", self.sq_psn),
            ("dest_qp_num", self.dest_qp_num),
        ] {
            if let Some(v) = v.filter(|&v| v >= 1 << 24) {
                return Err(bad(format!("{name} {v:#x} does not fit in 24 bits")));
            }
        }
        k.timeout = self.timeout.unwrap_or(0);
        k.retry_cnt = self.retry_cnt.unwrap_or(0);
        k.rnr_retry = self.rnr_retry.unwrap_or(0);
        k.rq_psn = self.rq_psn.unwrap_or(0);
        k.sq_psn = self.sq_psn.unwrap_or(0);
        k.max_rd_atomic = self.max_rd_atomic.unwrap_or(0);
        k.max_dest_rd_atomic = self.max_dest_rd_atomic.unwrap_or(0);
        k.min_rnr_timer = self.min_rnr_timer.unwrap_or(0);
        k.dest_qp_num = self.dest_qp_num.unwrap_or(0);
        Ok(k)
    }
}

/// A queue pair: post work requests to it, poll their completions on its completion queues.
///
/// It keeps its completion queues and protection domain alive. `Send + Sync`: posts from several
/// threads are serialised per ring.
#[derive(Debug)]
pub struct QueuePair<'res> {
    inner: Arc<QpInner>,
    _res: PhantomData<&'res ()>,
}

impl<'res> QueuePair<'res> {
    /// The queue pair number.
    pub fn qp_num(&self) -> u32 {
        self.inner.imp.qpn()
    }

    /// The capacities the queue pair really has.
    pub fn caps(&self) -> QpCaps {
        let c = self.inner.imp.cap();
        QpCaps {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    /// The state as of the last successful modify (the device may since have moved it to ERR; use
    /// [`QueuePair::query`] for its word).
    pub fn state(&self) -> ibv_qp_state::Type {
        u32::from(self.inner.imp.state())
    }

    /// Modifies the queue pair: the fields of `attr` that are `Some` are applied. The transition and
    /// the attribute set are checked against the verbs state machine first; an invalid one is an
    /// [`Error::InvalidModify`] and nothing reaches the kernel.
    pub fn modify(&self, attr: &QpAttr) -> io::Result<()> {
        let req = attr.to_kernel()?;
        let from = self.state() as u8;
        let to = if req.attr_mask & mask::STATE != 0 {
            req.qp_state
        } else {
            from
        };
        qp_state::check(self.inner.qp_type, from, to, req.attr_mask).map_err(|refusal| {
            Error::InvalidModify {
                qp_type: self.inner.qp_type,
                refusal,
            }
        })?;
        Ok(self.inner.imp.modify(&req)?)
    }

    /// The queue pair's current attributes, as the kernel reports them.
    pub fn query(&self) -> io::Result<QpAttr> {
        let r = self.inner.imp.query(uapi::IB_QP_LEGACY_ALL)?;
        let d = r.dest;
        let av = AddressVector {
            dgid: (d.is_global != 0).then(|| Gid::from_bytes(d.dgid)),
            sgid_index: d.sgid_index,
            hop_limit: d.hop_limit,
            traffic_class: d.traffic_class,
            flow_label: d.flow_label,
            dlid: d.dlid,
            sl: d.sl,
            src_path_bits: d.src_path_bits,
            static_rate: d.static_rate,
            port_num: d.port_num,
        };
        Ok(QpAttr {
            qp_state: Some(u32::from(r.qp_state)),
            qp_access_flags: Some(ibv_access_flags(r.qp_access_flags)),
            pkey_index: Some(r.pkey_index),
            port_num: Some(r.port_num),
            qkey: Some(r.qkey),
            ah_attr: Some(av),
            path_mtu: Some(u32::from(r.path_mtu)),
            timeout: Some(r.timeout),
            retry_cnt: Some(r.retry_cnt),
            rnr_retry: Some(r.rnr_retry),
            rq_psn: Some(r.rq_psn),
            sq_psn: Some(r.sq_psn),
            max_rd_atomic: Some(r.max_rd_atomic),
            max_dest_rd_atomic: Some(r.max_dest_rd_atomic),
            min_rnr_timer: Some(r.min_rnr_timer),
            dest_qp_num: Some(r.dest_qp_num),
        })
    }

    fn region_sge<T, R: MrRange>(
        &self,
        mr: &MemoryRegion<T>,
        range: R,
        verb: Verb,
    ) -> io::Result<uverbs_drivers::wr::Sge> {
        if !Arc::ptr_eq(mr.pd(), &self.inner.pd) {
            return Err(Error::InvalidArgument {
                verb,
                what: "the memory region belongs to another protection domain".into(),
            }
            .into());
        }
        mr.sge_of(range).ok_or_else(|| {
            Error::InvalidArgument {
                verb,
                what: format!(
                    "the range is not inside the memory region of {} elements",
                    mr.len()
                ),
            }
            .into()
        })
    }

    /// Sends `mr[range]` as one signaled SEND with `wr_id` (as `ibverbs` does). A range outside the
    /// region, a full send queue, a queue pair that is not ready to send: a typed error, and nothing
    /// is posted.
    ///
    /// # Safety
    /// The region must stay alive and `mr[range]` unmodified until the send's completion has been
    /// polled: the device reads it asynchronously.
    #[inline]
    #[allow(unsafe_code)] // The contract is the API's (as in `ibverbs`); see the crate docs.
    pub unsafe fn post_send<T, R: MrRange>(
        &mut self,
        mr: &mut MemoryRegion<T>,
        range: R,
        wr_id: u64,
    ) -> io::Result<()> {
        let sge = self.region_sge(mr, range, Verb::PostSend)?;
        let sges = [sge];
        let wr = SendWr::send(wr_id, &sges);
        // SAFETY: a non-inline SEND, so the call itself reads no buffer; the device reads
        // `mr[range]` later, which this function's own contract covers.
        unsafe { self.inner.imp.post_send(&[wr]) }.map_err(post_error)
    }

    /// Posts `mr[range]` as one receive buffer with `wr_id`. No system call.
    ///
    /// # Safety
    /// The region must stay alive and `mr[range]` must not be accessed until the receive's
    /// completion has been polled: the device writes it asynchronously.
    #[inline]
    #[allow(unsafe_code)] // The contract is the API's (as in `ibverbs`); see the crate docs.
    pub unsafe fn post_receive<T, R: MrRange>(
        &mut self,
        mr: &mut MemoryRegion<T>,
        range: R,
        wr_id: u64,
    ) -> io::Result<()> {
        let sge = self.region_sge(mr, range, Verb::PostRecv)?;
        let sges = [sge];
        let wr = RecvWr { wr_id, sges: &sges };
        // SAFETY: the device writes `mr[range]` later, which this function's own contract covers.
        unsafe { self.inner.imp.post_recv(&[wr]) }.map_err(post_error)
    }
}

impl QueuePair<'_> {
    /// Posts a list of send requests and rings the doorbell once (`ibv_post_send` with a chain).
    /// Checked one by one: the first that is invalid, or finds the queue full, stops the post, and
    /// [`PostFailure::index`] says which; those before it were posted, it and those after were not.
    /// Takes `&self`: posters on several threads are serialised on the send queue.
    ///
    /// # Safety
    /// The memory the requests' entries name must stay allocated, and must not be written (for sends
    /// and RDMA writes) or accessed at all (for RDMA reads and atomics) until each request's
    /// completion has been polled (or, for an unsignaled one, a later request's). Inline data needs
    /// nothing: it is copied during the call.
    #[allow(unsafe_code)] // The contract is the API's; see the crate docs.
    pub unsafe fn post_send_list(&self, requests: &[SendRequest<'_>]) -> Result<(), PostFailure> {
        let (requests, refused) = if self.inner.qp_type == uapi::IB_UVERBS_QPT_UD {
            self.check_datagrams(requests)
        } else {
            (requests, None)
        };
        // A window refusal lies within what the datagram check kept, so it comes first.
        let (requests, window_refused, windows) = self.check_windows(requests);
        let refused = window_refused.or(refused);
        // SAFETY: the requests' memory is covered by this function's contract.
        let result = unsafe { self.inner.imp.post_send(requests) }.map_err(PostFailure::from);
        // Windows bound by the requests that went in now have their new keys.
        if windows {
            let posted = result
                .as_ref()
                .map_or_else(|f| f.index, |()| requests.len());
            for r in &requests[..posted] {
                if let (Some((mw, region)), Some(bind)) = (r.mw, r.wr.bind) {
                    mw.set_bound(bind.new_rkey, region);
                }
            }
        }
        result?;
        refused.map_or(Ok(()), Err)
    }

    /// The requests before the first that binds a memory window of another protection domain
    /// (which the kernel would fail with an error completion), the error for that one, and whether
    /// any of those requests binds a window.
    #[inline]
    fn check_windows<'r, 'a>(
        &self,
        requests: &'r [SendRequest<'a>],
    ) -> (&'r [SendRequest<'a>], Option<PostFailure>, bool) {
        let mut windows = false;
        for (index, r) in requests.iter().enumerate() {
            let Some((mw, _)) = r.mw else { continue };
            windows = true;
            if Arc::ptr_eq(mw.pd_inner(), &self.inner.pd) {
                continue;
            }
            let error = Error::InvalidArgument {
                verb: Verb::PostSend,
                what: "BIND_MW: the window belongs to another protection domain".into(),
            };
            return (
                &requests[..index],
                Some(PostFailure {
                    index,
                    error: error.into(),
                }),
                windows,
            );
        }
        (requests, None, windows)
    }

    /// For a UD queue pair: the requests before the first whose address handle is of another
    /// protection domain or whose datagram exceeds the port's MTU (which the kernel would drop
    /// while reporting success), and the error for that one.
    fn check_datagrams<'r, 'a>(
        &self,
        requests: &'r [SendRequest<'a>],
    ) -> (&'r [SendRequest<'a>], Option<PostFailure>) {
        // The port as the context saw it when opened: the post makes no system call to ask again.
        let port = self.inner.pd.ctx.port1.as_ref();
        let mtu = port.and_then(|p| p.active_mtu().bytes());
        for (index, r) in requests.iter().enumerate() {
            let Some(ah) = r.ah else { continue };
            let what = if !Arc::ptr_eq(ah.pd_inner(), &self.inner.pd) {
                "the address handle belongs to another protection domain".to_string()
            } else if let Some(mtu) = mtu.filter(|&m| r.len() > u64::from(m)) {
                format!("a datagram of {} bytes (the port's MTU is {mtu})", r.len())
            } else {
                continue;
            };
            let error = Error::InvalidArgument {
                verb: Verb::PostSend,
                what,
            };
            return (
                &requests[..index],
                Some(PostFailure {
                    index,
                    error: error.into(),
                }),
            );
        }
        (requests, None)
    }

    /// Attaches this UD queue pair to the multicast group `gid` with multicast LID `lid`
    /// (InfiniBand; 0 on RoCE): it then also receives the datagrams sent to the group (QPN
    /// [`crate::MULTICAST_QPN`], through an address handle whose `dgid` is `gid`) that carry its
    /// Q_Key. A group GID is an IPv6 multicast address (`ff00::/8`) or an IPv4-mapped IPv4 one
    /// (`::ffff:224.0.0.0/100`); for RoCE v2, of the same family as the senders' GIDs. Attaching
    /// twice is one attachment. Dropping the queue pair detaches it from its groups first (the
    /// kernel refuses to destroy an attached queue pair).
    ///
    /// On RoCE (rxe), datagrams to the group travel as IP multicast, and the host's IP stack drops
    /// those of groups it has not joined on the device's interface before the device sees them.
    /// `rdma_cm` joins the group for its users; with verbs alone, join it yourself, for instance
    /// with a UDP socket (`std::net::UdpSocket::join_multicast_v4` with the interface's address, or
    /// `join_multicast_v6` with its index) kept open while the group is in use.
    pub fn attach_mcast(&self, gid: &Gid, lid: u16) -> io::Result<()> {
        self.check_mcast(gid, Verb::AttachMcast)?;
        let drv = self.inner.pd.ctx.ucontext();
        let mut groups = self.inner.mcast.lock().unwrap_or_else(|p| p.into_inner());
        drv.attach_mcast(self.inner.imp.handle(), &gid.bytes(), lid)?;
        if !groups.contains(&(*gid, lid)) {
            groups.push((*gid, lid));
        }
        Ok(())
    }

    /// Detaches this queue pair from the multicast group `gid` ([`QueuePair::attach_mcast`]).
    pub fn detach_mcast(&self, gid: &Gid, lid: u16) -> io::Result<()> {
        self.check_mcast(gid, Verb::DetachMcast)?;
        let drv = self.inner.pd.ctx.ucontext();
        let mut groups = self.inner.mcast.lock().unwrap_or_else(|p| p.into_inner());
        drv.detach_mcast(self.inner.imp.handle(), &gid.bytes(), lid)?;
        groups.retain(|g| *g != (*gid, lid));
        Ok(())
    }

    fn check_mcast(&self, gid: &Gid, verb: Verb) -> Result<(), Error> {
        let what = if self.inner.qp_type != uapi::IB_UVERBS_QPT_UD {
            "only UD queue pairs join multicast groups"
        } else if !is_multicast(gid) {
            "not a multicast GID (ff00::/8, or an IPv4-mapped 224.0.0.0/4)"
        } else {
            return Ok(());
        };
        Err(Error::InvalidArgument {
            verb,
            what: what.into(),
        })
    }

    /// Posts a list of receive requests (no system call). Stops at the first invalid one, as
    /// [`QueuePair::post_send_list`] does.
    ///
    /// # Safety
    /// The memory the requests' entries name must stay allocated and untouched until each request's
    /// completion has been polled: the device writes it.
    #[allow(unsafe_code)] // The contract is the API's; see the crate docs.
    pub unsafe fn post_receive_list(
        &self,
        requests: &[ReceiveRequest<'_>],
    ) -> Result<(), PostFailure> {
        // SAFETY: the requests' memory is covered by this function's contract.
        unsafe { self.inner.imp.post_recv(requests) }.map_err(PostFailure::from)
    }
}

/// Whether `gid` names a multicast group: an IPv6 multicast address, or an IPv4-mapped IPv4 one
/// (the kernel's `rdma_is_multicast_addr`).
fn is_multicast(gid: &Gid) -> bool {
    let g = gid.bytes();
    let ipv4_mapped = g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
    g[0] == 0xff || (ipv4_mapped && g[12] & 0xf0 == 0xe0)
}

fn post_error(e: PostError) -> io::Error {
    e.error.into()
}
