//! [`SpinMutex`]: the lock of the data path's queues, as rdma-core's providers take
//! `pthread_spin_lock` around their rings.
//!
//! A poster or poller holds it for a few dozen loads and stores (building a WQE, taking a
//! completion), never across a system call, so a waiter spins rather than sleeps. Uncontended, it
//! is one compare-and-swap to take and one store to release, where `std::sync::Mutex` also checks
//! the thread's panic count on both (poisoning). There is no poisoning: what the queues keep under
//! their locks stays consistent if a holder unwinds (each publishes its changes to the device as
//! its last step), and every `std` lock here ignored poisoning already.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// Spins before a waiter yields its time slice (a holder may have been preempted).
const SPINS_BEFORE_YIELD: u32 = 100;

#[cfg(debug_assertions)]
thread_local! {
    /// How many spin locks this thread holds (debug builds): [`assert_none_held`] checks it.
    static HELD: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// Panics, in debug builds, if the calling thread holds a [`SpinMutex`]: called before every
/// system call on a device or connection-manager file, and where memory the device used is
/// unmapped, so that a lock of the data path held across one (waiters spin for its whole length,
/// possibly for ever if the call blocks) fails the tests instead of passing unseen. Nothing in
/// release builds.
#[inline]
#[track_caller]
pub fn assert_none_held(call: &str) {
    #[cfg(debug_assertions)]
    HELD.with(|h| {
        assert!(
            h.get() <= 0,
            "{call} with {} spin lock(s) of the data path held: no system call may be made under one",
            h.get()
        )
    });
    #[cfg(not(debug_assertions))]
    let _ = call;
}

/// A mutual-exclusion lock that spins: a value `T` and a flag.
#[derive(Default)]
pub struct SpinMutex<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out `&mut T` to one thread at a time (the flag's acquire/release pairs
// order one holder's accesses before the next's), so sharing the lock moves `T` between threads
// but never shares it: `T: Send` suffices, as for `std::sync::Mutex`.
unsafe impl<T: Send> Sync for SpinMutex<T> {}

impl<T> SpinMutex<T> {
    /// A lock around `value`, free.
    pub const fn new(value: T) -> SpinMutex<T> {
        SpinMutex {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock, spinning (and after a while yielding) while another thread holds it.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        // Acquire: what the previous holder wrote is visible to this one.
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        #[cfg(debug_assertions)]
        HELD.with(|h| h.set(h.get() + 1));
        SpinGuard {
            lock: self,
            _not_sync: PhantomData,
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spins = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// The value, through exclusive access to the lock (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T> std::fmt::Debug for SpinMutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The value may be in use: it is not read here.
        f.debug_struct("SpinMutex")
            .field("locked", &self.locked.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A held [`SpinMutex`]: access to its value; released when dropped (also on unwinding).
pub struct SpinGuard<'a, T> {
    lock: &'a SpinMutex<T>,
    /// `Sync` as `&mut T` is (through a shared guard, `&T` could reach other threads), and not
    /// `Send`: a guard is released by the thread that took it, as `std`'s are, which keeps the
    /// per-thread count of held locks that debug builds check (`assert_none_held`) true.
    _not_sync: PhantomData<(&'a mut T, *const ())>,
}

// SAFETY: sharing a guard shares `&T` only (`Deref`), as sharing `&mut T` would: sound when `T:
// Sync`. (`*const ()` in the marker only takes `Send` away.)
unsafe impl<T: Sync> Sync for SpinGuard<'_, T> {}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the value exists but those
        // made through this guard, which borrow it.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Release: what this holder wrote is visible to the next one.
        self.lock.locked.store(false, Ordering::Release);
        // (A guard is not `Send`: it is dropped on the thread that took it.)
        #[cfg(debug_assertions)]
        HELD.with(|h| h.set(h.get() - 1));
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SpinGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excludes_and_releases_on_unwinding() {
        // Non-atomic increments under the lock: none is lost.
        let lock = SpinMutex::new(0u64);
        let (threads, each) = if cfg!(miri) { (3, 20) } else { (4, 20_000) };
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..each {
                        let mut g = lock.lock();
                        let v = *g;
                        std::hint::spin_loop();
                        *g = v + 1;
                    }
                });
            }
        });
        assert_eq!(*lock.lock(), threads * each);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = lock.lock();
            panic!("a holder panics");
        }));
        assert!(r.is_err());
        *lock.lock() += 1;
        let mut lock = lock;
        assert_eq!(*lock.get_mut(), threads * each + 1);
    }

    /// In debug builds, a system call under a spin lock panics (`assert_none_held`), and passes
    /// once the lock is released (also after a holder unwound).
    #[test]
    #[cfg(debug_assertions)]
    fn a_system_call_under_a_spin_lock_is_caught() {
        let lock = SpinMutex::new(());
        assert_none_held("free");
        let g = lock.lock();
        let r = std::panic::catch_unwind(|| assert_none_held("RESIZE_CQ"));
        let msg = r.unwrap_err();
        let msg = msg.downcast_ref::<String>().unwrap();
        assert!(msg.contains("RESIZE_CQ with 1 spin lock(s)"), "{msg}");
        drop(g);
        assert_none_held("released");
    }
}
