//! The contract every backend implements: one trait per verbs object whose behaviour depends on the
//! device.
//!
//! A backend is the Rust counterpart of an rdma-core provider. [`Provider`] is its device context:
//! the driver data of `GET_CONTEXT`, and the constructors of its objects; [`CqBackend`],
//! [`QpBackend`], [`SrqBackend`] and [`AhBackend`] are what those objects do. Objects whose commands
//! carry no driver data (memory regions, memory windows, completion channels) are the same on every
//! backend and live in [`crate::cmd`]; a backend refuses one it lacks through its [`Provider`]
//! ([`Provider::supports`], which also says what it offers beyond the verbs every device has: a
//! [`Capability`]).
//!
//! A backend implements the traits directly: each operation is written once, in its trait impl.
//! The verbs layer ([`crate::verbs`]) holds each object as an enum over the backends that
//! implements the same trait, each method a `match` that calls the backend's, which inlines on the
//! data path where a trait object's call could not; the traits are the contract that keeps the
//! backends' signatures the same. A caller names the trait to call its methods (`use
//! uverbs_drivers::backend::CqBackend;`).

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use uverbs_uapi as uapi;

use crate::cmd::srq::SrqInit;
use crate::cmd::{self, QpInit};
use crate::error::{Error, Result, Verb};
use crate::ucontext::Ucontext;
use crate::wc::WorkCompletion;
use crate::wr::{PostError, RecvWr, SendWr};

/// A backend's device context: what it learnt from `GET_CONTEXT`, what its objects share, and the
/// constructors of its objects.
pub trait Provider: Sized + std::fmt::Debug + Send + Sync + 'static {
    /// The uverbs ABI versions (sysfs `abi_version`) this backend speaks, inclusive.
    const ABI_VERSIONS: (u32, u32);

    /// Its completion queue.
    type Cq: CqBackend;
    /// Its queue pair, whose UD sends name this backend's address handles.
    type Qp: QpBackend<Ah = Self::Ah>;
    /// Its shared receive queue ([`NoObject`] for a backend without: then `create_srq`'s default
    /// answers [`Error::Unsupported`]).
    type Srq: SrqBackend;
    /// Its address handle ([`NoObject`] for a backend without).
    type Ah: AhBackend;

    /// The driver data of `GET_CONTEXT`: the request bytes (`UHW_IN`) and the size of the response
    /// (`UHW_OUT`).
    fn context_request() -> (Vec<u8>, usize);

    /// Builds the backend's context on `uctx` from the driver's `GET_CONTEXT` response.
    fn from_context_response(uctx: Arc<Ucontext>, resp: &[u8]) -> Result<Self>;

    /// Formats the raw firmware version of `QUERY_DEVICE` as this driver's userspace library does.
    fn format_fw_ver(raw: u64) -> String;

    /// The user context the backend's objects are created on.
    fn ucontext(&self) -> &Arc<Ucontext>;

    /// `ALLOC_PD` with this driver's data; the new protection domain's handle.
    fn alloc_pd(&self) -> Result<u32> {
        cmd::alloc_pd(self.ucontext(), &mut [])
    }

    /// The device's clock, for converting completion timestamps to wall-clock time;
    /// [`Error::Unsupported`] where the backend has none.
    fn clock(&self) -> Result<Arc<dyn ClockSource>> {
        Err(Error::Unsupported {
            verb: Verb::ReadClock,
        })
    }

    /// Whether this backend offers `capability` as far as it is the backend's to say: its own code
    /// (binding memory windows, moderating, resizing or timestamping completions) or what its
    /// kernel driver does where the kernel reports nothing (dma-buf regions, changing a region's
    /// memory). No, unless it says so. [`crate::verbs::DeviceContext::supports`] combines this
    /// with what the device reports; [`Capability`] says which decides each.
    fn supports(&self, capability: Capability) -> bool {
        let _ = capability;
        false
    }

    /// Creates a completion queue.
    fn create_cq(self: &Arc<Self>, init: &CqInit<'_>) -> Result<Self::Cq> {
        let _ = init;
        Err(Error::Unsupported {
            verb: Verb::CreateCq,
        })
    }

    /// Creates a queue pair completing on `send` and `recv`, taking its receives from `srq` if it is
    /// given (then `init` asks for no receive queue).
    fn create_qp(
        self: &Arc<Self>,
        init: &QpInit,
        send: &Self::Cq,
        recv: &Self::Cq,
        srq: Option<&Self::Srq>,
    ) -> Result<Self::Qp> {
        let _ = (init, send, recv, srq);
        Err(Error::Unsupported {
            verb: Verb::CreateQp,
        })
    }

    /// Creates a shared receive queue.
    fn create_srq(self: &Arc<Self>, init: &SrqInit) -> Result<Self::Srq> {
        let _ = init;
        Err(Error::Unsupported {
            verb: Verb::CreateSrq,
        })
    }

    /// Creates an address handle in protection domain `pd`.
    fn create_ah(self: &Arc<Self>, pd: u32, init: &AhInit) -> Result<Self::Ah> {
        let _ = (pd, init);
        Err(Error::Unsupported {
            verb: Verb::CreateAh,
        })
    }
}

