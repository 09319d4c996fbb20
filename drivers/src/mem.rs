//! Memory the device reads and writes behind the compiler's back.
//!
//! An RDMA WRITE from a peer lands in a registered buffer without any instruction of this process
//! storing to it, so a loop that waits for a byte to change must load it again every time: a
//! volatile load. It is taken through a raw pointer from the buffer's owner, never through a
//! reference to the element, and the element type must be valid for every bit pattern, since the
//! device may write any bytes. [`wait_for`] adds what the payload needs once the flag is seen: the
//! from-device barrier rdma-core places between reading a completion's owner bit and the rest of
//! it, so that no later read of the buffer is satisfied before the flag's.
//!
//! [`Allocation`] is the other half: memory the kernel or the device may still touch after its
//! owner is gone (a registration the kernel refused to release) is taken over here and leaked, never
//! returned to the allocator, and [`leaked_bytes`] counts it.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use zerocopy::FromBytes;

use crate::barrier;

/// `buf[index]`, loaded with a volatile read (`None` if `index` is out of bounds).
///
/// `T: FromBytes`: whatever bytes the device wrote there form a valid `T`.
// `&Vec<T>`, not `&[T]`: a slice argument would assert (to the aliasing model) that no element
// changes during the call, which is exactly what the device may do; the vector's own borrow covers
// only its header.
#[allow(clippy::ptr_arg)]
#[inline]
pub fn read_volatile<T: FromBytes + Copy>(buf: &Vec<T>, index: usize) -> Option<T> {
    if index >= buf.len() {
        return None;
    }
    // SAFETY: `index` is in bounds, so the pointer is valid for reading one `T`, aligned (a `Vec`'s
    // elements are) and inside a live allocation the borrow of `buf` keeps alive; any bytes there
    // are a valid `T` (`FromBytes`). `as_ptr` makes no intermediate reference to the elements.
    Some(unsafe { buf.as_ptr().add(index).read_volatile() })
}

/// Stores `value` at `buf[index]` with a volatile write, without borrowing the other elements
/// (which the device may be writing); `false` if `index` is out of bounds.
#[allow(clippy::ptr_arg)] // `&mut Vec<T>`: see `read_volatile`.
#[inline]
pub fn write_volatile<T: Copy>(buf: &mut Vec<T>, index: usize, value: T) -> bool {
    if index >= buf.len() {
        return false;
    }
    // SAFETY: in bounds and aligned as above; the exclusive borrow of the vector (its header)
    // means no other code of this process holds a reference into the elements, and `as_mut_ptr`
    // creates none. `T: Copy` has no destructor to skip.
    unsafe { buf.as_mut_ptr().add(index).write_volatile(value) };
    true
}

/// Waits until `done(buf[index])` holds, loading the element afresh each time (volatile), then
/// issues the from-device barrier and returns the element: reads of the buffer after this call see
/// at least what the device had written when it wrote the element that satisfied `done` (a peer that
/// writes its payload first and a flag last, as one RDMA WRITE does in address order on RC, or as
/// a second write does, can be read this way). `None` if `index` is out of bounds or `deadline`
/// passes first.
#[allow(clippy::ptr_arg)] // `&Vec<T>`: see `read_volatile`.
#[inline]
pub fn wait_for<T: FromBytes + Copy>(
    buf: &Vec<T>,
    index: usize,
    mut done: impl FnMut(T) -> bool,
    deadline: Option<Instant>,
) -> Option<T> {
    let mut spins = 0u32;
    loop {
        let v = read_volatile(buf, index)?;
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

static LEAKED: AtomicU64 = AtomicU64::new(0);

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
    /// Takes over `v`'s heap memory (its elements are dropped in place first: registered memory holds
    /// `Copy` types, which have no destructor). `None` for a vector without heap memory.
    pub fn from_vec<T>(mut v: Vec<T>) -> Option<Allocation> {
        v.clear();
        let mut v = std::mem::ManuallyDrop::new(v);
        let layout = Layout::array::<T>(v.capacity()).ok()?;
        if layout.size() == 0 {
            return None;
        }
        Some(Allocation {
            ptr: NonNull::new(v.as_mut_ptr().cast())?,
            layout,
        })
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
        LEAKED.fetch_add(self.layout.size() as u64, Ordering::Relaxed);
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

    #[test]
    fn reads_in_bounds_only() {
        let v = vec![1u32, 2, 3];
        assert_eq!(read_volatile(&v, 0), Some(1));
        assert_eq!(read_volatile(&v, 2), Some(3));
        assert_eq!(read_volatile(&v, 3), None);
        assert_eq!(read_volatile(&Vec::<u64>::new(), 0), None);
    }

    #[test]
    fn writes_in_bounds_only() {
        let mut v = vec![1u16, 2, 3];
        assert!(write_volatile(&mut v, 1, 7));
        assert!(!write_volatile(&mut v, 3, 9));
        assert_eq!(v, [1, 7, 3]);
    }

    #[test]
    fn wait_for_returns_the_satisfying_value_or_gives_up() {
        let v = vec![0u8, 5];
        assert_eq!(wait_for(&v, 1, |x| x == 5, None), Some(5));
        assert_eq!(wait_for(&v, 2, |_| true, None), None);
        let past = Instant::now();
        assert_eq!(wait_for(&v, 0, |x| x == 1, Some(past)), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "leaks memory on purpose, which Miri reports")]
    fn an_allocation_frees_or_leaks_the_vectors_memory() {
        let a = Allocation::from_vec(vec![7u64; 4]).unwrap();
        assert_eq!(a.len(), 32);
        drop(a);
        assert!(Allocation::from_vec(Vec::<u32>::new()).is_none());
        assert!(Allocation::from_vec(vec![(); 3]).is_none());
        let before = leaked_bytes();
        Allocation::from_vec(vec![0u8; 100]).unwrap().leak();
        assert_eq!(leaked_bytes() - before, 100);
    }
}
