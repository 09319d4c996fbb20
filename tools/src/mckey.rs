//! `uverbs mckey`: rdma-core v44's `mckey` (librdmacm/examples/mckey.c) over `uverbs::cm`,
//! option for option and message for message, so that either side may be the C tool.
//!
//! Multicast in the datagram port space: each of `-c` identifiers resolves the group address `-m`
//! (from `-b`, bound first), creates a UD queue pair, joins the group (the queue pair is attached
//! on the join event) and prints `mckey: joined dgid: ... mlid 0x... sl N`. After three seconds the
//! sender (`-s`) sends `-C` datagrams of `-S` bytes to the group (QPN `0xffffff`, the group's
//! Q_Key, immediate data = its QPN); a receiver waits for `-C` of them (40 bytes of GRH area in
//! front of each). Then every identifier leaves the group. Same progress lines and `return status
//! N` as the C tool.
//!
//! Differences: `-M` (AF_IB group addresses) and port spaces other than UDP (`-p`) are refused (a
//! clear error, exit status 1); `-o` (send-only join) joins as a full member, and `-l` (no
//! multicast loopback) is not applied, each with a warning: neither changes what the peer sees (a
//! sender posts no receives, a receiver sends nothing). The sender's last datagram is signaled and
//! its completion awaited before leaving, so that none is cut off by the teardown. Every wait is
//! bounded by `--timeout`, and a failed transfer is not hidden by a successful leave.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use uverbs::cm::{CmId, EventChannel, EventKind, PortSpace};
use uverbs::SendRequest;

use crate::args::{self, strtol, Item, Opt};
use crate::devinfo::inet_ntop6;
use crate::rdmacm::{
    atoi, counts, event_status, event_str, io_status, lookup, open_cm, parse_timeout, poll_n,
    post_recvs, qp_of, wait_event, Devices, Res, DEFAULT_TIMEOUT, ETIMEDOUT, GRH_SIZE, TIMEOUT_OPT,
};

const OPTS: &[Opt] = &[
    Opt {
        short: 'm',
        long: "mcast",
        arg: true,
    },
    Opt {
        short: 'M',
        long: "unmapped",
        arg: true,
    },
    Opt {
        short: 's',
        long: "sender",
        arg: false,
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
        short: 'p',
        long: "port-space",
        arg: true,
    },
    Opt {
        short: 'o',
        long: "send-only",
        arg: false,
    },
    Opt {
        short: 'l',
        long: "no-loopback",
        arg: false,
    },
    TIMEOUT_OPT,
];

const RDMA_PS_UDP: i64 = 0x111;
const RDMA_PS_IPOIB: i64 = 0x2;
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

fn usage(prog: &str) {
    println!("usage: {prog}");
    println!("\t-m multicast_address");
    println!("\t[-M unmapped_multicast_address]\n\t replaces -m and requires -b");
    println!("\t[-s(ender)]");
    println!("\t[-b bind_address]");
    println!("\t[-c connections]");
    println!("\t[-C message_count]");
    println!("\t[-S message_size]");
    println!(
        "\t[-p port_space - {RDMA_PS_UDP:#x} for UDP (default), {RDMA_PS_IPOIB:#x} for IPOIB]"
    );
    println!("\t[-o join as a send-only full-member]");
    println!("\t[-l join without multicast loopback]");
    println!("\t[--timeout seconds]   (uverbs: bound on each phase, default 60)");
}

struct Cfg {
    dst: Option<String>,
    src: Option<String>,
    sender: bool,
    connections: usize,
    count: usize,
    size: usize,
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
    group: Option<SocketAddr>,
}