/// What a device may offer beyond the verbs every device has, asked with
/// [`crate::verbs::DeviceContext::supports`] (`uverbs::Context::supports`). Each is answered by the
/// device's attributes where the kernel reports them, by a probe of the kernel where it reports
/// nothing but can be asked without side effects, and otherwise by the backend
/// ([`Provider::supports`]); each variant says which. Where a capability is missing, its verbs
/// answer [`Error::Unsupported`] naming the verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Capability {
    /// Type 2 memory windows: `ALLOC_MW`, binding by work request, invalidation. The backend
    /// builds the bind requests, and the device reports windows (`max_mw` and
    /// `IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A` or `_2B`).
    MemoryWindows,
    /// Completion moderation (`EX_MODIFY_CQ`): the backend moderates, and the device reports a
    /// moderation count or period (`cq_moderation_caps`).
    CqModeration,
    /// Resizing a completion queue (`RESIZE_CQ`) while it holds completions: the backend's.
    CqResize,
    /// Completion timestamps (`IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION`): the backend reads them
    /// from its completions, and the device reports a timestamp mask.
    CompletionTimestamps,
    /// The device's clock as wall-clock time ([`Provider::clock`]): the backend has one and the
    /// kernel lends it (mlx5: the clock-info page, which asking maps, once per context).
    DeviceClock,
    /// On-demand paging of explicit regions (`IB_UVERBS_ACCESS_ON_DEMAND`) and `ADVISE_MR`: the
    /// device reports `IB_ODP_SUPPORT` (nothing of the backend: registration is the same on
    /// every backend).
    OnDemandPaging,
    /// Implicit on-demand regions (the whole address space): the device reports
    /// `IB_ODP_SUPPORT` and `IB_ODP_SUPPORT_IMPLICIT`.
    ImplicitOnDemandPaging,
    /// Regions of dma-buf memory (`REG_DMABUF_MR`): the backend says whether its kernel driver
    /// registers them (the kernel reports it nowhere, and refuses only once the protection
    /// domain has been looked up).
    DmabufRegions,
    /// `REREG_MR` of a region's protection domain and access flags: asked of the kernel, which
    /// answers `EOPNOTSUPP` for a driver without it before it looks at the request (probed once
    /// per context, with a handle that names no region).
    Rereg,
    /// `REREG_MR` of a region's memory (`IB_MR_REREG_TRANS`): [`Capability::Rereg`], and the
    /// backend says its kernel driver changes a region's translation.
    ReregMemory,
}

