//! The perf tools' command line: perftest's options (the subset that applies to RC over verbs), with
//! its defaults, range checks and the adjustments its `force_dependecies` makes.

use crate::args::{self, Item, Opt};

/// Which perftest tool this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// `ib_send_lat`: SEND ping-pong.
    SendLat,
    /// `ib_write_lat`: RDMA WRITE ping-pong, polling the last byte of the buffer.
    WriteLat,
    /// `ib_send_bw`: SEND stream, the server receives.
    SendBw,
    /// `ib_write_bw`: RDMA WRITE stream.
    WriteBw,
    /// `ib_read_bw`: RDMA READ stream.
    ReadBw,
}

/// The operation a test measures (perftest's `VerbType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// SEND / RECV.
    Send,
    /// RDMA WRITE.
    Write,
    /// RDMA READ.
    Read,
}

impl Test {
    /// The operation.
    pub fn verb(self) -> Verb {
        match self {
            Test::SendLat | Test::SendBw => Verb::Send,
            Test::WriteLat | Test::WriteBw => Verb::Write,
            Test::ReadBw => Verb::Read,
        }
    }

    /// Whether this is a latency test (otherwise bandwidth).
    pub fn is_lat(self) -> bool {
        matches!(self, Test::SendLat | Test::WriteLat)
    }

    /// The subcommand name, e.g. `send-lat`.
    pub fn command(self) -> &'static str {
        match self {
            Test::SendLat => "send-lat",
            Test::WriteLat => "write-lat",
            Test::SendBw => "send-bw",
            Test::WriteBw => "write-bw",
            Test::ReadBw => "read-bw",
        }
    }

    /// The name in JSON output, e.g. `send_lat`.
    pub fn json_name(self) -> &'static str {
        match self {
            Test::SendLat => "send_lat",
            Test::WriteLat => "write_lat",
            Test::SendBw => "send_bw",
            Test::WriteBw => "write_bw",
            Test::ReadBw => "read_bw",
        }
    }

    /// perftest's title line, e.g. `Send Latency Test`.
    pub fn title(self) -> &'static str {
        match self {
            Test::SendLat => "Send Latency Test",
            Test::WriteLat => "RDMA_Write Latency Test",
            Test::SendBw => "Send BW Test",
            Test::WriteBw => "RDMA_Write BW Test",
            Test::ReadBw => "RDMA_Read BW Test",
        }
    }
}

/// perftest's protocol version, which the TCP exchange announces (perftest 4.5-0.17 is "6.06").
pub const PERFTEST_VERSION: &str = "6.06";

/// `MAX_SIZE`: the largest message of `-a`.
pub const MAX_SIZE: u64 = 1 << 23;
/// `MSG_SIZE_CQ_MOD_LIMIT`: above this, CQ moderation is off unless asked for.
const MSG_SIZE_CQ_MOD_LIMIT: u64 = 8192;

