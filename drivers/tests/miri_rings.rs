//! The mlx5 data path with a device on another thread, for Miri (`tests/miri`; plain `cargo test`
//! runs it too).
//!
//! The backend's rings live in `DmaBuf`s (anonymous mmap + `madvise`, which Miri cannot run), so
//! these tests put them in ordinary heap memory and access them exactly as the backend does:
//! the CQ through a `CqeMemory` that is `mlx5::cq::CqRing`'s, operation for operation (owner byte
//! loaded atomically with Acquire, entries copied out with raw copies), the send ring through
//! `AsRef`/`AsMut` slices made from raw parts as `mlx5::qp::SqRing` makes them, doorbell records as
//! `mlx5::buf::Dbrec` stores them (atomic Release). The device thread does what the model HCA
//! does (`testing/mlx5-model/src/hca/mem.rs`): loads a doorbell record Relaxed then fences Acquire, reads
//! posted WQEs with raw copies, writes a CQE body, fences Release and stores its owner byte with
//! Release. The production `SendQueue`, `CqPoller` and barriers run unchanged between them,
//! so Miri's data-race detector and aliasing model check the protocol end to end.
//!
//! Under Miri, x86-64's `lfence`/`sfence` (in `barrier`) are not supported: `tests/miri` runs the
//! tests for a 64-bit little-endian target without them (`riscv64gc-unknown-linux-gnu`), where the
//! barriers are the language fences plus `fence(SeqCst)`.

use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::thread;

use zerocopy::byteorder::big_endian::U32;
use zerocopy::{FromBytes, IntoBytes};

use uverbs_drivers::error::Error;
use uverbs_drivers::mlx5::cqe::{cqe_opcode, device_owner_bit, init_buffer, wc_opcode, Cqe64};
use uverbs_drivers::mlx5::doorbell::{
    BlueFlameReg, DoorbellRecordWriter, UarWriter, CQ_SET_CI, SND_DBR,
};
use uverbs_drivers::mlx5::poller::{CompletionTarget, CqPoller, CqeMemory, WqKey};
use uverbs_drivers::mlx5::qp::SqRing;
use uverbs_drivers::mlx5::sq::{PostedWqe, QpType, SendQueue, SendQueueConfig, SendRing};
use uverbs_drivers::mlx5::wqe::{opcode, CtrlSeg, DataSeg};
use uverbs_drivers::wr::{SendWr, Sge};

/// How many entries the tests run through: fewer under Miri, which interprets every step.
const ROUNDS: u32 = if cfg!(miri) { 24 } else { 5_000 };

/// Heap memory shared with the "device" thread by address, as DMA memory is: never accessed through
/// a reference that spans what the other side touches.
struct DmaMem {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: plain heap memory; every access from either thread is a raw access following the
// protocol under test (atomics for the words both sides touch).
unsafe impl Send for DmaMem {}
// SAFETY: as above.
unsafe impl Sync for DmaMem {}

impl DmaMem {
    /// Zeroed memory aligned as DMA buffers are (here to 64 bytes, a cache line).
    fn new(len: usize) -> DmaMem {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        DmaMem { ptr, len }
    }

    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(1), 64).expect("a small layout")
    }

    fn at(&self, offset: usize, len: usize) -> *mut u8 {
        assert!(offset + len <= self.len);
        // SAFETY: in bounds (checked).
        unsafe { self.ptr.as_ptr().add(offset) }
    }

    fn atomic_u8(&self, offset: usize) -> &AtomicU8 {
        // SAFETY: in bounds, alive as long as `self`; `AtomicU8` has no alignment requirement;
        // both sides access this byte only atomically.
        unsafe { AtomicU8::from_ptr(self.at(offset, 1)) }
    }

    fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert_eq!(offset % 4, 0);
        let p = self.at(offset, 4);
        // SAFETY: in bounds, 4-aligned, alive as long as `self`; both sides access this word only
        // atomically.
        unsafe { AtomicU32::from_ptr(p.cast()) }
    }

    /// Copies bytes out (a DMA read, or the CPU reading what it owns).
    fn read(&self, offset: usize, out: &mut [u8]) {
        let p = self.at(offset, out.len());
        // SAFETY: in bounds; the protocol says nobody writes these bytes now.
        unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) };
    }

    /// Copies bytes in.
    fn write(&self, offset: usize, data: &[u8]) {
        let p = self.at(offset, data.len());
        // SAFETY: in bounds; the protocol says nobody else accesses these bytes now.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
    }
}

