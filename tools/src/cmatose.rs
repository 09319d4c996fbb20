//! `uverbs cmatose`: rdma-core v44's `ucmatose` (librdmacm/examples/cmatose.c) over `uverbs::cm`,
//! option for option and message for message, so that either side may be the C tool.
//!
//! Reliable connections (port space TCP): the server (no `-s`) listens on `-p` (7471), accepts
//! `-c` connections, and once all are established sends `-C` messages of `-S` bytes on each, waits
//! for their completions and for as many replies, then disconnects. The client connects `-c`
//! identifiers, receives the messages, replies with as many, and answers the server's disconnect.
//! Both print the C tool's progress lines and end with `return status N`, exiting with N.
//!
//! Not supported: `-f gid` (AF_IB addresses) and `-P ib` (a clear error, exit status 1); `-t` and
//! `-a` set the identifier's options as the C tool does (a failure is a warning, and the test
//! goes on). Every wait is bounded by `--timeout`.

use std::time::{Duration, Instant};

use uverbs::cm::{CmId, ConnParams, EventChannel, EventKind, PortSpace};
use uverbs::SendRequest;

use crate::args::{self, Item, Opt};
use crate::rdmacm::{
    atoi, client_addrs, counts, event_status, event_str, io_status, open_cm, parse_timeout,
    passive_addr, poll_n, post_recvs, qp_of, wait_event, Devices, Res, DEFAULT_TIMEOUT, ETIMEDOUT,
    TIMEOUT_OPT,
};

const OPTS: &[Opt] = &[
    Opt {
        short: 's',
        long: "server",
        arg: true,
    },
    Opt {
        short: 'b',
        long: "bind",
        arg: true,
    },
    Opt {
        short: 'f',
        long: "format",
        arg: true,
    },
    Opt {
        short: 'P',
        long: "port-space",
        arg: true,
    },
    Opt {
        short: 'c',
        long: "connections",
        arg: true,
    },
    Opt {
        short: 'C',
        long: "count",
        arg: true,
    },
    Opt {
        short: 'S',
        long: "size",
        arg: true,
    },
    Opt {
        short: 't',
        long: "tos",
        arg: true,
    },
    Opt {
        short: 'p',
        long: "port",
        arg: true,
    },
    Opt {
        short: 'm',
        long: "migrate",
        arg: false,
    },
    Opt {
        short: 'a',
        long: "ack-timeout",
        arg: true,
    },
    TIMEOUT_OPT,
];

/// How long address and route resolution may take (the C tool's 2000 ms).
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

fn usage(prog: &str) {
    println!("usage: {prog}");
    println!("\t[-s server_address]");
    println!("\t[-b bind_address]");
    println!("\t[-f address_format]");
    println!("\t    name, ip, ipv6, or gid");
    println!("\t[-P port_space]");
    println!("\t    tcp or ib");
    println!("\t[-c connections]");
    println!("\t[-C message_count]");
    println!("\t[-S message_size]");
    println!("\t[-t type_of_service]");
    println!("\t[-p port_number]");
    println!("\t[-m(igrate)]");
    println!("\t[-a ack_timeout]");
    println!("\t[--timeout seconds]   (uverbs: bound on each phase, default 60)");
}

struct Cfg {
    dst: Option<String>,
    src: Option<String>,
    connections: usize,
    count: usize,
    size: usize,
    port: u16,
    migrate: bool,
    tos: Option<u8>,
    ack_timeout: Option<u8>,
    timeout: Duration,
}

struct Node<'c> {
    id: CmId,
    res: Option<Res<'c>>,
    connected: bool,
}

struct Test<'c> {
    cfg: Cfg,
    devs: &'c Devices,
    chan: EventChannel,
    nodes: Vec<Node<'c>>,
    connects_left: usize,
    disconnects_left: usize,
}

