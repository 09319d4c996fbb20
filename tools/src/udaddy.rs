//! `uverbs udaddy`: rdma-core v44's `udaddy` (librdmacm/examples/udaddy.c) over `uverbs::cm`,
//! option for option and message for message, so that either side may be the C tool.
//!
//! Unreliable datagrams in the datagram port space (UDP, Q_Key `0x01234567`), on the fixed port
//! 7174 (`-p` is the port space, as in the C tool). The client (`-s`) resolves the server's queue
//! pair with a SIDR request per `-c` identifier, learns its QPN and Q_Key from the answer, and
//! sends `-C` messages of `-S` bytes with the immediate data set to its own QPN. The server accepts
//! each request, receives the messages (40 bytes of GRH area in front of each), builds its address
//! handle back to the client from the first one's GRH and immediate data (as
//! `ibv_create_ah_from_wc` does), and replies with as many. Same progress lines and `return status
//! N` as the C tool.
//!
//! Not supported: `-P ipoib` / `-p 0x2` (the IPoIB port space) and `-f gid` (a clear error, exit
//! status 1); `-t` warns as a failing `rdma_set_option` does. Every wait is bounded by `--timeout`.

use std::time::{Duration, Instant};

use uverbs::cm::{CmId, ConnParams, EventChannel, EventKind, PortSpace, RDMA_UDP_QKEY};
use uverbs::{ibv_wc, SendRequest};

use crate::args::{self, strtol, Item, Opt};
use crate::rdmacm::{
    atoi, client_addrs, counts, event_status, event_str, io_status, open_cm, parse_timeout,
    passive_addr, poll_n, post_recvs, qp_of, reply_av, wait_event, Devices, Res, DEFAULT_TIMEOUT,
    ETIMEDOUT, GRH_SIZE, TIMEOUT_OPT,
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
        long: "port-space-number",
        arg: true,
    },
    Opt {
        short: 'P',
        long: "port-space",
        arg: true,
    },
    Opt {
        short: 'f',
        long: "format",
        arg: true,
    },
    TIMEOUT_OPT,
];

/// The port udaddy always uses.
const PORT: u16 = 7174;
const RDMA_PS_UDP: i64 = 0x111;
const RDMA_PS_IPOIB: i64 = 0x2;
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

fn usage(prog: &str) {
    println!("usage: {prog}");
    println!("\t[-s server_address]");
    println!("\t[-b bind_address]");
    println!("\t[-f address_format]");
    println!("\t    name, ip, ipv6, or gid");
    println!("\t[-P port_space]");
    println!("\t    udp or ipoib");
    println!("\t[-c connections]");
    println!("\t[-C message_count]");
    println!("\t[-S message_size]");
    println!("\t[-t type_of_service]");
    println!(
        "\t[-p port_space - {RDMA_PS_UDP:#x} for UDP (default), {RDMA_PS_IPOIB:#x} for IPOIB]"
    );
    println!("\t[--timeout seconds]   (uverbs: bound on each phase, default 60)");
}

struct Cfg {
    dst: Option<String>,
    src: Option<String>,
    connections: usize,
    count: usize,
    size: usize,
    tos: bool,
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
}

