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

use std::time::Instant;

use uverbs::cm::{CmId, ConnParams, Event, EventChannel, EventKind, PortSpace};
use uverbs::SendRequest;

use crate::args::Opt;
use crate::rdmacm::{
    address_format, atoi, client_server_usage, event_status, event_str, io_status, poll_error,
    poll_n, post_recvs, qp_of, report, status, CmaTest, CmaTool, CommonOpts, Node, Res, BIND_OPT,
    CONNECTIONS_OPT, COUNT_OPT, FORMAT_OPT, RESOLVE_TIMEOUT, SERVER_OPT, SIZE_OPT, TIMEOUT_OPT,
    TOS_OPT,
};

const OPTS: &[Opt] = &[
    SERVER_OPT,
    BIND_OPT,
    FORMAT_OPT,
    Opt::arg('P', "port-space"),
    CONNECTIONS_OPT,
    COUNT_OPT,
    SIZE_OPT,
    TOS_OPT,
    Opt::arg('p', "port"),
    Opt::flag('m', "migrate"),
    Opt::arg('a', "ack-timeout"),
    TIMEOUT_OPT,
];

fn usage(prog: &str) {
    client_server_usage(
        prog,
        "tcp or ib",
        "\t[-p port_number]\n\t[-m(igrate)]\n\t[-a ack_timeout]\n",
    );
}

/// cmatose's own options.
struct Cfg {
    /// `-s`: the server's address (the client's side).
    dst: Option<String>,
    /// `-p`.
    port: u16,
    /// `-m`: move the identifiers to a new event channel after the transfers.
    migrate: bool,
    /// `-t`.
    tos: Option<u8>,
    /// `-a`.
    ack_timeout: Option<u8>,
}

struct Test<'c> {
    cma: CmaTest<'c>,
    cfg: Cfg,
    disconnects_left: usize,
}

/// `uverbs cmatose ARGS`; returns the exit status.
pub fn cmatose_main(prog: &str, argv: &[String]) -> i32 {
    let mut cfg = Cfg {
        dst: None,
        port: 7471,
        migrate: false,
        tos: None,
        ack_timeout: None,
    };
    let common = CommonOpts::parse(prog, argv, OPTS, usage, |c, v| {
        match c {
            's' => cfg.dst = Some(v),
            'f' => address_format(prog, &v)?,
            'P' => {
                let l = v.to_ascii_lowercase();
                if l.starts_with("ib") {
                    eprintln!("{prog}: -P ib (the IB port space) is not supported");
                    return Err(1);
                } else if !l.starts_with("tcp") {
                    eprintln!("Warning: unknown port space format");
                }
            }
            't' => cfg.tos = Some(atoi(&v) as u8),
            'p' => match v.parse::<u16>() {
                Ok(p) => cfg.port = p,
                Err(_) => {
                    eprintln!("{prog}: invalid port '{v}' (a number from 0 to 65535)");
                    return Err(1);
                }
            },
            'm' => cfg.migrate = true,
            'a' => cfg.ack_timeout = Some(atoi(&v) as u8),
            _ => {}
        }
        Ok(())
    });
    let common = match common {
        Ok(c) => c,
        Err(status) => return status,
    };
    let Some((setup, devs)) = common.start(prog, "cmatose") else {
        return 1;
    };
    let mut test = Test {
        cma: CmaTest::new(setup, &devs),
        cfg,
        disconnects_left: 0,
    };
    let ret = if test.cfg.dst.is_some() {
        test.run_client()
    } else {
        test.run_server()
    };
    report(ret, test)
}

impl<'c> CmaTool<'c> for Test<'c> {
    fn cma(&self) -> &CmaTest<'c> {
        &self.cma
    }

    fn cma_handler(&mut self, ev: Event) -> i32 {
        let name = event_str(&ev);
        let status = event_status(&ev.kind);
        match ev.kind {
            EventKind::ConnectRequest { id, peer } => self.connect_handler(id, &peer),
            kind => {
                let Some(i) = self.cma.node_of(ev.id) else {
                    return 0;
                };
                match kind {
                    EventKind::AddrResolved => self.addr_handler(i),
                    EventKind::RouteResolved => self.route_handler(i),
                    EventKind::Established { .. } => {
                        self.cma.nodes[i].connected = true;
                        self.cma.connect_error();
                        self.disconnects_left += 1;
                        0
                    }
                    EventKind::AddrError { .. }
                    | EventKind::RouteError { .. }
                    | EventKind::ConnectError { .. }
                    | EventKind::Unreachable { .. }
                    | EventKind::Rejected { .. } => self.cma.event_error(&name, status),
                    EventKind::Disconnected => {
                        let _ = self.cma.nodes[i].id.disconnect();
                        self.disconnects_left = self.disconnects_left.saturating_sub(1);
                        0
                    }
                    _ => 0,
                }
            }
        }
    }
}

impl<'c> Test<'c> {
    /// The client's `addr_handler`.
    fn addr_handler(&mut self, i: usize) -> i32 {
        let id = &self.cma.nodes[i].id;
        if let Some(tos) = self.cfg.tos {
            if let Err(e) = id.set_tos(tos) {
                eprintln!("cmatose: set TOS option failed: {e}");
            }
        }
        if let Some(t) = self.cfg.ack_timeout {
            if let Err(e) = id.set_ack_timeout(t) {
                eprintln!("cmatose: set ack timeout option failed: {e}");
            }
        }
        if let Err(e) = id.resolve_route(RESOLVE_TIMEOUT) {
            eprintln!("cmatose: resolve route failed: {e}");
            self.cma.connect_error();
            return io_status(&e);
        }
        0
    }

