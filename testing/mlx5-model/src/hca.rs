//! The model HCA: the silicon half of the mlx5 model.
//!
//! It owns the model's memory regions, completion queues, queue pairs and shared receive queues, as
//! the device's firmware tables do, and an engine thread that does what a ConnectX does on its own:
//! it watches each queue pair's doorbell record (and the UAR doorbell / BlueFlame writes), fetches
//! the new send WQEs from the SQ ring the driver wrote, parses them exactly as the hardware format
//! says, executes them against other model QPs in this process (SEND/RECV, RDMA WRITE/READ with and
//! without immediate, atomics, inline data, UD datagrams, multicast), enforces lkeys, rkeys, PDs and
//! access flags, consumes receive WQEs from RQ rings and SRQ lists, and writes 64-byte CQEs with the
//! right owner bit, `wqe_counter`, byte counts and error syndromes. It raises completion events on
//! armed CQs and async events through the sinks the kernel half gives it.
//!
//! All memory named here (rings, doorbell records, registered memory) is user memory named by
//! address, exactly as the kernel hands the device DMA addresses, in the address space of the
//! process that created the object ([`Space`]): this process, or a client of the model daemon,
//! whose memory the HCA reaches with `process_vm_readv` / `process_vm_writev` (`hca/mem.rs`). The kernel half
//! (`super::kernel`) checks that every range is mapped before it gives it to the HCA, and destroys an
//! object here before the driver may free its memory.
//!
//! # How the model behaves (what a ConnectX-6 Dx on a RoCE port does, as far as the model goes)
//!
//! * **Engine.** A thread started by [`Hca::new`] polls, in rounds: every CQ's arm doorbell (the
//!   doorbell record's arm word and the UAR's `+0x20` register), then every QP's SND doorbell
//!   record, the BlueFlame register it rings (checked, counted in [`HcaStats`]), and its send
//!   queue (with `UVERBS_MODEL_TRACE=FILE`, each checked doorbell is recorded in FILE: `trace`).
//!   It spins briefly when idle, then sleeps up to 200 µs; it never holds the state lock
//!   while sleeping and stops when the [`Hca`] is dropped or [`Hca::shutdown`] is called.
//! * **WQEs** are parsed as the hardware format says (see `parse`); a malformed one completes with
//!   `LOCAL_QP_OP_ERR`, raises `QP_FATAL` and fails the QP. WQEs of a QP execute in order, each in
//!   one step under the state lock: data, RDMA read results and atomic results are in memory before
//!   the CQE, and the responder's CQE is written before the requester's.
//! * **Completions.** A send WQE produces a CQE when its completion mode is "always"
//!   (`MLX5_WQE_CTRL_CQ_UPDATE`, which the driver sets for signaled requests and with
//!   `sq_sig_all`) or when it fails; flushed WQEs get one `WR_FLUSH_ERR` CQE each. With CQE
//!   version 1 `srqn_uidx` carries the QP's user index (also for receives from an SRQ); with
//!   version 0 the SRQ number on SRQ receives.
//! * **RC.** No receive WQE: RNR NAK, retried after the responder's `min_rnr_timer` (the IB table,
//!   real time), `rnr_retry` times (7: for ever), then `RNR_RETRY_EXC_ERR`. Destination missing,
//!   of another transport, not in RTR/RTS/SQD/SQE, a path GID that is not this port's, or the port
//!   down: the packet is lost, resent after the ACK timeout (`4.096 µs << timeout`; 0: never)
//!   `retry_cnt` times, then `TRANSPORT_RETRY_EXC_ERR`. Responder errors fail both QPs: bad rkey,
//!   bounds, PD or access → `REMOTE_ACCESS_ERR` (responder: `QP_ACCESS_ERR` event, memory
//!   untouched); receive too small → responder `LOCAL_LENGTH_ERR` CQE, requester
//!   `REMOTE_INVAL_REQ_ERR` (responder `QP_REQ_ERR` event); receive buffer not writable → responder
//!   `LOCAL_PROT_ERR` CQE, requester `REMOTE_OP_ERR`; misaligned atomic → `REMOTE_INVAL_REQ_ERR`.
//!   The first packet reaching a QP in RTR raises `COMM_EST`.
//! * **UC**: as RC without acknowledgements: what the responder drops or fails, the requester
//!   completes successfully (an rkey violation or a missing receive WQE is a silent drop; a
//!   receive WQE completed in error fails the responder). **UD**: datagrams of at most [`PORT_MTU`] bytes (else
//!   `LOCAL_LENGTH_ERR`); dropped silently without a destination, with the wrong Q_Key (a Q_Key
//!   with the high bit set means the sender's own) or without a receive WQE; received after the
//!   40-byte GRH area (the IPv6 header, or 20 zero bytes and the IPv4 header for IPv4-mapped GIDs),
//!   counted in the byte count, with the CQE's L3 type, source QP and SL. A send to
//!   `0xffffff` and a multicast GID reaches every QP attached to the group.
//! * **Atomics** operate on the native 64-bit word in the target memory, and the original value is
//!   written to the local buffer in host byte order (the ConnectX-4+ "host endianness" requester
//!   mode that `mlx5_core` selects and that makes `mlx5_ib` report `IB_ATOMIC_HCA`): the ibverbs
//!   semantics, as rxe's.
//! * **CQs.** Entry `pi & (ncqe - 1)`, owner bit `(pi / ncqe) & 1`, body, Release fence, then
//!   `op_own`. A full CQ (`pi - SET_CI >= ncqe`) drops the CQE and raises `CQ_ERR` (once per lost
//!   CQE). Arming: an arm doorbell (`sn << 28 | cmd | ci`) whose sequence number equals the number
//!   of completion events raised so far (mod 4) arms the CQ; stale ones are ignored. An armed CQ
//!   raises one completion event for the first CQE at or after the armed consumer index (with
//!   `REQ_NOT_SOL`: the first solicited or error CQE) and disarms. At creation the HCA writes a
//!   value no doorbell carries into the arm word, so that the driver's first arm is always seen.
//! * **Events** go to the [`EventSink`] from the engine thread only, never with the state lock
//!   held (also those caused by calls here, such as a flush in [`Hca::modify_qp`]: they follow
//!   within one engine round). The sink may therefore call back into the HCA.
//!
//! # Contract with the kernel half
//!
//! The addresses in the descriptors are used as DMA addresses: the kernel half must only pass
//! ranges that are mapped and stay mapped until the object is destroyed here (see `hca/mem.rs`,
//! "the mapping contract"). `destroy_*` and [`Hca::dereg_mr`] return only when the engine no
//! longer touches the object's memory (they take the state lock, which the engine holds while it
//! executes a WQE).

