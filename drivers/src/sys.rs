//! Every system call this project makes on an RDMA device lives here.
//!
//! The uverbs character device is driven by four calls: `ioctl(RDMA_VERBS_IOCTL)`, `write()` of a legacy
//! command, `mmap()` of queue and doorbell memory, and `read()` of event files. The first two carry user
//! pointers that the kernel writes through, so they are `unsafe fn`s here with the contract spelled out;
//! the callers in [`crate::chan`] build their buffers so that the contract holds by construction.
//! Discovery uses sysfs reads (plain `std::fs`) and an RDMA netlink socket (safe `nix` calls, kept here
//! too so that this file is the whole of the kernel surface).

use std::ffi::{CStr, OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::socket::{
    self, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType,
};
use nix::sys::stat::{self, Mode};
use nix::sys::time::TimeVal;
use uverbs_uapi::{ib_uverbs_ioctl_hdr, RDMA_IOCTL_MAGIC, RDMA_VERBS_IOCTL_NR};

pub mod remote;

mod raw {
    #![allow(missing_docs)]
    use super::*;
    nix::ioctl_readwrite!(
        rdma_verbs_ioctl,
        RDMA_IOCTL_MAGIC,
        RDMA_VERBS_IOCTL_NR,
        ib_uverbs_ioctl_hdr
    );
}

/// The request number of `RDMA_VERBS_IOCTL` (`_IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)`).
pub const RDMA_VERBS_IOCTL: u64 = nix::request_code_readwrite!(
    RDMA_IOCTL_MAGIC,
    RDMA_VERBS_IOCTL_NR,
    std::mem::size_of::<ib_uverbs_ioctl_hdr>()
) as u64;

/// A device file: the kernel's uverbs character device, or a software model of the kernel and the
/// device behind the same four calls ([`ModelFile`]; the crate `uverbs-mlx5-model` is one).
///
/// Every command, mapping and event read of the crate goes through this type, so a model replaces
/// exactly the kernel and the silicon: the code that builds the commands, the rings and the doorbells
/// is the production code either way.
///
/// It lends no descriptor: a `write(2)` on the kernel's file (or on a model daemon's socket) is a
/// command, whose pointers the kernel (or the daemon) writes through.
#[derive(Debug)]
pub enum DeviceFile {
    /// An open `/dev/infiniband/uverbsN`.
    Kernel(OwnedFd),
    /// A model of one ([`ModelFile`]).
    Model(ModelRef),
}

/// The kernel side of a device file, implemented by a model instead of the kernel: the seam through
/// which a software device (the crate `uverbs-mlx5-model`) plugs into this crate.
///
/// A model receives the very bytes the kernel would: the `RDMA_VERBS_IOCTL` header and attributes,
/// the legacy `write()` commands, and the mmap offsets. It must keep the kernel's contract with them
/// (write back handles, fds and responses through the pointers the command carries, answer errno
/// values the kernel would).
///
/// A model device is registered by handing out a [`DeviceInfo`](crate::discover::DeviceInfo) whose
/// `model` is an open file of it: [`DeviceContext::open`](crate::verbs::DeviceContext::open) then opens a
/// file of its own with [`ModelFile::reopen`] and sends every command there, not to the device node.
///
/// # Safety
/// The driver trusts a model as it trusts the kernel. An implementation must, as the kernel does:
/// write into a new-fd attribute (`UVERBS_ATTR_TYPE_FD` outputs) or an fd response field
/// (`async_fd` of `GET_CONTEXT`, `fd` of `CREATE_COMP_CHANNEL`) of a successful command only a
/// new, open descriptor that nothing else owns, since the driver adopts them as [`OwnedFd`]s (a
/// field left unwritten still holds [`NO_FD`](crate::chan::NO_FD), which the driver refuses); and
/// write through the command's pointers only within the lengths they carry. (A mapping shorter
/// than asked for, or not page aligned, is caught by [`DeviceFile::mmap`].)
///
/// The trait asks for no descriptor of the file (it had `as_fd`, which for a daemon's device,
/// [`remote::RemoteFile`], was the socket the daemon takes commands from): [`ModelRef`]s are
/// handed out ([`Channel::model_file`](crate::chan::Channel::model_file), discovery), and a
/// descriptor reached through them would let safe code send commands.
pub unsafe trait ModelFile: Send + Sync + std::fmt::Debug {
    /// `ioctl(RDMA_VERBS_IOCTL)`.
    ///
    /// # Safety
    /// As [`verbs_ioctl`]: `hdr` and every buffer its attributes point to are valid for the call.
    unsafe fn ioctl(&self, hdr: *mut ib_uverbs_ioctl_hdr) -> nix::Result<()>;

    /// `write()` of a legacy command.
    ///
    /// # Safety
    /// As [`write_command`]: the response pointer the command carries is valid for the response size
    /// its header announces.
    unsafe fn write(&self, cmd: &[u8]) -> nix::Result<usize>;

    /// `mmap()` of `len` bytes at `offset`, shared and readable/writable.
    fn mmap(&self, len: usize, offset: u64) -> std::io::Result<memmap2::MmapRaw>;

    /// Another open file of the same device (`open(2)` of its node again): each context gets its own,
    /// as the kernel allows one context per file. An error is what `open(2)` would fail with (a
    /// model daemon that cannot be reached).
    fn reopen(&self) -> std::io::Result<ModelRef>;
}

/// A shared model device file; equal when it is the same model.
#[derive(Debug, Clone)]
pub struct ModelRef(pub std::sync::Arc<dyn ModelFile>);

impl PartialEq for ModelRef {
    fn eq(&self, other: &ModelRef) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ModelRef {}

impl DeviceFile {
    /// `RDMA_VERBS_IOCTL` on this file.
    ///
    /// # Safety
    /// As [`verbs_ioctl`].
    #[inline]
    pub unsafe fn ioctl(&self, hdr: *mut ib_uverbs_ioctl_hdr) -> nix::Result<()> {
        crate::spin::assert_none_held("a uverbs ioctl");
        match self {
            // SAFETY: the caller keeps `verbs_ioctl`'s contract.
            DeviceFile::Kernel(fd) => unsafe { verbs_ioctl(fd.as_fd(), hdr) },
            // SAFETY: the same contract, passed on.
            DeviceFile::Model(m) => unsafe { m.0.ioctl(hdr) },
        }
    }

    /// A legacy `write()` command on this file.
    ///
    /// # Safety
    /// As [`write_command`].
    #[inline]
    pub unsafe fn write(&self, cmd: &[u8]) -> nix::Result<usize> {
        crate::spin::assert_none_held("a uverbs write command");
        match self {
            // SAFETY: the caller keeps `write_command`'s contract.
            DeviceFile::Kernel(fd) => unsafe { write_command(fd.as_fd(), cmd) },
            // SAFETY: the same contract, passed on.
            DeviceFile::Model(m) => unsafe { m.0.write(cmd) },
        }
    }

    /// Maps `len` bytes of the file at `offset` (see [`map_shared`]).
    ///
    /// A model's mapping must be page aligned and at least `len` bytes long, as the kernel's is (the
    /// callers access the mapping on that assumption); one that is not is `EINVAL`, since
    /// [`ModelFile::mmap`] is safe to implement.
    pub fn mmap(&self, len: usize, offset: u64) -> std::io::Result<memmap2::MmapRaw> {
        crate::spin::assert_none_held("mmap of a device file");
        match self {
            DeviceFile::Kernel(fd) => map_shared(fd.as_fd(), len, offset),
            DeviceFile::Model(m) => {
                let map = m.0.mmap(len, offset)?;
                if map.len() < len || map.as_ptr() as usize % page_size() != 0 {
                    return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
                }
                Ok(map)
            }
        }
    }

    /// [`DeviceFile::mmap`], read-only on a kernel file (a model's pages come as the model maps
    /// them; the callers only read them).
    pub fn mmap_read_only(&self, len: usize, offset: u64) -> std::io::Result<memmap2::MmapRaw> {
        match self {
            DeviceFile::Kernel(fd) => map_shared_read_only(fd.as_fd(), len, offset),
            DeviceFile::Model(_) => self.mmap(len, offset),
        }
    }
}

/// The sysfs root that real devices live under.
pub const SYSFS: &str = "/sys";

/// The sysfs root discovery reads: `$SYSFS_PATH` where it is set (and the program is not running
/// with raised privileges), else `/sys`, as libibverbs has it (`ibv_get_sysfs_path`).
pub fn sysfs_root() -> PathBuf {
    // SAFETY: `getauxval` only reads the auxiliary vector the kernel gave the process.
    let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
    match std::env::var_os("SYSFS_PATH") {
        Some(p) if !secure && !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(SYSFS),
    }
}

/// The subsystem sysfs files character device `dev` (major, minor) under, in the tree at `sysfs`:
/// the last component of the link `dev/char/MAJ:MIN/subsystem` (`infiniband_verbs` for a uverbs
/// device, `mem` for `/dev/null`).
pub fn char_device_subsystem(sysfs: &Path, dev: (u32, u32)) -> std::io::Result<OsString> {
    let link = sysfs.join(format!("dev/char/{}:{}/subsystem", dev.0, dev.1));
    let target = std::fs::read_link(&link)?;
    target
        .file_name()
        .map(OsStr::to_owned)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT))
}

