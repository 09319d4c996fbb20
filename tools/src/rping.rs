//! `uverbs rping`: rdma-core v44's `rping` (librdmacm/examples/rping.c), wire for wire, so that
//! either side may be the C tool.
//!
//! The client connects through the connection manager (port space TCP, RC queue pair with 16 send
//! and 2 receive work requests, one completion queue of 32 entries) and, per ping, fills `start_buf`
//! with `"rdma-ping-N: "` and a rotating run of `A`..`z`, SENDs the server a 16-byte big-endian
//! `{addr, rkey, size}` of it, waits for the server's 16-byte go-ahead (the server RDMA READs the
//! buffer meanwhile), SENDs `{addr, rkey, size}` of `rdma_buf`, and waits for the second go-ahead (the
//! server RDMA WRITEs the string back meanwhile). The server does the reads and writes, and handles
//! one connection: it ends when the client disconnects. Same options, defaults, stdout lines
//! (`-v`: `ping data: ...` / `server ping data: ...`), stderr messages and exit codes as the C tool
//! (0, 22 for bad options, 255 for errors).
//!
//! Differences: `-P` (persistent server) and `-q` (self-created queue pair) are refused (exit 22);
//! completions are polled rather than waited for on a completion channel; every wait once connected
//! is bounded ([`STEP_TIMEOUT`]), where rping would wait for ever. The server waits for its one
//! connection request for as long as it takes, as rping does.

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use uverbs::cm::{CmId, ConnParams, Connection, EndpointConfig, EventChannel, EventKind, Listener};
use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_wc, ibv_wc_opcode, ibv_wc_status, CompletionQueue,
    MemoryRegion, QpAttr, QpCaps, QueuePair, ReceiveRequest, RemoteMemory, SendRequest, Sge,
};

use crate::args::{self, Item, Opt};
use crate::rdmacm::atoi;

/// rping's `EINVAL` exit for bad options.
const EXIT_EINVAL: i32 = 22;
/// rping's `exit(-1)` / `return -1` for every run-time error.
const EXIT_FAIL: i32 = 255;

/// `RPING_BUFSIZE`: sizes must be below it.
const RPING_BUFSIZE: i32 = 64 * 1024;
/// `RPING_MIN_BUFSIZE`: `sizeof("INT_MAX") + sizeof("rdma-ping-%d: ")`.
const RPING_MIN_BUFSIZE: i32 = 23;
/// `RPING_SQ_DEPTH`.
const RPING_SQ_DEPTH: u32 = 16;
/// `sizeof(struct rping_rdma_info)`.
const INFO_LEN: usize = 16;
/// How long address and route resolution may take (rping's 2000 ms).
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);
/// The longest any step of a connected run may take (the peer's answer to a message, a
/// completion, the disconnect).
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait for the last events (the disconnect's, the receive's flush) before tearing down.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(5);

const WR_SEND: u64 = 1;
const WR_RECV: u64 = 2;
const WR_RDMA: u64 = 3;

/// rping's `DISCONNECTED` state, for its `"wait for ... state %d"` messages.
const STATE_DISCONNECTED: i32 = 10;

/// rping's `getopt` string `"a:I:Pp:C:S:t:scvVdq"`: short options only.
const OPTS: &[Opt] = &[
    Opt::arg('a', ""),
    Opt::arg('I', ""),
    Opt::flag('P', ""),
    Opt::arg('p', ""),
    Opt::arg('C', ""),
    Opt::arg('S', ""),
    Opt::arg('t', ""),
    Opt::flag('s', ""),
    Opt::flag('c', ""),
    Opt::flag('v', ""),
    Opt::flag('V', ""),
    Opt::flag('d', ""),
    Opt::flag('q', ""),
];

/// rping's `usage()`, word for word (to stdout).
fn usage(name: &str) {
    print!(
        "{name} -s [-vVd] [-S size] [-C count] [-a addr] [-p port]\n\
         {name} -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]\n\
         \t-c\t\tclient side\n\
         \t-I\t\tSource address to bind to for client.\n\
         \t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0\n\
         \t-v\t\tdisplay ping data to stdout\n\
         \t-V\t\tvalidate ping data\n\
         \t-d\t\tdebug printfs\n\
         \t-S size \tping data size\n\
         \t-C count\tping count times\n\
         \t-a addr\t\taddress\n\
         \t-p port\t\tport\n\
         \t-P\t\tpersistent server mode allowing multiple connections\n\
         \t-q\t\tuse self-created, self-modified QP\n"
    );
}

/// The options, as rping's `main` keeps them.
#[derive(Debug, Clone)]
struct Options {
    server: bool,
    addr: IpAddr,
    src: Option<IpAddr>,
    port: u16,
    count: i32,
    size: usize,
    verbose: bool,
    validate: bool,
    debug: bool,
}