mod engine;
mod exec;
mod mem;
mod parse;
mod state;
#[cfg(test)]
mod tests;
mod trace;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use nix::errno::Errno;

use state::{qps, Event, Qp, Srq, State};

/// The active MTU of the model's port in bytes (`IB_MTU_4096`): the largest UD datagram.
pub const PORT_MTU: u32 = 4096;

/// `ib_qp_attr_mask` bits [`Hca::modify_qp`] looks at: the kernel's state table's own.
pub use uverbs_drivers::qp_state::mask as qp_attr_mask;

/// When the device clock started, and the wall-clock time then (nanoseconds since the Unix epoch):
/// the reference point of the clock-info page.
static CLOCK_EPOCH: std::sync::OnceLock<(Instant, u64)> = std::sync::OnceLock::new();

fn clock_epoch() -> (Instant, u64) {
    *CLOCK_EPOCH.get_or_init(|| {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        (Instant::now(), wall)
    })
}

/// The device's free-running clock: one cycle a nanosecond (`hca_core_clock` is 1 GHz), counted
/// from the process's first look at it. What every CQE's `timestamp` holds.
pub fn device_clock() -> u64 {
    clock_epoch().0.elapsed().as_nanos() as u64
}

/// The clock-info page the kernel half maps out (`MLX5_IB_MMAP_CLOCK_INFO`): cycle 0 is the
/// epoch's wall-clock time, one nanosecond a cycle (`mult` 1, `shift` 0). The clock never
/// overflows a 63-bit count, so the page needs no updates.
pub fn clock_info() -> uverbs_uapi::mlx5_ib_clock_info {
    uverbs_uapi::mlx5_ib_clock_info {
        sign: 0,
        resv: 0,
        nsec: clock_epoch().1,
        cycles: 0,
        frac: 0,
        mult: 1,
        shift: 0,
        mask: (1u64 << 63) - 1,
        overflow_period: u64::MAX,
    }
}

