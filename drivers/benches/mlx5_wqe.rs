//! mlx5 data-path microbenchmarks on the host (no device): the production [`SendQueue`] building
//! WQEs and ringing their doorbells, and the production [`CqPoller`] polling CQEs, side by
//! side with a C loop doing the same work with `<infiniband/mlx5dv.h>`'s helpers the way
//! rdma-core's provider does (`mlx5_wqe.c` next to this file, compiled here with `cc -O2`).
//!
//! For each kind of WQE (SEND with one data segment, SEND with 32 inline bytes, RDMA WRITE, RDMA
//! READ, ATOMIC compare-and-swap, UD SEND) both sides post requests one at a time into a
//! 256-block ring, each followed by its doorbell, as the backend rings it
//! ([`SendQueue::ring_doorbell`]): the doorbell record (the backend's [`Dbrec`]), then the
//! BlueFlame copy of the WQE's 64-byte blocks through the backend's [`MmioWriter`] into an
//! ordinary 512-byte buffer standing in for the register, with the barriers of `post_send_db`.
//! After every 64 requests the last one is retired, as its completion would, so the ring never
//! fills. For polling, each pass plays the device (unmeasured: 256 sends posted, their 256
//! requester CQEs written into the backend's [`CqRing`] with that pass's owner bit) and then polls
//! them 16 at a time with [`CqPoller::poll`], updating the consumer index after each call.
//! Locks (the backend's send-queue, CQ and BlueFlame-register mutexes; rdma-core's spinlocks) are
//! left out on both sides.
//!
//! Reported per kind: ns per operation (median of several timed runs, Rust and C interleaved) and
//! instructions per operation, counted with valgrind's callgrind (the host has no PMU) on the
//! measured functions only (`--toggle-collect`), as `(Ir(2M) - Ir(M)) / M`. Both sides print a
//! checksum of what they left (ring, register, doorbell record; for polls the completions), and the
//! bench refuses to report if they differ.
//!
//! Two more columns count whole provider paths on the mlx5 model, each as `(Ir(2M) - Ir(M)) / M`
//! of one post or one poll: rdma-core's own libmlx5 (`ibv_post_send` / `ibv_poll_cq`, through the
//! preload library: `libmlx5_loop.c`, `UVERBS_PRELOAD_LIB`), and the same operations through
//! uverbs' public API (`QueuePair::post_send_list` / `CompletionQueue::poll`: the root crate's
//! `benches/api_loop.rs`, whose executable `benches/mlx5-micro` builds and names in
//! `UVERBS_API_LOOP`), with the ratio of the two. Both loops print a checksum of the completions
//! they took; a difference is reported.
//!
//! Two more count the newer interfaces of each on the model: rdma-core's `ibv_wr_*` (a queue pair
//! from `ibv_create_qp_ex`) and `cq_ex` poll (`ibv_start_poll` .. `ibv_end_poll`), the
//! `libmlx5_wr` column (`libmlx5_loop wr`), and uverbs' batch API (`QueuePair::start_send` ..
//! `SendBatch::submit`, one request per batch) and lending poll (`CompletionQueue::start_poll`
//! with one completion waiting), the `batch` column (`api_loop batch`). A row `send_batch32`
//! counts, per message, 64-byte SENDs posted 32 at a time by all four (a 32-long `ibv_post_send`
//! list, 32 requests in one `ibv_wr_start` .. `ibv_wr_complete`, a 32-long `post_send_list`, a
//! batch of 32). These are printed as a second table with the goals of issue 28, and written as
//! `libmlx5_wr_instr_per_op` and `batch_instr_per_op` beside `libmlx5_instr_per_op` and
//! `api_instr_per_op` in every row of the JSON (and its `issue28_goals`).
//!
//! Run it with `benches/mlx5-micro [--quick]` at the repository root (or
//! `cargo bench -p uverbs-drivers --bench mlx5_wqe -- [--quick]`). Options: `--quick` (CI: a
//! smaller run, under a minute), `--json PATH` (default `target/bench/mlx5-micro.json`),
//! `--no-callgrind`. `--count KIND N` runs exactly N operations of one kind and prints the
//! checksum (what callgrind runs). With no arguments at all (`cargo test --benches`) it only checks
//! that both sides leave the same bytes.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs_drivers::mlx5::buf::{Dbrec, DbrecPool, DmaBuf};
use uverbs_drivers::mlx5::cq::CqRing;
use uverbs_drivers::mlx5::cqe::{self, cqe_opcode, Cqe64, WorkCompletion};
use uverbs_drivers::mlx5::doorbell::BlueFlameReg;
use uverbs_drivers::mlx5::poller::{CqPoller, CqeMemory};
use uverbs_drivers::mlx5::sq::{QpType, SendQueue, SendQueueConfig};
use uverbs_drivers::mlx5::uar::MmioWriter;
use uverbs_drivers::mlx5::wqe::{opcode, Av};
use uverbs_drivers::wr::{self, SendWr, Sge, UdDest};
use uverbs_drivers::Verb;
use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// Must match mlx5_wqe.c.
/// Basic blocks in the send ring.
const RING_BBS: usize = 256;
/// Requests posted between two retirements.
const BATCH: u64 = 64;
/// CQEs per poll pass (and entries in the CQ).
const POLL_PASS: usize = 256;
/// Completions per poll call.
const POLL_BATCH: usize = 16;
/// The BlueFlame register's size (two halves of 256 bytes).
const BF_REG_SIZE: usize = 512;
const QPN: u32 = 0x12_3456;
const UIDX: u32 = 7;
const INLINE_LEN: usize = 32;
/// The goal: at most this many times the C loop's instructions per operation.
const GOAL_RATIO: f64 = 0.8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Send,
    SendInline32,
    RdmaWrite,
    RdmaRead,
    AtomicCas,
    UdSend,
    PollCqe,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Send,
        Kind::SendInline32,
        Kind::RdmaWrite,
        Kind::RdmaRead,
        Kind::AtomicCas,
        Kind::UdSend,
        Kind::PollCqe,
    ];

    /// The name both programs use.
    fn name(self) -> &'static str {
        match self {
            Kind::Send => "send",
            Kind::SendInline32 => "send_inline32",
            Kind::RdmaWrite => "rdma_write",
            Kind::RdmaRead => "rdma_read",
            Kind::AtomicCas => "atomic_cas",
            Kind::UdSend => "ud_send",
            Kind::PollCqe => "poll_cqe",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// What one operation is, for the table.
    fn what(self) -> &'static str {
        match self {
            Kind::Send => "ctrl+data, ds 2",
            Kind::SendInline32 => "ctrl+inline 32 B, ds 4",
            Kind::RdmaWrite => "ctrl+raddr+data, ds 3",
            Kind::RdmaRead => "ctrl+raddr+data, ds 3",
            Kind::AtomicCas => "ctrl+raddr+atomic+data, ds 4",
            Kind::UdSend => "ctrl+datagram+data, ds 5",
            Kind::PollCqe => "requester CQE",
        }
    }

    /// Basic blocks per WQE (0: not a WQE).
    fn bbs(self) -> u32 {
        match self {
            Kind::PollCqe => 0,
            Kind::UdSend => 2,
            _ => 1,
        }
    }

    /// Operations are run in whole batches (posts) or passes (polls).
    fn round_up(self, n: u64) -> u64 {
        let unit = if self == Kind::PollCqe {
            POLL_PASS as u64
        } else {
            BATCH
        };
        n.div_ceil(unit).max(1) * unit
    }
}