/// rping's `get_addr`: the first address `getaddrinfo` gives for `s`.
fn get_addr(s: &str) -> Result<IpAddr, i32> {
    match (s, 0u16).to_socket_addrs() {
        Ok(mut it) => match it.next() {
            Some(a) => Ok(a.ip()),
            None => {
                println!("getaddrinfo failed (No address associated with hostname) - invalid hostname or IP address");
                Err(EXIT_FAIL)
            }
        },
        Err(e) => {
            println!("getaddrinfo failed ({e}) - invalid hostname or IP address");
            Err(EXIT_FAIL)
        }
    }
}

/// Parses the command line as rping's getopt loop does; `Err(code)` once a message was printed.
fn parse_options(argv: &[String]) -> Result<Options, i32> {
    let items = match args::parse(argv, OPTS) {
        Ok(i) => i,
        // rping sets `opterr = 0`: no getopt message, just the usage.
        Err(_) => {
            usage("rping");
            return Err(EXIT_EINVAL);
        }
    };
    let mut server: Option<bool> = None;
    let mut o = Options {
        server: false,
        addr: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        src: None,
        port: 7174,
        count: 0,
        size: 64,
        verbose: false,
        validate: false,
        debug: false,
    };
    // As in rping, `ret` is what the last option that sets it said: a later good `-a` clears an
    // earlier bad `-S`.
    let mut ret = 0;
    for item in items {
        let Item::Opt(c, v) = item else {
            continue;
        };
        let v = v.unwrap_or_default();
        match c {
            'a' => match get_addr(&v) {
                Ok(a) => {
                    o.addr = a;
                    ret = 0;
                }
                Err(e) => ret = e,
            },
            'I' => match get_addr(&v) {
                Ok(a) => {
                    o.src = Some(a);
                    ret = 0;
                }
                Err(e) => ret = e,
            },
            'P' => {
                eprintln!("uverbs rping: -P (persistent server) is not supported");
                return Err(EXIT_EINVAL);
            }
            'q' => {
                eprintln!("uverbs rping: -q (self-created queue pair) is not supported");
                return Err(EXIT_EINVAL);
            }
            'p' => {
                o.port = atoi(&v) as u16;
                if o.debug {
                    println!("port {}", atoi(&v));
                }
            }
            's' => {
                server = Some(true);
                if o.debug {
                    println!("server");
                }
            }
            'c' => {
                server = Some(false);
                if o.debug {
                    println!("client");
                }
            }
            'S' => {
                let size = atoi(&v);
                if !(RPING_MIN_BUFSIZE..=RPING_BUFSIZE - 1).contains(&size) {
                    eprintln!(
                        "Invalid size {size} (valid range is {RPING_MIN_BUFSIZE} to {RPING_BUFSIZE})"
                    );
                    ret = EXIT_EINVAL;
                } else {
                    o.size = size as usize;
                    if o.debug {
                        println!("size {size}");
                    }
                }
            }
            'C' => {
                let count = atoi(&v);
                if count < 0 {
                    eprintln!("Invalid count {count}");
                    ret = EXIT_EINVAL;
                } else {
                    o.count = count;
                    if o.debug {
                        println!("count {count}");
                    }
                }
            }
            'v' => {
                o.verbose = true;
                if o.debug {
                    println!("verbose");
                }
            }
            'V' => {
                o.validate = true;
                if o.debug {
                    println!("validate data");
                }
            }
            'd' => o.debug = true,
            // 't' is in rping's getopt string but has no case: usage.
            _ => {
                usage("rping");
                return Err(EXIT_EINVAL);
            }
        }
    }
    if ret != 0 {
        return Err(ret);
    }
    match server {
        Some(s) => o.server = s,
        None => {
            usage("rping");
            return Err(EXIT_EINVAL);
        }
    }
    Ok(o)
}

/// `uverbs rping [options]`, with rping's output and exit codes.
pub fn rping_main(argv: &[String]) -> i32 {
    let o = match parse_options(argv) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let r = if o.server {
        run_server(&o)
    } else {
        run_client(&o)
    };
    match r {
        Ok(()) => 0,
        Err(Fail) => EXIT_FAIL,
    }
}

/// A failure, already reported on stderr.
#[derive(Debug)]
struct Fail;

/// How a wait ended early: the connection went away (rping then ends with status 0), or it failed.
#[derive(Debug)]
enum Stop {
    Disconnected,
    Failed,
}

impl From<Fail> for Stop {
    fn from(_: Fail) -> Stop {
        Stop::Failed
    }
}

/// Reports `e` on stderr as rping would: an error event as `cma event ..., error N`, anything else
/// with `what` in front.
fn report(what: &str, e: &io::Error) -> Fail {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<uverbs::Error>());
    match inner {
        Some(uverbs::Error::Rejected { reason, .. }) => {
            eprintln!("cma event RDMA_CM_EVENT_REJECTED, error {reason}");
        }
        Some(uverbs::Error::CmEvent { event, errno, .. }) => {
            eprintln!(
                "cma event RDMA_CM_EVENT_{event}, error {}",
                -(*errno as i32)
            );
        }
        _ => eprintln!("{what}: {e}"),
    }
    Fail
}

