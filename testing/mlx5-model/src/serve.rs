//! The model as a shared device: a daemon that serves one model device to other processes, as one
//! HCA serves every process of a host, so that a queue pair in one process talks to a queue pair in
//! another.
//!
//! [`Mlx5Model::serve`] listens on a unix socket (`SOCK_SEQPACKET`); the wire format and the
//! client are `uverbs_drivers::sys::remote` (a static uverbs, or rdma-core under the preload
//! library, connects with `UVERBS_MODEL_SOCKET`). Each connection is one open file of the device
//! and is served on a thread of its own, for the client process its credentials name
//! (`SO_PEERCRED`): the thread enters the client's task (`crate::task`), so the kernel half's
//! user copies and pinning checks go to the client's memory and `/proc/<pid>`, the objects it
//! creates carry the client's address space to the HCA (which reaches their memory with
//! `process_vm_readv` / `_writev`, see `hca/mem.rs`), and the event files it creates are sent to
//! the client before their numbers are written. An mmap is answered with the memfd of the UAR pages
//! and the offset, which the client maps itself. When the connection closes (the client closed the
//! file, or exited), the file is closed with everything in it, as the kernel closes a dead
//! process's files.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::errno::Errno;
use nix::sys::socket::{self, sockopt, AddressFamily, Backlog, SockFlag, SockType, UnixAddr};
use uverbs_drivers::sys::remote::{proto, RemoteInfo};

use crate::kernel::File;
use crate::task::{self, Peer};
use crate::{Device, Mlx5Model};

/// A model device served on a unix socket ([`Mlx5Model::serve`]). Dropping it (or
/// [`Server::stop`]) stops accepting connections and removes the socket; connections already
/// open are served until their clients close them.
#[derive(Debug)]
pub struct Server {
    path: PathBuf,
    listener: Arc<OwnedFd>,
    stop: Arc<AtomicBool>,
    clients: Arc<AtomicUsize>,
    accept: Option<JoinHandle<()>>,
}

impl Mlx5Model {
    /// Serves this device on a new unix socket at `path` (which must not exist), on threads of its
    /// own: each connection is one open file of the device, for the process at its other end.
    pub fn serve(&self, path: &Path) -> io::Result<Server> {
        let listener = socket::socket(
            AddressFamily::Unix,
            SockType::SeqPacket,
            SockFlag::SOCK_CLOEXEC,
            None,
        )?;
        socket::bind(listener.as_raw_fd(), &UnixAddr::new(path)?)?;
        socket::listen(&listener, Backlog::new(64).unwrap_or(Backlog::MAXCONN))?;
        let listener = Arc::new(listener);
        let stop = Arc::new(AtomicBool::new(false));
        let clients = Arc::new(AtomicUsize::new(0));
        let dev = Arc::clone(&self.dev);
        let accept = {
            let (listener, stop, clients) = (
                Arc::clone(&listener),
                Arc::clone(&stop),
                Arc::clone(&clients),
            );
            std::thread::Builder::new()
                .name("mlx5-model-serve".into())
                .spawn(move || accept_loop(dev, &listener, &stop, &clients))?
        };
        Ok(Server {
            path: path.to_owned(),
            listener,
            stop,
            clients,
            accept: Some(accept),
        })
    }

    /// What a daemon serving this device tells its clients.
    pub fn remote_info(&self) -> RemoteInfo {
        RemoteInfo {
            name: self.dev.cfg.name.clone(),
            uverbs: format!("uverbs{}", self.dev.index),
            index: self.dev.index,
            abi_version: 1,
            driver_id: uverbs_drivers::uapi::RDMA_DRIVER_MLX5,
            sysfs_root: self.dev.sysfs.root().to_owned(),
            sysfs_dir: self.dev.sysfs.device_dir().to_owned(),
            pid: std::process::id() as i32,
        }
    }
}