/// A page-aligned byte buffer for the send ring (the backend's `SqRing`, a view of the QP buffer,
/// has no public constructor; like it, this hands `SendQueue` plain byte slices).
#[derive(Clone, Copy, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C, align(4096))]
struct Page([u8; 4096]);

struct Buf(Vec<Page>);

impl Buf {
    fn new(len: usize) -> Buf {
        assert_eq!(len % 4096, 0);
        Buf(vec![Page([0; 4096]); len / 4096])
    }
}

impl AsRef<[u8]> for Buf {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl AsMut<[u8]> for Buf {
    fn as_mut(&mut self) -> &mut [u8] {
        self.0.as_mut_bytes()
    }
}

/// The stand-in BlueFlame register: ordinary (page-aligned) memory, written through the backend's
/// [`MmioWriter`] as the real register is (volatile 64-bit stores, `mmio_memcpy_x64` order).
struct Register {
    mem: DmaBuf,
    writer: MmioWriter,
}

impl Register {
    fn new() -> Register {
        let mem = DmaBuf::new(BF_REG_SIZE, Verb::CreateQp).unwrap_or_else(|e| fail("register", e));
        let base = NonNull::new(mem.as_ptr()).expect("a mapping is not null");
        // SAFETY: `mem` is at least `BF_REG_SIZE` bytes, page aligned, and lives as long as the
        // writer (both are fields of this value); nothing else writes it.
        let writer = unsafe { MmioWriter::new(base, BF_REG_SIZE) };
        Register { mem, writer }
    }

    fn bytes(&self) -> Vec<u8> {
        // SAFETY: `BF_REG_SIZE` bytes of the buffer, which `self` keeps alive; the writer is not in
        // use while `&self` is borrowed here.
        unsafe { std::slice::from_raw_parts(self.mem.as_ptr(), BF_REG_SIZE) }.to_vec()
    }
}

/// The requests' buffers and address vector (the same values as the C side's).
struct Inputs {
    sge: [Sge; 1],
    sge8: [Sge; 1],
    inline: [u8; INLINE_LEN],
    av: Av,
}

impl Inputs {
    fn new() -> Inputs {
        let mut av = Av {
            stat_rate_sl: 0x30,
            rlid: U16::new(0x21),
            rmac: [2, 3, 4, 5, 6, 7],
            tclass: 0x10,
            hop_limit: 64,
            grh_gid_fl: Av::grh_gid_fl(false, 3, 0x12345),
            ..Av::default()
        };
        av.rgid = std::array::from_fn(|i| (0xfe + i * 13) as u8);
        let sge = Sge {
            addr: 0x1000_0000,
            length: 256,
            lkey: 0x1234,
        };
        Inputs {
            sge: [sge],
            sge8: [Sge { length: 8, ..sge }],
            inline: std::array::from_fn(|i| (i * 7 + 1) as u8),
            av,
        }
    }

    /// The request of `kind`, and the address vector it goes through (UD). Inlined: with `kind`
    /// a constant, the request's shape is known where it is posted ([`wqe_batch_built`]).
    #[inline(always)]
    fn wr(&self, kind: Kind) -> (SendWr<'_>, Option<&Av>) {
        let mut wr = SendWr::send(1, &self.sge);
        let mut av = None;
        match kind {
            Kind::Send | Kind::PollCqe => {}
            Kind::SendInline32 => {
                wr.flags |= wr::send_flags::INLINE;
                wr.sges = &[];
                wr.inline = &self.inline;
            }
            Kind::RdmaWrite | Kind::RdmaRead => {
                wr.opcode = if kind == Kind::RdmaWrite {
                    wr::opcode::RDMA_WRITE
                } else {
                    wr::opcode::RDMA_READ
                };
                wr.remote_addr = 0x7f00_0000_1000;
                wr.rkey = 0x5678;
            }
            Kind::AtomicCas => {
                wr.opcode = wr::opcode::ATOMIC_CMP_AND_SWP;
                wr.sges = &self.sge8;
                wr.remote_addr = 0x7f00_0000_2000;
                wr.rkey = 0x5678;
                wr.compare_add = 0x1111;
                wr.swap = 0x2222;
            }
            Kind::UdSend => {
                wr.ud = Some(UdDest {
                    remote_qpn: 0x42,
                    remote_qkey: 0x1111_2222,
                });
                av = Some(&self.av);
            }
        }
        (wr, av)
    }
}

/// The send side: the queue, its doorbell record and its BlueFlame register.
struct Sq {
    sq: SendQueue<Buf>,
    dbrec: Dbrec,
    bf: BlueFlameReg,
    reg: Register,
}

/// The completion side.
struct Cq {
    cq: CqPoller<CqRing>,
    dbrec: Dbrec,
    out: [WorkCompletion; POLL_BATCH],
}

fn dbrec_bytes(rec: &Dbrec) -> [u8; 8] {
    let mut b = [0; 8];
    b[..4].copy_from_slice(rec.load(0).as_bytes());
    b[4..].copy_from_slice(rec.load(1).as_bytes());
    b
}

struct Bench<'i> {
    kind: Kind,
    /// Post requests built in place ([`wqe_batch_built`]) instead of read from memory.
    built: bool,
    inputs: &'i Inputs,
    sq: Sq,
    cq: Cq,
    wr: SendWr<'i>,
    av: Option<&'i Av>,
    next_wr_id: u64,
}

#[cold]
#[inline(never)]
fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    panic!("mlx5 bench: {what}: {e}")
}