/// The parsed and adjusted options (perftest's `perftest_parameters`, the part used here).
#[derive(Debug, Clone)]
pub struct Params {
    /// The tool.
    pub test: Test,
    /// `argv[0]` for messages, e.g. `uverbs send-lat`.
    pub argv0: String,
    /// The server to connect to; `None` makes this side the server.
    pub servername: Option<String>,
    /// `-p`: the TCP port of the out-of-band exchange.
    pub port: u16,
    /// `-d`: the device; the first one when `None`.
    pub ib_dev: Option<String>,
    /// `-i`: the port of the device.
    pub ib_port: u8,
    /// `-x`: the GID index; `None` is perftest's -1 (best GID on Ethernet, none on InfiniBand).
    pub gid_index: Option<u32>,
    /// `-m`: the path MTU in bytes; 0 for the port's active MTU.
    pub mtu: u32,
    /// `-s`: the message size (the largest, [`MAX_SIZE`], with `-a`).
    pub size: u64,
    /// `-a`: every size from 2 to 2^23.
    pub all: bool,
    /// `-n`: iterations per size (per queue pair for the bandwidth tests).
    pub iters: u64,
    /// `-t`: outstanding send work requests per queue pair.
    pub tx_depth: u32,
    /// `-r`: receives posted per queue pair (SEND tests).
    pub rx_depth: u32,
    /// `-Q`: one completion per this many sends.
    pub cq_mod: u32,
    /// Whether `-Q` was given.
    pub req_cq_mod: bool,
    /// `-l`: send requests per post (bandwidth tests).
    pub post_list: u32,
    /// `--batch` (uverbs only): the bandwidth client posts through the batch API
    /// (`QueuePair::start_send` .. `SendBatch::submit`, `post_list` requests per batch) instead of
    /// `post_send_list`.
    pub batch: bool,
    /// `-I`: messages up to this size are sent inline.
    pub inline_size: u32,
    /// `-q`: queue pairs (bandwidth tests).
    pub num_qps: u32,
    /// `-o`: outstanding RDMA reads; 0 for the device's maximum.
    pub out_reads: u32,
    /// `-u`: the QP's local ACK timeout exponent.
    pub qp_timeout: u8,
    /// `-S`: the service level.
    pub sl: u8,
    /// `-e`: sleep on completion events instead of polling.
    pub use_event: bool,
    /// `-N` (and always for the `send-bw` server): no peak bandwidth.
    pub no_peak: bool,
    /// `--report_gbits`: bandwidth in Gb/s instead of MB/s.
    pub report_gbits: bool,
    /// `-H`: print every latency sample (sorted, one way, µs) as perftest does.
    pub histogram: bool,
    /// `--json`: one JSON object per line on stdout instead of the table.
    pub json: bool,
    /// `-R` (perftest's `work_rdma_cm`): the test queue pairs are connected by the RDMA
    /// connection manager, one connection each to the server's port `-p`.
    pub rdma_cm: bool,
    /// `-z`, or implied by `-R` (perftest's `use_rdma_cm`): the exchange runs over an RC
    /// connection made by the RDMA connection manager instead of a TCP socket.
    pub comm_rdma_cm: bool,
}

impl Params {
    /// Whether this side is the client (it was given a server name).
    pub fn is_client(&self) -> bool {
        self.servername.is_some()
    }

    /// The message sizes to run, in order.
    pub fn sizes(&self) -> Vec<u64> {
        if self.all {
            (1..24).map(|i| 1u64 << i).collect()
        } else {
            vec![self.size]
        }
    }
}

/// Long-only options get private short codes.
const REPORT_GBITS: char = '\u{1}';
const JSON: char = '\u{2}';
const RUN_INFINITELY: char = '\u{3}';
const USE_SRQ: char = '\u{4}';
const OUT_JSON: char = '\u{5}';
const DONT_XCHG: char = '\u{6}';
const BATCH: char = '\u{7}';

/// perftest's options, those implemented and those recognized only to be refused clearly.
const OPTS: &[Opt] = &[
    Opt::arg('p', "port"),
    args::IB_DEV,
    args::IB_PORT,
    Opt::arg('m', "mtu"),
    Opt::arg('s', "size"),
    Opt::arg('n', "iters"),
    Opt::arg('t', "tx-depth"),
    Opt::arg('u', "qp-timeout"),
    Opt::arg('S', "sl"),
    Opt::arg('x', "gid-index"),
    Opt::flag('a', "all"),
    Opt::flag('F', "CPU-freq"),
    Opt::arg('c', "connection"),
    Opt::arg('q', "qp"),
    Opt::flag('e', "events"),
    Opt::arg('I', "inline_size"),
    Opt::arg('o', "outs"),
    Opt::arg('r', "rx-depth"),
    Opt::arg('Q', "cq-mod"),
    Opt::flag('N', "noPeak"),
    Opt::flag('V', "version"),
    Opt::flag('h', "help"),
    Opt::arg('l', "post_list"),
    Opt::flag(REPORT_GBITS, "report_gbits"),
    Opt::flag(JSON, "json"),
    Opt::flag(BATCH, "batch"),
    Opt::flag('R', "rdma_cm"),
    Opt::flag('z', "comm_rdma_cm"),
    // The spelling perftest's usage shows (its parser takes only the other).
    Opt::flag('z', "com_rdma_cm"),
    // Recognized, not supported.
    Opt::flag('b', "bidirectional"),
    Opt::arg('D', "duration"),
    Opt::flag('g', "mcg"),
    Opt::flag('O', "dualport"),
    Opt::flag('C', "report-cycles"),
    Opt::flag('H', "report-histogrm"),
    Opt::flag('U', "report-unsorted"),
    Opt::flag(RUN_INFINITELY, "run_infinitely"),
    Opt::flag(USE_SRQ, "use-srq"),
    Opt::flag(OUT_JSON, "out_json"),
    Opt::flag(DONT_XCHG, "dont_xchg_versions"),
];