/// Prints an error event as rping does (`cma event ..., error N`, `event->status`: a negative errno,
/// or the reject reason) and says `true`; any other event is `unhandled ..., ignoring`, `false`.
fn print_event_error(name: &str, kind: &EventKind) -> bool {
    match kind {
        EventKind::AddrError { errno }
        | EventKind::RouteError { errno }
        | EventKind::ConnectError { errno }
        | EventKind::Unreachable { errno } => {
            eprintln!("cma event RDMA_CM_EVENT_{name}, error {}", -errno);
            true
        }
        EventKind::Rejected { reason, .. } => {
            eprintln!("cma event RDMA_CM_EVENT_REJECTED, error {reason}");
            true
        }
        EventKind::DeviceRemoval => {
            eprintln!("cma detected device removal!!!!");
            true
        }
        _ => {
            eprintln!("unhandled event: RDMA_CM_EVENT_{name}, ignoring");
            false
        }
    }
}

/// The rping configuration of a connection's resources.
fn endpoint_config(o: &Options) -> EndpointConfig {
    EndpointConfig {
        caps: QpCaps {
            max_send_wr: RPING_SQ_DEPTH,
            max_recv_wr: 2,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        cq_entries: (RPING_SQ_DEPTH * 2) as i32,
        // responder_resources 1, initiator_depth 1, retry_count 7, rnr_retry_count 7, no private
        // data: `rping_init_conn_param`.
        params: ConnParams::default(),
        timeout: RESOLVE_TIMEOUT,
        src: o.src.map(|ip| SocketAddr::new(ip, 0)),
        backlog: 3,
    }
}

/// The memory of one side (`rping_setup_buffers`).
struct Buffers {
    recv: MemoryRegion<u8>,
    send: MemoryRegion<u8>,
    rdma: MemoryRegion<u8>,
    /// The client's source of the server's RDMA READ.
    start: Option<MemoryRegion<u8>>,
}

impl Buffers {
    fn new(pd: &uverbs::ProtectionDomain<'_>, size: usize, client: bool) -> io::Result<Buffers> {
        let rw = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_READ
            | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE;
        Ok(Buffers {
            recv: pd.allocate_with_access(INFO_LEN, ibv_access_flags::IBV_ACCESS_LOCAL_WRITE)?,
            send: pd.allocate_with_access(INFO_LEN, ibv_access_flags(0))?,
            rdma: pd.allocate_with_access(size, rw)?,
            start: if client {
                Some(pd.allocate_with_access(size, rw)?)
            } else {
                None
            },
        })
    }
}

/// A `struct rping_rdma_info`, decoded.
#[derive(Debug, Clone, Copy)]
struct Info {
    addr: u64,
    rkey: u32,
    size: u32,
}

impl Info {
    fn encode(&self) -> [u8; INFO_LEN] {
        let mut b = [0u8; INFO_LEN];
        b[0..8].copy_from_slice(&self.addr.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..16].copy_from_slice(&self.size.to_be_bytes());
        b
    }

    fn decode(b: &[u8; INFO_LEN]) -> Info {
        let (addr, rest) = b.split_at(8);
        let (rkey, size) = rest.split_at(4);
        Info {
            addr: u64::from_be_bytes(addr.try_into().unwrap_or_default()),
            rkey: u32::from_be_bytes(rkey.try_into().unwrap_or_default()),
            size: u32::from_be_bytes(size.try_into().unwrap_or_default()),
        }
    }
}

/// Something the completion queue or the connection manager reported.
#[derive(Debug)]
enum Happened {
    /// A receive of 16 bytes (already reposted): the peer's message.
    Recv([u8; INFO_LEN]),
    Send,
    RdmaRead,
    RdmaWrite,
    /// A work request flushed (the queue pair went to the error state: a disconnect).
    Flushed,
    Disconnected,
}

/// One side's connected queue pair, polled for completions and connection manager events (rping's
/// CQ and CM threads, in one loop).
struct Link<'a> {
    qp: &'a QueuePair<'a>,
    cq: &'a CompletionQueue<'a>,
    channel: &'a EventChannel,
    /// The handle of the connected identifier, whose events count.
    id: u32,
    side: &'static str,
    debug: bool,
    recv: &'a MemoryRegion<u8>,
    recv_sge: [Sge; 1],
    queue: VecDeque<Happened>,
    /// Signaled sends (SENDs, RDMA READs and WRITEs) not completed yet.
    outstanding: u32,
    flushed: bool,
    disconnected: bool,
}

