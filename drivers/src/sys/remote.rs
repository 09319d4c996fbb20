//! A device file of a model daemon: the model as a shared device, one HCA for several processes.
//!
//! A model daemon (`uverbs-mlx5-model serve --socket PATH`, the crate `uverbs-mlx5-model`) hosts
//! one model device and serves it on a unix socket (`SOCK_SEQPACKET`). Each connection is one open
//! file of the device (`open(2)` of its node), and the daemon knows the client process by the
//! connection's credentials (`SO_PEERCRED`). Every call on the file is one request, carrying what
//! the system call carries: the address of an ioctl's header in the client's memory (the daemon
//! reads the header and the attributes, and writes the answers, in the client's memory with
//! `process_vm_readv`/`_writev`, as the kernel copies from and to `current`), a write's command
//! bytes (their response pointers are the client's addresses too), an mmap's length and offset.
//! The answer is an errno or a value; an mmap's answer carries the model's memfd and the offset to
//! map, which the client maps itself. A descriptor the daemon creates for the client during a
//! command (an async event file, a completion channel) is sent to it first ([`proto::INSTALL_FD`]
//! with `SCM_RIGHTS`), and the client answers with the number it received it as, which the daemon
//! writes into the command's answer, as the kernel installs a new descriptor in `current`'s table
//! before it writes the number. If the command then fails, the client closes what it received.
//!
//! The queues, doorbell records and registered memory of the client stay in its own memory; the
//! daemon's HCA reads and writes them across processes (the client allows it to: with Yama's
//! `ptrace_scope` 1 it names the daemon as its tracer, [`RemoteFile::connect`]). The UAR pages
//! are the daemon's memfd, mapped by both.
//!
//! A connection that breaks (the socket fails, or the daemon's frames make no sense) is not the
//! kernel's `EIO` of a removed device, after which nothing the file held reaches the process's
//! memory: the daemon's HCA writes that memory for as long as the daemon runs, and a broken
//! socket does not say it stopped. A call on a broken connection fails with `ENOTCONN`, unless the
//! daemon has exited (then nothing of it writes anything, and the call fails with `EIO`, as on a
//! device that was unplugged).
//!
//! [`RemoteFile`] is the client side: a [`ModelFile`] that forwards each call. With
//! [`SOCKET_ENV`] set, [`crate::discover::devices`] lists the daemon's device with such a file as
//! its `model` ([`crate::discover::remote_device`]), so that everything in this crate (and a
//! statically linked program using it) runs on the daemon without code changes.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use uverbs_uapi::ib_uverbs_ioctl_hdr;

use super::{ModelFile, ModelRef};

/// The environment variable that names a model daemon's socket: where it is set, discovery lists
/// the daemon's device (and only it).
pub const SOCKET_ENV: &str = "UVERBS_MODEL_SOCKET";

/// The wire format between a model daemon and its clients: one frame per `SOCK_SEQPACKET`
/// message, a 24-byte header (`kind`, 4 reserved bytes, two 64-bit words `a` and `b`, native
/// byte order: both ends are on one host) and a payload, with at most one descriptor attached
/// (`SCM_RIGHTS`).
pub mod proto {
    use std::io;
    use std::io::{IoSlice, IoSliceMut};
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

    use nix::sys::socket::{self, ControlMessage, ControlMessageOwned, MsgFlags};

    /// Client → daemon: who are you? Answered with [`INFO`].
    pub const HELLO: u32 = 1;
    /// Client → daemon: `ioctl(RDMA_VERBS_IOCTL)`; `a` is the header's address in the client.
    pub const IOCTL: u32 = 2;
    /// Client → daemon: `write()` of a legacy command; the payload is the command.
    pub const WRITE: u32 = 3;
    /// Client → daemon: `mmap()` of `a` bytes at offset `b`. Answered with [`DONE`], the file to map
    /// attached and the offset in it in `b`.
    pub const MMAP: u32 = 4;
    /// Daemon → client, during a command: install the attached descriptor; the client answers
    /// [`FD_NUMBER`].
    pub const INSTALL_FD: u32 = 5;
    /// Client → daemon: the number the descriptor of [`INSTALL_FD`] has in the client (`a`), or a
    /// negative errno.
    pub const FD_NUMBER: u32 = 6;
    /// Daemon → client: the end of a command. `a` is its result as an `i64`: the value (0, or a
    /// write's byte count) or a negative errno; `b` depends on the command.
    pub const DONE: u32 = 7;
    /// Daemon → client: the answer to [`HELLO`], `key=value` lines (see
    /// [`RemoteInfo`](super::RemoteInfo)).
    pub const INFO: u32 = 8;

