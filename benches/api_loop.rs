//! uverbs' public API on the mlx5 model, for the "uverbs API instr/op" column of
//! `benches/mlx5-micro`: the Rust counterpart of `drivers/benches/libmlx5_loop.c` (rdma-core's
//! `ibv_post_send` / `ibv_poll_cq` on the model), doing exactly what that program does, through
//! [`QueuePair::post_send_list`] and [`CompletionQueue::poll`] instead.
//!
//! ```text
//! api_loop post|poll|batch KIND N
//! ```
//!
//! The model ([`Mlx5Model`]) runs in this process (its HCA in a thread of its own), found through
//! [`DeviceList::from_infos`], as the verbs test suites find it. One RC queue pair connected to
//! itself over GID index 1 (a UD one for `ud_send`, sending to itself through an address handle).
//! `post` posts N requests of KIND (`send`, `send_inline32`, `rdma_write`, `rdma_read`,
//! `atomic_cas`, `ud_send`) one at a time through [`post_one`] (what callgrind counts:
//! `--toggle-collect=*api_loop::post_one*`), the last of every 64 signaled, and takes completions
//! until that one's (not counted) before the next 64. `poll` posts 16 signaled RDMA WRITEs at a
//! time, waits until the device has written all 16 completions, then takes them with [`poll_one`],
//! one [`CompletionQueue::poll`] with room for one completion each (counted:
//! `--toggle-collect=*api_loop::poll_one*`).
//!
//! `batch` does the same through the batch API and the lending poll, for the "batch" column: each
//! request of `post` is one [`QueuePair::start_send`], the request ([`SendBatch::send`],
//! [`signaled`](SendBatch::signaled)`()`, [`to`](SendBatch::to) for UD, ...) and
//! [`SendBatch::submit`] in [`post_batch_one`] (counted: `*api_loop::post_batch_one*`);
//! `batch poll_cqe N` posts one signaled RDMA WRITE at a time, waits until its completion is
//! written, and takes it with [`poll_lending_one`], one [`CompletionQueue::start_poll`] and the
//! [`Completion`]'s `wr_id`, status, opcode and length read (counted:
//! `*api_loop::poll_lending_one*`). One completion waits at each lending poll, as at each poll of
//! `poll` (where 16 are written but `poll` takes one): the lending poll takes every completion
//! waiting, so with 16 it would count 16 completions' work in one call.
//!
//! KIND `send_batch32` posts 64-byte SENDs 32 at a time, the last of each 32 signaled, and waits
//! for that one before the next 32: `post` as one [`QueuePair::post_send_list`] of 32 requests
//! built outside the counted code ([`post_list32`], counted: `*api_loop::post_list32*`), `batch`
//! as one `start_send`, 32 requests and one `submit` ([`post_batch32`], counted:
//! `*api_loop::post_batch32*`). Per message is the count over N.
//!
//! The public API cannot look at a completion without taking it, so the wait does not read the CQ
//! (as the C program reads the owner bits through mlx5dv): it watches the model's own count of
//! requester CQEs written ([`Mlx5Model::stats`], `hca.send_cqes`, which the HCA raises under the
//! same lock in which it writes the CQE), yielding to the HCA thread until it has grown by the
//! batch. Not counted either way.
//!
//! Prints `checksum <hex>` of the send completions' `wr_id`s and byte counts (where defined: RDMA
//! READ, atomics), in the C program's formula, so that a run that lost or mixed up completions is seen. With no mode (as
//! `cargo test --benches` and `cargo bench` run it) it runs every kind a little and checks that
//! all completed.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use uverbs::{
    ibv_access_flags, ibv_qp_type, ibv_wc, ibv_wc_opcode, ibv_wc_status, wc_status_str,
    AddressHandle, AddressVector, Completion, CompletionQueue, DeviceList, MemoryRegion,
    PostFailure, QueuePair, ReceiveRequest, SendBatch, SendRequest, Sge,
};
use uverbs_mlx5_model::Mlx5Model;

