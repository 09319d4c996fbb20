//! `uverbs rc-pingpong`: rdma-core v44's `ibv_rc_pingpong` (libibverbs/examples/rc_pingpong.c), flag
//! for flag and wire for wire, so that either side may be the C tool.
//!
//! Two processes exchange their LID, QPN, PSN and GID over TCP (52-byte messages, the client sends
//! first, the server connects its queue pair before replying, the client ends with `"done\0"`), connect
//! an RC queue pair each and then bounce `iters` SENDs of `size` bytes back and forth, polling one
//! completion queue. Same options, defaults, output lines, messages and exit codes as the C tool.
//!
//! `-e` sleeps on a completion channel, as the C tool does. Not supported (a clear error, exit status
//! 1): `-o`/`-O`/`-P` (on-demand paging), `-t` (completion timestamps), `-j` (device memory), `-N`
//! (the new post-send API). Sends are always signaled and never inline, which
//! the wire does not see.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{SystemTime, UNIX_EPOCH};

use uverbs::{
    ibv_access_flags, ibv_qp_state, ibv_qp_type, ibv_wc, AddressVector, CompletionChannel,
    CompletionQueue, Gid, LinkLayer, MemoryRegion, QpAttr, QueuePair,
};

use uverbs::exchange::{PingpongDest, PINGPONG_MSG_LEN};

use crate::args::{self, Item, Opt};
use crate::devinfo::inet_ntop6;

/// The id of the one completion queue, which its completion events carry.
const CQ_ID: isize = 1;

const RECV_WRID: i32 = 1;
const SEND_WRID: i32 = 2;

const OPTS: &[Opt] = &[
    Opt::arg('p', "port"),
    args::IB_DEV,
    args::IB_PORT,
    Opt::arg('s', "size"),
    Opt::arg('m', "mtu"),
    Opt::arg('r', "rx-depth"),
    Opt::arg('n', "iters"),
    Opt::arg('l', "sl"),
    Opt::flag('e', "events"),
    Opt::arg('g', "gid-idx"),
    Opt::flag('o', "odp"),
    Opt::flag('O', "iodp"),
    Opt::flag('P', "prefetch"),
    Opt::flag('t', "ts"),
    Opt::flag('c', "chk"),
    Opt::flag('j', "dm"),
    Opt::flag('N', "new_send"),
];

/// rc_pingpong's `usage()`, word for word (tabs included).
fn usage(argv0: &str) {
    print!(
        "Usage:\n  \
         {argv0}            start a server and wait for connection\n  \
         {argv0} <host>     connect to server at <host>\n\
         \n\
         Options:\n  \
         -p, --port=<port>      listen on/connect to port <port> (default 18515)\n  \
         -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n  \
         -i, --ib-port=<port>   use port <port> of IB device (default 1)\n  \
         -s, --size=<size>      size of message to exchange (default 4096)\n  \
         -m, --mtu=<size>       path MTU (default 1024)\n  \
         -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n  \
         -n, --iters=<iters>    number of exchanges (default 1000)\n  \
         -l, --sl=<sl>          service level value\n  \
         -e, --events           sleep on CQ events (default poll)\n  \
         -g, --gid-idx=<gid index> local port gid index\n  \
         -o, --odp\t\t    use on demand paging\n  \
         -O, --iodp\t\t    use implicit on demand paging\n  \
         -P, --prefetch\t    prefetch an ODP MR\n  \
         -t, --ts\t            get CQE with timestamp\n  \
         -c, --chk\t            validate received buffer\n  \
         -j, --dm\t            use device memory\n  \
         -N, --new_send            use new post send WR API\n"
    );
}

/// `pp_mtu_to_enum`: 0 for a size that is not an MTU.
fn mtu_to_enum(mtu: i64) -> u32 {
    match mtu {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        4096 => 5,
        _ => 0,
    }
}

/// The options, as rc_pingpong's `main` keeps them (C types and conversions included).
#[derive(Debug)]
struct Options {
    servername: Option<String>,
    ib_devname: Option<String>,
    port: u32,
    ib_port: i32,
    size: u32,
    mtu: u32,
    rx_depth: u32,
    iters: u32,
    sl: i32,
    gidx: i32,
    use_event: bool,
    validate_buf: bool,
    use_odp: bool,
    implicit_odp: bool,
    prefetch_mr: bool,
    use_ts: bool,
    use_dm: bool,
    use_new_send: bool,
}