impl Drop for DmaMem {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
    }
}

/// Set when the device thread panics, so that the driver stops waiting for it.
struct DeviceDown<'a>(&'a AtomicBool);

impl Drop for DeviceDown<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

/// Set when the driver side is done, normally or by a failed assertion, so that the device thread
/// stops (`thread::scope` joins it before a panic of the driver side propagates: without this a
/// failure would be a hang).
struct DriverDone<'a>(&'a AtomicBool);

impl Drop for DriverDone<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A CQ buffer as `CqRing` accesses it.
struct CqMem<'m>(&'m DmaMem);

impl CqeMemory for CqMem<'_> {
    fn cqe_buffer_len(&self) -> usize {
        self.0.len
    }
    fn load_op_own(&self, offset: usize) -> u8 {
        self.0.atomic_u8(offset).load(Ordering::Acquire)
    }
    fn read(&self, offset: usize, out: &mut [u8]) {
        self.0.read(offset, out);
    }
    fn write(&mut self, offset: usize, data: &[u8]) {
        self.0.write(offset, data);
    }
    fn store_op_own(&mut self, offset: usize, value: u8) {
        self.0.atomic_u8(offset).store(value, Ordering::Release);
    }
}

/// A doorbell record word stored as `Dbrec::store` does: atomically, with Release.
struct Dbrec<'m>(&'m DmaMem);

impl DoorbellRecordWriter for Dbrec<'_> {
    fn store(&mut self, index: usize, value: U32) {
        self.0
            .atomic_u32(4 * index)
            .store(u32::from_ne_bytes(value.to_bytes()), Ordering::Release);
    }
}

/// The device side of a doorbell record: a Relaxed load and an Acquire fence (`load_be32`).
fn device_load_be32(rec: &DmaMem, index: usize) -> u32 {
    let v = rec.atomic_u32(4 * index).load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    u32::from_be(v)
}

/// The device publishing its `pi`-th CQE into a CQ of `ncqe` 64-byte entries (`publish_cqe`), once
/// the consumer index in `cq_dbrec` has released the entry.
fn device_publish(cq: &DmaMem, cq_dbrec: &DmaMem, ncqe: u32, pi: u32, cqe: Cqe64) {
    static NEVER: AtomicBool = AtomicBool::new(false);
    assert!(device_publish_unless(&NEVER, cq, cq_dbrec, ncqe, pi, cqe));
}

/// [`device_publish`], giving up (false) if `done` is set while it waits for the entry.
fn device_publish_unless(
    done: &AtomicBool,
    cq: &DmaMem,
    cq_dbrec: &DmaMem,
    ncqe: u32,
    pi: u32,
    mut cqe: Cqe64,
) -> bool {
    while pi.wrapping_sub(device_load_be32(cq_dbrec, CQ_SET_CI)) >= ncqe {
        if done.load(Ordering::SeqCst) {
            return false;
        }
        thread::yield_now();
    }
    cqe.set_owner(device_owner_bit(pi, ncqe));
    let at = (pi & (ncqe - 1)) as usize * 64;
    let bytes = cqe.as_bytes();
    cq.write(at, &bytes[..63]);
    fence(Ordering::Release);
    cq.atomic_u8(at + 63).store(bytes[63], Ordering::Release);
    true
}

/// Receives complete in order: each CQE names the oldest receive of QP 7.
struct Receives {
    next: u64,
}

impl CompletionTarget for Receives {
    fn retire_send(&mut self, _: WqKey, _: u16) -> Option<uverbs_drivers::mlx5::sq::Retired> {
        None
    }
    fn retire_recv(&mut self, key: WqKey, _: &Cqe64) -> Option<u64> {
        (key == WqKey::Qpn(7)).then(|| {
            self.next += 1;
            self.next - 1
        })
    }
}

