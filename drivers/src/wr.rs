//! Work requests as the backends take them: plain descriptors, built by the public API without
//! allocation and turned into each device's WQE format by its backend.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::error::{Error, Result, Verb};
use uverbs_uapi as uapi;

/// `IBV_WR_*` / `IB_UVERBS_WR_*` opcodes (the two numberings agree), by short names; the values are
/// `uverbs_uapi`'s.
pub mod opcode {
    pub use uverbs_uapi::{
        IB_UVERBS_WR_ATOMIC_CMP_AND_SWP as ATOMIC_CMP_AND_SWP,
        IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD as ATOMIC_FETCH_AND_ADD, IB_UVERBS_WR_BIND_MW as BIND_MW,
        IB_UVERBS_WR_LOCAL_INV as LOCAL_INV, IB_UVERBS_WR_RDMA_READ as RDMA_READ,
        IB_UVERBS_WR_RDMA_WRITE as RDMA_WRITE,
        IB_UVERBS_WR_RDMA_WRITE_WITH_IMM as RDMA_WRITE_WITH_IMM, IB_UVERBS_WR_SEND as SEND,
        IB_UVERBS_WR_SEND_WITH_IMM as SEND_WITH_IMM, IB_UVERBS_WR_SEND_WITH_INV as SEND_WITH_INV,
    };
}

/// `IB_SEND_*` / `IBV_SEND_*` flags (the two numberings agree), by short names; the values are
/// `uverbs_uapi`'s. `INLINE` copies the data into the WQE: the buffer is reusable when the call
/// returns.
pub mod send_flags {
    pub use uverbs_uapi::{
        IB_SEND_FENCE as FENCE, IB_SEND_INLINE as INLINE, IB_SEND_SIGNALED as SIGNALED,
        IB_SEND_SOLICITED as SOLICITED,
    };
}

/// A scatter/gather entry: `struct ibv_sge`, which is also rxe's `struct rxe_sge`. Take one from a
/// memory region (`MemoryRegion::sge` in the public crate) rather than filling it in by hand: the
/// kernel rejects (with an error completion) any entry outside the region its key names.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Sge {
    /// The buffer's address.
    pub addr: u64,
    /// Its length in bytes.
    pub length: u32,
    /// The local key of the memory region it lies in.
    pub lkey: u32,
}

/// The largest message the verbs carry (2 GiB, the port's `max_msg_sz` on 6.12).
pub const MAX_MESSAGE: u64 = 1 << 31;

/// Where a UD send goes besides its address handle (which the backend is handed beside the
/// request): the remote queue pair and the Q_Key the datagram carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdDest {
    /// The destination queue pair number (24 bits; `0xffffff` for a multicast group).
    pub remote_qpn: u32,
    /// The Q_Key the receiving queue pair must have, or the datagram is dropped.
    pub remote_qkey: u32,
}

/// What a `BIND_MW` work request binds: a memory window, by its current rkey, to `length` bytes at
/// `addr` of the memory region `mr_lkey` names, under a new rkey (rxe: `rxe_send_wr_mw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MwBind {
    /// The window's rkey as it is now.
    pub mw_rkey: u32,
    /// The rkey it has once bound: the same index (upper 24 bits), a new key (low 8 bits).
    pub new_rkey: u32,
    /// The local key of the memory region (registered with `MW_BIND` access).
    pub mr_lkey: u32,
    /// The first address the window covers, inside the region.
    pub addr: u64,
    /// How many bytes it covers.
    pub length: u64,
    /// The remote access it grants (`IBV_ACCESS_REMOTE_*` bits).
    pub access: u32,
}

/// The destination QPN of multicast datagrams.
pub const MULTICAST_QPN: u32 = 0xff_ffff;

/// A send work request.
#[derive(Debug, Clone, Copy)]
pub struct SendWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// One of [`opcode`].
    pub opcode: u32,
    /// [`send_flags`] bits.
    pub flags: u32,
    /// Immediate data (network byte order, as it goes on the wire), or the rkey to invalidate
    /// ([`opcode::LOCAL_INV`], [`opcode::SEND_WITH_INV`]; host order).
    pub imm_or_inv: u32,
    /// The local buffers (empty for an inline request).
    pub sges: &'a [Sge],
    /// With [`send_flags::INLINE`]: the data itself, copied into the work queue entry by the post, so
    /// the buffer is free again when the post returns.
    pub inline: &'a [u8],
    /// Remote address of RDMA and atomic operations.
    pub remote_addr: u64,
    /// Remote key of RDMA and atomic operations.
    pub rkey: u32,
    /// Compare (compare-and-swap) or add (fetch-and-add) operand.
    pub compare_add: u64,
    /// Swap operand.
    pub swap: u64,
    /// The destination of a send on a UD queue pair (required there, refused on RC and UC).
    pub ud: Option<UdDest>,
    /// The binding of a [`opcode::BIND_MW`] request (required there, refused elsewhere).
    pub bind: Option<MwBind>,
}