/// Opens a uverbs character device for reading and writing, close-on-exec.
pub fn open_device(path: &Path) -> nix::Result<OwnedFd> {
    nix::fcntl::open(path, OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty())
}

/// The device number (`st_rdev`) of an open character device, as (major, minor).
pub fn char_device_number(fd: BorrowedFd<'_>) -> nix::Result<(u32, u32)> {
    let st = stat::fstat(fd)?;
    Ok((
        stat::major(st.st_rdev) as u32,
        stat::minor(st.st_rdev) as u32,
    ))
}

/// Issues `RDMA_VERBS_IOCTL` with the command that starts at `hdr`.
///
/// # Safety
/// `hdr` must point to a writable buffer of `hdr.length` bytes: the 24-byte header followed by
/// `hdr.num_attrs` attributes. Every pointer attribute must point to memory valid for reads (inputs) or
/// writes (outputs) of its `len` bytes for the duration of the call. The kernel writes new object handles,
/// new fds and `VALID_OUTPUT` flags back into the attribute array.
pub unsafe fn verbs_ioctl(fd: BorrowedFd<'_>, hdr: *mut ib_uverbs_ioctl_hdr) -> nix::Result<()> {
    // SAFETY: the caller guarantees that the header, its attributes and every buffer they point to are
    // valid as the kernel will use them; the request number encodes the header's size.
    unsafe { raw::rdma_verbs_ioctl(fd.as_raw_fd(), hdr) }.map(drop)
}

