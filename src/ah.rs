//! Address handles: [`AddressHandle`], where UD datagrams go.

use std::fmt;
use std::io;
use std::sync::Arc;

use uverbs_drivers::backend::{AhBackend, AhInit};
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::uapi;
use uverbs_drivers::verbs::Ah;

use crate::attr::{Gid, GidType, LinkLayer};
use crate::context::Context;
use crate::ibv::{ibv_wc, ibv_wc_flags};
use crate::pd::{PdInner, ProtectionDomain};
use crate::qp::AddressVector;

/// An address handle (`ibv_ah`): a route to a port (or, with a multicast destination GID, to a
/// multicast group) that UD sends name, from [`ProtectionDomain::create_ah`].
///
/// It keeps its protection domain alive, so the two may be dropped in any order. A send naming it
/// borrows it ([`crate::SendRequest::send_ud`]); it must also live until that send's completion has
/// been polled, or the device finds no address and fails the send with an error completion.
pub struct AddressHandle {
    // Dropped first: the handle is destroyed before its protection domain can go.
    imp: Ah,
    pd: Arc<PdInner>,
    av: AddressVector,
}

impl AddressHandle {
    pub(crate) fn new(pd: &ProtectionDomain<'_>, av: &AddressVector) -> io::Result<AddressHandle> {
        let bad = |what: String| -> io::Error {
            Error::InvalidArgument {
                verb: Verb::CreateAh,
                what,
            }
            .into()
        };
        if av.port_num == 0 {
            return Err(bad("port 0 (ports are numbered from 1)".into()));
        }
        match av.dgid {
            Some(_) => {
                let port = u32::from(av.port_num);
                let index = u32::from(av.sgid_index);
                if !pd
                    .ctx
                    .gid_table()
                    .iter()
                    .any(|e| e.port_num == port && e.gid_index == index)
                {
                    return Err(bad(format!(
                        "GID index {index} is not a valid entry of port {port}"
                    )));
                }
            }
            None => {
                let ethernet = pd.ctx.inner().port1.as_ref().map(|p| p.link_layer())
                    == Some(LinkLayer::Ethernet);
                if av.port_num == 1 && ethernet {
                    return Err(bad(
                        "RoCE needs a global route: set the destination GID".into()
                    ));
                }
            }
        }
        let mut attr = uapi::ib_uverbs_ah_attr {
            dlid: av.dlid,
            sl: av.sl,
            src_path_bits: av.src_path_bits,
            static_rate: av.static_rate,
            port_num: av.port_num,
            ..Default::default()
        };
        if let Some(gid) = av.dgid {
            attr.is_global = 1;
            attr.grh = uapi::ib_uverbs_global_route {
                dgid: gid.bytes(),
                flow_label: av.flow_label,
                sgid_index: av.sgid_index,
                hop_limit: av.hop_limit,
                traffic_class: av.traffic_class,
                reserved: 0,
            };
        }
        // What a backend that builds the address itself needs to know: the port's link layer and
        // the source GID's type.
        let ethernet = if av.port_num == 1 {
            pd.ctx.inner().port1.as_ref().map(|p| p.link_layer())
        } else {
            Some(pd.ctx.query_port(av.port_num)?.link_layer())
        } == Some(LinkLayer::Ethernet);
        let roce_v2 = av.dgid.is_some()
            && pd.ctx.gid_table().iter().any(|e| {
                e.port_num == u32::from(av.port_num)
                    && e.gid_index == u32::from(av.sgid_index)
                    && e.kind() == GidType::RoceV2
            });
        let init = AhInit {
            attr,
            ethernet,
            roce_v2,
        };
        let imp = Ah::create(&pd.inner.pd, &init)?;
        Ok(AddressHandle {
            imp,
            pd: Arc::clone(&pd.inner),
            av: *av,
        })
    }

    /// The address vector it was created with.
    pub fn address_vector(&self) -> AddressVector {
        self.av
    }

    /// The backend's address handle, which UD sends through this one name.
    pub(crate) fn backend(&self) -> &Ah {
        &self.imp
    }

    /// The protection domain it belongs to.
    pub(crate) fn pd_inner(&self) -> &Arc<PdInner> {
        &self.pd
    }
}

impl fmt::Debug for AddressHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddressHandle")
            .field("handle", &self.imp.handle())
            .field("av", &self.av)
            .finish_non_exhaustive()
    }
}

/// The GRH area at the start of a UD receive buffer.
const GRH_LEN: usize = 40;
/// Where a RoCE v2 IPv4 datagram's IP header lies in the GRH area (after 20 zero bytes).
const IPV4_AT: usize = 20;
/// The GRH's next-header value of an InfiniBand (RoCE v1) packet.
const IB_NEXT_HDR: u8 = 0x1b;
/// The IPv6 next-header value of UDP (RoCE v2).
const UDP: u8 = 17;

