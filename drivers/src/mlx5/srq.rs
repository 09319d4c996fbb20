//! mlx5 shared receive queues: an array of WQEs in user memory, linked into a list through their
//! next segments (rdma-core's `srq.c`).
//!
//! Each WQE is a 16-byte next segment (`mlx5_wqe_srq_next_seg`: the index of the next WQE,
//! big-endian at byte 2) followed by data segments, `1 << wqe_shift` bytes in all. At creation WQE
//! `i` points to `i + 1` (the last to 0); software's `head` is the next WQE to fill and `tail` the
//! last free one, which is never handed out (so `head == tail` means full: the queue holds one WQE
//! less than it has). Posting fills the WQE at `head`, moves `head` along its next pointer and
//! stores the number of WQEs posted so far into the doorbell record. The device takes WQEs in list
//! order; a completion names the WQE by index (`wqe_counter`), whose `wr_id` is returned and which
//! goes back to the list behind `tail`. The device never writes the buffer.
//!
//! The kernel derives the same geometry from `max_wr` and `max_sge` (its `create_srq_user`), so the
//! command carries the rounded-up scatter count, as rdma-core's does.

use std::ptr::NonNull;
use std::sync::Arc;

use uverbs_uapi as uapi;
use zerocopy::byteorder::big_endian::{U16, U32};
use zerocopy::{FromZeros, IntoBytes};

use super::buf::{Dbrec, DbrecPool, DmaBuf};
use super::poller::WqKey;
use super::wqe::{DataSeg, INVALID_LKEY};
use super::{Mlx5Context, Resource};
use crate::backend::SrqBackend;
use crate::barrier;
use crate::cmd;
use crate::cmd::srq::{attr_mask, SrqCreated, SrqInit};
use crate::error::{Error, Result, Verb};
use crate::spin::SpinMutex;
use crate::ucontext::Ucontext;
use crate::wr::{PostError, RecvWr, MAX_MESSAGE};

/// Size of the next segment that starts each SRQ WQE (`struct mlx5_wqe_srq_next_seg`).
pub const NEXT_SEG_SIZE: usize = 16;
const DATA_SEG_SIZE: usize = 16;

/// The geometry of an SRQ (rdma-core's `mlx5_alloc_srq_buf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SrqSizes {
    /// WQEs in the buffer (a power of two); one fewer can be posted.
    pub wqe_cnt: u32,
    /// log2 of a WQE's size.
    pub wqe_shift: u32,
    /// Data segments per WQE.
    pub max_gs: u32,
}

impl SrqSizes {
    /// The geometry for `max_wr` requests of `max_sge` entries, within the context's limits
    /// (`max_srq_recv_wr`, `max_rq_desc_sz`).
    pub fn new(
        max_wr: u32,
        max_sge: u32,
        max_srq_recv_wr: u32,
        max_rq_desc_sz: u32,
    ) -> Result<Self> {
        let bad = |what: String| Error::InvalidArgument {
            verb: Verb::CreateSrq,
            what,
        };
        if max_wr > max_srq_recv_wr || max_wr >= 1 << 16 {
            return Err(bad(format!(
                "{max_wr} work requests (at most {})",
                max_srq_recv_wr.min((1 << 16) - 1)
            )));
        }
        if max_sge > max_rq_desc_sz / DATA_SEG_SIZE as u32 {
            return Err(bad(format!(
                "{max_sge} scatter entries (at most {})",
                max_rq_desc_sz / DATA_SEG_SIZE as u32
            )));
        }
        let size = (NEXT_SEG_SIZE + DATA_SEG_SIZE * max_sge as usize)
            .max(32)
            .next_power_of_two();
        if size > max_rq_desc_sz as usize {
            return Err(bad(format!(
                "WQEs of {size} bytes for {max_sge} scatter entries (at most {max_rq_desc_sz})"
            )));
        }
        Ok(SrqSizes {
            wqe_cnt: (max_wr + 1).next_power_of_two(),
            wqe_shift: size.trailing_zeros(),
            max_gs: ((size - NEXT_SEG_SIZE) / DATA_SEG_SIZE) as u32,
        })
    }

    /// Requests that can be posted at once.
    pub fn capacity(&self) -> u32 {
        self.wqe_cnt - 1
    }
}

