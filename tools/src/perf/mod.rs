//! `uverbs send-lat | write-lat | send-bw | write-bw | read-bw`: perftest's `ib_send_lat`,
//! `ib_write_lat`, `ib_send_bw`, `ib_write_bw` and `ib_read_bw` (perftest 4.5-0.17, protocol
//! "6.06"), over RC queue pairs, with perftest's options, defaults, measurement method, result table
//! and TCP exchange, so that either side may be perftest. With `-R` the exchange runs over an RC
//! connection made by the RDMA connection manager and the test queue pairs are connected by it
//! ([`rdma_cm`]); `-z` takes only the exchange over it.
//!
//! The server is the side without a host argument. After the exchange ([`exchange`]) both sides
//! create one memory region (a send half and a receive half per queue pair, each at least a page),
//! their queue pairs and completion queues, swap queue pair numbers, PSNs, keys and addresses, and
//! connect. Then, for each message size:
//!
//! * `send-lat`: ping-pong of SENDs; the client sends first, each side sends when it has received.
//! * `write-lat`: ping-pong of RDMA WRITEs; each side polls the last byte of its receive buffer for
//!   the peer's iteration count, then writes its own; the server writes first.
//! * `*-bw`: the client keeps up to `-t` requests outstanding per queue pair, `-l` per post, one
//!   completion per `-Q`; the `send-bw` server reposts receives as they complete.
//!
//! Latency is half the time between consecutive posts; bandwidth is bytes over the time from the
//! first post to the last completion, with perftest's peak. Times come from the monotonic clock
//! ([`std::time::Instant`], in nanoseconds) instead of perftest's cycle counter. `--json` prints one
//! JSON object per message size instead of the table.

mod args;
mod bw;
mod exchange;
mod lat;
mod rdma_cm;
mod report;

use std::io;
use std::time::Instant;

use uverbs::exchange::PerftestDest;
use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_qp_type, ibv_wc, AddressVector, CompletionChannel,
    CompletionQueue, Context, GidType, LinkLayer, MemoryRegion, Mtu, PortState, QpAttr, QpCaps,
    QueuePair, RemoteMemory,
};

pub use args::Test;
use args::{Params, Stop, Verb};
use exchange::{BwReport, Comm};
use report::RESULT_LINE;

/// `DEF_PAGE_SIZE`: the cycle buffer perftest takes from the page size (4 KiB here; the exchange
/// keeps the larger of both sides').
const DEF_PAGE_SIZE: u32 = 4096;
/// `DEF_CACHE_LINE_SIZE`, when sysfs does not say.
const DEF_CACHE_LINE_SIZE: u32 = 64;
/// `MIN_RNR_TIMER`.
const MIN_RNR_TIMER: u8 = 12;
/// `CTX_POLL_BATCH`: completions taken per poll.
const POLL_BATCH: usize = 16;
/// The completion queues' ids (their completion channel events carry them).
const SEND_CQ_ID: isize = 1;
const RECV_CQ_ID: isize = 2;

/// Why a run failed: the message, and the exit status (perftest's: 1, or 17 when the test loop of
/// a SEND or READ test fails).
#[derive(Debug)]
pub struct Fail {
    code: i32,
    msg: String,
}

impl Fail {
    fn run(test: Test, msg: String) -> Fail {
        let code = if test == Test::WriteBw || test == Test::WriteLat {
            1
        } else {
            17
        };
        Fail { code, msg }
    }
}

impl From<String> for Fail {
    fn from(msg: String) -> Fail {
        Fail { code: 1, msg }
    }
}

/// Wraps an `io::Error` from the library with what was being done.
fn ctx_err(what: &str) -> impl Fn(io::Error) -> Fail + '_ {
    move |e| Fail::from(format!("{what}: {e}"))
}

/// Runs `uverbs <test> [options] [host]`; returns the exit status.
pub fn main(test: Test, argv: &[String]) -> i32 {
    let p = match args::parse(test, argv) {
        Ok(p) => p,
        Err(Stop::Info(text)) => {
            print!("{text}");
            return 0;
        }
        Err(Stop::Error(text)) => {
            eprintln!("{text}");
            eprintln!(" Parser function exited with Error");
            return 1;
        }
    };
    match run(&p) {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("{}: {}", p.argv0, f.msg);
            f.code
        }
    }
}

