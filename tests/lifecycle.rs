//! Lifecycle: thousands of create/destroy cycles of every kind of object with no growth in open
//! file descriptors, memory mappings or kernel objects; object graphs dropped in every order the
//! borrow checker allows, without a panic or a destroy error; queue pairs dropped with work still
//! outstanding.
//!
//! What is counted: the entries of `/proc/self/fd` and the lines of `/proc/self/maps` everywhere;
//! and the objects the device holds:
//!
//! * on a kernel device (the VM's rxe), the `rdma resource show` totals of the device and the
//!   `rdma resource show qp|cq|pd|mr|srq|ctx` entries of this process. The kernel's resource
//!   tracking (restrack) has no address handles or memory windows (Linux 6.1 and 6.12 track PDs,
//!   CQs, QPs, CM ids, MRs, contexts, counters and SRQs), and nothing else the kernel shows
//!   counts them: rxe keeps them in pools whose sizes it does not export, and the uverbs file's
//!   handle table is not visible. So on rxe an address handle or a memory window that leaked
//!   would be seen only if it held an fd or a mapping (neither does): **AHs and MWs are not
//!   counted on rxe**, and their tests say so when they run there;
//! * on the mlx5 model, its kernel half's handle tables (`Mlx5Model::objects`): open files,
//!   contexts, PDs, MRs, CQs, QPs, SRQs and AHs (memory windows do not exist on mlx5), plus its
//!   event files as fds and its UAR pages as memfd mappings.
//!
//! Each churn first holds one object and checks that the counts see it (one more of its kind),
//! so a count that stopped working fails rather than passing.
//!
//! Cycles: 1 000 per kind on rxe in the VM (TCG), 10 000 on the model; `UVERBS_LONG=1` runs 10 000
//! everywhere (`UVERBS_LIFECYCLE_CYCLES=N` sets any count). Drop orders: every order on the model;
//! in the VM a spread sample of them (every free object in every position), all of them with
//! `UVERBS_LONG=1`.
//!
//! ```sh
//! UVERBS_LONG=1 cargo test --all-features --test lifecycle          # mlx5 model
//! UVERBS_LONG=1 tests/vm/suite --kernel 6.12 --timeout 3600 -- lifecycle_   # rxe (~8 min)
//! ```
//!
//! The tests take a lock: the counts are per process, and the test harness runs tests in threads.
//!
//! No test sleeps to let work happen: completions a test relies on being in a CQ are waited for
//! with an RDMA READ fence ([`read_fence`], in `tests/common/verbs.rs`), and what is left in a CQ
//! after its queue pairs are destroyed is drained once (a destroyed queue pair completes nothing
//! more).

mod common;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use common::behaviour::Rings;
use common::verbs::{poll_n, read_fence, Fence, RcPair};
use common::{any_device, long, TestDevice};
use uverbs::{
    ibv_qp_type, ibv_wc, AddressHandle, AddressVector, Capability, CompletionChannel,
    CompletionQueue, Context, ErrorExt, MemoryRegion, MemoryWindow, ProtectionDomain, QueuePair,
    ReceiveRequest, SendRequest, SharedReceiveQueue,
};
use uverbs_drivers::Error;

/// The GID index of `::ffff:127.0.0.1` (RoCE v2) on rxe0 over lo, and on the model.
const GID_INDEX: u32 = 1;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Create/destroy cycles per kind.
fn cycles(dev: &TestDevice) -> usize {
    if let Some(n) = std::env::var("UVERBS_LIFECYCLE_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    // What a run can afford is the test equipment's: the model in this process is fast, a kernel
    // device here is the VM's emulated rxe.
    if long() || dev.model().is_some() {
        10_000
    } else {
        1_000
    }
}

/// What the process holds: open fds, mappings, and the device's RDMA objects.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    fds: usize,
    maps: usize,
    /// On a kernel device, `rdma resource show` of the device (`pd`, `cq`, `qp`, `mr`, `ctx`,
    /// `srq`, ...), and this process's entries in `rdma resource show qp|cq|pd|mr|srq|ctx` (as `own
    /// qp` ...); on the model, its objects (`file`, `ctx`, `pd`, `mr`, `cq`, `qp`, `srq`, `ah`).
    objects: BTreeMap<String, usize>,
}

/// Mappings may come and go with the allocator (a heap that grows, a large block mmapped and
/// returned): a leak of one per cycle is thousands, far above this.
const MAPS_SLACK: usize = 8;

fn count_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn count_maps() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

/// Runs `rdma` with `args`, its stdout.
fn rdma(args: &[&str]) -> String {
    let out = common::run("rdma", args);
    assert!(
        out.status.success(),
        "rdma {args:?}: {}",
        common::stderr(&out)
    );
    common::stdout(&out)
}

