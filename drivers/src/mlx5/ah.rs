//! mlx5 address handles: the 48-byte address vector (`struct mlx5_wqe_av`) that every UD send
//! copies into its datagram segment, built in userspace as rdma-core's `mlx5_create_ah` builds it.
//!
//! On RoCE the vector carries the destination MAC, which the kernel resolves: `CREATE_AH` answers
//! with it in `mlx5_ib_create_ah_resp` (when the context reports
//! `MLX5_USER_CMDS_SUPP_UHW_CREATE_AH`), and the kernel object lives as long as the handle. On
//! InfiniBand the vector is all there is (LID, path bits, GRH when global): no kernel object.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use uverbs_uapi as uapi;
use zerocopy::byteorder::big_endian::U16;
use zerocopy::{FromZeros, IntoBytes};

use super::wqe::Av;
use super::Mlx5Context;
use crate::backend::AhBackend;
use crate::cmd;
use crate::error::{Error, Result, Verb};
use crate::ucontext::Ucontext;

/// The lowest UDP source port of RoCE v2 (`IB_ROCE_UDP_ENCAP_VALID_PORT_MIN`).
pub const ROCE_UDP_SPORT_MIN: u16 = 0xc000;

/// rdma-core's `ib_to_mlx5_rate_table`: `ibv_rate` → the device's static-rate code.
const RATE_TABLE: [u8; 23] = [
    0, 0, 7, 8, 9, 10, 11, 12, 13, 14, 15, 11, 13, 15, 0, 9, 15, 0, 0, 9, 13, 0, 0,
];

/// The device's static-rate code of an `ibv_rate` (0: unlimited).
pub fn mlx5_rate(static_rate: u8) -> u8 {
    RATE_TABLE
        .get(usize::from(static_rate))
        .copied()
        .unwrap_or(0)
}

/// The RoCE v2 UDP source port of a flow label (`ibv_flow_label_to_udp_sport`).
pub fn flow_label_to_udp_sport(fl: u32) -> u16 {
    let low = fl & 0x3fff;
    let high = fl & 0xf_c000;
    ((low ^ (high >> 14)) as u16) | ROCE_UDP_SPORT_MIN
}

/// What the port and GID the vector uses are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AhLink {
    /// The port is Ethernet (RoCE).
    pub ethernet: bool,
    /// The source GID is a RoCE v2 one (the vector then carries a UDP source port).
    pub roce_v2: bool,
}

/// The address vector of `attr` (rdma-core's `mlx5_create_ah`), without the destination MAC.
/// `random_sport` is the source port a RoCE v2 route without a flow label gets (rdma-core draws
/// it at random in `0xc000..=0xffff`).
pub fn build_av(attr: &uapi::ib_uverbs_ah_attr, link: AhLink, random_sport: u16) -> Result<Av> {
    if link.ethernet && attr.is_global == 0 {
        return Err(Error::InvalidArgument {
            verb: Verb::CreateAh,
            what: "RoCE needs a global route: set the destination GID".into(),
        });
    }
    let mut av = Av::default();
    let rate = mlx5_rate(attr.static_rate);
    let grh = if link.ethernet {
        if link.roce_v2 {
            let fl = attr.grh.flow_label & 0xf_ffff;
            let sport = if fl != 0 {
                flow_label_to_udp_sport(fl)
            } else {
                random_sport | ROCE_UDP_SPORT_MIN
            };
            av.rlid = U16::new(sport);
        }
        av.stat_rate_sl = (rate << 4) | ((attr.sl & 7) << 1);
        false
    } else {
        av.fl_mlid = attr.src_path_bits & 0x7f;
        av.rlid = U16::new(attr.dlid);
        av.stat_rate_sl = (rate << 4) | (attr.sl & 0xf);
        true
    };
    if attr.is_global != 0 {
        av.tclass = attr.grh.traffic_class;
        av.hop_limit = attr.grh.hop_limit;
        av.grh_gid_fl = Av::grh_gid_fl(grh, attr.grh.sgid_index, attr.grh.flow_label);
        av.rgid = attr.grh.dgid;
    }
    Ok(av)
}

/// An mlx5 address handle.
#[derive(Debug)]
pub struct Mlx5Ah {
    ctx: Arc<Ucontext>,
    handle: Option<u32>,
    av: Av,
}