/// Where the HCA delivers events: implemented by the kernel half, which owns the event files.
pub trait EventSink: Send + Sync + std::fmt::Debug {
    /// A completion event for a CQ (the kernel half writes `ib_uverbs_comp_event_desc` with the CQ's
    /// user handle to the CQ's completion channel, if it has one).
    fn completion(&self, cqn: u32);
    /// An async event (`enum ib_event_type` value) for an object: `element` is the QP number, the CQ
    /// number, the SRQ number or the port number, as `kind` says (the kernel half maps it to the
    /// object's user handle, as the kernel's event file does).
    fn async_event(&self, event_type: u32, kind: ObjectKind, element: u32);
}

/// What an async event names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// A queue pair (by QPN).
    Qp,
    /// A completion queue (by CQN).
    Cq,
    /// A shared receive queue (by SRQN).
    Srq,
    /// A port (by number).
    Port,
}

/// The address space an object's memory is in: the process the kernel half served the command in
/// (`current->mm` when the kernel pins user pages). The HCA reaches memory of this process directly
/// and another process's with `process_vm_readv` / `process_vm_writev` (see `hca/mem.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Space {
    /// This process (the model in the program it serves).
    #[default]
    Local,
    /// Another process, by id: a client of the model daemon ([`crate::serve`]).
    Remote {
        /// Its process id.
        pid: i32,
    },
}

/// A registered memory region (the device's MKey).
#[derive(Debug, Clone, Copy)]
pub struct MrDesc {
    /// The local key.
    pub lkey: u32,
    /// The remote key (mlx5: equal to the lkey).
    pub rkey: u32,
    /// The protection domain number.
    pub pdn: u32,
    /// The I/O virtual address the region starts at (what WQEs name).
    pub iova: u64,
    /// Where that is in the owner's address space.
    pub host: usize,
    /// The process whose memory it is.
    pub space: Space,
    /// The length in bytes.
    pub len: u64,
    /// `ib_access_flags` bits.
    pub access: u32,
}

/// A completion queue, as `CREATE_CQ` gave it.
#[derive(Debug, Clone, Copy)]
pub struct CqDesc {
    /// The CQ number.
    pub cqn: u32,
    /// The CQE buffer (page aligned), `ncqe * cqe_size` bytes.
    pub buf: usize,
    /// Entries: a power of two.
    pub ncqe: u32,
    /// 64 or 128 (with 128, the 64-byte CQE is the second half of each entry).
    pub cqe_size: u32,
    /// The doorbell record: two big-endian u32 words, `[SET_CI, ARM_DB]`.
    pub dbrec: usize,
    /// The UAR page whose `+0x20` register receives the arm doorbell.
    pub uar: usize,
    /// The CQE version of the context (0 or 1): with 1, `srqn_uidx` carries the QP's user index.
    pub cqe_version: u8,
    /// The process whose memory the buffer and the doorbell record are (the UAR page is the
    /// model's own, always in this process).
    pub space: Space,
}

/// The transport of a queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