/// The driver data of `CREATE_SRQ`.
pub fn create_srq_cmd(buf_addr: u64, db_addr: u64, uidx: u32) -> uapi::mlx5_ib_create_srq {
    let mut cmd = uapi::mlx5_ib_create_srq::new_zeroed();
    cmd.buf_addr = buf_addr;
    cmd.db_addr = db_addr;
    cmd.uidx = uidx;
    cmd
}

#[derive(Debug)]
struct SrqState {
    head: u32,
    tail: u32,
    /// WQEs posted since creation (the doorbell record's value).
    counter: u32,
    wrid: Box<[u64]>,
    /// Which WQEs are posted and not completed (a completion for any other is refused).
    posted: Box<[bool]>,
}

/// What an SRQ shares with the CQs that complete its WQEs and the QPs that take them.
#[derive(Debug)]
pub(crate) struct SrqShared {
    sizes: SrqSizes,
    ring: NonNull<u8>,
    state: SpinMutex<SrqState>,
    dbrec: Dbrec,
    _buf: DmaBuf,
}

// SAFETY: `ring` points into `_buf`, owned by this value; the WQEs are written only under `state`'s
// lock, and the device only reads them.
unsafe impl Send for SrqShared {}
// SAFETY: as above.
unsafe impl Sync for SrqShared {}

impl SrqShared {
    fn lock(&self) -> crate::spin::SpinGuard<'_, SrqState> {
        self.state.lock()
    }

    fn wqe(&self, index: u32) -> *mut u8 {
        debug_assert!(index < self.sizes.wqe_cnt);
        // SAFETY: index < wqe_cnt, and the buffer holds wqe_cnt WQEs of 1 << wqe_shift bytes.
        unsafe {
            self.ring
                .as_ptr()
                .add((index as usize) << self.sizes.wqe_shift)
        }
    }

    fn set_next(&self, index: u32, next: u32) {
        let bytes = U16::new(next as u16).to_bytes();
        // SAFETY: bytes 2..4 of WQE `index` (in the buffer); written under the state lock, and only
        // for the tail WQE or at creation, which the device does not read (it follows the list only
        // through posted WQEs).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.wqe(index).add(2), 2) };
    }

    fn next(&self, index: u32) -> u32 {
        let mut bytes = [0u8; 2];
        // SAFETY: bytes 2..4 of WQE `index`, read under the state lock; only this side writes them.
        unsafe { std::ptr::copy_nonoverlapping(self.wqe(index).add(2), bytes.as_mut_ptr(), 2) };
        u32::from(U16::from_bytes(bytes).get())
    }

    /// Puts WQE `index` back on the free list (rdma-core's `mlx5_free_srq_wqe`), returning its
    /// `wr_id`; `None` if it is not posted.
    pub(crate) fn complete(&self, index: u16) -> Option<u64> {
        let index = u32::from(index);
        if index >= self.sizes.wqe_cnt {
            return None;
        }
        let mut st = self.lock();
        if !std::mem::replace(&mut st.posted[index as usize], false) {
            return None;
        }
        self.set_next(st.tail, index);
        st.tail = index;
        Some(st.wrid[index as usize])
    }

    fn post<'a>(&self, wrs: &[impl AsRef<RecvWr<'a>>]) -> std::result::Result<(), PostError> {
        let mut st = self.lock();
        let mut result = Ok(());
        let mut posted = 0u32;
        for (index, wr) in wrs.iter().enumerate() {
            let wr = wr.as_ref();
            let fail = |error: Error| PostError { index, error };
            let bad = |what: String| {
                fail(Error::InvalidArgument {
                    verb: Verb::PostSrqRecv,
                    what,
                })
            };
            if wr.sges.len() > self.sizes.max_gs as usize {
                result = Err(bad(format!(
                    "{} scatter entries (this queue takes {})",
                    wr.sges.len(),
                    self.sizes.max_gs
                )));
                break;
            }
            let length: u64 = wr.sges.iter().map(|s| u64::from(s.length)).sum();
            if length > MAX_MESSAGE {
                result = Err(bad(format!(
                    "{length} bytes of receive buffers (at most {MAX_MESSAGE})"
                )));
                break;
            }
            if st.head == st.tail {
                result = Err(fail(Error::QueueFull {
                    verb: Verb::PostSrqRecv,
                    capacity: self.sizes.capacity(),
                }));
                break;
            }
            let at = st.head;
            let wqe = self.wqe(at);
            // Entries of no bytes are left out, as on the receive and send queues: the device reads
            // a byte count of 0 as 2 GiB.
            let mut used = 0;
            for (i, sge) in wr.sges.iter().filter(|s| s.length != 0).enumerate() {
                used = i + 1;
                let seg = DataSeg::new(sge.length, sge.lkey, sge.addr);
                // SAFETY: data segment i < max_gs of a free WQE (between head and tail: neither
                // posted nor read by the device), inside the buffer.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        seg.as_bytes().as_ptr(),
                        wqe.add(NEXT_SEG_SIZE + i * DATA_SEG_SIZE),
                        DATA_SEG_SIZE,
                    )
                };
            }
            if used < self.sizes.max_gs as usize {
                let end = DataSeg::new(0, INVALID_LKEY, 0);
                // SAFETY: as above, the segment after the last one written, still < max_gs.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        end.as_bytes().as_ptr(),
                        wqe.add(NEXT_SEG_SIZE + used * DATA_SEG_SIZE),
                        DATA_SEG_SIZE,
                    )
                };
            }
            st.wrid[at as usize] = wr.wr_id;
            st.posted[at as usize] = true;
            st.head = self.next(at);
            posted += 1;
        }
        if posted > 0 {
            st.counter = st.counter.wrapping_add(posted);
            barrier::udma_to_device_barrier();
            // rdma-core's counter is 16 bits, as the device's WQE counter is.
            self.dbrec.store(0, U32::new(st.counter & 0xffff));
        }
        result
    }
}