impl<'i> Bench<'i> {
    fn new(kind: Kind, inputs: &'i Inputs) -> Bench<'i> {
        let cfg = SendQueueConfig {
            qpn: QPN,
            user_index: Some(UIDX),
            qp_type: if kind == Kind::UdSend {
                QpType::Ud
            } else {
                QpType::Rc
            },
            // As the kernel sizes a send queue: room in the ring for `max_send_wr` of the biggest
            // WQE the limits allow (2 blocks: a UD request with 4 entries, or 64 inline bytes).
            // The poll bench fills the ring with one-block sends.
            max_send_wr: if kind == Kind::PollCqe {
                RING_BBS as u32
            } else {
                RING_BBS as u32 / 2
            },
            max_send_sge: 4,
            max_inline_data: 64,
            sq_sig_all: false,
        };
        let sq = SendQueue::new(Buf::new(RING_BBS * 64), cfg).unwrap_or_else(|e| fail("SQ", e));
        let ring = CqRing::new(POLL_PASS, 64).unwrap_or_else(|e| fail("CQ ring", e));
        let cq = CqPoller::new(ring, 64, 0x99, 1).unwrap_or_else(|e| fail("CQ", e));
        let dbrecs: Arc<DbrecPool> = DbrecPool::new(64);
        let dbrec = || {
            dbrecs
                .alloc()
                .unwrap_or_else(|e| fail("doorbell record", e))
        };
        let (wr, av) = inputs.wr(kind);
        Bench {
            kind,
            built: false,
            inputs,
            sq: Sq {
                sq,
                dbrec: dbrec(),
                bf: BlueFlameReg::new(BF_REG_SIZE),
                reg: Register::new(),
            },
            cq: Cq {
                cq,
                dbrec: dbrec(),
                out: [WorkCompletion::default(); POLL_BATCH],
            },
            wr,
            av,
            next_wr_id: 0,
        }
    }

    /// Plays the device for one poll pass (not measured): `POLL_PASS` sends posted with one
    /// doorbell, their requester CQEs written with the owner bit of the pass.
    fn prepare_poll(&mut self) {
        let ci = self.cq.cq.consumer_index();
        let n = self.cq.cq.entries();
        for j in 0..POLL_PASS as u32 {
            let mut wr = self.wr;
            wr.wr_id = self.next_wr_id;
            self.next_wr_id += 1;
            let posted = self
                .sq
                .sq
                .post(&wr, None)
                .unwrap_or_else(|e| fail("post", e));
            let index = ci.wrapping_add(j);
            let cqe = Cqe64 {
                sop_drop_qpn: U32::new((u32::from(opcode::SEND) << 24) | QPN),
                srqn_uidx: U32::new(UIDX),
                wqe_counter: U16::new(posted.index),
                byte_cnt: U32::new(256),
                op_own: (cqe_opcode::REQ << 4) | cqe::device_owner_bit(index, n),
                ..Cqe64::default()
            };
            let at = (index & (n - 1)) as usize * 64;
            self.cq.cq.buffer_mut().write(at, cqe.as_bytes());
        }
        let s = &mut self.sq;
        s.sq.ring_doorbell(&mut &s.dbrec, &mut s.bf, &mut s.reg.writer);
    }

    /// Runs `n` operations (a whole number of batches or passes); returns the time measured.
    fn run(&mut self, n: u64) -> Duration {
        let mut t = Duration::ZERO;
        if self.kind == Kind::PollCqe {
            for _ in 0..n / POLL_PASS as u64 {
                self.prepare_poll();
                let t0 = Instant::now();
                poll_pass(&mut self.cq, &mut self.sq.sq);
                t += t0.elapsed();
            }
        } else {
            let t0 = Instant::now();
            if self.built {
                let batch = built_batch(self.kind);
                for _ in 0..n / BATCH {
                    batch(&mut self.sq, self.inputs);
                }
            } else {
                for _ in 0..n / BATCH {
                    wqe_batch(&mut self.sq, &self.wr, self.av);
                }
            }
            t = t0.elapsed();
        }
        t
    }

    /// FNV-1a over what the run left, as the C side computes it.
    fn checksum(&self) -> u64 {
        let mut h = Fnv::new();
        if self.kind == Kind::PollCqe {
            for wc in &self.cq.out {
                for v in [
                    wc.wr_id,
                    wc.status.into(),
                    wc.opcode.into(),
                    wc.byte_len.into(),
                    wc.qp_num.into(),
                ] {
                    h.add(&v.to_le_bytes());
                }
            }
            h.add(&dbrec_bytes(&self.cq.dbrec));
        } else {
            h.add(self.sq.sq.ring());
            h.add(&self.sq.reg.bytes());
            h.add(&dbrec_bytes(&self.sq.dbrec));
        }
        h.0
    }
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// Measured: `BATCH` posts, each with its doorbell, then the retirement a completion of the last
/// one makes.
#[inline(never)]
fn wqe_batch(s: &mut Sq, wr: &SendWr<'_>, av: Option<&Av>) {
    let mut last = 0;
    for _ in 0..BATCH {
        // The request is the caller's: read anew for every post, as the C side's.
        let (wr, av) = black_box((wr, av));
        match s.sq.post(wr, av) {
            Ok(posted) => last = posted.index,
            Err(e) => fail("post", e),
        }
        s.sq.ring_doorbell(&mut &s.dbrec, &mut s.bf, &mut s.reg.writer);
    }
    if s.sq.retire(last).is_none() {
        fail("retire", last);
    }
}

/// Measured: as [`wqe_batch`], but each request is built in place, as Rust code posts one: its
/// shape (opcode, flags, transport, number of entries, inline length) is known to the compiler,
/// its values (`wr_id`, buffer, keys, remote address, operands, inline bytes, address vector) are
/// read from memory it cannot see into.
#[inline(never)]
fn wqe_batch_built<const K: usize>(s: &mut Sq, inputs: &Inputs) {
    let mut last = 0;
    for _ in 0..BATCH {
        let (wr, av) = black_box(inputs).wr(Kind::ALL[K]);
        match s.sq.post(&wr, av) {
            Ok(posted) => last = posted.index,
            Err(e) => fail("post", e),
        }
        s.sq.ring_doorbell(&mut &s.dbrec, &mut s.bf, &mut s.reg.writer);
    }
    if s.sq.retire(last).is_none() {
        fail("retire", last);
    }
}

/// [`wqe_batch_built`] for `kind`.
fn built_batch(kind: Kind) -> fn(&mut Sq, &Inputs) {
    match kind {
        Kind::Send => wqe_batch_built::<0>,
        Kind::SendInline32 => wqe_batch_built::<1>,
        Kind::RdmaWrite => wqe_batch_built::<2>,
        Kind::RdmaRead => wqe_batch_built::<3>,
        Kind::AtomicCas => wqe_batch_built::<4>,
        Kind::UdSend => wqe_batch_built::<5>,
        Kind::PollCqe => fail("built", "poll_cqe posts nothing"),
    }
}

/// Measured: one pass's `POLL_PASS` completions, `POLL_BATCH` per call, the consumer index
/// updated after each call.
#[inline(never)]
fn poll_pass(c: &mut Cq, sq: &mut SendQueue<Buf>) {
    let mut got = 0;
    while got < POLL_PASS {
        let out = black_box(&mut c.out);
        let n = c.cq.poll(sq, out).unwrap_or_else(|e| fail("poll", e));
        c.cq.update_consumer_index(&mut &c.dbrec);
        if n == 0 {
            fail("poll", "the CQ ran dry");
        }
        got += n;
    }
}

/// `--count KIND N` (`--count-built`: requests built in place): exactly N operations, then the
/// checksum.
fn count(kind: Kind, n: u64, built: bool) -> u64 {
    let inputs = Inputs::new();
    let mut b = Bench::new(kind, &inputs);
    b.built = built && kind != Kind::PollCqe;
    b.run(kind.round_up(n));
    b.checksum()
}

/// `reps` timed runs of `n` operations after a warm-up; ns per operation of each.
fn time_rust(kind: Kind, n: u64, reps: usize) -> Vec<f64> {
    let inputs = Inputs::new();
    let mut b = Bench::new(kind, &inputs);
    let n = kind.round_up(n);
    b.run(kind.round_up(n / 10));
    (0..reps)
        .map(|_| b.run(n).as_nanos() as f64 / n as f64)
        .collect()
}

// The driver: builds the C side, checks that both do the same, times, counts, reports.

struct Opts {
    quick: bool,
    callgrind: bool,
    json: Option<PathBuf>,
}

struct Mode {
    /// Operations per timed run.
    n: u64,
    /// Timed runs per round, and rounds (Rust and C alternate by round).
    reps: usize,
    rounds: usize,
    /// Callgrind runs with M and 2M operations.
    m: u64,
}

#[derive(Default)]
struct Row {
    rust_ns: Vec<f64>,
    c_ns: Vec<f64>,
    rust_ir: Option<(u64, u64)>,
    /// Requests built in place ([`wqe_batch_built`]).
    built_ir: Option<(u64, u64)>,
    c_ir: Option<(u64, u64)>,
    /// rdma-core's libmlx5 (`ibv_post_send` / `ibv_poll_cq`) on the model: Ir of M and 2M.
    libmlx5_ir: Option<(u64, u64)>,
    /// The checksums of those two runs.
    libmlx5_sums: Option<(u64, u64)>,
    /// uverbs' public API (`QueuePair::post_send_list` / `CompletionQueue::poll`) on the model:
    /// Ir of M and 2M.
    api_ir: Option<(u64, u64)>,
    /// The checksums of those two runs.
    api_sums: Option<(u64, u64)>,
    /// rdma-core's libmlx5 through its newer interfaces (`ibv_wr_*` on a queue pair from
    /// `ibv_create_qp_ex`, `ibv_start_poll` on a CQ from `ibv_create_cq_ex`) on the model: Ir of M
    /// and 2M, and the runs' checksums.
    libmlx5_wr_ir: Option<(u64, u64)>,
    libmlx5_wr_sums: Option<(u64, u64)>,
    /// uverbs' batch API and lending poll (`QueuePair::start_send` .. `SendBatch::submit`,
    /// `CompletionQueue::start_poll`) on the model: Ir of M and 2M, and the runs' checksums.
    batch_ir: Option<(u64, u64)>,
    batch_sums: Option<(u64, u64)>,
}

impl Row {
    /// The provider loops' checksums that this row has, by the column's name.
    fn loop_sums(&self) -> Vec<(&'static str, (u64, u64))> {
        [
            ("libmlx5", self.libmlx5_sums),
            ("libmlx5_wr", self.libmlx5_wr_sums),
            ("api", self.api_sums),
            ("batch", self.batch_sums),
        ]
        .into_iter()
        .filter_map(|(name, sums)| sums.map(|s| (name, s)))
        .collect()
    }
}

/// The kind of the provider loops' extra row: 64-byte SENDs posted 32 at a time (one
/// `ibv_post_send` of a 32-long list, one `ibv_wr_start` .. `ibv_wr_complete` of 32, one
/// `post_send_list` of 32, one `start_send` .. `submit` of 32), counted per message.
const BATCH32: &str = "send_batch32";
/// Messages per post of [`BATCH32`].
const CHAIN: u64 = 32;

/// The functions callgrind counts in `libmlx5_loop.c`, whatever the mode (each mode calls only its
/// own, and none calls another).
const LIBMLX5_TOGGLES: [&str; 6] = [
    "post_one",
    "poll_one",
    "post_wr_one",
    "poll_ex_one",
    "post_list32",
    "post_wr32",
];
/// The same in `benches/api_loop.rs`.
const API_TOGGLES: [&str; 6] = [
    "*api_loop::post_one*",
    "*api_loop::poll_one*",
    "*api_loop::post_batch_one*",
    "*api_loop::poll_lending_one*",
    "*api_loop::post_list32*",
    "*api_loop::post_batch32*",
];

fn main() {
    if std::env::args().len() == 1 {
        // Run as a test (`cargo test --benches`): only check that both sides agree.
        same_work(&compile_c());
        return;
    }
    let mut args = std::env::args().skip(1);
    let mut opts = Opts {
        quick: false,
        callgrind: true,
        json: None,
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bench" => {} // what `cargo bench` passes
            "--quick" => opts.quick = true,
            "--no-callgrind" => opts.callgrind = false,
            "--json" => opts.json = Some(args.next().expect("--json PATH").into()),
            "--count" | "--count-built" => {
                let kind = args.next().expect("--count KIND N");
                let kind = Kind::parse(&kind).unwrap_or_else(|| fail("unknown kind", kind));
                let n = args.next().expect("--count KIND N").parse().expect("N");
                println!("checksum {:016x}", count(kind, n, a == "--count-built"));
                return;
            }
            "-h" | "--help" => {
                println!(
                    "mlx5_wqe [--quick] [--no-callgrind] [--json PATH] | --count KIND N\n\
                     kinds: {}",
                    Kind::ALL.map(Kind::name).join(" ")
                );
                return;
            }
            other => fail("unknown argument", other),
        }
    }
    drive(opts);
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp has a parent")
        .to_path_buf()
}

/// `$CC` (program and arguments) or `cc`.
fn cc() -> Command {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut words = cc.split_whitespace();
    let mut cmd = Command::new(words.next().expect("CC is empty"));
    cmd.args(words);
    cmd
}

fn output(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| fail(&format!("run {cmd:?}"), e));
    if !out.status.success() {
        fail(
            &format!("{cmd:?}"),
            format!("{}{}", out.status, String::from_utf8_lossy(&out.stderr)),
        );
    }
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn first_line(cmd: &mut Command) -> String {
    cmd.output()
        .ok()
        .and_then(|o| {
            let s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.lines().next().map(str::to_owned)
        })
        .unwrap_or_else(|| "unknown".into())
}

fn compile_c() -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/mlx5_wqe.c");
    let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mlx5_wqe_c");
    output(
        cc().args(["-std=gnu11", "-O2", "-Wall", "-Wextra", "-o"])
            .arg(&bin)
            .arg(&src),
    );
    bin
}