impl Mlx5Ah {
    /// Creates an address handle for `attr` in protection domain `pd`, on a port and source GID of
    /// the kind `link` says.
    pub fn create(
        m: &Arc<Mlx5Context>,
        pd: u32,
        attr: &uapi::ib_uverbs_ah_attr,
        link: AhLink,
    ) -> Result<Mlx5Ah> {
        let ctx = m.ucontext();
        let sport = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish() as u16;
        let av = build_av(attr, link, sport)?;
        if !link.ethernet {
            return Ok(Mlx5Ah {
                ctx: Arc::clone(ctx),
                handle: None,
                av,
            });
        }
        if !m.kernel_ah() {
            // rdma-core resolves the MAC itself then (neighbour tables); this backend does not.
            return Err(Error::Unsupported {
                verb: Verb::CreateAh,
            });
        }
        let mut resp = uapi::mlx5_ib_create_ah_resp::new_zeroed();
        let handle = cmd::create_ah(ctx, pd, attr, resp.as_mut_bytes())?;
        let mut ah = Mlx5Ah {
            ctx: Arc::clone(ctx),
            handle: Some(handle),
            av,
        };
        const DMAC_END: u32 = 10;
        if resp.response_length < DMAC_END {
            // Dropping `ah` destroys the handle.
            return Err(Error::Protocol {
                verb: Verb::CreateAh,
                what: format!(
                    "a CREATE_AH answer of {} bytes without the MAC",
                    resp.response_length
                ),
            });
        }
        ah.av.rmac = resp.dmac;
        Ok(ah)
    }

    /// The address vector UD sends through this handle carry.
    pub fn av(&self) -> &Av {
        &self.av
    }
}

impl AhBackend for Mlx5Ah {
    /// The kernel's handle (RoCE only).
    fn handle(&self) -> Option<u32> {
        self.handle
    }
}

impl Drop for Mlx5Ah {
    fn drop(&mut self) {
        if let Some(handle) = self.handle {
            // SAFETY: the handle is this object's own (its destructor runs once), nothing else
            // holds it, and it is not named again.
            if let Err(e) = unsafe { cmd::destroy_ah(&self.ctx, handle) } {
                crate::report_drop_error("address handle", &e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr() -> uapi::ib_uverbs_ah_attr {
        uapi::ib_uverbs_ah_attr {
            grh: uapi::ib_uverbs_global_route {
                dgid: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1],
                flow_label: 0x12345,
                sgid_index: 1,
                hop_limit: 64,
                traffic_class: 0x20,
                reserved: 0,
            },
            dlid: 0x77,
            sl: 5,
            src_path_bits: 0x83,
            static_rate: 3,
            is_global: 1,
            port_num: 1,
            reserved: 0,
        }
    }

    #[test]
    fn roce_v2_vector_bytes() {
        let link = AhLink {
            ethernet: true,
            roce_v2: true,
        };
        let av = build_av(&attr(), link, 0).unwrap();
        let b = av.as_bytes();
        assert_eq!(b.len(), 48);
        assert_eq!(&b[0..12], &[0u8; 12], "Q_Key and QPN come with each send");
        assert_eq!(b[12], (8 << 4) | (5 << 1), "rate 10 Gb/s, SL 5 in bits 3:1");
        assert_eq!(b[13], 0, "no path bits on RoCE");
        assert_eq!(
            u16::from_be_bytes([b[14], b[15]]),
            flow_label_to_udp_sport(0x12345)
        );
        assert_eq!(&b[20..26], &[0u8; 6], "the MAC comes from the kernel");
        assert_eq!((b[26], b[27]), (0x20, 64));
        assert_eq!(
            u32::from_be_bytes(b[28..32].try_into().unwrap()),
            (1 << 20) | 0x12345,
            "no GRH bit on RoCE"
        );
        assert_eq!(&b[32..48], &attr().grh.dgid);
    }

    #[test]
    fn sport_rules() {
        assert_eq!(flow_label_to_udp_sport(0), 0xc000);
        assert_eq!(flow_label_to_udp_sport(0x3fff), 0xffff);
        assert_eq!(flow_label_to_udp_sport(0x4000), 0xc001);
        let mut a = attr();
        a.grh.flow_label = 0;
        let link = AhLink {
            ethernet: true,
            roce_v2: true,
        };
        let av = build_av(&a, link, 0x1234).unwrap();
        assert_eq!(av.rlid.get(), 0xd234);
        let v1 = AhLink {
            ethernet: true,
            roce_v2: false,
        };
        assert_eq!(build_av(&a, v1, 0x1234).unwrap().rlid.get(), 0);
    }

    #[test]
    fn infiniband_vector_and_refusals() {
        let link = AhLink {
            ethernet: false,
            roce_v2: false,
        };
        let av = build_av(&attr(), link, 0).unwrap();
        assert_eq!(av.stat_rate_sl, (8 << 4) | 5);
        assert_eq!(av.fl_mlid, 0x03);
        assert_eq!(av.rlid.get(), 0x77);
        assert_eq!(av.grh_gid_fl.get(), (1 << 30) | (1 << 20) | 0x12345);
        let mut local = attr();
        local.is_global = 0;
        let av = build_av(&local, link, 0).unwrap();
        assert_eq!(
            (av.grh_gid_fl.get(), av.rgid, av.hop_limit),
            (0, [0; 16], 0)
        );
        let eth = AhLink {
            ethernet: true,
            roce_v2: true,
        };
        assert!(build_av(&local, eth, 0).is_err());
        assert_eq!(mlx5_rate(0), 0);
        assert_eq!(mlx5_rate(200), 0);
        assert_eq!(mlx5_rate(16), 15);
    }
}