/// A queue pair, as `CREATE_QP` gave it.
#[derive(Debug, Clone, Copy)]
pub struct QpDesc {
    /// The QP number.
    pub qpn: u32,
    /// The transport.
    pub transport: Transport,
    /// The protection domain number.
    pub pdn: u32,
    /// The work-queue buffer: the RQ at offset 0, the SQ after it (`sq_offset`).
    pub buf: usize,
    /// RQ WQEs (a power of two; 0 when the QP uses an SRQ or has no RQ).
    pub rq_wqe_cnt: u32,
    /// log2 of the RQ stride in bytes.
    pub rq_wqe_shift: u32,
    /// Where the SQ starts in `buf`.
    pub sq_offset: usize,
    /// SQ basic blocks of 64 bytes (a power of two).
    pub sq_wqe_cnt: u32,
    /// The doorbell record: big-endian u32 `[RCV counter, SND counter]`.
    pub dbrec: usize,
    /// The BlueFlame register (in a UAR page) this QP rings: 8-byte doorbells and BlueFlame copies.
    pub bf_reg: usize,
    /// The BlueFlame buffer size (half of `bf_reg_size`); the driver alternates between the halves.
    pub bf_buf_size: u32,
    /// How many BlueFlame registers, from `bf_reg` on (one every `2 * bf_buf_size` bytes), the QP
    /// may ring: 1 for a static bfreg, which the kernel chose; for a QP on a UAR object's page the
    /// kernel (and the HCA) only know the page, and the library may hand the QP either of the
    /// page's two registers (`MLX5_NON_FP_BFREGS_PER_UAR`).
    pub bf_regs: u32,
    /// The send CQ.
    pub send_cqn: u32,
    /// The receive CQ.
    pub recv_cqn: u32,
    /// The SRQ the QP receives from, if any.
    pub srqn: Option<u32>,
    /// The user index (CQE version 1) or 0xffffff.
    pub uidx: u32,
    /// Every send WQE generates a CQE (`sq_sig_all`).
    pub sq_sig_all: bool,
    /// The process whose memory the buffer and the doorbell record are (the BlueFlame register
    /// is in the model's own UAR page).
    pub space: Space,
}

/// The address a connected QP sends to, or a UD AV's resolved destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathDesc {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Source GID index.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label.
    pub flow_label: u32,
    /// Service level.
    pub sl: u8,
    /// Destination LID (IB; 0 on RoCE).
    pub dlid: u16,
    /// Whether the path is global (always on RoCE).
    pub is_global: bool,
    /// Port number.
    pub port: u8,
}

/// The attributes `MODIFY_QP` may set (`ib_uverbs_modify_qp` decoded); which ones apply is `mask`
/// (`IB_QP_*` / `ibv_qp_attr_mask` bits). The kernel half has already checked the transition and the
/// mask against the verbs state table.
#[derive(Debug, Clone, Copy, Default)]
pub struct QpAttrs {
    /// `ib_qp_state` target.
    pub state: u8,
    /// Access flags for remote operations.
    pub access: u32,
    /// Port.
    pub port: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Path MTU (`ib_mtu`: 1 = 256 … 5 = 4096).
    pub path_mtu: u8,
    /// Destination QP number (connected).
    pub dest_qpn: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Outstanding RDMA reads / atomics as initiator.
    pub max_rd_atomic: u8,
    /// … as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (encoded).
    pub min_rnr_timer: u8,
    /// Local ACK timeout (encoded: 4.096 µs × 2^timeout; 0 = infinite).
    pub timeout: u8,
    /// Retries on transport errors.
    pub retry_cnt: u8,
    /// Retries on RNR NAKs (7 = infinite).
    pub rnr_retry: u8,
    /// Primary path.
    pub path: PathDesc,
    /// Which fields apply.
    pub mask: u32,
}