impl Capability {
    /// Every capability, in declaration order.
    pub const ALL: &'static [Capability] = &[
        Capability::MemoryWindows,
        Capability::CqModeration,
        Capability::CqResize,
        Capability::CompletionTimestamps,
        Capability::DeviceClock,
        Capability::OnDemandPaging,
        Capability::ImplicitOnDemandPaging,
        Capability::DmabufRegions,
        Capability::Rereg,
        Capability::ReregMemory,
    ];

    /// A short name (`memory windows`, `CQ moderation` ...).
    pub fn name(self) -> &'static str {
        match self {
            Capability::MemoryWindows => "memory windows",
            Capability::CqModeration => "CQ moderation",
            Capability::CqResize => "CQ resize",
            Capability::CompletionTimestamps => "completion timestamps",
            Capability::DeviceClock => "device clock",
            Capability::OnDemandPaging => "on-demand paging",
            Capability::ImplicitOnDemandPaging => "implicit on-demand paging",
            Capability::DmabufRegions => "dma-buf regions",
            Capability::Rereg => "rereg of protection domain and access",
            Capability::ReregMemory => "rereg of memory",
        }
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A device's free-running clock as wall-clock time: what a backend with completion timestamps
/// keeps (mlx5: the clock-info page the kernel maps).
pub trait ClockSource: std::fmt::Debug + Send + Sync {
    /// Nanoseconds since the Unix epoch at device time `timestamp`.
    fn to_unix_nanos(&self, timestamp: u64) -> u64;
}

/// What creating a completion queue takes.
#[derive(Debug, Clone, Copy)]
pub struct CqInit<'a> {
    /// At least this many completions (1 or more).
    pub cqe: u32,
    /// What its completion and async events carry.
    pub user_handle: u64,
    /// The completion vector.
    pub comp_vector: u32,
    /// The completion channel its events go to.
    pub channel: Option<BorrowedFd<'a>>,
    /// `IB_UVERBS_CQ_FLAGS_*`: `TIMESTAMP_COMPLETION` asks for the device's clock in every
    /// completion ([`crate::wc::TimestampedCompletion`], from `CqBackend::poll_timestamped`).
    pub flags: u32,
}

/// What creating an address handle takes: the kernel's address attributes, and what the caller knows
/// of the port and the source GID (a backend that builds the address itself needs them).
#[derive(Debug, Clone, Copy)]
pub struct AhInit {
    /// The address, as `CREATE_AH` carries it.
    pub attr: uapi::ib_uverbs_ah_attr,
    /// The port's link layer is Ethernet (RoCE).
    pub ethernet: bool,
    /// The source GID is a RoCE v2 one (the datagram goes in UDP/IP).
    pub roce_v2: bool,
}

/// A backend's completion queue.
pub trait CqBackend: std::fmt::Debug + Send + Sync {
    /// The kernel's handle.
    fn handle(&self) -> u32;

    /// The open device file (and user context) the queue belongs to: its handle means nothing in
    /// another.
    fn ucontext(&self) -> &Arc<Ucontext>;

    /// How many completions the queue holds.
    fn entries(&self) -> u32;

    /// Fills `out` with up to `out.len()` completions, oldest first, and returns how many. No
    /// system call. `C` is the caller's completion type: each [`WorkCompletion`] is written into
    /// `out` as it is read off the ring.
    fn poll<C: From<WorkCompletion>>(&self, out: &mut [C]) -> Result<usize>;

    /// Takes at most one completion (with its device timestamp when `timestamps`, as
    /// [`poll_timestamped`](CqBackend::poll_timestamped)), and says whether another may be waiting
    /// behind it: `false` when the backend saw the next entry not yet written (a lending poll ends
    /// there instead of polling again). The hint may say `true` when nothing is waiting.
    #[inline]
    fn poll_one(
        &self,
        out: &mut [crate::wc::TimestampedCompletion; 1],
        timestamps: bool,
    ) -> Result<(usize, bool)> {
        let n = if timestamps {
            self.poll_timestamped(out)?
        } else {
            self.poll(out)?
        };
        Ok((n, n == 1))
    }

    /// Arms the queue for its next completion (or next solicited one).
    fn req_notify(&self, solicited_only: bool) -> Result<()> {
        let _ = solicited_only;
        Err(Error::Unsupported {
            verb: Verb::ReqNotifyCq,
        })
    }

    /// A completion event of this queue was read from its channel (rdma-core's `cq_event`).
    fn event(&self) {}

    /// [`CqBackend::poll`] with each completion's device timestamp, for a CQ created with
    /// `IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION`; [`Error::Unsupported`] where the backend has no
    /// timestamps (it refuses such CQs too).
    fn poll_timestamped<C: From<crate::wc::TimestampedCompletion>>(
        &self,
        out: &mut [C],
    ) -> Result<usize> {
        let _ = out;
        Err(Error::Unsupported { verb: Verb::PollCq })
    }