impl<'a> Link<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        qp: &'a QueuePair<'a>,
        cq: &'a CompletionQueue<'a>,
        channel: &'a EventChannel,
        id: u32,
        server: bool,
        debug: bool,
        recv: &'a MemoryRegion<u8>,
    ) -> Result<Link<'a>, Fail> {
        let sge = recv.sge(0..INFO_LEN).map_err(|e| report("recv sge", &e))?;
        Ok(Link {
            qp,
            cq,
            channel,
            id,
            side: if server { "server" } else { "client" },
            debug,
            recv,
            recv_sge: [sge],
            queue: VecDeque::new(),
            outstanding: 0,
            flushed: false,
            disconnected: false,
        })
    }

    /// Posts the one receive (`rq_wr`).
    fn post_recv(&self) -> Result<(), Fail> {
        let rr = [ReceiveRequest::new(WR_RECV, &self.recv_sge)];
        // SAFETY: the receive buffer is borrowed by this link for its whole life, so it stays
        // allocated and registered, and nothing reads or writes it until the receive's completion
        // has been polled (`poll_once` copies it out only then, before reposting).
        unsafe { self.qp.post_receive_list(&rr) }.map_err(|f| {
            eprintln!("ibv_post_recv failed: {}", f.error);
            Fail
        })
    }

    /// Posts one signaled send request.
    ///
    /// # Safety
    /// The memory `wr` names must stay allocated, and unwritten (for a SEND or an RDMA WRITE) or
    /// untouched (for an RDMA READ), until its completion has been seen by [`Link::next`].
    #[allow(unsafe_code)]
    unsafe fn post_send(&mut self, wr: SendRequest<'_>) -> Result<(), Fail> {
        // SAFETY: the caller's contract.
        unsafe { self.qp.post_send_list(&[wr]) }.map_err(|f| {
            eprintln!("post send error {}", f.error);
            Fail
        })?;
        self.outstanding += 1;
        Ok(())
    }

    /// Polls the completion queue once, queueing what it finds; `Err` on an error completion.
    fn poll_cq(&mut self) -> Result<bool, Fail> {
        let mut wcs = [ibv_wc::default(); 8];
        let done = self.cq.poll(&mut wcs).map_err(|e| {
            eprintln!("poll error {e}");
            Fail
        })?;
        let n = done.len();
        for wc in done.iter() {
            if wc.wr_id() != WR_RECV && self.outstanding > 0 {
                self.outstanding -= 1;
            }
            if let Some((status, _)) = wc.error() {
                if status == ibv_wc_status::IBV_WC_WR_FLUSH_ERR {
                    self.flushed = true;
                    self.queue.push_back(Happened::Flushed);
                    continue;
                }
                eprintln!(
                    "cq completion failed status {status} ({})",
                    uverbs::wc_status_str(status)
                );
                return Err(Fail);
            }
            match wc.opcode() {
                ibv_wc_opcode::IBV_WC_SEND => {
                    self.debug_log("send completion");
                    self.queue.push_back(Happened::Send);
                }
                ibv_wc_opcode::IBV_WC_RDMA_WRITE => {
                    self.debug_log("rdma write completion");
                    self.queue.push_back(Happened::RdmaWrite);
                }
                ibv_wc_opcode::IBV_WC_RDMA_READ => {
                    self.debug_log("rdma read completion");
                    self.queue.push_back(Happened::RdmaRead);
                }
                ibv_wc_opcode::IBV_WC_RECV => {
                    self.debug_log("recv completion");
                    if wc.len() != INFO_LEN {
                        eprintln!("Received bogus data, size {}", wc.len());
                        eprintln!("recv wc error: -1");
                        return Err(Fail);
                    }
                    let mut msg = [0u8; INFO_LEN];
                    msg.copy_from_slice(&self.recv[..INFO_LEN]);
                    self.post_recv().map_err(|Fail| {
                        eprintln!("post recv error: -1");
                        Fail
                    })?;
                    self.queue.push_back(Happened::Recv(msg));
                }
                _ => {
                    self.debug_log("unknown!!!!! completion");
                    return Err(Fail);
                }
            }
        }
        Ok(n > 0)
    }

    /// Reads the connection manager events queued now; `Err` on an error event.
    fn poll_cm(&mut self) -> Result<bool, Fail> {
        let mut any = false;
        loop {
            let e = match self.channel.try_get_event() {
                Ok(Some(e)) => e,
                Ok(None) => return Ok(any),
                Err(e) => return Err(report("rdma_get_cm_event", &e)),
            };
            any = true;
            let other = e.id != self.id;
            if self.debug {
                // rping's "parent" is its first identifier: the client's connection, the
                // server's listener.
                let parent = other || self.side == "client";
                println!(
                    "cma_event type RDMA_CM_EVENT_{} cma_id {} ({})",
                    e.name(),
                    e.id,
                    if parent { "parent" } else { "child" }
                );
            }
            if other {
                // Another request at the (non-persistent) server's listener: dropping its
                // identifier rejects it.
                continue;
            }
            match e.kind {
                EventKind::Disconnected => {
                    eprintln!("{} DISCONNECT EVENT...", self.side);
                    self.disconnected = true;
                    self.queue.push_back(Happened::Disconnected);
                }
                EventKind::Established { .. } => self.debug_log("ESTABLISHED"),
                ref other => {
                    if print_event_error(e.name(), other) {
                        return Err(Fail);
                    }
                }
            }
        }
    }

    /// The next thing that happens, waiting up to `timeout` for it.
    fn next(&mut self, timeout: Duration, what: &str) -> Result<Happened, Fail> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(h) = self.queue.pop_front() {
                return Ok(h);
            }
            let got = self.poll_cq()? | self.poll_cm()?;
            if got {
                continue;
            }
            if Instant::now() >= deadline {
                eprintln!(
                    "uverbs rping: timed out after {} s waiting for {what}",
                    timeout.as_secs()
                );
                return Err(Fail);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Waits for the peer's next message (sends completing meanwhile are counted); `wait_for` is
    /// rping's name of the state it waits for, for its message if the peer disconnects first.
    fn wait_recv(&mut self, wait_for: &str) -> Result<Info, Stop> {
        loop {
            match self.next(STEP_TIMEOUT, wait_for)? {
                Happened::Recv(b) => {
                    let info = Info::decode(&b);
                    return Ok(info);
                }
                Happened::Send | Happened::Flushed => {}
                Happened::Disconnected => return Err(self.stopped(Some(wait_for))),
                other => {
                    eprintln!("uverbs rping: unexpected {other:?} waiting for {wait_for}");
                    return Err(Stop::Failed);
                }
            }
        }
    }

    /// Waits for the completion of an RDMA READ (`read`) or WRITE.
    fn wait_rdma(&mut self, read: bool, wait_for: &str) -> Result<(), Stop> {
        loop {
            match self.next(STEP_TIMEOUT, wait_for)? {
                Happened::RdmaRead if read => return Ok(()),
                Happened::RdmaWrite if !read => return Ok(()),
                Happened::Send | Happened::Flushed => {}
                Happened::Disconnected => return Err(self.stopped(Some(wait_for))),
                other => {
                    eprintln!("uverbs rping: unexpected {other:?} waiting for {wait_for}");
                    return Err(Stop::Failed);
                }
            }
        }
    }

    /// Waits until every signaled send has completed (before its buffer is written again).
    fn wait_sends(&mut self) -> Result<(), Stop> {
        while self.outstanding > 0 {
            match self.next(STEP_TIMEOUT, "send completion")? {
                Happened::Recv(_) | Happened::RdmaRead | Happened::RdmaWrite => {
                    eprintln!("uverbs rping: unexpected message from the peer");
                    return Err(Stop::Failed);
                }
                Happened::Send | Happened::Flushed => {}
                Happened::Disconnected => return Err(self.stopped(None)),
            }
        }
        Ok(())
    }

    /// rping's `sem_wait` woken by a DISCONNECTED event while waiting for `wait_for`: its
    /// `"wait for ... state 10"` message (which the server prints at its normal end too), and the
    /// end of the run with status 0.
    fn stopped(&self, wait_for: Option<&str>) -> Stop {
        if let Some(w) = wait_for {
            eprintln!("wait for {w} state {STATE_DISCONNECTED}");
        }
        Stop::Disconnected
    }

    /// librdmacm's `rdma_disconnect` moves the queue pair to the error state (`ucma_shutdown`),
    /// which flushes the posted receive, before the kernel's DISCONNECT: do the first half here.
    fn shutdown(&self) {
        let attr = QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_ERR),
            ..QpAttr::default()
        };
        if let Err(e) = self.qp.modify(&attr) {
            if self.debug {
                println!("modify QP to ERR: {e}");
            }
        }
    }

    /// After `rdma_disconnect`: waits (bounded) for the receive's flush and the DISCONNECTED event,
    /// as rping joins its CQ thread before tearing down.
    fn drain(&mut self) {
        let deadline = Instant::now() + TEARDOWN_TIMEOUT;
        while !(self.flushed && self.disconnected) && Instant::now() < deadline {
            let got = matches!(self.poll_cq(), Ok(true)) | matches!(self.poll_cm(), Ok(true));
            self.queue.clear();
            if !got {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        if self.debug && !(self.flushed && self.disconnected) {
            println!(
                "teardown: flushed {} disconnected {}",
                self.flushed, self.disconnected
            );
        }
    }

    fn debug_log(&self, s: &str) {
        if self.debug {
            println!("{s}");
        }
    }
}

/// The C string at the start of `b` (up to its first NUL, or all of it), as `%s` prints it.
fn c_str(b: &[u8]) -> &[u8] {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..n]
}

