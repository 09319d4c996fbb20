//! A software mlx5 device: the `mlx5_ib` kernel driver and a ConnectX HCA, in this process or
//! served to others.
//!
//! [`Mlx5Model`] is one device: a ConnectX-6 Dx with one 100 Gb/s RoCE port. Its
//! [`device_info`](Mlx5Model::device_info) is a [`DeviceInfo`] like discovery returns for a kernel
//! device, except that its `model` names the model, so that
//! [`uverbs_drivers::verbs::DeviceContext::open`] talks to the model instead of
//! `/dev/infiniband/uverbsN`, through the very bytes it would send the kernel:
//! `RDMA_VERBS_IOCTL` headers and attributes, legacy `write()` commands and `mmap` offsets
//! ([`uverbs_drivers::sys::ModelFile`]).
//!
//! The model has two halves, as the real thing does:
//!
//! * the kernel half (`kernel`, `objects`): the uverbs core of Linux 6.1 and `mlx5_ib`. It decodes
//!   the ioctl and write commands as `uverbs_ioctl.c` and `uverbs_main.c` do (lengths, reserved
//!   fields, driver id, mandatory and unknown attributes, inline and pointer payloads, the
//!   `VALID_OUTPUT` flags, handles and file descriptors written back), keeps each open file's
//!   objects in a handle table, checks every request as `uverbs_cmd.c`, `uverbs_std_types_*.c` and
//!   `mlx5_ib`'s `main.c`, `cq.c`, `qp.c`, `srq.c` and `ah.c` do, with their errno values, reads and
//!   writes user memory only through checked copies (`uaccess`), hands the HCA descriptors of the
//!   objects, and delivers the HCA's completion and async events through real event files
//!   (`events`). The UAR pages are memfd pages the driver maps (`uar`): a context's static pages,
//!   or, for a library that asks for dynamic UARs as libmlx5 does, pages allocated one by one as
//!   UAR objects; the sysfs directory is a temporary tree (`sysfs`).
//! * the silicon half ([`hca`]): the HCA's tables and an engine thread that executes the WQEs the
//!   driver posts.
//!
//! Both ioctl paths of the library work: with [`IoctlSupport::Full`] (the default) the model has
//! the ioctl methods of 6.1 that the library uses (and `INVOKE_WRITE` for the write-only verbs), with
//! [`IoctlSupport::InvokeWriteOnly`] it answers `EPROTONOSUPPORT` to all but `INVOKE_WRITE`, as an
//! older kernel does, and the library falls back to the write commands and to sysfs. The legacy
//! `write()` path (`UVERBS_COMMAND_PATH=write`) shares every command implementation with
//! `INVOKE_WRITE`.
//!
//! Where the model deviates from the kernel, it is because a model cannot do otherwise, or because
//! the kernel's behaviour would hand the HCA memory it cannot safely use; see [`Mlx5Model`].
//!
//! # One device, several processes
//!
//! The model serves the process it is in, or, as a daemon, other processes at once, as one HCA
//! serves one host: [`Mlx5Model::serve`] (module [`serve`]; the binary `uverbs-mlx5-model serve
//! --socket PATH`) serves it on a unix socket, and uverbs (`UVERBS_MODEL_SOCKET`, through
//! `uverbs_drivers::sys::remote`) and rdma-core under the preload library connect to it. Every
//! object then belongs to the process that created it ([`hca::Space`]): the kernel half serves
//! each client's commands on its task (its memory, its `/proc/<pid>`, its descriptor table, as the
//! kernel's `current`), and the HCA reaches its queues, doorbell records and registered memory with
//! `process_vm_readv` / `process_vm_writev`, so a queue pair in one process talks to a queue pair
//! in another.
//!
//! # Where it plugs in
//!
//! This crate depends on `uverbs-drivers`, never the other way round. The driver knows the model
//! only as a [`ModelFile`](uverbs_drivers::sys::ModelFile) (the seam: its system calls on a device
//! file go to the model instead of the kernel) and as the `model` of a [`DeviceInfo`] (how a model
//! device is found by [`DeviceContext::open`](uverbs_drivers::verbs::DeviceContext::open)). The model reads
//! the WQEs the driver writes and writes the CQEs it polls; where it takes their layout from the
//! driver's definitions (`uverbs_drivers::mlx5::{wqe, cqe, doorbell}`), the `use` says why, and
//! `drivers/tests/mlx5_golden.rs` checks those definitions byte for byte against rdma-core's
//! `<infiniband/mlx5dv.h>`, independently of both.
//!
//! The model's `unsafe` (copies to and from user memory, the HCA's accesses to registered memory,
//! rings and doorbell records) carries a `// SAFETY:` comment at every block, as the driver's does.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod hca;
pub mod serve;