/// A shared receive queue, as `CREATE_SRQ` gave it.
#[derive(Debug, Clone, Copy)]
pub struct SrqDesc {
    /// The SRQ number.
    pub srqn: u32,
    /// The protection domain number.
    pub pdn: u32,
    /// The WQE buffer: `wqe_cnt` WQEs of `1 << wqe_shift` bytes, each a next segment and data
    /// segments, linked through `next_wqe_index`.
    pub buf: usize,
    /// WQEs (a power of two).
    pub wqe_cnt: u32,
    /// log2 of the WQE stride.
    pub wqe_shift: u32,
    /// The doorbell record: big-endian u32 `[counter]`.
    pub dbrec: usize,
    /// The user index (CQE version 1).
    pub uidx: u32,
    /// The process whose memory the buffer and the doorbell record are.
    pub space: Space,
}

/// What the HCA has counted since it was created: work done, and what its checks of the driver's
/// doorbells found. [`Hca::stats`] returns a copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HcaStats {
    /// Send WQEs completed (successfully or not; flushed ones not included).
    pub wqes: u64,
    /// CQEs written (all kinds).
    pub cqes: u64,
    /// Successful requester CQEs.
    pub send_cqes: u64,
    /// Successful responder CQEs.
    pub recv_cqes: u64,
    /// Error CQEs other than flushes.
    pub error_cqes: u64,
    /// `WR_FLUSH_ERR` CQEs.
    pub flush_cqes: u64,
    /// CQEs dropped because their CQ was full (each raised `CQ_ERR`).
    pub cq_overruns: u64,
    /// CQEs for a CQ that does not exist (a QP whose CQ was destroyed under it).
    pub cqes_lost: u64,
    /// Malformed send WQEs (completed with `LOCAL_QP_OP_ERR`), and blocks skipped while flushing
    /// that did not start a WQE.
    pub malformed_wqes: u64,
    /// RNR NAKs (a send found no receive WQE).
    pub rnr_naks: u64,
    /// Packets lost: no reachable destination (RC retransmits them; UC loses the message).
    pub packets_lost: u64,
    /// Messages the responder dropped silently (UD without destination, Q_Key mismatch or receive
    /// WQE; UC without receive WQE).
    pub packets_dropped: u64,
    /// Remote access violations (bad rkey, bounds, PD, access flags).
    pub remote_access_errors: u64,
    /// RQ doorbell records that claimed more WQEs than the ring holds (driver bug).
    pub rq_overruns: u64,
    /// Completion events raised.
    pub completion_events: u64,
    /// Arm doorbells accepted.
    pub arms: u64,
    /// Arm doorbells ignored for a stale sequence number (an event the driver had not counted).
    pub stale_arms: u64,
    /// Arm words with reserved bits set (ignored).
    pub bad_arms: u64,
    /// UAR arm doorbells naming no CQ, or not matching the CQ's doorbell record arm word.
    pub arm_doorbell_mismatches: u64,
    /// SND doorbell record updates seen.
    pub doorbells: u64,
    /// Doorbells whose 8-byte register write (the first 8 bytes of the batch's last WQE) was seen.
    pub uar_doorbells: u64,
    /// Doorbells that were BlueFlame copies equal to the WQE in the ring.
    pub blueflame_copies: u64,
    /// BlueFlame copies that differ from the WQE in the ring (driver bug).
    pub blueflame_mismatches: u64,
    /// Doorbell record updates never followed by the register write naming the batch's last WQE
    /// (driver bug: missing MMIO write, wrong QP, wrong WQE).
    pub doorbells_missing: u64,
    /// Doorbell record updates not checked (superseded by the next before the register write was
    /// seen, or WQEs that could not be walked).
    pub doorbells_unchecked: u64,
}

/// The state and the engine's stop flag, shared by the [`Hca`] and its engine thread.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    stop: AtomicBool,
    sink: Arc<dyn EventSink>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in the engine leaves consistent-enough tables; keep serving the kernel half.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The model HCA. Shared by the kernel half and the engine thread; the engine stops when the last
/// `Arc` is dropped.
pub struct Hca {
    shared: Arc<Shared>,
    engine: Mutex<Option<JoinHandle<()>>>,
    thread: Thread,
}

