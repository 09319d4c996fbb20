//! Waiting for event files on the tokio reactor (feature `tokio`).

use std::io;
use std::os::fd::BorrowedFd;

use uverbs_drivers::event;

/// Waits on the current tokio runtime until `try_take` returns something, calling it whenever `fd`
/// (a non-blocking event file) is readable.
///
/// A duplicate of `fd` is registered with the reactor for the duration
/// ([`event::register_with_tokio`]), so that several futures can wait on one file at once. A
/// `try_take` that finds nothing (another reader was first) clears the readiness and the wait goes
/// on; readiness that arrives meanwhile is not lost (tokio clears only the readiness it reported).
pub(crate) async fn wait_readable_then<T>(
    fd: BorrowedFd<'_>,
    mut try_take: impl FnMut() -> io::Result<Option<T>>,
) -> io::Result<T> {
    // Nothing to wait for if something is queued already.
    if let Some(v) = try_take()? {
        return Ok(v);
    }
    let registered = event::register_with_tokio(fd)?;
    loop {
        let mut guard = registered.readable().await?;
        match try_take()? {
            Some(v) => return Ok(v),
            None => guard.clear_ready(),
        }
    }
}
