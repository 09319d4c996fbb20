//! The verbs fixture the suites share: polling a CQ with a deadline, waiting for one work request's
//! completion, connecting two RC queue pairs to each other (RESET → INIT → RTR → RTS through
//! [`PreparedQueuePair::handshake`]) with [`RcPair`], and the fences that show nothing more will
//! complete without sleeping ([`read_fence`], [`send_fence`]).

use std::time::{Duration, Instant};

use uverbs::{
    ibv_access_flags, ibv_qp_type, ibv_wc, CompletionQueue, MemoryRegion, PreparedQueuePair,
    ProtectionDomain, QueuePair, QueuePairBuilder, ReceiveRequest, SendRequest, SharedReceiveQueue,
};

/// The GID index the RoCE v2 IPv4-mapped loopback address has on rxe0 over lo (and on the model).
pub const GID_INDEX: u32 = 1;

/// How long [`poll_n`] and [`wait_for`] wait before failing the test: emulated kernels are slow,
/// and a lost completion must fail instead of hanging.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Polls until at least `n` completions arrived, and returns all it polled (a final poll may bring
/// more than `n`, which the caller can check for); panics, showing what did arrive, after
/// [`DEADLINE`].
pub fn poll_n(cq: &CompletionQueue<'_>, n: usize) -> Vec<ibv_wc> {
    let mut out = Vec::new();
    let mut buf = [ibv_wc::default(); 32];
    let deadline = Instant::now() + DEADLINE;
    while out.len() < n {
        out.extend_from_slice(cq.poll(&mut buf).unwrap());
        assert!(
            Instant::now() < deadline,
            "only {} of {n} completions after {} s: {out:?}",
            out.len(),
            DEADLINE.as_secs()
        );
    }
    out
}

