//! Protection domains and memory regions: `ALLOC_PD`, `REG_MR`.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::IntoBytes;

use super::{FileState, Mr, Object, Pd};
use crate::hca::MrDesc;
use crate::kernel::{File, Udata};
use crate::{uaccess, Kind};

const IPOIB_SUPPORTED_ACCESS: u32 = 0xff;

/// `ib_check_mr_access` (6.1).
fn check_mr_access(flags: u32) -> Result<(), Errno> {
    if flags & (uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE) != 0
        && flags & uapi::IB_UVERBS_ACCESS_LOCAL_WRITE == 0
    {
        return Err(Errno::EINVAL);
    }
    if flags & !(IPOIB_SUPPORTED_ACCESS | uapi::IB_UVERBS_ACCESS_OPTIONAL_RANGE) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Whether `REG_MR` of `start..start + length` asks for an implicit on-demand region (the whole
/// address space), as `mlx5_ib_reg_user_mr` decides.
fn implicit(start: u64, length: u64, access: u32) -> bool {
    access & uapi::IB_UVERBS_ACCESS_ON_DEMAND != 0 && start == 0 && length == u64::MAX
}

/// The memory of a region to register: pinned now (its pages must be mapped, and writable for
/// write access), or, on demand, only a sane range (`ib_umem_odp_get`: the pages come in when the
/// device touches them).
fn check_memory(start: u64, length: u64, access: u32) -> Result<(), Errno> {
    if access & uapi::IB_UVERBS_ACCESS_ON_DEMAND == 0 {
        return uaccess::check_pin(start, length, access_writable(access));
    }
    if implicit(start, length, access) {
        return Ok(());
    }
    if length == 0 {
        return Err(Errno::EINVAL);
    }
    start.checked_add(length).ok_or(Errno::EOVERFLOW).map(drop)
}

/// `ib_access_writable`.
fn access_writable(flags: u32) -> bool {
    flags
        & (uapi::IB_UVERBS_ACCESS_LOCAL_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC
            | uapi::IB_UVERBS_ACCESS_MW_BIND)
        != 0
}

impl File {
    /// `ALLOC_PD` (`mlx5_ib_alloc_pd`): the new handle.
    pub(crate) fn alloc_pd(&self, st: &mut FileState, udata: &Udata) -> Result<u32, Errno> {
        self.ctx(st)?;
        let handle = Self::new_handle(st)?;
        let pdn = self.dev.alloc_pdn()?;
        let resp = uapi::mlx5_ib_alloc_pd_resp { pdn };
        if let Err(e) = udata.copy_out(resp.as_bytes()) {
            self.dev.free_pdn(pdn);
            return Err(e);
        }
        st.objects.insert(handle, Object::Pd(Pd { pdn, users: 0 }));
        self.dev.count(Kind::Pd, true);
        Ok(handle)
    }

    /// The PD number of PD `handle` (`MLX5_IB_METHOD_PD_QUERY`; the decoder has checked the
    /// handle's type).
    pub(crate) fn query_pd(st: &FileState, handle: u32) -> Result<u32, Errno> {
        Self::pd_of(st, handle)
    }

    /// What `QUERY_MR` answers of MR `handle`: lkey, rkey, length, iova.
    pub(crate) fn query_mr(st: &FileState, handle: u32) -> Result<(u32, u32, u64, u64), Errno> {
        match st.objects.get(&handle) {
            Some(Object::Mr(m)) => Ok((m.lkey, m.lkey, m.length, m.iova)),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `REG_MR`: the new handle and the key (lkey = rkey, as mlx5's).
    pub(crate) fn reg_mr(
        &self,
        st: &mut FileState,
        req: &uapi::ib_uverbs_reg_mr,
    ) -> Result<(u32, u32), Errno> {
        let page = uverbs_drivers::sys::page_size() as u64 - 1;
        if req.start & page != req.hca_va & page {
            return Err(Errno::EINVAL);
        }
        self.ctx(st)?;
        check_mr_access(req.access_flags)?;
        let pdn = Self::pd_of(st, req.pd_handle)?;
        if implicit(req.start, req.length, req.access_flags) && req.hca_va != 0 {
            return Err(Errno::EINVAL);
        }
        check_memory(req.start, req.length, req.access_flags)?;
        let mr = Mr {
            pd: req.pd_handle,
            lkey: 0,
            length: req.length,
            iova: req.hca_va,
            host: req.start,
            access: req.access_flags,
            _dmabuf: None,
        };
        self.add_mr(st, pdn, crate::task::space(), mr)
    }

    /// Gives `mr` (its key left to allocate) a handle and a key, tells the HCA (in PD `pdn`, in
    /// `space`), and counts it: the end of both registrations.
    fn add_mr(
        &self,
        st: &mut FileState,
        pdn: u32,
        space: crate::hca::Space,
        mut mr: Mr,
    ) -> Result<(u32, u32), Errno> {
        let handle = Self::new_handle(st)?;
        let key = self.dev.alloc_mkey()?;
        mr.lkey = key;
        self.dev.silicon.reg_mr(MrDesc {
            lkey: key,
            rkey: key,
            pdn,
            iova: mr.iova,
            host: mr.host as usize,
            len: mr.length,
            access: mr.access,
            space,
        });
        Self::use_obj(st, mr.pd, true);
        st.objects.insert(handle, Object::Mr(mr));
        self.dev.count(Kind::Mr, true);
        Ok((handle, key))
    }

    /// `REREG_MR`: changes what `req.flags` names (`IB_MR_REREG_TRANS`: the memory,
    /// `IB_MR_REREG_PD`, `IB_MR_REREG_ACCESS`) of MR `req.mr_handle` in place, keeping its key (as
    /// mlx5_ib does when it can update the MKey with a UMR). Checked as `ib_uverbs_rereg_mr` and
    /// `mlx5_ib_rereg_user_mr` check; on any error the region is unchanged.
    pub(crate) fn rereg_mr(
        &self,
        st: &mut FileState,
        req: &uapi::ib_uverbs_rereg_mr,
    ) -> Result<u32, Errno> {
        use uapi::ib_verbs::{IB_MR_REREG_ACCESS, IB_MR_REREG_PD, IB_MR_REREG_TRANS};
        let supported = IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS;
        if req.flags == 0 || req.flags & !supported != 0 {
            return Err(Errno::EINVAL);
        }
        let trans = req.flags & IB_MR_REREG_TRANS != 0;
        let page = uverbs_drivers::sys::page_size() as u64 - 1;
        if trans && req.start & page != req.hca_va & page {
            return Err(Errno::EINVAL);
        }
        self.ctx(st)?;
        let Some(Object::Mr(old)) = st.objects.get(&req.mr_handle) else {
            return Err(Errno::EINVAL);
        };
        if old._dmabuf.is_some() {
            // mlx5_ib_rereg_user_mr: a dma-buf region cannot be re-registered.
            return Err(Errno::EOPNOTSUPP);
        }
        let (old_pd, lkey) = (old.pd, old.lkey);
        let access = if req.flags & IB_MR_REREG_ACCESS != 0 {
            check_mr_access(req.access_flags)?;
            req.access_flags
        } else {
            old.access
        };
        let (host, length, iova) = if trans {
            if req.length == 0 {
                return Err(Errno::EINVAL);
            }
            (req.start, req.length, req.hca_va)
        } else {
            (old.host, old.length, old.iova)
        };
        // New memory, or newly writable memory, must be pinnable as such (or, on demand, sane).
        check_memory(host, length, access)?;
        let pd = if req.flags & IB_MR_REREG_PD != 0 {
            req.pd_handle
        } else {
            old_pd
        };
        let pdn = Self::pd_of(st, pd)?;
        self.dev.silicon.reg_mr(MrDesc {
            lkey,
            rkey: lkey,
            pdn,
            iova,
            host: host as usize,
            len: length,
            access,
            space: crate::task::space(),
        });
        if pd != old_pd {
            Self::use_obj(st, old_pd, false);
            Self::use_obj(st, pd, true);
        }
        if let Some(Object::Mr(m)) = st.objects.get_mut(&req.mr_handle) {
            m.pd = pd;
            m.length = length;
            m.iova = iova;
            m.host = host;
            m.access = access;
        }
        Ok(lkey)
    }

    /// `ADVISE_MR` (`mlx5_ib_advise_mr`): `advice` for the on-demand memory `sges` name. Each
    /// entry's key must be that of an on-demand region of protection domain `pd` (writable for
    /// `PREFETCH_WRITE`), else `ENOENT` (`get_prefetchable_mr`); its range must lie in the region
    /// and, for the advice that faults pages in, be mapped (`EFAULT` otherwise). The model's
    /// device reads process memory directly, so a prefetch has nothing more to do.
    pub(crate) fn advise_mr(
        &self,
        st: &FileState,
        pd: u32,
        advice: u32,
        sges: &[uapi::ib_uverbs_sge],
    ) -> Result<(), Errno> {
        if advice > uapi::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT {
            return Err(Errno::EOPNOTSUPP);
        }
        for sge in sges {
            let mr = st
                .objects
                .values()
                .find_map(|o| match o {
                    Object::Mr(m) if m.lkey == sge.lkey => Some(m),
                    _ => None,
                })
                .ok_or(Errno::ENOENT)?;
            let odp = mr.access & uapi::IB_UVERBS_ACCESS_ON_DEMAND != 0;
            let writable = mr.access & uapi::IB_UVERBS_ACCESS_LOCAL_WRITE != 0;
            if mr.pd != pd
                || !odp
                || (advice == uapi::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE && !writable)
            {
                return Err(Errno::ENOENT);
            }
            let len = u64::from(sge.length);
            let inside = sge.addr >= mr.iova
                && (sge.addr - mr.iova)
                    .checked_add(len)
                    .is_some_and(|end| end <= mr.length);
            if !inside {
                return Err(Errno::EFAULT);
            }
            if advice != uapi::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT && len > 0 {
                let host = mr.host.wrapping_add(sge.addr - mr.iova);
                uaccess::check_pin(
                    host,
                    len,
                    advice == uapi::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                )
                .map_err(|_| Errno::EFAULT)?;
            }
        }
        Ok(())
    }

    /// `REG_DMABUF_MR` (`ib_umem_dmabuf_get`, `mlx5_ib_reg_user_mr_dmabuf`): `length` bytes at
    /// `offset` of the dma-buf `fd`, at `iova`. The descriptor must be a dma-buf (`EBADF` for none
    /// open, `EINVAL` for another file: what `dma_buf_get` answers) that holds the range
    /// (`EINVAL`). The model maps the buffer (a dma-buf exporter such as `udmabuf` allows it) and
    /// registers the mapping; only in the process the model serves (a daemon's client's
    /// descriptor is not the model's to map: `EOPNOTSUPP`).
    #[allow(clippy::too_many_arguments)] // The method's attributes, one to one.
    pub(crate) fn reg_dmabuf_mr(
        &self,
        st: &mut FileState,
        pd: u32,
        offset: u64,
        length: u64,
        iova: u64,
        fd: i32,
        access: u32,
    ) -> Result<(u32, u32), Errno> {
        self.ctx(st)?;
        check_mr_access(access)?;
        let pdn = Self::pd_of(st, pd)?;
        let space = crate::task::space();
        if space != crate::hca::Space::Local {
            return Err(Errno::EOPNOTSUPP);
        }
        let end = offset.checked_add(length).ok_or(Errno::EINVAL)?;
        if length == 0 {
            return Err(Errno::EINVAL);
        }
        // dma_buf_get: an open file, and a dma-buf (its fdinfo names the exporter).
        let info =
            std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).map_err(|_| Errno::EBADF)?;
        if !info.lines().any(|l| l.starts_with("exp_name:")) {
            return Err(Errno::EINVAL);
        }
        let size = info
            .lines()
            .find_map(|l| l.strip_prefix("size:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or(Errno::EINVAL)?;
        if size < end {
            return Err(Errno::EINVAL);
        }
        let page = uverbs_drivers::sys::page_size() as u64;
        let first = offset & !(page - 1);
        let last = end.div_ceil(page) * page;
        let map = memmap2::MmapOptions::new()
            .offset(first)
            .len((last - first) as usize)
            .map_raw(fd)
            .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
        let host = map.as_mut_ptr() as u64 + (offset - first);
        let mr = Mr {
            pd,
            lkey: 0,
            length,
            iova,
            host,
            access,
            _dmabuf: Some(map),
        };
        self.add_mr(st, pdn, space, mr)
    }
}
