//! Tests of the model HCA against the production data path: WQEs are built by
//! [`uverbs_drivers::mlx5::sq::SendQueue`] (receive WQEs with [`DataSeg`]), doorbells rung as the
//! driver rings them (doorbell record, then the BlueFlame register), and the HCA's CQEs are read by
//! [`uverbs_drivers::mlx5::poller::CqPoller`]; memory is checked byte for byte.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zerocopy::IntoBytes;

use super::state::{event, qps};
use super::*;
use uverbs_drivers::mlx5::cqe::{
    self, cqe_opcode, syndrome, wc_flags, wc_opcode, wc_status, Cqe64, WorkCompletion,
};
use uverbs_drivers::mlx5::doorbell::{
    BlueFlameReg, DoorbellRecord, UarWriter, BF_OFFSET, CQ_ARM_DB, CQ_DOORBELL, CQ_SET_CI, RCV_DBR,
    SND_DBR,
};
use uverbs_drivers::mlx5::poller::{CompletionTarget, CqPoller, WqKey};
use uverbs_drivers::mlx5::sq::{QpType, Retired, SendQueue, SendQueueConfig};
use uverbs_drivers::mlx5::wqe::{self, Av, DataSeg, INVALID_LKEY, SEND_WQE_BB};
use uverbs_drivers::wr::{self, send_flags, SendWr, Sge, UdDest};

const GID6: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const GID4: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3];
const MGID: [u8; 16] = [0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2];
const PDN: u32 = 7;
const ALL_ACCESS: u32 = 1 | 2 | 4 | 8;
const WAIT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// Memory the tests share with the HCA.
// ---------------------------------------------------------------------------------------------

/// Zeroed, page-aligned memory, addressed by the HCA as DMA memory.
struct Mem {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Mem {
    fn new(len: usize) -> Mem {
        let layout = std::alloc::Layout::from_size_align(len.max(64), 4096).unwrap();
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Mem { ptr, layout }
    }

    fn addr(&self) -> usize {
        self.ptr as usize
    }

    fn len(&self) -> usize {
        self.layout.size()
    }