#[test]
fn cq_polled_while_the_device_produces() {
    const NCQE: u32 = 4;
    let cq_mem = DmaMem::new(NCQE as usize * 64);
    let dbrec = DmaMem::new(8);
    {
        let mut init = vec![0u8; cq_mem.len];
        init_buffer(&mut init, 64);
        cq_mem.write(0, &init);
    }
    let down = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            let _guard = DeviceDown(&down);
            for pi in 0..ROUNDS {
                let cqe = Cqe64 {
                    sop_drop_qpn: U32::new(7),
                    byte_cnt: U32::new(pi),
                    op_own: cqe_opcode::RESP_SEND << 4,
                    ..Cqe64::default()
                };
                if !device_publish_unless(&done, &cq_mem, &dbrec, NCQE, pi, cqe) {
                    break;
                }
            }
        });
        let _done = DriverDone(&done);
        let mut cq = CqPoller::new(CqMem(&cq_mem), 64, 1, 0).unwrap();
        let mut target = Receives { next: 0 };
        let mut seen = 0u32;
        while seen < ROUNDS {
            assert!(!down.load(Ordering::SeqCst), "the device thread failed");
            let mut batch = 0;
            while let Some(wc) = cq.poll_one(&mut target).unwrap() {
                assert_eq!(
                    (wc.wr_id, wc.byte_len, wc.opcode, wc.qp_num),
                    (u64::from(seen), seen, wc_opcode::RECV, 7)
                );
                seen += 1;
                batch += 1;
            }
            if batch > 0 {
                cq.update_consumer_index(&mut Dbrec(&dbrec));
            } else {
                thread::yield_now();
            }
        }
        assert_eq!(cq.consumer_index(), ROUNDS);
    });
}

/// Records BlueFlame/doorbell writes; the device ignores them (it polls the doorbell record).
struct NoUar;

impl UarWriter for NoUar {
    fn write64_be(&mut self, offset: usize, _: [u8; 8]) {
        assert_eq!(offset, 0, "a doorbell-only register");
    }
    fn write_block64(&mut self, _: usize, _: &[u8; 64]) {
        panic!("a doorbell-only register takes no BlueFlame copies");
    }
}

/// How the driver's `SendQueue` reaches the ring the device reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RingAccess {
    /// The production ring, `mlx5::qp::SqRing`, over the shared memory: `SendQueue` writes only
    /// the blocks of the WQE it builds while the device reads the posted ones.
    SharedRing,
    /// `SendQueue` builds WQEs in a private ring; each posted WQE's blocks are then copied to the
    /// shared ring with raw writes of those blocks only.
    CopyPostedBlocks,
}

const BLOCKS: usize = 4;

/// The driver's side of [`send_cycle`]: post what fits, ring the doorbell, poll, repeat.
fn drive<R: SendRing>(
    mut sq: SendQueue<R>,
    publish: impl Fn(&SendQueue<R>, PostedWqe),
    cq_mem: &DmaMem,
    qp_dbrec: &DmaMem,
    cq_dbrec: &DmaMem,
    down: &AtomicBool,
) {
    let mut cq = CqPoller::new(CqMem(cq_mem), 64, 1, 0).unwrap();
    let mut bf = BlueFlameReg::doorbell_only();
    let (mut posted, mut completed) = (0u64, 0u64);
    // Posts refused because the queue was full.
    let mut full = 0u32;
    while completed < u64::from(ROUNDS) {
        assert!(!down.load(Ordering::SeqCst), "the device thread failed");
        while posted < u64::from(ROUNDS) {
            // One entry (one block) and five (ds 6: two blocks) alternately: blocks 0, 1-2, 3-0
            // (wrapping at the ring's end), 1, 2-3, 0, 1-2, 3-0, ...
            let entries = if posted % 2 == 1 { 5 } else { 1 };
            let sge: Vec<Sge> = (0..entries)
                .map(|j| {
                    let n = (posted + j) % 200 + 1;
                    Sge {
                        addr: 0x1000 + n,
                        length: n as u32,
                        lkey: 9,
                    }
                })
                .collect();
            match sq.post(&SendWr::send(posted, &sge), None) {
                Ok(w) => {
                    publish(&sq, w);
                    posted += 1;
                }
                // The one refusal this loop expects: the queue is full (3 requests, or not enough
                // free blocks of the 4) while WQEs are outstanding, whose completions free it.
                // Anything else (a refused request, a full queue with nothing outstanding, which
                // would never drain) is a failure, not a reason to wait.
                Err(Error::QueueFull { capacity: 3, .. }) if sq.outstanding() > 0 => {
                    full += 1;
                    break;
                }
                Err(e) => panic!(
                    "post {posted}: {e:?} with {} WQEs outstanding",
                    sq.outstanding()
                ),
            }
        }
        sq.ring_doorbell(&mut Dbrec(qp_dbrec), &mut bf, &mut NoUar);
        let mut batch = 0;
        while let Some(wc) = cq.poll_one(&mut sq).unwrap() {
            assert_eq!((wc.wr_id, wc.status), (completed, 0));
            completed += 1;
            batch += 1;
        }
        if batch > 0 {
            cq.update_consumer_index(&mut Dbrec(cq_dbrec));
        } else {
            thread::yield_now();
        }
    }
    assert_eq!(sq.outstanding(), 0);
    // The first pass alone fills the queue (nothing completes before the doorbell).
    assert!(full > 0, "the send queue was never full");
}

