//! Memory the device reads and writes behind the compiler's back.
//!
//! An RDMA WRITE from a peer lands in a registered buffer without any instruction of this process
//! storing to it, so a loop that waits for a byte to change must load it again every time: a
//! volatile load. It is taken through a raw pointer from the buffer's owner, never through a
//! reference to the element, and the element type must be valid for every bit pattern, since the
//! device may write any bytes: [`Elements`] is that view. [`Elements::wait_for`] adds what the payload needs once the flag is seen: the
//! from-device barrier rdma-core places between reading a completion's owner bit and the rest of
//! it, so that no later read of the buffer is satisfied before the flag's.
//!
//! [`Allocation`] is the other half: memory the kernel or the device may still touch after its
//! owner is gone (a registration the kernel refused to release) is taken over here and leaked, never
//! returned to the allocator, and [`leaked_bytes`] counts it ([`count_leak`] for other memory
//! leaked for the same reason, a mapping).

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use zerocopy::FromBytes;

use crate::barrier;

/// Elements the device may write at any time, reached only through raw pointers: a view of a
/// registered buffer that never asserts, as a `&[T]` would, that no element changes while it lives.
///
/// `T: FromBytes` for the loads: whatever bytes the device wrote form a valid `T`.
#[derive(Debug, Clone, Copy)]
pub struct Elements<T> {
    ptr: NonNull<T>,
    len: usize,
}

impl<T> Elements<T> {
    /// A view of `len` elements at `ptr`.
    ///
    /// # Safety
    /// `ptr` must be aligned and valid for reads and writes of `len` `T`s for as long as the view
    /// (or a copy of it) is used, and nothing may hold a reference into those elements while a
    /// method of the view runs.
    pub unsafe fn new(ptr: NonNull<T>, len: usize) -> Elements<T> {
        Elements { ptr, len }
    }

    /// How many elements the view covers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if the view covers no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: FromBytes + Copy> Elements<T> {
    /// Element `index`, loaded with a volatile read (`None` if `index` is out of bounds).
    #[inline]
    pub fn read_volatile(&self, index: usize) -> Option<T> {
        if index >= self.len {
            return None;
        }
        // SAFETY: `index` is in bounds of elements valid for reads and aligned (`new`'s contract);
        // any bytes there are a valid `T` (`FromBytes`). No reference to the element is made.
        Some(unsafe { self.ptr.as_ptr().add(index).read_volatile() })
    }

    /// Stores `value` at `index` with a volatile write, without borrowing the other elements (which
    /// the device may be writing); `false` if `index` is out of bounds.
    #[inline]
    pub fn write_volatile(&mut self, index: usize, value: T) -> bool {
        if index >= self.len {
            return false;
        }
        // SAFETY: in bounds, aligned and valid for writes (`new`'s contract), and no reference into
        // the elements is held meanwhile (also the contract); `T: Copy` has no destructor to skip.
        unsafe { self.ptr.as_ptr().add(index).write_volatile(value) };
        true
    }