    /// A copy of `len` bytes at `off` (read when the HCA is done with them).
    fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.len());
        let mut v = vec![0u8; len];
        // SAFETY: inside the allocation; the tests read only memory the HCA is not writing.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), v.as_mut_ptr(), len) };
        v
    }

    fn write(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.len());
        // SAFETY: inside the allocation; the tests write only memory not posted to the HCA.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), data.len()) };
    }

    fn u64_at(&self, off: usize) -> u64 {
        u64::from_ne_bytes(self.read(off, 8).try_into().unwrap())
    }

    /// Stores a big-endian doorbell word atomically, after a Release fence (the driver's
    /// `udma_to_device_barrier` + store).
    fn store_be32(&self, off: usize, v: u32) {
        assert!(off % 4 == 0 && off + 4 <= self.len());
        // SAFETY: aligned and inside the allocation; the HCA loads this word atomically.
        let word = unsafe { std::sync::atomic::AtomicU32::from_ptr(self.ptr.add(off).cast()) };
        word.store(v.to_be(), std::sync::atomic::Ordering::Release);
    }

    /// A 64-bit MMIO store (volatile), as the driver writes UAR registers.
    fn mmio_write(&self, off: usize, value: [u8; 8]) {
        assert!(off % 8 == 0 && off + 8 <= self.len());
        // SAFETY: aligned and inside the allocation.
        unsafe {
            std::ptr::write_volatile(self.ptr.add(off).cast::<u64>(), u64::from_ne_bytes(value))
        };
    }

    fn raw(&self, off: usize, len: usize) -> Raw {
        assert!(off + len <= self.len());
        Raw {
            // SAFETY: inside the allocation.
            ptr: unsafe { self.ptr.add(off) },
            len,
        }
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// A view of part of a [`Mem`] for the production ring/CQ models (slices made on demand, as the
/// driver's buffers over DMA memory are).
struct Raw {
    ptr: *mut u8,
    len: usize,
}

impl AsRef<[u8]> for Raw {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: a live allocation (the `Mem` outlives every `Raw` of it in these tests).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl AsMut<[u8]> for Raw {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// The driver's writes to a QP's BlueFlame register.
struct Reg<'a> {
    uar: &'a Mem,
    base: usize,
}

impl UarWriter for Reg<'_> {
    fn write64_be(&mut self, offset: usize, value: [u8; 8]) {
        self.uar.mmio_write(self.base + offset, value);
    }

    fn write_block64(&mut self, offset: usize, block: &[u8; 64]) {
        for (i, w) in block.chunks_exact(8).enumerate() {
            self.uar
                .mmio_write(self.base + offset + 8 * i, w.try_into().unwrap());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The kernel half's part: a sink for events.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Comp(u32),
    Async(u32, ObjectKind, u32),
}

#[derive(Debug, Default)]
struct Sink(Mutex<Vec<Ev>>);

impl EventSink for Sink {
    fn completion(&self, cqn: u32) {
        self.0.lock().unwrap().push(Ev::Comp(cqn));
    }

    fn async_event(&self, event_type: u32, kind: ObjectKind, element: u32) {
        self.0
            .lock()
            .unwrap()
            .push(Ev::Async(event_type, kind, element));
    }
}

impl Sink {
    fn take(&self) -> Vec<Ev> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    /// Waits until `want` has been delivered (and returns everything delivered so far).
    fn wait_for(&self, want: Ev) -> Vec<Ev> {
        let deadline = Instant::now() + WAIT;
        loop {
            let got = self.0.lock().unwrap().clone();
            if got.contains(&want) {
                return self.take();
            }
            assert!(Instant::now() < deadline, "no {want:?}; got {got:?}");
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The driver's part: CQs, QPs, SRQs over that memory.
// ---------------------------------------------------------------------------------------------

struct Env {
    hca: Arc<Hca>,
    sink: Arc<Sink>,
    /// Four UAR pages: page 0 also has the CQ doorbell.
    uar: Mem,
    next_key: std::cell::Cell<u32>,
    next_bfreg: std::cell::Cell<usize>,
    /// The bfreg the next QP gets instead of a fresh one (the kernel shares medium-class ones).
    share_bfreg: std::cell::Cell<Option<usize>>,
    /// Instead, the next QP is on UAR page `.0` as a whole (a UAR object's page: the HCA learns
    /// only the page) and rings its register `.1` (0 or 1), as a library that splits the page.
    uar_page: std::cell::Cell<Option<(usize, usize)>>,
    /// The address space the objects' memory is given in ([`SPACE`]).
    space: Space,
}

thread_local! {
    /// The space [`env`] gives the HCA the tests' memory in: [`Space::Local`], or this process as
    /// a remote space ([`in_remote_space`]), which takes the daemon's path (`process_vm_*v`) to
    /// the same memory.
    static SPACE: std::cell::Cell<Space> = const { std::cell::Cell::new(Space::Local) };
}

/// Runs a test with the HCA reaching the test's memory as another process's.
fn in_remote_space(test: fn()) {
    SPACE.with(|s| {
        s.set(Space::Remote {
            pid: std::process::id() as i32,
        })
    });
    let r = std::panic::catch_unwind(test);
    SPACE.with(|s| s.set(Space::Local));
    if let Err(p) = r {
        std::panic::resume_unwind(p);
    }
}

fn env() -> Env {
    let sink = Arc::new(Sink::default());
    Env {
        space: SPACE.with(std::cell::Cell::get),
        hca: Hca::new(vec![GID6, GID4], sink.clone()),
        sink,
        uar: Mem::new(4 * 4096),
        next_key: std::cell::Cell::new(0x100),
        next_bfreg: std::cell::Cell::new(1),
        share_bfreg: std::cell::Cell::new(None),
        uar_page: std::cell::Cell::new(None),
    }
}

struct TestCq {
    hca: Arc<Hca>,
    cqn: u32,
    _mem: Mem,
    dbrec: Mem,
    cq: CqPoller<Raw>,
}

struct RecvQ {
    cnt: u32,
    shift: u32,
    head: u32,
    tail: u32,
    ids: Vec<u64>,
}

struct TestQp {
    hca: Arc<Hca>,
    qpn: u32,
    uidx: u32,
    buf: Mem,
    dbrec: Mem,
    sq: SendQueue<Raw>,
    rq: RecvQ,
    bf: BlueFlameReg,
    bf_off: usize,
    local_dbrec: DoorbellRecord,
}

/// A memory region: registered memory and its key.
struct Region {
    hca: Arc<Hca>,
    mem: Mem,
    key: u32,
}

// The kernel half destroys an object in the HCA before its memory may be freed; so do the tests.
impl Drop for Region {
    fn drop(&mut self) {
        self.hca.dereg_mr(self.key);
    }
}

impl Drop for TestCq {
    fn drop(&mut self) {
        self.hca.destroy_cq(self.cqn);
    }
}

impl Drop for TestQp {
    fn drop(&mut self) {
        self.hca.destroy_qp(self.qpn);
    }
}

impl Region {
    fn sge(&self, off: usize, len: u32) -> Sge {
        Sge {
            addr: (self.mem.addr() + off) as u64,
            length: len,
            lkey: self.key,
        }
    }

    fn addr(&self, off: usize) -> u64 {
        (self.mem.addr() + off) as u64
    }
}

impl Env {
    fn region(&self, len: usize, access: u32) -> Region {
        let mem = Mem::new(len);
        let key = self.next_key.get();
        self.next_key.set(key + 0x100);
        self.hca.reg_mr(MrDesc {
            lkey: key,
            rkey: key,
            pdn: PDN,
            iova: mem.addr() as u64,
            host: mem.addr(),
            len: len as u64,
            access,
            space: self.space,
        });
        Region {
            hca: self.hca.clone(),
            mem,
            key,
        }
    }

    fn cq(&self, cqn: u32, n: u32, size: u32) -> TestCq {
        let mem = Mem::new((n * size) as usize);
        let mut init = vec![0u8; (n * size) as usize];
        cqe::init_buffer(&mut init, size as usize);
        mem.write(0, &init);
        let dbrec = Mem::new(64);
        self.hca.create_cq(CqDesc {
            cqn,
            buf: mem.addr(),
            ncqe: n,
            cqe_size: size,
            dbrec: dbrec.addr(),
            uar: self.uar.addr(),
            cqe_version: 1,
            space: self.space,
        });
        let cq = CqPoller::new(mem.raw(0, (n * size) as usize), size as usize, cqn, 1).unwrap();
        TestCq {
            hca: self.hca.clone(),
            cqn,
            _mem: mem,
            dbrec,
            cq,
        }
    }

    /// A QP with an SQ of `sq_blocks` basic blocks and an RQ of `rq_cnt` WQEs of 4 entries
    /// (0: none, or on `srqn`), completing on `cqn`.
    fn qp(&self, qpn: u32, t: Transport, cqn: u32, sq_blocks: u32, rq_cnt: u32) -> TestQp {
        self.qp_on(qpn, t, cqn, sq_blocks, rq_cnt, None)
    }

    fn qp_on(
        &self,
        qpn: u32,
        t: Transport,
        cqn: u32,
        sq_blocks: u32,
        rq_cnt: u32,
        srqn: Option<u32>,
    ) -> TestQp {
        let shift = 6; // 4 data segments
        let rq_bytes = (rq_cnt << shift) as usize;
        let sq_bytes = sq_blocks as usize * SEND_WQE_BB;
        let buf = Mem::new(rq_bytes + sq_bytes);
        let dbrec = Mem::new(64);
        let (bf_off, bf_reg, bf_regs) = match self.uar_page.take() {
            Some((page, k)) => (
                page * 4096 + BF_OFFSET + k * 512,
                page * 4096 + BF_OFFSET,
                2,
            ),
            None => {
                let b = self.share_bfreg.take().unwrap_or_else(|| {
                    let b = self.next_bfreg.get();
                    self.next_bfreg.set(b + 1);
                    b
                });
                // bfregs 1..3 of each 4 KiB UAR (0 is doorbell-only).
                let (page, k) = (b / 3, 1 + b % 3);
                let off = page * 4096 + BF_OFFSET + k * 512;
                (off, off, 1)
            }
        };
        let uidx = 0x1000 + qpn;
        self.hca.create_qp(QpDesc {
            qpn,
            transport: t,
            pdn: PDN,
            buf: buf.addr(),
            rq_wqe_cnt: rq_cnt,
            rq_wqe_shift: shift,
            sq_offset: rq_bytes,
            sq_wqe_cnt: sq_blocks,
            dbrec: dbrec.addr(),
            bf_reg: self.uar.addr() + bf_reg,
            bf_buf_size: 256,
            bf_regs,
            send_cqn: cqn,
            recv_cqn: cqn,
            srqn,
            uidx,
            sq_sig_all: false,
            space: self.space,
        });
        let sq = SendQueue::new(
            buf.raw(rq_bytes, sq_bytes),
            SendQueueConfig {
                qpn,
                user_index: Some(uidx),
                qp_type: match t {
                    Transport::Rc => QpType::Rc,
                    Transport::Uc => QpType::Uc,
                    Transport::Ud => QpType::Ud,
                },
                max_send_wr: sq_blocks,
                max_send_sge: 16,
                max_inline_data: 256,
                sq_sig_all: false,
            },
        )
        .unwrap();
        TestQp {
            hca: self.hca.clone(),
            qpn,
            uidx,
            buf,
            dbrec,
            sq,
            rq: RecvQ {
                cnt: rq_cnt,
                shift,
                head: 0,
                tail: 0,
                ids: vec![0; rq_cnt as usize],
            },
            bf: BlueFlameReg::new(512),
            bf_off,
            local_dbrec: DoorbellRecord::default(),
        }
    }

    fn modify(&self, qp: u32, attrs: QpAttrs) {
        self.hca.modify_qp(qp, &attrs).unwrap();
    }

    fn state(&self, qp: u32) -> u8 {
        self.hca.query_qp(qp).unwrap().state
    }

    /// RESET → INIT → RTR → RTS of a connected QP to `dest`.
    fn connect(&self, qp: u32, dest: u32, rnr_retry: u8, retry_cnt: u8) {
        use qp_attr_mask as m;
        self.modify(
            qp,
            QpAttrs {
                state: qps::INIT,
                access: ALL_ACCESS,
                port: 1,
                mask: m::STATE | m::ACCESS_FLAGS | m::PORT | m::PKEY_INDEX,
                ..QpAttrs::default()
            },
        );
        self.modify(
            qp,
            QpAttrs {
                state: qps::RTR,
                path_mtu: 5,
                dest_qpn: dest,
                min_rnr_timer: 1,
                path: PathDesc {
                    dgid: GID6,
                    is_global: true,
                    port: 1,
                    hop_limit: 64,
                    sl: 3,
                    ..PathDesc::default()
                },
                mask: m::STATE
                    | m::AV
                    | m::PATH_MTU
                    | m::DEST_QPN
                    | m::RQ_PSN
                    | m::MAX_DEST_RD_ATOMIC
                    | m::MIN_RNR_TIMER,
                ..QpAttrs::default()
            },
        );
        self.rts(qp, rnr_retry, retry_cnt);
    }

    fn rts(&self, qp: u32, rnr_retry: u8, retry_cnt: u8) {
        use qp_attr_mask as m;
        self.modify(
            qp,
            QpAttrs {
                state: qps::RTS,
                timeout: 1,
                retry_cnt,
                rnr_retry,
                mask: m::STATE | m::TIMEOUT | m::RETRY_CNT | m::RNR_RETRY | m::SQ_PSN,
                ..QpAttrs::default()
            },
        );
    }

    /// A UD QP up to RTS with `qkey`.
    fn activate_ud(&self, qp: u32, qkey: u32) {
        use qp_attr_mask as m;
        self.modify(
            qp,
            QpAttrs {
                state: qps::INIT,
                qkey,
                port: 1,
                mask: m::STATE | m::QKEY | m::PORT | m::PKEY_INDEX,
                ..QpAttrs::default()
            },
        );
        for state in [qps::RTR, qps::RTS] {
            self.modify(
                qp,
                QpAttrs {
                    state,
                    mask: m::STATE,
                    ..QpAttrs::default()
                },
            );
        }
    }
}

impl TestCq {
    fn publish_ci(&self) {
        self.dbrec
            .store_be32(4 * CQ_SET_CI, self.cq.consumer_index_record().get());
    }

    /// Polls one completion through the production parser, if one is there.
    fn poll(&mut self, target: &mut impl CompletionTarget) -> Option<WorkCompletion> {
        let wc = self.cq.poll_one(target).unwrap();
        if wc.is_some() {
            self.publish_ci();
        }
        wc
    }

    /// Waits for `n` completions.
    fn wait(&mut self, target: &mut impl CompletionTarget, n: usize) -> Vec<WorkCompletion> {
        let deadline = Instant::now() + WAIT;
        let mut out = Vec::new();
        while out.len() < n {
            match self.poll(target) {
                Some(wc) => out.push(wc),
                None => {
                    assert!(
                        Instant::now() < deadline,
                        "CQ {:#x}: {} of {n} completions: {out:?}",
                        self.cqn,
                        out.len()
                    );
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        out
    }

    /// Waits for one completion.
    fn one(&mut self, target: &mut impl CompletionTarget) -> WorkCompletion {
        self.wait(target, 1)[0]
    }

    /// The CQE at the consumer index, if the device has written it (not consumed).
    fn peek(&self) -> Option<Cqe64> {
        let buf = self.cq.buffer().as_ref();
        let size = buf.len() / self.cq.entries() as usize;
        let ci = self.cq.consumer_index();
        let at = (ci & (self.cq.entries() - 1)) as usize * size;
        let entry = &buf[at..at + size];
        cqe::is_sw_owned(entry[size - 1], ci, self.cq.entries())
            .then(|| Cqe64::from_entry(entry).unwrap())
    }

    /// Waits for the CQE at the consumer index and returns it (not consumed).
    fn wait_peek(&self) -> Cqe64 {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(c) = self.peek() {
                return c;
            }
            assert!(Instant::now() < deadline, "no CQE on {:#x}", self.cqn);
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Asserts that nothing arrives for a while.
    fn quiet(&self, d: Duration) {
        std::thread::sleep(d);
        assert_eq!(self.peek(), None, "CQ {:#x} should be empty", self.cqn);
    }

    /// Arms as rdma-core's `mlx5_arm_cq` does: the arm word, then the UAR doorbell.
    fn arm(&self, solicited: bool, uar: &Mem) {
        let db = self.cq.arm_doorbell(solicited);
        self.dbrec.store_be32(4 * CQ_ARM_DB, db.dbrec.get());
        uar.mmio_write(CQ_DOORBELL, db.uar);
    }
}

impl TestQp {
    /// Posts requests and rings one doorbell, as `post_send` does.
    fn post_list(&mut self, wrs: &[SendWr<'_>], av: Option<&Av>, uar: &Mem) -> Vec<u16> {
        let idx = wrs
            .iter()
            .map(|wr| self.sq.post(wr, av).unwrap().index)
            .collect();
        self.ring(uar);
        idx
    }

    fn post(&mut self, wr: &SendWr<'_>, uar: &Mem) -> u16 {
        self.post_list(std::slice::from_ref(wr), None, uar)[0]
    }

    fn ring(&mut self, uar: &Mem) {
        self.dbrec
            .store_be32(4 * SND_DBR, self.sq.doorbell_record().get());
        let mut reg = Reg {
            uar,
            base: self.bf_off,
        };
        self.sq
            .ring_doorbell(&mut self.local_dbrec, &mut self.bf, &mut reg);
    }

    /// Posts a receive WQE of up to 4 entries, as `mlx5_post_recv` does.
    fn recv(&mut self, wr_id: u64, sges: &[Sge]) {
        let rq = &mut self.rq;
        assert!(rq.head - rq.tail < rq.cnt, "RQ full");
        let slot = (rq.head & (rq.cnt - 1)) as usize;
        let at = slot << rq.shift;
        let max = 1usize << (rq.shift - 4);
        for (i, s) in sges.iter().enumerate() {
            self.buf.write(
                at + 16 * i,
                DataSeg::new(s.length, s.lkey, s.addr).as_bytes(),
            );
        }
        if sges.len() < max {
            self.buf.write(
                at + 16 * sges.len(),
                DataSeg::new(0, INVALID_LKEY, 0).as_bytes(),
            );
        }
        rq.ids[slot] = wr_id;
        rq.head += 1;
        self.dbrec.store_be32(4 * RCV_DBR, rq.head & 0xffff);
    }
}

impl CompletionTarget for TestQp {
    fn retire_send(&mut self, key: WqKey, wqe_counter: u16) -> Option<Retired> {
        (key == WqKey::UserIndex(self.uidx))
            .then(|| self.sq.retire(wqe_counter))
            .flatten()
    }

    fn retire_recv(&mut self, key: WqKey, _cqe: &Cqe64) -> Option<u64> {
        if key != WqKey::UserIndex(self.uidx) || self.rq.tail == self.rq.head {
            return None;
        }
        let id = self.rq.ids[(self.rq.tail & (self.rq.cnt - 1)) as usize];
        self.rq.tail += 1;
        Some(id)
    }
}

fn write_wr<'a>(id: u64, sges: &'a [Sge], raddr: u64, rkey: u32) -> SendWr<'a> {
    SendWr {
        opcode: wr::opcode::RDMA_WRITE,
        remote_addr: raddr,
        rkey,
        ..SendWr::send(id, sges)
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Two RC QPs connected to each other, each with its own CQ: `a` (QPN 0x10) and `b` (0x20).
fn rc_pair(e: &Env, rnr_retry: u8) -> (TestQp, TestCq, TestQp, TestCq) {
    let ca = e.cq(1, 16, 64);
    let cb = e.cq(2, 16, 64);
    let a = e.qp(0x10, Transport::Rc, 1, 16, 8);
    let b = e.qp(0x20, Transport::Rc, 2, 16, 8);
    e.connect(0x10, 0x20, rnr_retry, 3);
    e.connect(0x20, 0x10, rnr_retry, 3);
    (a, ca, b, cb)
}

// ---------------------------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------------------------

#[test]
fn send_recv_with_immediate_inline_and_solicited() {
    let e = env();
    let (mut a, mut ca, mut b, mut cb) = rc_pair(&e, 7);
    let tx = e.region(4096, ALL_ACCESS);
    let rx = e.region(4096, 1);
    let data = pattern(200, 1);
    tx.mem.write(0, &data);
    // Receives: the first scattered over two entries.
    b.recv(100, &[rx.sge(0, 16), rx.sge(1000, 100)]);
    b.recv(101, &[rx.sge(2000, 64)]);
    let sges = [tx.sge(0, 30), tx.sge(100, 50)];
    let mut send = SendWr {
        opcode: wr::opcode::SEND_WITH_IMM,
        imm_or_inv: u32::from_ne_bytes([0xde, 0xad, 0xbe, 0xef]),
        flags: send_flags::SIGNALED | send_flags::SOLICITED,
        ..SendWr::send(1, &sges)
    };
    let i0 = a.post(&send, &e.uar);
    // The receiver's CQE, raw: RESP_SEND_IMM with the SE bit, user index, source QP.
    let raw = cb.wait_peek();
    assert_eq!(raw.opcode(), cqe_opcode::RESP_SEND_IMM);
    assert_eq!(raw.se(), 1);
    assert_eq!(raw.byte_count(), 80);
    assert_eq!(raw.srqn_uidx(), b.uidx);
    assert_eq!(raw.qpn(), 0x20);
    assert_eq!(raw.src_qp(), 0x10);
    assert_eq!(raw.sl(), 3);
    assert_eq!(raw.wqe_counter.get(), 0);
    assert!(!raw.grh());
    let r = cb.one(&mut b);
    assert_eq!(
        (r.wr_id, r.status, r.opcode, r.byte_len, r.wc_flags),
        (
            100,
            wc_status::SUCCESS,
            wc_opcode::RECV,
            80,
            wc_flags::WITH_IMM
        )
    );
    assert_eq!(r.imm_data.to_ne_bytes(), [0xde, 0xad, 0xbe, 0xef]);
    let s = ca.one(&mut a);
    assert_eq!(
        (s.wr_id, s.status, s.opcode, s.qp_num),
        (1, wc_status::SUCCESS, wc_opcode::SEND, 0x10)
    );
    assert_eq!(i0, 0);
    // 80 bytes: 16 into the first entry, 64 into the second.
    let mut want = data[..30].to_vec();
    want.extend_from_slice(&data[100..150]);
    assert_eq!(rx.mem.read(0, 16), want[..16]);
    assert_eq!(rx.mem.read(1000, 64), want[16..]);
    assert_eq!(
        rx.mem.read(1064, 36),
        vec![0; 36],
        "nothing past the message"
    );

    // Inline: the bytes travel in the WQE.
    let inline = pattern(45, 9);
    send = SendWr {
        flags: send_flags::SIGNALED | send_flags::INLINE,
        inline: &inline,
        ..SendWr::send(2, &[])
    };
    a.post(&send, &e.uar);
    let r = cb.one(&mut b);
    assert_eq!((r.wr_id, r.byte_len, r.wc_flags), (101, 45, 0));
    assert_eq!(rx.mem.read(2000, 45), inline);
    assert_eq!(ca.one(&mut a).wr_id, 2);
    let st = e.hca.stats();
    assert_eq!(st.doorbells, 2);
    assert_eq!(st.doorbells_missing + st.blueflame_mismatches, 0, "{st:?}");
}

#[test]
fn rdma_write_and_write_with_immediate() {
    let e = env();
    let (mut a, mut ca, mut b, mut cb) = rc_pair(&e, 7);
    let tx = e.region(4096, ALL_ACCESS);
    let target = e.region(4096, 1 | 2);
    let data = pattern(300, 3);
    tx.mem.write(0, &data);
    let sges = [tx.sge(0, 300)];
    a.post(&write_wr(1, &sges, target.addr(100), target.key), &e.uar);
    let s = ca.one(&mut a);
    assert_eq!(
        (s.wr_id, s.status, s.opcode, s.byte_len),
        (1, 0, wc_opcode::RDMA_WRITE, 0)
    );
    assert_eq!(target.mem.read(100, 300), data);
    assert_eq!(target.mem.read(0, 100), vec![0; 100]);
    assert_eq!(target.mem.read(400, 100), vec![0; 100]);
    cb.quiet(Duration::from_millis(5));

    // With immediate: consumes a receive, whose CQE has the byte count and the immediate.
    b.recv(50, &[]);
    let sges = [tx.sge(0, 16)];
    let wr = SendWr {
        opcode: wr::opcode::RDMA_WRITE_WITH_IMM,
        imm_or_inv: u32::from_ne_bytes([1, 2, 3, 4]),
        ..write_wr(2, &sges, target.addr(1000), target.key)
    };
    a.post(&wr, &e.uar);
    let raw = cb.wait_peek();
    assert_eq!(raw.opcode(), cqe_opcode::RESP_WR_IMM);
    let r = cb.one(&mut b);
    assert_eq!(
        (r.wr_id, r.opcode, r.byte_len, r.wc_flags),
        (50, wc_opcode::RECV_RDMA_WITH_IMM, 16, wc_flags::WITH_IMM)
    );
    assert_eq!(r.imm_data.to_ne_bytes(), [1, 2, 3, 4]);
    assert_eq!(target.mem.read(1000, 16), data[..16]);
    let s = ca.one(&mut a);
    assert_eq!(
        (s.wr_id, s.opcode, s.wc_flags),
        (2, wc_opcode::RDMA_WRITE, wc_flags::WITH_IMM)
    );
}

#[test]
fn rdma_read_lands_before_its_completion() {
    let e = env();
    let (mut a, mut ca, _b, _cb) = rc_pair(&e, 7);
    let local = e.region(4096, 1);
    let remote = e.region(4096, 1 | 4);
    let data = pattern(500, 5);
    remote.mem.write(64, &data);
    let sges = [local.sge(0, 200), local.sge(1000, 300)];
    let wr = SendWr {
        opcode: wr::opcode::RDMA_READ,
        ..write_wr(9, &sges, remote.addr(64), remote.key)
    };
    a.post(&wr, &e.uar);
    let raw = ca.wait_peek();
    assert_eq!(
        (raw.opcode(), raw.send_opcode()),
        (cqe_opcode::REQ, wqe::opcode::RDMA_READ)
    );
    let s = ca.one(&mut a);
    assert_eq!(
        (s.wr_id, s.status, s.opcode, s.byte_len),
        (9, 0, wc_opcode::RDMA_READ, 500)
    );
    assert_eq!(local.mem.read(0, 200), data[..200]);
    assert_eq!(local.mem.read(1000, 300), data[200..]);
    assert_eq!(local.mem.read(200, 800), vec![0; 800]);
}

#[test]
fn atomics_return_the_original_in_host_order() {
    let e = env();
    let (mut a, mut ca, _b, _cb) = rc_pair(&e, 7);
    let result = e.region(64, 1);
    let target = e.region(64, 1 | 8);
    target.mem.write(8, &100u64.to_ne_bytes());
    let sges = [result.sge(0, 8)];
    let fa = SendWr {
        opcode: wr::opcode::ATOMIC_FETCH_AND_ADD,
        compare_add: 23,
        ..write_wr(1, &sges, target.addr(8), target.key)
    };
    a.post(&fa, &e.uar);
    let s = ca.one(&mut a);
    assert_eq!(
        (s.wr_id, s.status, s.opcode, s.byte_len),
        (1, 0, wc_opcode::FETCH_ADD, 8)
    );
    assert_eq!(result.mem.u64_at(0), 100);
    assert_eq!(target.mem.u64_at(8), 123);
    // Compare and swap that matches, then one that does not.
    for (id, compare, swap, orig, after) in [(2, 123, 7, 123, 7), (3, 123, 9, 7, 7)] {
        let cs = SendWr {
            opcode: wr::opcode::ATOMIC_CMP_AND_SWP,
            compare_add: compare,
            swap,
            ..write_wr(id, &sges, target.addr(8), target.key)
        };
        a.post(&cs, &e.uar);
        let s = ca.one(&mut a);
        assert_eq!((s.wr_id, s.opcode, s.status), (id, wc_opcode::COMP_SWAP, 0));
        assert_eq!((result.mem.u64_at(0), target.mem.u64_at(8)), (orig, after));
    }
    assert_eq!(target.mem.u64_at(0), 0);
    assert_eq!(target.mem.u64_at(16), 0);
}

#[test]
fn remote_access_errors_change_nothing_and_fail_both_sides() {
    for case in 0..3 {
        let e = env();
        let (mut a, mut ca, mut b, mut cb) = rc_pair(&e, 7);
        let tx = e.region(64, ALL_ACCESS);
        tx.mem.write(0, &[0xaa; 64]);
        let read_only = e.region(64, 1 | 4);
        read_only.mem.write(0, &[0x11; 64]);
        b.recv(7, &[read_only.sge(0, 8)]);
        let sges = [tx.sge(0, 16)];
        let wr = match case {
            0 => write_wr(1, &sges, read_only.addr(0), read_only.key),
            1 => write_wr(1, &sges, read_only.addr(0), read_only.key ^ 0x5a00),
            _ => write_wr(1, &sges, read_only.addr(56), read_only.key), // past the end
        };
        a.post(&wr, &e.uar);
        let raw = ca.wait_peek();
        let err = raw.as_err();
        assert_eq!(raw.opcode(), cqe_opcode::REQ_ERR, "case {case}");
        assert_eq!(err.syndrome, syndrome::REMOTE_ACCESS_ERR);
        assert_eq!(err.wqe_opcode(), wqe::opcode::RDMA_WRITE);
        assert_eq!((err.qpn(), err.wqe_counter.get()), (0x10, 0));
        let s = ca.one(&mut a);
        assert_eq!((s.wr_id, s.status), (1, wc_status::REM_ACCESS_ERR));
        assert_eq!(read_only.mem.read(0, 64), vec![0x11; 64], "case {case}");
        assert_eq!(e.state(0x10), qps::ERR);
        assert_eq!(e.state(0x20), qps::ERR);
        // The target failed: its receive is flushed, with the QP_ACCESS_ERR event.
        let r = cb.one(&mut b);
        assert_eq!((r.wr_id, r.status), (7, wc_status::WR_FLUSH_ERR));
        e.sink
            .wait_for(Ev::Async(event::QP_ACCESS_ERR, ObjectKind::Qp, 0x20));
    }
}

#[test]
fn rnr_then_success_when_a_receive_comes() {
    let e = env();
    let (mut a, mut ca, mut b, mut cb) = rc_pair(&e, 7);
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(64, 1);
    tx.mem.write(0, b"hello, receiver!");
    let sges = [tx.sge(0, 16)];
    a.post(&SendWr::send(1, &sges), &e.uar);
    let deadline = Instant::now() + WAIT;
    while e.hca.stats().rnr_naks < 3 {
        assert!(Instant::now() < deadline, "{:?}", e.hca.stats());
        std::thread::sleep(Duration::from_micros(100));
    }
    assert_eq!(ca.peek(), None, "the send waits (rnr_retry 7)");
    b.recv(5, &[rx.sge(0, 64)]);
    assert_eq!(cb.one(&mut b).wr_id, 5);
    let s = ca.one(&mut a);
    assert_eq!((s.wr_id, s.status), (1, 0));
    assert_eq!(rx.mem.read(0, 16), b"hello, receiver!");
}

#[test]
fn rnr_retry_exceeded_fails_the_qp_and_flushes_the_rest() {
    let e = env();
    let (mut a, mut ca, _b, _cb) = rc_pair(&e, 2);
    let tx = e.region(64, ALL_ACCESS);
    let sges = [tx.sge(0, 8)];
    let mut quiet = SendWr::send(2, &sges);
    quiet.flags = 0;
    let idx = a.post_list(&[SendWr::send(1, &sges), quiet], None, &e.uar);
    assert_eq!(idx, [0, 1]);
    let raw = ca.wait_peek();
    assert_eq!(raw.as_err().syndrome, syndrome::RNR_RETRY_EXC_ERR);
    let w = ca.wait(&mut a, 2);
    assert_eq!((w[0].wr_id, w[0].status), (1, wc_status::RNR_RETRY_EXC_ERR));
    assert_eq!(w[0].opcode, wc_opcode::SEND);
    // The unsignaled one is flushed with its own CQE.
    assert_eq!((w[1].wr_id, w[1].status), (2, wc_status::WR_FLUSH_ERR));
    assert_eq!(e.state(0x10), qps::ERR);
    assert_eq!(e.hca.stats().rnr_naks, 3, "the first try and two retries");
    // Posting to a QP in the error state flushes at once.
    a.post(&SendWr::send(3, &sges), &e.uar);
    let w = ca.one(&mut a);
    assert_eq!((w.wr_id, w.status), (3, wc_status::WR_FLUSH_ERR));
}

#[test]
fn transport_retries_exceeded_when_the_peer_is_not_ready() {
    let e = env();
    let ca = e.cq(1, 16, 64);
    let mut ca = ca;
    let mut a = e.qp(0x10, Transport::Rc, 1, 16, 8);
    let _b = e.qp(0x20, Transport::Rc, 1, 16, 8);
    e.connect(0x10, 0x20, 7, 2);
    // The peer stays in RESET: nothing answers; three tries of ~8 µs each, then the error.
    let tx = e.region(64, ALL_ACCESS);
    let sges = [tx.sge(0, 8)];
    a.post(&SendWr::send(1, &sges), &e.uar);
    let w = ca.one(&mut a);
    assert_eq!((w.wr_id, w.status), (1, wc_status::RETRY_EXC_ERR));
    assert_eq!(e.hca.stats().packets_lost, 3);
    assert_eq!(e.state(0x10), qps::ERR);
}

#[test]
fn receive_too_small_fails_both_with_the_hardware_syndromes() {
    let e = env();
    let (mut a, mut ca, mut b, mut cb) = rc_pair(&e, 7);
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(64, 1);
    b.recv(1, &[rx.sge(0, 8)]);
    b.recv(2, &[rx.sge(8, 8)]);
    let sges = [tx.sge(0, 16)];
    a.post(&SendWr::send(10, &sges), &e.uar);
    let raw = cb.wait_peek();
    assert_eq!(raw.opcode(), cqe_opcode::RESP_ERR);
    assert_eq!(raw.as_err().syndrome, syndrome::LOCAL_LENGTH_ERR);
    let r = cb.wait(&mut b, 2);
    assert_eq!((r[0].wr_id, r[0].status), (1, wc_status::LOC_LEN_ERR));
    assert_eq!((r[1].wr_id, r[1].status), (2, wc_status::WR_FLUSH_ERR));
    let s = ca.one(&mut a);
    assert_eq!((s.wr_id, s.status), (10, wc_status::REM_INV_REQ_ERR));
    e.sink
        .wait_for(Ev::Async(event::QP_REQ_ERR, ObjectKind::Qp, 0x20));
}

#[test]
fn local_protection_and_length_errors() {
    let e = env();
    let (mut a, mut ca, _b, _cb) = rc_pair(&e, 7);
    let tx = e.region(64, ALL_ACCESS);
    let target = e.region(64, ALL_ACCESS);
    // A gather entry past the end of its region: LOCAL_PROT, nothing written.
    let sges = [tx.sge(32, 64)];
    a.post(&write_wr(1, &sges, target.addr(0), target.key), &e.uar);
    let s = ca.one(&mut a);
    assert_eq!((s.wr_id, s.status), (1, wc_status::LOC_PROT_ERR));
    assert_eq!(e.state(0x10), qps::ERR);
    // An RDMA read into a region without local write: LOCAL_PROT too.
    let (mut c, mut cc) = (e.qp(0x30, Transport::Rc, 3, 16, 0), e.cq(3, 16, 64));
    e.connect(0x30, 0x30, 7, 3);
    let ro = e.region(64, 4);
    let sges = [ro.sge(0, 8)];
    let rd = SendWr {
        opcode: wr::opcode::RDMA_READ,
        ..write_wr(2, &sges, target.addr(0), target.key)
    };
    c.post(&rd, &e.uar);
    let s = cc.one(&mut c);
    assert_eq!((s.wr_id, s.status), (2, wc_status::LOC_PROT_ERR));
}

#[test]
fn moving_to_error_flushes_every_outstanding_request() {
    let e = env();
    let (mut a, mut ca, _b, _cb) = rc_pair(&e, 7);
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(64, 1);
    let sges = [tx.sge(0, 8)];
    let mut quiet = SendWr::send(2, &sges);
    quiet.flags = 0;
    let five = [tx.sge(0, 8); 5];
    let idx = a.post_list(
        &[SendWr::send(1, &sges), quiet, SendWr::send(3, &five)],
        None,
        &e.uar,
    );
    assert_eq!(idx, [0, 1, 2]);
    a.recv(100, &[rx.sge(0, 8)]);
    a.recv(101, &[rx.sge(8, 8)]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(ca.peek(), None, "stalled on RNR");
    e.modify(
        0x10,
        QpAttrs {
            state: qps::ERR,
            mask: qp_attr_mask::STATE,
            ..QpAttrs::default()
        },
    );
    // Flushed at once: one CQE per WQE, each with its own WQE counter.
    let mut counters = Vec::new();
    for _ in 0..5 {
        let raw = ca.wait_peek();
        let err = raw.as_err();
        assert_eq!(err.syndrome, syndrome::WR_FLUSH_ERR);
        assert_eq!(err.vendor_err_synd, 0xf9);
        counters.push((raw.opcode(), err.wqe_counter.get()));
        ca.poll(&mut a).unwrap();
    }
    assert_eq!(
        counters,
        [
            (cqe_opcode::REQ_ERR, 0),
            (cqe_opcode::REQ_ERR, 1),
            (cqe_opcode::REQ_ERR, 2),
            (cqe_opcode::RESP_ERR, 0),
            (cqe_opcode::RESP_ERR, 1)
        ]
    );
    assert_eq!(a.sq.outstanding(), 0);
    assert_eq!(e.hca.stats().flush_cqes, 5);
}

#[test]
fn unsignaled_wqes_complete_with_the_next_signaled_one() {
    let e = env();
    let (mut a, mut ca, _b, _cb) = rc_pair(&e, 7);
    let tx = e.region(64, ALL_ACCESS);
    let target = e.region(64, ALL_ACCESS);
    let one = [tx.sge(0, 8)];
    let six = [tx.sge(0, 8); 6]; // ctrl + raddr + 6 data = 8 octowords: 2 blocks
    let mut wrs: Vec<SendWr<'_>> = (0..3)
        .map(|i| SendWr {
            flags: 0,
            ..write_wr(
                i,
                if i == 1 { &six } else { &one },
                target.addr(0),
                target.key,
            )
        })
        .collect();
    wrs.push(write_wr(3, &one, target.addr(8), target.key));
    let idx = a.post_list(&wrs, None, &e.uar);
    assert_eq!(
        idx,
        [0, 1, 3, 4],
        "the two-block WQE moves the counter by 2"
    );
    let raw = ca.wait_peek();
    assert_eq!(raw.wqe_counter.get(), 4);
    let s = ca.one(&mut a);
    assert_eq!(s.wr_id, 3);
    assert_eq!(a.sq.outstanding(), 0, "the earlier ones retired with it");
    ca.quiet(Duration::from_millis(5));
}

#[test]
fn cq_wraps_many_times_with_the_right_owner_bits() {
    for size in [64, 128] {
        let e = env();
        let mut ca = e.cq(1, 4, size);
        let cb = e.cq(2, 4, size);
        let mut a = e.qp(0x10, Transport::Rc, 1, 16, 0);
        let _b = e.qp(0x20, Transport::Rc, 2, 16, 0);
        e.connect(0x10, 0x20, 7, 3);
        e.connect(0x20, 0x10, 7, 3);
        let tx = e.region(64, ALL_ACCESS);
        let target = e.region(4096, ALL_ACCESS);
        let sges = [tx.sge(0, 8)];
        for round in 0..7u64 {
            let wrs: Vec<_> = (0..3)
                .map(|i| write_wr(round * 3 + i, &sges, target.addr(0), target.key))
                .collect();
            a.post_list(&wrs, None, &e.uar);
            let ids: Vec<u64> = ca.wait(&mut a, 3).iter().map(|w| w.wr_id).collect();
            assert_eq!(
                ids,
                [round * 3, round * 3 + 1, round * 3 + 2],
                "size {size}"
            );
        }
        assert_eq!(
            ca.cq.consumer_index(),
            21,
            "more than 5 passes of 4 entries"
        );
        drop(cb);
        assert_eq!(e.hca.stats().cq_overruns, 0);
    }
}

#[test]
fn sq_wraps_many_times_with_wqes_of_several_sizes() {
    let e = env();
    let mut ca = e.cq(1, 64, 64);
    let _cb = e.cq(2, 16, 64);
    let mut a = e.qp(0x10, Transport::Rc, 1, 8, 0);
    let _b = e.qp(0x20, Transport::Rc, 2, 8, 0);
    e.connect(0x10, 0x20, 7, 3);
    e.connect(0x20, 0x10, 7, 3);
    let tx = e.region(4096, ALL_ACCESS);
    tx.mem.write(0, &pattern(4096, 7));
    let target = e.region(64 * 256, ALL_ACCESS);
    // 1, 2 and 3 blocks; every fourth inline (whose bytes wrap inside the WQE at the ring end).
    let shape = |n: u64| ((n % 3) as usize, n % 4 == 3);
    let inline_data = |n: u64| pattern(40 + shape(n).0 * 50, n as u8);
    let mut n = 0u64;
    let mut done = 0;
    while n < 60 {
        let (k, inline) = shape(n);
        let sges: Vec<Sge> = (0..[1, 5, 9][k]).map(|j| tx.sge(j * 8, 8)).collect();
        let data = inline_data(n);
        let off = n as usize * 256;
        let wr = if inline {
            SendWr {
                flags: send_flags::SIGNALED | send_flags::INLINE,
                inline: &data,
                ..write_wr(n, &[], target.addr(off), target.key)
            }
        } else {
            write_wr(n, &sges, target.addr(off), target.key)
        };
        match a.sq.post(&wr, None) {
            Ok(_) => {
                n += 1;
                if n % 2 == 0 {
                    a.ring(&e.uar);
                }
            }
            Err(_) => {
                // Full: ring, and wait for the oldest to complete.
                a.ring(&e.uar);
                let w = ca.one(&mut a);
                assert_eq!((w.wr_id, w.status), (done, 0), "{w:?}");
                done += 1;
            }
        }
    }
    a.ring(&e.uar);
    while done < n {
        let w = ca.one(&mut a);
        assert_eq!((w.wr_id, w.status), (done, 0), "{w:?}");
        done += 1;
    }
    assert_eq!(a.sq.outstanding(), 0);
    assert!(a.sq.producer_index() > 3 * 8, "wrapped at least 3 times");
    for i in 0..n {
        let off = i as usize * 256;
        let want = match shape(i) {
            (_, true) => inline_data(i),
            (k, false) => tx.mem.read(0, [1, 5, 9][k] * 8),
        };
        assert_eq!(target.mem.read(off, want.len()), want, "write {i}");
    }
    let st = e.hca.stats();
    assert!(st.doorbells > 0);
    assert_eq!(st.doorbells_missing + st.blueflame_mismatches, 0, "{st:?}");
    assert!(st.uar_doorbells + st.blueflame_copies > 0, "{st:?}");
    assert_eq!(st.malformed_wqes, 0);
}

#[test]
fn malformed_wqes_complete_with_local_qp_op_error() {
    for corruption in 0..3 {
        let e = env();
        let (mut a, mut ca, _b, _cb) = rc_pair(&e, 7);
        let tx = e.region(64, ALL_ACCESS);
        let sges = [tx.sge(0, 8)];
        let w = a.sq.post(&SendWr::send(1, &sges), None).unwrap();
        let at = 8 * 64 + w.offset; // the SQ follows 8 RQ WQEs of 64 bytes
        match corruption {
            0 => a.buf.write(at + 3, &[0x25]),       // UMR: not supported
            1 => a.buf.write(at + 1, &[0x12, 0x34]), // wrong WQE index
            _ => a.buf.write(at + 7, &[0]),          // ds 0
        }
        a.ring(&e.uar);
        let raw = ca.wait_peek();
        assert_eq!(raw.opcode(), cqe_opcode::REQ_ERR);
        let err = raw.as_err();
        assert_eq!(
            err.syndrome,
            syndrome::LOCAL_QP_OP_ERR,
            "corruption {corruption}"
        );
        assert_eq!(err.wqe_counter.get(), 0);
        let s = ca.one(&mut a);
        assert_eq!((s.wr_id, s.status), (1, wc_status::LOC_QP_OP_ERR));
        assert_eq!(e.state(0x10), qps::ERR);
        e.sink
            .wait_for(Ev::Async(event::QP_FATAL, ObjectKind::Qp, 0x10));
    }
}

#[test]
fn arming_raises_one_event_per_arm() {
    let e = env();
    let (mut a, mut ca, mut b, mut cb) = rc_pair(&e, 7);
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(256, 1);
    let target = e.region(64, ALL_ACCESS);
    let sges = [tx.sge(0, 8)];
    // Not armed: no event.
    a.post(&write_wr(1, &sges, target.addr(0), target.key), &e.uar);
    ca.one(&mut a);
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(e.sink.take(), []);
    // Armed (the very first arm is the all-zero word): one event, then disarmed.
    ca.arm(false, &e.uar);
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(e.sink.take(), [], "nothing past the armed index yet");
    a.post(&write_wr(2, &sges, target.addr(0), target.key), &e.uar);
    e.sink.wait_for(Ev::Comp(1));
    ca.one(&mut a);
    a.post(&write_wr(3, &sges, target.addr(0), target.key), &e.uar);
    ca.one(&mut a);
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(e.sink.take(), [], "fired once");
    // Re-armed without counting the event: a stale arm, ignored.
    ca.arm(false, &e.uar);
    a.post(&write_wr(4, &sges, target.addr(0), target.key), &e.uar);
    ca.one(&mut a);
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(e.sink.take(), []);
    assert!(e.hca.stats().stale_arms >= 1);
    // The event counted: armed with a CQE already waiting past the consumer index fires at once.
    ca.cq.event();
    a.post(&write_wr(5, &sges, target.addr(0), target.key), &e.uar);
    ca.wait_peek();
    ca.arm(false, &e.uar);
    e.sink.wait_for(Ev::Comp(1));
    ca.one(&mut a);
    ca.cq.event();

    // Solicited-only: an unsolicited message completes without an event, a solicited one wakes.
    for i in 0..3 {
        b.recv(10 + i, &[rx.sge(8 * i as usize, 8)]);
    }
    cb.arm(true, &e.uar);
    a.post(&SendWr::send(6, &sges), &e.uar);
    assert_eq!(cb.one(&mut b).wr_id, 10);
    ca.one(&mut a);
    std::thread::sleep(Duration::from_millis(2));
    assert_eq!(e.sink.take(), []);
    let sol = SendWr {
        flags: send_flags::SIGNALED | send_flags::SOLICITED,
        ..SendWr::send(7, &sges)
    };
    a.post(&sol, &e.uar);
    e.sink.wait_for(Ev::Comp(2));
    assert_eq!(cb.one(&mut b).wr_id, 11);
    cb.cq.event();
    // An error CQE wakes a solicited-only arm too.
    cb.arm(true, &e.uar);
    e.modify(
        0x20,
        QpAttrs {
            state: qps::ERR,
            mask: qp_attr_mask::STATE,
            ..QpAttrs::default()
        },
    );
    e.sink.wait_for(Ev::Comp(2));
    let w = cb.one(&mut b);
    assert_eq!((w.wr_id, w.status), (12, wc_status::WR_FLUSH_ERR));
    assert_eq!(e.hca.stats().arm_doorbell_mismatches, 0);
}

#[test]
fn a_full_cq_drops_completions_with_cq_err() {
    let e = env();
    let mut ca = e.cq(1, 2, 64);
    let _cb = e.cq(2, 2, 64);
    let mut a = e.qp(0x10, Transport::Rc, 1, 16, 0);
    let _b = e.qp(0x20, Transport::Rc, 2, 16, 0);
    e.connect(0x10, 0x20, 7, 3);
    e.connect(0x20, 0x10, 7, 3);
    let tx = e.region(64, ALL_ACCESS);
    let target = e.region(64, ALL_ACCESS);
    let sges = [tx.sge(0, 8)];
    let wrs: Vec<_> = (0..5)
        .map(|i| write_wr(i, &sges, target.addr(0), target.key))
        .collect();
    a.post_list(&wrs, None, &e.uar);
    let cq_err = Ev::Async(event::CQ_ERR, ObjectKind::Cq, 1);
    let deadline = Instant::now() + WAIT;
    while e.hca.stats().cq_overruns < 3 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_micros(100));
    }
    let mut got = Vec::new();
    while got.iter().filter(|&&v| v == cq_err).count() < 3 {
        assert!(Instant::now() < deadline, "{got:?}");
        got.extend(e.sink.take());
        std::thread::sleep(Duration::from_micros(100));
    }
    let ids: Vec<u64> = ca.wait(&mut a, 2).iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, [0, 1], "the first two were kept, not overwritten");
    ca.quiet(Duration::from_millis(2));
    got.extend(e.sink.take());
    assert_eq!(got, [cq_err; 3], "one CQ_ERR per lost completion");
}

#[test]
fn ud_datagrams_carry_the_grh_and_wrong_qkeys_are_dropped() {
    let e = env();
    let mut ca = e.cq(1, 16, 64);
    let mut cb = e.cq(2, 16, 64);
    let mut a = e.qp(0x10, Transport::Ud, 1, 16, 8);
    let mut b = e.qp(0x20, Transport::Ud, 2, 16, 8);
    e.activate_ud(0x10, 0x1111);
    e.activate_ud(0x20, 0x2222);
    let tx = e.region(8192, ALL_ACCESS);
    let rx = e.region(8192, 1);
    let data = pattern(100, 4);
    tx.mem.write(0, &data);
    for i in 0..4 {
        b.recv(i, &[rx.sge(i as usize * 200, 200)]);
    }
    let sges = [tx.sge(0, 100)];
    let ud = |qkey, sgid| {
        let mut av = Av {
            hop_limit: 64,
            tclass: 0x20,
            stat_rate_sl: 5 << 1,
            rgid: GID6,
            ..Av::default()
        };
        av.grh_gid_fl = Av::grh_gid_fl(false, sgid, 0x12345);
        let dest = UdDest {
            remote_qpn: 0x20,
            remote_qkey: qkey,
        };
        (av, dest)
    };
    // The wrong Q_Key: the sender completes, nothing arrives.
    let (av, dest) = ud(0x1111, 0);
    let wr = SendWr {
        ud: Some(dest),
        ..SendWr::send(1, &sges)
    };
    a.post_list(&[wr], Some(&av), &e.uar);
    assert_eq!(ca.one(&mut a).status, 0);
    cb.quiet(Duration::from_millis(5));
    // The right one, from the IPv6 GID: the GRH area, then the data.
    let (av, dest) = ud(0x2222, 0);
    let wr = SendWr {
        ud: Some(dest),
        opcode: wr::opcode::SEND_WITH_IMM,
        imm_or_inv: 0x0403_0201,
        ..SendWr::send(2, &sges)
    };
    a.post_list(&[wr], Some(&av), &e.uar);
    let raw = cb.wait_peek();
    assert!(raw.grh());
    assert_eq!((raw.src_qp(), raw.sl()), (0x10, 5));
    let r = cb.one(&mut b);
    assert_eq!((r.wr_id, r.status, r.byte_len), (0, 0, 140));
    assert_eq!(r.wc_flags, wc_flags::GRH | wc_flags::WITH_IMM);
    assert_eq!((r.src_qp, r.imm_data), (0x10, 0x0403_0201));
    let grh = rx.mem.read(0, 40);
    assert_eq!(grh[0] >> 4, 6, "IPv6: {grh:02x?}");
    assert_eq!(&grh[8..24], &GID6, "source GID");
    assert_eq!(&grh[24..40], &GID6, "destination GID");
    assert_eq!(grh[7], 64, "hop limit");
    assert_eq!(rx.mem.read(40, 100), data);
    assert_eq!(ca.one(&mut a).wr_id, 2);
    // From the IPv4-mapped GID: 20 zero bytes, then an IPv4 header.
    let (av, dest) = ud(0x2222, 1);
    let wr = SendWr {
        ud: Some(dest),
        ..SendWr::send(3, &sges)
    };
    a.post_list(&[wr], Some(&av), &e.uar);
    let r = cb.one(&mut b);
    assert_eq!((r.wr_id, r.byte_len), (1, 140));
    let grh = rx.mem.read(200, 40);
    assert_eq!(&grh[..20], &[0; 20]);
    assert_eq!(grh[20] >> 4, 4, "IPv4: {grh:02x?}");
    assert_eq!(&grh[32..36], &GID4[12..], "source address");
    assert_eq!(rx.mem.read(240, 100), data);
    ca.one(&mut a);
    // A datagram over the MTU: a local length error, and the QP fails.
    let big = [tx.sge(0, PORT_MTU + 1)];
    let wr = SendWr {
        ud: Some(dest),
        ..SendWr::send(4, &big)
    };
    a.post_list(&[wr], Some(&av), &e.uar);
    let s = ca.one(&mut a);
    assert_eq!((s.wr_id, s.status), (4, wc_status::LOC_LEN_ERR));
    cb.quiet(Duration::from_millis(2));
}

#[test]
fn ud_multicast_reaches_every_attached_qp() {
    let e = env();
    let mut ca = e.cq(1, 16, 64);
    let mut cb = e.cq(2, 16, 64);
    let mut cc = e.cq(3, 16, 64);
    let mut a = e.qp(0x10, Transport::Ud, 1, 16, 8);
    let mut b = e.qp(0x20, Transport::Ud, 2, 16, 8);
    let mut c = e.qp(0x30, Transport::Ud, 3, 16, 8);
    for q in [0x10, 0x20, 0x30] {
        e.activate_ud(q, 0x77);
    }
    assert_eq!(e.hca.attach_mcast(0x20, GID6), Err(Errno::EINVAL));
    e.hca.attach_mcast(0x20, MGID).unwrap();
    e.hca.attach_mcast(0x20, MGID).unwrap();
    e.hca.attach_mcast(0x30, MGID).unwrap();
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(1024, 1);
    tx.mem.write(0, &pattern(48, 2));
    b.recv(1, &[rx.sge(0, 200)]);
    c.recv(2, &[rx.sge(200, 200)]);
    let mut av = Av {
        rgid: MGID,
        ..Av::default()
    };
    av.grh_gid_fl = Av::grh_gid_fl(false, 0, 0);
    let sges = [tx.sge(0, 48)];
    let wr = SendWr {
        ud: Some(UdDest {
            remote_qpn: wr::MULTICAST_QPN,
            remote_qkey: 0x77,
        }),
        ..SendWr::send(9, &sges)
    };
    a.post_list(&[wr], Some(&av), &e.uar);
    assert_eq!(ca.one(&mut a).status, 0);
    let r = cb.one(&mut b);
    assert_eq!((r.wr_id, r.byte_len, r.src_qp), (1, 88, 0x10));
    let r = cc.one(&mut c);
    assert_eq!((r.wr_id, r.byte_len), (2, 88));
    assert_eq!(rx.mem.read(40, 48), pattern(48, 2));
    assert_eq!(rx.mem.read(240, 48), pattern(48, 2));
    // Detached, C receives nothing more.
    e.hca.detach_mcast(0x30, MGID).unwrap();
    assert_eq!(e.hca.detach_mcast(0x30, MGID), Err(Errno::EINVAL));
    b.recv(3, &[rx.sge(400, 200)]);
    c.recv(4, &[rx.sge(600, 200)]);
    a.post_list(&[wr], Some(&av), &e.uar);
    ca.one(&mut a);
    assert_eq!(cb.one(&mut b).wr_id, 3);
    cc.quiet(Duration::from_millis(5));
}

/// A shared receive queue as rdma-core keeps it: WQEs linked through their next segments.
struct TestSrq {
    hca: Arc<Hca>,
    srqn: u32,
    buf: Mem,
    dbrec: Mem,
    cnt: u16,
    head: u16,
    tail: u16,
    counter: u32,
    ids: Vec<u64>,
}

impl TestSrq {
    fn new(e: &Env, srqn: u32, cnt: u16) -> TestSrq {
        let buf = Mem::new(usize::from(cnt) * 64);
        for i in 0..cnt {
            let next = (i + 1) & (cnt - 1);
            buf.write(usize::from(i) * 64 + 2, &next.to_be_bytes());
        }
        let dbrec = Mem::new(64);
        e.hca.create_srq(SrqDesc {
            srqn,
            pdn: PDN,
            buf: buf.addr(),
            wqe_cnt: u32::from(cnt),
            wqe_shift: 6,
            dbrec: dbrec.addr(),
            uidx: 0x5000,
            space: e.space,
        });
        TestSrq {
            hca: e.hca.clone(),
            srqn,
            buf,
            dbrec,
            cnt,
            head: 0,
            tail: cnt - 1,
            counter: 0,
            ids: vec![0; usize::from(cnt)],
        }
    }

    fn post(&mut self, wr_id: u64, sge: Sge) {
        assert_ne!(self.head, self.tail, "SRQ full");
        let at = usize::from(self.head) * 64;
        self.ids[usize::from(self.head)] = wr_id;
        self.buf.write(
            at + 16,
            DataSeg::new(sge.length, sge.lkey, sge.addr).as_bytes(),
        );
        self.buf
            .write(at + 32, DataSeg::new(0, INVALID_LKEY, 0).as_bytes());
        let next = self.buf.read(at + 2, 2);
        self.head = u16::from_be_bytes([next[0], next[1]]);
        self.counter += 1;
        self.dbrec.store_be32(0, self.counter);
    }
}

impl Drop for TestSrq {
    fn drop(&mut self) {
        self.hca.destroy_srq(self.srqn);
    }
}

impl CompletionTarget for TestSrq {
    fn retire_send(&mut self, _: WqKey, _: u16) -> Option<Retired> {
        None
    }

    fn retire_recv(&mut self, _key: WqKey, cqe: &Cqe64) -> Option<u64> {
        let idx = cqe.wqe_counter.get();
        assert!(idx < self.cnt);
        // Free it: link it after the tail (rdma-core's `mlx5_free_srq_wqe`).
        self.buf
            .write(usize::from(self.tail) * 64 + 2, &idx.to_be_bytes());
        self.tail = idx;
        Some(self.ids[usize::from(idx)])
    }
}

#[test]
fn srq_receives_follow_the_list_and_raise_the_limit_event() {
    let e = env();
    let mut ca = e.cq(1, 16, 64);
    let mut cb = e.cq(2, 16, 64);
    let mut srq = TestSrq::new(&e, 0x40, 8);
    let mut a = e.qp(0x10, Transport::Rc, 1, 16, 0);
    let _b = e.qp_on(0x20, Transport::Rc, 2, 16, 0, Some(0x40));
    e.connect(0x10, 0x20, 7, 3);
    e.connect(0x20, 0x10, 7, 3);
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(1024, 1);
    for i in 0..6 {
        srq.post(i, rx.sge(i as usize * 16, 16));
    }
    e.hca.set_srq_limit(0x40, 4);
    assert_eq!(e.hca.srq_limit(0x40), 4);
    let sges = [tx.sge(0, 8)];
    for k in 0..3u64 {
        tx.mem.write(0, &k.to_ne_bytes());
        a.post(&SendWr::send(k, &sges), &e.uar);
        let raw = cb.wait_peek();
        assert_eq!(raw.srqn_uidx(), 0x1020, "the QP's user index");
        let r = cb.one(&mut srq);
        assert_eq!((r.wr_id, r.status, r.byte_len), (k, 0, 8));
        assert_eq!(rx.mem.u64_at(k as usize * 16), k);
        ca.one(&mut a);
    }
    // 6 posted, 3 taken: below 4 after the third.
    e.sink
        .wait_for(Ev::Async(event::SRQ_LIMIT_REACHED, ObjectKind::Srq, 0x40));
    assert_eq!(e.hca.srq_limit(0x40), 0);
    // Freed WQEs are reused through the list.
    for i in 6..10 {
        srq.post(i, rx.sge(i as usize * 16, 16));
    }
    for k in 3..10u64 {
        a.post(&SendWr::send(k, &sges), &e.uar);
        assert_eq!(cb.one(&mut srq).wr_id, k);
        ca.one(&mut a);
    }
    // A QP on an SRQ that fails says it will take no more.
    e.modify(
        0x20,
        QpAttrs {
            state: qps::ERR,
            mask: qp_attr_mask::STATE,
            ..QpAttrs::default()
        },
    );
    e.sink
        .wait_for(Ev::Async(event::QP_LAST_WQE_REACHED, ObjectKind::Qp, 0x20));
}

#[test]
fn sq_drained_and_port_events() {
    let e = env();
    let (mut a, mut ca, mut b, mut cb) = rc_pair(&e, 7);
    e.modify(
        0x20,
        QpAttrs {
            state: qps::SQD,
            mask: qp_attr_mask::STATE,
            ..QpAttrs::default()
        },
    );
    e.sink
        .wait_for(Ev::Async(event::SQ_DRAINED, ObjectKind::Qp, 0x20));
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(64, 1);
    b.recv(1, &[rx.sge(0, 8)]);
    a.post(&SendWr::send(1, &[tx.sge(0, 8)]), &e.uar);
    assert_eq!(cb.one(&mut b).wr_id, 1, "SQD still receives");
    ca.one(&mut a);
    // A send posted in SQD waits for RTS.
    b.post(&SendWr::send(2, &[tx.sge(0, 8)]), &e.uar);
    a.recv(3, &[rx.sge(8, 8)]);
    cb.quiet(Duration::from_millis(5));
    e.rts(0x20, 7, 3);
    assert_eq!(cb.one(&mut b).wr_id, 2);
    assert_eq!(ca.one(&mut a).wr_id, 3);
    e.hca.set_port_active(false);
    e.sink
        .wait_for(Ev::Async(event::PORT_ERR, ObjectKind::Port, 1));
    assert!(!e.hca.port_active());
    e.hca.set_port_active(true);
    e.sink
        .wait_for(Ev::Async(event::PORT_ACTIVE, ObjectKind::Port, 1));
}

#[test]
fn comm_est_on_the_first_packet_in_rtr() {
    use qp_attr_mask as m;
    let e = env();
    let mut ca = e.cq(1, 16, 64);
    let mut cb = e.cq(2, 16, 64);
    let mut a = e.qp(0x10, Transport::Rc, 1, 16, 8);
    let mut b = e.qp(0x20, Transport::Rc, 2, 16, 8);
    e.connect(0x10, 0x20, 7, 3);
    for state in [qps::INIT, qps::RTR] {
        e.modify(
            0x20,
            QpAttrs {
                state,
                dest_qpn: 0x10,
                access: ALL_ACCESS,
                path: PathDesc {
                    dgid: GID6,
                    ..PathDesc::default()
                },
                mask: m::STATE | m::DEST_QPN | m::AV | m::ACCESS_FLAGS,
                ..QpAttrs::default()
            },
        );
    }
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(64, 1);
    b.recv(1, &[rx.sge(0, 8)]);
    b.recv(2, &[rx.sge(8, 8)]);
    for id in [1, 2] {
        a.post(&SendWr::send(id, &[tx.sge(0, 8)]), &e.uar);
        assert_eq!(cb.one(&mut b).wr_id, id);
        ca.one(&mut a);
    }
    let comm_est = Ev::Async(event::COMM_EST, ObjectKind::Qp, 0x20);
    let mut got = e.sink.wait_for(comm_est);
    std::thread::sleep(Duration::from_millis(2));
    got.extend(e.sink.take());
    assert_eq!(got, [comm_est], "once");
}

#[test]
fn the_doorbell_checks_catch_a_missing_register_write_and_a_bad_copy() {
    let e = env();
    let (mut a, mut ca, _b, _cb) = rc_pair(&e, 7);
    let tx = e.region(64, ALL_ACCESS);
    let target = e.region(64, ALL_ACCESS);
    let sges = [tx.sge(0, 8)];
    // A doorbell record update without the register write: the WQE still executes (the device
    // reads the record), but the check counts it.
    a.sq.post(&write_wr(1, &sges, target.addr(0), target.key), None)
        .unwrap();
    a.dbrec
        .store_be32(4 * SND_DBR, a.sq.doorbell_record().get());
    ca.one(&mut a);
    let deadline = Instant::now() + WAIT;
    while e.hca.stats().doorbells_missing == 0 {
        assert!(Instant::now() < deadline, "{:?}", e.hca.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    // (The production queue still thinks one doorbell is pending: ring it, harmlessly late.)
    a.ring(&e.uar);
    std::thread::sleep(Duration::from_millis(80));
    let before = e.hca.stats();
    // A BlueFlame copy whose body differs from the ring.
    a.sq.post(&write_wr(2, &sges, target.addr(8), target.key), None)
        .unwrap();
    a.dbrec
        .store_be32(4 * SND_DBR, a.sq.doorbell_record().get());
    let wqe_at = 8 * 64 + ((a.sq.producer_index() - 1) as usize % 16) * 64;
    let mut copy: [u8; 64] = a.buf.read(wqe_at, 64).try_into().unwrap();
    copy[40] ^= 0xff; // the data segment's address
    let mut reg = Reg {
        uar: &e.uar,
        base: a.bf_off,
    };
    reg.write_block64(a.bf.offset, &copy);
    ca.one(&mut a);
    let deadline = Instant::now() + WAIT;
    while e.hca.stats().blueflame_mismatches == before.blueflame_mismatches {
        assert!(Instant::now() < deadline, "{:?}", e.hca.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn shutdown_stops_the_engine_and_destroy_forgets() {
    let e = env();
    let (mut a, mut ca, b, cb) = rc_pair(&e, 7);
    let tx = e.region(64, ALL_ACCESS);
    let target = e.region(64, ALL_ACCESS);
    let sges = [tx.sge(0, 8)];
    a.post(&write_wr(1, &sges, target.addr(0), target.key), &e.uar);
    ca.one(&mut a);
    // A deregistered key fails like any bad key.
    e.hca.dereg_mr(target.key);
    a.post(&write_wr(2, &sges, target.addr(0), target.key), &e.uar);
    assert_eq!(ca.one(&mut a).status, wc_status::REM_ACCESS_ERR);
    e.hca.destroy_qp(0x10);
    assert!(e.hca.query_qp(0x10).is_none());
    assert_eq!(
        e.hca.modify_qp(0x10, &QpAttrs::default()),
        Err(Errno::ENOENT)
    );
    // Stopped, the engine executes nothing more.
    e.hca.shutdown();
    e.hca.shutdown();
    e.connect(0x20, 0x20, 7, 3);
    let mut b = b;
    b.post(&write_wr(3, &sges, tx.addr(8), tx.key), &e.uar);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(cb.peek(), None);
    let weak = Arc::downgrade(&e.hca);
    drop((a, ca, b, cb, tx, target));
    drop(e);
    assert!(
        weak.upgrade().is_none(),
        "the engine holds no reference to the HCA"
    );
}

#[test]
fn rnr_and_ack_timers_follow_the_ib_tables() {
    use super::exec::{ack_timeout, rnr_delay};
    assert_eq!(rnr_delay(0), Duration::from_micros(655_360));
    assert_eq!(rnr_delay(1), Duration::from_micros(10));
    assert_eq!(rnr_delay(12), Duration::from_micros(640));
    assert_eq!(rnr_delay(31), Duration::from_micros(491_520));
    assert_eq!(ack_timeout(0), None);
    assert_eq!(ack_timeout(1), Some(Duration::from_nanos(8192)));
    assert_eq!(ack_timeout(14), Some(Duration::from_nanos(4096 << 14)));
}

#[test]
fn a_shared_blueflame_register_raises_no_false_alarm() {
    let e = env();
    let mut ca = e.cq(1, 64, 64);
    let mut cc = e.cq(3, 64, 64);
    let _cb = e.cq(2, 16, 64);
    let mut a = e.qp(0x10, Transport::Rc, 1, 16, 0);
    let _b = e.qp(0x20, Transport::Rc, 2, 16, 0);
    e.share_bfreg.set(Some(1));
    let mut c = e.qp(0x30, Transport::Rc, 3, 16, 0);
    assert_eq!(a.bf_off, c.bf_off);
    e.connect(0x10, 0x20, 7, 3);
    e.connect(0x30, 0x20, 7, 3);
    e.connect(0x20, 0x10, 7, 3);
    let tx = e.region(4096, ALL_ACCESS);
    let target = e.region(4096, ALL_ACCESS);
    // One register state for both, as rdma-core's shared `struct mlx5_bf` (with its lock).
    let mut bf = a.bf;
    for i in 0..200u64 {
        let sges = [tx.sge(0, 8 + (i % 5) as u32 * 8)];
        let wr = write_wr(i, &sges, target.addr(0), target.key);
        let q = if i % 2 == 0 { &mut a } else { &mut c };
        q.sq.post(&wr, None).unwrap();
        q.bf = bf;
        q.ring(&e.uar);
        bf = q.bf;
        if i % 16 == 15 {
            ca.wait(&mut a, 8);
            cc.wait(&mut c, 8);
        }
    }
    ca.wait(&mut a, 4);
    cc.wait(&mut c, 4);
    std::thread::sleep(Duration::from_millis(100));
    let st = e.hca.stats();
    assert_eq!(st.doorbells_missing + st.blueflame_mismatches, 0, "{st:?}");
    assert!(st.uar_doorbells + st.blueflame_copies > 0, "{st:?}");
}

#[test]
fn qps_on_a_uar_page_may_ring_either_of_its_registers() {
    let e = env();
    let mut ca = e.cq(1, 64, 64);
    let mut cc = e.cq(3, 64, 64);
    let mut cd = e.cq(4, 64, 64);
    let _cb = e.cq(2, 16, 64);
    // a and c share page 3, one register each; d is alone on page 2, on its second register.
    e.uar_page.set(Some((3, 0)));
    let mut a = e.qp(0x10, Transport::Rc, 1, 16, 0);
    let _b = e.qp(0x20, Transport::Rc, 2, 16, 0);
    e.uar_page.set(Some((3, 1)));
    let mut c = e.qp(0x30, Transport::Rc, 3, 16, 0);
    e.uar_page.set(Some((2, 1)));
    let mut d = e.qp(0x40, Transport::Rc, 4, 16, 0);
    for q in [0x10, 0x30, 0x40] {
        e.connect(q, 0x20, 7, 3);
    }
    e.connect(0x20, 0x10, 7, 3);
    let tx = e.region(4096, ALL_ACCESS);
    let target = e.region(4096, ALL_ACCESS);
    for i in 0..60u64 {
        let sges = [tx.sge(0, 8 + (i % 5) as u32 * 8)];
        let wr = write_wr(i, &sges, target.addr(0), target.key);
        let (q, cq) = match i % 3 {
            0 => (&mut a, &mut ca),
            1 => (&mut c, &mut cc),
            _ => (&mut d, &mut cd),
        };
        q.post(&wr, &e.uar);
        cq.one(q);
    }
    std::thread::sleep(Duration::from_millis(100));
    let st = e.hca.stats();
    assert_eq!(st.doorbells_missing + st.blueflame_mismatches, 0, "{st:?}");
    assert_eq!(st.blueflame_copies, 60, "every copy recognised: {st:?}");
    // Alone on its page, d is checked as strictly as a QP on a register of its own: a BlueFlame
    // copy whose body differs from the ring is caught.
    let sges = [tx.sge(0, 8)];
    d.sq.post(&write_wr(99, &sges, target.addr(8), target.key), None)
        .unwrap();
    d.dbrec
        .store_be32(4 * SND_DBR, d.sq.doorbell_record().get());
    let wqe_at = ((d.sq.producer_index() - 1) as usize % 16) * 64;
    let mut copy: [u8; 64] = d.buf.read(wqe_at, 64).try_into().unwrap();
    copy[40] ^= 0xff;
    let mut reg = Reg {
        uar: &e.uar,
        base: d.bf_off,
    };
    reg.write_block64(d.bf.offset, &copy);
    cd.one(&mut d);
    let deadline = Instant::now() + WAIT;
    while e.hca.stats().blueflame_mismatches == 0 {
        assert!(Instant::now() < deadline, "{:?}", e.hca.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn uc_drops_what_the_responder_cannot_take() {
    let e = env();
    let mut ca = e.cq(1, 16, 64);
    let mut cb = e.cq(2, 16, 64);
    let mut a = e.qp(0x10, Transport::Uc, 1, 16, 8);
    let mut b = e.qp(0x20, Transport::Uc, 2, 16, 8);
    e.connect(0x10, 0x20, 7, 3);
    e.connect(0x20, 0x10, 7, 3);
    let tx = e.region(64, ALL_ACCESS);
    let rx = e.region(64, ALL_ACCESS);
    tx.mem.write(0, &pattern(64, 1));
    let sges = [tx.sge(0, 16)];
    // No receive: the message is lost, the sender never knows.
    a.post(&SendWr::send(1, &sges), &e.uar);
    assert_eq!(ca.one(&mut a).status, 0);
    cb.quiet(Duration::from_millis(2));
    // A bad rkey: dropped too; the sender completes.
    a.post(&write_wr(2, &sges, rx.addr(0), rx.key ^ 0x100), &e.uar);
    assert_eq!(ca.one(&mut a).status, 0);
    assert_eq!(rx.mem.read(0, 16), vec![0; 16]);
    // A good write and a send arrive.
    a.post(&write_wr(3, &sges, rx.addr(0), rx.key), &e.uar);
    b.recv(9, &[rx.sge(32, 32)]);
    a.post(&SendWr::send(4, &sges), &e.uar);
    assert_eq!(
        ca.wait(&mut a, 2)
            .iter()
            .map(|w| w.wr_id)
            .collect::<Vec<_>>(),
        [3, 4]
    );
    let r = cb.one(&mut b);
    assert_eq!((r.wr_id, r.status, r.byte_len), (9, 0, 16));
    assert_eq!(rx.mem.read(0, 16), pattern(16, 1));
    assert_eq!(rx.mem.read(32, 16), pattern(16, 1));
    assert_eq!(e.state(0x10), qps::RTS);
    assert_eq!(e.state(0x20), qps::RTS);
    assert!(e.hca.stats().packets_dropped >= 1);
}

#[test]
fn the_hca_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Hca>();
    check::<Arc<Hca>>();
}

/// The data path with every object's memory in a "remote" address space (this process, reached
/// with `process_vm_readv` / `process_vm_writev` as the daemon reaches its clients): WQE fetches,
/// doorbell records, CQEs and their owner bytes, receive WQEs, SRQ lists, registered memory and
/// atomics all take the remote path.
#[test]
fn the_data_path_through_a_remote_address_space() {
    for test in [
        send_recv_with_immediate_inline_and_solicited as fn(),
        rdma_write_and_write_with_immediate,
        rdma_read_lands_before_its_completion,
        atomics_return_the_original_in_host_order,
        remote_access_errors_change_nothing_and_fail_both_sides,
        cq_wraps_many_times_with_the_right_owner_bits,
        sq_wraps_many_times_with_wqes_of_several_sizes,
        arming_raises_one_event_per_arm,
        a_full_cq_drops_completions_with_cq_err,
        ud_datagrams_carry_the_grh_and_wrong_qkeys_are_dropped,
        srq_receives_follow_the_list_and_raise_the_limit_event,
    ] {
        in_remote_space(test);
    }
}
