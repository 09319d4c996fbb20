//! Two hosts on a lossy link: two rxe devices over the two ends of a veth pair, with netem dropping,
//! reordering and duplicating packets on both ends.
//!
//! - **RC** (`lossy_rc_stream_*`): a stream of SENDs and RDMA WRITEs with immediate of mixed sizes
//!   (0 B to 1 MiB, each payload derived from its sequence number) at 1 % and 5 % loss, with 2 %
//!   reordering and 1 % duplication, must arrive exactly once, in order and byte-exact, with every
//!   completion successful on both sides; the queue pairs run with `retry_cnt` 7, `rnr_retry` 7 and
//!   timeout 14 (67 ms), and the kernel must report those settings back. The test also checks that
//!   netem did drop packets and that rxe's counters show retransmissions, and that no retry count
//!   ran out.
//! - **UD** (`lossy_ud_datagrams_lost_never_corrupted`): datagrams over 5 % loss and 25 % reordering
//!   are lost, never duplicated or corrupted: each one that arrives has the sender's GRH and exactly
//!   its payload, with a successful completion, and exactly the ones netem dropped are missing
//!   (its counters: each datagram is one packet, and the link carries nothing else).
//! - **A killed peer** (`lossy_peer_killed_retry_exceeded`): the peer process is killed with
//!   SIGKILL in the middle of a stream of SENDs. Its queue pair goes with it, and rxe drops the
//!   packets that arrive for a queue pair that does not exist, without a NAK: the survivor's
//!   retransmission timer expires, each expiry uses up one retry, and the expiry after the last
//!   retry completes the oldest request with `IBV_WC_RETRY_EXC_ERR` and flushes the rest
//!   (`IBV_WC_WR_FLUSH_ERR`); the queue pair is then in the error state. This comes between
//!   `retry_cnt` and `retry_cnt + 1` timeouts after the peer's queue pair is gone (measured: timeout
//!   10 (4 ms) with 3 retries, 33–153 ms after the kill; timeout 16 (268 ms) with 1 retry, 283–361
//!   ms on 6.1 and 321–611 ms on 6.12). Except with `retry_cnt` 7, which rxe takes to mean "retry
//!   for ever" (the specification means that only for the RNR retry count): then nothing completes
//!   until the application moves the queue pair to the error state itself, which the test does
//!   after 2 s. (Which status the survivor sees also depends on how the peer's objects go: see
//!   `sink`.)
//!
//! Each test runs the receiving side as a second process (this test binary again, running the
//! ignored test `lossy_peer_process`), which talks to the test over a TCP connection on 127.0.0.1.
//! Every wait has a deadline, and a peer process still running when its test ends is killed.
//!
//! # The link
//!
//! The kernels under test (6.1, 6.12) give rxe one UDP socket, in the initial network namespace,
//! and route its packets there (rxe_net.c: `ip_route_output_key(&init_net, ...)`), so rxe devices
//! over veth ends moved into two namespaces cannot reach each other: rdma-core's `ibv_rc_pingpong`
//! fails between them on both kernels. Both veth ends therefore stay in the initial namespace, with
//! policy routing that sends the traffic between their addresses over the veth pair instead of
//! short-circuiting it through `lo`: the `local` rule moves from preference 0 to [`LOCAL_PREF`],
//! rules at [`RULE_PREF`] route locally generated packets for each address out of its own end,
//! `accept_local` lets each end accept packets from the other's (local) address, and permanent
//! neighbour entries keep ARP (which netem would delay or drop) out of it. The veth MTU is 9000, so
//! rxe's path MTU is 4096. Everything is undone when the test ends, passed or failed (and a test
//! first cleans up what a killed run may have left); `rxe0` on `lo` keeps working throughout.
//!
//! # Sizes and long runs
//!
//! By default the tests are sized for CI under TCG: 2 000 RC messages at 1 % loss, 1 000 at 5 %,
//! 1 000 datagrams; the whole file takes about a minute per kernel (the streams run at about 130–180
//! messages, 2–3 MB, per second at 1 % loss, 90–100 messages per second at 5 %). `UVERBS_LONG=1`
//! runs the full workload, 100 000 RC messages per loss rate and 16 000 datagrams (about half an
//! hour per kernel, hence the longer guest timeout):
//!
//! ```sh
//! UVERBS_LONG=1 tests/vm/suite --kernel 6.12 --timeout 3600 -- lossy
//! ```
//!
//! `UVERBS_LOSSY_COUNT=N` sets the number of messages (and datagrams, at most 16 000) instead.
//!
//! # What the long runs met: an rxe retransmission fault
//!
//! Long runs so far: 100 000 messages at 1 % on 6.1 and 6.12, at 5 % on 6.1 and (once of twice) on
//! 6.12, and at 8 % loss with 2 % duplication on 6.12: every message exact. The other 5 % run on
//! 6.12 stopped at message 40 339 (a 65 537-byte WRITE_WITH_IMM) with `IBV_WC_REM_INV_REQ_ERR`:
//! rxe's responder answered "invalid request". Nothing had been delivered wrongly (every earlier
//! message checked out, the receiver saw no error). The library has no part in it: rxe's requester
//! alone picks the PSNs and opcodes it retransmits, and a wrong length, key or MTU in the request
//! would fail every message of that size, not one in 40 000. Reading rxe (6.1 and 6.12 alike)
//! gives a cause: an ACK for a request's last PSN that arrives while the request is being
//! retransmitted takes the completer through `COMPST_WRITE_SEND` → `COMPST_UPDATE_COMP`
//! (rxe_comp.c), which moves `comp.psn` past the request without completing it (only a *pending*
//! request completes there); the next retry's `req_retry` (rxe_req.c) then computes `npsn` as the
//! request's whole length, `retry_first_write_send` steps past its end, and what follows is sent
//! again one PSN later than the first time. The responder, in the middle of a message, gets a last
//! packet of the wrong length (`RESPST_ERR_LENGTH`) and NAKs it as an invalid request. A capture of
//! a failing run would prove it; at about one failure in 500 000 messages none has been caught
//! yet. The test fails, as it should, when that happens.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use uverbs::{
    ibv_qp_state, ibv_qp_type, ibv_wc, ibv_wc_flags, ibv_wc_opcode, ibv_wc_status, AddressVector,
    CompletionQueue, Context, Gid, GidType, MemoryRegion, QpAttr, QueuePair, QueuePairEndpoint,
    ReceiveRequest, RemoteMemory, SendRequest,
};

use common::long;

// ---------------------------------------------------------------------------------------------
// The link: two veth ends, an rxe device on each, netem on both.

/// The veth ends: [`IP`]`[i]` is on `VETH[i]`, and `RXE[i]` runs over it.
const VETH: [&str; 2] = ["uvlossy0", "uvlossy1"];
const RXE: [&str; 2] = ["rxelossy0", "rxelossy1"];
const MAC: [&str; 2] = ["02:00:0a:4d:00:01", "02:00:0a:4d:00:02"];
const IP: [[u8; 4]; 2] = [[10, 77, 0, 1], [10, 77, 0, 2]];
/// The routing tables that send each end's packets for the other end's address out of the veth.
const TABLE: [&str; 2] = ["177", "178"];
/// The preference of the rules that pick those tables.
const RULE_PREF: &str = "100";
/// Where the `local` rule (normally at preference 0) lives while the link is up.
const LOCAL_PREF: &str = "500";

/// The veth MTU: jumbo frames, so that rxe's path MTU is 4096 (fewer packets for TCG to move).
const LINK_MTU: &str = "9000";

/// What a test skips outside the VM: the link changes the machine's interfaces and routing.
const LINK_PART: &str = "the lossy link (a veth pair, netem, routing rules, two rxe devices)";

/// The link is one per guest: tests that need it take turns.
static LINK: Mutex<()> = Mutex::new(());

/// The dotted address.
fn ip(i: usize) -> String {
    let [a, b, c, d] = IP[i];
    format!("{a}.{b}.{c}.{d}")
}

