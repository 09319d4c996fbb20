//! Model checks of the index and ownership protocols between a ring's producer and its consumer,
//! explored over every interleaving (and every weak-memory outcome loom models) with `loom`.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p uverbs-drivers --test loom_rings --release
//! ```
//!
//! (`tests/soundness` runs it; its own target directory keeps the `--cfg loom` build from
//! invalidating the ordinary one.)
//!
//! The production code cannot run under loom as it is: its atomics are `std`'s, on memory the
//! kernel maps (rxe) or the device writes by DMA (mlx5). So each protocol is written out here as a
//! small model with loom's atomics, loom's `UnsafeCell` for the slot contents (loom reports any
//! access to a cell that is not ordered after the last conflicting one), and *the orderings the
//! production code uses*. The test `production_orderings_match_the_models` (which also runs without
//! `--cfg loom`) reads those orderings out of the production sources, so changing one there without
//! changing the model here fails the build's tests. The owner-bit arithmetic is not copied at all:
//! the models call the production functions (`cqe::is_sw_owned`, `cqe::device_owner_bit`).
//!
//! What the models check, for every interleaving:
//! * the consumer reads a slot only after the producer's write of it is visible (happens-before);
//! * the producer overwrites a slot only after the consumer has finished reading it;
//! * every entry is received exactly once, in order (no loss, no duplicate, no stale entry taken
//!   for a new one across a wrap of the ring).
//!
//! Each model also has a variant with one ordering weakened to `Relaxed`, which loom must reject
//! (`#[should_panic]`): the checks demonstrably bite.
//!
//! One protocol is not a model but the production code itself: the mlx5 send queue's hand-off to
//! its completion queue's poller (`drivers/src/mlx5/handoff.rs`), whose atomics are loom's when
//! the crate is built with `--cfg loom`. The real `SendQueue::post` runs on one thread and
//! `SendHandoff::retire` on another; its weakened variants go through a hook that exists only in
//! loom builds (`SendQueue::set_handoff_orderings`).

/// The orderings the models assume, checked against the production sources.
#[test]
fn production_orderings_match_the_models() {
    let queue = include_str!("../src/rxe/queue.rs");
    let barrier = include_str!("../src/barrier.rs");
    let cq = include_str!("../src/mlx5/cq.rs");
    let buf = include_str!("../src/mlx5/buf.rs");
    let hca_mem = include_str!("../../testing/mlx5-model/src/hca/mem.rs");
    let cases: &[(&str, &str, &str, &[&str])] = &[
        // rxe: each side loads the other's index with Acquire and publishes its own with Release;
        // its own index it reads back Relaxed (it is the only writer).
        (
            "rxe/queue.rs",
            queue,
            "pub fn load_producer(",
            &["Ordering::Acquire"],
        ),
        (
            "rxe/queue.rs",
            queue,
            "pub fn load_consumer(",
            &["Ordering::Acquire"],
        ),
        (
            "rxe/queue.rs",
            queue,
            "pub fn publish_producer(",
            &["Ordering::Release"],
        ),
        (
            "rxe/queue.rs",
            queue,
            "pub fn publish_consumer(",
            &["Ordering::Release"],
        ),
        (
            "rxe/queue.rs",
            queue,
            "pub fn own_producer(",
            &["Ordering::Relaxed"],
        ),
        (
            "rxe/queue.rs",
            queue,
            "pub fn own_consumer(",
            &["Ordering::Relaxed"],
        ),
        // mlx5, driver side: the barriers are language fences, the CQE owner byte is loaded with
        // Acquire, doorbell-record words are stored with Release.
        (
            "barrier.rs",
            barrier,
            "pub fn udma_to_device_barrier(",
            &["fence(Ordering::Release)"],
        ),
        (
            "barrier.rs",
            barrier,
            "pub fn udma_from_device_barrier(",
            &["fence(Ordering::Acquire)"],
        ),
        (
            "mlx5/cq.rs",
            cq,
            "fn load_op_own(",
            &[".load(Ordering::Acquire)"],
        ),
        ("mlx5/buf.rs", buf, "pub fn store(", &["Ordering::Release"]),
        // mlx5, device side (the model HCA, the device the tests run against): a doorbell-record
        // word is loaded Relaxed then fenced Acquire; a CQE body is written, fenced Release, then
        // its owner byte stored Release.
        (
            "mlx5-model/src/hca/mem.rs",
            hca_mem,
            "pub(super) unsafe fn load_be32(",
            &["Ordering::Relaxed", "fence(Ordering::Acquire)"],
        ),
        (
            "mlx5-model/src/hca/mem.rs",
            hca_mem,
            "pub(super) unsafe fn publish_cqe(",
            &[
                "write(space, addr, &cqe[..63])",
                "fence(Ordering::Release)",
                ".store(cqe[63], Ordering::Release)",
            ],
        ),
    ];
    for (file, src, signature, wanted) in cases {
        let body = function_body(src, signature)
            .unwrap_or_else(|| panic!("{file}: no `{signature}` (the model needs updating)"));
        let mut from = 0;
        for w in *wanted {
            // In this order: a fence before the store it orders, and so on.
            let at = body[from..].find(w).unwrap_or_else(|| {
                panic!("{file}: `{signature}` no longer has `{w}` (in this order): {body}")
            });
            from += at + w.len();
        }
    }
}