/// The usage text, in perftest's layout, for the options this tool takes.
pub fn usage(test: Test) -> String {
    let cmd = format!("uverbs {}", test.command());
    let mut s = format!(
        "Usage:\n  {cmd}            start a server and wait for connection\n  \
         {cmd} <host>     connect to server at <host>\n\nOptions:\n"
    );
    let mut line = |o: &str, text: &str| s.push_str(&format!("  {o:<29}{text}\n"));
    line("-a, --all", "Run sizes from 2 till 2^23");
    if test.verb() == Verb::Read {
        line(
            "-o, --outs=<num>",
            "num of outstanding read/atom(default max of device)",
        );
    }
    line(
        "-c, --connection=<RC>",
        "Connection type RC (the only one supported)",
    );
    line(
        "-d, --ib-dev=<dev>",
        "Use IB device <dev> (default first device found)",
    );
    if test.verb() != Verb::Write {
        line("-e, --events", "Sleep on CQ events (default poll)");
    }
    line(
        "-F, --CPU-freq",
        "Do not show a warning even if cpufreq_ondemand module is loaded (no-op)",
    );
    line("-h, --help", "Show this help screen.");
    line(
        "-i, --ib-port=<port>",
        "Use port <port> of IB device (default 1)",
    );
    if test.verb() != Verb::Read {
        line(
            "-I, --inline_size=<size>",
            "Max size of message to be sent in inline (default 0)",
        );
    }
    if !test.is_lat() {
        line(
            "-l, --post_list=<list size>",
            "Post list of WQEs of <list size> size",
        );
    }
    line(
        "-m, --mtu=<mtu>",
        "MTU size : 256 - 4096 (default port mtu)",
    );
    let iters = if test == Test::WriteBw { 5000 } else { 1000 };
    line(
        "-n, --iters=<iters>",
        &format!("Number of exchanges (at least 5, default {iters})"),
    );
    if !test.is_lat() {
        line("-N, --noPeak", "Cancel peak-bw calculation");
    }
    line(
        "-p, --port=<port>",
        "Listen on/connect to port <port> (default 18515)",
    );
    if !test.is_lat() {
        line("-q, --qp=<num of qp's>", "Num of qp's(default 1)");
        line(
            "-Q, --cq-mod",
            "Generate Cqe only after <--cq-mod> completion",
        );
    }
    if test.verb() == Verb::Send {
        line("-r, --rx-depth=<dep>", "Rx queue size (default 512)");
    }
    let size = if test.is_lat() { 2 } else { 65536 };
    line(
        "-s, --size=<size>",
        &format!("Size of message to exchange (default {size})"),
    );
    line(
        "-R, --rdma_cm",
        "Connect QPs with rdma_cm and run test on those QPs",
    );
    line("-S, --sl=<sl>", "SL (default 0)");
    let tx = if test.is_lat() { 1 } else { 128 };
    line(
        "-t, --tx-depth=<dep>",
        &format!("Size of tx queue (default {tx})"),
    );
    line(
        "-u, --qp-timeout=<timeout>",
        "QP timeout, timeout value is 4 usec * 2 ^(timeout), default 14",
    );
    line("-V, --version", "Display version number");
    line("-x, --gid-index=<index>", "Test uses GID with GID index");
    line(
        "-z, --com_rdma_cm",
        "Communicate with rdma_cm module to exchange data - use regular QPs",
    );
    if !test.is_lat() {
        line(
            "--report_gbits",
            "Report Max/Average BW of test in Gbit/sec (instead of MB/sec)",
        );
    }
    line(
        "--json",
        "Print one JSON object per message size on stdout (instead of the table)",
    );
    if !test.is_lat() {
        line(
            "--batch",
            "Post through the batch API, start_send .. submit (uverbs only)",
        );
    }
    s
}