/// Parses the `rdma resource show` line of `dev`: `0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0`.
fn resource_totals(text: &str, dev: &str) -> BTreeMap<String, usize> {
    let needle = format!(" {dev}: ");
    let line = text
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no line for {dev} in `rdma resource show`:\n{text}"));
    let rest = &line[line.find(&needle).unwrap() + needle.len()..];
    let words: Vec<&str> = rest.split_whitespace().collect();
    let counts: BTreeMap<String, usize> = words
        .chunks(2)
        .filter_map(|kv| match kv {
            [k, v] => v.parse().ok().map(|v| (k.to_string(), v)),
            _ => None,
        })
        .collect();
    assert!(
        counts.contains_key("qp") && counts.contains_key("pd"),
        "cannot parse {line:?}"
    );
    counts
}

/// The entries of `rdma resource show KIND` that belong to device `dev` and to a thread of this
/// process (the kernel records the creating task, and `pid` is its thread id): lines such as
/// `dev rxe0 cqn 1 cqe 511 users 2 ... pid 302 comm x` (queue pairs: `link rxe0/1 ...`).
fn own_entries(text: &str, dev: &str, tids: &[u32]) -> usize {
    let (by_dev, by_link) = (format!("dev {dev} "), format!("link {dev}/"));
    text.lines()
        .filter(|l| l.starts_with(&by_dev) || l.starts_with(&by_link))
        .filter(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words
                .windows(2)
                .any(|w| w[0] == "pid" && w[1].parse().is_ok_and(|p: u32| tids.contains(&p)))
        })
        .count()
}