/// Writes a legacy uverbs command (`struct ib_uverbs_cmd_hdr` and what follows) to the device.
///
/// # Safety
/// The command's response pointer (the first `u64` of the core request, or `response` of the extended
/// header) must be null or point to memory valid for writes of the response size that the header
/// announces (`out_words`), for the duration of the call; the same holds for any other user pointer the
/// command carries (e.g. the zero-WR `POST_SEND` doorbell carries none).
#[inline]
pub unsafe fn write_command(fd: BorrowedFd<'_>, cmd: &[u8]) -> nix::Result<usize> {
    // The write itself only reads `cmd`; the kernel's writes through embedded pointers are covered by
    // the caller's contract above.
    nix::unistd::write(fd, cmd)
}

/// Writes a connection manager command (`struct rdma_ucm_cmd_hdr` and the command's struct) to an
/// open `/dev/infiniband/rdma_cm`.
///
/// # Safety
/// Every user pointer the command carries (its `response`, or `SET_OPTION`'s `optval`) must be null
/// or point to memory valid for the kernel to write (to read, for `optval`) the size the command
/// announces, for the duration of the call.
#[inline]
pub unsafe fn cm_write(fd: BorrowedFd<'_>, cmd: &[u8]) -> nix::Result<usize> {
    crate::spin::assert_none_held("an rdma_cm command");
    // The write itself only reads `cmd`; the kernel's accesses through embedded pointers are covered
    // by the caller's contract above.
    nix::unistd::write(fd, cmd)
}