    /// The header's size.
    pub const HEADER: usize = 24;
    /// The largest frame (a legacy command is at most 4 × 65535 bytes of words, far more than
    /// any the library sends; the rest is refused).
    pub const MAX_FRAME: usize = 64 * 1024;

    /// One message.
    #[derive(Debug, Default)]
    pub struct Frame {
        /// What it is.
        pub kind: u32,
        /// First word.
        pub a: u64,
        /// Second word.
        pub b: u64,
        /// The payload.
        pub data: Vec<u8>,
        /// The descriptor attached.
        pub fd: Option<OwnedFd>,
    }

    impl Frame {
        /// A frame without payload or descriptor.
        pub fn new(kind: u32, a: u64, b: u64) -> Frame {
            Frame {
                kind,
                a,
                b,
                ..Frame::default()
            }
        }
    }

    fn io_err(e: nix::errno::Errno) -> io::Error {
        io::Error::from_raw_os_error(e as i32)
    }

    /// Sends one frame (without `SIGPIPE` if the peer is gone).
    pub fn send(sock: BorrowedFd<'_>, f: &Frame) -> io::Result<()> {
        if HEADER + f.data.len() > MAX_FRAME {
            return Err(io::Error::from_raw_os_error(libc::EMSGSIZE));
        }
        let mut head = [0u8; HEADER];
        head[0..4].copy_from_slice(&f.kind.to_ne_bytes());
        head[8..16].copy_from_slice(&f.a.to_ne_bytes());
        head[16..24].copy_from_slice(&f.b.to_ne_bytes());
        let iov = [IoSlice::new(&head), IoSlice::new(&f.data)];
        let fds: Vec<RawFd> = f.fd.iter().map(AsRawFd::as_raw_fd).collect();
        let cmsgs: Vec<ControlMessage<'_>> = if fds.is_empty() {
            Vec::new()
        } else {
            vec![ControlMessage::ScmRights(&fds)]
        };
        loop {
            match socket::sendmsg::<()>(
                sock.as_raw_fd(),
                &iov,
                &cmsgs,
                MsgFlags::MSG_NOSIGNAL,
                None,
            ) {
                Ok(_) => return Ok(()),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io_err(e)),
            }
        }
    }

    /// Receives one frame (descriptors close-on-exec); `UnexpectedEof` when the peer closed the
    /// connection, `InvalidData` for a malformed frame.
    pub fn recv(sock: BorrowedFd<'_>) -> io::Result<Frame> {
        let mut buf = vec![0u8; MAX_FRAME];
        let mut cmsg = nix::cmsg_space!([RawFd; 4]);
        let (n, fds, truncated) = loop {
            let mut iov = [IoSliceMut::new(&mut buf)];
            match socket::recvmsg::<()>(
                sock.as_raw_fd(),
                &mut iov,
                Some(&mut cmsg),
                MsgFlags::MSG_CMSG_CLOEXEC,
            ) {
                Ok(m) => {
                    let mut fds = Vec::new();
                    for c in m.cmsgs().map_err(io_err)? {
                        if let ControlMessageOwned::ScmRights(v) = c {
                            // SAFETY: SCM_RIGHTS just installed these descriptors in this
                            // process for this message; nothing else knows them.
                            fds.extend(v.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
                        }
                    }
                    let truncated = m
                        .flags
                        .intersects(MsgFlags::MSG_TRUNC | MsgFlags::MSG_CTRUNC);
                    break (m.bytes, fds, truncated);
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io_err(e)),
            }
        };
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if n < HEADER || truncated || fds.len() > 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a malformed model daemon frame",
            ));
        }
        let word = |at: usize| u64::from_ne_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
        Ok(Frame {
            kind: u32::from_ne_bytes(buf[0..4].try_into().expect("4 bytes")),
            a: word(8),
            b: word(16),
            data: buf[HEADER..n].to_vec(),
            fd: fds.into_iter().next(),
        })
    }
}

