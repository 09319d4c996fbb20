//! What `cmatose`, `udaddy` and `mckey` share (rdma-core's `librdmacm/examples/common.c`, and the
//! `struct cmatest` and per-connection "node" each of them has): their common options and how a
//! command line is read ([`CommonOpts`]), the test's shared state and steps ([`CmaTest`]: creating,
//! resolving and connecting identifiers, listening, a datagram node's set-up, its peer and its
//! sends) with the event loop ([`CmaTool::events`]), the devices an identifier may land on, a
//! node's protection domain, queues, message buffer and address handle, bounded waits for
//! connection manager events and completions, and librdmacm's spelling of events.
//!
//! The C tools wait forever; these wait at most `--timeout` seconds (default
//! [`DEFAULT_TIMEOUT`]) for each phase (connecting, each batch of completions, disconnecting), then
//! fail with status `-ETIMEDOUT` (exit status 146).

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use uverbs::cm::{CmId, ConnParams, Event, EventChannel, EventKind, PortSpace};
use uverbs::{
    ibv_wc, ibv_wc_flags, AddressHandle, AddressVector, CompletionQueue, Context, Gid, GidType,
    Guid, MemoryRegion, ProtectionDomain, QpCaps, QueuePair, ReceiveRequest, SendRequest,
};

use crate::args::{self, Item, Opt};

/// How long each phase may take when `--timeout` is not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long address and route resolution may take (the C tools' 2000 ms).
pub const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

/// librdmacm's `RDMA_PS_UDP`, the port space `udaddy` and `mckey` take with `-p` (their default).
pub const RDMA_PS_UDP: i64 = 0x111;
/// librdmacm's `RDMA_PS_IPOIB`.
pub const RDMA_PS_IPOIB: i64 = 0x2;

/// `sizeof(struct ibv_grh)`: the area in front of every received datagram.
pub const GRH_SIZE: usize = 40;

/// The long-only `--timeout SECS` option the C tools lack (they wait forever). Its short form is a
/// character no command line can hold.
pub const TIMEOUT_OPT: Opt = Opt {
    short: '\u{0}',
    long: "timeout",
    arg: true,
};

/// The `ETIMEDOUT` status a phase that ran out of time ends with.
pub const ETIMEDOUT: i32 = -libc::ETIMEDOUT;

/// `-s server_address` (`cmatose`, `udaddy`).
pub const SERVER_OPT: Opt = Opt::arg('s', "server");
/// `-b bind_address`.
pub const BIND_OPT: Opt = Opt::arg('b', "bind");
/// `-f address_format` (`cmatose`, `udaddy`).
pub const FORMAT_OPT: Opt = Opt::arg('f', "format");
/// `-c connections`.
pub const CONNECTIONS_OPT: Opt = Opt::arg('c', "connections");
/// `-C message_count`.
pub const COUNT_OPT: Opt = Opt::arg('C', "count");
/// `-S message_size`.
pub const SIZE_OPT: Opt = Opt::arg('S', "size");
/// `-t type_of_service` (`cmatose`, `udaddy`).
pub const TOS_OPT: Opt = Opt::arg('t', "tos");

/// The usage `cmatose` and `udaddy` print: `-s`, `-b`, `-f`, `-P` (which takes `port_spaces`),
/// `-c`, `-C`, `-S`, `-t`, the tool's `own` lines, and `--timeout`.
pub fn client_server_usage(prog: &str, port_spaces: &str, own: &str) {
    print!(
        "usage: {prog}\n\
         \t[-s server_address]\n\
         \t[-b bind_address]\n\
         \t[-f address_format]\n\
         \t    name, ip, ipv6, or gid\n\
         \t[-P port_space]\n\
         \t    {port_spaces}\n\
         \t[-c connections]\n\
         \t[-C message_count]\n\
         \t[-S message_size]\n\
         \t[-t type_of_service]\n\
         {own}\
         {TIMEOUT_USAGE}\n"
    );
}

/// The usage line of `-p` in `udaddy` and `mckey`.
pub fn port_space_usage() -> String {
    format!("\t[-p port_space - {RDMA_PS_UDP:#x} for UDP (default), {RDMA_PS_IPOIB:#x} for IPOIB]")
}

/// The usage line of `--timeout`.
pub const TIMEOUT_USAGE: &str = "\t[--timeout seconds]   (uverbs: bound on each phase, default 60)";

/// The options the three tools share, as their `main`s keep them until every option is read:
/// `-b`, `-c`, `-C`, `-S` (C `int`s, checked once all are in) and `--timeout`.
#[derive(Debug)]
pub struct CommonOpts {
    src: Option<String>,
    connections: i32,
    count: i32,
    size: i32,
    timeout: Duration,
}