/// Human-readable output, suppressed by `--json` (which prints only its objects on stdout).
#[derive(Debug, Clone, Copy)]
struct Out {
    json: bool,
}

impl Out {
    fn line(&self, s: &str) {
        if !self.json {
            println!("{s}");
        }
    }
}

/// Where things are in the memory region: per queue pair a send half and a receive half, each
/// `stride` bytes (the larger of the message and the cycle buffer, rounded to a cache line).
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Bytes per half.
    pub stride: usize,
    /// Queue pairs.
    pub num_qps: usize,
    /// The agreed cycle buffer: small messages move through this many bytes of a half.
    pub cycle_buffer: u64,
    /// The agreed cache line size: small messages are this far apart.
    pub cache_line: u64,
}

impl Layout {
    /// Where queue pair `q` sends from.
    pub fn send_offset(&self, q: usize) -> usize {
        q * self.stride
    }

    /// Where queue pair `q` receives (and where the peer writes or reads).
    pub fn recv_offset(&self, q: usize) -> usize {
        (self.num_qps + q) * self.stride
    }

    /// perftest's `INC`: the distance between consecutive small messages.
    fn inc(&self, size: u64) -> u64 {
        if size > self.cache_line {
            size.div_ceil(self.cache_line) * self.cache_line
        } else {
            self.cache_line
        }
    }

    /// Where message `n` of `size` bytes goes within a half: messages of up to half the cycle
    /// buffer move through it a cache-line-aligned slot at a time (`increase_loc_addr`,
    /// `increase_rem_addr`); larger ones always start at 0.
    pub fn cycle_offset(&self, size: u64, n: u64) -> u64 {
        if size > self.cycle_buffer / 2 {
            return 0;
        }
        let inc = self.inc(size);
        (n % (self.cycle_buffer / inc)) * inc
    }
}

/// The connected resources a test loop uses.
#[derive(Debug)]
pub struct Rdma<'a, 'q> {
    /// The queue pairs (mutable: a batch, `--batch`, borrows its queue pair mutably).
    pub qps: &'a mut [QueuePair<'q>],
    /// Their send completion queue.
    pub send_cq: &'a CompletionQueue<'a>,
    /// Their receive completion queue (the send one for RDMA tests).
    pub recv_cq: &'a CompletionQueue<'a>,
    /// The completion channel of `-e`.
    pub channel: Option<&'a CompletionChannel>,
    /// The memory layout.
    pub layout: Layout,
    /// The peer's receive half of each queue pair.
    pub remote: Vec<RemoteMemory>,
    /// The start of the clock.
    pub epoch: Instant,
}

