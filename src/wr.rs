//! Work requests beyond `ibverbs`' single SEND: every opcode rxe carries, the send flags, scatter/
//! gather lists and lists of requests posted with one doorbell.
//!
//! Requests are plain values built without allocation ([`SendRequest`], [`ReceiveRequest`]) over
//! [`Sge`]s taken from memory regions; [`crate::QueuePair::post_send_list`] posts a slice of them.

use std::fmt;
use std::io;
use std::sync::Arc;

use uverbs_drivers::verbs::{Ah, Mr, UdAddress};
use uverbs_drivers::wr::{self as dwr, opcode, send_flags};

pub use uverbs_drivers::wr::Sge;

use crate::ah::AddressHandle;
use crate::ibv::ibv_access_flags;
use crate::mr::{MemoryRegion, MrRange};
use crate::mw::MemoryWindow;
use uverbs_drivers::error::{Error, Verb};

/// The destination QPN of a datagram sent to a multicast group: every queue pair attached to the
/// group ([`crate::QueuePair::attach_mcast`]) with the datagram's Q_Key receives it.
pub const MULTICAST_QPN: u32 = dwr::MULTICAST_QPN;

/// Where a peer's memory is: address, key and length, to target RDMA reads, writes and atomics.
/// Send it to the peer over any channel (it serializes with feature `serde`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RemoteMemory {
    /// The remote virtual address.
    pub addr: u64,
    /// The remote key.
    pub rkey: u32,
    /// How many bytes from `addr` the region covers.
    pub len: u64,
}

impl RemoteMemory {
    /// The part of this memory `offset` bytes in, or `None` if that is past the end, or if its
    /// address would overflow (the values come from a peer: nothing here trusts them with
    /// unchecked arithmetic).
    pub fn offset(&self, offset: u64) -> Option<RemoteMemory> {
        Some(RemoteMemory {
            addr: self.addr.checked_add(offset)?,
            rkey: self.rkey,
            len: self.len.checked_sub(offset)?,
        })
    }
}

/// A send work request (`ibv_send_wr`), built by one of the constructors and adjusted by the flag
/// methods. Requests are signaled (produce a completion) unless [`SendRequest::unsignaled`] is used
/// on a queue pair built with `set_sq_sig_all(false)`.
#[derive(Clone, Copy)]
pub struct SendRequest<'a> {
    pub(crate) wr: dwr::SendWr<'a>,
    /// The address handle of a UD send, borrowed so that it outlives the post.
    pub(crate) ah: Option<&'a AddressHandle>,
    /// The window a BIND_MW binds and the region it binds it to: the window's key advances, and it
    /// keeps the region's registration, when the request is posted.
    pub(crate) mw: Option<(&'a MemoryWindow, &'a Arc<Mr>)>,
}

impl<'a> SendRequest<'a> {
    fn new(wr_id: u64, opcode: u32, list: &'a [Sge]) -> SendRequest<'a> {
        let mut wr = dwr::SendWr::send(wr_id, list);
        wr.opcode = opcode;
        SendRequest {
            wr,
            ah: None,
            mw: None,
        }
    }

    /// SEND the concatenation of `sges` to the peer's next receive.
    pub fn send(wr_id: u64, sges: &'a [Sge]) -> SendRequest<'a> {
        SendRequest::new(wr_id, opcode::SEND, sges)
    }

    /// SEND with 32 bits of immediate data (given in host order; it travels in network order and
    /// the receiver's `ibv_wc::imm_data` holds it as it travelled).
    pub fn send_with_imm(wr_id: u64, sges: &'a [Sge], imm: u32) -> SendRequest<'a> {
        let mut r = SendRequest::new(wr_id, opcode::SEND_WITH_IMM, sges);
        r.wr.imm_or_inv = imm.to_be();
        r
    }

    /// SEND `data` inline: it is copied into the queue during the post, so it need not be registered
    /// and is reusable as soon as the post returns. At most the queue pair's `max_inline_data` bytes.
    pub fn send_inline(wr_id: u64, data: &'a [u8]) -> SendRequest<'a> {
        let mut r = SendRequest::new(wr_id, opcode::SEND, &[]);
        r.wr.inline = data;
        r.wr.flags |= send_flags::INLINE;
        r
    }

    /// SEND the concatenation of `sges` as one datagram on a UD queue pair: to queue pair
    /// `remote_qpn` at `ah` ([`MULTICAST_QPN`] with a multicast address handle), carrying Q_Key
    /// `qkey`, which must equal the receiving queue pair's or the datagram is dropped. The receiver
    /// finds the 40-byte GRH area first in its buffer, then the payload.
    ///
    /// A datagram carries at most the port's MTU: a longer one is refused at post time (the
    /// kernel would complete it successfully without sending anything). `ah` must also stay alive
    /// until the send's completion has been polled.
    pub fn send_ud(
        wr_id: u64,
        sges: &'a [Sge],
        ah: &'a AddressHandle,
        remote_qpn: u32,
        qkey: u32,
    ) -> SendRequest<'a> {
        SendRequest::new(wr_id, opcode::SEND, sges).ud(ah, remote_qpn, qkey)
    }

    /// [`SendRequest::send_ud`] with 32 bits of immediate data (host order, as in
    /// [`SendRequest::send_with_imm`]).
    pub fn send_ud_with_imm(
        wr_id: u64,
        sges: &'a [Sge],
        ah: &'a AddressHandle,
        remote_qpn: u32,
        qkey: u32,
        imm: u32,
    ) -> SendRequest<'a> {
        SendRequest::send_with_imm(wr_id, sges, imm).ud(ah, remote_qpn, qkey)
    }

    /// [`SendRequest::send_ud`] of `data` copied inline (see [`SendRequest::send_inline`]).
    pub fn send_ud_inline(
        wr_id: u64,
        data: &'a [u8],
        ah: &'a AddressHandle,
        remote_qpn: u32,
        qkey: u32,
    ) -> SendRequest<'a> {
        SendRequest::send_inline(wr_id, data).ud(ah, remote_qpn, qkey)
    }

    /// This SEND with 32 bits of immediate data (host order), inline or not.
    pub(crate) fn with_imm(mut self, imm: u32) -> SendRequest<'a> {
        self.wr.opcode = opcode::SEND_WITH_IMM;
        self.wr.imm_or_inv = imm.to_be();
        self
    }

