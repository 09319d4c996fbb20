//! Queue pairs: [`QueuePairBuilder`] → [`PreparedQueuePair`] → [`QueuePair`], as in `ibverbs`, plus
//! explicit [`QueuePair::modify`] / [`QueuePair::query`] for those who drive the state machine.
//!
//! `builder` creates them (the builder's settings, the handshake), `attr` holds the attributes a
//! modify sets and a query reads, and this module the queue pair itself: posting, modifying,
//! querying, multicast.

mod attr;
mod builder;

pub use attr::{AddressVector, QpAttr};
pub use builder::{PreparedQueuePair, QpCaps, QueuePairBuilder, QueuePairEndpoint};

use std::io;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use uverbs_drivers::backend::{QpBackend, SendStage};
use uverbs_drivers::cmd;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::qp_state::{self, mask};
use uverbs_drivers::uapi;
use uverbs_drivers::verbs::{Qp, UdAddress};
use uverbs_drivers::wr::{PostError, RecvWr, SendWr};

use crate::batch::{RecvBatch, SendBatch};
use crate::cq::CqInner;
use crate::ibv::{ibv_access_flags, ibv_qp_state};
use crate::mr::{MemoryRegion, MrRange};
use crate::pd::PdInner;
use crate::srq::SrqInner;
use crate::wr::{PostFailure, ReceiveRequest, SendRequest};
use crate::Gid;

/// The port `ibverbs` uses for everything.
const PORT_NUM: u8 = 1;

/// A queue pair's kernel object and rings, and what it keeps alive.
#[derive(Debug)]
pub(crate) struct QpInner {
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
                cmd::detach_mcast(self.pd.ctx.ucontext(), self.imp.handle(), &gid.bytes(), lid)
            {
                uverbs_drivers::report_drop_error("multicast attachment", &e);
            }
        }
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
    /// The shared state, for the connection manager, which drives the queue pair's states.
    pub(crate) fn shared(&self) -> Arc<QpInner> {
        Arc::clone(&self.inner)
    }

    /// A handle on shared state (the queue pair keeps what it uses alive, so the lifetime is only
    /// the API's).
    pub(crate) fn from_shared(inner: Arc<QpInner>) -> QueuePair<'res> {
        QueuePair {
            inner,
            _res: PhantomData,
        }
    }

    /// The queue pair's type (`IB_UVERBS_QPT_*`), for the connection manager, which adopts queue
    /// pairs of its own type only.
    pub(crate) fn qp_type(&self) -> u8 {
        self.inner.qp_type
    }

    /// The node GUID of the queue pair's device (`None` where it cannot be read), for the
    /// connection manager, which adopts queue pairs of its identifier's device only.
    pub(crate) fn node_guid(&self) -> Option<crate::Guid> {
        let guid = self.inner.pd.ctx.drv.info().node_guid().ok()?;
        Some(crate::Guid::from(guid))
    }

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
        unsafe { self.inner.imp.post_send(&[wr], UdAddress::address_handle) }.map_err(post_error)
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

/// The refusal of a datagram that [`QueuePair::datagram_fault`] found at fault (`len` bytes).
#[cold]
fn datagram_error(fault: DatagramFault, len: u64) -> Error {
    let what = match fault {
        DatagramFault::OtherPd => {
            "the address handle belongs to another protection domain".to_string()
        }
        DatagramFault::OverMtu(mtu) => {
            format!("a datagram of {len} bytes (the port's MTU is {mtu})")
        }
    };
    Error::InvalidArgument {
        verb: Verb::PostSend,
        what,
    }
}

/// Why a datagram cannot go (the kernel would drop it while reporting success).
#[derive(Debug, Clone, Copy)]
enum DatagramFault {
    /// Its address handle belongs to another protection domain.
    OtherPd,
    /// It is longer than the port's MTU (the value).
    OverMtu(u32),
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
    #[inline]
    pub unsafe fn post_send_list(&self, requests: &[SendRequest<'_>]) -> Result<(), PostFailure> {
        // The common case, no window bound and (on UD) every datagram fine: straight to the
        // backend. Otherwise the checked path finds the first request that is not, and says why.
        let ud = self.inner.qp_type == uapi::IB_UVERBS_QPT_UD;
        let mtu = if ud { self.datagram_mtu() } else { None };
        let fine =
            |r: &SendRequest<'_>| r.mw.is_none() && (!ud || self.datagram_fault(r, mtu).is_none());
        if requests.iter().all(fine) {
            let qp = &self.inner.imp;
            // SAFETY: the requests' memory is covered by this function's contract.
            return match unsafe { qp.post_send(requests, UdAddress::address_handle) } {
                Ok(()) => Ok(()),
                Err(e) => Err(PostFailure::from(e)),
            };
        }
        // SAFETY: the same contract, passed on.
        unsafe { self.post_send_list_checked(requests) }
    }

    /// Starts a batch of send requests ([`SendBatch`]): each operation is one call, and
    /// [`SendBatch::submit`] posts them all with one doorbell, all or nothing. The queue pair is
    /// borrowed mutably until the batch is submitted or dropped, so no other post on this handle
    /// can come between its requests.
    ///
    /// ```compile_fail
    /// # fn two(qp: &mut uverbs::QueuePair<'_>) {
    /// let first = qp.start_send();
    /// let second = qp.start_send(); // `*qp` is already borrowed by `first`
    /// # let _ = (first, second);
    /// # }
    /// ```
    pub fn start_send<'a>(&mut self) -> SendBatch<'_, 'a> {
        SendBatch::new(self)
    }