impl Rdma<'_, '_> {
    /// Nanoseconds since [`Rdma::epoch`] (a vDSO `clock_gettime(CLOCK_MONOTONIC)`).
    #[inline]
    pub fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// Takes up to `wcs.len()` completions from `cq` without waiting; their number.
#[inline]
pub fn poll_once(cq: &CompletionQueue<'_>, wcs: &mut [ibv_wc]) -> Result<usize, Fail> {
    cq.poll(wcs)
        .map(|got| got.len())
        .map_err(ctx_err("poll CQ failed"))
}

/// Waits until `cq` has a completion (spinning, or with `-e` sleeping on the channel) and takes up
/// to `wcs.len()`; their number.
#[inline]
pub fn poll_wait(
    cq: &CompletionQueue<'_>,
    channel: Option<&CompletionChannel>,
    wcs: &mut [ibv_wc],
) -> Result<usize, Fail> {
    loop {
        let n = poll_once(cq, wcs)?;
        if n > 0 {
            return Ok(n);
        }
        if let Some(ch) = channel {
            // Arm, look again (a completion may have come before the arming), then sleep. Events
            // of the other queue only wake us up early.
            cq.req_notify(false)
                .map_err(ctx_err("Couldn't request CQ notification"))?;
            let n = poll_once(cq, wcs)?;
            if n > 0 {
                return Ok(n);
            }
            ch.get_event().map_err(ctx_err("Failed to get cq_event"))?;
        }
    }
}

/// The error for a completion that did not succeed (`NOTIFY_COMP_ERROR_SEND` / `_RECV`).
pub fn wc_error(test: Test, side: &str, wc: &ibv_wc, counts: &str) -> Fail {
    let (status, vendor) = wc.error().unwrap_or((wc.status(), wc.vendor_err()));
    Fail::run(
        test,
        format!(
            "Completion with error at {side}: status {} ({status}), wr_id {}, syndrom {vendor:#x}; {counts}",
            uverbs::wc_status_str(status),
            wc.wr_id() as i32
        ),
    )
}

/// perftest's `get_best_gid_index`: prefers IPv4-mapped GIDs, then RoCE v2 over v1.
fn best_gid_index(ctx: &Context, port: u8) -> u32 {
    let entries: Vec<_> = ctx
        .gid_table()
        .iter()
        .filter(|e| e.port_num == u32::from(port))
        .copied()
        .collect();
    let find = |i: u32| entries.iter().find(|e| e.gid_index == i);
    let rate = |t: GidType| match t {
        GidType::RoceV2 => 2,
        GidType::RoceV1 => 1,
        _ => -1,
    };
    let len = entries.iter().map(|e| e.gid_index + 1).max().unwrap_or(0);
    let mut best = 0u32;
    for i in 1..len {
        let cur_v4 = find(best).is_some_and(|e| is_ipv4_mapped(&e.gid.bytes()));
        let Some(rival) = find(i) else { continue };
        let rival_v4 = is_ipv4_mapped(&rival.gid.bytes());
        if rival_v4 && !cur_v4 {
            best = i;
        } else if find(best).is_some_and(|cur| rate(cur.kind()) < rate(rival.kind())) {
            // perftest (without --ipv6) compares RoCE versions in every other case.
            best = i;
        }
    }
    best
}

/// `ipv6_addr_v4mapped` (without perftest's IPv4 multicast case).
fn is_ipv4_mapped(g: &[u8; 16]) -> bool {
    g[..10] == [0; 10] && g[10..12] == [0xff, 0xff]
}

/// `get_cache_line_size`: sysfs, or 64.
fn cache_line_size() -> u32 {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&n: &u32| n > 0)
        .unwrap_or(DEF_CACHE_LINE_SIZE)
}

/// A small PRNG for PSNs (perftest's `lrand48` seeded with pid × time).
fn random_psns(n: usize) -> Vec<u32> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ (u64::from(std::process::id()) << 32) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 20) as u32 & 0xff_ffff
        })
        .collect()
}

/// C's `%#0Nx`: zero-padded to `width` including the `0x`, which zero does not get.
fn alt_hex(v: u64, width: usize) -> String {
    if v == 0 {
        format!("{:0width$x}", 0)
    } else {
        format!("0x{:0w$x}", v, w = width.saturating_sub(2))
    }
}

/// `ctx_print_pingpong_data`.
fn print_dest(out: Out, p: &Params, side: &str, d: &PerftestDest, with_gid: bool) {
    let mut line = format!(
        " {side} address: LID {} QPN {} PSN {}",
        alt_hex(d.lid.into(), 4),
        alt_hex(d.qpn.into(), 6),
        alt_hex(d.psn.into(), 6)
    );
    if p.test.verb() == Verb::Read {
        line.push_str(&format!(" OUT {}", alt_hex(d.out_reads.into(), 4)));
    }
    if p.test.verb() != Verb::Send {
        line.push_str(&format!(
            " RKey {} VAddr {}",
            alt_hex(d.rkey.into(), 8),
            alt_hex(d.vaddr, 16)
        ));
    }
    out.line(&line);
    if with_gid {
        let g: Vec<String> = d.gid.iter().map(|b| format!("{b:02}")).collect();
        out.line(&format!(" GID: {}", g.join(":")));
    }
}

/// What the header shows (`ctx_print_test_info`).
struct Info<'a> {
    device: &'a str,
    mtu_bytes: u32,
    link: &'a str,
    gid_index: Option<u32>,
    inline_size: u32,
    out_reads: u32,
}