/// Prints `prefix` and the C string in `b` on stdout, bytes as they are.
fn print_data(prefix: &str, b: &[u8]) {
    use std::io::Write;
    let mut line = Vec::with_capacity(prefix.len() + b.len() + 1);
    line.extend_from_slice(prefix.as_bytes());
    line.extend_from_slice(c_str(b));
    line.push(b'\n');
    let mut out = io::stdout().lock();
    let _ = out.write_all(&line);
    let _ = out.flush();
}

/// Fills `buf` as rping's client does for ping `ping`, rotating letters from `start`.
fn fill_ping(buf: &mut [u8], ping: i32, start: u8) {
    let size = buf.len();
    let prefix = format!("rdma-ping-{ping}: ");
    // snprintf: at most size - 1 characters and a NUL; `cc` is the untruncated length.
    let cc = prefix.len();
    let n = cc.min(size - 1);
    buf[..n].copy_from_slice(&prefix.as_bytes()[..n]);
    if n < size {
        buf[n] = 0;
    }
    let mut c = start;
    for b in buf.iter_mut().skip(cc) {
        *b = c;
        c += 1;
        if c > 122 {
            c = 65;
        }
    }
    buf[size - 1] = 0;
}

/// `rping_run_client`: connect, ping `count` times (0: for ever), disconnect.
fn run_client(o: &Options) -> Result<(), Fail> {
    let dst = SocketAddr::new(o.addr, o.port);
    let cfg = endpoint_config(o);
    let conn = Connection::connect(dst, &cfg).map_err(|e| {
        let f = report("rdma_connect", &e);
        eprintln!("connect error -1");
        f
    })?;
    if o.debug {
        println!("rdma_resolve_addr - rdma_resolve_route successful");
        println!("rdma_connect successful");
    }
    let pd = conn.pd();
    let mut bufs = Buffers::new(&pd, o.size, true).map_err(|e| {
        let f = report("rping_setup_buffers", &e);
        eprintln!("rping_setup_buffers failed: -1");
        f
    })?;
    let Buffers {
        recv,
        send,
        rdma,
        start,
    } = &mut bufs;
    let Some(start_buf) = start.as_mut() else {
        return Err(Fail);
    };
    let mut link = Link::new(
        conn.qp(),
        conn.cq(),
        conn.channel(),
        conn.id().handle(),
        false,
        o.debug,
        recv,
    )?;
    link.post_recv()?;
    let send_sge = [send.sge(0..INFO_LEN).map_err(|e| report("send sge", &e))?];

    let r = client_loop(o, &mut link, send, &send_sge, rdma, start_buf);
    let ret = match r {
        Ok(()) | Err(Stop::Disconnected) => Ok(()),
        Err(Stop::Failed) => {
            eprintln!("rping client failed: -1");
            Err(Fail)
        }
    };
    // rping_disconnect, then join the CQ thread (which ends on the receive's flush).
    link.shutdown();
    if !link.disconnected {
        if let Err(e) = conn.disconnect() {
            if o.debug {
                println!("rdma_disconnect: {e}");
            }
        }
    }
    link.drain();
    drop(link);
    drop(bufs);
    drop(conn);
    ret
}

