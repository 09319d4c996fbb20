//! uverbs' side of the byte-for-byte comparison with libmlx5 (`tests/rdma-core/run`): posts the
//! requests of `tests/rdma-core/wqe_requests.txt` through the public API, exactly as
//! `tests/rdma-core/wqe_bytes.c` posts them through libmlx5, on the mlx5 model with its doorbell
//! trace on; `tests/rdma-core/wqe_compare.py` then compares what the device received from each.
//!
//! ```text
//! LD_PRELOAD=libuverbs_mlx5_preload.so UVERBS_MODEL_TRACE=TRACE wqe_bytes REQUESTS META
//! ```
//!
//! One RC queue pair connected to itself and one UD queue pair sending to itself through an
//! address handle, the capacities the C program asks for, one registered buffer of 64 KiB. After
//! each post it waits until the trace has the doorbell's record (one line more), and after a
//! signaled request until its completion came. META receives the QPNs, the buffer's address and
//! keys and the requests' labels, as the C program writes them. What uverbs' API cannot say (inline
//! data in pieces) is posted as its equal: the pieces concatenated.

use std::time::{Duration, Instant};

use uverbs::{
    ibv_access_flags, ibv_qp_type, ibv_wc, wc_status_str, AddressVector, CompletionQueue, Context,
    ReceiveRequest, RemoteMemory, SendRequest, Sge,
};

const GID_INDEX: u32 = 1;
const QKEY: u32 = 0x1111_1111;
const BUF_LEN: usize = 65536;
const RECV_AT: u64 = 32768;
const UD_RECV_AT: u64 = 40960;
const RECV_ID: u64 = 1 << 40;
const DEADLINE: Duration = Duration::from_secs(30);

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("wqe_bytes: {what}: {e}");
    std::process::exit(1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Send,
    SendImm,
    SendInv,
    Write,
    WriteImm,
    Read,
    Cas,
    Faa,
}

/// One line of the request file (its format is described there).
#[derive(Debug, Default)]
struct Step {
    label: String,
    ud: bool,
    op: Option<Op>,
    signaled: bool,
    fence: bool,
    solicited: bool,
    inline: bool,
    pieces: Vec<(u64, u64)>,
    remote: u64,
    imm: u32,
    inv: u32,
    compare: u64,
    swap: u64,
    add: u64,
    list: usize,
}

fn hex64(v: &str) -> u64 {
    u64::from_str_radix(v, 16).unwrap_or_else(|e| fail(v, e))
}

fn parse(text: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(label) = words.next().filter(|w| !w.starts_with('#')) else {
            continue;
        };
        let (Some(qp), Some(op), Some(flags)) = (words.next(), words.next(), words.next()) else {
            fail(label, "a line needs LABEL QP OP FLAGS")
        };
        let op = match op {
            "send" => Op::Send,
            "send_imm" => Op::SendImm,
            "send_inv" => Op::SendInv,
            "write" => Op::Write,
            "write_imm" => Op::WriteImm,
            "read" => Op::Read,
            "cas" => Op::Cas,
            "faa" => Op::Faa,
            _ => fail(label, format!("unknown op {op}")),
        };
        let mut s = Step {
            label: label.to_string(),
            ud: qp == "ud",
            op: Some(op),
            signaled: flags.contains('s'),
            fence: flags.contains('f'),
            solicited: flags.contains('e'),
            inline: flags.contains('i'),
            list: 1,
            ..Step::default()
        };
        for field in words {
            let (key, value) = field
                .split_once('=')
                .unwrap_or_else(|| fail(label, format!("bad field {field}")));
            match key {
                "sge" => {
                    s.pieces = value
                        .split(',')
                        .map(|p| {
                            let (off, len) = p
                                .split_once('+')
                                .unwrap_or_else(|| fail(label, format!("bad sge {p}")));
                            let num = |v: &str| v.parse::<u64>().unwrap_or_else(|e| fail(v, e));
                            (num(off), num(len))
                        })
                        .collect()
                }
                "remote" => s.remote = value.parse().unwrap_or_else(|e| fail(value, e)),
                "imm" => s.imm = hex64(value) as u32,
                "inv" => s.inv = hex64(value) as u32,
                "compare" => s.compare = hex64(value),
                "swap" => s.swap = hex64(value),
                "add" => s.add = hex64(value),
                "list" => s.list = value.parse().unwrap_or_else(|e| fail(value, e)),
                _ => fail(label, format!("unknown field {key}")),
            }
        }
        steps.push(s);
    }
    steps
}