mod caps;
mod events;
mod kernel;
mod objects;
mod sysfs;
mod task;
mod uaccess;
mod uar;
mod vm;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use nix::errno::Errno;

use uverbs_drivers::discover::{DeviceInfo, Driver};
use uverbs_drivers::error::{Error, Result, Verb};
use uverbs_drivers::sys::ModelRef;

use events::{Events, Sink};
use hca::{CqDesc, EventSink, Hca, HcaStats, MrDesc, QpAttrs, QpDesc, SrqDesc};

/// Which ioctl methods the model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoctlSupport {
    /// The methods of Linux 6.1 that the library uses: `GET_CONTEXT`, `ASYNC_EVENT_ALLOC`,
    /// `QUERY_PORT`, the GID table and entry queries, CQ, QP and SRQ creation and destruction, the
    /// other destroy methods, and `INVOKE_WRITE`; and what libmlx5 uses besides: mlx5_ib's UAR
    /// objects, and for importing a context, its PDs and MRs (`ibv_import_device` and friends)
    /// `QUERY_CONTEXT`, mlx5's `PD_QUERY` and `QUERY_MR`.
    #[default]
    Full,
    /// Only `INVOKE_WRITE`, as a kernel from before the verbs moved to ioctl methods: every other
    /// method is `EPROTONOSUPPORT`, and the library uses the write commands and sysfs instead.
    /// Such a kernel does not know dynamic UARs either: it gives static bfregs to a context that
    /// asks for them.
    InvokeWriteOnly,
}

/// How a model device is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// The device's name (`mlx5_0`).
    pub name: String,
    /// The port's GID table, index by index (all-zero entries are empty). The port reports 255
    /// entries, as a ConnectX does, or as many as are given, up to 4096.
    /// Every GID is a RoCE v2 GID of [`ModelConfig::netdev`]. The default:
    /// [`ModelConfig::default_gids`] of the default node GUID.
    pub gids: Vec<[u8; 16]>,
    /// The node GUID, as a number whose big-endian bytes are the GUID.
    pub node_guid: u64,
    /// The network device the GIDs belong to (`lo`, as rxe on loopback).
    pub netdev: String,
    /// The port's active MTU in bytes (256 … 4096; the HCA itself sends UD datagrams of up to 4096).
    pub mtu: u32,
    /// Completion vectors (a CQ's `comp_vector` must be below this).
    pub num_comp_vectors: u32,
    /// Whether the port is up when the device is made.
    pub port_active: bool,
    /// Which ioctl methods the model answers.
    pub ioctl: IoctlSupport,
}

/// The default node GUID: Mellanox's OUI, and "model" in the low bytes.
pub const DEFAULT_NODE_GUID: u64 = 0x0c42_a103_006d_6f64;

impl ModelConfig {
    /// The MAC address of the port: the node GUID without its middle two bytes (EUI-64 to MAC).
    pub fn mac(&self) -> [u8; 6] {
        let g = self.node_guid.to_be_bytes();
        [g[0], g[1], g[2], g[5], g[6], g[7]]
    }

    /// The GID table the default configuration has for `node_guid`: index 0 the link-local GID of
    /// the port's MAC (`fe80::` and the modified EUI-64, as the kernel makes it for a netdev), index
    /// 1 `::ffff:127.0.0.1`, both RoCE v2, as rxe on `lo` has them; tests that use GID index 1
    /// talk over IPv4 loopback.
    pub fn default_gids(node_guid: u64) -> Vec<[u8; 16]> {
        let g = node_guid.to_be_bytes();
        let mut ll = [0u8; 16];
        ll[0] = 0xfe;
        ll[1] = 0x80;
        ll[8] = g[0] ^ 0x02;
        ll[9] = g[1];
        ll[10] = g[2];
        ll[11] = 0xff;
        ll[12] = 0xfe;
        ll[13] = g[5];
        ll[14] = g[6];
        ll[15] = g[7];
        let mut v4 = [0u8; 16];
        v4[10] = 0xff;
        v4[11] = 0xff;
        v4[12..].copy_from_slice(&[127, 0, 0, 1]);
        vec![ll, v4]
    }

