//! The task a command is served for: the kernel's `current`.
//!
//! In-process (the model in the program it serves) the task is this process, and nothing is set.
//! The daemon ([`crate::serve`]) serves each client connection on a thread of its own and enters
//! the client's task there for as long as it serves it ([`enter`]): user copies (`uaccess`) then go
//! to the client's memory, the pinning checks read the client's `/proc/<pid>/maps`, the objects
//! the kernel half creates carry the client's [`Space`] to the HCA, and a descriptor the kernel
//! half creates for the user (an async event file, a completion channel) is installed in the client
//! ([`install_fd`]) before its number is written into the user's answer, as the kernel's
//! `fd_install` puts it in `current`'s table.

use std::cell::RefCell;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::rc::Rc;

use nix::errno::Errno;

use crate::hca::Space;

/// A client process of the daemon, as the kernel half needs it.
pub(crate) trait Peer {
    /// Its process id.
    fn pid(&self) -> i32;

    /// Installs `fd` in its descriptor table: the number the client has it under. The client
    /// closes the descriptors it received for a command that then fails.
    fn install_fd(&self, fd: OwnedFd) -> Result<RawFd, Errno>;
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<dyn Peer>>> = const { RefCell::new(None) };
}

/// While alive, `current` is the peer given to [`enter`]; then the previous one again.
pub(crate) struct Entered {
    prev: Option<Rc<dyn Peer>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let prev = self.prev.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

/// Serves this thread's commands for `peer` until the guard is dropped.
pub(crate) fn enter(peer: Rc<dyn Peer>) -> Entered {
    let prev = CURRENT.with(|c| c.borrow_mut().replace(peer));
    Entered { prev }
}

fn current() -> Option<Rc<dyn Peer>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// The process id of the client served, if the task is not this process.
pub(crate) fn remote_pid() -> Option<i32> {
    current().map(|p| p.pid())
}

/// The address space of the task's memory: [`Space::Local`] for this process (also a client
/// that is this very process), else the client's.
pub(crate) fn space() -> Space {
    match remote_pid() {
        Some(pid) if pid != std::process::id() as i32 => Space::Remote { pid },
        _ => Space::Local,
    }
}

/// The task's `/proc` directory (`/proc/self`, or `/proc/<pid>` of the client).
pub(crate) fn proc_dir() -> PathBuf {
    match remote_pid() {
        Some(pid) => PathBuf::from(format!("/proc/{pid}")),
        None => PathBuf::from("/proc/self"),
    }
}

/// Gives a new descriptor to the task: its number there (this process: the descriptor itself,
/// which the user adopts).
pub(crate) fn install_fd(fd: OwnedFd) -> Result<RawFd, Errno> {
    match current() {
        Some(peer) => peer.install_fd(fd),
        None => Ok(fd.into_raw_fd()),
    }
}

/// Takes back a descriptor [`install_fd`] gave, for a command that fails after all (its number
/// could not be written): this process closes it; a client closes what it received for a failed
/// command itself.
pub(crate) fn discard_fd(fd: RawFd) {
    if current().is_none() {
        // SAFETY: `install_fd` just gave this descriptor away for the command being served, which
        // fails, so the user never learnt its number: nothing else owns it.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
    }
}

/// `fstat` of the task's descriptor `fd` (the client's: through `/proc/<pid>/fd/<fd>`, which
/// names the same open file).
pub(crate) fn fd_stat(fd: RawFd) -> Result<libc::stat, Errno> {
    if fd < 0 {
        return Err(Errno::EBADF);
    }
    let st = match remote_pid() {
        None => nix::sys::stat::fstat(
            // SAFETY: only for the call; fstat does not keep or close it, and an fd number that
            // is not open fails with EBADF.
            unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
        ),
        Some(pid) => nix::sys::stat::stat(format!("/proc/{pid}/fd/{fd}").as_str()),
    };
    st.map_err(|_| Errno::EBADF)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(i32);

    impl Peer for Fake {
        fn pid(&self) -> i32 {
            self.0
        }
        fn install_fd(&self, _fd: OwnedFd) -> Result<RawFd, Errno> {
            Ok(42)
        }
    }

    #[test]
    fn current_is_this_process_unless_entered() {
        assert_eq!(space(), Space::Local);
        assert_eq!(proc_dir(), PathBuf::from("/proc/self"));
        {
            let _g = enter(Rc::new(Fake(1)));
            assert_eq!(space(), Space::Remote { pid: 1 });
            assert_eq!(proc_dir(), PathBuf::from("/proc/1"));
            let fd = nix::unistd::dup(std::io::stdin()).unwrap();
            assert_eq!(install_fd(fd), Ok(42));
            {
                let _h = enter(Rc::new(Fake(std::process::id() as i32)));
                // A client that is this process: its memory is local.
                assert_eq!(space(), Space::Local);
            }
            assert_eq!(remote_pid(), Some(1));
        }
        assert_eq!(remote_pid(), None);
        let (r, _w) = nix::unistd::pipe().unwrap();
        let n = install_fd(r).unwrap();
        assert!(fd_stat(n).is_ok());
        discard_fd(n);
        assert_eq!(fd_stat(-1).map(drop), Err(Errno::EBADF));
    }
}