/// The text of the function whose signature starts with `signature`, up to its closing brace at
/// the indentation of the signature.
fn function_body<'a>(src: &'a str, signature: &str) -> Option<&'a str> {
    let start = src.find(signature)?;
    let line_start = src[..start].rfind('\n').map_or(0, |n| n + 1);
    let indent = &src[line_start..start];
    let close = format!("\n{indent}}}");
    let end = src[start..].find(&close)?;
    Some(&src[start..start + end + close.len()])
}

#[cfg(loom)]
mod model {
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{fence, AtomicU32, AtomicU8, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    use uverbs_drivers::mlx5::cqe::{cqe_opcode, device_owner_bit, is_sw_owned};

    /// Runs `f` under loom, exhaustively (no preemption bound) unless `LOOM_MAX_PREEMPTIONS` says
    /// otherwise, and reports how many executions that took. A model with a single execution would
    /// check nothing, so that is refused.
    fn check(f: impl Fn() + Sync + Send + 'static) {
        check_bounded(None, f)
    }

    /// [`check`], with at most `bound` preemptions per execution (unless `LOOM_MAX_PREEMPTIONS`
    /// says otherwise): for the models that run production code, whose every atomic access is a
    /// branch point, too many to explore them all.
    fn check_bounded(bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
        let name = std::thread::current().name().unwrap_or("model").to_owned();
        let counted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = std::sync::Arc::clone(&counted);
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = bound;
        }
        b.max_branches = 100_000;
        b.check(move || {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            f();
        });
        let n = counted.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!("{name}: {n} executions explored");
        assert!(n > 1, "{name}: the model has a single execution");
    }

    /// An entry's contents: two words, so that a torn read would also show as a mismatch.
    fn entry(seq: u32) -> [u32; 2] {
        [seq, !seq]
    }

    // ---------------------------------------------------------------------------------------
    // rxe: a ring of `mask + 1` slots with a producer and a consumer index (drivers/src/rxe/queue.rs).
    // Indices are masked; empty when equal, full when the producer is one behind the consumer.

    #[derive(Clone, Copy)]
    struct RxeOrderings {
        /// `publish_producer` / `publish_consumer`.
        publish: Ordering,
        /// `load_producer` / `load_consumer` (the other side's index).
        load_other: Ordering,
    }

    /// What the production code uses.
    const RXE: RxeOrderings = RxeOrderings {
        publish: Ordering::Release,
        load_other: Ordering::Acquire,
    };

    struct RxeRing {
        producer: AtomicU32,
        consumer: AtomicU32,
        slots: Vec<UnsafeCell<[u32; 2]>>,
        mask: u32,
        ord: RxeOrderings,
    }

    impl RxeRing {
        fn new(slots: u32, ord: RxeOrderings) -> RxeRing {
            RxeRing {
                producer: AtomicU32::new(0),
                consumer: AtomicU32::new(0),
                slots: (0..slots).map(|_| UnsafeCell::new([0, 0])).collect(),
                mask: slots - 1,
                ord,
            }
        }

        fn next(&self, i: u32) -> u32 {
            i.wrapping_add(1) & self.mask
        }

