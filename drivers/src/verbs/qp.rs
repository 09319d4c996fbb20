//! Queue pairs.

use std::sync::Arc;

use uverbs_uapi as uapi;

use super::{dispatch, of_another_backend, Ah, Backend, Cq, DeviceContext, Of, Qp, Srq};
use crate::backend::{CqBackend, Provider, QpBackend, SendStage, SrqBackend};
use crate::cmd::QpInit;
use crate::error::{Error, Result, Verb};
use crate::wr::{PostError, RecvWr, SendWr};

/// The address handle of a send request (UD): for a request type with one,
/// `UdAddress::address_handle` is the `ah` argument of [`QpBackend::post_send`] on a [`Qp`].
pub trait UdAddress {
    /// The address handle a UD send goes through; `None` for other sends.
    fn address_handle(&self) -> Option<&Ah>;
}

impl UdAddress for SendWr<'_> {
    /// A bare work request names no address handle.
    fn address_handle(&self) -> Option<&Ah> {
        None
    }
}

/// [`Provider::create_qp`] with the backend's own CQs and SRQ out of the verbs objects.
fn create_on<P: Provider>(
    p: &Arc<P>,
    init: &QpInit,
    send: &Cq,
    recv: &Cq,
    srq: Option<&Srq>,
) -> Result<Qp>
where
    Cq: Of<P::Cq>,
    Srq: Of<P::Srq>,
    Qp: From<P::Qp>,
{
    let other = || of_another_backend(Verb::CreateQp, "a completion queue or shared receive queue");
    let send = send.of().ok_or_else(other)?;
    let recv = recv.of().ok_or_else(other)?;
    let srq = match srq {
        None => None,
        Some(s) => Some(s.of().ok_or_else(other)?),
    };
    Provider::create_qp(p, init, send, recv, srq).map(Qp::from)
}

impl Qp {
    /// Creates a queue pair on `dev` completing on `send` and `recv` (whose handles `init` names),
    /// taking its receives from `srq` if it is given.
    pub fn create(
        dev: &DeviceContext,
        init: &QpInit,
        send: &Cq,
        recv: &Cq,
        srq: Option<&Srq>,
    ) -> Result<Qp> {
        // Handles start at 0 in every open file: a queue of another context would name one of
        // this context's, or none, and the queue pair would clean (and retire work requests of) the
        // wrong queue (F8 at this level: F31).
        let ours = dev.ucontext();
        let foreign = !Arc::ptr_eq(send.ucontext(), ours)
            || !Arc::ptr_eq(recv.ucontext(), ours)
            || srq.is_some_and(|s| !Arc::ptr_eq(s.ucontext(), ours));
        if foreign {
            return Err(Error::InvalidArgument {
                verb: Verb::CreateQp,
                what: "a completion queue or shared receive queue of another device context".into(),
            });
        }
        dispatch!(Backend, &dev.backend, p => create_on(p, init, send, recv, srq))
    }
}

/// The backend's queue pair, through a `match`; a UD request's address handle of another backend
/// is refused as a missing one.
impl QpBackend for Qp {
    type Ah = Ah;

    #[inline]
    fn handle(&self) -> u32 {
        dispatch!(Qp, self, qp => QpBackend::handle(qp))
    }

    #[inline]
    fn qpn(&self) -> u32 {
        dispatch!(Qp, self, qp => QpBackend::qpn(qp))
    }

    fn cap(&self) -> uapi::ib_uverbs_qp_cap {
        dispatch!(Qp, self, qp => QpBackend::cap(qp))
    }

    #[inline]
    fn state(&self) -> u8 {
        dispatch!(Qp, self, qp => QpBackend::state(qp))
    }

    /// `MODIFY_QP` (the caller has checked the transition); the tracked state follows.
    fn modify(&self, req: &uapi::ib_uverbs_modify_qp) -> Result<()> {
        dispatch!(Qp, self, qp => QpBackend::modify(qp, req))
    }

    fn query(&self, attr_mask: u32) -> Result<uapi::ib_uverbs_query_qp_resp> {
        dispatch!(Qp, self, qp => QpBackend::query(qp, attr_mask))
    }

    /// Posts send work requests (see [`QpBackend::post_sends`]). `ah` gives a UD request's address
    /// handle (for request types with a [`UdAddress`]: `UdAddress::address_handle`); one of
    /// another backend is refused as a missing one.
    ///
    /// # Safety
    /// As [`QpBackend::post_sends`].
    #[inline]
    unsafe fn post_sends<'a, const ALL: bool, W: AsRef<SendWr<'a>>>(
        &self,
        wrs: &[W],
        ah: impl Fn(&W) -> Option<&Ah>,
    ) -> std::result::Result<(), PostError> {
        // SAFETY: the same contract, passed on.
        dispatch!(Qp, self, qp => unsafe {
            QpBackend::post_sends::<ALL, W>(qp, wrs, |w| ah(w).and_then(Of::of))
        })
    }

    #[inline(always)]
    fn stage_send(&self, stage: &mut SendStage, wr: &SendWr<'_>, ah: Option<&Ah>) {
        dispatch!(Qp, self, qp => QpBackend::stage_send(qp, stage, wr, ah.and_then(Of::of)))
    }

    /// # Safety
    /// As [`QpBackend::submit_sends`].
    #[inline]
    unsafe fn submit_sends(&self, stage: &mut SendStage) -> std::result::Result<(), PostError> {
        // SAFETY: the same contract, passed on.
        dispatch!(Qp, self, qp => unsafe { QpBackend::submit_sends(qp, stage) })
    }

    fn abandon_sends(&self, stage: &mut SendStage) {
        dispatch!(Qp, self, qp => QpBackend::abandon_sends(qp, stage))
    }

    /// Posts receive work requests (see [`QpBackend::post_recvs`]). No system call.
    ///
    /// # Safety
    /// As [`QpBackend::post_recvs`].
    #[inline]
    unsafe fn post_recvs<'a, const ALL: bool, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        // SAFETY: the same contract, passed on.
        dispatch!(Qp, self, qp => unsafe { QpBackend::post_recvs::<ALL, W>(qp, wrs) })
    }
}