/// What a model daemon says of its device ([`proto::INFO`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteInfo {
    /// The device's name (`mlx5_0`).
    pub name: String,
    /// Its uverbs name (`uverbs0`).
    pub uverbs: String,
    /// Its index.
    pub index: u32,
    /// The uverbs ABI version.
    pub abi_version: u32,
    /// The device's driver (`enum rdma_driver_id`), whose backend serves it.
    pub driver_id: u32,
    /// The root of the daemon's sysfs tree (what `SYSFS_PATH` should be).
    pub sysfs_root: PathBuf,
    /// The device's directory in it (`class/infiniband/<name>`).
    pub sysfs_dir: PathBuf,
    /// The daemon's process id.
    pub pid: i32,
}

impl RemoteInfo {
    /// The `key=value` lines of [`proto::INFO`].
    pub fn to_text(&self) -> String {
        format!(
            "name={}\nuverbs={}\nindex={}\nabi_version={}\ndriver_id={}\nsysfs_root={}\nsysfs_dir={}\npid={}\n",
            self.name,
            self.uverbs,
            self.index,
            self.abi_version,
            self.driver_id,
            self.sysfs_root.display(),
            self.sysfs_dir.display(),
            self.pid
        )
    }

    /// Parses them back; `None` when a key is missing or malformed.
    pub fn parse(text: &str) -> Option<RemoteInfo> {
        let get = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
        };
        Some(RemoteInfo {
            name: get("name")?.to_owned(),
            uverbs: get("uverbs")?.to_owned(),
            index: get("index")?.parse().ok()?,
            abi_version: get("abi_version")?.parse().ok()?,
            driver_id: get("driver_id")?.parse().ok()?,
            sysfs_root: PathBuf::from(get("sysfs_root")?),
            sysfs_dir: PathBuf::from(get("sysfs_dir")?),
            pid: get("pid")?.parse().ok()?,
        })
    }
}

/// An open file of a model daemon's device: every call is forwarded over the connection (see the
/// module's documentation). One request is under way at a time per file.
#[derive(Debug)]
pub struct RemoteFile {
    path: PathBuf,
    sock: OwnedFd,
    info: RemoteInfo,
    /// The daemon's process id in this process's namespace, as the kernel gave it when the
    /// connection was made (`SO_PEERCRED`), where it is the process that says it serves the
    /// connection (`info.pid`): what [`RemoteFile::daemon_exited`] asks about. `None` when unknown.
    daemon_pid: Option<i32>,
    /// Held from a request until its answer.
    busy: Mutex<()>,
    /// The connection broke: every later request fails at once (the conversation may be out of
    /// step, and an answer read now could be an earlier request's).
    broken: AtomicBool,
}

fn protocol_error(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("model daemon: {what}"))
}

