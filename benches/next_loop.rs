//! `uverbs::next` (the `ibverbs` crate's next API) on the mlx5 model, for `benches/mlx5-micro`'s
//! `next` figures: the same loops as `benches/api_loop.rs`'s `batch` mode, written against the
//! `next` face, so that what the module adds over uverbs' own batch and lending poll is counted
//! by the same measure.
//!
//! ```text
//! next_loop send|send_batch32|poll_cqe N
//! ```
//!
//! `send`: N batches of one 64-byte SEND each ([`batch_one`], counted:
//! `--toggle-collect=*next_loop::batch_one*`), the last of every 64 signaled, with a wait for its
//! completion every 64. `send_batch32`: 64-byte SENDs 32 to a batch, the last signaled
//! ([`batch32`], counted: `*next_loop::batch32*`). `poll_cqe`: one signaled RDMA WRITE at a time,
//! its completion waited for (the model's count of CQEs written), then taken by one lending poll
//! whose `wr_id`, status, opcode and length are read ([`poll_one`], counted:
//! `*next_loop::poll_one*`). Prints `checksum <hex>` of the completions, as `api_loop` does. With
//! no argument (`cargo test --benches`) it runs each a little and checks the completions.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use uverbs::next as ibverbs;

use ibverbs::{CompletionQueue, LocalMemorySlice, QueuePair, RemoteMemorySlice};
use uverbs_mlx5_model::Mlx5Model;

/// Requests between two waits (as `api_loop`).
const BATCH: u64 = 64;
/// Requests per batch of `send_batch32`.
const CHAIN: u64 = 32;
const DEADLINE: Duration = Duration::from_secs(120);

#[cold]
#[inline(never)]
fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("next_loop: {what}: {e}");
    std::process::exit(2)
}

/// Counted: one batch of one SEND.
#[inline(never)]
fn batch_one(qp: &mut QueuePair, sge: &[LocalMemorySlice; 1], wr_id: u64, signaled: bool) {
    let mut b = qp.start_send();
    if signaled {
        b.signaled().send(wr_id, sge);
    } else {
        b.send(wr_id, sge);
    }
    // SAFETY: the region outlives the queue pair; sends only read it.
    unsafe { b.submit() }.unwrap_or_else(|e| fail("submit", e));
}

/// Counted: a batch of `CHAIN` SENDs, the last signaled.
#[inline(never)]
fn batch32(qp: &mut QueuePair, sge: &[LocalMemorySlice; 1], first: u64) {
    let mut b = qp.start_send();
    for j in 0..CHAIN - 1 {
        b.send(first + j, sge);
    }
    b.signaled().send(first + CHAIN - 1, sge);
    // SAFETY: as in `batch_one`.
    unsafe { b.submit() }.unwrap_or_else(|e| fail("submit", e));
}

/// What a completion read gives.
#[derive(Default, Clone, Copy)]
struct Taken {
    wr_id: u64,
    ok: bool,
    opcode: u32,
    len: usize,
}

/// Counted: one lending poll and the fields of each completion it lent read into `out`.
#[inline(never)]
fn poll_one(cq: &CompletionQueue, out: &mut Taken) -> usize {
    let Some(mut completions) = cq.poll().unwrap_or_else(|e| fail("poll", e)) else {
        return 0;
    };
    let mut n = 0;
    while let Some(wc) = completions.next() {
        *out = Taken {
            wr_id: wc.wr_id(),
            ok: wc.is_success(),
            opcode: wc.opcode() as u32,
            len: wc.len(),
        };
        n += 1;
    }
    n
}

/// Takes completions until `want` sends' have come, adding them to `sum`.
fn drain(cq: &CompletionQueue, sum: &mut u64, mut want: u64) {
    let deadline = Instant::now() + DEADLINE;
    while want > 0 {
        if let Some(mut cs) = cq.poll().unwrap_or_else(|e| fail("poll", e)) {
            while let Some(wc) = cs.next() {
                if let Err((status, _)) = wc.ok() {
                    fail("completion", format!("{status:?}"));
                }
                if wc.opcode() != ibverbs::ibv_wc_opcode::IBV_WC_RECV {
                    *sum = sum.wrapping_mul(31).wrapping_add(wc.wr_id());
                    want -= 1;
                }
            }
        }
        if Instant::now() > deadline {
            fail("drain", "the completions did not come");
        }
        std::thread::yield_now();
    }
}