    /// `RESIZE_CQ`: room for at least `cqe` completions, those waiting kept in order; returns the
    /// new capacity. Pollers on other threads may run meanwhile. [`Error::Unsupported`] where
    /// the backend cannot.
    fn resize(&self, cqe: u32) -> Result<u32> {
        let _ = cqe;
        Err(Error::Unsupported {
            verb: Verb::ResizeCq,
        })
    }

    /// `EX_MODIFY_CQ`: an event after `count` completions or `period_us` microseconds.
    fn moderate(&self, count: u16, period_us: u16) -> Result<()> {
        let _ = (count, period_us);
        Err(Error::Unsupported {
            verb: Verb::ModifyCq,
        })
    }
}

/// A batch of send requests being written into a queue pair's send queue, one request at a time
/// ([`QpBackend::stage_send`]), then posted whole ([`QpBackend::submit_sends`]) or taken back
/// ([`QpBackend::abandon_sends`]).
///
/// Each request is checked and written into the ring as it is added, past what the device and the
/// poller have been told of: nothing is visible to either until the submit publishes the batch
/// (mlx5: the hand-off's head, the doorbell record and the doorbell; rxe: the producer index and
/// the doorbell), so a batch refused, abandoned, or forgotten (`mem::forget`) is posted by nobody:
/// the next post or batch writes over it. The send queue hands each batch a token when its first
/// request goes in; any other post or batch on the queue in between takes the queue back and
/// makes that token stale, and the batch is then refused whole.
#[derive(Debug, Default)]
pub struct SendStage {
    /// The send queue's token for this batch (0: nothing written yet): from
    /// [`stage_token`], so never another batch's, of any queue, while the process lives.
    pub(crate) token: u64,
    /// Requests added so far, refused ones included.
    len: usize,
    /// The first request refused: then the batch posts nothing.
    failure: Option<PostError>,
    /// Submitted or abandoned.
    pub(crate) done: bool,
}

impl SendStage {
    /// An empty batch.
    pub fn new() -> SendStage {
        SendStage::default()
    }

    /// How many requests were added.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no request was added.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the batch was submitted or abandoned.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Whether a request was refused (then the rest are only counted): adds one if so.
    #[inline(always)]
    pub fn skip_if_refused(&mut self) -> bool {
        if self.failure.is_some() {
            self.len += 1;
            true
        } else {
            false
        }
    }

    /// Counts a request written.
    #[inline(always)]
    pub(crate) fn added(&mut self) {
        self.len += 1;
    }

    /// Refuses the request being added (the first refusal is the batch's), and counts it.
    #[cold]
    pub fn refuse(&mut self, error: Error) {
        if self.failure.is_none() {
            self.failure = Some(PostError {
                index: self.len,
                error,
            });
        }
        self.len += 1;
    }

    /// Ends the batch: its refusal, if a request was refused.
    #[inline(always)]
    pub(crate) fn finish(&mut self) -> Option<PostError> {
        self.done = true;
        self.failure.take()
    }
}

/// A fresh token for a staging: unique in the process (a 64-bit counter that would take
/// centuries to wrap), so a [`SendStage`] matches only the staging its own queue opened for it.
#[inline]
pub(crate) fn stage_token() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// How a send queue whose open staging has token `open` takes a request of the batch holding
/// `token`: `Ok(true)` opens a staging for it (its first request), `Ok(false)` adds it to the
/// batch's own, and a token no longer open is refused (another post came in between).
#[inline(always)]
pub(crate) fn claim_staging(open: u64, token: u64) -> Result<bool> {
    if token == 0 {
        Ok(true)
    } else if token == open {
        Ok(false)
    } else {
        Err(batch_interrupted())
    }
}

/// The refusal of a batch that another post or batch on its send queue came in the middle of.
#[cold]
pub(crate) fn batch_interrupted() -> Error {
    Error::InvalidArgument {
        verb: Verb::PostSend,
        what: "another post on this queue pair came between the batch's requests (the batch \
               was abandoned: post it again)"
            .into(),
    }
}

/// A backend's queue pair.
pub trait QpBackend: std::fmt::Debug + Send + Sync {
    /// The address handle type its UD sends name.
    type Ah;