    /// The active MTU as `enum ib_mtu` (1 = 256 … 5 = 4096).
    pub(crate) fn active_mtu(&self) -> u8 {
        match self.mtu {
            0..=511 => 1,
            512..=1023 => 2,
            1024..=2047 => 3,
            2048..=4095 => 4,
            _ => 5,
        }
    }
}

impl Default for ModelConfig {
    fn default() -> ModelConfig {
        ModelConfig {
            name: "mlx5_0".into(),
            gids: ModelConfig::default_gids(DEFAULT_NODE_GUID),
            node_guid: DEFAULT_NODE_GUID,
            netdev: "lo".into(),
            mtu: 4096,
            num_comp_vectors: 8,
            port_active: true,
            ioctl: IoctlSupport::Full,
        }
    }
}

/// What a model device has seen and holds ([`Mlx5Model::stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelStats {
    /// `RDMA_VERBS_IOCTL` calls.
    pub ioctls: u64,
    /// Legacy `write()` commands.
    pub writes: u64,
    /// `mmap` calls.
    pub mmaps: u64,
    /// Commands (of either kind) that failed.
    pub failed: u64,
    /// Open files (device infos and contexts that hold one).
    pub files: usize,
    /// User contexts.
    pub contexts: usize,
    /// Protection domains alive.
    pub pds: usize,
    /// Memory regions alive.
    pub mrs: usize,
    /// Completion queues alive.
    pub cqs: usize,
    /// Queue pairs alive.
    pub qps: usize,
    /// Shared receive queues alive.
    pub srqs: usize,
    /// Address handles alive.
    pub ahs: usize,
    /// Event files (async event files and completion channels) the model still holds.
    pub event_files: usize,
    /// Events queued for the user.
    pub events_delivered: u64,
    /// Events with no file to go to (as the kernel drops them).
    pub events_dropped: u64,
    /// What the HCA counted.
    pub hca: HcaStats,
}

/// The objects alive in open files of a model device, read from the files' handle tables
/// ([`Mlx5Model::objects`], [`Mlx5Model::objects_per_file`]): what `rdma resource show` counts
/// for a kernel device, and the address handles it does not. For one file, `files` is 1 and
/// `contexts` 0 or 1; a sum counts the open files and their contexts.
///
/// Unlike [`ModelStats`]' counters, which the verbs raise and lower, these are counted in the
/// tables themselves, so an object left in a table (a destroy that never came, or one the model
/// lost track of) is always seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectCounts {
    /// Open files (of the device infos and contexts that hold one).
    pub files: usize,
    /// User contexts (`GET_CONTEXT` done).
    pub contexts: usize,
    /// Protection domains.
    pub pds: usize,
    /// Memory regions.
    pub mrs: usize,
    /// Completion queues.
    pub cqs: usize,
    /// Queue pairs.
    pub qps: usize,
    /// Shared receive queues.
    pub srqs: usize,
    /// Address handles.
    pub ahs: usize,
    /// UAR objects (dynamic UAR pages, `MLX5_IB_OBJECT_UAR`).
    pub uars: usize,
}

impl std::ops::Add for ObjectCounts {
    type Output = ObjectCounts;
    fn add(self, o: ObjectCounts) -> ObjectCounts {
        ObjectCounts {
            files: self.files + o.files,
            contexts: self.contexts + o.contexts,
            pds: self.pds + o.pds,
            mrs: self.mrs + o.mrs,
            cqs: self.cqs + o.cqs,
            qps: self.qps + o.qps,
            srqs: self.srqs + o.srqs,
            ahs: self.ahs + o.ahs,
            uars: self.uars + o.uars,
        }
    }
}

/// The HCA as the kernel half uses it: [`hca::Hca`], or a stand-in in tests.
pub(crate) trait Silicon: Send + Sync + std::fmt::Debug {
    fn reg_mr(&self, mr: MrDesc);
    fn dereg_mr(&self, lkey: u32);
    fn create_cq(&self, cq: CqDesc);
    fn resize_cq(
        &self,
        cqn: u32,
        buf: usize,
        ncqe: u32,
        cqe_size: u32,
    ) -> std::result::Result<u32, Errno>;
    fn destroy_cq(&self, cqn: u32);
    fn create_qp(&self, qp: QpDesc);
    fn modify_qp(&self, qpn: u32, attrs: &QpAttrs) -> std::result::Result<(), Errno>;
    fn query_qp(&self, qpn: u32) -> Option<QpAttrs>;
    fn destroy_qp(&self, qpn: u32);
    fn create_srq(&self, srq: SrqDesc);
    fn set_srq_limit(&self, srqn: u32, limit: u32);
    fn srq_limit(&self, srqn: u32) -> u32;
    fn destroy_srq(&self, srqn: u32);
    fn attach_mcast(&self, qpn: u32, gid: [u8; 16]) -> std::result::Result<(), Errno>;
    fn detach_mcast(&self, qpn: u32, gid: [u8; 16]) -> std::result::Result<(), Errno>;
    fn set_port_active(&self, active: bool);
    fn stats(&self) -> HcaStats {
        HcaStats::default()
    }
}