fn run(model: &Mlx5Model, mode: &str, n: u64) -> u64 {
    let list = uverbs::DeviceList::from_infos(vec![model.device_info()])
        .unwrap_or_else(|e| fail("device list", e));
    let ctx: ibverbs::Context = list
        .iter()
        .next()
        .unwrap_or_else(|| fail("device list", "no device"))
        .open()
        .unwrap_or_else(|e| fail("open", e))
        .into();
    let cq = ctx
        .create_cq(1024)
        .build()
        .unwrap_or_else(|e| fail("create_cq", e));
    let pd = ctx.alloc_pd().unwrap_or_else(|e| fail("alloc_pd", e));
    // Declared before the queue pair, so dropped after it: the region outlives the requests.
    let mr = pd.allocate(65536).unwrap_or_else(|e| fail("allocate", e));
    let mut prepared = pd
        .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)
        .unwrap_or_else(|e| fail("create_qp", e));
    prepared
        .set_gid_index(1)
        .set_max_send_wr(256)
        .set_max_recv_wr(256)
        .allow_remote_rw();
    let prepared = prepared.build().unwrap_or_else(|e| fail("create_qp", e));
    let me = prepared.endpoint().unwrap_or_else(|e| fail("endpoint", e));
    let mut qp = prepared
        .handshake(me)
        .unwrap_or_else(|e| fail("handshake", e));
    let sge = [mr.slice(0..64)];
    let recv = [mr.slice(32768..32768 + 4096)];
    let remote: RemoteMemorySlice = mr.remote().slice(16384..16384 + 64);
    let post_recvs = |qp: &mut QueuePair, m: u64| {
        for _ in 0..m {
            // SAFETY: the region outlives the queue pair and is never read here.
            unsafe { qp.post_receive(&recv, 1 << 30) }.unwrap_or_else(|e| fail("post_receive", e));
        }
    };
    let mut sum = 0u64;
    match mode {
        "send" => {
            let mut i = 0;
            while i < n {
                let m = (n - i).min(BATCH);
                post_recvs(&mut qp, m);
                for j in 0..m {
                    batch_one(&mut qp, black_box(&sge), i + j, j == m - 1);
                }
                drain(&cq, &mut sum, 1);
                i += m;
            }
        }
        "send_batch32" => {
            let mut i = 0;
            while i < n {
                post_recvs(&mut qp, CHAIN);
                batch32(&mut qp, black_box(&sge), i);
                drain(&cq, &mut sum, 1);
                i += CHAIN;
            }
        }
        "poll_cqe" => {
            let mut out = Taken::default();
            for i in 0..n {
                let before = model.stats().hca.send_cqes;
                // SAFETY: as in `batch_one`; the peer's writes land in the same region.
                unsafe { qp.post_write(&sge, remote, i, None) }
                    .unwrap_or_else(|e| fail("post_write", e));
                let deadline = Instant::now() + DEADLINE;
                while model.stats().hca.send_cqes == before {
                    if Instant::now() > deadline {
                        fail("poll_cqe", "the completion did not come");
                    }
                    std::thread::yield_now();
                }
                let mut taken = 0;
                while taken == 0 {
                    taken = poll_one(&cq, &mut out);
                }
                if !out.ok || out.wr_id != i || out.len != 0 {
                    fail("poll_cqe", "a wrong completion");
                }
                sum = sum
                    .wrapping_mul(31)
                    .wrapping_add(out.wr_id ^ u64::from(out.opcode));
            }
        }
        other => fail("unknown mode", other),
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
        for mode in ["send", "send_batch32", "poll_cqe"] {
            run(&model, mode, 2 * BATCH);
        }
        eprintln!("next_loop: every mode posted and polled on the mlx5 model");
        return ExitCode::SUCCESS;
    }
    let [mode, n] = &args[..] else {
        eprintln!("usage: next_loop send|send_batch32|poll_cqe N");
        return ExitCode::from(2);
    };
    let n: u64 = n.parse().unwrap_or_else(|e| fail("N", e));
    if mode == "send_batch32" && n % CHAIN != 0 {
        fail("N", format!("{n} is not a multiple of {CHAIN}"));
    }
    println!("checksum {:016x}", run(&model, mode, n));
    ExitCode::SUCCESS
}