impl std::fmt::Debug for Hca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hca")
            .field("engine", &self.thread.name())
            .field("stopped", &self.shared.stop.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Idle rounds spent spinning, then yielding, before the engine starts sleeping.
const SPIN_ROUNDS: u32 = 64;
const YIELD_ROUNDS: u32 = 128;
/// The longest idle sleep.
const MAX_SLEEP: Duration = Duration::from_micros(200);

fn engine(shared: Arc<Shared>) {
    let mut idle = 0u32;
    let mut events = Vec::new();
    while !shared.stop.load(Ordering::Acquire) {
        let now = Instant::now();
        let (work, wake) = {
            let mut st = shared.lock();
            let r = st.round(now);
            std::mem::swap(&mut events, &mut st.events);
            r
        };
        let delivered = !events.is_empty();
        for e in events.drain(..) {
            match e {
                Event::Completion(cqn) => shared.sink.completion(cqn),
                Event::Async {
                    event_type,
                    kind,
                    element,
                } => shared.sink.async_event(event_type, kind, element),
            }
        }
        if work || delivered {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if idle < SPIN_ROUNDS {
            std::hint::spin_loop();
        } else if idle < YIELD_ROUNDS {
            std::thread::yield_now();
        } else {
            let step = (idle - YIELD_ROUNDS).min(5);
            let mut sleep = Duration::from_micros(10u64 << step).min(MAX_SLEEP);
            if let Some(t) = wake {
                sleep = sleep.min(t.saturating_duration_since(Instant::now()));
            }
            std::thread::park_timeout(sleep);
        }
    }
}

impl Hca {
    /// A new HCA with one port whose GID table is `gids` (index → GID), delivering events to `sink`.
    pub fn new(gids: Vec<[u8; 16]>, sink: Arc<dyn EventSink>) -> Arc<Hca> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(gids)),
            stop: AtomicBool::new(false),
            sink,
        });
        let for_engine = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("mlx5-model-hca".into())
            .spawn(move || engine(for_engine))
            .expect("spawning the model HCA's engine thread");
        let thread = handle.thread().clone();
        Arc::new(Hca {
            shared,
            engine: Mutex::new(Some(handle)),
            thread,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// Wakes the engine (events to deliver, or new work).
    fn wake(&self) {
        self.thread.unpark();
    }

    /// Stops the engine thread and waits for it (unless called on the engine thread itself, from
    /// an event sink). Idempotent; [`Drop`] calls it. The tables stay: calls still work, but
    /// nothing executes and no event is delivered any more.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.wake();
        let handle = self.engine.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// What the HCA has counted so far.
    pub fn stats(&self) -> HcaStats {
        self.lock().stats.clone()
    }

    /// Adds an MKey.
    pub fn reg_mr(&self, mr: MrDesc) {
        let mut st = self.lock();
        if let Some(old) = st.mrs.insert(mr.lkey, mr) {
            st.rkeys.remove(&old.rkey);
        }
        st.rkeys.insert(mr.rkey, mr.lkey);
    }

    /// Removes an MKey: from now on WQEs naming it fail with the protection / access syndromes.
    pub fn dereg_mr(&self, lkey: u32) {
        let mut st = self.lock();
        if let Some(old) = st.mrs.remove(&lkey) {
            if st.rkeys.get(&old.rkey) == Some(&lkey) {
                st.rkeys.remove(&old.rkey);
            }
        }
    }

    /// Adds a CQ.
    pub fn create_cq(&self, cq: CqDesc) {
        self.lock().add_cq(cq);
    }

    /// Moves a CQ to a new ring (the state's `resize_cq`: a resize CQE in the old one); returns the
    /// old entry count.
    pub fn resize_cq(
        &self,
        cqn: u32,
        buf: usize,
        ncqe: u32,
        cqe_size: u32,
    ) -> Result<u32, nix::errno::Errno> {
        self.lock().resize_cq(cqn, buf, ncqe, cqe_size)
    }

    /// Removes a CQ (the kernel half refuses while QPs or SRQs use it: EBUSY). When this returns the
    /// HCA no longer touches the CQ's memory.
    pub fn destroy_cq(&self, cqn: u32) {
        let mut st = self.lock();
        st.cqs.remove(&cqn);
        let used: std::collections::BTreeSet<usize> = st.cqs.values().map(|c| c.d.uar).collect();
        st.uar_seen.retain(|u, _| used.contains(u));
    }

    /// Adds a QP in RESET.
    pub fn create_qp(&self, qp: QpDesc) {
        let attrs = QpAttrs {
            state: qps::RESET,
            ..QpAttrs::default()
        };
        self.lock().qps.insert(
            qp.qpn,
            Qp {
                d: qp,
                attrs,
                sq_ci: 0,
                rq_ci: 0,
                retry: None,
                comm_est_done: false,
                drain_notify: false,
                db: Default::default(),
            },
        );
    }

    /// Applies a checked state transition; moving to ERROR flushes every outstanding WQE with
    /// `WR_FLUSH_ERR`, moving to RESET forgets the queues' positions.
    ///
    /// The fields `attrs.mask` names are kept (what [`Hca::query_qp`] returns). Entering SQD
    /// raises `SQ_DRAINED` once no WQE is under way; entering ERROR flushes at once (the CQEs are
    /// written when this returns) and raises `QP_LAST_WQE_REACHED` for a QP on an SRQ; entering
    /// RTR re-arms `COMM_EST`. `ENOENT` for an unknown QP.
    pub fn modify_qp(&self, qpn: u32, attrs: &QpAttrs) -> Result<(), Errno> {
        use qp_attr_mask as m;
        let mut st = self.lock();
        let qp = st.qps.get_mut(&qpn).ok_or(Errno::ENOENT)?;
        let a = &mut qp.attrs;
        let mask = attrs.mask;
        let has = |bit: u32| mask & bit != 0;
        if has(m::ACCESS_FLAGS) {
            a.access = attrs.access;
        }
        if has(m::PKEY_INDEX) {
            a.pkey_index = attrs.pkey_index;
        }
        if has(m::PORT) {
            a.port = attrs.port;
        }
        if has(m::QKEY) {
            a.qkey = attrs.qkey;
        }
        if has(m::AV) {
            a.path = attrs.path;
        }
        if has(m::PATH_MTU) {
            a.path_mtu = attrs.path_mtu;
        }
        if has(m::TIMEOUT) {
            a.timeout = attrs.timeout;
        }
        if has(m::RETRY_CNT) {
            a.retry_cnt = attrs.retry_cnt;
        }
        if has(m::RNR_RETRY) {
            a.rnr_retry = attrs.rnr_retry;
        }
        if has(m::RQ_PSN) {
            a.rq_psn = attrs.rq_psn;
        }
        if has(m::MAX_QP_RD_ATOMIC) {
            a.max_rd_atomic = attrs.max_rd_atomic;
        }
        if has(m::MIN_RNR_TIMER) {
            a.min_rnr_timer = attrs.min_rnr_timer;
        }
        if has(m::SQ_PSN) {
            a.sq_psn = attrs.sq_psn;
        }
        if has(m::MAX_DEST_RD_ATOMIC) {
            a.max_dest_rd_atomic = attrs.max_dest_rd_atomic;
        }
        if has(m::DEST_QPN) {
            a.dest_qpn = attrs.dest_qpn;
        }
        a.mask |= mask & !m::STATE;
        if has(m::STATE) {
            a.mask |= m::STATE;
            match attrs.state {
                qps::ERR => st.fail_qp(qpn),
                qps::RESET => {
                    qp.attrs.state = qps::RESET;
                    qp.sq_ci = 0;
                    qp.rq_ci = 0;
                    qp.retry = None;
                    qp.comm_est_done = false;
                    qp.drain_notify = false;
                    qp.db = Default::default();
                }
                s => {
                    if s == qps::RTR && qp.attrs.state != qps::RTR {
                        qp.comm_est_done = false;
                    }
                    if s == qps::SQD && qp.attrs.state != qps::SQD {
                        qp.drain_notify = true;
                    }
                    if s != qps::SQD {
                        qp.drain_notify = false;
                    }
                    qp.attrs.state = s;
                }
            }
        }
        drop(st);
        self.wake();
        Ok(())
    }

    /// The QP's current attributes (state included).
    pub fn query_qp(&self, qpn: u32) -> Option<QpAttrs> {
        self.lock().qps.get(&qpn).map(|q| q.attrs)
    }

    /// Removes a QP. When this returns the HCA no longer touches its memory.
    pub fn destroy_qp(&self, qpn: u32) {
        let mut st = self.lock();
        st.qps.remove(&qpn);
        for members in st.mcast.values_mut() {
            members.remove(&qpn);
        }
        st.mcast.retain(|_, m| !m.is_empty());
    }

    /// Adds an SRQ.
    pub fn create_srq(&self, srq: SrqDesc) {
        self.lock().srqs.insert(
            srq.srqn,
            Srq {
                d: srq,
                head: 0,
                consumed: 0,
                limit: 0,
            },
        );
    }

    /// Arms the SRQ limit event: when fewer than `limit` WQEs remain, one `SRQ_LIMIT_REACHED` is raised
    /// and the limit disarms (0 disarms).
    pub fn set_srq_limit(&self, srqn: u32, limit: u32) {
        if let Some(srq) = self.lock().srqs.get_mut(&srqn) {
            srq.limit = limit;
        }
    }

    /// The SRQ's armed limit.
    pub fn srq_limit(&self, srqn: u32) -> u32 {
        self.lock().srqs.get(&srqn).map_or(0, |s| s.limit)
    }

    /// Removes an SRQ.
    pub fn destroy_srq(&self, srqn: u32) {
        self.lock().srqs.remove(&srqn);
    }

    /// Attaches a UD QP to a multicast group. Attaching twice is attaching once. `ENOENT` for an
    /// unknown QP, `EINVAL` for a QP that is not UD or a GID that is not multicast.
    pub fn attach_mcast(&self, qpn: u32, gid: [u8; 16]) -> Result<(), Errno> {
        let mut st = self.lock();
        let qp = st.qps.get(&qpn).ok_or(Errno::ENOENT)?;
        if qp.d.transport != Transport::Ud || !exec::is_multicast(&gid) {
            return Err(Errno::EINVAL);
        }
        st.mcast.entry(gid).or_default().insert(qpn);
        Ok(())
    }

    /// Detaches it. `EINVAL` if it is not attached.
    pub fn detach_mcast(&self, qpn: u32, gid: [u8; 16]) -> Result<(), Errno> {
        let mut st = self.lock();
        let members = st.mcast.get_mut(&gid).ok_or(Errno::EINVAL)?;
        if !members.remove(&qpn) {
            return Err(Errno::EINVAL);
        }
        if members.is_empty() {
            st.mcast.remove(&gid);
        }
        Ok(())
    }

    /// Sets the port's state (ACTIVE or DOWN), raising PORT_ACTIVE / PORT_ERR (element: port 1)
    /// when it changes. While the port is down nothing reaches any QP (RC retransmits, then fails
    /// with `TRANSPORT_RETRY_EXC_ERR`).
    pub fn set_port_active(&self, active: bool) {
        let mut st = self.lock();
        if st.port_active != active {
            st.port_active = active;
            let e = if active {
                state::event::PORT_ACTIVE
            } else {
                state::event::PORT_ERR
            };
            st.async_event(e, ObjectKind::Port, 1);
        }
        drop(st);
        self.wake();
    }

    /// Whether the port is active.
    pub fn port_active(&self) -> bool {
        self.lock().port_active
    }
}

impl Drop for Hca {
    fn drop(&mut self) {
        self.shutdown();
    }
}