/// The thread ids of this process.
fn threads() -> Vec<u32> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The `rdma resource show KIND` listings a snapshot takes by default (each is a process to run,
/// which TCG makes slow: [`churn`] takes only those of the kind it cycles).
const ALL_KINDS: &[&str] = &["qp", "cq", "pd", "mr", "srq", "ctx"];

fn snapshot(dev: &TestDevice) -> Snapshot {
    snapshot_of(dev, ALL_KINDS)
}

/// A snapshot with the per-process listings of `kinds` only (the device totals always).
fn snapshot_of(dev: &TestDevice, kinds: &[&str]) -> Snapshot {
    let fds = count_fds();
    let maps = count_maps();
    let objects = match model_objects(dev) {
        Some(m) => m,
        None => {
            let mut k = resource_totals(&rdma(&["resource", "show"]), dev.name());
            for kind in kinds.iter().filter(|k| ALL_KINDS.contains(k)) {
                let text = rdma(&["resource", "show", kind]);
                k.insert(
                    format!("own {kind}"),
                    own_entries(&text, dev.name(), &threads()),
                );
            }
            k
        }
    };
    Snapshot { fds, maps, objects }
}

/// The model's objects (its handle tables), by the names `rdma resource show` uses; `None` on a
/// kernel device.
fn model_objects(dev: &TestDevice) -> Option<BTreeMap<String, usize>> {
    if let Some(model) = dev.model() {
        let o = model.objects();
        return Some(
            [
                ("file", o.files),
                ("ctx", o.contexts),
                ("pd", o.pds),
                ("mr", o.mrs),
                ("cq", o.cqs),
                ("qp", o.qps),
                ("srq", o.srqs),
                ("ah", o.ahs),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        );
    }
    let _ = dev;
    None
}

/// The counts that show one object of `kind` (`pd`, `ah`, `file` ...) on `dev`: on the model its
/// table count; on a kernel device the device total and this process's entries, for the kinds
/// `rdma resource` tracks. Kinds nothing counts there (address handles and memory windows on rxe,
/// the model's files) are left out, and the test says so.
fn counted_as(dev: &TestDevice, test: &str, kinds: &[&str]) -> Vec<String> {
    let mut keys = Vec::new();
    for &kind in kinds {
        // The model's handle tables count every kind (test equipment: see `model_objects`).
        if dev.model().is_some() {
            keys.push(kind.to_string());
        } else if ALL_KINDS.contains(&kind) {
            keys.push(kind.to_string());
            keys.push(format!("own {kind}"));
        } else if kind != "file" {
            eprintln!(
                "{test} ({}): NOT COUNTED: {kind} objects (the kernel's `rdma resource` does not \
                 track them, and nothing else the kernel shows counts them); only fds, mappings \
                 and the other kinds are checked",
                dev.name()
            );
        }
    }
    keys
}

/// Asserts that `after` holds nothing more than `before`.
fn assert_no_growth(what: &str, before: &Snapshot, after: &Snapshot) {
    assert_eq!(after.fds, before.fds, "{what}: open fds");
    assert!(
        after.maps <= before.maps + MAPS_SLACK,
        "{what}: mappings grew from {} to {}",
        before.maps,
        after.maps
    );
    assert_eq!(after.objects, before.objects, "{what}: device objects");
}

/// How holding one object shows in a snapshot: the counts it must raise.
#[derive(Debug, Clone, Copy, Default)]
struct Shows {
    fds: bool,
    maps: bool,
    /// The kinds of device objects it adds one of (`pd`, `ah`, `file` ...; see [`counted_as`]).
    objects: &'static [&'static str],
}

/// Creates and destroys with `make` `cycles(dev)` times and checks that nothing grew. Before that,
/// holds one object to check that the counting sees it (`shows`), so that the test could fail.
fn churn<T>(dev: &TestDevice, kind: &str, shows: Shows, mut make: impl FnMut(usize) -> T) {
    let n = cycles(dev);
    // Warm up: first uses may allocate for good (the allocator, the test harness).
    for i in 0..3 {
        drop(make(i));
    }
    let drops = uverbs_drivers::drop_errors();
    let kinds = shows.objects;
    let keys = counted_as(dev, kind, kinds);
    let before = snapshot_of(dev, kinds);
    let held = make(0);
    let with_one = snapshot_of(dev, kinds);
    drop(held);
    if shows.fds {
        assert!(with_one.fds > before.fds, "{kind}: one held: {with_one:?}");
    }
    if shows.maps {
        assert!(
            with_one.maps > before.maps,
            "{kind}: one held: {with_one:?}"
        );
    }
    let (b, w) = (&before.objects, &with_one.objects);
    for k in &keys {
        let (Some(x), Some(y)) = (b.get(k), w.get(k)) else {
            panic!("{kind}: no count {k:?} in {b:?} / {w:?}");
        };
        assert_eq!(
            *y,
            x + 1,
            "{kind}: one held shows as one more {k}: {b:?} -> {w:?}"
        );
    }
    // And as nothing else: every other count is unchanged.
    for (k, x) in b {
        if !keys.contains(k) {
            assert_eq!(
                w.get(k),
                Some(x),
                "{kind}: one held changes {k}: {b:?} -> {w:?}"
            );
        }
    }
    let started = Instant::now();
    for i in 0..n {
        drop(make(i));
    }
    let elapsed = started.elapsed();
    let after = snapshot_of(dev, kinds);
    assert_no_growth(&format!("{n} {kind} cycles"), &before, &after);
    assert_eq!(
        uverbs_drivers::drop_errors(),
        drops,
        "{kind}: destroy errors"
    );
    eprintln!(
        "lifecycle ({}): {n} {kind} create/destroy cycles in {elapsed:.1?} ({:.0} µs each); \
         fds {} maps {} kernel {:?}",
        dev.name(),
        elapsed.as_secs_f64() * 1e6 / n as f64,
        after.fds,
        after.maps,
        after.objects
    );
}

/// The device under the lock, or `None` (skipped).
fn device(test: &str) -> Option<(std::sync::MutexGuard<'static, ()>, TestDevice)> {
    let guard = serial();
    any_device(test).map(|d| (guard, d))
}

fn objects(kinds: &'static [&'static str]) -> Shows {
    Shows {
        objects: kinds,
        ..Shows::default()
    }
}

#[test]
fn lifecycle_contexts() {
    let Some((_lock, dev)) = device("lifecycle_contexts") else {
        return;
    };
    // A context is the device file and its async event file (on the model: a file of the
    // model, with a context).
    let shows = Shows {
        fds: true,
        objects: &["ctx", "file"],
        ..Shows::default()
    };
    churn(&dev, "context", shows, |_| dev.open());
}

#[test]
fn lifecycle_protection_domains() {
    let Some((_lock, dev)) = device("lifecycle_protection_domains") else {
        return;
    };
    let ctx = dev.open();
    churn(&dev, "protection domain", objects(&["pd"]), |_| {
        ctx.alloc_pd().unwrap()
    });
}

#[test]
fn lifecycle_memory_regions() {
    let Some((_lock, dev)) = device("lifecycle_memory_regions") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    churn(&dev, "memory region", objects(&["mr"]), |i| {
        pd.allocate::<u8>(4096 + i % 7).unwrap()
    });
}