/// An mlx5 shared receive queue.
#[derive(Debug)]
pub struct Mlx5Srq {
    ctx: Arc<Ucontext>,
    m: Arc<Mlx5Context>,
    created: SrqCreated,
    key: WqKey,
    shared: Arc<SrqShared>,
}

impl Mlx5Srq {
    /// Creates a shared receive queue for `init.max_wr` requests of `init.max_sge` entries.
    pub fn create(m: &Arc<Mlx5Context>, init: &SrqInit) -> Result<Mlx5Srq> {
        let ctx = m.ucontext();
        let limits = m.limits();
        let sizes = SrqSizes::new(
            init.max_wr,
            init.max_sge,
            limits.max_srq_recv_wr,
            limits.max_rq_desc_sz,
        )?;
        let buf = DmaBuf::new((sizes.wqe_cnt as usize) << sizes.wqe_shift, Verb::CreateSrq)?;
        let ring = NonNull::new(buf.as_ptr()).expect("a mapping is not null");
        let dbrec = DbrecPool::alloc(m.dbrecs())?;
        let cnt = sizes.wqe_cnt as usize;
        let shared = SrqShared {
            sizes,
            ring,
            state: SpinMutex::new(SrqState {
                head: 0,
                tail: sizes.wqe_cnt - 1,
                counter: 0,
                wrid: vec![0; cnt].into_boxed_slice(),
                posted: vec![false; cnt].into_boxed_slice(),
            }),
            dbrec,
            _buf: buf,
        };
        for i in 0..sizes.wqe_cnt {
            shared.set_next(i, (i + 1) & (sizes.wqe_cnt - 1));
        }
        let uidx = if m.cqe_version() == 1 {
            Some(m.resources.reserve(Verb::CreateSrq)?)
        } else {
            None
        };
        let release = |m: &Mlx5Context| {
            if let Some(u) = uidx {
                m.resources.remove(WqKey::UserIndex(u));
            }
        };
        let cmd = create_srq_cmd(
            shared._buf.addr(),
            shared.dbrec.addr(),
            uidx.unwrap_or(0xff_ffff),
        );
        let mut resp = uapi::mlx5_ib_create_srq_resp::new_zeroed();
        let kernel_init = SrqInit {
            max_sge: sizes.max_gs,
            ..*init
        };
        // SAFETY: `cmd` names `shared`'s buffer and doorbell record, allocated for this SRQ's
        // device
        // alone; `Mlx5Srq`'s `Drop` frees them only after `destroy_srq` succeeded (else leaks them),
        // and the error paths below do the same.
        let created = unsafe {
            cmd::srq::create_srq_with_udata(ctx, &kernel_init, cmd.as_bytes(), resp.as_mut_bytes())
        };
        let mut created = match created {
            Ok(c) => c,
            Err(e) => {
                release(m);
                if e.may_have_run() {
                    // A model daemon may hold the ring and the doorbell record: never freed.
                    std::mem::forget(shared);
                }
                return Err(e);
            }
        };
        if created.srqn == 0 {
            created.srqn = resp.srqn;
        }
        created.max_wr = sizes.capacity();
        created.max_sge = sizes.max_gs;
        let shared = Arc::new(shared);
        let key = match uidx {
            Some(u) => WqKey::UserIndex(u),
            None => WqKey::Srqn(created.srqn),
        };
        m.resources.insert(key, Resource::Srq(Arc::clone(&shared)));
        Ok(Mlx5Srq {
            ctx: Arc::clone(ctx),
            m: Arc::clone(m),
            created,
            key,
            shared,
        })
    }