/// `rping_test_client`.
fn client_loop(
    o: &Options,
    link: &mut Link<'_>,
    send: &mut MemoryRegion<u8>,
    send_sge: &[Sge; 1],
    rdma: &MemoryRegion<u8>,
    start_buf: &mut MemoryRegion<u8>,
) -> Result<(), Stop> {
    let size = o.size;
    let mut start: u8 = 65;
    let mut ping: i32 = 0;
    while o.count == 0 || ping < o.count {
        // The server's RDMA READ of the last ping finished before its first go-ahead, and the
        // last send's completion was awaited: the buffers are free to write.
        fill_ping(&mut start_buf[..size], ping, start);
        start += 1;
        if start > 122 {
            start = 65;
        }

        // The source advertisement: the server RDMA READs start_buf.
        let info = Info {
            addr: start_buf.remote().addr,
            rkey: start_buf.rkey().key,
            size: size as u32,
        };
        format_send(link, send, info);
        // SAFETY: send[..16] is not written again before this SEND's completion
        // (`wait_sends` below), and start_buf, which the server reads, is not written before the
        // server's go-ahead, which it sends after its READ completed; all live until the end.
        unsafe { link.post_send(SendRequest::send(WR_SEND, send_sge)) }?;

        // Wait for the server to ACK.
        link.wait_recv("RDMA_WRITE_ADV")?;
        link.wait_sends()?;

        // The sink advertisement: the server RDMA WRITEs rdma_buf.
        let info = Info {
            addr: rdma.remote().addr,
            rkey: rdma.rkey().key,
            size: size as u32,
        };
        format_send(link, send, info);
        // SAFETY: as above; rdma_buf is read only after the server's go-ahead, which it sends
        // after its WRITE completed.
        unsafe { link.post_send(SendRequest::send(WR_SEND, send_sge)) }?;

        // Wait for the server to say the RDMA Write is complete.
        link.wait_recv("RDMA_WRITE_COMPLETE")?;
        link.wait_sends()?;

        if o.validate && start_buf[..size] != rdma[..size] {
            eprintln!("data mismatch!");
            return Err(Stop::Failed);
        }
        if o.verbose {
            print_data("ping data: ", &rdma[..size]);
        }
        ping = ping.wrapping_add(1);
    }
    Ok(())
}