/// Why parsing stopped: help or version printed (exit 0), or an error message (exit 1).
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// `-h` or `-V`: print this on stdout and exit 0.
    Info(String),
    /// A bad command line: print this on stderr and exit 1.
    Error(String),
}

/// A strict C integer (`strtol(s, &end, 0)` with nothing left over), as perftest's `CHECK_VALUE`.
fn c_int(name: &str, v: &str, ty: &str) -> Result<i64, Stop> {
    let t = v.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, body) = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, h)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let bad = || Stop::Error(format!(" {name} argument {v} should be {ty}"));
    if body.is_empty() {
        return Err(bad());
    }
    let n = i64::from_str_radix(body, radix).map_err(|_| bad())?;
    Ok(if neg { -n } else { n })
}

fn in_range(name: &str, v: &str, ty: &str, min: i64, max: i64) -> Result<i64, Stop> {
    let n = c_int(name, v, ty)?;
    if n < min || n > max {
        return Err(Stop::Error(format!(
            " {name} should be between {min} and {max}"
        )));
    }
    Ok(n)
}

/// Parses `argv` (after the subcommand) the way perftest's `parser` does, then applies its
/// `force_dependecies` adjustments.
pub fn parse(test: Test, argv: &[String]) -> Result<Params, Stop> {
    let argv0 = format!("uverbs {}", test.command());
    let items = args::parse(argv, OPTS).map_err(|m| {
        Stop::Error(format!(
            "{argv0}: {m}\nTry '{argv0} --help' for more information."
        ))
    })?;
    let verb = test.verb();
    let mut p = Params {
        test,
        argv0: argv0.clone(),
        servername: None,
        port: 18515,
        ib_dev: None,
        ib_port: 1,
        gid_index: None,
        mtu: 0,
        size: if test.is_lat() { 2 } else { 65536 },
        all: false,
        iters: if test == Test::WriteBw { 5000 } else { 1000 },
        tx_depth: if test.is_lat() { 1 } else { 128 },
        rx_depth: if verb == Verb::Send { 512 } else { 1 },
        cq_mod: 100,
        req_cq_mod: false,
        post_list: 1,
        batch: false,
        inline_size: 0,
        num_qps: 1,
        out_reads: 0,
        qp_timeout: 14,
        sl: 0,
        use_event: false,
        no_peak: false,
        report_gbits: false,
        histogram: false,
        json: false,
        rdma_cm: false,
        comm_rdma_cm: false,
    };
    let mut positional = Vec::new();
    let unsupported = |what: &str| {
        Stop::Error(format!(
            "{argv0}: {what} is not supported (uverbs implements perftest's RC tests over \
             the TCP or rdma_cm exchange only)"
        ))
    };
    for item in items {
        let (c, v) = match item {
            Item::Arg(a) => {
                positional.push(a);
                continue;
            }
            Item::Opt(c, v) => (c, v.unwrap_or_default()),
        };
        match c {
            'p' => {
                p.port = u16::try_from(c_int("Port", &v, "int")?)
                    .map_err(|_| Stop::Error(format!(" Port {v} is not a TCP port")))?;
            }
            'd' => p.ib_dev = Some(v),
            'i' => {
                let n = c_int("IB Port", &v, "uint8_t")? as u8;
                if n < 1 {
                    return Err(Stop::Error("IB Port can't be less than 1".into()));
                }
                p.ib_port = n;
            }
            'm' => p.mtu = c_int("MTU", &v, "int")? as u32,
            'n' => p.iters = in_range("Iteration num", &v, "int", 5, 100_000_000)? as u64,
            't' => p.tx_depth = in_range("Tx depth", &v, "int", 1, 15000)? as u32,
            'u' => p.qp_timeout = c_int("QP Timeout", &v, "uint8_t")? as u8,
            'S' => {
                let sl = c_int("Service Level", &v, "uint8_t")? as u8;
                if sl > 15 {
                    return Err(Stop::Error(" Only 15 Service levels".into()));
                }
                p.sl = sl;
            }
            'x' => p.gid_index = Some(in_range("Gid index", &v, "uint8_t", 0, 64)? as u32),
            'a' => p.all = true,
            'F' => {}
            'c' => {
                if v != "RC" {
                    return Err(unsupported(&format!("connection type {v}")));
                }
            }
            'q' => {
                if test.is_lat() {
                    return Err(Stop::Error(
                        " Multiple QPs only available on bw tests".into(),
                    ));
                }
                p.num_qps = in_range("num of Qps", &v, "int", 1, 16384)? as u32;
            }
            'e' => {
                if verb == Verb::Write {
                    return Err(Stop::Error(
                        " Events feature not available on WRITE verb".into(),
                    ));
                }
                p.use_event = true;
            }
            'I' => {
                let n = in_range("Max inline", &v, "int", 0, 912)? as u32;
                if verb == Verb::Read {
                    return Err(Stop::Error(
                        " Inline feature not available on READ/Atomic verbs".into(),
                    ));
                }
                p.inline_size = n;
            }
            'o' => {
                let n = c_int("Outstanding Reads", &v, "int")?;
                if verb != Verb::Read {
                    return Err(Stop::Error(
                        " Setting Outstanding reads only available on READ verb".into(),
                    ));
                }
                p.out_reads = n.max(0) as u32;
            }
            'r' => {
                let n = in_range(" Rx depth", &v, "int", 1, 16384)? as u32;
                if verb != Verb::Send && n > 1 {
                    return Err(Stop::Error(" On RDMA verbs rx depth can be only 1".into()));
                }
                p.rx_depth = n;
            }
            'Q' => {
                p.cq_mod = in_range("CQ moderation", &v, "int", 1, 1024)? as u32;
                p.req_cq_mod = true;
            }
            'N' => {
                if test.is_lat() {
                    return Err(Stop::Error(" NoPeak only valid for BW tests".into()));
                }
                p.no_peak = true;
            }
            'l' => {
                let n = c_int("Send Post List size", &v, "int")?;
                if n < 1 {
                    return Err(Stop::Error(" Send Post List size must be positive".into()));
                }
                p.post_list = n as u32;
            }
            's' => {
                let (digits, factor) = if let Some(d) = v.strip_suffix('K') {
                    (d, 1024)
                } else if let Some(d) = v.strip_suffix('M') {
                    (d, 1024 * 1024)
                } else {
                    (v.as_str(), 1)
                };
                let size = args::strtol(digits).saturating_mul(factor);
                if size < 1 || size > i64::from(u32::MAX / 2) {
                    return Err(Stop::Error(format!(
                        " Message Size should be between 1 and {}",
                        u32::MAX / 2
                    )));
                }
                p.size = size as u64;
            }
            'V' => {
                return Err(Stop::Info(format!(
                    "Version: {PERFTEST_VERSION} (uverbs {}, perftest-compatible exchange)\n",
                    env!("CARGO_PKG_VERSION")
                )))
            }
            'h' => return Err(Stop::Info(usage(test))),
            REPORT_GBITS => p.report_gbits = true,
            JSON => p.json = true,
            BATCH => p.batch = true,
            'b' => return Err(unsupported("-b (bidirectional)")),
            'D' => return Err(unsupported("-D (duration)")),
            'R' => {
                p.rdma_cm = true;
                p.comm_rdma_cm = true;
            }
            'z' => p.comm_rdma_cm = true,
            'g' => return Err(unsupported("-g (multicast)")),
            'O' => return Err(unsupported("-O (dual port)")),
            'H' => p.histogram = true,
            'C' | 'U' => return Err(unsupported("-C/-U (cycle, unsorted reports)")),
            RUN_INFINITELY => return Err(unsupported("--run_infinitely")),
            USE_SRQ => return Err(unsupported("--use-srq")),
            OUT_JSON => return Err(unsupported("--out_json (use --json)")),
            DONT_XCHG => return Err(unsupported("--dont_xchg_versions")),
            other => {
                return Err(Stop::Error(format!("{argv0}: unhandled option -{other}")));
            }
        }
    }
    match positional.len() {
        0 => {}
        1 => p.servername = positional.pop(),
        _ => {
            return Err(Stop::Error(
                " Invalid Command line. Please check command rerun ".into(),
            ))
        }
    }
    force_dependencies(&mut p)?;
    Ok(p)
}

