//! What `cmatose`, `udaddy` and `mckey` share (rdma-core's `librdmacm/examples/common.c` and the
//! per-connection "node" of each): the devices an identifier may land on, a node's protection
//! domain, queues, message buffer and address handle, bounded waits for connection manager events
//! and completions, and librdmacm's spelling of events.
//!
//! The C tools wait forever; these wait at most `--timeout` seconds (default
//! [`DEFAULT_TIMEOUT`]) for each phase (connecting, each batch of completions, disconnecting), then
//! fail with status `-ETIMEDOUT` (exit status 146).

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use uverbs::cm::{CmId, Event, EventChannel, EventKind};
use uverbs::{
    ibv_wc, ibv_wc_flags, AddressHandle, AddressVector, CompletionQueue, Context, Gid, GidType,
    Guid, MemoryRegion, ProtectionDomain, QpCaps, QueuePair, ReceiveRequest,
};

use crate::args::Opt;

/// How long each phase may take when `--timeout` is not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

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