    /// The kernel's handle.
    fn handle(&self) -> u32;

    /// The queue pair number.
    fn qpn(&self) -> u32;

    /// The capacities it really has.
    fn cap(&self) -> uapi::ib_uverbs_qp_cap;

    /// Its state as of the last successful modify (`IB_QPS_*`).
    fn state(&self) -> u8;

    /// `MODIFY_QP`, already checked against the state machine.
    fn modify(&self, req: &uapi::ib_uverbs_modify_qp) -> Result<()>;

    /// `QUERY_QP`.
    fn query(&self, attr_mask: u32) -> Result<uapi::ib_uverbs_query_qp_resp> {
        let _ = attr_mask;
        Err(Error::Unsupported {
            verb: Verb::QueryQp,
        })
    }

    /// Posts send work requests and rings the doorbell once for those posted. `ah` gives a UD
    /// request's address handle. Without `ALL`, the first request that is invalid or finds the
    /// queue full stops the post ([`PostError::index`]): those before it are posted. With `ALL` (a
    /// batch), all or nothing: when one is refused, none is posted and the index names it;
    /// `index == wrs.len()` is then not a refusal: every request was posted and only the doorbell
    /// failed (a backend whose doorbell is a system call). Callers use
    /// [`post_send`](QpBackend::post_send); a batch stages its requests instead
    /// ([`stage_send`](QpBackend::stage_send)).
    ///
    /// # Safety
    /// The device reads (sends, RDMA writes) or writes (RDMA reads, atomics) the entries' memory until
    /// each request completes: it must stay allocated, and unwritten (unaccessed, for reads and
    /// atomics), until the completion has been polled. Inline data is copied during the call.
    unsafe fn post_sends<'a, const ALL: bool, W: AsRef<SendWr<'a>>>(
        &self,
        wrs: &[W],
        ah: impl Fn(&W) -> Option<&Self::Ah>,
    ) -> std::result::Result<(), PostError>;

    /// Posts receive work requests, stopping at the first refused or (`ALL`) all or nothing, as
    /// [`post_sends`](QpBackend::post_sends) does.
    ///
    /// # Safety
    /// The device writes the entries' memory until each receive completes: nothing may access or
    /// free it before the completion has been polled.
    unsafe fn post_recvs<'a, const ALL: bool, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError>;

    /// Adds a send request to `stage`: checks it and writes it into the send queue unpublished
    /// (see [`SendStage`]); a refusal is recorded there, and the batch will post nothing.
    /// `ah` is a UD request's address handle.
    fn stage_send(&self, stage: &mut SendStage, wr: &SendWr<'_>, ah: Option<&Self::Ah>) {
        let _ = (wr, ah);
        stage.refuse(Error::Unsupported {
            verb: Verb::PostSend,
        });
    }

    /// Posts the requests of `stage`, all of them with one doorbell, or (a request was refused, the
    /// queue pair is not in RTS, another post came in between) none. `index == stage.len()` in
    /// the error: every request was posted and only the doorbell failed (rxe's system call).
    ///
    /// # Safety
    /// As [`QpBackend::post_sends`], for every request of the batch.
    unsafe fn submit_sends(&self, stage: &mut SendStage) -> std::result::Result<(), PostError> {
        match stage.finish() {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }

    /// Takes back the requests of `stage` (nothing of them is posted).
    fn abandon_sends(&self, stage: &mut SendStage) {
        stage.finish();
    }

    /// Posts send work requests, stopping at the first refused (`ibv_post_send`).
    ///
    /// # Safety
    /// As [`QpBackend::post_sends`].
    #[inline(always)]
    unsafe fn post_send<'a, W: AsRef<SendWr<'a>>>(
        &self,
        wrs: &[W],
        ah: impl Fn(&W) -> Option<&Self::Ah>,
    ) -> std::result::Result<(), PostError> {
        // SAFETY: the contract is this function's.
        unsafe { self.post_sends::<false, W>(wrs, ah) }
    }

    /// Posts receive work requests, stopping at the first refused.
    ///
    /// # Safety
    /// As [`QpBackend::post_recvs`].
    #[inline(always)]
    unsafe fn post_recv<'a, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        // SAFETY: the contract is this function's.
        unsafe { self.post_recvs::<false, W>(wrs) }
    }