/// `rping_format_send`: `info` into the send buffer.
fn format_send(link: &Link<'_>, send: &mut MemoryRegion<u8>, info: Info) {
    send[..INFO_LEN].copy_from_slice(&info.encode());
    if link.debug {
        println!(
            "RDMA addr {:x} rkey {:x} len {}",
            info.addr, info.rkey, info.size as i32
        );
    }
}

/// `rping_run_server` (not persistent): one connection, until the client disconnects.
fn run_server(o: &Options) -> Result<(), Fail> {
    let bind = SocketAddr::new(o.addr, o.port);
    let cfg = endpoint_config(o);
    let listener = Listener::bind(bind, &cfg).map_err(|e| report("rdma_bind_addr", &e))?;
    if o.debug {
        println!("rdma_bind_addr successful");
        println!("rdma_listen");
    }
    // rping waits for its connection request for as long as it takes.
    let (child, peer) = loop {
        match listener.get_request(Duration::from_secs(3600)) {
            Ok(r) => break r,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => continue,
            Err(e) => {
                let f = report("rdma_get_request", &e);
                eprintln!("wait for CONNECT_REQUEST state 1");
                return Err(f);
            }
        }
    };
    if o.debug {
        println!(
            "cma_event type RDMA_CM_EVENT_CONNECT_REQUEST cma_id {} (child)",
            child.handle()
        );
        println!("child cma {}", child.handle());
    }
    let r = serve(o, &cfg, &listener, &child, &peer);
    drop(child);
    drop(listener);
    r
}

/// `rping_setup_qp`, `rping_setup_buffers`, `rping_accept` and `rping_test_server` on `child`.
fn serve(
    o: &Options,
    cfg: &EndpointConfig,
    listener: &Listener,
    child: &CmId,
    peer: &uverbs::cm::PeerParam,
) -> Result<(), Fail> {
    let setup = |e: io::Error| {
        let f = report("rping_setup_qp", &e);
        eprintln!("setup_qp failed: -1");
        f
    };
    let ctx = child.open_context().map_err(setup)?;
    let pd = ctx.alloc_pd().map_err(setup)?;
    let cq = ctx.create_cq(cfg.cq_entries, 0).map_err(setup)?;
    let bufs = Buffers::new(&pd, o.size, false).map_err(|e| {
        let f = report("rping_setup_buffers", &e);
        eprintln!("rping_setup_buffers failed: -1");
        f
    })?;
    let qp = child.create_qp(&pd, &cq, &cq, cfg.caps).map_err(setup)?;
    let Buffers {
        recv,
        send,
        mut rdma,
        ..
    } = bufs;
    let mut link = Link::new(
        &qp,
        &cq,
        listener.channel(),
        child.handle(),
        true,
        o.debug,
        &recv,
    )?;
    link.post_recv()?;

    // rdma_accept(child, NULL): librdmacm's defaults, the request's RDMA read resources clipped.
    if o.debug {
        println!("accepting client connection request");
    }
    let mut params = cfg.params.clone();
    params.responder_resources = params.responder_resources.min(peer.initiator_depth);
    params.initiator_depth = params.initiator_depth.min(peer.responder_resources);
    child.accept(&params).map_err(|e| {
        let f = report("rdma_accept", &e);
        eprintln!("connect error -1");
        f
    })?;
    // Woken by ESTABLISHED (or an error event); completions meanwhile stay queued.
    match child.get_event_timeout(cfg.timeout + STEP_TIMEOUT) {
        Ok(e) => match (e.name(), e.kind) {
            (_, EventKind::Established { .. }) => {
                if o.debug {
                    println!(
                        "cma_event type RDMA_CM_EVENT_ESTABLISHED cma_id {} (child)",
                        child.handle()
                    );
                    println!("ESTABLISHED");
                }
            }
            (_, EventKind::Disconnected) => {
                eprintln!("server DISCONNECT EVENT...");
                link.disconnected = true;
            }
            (name, other) => {
                print_event_error(name, &other);
                eprintln!("connect error -1");
                return Err(Fail);
            }
        },
        Err(e) => {
            let f = report("waiting for ESTABLISHED", &e);
            eprintln!("connect error -1");
            return Err(f);
        }
    }

    let send_sge = [send.sge(0..INFO_LEN).map_err(|e| report("send sge", &e))?];
    let r = if link.disconnected {
        Ok(())
    } else {
        server_loop(o, &mut link, &send_sge, &mut rdma)
    };
    let ret = match r {
        Ok(()) | Err(Stop::Disconnected) => Ok(()),
        Err(Stop::Failed) => {
            eprintln!("rping server failed: -1");
            Err(Fail)
        }
    };
    // rping_disconnect(child) (this answers the client's DREQ), then join the CQ thread.
    link.shutdown();
    let _ = child.disconnect();
    link.drain();
    drop(link);
    drop(qp);
    drop(recv);
    drop(send);
    drop(rdma);
    ret
}