impl Default for CommonOpts {
    /// The C tools' defaults: one connection, 10 messages of 100 bytes.
    fn default() -> CommonOpts {
        CommonOpts {
            src: None,
            connections: 1,
            count: 10,
            size: 100,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl CommonOpts {
    /// Reads the command line of `prog` (its options `opts`, its `usage`) as the C tools' getopt
    /// loops do, in command-line order: the shared options here, every other option to `each`
    /// (its character and its argument, empty for none). `Err(status)` once a message was printed.
    pub fn parse(
        prog: &str,
        argv: &[String],
        opts: &[Opt],
        usage: fn(&str),
        mut each: impl FnMut(char, String) -> Result<(), i32>,
    ) -> Result<CommonOpts, i32> {
        let items = args::parse_or_usage(prog, argv, opts, || usage(prog), 1)?;
        let mut common = CommonOpts::default();
        for item in items {
            let Item::Opt(c, v) = item else { continue };
            let v = v.unwrap_or_default();
            if !common.take(prog, c, &v)? {
                each(c, v)?;
            }
        }
        Ok(common)
    }

    /// Takes option `c` with its argument `v` where it is one of these: `Ok(true)`; `Ok(false)` for
    /// any other; `Err(1)` after saying what is wrong with it.
    fn take(&mut self, prog: &str, c: char, v: &str) -> Result<bool, i32> {
        match c {
            'b' => self.src = Some(v.to_owned()),
            'c' => self.connections = atoi(v),
            'C' => self.count = atoi(v),
            'S' => self.size = atoi(v),
            '\0' => match parse_timeout(v) {
                Ok(t) => self.timeout = t,
                Err(e) => {
                    eprintln!("{prog}: {e}");
                    return Err(1);
                }
            },
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether `-b` was given.
    pub fn has_src(&self) -> bool {
        self.src.is_some()
    }

    /// Once the options are read: the C tools' checks of the counts ([`counts`]), then the event
    /// channel and every device ([`open_cm`]), as the test of `tool` (the name its messages
    /// start with) runs on them; `None` after saying what failed.
    pub fn start(self, prog: &str, tool: &'static str) -> Option<(Setup, Devices)> {
        let (connections, count, size) = counts(prog, self.connections, self.count, self.size)?;
        let (chan, devs) = open_cm(prog)?;
        let setup = Setup {
            tool,
            src: self.src,
            connections,
            count,
            size,
            timeout: self.timeout,
            chan,
        };
        Some((setup, devs))
    }
}

/// The checked common options and the event channel: what [`CmaTest::new`] starts from.
#[derive(Debug)]
pub struct Setup {
    tool: &'static str,
    src: Option<String>,
    connections: usize,
    count: usize,
    size: usize,
    timeout: Duration,
    chan: EventChannel,
}

/// `-f`'s argument, as `cmatose` and `udaddy` take it: `Err(1)` for `gid` (AF_IB addresses, not
/// supported) after saying so; a warning for a format they do not know.
pub fn address_format(prog: &str, v: &str) -> Result<(), i32> {
    let l = v.to_ascii_lowercase();
    if l.starts_with("gid") {
        eprintln!("{prog}: -f gid (AF_IB addresses) is not supported");
        return Err(1);
    } else if !l.starts_with("ip") && !l.starts_with("name") {
        eprintln!("Warning: unknown address format");
    }
    Ok(())
}

/// `udaddy`'s and `mckey`'s check of the port space `ps`: only UDP; `Err(1)` after saying so.
pub fn udp_port_space(prog: &str, ps: i64) -> Result<(), i32> {
    if ps != RDMA_PS_UDP {
        eprintln!("{prog}: port space {ps:#x} is not supported (only UDP, {RDMA_PS_UDP:#x})");
        return Err(1);
    }
    Ok(())
}

/// The end of the three tools' `main`: `test complete`, the test torn down, `return status N`;
/// the exit status N.
pub fn report<T>(ret: i32, test: T) -> i32 {
    println!("test complete");
    drop(test);
    println!("return status {ret}");
    ret
}

/// The status of a step: 0 for success, else the status it failed with.
pub fn status(step: Result<(), i32>) -> i32 {
    step.err().unwrap_or(0)
}

/// The status a failed wait for completions ends a tool with, after printing `{tool}: {e}`:
/// `ETIMEDOUT` when the time was up, `-EIO` when a completion failed.
pub fn poll_error(tool: &str, e: &str) -> i32 {
    println!("{tool}: {e}");
    poll_status(e)
}

/// The status of a failed wait for completions: `ETIMEDOUT` when the time was up, `-EIO` when a
/// completion failed.
pub fn poll_status(e: &str) -> i32 {
    if e.starts_with("timed out") {
        ETIMEDOUT
    } else {
        -libc::EIO
    }
}

/// glibc's `atoi`: `(int) strtol(s, NULL, 10)`.
pub fn atoi(s: &str) -> i32 {
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(10) else { break };
        v = v.saturating_mul(10).saturating_add(i64::from(d));
    }
    let v = if neg { v.saturating_neg() } else { v };
    v as i32
}

/// Parses `--timeout`'s argument (seconds, fractions allowed).
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!("invalid timeout '{s}' (seconds, more than 0)")),
    }
}

/// `getaddrinfo(host, port)`: the first address, or the error text.
pub fn lookup(host: &str, port: u16) -> Result<SocketAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    match (host, port).to_socket_addrs() {
        Ok(mut it) => it
            .next()
            .ok_or_else(|| "Name or service not known".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// The address a server binds: `-b`'s, or the IPv4 wildcard (getaddrinfo's first passive answer).
pub fn passive_addr(bind: Option<&str>, port: u16) -> Result<SocketAddr, String> {
    match bind {
        Some(b) => lookup(b, port),
        None => Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)),
    }
}

/// librdmacm's `rdma_event_str`.
pub fn event_str(e: &Event) -> String {
    format!("RDMA_CM_EVENT_{}", e.name())
}

/// librdmacm's `event->status`: a negative errno, or for `REJECTED` the (positive) reject reason,
/// for a datagram `UNREACHABLE` the (positive) SIDR status.
pub fn event_status(kind: &EventKind) -> i32 {
    match kind {
        EventKind::AddrError { errno }
        | EventKind::RouteError { errno }
        | EventKind::ConnectError { errno }
        | EventKind::Unreachable { errno }
        | EventKind::MulticastError { errno } => -errno,
        EventKind::Rejected { reason, .. } => *reason as i32,
        _ => 0,
    }
}

/// The status an `io::Error` ends a tool with: the negative errno (`-EIO` when it has none).
pub fn io_status(e: &io::Error) -> i32 {
    -e.raw_os_error().unwrap_or(libc::EIO)
}

/// Every device, opened up front: an identifier lands on whichever its address resolves to, and
/// the nodes borrow their context for their whole life.
pub struct Devices {
    list: Vec<(Guid, i32, Context)>,
}

impl Devices {
    /// Opens every RDMA device (those that fail to open are skipped; an identifier on one of them
    /// is an error later).
    pub fn open_all() -> io::Result<Devices> {
        let devs = uverbs::devices()?;
        let mut list = Vec::new();
        for d in devs.iter() {
            let (Ok(guid), Ok(index)) = (d.guid(), d.index()) else {
                continue;
            };
            if let Ok(ctx) = d.open() {
                list.push((guid, index, ctx));
            }
        }
        Ok(Devices { list })
    }