// Must match libmlx5_loop.c.
/// Requests posted between two waits for a completion.
const BATCH: u64 = 64;
/// Completions posted, then polled one at a time, per round of the poll mode.
const POLL_BATCH: u64 = 16;
/// Requests per post of `send_batch32`.
const CHAIN: usize = 32;
const GID_INDEX: u32 = 1;
const QKEY: u32 = 0x1111_1111;
/// The buffer: sends read from its start, RDMA and atomics target `REMOTE_AT`, receives land at
/// `RECV_AT`.
const BUF_LEN: usize = 65536;
const REMOTE_AT: u64 = 16384;
const RECV_AT: usize = 32768;
/// The `wr_id` of receives (`wr_id >> 30` tells them from sends).
const RECV_ID: u64 = 1 << 30;
/// How long a wait for the device may take before the run fails instead of hanging.
const DEADLINE: Duration = Duration::from_secs(120);

/// The kinds of `benches/mlx5-micro` that post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Send,
    SendInline32,
    RdmaWrite,
    RdmaRead,
    AtomicCas,
    UdSend,
    /// 64-byte SENDs, 32 per post.
    SendBatch32,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Send,
        Kind::SendInline32,
        Kind::RdmaWrite,
        Kind::RdmaRead,
        Kind::AtomicCas,
        Kind::UdSend,
        Kind::SendBatch32,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Send => "send",
            Kind::SendInline32 => "send_inline32",
            Kind::RdmaWrite => "rdma_write",
            Kind::RdmaRead => "rdma_read",
            Kind::AtomicCas => "atomic_cas",
            Kind::UdSend => "ud_send",
            Kind::SendBatch32 => "send_batch32",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Whether the requests consume receives (on the same queue pair).
    fn sends(self) -> bool {
        matches!(
            self,
            Kind::Send | Kind::SendInline32 | Kind::UdSend | Kind::SendBatch32
        )
    }
}

/// What a run does (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `post`: `post_send_list`, one request per call (32 for `send_batch32`).
    Post,
    /// `poll`: `CompletionQueue::poll` of one completion.
    Poll,
    /// `batch`: `start_send` .. `submit`, one request per batch (32 for `send_batch32`).
    Batch,
    /// `batch poll_cqe`: `start_poll` with one completion waiting.
    Lend,
}

#[cold]
#[inline(never)]
fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("api_loop: {what}: {e}");
    std::process::exit(2)
}

/// The gather entries and the address handle the requests are built from (not counted, as the C
/// program's `fill`).
struct Parts<'m> {
    /// 64 bytes at the buffer's start.
    sge: [Sge; 1],
    /// 8 bytes there (the atomic's result).
    sge8: [Sge; 1],
    /// 32 bytes there, sent inline.
    inline: &'m [u8],
    remote: uverbs::RemoteMemory,
    ah: Option<&'m AddressHandle>,
    qpn: u32,
}

impl<'m> Parts<'m> {
    /// The request of `kind` with `wr_id`, signaled or not.
    fn request(&self, kind: Kind, wr_id: u64, signaled: bool) -> SendRequest<'_> {
        let r = match kind {
            Kind::Send | Kind::SendBatch32 => SendRequest::send(wr_id, &self.sge),
            Kind::SendInline32 => SendRequest::send_inline(wr_id, self.inline),
            Kind::RdmaWrite => SendRequest::rdma_write(wr_id, &self.sge, self.remote),
            Kind::RdmaRead => SendRequest::rdma_read(wr_id, &self.sge, self.remote),
            Kind::AtomicCas => SendRequest::compare_and_swap(wr_id, &self.sge8, self.remote, 0, 0),
            Kind::UdSend => SendRequest::send_ud(
                wr_id,
                &self.sge,
                self.ah
                    .unwrap_or_else(|| fail("ud_send", "no address handle")),
                self.qpn,
                QKEY,
            ),
        };
        if signaled {
            r
        } else {
            r.unsignaled()
        }
    }
}

/// Counted by callgrind: one post of one request through the public API.
#[inline(never)]
fn post_one(qp: &QueuePair<'_>, wr: &SendRequest<'_>) -> Result<(), PostFailure> {
    // SAFETY: the requests name the buffer of `run`, which outlives the queue pair; its memory is
    // only read and written by the device (the program never looks at it).
    unsafe { qp.post_send_list(std::slice::from_ref(wr)) }
}

