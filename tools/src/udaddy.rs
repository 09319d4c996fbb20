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

use std::time::Instant;

use uverbs::cm::{CmId, ConnParams, Event, EventKind, PortSpace, RDMA_UDP_QKEY};
use uverbs::ibv_wc;

use crate::args::{strtol, Opt};
use crate::rdmacm::{
    address_format, client_server_usage, event_status, event_str, io_status, poll_error, poll_n,
    port_space_usage, qp_of, reply_av, report, status, udp_port_space, CmaTest, CmaTool,
    CommonOpts, Node, BIND_OPT, CONNECTIONS_OPT, COUNT_OPT, ETIMEDOUT, FORMAT_OPT, GRH_SIZE,
    RDMA_PS_IPOIB, RDMA_PS_UDP, RESOLVE_TIMEOUT, SERVER_OPT, SIZE_OPT, TIMEOUT_OPT, TOS_OPT,
};

const OPTS: &[Opt] = &[
    SERVER_OPT,
    BIND_OPT,
    CONNECTIONS_OPT,
    COUNT_OPT,
    SIZE_OPT,
    TOS_OPT,
    Opt::arg('p', "port-space-number"),
    Opt::arg('P', "port-space"),
    FORMAT_OPT,
    TIMEOUT_OPT,
];

/// The port udaddy always uses.
const PORT: u16 = 7174;

fn usage(prog: &str) {
    client_server_usage(prog, "udp or ipoib", &format!("{}\n", port_space_usage()));
}

struct Test<'c> {
    cma: CmaTest<'c>,
    /// `-s`: the server's address (the client's side).
    dst: Option<String>,
    /// `-t`: a type of service was asked for.
    tos: bool,
}

/// `uverbs udaddy ARGS`; returns the exit status.
pub fn udaddy_main(prog: &str, argv: &[String]) -> i32 {
    let (mut dst, mut tos, mut ps) = (None, false, RDMA_PS_UDP);
    let common = CommonOpts::parse(prog, argv, OPTS, usage, |c, v| {
        match c {
            's' => dst = Some(v),
            't' => tos = true,
            'p' => ps = strtol(&v),
            'P' => {
                let l = v.to_ascii_lowercase();
                if l.starts_with("ipoib") {
                    ps = RDMA_PS_IPOIB;
                } else if !l.starts_with("udp") {
                    eprintln!("Warning: unknown port space format");
                }
            }
            'f' => address_format(prog, &v)?,
            _ => {}
        }
        Ok(())
    });
    let common = match common {
        Ok(c) => c,
        Err(status) => return status,
    };
    if let Err(status) = udp_port_space(prog, ps) {
        return status;
    }
    let Some((setup, devs)) = common.start(prog, "udaddy") else {
        return 1;
    };
    let mut test = Test {
        cma: CmaTest::new(setup, &devs),
        dst,
        tos,
    };
    let ret = if test.dst.is_some() {
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
            EventKind::UdConnectRequest { id, .. } => self.connect_handler(id),
            EventKind::ConnectRequest { id, .. } => self.connect_handler(id),
            kind => {
                let Some(i) = self.cma.node_of(ev.id) else {
                    return 0;
                };
                match kind {
                    EventKind::AddrResolved => {
                        if self.tos {
                            eprintln!("udaddy: set TOS option failed: Operation not supported");
                        }
                        if let Err(e) = self.cma.nodes[i].id.resolve_route(RESOLVE_TIMEOUT) {
                            eprintln!("udaddy: resolve route failed: {e}");
                            self.cma.connect_error();
                            return io_status(&e);
                        }
                        0
                    }
                    EventKind::RouteResolved => self.route_handler(i),
                    EventKind::UdEstablished { peer } => {
                        self.cma.datagram_peer(i, &peer.av, peer.qp_num, peer.qkey)
                    }
                    EventKind::AddrError { .. }
                    | EventKind::RouteError { .. }
                    | EventKind::ConnectError { .. }
                    | EventKind::Unreachable { .. }
                    | EventKind::Rejected { .. } => self.cma.event_error(&name, status),
                    _ => 0,
                }
            }
        }
    }
}