impl AddressVector {
    /// The route back to the sender of a UD datagram this port received
    /// (`ibv_init_ah_from_wc`): `wc` is the receive's completion and `grh` the first 40 bytes of
    /// its buffer, where the device put the packet's GRH (RoCE v2 over IPv4: 20 zero bytes, then
    /// the IPv4 header).
    ///
    /// As libibverbs: the sender's address becomes the destination GID; the source GID index is
    /// the entry of `port`'s table holding the address the datagram was sent to, of the type the
    /// packet was (RoCE v2 for IP/UDP, v1 or InfiniBand for a GRH of next header 0x1b); hop limit
    /// (TTL) and traffic class (TOS) are the packet's, as are the flow label, the source LID
    /// (`dlid`), the service level and the path bits. Refused (`InvalidArgument`, naming
    /// `CREATE_AH`): a completion without a GRH, a GRH area shorter than 40 bytes or holding
    /// neither a valid IPv4 nor an IPv6 header, a multicast destination (a reply goes to the
    /// sender, not to the group), and a destination no GID of the port holds.
    pub fn from_completion(
        ctx: &Context,
        port: u8,
        wc: &ibv_wc,
        grh: &[u8],
    ) -> io::Result<AddressVector> {
        let bad = |what: String| -> io::Error {
            Error::InvalidArgument {
                verb: Verb::CreateAh,
                what: format!("a route from a completion: {what}"),
            }
            .into()
        };
        if (wc.wc_flags & ibv_wc_flags::IBV_WC_GRH).0 == 0 {
            return Err(bad("the completion has no GRH (RoCE needs one)".into()));
        }
        let grh: &[u8; GRH_LEN] = grh
            .get(..GRH_LEN)
            .and_then(|g| g.try_into().ok())
            .ok_or_else(|| bad(format!("a GRH area of {} bytes, not 40", grh.len())))?;
        let version_class_flow = u32::from_be_bytes([grh[0], grh[1], grh[2], grh[3]]);
        let mut av = AddressVector {
            dlid: wc.slid,
            sl: wc.sl,
            src_path_bits: wc.dlid_path_bits,
            port_num: port,
            flow_label: version_class_flow & 0xf_ffff,
            ..AddressVector::default()
        };
        let (local, kind) = if let Some(ip) = ipv4_header(grh) {
            let mapped = |a: &[u8]| {
                let mut raw = [0u8; 16];
                raw[10..12].copy_from_slice(&[0xff, 0xff]);
                raw[12..].copy_from_slice(a);
                Gid::from_bytes(raw)
            };
            if ip[16] >> 4 == 0xe {
                return Err(bad("a multicast destination address".into()));
            }
            av.dgid = Some(mapped(&ip[12..16]));
            av.hop_limit = ip[8];
            av.traffic_class = ip[1];
            (mapped(&ip[16..20]), GidType::RoceV2)
        } else if version_class_flow >> 28 == 6 {
            // Not IPv4 (`ipv4_header` looked), so IPv6.
            let gid = |a: &[u8]| Gid::from_bytes(a.try_into().expect("16 bytes"));
            if grh[24] == 0xff {
                return Err(bad("a multicast destination GID".into()));
            }
            let kind = match grh[6] {
                UDP => GidType::RoceV2,
                IB_NEXT_HDR => GidType::RoceV1,
                next => {
                    return Err(bad(format!(
                        "next header {next:#04x} is neither UDP nor IB"
                    )))
                }
            };
            av.dgid = Some(gid(&grh[8..24]));
            av.hop_limit = grh[7];
            av.traffic_class = (version_class_flow >> 20) as u8;
            (gid(&grh[24..40]), kind)
        } else {
            return Err(bad("neither an IPv4 nor an IPv6 header".into()));
        };
        let ib = ctx.query_port(port)?.link_layer() != LinkLayer::Ethernet;
        let entry = ctx
            .query_gid_table()?
            .into_iter()
            .find(|e| {
                e.port_num == u32::from(port)
                    && e.gid == local
                    && (e.kind() == kind || (ib && e.kind() == GidType::Ib))
            })
            .ok_or_else(|| bad(format!("no {kind:?} GID {local} on port {port}")))?;
        av.sgid_index = u8::try_from(entry.gid_index)
            .map_err(|_| bad(format!("GID index {} is past 255", entry.gid_index)))?;
        Ok(av)
    }
}

/// The IPv4 header of a GRH area, if it holds one, decided as libibverbs decides
/// (`get_grh_header_version`): where the first word is no IPv6 version, an IPv4 version at byte 20
/// means IPv4 (the checksum may be left unset: rxe over loopback leaves it 0); where it is 6, only a
/// five-word IPv4 header with a valid checksum means IPv4 (20 zero bytes cannot start an IPv6
/// header, but an IPv6 header can look like 20 bytes of anything).
fn ipv4_header(grh: &[u8; GRH_LEN]) -> Option<&[u8; 20]> {
    let h: &[u8; 20] = grh[IPV4_AT..].try_into().ok()?;
    if grh[0] >> 4 != 6 {
        return (h[0] >> 4 == 4).then_some(h);
    }
    if h[0] != 0x45 {
        return None;
    }
    (uverbs_drivers::gid::ipv4_checksum(h) == 0).then_some(h)
}
