//! The rings of a resizable rxe completion queue: `RESIZE_CQ` gives the CQ a new ring while other
//! threads poll the old one, so pollers reach the current ring through an atomic pointer, and
//! every ring the CQ has had stays alive (mapped) until the CQ goes.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

use crate::spin::{SpinGuard, SpinMutex};

/// The rings of one CQ, the current one reachable without a lock.
///
/// Each ring is owned by an [`Arc`] in `state.all`, and `current` is that `Arc`'s pointer
/// ([`Arc::as_ptr`]): moving an `Arc` (the vector growing) does not retag the ring it points at,
/// as moving a `Box` does (a `Box` asserts unique access to its contents each time it is moved, so
/// a pointer taken from it before the move is invalid after it under Stacked Borrows: F20). The
/// rings are reached only by `&Q`, so the shared pointer suffices.
#[derive(Debug)]
pub(crate) struct RingHistory<Q> {
    /// The ring the kernel fills now: the last of `state.all`.
    current: AtomicPtr<Q>,
    /// The pollers' lock (one consumer at a time), and every ring the CQ has had.
    state: SpinMutex<RingState<Q>>,
    /// Serialises resizes, whose system calls it is held across: no poller, poster or `Drop`
    /// takes it (pollers meet a resize through `state.resizing` and find the queue empty).
    resize: Mutex<()>,
}

/// What the pollers' lock guards.
#[derive(Debug)]
pub(crate) struct RingState<Q> {
    /// Set while a resize is under way: the kernel copies the waiting completions from the old
    /// ring to the new one, so nothing may be taken from the old ring meanwhile.
    resizing: bool,
    /// Every ring the CQ has had, the current one last.
    all: Vec<Arc<Q>>,
}

impl<Q> RingHistory<Q> {
    /// The history of a CQ whose first ring is `ring`.
    pub(crate) fn new(ring: Q) -> RingHistory<Q> {
        let ring = Arc::new(ring);
        RingHistory {
            current: AtomicPtr::new(Arc::as_ptr(&ring).cast_mut()),
            state: SpinMutex::new(RingState {
                resizing: false,
                all: vec![ring],
            }),
            resize: Mutex::new(()),
        }
    }

    /// The ring the kernel fills now (or, racing with a resize, the one it filled just before).
    #[inline]
    pub(crate) fn current(&self) -> &Q {
        // SAFETY: `current` always holds the pointer of an `Arc` in `state.all`, which only grows
        // and is dropped with `self`, so the ring lives as long as `&self`; it is only ever
        // reached by shared reference.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Takes the pollers' lock and the current ring, or `None` while a resize is under way (the
    /// queue is then empty to a poller: the completions are moving to the new ring).
    #[inline]
    pub(crate) fn lock(&self) -> Option<(SpinGuard<'_, RingState<Q>>, &Q)> {
        let guard = self.state.lock();
        if guard.resizing {
            return None;
        }
        // Under the lock: a resize installs its ring under it too.
        Some((guard, self.current()))
    }

    /// Replaces the ring with the one `make` returns, given the current one: `make` makes the
    /// system calls (the kernel's resize, the new ring's mapping) with no poller lock held, while
    /// pollers find the queue empty. Resizes are serialised. If `make` fails the ring stays.
    pub(crate) fn replace<E>(&self, make: impl FnOnce(&Q) -> Result<Q, E>) -> Result<&Q, E> {
        let _resize = self.resize.lock().unwrap_or_else(|p| p.into_inner());
        self.state.lock().resizing = true;
        // Pollers that held the lock before are done; later ones see `resizing`. A panic in `make`
        // leaves `resizing` set: the CQ then completes nothing more, as after a failed mapping.
        let made = make(self.current());
        let mut state = self.state.lock();
        state.resizing = false;
        let ring = Arc::new(made?);
        self.current
            .store(Arc::as_ptr(&ring).cast_mut(), Ordering::Release);
        state.all.push(ring);
        drop(state);
        Ok(self.current())
    }

    /// How many rings the CQ has had.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.state.lock().all.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// A ring: an index someone publishes and someone reads.
    #[derive(Debug)]
    struct Ring {
        index: AtomicU32,
        generation: u32,
    }

    fn ring(generation: u32) -> Ring {
        Ring {
            index: AtomicU32::new(0),
            generation,
        }
    }

    /// F20 (Miri, Stacked Borrows): the ownership pattern of `RxeCq`'s rings. The old one took
    /// `current` from `&mut *boxed` and then moved the `Box` into the vector, which retags it
    /// unique and invalidates the pointer: every later `current()` was undefined behaviour (Tree
    /// Borrows accepts it). Here the rings are `Arc`s: reading through `current` after the
    /// vector moved and grew, and after a replacement, is fine under both models.
    #[test]
    fn current_stays_valid_as_rings_are_added() {
        let h = RingHistory::new(ring(0));
        assert_eq!(h.current().generation, 0);
        h.current().index.store(7, Ordering::Relaxed);
        for g in 1..20 {
            let old = h.current();
            let new = h
                .replace(|cur| {
                    assert_eq!(cur.generation, g - 1);
                    Ok::<_, ()>(ring(g))
                })
                .unwrap();
            assert_eq!(new.generation, g);
            // The old ring is still alive and readable (a poller may still be looking at it).
            assert_eq!(old.generation, g - 1);
            let _ = old.index.load(Ordering::Relaxed);
        }
        assert_eq!(h.count(), 20);
        assert_eq!(h.current().generation, 19);
        let (guard, cur) = h.lock().unwrap();
        assert_eq!(cur.generation, 19);
        drop(guard);
    }

    /// A failed replacement keeps the ring and lets pollers in again.
    #[test]
    fn a_failed_replacement_keeps_the_ring() {
        let h = RingHistory::new(ring(0));
        assert_eq!(h.replace(|_| Err::<Ring, _>("mmap")).unwrap_err(), "mmap");
        assert_eq!(h.current().generation, 0);
        assert!(h.lock().is_some());
        assert_eq!(h.count(), 1);
    }

    /// While a replacement is under way (its system calls), pollers find no lock to wait for:
    /// `lock` answers `None` at once, and the ring they see afterwards is the new one.
    #[test]
    fn pollers_see_an_empty_queue_during_a_replacement() {
        let h = RingHistory::new(ring(0));
        h.replace(|_| {
            assert!(h.lock().is_none(), "a poller got in during the resize");
            Ok::<_, ()>(ring(1))
        })
        .unwrap();
        assert_eq!(h.lock().unwrap().1.generation, 1);
    }

    /// Pollers on other threads read through `current` while rings are replaced (Miri checks the
    /// accesses and the pointer's provenance across threads, in both aliasing models).
    #[test]
    fn pollers_on_other_threads_during_replacements() {
        let h = Arc::new(RingHistory::new(ring(0)));
        let replacements = if cfg!(miri) { 8 } else { 1000 };
        std::thread::scope(|s| {
            for _ in 0..2 {
                let h = &h;
                s.spawn(move || {
                    let mut last = 0;
                    loop {
                        let _ = h.current().index.load(Ordering::Acquire);
                        if let Some((_g, cur)) = h.lock() {
                            assert!(cur.generation >= last);
                            last = cur.generation;
                            cur.index.fetch_add(1, Ordering::Release);
                        }
                        if last == replacements {
                            break;
                        }
                        std::thread::yield_now();
                    }
                });
            }
            for g in 1..=replacements {
                h.replace(|_| Ok::<_, ()>(ring(g))).unwrap();
            }
        });
        assert_eq!(h.count(), replacements as usize + 1);
    }
}