/// Counted by callgrind: one poll with room for one completion through the public API.
#[inline(never)]
fn poll_one(cq: &CompletionQueue<'_>, wc: &mut [ibv_wc; 1]) -> std::io::Result<usize> {
    cq.poll(wc).map(|got| got.len())
}

/// Counted by callgrind: one batch of one request of `kind` through the batch API, from
/// `start_send` to `submit`.
#[inline(never)]
fn post_batch_one(
    qp: &mut QueuePair<'_>,
    parts: &Parts<'_>,
    kind: Kind,
    wr_id: u64,
    signaled: bool,
) -> Result<(), PostFailure> {
    let mut b = qp.start_send();
    match kind {
        Kind::Send | Kind::SendBatch32 if signaled => b.signaled().send(wr_id, &parts.sge),
        Kind::Send | Kind::SendBatch32 => b.send(wr_id, &parts.sge),
        Kind::SendInline32 if signaled => b.signaled().send_inline(wr_id, parts.inline),
        Kind::SendInline32 => b.send_inline(wr_id, parts.inline),
        Kind::RdmaWrite if signaled => b.signaled().write(wr_id, &parts.sge, parts.remote),
        Kind::RdmaWrite => b.write(wr_id, &parts.sge, parts.remote),
        Kind::RdmaRead if signaled => b.signaled().read(wr_id, &parts.sge, parts.remote),
        Kind::RdmaRead => b.read(wr_id, &parts.sge, parts.remote),
        Kind::AtomicCas if signaled => {
            b.signaled()
                .atomic_cmp_swap(wr_id, &parts.sge8, parts.remote, 0, 0)
        }
        Kind::AtomicCas => b.atomic_cmp_swap(wr_id, &parts.sge8, parts.remote, 0, 0),
        Kind::UdSend => {
            // No closure here: a closure's symbol would match the callgrind toggle too.
            let Some(ah) = parts.ah else {
                fail("ud_send", "no address handle")
            };
            let op = b.to(ah, parts.qpn, QKEY);
            if signaled {
                op.signaled().send(wr_id, &parts.sge)
            } else {
                op.send(wr_id, &parts.sge)
            }
        }
    }
    // SAFETY: as in `post_one`.
    unsafe { b.submit() }
}

/// Counted by callgrind: one `post_send_list` of `CHAIN` requests.
#[inline(never)]
fn post_list32(qp: &QueuePair<'_>, list: &[SendRequest<'_>; CHAIN]) -> Result<(), PostFailure> {
    // SAFETY: as in `post_one`.
    unsafe { qp.post_send_list(list) }
}

/// Counted by callgrind: `CHAIN` 64-byte SENDs (`wr_id`s from `first`, the last signaled) in one
/// batch, from `start_send` to `submit`.
#[inline(never)]
fn post_batch32(qp: &mut QueuePair<'_>, parts: &Parts<'_>, first: u64) -> Result<(), PostFailure> {
    let mut b: SendBatch<'_, '_> = qp.start_send();
    for j in 0..CHAIN as u64 - 1 {
        b.send(first + j, &parts.sge);
    }
    b.signaled().send(first + CHAIN as u64 - 1, &parts.sge);
    // SAFETY: as in `post_one`.
    unsafe { b.submit() }
}

/// What the checksum and the check read of a completion.
#[derive(Debug, Clone, Copy, Default)]
struct Taken {
    wr_id: u64,
    status: ibv_wc_status::Type,
    opcode: ibv_wc_opcode::Type,
    len: u32,
}

impl Taken {
    fn of_wc(wc: &ibv_wc) -> Taken {
        Taken {
            wr_id: wc.wr_id(),
            status: wc.status(),
            opcode: wc.opcode(),
            len: wc.len() as u32,
        }
    }

    #[inline]
    fn of(c: &Completion<'_>) -> Taken {
        Taken {
            wr_id: c.wr_id(),
            status: c.status(),
            opcode: c.opcode(),
            len: c.len() as u32,
        }
    }
}

