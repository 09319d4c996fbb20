//! Everything of uverbs that touches the kernel or the device.
//!
//! * [`sys`]: the only module that makes system calls on RDMA devices (ioctl, write, mmap, read).
//! * [`chan`]: the uverbs command channel: ioctl commands built on the stack, write commands, and the
//!   fallback between them.
//! * [`discover`] and [`netlink`]: which devices exist and which driver each has.
//! * [`context`]: an open device and its query verbs.
//! * [`provider`], [`rxe`], [`mlx5`]: the backends behind one contract.
//!
//! All of the project's `unsafe` code lives in this crate; every block carries a `// SAFETY:` comment
//! and every `unsafe fn` a `# Safety` section.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod chan;
pub mod context;
pub mod discover;
pub mod error;
pub mod mlx5;
pub mod netlink;
pub mod provider;
pub mod rxe;
pub mod sys;

pub use error::{Error, Result, Verb};
pub use uverbs_uapi as uapi;
