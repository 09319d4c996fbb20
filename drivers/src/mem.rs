//! Reading memory the device writes behind the compiler's back.
//!
//! An RDMA WRITE from a peer lands in a registered buffer without any instruction of this process
//! storing to it, so a loop that waits for a byte to change must load it again every time: a
//! volatile load. It is taken through a raw pointer from the buffer's owner, never through a
//! reference to the element, and the element type must be valid for every bit pattern, since the
//! device may write any bytes.

use zerocopy::FromBytes;

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
}