/// Parses the command line; `Err(code)` once usage or a message has been printed.
fn parse_options(argv0: &str, argv: &[String]) -> Result<Options, i32> {
    let items = args::parse_or_usage(argv0, argv, OPTS, || usage(argv0), 1)?;
    let mut o = Options {
        servername: None,
        ib_devname: None,
        port: 18515,
        ib_port: 1,
        size: 4096,
        mtu: uverbs::IBV_MTU_1024,
        rx_depth: 500,
        iters: 1000,
        sl: 0,
        gidx: -1,
        use_event: false,
        validate_buf: false,
        use_odp: false,
        implicit_odp: false,
        prefetch_mr: false,
        use_ts: false,
        use_dm: false,
        use_new_send: false,
    };
    let mut positional = Vec::new();
    for item in items {
        // strtoul into an unsigned int and strtol into an int: the truncations are C's.
        let num = |v: &Option<String>| args::strtol(v.as_deref().unwrap_or(""));
        match item {
            Item::Arg(a) => positional.push(a),
            Item::Opt('p', v) => {
                o.port = num(&v) as u32;
                if o.port > 65535 {
                    usage(argv0);
                    return Err(1);
                }
            }
            Item::Opt('d', v) => o.ib_devname = v,
            Item::Opt('i', v) => {
                o.ib_port = num(&v) as i32;
                if o.ib_port < 1 {
                    usage(argv0);
                    return Err(1);
                }
            }
            Item::Opt('s', v) => o.size = num(&v) as u32,
            Item::Opt('m', v) => {
                o.mtu = mtu_to_enum(i64::from(num(&v) as i32));
                if o.mtu == 0 {
                    usage(argv0);
                    return Err(1);
                }
            }
            Item::Opt('r', v) => o.rx_depth = num(&v) as u32,
            Item::Opt('n', v) => o.iters = num(&v) as u32,
            Item::Opt('l', v) => o.sl = num(&v) as i32,
            Item::Opt('e', _) => o.use_event = true,
            Item::Opt('g', v) => o.gidx = num(&v) as i32,
            Item::Opt('o', _) => o.use_odp = true,
            Item::Opt('P', _) => o.prefetch_mr = true,
            Item::Opt('O', _) => {
                o.use_odp = true;
                o.implicit_odp = true;
            }
            Item::Opt('t', _) => o.use_ts = true,
            Item::Opt('c', _) => o.validate_buf = true,
            Item::Opt('j', _) => o.use_dm = true,
            Item::Opt('N', _) => o.use_new_send = true,
            Item::Opt(..) => {
                usage(argv0);
                return Err(1);
            }
        }
    }
    match positional.len() {
        0 => {}
        1 => o.servername = positional.pop(),
        _ => {
            usage(argv0);
            return Err(1);
        }
    }
    if o.use_odp && o.use_dm {
        eprintln!("DM memory region can't be on demand");
        return Err(1);
    }
    if !o.use_odp && o.prefetch_mr {
        eprintln!("prefetch is valid only with on-demand memory region");
        return Err(1);
    }
    let unsupported = [
        (o.implicit_odp, "-O (implicit on-demand paging)"),
        (o.use_odp && !o.implicit_odp, "-o (on-demand paging)"),
        (o.prefetch_mr, "-P (prefetch)"),
        (o.use_ts, "-t (completion timestamps)"),
        (o.use_dm, "-j (device memory)"),
        (o.use_new_send, "-N (new post send API)"),
    ];
    if let Some((_, what)) = unsupported.iter().find(|(on, _)| *on) {
        eprintln!("{argv0}: {what} is not supported yet");
        return Err(1);
    }
    Ok(o)
}

/// glibc's `srand48`/`lrand48`: the 48-bit linear congruential generator.
struct Rand48(u64);

impl Rand48 {
    fn new(seed: i64) -> Rand48 {
        // glibc keeps only 32 bits of the seed.
        Rand48((u64::from(seed as u32) << 16) | 0x330e)
    }

    fn lrand48(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(0x5_deec_e66d).wrapping_add(0xb) & ((1 << 48) - 1);
        (self.0 >> 17) as u32
    }
}

