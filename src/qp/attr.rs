//! Queue pair attributes: what a modify sets and a query reads ([`QpAttr`]), and the address
//! vector of the path to the peer ([`AddressVector`]).

use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::qp_state::mask;
use uverbs_drivers::uapi;

use crate::ibv::{ibv_access_flags, ibv_qp_state};
use crate::Gid;

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

/// Queue pair attributes for [`QueuePair::modify`](super::QueuePair::modify) (the fields that are `Some` form the attribute
/// mask) and from [`QueuePair::query`](super::QueuePair::query).
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

    pub(super) fn to_kernel(self) -> Result<uapi::ib_uverbs_modify_qp, Error> {
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

impl AddressVector {
    /// The address vector in the kernel's `ib_uverbs_ah_attr` (as connection manager events and
    /// `INIT_QP_ATTR` give it).
    pub(crate) fn from_kernel(a: &uapi::ib_uverbs_ah_attr) -> AddressVector {
        AddressVector {
            dgid: (a.is_global != 0).then(|| Gid::from_bytes(a.grh.dgid)),
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
            flow_label: a.grh.flow_label,
            dlid: a.dlid,
            sl: a.sl,
            src_path_bits: a.src_path_bits,
            static_rate: a.static_rate,
            port_num: a.port_num,
        }
    }
}

impl QpAttr {
    /// The attributes of the kernel's answer to the connection manager's `INIT_QP_ATTR`: the fields
    /// its `qp_attr_mask` names.
    pub(crate) fn from_kernel(a: &uapi::ib_uverbs_qp_attr) -> QpAttr {
        let m = a.qp_attr_mask;
        let has = |bit: u32| m & bit != 0;
        QpAttr {
            qp_state: has(mask::STATE).then_some(a.qp_state),
            qp_access_flags: has(mask::ACCESS_FLAGS).then_some(ibv_access_flags(a.qp_access_flags)),
            pkey_index: has(mask::PKEY_INDEX).then_some(a.pkey_index),
            port_num: has(mask::PORT).then_some(a.port_num),
            qkey: has(mask::QKEY).then_some(a.qkey),
            ah_attr: has(mask::AV).then(|| AddressVector::from_kernel(&a.ah_attr)),
            path_mtu: has(mask::PATH_MTU).then_some(a.path_mtu),
            timeout: has(mask::TIMEOUT).then_some(a.timeout),
            retry_cnt: has(mask::RETRY_CNT).then_some(a.retry_cnt),
            rnr_retry: has(mask::RNR_RETRY).then_some(a.rnr_retry),
            rq_psn: has(mask::RQ_PSN).then_some(a.rq_psn),
            sq_psn: has(mask::SQ_PSN).then_some(a.sq_psn),
            max_rd_atomic: has(mask::MAX_QP_RD_ATOMIC).then_some(a.max_rd_atomic),
            max_dest_rd_atomic: has(mask::MAX_DEST_RD_ATOMIC).then_some(a.max_dest_rd_atomic),
            min_rnr_timer: has(mask::MIN_RNR_TIMER).then_some(a.min_rnr_timer),
            dest_qp_num: has(mask::DEST_QPN).then_some(a.dest_qp_num),
        }
    }
}