    /// `init_node` + `post_recvs` for node `i`.
    fn init_node(&mut self, i: usize) -> std::io::Result<()> {
        let cma = &mut self.cma;
        let cqe = cma.count.max(1);
        let node = &mut cma.nodes[i];
        let (ctx, port) = cma.devs.for_id(&node.id)?;
        let res = Res::new(
            &node.id,
            ctx,
            port,
            cqe as i32,
            true,
            cqe as u32,
            if cma.count > 0 { cma.size } else { 0 },
        )?;
        post_recvs(&node.id, &res, cma.size, cma.count)?;
        node.res = Some(res);
        Ok(())
    }

    /// The client's `route_handler`.
    fn route_handler(&mut self, i: usize) -> i32 {
        if let Err(e) = self.init_node(i) {
            eprintln!("cmatose: failure connecting: {e}");
            self.cma.connect_error();
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
        self.cma.connect(i, &params)
    }

    /// The server's `connect_handler`.
    fn connect_handler(&mut self, id: CmId, peer: &uverbs::cm::PeerParam) -> i32 {
        let i = match self.cma.take_request(id) {
            Ok(i) => i,
            Err(status) => return status,
        };
        let accepted = self.init_node(i).and_then(|()| {
            let node = &self.cma.nodes[i];
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
                self.cma.refuse_request();
                io_status(&e)
            }
        }
    }

    /// Handles events until the connects (or, `disconnects`, the disconnects) still to come reach
    /// 0, an event fails, or the phase's time is up.
    fn connection_events(&mut self, disconnects: bool, what: &str) -> i32 {
        if disconnects {
            self.events(what, |t| t.disconnects_left)
        } else {
            self.events(what, |t| t.cma.connects_left)
        }
    }

    fn post_sends(&self, node: &Node<'_>) -> std::io::Result<()> {
        let Some(res) = node.connected_res() else {
            return Ok(());
        };
        let Some(mem) = &res.mem else { return Ok(()) };
        let qp = qp_of(&node.id)?;
        let sge = [mem.sge(..self.cma.size)?];
        for _ in 0..self.cma.count {
            // SAFETY: the buffer lives in the node, which outlives the queue pair's use of it, and
            // the host never writes it (the payload is never looked at, as in the C tool).
            unsafe { qp.post_send_list(&[SendRequest::send(0, &sge)]) }
                .map_err(std::io::Error::from)?;
        }
        Ok(())
    }

    fn send_all(&self) -> Result<(), i32> {
        for node in &self.cma.nodes {
            if let Err(e) = self.post_sends(node) {
                println!("failed to post sends: {e}");
                return Err(io_status(&e));
            }
        }
        Ok(())
    }

    /// `poll_cqs`: `count` completions on each connected node's send or receive queue.
    fn poll_cqs(&self, recv: bool) -> Result<(), i32> {
        let deadline = Instant::now() + self.cma.timeout;
        for node in &self.cma.nodes {
            let Some(res) = node.connected_res() else {
                continue;
            };
            let cq = if recv { res.rcq() } else { &res.cq };
            if let Err(e) = poll_n(cq, self.cma.count, deadline, |_| Ok(())) {
                return Err(poll_error("cmatose", &e));
            }
        }
        Ok(())
    }

    /// The server's transfers: its messages out and their completions, then the client's
    /// replies in.
    fn server_transfers(&self) -> Result<(), i32> {
        println!("initiating data transfers");
        self.send_all()?;
        println!("completing sends");
        self.poll_cqs(false)?;
        println!("receiving data transfers");
        self.poll_cqs(true)?;
        println!("data transfers complete");
        Ok(())
    }

    /// The client's transfers: the server's messages in, then the replies out.
    fn client_transfers(&self) -> Result<(), i32> {
        println!("receiving data transfers");
        self.poll_cqs(true)?;
        println!("sending replies");
        self.send_all()?;
        println!("data transfers complete");
        Ok(())
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
        for mut node in std::mem::take(&mut self.cma.nodes) {
            node.id = node.id.migrate(&chan).map_err(fail)?;
            self.cma.nodes.push(node);
        }
        self.cma.chan = chan;
        Ok(listen)
    }

    fn run_server(&mut self) -> i32 {
        println!("cmatose: starting server");
        let listen = match self.cma.listen(PortSpace::Tcp, self.cfg.port) {
            Ok(id) => id,
            Err(status) => return status,
        };
        let ret = self.connection_events(false, "connect events");
        if ret != 0 {
            return ret;
        }
        if self.cma.count > 0 {
            if let Err(ret) = self.server_transfers() {
                return ret;
            }
        }
        let mut listen = Some(listen);
        if self.cfg.migrate {
            match self.migrate_channel(listen.take()) {
                Ok(l) => listen = l,
                Err(ret) => return ret,
            }
        }
        println!("cmatose: disconnecting");
        for node in &mut self.cma.nodes {
            if !node.connected {
                continue;
            }
            node.connected = false;
            let _ = node.id.disconnect();
        }
        let ret = self.connection_events(true, "disconnect events");
        println!("disconnected");
        drop(listen);
        ret
    }

    fn run_client(&mut self) -> i32 {
        println!("cmatose: starting client");
        let dst = self.cfg.dst.clone().unwrap_or_default();
        if let Err(status) = self.cma.start_client(&dst, self.cfg.port, PortSpace::Tcp) {
            return status;
        }
        let mut ret = self.connection_events(false, "connect events");
        if ret == 0 {
            if self.cma.count > 0 {
                ret = status(self.client_transfers());
            }
            if ret == 0 && self.cfg.migrate {
                if let Err(r) = self.migrate_channel(None) {
                    return r;
                }
            }
        }
        let ret2 = self.connection_events(true, "disconnect events");
        if ret2 != 0 {
            ret = ret2;
        }
        ret
    }
}