    /// The context of the device `id` is bound to, and its port.
    pub fn for_id(&self, id: &CmId) -> io::Result<(&Context, u8)> {
        let dev = id.device()?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the identifier is bound to no device",
            )
        })?;
        let found = self
            .list
            .iter()
            .find(|(g, i, _)| *g == dev.node_guid && u32::try_from(*i).ok() == Some(dev.index))
            .or_else(|| self.list.iter().find(|(g, _, _)| *g == dev.node_guid));
        match found {
            Some((_, _, ctx)) => Ok((ctx, dev.port)),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no open device with node GUID {}", dev.node_guid),
            )),
        }
    }
}

/// A node's verbs resources: its protection domain, completion queue(s), message buffer and (for
/// datagrams) the address handle of the peer. The queue pair lives on the identifier.
pub struct Res<'c> {
    /// The device's context.
    pub ctx: &'c Context,
    /// The port the identifier is bound to.
    pub port: u8,
    /// The protection domain.
    pub pd: ProtectionDomain<'c>,
    /// The send queue's completion queue (also the receive queue's when `recv_cq` is `None`).
    pub cq: CompletionQueue<'c>,
    /// A separate completion queue for receives (cmatose has two).
    pub recv_cq: Option<CompletionQueue<'c>>,
    /// The message buffer (`None` when no messages are exchanged).
    pub mem: Option<MemoryRegion<u8>>,
    /// The peer's (or group's) address handle.
    pub ah: Option<AddressHandle>,
    /// The peer's queue pair number.
    pub remote_qpn: u32,
    /// The peer's Q_Key.
    pub remote_qkey: u32,
}