fn trace_lines(path: &str) -> usize {
    std::fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

/// Waits until the trace has `want` records (the model wrote the doorbell's).
fn wait_trace(path: &str, want: usize, label: &str) {
    let deadline = Instant::now() + DEADLINE;
    while trace_lines(path) < want {
        if Instant::now() > deadline {
            fail(label, "no trace record of its doorbell");
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Takes completions until `want` send completions came; receives' on the way.
fn wait_completions(cq: &CompletionQueue<'_>, mut want: usize, label: &str) {
    let deadline = Instant::now() + DEADLINE;
    let mut wc = [ibv_wc::default(); 16];
    while want > 0 {
        let got = cq.poll(&mut wc).unwrap_or_else(|e| fail("poll", e));
        for w in got.iter() {
            if !w.is_valid() {
                fail(
                    label,
                    format!("completion {}: {}", w.wr_id(), wc_status_str(w.status())),
                );
            }
            if w.wr_id() & RECV_ID == 0 {
                want -= 1;
            }
        }
        if got.is_empty() && Instant::now() > deadline {
            fail(label, format!("{want} completions missing"));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [requests, meta_path] = &args[..] else {
        fail(
            "usage",
            "wqe_bytes REQUESTS META (under the preload library)",
        )
    };
    let trace = std::env::var("UVERBS_MODEL_TRACE")
        .unwrap_or_else(|_| fail("UVERBS_MODEL_TRACE", "not set"));
    let text = std::fs::read_to_string(requests).unwrap_or_else(|e| fail(requests, e));
    let steps = parse(&text);

    let ctx = Context::open_by_name("mlx5_0").unwrap_or_else(|e| fail("open mlx5_0", e));
    let pd = ctx.alloc_pd().unwrap_or_else(|e| fail("alloc_pd", e));
    let access = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
        | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
        | ibv_access_flags::IBV_ACCESS_REMOTE_READ
        | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC;
    let mut mr = pd
        .allocate_with_access::<u8>(BUF_LEN, access)
        .unwrap_or_else(|e| fail("reg_mr", e));
    for (i, b) in mr.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(7).wrapping_add(1);
    }
    let cq = ctx
        .create_cq(1024, 0)
        .unwrap_or_else(|e| fail("create_cq", e));
    let build = |qp_type| {
        let mut b = pd.create_qp(&cq, &cq, qp_type);
        b.set_gid_index(GID_INDEX)
            .set_max_send_wr(16)
            .set_max_recv_wr(256)
            .set_max_send_sge(4)
            .set_max_recv_sge(1)
            .set_max_inline_data(60)
            .set_access(access)
            .set_path_mtu(uverbs::IBV_MTU_1024)
            .set_max_dest_rd_atomic(16)
            .set_max_rd_atomic(16)
            .set_min_rnr_timer(12)
            .set_timeout(14)
            .set_retry_count(7)
            .set_rnr_retry(7)
            .set_qkey(QKEY);
        let prepared = b.build().unwrap_or_else(|e| fail("create_qp", e));
        let me = prepared.endpoint();
        let qp = prepared
            .handshake(me)
            .unwrap_or_else(|e| fail("modify_qp", e));
        (qp, me)
    };
    let (rc, _) = build(ibv_qp_type::IBV_QPT_RC);
    let (ud, me) = build(ibv_qp_type::IBV_QPT_UD);
    let av = AddressVector {
        dgid: Some(me.gid.unwrap_or_else(|| fail("create_qp", "no GID"))),
        sgid_index: GID_INDEX as u8,
        hop_limit: 64,
        port_num: 1,
        ..AddressVector::default()
    };
    let ah = pd.create_ah(&av).unwrap_or_else(|e| fail("create_ah", e));

    let sge = |off: u64, len: u64| -> Sge {
        mr.sge(off as usize..(off + len) as usize)
            .unwrap_or_else(|e| fail("sge", e))
    };
    let whole = mr.remote();
    // Receives for every message that takes one.
    for (qp, ud_qp, at) in [(&rc, false, RECV_AT), (&ud, true, UD_RECV_AT)] {
        let n: usize = steps
            .iter()
            .filter(|s| s.ud == ud_qp)
            .filter(|s| {
                matches!(
                    s.op,
                    Some(Op::Send | Op::SendImm | Op::SendInv | Op::WriteImm)
                )
            })
            .map(|s| s.list)
            .sum();
        let list = [sge(at, 8192)];
        let r = ReceiveRequest::new(RECV_ID, &list);
        for _ in 0..n {
            // SAFETY: the buffer outlives the queue pairs; nothing here reads the receive area.
            unsafe { qp.post_receive_list(&[r]) }.unwrap_or_else(|e| fail("post_receive", e));
        }
    }

    let mut meta = format!(
        "{{\"impl\":\"uverbs\",\"rc_qpn\":{},\"ud_qpn\":{},\"addr\":{},\"len\":{},\"lkey\":{},\"rkey\":{},\"steps\":[",
        rc.qp_num(),
        ud.qp_num(),
        whole.addr,
        BUF_LEN,
        mr.lkey(),
        whole.rkey,
    );
    let mut records = trace_lines(&trace);
    for (i, s) in steps.iter().enumerate() {
        let sges: Vec<Sge> = s.pieces.iter().map(|&(o, l)| sge(o, l)).collect();
        let inline: Vec<u8> = s
            .pieces
            .iter()
            .flat_map(|&(o, l)| mr[o as usize..(o + l) as usize].iter().copied())
            .collect();
        let atomic = [sges.first().copied().unwrap_or_else(|| sge(0, 8))];
        let remote = RemoteMemory {
            addr: whole.addr + s.remote,
            ..whole
        };
        let request = |k: usize| -> SendRequest<'_> {
            let id = (i as u64) << 8 | k as u64;
            let r = match (s.op.expect("parsed"), s.inline, s.ud) {
                (Op::Send, false, false) => SendRequest::send(id, &sges),
                (Op::Send, true, false) => SendRequest::send_inline(id, &inline),
                (Op::Send, false, true) => SendRequest::send_ud(id, &sges, &ah, ud.qp_num(), QKEY),
                (Op::Send, true, true) => {
                    SendRequest::send_ud_inline(id, &inline, &ah, ud.qp_num(), QKEY)
                }
                (Op::SendImm, false, false) => SendRequest::send_with_imm(id, &sges, s.imm),
                (Op::SendImm, false, true) => {
                    SendRequest::send_ud_with_imm(id, &sges, &ah, ud.qp_num(), QKEY, s.imm)
                }
                (Op::SendInv, false, false) => SendRequest::send_with_invalidate(id, &sges, s.inv),
                (Op::Write, false, false) => SendRequest::rdma_write(id, &sges, remote),
                (Op::Write, true, false) => SendRequest::rdma_write_inline(id, &inline, remote),
                (Op::WriteImm, false, false) => {
                    SendRequest::rdma_write_with_imm(id, &sges, remote, s.imm)
                }
                (Op::Read, false, false) => SendRequest::rdma_read(id, &sges, remote),
                (Op::Cas, false, false) => {
                    SendRequest::compare_and_swap(id, &atomic, remote, s.compare, s.swap)
                }
                (Op::Faa, false, false) => SendRequest::fetch_and_add(id, &atomic, remote, s.add),
                _ => fail(&s.label, "a request uverbs' API does not build"),
            };
            let r = if s.signaled { r } else { r.unsignaled() };
            let r = if s.fence { r.fence() } else { r };
            if s.solicited {
                r.solicited()
            } else {
                r
            }
        };
        let list: Vec<SendRequest<'_>> = (0..s.list).map(request).collect();
        let qp = if s.ud { &ud } else { &rc };
        // SAFETY: every request names the buffer `mr`, which outlives the queue pairs and which
        // this program does not touch while requests are outstanding.
        unsafe { qp.post_send_list(&list) }.unwrap_or_else(|e| fail(&s.label, e));
        records += 1;
        wait_trace(&trace, records, &s.label);
        if s.signaled {
            wait_completions(&cq, s.list, &s.label);
        }
        meta += &format!(
            "{}{{\"label\":\"{}\",\"qp\":\"{}\"}}",
            if i == 0 { "" } else { "," },
            s.label,
            if s.ud { "ud" } else { "rc" }
        );
    }
    meta += "]}\n";
    std::fs::write(meta_path, meta).unwrap_or_else(|e| fail(meta_path, e));
    // The receives' completions and any left: nothing may have failed.
    let mut wc = [ibv_wc::default(); 16];
    loop {
        let got = cq.poll(&mut wc).unwrap_or_else(|e| fail("poll", e));
        if got.is_empty() {
            break;
        }
        if let Some(w) = got.iter().find(|w| !w.is_valid()) {
            fail(
                "completion",
                format!("{}: {}", w.wr_id(), wc_status_str(w.status())),
            );
        }
    }
}
