//! The `ibverbs` crate's next API (its main branch, unreleased), on uverbs: a program written for
//! it builds with `use uverbs::next as ibverbs;` and nothing else changed.
//!
//! ```no_run
//! use uverbs::next as ibverbs;
//!
//! # fn main() -> ibverbs::Result<()> {
//! let ctx = ibverbs::devices()?
//!     .iter()
//!     .next()
//!     .expect("no rdma device available")
//!     .open()?;
//! let cq = ctx.create_cq(16).build()?;
//! let pd = ctx.alloc_pd()?;
//! let prepared = pd
//!     .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)?
//!     .set_gid_index(1)
//!     .build()?;
//! let endpoint = prepared.endpoint()?;
//! let mut qp = prepared.handshake(endpoint)?;
//!
//! let mut mr = pd.allocate(16)?;
//! mr.bytes_mut()[8..].copy_from_slice(b"12345678");
//! // SAFETY: the region outlives both requests' completions, polled below.
//! unsafe { qp.post_receive(&[mr.slice(..8)], 2) }?;
//! let mut batch = qp.start_send();
//! batch.signaled().send(1, &[mr.slice(8..)]);
//! // SAFETY: as above.
//! unsafe { batch.submit() }?;
//! let mut done = 0;
//! while done < 2 {
//!     if let Some(mut completions) = cq.poll()? {
//!         while let Some(wc) = completions.next() {
//!             wc.ok().expect("the request failed");
//!             done += 1;
//!         }
//!     }
//! }
//! assert_eq!(&mr.bytes()[..8], b"12345678");
//! # Ok(())
//! # }
//! ```
//!
//! Every object holds what it needs of its parents (no lifetimes), as in `ibverbs` main; posting
//! goes through uverbs' staged batches ([`PostBatch`] is [`crate::SendBatch`]'s path: each request
//! written into the send queue when it is added, one doorbell at `submit`) and polling through
//! its lending poll ([`CompletionQueue::poll`] is [`crate::CompletionQueue::start_poll`]).
//!
//! Where this module differs from `ibverbs` main (the README's API section lists them all):
//! - No raw pointers: there is no `as_raw`, `as_raw_ex` or `from_raw` (uverbs has no libibverbs
//!   structures to hand out); the attributes' `as_raw` give libibverbs' layouts as values
//!   ([`ffi`]).
//! - Nothing panics in `Drop`: a destroy the kernel refuses is reported through
//!   [`crate::set_drop_error_hook`], and memory the device could still reach is never freed.
//! - [`MemoryRegion::into_inner`] needs its owner to be one uverbs makes (`Box<[u8]>` or `()`),
//!   and gives back a copy of the bytes.
//! - [`WorkCompletion::slid`], [`sl`](WorkCompletion::slid) and
//!   [`dlid_path_bits`](WorkCompletion::dlid_path_bits) never panic: every uverbs completion
//!   carries them.
//! - Not here: EFA SRD queue pairs (uverbs has no EFA backend), `register_dmabuf` with a raw
//!   descriptor (see [`crate::ProtectionDomain::register_dmabuf`]), and
//!   `Context::query_rt_values_ex` answers [`Error::Unsupported`].
//! - The connection manager ([`rdmacm`]) is always there (no feature), on uverbs' own; its
//!   differences are listed there.

pub mod ffi;
pub mod rdmacm;

mod cq;
mod device;
mod error;
mod pd;
mod qp;
mod values;

pub use cq::{
    CompletionChannel, CompletionQueue, CompletionQueueBuilder, Completions, WorkCompletion,
};
pub use device::{
    devices, Context, Device, DeviceAttr, DeviceAttrEx, DeviceList, DeviceListIter, PortAttr,
};
pub use error::{Error, Result};
pub use ffi::{
    ib_uverbs_advise_mr_advice as ibv_advise_mr_advice,
    ib_uverbs_advise_mr_flag as ibv_advise_mr_flags, ibv_access_flags, ibv_create_cq_wc_flags,
    ibv_device_attr, ibv_gid_type, ibv_mtu, ibv_port_attr, ibv_port_state, ibv_qp_attr_mask,
    ibv_qp_state, ibv_qp_type, ibv_send_wr, ibv_transport_type, ibv_wc, ibv_wc_flags,
    ibv_wc_opcode, ibv_wc_status,
};
pub use pd::{
    AddressHandle, AddressHandleAttribute, LocalMemorySlice, MemoryRegion, ProtectionDomain,
    RecvRequest, RegionOwner, SharedReceiveQueue, DEFAULT_ACCESS_FLAGS,
};
pub use qp::{
    PostBatch, PostOp, PreparedQueuePair, QueuePair, QueuePairAttribute, QueuePairBuilder,
    QueuePairInitAttribute,
};
pub use values::{
    Gid, GidEntry, Guid, LinkLayer, PhysicalState, PortSpeed, PortWidth, QueuePairEndpoint,
    RemoteKey, RemoteMemorySlice,
};
