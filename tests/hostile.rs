//! Hostile and bad input: a catalogue of cases, each with what it does and what it must get — a
//! typed error (and nothing posted), or the documented error completion — on both backends (rxe
//! in the VM, the mlx5 model on the host), without a panic, and without a byte written outside
//! what was granted.
//!
//! Guard bytes: every case runs against fresh memory regions laid out as
//!
//! ```text
//!   | guard (registered) | granted (registered) | guard (registered) | tail (not registered) |
//!   0                  PAGE                  2 PAGE               3 PAGE                 4 PAGE
//! ```
//!
//! The region is the first three pages of a buffer of four (a `Vec` registered with spare
//! capacity): requests name the granted page (scatter/gather entries, `RemoteMemory`), and the
//! cases that aim past the region's end land in the tail, which is ours but not registered. Every
//! byte is filled with a pattern before the case and compared after it (with the queue pairs
//! destroyed, so nothing can still write): only the bytes a case declares may change.
//!
//! Where the backends differ, the case says so and why. Device removal at run time (`rdma link
//! delete`) is a separate test, for the VM's rxe only. `UVERBS_HOSTILE_CASE=TEXT` runs only the
//! cases whose name contains TEXT; `--nocapture` prints each case with its expectation.

mod common;

use std::io;
use std::ops::Range;
use std::time::{Duration, Instant};

use common::verbs::{handshake, wait_for};
use common::{any_device, TestDevice};
use nix::errno::Errno;
use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_qp_type, ibv_wc, ibv_wc_status, AddressVector,
    AsyncEventKind, CompletionQueue, Context, ErrorExt, MemoryRegion, ProtectionDomain, QpAttr,
    QueuePair, ReceiveRequest, RemoteMemory, SendRequest, Sge,
};
use uverbs_drivers::Error;

/// The GID index of `::ffff:127.0.0.1` (RoCE v2) on rxe0 over lo, and on the model.
const GID_INDEX: u32 = 1;
const PAGE: usize = 4096;
/// The registered part of a guarded buffer.
const REGION: usize = 3 * PAGE;
/// The whole buffer, the unregistered tail included.
const BUFFER: usize = 4 * PAGE;
/// The granted page.
const GRANTED: Range<usize> = PAGE..2 * PAGE;

// ---------------------------------------------------------------------------------------------
// Guarded memory.

/// Which guarded region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mem {
    /// Local source (full access).
    Tx,
    /// Local receive buffers (full access).
    Rx,
    /// Remote target (full access).
    Target,
    /// Remote, `LOCAL_WRITE | REMOTE_READ` only.
    ReadOnly,
    /// Remote, `LOCAL_WRITE | REMOTE_WRITE` only.
    WriteOnly,
    /// Full access, but in the other protection domain.
    Foreign,
    /// Never named by any request.
    Bystander,
}

const MEMS: [Mem; 7] = [
    Mem::Tx,
    Mem::Rx,
    Mem::Target,
    Mem::ReadOnly,
    Mem::WriteOnly,
    Mem::Foreign,
    Mem::Bystander,
];

/// A memory region over the first [`REGION`] bytes of a buffer of [`BUFFER`] bytes.
struct Guarded {
    mr: MemoryRegion<u8>,
    /// The buffer's start, valid for all [`BUFFER`] bytes (the tail is spare capacity of the
    /// region's `Vec`, which never touches it).
    base: *const u8,
}

impl Guarded {
    fn new(pd: &ProtectionDomain<'_>, access: ibv_access_flags, seed: u8) -> Guarded {
        let mut v: Vec<u8> = Vec::with_capacity(BUFFER);
        v.extend((0..BUFFER).map(|i| pattern(seed, i)));
        v.truncate(REGION);
        let base = v.as_ptr();
        let mr = pd.register(v, access).unwrap();
        assert_eq!(mr.as_ptr(), base, "the buffer did not move");
        Guarded { mr, base }
    }

    /// All [`BUFFER`] bytes, tail included.
    fn bytes(&self) -> Vec<u8> {
        // SAFETY: `base` points to the start of the region's `Vec` buffer, allocated with capacity
        // BUFFER and alive as long as `self.mr`; every byte was initialised before registration
        // and the `Vec` never writes past its length. The devices write only inside the
        // registered part, and the queue pairs are gone when this is called in the checks.
        unsafe { std::slice::from_raw_parts(self.base, BUFFER) }.to_vec()
    }

    fn addr(&self) -> u64 {
        self.base as u64
    }

    /// The granted page as a peer targets it.
    fn granted(&self) -> RemoteMemory {
        RemoteMemory {
            addr: self.addr() + PAGE as u64,
            rkey: self.mr.rkey().key,
            len: PAGE as u64,
        }
    }

    /// `len` bytes at `offset` of the granted page.
    fn sge(&self, offset: usize, len: usize) -> Sge {
        self.mr
            .sge(PAGE + offset..PAGE + offset + len)
            .expect("inside the granted page")
    }
}

fn pattern(seed: u8, i: usize) -> u8 {
    (i as u8).wrapping_mul(0x3b) ^ seed ^ (i >> 8) as u8
}

struct Mems {
    tx: Guarded,
    rx: Guarded,
    target: Guarded,
    ro: Guarded,
    wo: Guarded,
    foreign: Guarded,
    bystander: Guarded,
}

impl Mems {
    fn new(pd: &ProtectionDomain<'_>, other: &ProtectionDomain<'_>) -> Mems {
        use ibv_access_flags as A;
        let all = A::IBV_ACCESS_LOCAL_WRITE
            | A::IBV_ACCESS_REMOTE_WRITE
            | A::IBV_ACCESS_REMOTE_READ
            | A::IBV_ACCESS_REMOTE_ATOMIC;
        Mems {
            tx: Guarded::new(pd, all, 0x11),
            rx: Guarded::new(pd, all, 0x22),
            target: Guarded::new(pd, all, 0x33),
            ro: Guarded::new(
                pd,
                A::IBV_ACCESS_LOCAL_WRITE | A::IBV_ACCESS_REMOTE_READ,
                0x44,
            ),
            wo: Guarded::new(
                pd,
                A::IBV_ACCESS_LOCAL_WRITE | A::IBV_ACCESS_REMOTE_WRITE,
                0x55,
            ),
            foreign: Guarded::new(other, all, 0x66),
            bystander: Guarded::new(pd, all, 0x77),
        }
    }