#[test]
fn lifecycle_lent_mapped_and_raw_memory_regions() {
    let Some((_lock, dev)) = device("lifecycle_lent_mapped_and_raw_memory_regions") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let access = uverbs::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
        | uverbs::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE;
    let mut buf = vec![0u8; 8192];
    let (ptr, len) = (buf.as_mut_ptr(), buf.len());
    churn(&dev, "lent memory region", objects(&["mr"]), |i| {
        // SAFETY: `churn` drops each region before it makes the next, so this is the only
        // borrow of `buf` alive, and `buf` outlives them all; `churn` drops every region it
        // is given (none is leaked), before `buf` goes.
        unsafe {
            let slice = std::slice::from_raw_parts_mut(ptr, len);
            pd.register_slice(&mut slice[..4096 + i % 7], access)
        }
        .unwrap()
    });
    churn(&dev, "raw memory region", objects(&["mr"]), |i| {
        // SAFETY: as above: `buf` outlives every region, and nothing else touches it.
        unsafe { pd.register_raw(ptr.wrapping_add(i % 64), 4096, access) }.unwrap()
    });
    let shows = Shows {
        maps: true,
        objects: &["mr"],
        ..Shows::default()
    };
    churn(&dev, "mapped memory region", shows, |i| {
        let map = uverbs::memmap2::MmapMut::map_anon(4096 * (1 + i % 3)).unwrap();
        pd.register_mapping::<u64>(map, access).unwrap()
    });
    drop(buf);
}

#[test]
fn lifecycle_implicit_on_demand_regions_and_timestamped_cqs() {
    let Some((_lock, dev)) = device("lifecycle_implicit_on_demand_regions_and_timestamped_cqs")
    else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    // Where the device has them (tests/odp.rs and tests/timestamps.rs check the refusals
    // elsewhere: rxe has neither on 6.1 and 6.12).
    if ctx.supports(Capability::ImplicitOnDemandPaging) {
        churn(&dev, "implicit on-demand region", objects(&["mr"]), |_| {
            // SAFETY: the keys are never used: the region is made and dropped.
            unsafe {
                pd.register_implicit_on_demand(uverbs::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE)
            }
            .unwrap()
        });
    } else {
        eprintln!(
            "SKIPPED implicit on-demand regions: {} has none",
            dev.name()
        );
    }
    if !ctx.supports(Capability::CompletionTimestamps) {
        eprintln!(
            "SKIPPED timestamped CQs: {} has no completion timestamps",
            dev.name()
        );
        return;
    }
    let attr = |i: usize| uverbs::CqAttr {
        min_entries: 1 + (i % 64) as i32,
        timestamps: true,
        ..uverbs::CqAttr::default()
    };
    churn(
        &dev,
        "timestamped completion queue",
        objects(&["cq"]),
        |i| ctx.create_cq_ex(&attr(i)).unwrap(),
    );
}

#[test]
fn lifecycle_completion_queues() {
    let Some((_lock, dev)) = device("lifecycle_completion_queues") else {
        return;
    };
    let ctx = dev.open();
    // A ring the kernel allocates is mapped (rxe); one in the process's own memory is not (mlx5:
    // its buffer is ours, its doorbell record too).
    let shows = Shows {
        maps: dev.behaviour().rings == Rings::Kernel,
        objects: &["cq"],
        ..Shows::default()
    };
    churn(&dev, "completion queue", shows, |i| {
        ctx.create_cq(1 + (i % 64) as i32, i as isize).unwrap()
    });
}

#[test]
fn lifecycle_completion_queues_with_a_channel() {
    let Some((_lock, dev)) = device("lifecycle_completion_queues_with_a_channel") else {
        return;
    };
    let ctx = dev.open();
    let channel = ctx.create_comp_channel().unwrap();
    churn(
        &dev,
        "completion queue with a channel",
        objects(&["cq"]),
        |i| {
            let cq = ctx
                .create_cq_with_channel(16, i as isize, &channel, 0)
                .unwrap();
            cq.req_notify(i % 2 == 0).unwrap();
            cq
        },
    );
    assert_eq!(channel.try_get_event().unwrap(), None);
}

#[test]
fn lifecycle_completion_channels() {
    let Some((_lock, dev)) = device("lifecycle_completion_channels") else {
        return;
    };
    let ctx = dev.open();
    let shows = Shows {
        fds: true,
        ..Shows::default()
    };
    churn(&dev, "completion channel", shows, |_| {
        ctx.create_comp_channel().unwrap()
    });
}

#[test]
fn lifecycle_rc_queue_pairs() {
    let Some((_lock, dev)) = device("lifecycle_rc_queue_pairs") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64, 0).unwrap();
    let shows = Shows {
        maps: dev.behaviour().rings == Rings::Kernel,
        objects: &["qp"],
        ..Shows::default()
    };
    churn(&dev, "RC queue pair", shows, |i| {
        pd.create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
            .set_gid_index(GID_INDEX)
            .set_max_send_wr(1 + (i % 32) as u32)
            .set_max_recv_wr(1 + (i % 16) as u32)
            .build()
            .unwrap()
            .into_queue_pair()
    });
}