impl RemoteFile {
    /// Connects to the daemon at `path` (a new open file of its device) and asks what it serves.
    /// Where Yama restricts tracing to descendants, this process names the daemon as its tracer
    /// (`PR_SET_PTRACER`, with the process id the kernel gives for the listening end,
    /// `SO_PEERCRED`), so that the daemon may reach its memory as a device would.
    ///
    /// # Safety
    /// The server listening at `path` is a uverbs-mlx5-model daemon (`uverbs-mlx5-model serve`,
    /// [`proto`]), trusted as this process's kernel: for as long as this file, and every file
    /// [`reopen`](ModelFile::reopen)ed from it (a new connection to `path`), is used, what listens
    /// there keeps [`ModelFile`]'s contract. It writes this process's memory through the pointers
    /// of the commands sent to it (`process_vm_writev`), names the descriptors the driver adopts,
    /// and may trace this process. Any server that can bind `path` could otherwise do all of that
    /// (the user's choice of `UVERBS_MODEL_SOCKET`, like `LD_PRELOAD`'s, is such a promise).
    pub unsafe fn connect(path: &Path) -> io::Result<RemoteFile> {
        use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, UnixAddr};
        let sock = socket::socket(
            AddressFamily::Unix,
            SockType::SeqPacket,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(io::Error::from)?;
        let addr = UnixAddr::new(path).map_err(io::Error::from)?;
        loop {
            match socket::connect(sock.as_raw_fd(), &addr) {
                Ok(()) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        proto::send(sock.as_fd(), &proto::Frame::new(proto::HELLO, 0, 0))?;
        let f = proto::recv(sock.as_fd())?;
        if f.kind != proto::INFO {
            return Err(protocol_error("no answer to HELLO"));
        }
        let info = RemoteInfo::parse(&String::from_utf8_lossy(&f.data))
            .ok_or_else(|| protocol_error("a malformed device description"))?;
        // The kernel's word for who listens (the process that called `listen`, 0 where it has no
        // id in this pid namespace), not the id the server states in its answer.
        let peer_pid = socket::getsockopt(&sock, socket::sockopt::PeerCredentials)
            .ok()
            .map(|c| c.pid())
            .filter(|&pid| pid > 0);
        // Yama lets the process named and its descendants trace this one.
        if let Some(pid) = peer_pid {
            allow_tracer(pid);
        }
        // Asked whether it has exited only where it is the process that says it serves (a daemon
        // that handed its socket to another process is not asked about).
        let daemon_pid = peer_pid.filter(|&pid| pid == info.pid);
        Ok(RemoteFile {
            path: path.to_owned(),
            sock,
            info,
            daemon_pid,
            busy: Mutex::new(()),
            broken: AtomicBool::new(false),
        })
    }

    /// What the daemon said of its device.
    pub fn info(&self) -> &RemoteInfo {
        &self.info
    }

    /// The daemon's socket.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends a request and serves the daemon until its answer: the result (a value, or an errno)
    /// and the answer's second word and descriptor.
    ///
    /// A broken connection (sending or receiving fails, or a frame makes no sense) is shut down
    /// for good (the daemon closes the file, with everything in it, when it sees the end) and is
    /// `ENOTCONN`, not `EIO`: `EIO` says the device is gone and nothing of the file reaches this
    /// process's memory any more (the verbs layer then hands memory lent to a region back), but
    /// the daemon's HCA writes registered memory for as long as the daemon runs, and whether it
    /// has closed the file yet cannot be known from here. Only when the daemon has exited
    /// ([`RemoteFile::daemon_exited`]) is it `EIO`, as after a hot unplug.
    fn request(&self, req: &proto::Frame) -> Result<(u64, u64, Option<OwnedFd>), Errno> {
        let _busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        if self.broken.load(Ordering::Acquire) {
            return Err(self.lost(Duration::ZERO));
        }
        let mut received: Vec<RawFd> = Vec::new();
        let r = self.exchange(req, &mut received);
        let failed = !matches!(r, Ok((v, _, _)) if (v as i64) >= 0);
        if failed {
            for fd in received {
                // SAFETY: received for this command, which failed: the caller adopts none of
                // them, and nothing else in this process knows their numbers.
                drop(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
        let (v, b, fd) = match r {
            Ok(answer) => answer,
            Err(_) => {
                self.broken.store(true, Ordering::Release);
                let _ = nix::sys::socket::shutdown(
                    self.sock.as_raw_fd(),
                    nix::sys::socket::Shutdown::Both,
                );
                // A daemon that is being killed closes its sockets a moment before it has exited.
                return Err(self.lost(Duration::from_secs(1)));
            }
        };
        let v = v as i64;
        if v < 0 {
            return Err(Errno::from_raw(i32::try_from(-v).unwrap_or(libc::EIO)));
        }
        Ok((v as u64, b, fd))
    }

    /// The errno of a request on a broken connection: `EIO` if the daemon has exited (waiting up to
    /// `grace` for it), `ENOTCONN` otherwise.
    fn lost(&self, grace: Duration) -> Errno {
        if self.daemon_exited(grace) {
            Errno::EIO
        } else {
            Errno::ENOTCONN
        }
    }

    /// Whether the daemon has exited, waiting up to `grace` for it: then none of its threads runs,
    /// and nothing of it writes this process's memory any more. `false` where that is not known
    /// (no process id, no `pidfd_open`).
    ///
    /// The process the id names now is the daemon or, if the daemon has gone and its id was given
    /// again, a later process: either way, one that has exited (or no process at all, `ESRCH`)
    /// means the daemon has. A later process that still runs only makes this `false`.
    fn daemon_exited(&self, grace: Duration) -> bool {
        use nix::poll::{PollFd, PollFlags, PollTimeout};
        let Some(pid) = self.daemon_pid else {
            return false;
        };
        // SAFETY: `pidfd_open` takes integers and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Errno::last() == Errno::ESRCH;
        }
        let Ok(fd) = RawFd::try_from(fd) else {
            return false;
        };
        // SAFETY: `pidfd_open` just made this descriptor; nothing else knows it.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let deadline = std::time::Instant::now() + grace;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            // A pidfd is readable once the whole thread group has exited (a zombie included).
            let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
            match nix::poll::poll(&mut fds, timeout) {
                Ok(n) => return n > 0,
                Err(Errno::EINTR) => continue,
                Err(_) => return false,
            }
        }
    }

    fn exchange(
        &self,
        req: &proto::Frame,
        received: &mut Vec<RawFd>,
    ) -> io::Result<(u64, u64, Option<OwnedFd>)> {
        proto::send(self.sock.as_fd(), req)?;
        loop {
            let f = proto::recv(self.sock.as_fd())?;
            match f.kind {
                proto::INSTALL_FD => {
                    let answer = match f.fd {
                        Some(fd) => {
                            let n = fd.into_raw_fd();
                            received.push(n);
                            n as i64
                        }
                        None => -i64::from(libc::EBADF),
                    };
                    proto::send(
                        self.sock.as_fd(),
                        &proto::Frame::new(proto::FD_NUMBER, answer as u64, 0),
                    )?;
                }
                proto::DONE => return Ok((f.a, f.b, f.fd)),
                _ => return Err(protocol_error("an unexpected frame")),
            }
        }
    }
}

/// Lets process `pid` trace this one where Yama's `ptrace_scope` 1 would only let ancestors
/// (`process_vm_readv` needs it); without Yama the call fails and nothing changes.
fn allow_tracer(pid: i32) {
    let Ok(pid) = libc::c_ulong::try_from(pid) else {
        return;
    };
    // SAFETY: PR_SET_PTRACER takes integers only and changes nothing but who may trace us.
    let _ = unsafe { libc::prctl(libc::PR_SET_PTRACER, pid, 0, 0, 0) };
}

// SAFETY: the daemon keeps the kernel's contract on this process's memory (it writes through the
// command's pointers within their lengths, with process_vm_writev, which faults instead of
// writing where nothing is mapped), and every new descriptor whose number it writes into an answer
// was first received here by SCM_RIGHTS (installed new, owned by nothing else) in the same
// command; the descriptors of a failed command are closed here.
unsafe impl ModelFile for RemoteFile {
    unsafe fn ioctl(&self, hdr: *mut ib_uverbs_ioctl_hdr) -> nix::Result<()> {
        self.request(&proto::Frame::new(proto::IOCTL, hdr as u64, 0))
            .map(drop)
    }

    unsafe fn write(&self, cmd: &[u8]) -> nix::Result<usize> {
        if proto::HEADER + cmd.len() > proto::MAX_FRAME {
            return Err(Errno::EINVAL);
        }
        let req = proto::Frame {
            kind: proto::WRITE,
            data: cmd.to_vec(),
            ..proto::Frame::default()
        };
        self.request(&req).map(|(n, _, _)| n as usize)
    }

    fn mmap(&self, len: usize, offset: u64) -> io::Result<memmap2::MmapRaw> {
        let (_, at, fd) = self.request(&proto::Frame::new(proto::MMAP, len as u64, offset))?;
        let fd = fd.ok_or_else(|| protocol_error("an mmap answer without a file"))?;
        super::map_shared(fd.as_fd(), len, at)
    }

    fn reopen(&self) -> io::Result<ModelRef> {
        // SAFETY: `connect`'s contract for `self.path`, which this file was connected to under,
        // covers the files reopened from it.
        Ok(ModelRef(Arc::new(unsafe {
            RemoteFile::connect(&self.path)
        }?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};

    #[test]
    #[cfg_attr(
        miri,
        ignore = "socketpair(SOCK_SEQPACKET) and SCM_RIGHTS: not supported by Miri"
    )]
    fn frames_and_descriptors_cross_a_seqpacket_pair() {
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let (r, _w) = nix::unistd::pipe().unwrap();
        let ino = nix::sys::stat::fstat(&r).unwrap().st_ino;
        let f = proto::Frame {
            kind: proto::DONE,
            a: (-5i64) as u64,
            b: 0x1000,
            data: b"hello".to_vec(),
            fd: Some(r),
        };
        proto::send(a.as_fd(), &f).unwrap();
        proto::send(a.as_fd(), &proto::Frame::new(proto::HELLO, 1, 2)).unwrap();
        let g = proto::recv(b.as_fd()).unwrap();
        assert_eq!((g.kind, g.a as i64, g.b), (proto::DONE, -5, 0x1000));
        assert_eq!(g.data, b"hello");
        let fd = g.fd.unwrap();
        assert_eq!(nix::sys::stat::fstat(&fd).unwrap().st_ino, ino);
        // Close-on-exec, as the kernel's event files are.
        let flags = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_ne!(flags & libc::FD_CLOEXEC, 0);
        // Message boundaries hold.
        let h = proto::recv(b.as_fd()).unwrap();
        assert_eq!((h.kind, h.a, h.b, h.data.len()), (proto::HELLO, 1, 2, 0));
        assert!(h.fd.is_none());
        drop(a);
        assert_eq!(
            proto::recv(b.as_fd()).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }

    #[test]
    fn info_round_trips() {
        let i = RemoteInfo {
            name: "mlx5_0".into(),
            uverbs: "uverbs0".into(),
            index: 0,
            abi_version: 1,
            driver_id: 1,
            sysfs_root: "/tmp/x".into(),
            sysfs_dir: "/tmp/x/class/infiniband/mlx5_0".into(),
            pid: 77,
        };
        assert_eq!(RemoteInfo::parse(&i.to_text()), Some(i));
        assert_eq!(RemoteInfo::parse("name=a\n"), None);
    }

    #[test]
    #[cfg_attr(miri, ignore = "connect(2) to a unix socket: not supported by Miri")]
    fn no_daemon_is_an_error() {
        // SAFETY: nothing listens there.
        let e = unsafe { RemoteFile::connect(Path::new("/nonexistent/uverbs-model.sock")) }
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    #[cfg_attr(miri, ignore = "unix sockets: not supported by Miri")]
    fn a_connection_out_of_step_is_not_a_removed_device_and_stays_broken() {
        use nix::sys::socket::{self, Backlog, UnixAddr};
        let dir = std::env::temp_dir().join(format!("uverbs-remote-test.{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out-of-step.sock");
        let _ = std::fs::remove_file(&path);
        let listener = socket::socket(
            AddressFamily::Unix,
            SockType::SeqPacket,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .unwrap();
        socket::bind(listener.as_raw_fd(), &UnixAddr::new(&path).unwrap()).unwrap();
        socket::listen(&listener, Backlog::new(1).unwrap()).unwrap();
        // A daemon (this process, which keeps running) that answers a command out of step: a
        // frame no command expects, then a success.
        let daemon = std::thread::spawn(move || {
            let conn = socket::accept(listener.as_raw_fd()).unwrap();
            // SAFETY: accept just made it; ours alone.
            let conn = unsafe { OwnedFd::from_raw_fd(conn) };
            assert_eq!(proto::recv(conn.as_fd()).unwrap().kind, proto::HELLO);
            let info = RemoteInfo {
                name: "mlx5_0".into(),
                uverbs: "uverbs0".into(),
                index: 0,
                abi_version: 1,
                driver_id: 1,
                sysfs_root: "/nonexistent".into(),
                sysfs_dir: "/nonexistent/class/infiniband/mlx5_0".into(),
                pid: std::process::id() as i32,
            };
            let answer = proto::Frame {
                kind: proto::INFO,
                data: info.to_text().into_bytes(),
                ..proto::Frame::default()
            };
            proto::send(conn.as_fd(), &answer).unwrap();
            assert_eq!(proto::recv(conn.as_fd()).unwrap().kind, proto::WRITE);
            proto::send(conn.as_fd(), &proto::Frame::new(proto::INFO, 0, 0)).unwrap();
            // The client may have shut the connection down already (it must, on the INFO): the
            // stale answer then cannot even be sent.
            let _ = proto::send(conn.as_fd(), &proto::Frame::new(proto::DONE, 16, 0));
            // What the client sends from now on (it should shut the connection down instead).
            let mut more = 0;
            while proto::recv(conn.as_fd()).is_ok() {
                more += 1;
            }
            more
        });
        // SAFETY: the daemon above writes nothing into this process and sends no descriptor.
        let file = unsafe { RemoteFile::connect(&path) }.unwrap();
        let cmd = [0u8; 16];
        // SAFETY: the daemon above writes nothing into this process.
        let first = unsafe { file.write(&cmd) };
        assert_eq!(
            first,
            Err(Errno::ENOTCONN),
            "a broken connection to a running daemon"
        );
        // SAFETY: as above.
        let second = unsafe { file.write(&cmd) };
        assert_eq!(
            second,
            Err(Errno::ENOTCONN),
            "a request after the break (the stale answer was read as its own)"
        );
        assert_eq!(
            daemon.join().unwrap(),
            0,
            "requests were sent after the break"
        );
        drop(file);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