    fn get(&self, m: Mem) -> &Guarded {
        match m {
            Mem::Tx => &self.tx,
            Mem::Rx => &self.rx,
            Mem::Target => &self.target,
            Mem::ReadOnly => &self.ro,
            Mem::WriteOnly => &self.wo,
            Mem::Foreign => &self.foreign,
            Mem::Bystander => &self.bystander,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The catalogue's machinery.

/// A typed error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    InvalidArgument,
    WrongState(u8),
    QueueFull,
    InvalidModify,
    Unsupported,
    Kernel(Errno),
}

/// What a case must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// This typed error from the call, and nothing posted.
    Typed(Ty),
    /// The designated request completes with one of these statuses.
    Status(&'static [u32]),
    /// A CQ_ERR async event naming the case's CQ.
    CqErr,
    /// It works, as documented (a boundary that is not an error).
    Success,
}

/// What a case got.
#[derive(Debug)]
enum Outcome {
    Refused(io::Error),
    Completion(ibv_wc),
    CqErr(Vec<uverbs::AsyncEvent>, isize),
    Done,
}

struct Case {
    name: &'static str,
    run: fn(&mut Env<'_>) -> Outcome,
    rxe: Expect,
    mlx5: Expect,
    /// Why the backends differ, where they do.
    note: &'static str,
    /// Bytes the case may change (offsets into a guarded buffer).
    writes: Vec<(Mem, Range<usize>)>,
}

fn case(name: &'static str, expect: Expect, run: fn(&mut Env<'_>) -> Outcome) -> Case {
    Case {
        name,
        run,
        rxe: expect,
        mlx5: expect,
        note: "",
        writes: Vec::new(),
    }
}

impl Case {
    fn on_mlx5(mut self, expect: Expect, note: &'static str) -> Case {
        self.mlx5 = expect;
        self.note = note;
        self
    }

    fn on_rxe(mut self, expect: Expect, note: &'static str) -> Case {
        self.rxe = expect;
        self.note = note;
        self
    }

    fn writes(mut self, m: Mem, r: Range<usize>) -> Case {
        self.writes.push((m, r));
        self
    }
}

const INVALID: Expect = Expect::Typed(Ty::InvalidArgument);
const EINVAL: Expect = Expect::Typed(Ty::Kernel(Errno::EINVAL));
const LOC_PROT: Expect = Expect::Status(&[ibv_wc_status::IBV_WC_LOC_PROT_ERR]);
const REM_ACCESS: Expect = Expect::Status(&[ibv_wc_status::IBV_WC_REM_ACCESS_ERR]);
const FLUSHED: Expect = Expect::Status(&[ibv_wc_status::IBV_WC_WR_FLUSH_ERR]);
/// rxe's answer to a request that fails on its local bounds: see [`RXE_LOC_PROT_NOTE`].
const RXE_LOC_PROT: Expect = Expect::Status(&[
    ibv_wc_status::IBV_WC_LOC_PROT_ERR,
    ibv_wc_status::IBV_WC_WR_FLUSH_ERR,
]);
const RXE_LOC_PROT_NOTE: &str = "rxe fails the request on its local bounds and moves the queue \
     pair to ERR; 6.1 completes it with LOC_PROT_ERR, 6.12 completes it (with the rest of the \
     queue) as WR_FLUSH_ERR";
/// rxe's answer to a send whose entry names a key it cannot use (forged, another domain's).
const RXE_LOC_KEY: Expect = Expect::Status(&[
    ibv_wc_status::IBV_WC_LOC_QP_OP_ERR,
    ibv_wc_status::IBV_WC_WR_FLUSH_ERR,
]);
const RXE_LOC_KEY_NOTE: &str = "rxe fails a send whose entry's lkey it cannot use and moves the \
     queue pair to ERR; 6.1 completes it with LOC_QP_OP_ERR, 6.12 completes it (with the rest of \
     the queue) as WR_FLUSH_ERR";
/// rxe's answer when an incoming message does not fit the receive's entries.
const RXE_RECV_PROT: Expect = Expect::Status(&[ibv_wc_status::IBV_WC_LOC_QP_OP_ERR]);
const RXE_RECV_PROT_NOTE: &str = "rxe's responder fails a receive whose entry it cannot write \
     (a bad key, bounds, another domain) as a malformed WQE: LOC_QP_OP_ERR; the mlx5 model \
     reports LOC_PROT_ERR";

/// What a case works with: a connected RC pair `a` → `b` in `pd` on a fresh CQ, with every
/// remote access allowed on the queue pairs (the regions decide), and fresh guarded memory.
struct Env<'a> {
    ctx: &'a Context,
    pd: &'a ProtectionDomain<'a>,
    other_pd: &'a ProtectionDomain<'a>,
    cq: &'a CompletionQueue<'a>,
    a: QueuePair<'a>,
    b: QueuePair<'a>,
    m: Mems,
    mlx5: bool,
    /// Completions polled while waiting for another.
    seen: std::cell::RefCell<Vec<ibv_wc>>,
}

fn rc_builder<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
) -> uverbs::QueuePairBuilder<'a> {
    let mut b = pd.create_qp(cq, cq, ibv_qp_type::IBV_QPT_RC);
    b.set_gid_index(GID_INDEX)
        .set_max_send_wr(8)
        .set_max_recv_wr(8)
        .set_max_send_sge(2)
        .set_max_recv_sge(2)
        .set_max_inline_data(64)
        .set_rnr_retry(7)
        .set_min_rnr_timer(1)
        .set_access(
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_READ
                | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC,
        );
    b
}

fn connect<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
) -> (QueuePair<'a>, QueuePair<'a>) {
    handshake(
        rc_builder(pd, cq).build().unwrap(),
        rc_builder(pd, cq).build().unwrap(),
    )
}

impl Env<'_> {
    /// Waits for the completion of `wr_id` on the case's CQ (keeping the others it polls).
    fn wait(&self, wr_id: u64) -> ibv_wc {
        wait_for(
            self.cq,
            wr_id,
            &mut self.seen.borrow_mut(),
            Duration::from_secs(30),
        )
    }

    /// Posts on `a`, refusal and all.
    fn post_a(&self, reqs: &[SendRequest<'_>]) -> Result<(), io::Error> {
        // SAFETY: the requests name the case's guarded regions (or forged entries the device must
        // refuse); the regions outlive the queue pairs, which are destroyed before the regions
        // are read.
        unsafe { self.a.post_send_list(reqs) }.map_err(io::Error::from)
    }

    fn recv_b(&self, reqs: &[ReceiveRequest<'_>]) -> Result<(), io::Error> {
        // SAFETY: as in `post_a`.
        unsafe { self.b.post_receive_list(reqs) }.map_err(io::Error::from)
    }

    /// Posts one request on `a` and returns its completion, or the refusal.
    fn send_one(&self, req: SendRequest<'_>) -> Outcome {
        match self.post_a(&[req]) {
            Ok(()) => Outcome::Completion(self.wait(req.wr_id())),
            Err(e) => Outcome::Refused(e),
        }
    }

    /// A QP of `pd` on the case's CQ, in RESET.
    fn reset_qp(&self) -> QueuePair<'_> {
        rc_builder(self.pd, self.cq)
            .build()
            .unwrap()
            .into_queue_pair()
    }

    fn loopback_gid(&self) -> uverbs::Gid {
        self.ctx
            .gid_table()
            .iter()
            .find(|g| g.gid_index == GID_INDEX && g.port_num == 1)
            .unwrap()
            .gid
    }
}

fn refused<T, E: Into<io::Error>>(r: Result<T, E>) -> Outcome {
    match r {
        Ok(_) => Outcome::Done,
        Err(e) => Outcome::Refused(e.into()),
    }
}

fn modify(qp: &QueuePair<'_>, attr: QpAttr) -> Outcome {
    refused(qp.modify(&attr))
}

fn to_state(s: ibv_qp_state::Type) -> QpAttr {
    QpAttr {
        qp_state: Some(s),
        ..QpAttr::default()
    }
}

fn init_attr() -> QpAttr {
    QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
        pkey_index: Some(0),
        port_num: Some(1),
        qp_access_flags: Some(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE),
        ..QpAttr::default()
    }
}

/// The RTR attributes towards `remote` on the loopback GID, with source GID index `sgid_index`.
fn rtr_attr(gid: uverbs::Gid, remote: u32, sgid_index: u8) -> QpAttr {
    QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_RTR),
        dest_qp_num: Some(remote),
        ah_attr: Some(AddressVector {
            dgid: Some(gid),
            sgid_index,
            hop_limit: 64,
            port_num: 1,
            ..AddressVector::default()
        }),
        path_mtu: Some(3),
        rq_psn: Some(0),
        max_dest_rd_atomic: Some(1),
        min_rnr_timer: Some(12),
        ..QpAttr::default()
    }
}

fn forged(addr: u64, length: u32, lkey: u32) -> Sge {
    Sge { addr, length, lkey }
}

/// A UD queue pair in RTS on the case's CQ.
fn ud_qp<'a>(env: &'a Env<'_>, pd: &'a ProtectionDomain<'_>) -> QueuePair<'a> {
    pd.create_qp(env.cq, env.cq, ibv_qp_type::IBV_QPT_UD)
        .set_gid_index(GID_INDEX)
        .set_qkey(0x1234)
        .set_max_send_wr(4)
        .set_max_recv_wr(4)
        .set_max_inline_data(32)
        .build()
        .unwrap()
        .activate_ud()
        .unwrap()
}