/// A whole send cycle, `ROUNDS` times over a ring of 4 blocks and a CQ of 2 entries: the driver
/// posts and rings, the device reads the WQE the doorbell record published and completes it, the
/// driver polls, retires and reuses the block.
fn send_cycle(access: RingAccess) {
    const NCQE: u32 = 2;
    let ring = DmaMem::new(BLOCKS * 64);
    let qp_dbrec = DmaMem::new(8);
    let cq_mem = DmaMem::new(NCQE as usize * 64);
    let cq_dbrec = DmaMem::new(8);
    {
        let mut init = vec![0u8; cq_mem.len];
        init_buffer(&mut init, 64);
        cq_mem.write(0, &init);
    }
    let stop = AtomicBool::new(false);
    let down = AtomicBool::new(false);
    // WQEs the device read across the ring's end.
    let wrapped = AtomicUsize::new(0);
    thread::scope(|s| {
        // The device: executes posted WQEs in order, one CQE each (all are signaled).
        s.spawn(|| {
            let _guard = DeviceDown(&down);
            let (mut sq_ci, mut pi) = (0u32, 0u32);
            while !stop.load(Ordering::Relaxed) {
                let posted = device_load_be32(&qp_dbrec, SND_DBR) & 0xffff;
                if posted == sq_ci & 0xffff {
                    thread::yield_now();
                    continue;
                }
                // The WQE's octowords, from its first block, wrapping at the ring's end.
                let octoword = |i: usize| {
                    let mut unit = [0u8; 16];
                    ring.read(((sq_ci as usize * 4 + i) % (BLOCKS * 4)) * 16, &mut unit);
                    unit
                };
                let ctrl = CtrlSeg::read_from_bytes(&octoword(0)).unwrap();
                assert_eq!(
                    ctrl.wqe_index(),
                    sq_ci as u16,
                    "a WQE read before it was posted"
                );
                assert_eq!((ctrl.opcode(), ctrl.qpn()), (opcode::SEND, 0x51));
                let ds = usize::from(ctrl.ds());
                assert!(ds == 2 || ds == 6, "ds {ds}");
                for i in 1..ds {
                    let data = DataSeg::read_from_bytes(&octoword(i)).unwrap();
                    assert_eq!(u64::from(data.byte_count.get()), data.addr.get() & 0xff);
                }
                let cqe = Cqe64 {
                    sop_drop_qpn: U32::new((u32::from(opcode::SEND) << 24) | 0x51),
                    wqe_counter: ctrl.wqe_index().into(),
                    op_own: cqe_opcode::REQ << 4,
                    ..Cqe64::default()
                };
                if !device_publish_unless(&stop, &cq_mem, &cq_dbrec, NCQE, pi, cqe) {
                    break;
                }
                let bbs = ds.div_ceil(4) as u32;
                if (sq_ci % BLOCKS as u32) + bbs > BLOCKS as u32 {
                    wrapped.fetch_add(1, Ordering::Relaxed);
                }
                sq_ci += bbs;
                pi += 1;
            }
        });
        // Stops the device thread however the driver side ends.
        let _stop = DriverDone(&stop);
        let cfg = SendQueueConfig {
            qpn: 0x51,
            user_index: None,
            qp_type: QpType::Rc,
            max_send_wr: 3,
            max_send_sge: 5,
            max_inline_data: 0,
            sq_sig_all: true,
        };
        match access {
            RingAccess::SharedRing => drive(
                // SAFETY: `ring` outlives the queue (the scope), and only the queue writes it; the
                // device thread reads only the WQE the doorbell record published, before its CQE.
                SendQueue::new(unsafe { SqRing::new(ring.ptr, ring.len) }, cfg).unwrap(),
                |_, _| {},
                &cq_mem,
                &qp_dbrec,
                &cq_dbrec,
                &down,
            ),
            RingAccess::CopyPostedBlocks => drive(
                SendQueue::new(vec![0u8; BLOCKS * 64], cfg).unwrap(),
                |sq, w| {
                    for (i, block) in sq.blueflame_blocks(w).enumerate() {
                        ring.write(((w.offset / 64 + i) % BLOCKS) * 64, block);
                    }
                },
                &cq_mem,
                &qp_dbrec,
                &cq_dbrec,
                &down,
            ),
        }
    });
    assert!(
        wrapped.load(Ordering::Relaxed) > 0,
        "no WQE wrapped at the ring's end"
    );
}