impl<'a> SendWr<'a> {
    /// A signaled SEND of `sges`.
    #[inline]
    pub fn send(wr_id: u64, sges: &'a [Sge]) -> SendWr<'a> {
        SendWr {
            wr_id,
            opcode: opcode::SEND,
            flags: send_flags::SIGNALED,
            imm_or_inv: 0,
            sges,
            inline: &[],
            remote_addr: 0,
            rkey: 0,
            compare_add: 0,
            swap: 0,
            ud: None,
            bind: None,
        }
    }

    /// Whether the data travels inline.
    #[inline]
    pub fn is_inline(&self) -> bool {
        self.flags & send_flags::INLINE != 0
    }

    /// The message length: the inline data's, or the sum of the entries' lengths.
    #[inline]
    pub fn length(&self) -> u64 {
        if self.is_inline() {
            self.inline.len() as u64
        } else {
            self.sges.iter().map(|s| u64::from(s.length)).sum()
        }
    }

    /// Whether the opcode reads or writes remote memory through `remote_addr`/`rkey`.
    #[inline]
    pub fn is_rdma(&self) -> bool {
        matches!(
            self.opcode,
            opcode::RDMA_WRITE | opcode::RDMA_WRITE_WITH_IMM | opcode::RDMA_READ
        )
    }

    /// Whether the opcode is an atomic.
    #[inline]
    pub fn is_atomic(&self) -> bool {
        matches!(
            self.opcode,
            opcode::ATOMIC_CMP_AND_SWP | opcode::ATOMIC_FETCH_AND_ADD
        )
    }
}

impl<'a> AsRef<SendWr<'a>> for SendWr<'a> {
    #[inline]
    fn as_ref(&self) -> &SendWr<'a> {
        self
    }
}

impl<'a> AsRef<RecvWr<'a>> for RecvWr<'a> {
    #[inline]
    fn as_ref(&self) -> &RecvWr<'a> {
        self
    }
}

/// A receive work request.
#[derive(Debug, Clone, Copy)]
pub struct RecvWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Where the message goes.
    pub sges: &'a [Sge],
}

/// A failed post: how many work requests went in before the one that failed, and why it failed
/// (the `bad_wr` contract of `ibv_post_send`: nothing after it was posted).
#[derive(Debug)]
pub struct PostError {
    /// The index of the first work request that was not posted.
    pub index: usize,
    /// Why.
    pub error: crate::Error,
}

/// The refusal of a send posted to a queue pair in state `current`, not RTS (index 0: nothing of
/// the post went in). Every backend's post and batch submit say it the same way.
#[cold]
pub(crate) fn send_needs_rts(current: u8) -> PostError {
    PostError {
        index: 0,
        error: crate::Error::WrongState {
            verb: crate::error::Verb::PostSend,
            state: current,
            needed: "RTS",
        },
    }
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "work request {} not posted: {}", self.index, self.error)
    }
}

impl std::error::Error for PostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<PostError> for crate::Error {
    fn from(e: PostError) -> crate::Error {
        e.error
    }
}

/// Bit `1 << op` of an opcode set ([`verbs_opcodes`], [`SendLimits::opcodes`]); 0 for a number no
/// opcode has.
#[inline]
pub const fn opcode_bit(op: u32) -> u32 {
    if op < 32 {
        1 << op
    } else {
        0
    }
}

/// The opcodes the verbs allow on a queue pair of `qp_type` (`IB_UVERBS_QPT_*`), as a set of
/// [`opcode_bit`]s (the kernel's `rxe_wr_opcode_info` table): RC every opcode; UC sends, RDMA
/// writes, SEND with invalidate and the local operations (BIND_MW, LOCAL_INV); UD plain sends.
pub const fn verbs_opcodes(qp_type: u8) -> u32 {
    use opcode::*;
    let sends = opcode_bit(SEND) | opcode_bit(SEND_WITH_IMM);
    match qp_type {
        uapi::IB_UVERBS_QPT_RC => (opcode_bit(SEND_WITH_INV) << 1) - 1,
        uapi::IB_UVERBS_QPT_UC => {
            sends
                | opcode_bit(RDMA_WRITE)
                | opcode_bit(RDMA_WRITE_WITH_IMM)
                | opcode_bit(LOCAL_INV)
                | opcode_bit(BIND_MW)
                | opcode_bit(SEND_WITH_INV)
        }
        uapi::IB_UVERBS_QPT_UD => sends,
        _ => 0,
    }
}

/// What a send queue takes, fixed when its queue pair is created: what [`check_send`] checks a
/// request against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendLimits {
    /// The transport (`IB_UVERBS_QPT_*`).
    pub qp_type: u8,
    /// Scatter/gather entries per request.
    pub max_send_sge: u32,
    /// Inline bytes per request.
    pub max_inline_data: u32,
    /// The opcodes the backend builds on this transport: [`verbs_opcodes`], less those it lacks
    /// (an opcode the verbs allow but the backend does not build is [`Error::Unsupported`]).
    pub opcodes: u32,
}

