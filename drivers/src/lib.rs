//! Everything of uverbs that touches the kernel or the device.
//!
//! * [`sys`]: the only module that makes system calls on RDMA devices (ioctl, write, mmap, read),
//!   and the seam a software device plugs into instead of the kernel ([`sys::ModelFile`]; the crate
//!   `uverbs-mlx5-model` is one).
//! * [`chan`]: the uverbs command channel: ioctl commands built on the stack, write commands, and the
//!   fallback between them.
//! * [`cm`]: the RDMA connection manager's command file (`/dev/infiniband/rdma_cm`), its commands
//!   and the decoder of its events.
//! * [`discover`] (with the crate's RDMA netlink client): which devices exist and which driver each
//!   has.
//! * [`ucontext`]: an open device file and the kernel's user context on it, with the query verbs;
//!   [`event`]: its async event file and completion channels.
//! * [`cmd`]: the object commands every backend shares (PD, MR, MW, CQ, QP, SRQ, AH), functions
//!   over a [`ucontext::Ucontext`].
//! * [`wr`] and [`wc`]: work requests (and the one validation every backend applies) and work
//!   completions.
//! * [`backend`]: the contract every backend implements, one trait per object; `rxe` and `mlx5`,
//!   the backends (their internals are not API).
//! * [`verbs`]: the objects the public crate uses, one type per object, dispatching to the backend.
//!
//! Each module uses only those above it in this list (and `error`, `barrier`, `spin`, `mem`, `gid`,
//! `qp_state`): the crate is a stack, with no import circle.
//!
//! All of the project's `unsafe` code outside the mlx5 model lives in this crate; every block carries
//! a `// SAFETY:` comment and every `unsafe fn` a `# Safety` section.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

/// The one list of backends. For each: its variant in the enums over backends, its folder (module),
/// its provider context (the type implementing [`backend::Provider`]), the kernel's driver id
/// (`enum rdma_driver_id`), its short name, and how sysfs shows its devices where netlink cannot
/// name the driver ([`discover::SysfsSign`]). Every enum over the backends ([`discover::Driver`],
/// [`verbs::Backend`], the objects of [`verbs`]), every dispatch and the list of supported drivers
/// in error messages are made from it; each backend's module is declared just below it.
/// `docs/adding-a-backend.md`.
macro_rules! backends {
    ($callback:ident $($args:tt)*) => {
        $callback! {
            [
                Rxe: rxe, crate::rxe::RxeContext, RDMA_DRIVER_RXE, "rxe", NetdevParent("rxe");
                Mlx5: mlx5, crate::mlx5::Mlx5Context, RDMA_DRIVER_MLX5, "mlx5", PciDriver("mlx5_core");
            ]
            $($args)*
        }
    };
}
pub(crate) use backends;

// The backends' folders, one module each, in the order of the list above (not API: a backend's
// internals are public for the workspace's crates only). `cargo fmt` formats only the modules a
// file declares by name, which is why these are not generated from the list;
// `drivers/tests/one_list_of_backends.rs` checks the two agree.
/// The mlx5 (NVIDIA ConnectX) backend (not API: public for the workspace's crates).
#[doc(hidden)]
pub mod mlx5;
/// The rxe (soft-RoCE) backend (not API: public for the workspace's crates).
#[doc(hidden)]
pub mod rxe;

pub mod backend;
pub mod chan;
pub mod cm;
pub mod cmd;
pub mod discover;
pub mod error;
pub mod event;
pub mod sys;
pub mod ucontext;
pub mod verbs;
pub mod wc;
pub mod wr;

// Not API: the backends' internals (ring formats, WQE and CQE layouts, UARs) and helpers of the
// crates of this workspace. They are public for the `uverbs` crate and the test equipment (the
// mlx5 model writes the very CQEs and reads the very WQEs these modules define), hidden from the
// documentation, and may change in any release.
#[doc(hidden)]
pub mod barrier;
#[doc(hidden)]
pub mod gid;
#[doc(hidden)]
pub mod mem;
#[doc(hidden)]
pub mod netlink;
#[doc(hidden)]
pub mod qp_state;
#[doc(hidden)]
pub mod spin;

