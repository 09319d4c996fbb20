//! # uverbs: RDMA verbs in pure Rust
//!
//! uverbs talks to the Linux kernel's `/dev/infiniband/uverbsN` directly: the uverbs ioctl interface,
//! the legacy `write()` commands where the kernel still needs them, and mmap of queue and doorbell
//! memory. There is no libibverbs, no rdma-core and no C at build or run time. Two backends sit behind
//! one API: rxe (the kernel's soft-RoCE device) and mlx5 (NVIDIA ConnectX).
//!
//! On both, posting receives and polling completions make no system call. On mlx5 posting sends and
//! arming a completion queue make none either: the backend writes the work-queue entries, the
//! doorbell record and the doorbell (or a BlueFlame copy of the entry) itself, as rdma-core's
//! provider does; rxe needs one `write()` per send list and one per arm. Memory windows are rxe
//! only: on mlx5 [`ProtectionDomain::alloc_mw`] is [`Error::Unsupported`].
//!
//! What a device offers beyond the verbs every device has (memory windows, CQ moderation and
//! resizing, completion timestamps, on-demand paging, dma-buf regions, re-registration) is a
//! [`Capability`]: ask [`Context::supports`] rather than the driver's name. Where the answer is
//! no, the verbs are a typed [`Error::Unsupported`] naming the verb.
//!
//! The API follows the [`ibverbs`](https://docs.rs/ibverbs) crate:
//!
//! ```no_run
//! let devices = uverbs::devices()?;
//! let device = devices.iter().next().expect("no RDMA device");
//! let ctx = device.open()?;
//! let attr = ctx.query_device()?;
//! println!("{}: {} ports, fw {}", ctx.name(), attr.phys_port_cnt(), attr.fw_ver());
//! for gid in ctx.gid_table() {
//!     println!("port {} gid[{}] {} {:?}", gid.port_num, gid.gid_index, gid.gid, gid.gid_type);
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## Safety
//!
//! As in `ibverbs`, posting work requests is `unsafe`: the device reads and writes the buffers
//! asynchronously, after the call returns, so the caller must keep them alive and untouched until the
//! completion arrives. Those two `unsafe fn` contracts are the only `unsafe` in this crate; everything
//! that touches memory, the kernel or the device lives in `uverbs-drivers`.
//!
//! ## Memory a peer writes
//!
//! A peer with a region's rkey may write it at any moment, so while it may, read those bytes only
//! with [`MemoryRegion::read_volatile`] or [`MemoryRegion::wait_for`] (and write neighbouring ones
//! with [`MemoryRegion::write_volatile`]), never through `Deref`/`DerefMut`, whose slices promise
//! the compiler that nothing else changes the memory. Once your protocol says the peer is done (its
//! completion was polled, or `wait_for` saw the flag it writes last), `Deref` reads see its bytes.
//!
//! ## Errors
//!
//! Fallible calls return `std::io::Result`, as in `ibverbs`. The `io::Error` carries a typed
//! [`Error`] that names the verb and the kernel's errno; [`ErrorExt::uverbs_error`] gets it back.
#![deny(unsafe_code)]

mod ah;
mod attr;
mod batch;
mod channel;
pub mod cm;
mod context;
mod cq;
mod device;
mod event;
pub mod exchange;
mod ibv;
mod mr;
mod mw;
pub mod next;
mod pd;
mod qp;
#[cfg(feature = "tokio")]
mod reactor;
mod srq;
mod wr;

pub use ah::AddressHandle;
pub use attr::{
    AtomicCap, DeviceAttr, DeviceCapFlags, Gid, GidEntry, GidType, LinkLayer, Mtu, NodeType,
    OdpCaps, PhysState, PortAttr, PortCapFlags, PortState, Speed, Width,
};
pub use batch::{RecvBatch, SendBatch, SendOp};
pub use channel::CompletionChannel;
pub use context::{Context, CqAttr, DeviceClock};
pub use cq::{Completion, CompletionQueue, Completions, TimestampedWc};
pub use device::{devices, CommandPath, Device, DeviceList, DeviceListIter, Driver, Guid};
pub use event::{AsyncEvent, AsyncEventKind};
pub use ibv::{
    ibv_access_flags, ibv_gid, ibv_gid_global, ibv_gid_type, ibv_mtu, ibv_qp_attr_mask,
    ibv_qp_state, ibv_qp_type, ibv_send_flags, ibv_wc, ibv_wc_flags, ibv_wc_opcode, ibv_wc_status,
    ibv_wr_opcode, wc_status_str, IBV_GID_TYPE_IB, IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2,
    IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_256, IBV_MTU_4096, IBV_MTU_512,
};
/// The crate whose `MmapMut` [`ProtectionDomain::register_mapping`] registers, re-exported so that
/// callers name the same version.
pub use memmap2;
pub use mr::MrRange;
pub use mr::{
    BorrowedMemoryRegion, DmabufMemoryRegion, ImplicitOdpRegion, MemoryRegion, MrAdvice,
    RawMemoryRegion, Registration, RemoteKey,
};
pub use mw::MemoryWindow;
pub use pd::ProtectionDomain;
pub use qp::{
    AddressVector, PreparedQueuePair, QpAttr, QpCaps, QueuePair, QueuePairBuilder,
    QueuePairEndpoint,
};
pub use srq::{SharedReceiveQueue, SrqCaps};
pub use uverbs_drivers::backend::Capability;
pub use uverbs_drivers::error::{Error, Verb};
pub use uverbs_drivers::verbs::Iova;
pub use wr::{PostFailure, ReceiveRequest, RemoteMemory, SendRequest, Sge, MULTICAST_QPN};
/// The crate whose [`FromBytes`](zerocopy::FromBytes) and [`IntoBytes`](zerocopy::IntoBytes) a
/// memory region's element type must implement, re-exported so that bounds can name the same
/// version (deriving them needs `zerocopy` as a dependency of one's own, as derive macros name
/// `::zerocopy`).
pub use zerocopy;

/// Bytes of registered memory this process has leaked on purpose: a region whose deregistration
/// the kernel refused (it may still let the device write the pages for a peer) keeps its buffer
/// forever instead of returning it to the allocator. 0 unless a destroy failed.
pub fn leaked_bytes() -> u64 {
    uverbs_drivers::mem::leaked_bytes()
}

/// How many destroy commands issued while dropping an object the kernel has refused in this process
/// (each also handed to the hook of [`set_drop_error_hook`], if one is installed; see
/// [`leaked_bytes`] for what a refused deregistration keeps).
pub fn drop_errors() -> u64 {
    uverbs_drivers::drop_errors()
}

// Destroy errors in `Drop`: the library prints nothing; the application may install a hook.
pub use uverbs_drivers::{clear_drop_error_hook, set_drop_error_hook, DropError};

/// Extension to get the typed [`Error`] out of an `io::Error` returned by this crate.
pub trait ErrorExt {
    /// The typed error, if this `io::Error` came from uverbs.
    fn uverbs_error(&self) -> Option<&Error>;
}

impl ErrorExt for std::io::Error {
    fn uverbs_error(&self) -> Option<&Error> {
        self.get_ref().and_then(|e| e.downcast_ref::<Error>())
    }
}