    pub(crate) fn shared(&self) -> &Arc<SrqShared> {
        &self.shared
    }
}

impl SrqBackend for Mlx5Srq {
    fn handle(&self) -> u32 {
        self.created.handle
    }

    fn ucontext(&self) -> &Arc<Ucontext> {
        &self.ctx
    }

    fn srqn(&self) -> u32 {
        self.created.srqn
    }

    /// Receive work requests the queue really holds (its WQEs less one).
    fn capacity(&self) -> u32 {
        self.shared.sizes.capacity()
    }

    fn max_sge(&self) -> u32 {
        self.shared.sizes.max_gs
    }

    /// Sets the limit (`MODIFY_SRQ` with `IB_SRQ_LIMIT`): once fewer than `limit` receives remain
    /// posted, the device reports `SRQ_LIMIT_REACHED` and the limit goes back to 0. `limit` 0
    /// disarms; a limit above the capacity is refused before the kernel sees it.
    fn set_limit(&self, limit: u32) -> Result<()> {
        if limit > self.capacity() {
            return Err(Error::InvalidArgument {
                verb: Verb::ModifySrq,
                what: format!(
                    "limit {limit} above the queue's capacity of {}",
                    self.capacity()
                ),
            });
        }
        // SAFETY: no driver data: the command names no user memory.
        unsafe {
            cmd::srq::modify_srq(
                &self.ctx,
                self.created.handle,
                attr_mask::LIMIT,
                0,
                limit,
                &[],
            )
        }
    }

    /// `QUERY_SRQ`: (max_wr, max_sge, limit) as the kernel has them.
    fn query(&self) -> Result<(u32, u32, u32)> {
        let r = cmd::srq::query_srq(&self.ctx, self.created.handle)?;
        Ok((r.max_wr, r.max_sge, r.srq_limit))
    }

    /// Posts receive work requests: no system call. The first request that is invalid (too many
    /// entries) or finds the queue full stops the post: it and those after it are not posted,
    /// those before it are ([`PostError::index`]).
    ///
    /// # Safety
    /// The device writes each entry's memory (through its memory region) until the receive
    /// completes: nothing may read or write it, or free it, before the completion has been polled.
    #[inline]
    unsafe fn post_recv<'a, W: AsRef<RecvWr<'a>>>(
        &self,
        wrs: &[W],
    ) -> std::result::Result<(), PostError> {
        self.shared.post(wrs)
    }
}

