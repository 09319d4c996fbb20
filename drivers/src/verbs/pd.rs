//! Protection domains and memory windows.

use std::sync::Arc;

use super::{dispatch, Backend, DeviceContext};
use crate::backend::Provider;
use crate::cmd;
use crate::error::{Error, Result, Verb};

/// A protection domain, deallocated when dropped.
#[derive(Debug)]
pub struct Pd {
    dev: Arc<DeviceContext>,
    handle: u32,
}

impl Pd {
    /// `ALLOC_PD`, with the backend's driver data.
    pub fn alloc(dev: &Arc<DeviceContext>) -> Result<Pd> {
        let handle = dispatch!(Backend, &dev.backend, p => Provider::alloc_pd(p.as_ref()))?;
        Ok(Pd {
            dev: Arc::clone(dev),
            handle,
        })
    }

    /// The kernel's handle.
    #[inline]
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The device it was allocated on.
    #[inline]
    pub fn device(&self) -> &Arc<DeviceContext> {
        &self.dev
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::dealloc_pd(self.dev.ucontext(), self.handle) } {
            crate::report_drop_error("protection domain", &e);
        }
    }
}

/// A memory window, deallocated when dropped. It is bound (and given new keys) by work requests.
#[derive(Debug)]
pub struct Mw {
    dev: Arc<DeviceContext>,
    handle: u32,
    rkey: u32,
}

impl Mw {
    /// `ALLOC_MW`: a window of `mw_type` (1 or 2) in `pd`; [`Error::Unsupported`] on a backend
    /// that does not bind windows.
    pub fn alloc(pd: &Pd, mw_type: u8) -> Result<Mw> {
        let dev = pd.device();
        if !dev.backend_supports(crate::backend::Capability::MemoryWindows) {
            return Err(Error::Unsupported {
                verb: Verb::AllocMw,
            });
        }
        let (handle, rkey) = cmd::alloc_mw(dev.ucontext(), pd.handle(), mw_type)?;
        Ok(Mw {
            dev: Arc::clone(dev),
            handle,
            rkey,
        })
    }

    /// The kernel's handle.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The remote key the kernel allocated it with.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }
}

impl Drop for Mw {
    fn drop(&mut self) {
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::dealloc_mw(self.dev.ucontext(), self.handle) } {
            crate::report_drop_error("memory window", &e);
        }
    }
}