        /// The producer side, as `post_recv_wqes` (and the kernel filling a CQ) does it: its own
        /// index read back Relaxed, the consumer's loaded (`load_consumer`) when the ring looks
        /// full, the slots of a batch written, then one `publish_producer`.
        fn produce(&self, items: u32, batch: u32) {
            let mut producer = self.producer.load(Ordering::Relaxed) & self.mask;
            let mut sent = 0;
            while sent < items {
                let mut in_batch = 0;
                let mut consumer = self.consumer.load(self.ord.load_other) & self.mask;
                while in_batch < batch && sent < items {
                    if self.next(producer) == consumer {
                        consumer = self.consumer.load(self.ord.load_other) & self.mask;
                        if self.next(producer) == consumer {
                            break; // full: publish what there is, then wait
                        }
                    }
                    let value = entry(sent);
                    // SAFETY: (model) the slot is free; loom checks that the consumer's last
                    // read of it happens before this write.
                    self.slots[producer as usize].with_mut(|p| unsafe { *p = value });
                    producer = self.next(producer);
                    sent += 1;
                    in_batch += 1;
                }
                if in_batch > 0 {
                    self.producer.store(producer & self.mask, self.ord.publish);
                } else {
                    thread::yield_now();
                }
            }
        }

        /// The consumer side, as `RxeCq::poll` does it: the lock-free empty check (its own index
        /// Relaxed, then `load_producer`), then `load_producer`, its own index Relaxed, copy the
        /// slots out, one `publish_consumer` per batch.
        fn consume(&self, items: u32) -> Vec<u32> {
            let mut got = Vec::new();
            while got.len() < items as usize {
                if self.consumer.load(Ordering::Relaxed) & self.mask
                    == self.producer.load(self.ord.load_other) & self.mask
                {
                    thread::yield_now();
                    continue;
                }
                let producer = self.producer.load(self.ord.load_other) & self.mask;
                let mut consumer = self.consumer.load(Ordering::Relaxed) & self.mask;
                let mut n = 0;
                while consumer != producer {
                    // SAFETY: (model) loom checks that the producer's write of this slot happens
                    // before this read.
                    let [seq, check] = self.slots[consumer as usize].with(|p| unsafe { *p });
                    assert_eq!(check, !seq, "a torn entry");
                    got.push(seq);
                    consumer = self.next(consumer);
                    n += 1;
                }
                if n > 0 {
                    self.consumer.store(consumer & self.mask, self.ord.publish);
                } else {
                    thread::yield_now();
                }
            }
            got
        }
    }

    fn rxe_model(slots: u32, items: u32, batch: u32, ord: RxeOrderings) {
        check(move || {
            let ring = Arc::new(RxeRing::new(slots, ord));
            let producer = {
                let ring = Arc::clone(&ring);
                thread::spawn(move || ring.produce(items, batch))
            };
            let got = ring.consume(items);
            producer.join().unwrap();
            assert_eq!(got, (0..items).collect::<Vec<_>>(), "lost or duplicated");
            // Both indices end where they should: everything consumed.
            assert_eq!(ring.producer.load(Ordering::Relaxed), items & ring.mask);
            assert_eq!(ring.consumer.load(Ordering::Relaxed), items & ring.mask);
        });
    }

    /// Two slots hold one entry: every entry reuses a slot the consumer just released.
    #[test]
    fn rxe_ring_of_two_three_entries() {
        rxe_model(2, 3, 1, RXE);
    }

    /// Four slots (three entries), published in batches of two, wrapping once.
    #[test]
    fn rxe_ring_of_four_batches_wrap() {
        rxe_model(4, 5, 2, RXE);
    }