impl Server {
    /// The socket.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Connections being served now.
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Acquire)
    }

    /// Stops accepting connections and removes the socket.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the accept loop (accept fails with EINVAL on a shut-down listener).
        let _ = socket::shutdown(self.listener.as_raw_fd(), socket::Shutdown::Both);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(
    dev: Arc<Device>,
    listener: &OwnedFd,
    stop: &AtomicBool,
    clients: &Arc<AtomicUsize>,
) {
    while !stop.load(Ordering::Acquire) {
        let fd = match socket::accept4(listener.as_raw_fd(), SockFlag::SOCK_CLOEXEC) {
            // SAFETY: accept4 just created this descriptor for us; nothing else owns it.
            Ok(fd) => unsafe { OwnedFd::from_raw_fd(fd) },
            Err(Errno::EINTR | Errno::ECONNABORTED) => continue,
            Err(_) if stop.load(Ordering::Acquire) => break,
            // Out of descriptors or memory for a moment: let the clients that hold them go on.
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
        };
        let dev = Arc::clone(&dev);
        let clients = Arc::clone(clients);
        clients.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new()
            .name("mlx5-model-client".into())
            .spawn({
                let clients = Arc::clone(&clients);
                move || {
                    serve_client(dev, fd);
                    clients.fetch_sub(1, Ordering::AcqRel);
                }
            });
        if spawned.is_err() {
            clients.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A connected client process, as the kernel half sees it while serving its commands.
struct Client {
    pid: i32,
    sock: RawFd,
}

impl Client {
    fn sock(&self) -> BorrowedFd<'_> {
        // SAFETY: `serve_client` owns the socket and outlives every `Client` it makes (the task
        // is left before the socket is closed).
        unsafe { BorrowedFd::borrow_raw(self.sock) }
    }
}

impl Peer for Client {
    fn pid(&self) -> i32 {
        self.pid
    }

    fn install_fd(&self, fd: OwnedFd) -> Result<RawFd, Errno> {
        let sent = proto::Frame {
            kind: proto::INSTALL_FD,
            fd: Some(fd),
            ..proto::Frame::default()
        };
        proto::send(self.sock(), &sent).map_err(|_| Errno::EIO)?;
        // The descriptor is the client's now; ours closes here.
        drop(sent);
        let f = proto::recv(self.sock()).map_err(|_| Errno::EIO)?;
        if f.kind != proto::FD_NUMBER {
            return Err(Errno::EIO);
        }
        let n = f.a as i64;
        if n < 0 {
            return Err(Errno::from_raw(i32::try_from(-n).unwrap_or(libc::EIO)));
        }
        RawFd::try_from(n).map_err(|_| Errno::EIO)
    }
}

fn done(result: i64, b: u64, fd: Option<OwnedFd>) -> proto::Frame {
    proto::Frame {
        kind: proto::DONE,
        a: result as u64,
        b,
        data: Vec::new(),
        fd,
    }
}

fn errno_of(e: &io::Error) -> i64 {
    -i64::from(e.raw_os_error().unwrap_or(libc::EIO))
}

/// Serves one connection: one open file of the device for the process at its other end.
fn serve_client(dev: Arc<Device>, sock: OwnedFd) {
    let Ok(cred) = socket::getsockopt(&sock, sockopt::PeerCredentials) else {
        return;
    };
    let client = Rc::new(Client {
        pid: cred.pid(),
        sock: sock.as_raw_fd(),
    });
    let info = Mlx5Model {
        dev: Arc::clone(&dev),
    }
    .remote_info();
    let _task = task::enter(client);
    let file = File::open(dev);
    loop {
        let req = match proto::recv(sock.as_fd()) {
            Ok(f) => f,
            // Closed (or broken): the client closed the file or is gone.
            Err(_) => break,
        };
        let answer = match req.kind {
            proto::HELLO => proto::Frame {
                kind: proto::INFO,
                data: info.to_text().into_bytes(),
                ..proto::Frame::default()
            },
            proto::IOCTL => match file.user_ioctl(req.a) {
                Ok(()) => done(0, 0, None),
                Err(e) => done(-(e as i64), 0, None),
            },
            proto::WRITE => match file.user_write(&req.data) {
                Ok(n) => done(n as i64, 0, None),
                Err(e) => done(-(e as i64), 0, None),
            },
            proto::MMAP => match usize::try_from(req.a)
                .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
                .and_then(|len| file.user_mmap_source(len, req.b))
            {
                Ok((fd, at)) => done(0, at, Some(fd)),
                Err(e) => done(errno_of(&e), 0, None),
            },
            _ => done(-i64::from(libc::EINVAL), 0, None),
        };
        if proto::send(sock.as_fd(), &answer).is_err() {
            break;
        }
    }
    // The file closes with the task still entered: what closing it does to user memory and
    // descriptors is done to the client's.
    drop(file);
}