impl<'c> Res<'c> {
    /// `init_node`: a protection domain, `cqe`-entry queue(s), the identifier's queue pair with
    /// `wr` sends and receives of one entry each, and a `mem_len`-byte buffer (0: none).
    pub fn new(
        id: &CmId,
        ctx: &'c Context,
        port: u8,
        cqe: i32,
        two_cqs: bool,
        wr: u32,
        mem_len: usize,
    ) -> io::Result<Res<'c>> {
        let pd = ctx.alloc_pd()?;
        let cq = ctx.create_cq(cqe, 0)?;
        let recv_cq = if two_cqs {
            Some(ctx.create_cq(cqe, 1)?)
        } else {
            None
        };
        let caps = QpCaps {
            max_send_wr: wr,
            max_recv_wr: wr,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        // The identifier keeps the queue pair (which keeps its queues and domain alive); the
        // nodes reach it through `CmId::qp`.
        drop(id.create_qp(&pd, &cq, recv_cq.as_ref().unwrap_or(&cq), caps)?);
        let mem = if mem_len > 0 {
            Some(pd.allocate::<u8>(mem_len)?)
        } else {
            None
        };
        Ok(Res {
            ctx,
            port,
            pd,
            cq,
            recv_cq,
            mem,
            ah: None,
            remote_qpn: 0,
            remote_qkey: 0,
        })
    }

    /// The completion queue of receives.
    pub fn rcq(&self) -> &CompletionQueue<'c> {
        self.recv_cq.as_ref().unwrap_or(&self.cq)
    }
}

/// The identifier's queue pair (made by [`Res::new`]).
pub fn qp_of(id: &CmId) -> io::Result<QueuePair<'_>> {
    id.qp()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the identifier has no queue pair"))
}

/// `post_recvs`: `count` receives of the first `len` bytes of the buffer (all into the same
/// bytes, as the C tools do: nobody reads them).
pub fn post_recvs(id: &CmId, res: &Res<'_>, len: usize, count: usize) -> io::Result<()> {
    let Some(mem) = &res.mem else {
        return Ok(());
    };
    let qp = qp_of(id)?;
    let sge = [mem.sge(..len)?];
    for _ in 0..count {
        let wr = [ReceiveRequest::new(0, &sge)];
        // SAFETY: the buffer lives in the node, which outlives the queue pair's use (the
        // identifier and its queue pair are destroyed with the node); nothing reads or writes it
        // from the host side: the payloads are never looked at (as in the C tools).
        unsafe { qp.post_receive_list(&wr) }.map_err(io::Error::from)?;
    }
    Ok(())
}

/// The next event before `deadline`, for a phase of `tool` waiting for `what` with `left` still to
/// come (`timeout` is the phase's whole time, for the message); `Err(status)` after saying why
/// none came: `ETIMEDOUT` when the time is up, the read's errno when it failed.
pub fn wait_event(
    tool: &str,
    what: &str,
    chan: &EventChannel,
    deadline: Instant,
    timeout: Duration,
    left: usize,
) -> Result<Event, i32> {
    let wait = deadline.saturating_duration_since(Instant::now());
    match chan.get_event_timeout(wait.max(Duration::from_millis(1))) {
        Ok(Some(ev)) => Ok(ev),
        Ok(None) => {
            eprintln!("{tool}: timed out after {timeout:?} waiting for {what} ({left} left)");
            Err(ETIMEDOUT)
        }
        Err(e) => {
            eprintln!("{tool}: failure in rdma_get_cm_event in {what}: {e}");
            Err(io_status(&e))
        }
    }
}

/// The client's destination (`-s` at `port`) and optional source (`-b`) addresses, as the C tools
/// look them up; `Err(status)` after printing getaddrinfo's complaint.
pub fn client_addrs(
    tool: &str,
    dst: &str,
    port: u16,
    src: Option<&str>,
) -> Result<(SocketAddr, Option<SocketAddr>), i32> {
    let look = |host: &str, port: u16| {
        lookup(host, port).map_err(|e| {
            println!("{tool}: getaddrinfo error: {e}");
            -libc::EINVAL
        })
    };
    let dst = look(dst, port)?;
    let src = src.map(|s| look(s, 0)).transpose()?;
    Ok((dst, src))
}