#[test]
fn lifecycle_ud_queue_pairs() {
    let Some((_lock, dev)) = device("lifecycle_ud_queue_pairs") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64, 0).unwrap();
    let shows = Shows {
        maps: dev.behaviour().rings == Rings::Kernel,
        objects: &["qp"],
        ..Shows::default()
    };
    churn(&dev, "UD queue pair", shows, |i| {
        // Every other one brought to RTS.
        let p = pd
            .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_UD)
            .set_gid_index(GID_INDEX)
            .set_qkey(0x1111)
            .set_max_send_wr(4)
            .set_max_recv_wr(4)
            .build()
            .unwrap();
        if i % 2 == 0 {
            p.activate_ud().unwrap()
        } else {
            p.into_queue_pair()
        }
    });
}

#[test]
fn lifecycle_shared_receive_queues() {
    let Some((_lock, dev)) = device("lifecycle_shared_receive_queues") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let shows = Shows {
        maps: dev.behaviour().rings == Rings::Kernel,
        objects: &["srq"],
        ..Shows::default()
    };
    churn(&dev, "shared receive queue", shows, |i| {
        pd.create_srq(1 + (i % 32) as u32, 1).unwrap()
    });
}

fn loopback_av(ctx: &Context) -> AddressVector {
    let gid = ctx
        .gid_table()
        .iter()
        .find(|g| g.gid_index == GID_INDEX && g.port_num == 1)
        .expect("GID index 1 on port 1")
        .gid;
    AddressVector {
        dgid: Some(gid),
        sgid_index: GID_INDEX as u8,
        hop_limit: 64,
        port_num: 1,
        ..AddressVector::default()
    }
}

#[test]
fn lifecycle_address_handles() {
    let Some((_lock, dev)) = device("lifecycle_address_handles") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let av = loopback_av(&ctx);
    // The model counts address handles; on rxe nothing does (see the module's documentation):
    // there the cycles check only that nothing else grows.
    churn(&dev, "address handle", objects(&["ah"]), |_| {
        pd.create_ah(&av).unwrap()
    });
}

#[test]
fn lifecycle_memory_windows() {
    let Some((_lock, dev)) = device("lifecycle_memory_windows") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    if !ctx.supports(Capability::MemoryWindows) {
        // No memory windows (mlx5): a typed Unsupported, every time, and nothing is created.
        churn(&dev, "refused memory window", Shows::default(), |_| {
            let e = pd.alloc_mw().unwrap_err();
            assert!(
                matches!(e.uverbs_error(), Some(Error::Unsupported { .. })),
                "{e}"
            );
        });
        return;
    }
    // Nothing counts memory windows on rxe (see the module's documentation): the cycles check
    // that nothing else grows.
    churn(&dev, "memory window", objects(&["mw"]), |_| {
        pd.alloc_mw().unwrap()
    });
}

// ---------------------------------------------------------------------------------------------
// Drop orders.

/// The objects of a graph that borrow nothing (they keep what they need alive by reference
/// counting), so the borrow checker lets them go at any point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Free {
    Channel,
    Mr,
    Srq,
    Ah,
    Mw,
}

/// A drop order: the queue pair first, then the protection domain and the CQ (in either order),
/// then the context (the borrow checker allows no other order of these), with the free objects
/// interleaved: `slots[i]` are dropped, in order, before the `i`-th of those four (`slots[4]`
/// after the context).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    pd_before_cq: bool,
    slots: [Vec<Free>; 5],
}

/// Every plan for the free objects `free`.
fn all_plans(free: &[Free]) -> Vec<Plan> {
    let mut out = Vec::new();
    let mut perm = free.to_vec();
    perm.sort();
    loop {
        // Each free object's slot: a non-decreasing assignment keeps the permutation's order.
        let k = perm.len();
        let mut cut = vec![0usize; k];
        loop {
            let mut slots: [Vec<Free>; 5] = Default::default();
            for (f, &s) in perm.iter().zip(&cut) {
                slots[s].push(*f);
            }
            for pd_before_cq in [true, false] {
                out.push(Plan {
                    pd_before_cq,
                    slots: slots.clone(),
                });
            }
            // Next non-decreasing sequence over 0..5.
            let Some(i) = (0..k).rev().find(|&i| cut[i] < 4) else {
                break;
            };
            cut[i] += 1;
            for j in i + 1..k {
                cut[j] = cut[i];
            }
        }
        if !next_permutation(&mut perm) {
            break;
        }
    }
    out
}

fn next_permutation<T: Ord>(v: &mut [T]) -> bool {
    let Some(i) = (1..v.len()).rev().find(|&i| v[i - 1] < v[i]) else {
        return false;
    };
    let j = (i..v.len()).rev().find(|&j| v[j] > v[i - 1]).unwrap();
    v.swap(i - 1, j);
    v[i..].reverse();
    true
}