pub use error::{Error, Result, Verb};
pub use uverbs_uapi as uapi;

static DROP_ERRORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A destroy command the kernel refused while `Drop` was destroying an object: what [`Drop`] cannot
/// return, handed to the hook installed with [`set_drop_error_hook`].
///
/// Its `Display` is `destroying a {object} failed: {error}`, e.g. `destroying a memory region
/// failed: DEREG_MR failed: EBUSY (Device or resource busy)`.
#[derive(Debug)]
#[non_exhaustive]
pub struct DropError<'a> {
    /// What was being destroyed, in words: `"memory region"`, `"queue pair"`, `"multicast
    /// attachment"`, ...
    pub object: &'static str,
    /// The typed error: [`Error::verb`] names the destroy command, [`Error::errno`] the kernel's
    /// answer.
    pub error: &'a Error,
}

impl std::fmt::Display for DropError<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "destroying a {} failed: {}", self.object, self.error)
    }
}

/// The hook type [`set_drop_error_hook`] installs.
type DropErrorHook = std::sync::Arc<dyn Fn(&DropError<'_>) + Send + Sync>;

static DROP_ERROR_HOOK: std::sync::RwLock<Option<DropErrorHook>> = std::sync::RwLock::new(None);

/// Installs the function that hears of every destroy error in `Drop` ([`DropError`]), replacing
/// the previous one; the library itself never writes to standard output or standard error, so
/// without a hook such errors are only counted ([`drop_errors`]).
///
/// The hook runs on the thread that drops the object, inside that `Drop`, with no lock of this
/// crate held: it may drop further objects (their errors reach it too) or replace itself. It must
/// not block for long. A panic in the hook is caught and ignored (the process's panic hook still
/// reports it, as for any panic), so it never unwinds out of `Drop`; under `panic = "abort"` it
/// aborts, as every panic does.
///
/// ```
/// // What the `uverbs` CLI installs: the line the library used to print itself.
/// uverbs_drivers::set_drop_error_hook(|e| eprintln!("uverbs: {e}"));
/// // Or take the event apart: the verb and the kernel's errno.
/// uverbs_drivers::set_drop_error_hook(|e| {
///     eprintln!("{} ({:?}, {})", e.object, e.error.verb(), e.error.errno());
/// });
/// # uverbs_drivers::clear_drop_error_hook();
/// ```
pub fn set_drop_error_hook(hook: impl Fn(&DropError<'_>) + Send + Sync + 'static) {
    *DROP_ERROR_HOOK.write().unwrap_or_else(|p| p.into_inner()) = Some(std::sync::Arc::new(hook));
}

/// Removes the hook [`set_drop_error_hook`] installed, if any: destroy errors in `Drop` are then
/// only counted again.
pub fn clear_drop_error_hook() {
    *DROP_ERROR_HOOK.write().unwrap_or_else(|p| p.into_inner()) = None;
}

/// Reports an error the kernel returned while an object was being destroyed by `Drop`, which cannot
/// return it: the error is counted ([`drop_errors`]) and handed to the hook installed with
/// [`set_drop_error_hook`], if there is one. Nothing is printed.
///
/// Never panics (it runs inside `Drop`): a panicking hook is caught.
pub fn report_drop_error(object: &'static str, error: &Error) {
    DROP_ERRORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Cloned out so that no lock is held while the hook runs (it may drop objects, or re-install).
    let hook = DROP_ERROR_HOOK
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    if let Some(hook) = hook {
        let event = DropError { object, error };
        // Ignored: a panic here must not unwind out of `Drop` (during an unwind it would abort).
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&event)));
    }
}

/// How many destroy errors [`report_drop_error`] has seen in this process.
pub fn drop_errors() -> u64 {
    DROP_ERRORS.load(std::sync::atomic::Ordering::Relaxed)
}