/// Runs `args` with a time limit, feeding it `input`; whether it succeeded, and its output.
fn run_with(args: &[&str], input: &str) -> (bool, String) {
    let mut child = Command::new("timeout")
        .args(["-k", "5", "60"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap_or_else(|e| panic!("feeding {args:?}: {e}"));
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs a command that must succeed; its output.
fn sh(args: &[&str]) -> String {
    let (ok, text) = run_with(args, "");
    assert!(ok, "`{}` failed: {text}", args.join(" "));
    text
}

/// Runs `lines` as one batch of `tool` (`ip`, `tc`, `rdma`: one process, since every process
/// start costs TCG a good fraction of a second), stopping at the first that fails.
fn batch(tool: &str, lines: &[String]) -> String {
    // rdma parses its options with getopt_long; ip and tc with their own matcher.
    let flag = if tool == "rdma" { "--batch" } else { "-batch" };
    let (ok, text) = run_with(&[tool, flag, "-"], &(lines.join("\n") + "\n"));
    assert!(ok, "`{tool}` failed on\n{}\n{text}", lines.join("\n"));
    text
}

/// Runs `lines` as one batch of `tool` to the end, whatever fails; the failures.
fn force_batch(tool: &str, lines: &[String]) -> Option<String> {
    if lines.is_empty() {
        return None;
    }
    let flags = if tool == "rdma" {
        ["--force", "--batch"]
    } else {
        ["-force", "-batch"]
    };
    let (ok, text) = run_with(&[tool, flags[0], flags[1], "-"], &(lines.join("\n") + "\n"));
    (!ok).then(|| format!("`{tool}` on\n{}\n{text}", lines.join("\n")))
}

fn write_sysctl(path: &str, value: &str) {
    std::fs::write(path, value).unwrap_or_else(|e| panic!("writing {value} to {path}: {e}"));
}

fn read_sysctl(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {path}: {e}"))
        .trim()
        .to_owned()
}

const RP_FILTER_ALL: &str = "/proc/sys/net/ipv4/conf/all/rp_filter";

/// A netem qdisc's packet counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct QdiscStats {
    /// Packets it passed on.
    sent: u64,
    /// Packets it dropped (netem's losses, and any over its limit).
    dropped: u64,
    /// Packets it holds (delayed, or waiting to be reordered).
    backlog: u64,
}

/// The two-host link, torn down on drop.
struct Link {
    _turn: MutexGuard<'static, ()>,
    rp_filter_all: String,
}

impl Link {
    /// Creates the link with `netem` (a netem qdisc's parameters, or `None` for a clean link) on
    /// both ends, and waits until both rxe devices have their IPv4 GIDs.
    fn up(netem: Option<&str>) -> Link {
        let turn = LINK.lock().unwrap_or_else(|p| p.into_inner());
        // What a killed earlier run may have left behind.
        if let Err(e) = teardown() {
            panic!("cleaning up after an earlier run: {e}");
        }
        let link = Link {
            _turn: turn,
            rp_filter_all: read_sysctl(RP_FILTER_ALL),
        };
        for module in ["veth", "sch_netem"] {
            if !std::path::Path::new(&format!("/sys/module/{module}")).exists() {
                sh(&["modprobe", module]);
            }
        }
        let (v, m) = (VETH, MAC);
        batch(
            "ip",
            &[format!(
                "link add {} address {} mtu {LINK_MTU} type veth peer name {} address {} mtu \
                 {LINK_MTU}",
                v[0], m[0], v[1], m[1]
            )],
        );
        // No IPv6 on the ends (no router solicitations, neighbour discovery or MLD reports), and
        // ARP is kept out below: the only packets on the link are the tests' own, so netem's
        // counters count exactly those (the UD test relies on it).
        for dev in VETH {
            write_sysctl(&format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1");
        }
        let mut ip_setup = Vec::new();
        for (me, peer) in [(0, 1), (1, 0)] {
            ip_setup.extend([
                format!("addr add {}/24 dev {}", ip(me), v[me]),
                format!("link set {} up", v[me]),
                format!(
                    "neigh replace {} lladdr {} dev {} nud permanent",
                    ip(peer),
                    m[peer],
                    v[me]
                ),
                format!(
                    "route add {} dev {} src {} table {}",
                    ip(peer),
                    v[me],
                    ip(me),
                    TABLE[me]
                ),
            ]);
        }
        ip_setup.push(format!("rule add pref {LOCAL_PREF} lookup local"));
        // The VM harness's connection manager network (tests/vm/cm-net) may have moved the local
        // rule already (behind its own rules); then there is none at 0 to move.
        if has_local_rule_at_0() {
            ip_setup.push("rule del pref 0 lookup local".into());
        }
        for (me, peer) in [(0, 1), (1, 0)] {
            ip_setup.push(format!(
                "rule add pref {RULE_PREF} iif lo to {} lookup {}",
                ip(peer),
                TABLE[me]
            ));
        }
        for (me, peer) in [(0, 1), (1, 0)] {
            ip_setup.push(format!("route get {} from {}", ip(peer), ip(me)));
        }
        let routes = batch("ip", &ip_setup);
        for (me, peer) in [(0, 1), (1, 0)] {
            let want = format!("{} from {} dev {}", ip(peer), ip(me), v[me]);
            assert!(
                routes.contains(&want),
                "{} → {} does not go out of {}: {routes}",
                ip(me),
                ip(peer),
                v[me]
            );
        }
        for dev in VETH {
            for (knob, value) in [("accept_local", "1"), ("rp_filter", "0")] {
                write_sysctl(&format!("/proc/sys/net/ipv4/conf/{dev}/{knob}"), value);
            }
        }
        write_sysctl(RP_FILTER_ALL, "0");
        if let Some(netem) = netem {
            let qdiscs: Vec<String> = VETH
                .iter()
                .map(|dev| format!("qdisc add dev {dev} root netem {netem}"))
                .collect();
            batch("tc", &qdiscs);
        }
        let rxe: Vec<String> = (0..2)
            .map(|i| format!("link add {} type rxe netdev {}", RXE[i], VETH[i]))
            .collect();
        batch("rdma", &rxe);
        for i in 0..2 {
            gid_of(i);
        }
        link
    }

    /// Opens end `i`'s rxe device; its context and the GID table index of its IPv4 address.
    fn open(&self, i: usize) -> (Context, u32) {
        open_end(i)
    }

    /// How many packets netem dropped so far on each end's egress.
    fn dropped(&self) -> [u64; 2] {
        self.qdisc_stats().map(|q| q.dropped)
    }

    /// The counters of each end's netem qdisc (`tc -s qdisc show`).
    fn qdisc_stats(&self) -> [QdiscStats; 2] {
        let text = sh(&["tc", "-s", "qdisc", "show"]);
        VETH.map(|dev| {
            let at = text
                .find(&format!(" dev {dev} "))
                .unwrap_or_else(|| panic!("no qdisc on {dev} in {text}"));
            let number = |before: &str, after: &str| -> u64 {
                let from = text[at..]
                    .find(before)
                    .unwrap_or_else(|| panic!("no '{before}' for {dev} in {text}"))
                    + at
                    + before.len();
                let rest = &text[from..];
                let rest = &rest[rest.find(after).map_or(0, |i| i + after.len())..];
                let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
                n.parse()
                    .unwrap_or_else(|_| panic!("'{before}' of {dev} in {text}"))
            };
            QdiscStats {
                // " Sent 1234 bytes 56 pkt (dropped 3, overlimits 0 requeues 0)"
                sent: number("Sent ", "bytes "),
                dropped: number("dropped ", ""),
                // " backlog 0b 0p requeues 0"
                backlog: number("backlog ", "b "),
            }
        })
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let mut errors = Vec::new();
        if let Err(e) = teardown() {
            errors.push(e);
        }
        if let Err(e) = std::fs::write(RP_FILTER_ALL, &self.rp_filter_all) {
            errors.push(format!("restoring {RP_FILTER_ALL}: {e}"));
        }
        if !errors.is_empty() {
            if std::thread::panicking() {
                eprintln!("tearing the link down: {errors:#?}");
            } else {
                panic!("tearing the link down: {errors:#?}");
            }
        }
    }
}

/// Whether the `local` rule is at preference 0, as on a machine nobody changed.
fn has_local_rule_at_0() -> bool {
    sh(&["ip", "rule", "show"])
        .lines()
        .any(|l| l.split(':').next().unwrap_or("").trim() == "0" && l.contains("lookup local"))
}

/// What `ip` must do to put the routing rules back as they were before any link: a `local` rule
/// (at preference 0 unless the harness keeps one elsewhere), none of ours.
fn rules_fixes() -> Vec<String> {
    let rules = sh(&["ip", "rule", "show"]);
    let pref = |l: &str| l.split(':').next().unwrap_or("").trim().to_owned();
    let mut fixes = Vec::new();
    for line in rules.lines() {
        if pref(line) == RULE_PREF {
            fixes.push(format!("rule del pref {RULE_PREF}"));
        }
    }
    // Put the local rule back at 0 unless another one (ours aside) still looks up the local table:
    // tests/vm/cm-net keeps it at a preference of its own, and that is the machine's normal state.
    if !rules
        .lines()
        .any(|l| pref(l) != LOCAL_PREF && l.contains("lookup local"))
    {
        fixes.push("rule add pref 0 lookup local".into());
    }
    if rules.lines().any(|l| pref(l) == LOCAL_PREF) {
        fixes.push(format!("rule del pref {LOCAL_PREF} lookup local"));
    }
    fixes
}

/// Removes the rxe devices and the veth pair (with its addresses, routes, neighbours and qdiscs)
/// if they exist, and puts the routing rules back; then checks that all of it is gone.
fn teardown() -> Result<(), String> {
    let mut errors = Vec::new();
    let rxe: Vec<String> = RXE
        .iter()
        .filter(|d| std::path::Path::new(&format!("/sys/class/infiniband/{d}")).exists())
        .map(|d| format!("link del {d}"))
        .collect();
    errors.extend(force_batch("rdma", &rxe));
    let mut ip_fixes = Vec::new();
    if std::path::Path::new(&format!("/sys/class/net/{}", VETH[0])).exists() {
        // Deleting one end deletes both.
        ip_fixes.push(format!("link del {}", VETH[0]));
    }
    let fixes = rules_fixes();
    let rules_changed = !fixes.is_empty();
    ip_fixes.extend(fixes);
    errors.extend(force_batch("ip", &ip_fixes));
    for d in RXE {
        if std::path::Path::new(&format!("/sys/class/infiniband/{d}")).exists() {
            errors.push(format!("{d} is still there"));
        }
    }
    for d in VETH {
        if std::path::Path::new(&format!("/sys/class/net/{d}")).exists() {
            errors.push(format!("{d} is still there"));
        }
    }
    if rules_changed {
        let left = rules_fixes();
        if !left.is_empty() {
            errors.push(format!("the routing rules still need {left:?}"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// The IPv4-mapped GID of end `i` (`::ffff:a.b.c.d`).
fn mapped_gid(i: usize) -> Gid {
    let mut raw = [0u8; 16];
    raw[10] = 0xff;
    raw[11] = 0xff;
    raw[12..].copy_from_slice(&IP[i]);
    Gid::from_bytes(raw)
}

/// The GID table index of end `i`'s RoCE v2 IPv4 GID, read through the library (waiting for the
/// kernel to fill it in after the device is added).
fn gid_of(i: usize) -> u32 {
    let want = mapped_gid(i);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = uverbs::devices().ok().and_then(|list| {
            let ctx = list.find(RXE[i])?.open().ok()?;
            let table = ctx.query_gid_table().ok()?;
            table
                .iter()
                .find(|e| e.gid == want && e.kind() == GidType::RoceV2 && e.port_num == 1)
                .map(|e| e.gid_index)
        });
        if let Some(index) = found {
            return index;
        }
        assert!(
            Instant::now() < deadline,
            "{} has no RoCE v2 GID {want} after 30 s",
            RXE[i]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn open_end(i: usize) -> (Context, u32) {
    let index = gid_of(i);
    let list = uverbs::devices().unwrap();
    let ctx = list
        .find(RXE[i])
        .unwrap_or_else(|| panic!("{} is not listed", RXE[i]))
        .open()
        .unwrap_or_else(|e| panic!("opening {}: {e}", RXE[i]));
    (ctx, index)
}

/// The device's hardware counters (`hw_counters` in sysfs).
fn counters(dev: &str) -> BTreeMap<String, u64> {
    let dir = format!("/sys/class/infiniband/{dev}/ports/1/hw_counters");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {dir}: {e}")) {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Ok(v) = std::fs::read_to_string(entry.path()) {
            if let Ok(v) = v.trim().parse() {
                out.insert(name, v);
            }
        }
    }
    out
}

/// `after - before` for the counters that moved.
fn moved(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v != 0)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The workload.

/// The largest message, and the size of every buffer slot.
const SLOT: usize = 1 << 20;
/// The message sizes.
const SIZES: [usize; 8] = [0, 1, 63, 64, 4095, 4096, 65537, SLOT];
/// Send requests the sender keeps in flight.
const WINDOW: usize = 16;
/// Receives the receiver keeps posted.
const RECV_DEPTH: usize = 16;
/// RDMA WRITE target slots: one more than the receives posted, so a slot is written again only
/// after the receiver has checked what was written there before (see [`rc_receiver`]).
const WRITE_SLOTS: usize = RECV_DEPTH + 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Send,
    WriteImm,
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Message `seq` of the RC stream: its operation and size. The first 16 are every size by SEND and
/// then by WRITE; after that mostly small, 12 % of 64 KiB + 1, and every 1000th is 1 MiB.
fn message(seq: u64) -> (Op, usize) {
    if seq < 16 {
        let op = if seq < 8 { Op::Send } else { Op::WriteImm };
        return (op, SIZES[seq as usize % 8]);
    }
    let h = mix(seq);
    let op = if h & 1 == 0 { Op::Send } else { Op::WriteImm };
    if seq % 1000 == 999 {
        return (op, SLOT);
    }
    let size = match (h >> 8) % 100 {
        0..12 => 0,
        12..24 => 1,
        24..40 => 63,
        40..56 => 64,
        56..72 => 4095,
        72..88 => 4096,
        _ => 65537,
    };
    (op, size)
}

/// Fills `buf` with the payload of message `seq`.
fn fill(buf: &mut [u8], seq: u64) {
    let key = mix(seq ^ 0x5eed);
    for (j, chunk) in buf.chunks_mut(8).enumerate() {
        let w = (key ^ (j as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// Panics unless `got` is exactly the payload of message `seq`.
fn check_payload(what: &str, got: &[u8], seq: u64, scratch: &mut Vec<u8>) {
    scratch.resize(got.len(), 0);
    fill(scratch, seq);
    if got != &scratch[..] {
        let i = (0..got.len()).find(|&i| got[i] != scratch[i]).unwrap();
        panic!(
            "{what}: message {seq} of {} bytes differs at byte {i}: {:#04x}, sent {:#04x}",
            got.len(),
            got[i],
            scratch[i]
        );
    }
}

fn status_name(wc: &ibv_wc) -> String {
    format!(
        "{} ({}), vendor error {}",
        uverbs::wc_status_str(wc.status()),
        wc.status(),
        wc.vendor_err()
    )
}

// ---------------------------------------------------------------------------------------------
// The control connection between the test and its peer process.

/// The environment variable that carries the control address to the peer process.
const PEER_ENV: &str = "UVERBS_LOSSY_PEER";

/// A line-based text connection.
struct Ctl {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    pending: String,
}

impl Ctl {
    fn new(stream: TcpStream) -> Ctl {
        stream.set_nodelay(true).unwrap();
        Ctl {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
            pending: String::new(),
        }
    }

    fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .unwrap_or_else(|e| panic!("control connection: sending {line:?}: {e}"));
    }

    /// The next line, waiting at most `within`: `Ok(None)` when none came in time, `Err` when
    /// the other side closed the connection.
    fn poll_line(&mut self, within: Duration) -> Result<Option<String>, String> {
        let within = within.max(Duration::from_millis(1));
        self.reader
            .get_ref()
            .set_read_timeout(Some(within))
            .unwrap();
        match self.reader.read_line(&mut self.pending) {
            Ok(0) => Err(format!(
                "the control connection closed (partial line {:?})",
                self.pending
            )),
            Ok(_) if self.pending.ends_with('\n') => {
                let line = self.pending.trim_end().to_owned();
                self.pending.clear();
                Ok(Some(line))
            }
            Ok(_) => Ok(None),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(None),
            Err(e) => Err(format!("the control connection failed: {e}")),
        }
    }

    /// The next line, which must come within `within`.
    fn recv(&mut self, what: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.poll_line(left) {
                Ok(Some(line)) => return line,
                Ok(None) if left.is_zero() => panic!("no {what} within {within:?}"),
                Ok(None) => {}
                Err(e) => panic!("waiting for {what}: {e}"),
            }
        }
    }
}

/// Formats an endpoint, and optionally a memory region, as a control line.
fn ep_line(ep: &QueuePairEndpoint, mem: Option<RemoteMemory>) -> String {
    let gid = ep.gid.expect("RoCE endpoints carry a GID");
    let hex: String = gid.bytes().iter().map(|b| format!("{b:02x}")).collect();
    let mem = mem.map_or(String::new(), |m| {
        format!(" {} {} {}", m.addr, m.rkey, m.len)
    });
    format!("ep {} {} {hex}{mem}", ep.num, ep.lid)
}

fn parse_ep(line: &str) -> (QueuePairEndpoint, Option<RemoteMemory>) {
    let f: Vec<&str> = line.split_whitespace().collect();
    assert!(
        f.first() == Some(&"ep") && (f.len() == 4 || f.len() == 7),
        "not an endpoint: {line:?}"
    );
    let hex = f[3];
    assert_eq!(hex.len(), 32, "GID in {line:?}");
    let mut raw = [0u8; 16];
    for (i, b) in raw.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    let ep = QueuePairEndpoint {
        num: f[1].parse().unwrap(),
        lid: f[2].parse().unwrap(),
        gid: Some(Gid::from_bytes(raw)),
    };
    let mem = (f.len() == 7).then(|| RemoteMemory {
        addr: f[4].parse().unwrap(),
        rkey: f[5].parse().unwrap(),
        len: f[6].parse().unwrap(),
    });
    (ep, mem)
}

/// The peer process, killed on drop if it is still running.
struct Peer {
    child: Child,
    ctl: Ctl,
}

impl Peer {
    /// Starts the peer process and gives it `job`.
    fn spawn(job: &str) -> Peer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "lossy_peer_process",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(PEER_ENV, &addr)
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("starting the peer process");
        let deadline = Instant::now() + Duration::from_secs(60);
        let stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("accepting the peer's connection: {e}"),
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the peer process exited before connecting: {status}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the peer process did not connect within 60 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        stream.set_nonblocking(false).unwrap();
        let mut peer = Peer {
            child,
            ctl: Ctl::new(stream),
        };
        peer.ctl.send(&format!("job {job}"));
        peer
    }

    /// The peer's next line, which must come within `within`; if the peer dies instead, a panic
    /// that says so (its own panic message is above, on the shared stderr).
    fn recv(&mut self, what: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.ctl.poll_line(left.min(Duration::from_millis(200))) {
                Ok(Some(line)) => return line,
                Ok(None) if left.is_zero() => panic!("no {what} from the peer within {within:?}"),
                Ok(None) => {}
                Err(e) => {
                    let status = self.wait(Duration::from_secs(10));
                    panic!("waiting for {what}: {e}; the peer process ended: {status:?} (its output is above)");
                }
            }
        }
    }

    /// Waits up to `within` for the peer to exit; its status, or `None` (after killing it).
    fn wait(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Expects the peer to exit successfully within `within`.
    fn finish(mut self, within: Duration) {
        match self.wait(within) {
            Some(s) if s.success() => {}
            Some(s) => panic!("the peer process failed: {s} (its output is above)"),
            None => panic!("the peer process did not exit within {within:?}"),
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The peer process.

/// The peer process's entry point: the lossy tests start this binary again with `--ignored --exact
/// lossy_peer_process` and the control address in [`PEER_ENV`]. It is not a test by itself.
#[test]
#[ignore = "the lossy tests' peer process: they start it themselves"]
fn lossy_peer_process() {
    let Ok(addr) = std::env::var(PEER_ENV) else {
        // `--include-ignored` without a test to serve: nothing to do.
        eprintln!("lossy_peer_process: only the lossy tests run it (with {PEER_ENV} set)");
        return;
    };
    let stream = TcpStream::connect(&addr).expect("connecting to the test");
    let mut ctl = Ctl::new(stream);
    let job = ctl.recv("a job", Duration::from_secs(30));
    let f: Vec<&str> = job.split_whitespace().collect();
    match f.as_slice() {
        ["job", "rc", count] => rc_receiver(&mut ctl, count.parse().unwrap()),
        ["job", "ud", count] => ud_receiver(&mut ctl, count.parse().unwrap()),
        ["job", "sink"] => sink(&mut ctl),
        _ => panic!("unknown job {job:?}"),
    }
}

/// The receiving queue pair of the peer, on end 1.
fn peer_rc_qp<'a>(
    ctx_pd: &'a uverbs::ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
    gid_index: u32,
) -> uverbs::PreparedQueuePair<'a> {
    ctx_pd
        .create_qp(cq, cq, ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(gid_index)
        .set_max_send_wr(1)
        .set_max_recv_wr(RECV_DEPTH as u32)
        .allow_remote_rw()
        .set_min_rnr_timer(1)
        .build()
        .expect("creating the peer's queue pair")
}

/// Receives `count` messages of the RC stream and checks each: in order, exactly once, byte-exact,
/// successful. SENDs land in the posted receive buffers; WRITEs with immediate land in write slot
/// `seq % WRITE_SLOTS` and consume a receive. A receive is posted again only after the message it
/// took has been checked, and the responder takes message `n`'s receive only after message `n - 1`'s,
/// so when message `n`'s data lands, at most [`RECV_DEPTH`] messages before it are unchecked: write
/// slot `n % WRITE_SLOTS` was last written by message `n - WRITE_SLOTS`, which has been checked.
fn rc_receiver(ctl: &mut Ctl, count: u64) {
    let (ctx, gid_index) = open_end(1);
    let cq = ctx.create_cq(2 * RECV_DEPTH as i32, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let prepared = peer_rc_qp(&pd, &cq, gid_index);
    let mut recv_mr = pd.allocate::<u8>(RECV_DEPTH * SLOT).unwrap();
    let write_mr = pd.allocate::<u8>(WRITE_SLOTS * SLOT).unwrap();
    ctl.send(&ep_line(&prepared.endpoint(), Some(write_mr.remote())));
    let (remote, _) = parse_ep(&ctl.recv("the sender's endpoint", Duration::from_secs(60)));
    let qp = prepared.handshake(remote).expect("peer handshake");
    let post = |qp: &QueuePair<'_>, mr: &MemoryRegion<u8>, slot: usize| {
        let sge = [mr.sge(slot * SLOT..(slot + 1) * SLOT).unwrap()];
        // SAFETY: the slot is read only after its completion, and posted again only after that.
        unsafe { qp.post_receive_list(&[ReceiveRequest::new(slot as u64, &sge)]) }
            .expect("posting a receive");
    };
    for slot in 0..RECV_DEPTH {
        post(&qp, &recv_mr, slot);
    }
    ctl.send("ready");
    let mut scratch = Vec::new();
    let mut wcs = [ibv_wc::default(); 16];
    let mut seq = 0u64;
    let mut bytes = 0u64;
    let mut last_progress = Instant::now();
    let mut sender_done = false;
    while seq < count {
        let got = cq.poll(&mut wcs).unwrap();
        if got.is_empty() {
            assert!(
                last_progress.elapsed() < Duration::from_secs(60),
                "receiver: no message for 60 s after {seq} of {count} (the sender {}); \
                 counters {:?}",
                if sender_done {
                    "has all its completions"
                } else {
                    "is not done"
                },
                counters(RXE[1])
            );
            match ctl.poll_line(Duration::ZERO) {
                Ok(Some(line)) if line == "done" && !sender_done => sender_done = true,
                Ok(Some(line)) => panic!("receiver: unexpected {line:?} at message {seq}"),
                Ok(None) => {}
                Err(e) => panic!("receiver: {e} at message {seq} of {count}"),
            }
            continue;
        }
        last_progress = Instant::now();
        for wc in got.iter() {
            assert!(
                wc.is_valid(),
                "receiver: message {seq} completed with {}",
                status_name(wc)
            );
            assert_eq!(wc.qp_num, qp.qp_num());
            let slot = wc.wr_id() as usize;
            assert!(slot < RECV_DEPTH, "receive wr_id {slot}");
            let (op, size) = message(seq);
            assert_eq!(wc.len(), size, "receiver: length of message {seq} ({op:?})");
            match op {
                Op::Send => {
                    assert_eq!(
                        wc.opcode(),
                        ibv_wc_opcode::IBV_WC_RECV,
                        "receiver: message {seq} should be a SEND"
                    );
                    assert_eq!(
                        wc.imm_data(),
                        None,
                        "receiver: SEND {seq} carries no immediate"
                    );
                    let at = slot * SLOT;
                    check_payload("SEND", &recv_mr[at..at + size], seq, &mut scratch);
                }
                Op::WriteImm => {
                    assert_eq!(
                        wc.opcode(),
                        ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM,
                        "receiver: message {seq} should be a WRITE with immediate"
                    );
                    assert_eq!(
                        wc.imm_data().map(u32::from_be),
                        Some(seq as u32),
                        "receiver: immediate of WRITE {seq}"
                    );
                    let at = (seq as usize % WRITE_SLOTS) * SLOT;
                    check_payload("WRITE", &write_mr[at..at + size], seq, &mut scratch);
                }
            }
            bytes += size as u64;
            seq += 1;
            post(&qp, &recv_mr, slot);
        }
    }
    // Exactly once: nothing more arrives, even while the sender drains its completions.
    if !sender_done {
        let line = ctl.recv("done", Duration::from_secs(600));
        assert_eq!(line, "done");
    }
    let quiet = Instant::now() + Duration::from_millis(500);
    while Instant::now() < quiet {
        let got = cq.poll(&mut wcs).unwrap();
        assert!(
            got.is_empty(),
            "receiver: {} completions after all {count} messages: {:?}",
            got.len(),
            &got[..]
        );
    }
    recv_mr.fill(0);
    ctl.send(&format!("ok {seq} {bytes}"));
    let _ = ctl.recv("bye", Duration::from_secs(60));
}

/// Receives datagrams until the sender is done and the link has been quiet for a second, checking
/// each: successful, from the sender's queue pair and GID, the GRH then exactly datagram `seq`'s
/// payload (`seq` in the immediate), each `seq` at most once.
fn ud_receiver(ctl: &mut Ctl, count: u64) {
    let (ctx, gid_index) = open_end(1);
    let n = count as usize;
    let cq = ctx.create_cq(n as i32 + 16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let prepared = pd
        .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_UD)
        .set_gid_index(gid_index)
        .set_qkey(UD_QKEY)
        .set_max_send_wr(1)
        .set_max_recv_wr(n as u32)
        .build()
        .expect("creating the UD queue pair");
    let mtu = ctx.query_port(1).unwrap().active_mtu().bytes().unwrap() as usize;
    let slot = GRH + mtu;
    let mr = pd.allocate::<u8>(n * slot).unwrap();
    ctl.send(&ep_line(&prepared.endpoint(), None));
    let (sender, _) = parse_ep(&ctl.recv("the sender's endpoint", Duration::from_secs(60)));
    let qp = prepared.activate_ud().unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(64) {
        let sges: Vec<_> = chunk
            .iter()
            .map(|&i| [mr.sge(i * slot..(i + 1) * slot).unwrap()])
            .collect();
        let reqs: Vec<_> = chunk
            .iter()
            .zip(&sges)
            .map(|(&i, sge)| ReceiveRequest::new(i as u64, sge))
            .collect();
        // SAFETY: every buffer is read only after its completion and never posted again.
        unsafe { qp.post_receive_list(&reqs) }.expect("posting the receives");
    }
    ctl.send(&format!("ready {mtu}"));
    let mut seen = vec![false; n];
    let mut received = 0u64;
    let mut scratch = Vec::new();
    let mut wcs = [ibv_wc::default(); 16];
    // Set by the sender's "done N": N datagrams got past netem, and every one must arrive.
    let mut expect: Option<(u64, Instant)> = None;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let got = cq.poll(&mut wcs).unwrap();
        for wc in got.iter() {
            assert!(
                wc.is_valid(),
                "UD receive completed with {}",
                status_name(wc)
            );
            assert_eq!(wc.opcode(), ibv_wc_opcode::IBV_WC_RECV);
            assert_eq!(wc.qp_num, qp.qp_num());
            assert_eq!(wc.src_qp, sender.num, "the datagram's source queue pair");
            assert!(
                (wc.wc_flags & ibv_wc_flags::IBV_WC_GRH).0 != 0,
                "a RoCE datagram has a GRH"
            );
            let seq = u64::from(u32::from_be(
                wc.imm_data().expect("every datagram carries its number"),
            ));
            assert!(seq < count, "datagram {seq} of {count}");
            assert!(!seen[seq as usize], "datagram {seq} arrived twice");
            seen[seq as usize] = true;
            let size = datagram_size(seq, mtu);
            assert_eq!(wc.len(), GRH + size, "length of datagram {seq}");
            let at = wc.wr_id() as usize * slot;
            let grh = &mr[at..at + GRH];
            let g = sender.gid.unwrap().bytes();
            assert_eq!(&grh[..20], &[0u8; 20], "IPv4 GRH area: 20 zero bytes first");
            assert_eq!(grh[20] >> 4, 4, "an IPv4 header: {grh:02x?}");
            assert_eq!(&grh[32..36], &g[12..], "the source address: {grh:02x?}");
            assert_eq!(&grh[36..40], &IP[1], "the destination address: {grh:02x?}");
            check_payload(
                "datagram",
                &mr[at + GRH..at + GRH + size],
                seq,
                &mut scratch,
            );
            received += 1;
        }
        if expect.is_none() {
            match ctl.poll_line(Duration::ZERO) {
                Ok(Some(line)) => {
                    let n = line
                        .strip_prefix("done ")
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("UD receiver: {line:?}"));
                    expect = Some((n, Instant::now() + Duration::from_secs(60)));
                }
                Ok(None) => {}
                Err(e) => panic!("UD receiver: {e}"),
            }
        }
        // All that netem passed has arrived (the sender checks the count), or the ones missing
        // were lost after netem (the sender's check fails with the count).
        if let Some((n, until)) = expect {
            if received >= n || Instant::now() > until {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "UD receiver: still receiving after 600 s"
        );
        if got.is_empty() {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let distinct = seen.iter().filter(|&&s| s).count();
    ctl.send(&format!("ok {received} {distinct}"));
    let _ = ctl.recv("bye", Duration::from_secs(60));
}

/// Takes whatever the sender sends, until killed (or until the test goes away).
fn sink(ctl: &mut Ctl) {
    let (ctx, gid_index) = open_end(1);
    let cq = ctx.create_cq(2 * RECV_DEPTH as i32, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    // The receive buffers' region first: when the process is killed, the kernel destroys its
    // objects newest first, so the queue pair goes before the region its receives point into. The
    // other way round, a SEND that arrives between the two finds its receive buffer deregistered,
    // and the responder answers with a NAK that fails the sender's request with
    // IBV_WC_REM_OP_ERR at once (seen on 6.1) instead of leaving it to the retry timer.
    let recv_mr = pd.allocate::<u8>(RECV_DEPTH * SINK_SIZE).unwrap();
    let prepared = peer_rc_qp(&pd, &cq, gid_index);
    ctl.send(&ep_line(&prepared.endpoint(), None));
    let (remote, _) = parse_ep(&ctl.recv("the sender's endpoint", Duration::from_secs(60)));
    let qp = prepared.handshake(remote).expect("peer handshake");
    let post = |slot: usize| {
        let sge = [recv_mr
            .sge(slot * SINK_SIZE..(slot + 1) * SINK_SIZE)
            .unwrap()];
        // SAFETY: the buffers are never read.
        unsafe { qp.post_receive_list(&[ReceiveRequest::new(slot as u64, &sge)]) }
            .expect("posting a receive");
    };
    for slot in 0..RECV_DEPTH {
        post(slot);
    }
    ctl.send("ready");
    let mut wcs = [ibv_wc::default(); 16];
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut received = 0u64;
    loop {
        for wc in cq.poll(&mut wcs).unwrap().iter() {
            assert!(wc.is_valid(), "sink: {}", status_name(wc));
            received += 1;
            post(wc.wr_id() as usize);
        }
        match ctl.poll_line(Duration::from_millis(1)) {
            Ok(Some(line)) if line == "count?" => ctl.send(&format!("count {received}")),
            Ok(Some(line)) => panic!("sink: unexpected {line:?}"),
            Ok(None) => {}
            // The test is gone: so are we.
            Err(_) => return,
        }
        assert!(Instant::now() < deadline, "sink: not killed within 300 s");
    }
}

// ---------------------------------------------------------------------------------------------
// The RC stream.

/// The local ACK timeout of the lossy streams: 4.096 µs × 2^14 ≈ 67 ms.
const STREAM_TIMEOUT: u8 = 14;

/// Sends `count` messages of the stream from end 0 to the peer on end 1 over a link with `netem`,
/// and checks that every one arrived once, in order, intact, with successful completions on both
/// sides; prints the figures.
fn rc_stream(test: &str, netem: &str, count: u64) {
    if common::test_device(test).is_none() || !common::in_vm(test, LINK_PART) {
        return;
    }
    let link = Link::up(Some(netem));
    let (ctx, gid_index) = link.open(0);
    let before = [counters(RXE[0]), counters(RXE[1])];
    let mut peer = Peer::spawn(&format!("rc {count}"));
    let (remote, mem) = parse_ep(&peer.recv("the receiver's endpoint", Duration::from_secs(60)));
    let remote_mem = mem.expect("the receiver's write region");
    assert_eq!(remote_mem.len, (WRITE_SLOTS * SLOT) as u64);
    let cq = ctx.create_cq(2 * WINDOW as i32, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let prepared = pd
        .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(gid_index)
        .set_max_send_wr(WINDOW as u32)
        .set_max_recv_wr(1)
        .set_timeout(STREAM_TIMEOUT)
        .set_retry_count(7)
        .set_rnr_retry(7)
        .build()
        .unwrap();
    peer.ctl.send(&ep_line(&prepared.endpoint(), None));
    let qp = prepared.handshake(remote).expect("handshake");
    let attr = qp.query().unwrap();
    assert_eq!(
        (attr.timeout, attr.retry_cnt, attr.rnr_retry),
        (Some(STREAM_TIMEOUT), Some(7), Some(7)),
        "the retry settings as the kernel has them"
    );
    let ready = peer.recv("ready", Duration::from_secs(60));
    assert_eq!(ready, "ready");
    let mut mr = pd.allocate::<u8>(WINDOW * SLOT).unwrap();
    let start = Instant::now();
    // Generous: the measured rates are far better (see the module docs).
    let deadline = start + Duration::from_secs(120) + Duration::from_millis(100) * count as u32;
    let mut next = 0u64;
    let mut completed = 0u64;
    let mut bytes = 0u64;
    let mut wcs = [ibv_wc::default(); 16];
    let mut last_progress = Instant::now();
    while completed < count {
        while next < count && next - completed < WINDOW as u64 {
            let slot = next as usize % WINDOW;
            let (op, size) = message(next);
            let at = slot * SLOT;
            fill(&mut mr[at..at + size], next);
            let sge = [mr.sge(at..at + size).unwrap()];
            let req = match op {
                Op::Send => SendRequest::send(next, &sge),
                Op::WriteImm => {
                    let target = remote_mem
                        .offset(((next as usize % WRITE_SLOTS) * SLOT) as u64)
                        .unwrap();
                    SendRequest::rdma_write_with_imm(next, &sge, target, next as u32)
                }
            };
            // SAFETY: the slot is written again only after this request's completion.
            unsafe { qp.post_send_list(&[req]) }
                .unwrap_or_else(|e| panic!("posting message {next}: {e}"));
            bytes += size as u64;
            next += 1;
        }
        let got = cq.poll(&mut wcs).unwrap();
        for wc in got.iter() {
            assert!(
                wc.is_valid(),
                "message {} completed with {}",
                wc.wr_id(),
                status_name(wc)
            );
            assert_eq!(wc.wr_id(), completed, "send completions out of order");
            let want = match message(completed).0 {
                Op::Send => ibv_wc_opcode::IBV_WC_SEND,
                Op::WriteImm => ibv_wc_opcode::IBV_WC_RDMA_WRITE,
            };
            assert_eq!(wc.opcode(), want, "opcode of message {completed}");
            completed += 1;
        }
        if got.is_empty() {
            assert!(
                last_progress.elapsed() < Duration::from_secs(120),
                "no completion for 120 s after {completed} of {count} (counters: {:?})",
                moved(&before[0], &counters(RXE[0]))
            );
            assert!(
                Instant::now() < deadline,
                "only {completed} of {count} messages completed in {:?}",
                start.elapsed()
            );
            if let Ok(Some(line)) | Err(line) = peer.ctl.poll_line(Duration::ZERO) {
                panic!("the receiver said {line:?} at message {completed}");
            }
        } else {
            last_progress = Instant::now();
        }
    }
    let elapsed = start.elapsed();
    peer.ctl.send("done");
    let ok = peer.recv("the receiver's result", Duration::from_secs(120));
    assert_eq!(
        ok,
        format!("ok {count} {bytes}"),
        "what the receiver checked"
    );
    peer.ctl.send("bye");
    peer.finish(Duration::from_secs(60));
    let dropped = link.dropped();
    let moved = [
        moved(&before[0], &counters(RXE[0])),
        moved(&before[1], &counters(RXE[1])),
    ];
    eprintln!(
        "{test}: {count} messages, {bytes} bytes in {elapsed:.1?} ({:.0} messages/s, {:.2} MB/s) \
         over `netem {netem}` on {}; netem dropped {} → and {} ←; counters {:?} / {:?}",
        count as f64 / elapsed.as_secs_f64(),
        bytes as f64 / elapsed.as_secs_f64() / 1e6,
        kernel(),
        dropped[0],
        dropped[1],
        moved[0],
        moved[1],
    );
    // The link really lost packets, and rxe really recovered from it.
    assert!(dropped[0] > 0, "netem dropped nothing on the way out");
    let retransmitted = moved[1].get("duplicate_request").copied().unwrap_or(0)
        + moved[1].get("out_of_seq_request").copied().unwrap_or(0)
        + moved[0].get("rcvd_seq_err").copied().unwrap_or(0)
        + moved[0].get("completer_retry_err").copied().unwrap_or(0);
    assert!(
        retransmitted > 0,
        "no sign of a retransmission in the counters: {moved:?}"
    );
    assert_eq!(
        moved[0].get("retry_exceeded_err"),
        None,
        "the retries ran out"
    );
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// How many messages a test sends: `UVERBS_LOSSY_COUNT` if set, else `long` with `UVERBS_LONG=1`,
/// else `ci`.
fn count(ci: u64, long_count: u64) -> u64 {
    if let Ok(n) = std::env::var("UVERBS_LOSSY_COUNT") {
        return n
            .parse()
            .unwrap_or_else(|_| panic!("UVERBS_LOSSY_COUNT={n:?} is not a count"));
    }
    if long() {
        long_count
    } else {
        ci
    }
}

#[test]
fn lossy_rc_stream_1_percent_loss() {
    rc_stream(
        "lossy_rc_stream_1_percent_loss",
        "limit 10000 delay 1ms reorder 2% 50% loss 1% duplicate 1%",
        count(2_000, 100_000),
    );
}

#[test]
fn lossy_rc_stream_5_percent_loss() {
    rc_stream(
        "lossy_rc_stream_5_percent_loss",
        "limit 10000 delay 1ms reorder 2% 50% loss 5% duplicate 1%",
        count(1_000, 100_000),
    );
}

// ---------------------------------------------------------------------------------------------
// UD under loss.

const UD_QKEY: u32 = 0x1ee7_0001;
/// The GRH area in front of every received datagram.
const GRH: usize = 40;

/// The payload size of datagram `seq` (at most the MTU).
fn datagram_size(seq: u64, mtu: usize) -> usize {
    [0, 1, 63, 64, 512, mtu - 1, mtu][seq as usize % 7]
}

#[test]
fn lossy_ud_datagrams_lost_never_corrupted() {
    let test = "lossy_ud_datagrams_lost_never_corrupted";
    if common::test_device(test).is_none() || !common::in_vm(test, LINK_PART) {
        return;
    }
    let count = count(1_000, 16_000);
    assert!(
        count <= 16_000,
        "the receiver posts a receive for every datagram"
    );
    // No duplication: a UD datagram has no sequence number, so a copy would rightly arrive twice.
    let netem = "limit 10000 delay 1ms reorder 25% 50% loss 5%";
    let link = Link::up(Some(netem));
    let (ctx, gid_index) = link.open(0);
    let mut peer = Peer::spawn(&format!("ud {count}"));
    let (remote, _) = parse_ep(&peer.recv("the receiver's endpoint", Duration::from_secs(60)));
    let cq = ctx.create_cq(2 * WINDOW as i32, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let prepared = pd
        .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_UD)
        .set_gid_index(gid_index)
        .set_qkey(UD_QKEY)
        .set_max_send_wr(WINDOW as u32)
        .set_max_recv_wr(1)
        .build()
        .unwrap();
    peer.ctl.send(&ep_line(&prepared.endpoint(), None));
    let qp = prepared.activate_ud().unwrap();
    let ready = peer.recv("ready", Duration::from_secs(60));
    let mtu: usize = ready
        .strip_prefix("ready ")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("not ready: {ready:?}"));
    let ah = pd
        .create_ah(&AddressVector {
            dgid: remote.gid,
            sgid_index: gid_index as u8,
            hop_limit: 64,
            port_num: 1,
            ..AddressVector::default()
        })
        .unwrap();
    let mut mr = pd.allocate::<u8>(WINDOW * mtu).unwrap();
    let stats_before = link.qdisc_stats();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(60) + Duration::from_millis(50) * count as u32;
    let (mut next, mut completed) = (0u64, 0u64);
    let mut wcs = [ibv_wc::default(); 16];
    while completed < count {
        while next < count && next - completed < WINDOW as u64 {
            let at = next as usize % WINDOW * mtu;
            let size = datagram_size(next, mtu);
            fill(&mut mr[at..at + size], next);
            let sge = [mr.sge(at..at + size).unwrap()];
            let req =
                SendRequest::send_ud_with_imm(next, &sge, &ah, remote.num, UD_QKEY, next as u32);
            // SAFETY: the slot is written again only after this request's completion.
            unsafe { qp.post_send_list(&[req]) }
                .unwrap_or_else(|e| panic!("posting datagram {next}: {e}"));
            next += 1;
        }
        for wc in cq.poll(&mut wcs).unwrap().iter() {
            assert!(
                wc.is_valid(),
                "datagram {} completed with {}",
                wc.wr_id(),
                status_name(wc)
            );
            assert_eq!(wc.wr_id(), completed, "UD send completions out of order");
            assert_eq!(wc.opcode(), ibv_wc_opcode::IBV_WC_SEND);
            completed += 1;
        }
        assert!(
            Instant::now() < deadline,
            "only {completed} of {count} datagrams sent in {:?}",
            start.elapsed()
        );
    }
    let elapsed = start.elapsed();
    // Each datagram is one packet out of end 0, and each is out once its send completed: wait
    // until netem has passed on or dropped them all.
    let wait_until = Instant::now() + Duration::from_secs(60);
    let delta = |now: [QdiscStats; 2], i: usize| QdiscStats {
        sent: now[i].sent - stats_before[i].sent,
        dropped: now[i].dropped - stats_before[i].dropped,
        backlog: now[i].backlog,
    };
    let out = loop {
        let now = link.qdisc_stats();
        let d = delta(now, 0);
        if d.backlog == 0 && d.sent + d.dropped >= count {
            break [d, delta(now, 1)];
        }
        assert!(
            Instant::now() < wait_until,
            "netem on {} still holds datagrams after 60 s: {d:?}",
            VETH[0]
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    peer.ctl.send(&format!("done {}", out[0].sent));
    let result = peer.recv("the receiver's count", Duration::from_secs(120));
    peer.ctl.send("bye");
    peer.finish(Duration::from_secs(60));
    let f: Vec<u64> = result
        .strip_prefix("ok ")
        .unwrap_or_else(|| panic!("receiver: {result:?}"))
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let (received, distinct) = (f[0], f[1]);
    let [fwd, back] = out;
    let dropped = fwd.dropped;
    eprintln!(
        "{test}: {count} datagrams sent in {elapsed:.1?} over `netem {netem}` on {}; {received} \
         received, all intact; netem passed {} and dropped {dropped}",
        kernel(),
        fwd.sent
    );
    assert_eq!(received, distinct, "no datagram arrives twice");
    assert!(received < count, "5 % loss, yet all {count} arrived");
    assert!(
        received * 10 >= count * 8,
        "only {received} of {count} arrived at 5 % loss"
    );
    // The link carries nothing but the datagrams (no IPv6, no ARP; UD has no acknowledgements):
    // netem on end 0 saw each datagram once, and netem on end 1 saw nothing.
    assert_eq!(
        fwd.sent + fwd.dropped,
        count,
        "packets out of {} other than the {count} datagrams: {fwd:?}",
        VETH[0]
    );
    assert_eq!(
        (back.sent, back.dropped),
        (0, 0),
        "packets out of {}: {back:?}",
        VETH[1]
    );
    // Exactly netem's drops are lost: every datagram it passed on arrived.
    assert_eq!(
        count - received,
        dropped,
        "{} datagrams missing, and netem dropped {dropped}: {}",
        count - received,
        if count - received > dropped {
            "some were lost after netem"
        } else {
            "some arrived that netem dropped"
        }
    );
}

// ---------------------------------------------------------------------------------------------
// A peer killed mid-transfer.

/// The message size of the stream to the killed peer.
const SINK_SIZE: usize = 4096;

/// The local ACK timeout `4.096 µs × 2^timeout`.
fn ack_timeout(timeout: u8) -> Duration {
    Duration::from_nanos(4096 << timeout)
}

/// Streams SENDs to a peer process and kills it with SIGKILL mid-transfer; the first error
/// completion and how long after the kill it came, having checked that every later one is a flush.
/// With `give_up`, the test itself moves the queue pair to the error state once that long has
/// passed after the kill without an error completion (so that even a queue pair that retries for
/// ever cannot hang the test).
///
/// The scenario needs a working stream before the kill. Under TCG on a loaded host the guest can
/// stall for longer than a short ACK timeout times the retries (4 ms × 4 for timeout 10, retry
/// 3), and a SEND then fails before the kill: the scenario is run again, at most three times in
/// all, saying so each time, and the test fails if it never gets that far.
fn kill_peer_mid_transfer(
    ctx: &Context,
    gid_index: u32,
    timeout: u8,
    retry: u8,
    give_up: Option<Duration>,
) -> (ibv_wc, Duration) {
    const ATTEMPTS: u32 = 3;
    for attempt in 1.. {
        match kill_peer_once(ctx, gid_index, timeout, retry, give_up) {
            Ok(r) => return r,
            Err(why) if attempt < ATTEMPTS => eprintln!(
                "{why}: the stream stalled before the kill (timeout {timeout}, retry_cnt {retry}); \
                 running the scenario again ({attempt} of {ATTEMPTS})"
            ),
            Err(why) => panic!("{why}, in each of {ATTEMPTS} attempts"),
        }
    }
    unreachable!()
}

/// One run of [`kill_peer_mid_transfer`]'s scenario; `Err` when a SEND failed before the kill.
fn kill_peer_once(
    ctx: &Context,
    gid_index: u32,
    timeout: u8,
    retry: u8,
    give_up: Option<Duration>,
) -> Result<(ibv_wc, Duration), String> {
    let mut peer = Peer::spawn("sink");
    let (remote, _) = parse_ep(&peer.recv("the sink's endpoint", Duration::from_secs(60)));
    let cq = ctx.create_cq(2 * WINDOW as i32, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let prepared = pd
        .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(gid_index)
        .set_max_send_wr(WINDOW as u32)
        .set_max_recv_wr(1)
        .set_timeout(timeout)
        .set_retry_count(retry)
        .set_rnr_retry(7)
        .build()
        .unwrap();
    peer.ctl.send(&ep_line(&prepared.endpoint(), None));
    let qp = prepared.handshake(remote).expect("handshake");
    let attr = qp.query().unwrap();
    assert_eq!((attr.timeout, attr.retry_cnt), (Some(timeout), Some(retry)));
    let ready = peer.recv("ready", Duration::from_secs(60));
    assert_eq!(ready, "ready");
    let mr = pd.allocate::<u8>(WINDOW * SINK_SIZE).unwrap();
    let mut wcs = [ibv_wc::default(); 16];
    let (mut next, mut completed) = (0u64, 0u64);
    let mut killed_at: Option<Instant> = None;
    let mut errors: Vec<(ibv_wc, Duration)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    // Until the first error: keep the window full.
    while errors.is_empty() {
        while next - completed < WINDOW as u64 {
            let at = next as usize % WINDOW * SINK_SIZE;
            let sge = [mr.sge(at..at + SINK_SIZE).unwrap()];
            // SAFETY: the buffer is never written.
            unsafe { qp.post_send_list(&[SendRequest::send(next, &sge)]) }
                .unwrap_or_else(|e| panic!("posting SEND {next}: {e}"));
            next += 1;
        }
        for wc in cq.poll(&mut wcs).unwrap().iter() {
            assert_eq!(wc.wr_id(), completed, "completions out of order");
            completed += 1;
            if !wc.is_valid() {
                let Some(t) = killed_at.map(|k| k.elapsed()) else {
                    let _ = peer.child.kill();
                    return Err(format!(
                        "SEND {} failed with {} before the peer was killed",
                        wc.wr_id(),
                        status_name(wc)
                    ));
                };
                errors.push((*wc, t));
            } else if !errors.is_empty() {
                panic!("SEND {} succeeded after an earlier one failed", wc.wr_id());
            }
        }
        // 64 messages into the stream, with the window full: kill the peer.
        if killed_at.is_none() && completed >= 64 {
            peer.child.kill().expect("SIGKILL to the peer");
            killed_at = Some(Instant::now());
        }
        if let (Some(k), Some(limit)) = (killed_at, give_up) {
            if errors.is_empty() && k.elapsed() > limit {
                let given_up = k.elapsed();
                qp.modify(&QpAttr {
                    qp_state: Some(ibv_qp_state::IBV_QPS_ERR),
                    ..QpAttr::default()
                })
                .expect("moving the queue pair to the error state");
                let wc = wait_completion(&cq, completed);
                completed += 1;
                errors.push((wc, given_up));
            }
        }
        assert!(
            Instant::now() < deadline,
            "no error completion within 120 s (timeout {timeout}, retry_cnt {retry}; \
             {completed} completed, killed: {})",
            killed_at.is_some()
        );
    }
    // The rest are flushed.
    let drain = Instant::now() + Duration::from_secs(60);
    while completed < next {
        for wc in cq.poll(&mut wcs).unwrap().iter() {
            assert_eq!(wc.wr_id(), completed, "completions out of order");
            completed += 1;
            errors.push((*wc, killed_at.unwrap().elapsed()));
        }
        assert!(
            Instant::now() < drain,
            "only {completed} of {next} completions after the error"
        );
    }
    let status = peer.wait(Duration::from_secs(30));
    assert!(
        matches!(status, Some(s) if !s.success()),
        "the peer was killed: {status:?}"
    );
    let (first, after) = errors[0];
    for (wc, _) in &errors[1..] {
        assert_eq!(
            wc.status(),
            ibv_wc_status::IBV_WC_WR_FLUSH_ERR,
            "SEND {} after the failed one: {}",
            wc.wr_id(),
            status_name(wc)
        );
    }
    assert_eq!(
        qp.query().unwrap().qp_state,
        Some(ibv_qp_state::IBV_QPS_ERR),
        "the queue pair is in the error state"
    );
    eprintln!(
        "killed peer, timeout {timeout} ({:?}), retry_cnt {retry}: {} after {after:?}, then {} \
         flushed; {completed} SENDs in all",
        ack_timeout(timeout),
        uverbs::wc_status_str(first.status()),
        errors.len() - 1
    );
    Ok((first, after))
}

/// The completion of `wr_id`, the next one on `cq`, within 60 s.
fn wait_completion(cq: &CompletionQueue<'_>, wr_id: u64) -> ibv_wc {
    let mut wc = [ibv_wc::default(); 1];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let [got] = cq.poll(&mut wc).unwrap() {
            assert_eq!(got.wr_id(), wr_id, "completions out of order");
            return *got;
        }
        assert!(
            Instant::now() < deadline,
            "no completion for {wr_id} within 60 s"
        );
    }
}

#[test]
fn lossy_peer_killed_retry_exceeded() {
    let test = "lossy_peer_killed_retry_exceeded";
    if common::test_device(test).is_none() || !common::in_vm(test, LINK_PART) {
        return;
    }
    let link = Link::up(None);
    let (ctx, gid_index) = link.open(0);
    let before = counters(RXE[0]);
    // How long the peer's process may take to die and its queue pair to go, under TCG.
    let exit_allowance = Duration::from_secs(2);
    // rxe's timer counts jiffies (4 ms at the Debian kernels' HZ=250), rounding the timeout down.
    let jiffy = Duration::from_millis(4);
    for (timeout, retry) in [(10u8, 3u8), (16, 1)] {
        let t = ack_timeout(timeout);
        let (first, after) = kill_peer_mid_transfer(&ctx, gid_index, timeout, retry, None);
        assert_eq!(
            first.status(),
            ibv_wc_status::IBV_WC_RETRY_EXC_ERR,
            "timeout {timeout}, retry_cnt {retry}: the first failed SEND: {}",
            status_name(&first)
        );
        // Every expiry of the retransmission timer without an ACK uses up one retry, and the one
        // after the last retry fails the request: `retry` timeouts at least after the peer's death
        // (which comes after the kill), less the time between the last ACK that restarted the
        // timer and the kill (one jiffy allowed: a run on 6.1 saw the error 264.25 ms after the
        // kill against 264.44 ms for the timeouts alone)...
        let least = (t.saturating_sub(jiffy) * u32::from(retry)).saturating_sub(jiffy);
        assert!(
            after >= least,
            "timeout {timeout} ({t:?}), retry_cnt {retry}: the error came {after:?} after the kill \
             (at least {least:?} expected)"
        );
        // ...and `retry + 1` at most after it (with slack for TCG's timers).
        let bound = exit_allowance + t * (u32::from(retry) + 1) * 3;
        assert!(
            after <= bound,
            "timeout {timeout} ({t:?}), retry_cnt {retry}: the error came {after:?} after the \
             kill (bound {bound:?})"
        );
    }
    // rxe reads a retry count of 7 as "retry for ever" (rxe_comp.c: `if (qp->comp.retry_cnt != 7)
    // qp->comp.retry_cnt--;`), as the specification does only for the RNR retry count: with the
    // peer gone, the queue pair keeps retrying. 2 s is some 500 timeouts of 4 ms, where the
    // specification has it fail after 8.
    let patience = Duration::from_secs(2);
    let (first, after) = kill_peer_mid_transfer(&ctx, gid_index, 10, 7, Some(patience));
    assert_eq!(
        first.status(),
        ibv_wc_status::IBV_WC_WR_FLUSH_ERR,
        "retry_cnt 7: rxe retries for ever, so only the test's own move to the error state ends \
         the requests, {after:?} after the kill: {}",
        status_name(&first)
    );
    let moved = moved(&before, &counters(RXE[0]));
    assert_eq!(
        moved.get("retry_exceeded_err"),
        Some(&2),
        "rxe counted the two exceeded retry counts: {moved:?}"
    );
}
