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

use uverbs::cm::{Event, EventKind, PortSpace};

use crate::args::{strtol, Opt};
use crate::devinfo::inet_ntop6;
use crate::rdmacm::{
    event_status, event_str, io_status, lookup, poll_error, poll_n, poll_status, port_space_usage,
    report, udp_port_space, CmaTest, CmaTool, CommonOpts, Res, BIND_OPT, CONNECTIONS_OPT,
    COUNT_OPT, RDMA_PS_UDP, RESOLVE_TIMEOUT, SIZE_OPT, TIMEOUT_OPT, TIMEOUT_USAGE,
};

const OPTS: &[Opt] = &[
    Opt::arg('m', "mcast"),
    Opt::arg('M', "unmapped"),
    Opt::flag('s', "sender"),
    BIND_OPT,
    CONNECTIONS_OPT,
    COUNT_OPT,
    SIZE_OPT,
    Opt::arg('p', "port-space"),
    Opt::flag('o', "send-only"),
    Opt::flag('l', "no-loopback"),
    TIMEOUT_OPT,
];

fn usage(prog: &str) {
    let port_space = port_space_usage();
    print!(
        "usage: {prog}\n\
         \t-m multicast_address\n\
         \t[-M unmapped_multicast_address]\n\t replaces -m and requires -b\n\
         \t[-s(ender)]\n\
         \t[-b bind_address]\n\
         \t[-c connections]\n\
         \t[-C message_count]\n\
         \t[-S message_size]\n\
         {port_space}\n\
         \t[-o join as a send-only full-member]\n\
         \t[-l join without multicast loopback]\n\
         {TIMEOUT_USAGE}\n"
    );
}

struct Test<'c> {
    cma: CmaTest<'c>,
    /// `-m`: the group's address.
    dst: Option<String>,
    /// `-s`: this side sends.
    sender: bool,
    /// The group's address, resolved.
    group: Option<SocketAddr>,
}

/// `uverbs mckey ARGS`; returns the exit status.
pub fn mckey_main(prog: &str, argv: &[String]) -> i32 {
    let (mut dst, mut sender, mut ps, mut unmapped) = (None, false, RDMA_PS_UDP, false);
    let common = CommonOpts::parse(prog, argv, OPTS, usage, |c, v| {
        match c {
            'm' => dst = Some(v),
            'M' => {
                unmapped = true;
                dst = Some(v);
            }
            's' => sender = true,
            'p' => ps = strtol(&v),
            'o' => eprintln!(
                "{prog}: warning: -o (send-only join) is not supported; joining as a full member"
            ),
            'l' => eprintln!(
                "{prog}: warning: -l (no multicast loopback) is not supported; loopback stays on"
            ),
            _ => {}
        }
        Ok(())
    });
    let common = match common {
        Ok(c) => c,
        Err(status) => return status,
    };
    if unmapped && !common.has_src() {
        println!("unmapped multicast address requires binding to source address");
        return 1;
    }
    if unmapped {
        eprintln!("{prog}: -M (AF_IB multicast addresses) is not supported");
        return 1;
    }
    if let Err(status) = udp_port_space(prog, ps) {
        return status;
    }
    let Some((setup, devs)) = common.start(prog, "mckey") else {
        return 1;
    };
    let mut test = Test {
        cma: CmaTest::new(setup, &devs),
        dst,
        sender,
        group: None,
    };
    let ret = test.run();
    report(ret, test)
}

impl<'c> CmaTool<'c> for Test<'c> {
    fn cma(&self) -> &CmaTest<'c> {
        &self.cma
    }

    fn cma_handler(&mut self, ev: Event) -> i32 {
        let name = event_str(&ev);
        let status = event_status(&ev.kind);
        let Some(i) = self.cma.node_of(ev.id) else {
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
                self.cma
                    .datagram_peer(i, &group.av, group.qp_num, group.qkey)
            }
            EventKind::AddrError { .. }
            | EventKind::RouteError { .. }
            | EventKind::MulticastError { .. } => self.cma.event_error(&name, status),
            _ => 0,
        }
    }
}