/// The free objects of one graph, each dropped when a plan says so.
#[derive(Default)]
struct FreeObjects {
    channel: Option<CompletionChannel>,
    mr: Option<MemoryRegion<u8>>,
    srq: Option<SharedReceiveQueue>,
    ah: Option<AddressHandle>,
    mw: Option<MemoryWindow>,
}

impl FreeObjects {
    fn drop_these(&mut self, which: &[Free]) {
        for f in which {
            let gone = match f {
                Free::Channel => self.channel.take().map(drop),
                Free::Mr => self.mr.take().map(drop),
                Free::Srq => self.srq.take().map(drop),
                Free::Ah => self.ah.take().map(drop),
                Free::Mw => self.mw.take().map(drop),
            };
            assert!(gone.is_some(), "{f:?} dropped twice");
        }
    }

    fn is_empty(&self) -> bool {
        self.channel.is_none()
            && self.mr.is_none()
            && self.srq.is_none()
            && self.ah.is_none()
            && self.mw.is_none()
    }
}

/// Builds the graph — context, completion channel, CQ on it, protection domain, memory region,
/// SRQ, address handle, memory window (rxe), and an RC queue pair on the CQ and the SRQ connected
/// to itself (RTS) — and drops it in `plan`'s order.
fn run_plan(dev: &TestDevice, plan: &Plan, mw: bool) {
    let ctx = dev.open();
    let mut free = FreeObjects {
        channel: Some(ctx.create_comp_channel().unwrap()),
        ..FreeObjects::default()
    };
    {
        let cq = ctx
            .create_cq_with_channel(8, 7, free.channel.as_ref().unwrap(), 0)
            .unwrap();
        cq.req_notify(false).unwrap();
        let pd = ctx.alloc_pd().unwrap();
        free.mr = Some(pd.allocate::<u8>(256).unwrap());
        free.srq = Some(pd.create_srq(4, 1).unwrap());
        free.ah = Some(pd.create_ah(&loopback_av(&ctx)).unwrap());
        if mw {
            free.mw = Some(pd.alloc_mw().unwrap());
        }
        let prepared = pd
            .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
            .set_gid_index(GID_INDEX)
            .set_srq(free.srq.as_ref().unwrap())
            .build()
            .unwrap();
        let ep = prepared.endpoint();
        let qp = prepared.handshake(ep).unwrap();
        free.drop_these(&plan.slots[0]);
        drop(qp);
        free.drop_these(&plan.slots[1]);
        if plan.pd_before_cq {
            drop(pd);
            free.drop_these(&plan.slots[2]);
            drop(cq);
        } else {
            drop(cq);
            free.drop_these(&plan.slots[2]);
            drop(pd);
        }
        free.drop_these(&plan.slots[3]);
    }
    drop(ctx);
    free.drop_these(&plan.slots[4]);
    assert!(free.is_empty());
}

#[test]
fn lifecycle_every_drop_order_of_an_object_graph() {
    let Some((_lock, dev)) = device("lifecycle_every_drop_order_of_an_object_graph") else {
        return;
    };
    let mw = dev.open().supports(Capability::MemoryWindows);
    let mut free = vec![Free::Channel, Free::Mr, Free::Srq, Free::Ah];
    if mw {
        free.push(Free::Mw);
    }
    let plans = all_plans(&free);
    // k free objects: k! orders, C(k + 4, 4) ways to place them among the four others, two
    // orders of those.
    let k = free.len();
    let fact = |n: usize| (1..=n).product::<usize>();
    assert_eq!(plans.len(), fact(k) * fact(k + 4) / fact(k) / fact(4) * 2);
    assert_eq!(
        plans.len(),
        plans
            .iter()
            .map(|p| format!("{p:?}"))
            .collect::<std::collections::HashSet<_>>()
            .len()
    );
    // The VM runs a spread sample unless asked for all: every plan a stride apart, which puts
    // every free object in every slot and both orders of the PD and the CQ.
    // (What a run can afford is the test equipment's: every plan on the model in this process,
    // a sample on the VM's emulated rxe.)
    let budget = if dev.model().is_some() || long() {
        plans.len()
    } else {
        600
    };
    let stride = plans.len().div_ceil(budget);
    let chosen: Vec<&Plan> = plans.iter().step_by(stride).collect();
    for f in &free {
        for s in 0..5 {
            assert!(
                chosen.iter().any(|p| p.slots[s].contains(f)),
                "the sample never drops {f:?} in slot {s}"
            );
        }
    }
    assert!(chosen.iter().any(|p| p.pd_before_cq) && chosen.iter().any(|p| !p.pd_before_cq));

    for plan in &plans[..2] {
        run_plan(&dev, plan, mw);
    }
    let drops = uverbs_drivers::drop_errors();
    let before = snapshot(&dev);
    let started = Instant::now();
    for plan in &chosen {
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_plan(&dev, plan, mw)));
        assert!(result.is_ok(), "dropping in the order {plan:?} panicked");
        assert_eq!(
            uverbs_drivers::drop_errors(),
            drops,
            "dropping in the order {plan:?} failed to destroy something"
        );
    }
    let elapsed = started.elapsed();
    assert_no_growth("drop orders", &before, &snapshot(&dev));
    eprintln!(
        "lifecycle ({}): {} of {} drop orders of a {}-object graph in {elapsed:.1?}",
        dev.name(),
        chosen.len(),
        plans.len(),
        k + 4
    );
}