/// The send/complete protocol itself: doorbell record after the WQE, WQE reuse after its CQE.
#[test]
fn send_queue_posts_while_the_device_reads_and_completes() {
    send_cycle(RingAccess::CopyPostedBlocks);
}

/// The ring access of `mlx5::qp::SqRing` (finding F1 in docs/soundness.md, fixed): every post
/// borrows only the blocks of the WQE it writes, never the posted WQEs the device thread is
/// reading. (When it borrowed the whole ring mutably, Stacked Borrows reported each post's retag
/// as a write racing with the device's read.)
#[test]
fn sqring_writes_only_free_blocks_while_the_device_reads() {
    send_cycle(RingAccess::SharedRing);
}

/// Soundness finding F12: cleaning a QP's completions out of a CQ (`CqPoller::clean`, when
/// the QP is destroyed) moves the entries after them, rewriting their owner bytes, while the device
/// may load those bytes: the model HCA, when the CQ is armed, reads the `op_own` of every entry past
/// the armed consumer index to decide whether to raise an event (`hca/state.rs`). Its loads are
/// atomic, so the owner byte must be stored atomically; a plain store there was a data race.
#[test]
fn cq_cleaned_while_the_device_reads_owner_bytes() {
    const NCQE: u32 = 8;
    const WRITTEN: u32 = 7;
    let cq_mem = DmaMem::new(NCQE as usize * 64);
    let dbrec = DmaMem::new(8);
    {
        let mut init = vec![0u8; cq_mem.len];
        init_buffer(&mut init, 64);
        cq_mem.write(0, &init);
    }
    // Completions of QP 7 and QP 8 alternately; QP 8 is then destroyed.
    for pi in 0..WRITTEN {
        let cqe = Cqe64 {
            sop_drop_qpn: U32::new(7 + pi % 2),
            byte_cnt: U32::new(pi),
            op_own: cqe_opcode::RESP_SEND << 4,
            ..Cqe64::default()
        };
        device_publish(&cq_mem, &dbrec, NCQE, pi, cqe);
    }
    let stop = AtomicBool::new(false);
    let mut cq = CqPoller::new(CqMem(&cq_mem), 64, 1, 0).unwrap();
    thread::scope(|s| {
        s.spawn(|| {
            // The device arming the CQ at consumer index 0: it looks at every entry it wrote.
            while !stop.load(Ordering::Acquire) {
                for k in 0..WRITTEN {
                    let _ = cq_mem
                        .atomic_u8(k as usize * 64 + 63)
                        .load(Ordering::Acquire);
                }
                thread::yield_now();
            }
        });
        let removed = cq.clean(|cqe| cqe.qpn() == 8);
        stop.store(true, Ordering::Release);
        assert_eq!(removed, WRITTEN / 2);
    });
    cq.update_consumer_index(&mut Dbrec(&dbrec));
    // What is left: QP 7's completions, in order, with valid owner bits.
    let mut target = Receives { next: 0 };
    let mut left = Vec::new();
    while let Some(wc) = cq.poll_one(&mut target).unwrap() {
        left.push(wc.byte_len);
    }
    assert_eq!(left, [0, 2, 4, 6]);
}