    /// Waits until `done(element index)` holds, loading the element afresh each time (volatile),
    /// then issues the from-device barrier and returns the element: reads of the buffer after this
    /// call see at least what the device had written when it wrote the element that satisfied
    /// `done` (a peer that writes its payload first and a flag last, as one RDMA WRITE does in
    /// address order on RC, or as a second write does, can be read this way). `None` if `index` is
    /// out of bounds or `deadline` passes first.
    #[inline]
    pub fn wait_for(
        &self,
        index: usize,
        mut done: impl FnMut(T) -> bool,
        deadline: Option<Instant>,
    ) -> Option<T> {
        let mut spins = 0u32;
        loop {
            let v = self.read_volatile(index)?;
            if done(v) {
                barrier::udma_from_device_barrier();
                return Some(v);
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            // Reading the clock costs more than a load: look at it every 1024 spins.
            if spins % 1024 == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
        }
    }
}

static LEAKED: AtomicU64 = AtomicU64::new(0);

/// Counts `bytes` of memory other than an [`Allocation`] (a mapping) leaked for good because the
/// device might still touch it.
pub fn count_leak(bytes: usize) {
    LEAKED.fetch_add(bytes as u64, Ordering::Relaxed);
}

/// Bytes this process has leaked on purpose because the kernel or the device might still touch
/// them ([`Allocation::leak`]).
pub fn leaked_bytes() -> u64 {
    LEAKED.load(Ordering::Relaxed)
}

/// The heap memory of a vector whose elements were handed to the device, owned without its type:
/// freed when dropped, or leaked for good with [`Allocation::leak`] when the kernel may still let
/// the device at it. Nothing reads or writes the memory through this type.
#[derive(Debug)]
pub struct Allocation {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: an `Allocation` only frees (or forgets) the memory it owns; it never accesses the bytes,
// so which thread holds it or frees it does not matter to the (plain, `Copy`) data it held.
unsafe impl Send for Allocation {}
// SAFETY: `&Allocation` gives access to nothing but the `Debug` of a pointer and a layout.
unsafe impl Sync for Allocation {}

impl Allocation {
    /// Takes over `v`'s heap memory, elements and all (they are never dropped: registered memory
    /// holds `Copy` types, which have no destructor), and returns it with the address and number
    /// of the elements, which stay where they are until the allocation is dropped. `None` for a
    /// vector without heap memory (no capacity, or zero-sized elements).
    pub fn from_vec<T: Copy>(v: Vec<T>) -> Option<(Allocation, NonNull<T>, usize)> {
        let mut v = std::mem::ManuallyDrop::new(v);
        let layout = Layout::array::<T>(v.capacity()).ok()?;
        if layout.size() == 0 {
            return None;
        }
        let elements = NonNull::new(v.as_mut_ptr())?;
        let allocation = Allocation {
            ptr: elements.cast(),
            layout,
        };
        Some((allocation, elements, v.len()))
    }

    /// The memory's size in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Always `false`: an `Allocation` holds heap memory.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Never frees the memory, and counts it in [`leaked_bytes`].
    pub fn leak(self) {
        count_leak(self.layout.size());
        std::mem::forget(self);
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `layout` are those a `Vec` allocated with from the global allocator
        // (`Vec` allocates `Layout::array::<T>(capacity)`, the layout computed in `from_vec`), the
        // vector itself was forgotten, and nothing else frees this memory.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<T>(v: &mut Vec<T>) -> Elements<T> {
        // SAFETY: the vector outlives every use of the view in these tests, which take no
        // reference into it while the view is used.
        unsafe { Elements::new(NonNull::new(v.as_mut_ptr()).unwrap(), v.len()) }
    }

    #[test]
    fn reads_in_bounds_only() {
        let mut v = vec![1u32, 2, 3];
        let e = view(&mut v);
        assert_eq!(e.read_volatile(0), Some(1));
        assert_eq!(e.read_volatile(2), Some(3));
        assert_eq!(e.read_volatile(3), None);
        let mut empty = Vec::<u64>::new();
        assert_eq!(view(&mut empty).read_volatile(0), None);
    }

    #[test]
    fn writes_in_bounds_only() {
        let mut v = vec![1u16, 2, 3];
        let mut e = view(&mut v);
        assert!(e.write_volatile(1, 7));
        assert!(!e.write_volatile(3, 9));
        assert_eq!(v, [1, 7, 3]);
    }

    #[test]
    fn wait_for_returns_the_satisfying_value_or_gives_up() {
        let mut v = vec![0u8, 5];
        let e = view(&mut v);
        assert_eq!(e.wait_for(1, |x| x == 5, None), Some(5));
        assert_eq!(e.wait_for(2, |_| true, None), None);
        let past = Instant::now();
        assert_eq!(e.wait_for(0, |x| x == 1, Some(past)), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "leaks memory on purpose, which Miri reports")]
    fn an_allocation_frees_or_leaks_the_vectors_memory() {
        let (a, elements, len) = Allocation::from_vec(vec![7u64; 4]).unwrap();
        assert_eq!((a.len(), len), (32, 4));
        // SAFETY: the allocation owns the four elements until it is dropped below.
        assert_eq!(unsafe { elements.as_ptr().add(3).read() }, 7);
        drop(a);
        assert!(Allocation::from_vec(Vec::<u32>::new()).is_none());
        assert!(Allocation::from_vec(vec![(); 3]).is_none());
        let before = leaked_bytes();
        Allocation::from_vec(vec![0u8; 100]).unwrap().0.leak();
        assert_eq!(leaked_bytes() - before, 100);
    }
}