/// Maps `len` bytes of a device file at `offset`, shared and readable/writable: how the kernel hands
/// out queue rings (rxe) and doorbell pages (mlx5). The mapping is unmapped when the returned value is
/// dropped.
pub fn map_shared(
    fd: BorrowedFd<'_>,
    len: usize,
    offset: u64,
) -> std::io::Result<memmap2::MmapRaw> {
    memmap2::MmapOptions::new()
        .len(len)
        .offset(offset)
        .map_raw(fd.as_raw_fd())
}

/// `mmap(2)` of `len` bytes of `fd` at `offset`, shared and read-only (pages the kernel refuses to
/// map writable: mlx5's clock-info page).
pub fn map_shared_read_only(
    fd: BorrowedFd<'_>,
    len: usize,
    offset: u64,
) -> std::io::Result<memmap2::MmapRaw> {
    memmap2::MmapOptions::new()
        .len(len)
        .offset(offset)
        .map_raw_read_only(fd.as_raw_fd())
}

/// Reads one event (or several, if the buffer is larger) from an event file.
pub fn read_event(fd: BorrowedFd<'_>, buf: &mut [u8]) -> nix::Result<usize> {
    nix::unistd::read(fd, buf)
}

/// Sets `O_NONBLOCK` on an open file (keeping its other status flags): reads of an event file then
/// fail with `EAGAIN` instead of sleeping when no event is queued. The flag belongs to the open file
/// description, so duplicates of the descriptor share it.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> nix::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg};
    let flags = OFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFL)?);
    if !flags.contains(OFlag::O_NONBLOCK) {
        fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    }
    Ok(())
}

/// Duplicates a descriptor, close-on-exec (`F_DUPFD_CLOEXEC`): a second descriptor for the same open
/// file, e.g. to register an event file with a reactor without taking the original away.
pub fn dup_cloexec(fd: BorrowedFd<'_>) -> nix::Result<OwnedFd> {
    use nix::fcntl::{fcntl, FcntlArg};
    let new = fcntl(fd, FcntlArg::F_DUPFD_CLOEXEC(0))?;
    // SAFETY: F_DUPFD_CLOEXEC succeeded, so `new` is a descriptor the kernel just installed for us,
    // open and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Waits up to `timeout_ms` (negative: forever) for `fd` to become readable; whether it did.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout_ms: i32) -> nix::Result<bool> {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    let timeout = if timeout_ms < 0 {
        PollTimeout::NONE
    } else {
        PollTimeout::try_from(timeout_ms).unwrap_or(PollTimeout::MAX)
    };
    loop {
        match nix::poll::poll(&mut fds, timeout) {
            Ok(n) => return Ok(n > 0),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// An epoll instance that watches `fd` for readability (level-triggered): readable exactly when `fd`
/// is, and pollable itself (`poll(2)`, another epoll, tokio's `AsyncFd`), so that a reactor can wait
/// for a command file's events through it. It is how a command file's readiness is lent without the
/// file: an epoll descriptor takes no commands (`write(2)` and `read(2)` on it fail with `EINVAL`),
/// and the only descriptor it names, `fd`, cannot be had back from it. It holds its own reference to
/// the watched open file, and stops reporting once every descriptor of that file is closed.
pub fn readiness_watch(fd: BorrowedFd<'_>) -> nix::Result<OwnedFd> {
    // SAFETY: epoll_create1 takes a flag word only.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(Errno::last());
    }
    // SAFETY: epoll_create1 succeeded, so `ep` is a descriptor the kernel just installed for us,
    // open and owned by nothing else.
    let ep = unsafe { OwnedFd::from_raw_fd(ep) };
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: 0,
    };
    // SAFETY: both descriptors are open (borrowed for the call), and `ev` is a valid `epoll_event`
    // that the kernel only reads during the call.
    let r =
        unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut ev) };
    if r < 0 {
        return Err(Errno::last());
    }
    Ok(ep)
}

