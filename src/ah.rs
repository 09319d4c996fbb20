//! Address handles: [`AddressHandle`], where UD datagrams go.

use std::fmt;
use std::io;
use std::sync::Arc;

use uverbs_drivers::backend::AhInit;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::uapi;
use uverbs_drivers::verbs::Ah;

use crate::attr::{GidType, LinkLayer};
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