/// `gettimeofday` as whole seconds and microseconds.
fn now() -> (i64, i64) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() as i64, i64::from(d.subsec_micros()))
}

fn print_address(which: &str, d: &PingpongDest) {
    println!(
        "  {which} LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
        d.lid,
        d.qpn,
        d.psn,
        inet_ntop6(&d.gid.bytes())
    );
}

/// `perror`'s text for an I/O error.
fn perror(what: &str, e: Option<&io::Error>) {
    match e {
        Some(e) => eprintln!("{what}: {}", errno_text(e)),
        None => eprintln!("{what}: Success"),
    }
}

fn errno_text(e: &io::Error) -> String {
    let s = e.to_string();
    // std appends " (os error N)"; strerror does not.
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Reads until `buf` is full or the peer stops sending; the count, or the error with the count so far.
fn read_full(s: &mut TcpStream, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match s.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

/// The RDMA resources and the loop state (`struct pingpong_context`).
struct Pp<'a> {
    qp: QueuePair<'a>,
    cq: &'a CompletionQueue<'a>,
    mr: MemoryRegion<u8>,
    size: usize,
    rx_depth: i32,
    pending: i32,
}

impl Pp<'_> {
    /// `pp_post_recv`: posts up to `n` receives, returns how many were posted.
    fn post_recv(&mut self, n: i32) -> i32 {
        let size = self.size;
        for i in 0..n.max(0) {
            // SAFETY: the region lives as long as the queue pair (both in `self`), and its buffer is
            // only read or written by this program between completions, as in rc_pingpong, whose
            // sends and receives share one buffer.
            if unsafe { self.qp.post_receive(&mut self.mr, ..size, RECV_WRID as u64) }.is_err() {
                return i;
            }
        }
        n.max(0)
    }

    /// `pp_post_send`: one signaled SEND of the whole buffer.
    fn post_send(&mut self) -> io::Result<()> {
        let size = self.size;
        // SAFETY: as in `post_recv`; the buffer is not written while the send is outstanding.
        unsafe { self.qp.post_send(&mut self.mr, ..size, SEND_WRID as u64) }
    }

    /// `pp_connect_ctx`: INIT → RTR → RTS towards `dest`, with rc_pingpong's attributes.
    fn connect(&self, o: &Options, my_psn: u32, dest: &PingpongDest) -> Result<(), ()> {
        let port = o.ib_port as u8;
        let mut av = AddressVector {
            dlid: dest.lid as u16,
            sl: o.sl as u8,
            src_path_bits: 0,
            port_num: port,
            ..AddressVector::default()
        };
        if dest.gid.interface_id() != 0 {
            av.dgid = Some(dest.gid);
            av.hop_limit = 1;
            av.sgid_index = o.gidx as u8;
        }
        let rtr = QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTR),
            path_mtu: Some(o.mtu),
            dest_qp_num: Some(dest.qpn),
            rq_psn: Some(dest.psn),
            max_dest_rd_atomic: Some(1),
            min_rnr_timer: Some(12),
            ah_attr: Some(av),
            ..QpAttr::default()
        };
        if let Err(e) = self.qp.modify(&rtr) {
            eprintln!("Failed to modify QP to RTR");
            detail(&e);
            return Err(());
        }
        let rts = QpAttr {
            qp_state: Some(ibv_qp_state::IBV_QPS_RTS),
            timeout: Some(14),
            retry_cnt: Some(7),
            rnr_retry: Some(7),
            sq_psn: Some(my_psn),
            max_rd_atomic: Some(1),
            ..QpAttr::default()
        };
        if let Err(e) = self.qp.modify(&rts) {
            eprintln!("Failed to modify QP to RTS");
            detail(&e);
            return Err(());
        }
        Ok(())
    }

    /// `parse_single_wc` (without timestamps).
    fn parse_single_wc(
        &mut self,
        scnt: &mut u32,
        rcnt: &mut u32,
        routs: &mut i32,
        iters: u32,
        wc: &ibv_wc,
    ) -> Result<(), ()> {
        if let Some((status, _)) = wc.error() {
            eprintln!(
                "Failed status {} ({status}) for wr_id {}",
                uverbs::wc_status_str(status),
                wc.wr_id() as i32
            );
            return Err(());
        }
        let wr_id = wc.wr_id() as i32;
        match wr_id {
            SEND_WRID => *scnt += 1,
            RECV_WRID => {
                *routs -= 1;
                if *routs <= 1 {
                    *routs += self.post_recv(self.rx_depth - *routs);
                    if *routs < self.rx_depth {
                        eprintln!("Couldn't post receive ({})", *routs);
                        return Err(());
                    }
                }
                *rcnt += 1;
            }
            _ => {
                eprintln!("Completion for unknown wr_id {wr_id}");
                return Err(());
            }
        }
        self.pending &= !wr_id;
        if *scnt < iters && self.pending == 0 {
            if let Err(e) = self.post_send() {
                eprintln!("Couldn't post send");
                detail(&e);
                return Err(());
            }
            self.pending = RECV_WRID | SEND_WRID;
        }
        Ok(())
    }
}