impl Drop for Mlx5Srq {
    fn drop(&mut self) {
        // SAFETY: the handle is this object's own (its destructor runs once), nothing else holds
        // it, and it is not named again.
        if let Err(e) = unsafe { cmd::srq::destroy_srq(&self.ctx, self.created.handle) } {
            crate::report_drop_error("shared receive queue", &e);
            // The device may still read the WQEs and the doorbell record: keep them.
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        self.m
            .resources
            .remove_own(self.key, &Resource::Srq(Arc::clone(&self.shared)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry() {
        let s = SrqSizes::new(100, 1, 1 << 15, 512).unwrap();
        assert_eq!(
            (s.wqe_cnt, s.wqe_shift, s.max_gs, s.capacity()),
            (128, 5, 1, 127)
        );
        let s = SrqSizes::new(127, 3, 1 << 15, 512).unwrap();
        assert_eq!((s.wqe_cnt, s.wqe_shift, s.max_gs), (128, 6, 3));
        let s = SrqSizes::new(1, 0, 1 << 15, 512).unwrap();
        assert_eq!((s.wqe_cnt, s.wqe_shift, s.max_gs), (2, 5, 1));
        let s = SrqSizes::new(4, 8, 1 << 15, 512).unwrap();
        assert_eq!((s.wqe_cnt, s.wqe_shift, s.max_gs), (8, 8, 15));
        assert!(SrqSizes::new(1 << 15, 1, 1 << 14, 512).is_err());
        assert!(SrqSizes::new(4, 33, 1 << 15, 512).is_err());
        assert!(
            SrqSizes::new(4, 32, 1 << 15, 512).is_err(),
            "16 + 512 bytes"
        );
    }

    #[test]
    fn udata_bytes() {
        let b = create_srq_cmd(0x7000, 0x8040, 9);
        let b = b.as_bytes();
        assert_eq!(b.len(), 32);
        assert_eq!(&b[0..8], &0x7000u64.to_ne_bytes());
        assert_eq!(&b[8..16], &0x8040u64.to_ne_bytes());
        assert_eq!(&b[16..24], &[0u8; 8]);
        assert_eq!(&b[24..28], &9u32.to_ne_bytes());
    }

    fn shared(max_wr: u32, max_sge: u32) -> SrqShared {
        let sizes = SrqSizes::new(max_wr, max_sge, 1 << 15, 512).unwrap();
        let buf =
            DmaBuf::new((sizes.wqe_cnt as usize) << sizes.wqe_shift, Verb::CreateSrq).unwrap();
        let pool = DbrecPool::new(64);
        let cnt = sizes.wqe_cnt as usize;
        let s = SrqShared {
            sizes,
            ring: NonNull::new(buf.as_ptr()).unwrap(),
            state: SpinMutex::new(SrqState {
                head: 0,
                tail: sizes.wqe_cnt - 1,
                counter: 0,
                wrid: vec![0; cnt].into_boxed_slice(),
                posted: vec![false; cnt].into_boxed_slice(),
            }),
            dbrec: pool.alloc().unwrap(),
            _buf: buf,
        };
        for i in 0..sizes.wqe_cnt {
            s.set_next(i, (i + 1) & (sizes.wqe_cnt - 1));
        }
        s
    }

    fn wqe_bytes(s: &SrqShared, i: u32) -> Vec<u8> {
        let len = 1usize << s.sizes.wqe_shift;
        let mut v = vec![0u8; len];
        // SAFETY: WQE i lies in the buffer; the test is the only thread.
        unsafe { std::ptr::copy_nonoverlapping(s.wqe(i), v.as_mut_ptr(), len) };
        v
    }

    #[test]
    #[cfg_attr(miri, ignore = "DmaBuf: madvise(2) is not supported by Miri")]
    fn free_list_post_complete_and_full() {
        let s = shared(3, 2);
        assert_eq!(s.sizes.capacity(), 3);
        let sges = [crate::wr::Sge {
            addr: 0x1000,
            length: 64,
            lkey: 7,
        }];
        let wr = |id| RecvWr {
            wr_id: id,
            sges: &sges,
        };
        s.post(&[wr(10), wr(11), wr(12)]).unwrap();
        assert_eq!(s.dbrec.load(0).get(), 3);
        let err = s.post(&[wr(13)]).unwrap_err();
        assert!(matches!(err.error, Error::QueueFull { capacity: 3, .. }));
        // WQE 0: next 1, one data segment, then the terminator.
        let b = wqe_bytes(&s, 0);
        assert_eq!(&b[2..4], &[0, 1]);
        assert_eq!(&b[16..32], DataSeg::new(64, 7, 0x1000).as_bytes());
        assert_eq!(&b[32..48], DataSeg::new(0, INVALID_LKEY, 0).as_bytes());
        // Completing out of order puts WQEs back behind the tail.
        assert_eq!(s.complete(1), Some(11));
        assert_eq!(s.complete(1), None, "not posted any more");
        assert_eq!(s.complete(9), None, "out of range");
        s.post(&[wr(14)]).unwrap();
        // WQE 3 (the old tail) was filled; head moved to 1.
        assert_eq!(s.lock().head, 1);
        assert_eq!(s.lock().wrid[3], 14);
        assert!(s.post(&[wr(15)]).is_err(), "full again");
        assert_eq!(s.complete(0), Some(10));
        assert_eq!(s.complete(3), Some(14));
        s.post(&[wr(16), wr(17)]).unwrap();
        assert_eq!(s.dbrec.load(0).get(), 6);
        // Too many entries: refused first.
        let many = [sges[0]; 4];
        let err = s
            .post(&[RecvWr {
                wr_id: 1,
                sges: &many,
            }])
            .unwrap_err();
        assert!(matches!(err.error, Error::InvalidArgument { .. }));
    }
}
