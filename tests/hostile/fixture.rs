//! What every case works with ([`Env`]: a connected RC pair on a fresh CQ and fresh guarded
//! memory), the queue pair settings of the suite ([`rc_builder`]) and the small helpers the cases
//! share: attributes, forged entries, a UD queue pair, the loopback address.
//!
//! The connection itself is the shared fixture's [`handshake`]; [`RcPair`](crate::common::verbs::RcPair)
//! does not fit here, as the cases need the builder itself (to see it refuse) and `RcPair` builds
//! and unwraps.

use std::io;
use std::time::Duration;

use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_qp_type, ibv_wc, AddressVector, CompletionQueue, Context,
    ProtectionDomain, QpAttr, QueuePair, QueuePairBuilder, ReceiveRequest, SendRequest, Sge,
};

use crate::case::Outcome;
use crate::common::verbs::{handshake, wait_for, GID_INDEX};
use crate::guarded::Mems;

/// What a case works with: a connected RC pair `a` → `b` in `pd` on a fresh CQ, with every
/// remote access allowed on the queue pairs (the regions decide), and fresh guarded memory.
pub struct Env<'a> {
    pub ctx: &'a Context,
    pub pd: &'a ProtectionDomain<'a>,
    pub other_pd: &'a ProtectionDomain<'a>,
    pub cq: &'a CompletionQueue<'a>,
    pub a: QueuePair<'a>,
    pub b: QueuePair<'a>,
    pub m: Mems,
    /// The device's backend (for what a case checks beyond its outcome, per backend as the
    /// catalogue's columns are).
    pub driver: uverbs::Driver,
    /// Completions polled while waiting for another.
    pub seen: std::cell::RefCell<Vec<ibv_wc>>,
}

/// An RC queue pair of `pd` completing on `cq` as every case's are: GID index [`GID_INDEX`], 8
/// requests and 2 entries each way, 64 bytes inline, RNR retries for ever, every access.
pub fn rc_builder<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
) -> QueuePairBuilder<'a> {
    let mut b = pd.create_qp(cq, cq, ibv_qp_type::IBV_QPT_RC);
    b.set_gid_index(GID_INDEX)
        .set_max_send_wr(8)
        .set_max_recv_wr(8)
        .set_max_send_sge(2)
        .set_max_recv_sge(2)
        .set_max_inline_data(64)
        .set_rnr_retry(7)
        .set_min_rnr_timer(1)
        .set_access(
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_READ
                | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC,
        );
    b
}

/// Two queue pairs of [`rc_builder`], connected to each other (both in RTS).
pub fn connect<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
) -> (QueuePair<'a>, QueuePair<'a>) {
    handshake(
        rc_builder(pd, cq).build().unwrap(),
        rc_builder(pd, cq).build().unwrap(),
    )
}

impl<'a> Env<'a> {
    /// A case's fixture over the memory `m`: the pair `a` → `b` connected on `cq`.
    pub fn new(
        ctx: &'a Context,
        pd: &'a ProtectionDomain<'a>,
        other_pd: &'a ProtectionDomain<'a>,
        cq: &'a CompletionQueue<'a>,
        m: Mems,
        driver: uverbs::Driver,
    ) -> Env<'a> {
        let (a, b) = connect(pd, cq);
        Env {
            ctx,
            pd,
            other_pd,
            cq,
            a,
            b,
            m,
            driver,
            seen: Default::default(),
        }
    }
}