fn loopback_av(env: &Env<'_>) -> AddressVector {
    AddressVector {
        dgid: Some(env.loopback_gid()),
        sgid_index: GID_INDEX as u8,
        hop_limit: 64,
        port_num: 1,
        ..AddressVector::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The catalogue.

fn catalogue() -> Vec<Case> {
    use ibv_wc_status as S;
    vec![
        // --- Ranges, lengths and entries the library refuses before anything is posted.
        case("sge_range_past_the_region_end", INVALID, |e| {
            refused(e.m.tx.mr.sge(REGION - 4..REGION + 4))
        }),
        case("sge_reversed_range", INVALID, |e| {
            #[allow(clippy::reversed_empty_ranges)]
            refused(e.m.tx.mr.sge(9..8))
        }),
        case("sge_start_past_the_region_end", INVALID, |e| {
            refused(e.m.tx.mr.sge(REGION + 1..))
        }),
        case("post_send_range_past_the_region_end", INVALID, |e| {
            // SAFETY: refused before anything is posted.
            refused(unsafe { e.a.post_send(&mut e.m.tx.mr, ..REGION + 1, 1) })
        }),
        case("post_receive_range_past_the_region_end", INVALID, |e| {
            // SAFETY: refused before anything is posted.
            refused(unsafe { e.b.post_receive(&mut e.m.rx.mr, REGION - 1..REGION + 1, 1) })
        }),
        case("post_send_of_another_pds_region", INVALID, |e| {
            // SAFETY: refused before anything is posted.
            refused(unsafe { e.a.post_send(&mut e.m.foreign.mr, GRANTED, 1) })
        }),
        case("post_receive_into_another_pds_region", INVALID, |e| {
            // SAFETY: refused before anything is posted.
            refused(unsafe { e.b.post_receive(&mut e.m.foreign.mr, GRANTED, 1) })
        }),
        case("too_many_send_sges", INVALID, |e| {
            let n = e.a.caps().max_send_sge as usize + 1;
            let sges = vec![e.m.tx.sge(0, 8); n];
            refused(e.post_a(&[SendRequest::send(1, &sges)]))
        }),
        case("too_many_receive_sges", INVALID, |e| {
            let n = e.b.caps().max_recv_sge as usize + 1;
            let sges = vec![e.m.rx.sge(0, 8); n];
            refused(e.recv_b(&[ReceiveRequest::new(1, &sges)]))
        }),
        case("inline_larger_than_the_qp_allows", INVALID, |e| {
            let big = vec![0x5au8; e.a.caps().max_inline_data as usize + 1];
            refused(e.post_a(&[SendRequest::send_inline(1, &big)]))
        }),
        case(
            "inline_rdma_write_larger_than_the_qp_allows",
            INVALID,
            |e| {
                let big = vec![0x5au8; e.a.caps().max_inline_data as usize + 1];
                let remote = e.m.target.granted();
                refused(e.post_a(&[SendRequest::rdma_write_inline(1, &big, remote)]))
            },
        ),
        case("message_over_2_gib", INVALID, |e| {
            // Forged lengths: the message limit refuses it before the device could look.
            let lkey = e.m.tx.mr.lkey();
            let addr = e.m.tx.granted().addr;
            let sges = [forged(addr, 1 << 31, lkey), forged(addr, 1, lkey)];
            refused(e.post_a(&[SendRequest::send(1, &sges)]))
        }),
        case("atomic_on_an_unaligned_remote_address", INVALID, |e| {
            let sge = [e.m.rx.sge(0, 8)];
            let remote = e.m.target.granted().offset(4).unwrap();
            refused(e.post_a(&[SendRequest::fetch_and_add(1, &sge, remote, 1)]))
        }),
        case("atomic_into_a_short_local_buffer", INVALID, |e| {
            let sge = [e.m.rx.sge(0, 4)];
            let remote = e.m.target.granted();
            refused(e.post_a(&[SendRequest::compare_and_swap(1, &sge, remote, 0, 1)]))
        }),
        // --- Boundaries that are not errors.
        case("zero_length_send", Expect::Success, |e| {
            let r = [e.m.rx.sge(0, 16)];
            e.recv_b(&[ReceiveRequest::new(2, &r)]).unwrap();
            e.post_a(&[SendRequest::send(1, &[])]).unwrap();
            let (s, r) = (e.wait(1), e.wait(2));
            assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            assert_eq!(r.len(), 0);
            Outcome::Done
        }),
        case("zero_length_entry_in_a_list", Expect::Success, |e| {
            let r = [e.m.rx.sge(0, 16)];
            e.recv_b(&[ReceiveRequest::new(2, &r)]).unwrap();
            let sges = [e.m.tx.sge(0, 0), e.m.tx.sge(100, 8)];
            e.post_a(&[SendRequest::send(1, &sges)]).unwrap();
            let (s, r) = (e.wait(1), e.wait(2));
            assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            assert_eq!(r.len(), 8);
            let got = e.m.rx.mr[PAGE..PAGE + 8].to_vec();
            assert_eq!(got, e.m.tx.mr[PAGE + 100..PAGE + 108].to_vec());
            Outcome::Done
        })
        .writes(Mem::Rx, PAGE..PAGE + 8),
        case("overlapping_gather_entries", Expect::Success, |e| {
            // The same bytes gathered twice: legal, and sent as given.
            let r = [e.m.rx.sge(0, 64)];
            e.recv_b(&[ReceiveRequest::new(2, &r)]).unwrap();
            let sges = [e.m.tx.sge(0, 24), e.m.tx.sge(8, 24)];
            e.post_a(&[SendRequest::send(1, &sges)]).unwrap();
            let (s, r) = (e.wait(1), e.wait(2));
            assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            assert_eq!(r.len(), 48);
            let tx = &e.m.tx.mr[PAGE..PAGE + 32];
            let expected: Vec<u8> = tx[..24].iter().chain(&tx[8..32]).copied().collect();
            assert_eq!(e.m.rx.mr[PAGE..PAGE + 48].to_vec(), expected);
            Outcome::Done
        })
        .writes(Mem::Rx, PAGE..PAGE + 48),
        case("overlapping_scatter_entries", Expect::Success, |e| {
            // Two entries over the same bytes: filled in order, the second over the first; nothing
            // outside their union is written.
            let r = [e.m.rx.sge(0, 16), e.m.rx.sge(8, 16)];
            e.recv_b(&[ReceiveRequest::new(2, &r)]).unwrap();
            e.post_a(&[SendRequest::send(1, &[e.m.tx.sge(0, 32)])])
                .unwrap();
            let (s, r) = (e.wait(1), e.wait(2));
            assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            assert_eq!(r.len(), 32);
            let tx = &e.m.tx.mr[PAGE..PAGE + 32];
            let expected: Vec<u8> = tx[..8].iter().chain(&tx[16..32]).copied().collect();
            assert_eq!(e.m.rx.mr[PAGE..PAGE + 24].to_vec(), expected);
            Outcome::Done
        })
        .writes(Mem::Rx, PAGE..PAGE + 24),
        // --- A message longer than the receive: the receiver's completion fails; nothing lands
        //     past the receive's entry (the device may have written part of it).
        case(
            "message_longer_than_the_receive",
            Expect::Status(&[S::IBV_WC_LOC_LEN_ERR]),
            |e| {
                let r = [e.m.rx.sge(0, 16)];
                e.recv_b(&[ReceiveRequest::new(1, &r)]).unwrap();
                e.post_a(&[SendRequest::send(2, &[e.m.tx.sge(0, 64)])])
                    .unwrap();
                let sender = e.wait(2);
                // The responder NAKs it: an invalid request (the model); rxe reports a
                // remote operational error.
                let nak: &[u32] = if e.mlx5 {
                    &[S::IBV_WC_REM_INV_REQ_ERR]
                } else {
                    &[S::IBV_WC_REM_INV_REQ_ERR, S::IBV_WC_REM_OP_ERR]
                };
                assert!(nak.contains(&sender.status()), "the sender: {sender:?}");
                Outcome::Completion(e.wait(1))
            },
        )
        .on_rxe(
            RXE_RECV_PROT,
            "rxe fails a receive too short for the message as a malformed WQE \
             (LOC_QP_OP_ERR) and NAKs the sender with a remote operational error",
        )
        .writes(Mem::Rx, PAGE..PAGE + 16),
        // --- Local keys and bounds: the device refuses them with a local protection error.
        case("send_with_a_forged_lkey", LOC_PROT, |e| {
            let g = e.m.tx.granted();
            let sge = [forged(g.addr, 8, e.m.tx.mr.lkey() ^ 0x5a00)];
            e.send_one(SendRequest::send(1, &sge))
        })
        .on_rxe(RXE_LOC_KEY, RXE_LOC_KEY_NOTE),
        case("send_from_before_the_region", LOC_PROT, |e| {
            let sge = [forged(e.m.tx.addr() - 64, 128, e.m.tx.mr.lkey())];
            e.send_one(SendRequest::send(1, &sge))
        })
        .on_rxe(RXE_LOC_PROT, RXE_LOC_PROT_NOTE),
        case("send_straddling_the_region_end", LOC_PROT, |e| {
            let sge = [forged(
                e.m.tx.addr() + REGION as u64 - 8,
                16,
                e.m.tx.mr.lkey(),
            )];
            e.send_one(SendRequest::send(1, &sge))
        })
        .on_rxe(RXE_LOC_PROT, RXE_LOC_PROT_NOTE),
        case("send_from_another_pds_region", LOC_PROT, |e| {
            // A hand-made list can name another domain's entry; the device checks the domain.
            let sge = [e.m.foreign.sge(0, 8)];
            e.send_one(SendRequest::send(1, &sge))
        })
        .on_rxe(RXE_LOC_KEY, RXE_LOC_KEY_NOTE),
        case("receive_into_a_forged_lkey", LOC_PROT, |e| {
            let g = e.m.rx.granted();
            let r = [forged(g.addr, 16, e.m.rx.mr.lkey() ^ 0x5a00)];
            e.recv_b(&[ReceiveRequest::new(1, &r)]).unwrap();
            e.post_a(&[SendRequest::send(2, &[e.m.tx.sge(0, 8)])])
                .unwrap();
            Outcome::Completion(e.wait(1))
        })
        .on_rxe(RXE_RECV_PROT, RXE_RECV_PROT_NOTE),
        case("receive_straddling_the_region_end", LOC_PROT, |e| {
            // A write past the region would land in the unregistered tail.
            let r = [forged(
                e.m.rx.addr() + REGION as u64 - 8,
                64,
                e.m.rx.mr.lkey(),
            )];
            e.recv_b(&[ReceiveRequest::new(1, &r)]).unwrap();
            e.post_a(&[SendRequest::send(2, &[e.m.tx.sge(0, 32)])])
                .unwrap();
            Outcome::Completion(e.wait(1))
        })
        .on_rxe(RXE_RECV_PROT, RXE_RECV_PROT_NOTE),
        case("receive_into_another_pds_region", LOC_PROT, |e| {
            let r = [e.m.foreign.sge(0, 16)];
            e.recv_b(&[ReceiveRequest::new(1, &r)]).unwrap();
            e.post_a(&[SendRequest::send(2, &[e.m.tx.sge(0, 8)])])
                .unwrap();
            Outcome::Completion(e.wait(1))
        })
        .on_rxe(RXE_RECV_PROT, RXE_RECV_PROT_NOTE),
        case("rdma_read_into_a_forged_lkey", LOC_PROT, |e| {
            let g = e.m.rx.granted();
            let sge = [forged(g.addr, 8, e.m.rx.mr.lkey() ^ 0x5a00)];
            e.send_one(SendRequest::rdma_read(1, &sge, e.m.target.granted()))
        })
        .on_rxe(RXE_LOC_PROT, RXE_LOC_PROT_NOTE),
        // --- Remote keys, bounds and rights: the responder refuses, the requester's completion
        //     says REM_ACCESS_ERR, the memory is unchanged.
        case("rdma_write_with_a_forged_rkey", REM_ACCESS, |e| {
            let remote = RemoteMemory {
                rkey: e.m.target.granted().rkey ^ 0x5a00,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 8)], remote))
        }),
        case("rdma_write_to_a_read_only_region", REM_ACCESS, |e| {
            let remote = e.m.ro.granted();
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 64)], remote))
        }),
        case("rdma_read_of_a_write_only_region", REM_ACCESS, |e| {
            let remote = e.m.wo.granted();
            e.send_one(SendRequest::rdma_read(1, &[e.m.rx.sge(0, 64)], remote))
        }),
        case(
            "atomic_on_a_region_without_remote_atomic",
            REM_ACCESS,
            |e| {
                let remote = e.m.wo.granted();
                e.send_one(SendRequest::fetch_and_add(
                    1,
                    &[e.m.rx.sge(0, 8)],
                    remote,
                    1,
                ))
            },
        ),
        case("rdma_write_straddling_the_region_end", REM_ACCESS, |e| {
            // What would spill lands in the unregistered tail.
            let remote = RemoteMemory {
                addr: e.m.target.addr() + REGION as u64 - 8,
                len: 64,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 64)], remote))
        }),
        case("rdma_write_just_past_the_region_end", REM_ACCESS, |e| {
            let remote = RemoteMemory {
                addr: e.m.target.addr() + REGION as u64,
                len: 8,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 8)], remote))
        }),
        case("rdma_read_from_before_the_region", REM_ACCESS, |e| {
            let remote = RemoteMemory {
                addr: e.m.target.addr() - 8,
                len: 16,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_read(1, &[e.m.rx.sge(0, 16)], remote))
        }),
        case("rdma_read_past_the_region_end", REM_ACCESS, |e| {
            let remote = RemoteMemory {
                addr: e.m.target.addr() + REGION as u64 - 8,
                len: 16,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_read(1, &[e.m.rx.sge(0, 16)], remote))
        }),
        case("rdma_write_with_a_revoked_rkey", REM_ACCESS, |e| {
            // The key of a region deregistered just now, aimed at live memory (the target's
            // granted page), so that a write the device wrongly accepted would show.
            let dead =
                e.pd.allocate_with_access::<u8>(
                    64,
                    ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                        | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
                )
                .unwrap();
            let rkey = dead.rkey().key;
            drop(dead);
            let remote = RemoteMemory {
                rkey,
                ..e.m.target.granted()
            };
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 8)], remote))
        }),
        case("rdma_write_to_another_pds_region", REM_ACCESS, |e| {
            let remote = e.m.foreign.granted();
            e.send_one(SendRequest::rdma_write(1, &[e.m.tx.sge(0, 8)], remote))
        }),
        case("atomic_on_another_pds_region", REM_ACCESS, |e| {
            let remote = e.m.foreign.granted();
            e.send_one(SendRequest::compare_and_swap(
                1,
                &[e.m.rx.sge(0, 8)],
                remote,
                0,
                1,
            ))
        }),
        // --- Queue pair states.
        case("send_in_reset", Expect::Typed(Ty::WrongState(0)), |e| {
            let qp = e.reset_qp();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[SendRequest::send(1, &[e.m.tx.sge(0, 8)])]) })
        }),
        case("receive_in_reset", Expect::Typed(Ty::WrongState(0)), |e| {
            let qp = e.reset_qp();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_receive_list(&[ReceiveRequest::new(1, &[e.m.rx.sge(0, 8)])]) })
        }),
        case("send_in_init", Expect::Typed(Ty::WrongState(1)), |e| {
            let qp = e.reset_qp();
            qp.modify(&init_attr()).unwrap();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[SendRequest::send(1, &[e.m.tx.sge(0, 8)])]) })
        }),
        case("send_in_rtr", Expect::Typed(Ty::WrongState(2)), |e| {
            let qp = e.reset_qp();
            qp.modify(&init_attr()).unwrap();
            qp.modify(&rtr_attr(e.loopback_gid(), qp.qp_num(), GID_INDEX as u8))
                .unwrap();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[SendRequest::send(1, &[e.m.tx.sge(0, 8)])]) })
        }),
        case("send_in_error", Expect::Typed(Ty::WrongState(6)), |e| {
            e.a.modify(&to_state(ibv_qp_state::IBV_QPS_ERR)).unwrap();
            refused(e.post_a(&[SendRequest::send(1, &[e.m.tx.sge(0, 8)])]))
        }),
        case(
            "send_after_the_device_moved_the_qp_to_error",
            FLUSHED,
            |e| {
                // The library last set RTS; the device failed the QP on a remote access error. The
                // post goes to the device, which flushes it.
                let bad = RemoteMemory {
                    rkey: e.m.target.granted().rkey ^ 0x5a00,
                    ..e.m.target.granted()
                };
                let sge = [e.m.tx.sge(0, 8)];
                e.post_a(&[SendRequest::rdma_write(2, &sge, bad)]).unwrap();
                let first = e.wait(2);
                assert_eq!(
                    first.error().map(|x| x.0),
                    Some(S::IBV_WC_REM_ACCESS_ERR),
                    "{first:?}"
                );
                e.send_one(SendRequest::rdma_write(1, &sge, e.m.target.granted()))
            },
        ),
        case("full_send_queue", Expect::Typed(Ty::QueueFull), |e| {
            // The peer has no receive and RNR retries for ever: nothing completes.
            let n = e.a.caps().max_send_wr as usize;
            let sge = [e.m.tx.sge(0, 8)];
            let reqs: Vec<_> = (0..n as u64)
                .map(|i| SendRequest::send(100 + i, &sge))
                .collect();
            e.post_a(&reqs).unwrap();
            let outcome = refused(e.post_a(&[SendRequest::send(1, &sge)]));
            // Then the peer takes exactly the `n` accepted sends (one receive at a time: its
            // receive queue may be shorter), so that the fence after the case (see `fence`) can
            // run: a refused send that was posted all the same would take the fence's receive.
            let r = [e.m.rx.sge(0, 8)];
            for i in 0..n as u64 {
                e.recv_b(&[ReceiveRequest::new(200 + i, &r)]).unwrap();
                let (s, r) = (e.wait(100 + i), e.wait(200 + i));
                assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            }
            outcome
        })
        .writes(Mem::Rx, PAGE..PAGE + 8),
        case("full_receive_queue", Expect::Typed(Ty::QueueFull), |e| {
            let n = e.b.caps().max_recv_wr as usize;
            let r = [e.m.rx.sge(0, 8)];
            let reqs: Vec<_> = (0..n as u64)
                .map(|i| ReceiveRequest::new(100 + i, &r))
                .collect();
            e.recv_b(&reqs).unwrap();
            let outcome = refused(e.recv_b(&[ReceiveRequest::new(1, &r)]));
            // Then exactly `n` messages take the accepted receives, in order, so that the fence
            // after the case can run: a refused receive that was posted all the same would take
            // the fence's message.
            let s = [e.m.tx.sge(0, 8)];
            let sends: Vec<_> = (0..n as u64)
                .map(|i| SendRequest::send(200 + i, &s))
                .collect();
            e.post_a(&sends).unwrap();
            for i in 0..n as u64 {
                let (s, r) = (e.wait(200 + i), e.wait(100 + i));
                assert!(s.is_valid() && r.is_valid(), "{s:?} {r:?}");
            }
            outcome
        })
        .writes(Mem::Rx, PAGE..PAGE + 8),
        case(
            "full_shared_receive_queue",
            Expect::Typed(Ty::QueueFull),
            |e| {
                let srq = e.pd.create_srq(4, 1).unwrap();
                let n = srq.caps().max_wr as usize;
                let r = [e.m.rx.sge(0, 8)];
                let reqs: Vec<_> = (0..=n as u64)
                    .map(|i| ReceiveRequest::new(100 + i, &r))
                    .collect();
                // SAFETY: `rx` outlives the SRQ (dropped here).
                let f = unsafe { srq.post_receive_list(&reqs) }.unwrap_err();
                assert_eq!(f.index, n);
                Outcome::Refused(f.error)
            },
        ),
        case("too_many_sges_on_a_shared_receive_queue", INVALID, |e| {
            let srq = e.pd.create_srq(4, 1).unwrap();
            let n = srq.caps().max_sge as usize + 1;
            let r = vec![e.m.rx.sge(0, 8); n];
            // SAFETY: refused before anything is posted.
            refused(unsafe { srq.post_receive_list(&[ReceiveRequest::new(1, &r)]) })
        }),
        case("receive_on_a_qp_that_uses_an_srq", INVALID, |e| {
            let srq = e.pd.create_srq(4, 1).unwrap();
            let qp = rc_builder(e.pd, e.cq)
                .set_srq(&srq)
                .build()
                .unwrap()
                .into_queue_pair();
            qp.modify(&init_attr()).unwrap();
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_receive_list(&[ReceiveRequest::new(1, &[e.m.rx.sge(0, 8)])]) })
        }),
        // --- Attributes and transitions.
        case("reset_to_rts", Expect::Typed(Ty::InvalidModify), |e| {
            modify(&e.reset_qp(), to_state(ibv_qp_state::IBV_QPS_RTS))
        }),
        case("rts_to_init", Expect::Typed(Ty::InvalidModify), |e| {
            modify(&e.a, init_attr())
        }),
        case(
            "init_without_a_port",
            Expect::Typed(Ty::InvalidModify),
            |e| {
                modify(
                    &e.reset_qp(),
                    QpAttr {
                        port_num: None,
                        ..init_attr()
                    },
                )
            },
        ),
        case("init_to_sqd", Expect::Typed(Ty::InvalidModify), |e| {
            let qp = e.reset_qp();
            qp.modify(&init_attr()).unwrap();
            modify(&qp, to_state(ibv_qp_state::IBV_QPS_SQD))
        }),
        case("qp_state_out_of_range", INVALID, |e| {
            modify(&e.a, to_state(7))
        }),
        case("path_mtu_out_of_range", INVALID, |e| {
            modify(
                &e.a,
                QpAttr {
                    path_mtu: Some(9),
                    ..QpAttr::default()
                },
            )
        }),
        case("dest_qp_num_over_24_bits", INVALID, |e| {
            let qp = e.reset_qp();
            qp.modify(&init_attr()).unwrap();
            modify(&qp, rtr_attr(e.loopback_gid(), 1 << 24, GID_INDEX as u8))
        }),
        case("invalid_port_number", EINVAL, |e| {
            modify(
                &e.reset_qp(),
                QpAttr {
                    port_num: Some(2),
                    ..init_attr()
                },
            )
        }),
        // An empty GID table slot: the core's rdma_get_gid_attr says ENODATA.
        case(
            "empty_source_gid_slot_at_rtr",
            Expect::Typed(Ty::Kernel(Errno::ENODATA)),
            |e| {
                let qp = e.reset_qp();
                qp.modify(&init_attr()).unwrap();
                modify(&qp, rtr_attr(e.loopback_gid(), qp.qp_num(), 200))
            },
        ),
        case("query_port_0", EINVAL, |e| refused(e.ctx.query_port(0))),
        case("query_port_past_the_last", EINVAL, |e| {
            refused(e.ctx.query_port(2))
        }),
        case("gid_index_past_the_table_at_build", INVALID, |e| {
            refused(rc_builder(e.pd, e.cq).set_gid_index(200).build())
        }),
        case("retry_count_above_7", INVALID, |e| {
            refused(rc_builder(e.pd, e.cq).set_retry_count(8).build())
        }),
        case("max_send_wr_over_the_device_limit", EINVAL, |e| {
            let max = e.ctx.query_device().unwrap().max_qp_wr();
            refused(rc_builder(e.pd, e.cq).set_max_send_wr(max + 1).build())
        })
        .on_mlx5(
            INVALID,
            "mlx5: the backend sizes the send queue in basic blocks itself and refuses it first",
        ),
        case("max_send_sge_over_the_device_limit", EINVAL, |e| {
            let max = e.ctx.query_device().unwrap().max_sge();
            refused(rc_builder(e.pd, e.cq).set_max_send_sge(max + 1).build())
        })
        .on_mlx5(
            INVALID,
            "mlx5: the backend sizes the send WQE itself and refuses it first",
        ),
        case("cq_of_zero_entries", INVALID, |e| {
            refused(e.ctx.create_cq(0, 0))
        }),
        case("cq_of_negative_entries", INVALID, |e| {
            refused(e.ctx.create_cq(-1, 0))
        }),
        case("cq_over_max_cqe", EINVAL, |e| {
            let max = e.ctx.query_device().unwrap().max_cqe();
            refused(e.ctx.create_cq(max as i32 + 1, 0))
        }),
        case("empty_memory_region", INVALID, |e| {
            refused(e.pd.allocate::<u64>(0))
        }),
        case("srq_limit_above_its_capacity", INVALID, |e| {
            let srq = e.pd.create_srq(4, 1).unwrap();
            refused(srq.arm(srq.caps().max_wr + 1))
        }),
        case("srq_of_zero_requests", INVALID, |e| {
            refused(e.pd.create_srq(0, 1))
        }),
        case("arming_a_cq_without_a_channel", INVALID, |e| {
            refused(e.cq.req_notify(false))
        }),
        case("address_handle_with_an_invalid_gid_index", INVALID, |e| {
            let av = AddressVector {
                sgid_index: 200,
                ..loopback_av(e)
            };
            refused(e.pd.create_ah(&av))
        }),
        case("address_handle_on_port_0", INVALID, |e| {
            let av = AddressVector {
                port_num: 0,
                ..loopback_av(e)
            };
            refused(e.pd.create_ah(&av))
        }),
        // --- Requests the transport does not have.
        case("rdma_write_on_a_ud_qp", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            let sge = [e.m.tx.sge(0, 8)];
            let req = SendRequest::rdma_write(1, &sge, e.m.target.granted());
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[req]) })
        }),
        case("send_on_a_ud_qp_without_a_destination", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            let sge = [e.m.tx.sge(0, 8)];
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[SendRequest::send(1, &sge)]) })
        }),
        case("ud_datagram_over_the_mtu", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            let ah = e.pd.create_ah(&loopback_av(e)).unwrap();
            let mtu = e.ctx.query_port(1).unwrap().active_mtu().bytes().unwrap() as usize;
            let sge = [e.m.tx.mr.sge(0..mtu + 1).unwrap()];
            let req = SendRequest::send_ud(1, &sge, &ah, qp.qp_num(), 0x1234);
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[req]) })
        }),
        case("ud_address_handle_of_another_pd", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            let ah = e.other_pd.create_ah(&loopback_av(e)).unwrap();
            let sge = [e.m.tx.sge(0, 8)];
            let req = SendRequest::send_ud(1, &sge, &ah, qp.qp_num(), 0x1234);
            // SAFETY: refused before anything is posted.
            refused(unsafe { qp.post_send_list(&[req]) })
        }),
        case("ud_destination_on_an_rc_qp", INVALID, |e| {
            let ah = e.pd.create_ah(&loopback_av(e)).unwrap();
            let sge = [e.m.tx.sge(0, 8)];
            refused(e.post_a(&[SendRequest::send_ud(1, &sge, &ah, e.b.qp_num(), 0)]))
        }),
        case("multicast_attach_of_a_unicast_gid", INVALID, |e| {
            let qp = ud_qp(e, e.pd);
            refused(qp.attach_mcast(&e.loopback_gid(), 0))
        }),
        case("multicast_attach_of_an_rc_qp", INVALID, |e| {
            let group = uverbs::Gid::from_bytes([
                0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34,
            ]);
            refused(e.a.attach_mcast(&group, 0))
        }),
        case(
            "memory_window_bound_to_another_pds_region",
            INVALID,
            |e| match e.pd.alloc_mw() {
                Err(err) => Outcome::Refused(err),
                Ok(mw) => refused(
                    SendRequest::bind_mw(
                        1,
                        &mw,
                        &e.m.foreign.mr,
                        GRANTED,
                        ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
                    )
                    .map(drop),
                ),
            },
        )
        .on_mlx5(
            Expect::Typed(Ty::Unsupported),
            "mlx5: the backend has no memory windows (alloc_mw is Unsupported)",
        ),
        case(
            "local_invalidate_of_a_memory_regions_rkey",
            Expect::Status(&[S::IBV_WC_LOC_QP_OP_ERR, S::IBV_WC_WR_FLUSH_ERR]),
            |e| e.send_one(SendRequest::local_invalidate(1, e.m.target.granted().rkey)),
        )
        .on_mlx5(
            Expect::Typed(Ty::Unsupported),
            "rxe invalidates type 2 windows only (6.1: LOC_QP_OP_ERR, 6.12: WR_FLUSH_ERR); the \
             mlx5 backend builds no UMR WQEs and refuses LOCAL_INV at post",
        ),
        // --- A CQ too small for what completes on it.
        case("cq_too_small", Expect::CqErr, |e| {
            let small = e.ctx.create_cq(1, 0x5ca1).unwrap();
            let qp = rc_builder(e.pd, &small).build().unwrap();
            let ep = qp.endpoint();
            let qp = qp.handshake(ep).unwrap();
            let sge = [e.m.tx.sge(0, 8)];
            let reqs: Vec<_> = (0..6)
                .map(|i| SendRequest::rdma_write(i, &sge, e.m.target.granted()))
                .collect();
            // SAFETY: the regions outlive the QP, dropped at the end of this case.
            unsafe { qp.post_send_list(&reqs) }.unwrap();
            let mut got = Vec::new();
            while let Some(ev) = e
                .ctx
                .get_async_event_timeout(Duration::from_millis(500))
                .unwrap()
            {
                got.push(ev);
            }
            // Polling the overrun CQ still works and gives what it kept.
            let mut buf = [ibv_wc::default(); 8];
            let kept = small.poll(&mut buf).unwrap();
            assert!(
                !kept.is_empty() && kept.iter().all(ibv_wc::is_valid),
                "{kept:?}"
            );
            Outcome::CqErr(got, 0x5ca1)
        })
        .writes(Mem::Target, PAGE..PAGE + 8),
    ]
}