/// The real provider's loop (`libmlx5_loop.c`), built against rdma-core's libibverbs and libmlx5,
/// and the preload library that makes the model their device (`UVERBS_PRELOAD_LIB`, which
/// `benches/mlx5-micro` builds and sets); `None`, after saying why, where either is missing.
fn libmlx5_loop() -> Option<(PathBuf, PathBuf)> {
    let Some(lib) = std::env::var_os("UVERBS_PRELOAD_LIB").map(PathBuf::from) else {
        eprintln!("mlx5-micro: UVERBS_PRELOAD_LIB is unset; no libmlx5 column (benches/mlx5-micro sets it)");
        return None;
    };
    if !lib.is_file() {
        eprintln!(
            "mlx5-micro: {} is missing; no libmlx5 column",
            lib.display()
        );
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/libmlx5_loop.c");
    let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("libmlx5_loop");
    let built = cc()
        .args(["-std=gnu11", "-O2", "-Wall", "-Wextra", "-o"])
        .arg(&bin)
        .arg(&src)
        .args(["-libverbs", "-lmlx5"])
        .output();
    match built {
        Ok(o) if o.status.success() => Some((bin, lib)),
        Ok(o) => {
            eprintln!(
                "mlx5-micro: no libmlx5 column: building {} failed (libibverbs-dev, \
                 ibverbs-providers?): {}",
                src.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(e) => {
            eprintln!("mlx5-micro: no libmlx5 column: {e}");
            None
        }
    }
}

/// The program posting and polling through uverbs' public API on the model (`benches/api_loop.rs`
/// of the root crate, which `benches/mlx5-micro` builds and names in `UVERBS_API_LOOP`), or why
/// there is none.
fn api_loop() -> Result<PathBuf, String> {
    let Some(bin) = std::env::var_os("UVERBS_API_LOOP").map(PathBuf::from) else {
        return Err(
            "UVERBS_API_LOOP is unset (benches/mlx5-micro builds the root crate's bench \
                    api_loop and sets it)"
                .into(),
        );
    };
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("{} is missing", bin.display()))
    }
}

/// Callgrind's `Ir` of one of the provider loops (`libmlx5_loop`, `api_loop`) for every kind of
/// [`Kind::ALL`] and then [`BATCH32`], with `m` and `2m` operations (messages), and the runs'
/// checksums: `((Ir(m), Ir(2m)), (checksum(m), checksum(2m)))`. `mode` is the loop's mode for every
/// kind (`wr`, `batch`: the newer interface), or `None` for the classic calls (`post KIND N`, and
/// `poll poll_cqe N`). Every run switches collection on in any of `toggles`.
fn count_loop(
    bin: &Path,
    preload: Option<&Path>,
    toggles: &[&str],
    name: &str,
    mode: Option<&str>,
    dir: &Path,
    m: u64,
) -> Vec<((u64, u64), (u64, u64))> {
    Kind::ALL
        .iter()
        .map(|kind| kind.name())
        .chain([BATCH32])
        .map(|kind| {
            let how = mode.unwrap_or(if kind == Kind::PollCqe.name() {
                "poll"
            } else {
                "post"
            });
            let run = |n: u64| {
                let args = [how.to_string(), kind.to_string(), n.to_string()];
                let out = dir.join(format!("{name}.{kind}.{n}.out"));
                callgrind_ir_of(bin, &args, &out, toggles, preload)
            };
            let (a, b) = (run(m), run(2 * m));
            ((a.0, b.0), (a.1, b.1))
        })
        .collect()
}

fn checksum_of(out: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix("checksum "))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or_else(|| fail("no checksum in", out))
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Callgrind's instruction count (`Ir`) of the measured functions in one run.
fn callgrind_ir(exe: &Path, args: &[String], out_file: &Path) -> (u64, u64) {
    callgrind_ir_of(exe, args, out_file, &["*wqe_batch*", "*poll_pass*"], None)
}

/// Callgrind's `Ir` inside the functions `toggles` names, in one run of `exe` (under `preload`,
/// if given), and the run's checksum.
fn callgrind_ir_of(
    exe: &Path,
    args: &[String],
    out_file: &Path,
    toggles: &[&str],
    preload: Option<&Path>,
) -> (u64, u64) {
    let mut cmd = Command::new("valgrind");
    cmd.args(["--tool=callgrind", "--collect-atstart=no"])
        .args(toggles.iter().map(|t| format!("--toggle-collect={t}")))
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(exe)
        .args(args);
    if let Some(lib) = preload {
        cmd.env("LD_PRELOAD", lib).env("UVERBS_PRELOAD_QUIET", "1");
    }
    let stdout = output(&mut cmd);
    let profile = std::fs::read_to_string(out_file)
        .unwrap_or_else(|e| fail(&format!("read {}", out_file.display()), e));
    let ir = profile
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| fail("no summary in", out_file.display()));
    (ir, checksum_of(&stdout))
}

