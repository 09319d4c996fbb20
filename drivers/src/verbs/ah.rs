//! Address handles.

use super::{dispatch, Ah, Backend, Pd};
use crate::backend::{AhBackend, AhInit, Provider};
use crate::error::Result;

impl Ah {
    /// Creates an address handle in `pd`.
    pub fn create(pd: &Pd, init: &AhInit) -> Result<Ah> {
        dispatch!(Backend, &pd.device().backend, p => Provider::create_ah(p, pd.handle(), init).map(Ah::from))
    }
}

/// The backend's address handle, through a `match`.
impl AhBackend for Ah {
    /// The kernel's handle, where the kernel keeps one (an mlx5 handle on InfiniBand lives in user
    /// space only).
    fn handle(&self) -> Option<u32> {
        dispatch!(Ah, self, ah => AhBackend::handle(ah))
    }
}