// ---------------------------------------------------------------------------------------------
// Running it.

fn check(case: &Case, expect: Expect, outcome: &Outcome) -> Result<(), String> {
    match (expect, outcome) {
        (Expect::Typed(ty), Outcome::Refused(e)) => {
            let Some(err) = e.uverbs_error() else {
                return Err(format!("an untyped error: {e}"));
            };
            let ok = match (ty, err) {
                (Ty::InvalidArgument, Error::InvalidArgument { .. })
                | (Ty::QueueFull, Error::QueueFull { .. })
                | (Ty::InvalidModify, Error::InvalidModify { .. })
                | (Ty::Unsupported, Error::Unsupported { .. }) => true,
                (Ty::WrongState(s), Error::WrongState { state, .. }) => *state == s,
                (Ty::Kernel(n), Error::Kernel { errno, .. }) => *errno == n,
                _ => false,
            };
            if ok {
                Ok(())
            } else {
                Err(format!("expected {ty:?}, got {err:?} ({err})"))
            }
        }
        (Expect::Status(statuses), Outcome::Completion(wc)) => {
            if statuses.contains(&wc.status()) {
                Ok(())
            } else {
                Err(format!(
                    "expected a completion with status {:?}, got {} ({wc:?})",
                    statuses
                        .iter()
                        .map(|s| uverbs::wc_status_str(*s))
                        .collect::<Vec<_>>(),
                    uverbs::wc_status_str(wc.status())
                ))
            }
        }
        (Expect::CqErr, Outcome::CqErr(events, id)) => {
            let named =
                |e: &uverbs::AsyncEvent| e.kind == AsyncEventKind::CqErr && e.element == *id as u64;
            if !events.is_empty() && events.iter().all(named) {
                Ok(())
            } else {
                Err(format!(
                    "expected CQ_ERR events naming {id:#x} only: {events:?}"
                ))
            }
        }
        (Expect::Success, Outcome::Done) => Ok(()),
        (expect, outcome) => Err(format!(
            "{}: expected {expect:?}, got {outcome:?}",
            case.name
        )),
    }
}