/// The transport's name, for messages.
fn transport(qp_type: u8) -> &'static str {
    match qp_type {
        uapi::IB_UVERBS_QPT_RC => "RC",
        uapi::IB_UVERBS_QPT_UC => "UC",
        uapi::IB_UVERBS_QPT_UD => "UD",
        _ => "unknown",
    }
}

/// Every check of a send request that does not depend on the backend, in one order, so that the
/// same bad request gets the same typed error on every backend: the opcode (the verbs' table, then
/// the backend's), a memory-window binding where and only where BIND_MW needs one, the flags, the
/// UD destination (required on UD with an address handle, `has_ah`, refused elsewhere; a 24-bit
/// QPN), the length, the inline rules, the number of entries and the alignment of atomics.
/// Backends add only what is theirs (rxe: the address handle's number).
#[inline]
pub fn check_send(wr: &SendWr<'_>, has_ah: bool, limits: &SendLimits) -> Result<()> {
    let bad = |what: String| Error::InvalidArgument {
        verb: Verb::PostSend,
        what,
    };
    let op = opcode_bit(wr.opcode);
    if op & verbs_opcodes(limits.qp_type) == 0 {
        return Err(bad(format!(
            "opcode {} on a {} queue pair",
            wr.opcode,
            transport(limits.qp_type)
        )));
    }
    if op & limits.opcodes == 0 {
        return Err(Error::Unsupported {
            verb: Verb::PostSend,
        });
    }
    match (wr.opcode, wr.bind) {
        (opcode::BIND_MW, None) => return Err(bad("BIND_MW without a binding".into())),
        (opcode::BIND_MW, Some(_)) | (opcode::LOCAL_INV, None)
            if !wr.sges.is_empty() || wr.is_inline() =>
        {
            return Err(bad(
                "BIND_MW and LOCAL_INV are local operations and carry no data".into(),
            ));
        }
        (opcode::BIND_MW, Some(_)) => {}
        (_, Some(_)) => {
            return Err(bad(format!(
                "a memory window binding on opcode {}",
                wr.opcode
            )));
        }
        _ => {}
    }
    let known =
        send_flags::FENCE | send_flags::SIGNALED | send_flags::SOLICITED | send_flags::INLINE;
    if wr.flags & !known != 0 {
        return Err(bad(format!("send flags {:#x}", wr.flags)));
    }
    let ud = limits.qp_type == uapi::IB_UVERBS_QPT_UD;
    match wr.ud {
        None if ud => {
            return Err(bad(
                "a send on a UD queue pair needs a destination (address handle, QPN, Q_Key)".into(),
            ))
        }
        Some(_) if !ud => {
            return Err(bad(
                "a UD destination on a connected queue pair, which sends only to its peer".into(),
            ))
        }
        Some(d) if d.remote_qpn > MULTICAST_QPN => {
            return Err(bad(format!(
                "remote QPN {:#x} does not fit in 24 bits",
                d.remote_qpn
            )))
        }
        Some(_) if !has_ah => return Err(bad("a UD send without an address handle".into())),
        None if has_ah => {
            return Err(bad(
                "an address handle on a send without a UD destination".into()
            ))
        }
        _ => {}
    }
    let length = wr.length();
    if length > MAX_MESSAGE {
        return Err(bad(format!(
            "a message of {length} bytes (at most {MAX_MESSAGE})"
        )));
    }
    if wr.is_inline() {
        if !wr.sges.is_empty() {
            return Err(bad(
                "an inline request carries its data, not scatter/gather entries".into(),
            ));
        }
        if wr.opcode == opcode::RDMA_READ || wr.is_atomic() {
            return Err(bad("RDMA reads and atomics cannot be inline".into()));
        }
        if length > u64::from(limits.max_inline_data) {
            return Err(bad(format!(
                "{length} inline bytes (this queue pair takes {})",
                limits.max_inline_data
            )));
        }
    } else if wr.sges.len() > limits.max_send_sge as usize {
        return Err(bad(format!(
            "{} scatter/gather entries (this queue pair takes {})",
            wr.sges.len(),
            limits.max_send_sge
        )));
    }
    if wr.is_atomic() && (length < 8 || wr.remote_addr % 8 != 0) {
        return Err(bad(
            "an atomic needs an 8-byte buffer and an 8-byte aligned remote address".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sge_is_ibv_sge() {
        assert_eq!(std::mem::size_of::<Sge>(), 16);
        assert_eq!(
            std::mem::size_of::<Sge>(),
            std::mem::size_of::<uverbs_uapi::rxe_sge>()
        );
    }

    #[test]
    fn length_sums_without_overflow() {
        let sges = [Sge {
            addr: 0,
            length: u32::MAX,
            lkey: 0,
        }; 3];
        assert_eq!(SendWr::send(1, &sges).length(), 3 * u64::from(u32::MAX));
    }
}