fn print_test_info(out: Out, p: &Params, i: &Info<'_>) {
    out.line(RESULT_LINE);
    let title = if p.post_list > 1 {
        p.test.title().replace(" BW ", " Post List BW ")
    } else {
        p.test.title().to_owned()
    };
    out.line(&format!("                    {title}"));
    if p.use_event {
        out.line(&format!(" Test with events. Using {}_comp0", i.device));
    }
    out.line(&format!(
        " Dual-port       : OFF\t\tDevice         : {}",
        i.device
    ));
    out.line(&format!(
        " Number of qps   : {}\t\tTransport type : IB",
        p.num_qps
    ));
    out.line(" Connection type : RC\t\tUsing SRQ      : OFF");
    if p.is_client() {
        out.line(&format!(" TX depth        : {}", p.tx_depth));
    }
    if p.post_list > 1 {
        out.line(&format!(" Post List       : {}", p.post_list));
    }
    if p.test.verb() == Verb::Send && !p.is_client() {
        out.line(&format!(" RX depth        : {}", p.rx_depth));
    }
    if !p.test.is_lat() {
        out.line(&format!(" CQ Moderation   : {}", p.cq_mod));
    }
    out.line(&format!(" Mtu             : {}[B]", i.mtu_bytes));
    out.line(&format!(" Link type       : {}", i.link));
    if let Some(g) = i.gid_index {
        out.line(&format!(" GID index       : {g}"));
    }
    if p.test.verb() == Verb::Read {
        out.line(&format!(" Outstand reads  : {}", i.out_reads));
    } else {
        out.line(&format!(" Max inline data : {}[B]", i.inline_size));
    }
    out.line(&format!(
        " rdma_cm QPs\t : {}",
        if p.rdma_cm { "ON" } else { "OFF" }
    ));
    let method = if p.comm_rdma_cm {
        "rdma_cm"
    } else {
        "Ethernet"
    };
    if p.rdma_cm && !p.is_client() {
        out.line(&format!(" Data ex. method : {method}"));
        out.line(RESULT_LINE);
        out.line(" Waiting for client rdma_cm QP to connect");
        out.line(" Please run the same command with the IB/RoCE interface IP");
    } else {
        out.line(&format!(" Data ex. method : {method}"));
    }
    out.line(RESULT_LINE);
}

/// Everything the connection step needs besides the queue pair and the peer.
struct Route {
    ib_port: u8,
    gid_index: Option<u32>,
    mtu: u32,
    sl: u8,
    qp_timeout: u8,
}

/// `ctx_connect` for one queue pair: RTR towards `rem`, and RTS when this side sends (latency
/// tests and bandwidth clients; perftest leaves a bandwidth server's queue pairs in RTR).
fn connect(
    qp: &QueuePair<'_>,
    r: &Route,
    my: &PerftestDest,
    rem: &PerftestDest,
    rts: bool,
) -> Result<(), Fail> {
    let mut av = AddressVector {
        dlid: rem.lid as u16,
        sl: r.sl,
        port_num: r.ib_port,
        ..AddressVector::default()
    };
    if let Some(g) = r.gid_index {
        av.dgid = Some(uverbs::Gid::from_bytes(rem.gid));
        av.sgid_index = g as u8;
        av.hop_limit = 0xff;
    }
    let rtr = QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_RTR),
        ah_attr: Some(av),
        path_mtu: Some(r.mtu),
        dest_qp_num: Some(rem.qpn),
        rq_psn: Some(rem.psn),
        max_dest_rd_atomic: Some(my.out_reads.min(255) as u8),
        min_rnr_timer: Some(MIN_RNR_TIMER),
        ..QpAttr::default()
    };
    qp.modify(&rtr).map_err(ctx_err(&format!(
        "Failed to modify QP {} to RTR",
        qp.qp_num()
    )))?;
    if rts {
        let rts = QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTS),
            sq_psn: Some(my.psn),
            timeout: Some(r.qp_timeout),
            retry_cnt: Some(7),
            rnr_retry: Some(7),
            max_rd_atomic: Some(rem.out_reads.min(255) as u8),
            ..QpAttr::default()
        };
        qp.modify(&rts)
            .map_err(ctx_err("Failed to modify QP to RTS"))?;
    }
    Ok(())
}