/// Drains the async events left by earlier cases (mlx5 raises `QpAccessErr` for remote access
/// errors, which are not what these cases check).
fn drain_events(ctx: &Context) {
    while ctx.try_get_async_event().unwrap().is_some() {}
}

/// The work request ids of [`fence`]'s own requests.
const FENCE_SEND: u64 = 0xfe5c_0001;
const FENCE_RECV: u64 = 0xfe5c_0002;

/// After a case whose request was refused: shows that nothing was posted, and returns every
/// completion on the case's CQ that is not the fence's own (each one a refused request that was
/// posted all the same).
///
/// With the pair `a` → `b` in RTS, the fence posts a receive on `b`, then a zero-length SEND on
/// `a`, and waits for both. `a`'s send queue completes in order, so a send that a refused post had
/// put there completes before the fence's (or holds it up, taking the fence's receive: then the
/// wait fails); `b`'s receive queue is consumed in order, so a receive that a refused post had
/// put there takes the fence's message, completes, and leaves the fence's receive waiting (rxe and
/// the model complete the receive before they acknowledge the SEND). Either way the evidence is on
/// the CQ when the fence is done, whenever the device would have completed it.
///
/// What the fence cannot cover: a queue pair that the case made and destroyed (refused on its state
/// before any post), and `a` left outside RTS by the case (`send_in_error`): there no send can
/// follow, and a receive posted on `a` in ERR (flushed in order with `a`'s receive queue, not its
/// send queue) is all it has; its flush completion is awaited, and what else completed by then is
/// returned.
fn fence(env: &Env<'_>) -> Result<Vec<ibv_wc>, String> {
    let r = [env.m.rx.sge(PAGE - 8, 8)];
    let both_rts =
        env.a.state() == ibv_qp_state::IBV_QPS_RTS && env.b.state() == ibv_qp_state::IBV_QPS_RTS;
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if both_rts {
            env.recv_b(&[ReceiveRequest::new(FENCE_RECV, &r)])
                .map_err(|e| format!("posting the fence's receive: {e}"))?;
            env.post_a(&[SendRequest::send(FENCE_SEND, &[])])
                .map_err(|e| format!("posting the fence's send: {e}"))?;
            let s = env.wait(FENCE_SEND);
            let r = env.wait(FENCE_RECV);
            if !(s.is_valid() && r.is_valid() && r.len() == 0) {
                return Err(format!("the fence failed: {s:?} {r:?}"));
            }
        } else {
            // SAFETY: as in `recv_b`.
            unsafe {
                env.a
                    .post_receive_list(&[ReceiveRequest::new(FENCE_RECV, &r)])
            }
            .map_err(|e| format!("posting the fence's receive on a: {e}"))?;
            let r = env.wait(FENCE_RECV);
            if r.error().map(|x| x.0) != Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR) {
                return Err(format!("the fence's receive on a in ERR: {r:?}"));
            }
        }
        Ok(())
    }))
    .map_err(|_| "the fence did not complete: a request before it is stuck".to_string())?;
    waited?;
    let mut stray = std::mem::take(&mut *env.seen.borrow_mut());
    let mut buf = [ibv_wc::default(); 16];
    stray.extend_from_slice(env.cq.poll(&mut buf).unwrap());
    Ok(stray)
}