/// Polls `cq` until `n` completions came or `deadline` passed; `each` sees every completion and
/// may fail the wait. Errors: the text to print.
pub fn poll_n(
    cq: &CompletionQueue<'_>,
    n: usize,
    deadline: Instant,
    mut each: impl FnMut(&ibv_wc) -> Result<(), String>,
) -> Result<(), String> {
    let mut wc = [ibv_wc::default(); 8];
    let mut done = 0;
    while done < n {
        let got = cq
            .poll(&mut wc)
            .map_err(|e| format!("failed polling CQ: {e}"))?;
        for w in got.iter() {
            if let Some((status, vendor)) = w.error() {
                return Err(format!(
                    "completion error: {} ({status}), vendor error {vendor:#x}",
                    uverbs::wc_status_str(status)
                ));
            }
            each(w)?;
        }
        done += got.len();
        if got.is_empty() {
            if Instant::now() >= deadline {
                return Err(format!(
                    "timed out waiting for completions ({done} of {n} came)"
                ));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    Ok(())
}

/// The GID table index of `gid` on `port`, a RoCE v2 entry first.
fn gid_index(ctx: &Context, port: u8, gid: Gid, v2_first: bool) -> Option<u8> {
    let matching = || {
        ctx.gid_table()
            .iter()
            .filter(move |e| e.port_num == u32::from(port) && e.gid == gid)
    };
    let pick = if v2_first {
        matching()
            .find(|e| e.kind() == GidType::RoceV2)
            .or_else(|| matching().next())
    } else {
        matching().next()
    };
    pick.and_then(|e| u8::try_from(e.gid_index).ok())
}

fn mapped(v4: &[u8]) -> Gid {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(v4);
    Gid::from_bytes(g)
}

/// `ibv_create_ah_from_wc`'s address: back to the sender of the datagram `wc`, whose GRH area is
/// `grh` (on RoCE v2 with IPv4 its last 20 bytes are the IPv4 header). Without a GRH, the path of
/// `id` (its resolved GIDs).
pub fn reply_av(
    res: &Res<'_>,
    id: &CmId,
    wc: &ibv_wc,
    grh: &[u8],
) -> Result<AddressVector, String> {
    let (peer, ours, hop_limit, traffic_class, flow_label, v2) =
        if (wc.wc_flags & ibv_wc_flags::IBV_WC_GRH).0 != 0 && grh.len() >= GRH_SIZE {
            if grh[20] >> 4 == 4 {
                (
                    mapped(&grh[32..36]),
                    mapped(&grh[36..40]),
                    0xff,
                    grh[21],
                    0,
                    true,
                )
            } else {
                let mut s = [0u8; 16];
                let mut d = [0u8; 16];
                s.copy_from_slice(&grh[8..24]);
                d.copy_from_slice(&grh[24..40]);
                let w = u32::from_be_bytes([grh[0], grh[1], grh[2], grh[3]]);
                (
                    Gid::from_bytes(s),
                    Gid::from_bytes(d),
                    0xff,
                    ((w >> 20) & 0xff) as u8,
                    w & 0xf_ffff,
                    true,
                )
            }
        } else {
            let (src, dst) = id.gids().map_err(|e| format!("no path to the peer: {e}"))?;
            match (src, dst) {
                (Some(s), Some(d)) => (d, s, 64, 0, 0, true),
                _ => return Err("no GRH and no path to the peer".into()),
            }
        };
    let sgid_index = gid_index(res.ctx, res.port, ours, v2)
        .ok_or_else(|| format!("no GID {ours} on port {} of {}", res.port, res.ctx.name()))?;
    Ok(AddressVector {
        dgid: Some(peer),
        sgid_index,
        hop_limit,
        traffic_class,
        flow_label,
        port_num: res.port,
        ..AddressVector::default()
    })
}

/// The C tools' checks of `-c`, `-C` and `-S` (a size of 0 sends nothing), as `usize`s; `None`
/// after saying what is wrong.
pub fn counts(
    prog: &str,
    connections: i32,
    count: i32,
    size: i32,
) -> Option<(usize, usize, usize)> {
    if connections < 0 || count < 0 || size < 0 {
        eprintln!("{prog}: connections, message count and size must not be negative");
        return None;
    }
    let count = if size == 0 { 0 } else { count };
    Some((connections as usize, count as usize, size as usize))
}

/// The event channel and every device, as the C tools' `main` opens them; `None` after saying
/// what failed.
pub fn open_cm(prog: &str) -> Option<(EventChannel, Devices)> {
    let chan = match EventChannel::new() {
        Ok(c) => c,
        Err(e) => {
            if e.raw_os_error() == Some(libc::ENODEV) || e.kind() == std::io::ErrorKind::NotFound {
                eprintln!("No RDMA devices were detected");
            } else {
                eprintln!("failed to create RDMA CM event channel: {e}");
            }
            return None;
        }
    };
    match Devices::open_all() {
        Ok(d) => Some((chan, d)),
        Err(e) => {
            eprintln!("{prog}: cannot list RDMA devices: {e}");
            None
        }
    }
}

/// A node of a test: an identifier and, once it is set up, its verbs resources (the C tools'
/// `struct cmatest_node`).
pub struct Node<'c> {
    /// The identifier (it holds the queue pair).
    pub id: CmId,
    /// The verbs resources, once set up.
    pub res: Option<Res<'c>>,
    /// Whether the connection (or join) is established.
    pub connected: bool,
}

impl<'c> Node<'c> {
    /// A node of `id`, not set up yet.
    pub fn new(id: CmId) -> Node<'c> {
        Node {
            id,
            res: None,
            connected: false,
        }
    }

    /// The resources of a connected node; `None` for one that is not connected or set up.
    pub fn connected_res(&self) -> Option<&Res<'c>> {
        self.res.as_ref().filter(|_| self.connected)
    }
}