/// The whole run, after parsing.
fn run(p: &Params) -> Result<(), Fail> {
    let out = Out { json: p.json };
    let client = p.is_client();

    // ctx_find_dev, ctx_open_device, check_link.
    let list = uverbs::devices().map_err(ctx_err("Failed to get IB devices list"))?;
    let dev = match &p.ib_dev {
        None => list
            .iter()
            .next()
            .ok_or_else(|| Fail::from("No IB devices found".to_string()))?,
        Some(name) => list
            .find(name)
            .ok_or_else(|| Fail::from(format!("IB device {name} not found")))?,
    };
    let dev_name = dev.name_str().to_owned();
    let ctx = dev
        .open()
        .map_err(ctx_err(" Couldn't get context for the device"))?;
    let port_attr = ctx.query_port(p.ib_port).map_err(ctx_err(&format!(
        " Unable to query port {} attributes",
        p.ib_port
    )))?;
    if port_attr.state() != PortState::Active {
        return Err(format!(
            " Port number {} state is {}",
            p.ib_port,
            port_attr.state().as_str()
        )
        .into());
    }
    let (ethernet, link) = match port_attr.link_layer() {
        LinkLayer::Ethernet => (true, "Ethernet"),
        LinkLayer::InfiniBand | LinkLayer::Unspecified => (false, "IB"),
        LinkLayer::Unknown(_) => {
            return Err(format!("Link layer on port {} is Unknown", p.ib_port).into())
        }
    };
    let gid_index = match p.gid_index {
        Some(i) => Some(i),
        None if ethernet => Some(best_gid_index(&ctx, p.ib_port)),
        None => None,
    };
    let gid = match gid_index {
        Some(i) => ctx
            .query_gid_entry(p.ib_port, i)
            .map_err(ctx_err(&format!("can't read sgid of index {i}")))?
            .map_or([0; 16], |e| e.gid.bytes()),
        None => [0; 16],
    };
    let dev_attr = ctx
        .query_device()
        .map_err(ctx_err("Couldn't query device"))?;
    let out_reads = if p.test.verb() == Verb::Read {
        let max = dev_attr.max_qp_rd_atom();
        if p.out_reads > max {
            eprintln!(" Number of outstanding reads is above max = {max}");
            eprintln!(" Changing to that max value");
            max
        } else if p.out_reads == 0 {
            max
        } else {
            p.out_reads
        }
    } else {
        1
    };
    // set_mtu: the requested MTU, at most the port's active one.
    let active = u32::from(u8::from(port_attr.active_mtu()));
    let mut curr_mtu = if p.mtu == 0 {
        active
    } else {
        match Mtu::from_bytes(p.mtu) {
            Some(m) => u32::from(u8::from(m)),
            None => {
                eprintln!(" Invalid MTU - {} ", p.mtu);
                eprintln!(" Please choose mtu from {{256,512,1024,2048,4096}}");
                eprintln!(" Will run with the port active mtu - {active}");
                active
            }
        }
    };
    if curr_mtu > active {
        out.line("Requested mtu is higher than active mtu ");
        out.line(&format!("Changing to active mtu - {active}"));
        curr_mtu = active;
    }

    if !client {
        out.line("\n************************************");
        out.line("* Waiting for client to connect... *");
        out.line("************************************");
    }
    let mut comm = match (&p.servername, p.comm_rdma_cm) {
        (Some(host), false) => Comm::connect(host, p.port),
        (None, false) => Comm::accept(p.port),
        (Some(host), true) => Comm::connect_cm(host, p.port),
        (None, true) => Comm::accept_cm(p.port),
    }
    .map_err(|m| Fail::from(format!("Unable to init the socket connection: {m}")))?;
    comm.exchange_versions()?;
    let mut cycle_buffer = DEF_PAGE_SIZE;
    let mut cache_line = cache_line_size();
    comm.sys_data(&mut cycle_buffer, &mut cache_line)?;
    let curr_mtu = comm.mtu(curr_mtu)?;
    let mtu_bytes = Mtu::from(curr_mtu as u8).bytes().unwrap_or(0);

    // -R: the test connections go through the RDMA CM, on the device it resolves to (perftest's
    // `ctx->context = cma_id->verbs`; -d only served the checks above).
    let mut test_cm = if p.rdma_cm {
        Some(rdma_cm::TestCm::start(p, &mut comm)?)
    } else {
        None
    };
    let cm_ctx = match &test_cm {
        Some(t) => Some(t.open_context()?),
        None => None,
    };
    let (ctx, ib_port, dev_name, lid, gid_index, gid) = match (&test_cm, &cm_ctx) {
        (Some(t), Some(c)) => {
            let port = t.port()?;
            let lid = c
                .query_port(port)
                .map_err(ctx_err(&format!(" Unable to query port {port} attributes")))?
                .lid();
            let gid_index = match p.gid_index {
                Some(i) => Some(i),
                None if ethernet => Some(best_gid_index(c, port)),
                None => None,
            };
            let gid = match gid_index {
                Some(i) => c
                    .query_gid_entry(port, i)
                    .ok()
                    .flatten()
                    .map_or(gid, |e| e.gid.bytes()),
                None => gid,
            };
            (c, port, c.name().to_owned(), lid, gid_index, gid)
        }
        _ => (&ctx, p.ib_port, dev_name, port_attr.lid(), gid_index, gid),
    };
    comm.gid_index = gid_index.map_or(-1, |g| g as i32);

    // alloc_ctx + ctx_init: one region, CQs, QPs in INIT.
    let nq = p.num_qps as usize;
    let unit = p.size.max(u64::from(cycle_buffer));
    let cl = u64::from(cache_line);
    let stride = if unit > cl {
        unit.div_ceil(cl) * cl
    } else {
        cl
    };
    let layout = Layout {
        stride: stride as usize,
        num_qps: nq,
        cycle_buffer: u64::from(cycle_buffer),
        cache_line: cl,
    };
    let channel = if p.use_event {
        Some(
            ctx.create_comp_channel()
                .map_err(ctx_err("Couldn't create completion channel"))?,
        )
    } else {
        None
    };
    let pd = ctx.alloc_pd().map_err(ctx_err("Couldn't allocate PD"))?;
    let access = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
        | match p.test.verb() {
            Verb::Send => ibv_access_flags(0),
            Verb::Write => ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
            Verb::Read => ibv_access_flags::IBV_ACCESS_REMOTE_READ,
        };
    let mut mr: MemoryRegion<u8> = pd
        .register(vec![0u8; layout.stride * 2 * nq], access)
        .map_err(ctx_err("Couldn't allocate MR"))?;
    let make_cq = |depth: u32, id: isize| {
        let depth = (depth as i32).saturating_mul(nq as i32).max(1);
        match &channel {
            Some(ch) => ctx.create_cq_with_channel(depth, id, ch, 0),
            None => ctx.create_cq(depth, id),
        }
        .map_err(ctx_err("Couldn't create CQ"))
    };
    let send_cq = make_cq(p.tx_depth, SEND_CQ_ID)?;
    let recv_cq_own = if p.test.verb() == Verb::Send {
        Some(make_cq(p.rx_depth, RECV_CQ_ID)?)
    } else {
        None
    };
    let recv_cq = recv_cq_own.as_ref().unwrap_or(&send_cq);
    let qp_access = match p.test.verb() {
        Verb::Send => {
            ibv_access_flags::IBV_ACCESS_REMOTE_WRITE | ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
        }
        Verb::Write => ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
        Verb::Read => ibv_access_flags::IBV_ACCESS_REMOTE_READ,
    };
    let mut inline_size = p.inline_size;
    let mut qps = Vec::with_capacity(nq);
    if let Some(t) = &mut test_cm {
        let caps = QpCaps {
            max_send_wr: p.tx_depth,
            max_recv_wr: p.rx_depth,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: inline_size,
        };
        let rd_atomic = if p.test.verb() == Verb::Read {
            out_reads.min(255) as u8
        } else {
            0
        };
        qps = t.connect(p, &pd, &send_cq, recv_cq, caps, rd_atomic)?;
        let actual = qps[0].caps().max_inline_data;
        if inline_size > actual {
            out.line(&format!(
                "  Actual inline-size({actual}) > requested inline-size({inline_size})"
            ));
            inline_size = actual;
        }
        comm.cm_sync().map_err(|m| {
            Fail::from(format!(
                "Failed to sync between client and server after creating RDMA CM connection: {m}"
            ))
        })?;
    }
    for _ in 0..if test_cm.is_some() { 0 } else { nq } {
        let qp = pd
            .create_qp(&send_cq, recv_cq, ibv_qp_type::IBV_QPT_RC)
            .set_max_send_wr(p.tx_depth)
            .set_max_recv_wr(p.rx_depth)
            .set_max_send_sge(1)
            .set_max_recv_sge(1)
            .set_max_inline_data(inline_size)
            .set_sq_sig_all(false)
            .build()
            .map_err(|e| {
                Fail::from(format!(
                    "Couldn't create QP: {e} (TX depth {}, inline size {inline_size})",
                    p.tx_depth
                ))
            })?
            .into_queue_pair();
        let actual = qp.caps().max_inline_data;
        if inline_size > actual {
            out.line(&format!(
                "  Actual inline-size({actual}) > requested inline-size({inline_size})"
            ));
            inline_size = actual;
        }
        qp.modify(&QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
            pkey_index: Some(0),
            port_num: Some(ib_port),
            qp_access_flags: Some(qp_access),
            ..QpAttr::default()
        })
        .map_err(ctx_err("Failed to modify QP to INIT"))?;
        qps.push(qp);
    }

    // set_up_connection.
    let psns = random_psns(nq);
    let base = mr.as_ptr() as u64;
    let my: Vec<PerftestDest> = (0..nq)
        .map(|i| PerftestDest {
            lid: u32::from(lid),
            out_reads,
            qpn: qps[i].qp_num(),
            psn: psns[i],
            rkey: mr.rkey().key,
            vaddr: base + layout.recv_offset(i) as u64,
            gid,
            srqn: 0,
        })
        .collect();
    let with_gid = gid_index.is_some();
    print_test_info(
        out,
        p,
        &Info {
            device: &dev_name,
            mtu_bytes,
            link,
            gid_index,
            inline_size,
            out_reads,
        },
    );

    let route = Route {
        ib_port,
        gid_index,
        mtu: curr_mtu,
        sl: p.sl,
        qp_timeout: p.qp_timeout,
    };
    let sync = |comm: &mut Comm| comm.hand_shake(&my[0], with_gid).map(drop);
    // The handshakes, in each test's order.
    if p.test == Test::WriteLat {
        sync(&mut comm)?;
    }
    let mut rem = Vec::with_capacity(nq);
    for d in &my {
        rem.push(comm.hand_shake(d, with_gid)?);
    }
    if !p.rdma_cm && is_ipv4_mapped(&my[0].gid) != is_ipv4_mapped(&rem[0].gid) {
        return Err(Fail::from(
            "Found Incompatibility issue with GID types. Please Try to use a different IP version."
                .to_string(),
        ));
    }
    let rts = p.test.is_lat() || client;
    // With -R the connection manager has connected them already.
    for i in 0..if p.rdma_cm { 0 } else { nq } {
        connect(&qps[i], &route, &my[i], &rem[i], rts)?;
    }
    if p.test.verb() == Verb::Send {
        sync(&mut comm)?;
    }
    for d in &my {
        print_dest(out, p, "local", d, with_gid);
    }
    for (i, d) in my.iter().enumerate() {
        rem[i] = comm.hand_shake(d, with_gid)?;
        print_dest(out, p, "remote", &rem[i], with_gid);
    }
    if p.test.verb() != Verb::Send {
        // "An additional handshake is required after moving qp to RTR."
        sync(&mut comm)?;
    }

    let mut rdma = Rdma {
        qps: &mut qps,
        send_cq: &send_cq,
        recv_cq,
        channel: channel.as_ref(),
        layout,
        remote: rem
            .iter()
            .map(|d| peer_memory(d, layout.stride as u64))
            .collect::<Result<_, _>>()?,
        epoch: Instant::now(),
    };
    let role = if client { "client" } else { "server" };
    let name = p.test.json_name();
    out.line(RESULT_LINE);
    match p.test {
        Test::SendLat | Test::WriteLat => {
            out.line(report::LAT_HEADER);
            let mut tposted = vec![0u64; p.iters as usize];
            for size in p.sizes() {
                if p.test == Test::SendLat {
                    lat::post_receives(&rdma, &mr, p, size)?;
                    sync(&mut comm)?;
                    lat::send_lat(&rdma, &mr, p, size, &mut tposted)?;
                } else {
                    lat::write_lat(&rdma, &mut mr, p, size, &mut tposted)?;
                }
                let s = report::lat_stats(size, &tposted);
                if p.histogram && !p.json {
                    print!("{}", report::lat_histogram(&tposted));
                }
                if p.json {
                    println!("{}", report::lat_json(name, role, &s));
                } else {
                    println!("{}", report::lat_row(&s));
                }
            }
            out.line(RESULT_LINE);
            if p.test == Test::SendLat {
                comm.close(&my[0], with_gid)?;
            }
        }
        Test::SendBw => {
            out.line(report::bw_header(p.report_gbits));
            let mut times = bw::Times::new(p);
            for size in p.sizes() {
                if !client {
                    bw::post_receives(&rdma, &mr, p, size)?;
                }
                sync(&mut comm)?;
                let r = if client {
                    bw::client(&mut rdma, &mr, p, size, &mut times)?
                } else {
                    bw::server(&rdma, &mr, p, size, &mut times)?
                };
                print_bw(p, role, role, &r);
                if p.all {
                    sync(&mut comm)?;
                }
            }
            out.line(RESULT_LINE);
            comm.close(&my[0], with_gid)?;
        }
        Test::WriteBw | Test::ReadBw => {
            out.line(report::bw_header(p.report_gbits));
            if client {
                let mut times = bw::Times::new(p);
                let mut last = BwReport::default();
                for size in p.sizes() {
                    last = bw::client(&mut rdma, &mr, p, size, &mut times)?;
                    print_bw(p, role, role, &last);
                }
                out.line(RESULT_LINE);
                sync(&mut comm)?;
                comm.xchg_bw_report(&last)?;
            } else {
                // "For half duplex tests, server just waits for client to exit", then prints the
                // client's (last) result.
                sync(&mut comm)?;
                let theirs = comm.xchg_bw_report(&BwReport::default())?;
                print_bw(p, role, "client", &theirs);
                out.line(RESULT_LINE);
            }
            comm.close(&my[0], with_gid)?;
        }
    }
    // rdma_cm_disconnect_nodes: the client disconnects the test connections and waits for them
    // to go down; the server's go when its identifiers are destroyed on return.
    if let Some(t) = &test_cm {
        t.disconnect();
    }
    Ok(())
}