/// Checks that both sides do the same work: the same bytes in the ring, the register and the
/// doorbell records, the same completions, after enough operations to wrap the ring three times.
fn same_work(c_bin: &Path) {
    for kind in Kind::ALL {
        let n = kind.round_up(3 * RING_BBS as u64 + 7);
        let rust = count(kind, n, false);
        if count(kind, n, true) != rust {
            fail(kind.name(), "requests built in place leave other bytes");
        }
        let c = checksum_of(&output(
            Command::new(c_bin)
                .args(["count", kind.name()])
                .arg(n.to_string()),
        ));
        if rust != c {
            fail(
                &format!("{} after {n} operations", kind.name()),
                format!("Rust and C differ (checksums {rust:016x} and {c:016x})"),
            );
        }
    }
    eprintln!("mlx5-micro: Rust and C leave the same bytes for every kind");
}

/// One goal of issue 28: `value` (uverbs' instructions) over `anchor` (rdma-core's) at most `limit`.
struct Goal {
    what: &'static str,
    value: Option<f64>,
    anchor: Option<f64>,
    limit: f64,
}

impl Goal {
    fn ratio(&self) -> Option<f64> {
        self.value.zip(self.anchor).map(|(v, a)| v / a)
    }

    fn verdict(&self) -> &'static str {
        match self.ratio() {
            Some(r) if r <= self.limit => "met",
            Some(_) => "NOT met",
            None => "not counted",
        }
    }

    fn json(&self) -> String {
        let num = |v: Option<f64>| match v {
            Some(v) if v.is_finite() => format!("{v:.3}"),
            _ => "null".into(),
        };
        format!(
            "    {{\"goal\": \"{}\", \"uverbs\": {}, \"anchor\": {}, \"ratio\": {}, \
             \"limit\": {}, \"met\": {}}}",
            self.what,
            num(self.value),
            num(self.anchor),
            num(self.ratio()),
            self.limit,
            match self.ratio() {
                Some(r) => (r <= self.limit).to_string(),
                None => "null".into(),
            }
        )
    }
}

/// Prints the provider loops' table (libmlx5's two interfaces, uverbs' two APIs, per kind and for
/// [`BATCH32`]) and the goals of issue 28; returns the goals.
fn provider_table(
    rows: &[Row],
    batch32: &Row,
    per_op: &dyn Fn(Option<(u64, u64)>) -> Option<f64>,
) -> Vec<Goal> {
    let fmt = |v: Option<f64>, prec: usize| match v {
        Some(v) if v.is_finite() => format!("{v:.prec$}"),
        _ => "n/a".into(),
    };
    let min = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    println!();
    println!(
        "Provider paths on the model, instr/op (per message for {BATCH32}): libmlx5 = \
         ibv_post_send / ibv_poll_cq (32: one ibv_post_send of a 32-long list); libmlx5 wr = \
         ibv_wr_start..ibv_wr_complete of one request / ibv_start_poll..ibv_end_poll of one CQE \
         (32: 32 requests in one start..complete); API = post_send_list / poll (32: a slice of \
         32); batch = start_send..submit of one request / start_poll with one completion waiting \
         (32: 32 requests in one batch)"
    );
    println!();
    println!(
        "| {:<13} | {:>7} | {:>10} | {:>7} | {:>7} | {:>13} | {:>15} | {:>13} |",
        "kind",
        "libmlx5",
        "libmlx5 wr",
        "API",
        "batch",
        "API/libmlx5",
        "batch/libmlx5",
        "batch/cheaper"
    );
    println!(
        "|{}|{}|{}|{}|{}|{}|{}|{}|",
        "-".repeat(15),
        "-".repeat(9),
        "-".repeat(12),
        "-".repeat(9),
        "-".repeat(9),
        "-".repeat(15),
        "-".repeat(17),
        "-".repeat(15)
    );
    let names = Kind::ALL.iter().map(|k| k.name()).chain([BATCH32]);
    for (name, row) in names.zip(rows.iter().chain([batch32])) {
        let (l, lw) = (per_op(row.libmlx5_ir), per_op(row.libmlx5_wr_ir));
        let (a, b) = (per_op(row.api_ir), per_op(row.batch_ir));
        let ratio = |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| x / y);
        println!(
            "| {:<13} | {:>7} | {:>10} | {:>7} | {:>7} | {:>13} | {:>15} | {:>13} |",
            name,
            fmt(l, 1),
            fmt(lw, 1),
            fmt(a, 1),
            fmt(b, 1),
            fmt(ratio(a, l), 2),
            fmt(ratio(b, l), 2),
            fmt(ratio(b, min(l, lw)), 2)
        );
    }
    let kind = |k: Kind| &rows[Kind::ALL.iter().position(|x| *x == k).expect("a kind")];
    let (send, poll) = (kind(Kind::Send), kind(Kind::PollCqe));
    let sum = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a + b);
    let goals = vec![
        Goal {
            what: "batch of one SEND + lending poll <= 0.5 x libmlx5 ibv_post_send + ibv_poll_cq",
            value: sum(per_op(send.batch_ir), per_op(poll.batch_ir)),
            anchor: sum(per_op(send.libmlx5_ir), per_op(poll.libmlx5_ir)),
            limit: 0.5,
        },
        Goal {
            what: "batch of one SEND <= 0.8 x the cheaper of ibv_post_send and ibv_wr_*",
            value: per_op(send.batch_ir),
            anchor: min(per_op(send.libmlx5_ir), per_op(send.libmlx5_wr_ir)),
            limit: 0.8,
        },
        Goal {
            what: "lending poll of one CQE <= 0.8 x the cheaper of ibv_poll_cq and cq_ex",
            value: per_op(poll.batch_ir),
            anchor: min(per_op(poll.libmlx5_ir), per_op(poll.libmlx5_wr_ir)),
            limit: 0.8,
        },
        Goal {
            what: "batch of 32 SENDs, per message <= 0.5 x libmlx5 ibv_post_send of a 32-long list",
            value: per_op(batch32.batch_ir),
            anchor: per_op(batch32.libmlx5_ir),
            limit: 0.5,
        },
        Goal {
            what: "batch of 32 SENDs, per message <= 0.7 x libmlx5 ibv_wr_* batch of 32",
            value: per_op(batch32.batch_ir),
            anchor: per_op(batch32.libmlx5_wr_ir),
            limit: 0.7,
        },
        Goal {
            what: "0.9.2 API post_send_list + poll of one SEND <= 0.9 x libmlx5",
            value: sum(per_op(send.api_ir), per_op(poll.api_ir)),
            anchor: sum(per_op(send.libmlx5_ir), per_op(poll.libmlx5_ir)),
            limit: 0.9,
        },
    ];
    println!();
    println!("goals of issue 28 (instructions, uverbs over rdma-core's libmlx5, on the model):");
    for g in &goals {
        println!(
            "  {}: {} / {} = {} ({})",
            g.what,
            fmt(g.value, 1),
            fmt(g.anchor, 1),
            fmt(g.ratio(), 2),
            g.verdict()
        );
    }
    goals
}