    /// Posts receive work requests all or nothing (a batch).
    ///
    /// # Safety
    /// As [`QpBackend::post_recvs`].
    #[inline(always)]
    unsafe fn post_recv_batch<'a, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        // SAFETY: the contract is this function's.
        unsafe { self.post_recvs::<true, W>(wrs) }
    }
}

/// A backend's shared receive queue.
pub trait SrqBackend: std::fmt::Debug + Send + Sync {
    /// The kernel's handle.
    fn handle(&self) -> u32;

    /// The open device file (and user context) the queue belongs to.
    fn ucontext(&self) -> &Arc<Ucontext>;

    /// The SRQ number.
    fn srqn(&self) -> u32;

    /// Receive work requests it really holds.
    fn capacity(&self) -> u32;

    /// Scatter entries per receive work request.
    fn max_sge(&self) -> u32;

    /// Arms the limit event (0 disarms).
    fn set_limit(&self, limit: u32) -> Result<()> {
        let _ = limit;
        Err(Error::Unsupported {
            verb: Verb::ModifySrq,
        })
    }

    /// `QUERY_SRQ`: (max_wr, max_sge, limit).
    fn query(&self) -> Result<(u32, u32, u32)> {
        Err(Error::Unsupported {
            verb: Verb::QuerySrq,
        })
    }

    /// Posts receive work requests, stopping as [`QpBackend::post_send`] does.
    ///
    /// # Safety
    /// As [`QpBackend::post_recv`].
    unsafe fn post_recv<'a, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError>;
}

/// A backend's address handle.
pub trait AhBackend: std::fmt::Debug + Send + Sync {
    /// The kernel's handle, where the kernel keeps one.
    fn handle(&self) -> Option<u32>;
}

/// The object a backend does not have (`type Srq = NoObject;`): no value of it exists, so its
/// methods never run, and the backend's constructor for it keeps [`Provider`]'s default, which
/// answers [`Error::Unsupported`] naming the verb.
#[derive(Debug)]
pub enum NoObject {}

impl CqBackend for NoObject {
    fn handle(&self) -> u32 {
        match *self {}
    }
    fn ucontext(&self) -> &Arc<Ucontext> {
        match *self {}
    }
    fn entries(&self) -> u32 {
        match *self {}
    }
    fn poll<C: From<WorkCompletion>>(&self, _: &mut [C]) -> Result<usize> {
        match *self {}
    }
}

impl SrqBackend for NoObject {
    fn handle(&self) -> u32 {
        match *self {}
    }
    fn ucontext(&self) -> &Arc<Ucontext> {
        match *self {}
    }
    fn srqn(&self) -> u32 {
        match *self {}
    }
    fn capacity(&self) -> u32 {
        match *self {}
    }
    fn max_sge(&self) -> u32 {
        match *self {}
    }
    unsafe fn post_recv<'a, W: AsRef<RecvWr<'a>>>(
        &self,
        _: &[W],
    ) -> std::result::Result<(), PostError> {
        match *self {}
    }
}

impl AhBackend for NoObject {
    fn handle(&self) -> Option<u32> {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    use super::Capability;

    /// `Capability::ALL` lists every variant once, in declaration order, and names are unique.
    #[test]
    fn every_capability_is_listed_once() {
        // A variant added to the enum fails this match until it is given its place here (and so
        // in `ALL`).
        let index = |c: Capability| match c {
            Capability::MemoryWindows => 0,
            Capability::CqModeration => 1,
            Capability::CqResize => 2,
            Capability::CompletionTimestamps => 3,
            Capability::DeviceClock => 4,
            Capability::OnDemandPaging => 5,
            Capability::ImplicitOnDemandPaging => 6,
            Capability::DmabufRegions => 7,
            Capability::Rereg => 8,
            Capability::ReregMemory => 9,
        };
        assert_eq!(Capability::ALL.len(), 10);
        for (i, &c) in Capability::ALL.iter().enumerate() {
            assert_eq!(index(c), i, "{c}");
        }
        let mut names: Vec<&str> = Capability::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Capability::ALL.len());
    }
}
