//! Everything of uverbs that touches the kernel or the device.
//!
//! * [`sys`]: the only module that makes system calls on RDMA devices (ioctl, write, mmap, read),
//!   and the seam a software device plugs into instead of the kernel ([`sys::ModelFile`]; the crate
//!   `uverbs-mlx5-model` is one).
//! * [`chan`]: the uverbs command channel: ioctl commands built on the stack, write commands, and the
//!   fallback between them.
//! * [`discover`] and [`netlink`]: which devices exist and which driver each has.
//! * [`context`]: an open device and its query verbs; [`event`]: its async event file and completion
//!   channels.
//! * [`verbs`] and [`srq`]: the object commands (PD, MR, CQ, QP; shared receive queues).
//! * [`provider`], [`rxe`], [`mlx5`]: the backends behind one contract.
//!
//! All of the project's `unsafe` code outside the mlx5 model lives in this crate; every block carries
//! a `// SAFETY:` comment and every `unsafe fn` a `# Safety` section.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod barrier;
pub mod chan;
pub mod context;
pub mod discover;
pub mod error;
pub mod event;
pub mod gid;
pub mod mem;
pub mod mlx5;
pub mod netlink;
pub mod provider;
pub mod qp_state;
pub mod rxe;
pub mod srq;
pub mod sys;
pub mod verbs;
pub mod wr;

pub use error::{Error, Result, Verb};
pub use uverbs_uapi as uapi;

static DROP_ERRORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Reports an error the kernel returned while an object was being destroyed by `Drop`, which cannot
/// return it: the error is counted ([`drop_errors`]) and written to standard error if it can be.
///
/// Never panics: it runs inside `Drop`, and `eprintln!` would panic when standard error cannot be
/// written (a closed pipe, a full disk), so a failed write is ignored.
pub fn report_drop_error(what: &str, e: &Error) {
    use std::io::Write;
    DROP_ERRORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let _ = writeln!(std::io::stderr(), "uverbs: destroying a {what} failed: {e}");
}

/// How many destroy errors [`report_drop_error`] has seen in this process.
pub fn drop_errors() -> u64 {
    DROP_ERRORS.load(std::sync::atomic::Ordering::Relaxed)
}
