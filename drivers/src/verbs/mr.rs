//! Memory regions over buffers this module owns, so that registered memory never returns to the
//! allocator while the kernel may let the device at it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use zerocopy::{FromBytes, IntoBytes};

use super::Pd;
use crate::cmd::MrKeys;
use crate::error::{Error, Result, Verb};
use crate::mem::{self, Allocation};

/// The kernel's registration of a [`Region`]'s buffer, shared with whatever must keep it (a memory
/// window bound to it).
///
/// When the last owner drops it, it deregisters; the buffer (handed over by the region when the
/// region was dropped) is then freed, or, if the kernel refused to deregister (rxe does while a
/// window is bound), leaked and counted in [`mem::leaked_bytes`]: a peer may still write it.
#[derive(Debug)]
pub struct Mr {
    pd: Arc<Pd>,
    keys: MrKeys,
    /// The region's buffer once the region itself is gone.
    memory: Mutex<Option<Allocation>>,
}

impl Mr {
    /// The handle and keys.
    #[inline]
    pub fn keys(&self) -> MrKeys {
        self.keys
    }

    /// The protection domain it was registered in.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        let memory = self
            .memory
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Err(e) = self.pd.device().ucontext().dereg_mr(self.keys.handle) {
            crate::report_drop_error("memory region", &e);
            // Still registered: the device may write these pages for a peer. Never free them.
            if let Some(m) = memory {
                m.leak();
            }
        }
    }
}

/// A buffer of `T`s registered as a memory region.
///
/// The buffer never moves or grows while registered: the region hands out its elements, never the
/// vector. `T` must be valid for every bit pattern and have no uninitialised bytes
/// (`FromBytes + IntoBytes`), since the device may write any bytes there and read every byte.
#[derive(Debug)]
pub struct Region<T> {
    data: Vec<T>,
    mr: Arc<Mr>,
}

impl<T: FromBytes + IntoBytes> Region<T> {
    /// `REG_MR` of `data`'s buffer in `pd` with `IB_UVERBS_ACCESS_*` flags `access`. An empty
    /// buffer (no elements, or zero-sized ones) is refused.
    pub fn register(pd: &Arc<Pd>, data: Vec<T>, access: u32) -> Result<Region<T>> {
        let len = std::mem::size_of_val(data.as_slice());
        if len == 0 {
            return Err(Error::InvalidArgument {
                verb: Verb::RegMr,
                what: "an empty buffer".into(),
            });
        }
        let addr = data.as_ptr() as u64;
        // SAFETY: the range is `data`'s heap buffer, which moves into the `Region` (a `Vec` never
        // moves its buffer, and the region never lends the vector itself, only its elements) and,
        // when the region goes, into the `Mr`, which frees it only after `dereg_mr` succeeded and
        // leaks it otherwise; `T: FromBytes + IntoBytes`, so any bytes the device writes are valid
        // `T`s and every byte it reads is initialised; the region's own accesses are through its
        // slices (the device's writes are DMA into plain data) and the post contracts, which the
        // callers of the posting `unsafe fn`s uphold.
        let keys = unsafe {
            pd.device()
                .ucontext()
                .reg_mr(pd.handle(), addr, len as u64, addr, access)
        }?;
        Ok(Region {
            data,
            mr: Arc::new(Mr {
                pd: Arc::clone(pd),
                keys,
                memory: Mutex::new(None),
            }),
        })
    }
}

impl<T> Region<T> {
    /// The registration.
    #[inline]
    pub fn mr(&self) -> &Arc<Mr> {
        &self.mr
    }

    /// The elements.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The elements, mutably.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The address of the first element.
    #[inline]
    pub fn addr(&self) -> u64 {
        self.data.as_ptr() as u64
    }
}

impl<T: FromBytes + Copy> Region<T> {
    /// Element `index`, loaded afresh (volatile): for memory a peer writes ([`mem::read_volatile`]).
    pub fn read_volatile(&self, index: usize) -> Option<T> {
        mem::read_volatile(&self.data, index)
    }

    /// Waits until element `index` satisfies `done`, then orders later reads after it
    /// ([`mem::wait_for`]).
    pub fn wait_for(
        &self,
        index: usize,
        done: impl FnMut(T) -> bool,
        deadline: Option<Instant>,
    ) -> Option<T> {
        mem::wait_for(&self.data, index, done, deadline)
    }

    /// Stores `value` at `index` without borrowing the other elements ([`mem::write_volatile`]).
    pub fn write_volatile(&mut self, index: usize, value: T) -> bool {
        mem::write_volatile(&mut self.data, index, value)
    }
}

impl<T> Drop for Region<T> {
    fn drop(&mut self) {
        // The buffer goes with the registration: freed once the kernel has released it (now, unless
        // something else holds the `Mr`), leaked if it refuses.
        let memory = Allocation::from_vec(std::mem::take(&mut self.data));
        *self.mr.memory.lock().unwrap_or_else(|p| p.into_inner()) = memory;
    }
}