/// `rping_test_server`: until the client disconnects.
fn server_loop(
    o: &Options,
    link: &mut Link<'_>,
    send_sge: &[Sge; 1],
    rdma: &mut MemoryRegion<u8>,
) -> Result<(), Stop> {
    loop {
        // Wait for the client's source advertisement.
        let info = link.wait_recv("RDMA_READ_ADV")?;
        received(link, &info);
        if link.debug {
            println!("server received sink adv");
        }
        let len = info.size as usize;
        let Ok(sge) = rdma.sge(0..len) else {
            eprintln!(
                "uverbs rping: the client's ping size {} is larger than this server's -S {}",
                info.size as i32,
                rdma.len()
            );
            return Err(Stop::Failed);
        };
        let remote = RemoteMemory {
            addr: info.addr,
            rkey: info.rkey,
            len: u64::from(info.size),
        };
        let sges = [sge];
        // SAFETY: rdma_buf is not touched until this READ's completion (`wait_rdma`), and it
        // lives as long as the queue pair.
        unsafe { link.post_send(SendRequest::rdma_read(WR_RDMA, &sges, remote)) }?;
        if link.debug {
            println!("server posted rdma read req ");
        }
        link.wait_rdma(true, "RDMA_READ_COMPLETE")?;
        if link.debug {
            println!("server received read complete");
        }
        if o.verbose {
            print_data("server ping data: ", rdma);
        }

        // Tell the client to continue (the go-ahead is the never-written, all-zero send buffer).
        // SAFETY: the send buffer is never written, and lives as long as the queue pair.
        unsafe { link.post_send(SendRequest::send(WR_SEND, send_sge)) }?;
        if link.debug {
            println!("server posted go ahead");
        }

        // Wait for the client's sink advertisement.
        let info = link.wait_recv("RDMA_WRITE_ADV")?;
        received(link, &info);
        if link.debug {
            println!("server received sink adv");
        }
        // RDMA WRITE the string back: strlen(rdma_buf) + 1 bytes.
        let len = (c_str(rdma).len() + 1).min(rdma.len());
        let Ok(sge) = rdma.sge(0..len) else {
            return Err(Stop::Failed);
        };
        let remote = RemoteMemory {
            addr: info.addr,
            rkey: info.rkey,
            len: u64::from(info.size),
        };
        if link.debug {
            println!(
                "rdma write from lkey {:x} laddr {:x} len {}",
                sge.lkey, sge.addr, sge.length
            );
        }
        let sges = [sge];
        // SAFETY: rdma_buf is not written until this WRITE's completion (`wait_rdma`; the next
        // READ into it is posted only after that), and it lives as long as the queue pair.
        unsafe { link.post_send(SendRequest::rdma_write(WR_RDMA, &sges, remote)) }?;
        link.wait_rdma(false, "RDMA_WRITE_COMPLETE")?;
        if link.debug {
            println!("server rdma write complete ");
        }

        // Tell the client to begin again.
        // SAFETY: as for the first go-ahead.
        unsafe { link.post_send(SendRequest::send(WR_SEND, send_sge)) }?;
        if link.debug {
            println!("server posted go ahead");
        }
    }
}

fn received(link: &Link<'_>, info: &Info) {
    if link.debug {
        println!(
            "Received rkey {:x} addr {:x} len {} from peer",
            info.rkey, info.addr, info.size as i32
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_data_as_rping() {
        let mut b = vec![0u8; 64];
        fill_ping(&mut b, 0, 65);
        assert_eq!(
            c_str(&b),
            b"rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr"
        );
        fill_ping(&mut b, 1, 66);
        assert_eq!(
            c_str(&b),
            b"rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs"
        );
        let mut b = vec![0u8; 23];
        fill_ping(&mut b, 123_456_789, 65);
        assert_eq!(c_str(&b), b"rdma-ping-123456789: A");
        fill_ping(&mut b, i32::MAX, 65);
        assert_eq!(c_str(&b), b"rdma-ping-2147483647: ");
    }

    #[test]
    fn info_is_big_endian() {
        let i = Info {
            addr: 0x0102_0304_0506_0708,
            rkey: 0x1122_3344,
            size: 64,
        };
        let b = i.encode();
        assert_eq!(
            b,
            [1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 64]
        );
        let d = Info::decode(&b);
        assert_eq!((d.addr, d.rkey, d.size), (i.addr, i.rkey, i.size));
    }

    #[test]
    fn atoi_like_glibc() {
        assert_eq!(atoi("7174"), 7174);
        assert_eq!(atoi(" -3x"), -3);
        assert_eq!(atoi("0x10"), 0);
        assert_eq!(atoi("abc"), 0);
    }
}
