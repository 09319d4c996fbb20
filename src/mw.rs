//! Memory windows: [`MemoryWindow`], remote access to part of a memory region that the owner grants
//! and revokes with work requests.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use uverbs_drivers::verbs::{Mr, Mw};

use crate::pd::{PdInner, ProtectionDomain};

/// The memory window type 2 (`IBV_MW_TYPE_2`): bound and invalidated by work requests on a queue
/// pair, and usable only by that queue pair's peer.
const MW_TYPE_2: u8 = 2;

/// A type 2 memory window (`ibv_mw` of `IBV_MW_TYPE_2`), from [`ProtectionDomain::alloc_mw`].
/// The mlx5 backend has none: there `alloc_mw` is [`Error::Unsupported`](crate::Error::Unsupported).
///
/// A window grants a peer remote access to a range of a memory region (registered with
/// `IBV_ACCESS_MW_BIND`) without registering anything: post
/// [`crate::SendRequest::bind_mw`] on a queue pair of the window's protection domain, send the
/// [`crate::RemoteMemory`] it returns to that queue pair's peer, and revoke the access with
/// [`crate::SendRequest::local_invalidate`] (or let the peer do so with
/// [`crate::SendRequest::send_with_invalidate`]). Only the peer of the queue pair that bound it can
/// use the window, and a bound window must be invalidated before it is bound again.
///
/// Every bind gives the window a new rkey: the same index (upper 24 bits) with the next key (low 8
/// bits, as rdma-core's `ibv_inc_rkey`), so a peer holding an older key is refused.
/// [`MemoryWindow::rkey`] is the key of the last bind posted. The window keeps its protection
/// domain alive; dropping it deallocates it.
#[derive(Debug)]
pub struct MemoryWindow {
    // Dropped first: the window is deallocated before the region it is bound to can go.
    _mw: Mw,
    pd: Arc<PdInner>,
    rkey: AtomicU32,
    /// The registration of the region the last bind posted named: kept until the window is
    /// deallocated, so that the region's memory stays allocated (and the kernel, which refuses to
    /// deregister a region with a window bound, is asked only once the window is gone).
    bound: Mutex<Option<Arc<Mr>>>,
}

impl MemoryWindow {
    pub(crate) fn new(pd: &ProtectionDomain<'_>) -> io::Result<MemoryWindow> {
        let mw = Mw::alloc(&pd.inner.pd, MW_TYPE_2)?;
        Ok(MemoryWindow {
            rkey: AtomicU32::new(mw.rkey()),
            _mw: mw,
            pd: Arc::clone(&pd.inner),
            bound: Mutex::new(None),
        })
    }

    /// The window's remote key: the one the kernel allocated it with, or the one the last
    /// [`crate::SendRequest::bind_mw`] posted gave it. (A bind that completes in error leaves the
    /// kernel's key as it was; the window is then of no further use on that queue pair, which the
    /// error moved to the error state.)
    pub fn rkey(&self) -> u32 {
        self.rkey.load(Ordering::Acquire)
    }

    /// The key a bind gives the window next: the same index, the next 8-bit key.
    pub(crate) fn next_rkey(&self) -> u32 {
        let rkey = self.rkey();
        (rkey & 0xffff_ff00) | (rkey.wrapping_add(1) & 0xff)
    }

    /// Records a bind that was posted: the window's new key, and the region it binds, which the
    /// window keeps registered and allocated from now on. (A bind to another region that completes in
    /// error, because the window was still bound, lets the earlier region go: if the kernel then
    /// refuses to deregister it, its buffer is leaked, never freed.)
    pub(crate) fn set_bound(&self, rkey: u32, region: &Arc<Mr>) {
        let previous = self
            .bound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(Arc::clone(region));
        self.rkey.store(rkey, Ordering::Release);
        drop(previous);
    }

    pub(crate) fn pd_inner(&self) -> &Arc<PdInner> {
        &self.pd
    }
}

// Dropping a window deallocates it (`Mw`'s drop), then `bound` goes: the region it names is
// deregistered and freed if nothing else holds it (or leaked, if the kernel still refuses).