impl Silicon for Hca {
    fn reg_mr(&self, mr: MrDesc) {
        Hca::reg_mr(self, mr)
    }
    fn dereg_mr(&self, lkey: u32) {
        Hca::dereg_mr(self, lkey)
    }
    fn create_cq(&self, cq: CqDesc) {
        Hca::create_cq(self, cq)
    }
    fn resize_cq(
        &self,
        cqn: u32,
        buf: usize,
        ncqe: u32,
        cqe_size: u32,
    ) -> std::result::Result<u32, Errno> {
        Hca::resize_cq(self, cqn, buf, ncqe, cqe_size)
    }
    fn destroy_cq(&self, cqn: u32) {
        Hca::destroy_cq(self, cqn)
    }
    fn create_qp(&self, qp: QpDesc) {
        Hca::create_qp(self, qp)
    }
    fn modify_qp(&self, qpn: u32, attrs: &QpAttrs) -> std::result::Result<(), Errno> {
        Hca::modify_qp(self, qpn, attrs)
    }
    fn query_qp(&self, qpn: u32) -> Option<QpAttrs> {
        Hca::query_qp(self, qpn)
    }
    fn destroy_qp(&self, qpn: u32) {
        Hca::destroy_qp(self, qpn)
    }
    fn create_srq(&self, srq: SrqDesc) {
        Hca::create_srq(self, srq)
    }
    fn set_srq_limit(&self, srqn: u32, limit: u32) {
        Hca::set_srq_limit(self, srqn, limit)
    }
    fn srq_limit(&self, srqn: u32) -> u32 {
        Hca::srq_limit(self, srqn)
    }
    fn destroy_srq(&self, srqn: u32) {
        Hca::destroy_srq(self, srqn)
    }
    fn attach_mcast(&self, qpn: u32, gid: [u8; 16]) -> std::result::Result<(), Errno> {
        Hca::attach_mcast(self, qpn, gid)
    }
    fn detach_mcast(&self, qpn: u32, gid: [u8; 16]) -> std::result::Result<(), Errno> {
        Hca::detach_mcast(self, qpn, gid)
    }
    fn set_port_active(&self, active: bool) {
        Hca::set_port_active(self, active)
    }
    fn stats(&self) -> HcaStats {
        Hca::stats(self)
    }
}

/// Numbers handed out by the device (PD, CQ, QP, SRQ numbers, MKey indices): the next free one
/// after the last given, wrapping within `[min, max]`.
#[derive(Debug)]
struct Ids {
    used: BTreeSet<u32>,
    next: u32,
    min: u32,
    max: u32,
}

impl Ids {
    fn new(min: u32, max: u32) -> Ids {
        Ids {
            used: BTreeSet::new(),
            next: min,
            min,
            max,
        }
    }

    fn alloc(&mut self) -> Option<u32> {
        let span = u64::from(self.max - self.min) + 1;
        if self.used.len() as u64 >= span {
            return None;
        }
        let mut n = self.next;
        while self.used.contains(&n) {
            n = if n >= self.max { self.min } else { n + 1 };
        }
        self.used.insert(n);
        self.next = if n >= self.max { self.min } else { n + 1 };
        Some(n)
    }

    fn free(&mut self, n: u32) {
        self.used.remove(&n);
    }
}

/// Device-wide state: number spaces, the port, object counts.
#[derive(Debug)]
struct DevState {
    port_active: bool,
    pdn: Ids,
    cqn: Ids,
    qpn: Ids,
    srqn: Ids,
    mkey: Ids,
    /// UAR indices of UAR objects (`mlx5_cmd_uar_alloc`).
    uar: Ids,
    mkey_variant: u8,
    next_file: u64,
    next_tag: u64,
    files: usize,
    contexts: usize,
    objects: [usize; 6],
    /// Destroy commands to refuse, by object type: the errno for the next one of each
    /// ([`Mlx5Model::refuse_next_destroy`]).
    refusals: Vec<(u16, Errno)>,
}