fn drive(opts: Opts) {
    let mode = if opts.quick {
        Mode {
            n: 1 << 17,
            reps: 3,
            rounds: 3,
            m: 1 << 14,
        }
    } else {
        Mode {
            n: 1 << 20,
            reps: 5,
            rounds: 7,
            m: 1 << 17,
        }
    };
    let load_before = loadavg();
    let c_bin = compile_c();
    same_work(&c_bin);

    let mut rows: Vec<Row> = Kind::ALL.iter().map(|_| Row::default()).collect();
    // The provider loops' row of 32-long posts (no Rust or C loop column).
    let mut batch32 = Row::default();
    for round in 0..mode.rounds {
        eprintln!("mlx5-micro: timing, round {} of {}", round + 1, mode.rounds);
        for (kind, row) in Kind::ALL.iter().zip(&mut rows) {
            row.rust_ns.extend(time_rust(*kind, mode.n, mode.reps));
        }
        let out = output(Command::new(&c_bin).args([
            "time".to_string(),
            mode.n.to_string(),
            mode.reps.to_string(),
        ]));
        for line in out.lines() {
            let mut words = line.split_whitespace();
            let kind = words.next().and_then(Kind::parse);
            let i = Kind::ALL.iter().position(|k| Some(*k) == kind);
            let i = i.unwrap_or_else(|| fail("C timing line", line));
            rows[i]
                .c_ns
                .extend(words.map(|w| w.parse::<f64>().expect("ns/op")));
        }
    }

    let valgrind = opts.callgrind
        && Command::new("valgrind")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if opts.callgrind && !valgrind {
        eprintln!("mlx5-micro: valgrind not found; no instruction counts");
    }
    // M of the provider loops' counts, and why there is no uverbs API column (if so).
    let mut loops_m = None;
    let mut api_missing = Some(if opts.callgrind {
        "valgrind not found".to_string()
    } else {
        "--no-callgrind".to_string()
    });
    if valgrind {
        eprintln!("mlx5-micro: counting instructions with callgrind");
        let exe = std::env::current_exe().expect("the bench's path");
        let dir = target_dir().join("bench/callgrind");
        std::fs::create_dir_all(&dir).expect("create the callgrind directory");
        // (kind index, side, n) for every run; two at a time. Sides: "rust", "built", "c".
        let jobs: Vec<(usize, &str, u64)> = (0..Kind::ALL.len())
            .flat_map(|i| {
                [
                    ("rust", mode.m),
                    ("rust", 2 * mode.m),
                    ("built", mode.m),
                    ("built", 2 * mode.m),
                    ("c", mode.m),
                    ("c", 2 * mode.m),
                ]
                .map(|(side, n)| (i, side, n))
            })
            .collect();
        let results: Vec<(u64, u64)> = std::thread::scope(|s| {
            let chunks: Vec<_> = jobs
                .chunks(jobs.len().div_ceil(2))
                .map(|chunk| {
                    let (exe, c_bin, dir) = (&exe, &c_bin, &dir);
                    s.spawn(move || {
                        chunk
                            .iter()
                            .map(|&(i, side, n)| {
                                let kind = Kind::ALL[i];
                                let name = format!("{side}.{}.{n}.out", kind.name());
                                let (bin, args): (&Path, Vec<String>) = if side != "c" {
                                    let count = if side == "built" && kind != Kind::PollCqe {
                                        "--count-built"
                                    } else {
                                        "--count"
                                    };
                                    (exe, vec![count.into(), kind.name().into(), n.to_string()])
                                } else {
                                    (
                                        c_bin,
                                        vec!["count".into(), kind.name().into(), n.to_string()],
                                    )
                                };
                                callgrind_ir(bin, &args, &dir.join(name))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            chunks
                .into_iter()
                .flat_map(|h| h.join().expect("callgrind worker"))
                .collect()
        });
        // The provider loops on the model, two at a time: rdma-core's libmlx5 and uverbs' API.
        let m = mode.m / 4;
        let libmlx5 = libmlx5_loop();
        let api = api_loop().map_err(|why| {
            eprintln!("mlx5-micro: no uverbs API column: {why}");
            why
        });
        match (libmlx5.is_some(), api.is_ok()) {
            (true, true) => {
                eprintln!(
                    "mlx5-micro: counting libmlx5's and uverbs' API's post and poll on the model"
                )
            }
            (true, false) => eprintln!("mlx5-micro: counting libmlx5's post and poll on the model"),
            (false, true) => {
                eprintln!("mlx5-micro: counting uverbs' API's post and poll on the model")
            }
            (false, false) => {}
        }
        // Each worker: the classic calls, then the newer interface (libmlx5: ibv_wr_* and cq_ex;
        // uverbs: the batch API and the lending poll).
        let (libmlx5_counts, api_counts) = std::thread::scope(|s| {
            let dir = &dir;
            let l = s.spawn(|| {
                libmlx5.as_ref().map(|(bin, lib)| {
                    let lib = Some(lib.as_path());
                    (
                        count_loop(bin, lib, &LIBMLX5_TOGGLES, "libmlx5", None, dir, m),
                        count_loop(bin, lib, &LIBMLX5_TOGGLES, "libmlx5_wr", Some("wr"), dir, m),
                    )
                })
            });
            let a = s.spawn(|| {
                api.as_ref().ok().map(|bin| {
                    (
                        count_loop(bin, None, &API_TOGGLES, "api", None, dir, m),
                        count_loop(bin, None, &API_TOGGLES, "batch", Some("batch"), dir, m),
                    )
                })
            });
            (
                l.join().expect("libmlx5 callgrind worker"),
                a.join().expect("uverbs API callgrind worker"),
            )
        });
        // The last of each count is BATCH32's.
        for (i, row) in rows.iter_mut().chain([&mut batch32]).enumerate() {
            if let Some((c, wr)) = &libmlx5_counts {
                (row.libmlx5_ir, row.libmlx5_sums) = (Some(c[i].0), Some(c[i].1));
                (row.libmlx5_wr_ir, row.libmlx5_wr_sums) = (Some(wr[i].0), Some(wr[i].1));
            }
            if let Some((c, b)) = &api_counts {
                (row.api_ir, row.api_sums) = (Some(c[i].0), Some(c[i].1));
                (row.batch_ir, row.batch_sums) = (Some(b[i].0), Some(b[i].1));
            }
        }
        if libmlx5_counts.is_some() || api_counts.is_some() {
            loops_m = Some(m);
        }
        api_missing = api.err();
        for (i, row) in rows.iter_mut().enumerate() {
            let r = &results[6 * i..6 * i + 6];
            let name = Kind::ALL[i].name();
            if r[0].1 != r[4].1 || r[1].1 != r[5].1 || r[2].1 != r[4].1 || r[3].1 != r[5].1 {
                fail(name, "Rust and C checksums differ under callgrind");
            }
            row.rust_ir = Some((r[0].0, r[1].0));
            row.built_ir = Some((r[2].0, r[3].0));
            row.c_ir = Some((r[4].0, r[5].0));
        }
    }
    let load_after = loadavg();

    let per_op =
        |ir: Option<(u64, u64)>| ir.map(|(a, b)| b.saturating_sub(a) as f64 / mode.m as f64);
    let fmt = |v: Option<f64>, prec: usize| match v {
        Some(v) if v.is_finite() => format!("{v:.prec$}"),
        _ => "n/a".into(),
    };

    let cc_version = first_line(cc().arg("--version"));
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!(
        "mlx5 data-path microbenchmark ({}): Rust (uverbs-drivers, bench profile) vs C (mlx5dv.h \
         helpers, rdma-core's post/poll logic, {} -O2)",
        if opts.quick { "quick" } else { "full" },
        cc_version
    );
    println!(
        "host: {}, {cpus} CPUs; load average {load_before} before, {load_after} after",
        cpu_model()
    );
    println!(
        "ns/op: median of {} runs of {} operations each (Rust and C alternating by round); \
         instr/op: callgrind Ir of the measured functions, (Ir(2M) - Ir(M)) / M, M = {}",
        mode.reps * mode.rounds,
        mode.n,
        mode.m
    );
    println!();
    let libmlx5_counted = rows.iter().all(|r| r.libmlx5_ir.is_some());
    if let Some(m) = loops_m.filter(|_| libmlx5_counted) {
        println!(
            "libmlx5 instr/op: rdma-core's own provider on the mlx5 model (preload library): Ir of \
             one ibv_post_send (locks and the generic post path included) or one ibv_poll_cq of a \
             requester CQE, (Ir(2M) - Ir(M)) / M, M = {m}"
        );
    }
    if let Some(m) = loops_m.filter(|_| api_missing.is_none()) {
        println!(
            "uverbs API instr/op: the same through uverbs' public API on the model in one process \
             (benches/api_loop.rs): one QueuePair::post_send_list of one SendRequest, or one \
             CompletionQueue::poll with room for one completion, (Ir(2M) - Ir(M)) / M, M = {m}; \
             API/libmlx5: uverbs API instr/op over libmlx5 instr/op"
        );
    }
    if let Some(why) = &api_missing {
        println!("uverbs API instr/op: n/a: {why}");
    }
    println!();
    println!(
        "Rust instr/op: `SendQueue::post` of a request read from memory, as the C loop reads its \
         `ibv_send_wr`; built: the request built in place (its shape known to the compiler, its \
         values not), as Rust code posts. For poll_cqe both are the same poll."
    );
    println!();
    println!(
        "| {:<13} | {:<28} | {:>3} | {:>10} | {:>7} | {:>8} | {:>13} | {:>11} | {:>10} | {:>11} | {:>11} | {:>16} | {:>19} | {:>11} |",
        "kind",
        "WQE",
        "bbs",
        "Rust ns/op",
        "C ns/op",
        "ns ratio",
        "Rust instr/op",
        "built instr",
        "C instr/op",
        "instr ratio",
        "built ratio",
        "libmlx5 instr/op",
        "uverbs API instr/op",
        "API/libmlx5"
    );
    println!(
        "|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|",
        "-".repeat(15),
        "-".repeat(30),
        "-".repeat(5),
        "-".repeat(12),
        "-".repeat(9),
        "-".repeat(10),
        "-".repeat(15),
        "-".repeat(13),
        "-".repeat(12),
        "-".repeat(13),
        "-".repeat(13),
        "-".repeat(18),
        "-".repeat(21),
        "-".repeat(13)
    );
    let mut json_rows = Vec::new();
    let mut verdicts = Vec::new();
    let loop_per_op = |ir: Option<(u64, u64)>| {
        ir.zip(loops_m)
            .map(|((a, b), m)| b.saturating_sub(a) as f64 / m as f64)
    };
    let ir_json = |ir: Option<(u64, u64)>| match ir {
        Some((a, b)) => format!("[{a}, {b}]"),
        None => "null".into(),
    };
    let num = |v: Option<f64>| match v {
        Some(v) if v.is_finite() => format!("{v:.3}"),
        _ => "null".into(),
    };
    // Kinds whose completions differ between the provider loops (all on the model).
    let mut sum_mismatches = Vec::new();
    let kind_names = Kind::ALL.iter().map(|k| k.name()).chain([BATCH32]);
    for (name, row) in kind_names.zip(rows.iter().chain([&batch32])) {
        let sums = row.loop_sums();
        if sums.iter().any(|(_, s)| *s != sums[0].1) {
            let each: Vec<String> = sums
                .iter()
                .map(|(who, (a, b))| format!("{who} {a:016x}/{b:016x}"))
                .collect();
            sum_mismatches.push(format!("{name} ({})", each.join(", ")));
        }
    }
    for (kind, row) in Kind::ALL.iter().zip(&rows) {
        let (rn, cn) = (median(&row.rust_ns), median(&row.c_ns));
        let (ri, bi, ci) = (per_op(row.rust_ir), per_op(row.built_ir), per_op(row.c_ir));
        let (li, ai) = (loop_per_op(row.libmlx5_ir), loop_per_op(row.api_ir));
        let (lwi, bti) = (loop_per_op(row.libmlx5_wr_ir), loop_per_op(row.batch_ir));
        let api_ratio = ai.zip(li).map(|(a, l)| a / l);
        let batch_ratio = bti.zip(li).map(|(a, l)| a / l);
        let ns_ratio = rn / cn;
        let ir_ratio = ri.zip(ci).map(|(r, c)| r / c);
        let built_ratio = bi.zip(ci).map(|(r, c)| r / c);
        println!(
            "| {:<13} | {:<28} | {:>3} | {:>10} | {:>7} | {:>8} | {:>13} | {:>11} | {:>10} | {:>11} | {:>11} | {:>16} | {:>19} | {:>11} |",
            kind.name(),
            kind.what(),
            if kind.bbs() == 0 {
                "-".to_string()
            } else {
                kind.bbs().to_string()
            },
            fmt(Some(rn), 2),
            fmt(Some(cn), 2),
            fmt(Some(ns_ratio), 2),
            fmt(ri, 1),
            fmt(bi, 1),
            fmt(ci, 1),
            fmt(ir_ratio, 2),
            fmt(built_ratio, 2),
            fmt(li, 1),
            fmt(ai, 1),
            fmt(api_ratio, 2)
        );
        let verdict = |ratio: Option<f64>| match ratio {
            Some(r) if r <= GOAL_RATIO => "met",
            Some(_) => "NOT met",
            None => "not counted",
        };
        verdicts.push(format!(
            "{}: read from memory {} ({}), built in place {} ({})",
            kind.name(),
            fmt(ir_ratio, 2),
            verdict(ir_ratio),
            fmt(built_ratio, 2),
            verdict(built_ratio),
        ));
        let samples = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        json_rows.push(format!(
            "    {{\"kind\": \"{}\", \"wqe\": \"{}\", \"bbs\": {}, \"rust_ns_per_op\": {}, \
             \"c_ns_per_op\": {}, \"ns_ratio\": {}, \"rust_instr_per_op\": {}, \
             \"rust_built_instr_per_op\": {}, \"built_instr_ratio\": {}, \
             \"c_instr_per_op\": {}, \"instr_ratio\": {}, \"rust_ns_samples\": [{}], \
             \"c_ns_samples\": [{}], \"rust_ir_m_2m\": {}, \"c_ir_m_2m\": {}, \
             \"libmlx5_instr_per_op\": {}, \"libmlx5_ir_m_2m\": {}, \
             \"api_instr_per_op\": {}, \"api_ir_m_2m\": {}, \"api_libmlx5_ratio\": {}, \
             \"libmlx5_wr_instr_per_op\": {}, \"libmlx5_wr_ir_m_2m\": {}, \
             \"batch_instr_per_op\": {}, \"batch_ir_m_2m\": {}, \"batch_libmlx5_ratio\": {}}}",
            kind.name(),
            kind.what(),
            kind.bbs(),
            num(Some(rn)),
            num(Some(cn)),
            num(Some(ns_ratio)),
            num(ri),
            num(bi),
            num(built_ratio),
            num(ci),
            num(ir_ratio),
            samples(&row.rust_ns),
            samples(&row.c_ns),
            ir_json(row.rust_ir),
            ir_json(row.c_ir),
            num(li),
            ir_json(row.libmlx5_ir),
            num(ai),
            ir_json(row.api_ir),
            num(api_ratio),
            num(lwi),
            ir_json(row.libmlx5_wr_ir),
            num(bti),
            ir_json(row.batch_ir),
            num(batch_ratio),
        ));
    }
    {
        let row = &batch32;
        let (li, ai) = (loop_per_op(row.libmlx5_ir), loop_per_op(row.api_ir));
        let (lwi, bti) = (loop_per_op(row.libmlx5_wr_ir), loop_per_op(row.batch_ir));
        json_rows.push(format!(
            "    {{\"kind\": \"{BATCH32}\", \"wqe\": \"{CHAIN} SENDs per post (ctrl+data, ds 2), per \
             message\", \"bbs\": 1, \"messages_per_post\": {CHAIN}, \"rust_ns_per_op\": null, \
             \"c_ns_per_op\": null, \"ns_ratio\": null, \"rust_instr_per_op\": null, \
             \"rust_built_instr_per_op\": null, \"built_instr_ratio\": null, \
             \"c_instr_per_op\": null, \"instr_ratio\": null, \"rust_ns_samples\": [], \
             \"c_ns_samples\": [], \"rust_ir_m_2m\": null, \"c_ir_m_2m\": null, \
             \"libmlx5_instr_per_op\": {}, \"libmlx5_ir_m_2m\": {}, \
             \"api_instr_per_op\": {}, \"api_ir_m_2m\": {}, \"api_libmlx5_ratio\": {}, \
             \"libmlx5_wr_instr_per_op\": {}, \"libmlx5_wr_ir_m_2m\": {}, \
             \"batch_instr_per_op\": {}, \"batch_ir_m_2m\": {}, \"batch_libmlx5_ratio\": {}}}",
            num(li),
            ir_json(row.libmlx5_ir),
            num(ai),
            ir_json(row.api_ir),
            num(ai.zip(li).map(|(a, l)| a / l)),
            num(lwi),
            ir_json(row.libmlx5_wr_ir),
            num(bti),
            ir_json(row.batch_ir),
            num(bti.zip(li).map(|(a, l)| a / l)),
        ));
    }
    if rows
        .iter()
        .chain([&batch32])
        .all(|r| r.loop_sums().len() > 1)
    {
        println!();
        if sum_mismatches.is_empty() {
            println!(
                "the provider loops ({}) took the same completions (checksums) for every kind",
                batch32
                    .loop_sums()
                    .iter()
                    .map(|(who, _)| *who)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        } else {
            println!(
                "WARNING: the provider loops took different completions: {}",
                sum_mismatches.join("; ")
            );
        }
    }
    let goals28 = if loops_m.is_some() {
        provider_table(&rows, &batch32, &loop_per_op)
    } else {
        Vec::new()
    };
    println!();
    println!("goal (issue 17: instructions <= {GOAL_RATIO} x the C loop's, per kind):");
    for v in &verdicts {
        println!("  {v}");
    }

    let json_path = opts
        .json
        .unwrap_or_else(|| target_dir().join("bench/mlx5-micro.json"));
    if let Some(dir) = json_path.parent() {
        std::fs::create_dir_all(dir).expect("create the JSON directory");
    }
    let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let json = format!(
        "{{\n  \"benchmark\": \"mlx5-micro\",\n  \"mode\": \"{}\",\n  \"conditions\": {{\"cpu\": \
         \"{}\", \"cpus\": {cpus}, \"loadavg_before\": \"{load_before}\", \"loadavg_after\": \
         \"{load_after}\", \"cc\": \"{}\", \"c_flags\": \"-std=gnu11 -O2\", \"rust_profile\": \
         \"bench\", \"ops_per_run\": {}, \"runs\": {}, \"callgrind_m\": {}, \"ring_bbs\": \
         {RING_BBS}, \"batch\": {BATCH}, \"poll_pass\": {POLL_PASS}, \"poll_batch\": \
         {POLL_BATCH}, \"bf_reg_size\": {BF_REG_SIZE}, \"provider_loops_m\": {}}},\n  \
         \"results\": [\n{}\n  ],\n  \"issue28_goals\": [\n{}\n  ]\n}}\n",
        if opts.quick { "quick" } else { "full" },
        esc(&cpu_model()),
        esc(&cc_version),
        mode.n,
        mode.reps * mode.rounds,
        if valgrind {
            mode.m.to_string()
        } else {
            "null".into()
        },
        loops_m.map_or("null".into(), |m| m.to_string()),
        json_rows.join(",\n"),
        goals28
            .iter()
            .map(|g| g.json())
            .collect::<Vec<_>>()
            .join(",\n")
    );
    std::fs::write(&json_path, json)
        .unwrap_or_else(|e| fail(&format!("write {}", json_path.display()), e));
    println!();
    println!("JSON: {}", json_path.display());
}