/// The completion of `wr_id`: taken from `seen` if an earlier call polled it, else polled for
/// (every other completion polled on the way goes to `seen`); panics after `within`.
pub fn wait_for(
    cq: &CompletionQueue<'_>,
    wr_id: u64,
    seen: &mut Vec<ibv_wc>,
    within: Duration,
) -> ibv_wc {
    if let Some(i) = seen.iter().position(|w| w.wr_id() == wr_id) {
        return seen.remove(i);
    }
    let mut buf = [ibv_wc::default(); 16];
    let deadline = Instant::now() + within;
    loop {
        let mut found = None;
        for w in cq.poll(&mut buf).unwrap() {
            if w.wr_id() == wr_id && found.is_none() {
                found = Some(*w);
            } else {
                seen.push(*w);
            }
        }
        if let Some(w) = found {
            return w;
        }
        assert!(
            Instant::now() < deadline,
            "no completion for {wr_id} after {} s: {seen:?}",
            within.as_secs()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The probe of [`read_fence`]: a word of the responder's (`source`, remotely readable) and one
/// of the requester's (`target`).
pub struct Fence {
    source: MemoryRegion<u64>,
    target: MemoryRegion<u64>,
    marker: u64,
}

impl Fence {
    pub fn new(pd: &ProtectionDomain<'_>) -> Fence {
        Fence {
            source: pd.allocate::<u64>(1).unwrap(),
            target: pd.allocate::<u64>(1).unwrap(),
            marker: 0x5eed_0000,
        }
    }
}

/// Waits ([`DEADLINE`] at most) until everything `requester` posted before has been executed and
/// completed, without polling a CQ: posts an unsignaled RDMA READ of `fence.source` (holding a new
/// marker) into `fence.target` and waits for the marker to land. An RC queue pair executes its
/// requests in order, and its peer executes them in order, so when the read's data is there the
/// peer has consumed the earlier sends (and written their receive completions) and the
/// requester's earlier requests have completed (a read response acknowledges every request
/// before it; rxe's completer and the model's engine write their completions before the read's
/// data). The peer must grant remote reads (e.g. [`RcPair::remote_rw`]).
///
/// What is in the CQs after it is all the requester's earlier requests and their messages will
/// ever complete there: a test polls once and asserts on that, instead of sleeping. It consumes no
/// receive, so it works whatever receives the peer has posted.
pub fn read_fence(requester: &QueuePair<'_>, fence: &mut Fence) {
    fence.marker += 1;
    let marker = fence.marker;
    fence.source[0] = marker;
    assert!(fence.target.write_volatile(0, 0));
    let sge = [fence.target.sge(..).unwrap()];
    let read = SendRequest::rdma_read(0xfe9ce, &sge, fence.source.remote()).unsignaled();
    // SAFETY: both words outlive the queue pair's use of them (the read is waited for here).
    unsafe { requester.post_send_list(&[read]) }.unwrap();
    let got = fence.target.wait_for(0, |v| v == marker, Some(DEADLINE));
    assert_eq!(
        got,
        Some(marker),
        "the fence's RDMA READ did not land in {} s",
        DEADLINE.as_secs()
    );
}

/// The work request ids of [`send_fence`]'s own requests.
pub const FENCE_SEND: u64 = 0xfe5c_0001;
pub const FENCE_RECV: u64 = 0xfe5c_0002;

/// Waits until everything posted before on `a`'s send queue and on `b`'s receive queue has
/// completed (RC, `a` → `b`, both in RTS, both completing on `cq`), and returns every completion
/// polled meanwhile that is not the fence's own: a test asserts on that (usually, that it is
/// empty) where it would otherwise sleep and poll.
///
/// Posts a receive without scatter entries on `b`, then a signaled zero-length SEND on `a`, and
/// waits for both. `a`'s send queue completes in order, so whatever a send request posted before
/// completes comes first; `b`'s receive queue is consumed in order, so a receive posted before the
/// fence's (one a refused post put there all the same) takes the fence's message and completes,
/// and the fence's receive does not: then the wait fails after [`DEADLINE`], showing what did
/// complete. `b` must have no other receive posted.
pub fn send_fence(a: &QueuePair<'_>, b: &QueuePair<'_>, cq: &CompletionQueue<'_>) -> Vec<ibv_wc> {
    // SAFETY: no scatter entries: the device writes no memory for it.
    unsafe { b.post_receive_list(&[ReceiveRequest::new(FENCE_RECV, &[])]) }.unwrap();
    // SAFETY: no gather entries: the device reads no memory for it.
    unsafe { a.post_send_list(&[SendRequest::send(FENCE_SEND, &[])]) }.unwrap();
    let mut seen = Vec::new();
    let s = wait_for(cq, FENCE_SEND, &mut seen, DEADLINE);
    let r = wait_for(cq, FENCE_RECV, &mut seen, DEADLINE);
    assert!(
        s.is_valid() && r.is_valid() && r.len() == 0,
        "the fence failed: {s:?} {r:?}"
    );
    let mut buf = [ibv_wc::default(); 16];
    seen.extend_from_slice(cq.poll(&mut buf).unwrap());
    seen
}

/// Settings a suite applies to both queue pairs' builders beyond [`RcPair`]'s own.
type Tune = Box<dyn Fn(&mut QueuePairBuilder<'_>)>;

/// Two RC queue pairs, `a` and `b`, connected to each other on one protection domain.
///
/// Only what a suite sets reaches the queue pairs' builders (the rest keeps the library's
/// defaults), so a suite states exactly the attributes it did before it shared this:
///
/// ```ignore
/// let (a, b) = RcPair::new(&pd, &cq).depth(16, 16).rnr_retry(7).remote_rw().connect();
/// ```
pub struct RcPair<'a> {
    pd: &'a ProtectionDomain<'a>,
    send_cq: &'a CompletionQueue<'a>,
    recv_cq: &'a CompletionQueue<'a>,
    gid_index: u32,
    context: Option<isize>,
    depth: Option<(u32, u32)>,
    rnr_retry: Option<u8>,
    min_rnr_timer: Option<u8>,
    access: Option<ibv_access_flags>,
    remote_rw: bool,
    tune: Option<Tune>,
}

impl<'a> RcPair<'a> {
    /// Both queue pairs completing sends and receives on `cq`, on [`GID_INDEX`].
    pub fn new(pd: &'a ProtectionDomain<'a>, cq: &'a CompletionQueue<'a>) -> Self {
        RcPair {
            pd,
            send_cq: cq,
            recv_cq: cq,
            gid_index: GID_INDEX,
            context: None,
            depth: None,
            rnr_retry: None,
            min_rnr_timer: None,
            access: None,
            remote_rw: false,
            tune: None,
        }
    }

    /// Sends complete on `send`, receives on `recv` (both queue pairs).
    pub fn cqs(mut self, send: &'a CompletionQueue<'a>, recv: &'a CompletionQueue<'a>) -> Self {
        (self.send_cq, self.recv_cq) = (send, recv);
        self
    }

    /// The GID index both use (else [`GID_INDEX`]).
    pub fn gid_index(mut self, index: u32) -> Self {
        self.gid_index = index;
        self
    }

    /// The user context of `a` (`b` gets `id + 1`), which async events carry.
    pub fn context(mut self, id: isize) -> Self {
        self.context = Some(id);
        self
    }

    /// Send and receive queue depths.
    pub fn depth(mut self, send: u32, recv: u32) -> Self {
        self.depth = Some((send, recv));
        self
    }

    /// RNR retries.
    pub fn rnr_retry(mut self, retry: u8) -> Self {
        self.rnr_retry = Some(retry);
        self
    }

    /// The minimum RNR NAK timer.
    pub fn min_rnr_timer(mut self, timer: u8) -> Self {
        self.min_rnr_timer = Some(timer);
        self
    }

    /// The access flags both grant.
    pub fn access(mut self, access: ibv_access_flags) -> Self {
        self.access = Some(access);
        self
    }

    /// [`QueuePairBuilder::allow_remote_rw`] on both (after [`access`](Self::access)).
    pub fn remote_rw(mut self) -> Self {
        self.remote_rw = true;
        self
    }

    /// Anything else a suite sets on both builders (scatter/gather entries, inline data,
    /// signaling), applied last.
    pub fn tune(mut self, tune: impl Fn(&mut QueuePairBuilder<'_>) + 'static) -> Self {
        self.tune = Some(Box::new(tune));
        self
    }

    /// One side, not yet connected: `b` (the second, whose context is `id + 1`) or `a`.
    pub fn prepare(&self, b: bool) -> PreparedQueuePair<'a> {
        self.side(b, self.recv_cq, None)
    }

    fn side(
        &self,
        b: bool,
        recv_cq: &'a CompletionQueue<'a>,
        srq: Option<&SharedReceiveQueue>,
    ) -> PreparedQueuePair<'a> {
        let mut qp = self
            .pd
            .create_qp(self.send_cq, recv_cq, ibv_qp_type::IBV_QPT_RC);
        qp.set_gid_index(self.gid_index);
        if let Some(id) = self.context {
            qp.set_context(id + isize::from(b));
        }
        if let Some((send, recv)) = self.depth {
            qp.set_max_send_wr(send).set_max_recv_wr(recv);
        }
        if let Some(retry) = self.rnr_retry {
            qp.set_rnr_retry(retry);
        }
        if let Some(timer) = self.min_rnr_timer {
            qp.set_min_rnr_timer(timer);
        }
        if let Some(access) = self.access {
            qp.set_access(access);
        }
        if self.remote_rw {
            qp.allow_remote_rw();
        }
        if let Some(srq) = srq {
            qp.set_srq(srq);
        }
        if let Some(tune) = &self.tune {
            tune(&mut qp);
        }
        qp.build().unwrap()
    }

    /// Both, each handshaken with the other's endpoint: `(a, b)`, both in RTS.
    pub fn connect(self) -> (QueuePair<'a>, QueuePair<'a>) {
        handshake(self.prepare(false), self.prepare(true))
    }

    /// Like [`connect`](Self::connect), but `b` takes its receives from `srq` and completes them
    /// on `recv_cq`, while `a` (the sender, whose own receive queue goes unused) completes
    /// everything on the send CQ. The queue pairs do not borrow `srq`.
    pub fn connect_on_srq(
        self,
        srq: &SharedReceiveQueue,
        recv_cq: &'a CompletionQueue<'a>,
    ) -> (QueuePair<'a>, QueuePair<'a>) {
        let a = self.side(false, self.send_cq, None);
        let b = self.side(true, recv_cq, Some(srq));
        handshake(a, b)
    }
}

/// Connects `a` and `b` to each other (RESET → INIT → RTR → RTS on both).
pub fn handshake<'a>(
    a: PreparedQueuePair<'a>,
    b: PreparedQueuePair<'a>,
) -> (QueuePair<'a>, QueuePair<'a>) {
    let (ea, eb) = (a.endpoint(), b.endpoint());
    (a.handshake(eb).unwrap(), b.handshake(ea).unwrap())
}