/// `uverbs udaddy ARGS`; returns the exit status.
pub fn udaddy_main(prog: &str, argv: &[String]) -> i32 {
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
        tos: false,
        timeout: DEFAULT_TIMEOUT,
    };
    let (mut connections, mut count, mut size) = (1i32, 10i32, 100i32);
    let mut ps = RDMA_PS_UDP;
    for item in items {
        let Item::Opt(c, v) = item else { continue };
        let v = v.unwrap_or_default();
        match c {
            's' => cfg.dst = Some(v),
            'b' => cfg.src = Some(v),
            'c' => connections = atoi(&v),
            'C' => count = atoi(&v),
            'S' => size = atoi(&v),
            't' => cfg.tos = true,
            'p' => ps = strtol(&v),
            'P' => {
                let l = v.to_ascii_lowercase();
                if l.starts_with("ipoib") {
                    ps = RDMA_PS_IPOIB;
                } else if !l.starts_with("udp") {
                    eprintln!("Warning: unknown port space format");
                }
            }
            'f' => {
                let l = v.to_ascii_lowercase();
                if l.starts_with("gid") {
                    eprintln!("{prog}: -f gid (AF_IB addresses) is not supported");
                    return 1;
                } else if !l.starts_with("ip") && !l.starts_with("name") {
                    eprintln!("Warning: unknown address format");
                }
            }
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
    if ps != RDMA_PS_UDP {
        eprintln!("{prog}: port space {ps:#x} is not supported (only UDP, {RDMA_PS_UDP:#x})");
        return 1;
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

    /// `verify_test_params` + `init_node` + `post_recvs` for node `i`.
    fn init_node(&mut self, i: usize) -> Result<(), i32> {
        let devs = self.devs;
        let (count, size) = (self.cfg.count, self.cfg.size);
        let node = &mut self.nodes[i];
        let fail = |e: std::io::Error| {
            eprintln!("udaddy: unable to set up the node: {e}");
            io_status(&e)
        };
        let (ctx, port) = devs.for_id(&node.id).map_err(fail)?;
        let mtu = ctx
            .query_port(port)
            .map_err(fail)?
            .active_mtu()
            .bytes()
            .unwrap_or(256) as usize;
        if count > 0 && size > mtu {
            println!("udaddy: message_size {size} is larger than active mtu {mtu}");
            return Err(-libc::EINVAL);
        }
        let cqe = if count > 0 { 2 * count } else { 2 };
        let mem = if count > 0 { size + GRH_SIZE } else { 0 };
        let res = Res::new(
            &node.id,
            ctx,
            port,
            cqe as i32,
            false,
            count.max(1) as u32,
            mem,
        )
        .map_err(fail)?;
        if let Err(e) = post_recvs(&node.id, &res, size + GRH_SIZE, count) {
            println!("failed to post receives: {e}");
            return Err(io_status(&e));
        }
        node.res = Some(res);
        Ok(())
    }

    fn route_handler(&mut self, i: usize) -> i32 {
        if let Err(ret) = self.init_node(i) {
            self.connect_error();
            return ret;
        }
        let params = ConnParams {
            private_data: Vec::new(),
            responder_resources: 0,
            initiator_depth: 0,
            retry_count: 0,
            rnr_retry_count: 0,
            flow_control: false,
        };
        if let Err(e) = self.nodes[i].id.connect(&params) {
            eprintln!("udaddy: failure connecting: {e}");
            self.connect_error();
            return io_status(&e);
        }
        0
    }

    fn connect_handler(&mut self, id: CmId) -> i32 {
        if self.nodes.len() == self.cfg.connections {
            println!("udaddy: failing connection request");
            let _ = id.reject(&[]);
            return -libc::ENOMEM;
        }
        self.nodes.push(Node {
            id,
            res: None,
            connected: false,
        });
        let i = self.nodes.len() - 1;
        let mut ret = self.init_node(i);
        if ret.is_ok() {
            // The queue pair number goes with the answer (the identifier's own).
            let params = ConnParams {
                responder_resources: 0,
                initiator_depth: 0,
                retry_count: 0,
                rnr_retry_count: 0,
                ..ConnParams::default()
            };
            if let Err(e) = self.nodes[i].id.accept(&params) {
                eprintln!("udaddy: failure accepting: {e}");
                ret = Err(io_status(&e));
            }
        }
        match ret {
            Ok(()) => {
                self.nodes[i].connected = true;
                self.connect_error();
                0
            }
            Err(ret) => {
                self.connect_error();
                println!("udaddy: failing connection request");
                let node = self.nodes.pop().expect("just pushed");
                let _ = node.id.reject(&[]);
                ret
            }
        }
    }

    fn cma_handler(&mut self, ev: uverbs::cm::Event) -> i32 {
        let name = event_str(&ev);
        let status = event_status(&ev.kind);
        match ev.kind {
            EventKind::UdConnectRequest { id, .. } => self.connect_handler(id),
            EventKind::ConnectRequest { id, .. } => self.connect_handler(id),
            kind => {
                let Some(i) = self.node_of(ev.id) else {
                    return 0;
                };
                match kind {
                    EventKind::AddrResolved => {
                        if self.cfg.tos {
                            eprintln!("udaddy: set TOS option failed: Operation not supported");
                        }
                        if let Err(e) = self.nodes[i].id.resolve_route(RESOLVE_TIMEOUT) {
                            eprintln!("udaddy: resolve route failed: {e}");
                            self.connect_error();
                            return io_status(&e);
                        }
                        0
                    }
                    EventKind::RouteResolved => self.route_handler(i),
                    EventKind::UdEstablished { peer } => {
                        let node = &mut self.nodes[i];
                        let Some(res) = node.res.as_mut() else {
                            return 0;
                        };
                        res.remote_qpn = peer.qp_num;
                        res.remote_qkey = peer.qkey;
                        match res.pd.create_ah(&peer.av) {
                            Ok(ah) => res.ah = Some(ah),
                            Err(e) => {
                                println!("udaddy: failure creating address handle");
                                eprintln!("udaddy: {e}");
                                self.connect_error();
                                return -1;
                            }
                        }
                        node.connected = true;
                        self.connect_error();
                        0
                    }
                    EventKind::AddrError { .. }
                    | EventKind::RouteError { .. }
                    | EventKind::ConnectError { .. }
                    | EventKind::Unreachable { .. }
                    | EventKind::Rejected { .. } => {
                        println!("udaddy: event: {name}, error: {status}");
                        self.connect_error();
                        status
                    }
                    _ => 0,
                }
            }
        }
    }

    fn connect_events(&mut self) -> i32 {
        let deadline = Instant::now() + self.cfg.timeout;
        let mut ret = 0;
        while self.connects_left > 0 && ret == 0 {
            match wait_event(
                "udaddy",
                "connect events",
                &self.chan,
                deadline,
                self.cfg.timeout,
                self.connects_left,
            ) {
                Ok(ev) => ret = self.cma_handler(ev),
                Err(status) => return status,
            }
        }
        ret
    }

    fn post_sends(&self, node: &Node<'_>, signaled: bool) -> std::io::Result<()> {
        let (Some(res), true) = (&node.res, node.connected) else {
            return Ok(());
        };
        let (Some(mem), Some(ah)) = (&res.mem, &res.ah) else {
            return Ok(());
        };
        let qp = qp_of(&node.id)?;
        let own = qp.qp_num();
        let sge = [mem.sge(..self.cfg.size)?];
        for _ in 0..self.cfg.count {
            let wr =
                SendRequest::send_ud_with_imm(0, &sge, ah, res.remote_qpn, res.remote_qkey, own);
            let wr = if signaled { wr } else { wr.unsignaled() };
            // SAFETY: the buffer and the address handle live in the node, which outlives the
            // queue pair's use of them; the host never writes the buffer.
            unsafe { qp.post_send_list(&[wr]) }.map_err(std::io::Error::from)?;
        }
        Ok(())
    }

    fn send_all(&self, signaled: bool) -> i32 {
        for node in &self.nodes {
            if let Err(e) = self.post_sends(node, signaled) {
                println!("failed to post sends: {e}");
                return io_status(&e);
            }
        }
        0
    }

    /// `poll_cqs`: `count` completions on each connected node; a node without an address handle
    /// (the server's) gets one back to the sender of its first datagram.
    fn poll_cqs(&mut self) -> i32 {
        let deadline = Instant::now() + self.cfg.timeout;
        let count = self.cfg.count;
        for node in &mut self.nodes {
            let Node {
                id,
                res: Some(res),
                connected: true,
            } = node
            else {
                continue;
            };
            let mut first: Option<ibv_wc> = None;
            if let Err(e) = poll_n(&res.cq, count, deadline, |wc| {
                first.get_or_insert(*wc);
                Ok(())
            }) {
                println!("udaddy: {e}");
                return if e.starts_with("timed out") {
                    ETIMEDOUT
                } else {
                    -libc::EIO
                };
            }
            if let (None, Some(wc)) = (&res.ah, first) {
                // Every receive has completed: the buffer's GRH area is the device's no more.
                let grh: Vec<u8> = res
                    .mem
                    .as_ref()
                    .map(|m| m[..GRH_SIZE].to_vec())
                    .unwrap_or_default();
                let made = reply_av(res, id, &wc, &grh)
                    .and_then(|av| res.pd.create_ah(&av).map_err(|e| e.to_string()));
                let ah = match made {
                    Ok(ah) => ah,
                    Err(e) => {
                        println!("udaddy: failed to create reply AH");
                        eprintln!("udaddy: {e}");
                        return -1;
                    }
                };
                res.ah = Some(ah);
                res.remote_qpn = wc.imm_data().map(u32::from_be).unwrap_or(wc.src_qp);
                res.remote_qkey = qp_of(id)
                    .and_then(|qp| qp.query())
                    .ok()
                    .and_then(|a| a.qkey)
                    .unwrap_or(RDMA_UDP_QKEY);
            }
        }
        0
    }

    fn run_server(&mut self) -> i32 {
        println!("udaddy: starting server");
        let listen = match self.chan.create_id(PortSpace::Udp) {
            Ok(id) => id,
            Err(e) => {
                eprintln!("udaddy: listen request failed: {e}");
                return io_status(&e);
            }
        };
        let addr = match passive_addr(self.cfg.src.as_deref(), PORT) {
            Ok(a) => a,
            Err(e) => {
                println!("udaddy: getrdmaaddr error: {e}");
                return -libc::EINVAL;
            }
        };
        if let Err(e) = listen.bind(addr) {
            eprintln!("udaddy: bind address failed: {e}");
            return io_status(&e);
        }
        if let Err(e) = listen.listen(0) {
            eprintln!("udaddy: failure trying to listen: {e}");
            return io_status(&e);
        }
        // As in the C tool, a failed connection phase does not stop the transfers on the nodes
        // that did connect; but a phase that timed out ends the test.
        let ret = self.connect_events();
        if ret == ETIMEDOUT {
            return ret;
        }
        if self.cfg.count > 0 {
            println!("receiving data transfers");
            let ret = self.poll_cqs();
            if ret != 0 {
                return ret;
            }
            println!("sending replies");
            let ret = self.send_all(true);
            if ret != 0 {
                return ret;
            }
            let ret = self.poll_cqs();
            if ret != 0 {
                return ret;
            }
            println!("data transfers complete");
        }
        drop(listen);
        0
    }

    fn run_client(&mut self) -> i32 {
        println!("udaddy: starting client");
        let dst_host = self.cfg.dst.clone().unwrap_or_default();
        let (dst, src) = match client_addrs("udaddy", &dst_host, PORT, self.cfg.src.as_deref()) {
            Ok(a) => a,
            Err(status) => return status,
        };
        for _ in 0..self.cfg.connections {
            match self.chan.create_id(PortSpace::Udp) {
                Ok(id) => self.nodes.push(Node {
                    id,
                    res: None,
                    connected: false,
                }),
                Err(e) => {
                    eprintln!("udaddy: unable to create id: {e}");
                    return io_status(&e);
                }
            }
        }
        println!("udaddy: connecting");
        for i in 0..self.nodes.len() {
            if let Err(e) = self.nodes[i].id.resolve_addr(src, dst, RESOLVE_TIMEOUT) {
                eprintln!("udaddy: failure getting addr: {e}");
                self.connect_error();
                return io_status(&e);
            }
        }
        let ret = self.connect_events();
        if ret != 0 {
            return ret;
        }
        if self.cfg.count > 0 {
            println!("initiating data transfers");
            let ret = self.send_all(false);
            if ret != 0 {
                return ret;
            }
            println!("receiving data transfers");
            let ret = self.poll_cqs();
            if ret != 0 {
                return ret;
            }
            println!("data transfers complete");
        }
        0
    }
}
