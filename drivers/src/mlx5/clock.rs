//! The device clock as wall-clock time: mlx5's clock-info page (`MLX5_IB_MMAP_CLOCK_INFO`), which
//! the kernel maps read-only and keeps current under a sequence count, and the conversion of a
//! CQE's timestamp (device cycles) to nanoseconds since the epoch, as `mlx5dv_ts_to_ns` does it.

use std::sync::atomic::{fence, AtomicU32, Ordering};

use super::uar::uar_mmap_offset;
use crate::chan::Channel;
use crate::error::{Error, Result, Verb};
use uverbs_uapi as uapi;

/// The mapped clock-info page.
#[derive(Debug)]
pub struct ClockPage {
    map: memmap2::MmapRaw,
}

// SAFETY: the page is read-only shared memory the kernel updates; this type only reads it, with
// atomics for the sequence count and volatile copies under it.
unsafe impl Send for ClockPage {}
// SAFETY: as above: `&ClockPage` only reads.
unsafe impl Sync for ClockPage {}

impl ClockPage {
    /// Maps version 1 of the page, if the kernel offers it (`clock_info_versions` of the context
    /// response); [`Error::Unsupported`] otherwise.
    pub fn map(chan: &Channel, resp: &uapi::mlx5_ib_alloc_ucontext_resp) -> Result<ClockPage> {
        if resp.clock_info_versions & (1 << uapi::MLX5_IB_CLOCK_INFO_V1) == 0 {
            return Err(Error::Unsupported {
                verb: Verb::ReadClock,
            });
        }
        let page = crate::sys::page_size();
        let offset = uar_mmap_offset(
            uapi::MLX5_IB_MMAP_CLOCK_INFO,
            uapi::MLX5_IB_CLOCK_INFO_V1,
            page,
        );
        let map = chan.map_read_only(page, offset)?;
        if map.len() < std::mem::size_of::<uapi::mlx5_ib_clock_info>() {
            return Err(Error::Protocol {
                verb: Verb::ReadClock,
                what: format!("a clock-info page of {} bytes", map.len()),
            });
        }
        Ok(ClockPage { map })
    }

    /// A consistent copy of the page (`mlx5dv_get_clock_info`): the sequence count is read before
    /// and after, and the copy is taken again while the kernel is updating or has updated between.
    pub fn read(&self) -> uapi::mlx5_ib_clock_info {
        let base = self.map.as_ptr();
        // SAFETY: `sign` is the page's first word, 4-byte aligned in a page-aligned mapping that
        // lives as long as `self`; the kernel writes it with atomic stores.
        let sign = unsafe { AtomicU32::from_ptr(base.cast::<u32>().cast_mut()) };
        loop {
            let before = sign.load(Ordering::Acquire);
            if before & uapi::MLX5_IB_CLOCK_INFO_KERNEL_UPDATING != 0 {
                std::hint::spin_loop();
                continue;
            }
            // SAFETY: the struct lies inside the mapping (checked in `map`), which is aligned for
            // it; a volatile copy, since the kernel may be rewriting it (the sequence count below
            // tells whether it did).
            let info = unsafe { base.cast::<uapi::mlx5_ib_clock_info>().read_volatile() };
            fence(Ordering::Acquire);
            if sign.load(Ordering::Relaxed) == before {
                return info;
            }
        }
    }
}

/// Nanoseconds since the epoch at device time `ts` (`mlx5dv_ts_to_ns`): cycles since the page's
/// reference point, scaled by its `mult` and `shift`, added to its wall-clock time; a timestamp
/// more than half the counter's range behind the reference point counts as before it.
pub fn ts_to_ns(info: &uapi::mlx5_ib_clock_info, ts: u64) -> u64 {
    let delta = ts.wrapping_sub(info.cycles) & info.mask;
    let mult = u64::from(info.mult);
    if delta > info.mask / 2 {
        let back = info.cycles.wrapping_sub(ts) & info.mask;
        info.nsec
            .wrapping_sub(back.wrapping_mul(mult).wrapping_sub(info.frac) >> info.shift)
    } else {
        info.nsec
            .wrapping_add(delta.wrapping_mul(mult).wrapping_add(info.frac) >> info.shift)
    }
}

impl crate::backend::ClockSource for ClockPage {
    /// Through the reference point as it is now (read under its sequence count, as
    /// `mlx5dv_get_clock_info` does).
    fn to_unix_nanos(&self, timestamp: u64) -> u64 {
        ts_to_ns(&self.read(), timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    #[test]
    fn converts_forward_and_backward_from_the_reference_point() {
        let info = uapi::mlx5_ib_clock_info {
            nsec: 1_000_000_000,
            cycles: 500,
            mult: 5,
            shift: 1, // 2.5 ns a cycle
            mask: (1 << 48) - 1,
            ..uapi::mlx5_ib_clock_info::new_zeroed()
        };
        assert_eq!(ts_to_ns(&info, 500), 1_000_000_000);
        assert_eq!(ts_to_ns(&info, 900), 1_000_001_000);
        assert_eq!(ts_to_ns(&info, 100), 999_999_000);
        // Across the counter's wrap: 10 cycles past the top is 10 cycles after.
        let top = uapi::mlx5_ib_clock_info {
            cycles: (1 << 48) - 4,
            ..info
        };
        assert_eq!(ts_to_ns(&top, 6), 1_000_000_025);
    }
}