/// Runs one case on fresh queue pairs and memory; returns its failure, if any.
fn run_case(
    dev: &TestDevice,
    ctx: &Context,
    pd: &ProtectionDomain<'_>,
    other_pd: &ProtectionDomain<'_>,
    case: &Case,
) -> Result<(), String> {
    let expect = if dev.is_mlx5() { case.mlx5 } else { case.rxe };
    drain_events(ctx);
    let cq = ctx.create_cq(64, 0x10).unwrap();
    let m = Mems::new(pd, other_pd);
    let before: Vec<Vec<u8>> = MEMS.iter().map(|&w| m.get(w).bytes()).collect();
    let drops = uverbs_drivers::drop_errors();
    let (a, b) = connect(pd, &cq);
    let mut env = Env {
        ctx,
        pd,
        other_pd,
        cq: &cq,
        a,
        b,
        m,
        mlx5: dev.is_mlx5(),
        seen: Default::default(),
    };
    let run = case.run;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&mut env)))
        .map_err(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            format!("panicked: {msg}")
        })?;
    let result = check(case, expect, &outcome);
    // Refused requests posted nothing: no completion appears (for the cases that expect one,
    // only the case's own).
    let stray = if matches!(expect, Expect::Typed(_)) {
        fence(&env)
    } else {
        Ok(Vec::new())
    };
    let Env { a, b, m, .. } = env;
    // Nothing can write any more once the queue pairs are gone.
    drop((a, b));
    let mut damage = Vec::new();
    for (i, &w) in MEMS.iter().enumerate() {
        let after = m.get(w).bytes();
        for (at, (x, y)) in before[i].iter().zip(&after).enumerate() {
            let allowed = case
                .writes
                .iter()
                .any(|(mem, r)| *mem == w && r.contains(&at));
            if x != y && !allowed {
                damage.push(format!("{w:?}[{at}] {x:#04x} -> {y:#04x}"));
            }
        }
    }
    drop(m);
    drop(cq);
    result?;
    let stray = stray?;
    if !stray.is_empty() {
        return Err(format!("a refused post completed: {stray:?}"));
    }
    if !damage.is_empty() {
        let n = damage.len();
        damage.truncate(8);
        return Err(format!(
            "{n} bytes outside what was granted changed: {damage:?}"
        ));
    }
    if uverbs_drivers::drop_errors() != drops {
        return Err("destroying the case's objects failed".into());
    }
    Ok(())
}