/// `uverbs cmatose ARGS`; returns the exit status.
pub fn cmatose_main(prog: &str, argv: &[String]) -> i32 {
    let items = match args::parse(argv, OPTS) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{prog}: {e}");
            usage(prog);
            return 1;
        }
    };
    let mut cfg = Cfg {
        dst: None,
        src: None,
        connections: 1,
        count: 10,
        size: 100,
        port: 7471,
        migrate: false,
        tos: None,
        ack_timeout: None,
        timeout: DEFAULT_TIMEOUT,
    };
    let (mut connections, mut count, mut size) = (1i32, 10i32, 100i32);
    for item in items {
        let Item::Opt(c, v) = item else { continue };
        let v = v.unwrap_or_default();
        match c {
            's' => cfg.dst = Some(v),
            'b' => cfg.src = Some(v),
            'f' => {
                let l = v.to_ascii_lowercase();
                if l.starts_with("gid") {
                    eprintln!("{prog}: -f gid (AF_IB addresses) is not supported");
                    return 1;
                } else if !l.starts_with("ip") && !l.starts_with("name") {
                    eprintln!("Warning: unknown address format");
                }
            }
            'P' => {
                let l = v.to_ascii_lowercase();
                if l.starts_with("ib") {
                    eprintln!("{prog}: -P ib (the IB port space) is not supported");
                    return 1;
                } else if !l.starts_with("tcp") {
                    eprintln!("Warning: unknown port space format");
                }
            }
            'c' => connections = atoi(&v),
            'C' => count = atoi(&v),
            'S' => size = atoi(&v),
            't' => cfg.tos = Some(atoi(&v) as u8),
            'p' => match v.parse::<u16>() {
                Ok(p) => cfg.port = p,
                Err(_) => {
                    eprintln!("{prog}: invalid port '{v}' (a number from 0 to 65535)");
                    return 1;
                }
            },
            'm' => cfg.migrate = true,
            'a' => cfg.ack_timeout = Some(atoi(&v) as u8),
            '\0' => match parse_timeout(&v) {
                Ok(t) => cfg.timeout = t,
                Err(e) => {
                    eprintln!("{prog}: {e}");
                    return 1;
                }
            },
            _ => {}
        }
    }
    let Some((connections, count, size)) = counts(prog, connections, count, size) else {
        return 1;
    };
    cfg.connections = connections;
    cfg.count = count;
    cfg.size = size;
    let Some((chan, devs)) = open_cm(prog) else {
        return 1;
    };
    let mut test = Test {
        connects_left: cfg.connections,
        cfg,
        devs: &devs,
        chan,
        nodes: Vec::new(),
        disconnects_left: 0,
    };
    let ret = if test.cfg.dst.is_some() {
        test.run_client()
    } else {
        test.run_server()
    };
    println!("test complete");
    drop(test);
    println!("return status {ret}");
    ret
}

impl<'c> Test<'c> {
    fn node_of(&self, handle: u32) -> Option<usize> {
        self.nodes.iter().position(|n| n.id.handle() == handle)
    }

    fn connect_error(&mut self) {
        self.connects_left = self.connects_left.saturating_sub(1);
    }

    /// The client's `addr_handler`.
    fn addr_handler(&mut self, i: usize) -> i32 {
        if let Some(tos) = self.cfg.tos {
            if let Err(e) = self.nodes[i].id.set_tos(tos) {
                eprintln!("cmatose: set TOS option failed: {e}");
            }
        }
        if let Some(t) = self.cfg.ack_timeout {
            if let Err(e) = self.nodes[i].id.set_ack_timeout(t) {
                eprintln!("cmatose: set ack timeout option failed: {e}");
            }
        }
        if let Err(e) = self.nodes[i].id.resolve_route(RESOLVE_TIMEOUT) {
            eprintln!("cmatose: resolve route failed: {e}");
            self.connect_error();
            return io_status(&e);
        }
        0
    }

    /// `init_node` + `post_recvs` for node `i`.
    fn init_node(&mut self, i: usize) -> std::io::Result<()> {
        let devs = self.devs;
        let cqe = self.cfg.count.max(1);
        let node = &mut self.nodes[i];
        let (ctx, port) = devs.for_id(&node.id)?;
        let res = Res::new(
            &node.id,
            ctx,
            port,
            cqe as i32,
            true,
            cqe as u32,
            if self.cfg.count > 0 { self.cfg.size } else { 0 },
        )?;
        post_recvs(&node.id, &res, self.cfg.size, self.cfg.count)?;
        node.res = Some(res);
        Ok(())
    }

    /// The client's `route_handler`.
    fn route_handler(&mut self, i: usize) -> i32 {
        if let Err(e) = self.init_node(i) {
            eprintln!("cmatose: failure connecting: {e}");
            self.connect_error();
            return io_status(&e);
        }
        let params = ConnParams {
            private_data: Vec::new(),
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 5,
            rnr_retry_count: 0,
            flow_control: false,
        };
        if let Err(e) = self.nodes[i].id.connect(&params) {
            eprintln!("cmatose: failure connecting: {e}");
            self.connect_error();
            return io_status(&e);
        }
        0
    }

