//! Async events: [`AsyncEvent`] and [`AsyncEventKind`], read from a context's async event file with
//! [`crate::Context::get_async_event`] and friends.

use uverbs_drivers::uapi;

/// What happened (`ibv_event_type`, the kernel's `enum ib_event_type`, with the same numbering).
///
/// Events of a completion queue, queue pair or shared receive queue carry that object's `id` in
/// [`AsyncEvent::element`]; port events carry the port number; [`AsyncEventKind::DeviceFatal`]
/// carries nothing meaningful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AsyncEventKind {
    /// A completion queue overran: a completion was lost (CQ).
    CqErr,
    /// A queue pair went to the error state on an error that is not tied to one work request (QP).
    QpFatal,
    /// An invalid request arrived on a queue pair (QP).
    QpReqErr,
    /// A remote access violation on a queue pair, as the target of an RDMA operation (QP).
    QpAccessErr,
    /// The first packet arrived on a queue pair in RTR: communication is established (QP).
    CommEst,
    /// The send queue of a queue pair that was asked to drain (SQD) has drained (QP).
    SqDrained,
    /// A queue pair migrated to its alternate path (QP).
    PathMig,
    /// A path migration failed (QP).
    PathMigErr,
    /// The device failed; every object of the context is unusable.
    DeviceFatal,
    /// A port became active (port).
    PortActive,
    /// A port went down (port).
    PortErr,
    /// A port's LID changed (port).
    LidChange,
    /// A port's P_Key table changed (port).
    PkeyChange,
    /// The subnet manager of a port changed (port).
    SmChange,
    /// A shared receive queue failed (SRQ).
    SrqErr,
    /// Fewer receive requests than the armed limit remain on a shared receive queue; the limit is
    /// disarmed (SRQ).
    SrqLimitReached,
    /// A queue pair on a shared receive queue, in the error state, will take no more of its
    /// requests (QP).
    QpLastWqeReached,
    /// The subnet manager asks for re-registration (port).
    ClientReregister,
    /// A port's GID table changed (port).
    GidChange,
    /// A work queue failed (WQ).
    WqFatal,
    /// A value this crate does not know.
    Unknown(u32),
}

impl AsyncEventKind {
    const KNOWN: [AsyncEventKind; 20] = [
        AsyncEventKind::CqErr,
        AsyncEventKind::QpFatal,
        AsyncEventKind::QpReqErr,
        AsyncEventKind::QpAccessErr,
        AsyncEventKind::CommEst,
        AsyncEventKind::SqDrained,
        AsyncEventKind::PathMig,
        AsyncEventKind::PathMigErr,
        AsyncEventKind::DeviceFatal,
        AsyncEventKind::PortActive,
        AsyncEventKind::PortErr,
        AsyncEventKind::LidChange,
        AsyncEventKind::PkeyChange,
        AsyncEventKind::SmChange,
        AsyncEventKind::SrqErr,
        AsyncEventKind::SrqLimitReached,
        AsyncEventKind::QpLastWqeReached,
        AsyncEventKind::ClientReregister,
        AsyncEventKind::GidChange,
        AsyncEventKind::WqFatal,
    ];

    /// The `ibv_event_type` value.
    pub fn code(self) -> u32 {
        match self {
            AsyncEventKind::Unknown(v) => v,
            known => Self::KNOWN
                .iter()
                .position(|k| *k == known)
                .expect("every known kind is listed") as u32,
        }
    }

    /// The name rdma-core's `ibv_event_type_str` gives it ("port active", "CQ error"; "unknown"
    /// for a value this crate does not know). Also what `Display` writes.
    pub fn as_str(self) -> &'static str {
        match self {
            AsyncEventKind::CqErr => "CQ error",
            AsyncEventKind::QpFatal => "local work queue catastrophic error",
            AsyncEventKind::QpReqErr => "invalid request local work queue error",
            AsyncEventKind::QpAccessErr => "local access violation work queue error",
            AsyncEventKind::CommEst => "communication established",
            AsyncEventKind::SqDrained => "send queue drained",
            AsyncEventKind::PathMig => "path migrated",
            AsyncEventKind::PathMigErr => "path migration request error",
            AsyncEventKind::DeviceFatal => "local catastrophic error",
            AsyncEventKind::PortActive => "port active",
            AsyncEventKind::PortErr => "port error",
            AsyncEventKind::LidChange => "LID change",
            AsyncEventKind::PkeyChange => "P_Key change",
            AsyncEventKind::SmChange => "SM change",
            AsyncEventKind::SrqErr => "SRQ catastrophic error",
            AsyncEventKind::SrqLimitReached => "SRQ limit reached",
            AsyncEventKind::QpLastWqeReached => "last WQE reached",
            AsyncEventKind::ClientReregister => "client reregistration",
            AsyncEventKind::GidChange => "GID table change",
            AsyncEventKind::WqFatal => "WQ fatal",
            AsyncEventKind::Unknown(_) => "unknown",
        }
    }

    /// Whether [`AsyncEvent::element`] is a port number.
    pub fn is_port_event(self) -> bool {
        matches!(
            self,
            AsyncEventKind::PortActive
                | AsyncEventKind::PortErr
                | AsyncEventKind::LidChange
                | AsyncEventKind::PkeyChange
                | AsyncEventKind::SmChange
                | AsyncEventKind::ClientReregister
                | AsyncEventKind::GidChange
        )
    }
}

impl From<u32> for AsyncEventKind {
    fn from(v: u32) -> AsyncEventKind {
        usize::try_from(v)
            .ok()
            .and_then(|i| Self::KNOWN.get(i).copied())
            .unwrap_or(AsyncEventKind::Unknown(v))
    }
}

impl std::fmt::Display for AsyncEventKind {
    /// [`AsyncEventKind::as_str`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<AsyncEventKind> for u32 {
    fn from(k: AsyncEventKind) -> u32 {
        k.code()
    }
}

/// An async event (`ibv_async_event`): something happened to a completion queue, queue pair, shared
/// receive queue, port or the device, outside any work request's completion. Nothing needs to be
/// acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AsyncEvent {
    /// What happened.
    pub kind: AsyncEventKind,
    /// To what: the `id` of the completion queue ([`crate::Context::create_cq`]), queue pair
    /// ([`crate::QueuePairBuilder::set_context`]) or shared receive queue
    /// ([`crate::ProtectionDomain::create_srq_with_id`]), or the port number for port events.
    pub element: u64,
}

impl From<uapi::ib_uverbs_async_event_desc> for AsyncEvent {
    fn from(d: uapi::ib_uverbs_async_event_desc) -> AsyncEvent {
        AsyncEvent {
            kind: AsyncEventKind::from(d.event_type),
            element: d.element,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_is_ibv_event_type() {
        assert_eq!(AsyncEventKind::from(0), AsyncEventKind::CqErr);
        assert_eq!(AsyncEventKind::from(3), AsyncEventKind::QpAccessErr);
        assert_eq!(AsyncEventKind::from(4), AsyncEventKind::CommEst);
        assert_eq!(AsyncEventKind::from(15), AsyncEventKind::SrqLimitReached);
        assert_eq!(AsyncEventKind::from(19), AsyncEventKind::WqFatal);
        assert_eq!(AsyncEventKind::from(20), AsyncEventKind::Unknown(20));
        for v in 0..25 {
            assert_eq!(AsyncEventKind::from(v).code(), v);
        }
        assert!(AsyncEventKind::PortActive.is_port_event());
        assert!(!AsyncEventKind::QpFatal.is_port_event());
    }
}
