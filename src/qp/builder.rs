//! The queue pair builder: the settings of `create_qp`, and the handshake that takes a prepared
//! queue pair from RESET to RTS.

use std::io;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use uverbs_drivers::backend::{CqBackend, SrqBackend};
use uverbs_drivers::cmd::QpInit;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::uapi;
use uverbs_drivers::verbs::Qp;

use crate::attr::GidEntry;
use crate::cq::{CompletionQueue, CqInner};
use crate::ibv::{ibv_access_flags, ibv_qp_state, ibv_qp_type};
use crate::pd::{PdInner, ProtectionDomain};
use crate::srq::{SharedReceiveQueue, SrqInner};
use crate::Gid;

use super::{AddressVector, QpAttr, QpInner, QueuePair, PORT_NUM};

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