    /// This RDMA WRITE with 32 bits of immediate data (host order), inline or not.
    pub(crate) fn with_write_imm(mut self, imm: u32) -> SendRequest<'a> {
        self.wr.opcode = opcode::RDMA_WRITE_WITH_IMM;
        self.wr.imm_or_inv = imm.to_be();
        self
    }

    /// This request as a datagram to `remote_qpn` at `ah` (also the batches' [`crate::SendOp::to`]).
    pub(crate) fn ud(
        mut self,
        ah: &'a AddressHandle,
        remote_qpn: u32,
        qkey: u32,
    ) -> SendRequest<'a> {
        self.wr.ud = Some(dwr::UdDest {
            remote_qpn,
            remote_qkey: qkey,
        });
        self.ah = Some(ah);
        self
    }

    /// RDMA WRITE `sges` to `remote`.
    pub fn rdma_write(wr_id: u64, sges: &'a [Sge], remote: RemoteMemory) -> SendRequest<'a> {
        SendRequest::new(wr_id, opcode::RDMA_WRITE, sges).remote(remote)
    }

    /// RDMA WRITE with immediate data: the write, then a completion on the peer carrying `imm` (and
    /// consuming one of its receives).
    pub fn rdma_write_with_imm(
        wr_id: u64,
        sges: &'a [Sge],
        remote: RemoteMemory,
        imm: u32,
    ) -> SendRequest<'a> {
        let mut r = SendRequest::new(wr_id, opcode::RDMA_WRITE_WITH_IMM, sges).remote(remote);
        r.wr.imm_or_inv = imm.to_be();
        r
    }

    /// RDMA WRITE `data` inline to `remote`.
    pub fn rdma_write_inline(wr_id: u64, data: &'a [u8], remote: RemoteMemory) -> SendRequest<'a> {
        let mut r = SendRequest::new(wr_id, opcode::RDMA_WRITE, &[]).remote(remote);
        r.wr.inline = data;
        r.wr.flags |= send_flags::INLINE;
        r
    }

    /// RDMA READ from `remote` into `sges`.
    pub fn rdma_read(wr_id: u64, sges: &'a [Sge], remote: RemoteMemory) -> SendRequest<'a> {
        SendRequest::new(wr_id, opcode::RDMA_READ, sges).remote(remote)
    }

    /// Atomic compare-and-swap of the 8 bytes at `remote` (8-byte aligned): if they equal `compare`
    /// they become `swap`; the original value lands in `sge` (8 bytes).
    pub fn compare_and_swap(
        wr_id: u64,
        sge: &'a [Sge; 1],
        remote: RemoteMemory,
        compare: u64,
        swap: u64,
    ) -> SendRequest<'a> {
        let mut r = SendRequest::new(wr_id, opcode::ATOMIC_CMP_AND_SWP, sge).remote(remote);
        r.wr.compare_add = compare;
        r.wr.swap = swap;
        r
    }

    /// Atomic fetch-and-add of `add` to the 8 bytes at `remote` (8-byte aligned); the original value
    /// lands in `sge` (8 bytes).
    pub fn fetch_and_add(
        wr_id: u64,
        sge: &'a [Sge; 1],
        remote: RemoteMemory,
        add: u64,
    ) -> SendRequest<'a> {
        let mut r = SendRequest::new(wr_id, opcode::ATOMIC_FETCH_AND_ADD, sge).remote(remote);
        r.wr.compare_add = add;
        r
    }

    /// BIND_MW: binds type 2 window `mw` to `range` (in elements) of `mr`, granting the queue
    /// pair's peer `access` (`IBV_ACCESS_REMOTE_READ`, `_WRITE`, `_ATOMIC`) there. Returns the
    /// request and the window as the peer targets it: the range's address and length under the
    /// window's new rkey (the window's index with the next 8-bit key). Post it on a queue pair (RC
    /// or UC) of the window's protection domain; once posted, [`MemoryWindow::rkey`] is the new
    /// key. The completion is `IBV_WC_BIND_MW`.
    ///
    /// Refused here (`InvalidArgument`) rather than by an error completion: a range outside the
    /// region or empty, a region of another protection domain or registered without
    /// `IBV_ACCESS_MW_BIND`, access other than remote read, write and atomic, and remote write or
    /// atomic access to a region without `IBV_ACCESS_LOCAL_WRITE`. A window that is bound already
    /// must be invalidated first: binding it again completes in error.
    pub fn bind_mw<T, R: MrRange>(
        wr_id: u64,
        mw: &'a MemoryWindow,
        mr: &'a MemoryRegion<T>,
        range: R,
        access: ibv_access_flags,
    ) -> io::Result<(SendRequest<'a>, RemoteMemory)> {
        let bad = |what: &str| -> io::Error {
            Error::InvalidArgument {
                verb: Verb::PostSend,
                what: format!("BIND_MW: {what}"),
            }
            .into()
        };
        let remote_access = ibv_access_flags::IBV_ACCESS_REMOTE_READ
            | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC;
        let writes =
            ibv_access_flags::IBV_ACCESS_REMOTE_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC;
        let (start, end) = range
            .bounds(mr.len())
            .ok_or_else(|| bad("the range is not inside the memory region"))?;
        let size = std::mem::size_of::<T>() as u64;
        let length = (end - start) as u64 * size;
        if length == 0 {
            return Err(bad("a type 2 window cannot be bound to an empty range"));
        }
        if !Arc::ptr_eq(mw.pd_inner(), mr.pd()) {
            return Err(bad(
                "the window and the region belong to different protection domains",
            ));
        }
        if (mr.access() & ibv_access_flags::IBV_ACCESS_MW_BIND).0 == 0 {
            return Err(bad("the region was registered without IBV_ACCESS_MW_BIND"));
        }
        if access.0 & !remote_access.0 != 0 {
            return Err(bad(
                "a window grants remote read, write and atomic access only",
            ));
        }
        if (access & writes).0 != 0
            && (mr.access() & ibv_access_flags::IBV_ACCESS_LOCAL_WRITE).0 == 0
        {
            return Err(bad(
                "remote write or atomic access needs a region with IBV_ACCESS_LOCAL_WRITE",
            ));
        }
        // The window is bound in the region's IOVA space, where peers address it (F35: the
        // memory's own address bound a different part of a region made with another IOVA, or
        // none). Registration refused regions whose IOVA range passes 2^64 (F21).
        let addr = mr
            .iova()
            .checked_add(start as u64 * size)
            .ok_or_else(|| bad("the range passes the end of the region's IOVA space"))?;
        let new_rkey = mw.next_rkey();
        let mut r = SendRequest::new(wr_id, opcode::BIND_MW, &[]);
        r.wr.bind = Some(dwr::MwBind {
            mw_rkey: mw.rkey(),
            new_rkey,
            mr_lkey: mr.lkey(),
            addr,
            length,
            access: access.0,
        });
        r.mw = Some((mw, mr.registration()));
        let remote = RemoteMemory {
            addr,
            rkey: new_rkey,
            len: length,
        };
        Ok((r, remote))
    }

    /// LOCAL_INV: invalidates the memory window whose rkey is `rkey` (bound by this queue pair),
    /// so that peers' accesses through it fail; the completion is `IBV_WC_LOCAL_INV`. On rxe only
    /// type 2 windows can be invalidated: the rkey of a memory region (registered from user space)
    /// makes the request complete in error.
    pub fn local_invalidate(wr_id: u64, rkey: u32) -> SendRequest<'a> {
        let mut r = SendRequest::new(wr_id, opcode::LOCAL_INV, &[]);
        r.wr.imm_or_inv = rkey;
        r
    }

    /// SEND with invalidate: SEND `sges` to the peer's next receive and invalidate `rkey` there, a
    /// type 2 window the peer bound on this connection (RC and UC). The receive completion has
    /// `IBV_WC_WITH_INV` set and carries `rkey` (see [`crate::ibv_wc::invalidated_rkey`]).
    pub fn send_with_invalidate(wr_id: u64, sges: &'a [Sge], rkey: u32) -> SendRequest<'a> {
        let mut r = SendRequest::new(wr_id, opcode::SEND_WITH_INV, sges);
        r.wr.imm_or_inv = rkey;
        r
    }

    fn remote(mut self, remote: RemoteMemory) -> SendRequest<'a> {
        self.wr.remote_addr = remote.addr;
        self.wr.rkey = remote.rkey;
        self
    }

    /// Produce no completion on success (on a queue pair with `sq_sig_all` off). Errors always
    /// complete.
    pub fn unsignaled(mut self) -> SendRequest<'a> {
        self.wr.flags &= !send_flags::SIGNALED;
        self
    }

    /// Wait for this QP's earlier RDMA reads and atomics to finish before starting.
    pub fn fence(mut self) -> SendRequest<'a> {
        self.wr.flags |= send_flags::FENCE;
        self
    }

    /// Mark the message solicited: it wakes a peer armed for solicited completions only.
    pub fn solicited(mut self) -> SendRequest<'a> {
        self.wr.flags |= send_flags::SOLICITED;
        self
    }

    /// The work request id.
    pub fn wr_id(&self) -> u64 {
        self.wr.wr_id
    }

    /// The message length in bytes.
    pub fn len(&self) -> u64 {
        self.wr.length()
    }

    /// Whether the message is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> AsRef<dwr::SendWr<'a>> for SendRequest<'a> {
    #[inline]
    fn as_ref(&self) -> &dwr::SendWr<'a> {
        &self.wr
    }
}

