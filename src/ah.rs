//! Address handles: [`AddressHandle`], where UD datagrams go.

use std::fmt;
use std::io;
use std::sync::Arc;

use uverbs_drivers::backend::Backend;
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::mlx5::ah::{AhLink, Mlx5Ah};
use uverbs_drivers::mlx5::wqe::Av;
use uverbs_drivers::rxe::ah::RxeAh;
use uverbs_drivers::uapi;

use crate::attr::{GidType, LinkLayer};
use crate::pd::{PdInner, ProtectionDomain};
use crate::qp::AddressVector;

/// The backend's address handle.
#[derive(Debug)]
enum AhImpl {
    Rxe(RxeAh),
    Mlx5(Mlx5Ah),
}

/// An address handle (`ibv_ah`): a route to a port (or, with a multicast destination GID, to a
/// multicast group) that UD sends name, from [`ProtectionDomain::create_ah`].
///
/// It keeps its protection domain alive, so the two may be dropped in any order. A send naming it
/// borrows it ([`crate::SendRequest::send_ud`]); it must also live until that send's completion has
/// been polled, or the device finds no address and fails the send with an error completion.
pub struct AddressHandle {
    // Dropped first: the handle is destroyed before its protection domain can go.
    imp: AhImpl,
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
        let drv = &pd.inner.ctx.drv;
        let imp = match drv.backend() {
            Backend::Rxe(_) => AhImpl::Rxe(RxeAh::create(drv, pd.inner.handle, &attr)?),
            Backend::Mlx5(_) => {
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
                let link = AhLink { ethernet, roce_v2 };
                AhImpl::Mlx5(Mlx5Ah::create(drv, pd.inner.handle, &attr, link)?)
            }
            _ => {
                return Err(Error::Unsupported {
                    verb: Verb::CreateAh,
                }
                .into())
            }
        };
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

    /// The number the backend's send WQEs name it by.
    pub(crate) fn ah_num(&self) -> u32 {
        match &self.imp {
            AhImpl::Rxe(ah) => ah.ah_num(),
            // mlx5 sends carry the address vector itself (`mlx5_av`); the number only has to be
            // non-zero.
            AhImpl::Mlx5(ah) => ah.handle().unwrap_or(0) | 1 << 31,
        }
    }

    /// The address vector mlx5 UD sends through this handle carry.
    pub(crate) fn mlx5_av(&self) -> Option<Av> {
        match &self.imp {
            AhImpl::Mlx5(ah) => Some(*ah.av()),
            AhImpl::Rxe(_) => None,
        }
    }

    /// The protection domain it belongs to.
    pub(crate) fn pd_inner(&self) -> &Arc<PdInner> {
        &self.pd
    }
}

impl fmt::Debug for AddressHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddressHandle")
            .field("ah_num", &self.ah_num())
            .field("av", &self.av)
            .finish_non_exhaustive()
    }
}