/// One bandwidth line (table or JSON).
fn print_bw(p: &Params, role: &str, measured_by: &str, r: &BwReport) {
    if p.json {
        println!(
            "{}",
            report::bw_json(p.test.json_name(), role, measured_by, r, p.report_gbits)
        );
    } else {
        println!("{}", report::bw_row(r, p.report_gbits));
    }
}

/// The `len` bytes a peer's handshake says its buffer has at `vaddr`. The address is the peer's
/// word: a buffer that would run past the end of the address space is refused (every message
/// address the loops compute is then `RemoteMemory::offset` of it, checked too).
fn peer_memory(d: &PerftestDest, len: u64) -> Result<RemoteMemory, Fail> {
    if d.vaddr.checked_add(len).is_none() {
        return Err(Fail::from(format!(
            "The remote buffer address {:#x} with {len} bytes runs past the end of the address space",
            d.vaddr
        )));
    }
    Ok(RemoteMemory {
        addr: d.vaddr,
        rkey: d.rkey,
        len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The address is the peer's word: one whose buffer would run past the end of the address
    /// space is refused with an error naming it, and no message offset into a buffer accepted
    /// overflows.
    #[test]
    fn a_peer_buffer_past_the_end_of_the_address_space_is_refused() {
        let mut d = PerftestDest {
            rkey: 0x33,
            vaddr: u64::MAX - 4095,
            ..PerftestDest::default()
        };
        let Err(e) = peer_memory(&d, 8192) else {
            panic!("a buffer at {:#x} of 8192 bytes was accepted", d.vaddr);
        };
        assert!(e.msg.contains("0xfffffffffffff000"), "{}", e.msg);
        // The largest address whose 8192 bytes end at the last one.
        d.vaddr = u64::MAX - 8192;
        let m = peer_memory(&d, 8192).unwrap();
        assert_eq!(m.offset(8192).map(|m| m.addr), Some(u64::MAX));
    }

    #[test]
    fn c_alternate_hex() {
        assert_eq!(alt_hex(0, 4), "0000");
        assert_eq!(alt_hex(0x14, 6), "0x0014");
        assert_eq!(alt_hex(0x431ec6, 6), "0x431ec6");
        assert_eq!(alt_hex(0x80, 4), "0x80");
        assert_eq!(alt_hex(0x563a4b1ab000, 16), "0x00563a4b1ab000");
    }

    #[test]
    fn layout_cycles_small_messages() {
        let l = Layout {
            stride: 4096,
            num_qps: 2,
            cycle_buffer: 4096,
            cache_line: 64,
        };
        assert_eq!(l.recv_offset(1), 3 * 4096);
        assert_eq!(l.cycle_offset(2, 0), 0);
        assert_eq!(l.cycle_offset(2, 1), 64);
        assert_eq!(l.cycle_offset(2, 64), 0);
        assert_eq!(l.cycle_offset(1000, 3), 3 * 1024);
        assert_eq!(l.cycle_offset(1000, 4), 0);
        assert_eq!(l.cycle_offset(4096, 7), 0);
    }

    #[test]
    fn psns_fit_24_bits() {
        assert!(random_psns(8).iter().all(|&p| p < 1 << 24));
    }
}
