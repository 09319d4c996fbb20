//! Address handles: `CREATE_AH`, and the destination MAC of an address.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::{is_v4_mapped, Ah, FileState, Object};
use crate::kernel::{File, Udata};
use crate::Kind;

impl File {
    /// The destination MAC a neighbour lookup finds for `dgid` (`ib_resolve_eth_dmac`): multicast
    /// MACs for multicast groups, the MAC inside a link-local GID, none (zero) over loopback, and a
    /// locally administered MAC made of the address for any other host.
    pub(crate) fn resolve_dmac(&self, dgid: &[u8; 16]) -> [u8; 6] {
        let cfg = &self.dev.cfg;
        let on_lo = cfg.netdev == "lo";
        if dgid[0] == 0xff {
            return [0x33, 0x33, dgid[12], dgid[13], dgid[14], dgid[15]];
        }
        if is_v4_mapped(dgid) {
            let a = &dgid[12..16];
            if (224..=239).contains(&a[0]) {
                return [0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]];
            }
            if a[0] == 127 {
                return [0; 6];
            }
            if !cfg.gids.contains(dgid) {
                return [0x02, 0x00, a[0], a[1], a[2], a[3]];
            }
        }
        if cfg.gids.contains(dgid) {
            return if on_lo { [0; 6] } else { cfg.mac() };
        }
        if dgid[0] == 0xfe && dgid[1] & 0xc0 == 0x80 {
            return [
                dgid[8] ^ 0x02,
                dgid[9],
                dgid[10],
                dgid[13],
                dgid[14],
                dgid[15],
            ];
        }
        if *dgid == std::net::Ipv6Addr::LOCALHOST.octets() {
            return [0; 6];
        }
        [0x02, dgid[11], dgid[12], dgid[13], dgid[14], dgid[15]]
    }

    /// `CREATE_AH` (`rdma_create_user_ah`, `mlx5_ib_create_ah`): the handle.
    pub(crate) fn create_ah(
        &self,
        st: &mut FileState,
        req: &uapi::ib_uverbs_create_ah,
        udata: &Udata,
    ) -> Result<u32, Errno> {
        self.ctx(st)?;
        let attr = &req.attr;
        if attr.port_num != 1 {
            return Err(Errno::EINVAL);
        }
        Self::pd_of(st, req.pd_handle)?;
        if attr.is_global == 0 {
            // RoCE needs the GRH.
            return Err(Errno::EINVAL);
        }
        self.check_sgid(attr.grh.sgid_index)?;
        let min = 10usize; // offsetofend(struct mlx5_ib_create_ah_resp, dmac)
        if udata.outlen() < min {
            return Err(Errno::EINVAL);
        }
        let mut resp = uapi::mlx5_ib_create_ah_resp::new_zeroed();
        resp.response_length = min as u32;
        resp.dmac = self.resolve_dmac(&attr.grh.dgid);
        let handle = Self::new_handle(st)?;
        udata.copy_out(&resp.as_bytes()[..min])?;
        Self::use_obj(st, req.pd_handle, true);
        st.objects
            .insert(handle, Object::Ah(Ah { pd: req.pd_handle }));
        self.dev.count(Kind::Ah, true);
        Ok(handle)
    }
}