/// The library's reason for a failure rc_pingpong reports in its own words, on a line of its own.
fn detail(e: &io::Error) {
    eprintln!("uverbs rc-pingpong: {e}");
}

/// `pp_client_exch_dest`.
fn client_exch_dest(servername: &str, port: u32, my: &PingpongDest) -> Option<PingpongDest> {
    let addrs: Vec<SocketAddr> = match (servername, port as u16).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            let text = errno_text(&e);
            let text = text
                .strip_prefix("failed to lookup address information: ")
                .unwrap_or(&text);
            eprintln!("{text} for {servername}:{port}");
            return None;
        }
    };
    let Some(mut sock) = addrs.iter().find_map(|a| TcpStream::connect(a).ok()) else {
        eprintln!("Couldn't connect to {servername}:{port}");
        return None;
    };
    if sock.write_all(&my.to_msg()).is_err() {
        eprintln!("Couldn't send local address");
        return None;
    }
    let mut msg = [0u8; PINGPONG_MSG_LEN];
    let (n, err) = read_full(&mut sock, &mut msg);
    let err = if n != PINGPONG_MSG_LEN {
        Some(err)
    } else {
        sock.write_all(b"done\0").err().map(Some)
    };
    if let Some(e) = err {
        perror("client read/write", e.as_ref());
        eprintln!("Couldn't read/write remote address");
        return None;
    }
    Some(PingpongDest::from_msg(&msg))
}

/// `pp_server_exch_dest`: accepts one client, connects the queue pair to it, then replies.
fn server_exch_dest(pp: &Pp<'_>, o: &Options, my: &PingpongDest) -> Option<PingpongDest> {
    // getaddrinfo(NULL, port, AI_PASSIVE, AF_UNSPEC) gives 0.0.0.0 first, then ::. std sets
    // SO_REUSEADDR on listeners, as rc_pingpong does.
    let port = o.port as u16;
    let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))
        .or_else(|_| TcpListener::bind((Ipv6Addr::UNSPECIFIED, port)));
    let Ok(listener) = listener else {
        eprintln!("Couldn't listen to port {}", o.port);
        return None;
    };
    let accepted = listener.accept();
    drop(listener);
    let Ok((mut conn, _)) = accepted else {
        eprintln!("accept() failed");
        return None;
    };
    let mut msg = [0u8; PINGPONG_MSG_LEN];
    let (n, err) = read_full(&mut conn, &mut msg);
    if n != PINGPONG_MSG_LEN {
        perror("server read", err.as_ref());
        eprintln!("{n}/{PINGPONG_MSG_LEN}: Couldn't read remote address");
        return None;
    }
    let rem = PingpongDest::from_msg(&msg);
    if pp.connect(o, my.psn, &rem).is_err() {
        eprintln!("Couldn't connect to remote QP");
        return None;
    }
    let sent = conn.write_all(&my.to_msg()).is_ok();
    // The client answers with "done" and its NUL: 5 bytes, then closes.
    let (n, _) = if sent {
        read_full(&mut conn, &mut msg[..])
    } else {
        (0, None)
    };
    if !sent || n != 5 {
        eprintln!("Couldn't send/recv local address");
        return None;
    }
    Some(rem)
}

