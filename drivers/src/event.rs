//! Event files: a context's async event file and completion channels.
//!
//! Both files are made non-blocking when they are created, so that a reactor (epoll, tokio's
//! `AsyncFd`) can drive them: a read with nothing queued fails with `EAGAIN`. The waiting reads here
//! try a read first and, when nothing is queued, sleep in `poll` until the file is readable, so they
//! block as a read of a blocking file would, and a thread that loses a race for an event to another
//! reader goes back to sleep instead of returning early.
//!
//! The kernel hands out one record per `read`: the completion queue's user handle (8 bytes,
//! `ib_uverbs_comp_event_desc`) on a completion channel, an `ib_uverbs_async_event_desc` (16 bytes)
//! on the async event file (uverbs_main.c `ib_uverbs_event_read`).

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::FromBytes;

use crate::error::{Error, Result, Verb};
use crate::sys;

/// Reads one record of `N` bytes without waiting: `None` when nothing is queued.
fn try_read_record<const N: usize>(fd: BorrowedFd<'_>) -> Result<Option<[u8; N]>> {
    let mut buf = [0u8; N];
    let n = loop {
        match sys::read_event(fd, &mut buf) {
            Ok(n) => break n,
            Err(Errno::EAGAIN) => return Ok(None),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(Error::kernel(Verb::ReadEvent, e)),
        }
    };
    if n != N {
        return Err(Error::Protocol {
            verb: Verb::ReadEvent,
            what: format!("a {n}-byte event record (expected {N})"),
        });
    }
    Ok(Some(buf))
}

/// Reads one record of `N` bytes, waiting up to `timeout` (`None`: forever) for one to be queued.
fn read_record<const N: usize>(
    fd: BorrowedFd<'_>,
    timeout: Option<Duration>,
) -> Result<Option<[u8; N]>> {
    let deadline = timeout.map(|t| Instant::now().checked_add(t));
    loop {
        if let Some(record) = try_read_record(fd)? {
            return Ok(Some(record));
        }
        let ms = match deadline {
            None | Some(None) => -1,
            Some(Some(deadline)) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(None);
                }
                // Round up, so that the poll does not wake a little before the deadline and spin.
                i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
            }
        };
        sys::wait_readable(fd, ms).map_err(|e| Error::kernel(Verb::ReadEvent, e))?;
    }
}

/// Takes the next completion event from a completion channel, waiting up to `timeout` (`None`:
/// forever, `Some(ZERO)`: not at all); returns the user handle of the completion queue it is for.
pub fn read_comp_event(channel: BorrowedFd<'_>, timeout: Option<Duration>) -> Result<Option<u64>> {
    Ok(read_record::<8>(channel, timeout)?.map(u64::from_ne_bytes))
}

/// Takes the next async event from an async event file, waiting up to `timeout` (`None`: forever,
/// `Some(ZERO)`: not at all).
pub fn read_async_event(
    file: BorrowedFd<'_>,
    timeout: Option<Duration>,
) -> Result<Option<uapi::ib_uverbs_async_event_desc>> {
    const LEN: usize = std::mem::size_of::<uapi::ib_uverbs_async_event_desc>();
    Ok(read_record::<LEN>(file, timeout)?.map(|bytes| {
        uapi::ib_uverbs_async_event_desc::read_from_bytes(&bytes).expect("the record's size")
    }))
}

/// Registers a duplicate of the event file `fd` (non-blocking, as this crate creates them) with the
/// reactor of the tokio runtime the caller runs on, for readability: wait on it with
/// `AsyncFd::readable`, then take events with [`read_comp_event`] / [`read_async_event`] and a zero
/// timeout. Being a duplicate, it can be registered any number of times at once (epoll refuses the
/// same descriptor twice) and dropped without closing `fd`.
///
/// Outside a tokio runtime this is an error; a runtime without its I/O driver makes tokio panic.
#[cfg(feature = "tokio")]
pub fn register_with_tokio(
    fd: BorrowedFd<'_>,
) -> std::io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(std::io::Error::other(
            "waiting asynchronously needs to run on a tokio runtime",
        ));
    }
    let dup = sys::dup_cloexec(fd).map_err(|e| Error::kernel(Verb::ReadEvent, e))?;
    // SAFETY: `dup` is an `OwnedFd`: its descriptor is open, stays open and names the same open file
    // until the `OwnedFd` is dropped (which `AsyncFd` does only after deregistering it), and its
    // `as_raw_fd` always returns that one descriptor.
    let registered = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(dup, tokio::io::Interest::READABLE)
    }?;
    Ok(registered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::{AsFd, OwnedFd};

    fn pipe() -> (OwnedFd, std::fs::File) {
        let (r, w) = nix::unistd::pipe().unwrap();
        sys::set_nonblocking(r.as_fd()).unwrap();
        (r, std::fs::File::from(w))
    }

    #[test]
    #[cfg_attr(miri, ignore = "poll(2): not supported by Miri")]
    fn empty_file_times_out_and_a_record_is_read_whole() {
        let (r, mut w) = pipe();
        assert_eq!(
            read_comp_event(r.as_fd(), Some(Duration::ZERO)).unwrap(),
            None
        );
        let start = Instant::now();
        assert_eq!(
            read_comp_event(r.as_fd(), Some(Duration::from_millis(30))).unwrap(),
            None
        );
        assert!(start.elapsed() >= Duration::from_millis(30));
        w.write_all(&0x1234u64.to_ne_bytes()).unwrap();
        assert_eq!(read_comp_event(r.as_fd(), None).unwrap(), Some(0x1234));
    }

    #[test]
    fn async_record_decodes_and_a_short_one_is_a_protocol_error() {
        let (r, mut w) = pipe();
        let mut rec = [0u8; 16];
        rec[..8].copy_from_slice(&7u64.to_ne_bytes());
        rec[8..12].copy_from_slice(&15u32.to_ne_bytes());
        w.write_all(&rec).unwrap();
        let e = read_async_event(r.as_fd(), None).unwrap().unwrap();
        assert_eq!((e.element, e.event_type), (7, 15));
        w.write_all(&[1, 2, 3]).unwrap();
        assert!(matches!(
            read_async_event(r.as_fd(), None),
            Err(Error::Protocol {
                verb: Verb::ReadEvent,
                ..
            })
        ));
    }
}