/// Kinds of objects, for the counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Pd = 0,
    Mr = 1,
    Cq = 2,
    Qp = 3,
    Srq = 4,
    Ah = 5,
}

/// One model device, shared by its [`Mlx5Model`] handles and its open files.
#[derive(Debug)]
pub(crate) struct Device {
    cfg: ModelConfig,
    index: u32,
    sysfs: sysfs::Sysfs,
    silicon: Arc<dyn Silicon>,
    events: Arc<Events>,
    state: Mutex<DevState>,
    /// The clock-info page (`MLX5_IB_MMAP_CLOCK_INFO`): a memfd page holding
    /// [`hca::clock_info`], which every context maps.
    clock_fd: OwnedFd,
    /// The open files by id, for [`Mlx5Model::objects`] (a file removes itself when it closes).
    open_files: Mutex<BTreeMap<u64, Weak<kernel::File>>>,
    ifindex: u32,
    ioctls: AtomicU64,
    writes: AtomicU64,
    mmaps: AtomicU64,
    failed: AtomicU64,
    /// The commands the model was sent and does not have ([`Mlx5Model::unknown_commands`]).
    unknown: Mutex<BTreeSet<UnknownCommand>>,
}

/// A command the model does not implement, which it answered as the kernel answers one it lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnknownCommand {
    /// An ioctl method (`EPROTONOSUPPORT`).
    Ioctl {
        /// `UVERBS_OBJECT_*` (or a driver object, `0x1000` and up).
        object: u16,
        /// The object's method id.
        method: u16,
    },
    /// A legacy `write()` command (`IB_USER_VERBS_CMD_*`, with the extended flag if it has it).
    Write {
        /// The command word.
        command: u32,
    },
}

impl std::fmt::Display for UnknownCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnknownCommand::Ioctl { object, method } => {
                write!(f, "ioctl object {object:#x} method {method:#x}")
            }
            UnknownCommand::Write { command } => write!(f, "write command {command:#x}"),
        }
    }
}

static NEXT_INDEX: AtomicU32 = AtomicU32::new(0);

fn setup_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Protocol {
        verb: Verb::OpenDevice,
        what: format!("starting the mlx5 model: {what}: {e}"),
    }
}

impl Device {
    /// The commands sent that the model does not have.
    fn unknown(&self) -> MutexGuard<'_, BTreeSet<UnknownCommand>> {
        self.unknown.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a command the model does not have.
    pub(crate) fn lacks(&self, command: UnknownCommand) {
        self.unknown().insert(command);
    }
}