impl<'c> Test<'c> {
    /// `verify_test_params` + `init_node` + `post_recvs` for node `i`.
    fn init_node(&mut self, i: usize) -> Result<(), i32> {
        let res = self.cma.datagram_res(&self.cma.nodes[i].id, true)?;
        self.cma.nodes[i].res = Some(res);
        Ok(())
    }

    fn route_handler(&mut self, i: usize) -> i32 {
        if let Err(ret) = self.init_node(i) {
            self.cma.connect_error();
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
        self.cma.connect(i, &params)
    }

    fn connect_handler(&mut self, id: CmId) -> i32 {
        let i = match self.cma.take_request(id) {
            Ok(i) => i,
            Err(status) => return status,
        };
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
            if let Err(e) = self.cma.nodes[i].id.accept(&params) {
                eprintln!("udaddy: failure accepting: {e}");
                ret = Err(io_status(&e));
            }
        }
        match ret {
            Ok(()) => {
                self.cma.nodes[i].connected = true;
                self.cma.connect_error();
                0
            }
            Err(ret) => {
                self.cma.refuse_request();
                ret
            }
        }
    }

    fn connect_events(&mut self) -> i32 {
        self.events("connect events", |t| t.cma.connects_left)
    }

    fn send_all(&self, signaled: bool) -> Result<(), i32> {
        for node in &self.cma.nodes {
            if let Err(e) = self.cma.post_datagrams(node, |_| signaled) {
                println!("failed to post sends: {e}");
                return Err(io_status(&e));
            }
        }
        Ok(())
    }

    /// `poll_cqs`: `count` completions on each connected node; a node without an address handle
    /// (the server's) gets one back to the sender of its first datagram.
    fn poll_cqs(&mut self) -> Result<(), i32> {
        let deadline = Instant::now() + self.cma.timeout;
        let count = self.cma.count;
        for node in &mut self.cma.nodes {
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
                return Err(poll_error("udaddy", &e));
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
                        return Err(-1);
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
        Ok(())
    }

    /// The server's transfers: the client's datagrams in (the address handles back made from
    /// them), the replies out and their completions.
    fn server_transfers(&mut self) -> Result<(), i32> {
        println!("receiving data transfers");
        self.poll_cqs()?;
        println!("sending replies");
        self.send_all(true)?;
        self.poll_cqs()?;
        println!("data transfers complete");
        Ok(())
    }

    /// The client's transfers: its datagrams out (unsignaled), the replies in.
    fn client_transfers(&mut self) -> Result<(), i32> {
        println!("initiating data transfers");
        self.send_all(false)?;
        println!("receiving data transfers");
        self.poll_cqs()?;
        println!("data transfers complete");
        Ok(())
    }

    fn run_server(&mut self) -> i32 {
        println!("udaddy: starting server");
        let listen = match self.cma.listen(PortSpace::Udp, PORT) {
            Ok(id) => id,
            Err(status) => return status,
        };
        // As in the C tool, a failed connection phase does not stop the transfers on the nodes
        // that did connect; but a phase that timed out ends the test.
        let ret = self.connect_events();
        if ret == ETIMEDOUT {
            return ret;
        }
        if self.cma.count > 0 {
            if let Err(ret) = self.server_transfers() {
                return ret;
            }
        }
        drop(listen);
        0
    }

    fn run_client(&mut self) -> i32 {
        println!("udaddy: starting client");
        let dst = self.dst.clone().unwrap_or_default();
        if let Err(status) = self.cma.start_client(&dst, PORT, PortSpace::Udp) {
            return status;
        }
        let ret = self.connect_events();
        if ret != 0 {
            return ret;
        }
        if self.cma.count > 0 {
            return status(self.client_transfers());
        }
        0
    }
}