/// What the three tools' tests share (the C tools' `struct cmatest`): the devices, the event
/// channel, the nodes, how many connections (or joins) are still to come, and the common options.
pub struct CmaTest<'c> {
    /// The name the test's messages start with (`cmatose`).
    pub tool: &'static str,
    /// Every device, opened.
    pub devs: &'c Devices,
    /// The event channel of the identifiers.
    pub chan: EventChannel,
    /// The nodes, one per connection.
    pub nodes: Vec<Node<'c>>,
    /// Connections (or joins) still to come.
    pub connects_left: usize,
    /// `-b`: the address to bind.
    pub src: Option<String>,
    /// `-c`: the number of connections.
    pub connections: usize,
    /// `-C`: the messages per connection (0 when `-S` is 0).
    pub count: usize,
    /// `-S`: the message size.
    pub size: usize,
    /// `--timeout`: the bound on each phase.
    pub timeout: Duration,
}

impl<'c> CmaTest<'c> {
    /// The test of `setup` over `devs`, with no node yet.
    pub fn new(setup: Setup, devs: &'c Devices) -> CmaTest<'c> {
        CmaTest {
            tool: setup.tool,
            devs,
            chan: setup.chan,
            nodes: Vec::new(),
            connects_left: setup.connections,
            src: setup.src,
            connections: setup.connections,
            count: setup.count,
            size: setup.size,
            timeout: setup.timeout,
        }
    }

    /// The index of the node whose identifier has `handle`.
    pub fn node_of(&self, handle: u32) -> Option<usize> {
        self.nodes.iter().position(|n| n.id.handle() == handle)
    }

    /// One connection (or join) less to wait for, as the C tools' `connect_error` and their
    /// established handlers count.
    pub fn connect_error(&mut self) {
        self.connects_left = self.connects_left.saturating_sub(1);
    }

    /// An event that failed a connection (or join): `{tool}: event: {name}, error: {status}`, one
    /// connection less to wait for; the handler's status.
    pub fn event_error(&mut self, name: &str, status: i32) -> i32 {
        println!("{}: event: {name}, error: {status}", self.tool);
        self.connect_error();
        status
    }

    /// A connection request on the server's side: a new node for `id`, its index; or, when all
    /// `-c` have come, the request rejected and `Err(-ENOMEM)` (the C tools' `connect_handler`).
    pub fn take_request(&mut self, id: CmId) -> Result<usize, i32> {
        if self.nodes.len() == self.connections {
            println!("{}: failing connection request", self.tool);
            let _ = id.reject(&[]);
            return Err(-libc::ENOMEM);
        }
        self.nodes.push(Node::new(id));
        Ok(self.nodes.len() - 1)
    }

    /// The last request [`take_request`](CmaTest::take_request) took could not be accepted: its
    /// node goes, and the request is rejected.
    pub fn refuse_request(&mut self) {
        self.connect_error();
        println!("{}: failing connection request", self.tool);
        if let Some(node) = self.nodes.pop() {
            let _ = node.id.reject(&[]);
        }
    }

    /// Connects node `i` (its route resolved) with `params`; the handler's status.
    pub fn connect(&mut self, i: usize, params: &ConnParams) -> i32 {
        if let Err(e) = self.nodes[i].id.connect(params) {
            eprintln!("{}: failure connecting: {e}", self.tool);
            self.connect_error();
            return io_status(&e);
        }
        0
    }

    /// The client's start (`cmatose`, `udaddy`): the server's address (`dst` at `port`) and
    /// `-b`'s looked up, `-c` identifiers in port space `ps`, and each one's address resolution
    /// started; `Err(status)` after saying what failed.
    pub fn start_client(&mut self, dst: &str, port: u16, ps: PortSpace) -> Result<(), i32> {
        let (dst, src) = client_addrs(self.tool, dst, port, self.src.as_deref())?;
        self.create_ids(ps)?;
        println!("{}: connecting", self.tool);
        for i in 0..self.nodes.len() {
            if let Err(e) = self.nodes[i].id.resolve_addr(src, dst, RESOLVE_TIMEOUT) {
                eprintln!("{}: failure getting addr: {e}", self.tool);
                self.connect_error();
                return Err(io_status(&e));
            }
        }
        Ok(())
    }

    /// `-c` identifiers in port space `ps`, one node each; `Err(status)` after saying why one could
    /// not be made.
    pub fn create_ids(&mut self, ps: PortSpace) -> Result<(), i32> {
        for _ in 0..self.connections {
            match self.chan.create_id(ps) {
                Ok(id) => self.nodes.push(Node::new(id)),
                Err(e) => {
                    eprintln!("{}: unable to create id: {e}", self.tool);
                    return Err(io_status(&e));
                }
            }
        }
        Ok(())
    }

    /// The server's listening identifier in port space `ps`, bound to `-b`'s address (or the
    /// wildcard) at `port`; `Err(status)` after saying what failed.
    pub fn listen(&self, ps: PortSpace, port: u16) -> Result<CmId, i32> {
        let tool = self.tool;
        let listen = self.chan.create_id(ps).map_err(|e| {
            eprintln!("{tool}: listen request failed: {e}");
            io_status(&e)
        })?;
        let addr = passive_addr(self.src.as_deref(), port).map_err(|e| {
            println!("{tool}: getrdmaaddr error: {e}");
            -libc::EINVAL
        })?;
        if let Err(e) = listen.bind(addr) {
            eprintln!("{tool}: bind address failed: {e}");
            return Err(io_status(&e));
        }
        if let Err(e) = listen.listen(0) {
            eprintln!("{tool}: failure trying to listen: {e}");
            return Err(io_status(&e));
        }
        Ok(listen)
    }

    /// A datagram node's resources (`udaddy`'s `verify_test_params` and `init_node`, `mckey`'s):
    /// the message must fit the port's active MTU; one completion queue of two entries a message,
    /// buffers with room for the GRH in front of each, and (`post_receives`) the receives posted.
    /// `Err(status)` after saying what failed.
    pub fn datagram_res(&self, id: &CmId, post_receives: bool) -> Result<Res<'c>, i32> {
        let (tool, count, size) = (self.tool, self.count, self.size);
        let fail = |e: io::Error| {
            eprintln!("{tool}: unable to set up the node: {e}");
            io_status(&e)
        };
        let (ctx, port) = self.devs.for_id(id).map_err(fail)?;
        let mtu = ctx
            .query_port(port)
            .map_err(fail)?
            .active_mtu()
            .bytes()
            .unwrap_or(256) as usize;
        if count > 0 && size > mtu {
            println!("{tool}: message_size {size} is larger than active mtu {mtu}");
            return Err(-libc::EINVAL);
        }
        let cqe = if count > 0 { 2 * count } else { 2 };
        let mem = if count > 0 { size + GRH_SIZE } else { 0 };
        let res =
            Res::new(id, ctx, port, cqe as i32, false, count.max(1) as u32, mem).map_err(fail)?;
        if post_receives {
            if let Err(e) = post_recvs(id, &res, size + GRH_SIZE, count) {
                println!("failed to post receives: {e}");
                return Err(io_status(&e));
            }
        }
        Ok(res)
    }