/// Takes ownership of a file descriptor that the kernel created for us and returned in an ioctl
/// attribute.
///
/// # Safety
/// `fd` must be a file descriptor that is open and owned by nobody else in this process (the kernel
/// just installed it in our table for this command).
pub unsafe fn adopt_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: per the caller's contract, `fd` is open and has no other owner.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// An `AF_NETLINK`/`NETLINK_RDMA` socket with a receive timeout, so that a silent kernel cannot hang
/// discovery.
pub fn rdma_netlink_socket(timeout: Duration) -> nix::Result<OwnedFd> {
    let fd = socket::socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRDMA,
    )?;
    socket::bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0))?;
    socket::setsockopt(
        &fd,
        sockopt::ReceiveTimeout,
        &TimeVal::from(libc::timeval {
            tv_sec: timeout.as_secs().try_into().unwrap_or(i32::MAX.into()),
            tv_usec: timeout.subsec_micros().into(),
        }),
    )?;
    Ok(fd)
}

/// Sends one netlink message to the kernel.
pub fn netlink_send(fd: BorrowedFd<'_>, msg: &[u8]) -> nix::Result<()> {
    let n = socket::sendto(
        fd.as_raw_fd(),
        msg,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )?;
    if n == msg.len() {
        Ok(())
    } else {
        Err(Errno::EMSGSIZE)
    }
}

/// Receives one datagram of netlink messages.
pub fn netlink_recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> nix::Result<usize> {
    socket::recv(fd.as_raw_fd(), buf, MsgFlags::empty())
}

/// The interface index of a network device, or `None` if there is none of that name.
pub fn if_nametoindex(name: &CStr) -> Option<u32> {
    nix::net::if_::if_nametoindex(name).ok()
}

/// The system page size.
pub fn page_size() -> usize {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map_or(4096, |v| v as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "epoll on a pipe, poll(2): not supported by Miri")]
    fn a_readiness_watch_follows_its_file_and_takes_no_commands() {
        let (r, w) = nix::unistd::pipe().unwrap();
        let ep = readiness_watch(r.as_fd()).unwrap();
        assert!(
            !wait_readable(ep.as_fd(), 0).unwrap(),
            "nothing written yet"
        );
        nix::unistd::write(&w, b"x").unwrap();
        assert!(
            wait_readable(ep.as_fd(), 1000).unwrap(),
            "readable with the pipe"
        );
        // Still readable (level-triggered) until the byte is taken.
        assert!(wait_readable(ep.as_fd(), 0).unwrap());
        nix::unistd::read(&r, &mut [0u8; 1]).unwrap();
        assert!(!wait_readable(ep.as_fd(), 0).unwrap(), "empty again");
        // A write (what a command would be) and a read are refused.
        assert_eq!(nix::unistd::write(&ep, &[0u8; 32]), Err(Errno::EINVAL));
        assert_eq!(nix::unistd::read(&ep, &mut [0u8; 32]), Err(Errno::EINVAL));
    }

    #[test]
    fn ioctl_number_matches_the_header() {
        // _IOWR(0x1b, 1, 24 bytes) on x86_64 and aarch64.
        assert_eq!(RDMA_VERBS_IOCTL, 0xc018_1b01);
    }
}