/// perftest's `force_dependecies`, for the options kept here.
fn force_dependencies(p: &mut Params) -> Result<(), Stop> {
    let bw = !p.test.is_lat();
    if u64::from(p.tx_depth) > p.iters {
        p.tx_depth = p.iters as u32;
    }
    if p.test.verb() == Verb::Send && u64::from(p.rx_depth) > p.iters {
        p.rx_depth = p.iters as u32;
    }
    if p.size > MSG_SIZE_CQ_MOD_LIMIT && !p.all && !p.use_event && !p.req_cq_mod {
        p.cq_mod = 1;
    }
    if p.cq_mod > p.tx_depth {
        p.cq_mod = p.tx_depth;
    }
    if p.all {
        p.size = MAX_SIZE;
    }
    if p.batch && !bw {
        return Err(Stop::Error("--batch is supported in BW tests only".into()));
    }
    if p.post_list > 1 {
        if !bw {
            return Err(Stop::Error(
                "Post list is supported in BW tests only".into(),
            ));
        }
        if p.iters % u64::from(p.post_list) != 0 {
            return Err(Stop::Error(
                "Number of iterations must be a multiple of post list size".into(),
            ));
        }
        if !p.req_cq_mod {
            p.cq_mod = p.post_list;
        } else if p.post_list % p.cq_mod != 0 {
            return Err(Stop::Error(
                "Post list size must be a multiple of CQ moderation".into(),
            ));
        }
        // perftest would wait forever for room in the send queue.
        if p.post_list > p.tx_depth {
            return Err(Stop::Error(format!(
                "Post list size ({}) must not exceed the TX depth ({})",
                p.post_list, p.tx_depth
            )));
        }
    }
    if p.test == Test::SendBw && !p.is_client() {
        p.no_peak = true;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(test: Test, args: &str) -> Result<Params, Stop> {
        let v: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
        parse(test, &v)
    }

    #[test]
    fn defaults_follow_perftest() {
        let p = parse_str(Test::SendLat, "").unwrap();
        assert_eq!((p.size, p.iters, p.tx_depth, p.rx_depth), (2, 1000, 1, 512));
        assert_eq!(p.cq_mod, 1);
        assert!(p.servername.is_none());
        let p = parse_str(Test::WriteBw, "host").unwrap();
        assert_eq!((p.size, p.iters, p.tx_depth), (65536, 5000, 128));
        // 64 KiB messages turn CQ moderation off.
        assert_eq!(p.cq_mod, 1);
        assert_eq!(p.servername.as_deref(), Some("host"));
        let p = parse_str(Test::SendBw, "-s 4096").unwrap();
        assert_eq!(p.cq_mod, 100);
        assert!(p.no_peak, "the send-bw server reports no peak");
    }

    #[test]
    fn options_and_dependencies() {
        let p = parse_str(
            Test::WriteBw,
            "-d rxe0 -x 1 -s 4K -n 64 -t 16 -l 4 -q 2 --report_gbits --json -p 2000 h",
        )
        .unwrap();
        assert_eq!(p.ib_dev.as_deref(), Some("rxe0"));
        assert_eq!(p.gid_index, Some(1));
        assert_eq!((p.size, p.iters, p.tx_depth), (4096, 64, 16));
        assert_eq!((p.post_list, p.cq_mod, p.num_qps), (4, 4, 2));
        assert!(p.report_gbits && p.json);
        assert_eq!(p.port, 2000);
        let p = parse_str(Test::SendLat, "-n 5 -a").unwrap();
        assert_eq!(p.size, MAX_SIZE);
        assert_eq!(p.sizes().len(), 23);
        assert_eq!(p.sizes()[0], 2);
        assert_eq!(p.tx_depth, 1);
        assert_eq!(p.rx_depth, 5);
    }

    #[test]
    fn batch_option() {
        assert!(!parse_str(Test::SendBw, "").unwrap().batch);
        let p = parse_str(Test::SendBw, "--batch -l 8 -n 64 h").unwrap();
        assert!(p.batch);
        assert_eq!(p.post_list, 8);
        assert!(parse_str(Test::ReadBw, "--batch").unwrap().batch);
        assert_eq!(
            parse_str(Test::SendLat, "--batch").unwrap_err(),
            Stop::Error("--batch is supported in BW tests only".into())
        );
        assert!(usage(Test::WriteBw).contains("--batch"));
        assert!(!usage(Test::WriteLat).contains("--batch"));
    }

    #[test]
    fn rdma_cm_options() {
        let p = parse_str(Test::ReadBw, "-R -n 200 10.0.0.1").unwrap();
        assert!(p.rdma_cm && p.comm_rdma_cm);
        let p = parse_str(Test::SendLat, "--comm_rdma_cm").unwrap();
        assert!(!p.rdma_cm && p.comm_rdma_cm);
        let p = parse_str(Test::SendLat, "--com_rdma_cm -z").unwrap();
        assert!(!p.rdma_cm && p.comm_rdma_cm);
        let p = parse_str(Test::WriteBw, "").unwrap();
        assert!(!p.rdma_cm && !p.comm_rdma_cm);
        assert!(usage(Test::WriteBw).contains("-R, --rdma_cm"));
    }

    #[test]
    fn refusals() {
        assert!(matches!(
            parse_str(Test::SendLat, "-n 4"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(
            parse_str(Test::SendLat, "-q 2"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(
            parse_str(Test::SendLat, "-l 2"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(
            parse_str(Test::WriteLat, "-e"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(
            parse_str(Test::ReadBw, "-I 8"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(
            parse_str(Test::WriteBw, "-n 10 -l 3"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(
            parse_str(Test::WriteBw, "-b"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(
            parse_str(Test::WriteBw, "-n 1x"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(
            parse_str(Test::WriteBw, "a b"),
            Err(Stop::Error(_))
        ));
        assert!(matches!(parse_str(Test::WriteBw, "-h"), Err(Stop::Info(_))));
    }

    #[test]
    fn c_integers() {
        assert_eq!(c_int("x", "0x10", "int"), Ok(16));
        assert_eq!(c_int("x", "010", "int"), Ok(8));
        assert_eq!(c_int("x", "0", "int"), Ok(0));
        assert_eq!(c_int("x", "-3", "int"), Ok(-3));
        assert!(c_int("x", "", "int").is_err());
        assert!(c_int("x", "3k", "int").is_err());
    }
}