/// Counted by callgrind: one lending poll ([`CompletionQueue::start_poll`]) and the fields of each
/// completion it took read into `out` (the last one's); how many it took.
#[inline(never)]
fn poll_lending_one(cq: &CompletionQueue<'_>, out: &mut Taken) -> std::io::Result<usize> {
    let Some(mut completions) = cq.start_poll()? else {
        return Ok(0);
    };
    let mut n = 0;
    while let Some(c) = completions.next() {
        *out = Taken::of(&c);
        n += 1;
    }
    Ok(n)
}

/// The C program's checksum step: the `wr_id`, and the byte count where the verbs define it for a
/// send queue's completion (RDMA READ, atomics).
fn add(sum: &mut u64, wc: &Taken) {
    let len = match wc.opcode {
        ibv_wc_opcode::IBV_WC_RDMA_READ
        | ibv_wc_opcode::IBV_WC_COMP_SWAP
        | ibv_wc_opcode::IBV_WC_FETCH_ADD => u64::from(wc.len),
        _ => 0,
    };
    *sum = sum
        .wrapping_mul(31)
        .wrapping_add(wc.wr_id)
        .wrapping_add(len);
}

/// Fails on an unsuccessful completion.
fn check(wc: &Taken) {
    if wc.status != ibv_wc_status::IBV_WC_SUCCESS {
        fail(
            &format!("completion {}", wc.wr_id),
            wc_status_str(wc.status),
        );
    }
}

/// Takes completions until `want` send completions came (not counted); receives' completions are
/// taken on the way.
fn drain(cq: &CompletionQueue<'_>, sum: &mut u64, mut want: u64) {
    let mut wc = [ibv_wc::default(); 16];
    let deadline = Instant::now() + DEADLINE;
    while want > 0 {
        let got = cq.poll(&mut wc).unwrap_or_else(|e| fail("poll", e));
        if got.is_empty() {
            if Instant::now() > deadline {
                fail(
                    "drain",
                    format!("{want} completions missing after {DEADLINE:?}"),
                );
            }
            std::thread::yield_now(); // let the device's thread run
        }
        for w in got.iter() {
            let w = Taken::of_wc(w);
            check(&w);
            if w.wr_id >> 30 != 0 {
                continue; // a receive
            }
            add(sum, &w);
            want -= 1;
        }
    }
}

/// The requester CQEs the model has written so far (the wait of the poll mode).
fn send_cqes(model: &Mlx5Model) -> u64 {
    model.stats().hca.send_cqes
}

/// Waits until the model has written `want` requester CQEs in all (not counted).
fn wait_cqes(model: &Mlx5Model, want: u64) {
    let deadline = Instant::now() + DEADLINE;
    while send_cqes(model) < want {
        if Instant::now() > deadline {
            fail(
                "poll",
                format!("the device wrote no {want}th CQE in {DEADLINE:?}"),
            );
        }
        std::thread::yield_now();
    }
}