    /// The server's `connect_handler`.
    fn connect_handler(&mut self, id: CmId, peer: &uverbs::cm::PeerParam) -> i32 {
        if self.nodes.len() == self.cfg.connections {
            println!("cmatose: failing connection request");
            let _ = id.reject(&[]);
            return -libc::ENOMEM;
        }
        self.nodes.push(Node {
            id,
            res: None,
            connected: false,
        });
        let i = self.nodes.len() - 1;
        let accepted = self.init_node(i).and_then(|()| {
            let node = &self.nodes[i];
            let dev = node
                .res
                .as_ref()
                .map(|r| r.ctx.query_device())
                .transpose()?;
            // `rdma_accept(id, NULL)`: what the request asked, within the device's limits.
            let (max_resp, max_init) = dev
                .map(|d| (d.max_qp_rd_atom(), d.max_qp_init_rd_atom()))
                .unwrap_or((1, 1));
            let params = ConnParams {
                responder_resources: u32::from(peer.responder_resources).min(max_resp) as u8,
                initiator_depth: u32::from(peer.initiator_depth).min(max_init) as u8,
                ..ConnParams::default()
            };
            node.id.accept(&params)
        });
        match accepted {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("cmatose: failure accepting: {e}");
                self.connect_error();
                println!("cmatose: failing connection request");
                let node = self.nodes.pop().expect("just pushed");
                let _ = node.id.reject(&[]);
                io_status(&e)
            }
        }
    }

    fn cma_handler(&mut self, ev: uverbs::cm::Event) -> i32 {
        let name = event_str(&ev);
        let status = event_status(&ev.kind);
        match ev.kind {
            EventKind::ConnectRequest { id, peer } => self.connect_handler(id, &peer),
            kind => {
                let Some(i) = self.node_of(ev.id) else {
                    return 0;
                };
                match kind {
                    EventKind::AddrResolved => self.addr_handler(i),
                    EventKind::RouteResolved => self.route_handler(i),
                    EventKind::Established { .. } => {
                        self.nodes[i].connected = true;
                        self.connect_error();
                        self.disconnects_left += 1;
                        0
                    }
                    EventKind::AddrError { .. }
                    | EventKind::RouteError { .. }
                    | EventKind::ConnectError { .. }
                    | EventKind::Unreachable { .. }
                    | EventKind::Rejected { .. } => {
                        println!("cmatose: event: {name}, error: {status}");
                        self.connect_error();
                        status
                    }
                    EventKind::Disconnected => {
                        let _ = self.nodes[i].id.disconnect();
                        self.disconnects_left = self.disconnects_left.saturating_sub(1);
                        0
                    }
                    _ => 0,
                }
            }
        }
    }

    /// Handles events until `left` (connects or disconnects) reaches 0, an event fails, or the
    /// phase's time is up.
    fn events(&mut self, disconnects: bool, what: &str) -> i32 {
        let deadline = Instant::now() + self.cfg.timeout;
        let mut ret = 0;
        while ret == 0 {
            let left = if disconnects {
                self.disconnects_left
            } else {
                self.connects_left
            };
            if left == 0 {
                break;
            }
            match wait_event(
                "cmatose",
                what,
                &self.chan,
                deadline,
                self.cfg.timeout,
                left,
            ) {
                Ok(ev) => ret = self.cma_handler(ev),
                Err(status) => return status,
            }
        }
        ret
    }

    fn post_sends(&self, node: &Node<'_>) -> std::io::Result<()> {
        let (Some(res), true) = (&node.res, node.connected) else {
            return Ok(());
        };
        let Some(mem) = &res.mem else { return Ok(()) };
        let qp = qp_of(&node.id)?;
        let sge = [mem.sge(..self.cfg.size)?];
        for _ in 0..self.cfg.count {
            // SAFETY: the buffer lives in the node, which outlives the queue pair's use of it, and
            // the host never writes it (the payload is never looked at, as in the C tool).
            unsafe { qp.post_send_list(&[SendRequest::send(0, &sge)]) }
                .map_err(std::io::Error::from)?;
        }
        Ok(())
    }

    fn send_all(&self) -> i32 {
        for node in &self.nodes {
            if let Err(e) = self.post_sends(node) {
                println!("failed to post sends: {e}");
                return io_status(&e);
            }
        }
        0
    }

    /// `poll_cqs`: `count` completions on each connected node's send or receive queue.
    fn poll_cqs(&self, recv: bool) -> i32 {
        let deadline = Instant::now() + self.cfg.timeout;
        for node in &self.nodes {
            let (Some(res), true) = (&node.res, node.connected) else {
                continue;
            };
            let cq = if recv { res.rcq() } else { &res.cq };
            if let Err(e) = poll_n(cq, self.cfg.count, deadline, |_| Ok(())) {
                println!("cmatose: {e}");
                return if e.starts_with("timed out") {
                    ETIMEDOUT
                } else {
                    -libc::EIO
                };
            }
        }
        0
    }

    fn migrate_channel(&mut self, listen: Option<CmId>) -> Result<Option<CmId>, i32> {
        println!("migrating to new event channel");
        let chan = EventChannel::new().map_err(|e| {
            eprintln!("cmatose: failed to create event channel: {e}");
            -1
        })?;
        let fail = |e: std::io::Error| {
            eprintln!("cmatose: failure migrating to channel: {e}");
            io_status(&e)
        };
        let listen = match listen {
            Some(l) => Some(l.migrate(&chan).map_err(fail)?),
            None => None,
        };
        for mut node in std::mem::take(&mut self.nodes) {
            node.id = node.id.migrate(&chan).map_err(fail)?;
            self.nodes.push(node);
        }
        self.chan = chan;
        Ok(listen)
    }

    fn run_server(&mut self) -> i32 {
        println!("cmatose: starting server");
        let listen = match self.chan.create_id(PortSpace::Tcp) {
            Ok(id) => id,
            Err(e) => {
                eprintln!("cmatose: listen request failed: {e}");
                return io_status(&e);
            }
        };
        let addr = match passive_addr(self.cfg.src.as_deref(), self.cfg.port) {
            Ok(a) => a,
            Err(e) => {
                println!("cmatose: getrdmaaddr error: {e}");
                return -libc::EINVAL;
            }
        };
        if let Err(e) = listen.bind(addr) {
            eprintln!("cmatose: bind address failed: {e}");
            return io_status(&e);
        }
        if let Err(e) = listen.listen(0) {
            eprintln!("cmatose: failure trying to listen: {e}");
            return io_status(&e);
        }
        let ret = self.events(false, "connect events");
        if ret != 0 {
            return ret;
        }
        if self.cfg.count > 0 {
            println!("initiating data transfers");
            let ret = self.send_all();
            if ret != 0 {
                return ret;
            }
            println!("completing sends");
            let ret = self.poll_cqs(false);
            if ret != 0 {
                return ret;
            }
            println!("receiving data transfers");
            let ret = self.poll_cqs(true);
            if ret != 0 {
                return ret;
            }
            println!("data transfers complete");
        }
        let mut listen = Some(listen);
        if self.cfg.migrate {
            match self.migrate_channel(listen.take()) {
                Ok(l) => listen = l,
                Err(ret) => return ret,
            }
        }
        println!("cmatose: disconnecting");
        for node in &mut self.nodes {
            if !node.connected {
                continue;
            }
            node.connected = false;
            let _ = node.id.disconnect();
        }
        let ret = self.events(true, "disconnect events");
        println!("disconnected");
        drop(listen);
        ret
    }

    fn run_client(&mut self) -> i32 {
        println!("cmatose: starting client");
        let dst_host = self.cfg.dst.clone().unwrap_or_default();
        let (dst, src) =
            match client_addrs("cmatose", &dst_host, self.cfg.port, self.cfg.src.as_deref()) {
                Ok(a) => a,
                Err(status) => return status,
            };
        for _ in 0..self.cfg.connections {
            match self.chan.create_id(PortSpace::Tcp) {
                Ok(id) => self.nodes.push(Node {
                    id,
                    res: None,
                    connected: false,
                }),
                Err(e) => {
                    eprintln!("cmatose: unable to create id: {e}");
                    return io_status(&e);
                }
            }
        }
        println!("cmatose: connecting");
        for i in 0..self.nodes.len() {
            if let Err(e) = self.nodes[i].id.resolve_addr(src, dst, RESOLVE_TIMEOUT) {
                eprintln!("cmatose: failure getting addr: {e}");
                self.connect_error();
                return io_status(&e);
            }
        }
        let mut ret = self.events(false, "connect events");
        if ret == 0 {
            if self.cfg.count > 0 {
                println!("receiving data transfers");
                ret = self.poll_cqs(true);
                if ret == 0 {
                    println!("sending replies");
                    ret = self.send_all();
                }
                if ret == 0 {
                    println!("data transfers complete");
                }
            }
            if ret == 0 && self.cfg.migrate {
                if let Err(r) = self.migrate_channel(None) {
                    return r;
                }
            }
        }
        let ret2 = self.events(true, "disconnect events");
        if ret2 != 0 {
            ret = ret2;
        }
        ret
    }
}