impl Env<'_> {
    /// Waits for the completion of `wr_id` on the case's CQ (keeping the others it polls).
    pub fn wait(&self, wr_id: u64) -> ibv_wc {
        wait_for(
            self.cq,
            wr_id,
            &mut self.seen.borrow_mut(),
            Duration::from_secs(30),
        )
    }

    /// Posts on `a`, refusal and all.
    pub fn post_a(&self, reqs: &[SendRequest<'_>]) -> Result<(), io::Error> {
        // SAFETY: the requests name the case's guarded regions (or forged entries the device must
        // refuse); the regions outlive the queue pairs, which are destroyed before the regions
        // are read.
        unsafe { self.a.post_send_list(reqs) }.map_err(io::Error::from)
    }

    pub fn recv_b(&self, reqs: &[ReceiveRequest<'_>]) -> Result<(), io::Error> {
        // SAFETY: as in `post_a`.
        unsafe { self.b.post_receive_list(reqs) }.map_err(io::Error::from)
    }

    /// Posts one request on `a` and returns its completion, or the refusal.
    pub fn send_one(&self, req: SendRequest<'_>) -> Outcome {
        match self.post_a(&[req]) {
            Ok(()) => Outcome::Completion(self.wait(req.wr_id())),
            Err(e) => Outcome::Refused(e),
        }
    }

    /// A QP of `pd` on the case's CQ, in RESET.
    pub fn reset_qp(&self) -> QueuePair<'_> {
        rc_builder(self.pd, self.cq)
            .build()
            .unwrap()
            .into_queue_pair()
    }

    pub fn loopback_gid(&self) -> uverbs::Gid {
        self.ctx
            .gid_table()
            .iter()
            .find(|g| g.gid_index == GID_INDEX && g.port_num == 1)
            .unwrap()
            .gid
    }
}

/// [`Outcome::Done`] if `r` is `Ok`, else the refusal.
pub fn refused<T, E: Into<io::Error>>(r: Result<T, E>) -> Outcome {
    match r {
        Ok(_) => Outcome::Done,
        Err(e) => Outcome::Refused(e.into()),
    }
}

pub fn modify(qp: &QueuePair<'_>, attr: QpAttr) -> Outcome {
    refused(qp.modify(&attr))
}

pub fn to_state(s: ibv_qp_state::Type) -> QpAttr {
    QpAttr {
        qp_state: Some(s),
        ..QpAttr::default()
    }
}

pub fn init_attr() -> QpAttr {
    QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
        pkey_index: Some(0),
        port_num: Some(1),
        qp_access_flags: Some(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE),
        ..QpAttr::default()
    }
}

/// The RTR attributes towards `remote` on the loopback GID, with source GID index `sgid_index`.
pub fn rtr_attr(gid: uverbs::Gid, remote: u32, sgid_index: u8) -> QpAttr {
    QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_RTR),
        dest_qp_num: Some(remote),
        ah_attr: Some(AddressVector {
            dgid: Some(gid),
            sgid_index,
            hop_limit: 64,
            port_num: 1,
            ..AddressVector::default()
        }),
        path_mtu: Some(3),
        rq_psn: Some(0),
        max_dest_rd_atomic: Some(1),
        min_rnr_timer: Some(12),
        ..QpAttr::default()
    }
}

/// A scatter/gather entry made by hand, unchecked.
pub fn forged(addr: u64, length: u32, lkey: u32) -> Sge {
    Sge { addr, length, lkey }
}

/// A UD queue pair in RTS on the case's CQ.
pub fn ud_qp<'a>(env: &'a Env<'_>, pd: &'a ProtectionDomain<'_>) -> QueuePair<'a> {
    pd.create_qp(env.cq, env.cq, ibv_qp_type::IBV_QPT_UD)
        .set_gid_index(GID_INDEX)
        .set_qkey(0x1234)
        .set_max_send_wr(4)
        .set_max_recv_wr(4)
        .set_max_inline_data(32)
        .build()
        .unwrap()
        .activate_ud()
        .unwrap()
}

/// The address of the loopback GID, from [`GID_INDEX`] on port 1.
pub fn loopback_av(env: &Env<'_>) -> AddressVector {
    AddressVector {
        dgid: Some(env.loopback_gid()),
        sgid_index: GID_INDEX as u8,
        hop_limit: 64,
        port_num: 1,
        ..AddressVector::default()
    }
}
