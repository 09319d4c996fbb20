//! rxe address handles: the kernel keeps the address vector and hands out an AH number, which UD send
//! WQEs carry (`rxe_send_wr.wr.ud.ah_num`).

use std::sync::Arc;

use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use crate::backend::AhBackend;
use crate::cmd;
use crate::error::{Error, Result, Verb};
use crate::ucontext::Ucontext;

/// An rxe address handle.
#[derive(Debug)]
pub struct RxeAh {
    ctx: Arc<Ucontext>,
    handle: u32,
    ah_num: u32,
}

impl RxeAh {
    /// Creates an address handle for `attr` in protection domain `pd`.
    ///
    /// The kernel returns the AH number only to a caller that passes the 8-byte
    /// `rxe_create_ah_resp` (Linux 5.16 and later). An older kernel answers 0 and expects the whole
    /// address vector in every WQE, in a WQE layout that differs from the current one; that is
    /// [`Error::Unsupported`] (the handle is destroyed again).
    pub fn create(ctx: &Arc<Ucontext>, pd: u32, attr: &uapi::ib_uverbs_ah_attr) -> Result<RxeAh> {
        let mut resp = uapi::rxe_create_ah_resp::new_zeroed();
        let handle = cmd::create_ah(ctx, pd, attr, resp.as_mut_bytes())?;
        let ah = RxeAh {
            ctx: Arc::clone(ctx),
            handle,
            ah_num: resp.ah_num,
        };
        if ah.ah_num == 0 {
            // Dropping `ah` destroys the handle.
            return Err(Error::Unsupported {
                verb: Verb::CreateAh,
            });
        }
        Ok(ah)
    }

    /// The AH number UD send WQEs carry.
    pub fn ah_num(&self) -> u32 {
        self.ah_num
    }
}

impl AhBackend for RxeAh {
    fn handle(&self) -> Option<u32> {
        Some(self.handle)
    }
}

impl Drop for RxeAh {
    fn drop(&mut self) {
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::destroy_ah(&self.ctx, self.handle) } {
            crate::report_drop_error("address handle", &e);
        }
    }
}