// ---------------------------------------------------------------------------------------------
// Queue pairs dropped with work outstanding.

/// Everything in `cq` now, polled until it is empty. Used once the queue pairs that complete on
/// it are destroyed: a destroyed queue pair completes nothing more (rxe flushes a destroyed queue
/// pair's work without completions, the mlx5 backend removes its completions from the CQ), so
/// this is all there will be.
fn drain(cq: &CompletionQueue<'_>) -> Vec<ibv_wc> {
    let mut out = Vec::new();
    let mut buf = [ibv_wc::default(); 32];
    loop {
        let got = cq.poll(&mut buf).unwrap();
        if got.is_empty() {
            return out;
        }
        out.extend_from_slice(got);
    }
}

fn connect<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
) -> (QueuePair<'a>, QueuePair<'a>) {
    RcPair::new(pd, cq)
        .gid_index(GID_INDEX)
        .depth(16, 16)
        .rnr_retry(7)
        .remote_rw()
        .connect()
}

/// Creates and drops a queue pair (and a CQ) on `pd`'s context: the mlx5 backend maps the
/// context's UAR pages when the first queue pair needs them and keeps them for the context's life
/// (as rdma-core does), which must not count as growth.
fn warm_up(pd: &ProtectionDomain<'_>, ctx: &uverbs::Context) {
    let cq = ctx.create_cq(4, 0).unwrap();
    let qp = pd
        .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(GID_INDEX)
        .build()
        .unwrap();
    drop(qp);
}