/// `uverbs mckey ARGS`; returns the exit status.
pub fn mckey_main(prog: &str, argv: &[String]) -> i32 {
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
        sender: false,
        connections: 1,
        count: 10,
        size: 100,
        timeout: DEFAULT_TIMEOUT,
    };
    let (mut connections, mut count, mut size) = (1i32, 10i32, 100i32);
    let mut ps = RDMA_PS_UDP;
    let mut unmapped = false;
    for item in items {
        let Item::Opt(c, v) = item else { continue };
        let v = v.unwrap_or_default();
        match c {
            'm' => cfg.dst = Some(v),
            'M' => {
                unmapped = true;
                cfg.dst = Some(v);
            }
            's' => cfg.sender = true,
            'b' => cfg.src = Some(v),
            'c' => connections = atoi(&v),
            'C' => count = atoi(&v),
            'S' => size = atoi(&v),
            'p' => ps = strtol(&v),
            'o' => eprintln!(
                "{prog}: warning: -o (send-only join) is not supported; joining as a full member"
            ),
            'l' => eprintln!(
                "{prog}: warning: -l (no multicast loopback) is not supported; loopback stays on"
            ),
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
    if unmapped && cfg.src.is_none() {
        println!("unmapped multicast address requires binding to source address");
        return 1;
    }
    if unmapped {
        eprintln!("{prog}: -M (AF_IB multicast addresses) is not supported");
        return 1;
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
        group: None,
    };
    let ret = test.run();
    println!("test complete");
    drop(test);
    println!("return status {ret}");
    ret
}

impl<'c> Test<'c> {
    fn connect_error(&mut self) {
        self.connects_left = self.connects_left.saturating_sub(1);
    }

    /// `addr_handler`: check the MTU, set the node up, post the receiver's receives, join.
    fn addr_handler(&mut self, i: usize) -> i32 {
        let devs = self.devs;
        let (count, size, sender) = (self.cfg.count, self.cfg.size, self.cfg.sender);
        let group = self.group.expect("resolved before joining");
        let node = &mut self.nodes[i];
        let fail = |e: std::io::Error| {
            eprintln!("mckey: unable to set up the node: {e}");
            io_status(&e)
        };
        let setup = || -> Result<Res<'c>, i32> {
            let (ctx, port) = devs.for_id(&node.id).map_err(fail)?;
            let mtu = ctx
                .query_port(port)
                .map_err(fail)?
                .active_mtu()
                .bytes()
                .unwrap_or(256) as usize;
            if count > 0 && size > mtu {
                println!("mckey: message_size {size} is larger than active mtu {mtu}");
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
            if !sender {
                if let Err(e) = post_recvs(&node.id, &res, size + GRH_SIZE, count) {
                    println!("failed to post receives: {e}");
                    return Err(io_status(&e));
                }
            }
            if let Err(e) = node.id.join_multicast(group) {
                eprintln!("mckey: failure joining: {e}");
                return Err(io_status(&e));
            }
            Ok(res)
        };
        match setup() {
            Ok(res) => {
                node.res = Some(res);
                0
            }
            Err(ret) => {
                self.connect_error();
                ret
            }
        }
    }

    fn cma_handler(&mut self, ev: uverbs::cm::Event) -> i32 {
        let name = event_str(&ev);
        let status = event_status(&ev.kind);
        let Some(i) = self.nodes.iter().position(|n| n.id.handle() == ev.id) else {
            return 0;
        };
        match ev.kind {
            EventKind::AddrResolved => self.addr_handler(i),
            EventKind::MulticastJoin { group } => {
                let dgid = group.av.dgid.map(|g| g.bytes()).unwrap_or([0; 16]);
                println!(
                    "mckey: joined dgid: {} mlid 0x{:x} sl {}",
                    inet_ntop6(&dgid),
                    group.av.dlid,
                    group.av.sl
                );
                let node = &mut self.nodes[i];
                let Some(res) = node.res.as_mut() else {
                    return 0;
                };
                res.remote_qpn = group.qp_num;
                res.remote_qkey = group.qkey;
                match res.pd.create_ah(&group.av) {
                    Ok(ah) => res.ah = Some(ah),
                    Err(e) => {
                        println!("mckey: failure creating address handle");
                        eprintln!("mckey: {e}");
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
            | EventKind::MulticastError { .. } => {
                println!("mckey: event: {name}, error: {status}");
                self.connect_error();
                status
            }
            _ => 0,
        }
    }

    fn connect_events(&mut self) -> i32 {
        let deadline = Instant::now() + self.cfg.timeout;
        let mut ret = 0;
        while self.connects_left > 0 && ret == 0 {
            match wait_event(
                "mckey",
                "joins",
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

    /// The C tool's CM thread: reports multicast errors and address changes that come meanwhile.
    fn report_events(&self) {
        while let Ok(Some(ev)) = self.chan.try_get_event() {
            if matches!(
                ev.kind,
                EventKind::MulticastError { .. } | EventKind::AddrChange
            ) {
                println!(
                    "mckey: event: {}, status: {}",
                    event_str(&ev),
                    event_status(&ev.kind)
                );
            }
        }
    }

    /// Posts the datagrams (unsignaled, the last one signaled) and waits for the last one's
    /// completion.
    fn post_sends(&self, node: &Node<'_>, deadline: Instant) -> Result<(), (String, i32)> {
        let (Some(res), true) = (&node.res, node.connected) else {
            return Ok(());
        };
        let (Some(mem), Some(ah)) = (&res.mem, &res.ah) else {
            return Ok(());
        };
        let io = |e: std::io::Error| (format!("failed to post sends: {e}"), io_status(&e));
        let qp = qp_of(&node.id).map_err(io)?;
        let own = qp.qp_num();
        let sge = [mem.sge(..self.cfg.size).map_err(io)?];
        for n in 0..self.cfg.count {
            let wr =
                SendRequest::send_ud_with_imm(0, &sge, ah, res.remote_qpn, res.remote_qkey, own);
            let wr = if n + 1 == self.cfg.count {
                wr
            } else {
                wr.unsignaled()
            };
            // SAFETY: the buffer and the address handle live in the node, which outlives the queue
            // pair's use of them (the last send's completion is awaited below); the host never
            // writes the buffer.
            unsafe { qp.post_send_list(&[wr]) }.map_err(|e| io(std::io::Error::from(e)))?;
        }
        poll_n(&res.cq, 1, deadline, |_| Ok(())).map_err(|e| {
            let ret = if e.starts_with("timed out") {
                ETIMEDOUT
            } else {
                -libc::EIO
            };
            (format!("mckey: {e}"), ret)
        })
    }

    fn transfer(&self) -> i32 {
        let deadline = Instant::now() + self.cfg.timeout;
        if self.cfg.sender {
            println!("initiating data transfers");
            for node in &self.nodes {
                if let Err((msg, ret)) = self.post_sends(node, deadline) {
                    println!("{msg}");
                    return ret;
                }
            }
        } else {
            println!("receiving data transfers");
            for node in &self.nodes {
                let (Some(res), true) = (&node.res, node.connected) else {
                    continue;
                };
                let polled = poll_n(&res.cq, self.cfg.count, deadline, |_| {
                    self.report_events();
                    Ok(())
                });
                if let Err(e) = polled {
                    println!("mckey: {e}");
                    return if e.starts_with("timed out") {
                        ETIMEDOUT
                    } else {
                        -libc::EIO
                    };
                }
            }
        }
        println!("data transfers complete");
        0
    }

    fn run(&mut self) -> i32 {
        println!(
            "mckey: starting {}",
            if self.cfg.sender { "client" } else { "server" }
        );
        let src = match self.cfg.src.as_deref().map(|s| lookup(s, 0)) {
            None => None,
            Some(Ok(a)) => Some(a),
            Some(Err(e)) => {
                println!("getaddrinfo failed ({e}) - invalid hostname or IP address");
                return -libc::EINVAL;
            }
        };
        let group = match lookup(self.cfg.dst.as_deref().unwrap_or(""), 0) {
            Ok(a) => a,
            Err(e) => {
                println!("getaddrinfo failed ({e}) - invalid hostname or IP address");
                return -libc::EINVAL;
            }
        };
        self.group = Some(group);
        for _ in 0..self.cfg.connections {
            match self.chan.create_id(PortSpace::Udp) {
                Ok(id) => self.nodes.push(Node {
                    id,
                    res: None,
                    connected: false,
                }),
                Err(e) => {
                    eprintln!("mckey: unable to create id: {e}");
                    return io_status(&e);
                }
            }
        }
        println!("mckey: joining");
        for i in 0..self.nodes.len() {
            if let Some(src) = src {
                if let Err(e) = self.nodes[i].id.bind(src) {
                    eprintln!("mckey: addr bind failure: {e}");
                    self.connect_error();
                    return io_status(&e);
                }
            }
            if let Err(e) = self.nodes[i].id.resolve_addr(src, group, RESOLVE_TIMEOUT) {
                eprintln!("mckey: resolve addr failure: {e}");
                self.connect_error();
                return io_status(&e);
            }
        }
        let mut ret = self.connect_events();
        if ret == 0 {
            // "Pause to give SM chance to configure switches."
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until {
                self.report_events();
                std::thread::sleep(Duration::from_millis(50));
            }
            if self.cfg.count > 0 {
                ret = self.transfer();
            }
        }
        for node in &self.nodes {
            if let Err(e) = node.id.leave_multicast(group) {
                eprintln!("mckey: failure leaving: {e}");
                if ret == 0 {
                    ret = io_status(&e);
                }
            }
        }
        ret
    }
}