/// `ibv_get_cq_event`, the check that it is for our queue, and `ibv_req_notify_cq` again.
fn wait_cq_event(channel: &CompletionChannel, cq: &CompletionQueue<'_>) -> Result<(), ()> {
    let id = match channel.get_event() {
        Ok(id) => id,
        Err(e) => {
            eprintln!("Failed to get cq_event");
            detail(&e);
            return Err(());
        }
    };
    if id != cq.id() {
        eprintln!("CQ event for unknown CQ {id:#x}");
        return Err(());
    }
    if let Err(e) = cq.req_notify(false) {
        eprintln!("Couldn't request CQ notification");
        detail(&e);
        return Err(());
    }
    Ok(())
}

/// C's `%.2f` for the summary lines (NaN and infinities as glibc prints them on x86-64).
fn f2(x: f64) -> String {
    if x.is_nan() {
        "-nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:.2}")
    }
}

/// `uverbs rc-pingpong [options] [host]`, with `ibv_rc_pingpong`'s output and exit codes.
pub fn rc_pingpong_main(argv0: &str, argv: &[String]) -> i32 {
    let o = match parse_options(argv0, argv) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let now_secs = now().0;
    let mut rng = Rand48::new(i64::from(std::process::id() as i32).wrapping_mul(now_secs));
    let page_size = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map_or(4096, |p| p as usize);

    let list = match uverbs::devices() {
        Ok(l) => l,
        Err(e) => {
            perror("Failed to get IB devices list", Some(&e));
            return 1;
        }
    };
    let dev = match &o.ib_devname {
        None => match list.iter().next() {
            Some(d) => d,
            None => {
                eprintln!("No IB devices found");
                return 1;
            }
        },
        Some(name) => match list.find(name) {
            Some(d) => d,
            None => {
                eprintln!("IB device {name} not found");
                return 1;
            }
        },
    };

    // pp_init_ctx. The library refuses an empty region: with -s 0 one byte is registered and
    // zero-length ranges of it are posted.
    let size = o.size as usize;
    let ctx = match dev.open() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Couldn't get context for {}", dev.name_str());
            detail(&e);
            return 1;
        }
    };
    let channel = if o.use_event {
        match ctx.create_comp_channel() {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("Couldn't create completion channel");
                detail(&e);
                return 1;
            }
        }
    } else {
        None
    };
    let pd = match ctx.alloc_pd() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("Couldn't allocate PD");
            detail(&e);
            return 1;
        }
    };
    let mr = match pd.register(
        vec![0x7bu8; size.max(1)],
        ibv_access_flags::IBV_ACCESS_LOCAL_WRITE,
    ) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("Couldn't register MR");
            detail(&e);
            return 1;
        }
    };
    let cqe = o.rx_depth.wrapping_add(1) as i32;
    let cq = match &channel {
        None => ctx.create_cq(cqe, CQ_ID),
        Some(ch) => ctx.create_cq_with_channel(cqe, CQ_ID, ch, 0),
    };
    let cq = match cq {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Couldn't create CQ");
            detail(&e);
            return 1;
        }
    };
    let qp = match pd
        .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
        .set_max_send_wr(1)
        .set_max_recv_wr(o.rx_depth)
        .set_max_send_sge(1)
        .set_max_recv_sge(1)
        .build()
    {
        Ok(q) => q.into_queue_pair(),
        Err(e) => {
            eprintln!("Couldn't create QP");
            detail(&e);
            return 1;
        }
    };
    let init = QpAttr {
        qp_state: Some(ibv_qp_state::IBV_QPS_INIT),
        pkey_index: Some(0),
        port_num: Some(o.ib_port as u8),
        qp_access_flags: Some(ibv_access_flags(0)),
        ..QpAttr::default()
    };
    if let Err(e) = qp.modify(&init) {
        eprintln!("Failed to modify QP to INIT");
        detail(&e);
        return 1;
    }
    let mut pp = Pp {
        qp,
        cq: &cq,
        mr,
        size,
        rx_depth: o.rx_depth as i32,
        pending: 0,
    };

    let mut routs = pp.post_recv(pp.rx_depth);
    if routs < pp.rx_depth {
        eprintln!("Couldn't post receive ({routs})");
        return 1;
    }
    if channel.is_some() {
        if let Err(e) = cq.req_notify(false) {
            eprintln!("Couldn't request CQ notification");
            detail(&e);
            return 1;
        }
    }

    let port_attr = match ctx.query_port(o.ib_port as u8) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("Couldn't get port info");
            detail(&e);
            return 1;
        }
    };
    let lid = port_attr.lid();
    if port_attr.link_layer() != LinkLayer::Ethernet && lid == 0 {
        eprintln!("Couldn't get local LID");
        return 1;
    }
    let gid = if o.gidx >= 0 {
        // ibv_query_gid: an empty slot reads as the zero GID; an index past the table fails.
        match ctx.query_gid_entry(o.ib_port as u8, o.gidx as u32) {
            Ok(e) => e.map_or(Gid::from_bytes([0; 16]), |e| e.gid),
            Err(_) => {
                eprintln!("can't read sgid of index {}", o.gidx);
                return 1;
            }
        }
    } else {
        Gid::from_bytes([0; 16])
    };
    let my = PingpongDest {
        lid: u32::from(lid),
        qpn: pp.qp.qp_num(),
        psn: rng.lrand48() & 0xff_ffff,
        gid,
    };
    print_address("local address: ", &my);

    let rem = match &o.servername {
        Some(host) => client_exch_dest(host, o.port, &my),
        None => server_exch_dest(&pp, &o, &my),
    };
    let Some(rem) = rem else { return 1 };
    print_address("remote address:", &rem);

    if o.servername.is_some() && pp.connect(&o, my.psn, &rem).is_err() {
        return 1;
    }

    pp.pending = RECV_WRID;
    if o.servername.is_some() {
        if o.validate_buf {
            // `i / page_size % sizeof(char)`: 0 at every page start.
            for i in (0..size).step_by(page_size) {
                pp.mr[i] = 0;
            }
        }
        if let Err(e) = pp.post_send() {
            eprintln!("Couldn't post send");
            detail(&e);
            return 1;
        }
        pp.pending |= SEND_WRID;
    }

    let start = now();
    let (mut rcnt, mut scnt) = (0u32, 0u32);
    let mut wcs = [ibv_wc::default(); 2];
    while rcnt < o.iters || scnt < o.iters {
        if let Some(ch) = &channel {
            if wait_cq_event(ch, pp.cq).is_err() {
                return 1;
            }
        }
        let ne = loop {
            match pp.cq.poll(&mut wcs) {
                // With events, one poll after each event; without, spin until something completes.
                Ok(got) if got.is_empty() && channel.is_none() => continue,
                Ok(got) => break got.len(),
                Err(e) => {
                    eprintln!("poll CQ failed -1");
                    detail(&e);
                    return 1;
                }
            }
        };
        for wc in &wcs[..ne] {
            if pp
                .parse_single_wc(&mut scnt, &mut rcnt, &mut routs, o.iters, wc)
                .is_err()
            {
                eprintln!("parse WC failed {ne}");
                return 1;
            }
        }
    }
    let end = now();

    // float usec = (end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec);
    let usec = ((end.0 - start.0) * 1_000_000 + (end.1 - start.1)) as f32;
    let bytes = i64::from(o.size) * i64::from(o.iters) * 2;
    println!(
        "{bytes} bytes in {} seconds = {} Mbit/sec",
        f2(f64::from(usec) / 1_000_000.),
        f2(bytes as f64 * 8. / f64::from(usec))
    );
    println!(
        "{} iters in {} seconds = {} usec/iter",
        o.iters as i32,
        f2(f64::from(usec) / 1_000_000.),
        f2(f64::from(usec / o.iters as f32))
    );
    if o.servername.is_none() && o.validate_buf {
        for i in (0..size).step_by(page_size) {
            if pp.mr[i] != 0 {
                println!("invalid data in page {}", i / page_size);
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lrand48_matches_glibc() {
        // srand48(1); lrand48() x3 with glibc.
        let mut r = Rand48::new(1);
        assert_eq!(r.lrand48(), 89400484);
        assert_eq!(r.lrand48(), 976015093);
        assert_eq!(r.lrand48(), 1792756325);
    }

    #[test]
    fn mapped_ipv4_gid_prints_like_inet_ntop() {
        let mut raw = [0u8; 16];
        raw[10] = 0xff;
        raw[11] = 0xff;
        raw[12..].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(inet_ntop6(&raw), "::ffff:127.0.0.1");
    }
}