impl UdAddress for SendRequest<'_> {
    #[inline]
    fn address_handle(&self) -> Option<&Ah> {
        self.ah.map(AddressHandle::backend)
    }
}

impl<'a> AsRef<dwr::RecvWr<'a>> for ReceiveRequest<'a> {
    #[inline]
    fn as_ref(&self) -> &dwr::RecvWr<'a> {
        &self.wr
    }
}

impl fmt::Debug for SendRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendRequest")
            .field("wr_id", &self.wr.wr_id)
            .field("opcode", &self.wr.opcode)
            .field("flags", &self.wr.flags)
            .field("len", &self.wr.length())
            .field("ud", &self.wr.ud)
            .finish_non_exhaustive()
    }
}

/// A receive work request (`ibv_recv_wr`): where the next incoming message goes.
#[derive(Debug, Clone, Copy)]
pub struct ReceiveRequest<'a> {
    pub(crate) wr: dwr::RecvWr<'a>,
}

impl<'a> ReceiveRequest<'a> {
    /// A receive into the concatenation of `sges`.
    pub fn new(wr_id: u64, sges: &'a [Sge]) -> ReceiveRequest<'a> {
        ReceiveRequest {
            wr: dwr::RecvWr { wr_id, sges },
        }
    }
}

/// A post that stopped (`ibv_post_send`'s `bad_wr`). From `post_send_list` and
/// `post_receive_list`: the requests before `index` were posted, the one at `index` and those
/// after it were not. From a batch's `submit` ([`crate::SendBatch`], [`crate::RecvBatch`]), all
/// or nothing: none was posted, `index` names the one refused; except `index` equal to the
/// batch's length, which says every request was posted and only the doorbell failed (see
/// [`crate::SendBatch::submit`]).
#[derive(Debug)]
pub struct PostFailure {
    /// The first request not posted.
    pub index: usize,
    /// Why it was not.
    pub error: io::Error,
}

impl fmt::Display for PostFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "work request {} was not posted: {}",
            self.index, self.error
        )
    }
}

impl std::error::Error for PostFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<PostFailure> for io::Error {
    fn from(f: PostFailure) -> io::Error {
        f.error
    }
}

impl From<dwr::PostError> for PostFailure {
    fn from(e: dwr::PostError) -> PostFailure {
        PostFailure {
            index: e.index,
            error: e.error.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer's region is its word: `offset` must refuse, not overflow, when the address it would
    /// give runs past the end of the address space.
    #[test]
    fn offset_of_a_peer_region_never_overflows() {
        let peer = RemoteMemory {
            addr: u64::MAX - 7,
            rkey: 0x1234,
            len: 64,
        };
        assert_eq!(
            peer.offset(7).map(|m| (m.addr, m.len)),
            Some((u64::MAX, 57))
        );
        assert!(peer.offset(8).is_none(), "u64::MAX + 1");
        assert!(peer.offset(64).is_none());
        assert!(peer.offset(65).is_none(), "past the end of the region");
        let fine = RemoteMemory {
            addr: 0x1000,
            rkey: 1,
            len: 16,
        };
        assert_eq!(fine.offset(16).map(|m| (m.addr, m.len)), Some((0x1010, 0)));
        assert!(fine.offset(17).is_none());
    }
}