/// Runs `n` operations of `mode` and `kind`; returns the checksum.
fn run(model: &Mlx5Model, mode: Mode, kind: Kind, n: u64) -> u64 {
    let poll_mode = matches!(mode, Mode::Poll | Mode::Lend);
    let list = DeviceList::from_infos(vec![model.device_info()])
        .unwrap_or_else(|e| fail("device list", e));
    let dev = list
        .iter()
        .next()
        .unwrap_or_else(|| fail("device list", "no device"));
    let ctx = dev.open().unwrap_or_else(|e| fail("open", e));
    let chan = ctx
        .create_comp_channel()
        .unwrap_or_else(|e| fail("completion channel", e));
    let cq = ctx
        .create_cq_with_channel(1024, 0, &chan, 0)
        .unwrap_or_else(|e| fail("create_cq", e));
    let pd = ctx.alloc_pd().unwrap_or_else(|e| fail("alloc_pd", e));
    let access = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
        | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
        | ibv_access_flags::IBV_ACCESS_REMOTE_READ
        | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC;
    let mr: MemoryRegion<u8> = pd
        .allocate_with_access(BUF_LEN, access)
        .unwrap_or_else(|e| fail("reg_mr", e));
    let ud = kind == Kind::UdSend && !poll_mode;
    let mut builder = pd.create_qp(
        &cq,
        &cq,
        if ud {
            ibv_qp_type::IBV_QPT_UD
        } else {
            ibv_qp_type::IBV_QPT_RC
        },
    );
    builder
        .set_gid_index(GID_INDEX)
        .set_max_send_wr(256)
        .set_max_recv_wr(256)
        .set_max_send_sge(1)
        .set_max_recv_sge(1)
        .set_max_inline_data(64)
        // RC only (ignored for UD): as libmlx5_loop.c connects.
        .set_access(access)
        .set_path_mtu(uverbs::IBV_MTU_1024)
        .set_max_dest_rd_atomic(16)
        .set_max_rd_atomic(16)
        .set_min_rnr_timer(12)
        .set_timeout(14)
        .set_retry_count(7)
        .set_rnr_retry(7)
        // UD only (ignored for RC).
        .set_qkey(QKEY);
    let prepared = builder.build().unwrap_or_else(|e| fail("create_qp", e));
    let me = prepared.endpoint();
    let gid = me
        .gid
        .unwrap_or_else(|| fail("create_qp", "no GID (a GID index was set)"));
    // Connected to itself (RC); a UD queue pair is only activated.
    let mut qp = prepared
        .handshake(me)
        .unwrap_or_else(|e| fail("modify_qp", e));
    let ah = if ud {
        let av = AddressVector {
            dgid: Some(gid),
            sgid_index: GID_INDEX as u8,
            hop_limit: 64,
            port_num: 1,
            ..AddressVector::default()
        };
        Some(pd.create_ah(&av).unwrap_or_else(|e| fail("create_ah", e)))
    } else {
        None
    };
    let sge = mr.sge(0..64).unwrap_or_else(|e| fail("sge", e));
    let parts = Parts {
        sge: [sge],
        sge8: [mr.sge(0..8).unwrap_or_else(|e| fail("sge", e))],
        inline: &mr[..32],
        remote: mr
            .remote()
            .offset(REMOTE_AT)
            .unwrap_or_else(|| fail("remote", "offset past the buffer")),
        ah: ah.as_ref(),
        qpn: qp.qp_num(),
    };
    let recv_sge = [mr
        .sge(RECV_AT..RECV_AT + 4096)
        .unwrap_or_else(|e| fail("sge", e))];

    let mut sum = 0u64;
    if kind == Kind::SendBatch32 && !poll_mode {
        let mut i = 0;
        while i < n {
            // Keeps receives posted for the sends, outside the counted code.
            for _ in 0..CHAIN {
                let r = ReceiveRequest::new(RECV_ID, &recv_sge);
                // SAFETY: the receive buffer outlives the queue pair and is never read here.
                unsafe { qp.post_receive_list(&[r]) }.unwrap_or_else(|e| fail("post_receive", e));
            }
            if mode == Mode::Batch {
                post_batch32(&mut qp, black_box(&parts), i)
                    .unwrap_or_else(|e| fail("post_batch32", e));
            } else {
                let list: [SendRequest<'_>; CHAIN] = std::array::from_fn(|j| {
                    parts.request(Kind::Send, i + j as u64, j == CHAIN - 1)
                });
                post_list32(&qp, black_box(&list)).unwrap_or_else(|e| fail("post_list32", e));
            }
            drain(&cq, &mut sum, 1);
            i += CHAIN as u64;
        }
    } else if !poll_mode {
        let mut i = 0;
        while i < n {
            let m = (n - i).min(BATCH);
            if kind.sends() {
                // Keeps receives posted for the sends, outside the counted code.
                for _ in 0..m {
                    let r = ReceiveRequest::new(RECV_ID, &recv_sge);
                    // SAFETY: the receive buffer outlives the queue pair and is never read here.
                    unsafe { qp.post_receive_list(&[r]) }
                        .unwrap_or_else(|e| fail("post_receive", e));
                }
            }
            for j in 0..m {
                let signaled = j == m - 1;
                if mode == Mode::Batch {
                    post_batch_one(&mut qp, black_box(&parts), kind, i + j, signaled)
                        .unwrap_or_else(|e| fail("post_batch_one", e));
                } else {
                    let wr = parts.request(kind, i + j, signaled);
                    post_one(&qp, black_box(&wr)).unwrap_or_else(|e| fail("post_one", e));
                }
            }
            drain(&cq, &mut sum, 1);
            // The receives' completions (on the same CQ) are taken by the next drain.
            i += m;
        }
    } else if mode == Mode::Lend {
        // One completion waiting at each lending poll (see the module's documentation).
        let mut taken = Taken::default();
        for i in 0..n {
            let before = send_cqes(model);
            let wr = parts.request(Kind::RdmaWrite, i, true);
            // SAFETY: as in `post_one`.
            unsafe { qp.post_send_list(&[wr]) }.unwrap_or_else(|e| fail("post", e));
            wait_cqes(model, before + 1);
            let got = poll_lending_one(&cq, black_box(&mut taken))
                .unwrap_or_else(|e| fail("poll_lending_one", e));
            if got != 1 {
                fail("poll_lending_one", format!("{got} completions, not 1"));
            }
            check(&taken);
            add(&mut sum, &taken);
        }
    } else {
        let mut wc = [ibv_wc::default(); 1];
        let mut i = 0;
        while i < n {
            let m = (n - i).min(POLL_BATCH);
            let before = send_cqes(model);
            for j in 0..m {
                let wr = parts.request(Kind::RdmaWrite, i + j, true);
                // SAFETY: as in `post_one`.
                unsafe { qp.post_send_list(&[wr]) }.unwrap_or_else(|e| fail("post", e));
            }
            // Every completion of the batch written (see the module's documentation).
            wait_cqes(model, before + m);
            for _ in 0..m {
                let got = poll_one(&cq, black_box(&mut wc)).unwrap_or_else(|e| fail("poll_one", e));
                if got != 1 {
                    fail("poll_one", format!("{got} completions, not 1"));
                }
                let taken = Taken::of_wc(&wc[0]);
                check(&taken);
                add(&mut sum, &taken);
            }
            i += m;
        }
    }
    sum
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let model = Mlx5Model::new().unwrap_or_else(|e| fail("starting the mlx5 model", e));
    if args.is_empty() {
        // Run as a test (`cargo test --benches`, `cargo bench`): every kind and mode, a little,
        // and the batch modes leave the checksums of the others.
        for kind in Kind::ALL {
            let n = 2 * BATCH + if kind == Kind::SendBatch32 { 0 } else { 3 };
            let post = run(&model, Mode::Post, kind, n);
            let batch = run(&model, Mode::Batch, kind, n);
            if post != batch {
                fail(
                    kind.name(),
                    "the batch API took other completions than post_send_list",
                );
            }
        }
        let n = 2 * POLL_BATCH + 3;
        if run(&model, Mode::Poll, Kind::RdmaWrite, n)
            != run(&model, Mode::Lend, Kind::RdmaWrite, n)
        {
            fail(
                "poll_cqe",
                "the lending poll took other completions than poll",
            );
        }
        eprintln!("api_loop: every kind posted and polled on the mlx5 model, both APIs");
        return ExitCode::SUCCESS;
    }
    let [mode, kind, n] = &args[..] else {
        eprintln!("usage: api_loop post|poll|batch KIND N");
        return ExitCode::from(2);
    };
    // The poll modes poll RDMA WRITEs whatever the kind (`poll_cqe` in benches/mlx5-micro);
    // `batch poll_cqe` is the lending poll.
    let mode = match (mode.as_str(), kind.as_str()) {
        ("post", _) => Mode::Post,
        ("poll", _) => Mode::Poll,
        ("batch", "poll_cqe") => Mode::Lend,
        ("batch", _) => Mode::Batch,
        (other, _) => fail("unknown mode", other),
    };
    let kind = if matches!(mode, Mode::Poll | Mode::Lend) {
        Kind::RdmaWrite
    } else {
        Kind::parse(kind).unwrap_or_else(|| fail("unknown kind", kind))
    };
    let n: u64 = n.parse().unwrap_or_else(|e| fail("N", e));
    if kind == Kind::SendBatch32 && n % CHAIN as u64 != 0 {
        fail(
            "N",
            format!("{n} is not a multiple of {CHAIN} (send_batch32)"),
        );
    }
    println!("checksum {:016x}", run(&model, mode, kind, n));
    ExitCode::SUCCESS
}