impl Device {
    /// A device configured by `cfg`, whose silicon `make` builds from the GID table and the event
    /// sink.
    fn build(
        cfg: ModelConfig,
        make: impl FnOnce(Vec<[u8; 16]>, Arc<dyn EventSink>) -> Arc<dyn Silicon>,
    ) -> Result<Arc<Device>> {
        if cfg.gids.len() > caps::MAX_GID_TBL_LEN as usize {
            return Err(Error::InvalidArgument {
                verb: Verb::OpenDevice,
                what: format!(
                    "{} GIDs configured, the model's port takes at most {}",
                    cfg.gids.len(),
                    caps::MAX_GID_TBL_LEN
                ),
            });
        }
        if cfg.name.is_empty() || cfg.name.contains('/') || cfg.num_comp_vectors == 0 {
            return Err(Error::InvalidArgument {
                verb: Verb::OpenDevice,
                what: format!(
                    "model name {:?} with {} completion vectors",
                    cfg.name, cfg.num_comp_vectors
                ),
            });
        }
        let index = NEXT_INDEX.fetch_add(1, Ordering::Relaxed);
        let sysfs = sysfs::Sysfs::create(&cfg, index, cfg.port_active)
            .map_err(|e| setup_error("writing its sysfs tree", e))?;
        let clock_fd = uar::clock_page(&hca::clock_info())
            .map_err(|e| setup_error("the clock-info page", e))?;
        let events = Arc::new(Events::default());
        let silicon = make(cfg.gids.clone(), Arc::new(Sink(Arc::clone(&events))));
        if !cfg.port_active {
            silicon.set_port_active(false);
        }
        let ifindex = std::ffi::CString::new(cfg.netdev.clone())
            .ok()
            .and_then(|n| uverbs_drivers::sys::if_nametoindex(&n))
            .unwrap_or(0);
        Ok(Arc::new(Device {
            state: Mutex::new(DevState {
                port_active: cfg.port_active,
                pdn: Ids::new(2, 0xff_ffff),
                cqn: Ids::new(0x400, 0xff_ffff),
                qpn: Ids::new(0x100, 0xff_fffe),
                srqn: Ids::new(0x40, 0xff_ffff),
                mkey: Ids::new(0x10, 0xff_ffff),
                // The first UARs are mlx5_core's own (its EQs and the kernel's bfregs); a CQ names
                // its UAR in 16 bits (`mlx5_ib_create_cq.uar_page_index`).
                uar: Ids::new(0x10, 0xffff),
                mkey_variant: 0,
                next_file: 0,
                next_tag: 0,
                files: 0,
                contexts: 0,
                objects: [0; 6],
                refusals: Vec::new(),
            }),
            cfg,
            index,
            sysfs,
            silicon,
            events,
            clock_fd,
            open_files: Mutex::new(BTreeMap::new()),
            ifindex,
            ioctls: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            mmaps: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            unknown: Mutex::new(BTreeSet::new()),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, DevState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn port_active(&self) -> bool {
        self.lock().port_active
    }

    pub(crate) fn alloc_pdn(&self) -> std::result::Result<u32, Errno> {
        self.lock().pdn.alloc().ok_or(Errno::ENOMEM)
    }

    pub(crate) fn free_pdn(&self, n: u32) {
        self.lock().pdn.free(n)
    }

    pub(crate) fn alloc_cqn(&self) -> std::result::Result<u32, Errno> {
        self.lock().cqn.alloc().ok_or(Errno::ENOMEM)
    }

    pub(crate) fn free_cqn(&self, n: u32) {
        self.lock().cqn.free(n)
    }

    pub(crate) fn alloc_qpn(&self) -> std::result::Result<u32, Errno> {
        self.lock().qpn.alloc().ok_or(Errno::ENOMEM)
    }

    pub(crate) fn free_qpn(&self, n: u32) {
        self.lock().qpn.free(n)
    }

    pub(crate) fn alloc_srqn(&self) -> std::result::Result<u32, Errno> {
        self.lock().srqn.alloc().ok_or(Errno::ENOMEM)
    }

    pub(crate) fn free_srqn(&self, n: u32) {
        self.lock().srqn.free(n)
    }

    pub(crate) fn alloc_uar_index(&self) -> std::result::Result<u32, Errno> {
        self.lock().uar.alloc().ok_or(Errno::ENOMEM)
    }

    pub(crate) fn free_uar_index(&self, n: u32) {
        self.lock().uar.free(n)
    }

    /// A new MKey: index << 8 | a variant byte that changes with every registration.
    pub(crate) fn alloc_mkey(&self) -> std::result::Result<u32, Errno> {
        let mut st = self.lock();
        let index = st.mkey.alloc().ok_or(Errno::ENOMEM)?;
        st.mkey_variant = st.mkey_variant.wrapping_add(1);
        Ok(index << 8 | u32::from(st.mkey_variant))
    }

    pub(crate) fn free_mkey(&self, key: u32) {
        self.lock().mkey.free(key >> 8)
    }

    /// A device-unique tag for an object's events.
    pub(crate) fn new_tag(&self) -> u64 {
        let mut st = self.lock();
        st.next_tag += 1;
        st.next_tag
    }

    fn new_file_id(&self) -> u64 {
        let mut st = self.lock();
        st.next_file += 1;
        st.files += 1;
        st.next_file
    }

    fn file_closed(&self, had_context: bool) {
        let mut st = self.lock();
        st.files = st.files.saturating_sub(1);
        if had_context {
            st.contexts = st.contexts.saturating_sub(1);
        }
    }

    /// Makes an open file's objects visible to [`Device::objects_per_file`].
    fn register_file(&self, file: &Arc<kernel::File>) {
        self.open_files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(file.id, Arc::downgrade(file));
    }

    /// Forgets a closed file.
    fn unregister_file(&self, id: u64) {
        self.open_files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }

    /// The objects in each open file's handle table, in the order the files were opened.
    fn objects_per_file(&self) -> Vec<ObjectCounts> {
        // The files are taken out of the registry first: counting locks each file, and the last
        // reference to one may be dropped here (closing it, which takes the registry's lock).
        let files: Vec<Arc<kernel::File>> = self
            .open_files
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        files.iter().map(|f| f.object_counts()).collect()
    }

    pub(crate) fn context_created(&self) {
        self.lock().contexts += 1;
    }

    pub(crate) fn context_dropped(&self) {
        let mut st = self.lock();
        st.contexts = st.contexts.saturating_sub(1);
    }

    /// The errno a destroy of an object of `type_id` is to fail with, if one was asked for.
    pub(crate) fn take_refusal(&self, type_id: u16) -> Option<Errno> {
        let mut st = self.lock();
        let i = st.refusals.iter().position(|&(t, _)| t == type_id)?;
        Some(st.refusals.remove(i).1)
    }

    pub(crate) fn count(&self, kind: Kind, up: bool) {
        let mut st = self.lock();
        let c = &mut st.objects[kind as usize];
        *c = if up { *c + 1 } else { c.saturating_sub(1) };
    }

    fn set_port_active(&self, active: bool) {
        self.lock().port_active = active;
        let _ = self.sysfs.set_port(active);
        self.silicon.set_port_active(active);
    }

    fn stats(&self) -> ModelStats {
        let ev = self.events.counts();
        let st = self.lock();
        ModelStats {
            ioctls: self.ioctls.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            mmaps: self.mmaps.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            files: st.files,
            contexts: st.contexts,
            pds: st.objects[Kind::Pd as usize],
            mrs: st.objects[Kind::Mr as usize],
            cqs: st.objects[Kind::Cq as usize],
            qps: st.objects[Kind::Qp as usize],
            srqs: st.objects[Kind::Srq as usize],
            ahs: st.objects[Kind::Ah as usize],
            event_files: ev.files,
            events_delivered: ev.delivered,
            events_dropped: ev.dropped,
            hca: self.silicon.stats(),
        }
    }
}

/// A software ConnectX-6 Dx (one 100 Gb/s RoCE port) with its `mlx5_ib` kernel driver, in this
/// process. Clones are handles of the same device, which lives as long as any handle, device info
/// or context of it; then its HCA engine stops, its file descriptors close and its sysfs tree is
/// removed.
///
/// # Open files
///
/// Every [`DeviceInfo`] that [`Mlx5Model::device_info`] returns holds one open file of the device,
/// as `open("/dev/infiniband/uverbsN")` would give, and each context opened from it opens a file of
/// its own ([`Mlx5Model::open`]), as `Context::open` opens the device node each time. A file (with
/// its context and every object left in it) is closed when its last user is dropped. As in the
/// kernel, a file has at most one context: a second `GET_CONTEXT` on it is `EINVAL`.
///
/// # Deviations from the kernel
///
/// * User memory the HCA will use (memory regions, queue buffers, doorbell records) is checked
///   against `/proc/self/maps` (a daemon client's `/proc/<pid>/maps`) when it is registered, but
///   cannot be pinned: unmapping it while the object exists is the caller's bug, not a fault the
///   model survives (for a daemon client's memory, the HCA reads zeros and its writes are lost).
/// * Doorbell records must be 8-byte aligned (4 for an SRQ's), queue buffers 64-byte aligned, RQs
///   have a power-of-two number of WQEs of 16 to 512 bytes, and a QP with a queue must name its
///   buffer: the firmware of a ConnectX refuses the others too, the kernel only later.
/// * A CQ or QP may name only a UAR object of its own context: without DEVX the firmware would take
///   any allocated UAR, another context's too, whose page the model could not watch safely.
/// * Not modelled: memory windows (`ALLOC_MW` is `EOPNOTSUPP`, `max_mw` 0), XRC, raw packet QPs,
///   DC, alternate paths, DEVX (a context asking for it gets an error), the legacy dynamic bfregs
///   (`num_dyn_bfregs` 0, `MLX5_IB_MMAP_ALLOC_WC`), CQE compression and 128-byte CQE padding, CQ flags, resizing, `REQ_NOTIFY_CQ` (mlx5
///   arms through the doorbell), the kernel's `POST_SEND`/`POST_RECV`/`POLL_CQ`, the core clock
///   page.
/// * Event files are pipes: a read returns at most what was asked for (the kernel refuses a buffer
///   smaller than a record) and reads end of file, not `EIO`, once the device file is closed.
#[derive(Debug, Clone)]
pub struct Mlx5Model {
    dev: Arc<Device>,
}

impl Mlx5Model {
    /// A model device with the default configuration ([`ModelConfig::default`]).
    pub fn new() -> Result<Mlx5Model> {
        Mlx5Model::with_config(ModelConfig::default())
    }

    /// A model device configured by `cfg`.
    pub fn with_config(cfg: ModelConfig) -> Result<Mlx5Model> {
        let dev = Device::build(cfg, |gids, sink| Hca::new(gids, sink) as Arc<dyn Silicon>)?;
        Ok(Mlx5Model { dev })
    }

    /// A model device whose HCA is `silicon` (tests).
    #[cfg(test)]
    pub(crate) fn with_silicon(
        cfg: ModelConfig,
        make: impl FnOnce(Vec<[u8; 16]>, Arc<dyn EventSink>) -> Arc<dyn Silicon>,
    ) -> Result<Mlx5Model> {
        Ok(Mlx5Model {
            dev: Device::build(cfg, make)?,
        })
    }

    /// What discovery would say of the device, with a newly opened file of it (see the type's
    /// documentation): driver mlx5, uverbs ABI 1, `uverbs<N>`, a device node that does not exist
    /// (`/dev/infiniband/<name>-model`), no character device number, kernel index `N`, and the
    /// model's sysfs directory.
    pub fn device_info(&self) -> DeviceInfo {
        DeviceInfo {
            name: self.dev.cfg.name.clone(),
            uverbs: format!("uverbs{}", self.dev.index),
            devnode: PathBuf::from(format!("/dev/infiniband/{}-model", self.dev.cfg.name)),
            dev: None,
            abi_version: 1,
            driver: Driver::Mlx5,
            index: Some(self.dev.index),
            sysfs_dir: self.dev.sysfs.device_dir().to_owned(),
            model: Some(self.open()),
        }
    }

    /// A newly opened file of the device that allows one context, as the kernel's does: what a
    /// context should talk to (`open(2)` of the device node).
    pub fn open(&self) -> ModelRef {
        ModelRef(kernel::File::open(Arc::clone(&self.dev)))
    }

    /// Takes the port down (`false`) or up (`true`): `QUERY_PORT` and sysfs show the new state, the
    /// HCA stops (or resumes) moving packets, and every async event file gets `PORT_ERR` /
    /// `PORT_ACTIVE` for port 1 (when the state changes).
    pub fn set_port_active(&self, active: bool) {
        self.dev.set_port_active(active);
    }

    /// Whether the port is up.
    pub fn port_active(&self) -> bool {
        self.dev.port_active()
    }

    /// What the device has seen and holds.
    pub fn stats(&self) -> ModelStats {
        self.dev.stats()
    }

    /// The objects alive in the device's open files, summed: counted in each file's handle table
    /// (see [`ObjectCounts`]). A file and everything in it goes when its last user (a device info,
    /// a context) is dropped.
    pub fn objects(&self) -> ObjectCounts {
        self.objects_per_file()
            .into_iter()
            .fold(ObjectCounts::default(), |a, b| a + b)
    }

    /// The objects alive in each open file of the device (one entry per file, in the order the
    /// files were opened).
    pub fn objects_per_file(&self) -> Vec<ObjectCounts> {
        self.dev.objects_per_file()
    }

    /// Makes the kernel half refuse the next destroy command (ioctl or write) for an object of
    /// `type_id` (`UVERBS_OBJECT_MR`, `_CQ`, `_QP`, ...) with `errno`, the object staying alive, as
    /// a kernel does when it refuses one (rxe refuses `DEREG_MR` while a memory window is bound).
    /// For testing what a driver does when a destroy fails.
    pub fn refuse_next_destroy(&self, type_id: u16, errno: i32) {
        self.dev
            .lock()
            .refusals
            .push((type_id, Errno::from_raw(errno)));
    }

    /// The commands the device was sent and does not implement, each once, in order of kind and id:
    /// what a program under test needs that the model lacks (the model answers them as the kernel
    /// answers commands it does not have).
    pub fn unknown_commands(&self) -> Vec<UnknownCommand> {
        self.dev.unknown().iter().copied().collect()
    }

    /// The configuration the device was made with.
    pub fn config(&self) -> &ModelConfig {
        &self.dev.cfg
    }

    /// The root of the model's sysfs tree (what `/sys` is for a kernel device): discovery against
    /// it finds the device (without the model attached).
    pub fn sysfs_root(&self) -> &Path {
        self.dev.sysfs.root()
    }
}