    /// A Relaxed producer index publishes the index without the slot: loom sees the consumer read
    /// a slot whose write does not happen before it.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn rxe_relaxed_producer_publication_is_caught() {
        rxe_model(
            2,
            2,
            1,
            RxeOrderings {
                publish: Ordering::Relaxed,
                load_other: Ordering::Acquire,
            },
        );
    }

    /// A Relaxed load of the other side's index: the consumer may read a slot before the
    /// producer's write of it is visible.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn rxe_relaxed_index_load_is_caught() {
        rxe_model(
            2,
            2,
            1,
            RxeOrderings {
                publish: Ordering::Release,
                load_other: Ordering::Relaxed,
            },
        );
    }

    // ---------------------------------------------------------------------------------------
    // mlx5 CQ: the device writes a CQE's body, then its owner byte (Release fence + Release
    // store, testing/mlx5-model/src/hca/mem.rs `publish_cqe`); the driver loads the owner byte
    // (Acquire, `CqRing::load_op_own`), checks ownership with the production `is_sw_owned`,
    // issues `udma_from_device_barrier` (a fence(Acquire)), then copies the body
    // (`CqPoller::next_cqe`). The device reuses an entry only once the consumer index in
    // the doorbell record (stored Release by `Dbrec::store`; loaded Relaxed + fence(Acquire) by
    // the device, `load_be32`) has passed it.

    #[derive(Clone, Copy)]
    struct CqOrderings {
        /// The device's fence before the owner byte, and the owner byte store.
        device_fence: bool,
        owner_store: Ordering,
        /// The driver's owner byte load, and the fence after it.
        owner_load: Ordering,
        driver_fence: bool,
        /// The consumer index store (the doorbell record).
        ci_store: Ordering,
    }

    const MLX5: CqOrderings = CqOrderings {
        device_fence: true,
        owner_store: Ordering::Release,
        owner_load: Ordering::Acquire,
        driver_fence: true,
        ci_store: Ordering::Release,
    };

    struct Cq {
        bodies: Vec<UnsafeCell<[u32; 2]>>,
        op_own: Vec<AtomicU8>,
        /// `dbrec[MLX5_CQ_SET_CI]`.
        set_ci: AtomicU32,
        ncqe: u32,
        ord: CqOrderings,
    }

    impl Cq {
        fn new(ncqe: u32, ord: CqOrderings) -> Cq {
            Cq {
                bodies: (0..ncqe).map(|_| UnsafeCell::new([0, 0])).collect(),
                // `init_buffer`: every entry invalid.
                op_own: (0..ncqe)
                    .map(|_| AtomicU8::new(cqe_opcode::INVALID << 4))
                    .collect(),
                set_ci: AtomicU32::new(0),
                ncqe,
                ord,
            }
        }

        /// The device producing its `pi`-th CQE (free-running index).
        fn device_produce(&self, pi: u32, value: [u32; 2]) {
            // Room: the entry must have been released by the consumer index.
            loop {
                let ci = self.set_ci.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if pi.wrapping_sub(ci) < self.ncqe {
                    break;
                }
                thread::yield_now();
            }
            let at = (pi & (self.ncqe - 1)) as usize;
            // SAFETY: (model) the entry is released; loom checks the driver's last read of it
            // happens before this write.
            self.bodies[at].with_mut(|p| unsafe { *p = value });
            if self.ord.device_fence {
                fence(Ordering::Release);
            }
            self.op_own[at].store(
                (cqe_opcode::REQ << 4) | device_owner_bit(pi, self.ncqe),
                self.ord.owner_store,
            );
        }

        /// `CqPoller::next_cqe`: the entry at `ci` if software owns it.
        fn next_cqe(&self, ci: &mut u32) -> Option<[u32; 2]> {
            let at = (*ci & (self.ncqe - 1)) as usize;
            let op_own = self.op_own[at].load(self.ord.owner_load);
            if !is_sw_owned(op_own, *ci, self.ncqe) {
                return None;
            }
            *ci = ci.wrapping_add(1);
            if self.ord.driver_fence {
                fence(Ordering::Acquire); // udma_from_device_barrier
            }
            // SAFETY: (model) loom checks the device's write happens before this read.
            Some(self.bodies[at].with(|p| unsafe { *p }))
        }

        /// `CqPoller::update_consumer_index` through `Dbrec::store`.
        fn update_consumer_index(&self, ci: u32) {
            self.set_ci.store(ci & 0xff_ffff, self.ord.ci_store);
        }
    }

    fn cq_model(ncqe: u32, items: u32, ord: CqOrderings) {
        check(move || {
            let cq = Arc::new(Cq::new(ncqe, ord));
            let device = {
                let cq = Arc::clone(&cq);
                thread::spawn(move || {
                    for pi in 0..items {
                        cq.device_produce(pi, entry(pi));
                    }
                })
            };
            let mut ci = 0u32;
            let mut got = Vec::new();
            while got.len() < items as usize {
                let mut n = 0;
                while let Some([seq, check]) = cq.next_cqe(&mut ci) {
                    assert_eq!(check, !seq, "a torn CQE");
                    got.push(seq);
                    n += 1;
                }
                if n > 0 {
                    cq.update_consumer_index(ci);
                } else {
                    thread::yield_now();
                }
            }
            device.join().unwrap();
            assert_eq!(got, (0..items).collect::<Vec<_>>(), "lost or duplicated");
            // Nothing more to take: the entries left are the previous pass's.
            assert_eq!(cq.next_cqe(&mut ci), None);
        });
    }

    /// One entry, three CQEs: each reuses the entry, with the owner bit flipping every pass.
    #[test]
    fn mlx5_cq_of_one_three_cqes() {
        cq_model(1, 3, MLX5);
    }

    /// Two entries, three CQEs (four, two whole passes, with `UVERBS_LONG=1`: 1.8 million
    /// executions, minutes): stale entries of the previous pass are never taken.
    #[test]
    fn mlx5_cq_of_two_wraps() {
        let long = std::env::var_os("UVERBS_LONG").is_some_and(|v| v == "1");
        cq_model(2, if long { 4 } else { 3 }, MLX5);
    }

    /// Without the device's release (no fence, Relaxed owner store), the driver can see the owner
    /// byte before the body.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn mlx5_relaxed_owner_publication_is_caught() {
        cq_model(
            2,
            1,
            CqOrderings {
                device_fence: false,
                owner_store: Ordering::Relaxed,
                ..MLX5
            },
        );
    }

    /// Without the driver's acquire (Relaxed owner load, no udma_from_device_barrier), the same.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn mlx5_relaxed_owner_check_is_caught() {
        cq_model(
            2,
            1,
            CqOrderings {
                owner_load: Ordering::Relaxed,
                driver_fence: false,
                ..MLX5
            },
        );
    }

    /// A Relaxed consumer index lets the device overwrite an entry the driver is still reading.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn mlx5_relaxed_consumer_index_is_caught() {
        cq_model(
            1,
            2,
            CqOrderings {
                ci_store: Ordering::Relaxed,
                ..MLX5
            },
        );
    }

    // ---------------------------------------------------------------------------------------
    // mlx5 send queue, a whole cycle: the driver writes a WQE, `udma_to_device_barrier`
    // (fence(Release)), stores the send counter into the doorbell record (Release); the device
    // loads it (Relaxed + fence(Acquire)), reads the WQE, completes it with a CQE (as above); the
    // driver polls the CQE, retires the WQE and only then writes the next WQE into the same block.
    // loom checks that no WQE write races the device's read of the previous WQE in that block.

    #[derive(Clone, Copy)]
    struct SqOrderings {
        driver_fence: bool,
        dbrec_store: Ordering,
    }

    struct Sq {
        /// One basic block.
        wqe: UnsafeCell<[u32; 2]>,
        /// `dbrec[MLX5_SND_DBR]`.
        snd_dbr: AtomicU32,
        cq: Cq,
        ord: SqOrderings,
    }

    fn sq_model(wqes: u32, ord: SqOrderings) {
        check(move || {
            let sq = Arc::new(Sq {
                wqe: UnsafeCell::new([0, 0]),
                snd_dbr: AtomicU32::new(0),
                cq: Cq::new(1, MLX5),
                ord,
            });
            let device = {
                let sq = Arc::clone(&sq);
                thread::spawn(move || {
                    for sq_ci in 0..wqes {
                        loop {
                            let posted = sq.snd_dbr.load(Ordering::Relaxed);
                            fence(Ordering::Acquire); // load_be32
                            if posted != sq_ci {
                                break;
                            }
                            thread::yield_now();
                        }
                        // SAFETY: (model) loom checks the driver's write happens before this read.
                        let [seq, check] = sq.wqe.with(|p| unsafe { *p });
                        assert_eq!((seq, check), (sq_ci, !sq_ci), "the device read a stale WQE");
                        sq.cq.device_produce(sq_ci, entry(seq));
                    }
                })
            };
            let mut ci = 0;
            for cur_post in 0..wqes {
                // The block is free: the previous WQE's CQE was polled (below).
                // SAFETY: (model) loom checks the device's read of the previous WQE happens
                // before this write.
                sq.wqe.with_mut(|p| unsafe { *p = entry(cur_post) });
                if sq.ord.driver_fence {
                    fence(Ordering::Release); // udma_to_device_barrier
                }
                sq.snd_dbr
                    .store(cur_post.wrapping_add(1), sq.ord.dbrec_store);
                let completed = loop {
                    if let Some(c) = sq.cq.next_cqe(&mut ci) {
                        break c;
                    }
                    thread::yield_now();
                };
                sq.cq.update_consumer_index(ci);
                assert_eq!(completed, entry(cur_post), "the completion of another WQE");
            }
            device.join().unwrap();
        });
    }

    #[test]
    fn mlx5_send_cycle_reuses_a_block_safely() {
        sq_model(
            2,
            SqOrderings {
                driver_fence: true,
                dbrec_store: Ordering::Release,
            },
        );
    }

    /// Without `udma_to_device_barrier` and with a Relaxed doorbell record, the device may read the
    /// WQE before the driver's write of it is visible.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn mlx5_relaxed_doorbell_record_is_caught() {
        sq_model(
            1,
            SqOrderings {
                driver_fence: false,
                dbrec_store: Ordering::Relaxed,
            },
        );
    }

    // ---------------------------------------------------------------------------------------
    // mlx5 send queue hand-off (drivers/src/mlx5/handoff.rs): the production `SendQueue::post` on
    // the poster's thread, the production `SendHandoff::retire` on the poller's, sharing only the
    // hand-off. The device is folded into the poller: after the poster's post of WQE k it stores
    // `k + 1` into `rung` (Release: the doorbell record after `udma_to_device_barrier`); the
    // poller, having loaded `rung` (Acquire: the device's load of the record, then its CQE, then
    // the poller's acquire of the CQE's owner byte) reads the blocks of the WQEs it completes (the
    // device reading them) and retires them. The ring's blocks are loom cells, written by
    // `SendRing::wqe_mut` as `post` builds a WQE in them: loom reports a block rewritten before
    // the read of the WQE that held it is ordered before the write (the poster overwrote a WQE
    // the poller had not retired).

    use std::sync::Arc as StdArc;

    use uverbs_drivers::error::Error;
    use uverbs_drivers::mlx5::handoff::{Orderings, Retired, ORDERINGS};
    use uverbs_drivers::mlx5::sq::{QpType, SendQueue, SendQueueConfig, SendRing};
    use uverbs_drivers::mlx5::wqe::opcode;
    use uverbs_drivers::wr::{SendWr, Sge};

    /// A send ring whose 64-byte blocks each have a loom cell: see above.
    struct CellRing {
        bytes: Vec<u8>,
        blocks: StdArc<Vec<UnsafeCell<u32>>>,
    }

    impl AsRef<[u8]> for CellRing {
        fn as_ref(&self) -> &[u8] {
            &self.bytes
        }
    }

    impl SendRing for CellRing {
        fn wqe_mut(&mut self, offset: usize, len: usize) -> (&mut [u8], &mut [u8]) {
            let n = self.blocks.len();
            for b in 0..len / 64 {
                // SAFETY: (model) loom checks that the poller's read of the WQE this block held
                // happens before this write.
                self.blocks[(offset / 64 + b) % n].with_mut(|p| unsafe { *p += 1 });
            }
            let (front, back) = self.bytes.split_at_mut(offset);
            if back.len() >= len {
                (&mut back[..len], &mut [])
            } else {
                let wrapped = len - back.len();
                (back, &mut front[..wrapped])
            }
        }
    }

    /// The preemption bound of the hand-off models (loom's documentation: most bugs show within
    /// two or three).
    const HANDOFF_PREEMPTIONS: usize = 3;

    /// Whether `UVERBS_LONG=1` asks for the long variants.
    fn long() -> bool {
        std::env::var_os("UVERBS_LONG").is_some_and(|v| v == "1")
    }

    /// The `wr_id` of request `k` (never 0, the slots' initial value).
    fn wr_id(k: usize) -> u64 {
        0x1000 + k as u64
    }

    /// `sizes[k]` blocks for request `k` (a send of 1 entry is 1 block, of 5 entries 2), on a ring
    /// of `blocks` blocks holding at most `max_wr` requests; the poller completes the requests of
    /// `signaled` (in order; the last request among them), retiring the others implicitly.
    fn handoff_model(
        blocks: usize,
        max_wr: u32,
        sizes: &'static [u32],
        signaled: &'static [usize],
        ord: Orderings,
        preemptions: usize,
    ) {
        handoff_model_staged(blocks, max_wr, sizes, signaled, ord, preemptions, 1)
    }

    /// [`handoff_model`] with the poster staging `per_commit` requests at a time
    /// (`SendQueue::stage`, a batch) and publishing them with one `commit` and one doorbell (1:
    /// `SendQueue::post` of each); a staging that finds the ring full commits what it has first.
    /// A poller ahead of the device finds a staged request unpublished (nothing) until its commit.
    fn handoff_model_staged(
        blocks: usize,
        max_wr: u32,
        sizes: &'static [u32],
        signaled: &'static [usize],
        ord: Orderings,
        preemptions: usize,
        per_commit: usize,
    ) {
        assert_eq!(signaled.last(), Some(&(sizes.len() - 1)));
        check_bounded(Some(preemptions), move || {
            let cells: StdArc<Vec<UnsafeCell<u32>>> =
                StdArc::new((0..blocks).map(|_| UnsafeCell::new(0)).collect());
            let ring = CellRing {
                bytes: vec![0; blocks * 64],
                blocks: StdArc::clone(&cells),
            };
            let cfg = SendQueueConfig {
                qpn: 0x42,
                user_index: None,
                qp_type: QpType::Rc,
                max_send_wr: max_wr,
                max_send_sge: 5,
                max_inline_data: 0,
                sq_sig_all: false,
            };
            let mut sq = SendQueue::new(ring, cfg).expect("a valid queue");
            sq.set_handoff_orderings(ord);
            let handoff = StdArc::clone(sq.handoff());
            // Each request's WQE counter: the blocks before it.
            let counters: Vec<u16> = sizes
                .iter()
                .scan(0u32, |at, &bbs| {
                    let c = *at as u16;
                    *at += bbs;
                    Some(c)
                })
                .collect();
            let rung = Arc::new(AtomicU32::new(0));
            let poster = {
                let rung = Arc::clone(&rung);
                let counters = counters.clone();
                thread::spawn(move || {
                    let sge = Sge {
                        addr: 0x1_0000,
                        length: 8,
                        lkey: 7,
                    };
                    let sges = [sge; 5];
                    let (mut token, mut staged) = (0, 0);
                    for (k, &bbs) in sizes.iter().enumerate() {
                        let entries = if bbs == 1 { 1 } else { 5 };
                        let wr = SendWr::send(wr_id(k), &sges[..entries]);
                        loop {
                            let posted = if per_commit > 1 {
                                sq.stage(&mut token, &wr, None)
                            } else {
                                sq.post(&wr, None)
                            };
                            match posted {
                                Ok(w) => {
                                    assert_eq!((w.index, w.bbs), (counters[k], bbs));
                                    break;
                                }
                                Err(Error::QueueFull { .. }) => {
                                    if staged > 0 {
                                        // Room comes only from published requests' completions.
                                        sq.commit(token).expect("our own staging");
                                        (token, staged) = (0, 0);
                                        rung.store(k as u32, Ordering::Release);
                                    }
                                    thread::yield_now()
                                }
                                Err(e) => panic!("post {k}: {e}"),
                            }
                        }
                        staged += 1;
                        if staged == per_commit || k + 1 == sizes.len() {
                            if per_commit > 1 {
                                sq.commit(token).expect("our own staging");
                            }
                            (token, staged) = (0, 0);
                            rung.store(k as u32 + 1, Ordering::Release);
                        }
                    }
                    sq
                })
            };
            let expect = |k: usize| {
                Some(Retired {
                    wr_id: wr_id(k),
                    opcode: opcode::SEND,
                })
            };
            // The requests the poller has seen completed (read, then retired), or retired early.
            let mut done = 0;
            for &k in signaled {
                // Once, ahead of the device (a corrupt CQE naming a request that may be half
                // written): nothing, or the request whole.
                let mut retired = false;
                if rung.load(Ordering::Acquire) as usize <= k {
                    if sizes[k] > 1 {
                        assert_eq!(
                            handoff.retire(counters[k].wrapping_add(1)),
                            None,
                            "the second block of request {k} starts no WQE"
                        );
                    }
                    if let got @ Some(_) = handoff.retire(counters[k]) {
                        assert_eq!(got, expect(k), "a torn or wrong request {k}");
                        retired = true;
                    }
                }
                if !retired {
                    while rung.load(Ordering::Acquire) as usize <= k {
                        thread::yield_now();
                    }
                    // The device read requests done..=k and wrote the CQE of k.
                    for j in done..=k {
                        for b in 0..sizes[j] {
                            let block = (u32::from(counters[j]) + b) as usize % blocks;
                            // SAFETY: (model) loom checks the poster's write of the block happens
                            // before this read.
                            cells[block].with(|p| unsafe { *p });
                        }
                    }
                    assert_eq!(
                        handoff.retire(counters[k]),
                        expect(k),
                        "request {k} is published: its completion finds it, whole"
                    );
                }
                // A duplicate or stale completion retires nothing.
                for j in done..=k {
                    assert_eq!(
                        handoff.retire(counters[j]),
                        None,
                        "request {j} retired twice"
                    );
                }
                done = k + 1;
            }
            let mut sq = poster.join().unwrap();
            assert_eq!(sq.outstanding(), 0, "every request retired");
            assert_eq!(sq.free_blocks(), blocks as u32);
            for &c in &counters {
                assert_eq!(sq.retire(c), None);
            }
        });
    }

    /// Two blocks, a one-block request then a two-block one, which waits for the first's
    /// retirement and wraps over the ring's end.
    #[test]
    fn mlx5_send_handoff_wrap() {
        handoff_model(2, 2, &[1, 2], &[0, 1], ORDERINGS, HANDOFF_PREEMPTIONS);
    }

    /// Two blocks, three one-block requests, at most two in flight: the first is retired only
    /// implicitly (by the second's completion), and the third reuses its block.
    #[test]
    fn mlx5_send_handoff_implicit() {
        handoff_model(2, 2, &[1, 1, 1], &[1, 2], ORDERINGS, HANDOFF_PREEMPTIONS);
    }

    /// Four blocks, up to two requests in flight, of one and two blocks, one retired only
    /// implicitly, the last wrapping: two preemptions (three with `UVERBS_LONG=1`: 917 502
    /// executions, a minute and a half).
    #[test]
    fn mlx5_send_handoff_four_blocks() {
        let preemptions = if long() { HANDOFF_PREEMPTIONS } else { 2 };
        handoff_model(4, 2, &[1, 2, 1, 1], &[0, 2, 3], ORDERINGS, preemptions);
    }

    /// Requests staged two at a time and published by one commit each (a batch): a poller ahead
    /// of the device never finds a staged request, and finds a committed one whole.
    #[test]
    fn mlx5_send_handoff_staged_pairs() {
        handoff_model_staged(2, 2, &[1, 1, 1], &[1, 2], ORDERINGS, 2, 2);
    }

    /// `head` published Relaxed: a poller ahead of the device may find a slot's description
    /// without its `wr_id`.
    #[test]
    #[should_panic(expected = "a torn or wrong request")]
    fn mlx5_send_handoff_relaxed_head_is_caught() {
        let ord = Orderings {
            publish_head: Ordering::Relaxed,
            ..ORDERINGS
        };
        handoff_model(2, 2, &[1, 1], &[0, 1], ord, HANDOFF_PREEMPTIONS);
    }

    /// `head` loaded Relaxed: the same.
    #[test]
    #[should_panic(expected = "a torn or wrong request")]
    fn mlx5_send_handoff_relaxed_head_load_is_caught() {
        let ord = Orderings {
            load_head: Ordering::Relaxed,
            ..ORDERINGS
        };
        handoff_model(2, 2, &[1, 1], &[0, 1], ord, HANDOFF_PREEMPTIONS);
    }

    /// The retirement published Relaxed: the poster may rewrite a block before the device's read
    /// of it is ordered before.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn mlx5_send_handoff_relaxed_retirement_is_caught() {
        let ord = Orderings {
            publish_retired: Ordering::Relaxed,
            ..ORDERINGS
        };
        handoff_model(1, 1, &[1, 1], &[0, 1], ord, HANDOFF_PREEMPTIONS);
    }

    /// The retirement loaded Relaxed: the same.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn mlx5_send_handoff_relaxed_retirement_load_is_caught() {
        let ord = Orderings {
            load_retired: Ordering::Relaxed,
            ..ORDERINGS
        };
        handoff_model(1, 1, &[1, 1], &[0, 1], ord, HANDOFF_PREEMPTIONS);
    }
}