/// Queue pairs dropped with sends stalled (the peer has no receive; RNR retried for ever), a
/// 4 MiB RDMA write under way, receives posted, and their earlier completions still unpolled on
/// the CQ: no panic, no destroy error, and the CQ (and the memory) stay usable.
///
/// What happens to the unpolled completions differs: rxe leaves them in the CQ; the mlx5 backend
/// removes a destroyed queue pair's completions from its CQs (as rdma-core's `mlx5_destroy_qp`
/// does with `__mlx5_cq_clean`), so there they are gone.
#[test]
fn lifecycle_queue_pairs_dropped_with_outstanding_work() {
    let Some((_lock, dev)) = device("lifecycle_queue_pairs_dropped_with_outstanding_work") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(256, 0).unwrap();
    let drops = uverbs_drivers::drop_errors();
    let tx = pd.allocate::<u64>(64).unwrap();
    let rx = pd.allocate::<u64>(64).unwrap();
    let big = pd.allocate::<u8>(4 << 20).unwrap();
    let target = pd.allocate::<u8>(4 << 20).unwrap();
    let mut fence = Fence::new(&pd);
    warm_up(&pd, &ctx);
    let before = snapshot(&dev);
    for round in 0..3 {
        let (a, b) = connect(&pd, &cq);
        let sges: Vec<_> = (0..64).map(|i| [tx.sge(i..i + 1).unwrap()]).collect();
        let rsges: Vec<_> = (0..64).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
        // Two messages that complete, left unpolled: four completions.
        let recvs: Vec<_> = (0..2)
            .map(|i| ReceiveRequest::new(100 + i as u64, &rsges[i]))
            .collect();
        // SAFETY: every region outlives the queue pairs (they are dropped first).
        unsafe { b.post_receive_list(&recvs) }.unwrap();
        let sends: Vec<_> = (0..2)
            .map(|i| SendRequest::send(i as u64, &sges[i]))
            .collect();
        // SAFETY: as above.
        unsafe { a.post_send_list(&sends) }.unwrap();
        // Wait until they are there, without polling: the CQ fills.
        read_fence(&a, &mut fence);
        // Now work that stays outstanding: sends the peer cannot take, a big write, receives.
        let stalled: Vec<_> = (2..10)
            .map(|i| SendRequest::send(i as u64, &sges[i]))
            .collect();
        // SAFETY: as above.
        unsafe { a.post_send_list(&stalled) }.unwrap();
        let big_sge = [big.sge(..).unwrap()];
        let write = SendRequest::rdma_write(50, &big_sge, target.remote());
        // SAFETY: as above.
        unsafe { b.post_send_list(&[write]) }.unwrap();
        let own: Vec<_> = (10..20)
            .map(|i| ReceiveRequest::new(200 + i as u64, &rsges[i]))
            .collect();
        // SAFETY: as above.
        unsafe { a.post_receive_list(&own) }.unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if round % 2 == 0 {
                drop(a);
                drop(b);
            } else {
                drop(b);
                drop(a);
            }
        }));
        assert!(result.is_ok(), "round {round}: dropping panicked");
        assert_eq!(uverbs_drivers::drop_errors(), drops, "round {round}");
        // What is left in the CQ: on rxe at least the four completions that were there, each a
        // success or a flush, nothing twice; on mlx5 nothing of the destroyed queue pairs.
        let left = drain(&cq);
        let mut ids: Vec<u64> = left.iter().map(ibv_wc::wr_id).collect();
        ids.sort();
        let unique = ids.len();
        ids.dedup();
        assert_eq!(
            ids.len(),
            unique,
            "round {round}: a completion twice: {left:?}"
        );
        if dev.behaviour().destroy_qp_cleans_its_cqs {
            assert!(left.is_empty(), "round {round}: {left:?}");
        } else {
            for id in [0, 1, 100, 101] {
                assert!(
                    ids.contains(&id),
                    "round {round}: {id} missing from {left:?}"
                );
            }
            let posted =
                |id: u64| id < 10 || id == 50 || id == 100 || id == 101 || (210..220).contains(&id);
            assert!(ids.iter().all(|&id| posted(id)), "round {round}: {left:?}");
        }
        // The CQ works on: a new pair on it moves a message.
        let (c, d) = connect(&pd, &cq);
        // SAFETY: as above.
        unsafe { d.post_receive_list(&[ReceiveRequest::new(7, &rsges[63])]) }.unwrap();
        // SAFETY: as above.
        unsafe { c.post_send_list(&[SendRequest::send(8, &sges[63])]) }.unwrap();
        let wcs = poll_n(&cq, 2);
        assert!(wcs.iter().all(ibv_wc::is_valid), "round {round}: {wcs:?}");
        // Theirs, and nothing of the destroyed pairs came late.
        let mut ids: Vec<u64> = wcs.iter().map(ibv_wc::wr_id).collect();
        ids.sort();
        assert_eq!(ids, [7, 8], "round {round}: {wcs:?}");
        assert!(drain(&cq).is_empty(), "round {round}: more completions");
    }
    assert_no_growth("queue pairs dropped with work", &before, &snapshot(&dev));
    drop(cq);
    assert_eq!(uverbs_drivers::drop_errors(), drops);
}

/// A shared receive queue with receives posted, dropped before and after the queue pairs that
/// use it (which keep it alive), and a CQ with completions unpolled dropped last.
#[test]
fn lifecycle_srq_with_posted_receives_and_cq_with_unpolled_completions() {
    let Some((_lock, dev)) =
        device("lifecycle_srq_with_posted_receives_and_cq_with_unpolled_completions")
    else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let drops = uverbs_drivers::drop_errors();
    let rx = pd.allocate::<u64>(16).unwrap();
    let tx = pd.allocate::<u64>(16).unwrap();
    let mut fence = Fence::new(&pd);
    warm_up(&pd, &ctx);
    let before = snapshot(&dev);
    for srq_first in [true, false] {
        let cq = ctx.create_cq(32, 0).unwrap();
        let srq = pd.create_srq(16, 1).unwrap();
        let rsges: Vec<_> = (0..16).map(|i| [rx.sge(i..i + 1).unwrap()]).collect();
        let recvs: Vec<_> = (0..16)
            .map(|i| ReceiveRequest::new(i as u64, &rsges[i]))
            .collect();
        // SAFETY: the regions outlive everything here.
        unsafe { srq.post_receive_list(&recvs) }.unwrap();
        let (a, b) = RcPair::new(&pd, &cq)
            .gid_index(GID_INDEX)
            .remote_rw()
            .tune(|b| {
                b.set_max_send_wr(4);
            })
            .connect_on_srq(&srq, &cq);
        // SAFETY: as above.
        unsafe { a.post_send_list(&[SendRequest::send(99, &[tx.sge(..1).unwrap()])]) }.unwrap();
        // The send and its receive (from the SRQ) completed, unpolled.
        read_fence(&a, &mut fence);
        if srq_first {
            drop(srq);
            drop(b);
            drop(a);
        } else {
            drop(a);
            drop(b);
            drop(srq);
        }
        drop(cq);
        assert_eq!(uverbs_drivers::drop_errors(), drops);
    }
    assert_no_growth("SRQ and CQ with work", &before, &snapshot(&dev));
}