    /// A datagram peer (or group) answered: node `i` sends to `av`, queue pair `qpn` with Q_Key
    /// `qkey`, and counts as connected. The status of the handler: nonzero when no address handle
    /// could be made.
    pub fn datagram_peer(&mut self, i: usize, av: &AddressVector, qpn: u32, qkey: u32) -> i32 {
        let tool = self.tool;
        let node = &mut self.nodes[i];
        let Some(res) = node.res.as_mut() else {
            return 0;
        };
        res.remote_qpn = qpn;
        res.remote_qkey = qkey;
        match res.pd.create_ah(av) {
            Ok(ah) => res.ah = Some(ah),
            Err(e) => {
                println!("{tool}: failure creating address handle");
                eprintln!("{tool}: {e}");
                self.connect_error();
                return -1;
            }
        }
        node.connected = true;
        self.connect_error();
        0
    }

    /// Posts `-C` datagrams of `-S` bytes from a connected node to its peer (or group), each with
    /// the node's queue pair number as immediate data; `signaled(n)` says whether the `n`th asks
    /// for a completion. `Ok(None)` for a node with nothing to send (not connected, no buffer or no
    /// address handle); else its resources, whose completion queue has the completions.
    pub fn post_datagrams<'n>(
        &self,
        node: &'n Node<'c>,
        signaled: impl Fn(usize) -> bool,
    ) -> io::Result<Option<&'n Res<'c>>> {
        let Some(res) = node.connected_res() else {
            return Ok(None);
        };
        let (Some(mem), Some(ah)) = (&res.mem, &res.ah) else {
            return Ok(None);
        };
        let qp = qp_of(&node.id)?;
        let own = qp.qp_num();
        let sge = [mem.sge(..self.size)?];
        for n in 0..self.count {
            let wr =
                SendRequest::send_ud_with_imm(0, &sge, ah, res.remote_qpn, res.remote_qkey, own);
            let wr = if signaled(n) { wr } else { wr.unsignaled() };
            // SAFETY: the buffer and the address handle live in the node, which outlives the queue
            // pair's use of them (a caller that waits for no completion tears the node down only
            // after the test); the host never writes the buffer.
            unsafe { qp.post_send_list(&[wr]) }.map_err(io::Error::from)?;
        }
        Ok(Some(res))
    }
}