impl<'c> Test<'c> {
    /// `addr_handler`: check the MTU, set the node up, post the receiver's receives, join.
    fn addr_handler(&mut self, i: usize) -> i32 {
        let group = self.group.expect("resolved before joining");
        let setup = || -> Result<Res<'c>, i32> {
            let node = &self.cma.nodes[i];
            let res = self.cma.datagram_res(&node.id, !self.sender)?;
            if let Err(e) = node.id.join_multicast(group) {
                eprintln!("mckey: failure joining: {e}");
                return Err(io_status(&e));
            }
            Ok(res)
        };
        match setup() {
            Ok(res) => {
                self.cma.nodes[i].res = Some(res);
                0
            }
            Err(ret) => {
                self.cma.connect_error();
                ret
            }
        }
    }

    fn connect_events(&mut self) -> i32 {
        self.events("joins", |t| t.cma.connects_left)
    }

    /// The C tool's CM thread: reports multicast errors and address changes that come meanwhile.
    fn report_events(&self) {
        while let Ok(Some(ev)) = self.cma.chan.try_get_event() {
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

    fn transfer(&self) -> i32 {
        let deadline = Instant::now() + self.cma.timeout;
        let count = self.cma.count;
        if self.sender {
            println!("initiating data transfers");
            for node in &self.cma.nodes {
                // The datagrams go unsignaled but the last, whose completion is awaited, so that
                // none is cut off by the teardown.
                let res = match self.cma.post_datagrams(node, |n| n + 1 == count) {
                    Ok(Some(res)) => res,
                    Ok(None) => continue,
                    Err(e) => {
                        println!("failed to post sends: {e}");
                        return io_status(&e);
                    }
                };
                if let Err(e) = poll_n(&res.cq, 1, deadline, |_| Ok(())) {
                    println!("mckey: {e}");
                    return poll_status(&e);
                }
            }
        } else {
            println!("receiving data transfers");
            for node in &self.cma.nodes {
                let Some(res) = node.connected_res() else {
                    continue;
                };
                let polled = poll_n(&res.cq, count, deadline, |_| {
                    self.report_events();
                    Ok(())
                });
                if let Err(e) = polled {
                    return poll_error("mckey", &e);
                }
            }
        }
        println!("data transfers complete");
        0
    }

    fn run(&mut self) -> i32 {
        println!(
            "mckey: starting {}",
            if self.sender { "client" } else { "server" }
        );
        let src = match self.cma.src.as_deref().map(|s| lookup(s, 0)) {
            None => None,
            Some(Ok(a)) => Some(a),
            Some(Err(e)) => {
                println!("getaddrinfo failed ({e}) - invalid hostname or IP address");
                return -libc::EINVAL;
            }
        };
        let group = match lookup(self.dst.as_deref().unwrap_or(""), 0) {
            Ok(a) => a,
            Err(e) => {
                println!("getaddrinfo failed ({e}) - invalid hostname or IP address");
                return -libc::EINVAL;
            }
        };
        self.group = Some(group);
        if let Err(status) = self.cma.create_ids(PortSpace::Udp) {
            return status;
        }
        println!("mckey: joining");
        for i in 0..self.cma.nodes.len() {
            if let Some(src) = src {
                if let Err(e) = self.cma.nodes[i].id.bind(src) {
                    eprintln!("mckey: addr bind failure: {e}");
                    self.cma.connect_error();
                    return io_status(&e);
                }
            }
            if let Err(e) = self.cma.nodes[i]
                .id
                .resolve_addr(src, group, RESOLVE_TIMEOUT)
            {
                eprintln!("mckey: resolve addr failure: {e}");
                self.cma.connect_error();
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
            if self.cma.count > 0 {
                ret = self.transfer();
            }
        }
        for node in &self.cma.nodes {
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