    /// Starts a batch of receive requests ([`RecvBatch`]), posted by [`RecvBatch::submit`].
    pub fn start_recv<'a>(&mut self) -> RecvBatch<'_, 'a> {
        RecvBatch::new(self)
    }

    /// Adds a request of a [`SendBatch`] to its stage: checked and written into the send queue,
    /// unpublished (a refusal is kept in the stage). A datagram is checked here first as
    /// [`post_send_list`](QueuePair::post_send_list) checks it.
    #[inline(always)]
    pub(crate) fn stage_send(&self, stage: &mut SendStage, r: &SendRequest<'_>) {
        if r.ah.is_some() && self.inner.qp_type == uapi::IB_UVERBS_QPT_UD {
            if let Some(fault) = self.datagram_fault(r, self.datagram_mtu()) {
                return stage.refuse(datagram_error(fault, r.len()));
            }
        }
        self.inner
            .imp
            .stage_send(stage, &r.wr, UdAddress::address_handle(r))
    }

    /// Posts a [`SendBatch`]'s stage: all or nothing.
    ///
    /// # Safety
    /// As [`QueuePair::post_send_list`], for every request of the stage.
    #[allow(unsafe_code)]
    #[inline(always)]
    pub(crate) unsafe fn submit_sends(&self, stage: &mut SendStage) -> Result<(), PostFailure> {
        // SAFETY: the requests' memory is covered by this function's contract.
        unsafe { self.inner.imp.submit_sends(stage) }.map_err(PostFailure::from)
    }

    /// Takes back a [`SendBatch`]'s stage: nothing of it is posted.
    pub(crate) fn abandon_sends(&self, stage: &mut SendStage) {
        self.inner.imp.abandon_sends(stage)
    }

    /// A [`RecvBatch`]'s post: all or nothing.
    ///
    /// # Safety
    /// As [`QueuePair::post_receive_list`].
    #[allow(unsafe_code)]
    pub(crate) unsafe fn post_recv_batch(
        &self,
        requests: &[ReceiveRequest<'_>],
    ) -> Result<(), PostFailure> {
        // SAFETY: the requests' memory is covered by this function's contract.
        unsafe { self.inner.imp.post_recv_batch(requests) }.map_err(PostFailure::from)
    }

    /// `post_send_list` for datagrams and window binds, which the API checks first.
    ///
    /// # Safety
    /// As [`QueuePair::post_send_list`].
    #[allow(unsafe_code)]
    #[inline(never)]
    unsafe fn post_send_list_checked(
        &self,
        requests: &[SendRequest<'_>],
    ) -> Result<(), PostFailure> {
        let (requests, refused) = if self.inner.qp_type == uapi::IB_UVERBS_QPT_UD {
            self.check_datagrams(requests)
        } else {
            (requests, None)
        };
        // A window refusal lies within what the datagram check kept, so it comes first.
        let (requests, window_refused, windows) = self.check_windows(requests);
        let refused = window_refused.or(refused);
        let qp = &self.inner.imp;
        // SAFETY: the requests' memory is covered by this function's contract.
        let result =
            unsafe { qp.post_send(requests, UdAddress::address_handle) }.map_err(PostFailure::from);
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

    /// What is wrong with datagram `r` (sent through an address handle), given the port's `mtu`
    /// ([`QueuePair::datagram_mtu`]): the check both `post_send_list` paths make.
    #[inline]
    fn datagram_fault(&self, r: &SendRequest<'_>, mtu: Option<u32>) -> Option<DatagramFault> {
        let ah = r.ah?;
        if !Arc::ptr_eq(ah.pd_inner(), &self.inner.pd) {
            Some(DatagramFault::OtherPd)
        } else {
            mtu.filter(|&m| r.len() > u64::from(m))
                .map(DatagramFault::OverMtu)
        }
    }

    /// The largest datagram the port carries: its active MTU as the context saw it when opened
    /// (the post makes no system call to ask again); `None` if unknown.
    #[inline]
    fn datagram_mtu(&self) -> Option<u32> {
        self.inner
            .pd
            .ctx
            .port1
            .as_ref()
            .and_then(|p| p.active_mtu().bytes())
    }

    /// For a UD queue pair: the requests before the first whose address handle is of another
    /// protection domain or whose datagram exceeds the port's MTU (which the kernel would drop
    /// while reporting success), and the error for that one.
    fn check_datagrams<'r, 'a>(
        &self,
        requests: &'r [SendRequest<'a>],
    ) -> (&'r [SendRequest<'a>], Option<PostFailure>) {
        let mtu = self.datagram_mtu();
        for (index, r) in requests.iter().enumerate() {
            let Some(fault) = self.datagram_fault(r, mtu) else {
                continue;
            };
            let error = datagram_error(fault, r.len());
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
        cmd::attach_mcast(drv, self.inner.imp.handle(), &gid.bytes(), lid)?;
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
        cmd::detach_mcast(drv, self.inner.imp.handle(), &gid.bytes(), lid)?;
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