/// A tool's test: the shared part and its own `cma_handler`.
pub trait CmaTool<'c> {
    /// The shared part.
    fn cma(&self) -> &CmaTest<'c>;

    /// The tool's `cma_handler`: handles one event; a nonzero status ends the phase with it.
    fn cma_handler(&mut self, ev: Event) -> i32;

    /// Handles events until `left` says none is outstanding, an event fails, or the phase (`what`,
    /// for the messages) has run out of time; the status it ends with.
    fn events(&mut self, what: &str, left: impl Fn(&Self) -> usize) -> i32
    where
        Self: Sized,
    {
        let timeout = self.cma().timeout;
        let deadline = Instant::now() + timeout;
        let mut ret = 0;
        while ret == 0 {
            let left = left(self);
            if left == 0 {
                break;
            }
            let cma = self.cma();
            match wait_event(cma.tool, what, &cma.chan, deadline, timeout, left) {
                Ok(ev) => ret = self.cma_handler(ev),
                Err(status) => return status,
            }
        }
        ret
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    const OPTS: &[Opt] = &[
        TIMEOUT_OPT,
        SIZE_OPT,
        COUNT_OPT,
        CONNECTIONS_OPT,
        BIND_OPT,
        SERVER_OPT,
    ];

    /// Parses `line` with [`OPTS`]: the common options, and what was handed on, in order.
    fn parse(line: &str) -> (Result<CommonOpts, i32>, Vec<(char, String)>, bool) {
        let mut seen = Vec::new();
        USAGE.with(|u| u.set(false));
        let common = CommonOpts::parse(
            "t",
            &argv(line),
            OPTS,
            |_| USAGE.with(|u| u.set(true)),
            |c, v| {
                seen.push((c, v.clone()));
                if v == "fail" {
                    return Err(7);
                }
                Ok(())
            },
        );
        (common, seen, USAGE.with(|u| u.get()))
    }

    thread_local! {
        /// Whether the usage was printed.
        static USAGE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    #[test]
    fn the_shared_options_are_taken_and_the_rest_handed_on_in_order() {
        let (common, seen, usage) = parse("-c 3 -s host -b 1.2.3.4 -C 0x10 --timeout=2.5 -S 7");
        let c = common.unwrap();
        assert_eq!(seen, [('s', "host".to_owned())]);
        assert!(!usage);
        // `atoi`, as the C tools read them: "0x10" is 0.
        assert_eq!((c.connections, c.count, c.size), (3, 0, 7));
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(c.src.as_deref(), Some("1.2.3.4"));
        let d = parse("").0.unwrap();
        assert_eq!((d.connections, d.count, d.size), (1, 10, 100));
        assert_eq!((d.timeout, d.has_src()), (DEFAULT_TIMEOUT, false));
    }

    #[test]
    fn an_error_ends_the_parse_where_it_stands() {
        // A bad `--timeout` before `-s`: `-s` is never seen.
        let (common, seen, usage) = parse("--timeout 0 -s host");
        assert_eq!((common.unwrap_err(), seen.len(), usage), (1, 0, false));
        // The tool's own refusal, with its status.
        let (common, seen, _) = parse("-s fail -s host");
        assert_eq!((common.unwrap_err(), seen.len()), (7, 1));
        // getopt's: the usage, and status 1.
        let (common, seen, usage) = parse("-s host -x");
        assert_eq!((common.unwrap_err(), seen.len(), usage), (1, 0, true));
    }
}