/// The number of cases in [`catalogue`].
const CASES: usize = 83;

#[test]
fn hostile_catalogue() {
    let Some(dev) = any_device("hostile_catalogue") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let other_pd = ctx.alloc_pd().unwrap();
    let cases = catalogue();
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    // Every case of the catalogue, counted: one lost (a merge, a stray edit) fails here.
    assert_eq!(cases.len(), CASES, "the catalogue has {CASES} cases");
    let only = std::env::var("UVERBS_HOSTILE_CASE").ok();
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &cases {
        if only.as_deref().is_some_and(|o| !case.name.contains(o)) {
            continue;
        }
        ran += 1;
        let t = Instant::now();
        let result = run_case(&dev, &ctx, &pd, &other_pd, case);
        let expect = if dev.is_mlx5() { case.mlx5 } else { case.rxe };
        eprintln!(
            "hostile {:<48} {:<10} {:?} {:.0?}{}",
            case.name,
            if result.is_ok() { "ok" } else { "FAILED" },
            expect,
            t.elapsed(),
            if case.note.is_empty() || case.rxe == case.mlx5 {
                String::new()
            } else {
                format!("  ({})", case.note)
            }
        );
        if let Err(e) = result {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    eprintln!(
        "hostile ({}): {ran} of {} cases in {:.1?}, {} differing between the backends",
        dev.name(),
        cases.len(),
        started.elapsed(),
        cases.iter().filter(|c| c.rxe != c.mlx5).count()
    );
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Beyond the catalogue.

/// A receive posted to a queue pair in ERR must complete with `WR_FLUSH_ERR` (verbs flush every
/// request posted in the error state). The library accepts the post (only sends need RTS).
///
/// The mlx5 model flushes it at once. rxe flushes a receive queue only when its responder task runs
/// (scheduled by the move to ERR) and posting a receive is no system call, so without help the
/// completion would be lost; the rxe backend therefore moves a QP it knows to be in ERR to ERR
/// again after such a post. A receive posted before the move and flushed by it (in order, the
/// last of the queue) shows that rxe's first flush has reached the end of the queue before the
/// receive under test is posted, so that this one is left to the backend, not to that flush.
#[test]
fn hostile_receive_posted_in_error_is_flushed() {
    let Some(dev) = any_device("hostile_receive_posted_in_error_is_flushed") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, b) = connect(&pd, &cq);
    let rx = pd.allocate::<u64>(4).unwrap();
    let r = [rx.sge(..1).unwrap()];
    let before = [rx.sge(1..2).unwrap()];
    // SAFETY: `rx` outlives the queue pairs.
    unsafe { b.post_receive_list(&[ReceiveRequest::new(0, &before)]) }.unwrap();
    b.modify(&to_state(ibv_qp_state::IBV_QPS_ERR)).unwrap();
    let poll = |limit: Duration| {
        let mut buf = [ibv_wc::default(); 1];
        let deadline = Instant::now() + limit;
        loop {
            if let Some(w) = cq.poll(&mut buf).unwrap().first() {
                return Some(*w);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let first = poll(Duration::from_secs(30)).expect("the move to ERR flushed nothing in 30 s");
    assert_eq!(
        (first.wr_id(), first.error().map(|x| x.0)),
        (0, Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR)),
        "the receive posted before the move: {first:?}"
    );
    // SAFETY: `rx` outlives the queue pairs.
    unsafe { b.post_receive_list(&[ReceiveRequest::new(1, &r)]) }.unwrap();
    let wc = poll(Duration::from_secs(5));
    if wc.is_none() {
        // Another move to ERR flushes it: the receive was there all along, unreported.
        b.modify(&to_state(ibv_qp_state::IBV_QPS_ERR)).unwrap();
        let late = poll(Duration::from_secs(5));
        panic!(
            "{}: a receive posted to a queue pair in ERR did not complete in 5 s; after another \
             MODIFY_QP to ERR: {late:?}",
            dev.name()
        );
    }
    let wc = wc.unwrap();
    assert_eq!(wc.wr_id(), 1);
    assert_eq!(
        wc.error().map(|x| x.0),
        Some(ibv_wc_status::IBV_WC_WR_FLUSH_ERR)
    );
    drop((a, b));
}

/// Puts the device back however the removal test ends: waits for the pending `rdma link delete`
/// (once the test's objects are gone it completes), then adds the device again if it is missing
/// and waits until it has its loopback GID, so that the tests after this one find it as before.
struct Restore {
    name: String,
    netdev: String,
    child: Option<std::process::Child>,
}

impl Restore {
    fn wait_child(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn present(&self) -> bool {
        std::path::Path::new(&format!("/sys/class/infiniband/{}", self.name)).exists()
    }

    /// Adds the device again and waits (up to 30 s) for GID index 1 to be there.
    fn add_back(&self) -> Result<(), String> {
        if !self.present() {
            let out = common::run(
                "rdma",
                &[
                    "link",
                    "add",
                    &self.name,
                    "type",
                    "rxe",
                    "netdev",
                    &self.netdev,
                ],
            );
            if !out.status.success() {
                return Err(format!("rdma link add: {}", common::stderr(&out)));
            }
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Context::open_by_name(&self.name)
                .map(|c| c.gid_table().iter().any(|g| g.gid_index == GID_INDEX))
                .unwrap_or(false);
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} has no GID index {GID_INDEX} after 30 s",
                    self.name
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if self.wait_child(Duration::from_secs(30)).is_none() {
            if let Some(mut c) = self.child.take() {
                eprintln!("rdma link delete still pending after 30 s: killing it");
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if let Err(e) = self.add_back() {
            eprintln!("could not restore {}: {e}", self.name);
        }
    }
}

/// The device removed while a context is open, with queue pairs connected and work posted
/// (`rdma link delete`, rxe in the VM). What the kernel does: rxe has no
/// `disassociate_ucontext`, so the uverbs core cannot take the objects away from a process — it
/// removes the device node (no new context can be opened: a typed error) and then waits for the
/// open contexts to close. Until then the open context works on (verbs succeed, messages move),
/// and no async event (`DEVICE_FATAL` or other) arrives. Dropping everything succeeds without a
/// destroy error, and the removal then completes. The device is added back afterwards (and
/// checked to work), for the tests after this one.
///
/// (A ConnectX with `disassociate_ucontext` would instead fail later verbs with `EIO`; the model
/// has no removal, so this runs in the VM only.)
#[test]
fn hostile_device_removal_at_run_time() {
    let Some(name) = common::test_device("hostile_device_removal_at_run_time") else {
        return;
    };
    let parent = std::fs::read_to_string(format!("/sys/class/infiniband/{name}/parent"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let is_rxe = uverbs::devices()
        .unwrap()
        .find(&name)
        .is_some_and(|d| d.driver() == uverbs::Driver::Rxe);
    if !common::in_vm(
        "hostile_device_removal_at_run_time",
        "deleting the device (`rdma link delete`)",
    ) {
        return;
    }
    // The VM promised rxe over a network interface: anything else fails.
    assert!(
        is_rxe && !parent.is_empty(),
        "{name} in the VM: rxe {is_rxe}, over {parent:?}"
    );
    let mut restore = Restore {
        name: name.clone(),
        netdev: parent,
        child: None,
    };
    let drops = uverbs_drivers::drop_errors();
    let ctx = Context::open_by_name(&name).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(32, 0).unwrap();
    let channel = ctx.create_comp_channel().unwrap();
    let armed = ctx.create_cq_with_channel(8, 3, &channel, 0).unwrap();
    let (a, b) = connect(&pd, &cq);
    let tx = pd.allocate::<u64>(8).unwrap();
    let rx = pd.allocate::<u64>(8).unwrap();
    let rs: Vec<_> = (0..4).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
    let recvs: Vec<_> = (0..4)
        .map(|i| ReceiveRequest::new(100 + i as u64, &rs[i]))
        .collect();
    // SAFETY: the regions outlive the queue pairs.
    unsafe { b.post_receive_list(&recvs) }.unwrap();
    armed.req_notify(false).unwrap();

    let node = uverbs::devices()
        .unwrap()
        .find(&name)
        .unwrap()
        .uverbs_path()
        .to_path_buf();
    assert!(node.exists(), "{}", node.display());
    restore.child = Some(
        std::process::Command::new("rdma")
            .args(["link", "delete", &name])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The removal takes the device node away first, then waits for this process's context: once
    // the node is gone, the removal must still be pending.
    let deadline = Instant::now() + Duration::from_secs(30);
    while node.exists() {
        assert_eq!(
            restore.wait_child(Duration::ZERO),
            None,
            "the removal finished with the context open and {} still there",
            node.display()
        );
        assert!(
            Instant::now() < deadline,
            "{} still there after 30 s",
            node.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        restore.wait_child(Duration::ZERO),
        None,
        "the removal did not wait for the open context"
    );
    // No new context while the removal is pending: a typed error.
    let e = Context::open_by_name(&name).unwrap_err();
    assert!(e.uverbs_error().is_some(), "opening during removal: {e}");
    eprintln!("opening {name} during its removal: {e}");
    // The open context works on: verbs, a message both ways, the completion channel.
    assert!(ctx.query_port(1).is_ok() && ctx.query_device().is_ok());
    let extra_cq = ctx.create_cq(4, 0).unwrap();
    let extra_pd = ctx.alloc_pd().unwrap();
    let extra_mr = pd.allocate::<u8>(64).unwrap();
    assert_eq!(a.query().unwrap().qp_state, Some(ibv_qp_state::IBV_QPS_RTS));
    let s = [tx.sge(..1).unwrap()];
    // SAFETY: as above.
    unsafe { a.post_send_list(&[SendRequest::send(1, &s)]) }.unwrap();
    let mut buf = [ibv_wc::default(); 4];
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < 2 {
        got.extend_from_slice(cq.poll(&mut buf).unwrap());
        assert!(Instant::now() < deadline, "{got:?}");
    }
    assert!(got.iter().all(ibv_wc::is_valid), "{got:?}");
    assert_eq!(
        ctx.get_async_event_timeout(Duration::from_millis(500))
            .unwrap(),
        None,
        "no async event for the removal"
    );
    // Everything goes without a destroy error, and then the removal completes.
    drop((extra_cq, extra_pd, extra_mr));
    drop((a, b));
    drop((armed, channel, cq, tx, rx, pd));
    assert_eq!(uverbs_drivers::drop_errors(), drops, "destroy errors");
    assert!(
        restore.wait_child(Duration::ZERO).is_none(),
        "the removal finished while the context was still open"
    );
    drop(ctx);
    let status = restore
        .wait_child(Duration::from_secs(30))
        .expect("the removal did not finish once the context was closed");
    assert!(status.success(), "rdma link delete: {status:?}");
    assert!(!restore.present(), "the device is still there");
    assert!(
        uverbs::devices().unwrap().find(&name).is_none(),
        "the device is still listed"
    );
    // Back again, and working.
    restore.add_back().unwrap();
    let ctx = Context::open_by_name(&name).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, 0).unwrap();
    let prepared = rc_builder(&pd, &cq).build().unwrap();
    let ep = prepared.endpoint();
    let qp = prepared.handshake(ep).unwrap();
    let mr = pd.allocate::<u64>(2).unwrap();
    let r = [mr.sge(1..2).unwrap()];
    let s = [mr.sge(..1).unwrap()];
    // SAFETY: `mr` outlives the queue pair.
    unsafe { qp.post_receive_list(&[ReceiveRequest::new(1, &r)]) }.unwrap();
    // SAFETY: as above.
    unsafe { qp.post_send_list(&[SendRequest::send(2, &s)]) }.unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < 2 {
        got.extend_from_slice(cq.poll(&mut buf).unwrap());
        assert!(Instant::now() < deadline, "after re-adding: {got:?}");
    }
    assert!(got.iter().all(ibv_wc::is_valid), "{got:?}");
}
