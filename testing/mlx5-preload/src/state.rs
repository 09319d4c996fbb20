//! The model device this library serves, and the descriptors that stand for its open files.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{c_int, c_ulong, c_void, CString};
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};

use uverbs_drivers::sys::remote::{RemoteFile, SOCKET_ENV};
use uverbs_drivers::sys::{ModelRef, RDMA_VERBS_IOCTL};
use uverbs_drivers::uapi;
use uverbs_mlx5_model::{Mlx5Model, UnknownCommand};

use crate::real;

/// The character device major of uverbs devices (`IB_UVERBS_MAJOR`).
const UVERBS_MAJOR: u32 = 231;
/// The first uverbs minor (`IB_UVERBS_BASE_MINOR`).
const UVERBS_BASE_MINOR: u32 = 192;

/// The mlx5 driver's answer to a `GET_CONTEXT` ioctl that succeeded (its `UVERBS_ATTR_UHW_OUT`
/// buffer, as far as the caller gave room), if the command had one.
///
/// # Safety
/// `arg` is the command's header, followed by its attributes, and the output buffer an attribute
/// names is valid for its length: what the kernel requires of the caller of a command it ran.
unsafe fn get_context_answer(arg: *mut c_void) -> Option<uapi::mlx5_ib_alloc_ucontext_resp> {
    use zerocopy::{FromZeros, IntoBytes};
    let hdr_len = std::mem::size_of::<uapi::ib_uverbs_ioctl_hdr>();
    // SAFETY: the caller's header (this function's contract).
    let hdr = unsafe { arg.cast::<uapi::ib_uverbs_ioctl_hdr>().read_unaligned() };
    let attrs = arg
        .cast::<u8>()
        .wrapping_add(hdr_len)
        .cast::<uapi::ib_uverbs_attr>();
    for i in 0..usize::from(hdr.num_attrs) {
        // SAFETY: `num_attrs` attributes follow the header (the model accepted the command).
        let a = unsafe { attrs.add(i).read_unaligned() };
        if a.attr_id != uapi::UVERBS_ATTR_UHW_OUT || a.data == 0 {
            continue;
        }
        let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
        let out = resp.as_mut_bytes();
        let n = out.len().min(usize::from(a.len));
        // SAFETY: the attribute's buffer is `len` bytes of the caller's (this function's
        // contract), and `n` is at most that; `out` is a distinct local.
        unsafe { std::ptr::copy_nonoverlapping(a.data as *const u8, out.as_mut_ptr(), n) };
        return Some(resp);
    }
    None
}

/// Where the device is.
#[derive(Debug)]
enum Source {
    /// A model in this process.
    Local(Mlx5Model),
    /// A model daemon, at this socket (`UVERBS_MODEL_SOCKET`): each open file is a connection.
    Remote(std::path::PathBuf),
}

/// What a descriptor of a model file is in the kernel's eyes: the device and inode of the memfd
/// behind it (each memfd is an inode of its own). A descriptor is only served as the model file
/// while `fstat` still finds this there: a descriptor closed without this library's `close`
/// (`close_range`, a raw `syscall(SYS_close)`, libc's own closes) leaves its entry behind, and the
/// next file to get its number is another file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: libc::dev_t,
    ino: libc::ino_t,
}

impl Identity {
    /// The identity of the open file behind `fd`, or `None` if `fd` is not open. Asked of the
    /// kernel itself: not this library's `fstat`, nor libc's, which glibc before 2.33 does not
    /// export under that name.
    fn of(fd: c_int) -> Option<Identity> {
        // SAFETY: `struct stat` is plain integers, for which all zeros is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: on x86-64 the kernel's `struct stat` is libc's, and `st` is one to write;
        // `fstat` takes any descriptor number.
        if unsafe { libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) } != 0 {
            return None;
        }
        Some(Identity {
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }
}

/// A descriptor that stands for a model file.
#[derive(Debug, Clone)]
struct Entry {
    file: ModelRef,
    identity: Identity,
}

/// The model device and its open files.
#[derive(Debug)]
pub(crate) struct Device {
    source: Source,
    devnode: CString,
    rdev: libc::dev_t,
    /// The process that started the device (and made its sysfs tree): a forked child has the same
    /// `Device` but must not remove the parent's tree when it exits.
    pid: u32,
    files: RwLock<HashMap<c_int, Entry>>,
    /// How many files are open: the common case, a descriptor that is not the model's, needs no
    /// lock when none is.
    open_files: AtomicUsize,
    /// The model's unknown commands reported so far.
    reported: Mutex<BTreeSet<UnknownCommand>>,
    quiet: bool,
    /// `UVERBS_PRELOAD_TRACE`: every command, mapping and its result on standard error (with the
    /// mlx5 `GET_CONTEXT` answer, and the HCA's doorbell counts at exit).
    trace: bool,
}

static DEVICE: OnceLock<Option<Device>> = OnceLock::new();

/// The device, once the library's constructor has started it (`None` before, or if it could not).
#[inline]
pub(crate) fn device() -> Option<&'static Device> {
    DEVICE.get().and_then(Option::as_ref)
}

/// Sets `errno`.
pub(crate) fn set_errno(e: c_int) {
    // SAFETY: `__errno_location` returns this thread's `errno`, always valid to write.
    unsafe { *libc::__errno_location() = e };
}

/// Writes a line to standard error without going through this library's `write` (the process's
/// stderr is not a model file, so that would pass through anyway; this also never panics).
fn note(line: &str) {
    let _ = std::io::stderr().write_all(format!("uverbs-mlx5-preload: {line}\n").as_bytes());
}

extern "C" fn start() {
    let dev = match Device::start() {
        Ok(d) => Some(d),
        Err(e) => {
            note(&format!("starting the mlx5 model failed: {e}"));
            None
        }
    };
    let _ = DEVICE.set(dev);
}

extern "C" fn stop() {
    let Some(dev) = device() else {
        return;
    };
    // A forked child exits with a copy of the parent's device: the tree (and the HCA's counts)
    // are the parent's, which is still using them.
    if std::process::id() != dev.pid {
        return;
    }
    // A daemon's model, its checks and its tree are the daemon's.
    let Source::Local(model) = &dev.source else {
        return;
    };
    if dev.trace {
        // What the HCA's checks made of the doorbells and BlueFlame writes it saw.
        let h = model.stats().hca;
        note(&format!(
            "HCA: {} WQEs, {} doorbell records, {} UAR doorbells, {} BlueFlame copies, \
             {} unchecked, {} missing, {} bad copies, {} arms, {} arm doorbell mismatches",
            h.wqes,
            h.doorbells,
            h.uar_doorbells,
            h.blueflame_copies,
            h.doorbells_unchecked,
            h.doorbells_missing,
            h.blueflame_mismatches,
            h.arms,
            h.arm_doorbell_mismatches
        ));
    }
    // The model's sysfs tree is a temporary directory; the device itself lives until exit.
    let _ = std::fs::remove_dir_all(model.sysfs_root());
}

// The library starts its device when it is loaded, before the program's `main` and before
// libibverbs reads `SYSFS_PATH` (at the first device list), and removes its sysfs tree at exit.
#[used]
#[link_section = ".init_array"]
static START: extern "C" fn() = start;

#[used]
#[link_section = ".fini_array"]
static STOP: extern "C" fn() = stop;

impl Device {
    fn start() -> std::io::Result<Device> {
        let (source, uverbs, index, root) =
            match std::env::var_os(SOCKET_ENV).filter(|p| !p.is_empty()) {
                // A model daemon: its device, its sysfs tree. The connection that asked is closed
                // again (each `open` of the device node is a connection of its own).
                Some(path) => {
                    let path = std::path::PathBuf::from(path);
                    // SAFETY: the daemon the user named in `UVERBS_MODEL_SOCKET` is the one this
                    // process is to trust as its device's kernel: the variable, set for a program
                    // run under this library, is that promise.
                    let info = unsafe { RemoteFile::connect(&path) }
                        .map_err(|e| {
                            std::io::Error::new(
                                e.kind(),
                                format!("the model daemon at {}: {e}", path.display()),
                            )
                        })?
                        .info()
                        .clone();
                    (
                        Source::Remote(path),
                        info.uverbs,
                        info.index,
                        info.sysfs_root,
                    )
                }
                None => {
                    let model = Mlx5Model::new().map_err(std::io::Error::other)?;
                    let info = model.device_info();
                    let root = model.sysfs_root().to_owned();
                    (
                        Source::Local(model),
                        info.uverbs,
                        info.index.unwrap_or(0),
                        root,
                    )
                }
            };
        let devnode =
            CString::new(format!("/dev/infiniband/{uverbs}")).map_err(std::io::Error::other)?;
        let root = CString::new(root.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
        // SAFETY: two NUL-terminated strings; this runs in the library's constructor, before the
        // program's threads (a library loaded later with `dlopen` races with them as any
        // `setenv` does).
        if unsafe { libc::setenv(c"SYSFS_PATH".as_ptr(), root.as_ptr(), 1) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Device {
            rdev: libc::makedev(UVERBS_MAJOR, UVERBS_BASE_MINOR + index),
            pid: std::process::id(),
            source,
            devnode,
            files: RwLock::new(HashMap::new()),
            open_files: AtomicUsize::new(0),
            reported: Mutex::new(BTreeSet::new()),
            quiet: std::env::var_os("UVERBS_PRELOAD_QUIET").is_some_and(|v| v != "0"),
            trace: std::env::var_os("UVERBS_PRELOAD_TRACE").is_some_and(|v| v != "0"),
        })
    }

    /// The device node libibverbs opens (`/dev/infiniband/uverbsN`).
    pub(crate) fn devnode(&self) -> &CString {
        &self.devnode
    }

    /// Opens a new file of the model behind a new descriptor (`O_CLOEXEC` as `flags` ask): a memfd,
    /// whose inode is its own, so that [`Identity`] tells it from every other open file.
    pub(crate) fn open(&self, flags: c_int) -> c_int {
        let cloexec = if flags & libc::O_CLOEXEC != 0 {
            libc::MFD_CLOEXEC
        } else {
            0
        };
        let file = match &self.source {
            Source::Local(model) => model.open(),
            // SAFETY: `path` is `UVERBS_MODEL_SOCKET`'s daemon, trusted as at the start.
            Source::Remote(path) => match unsafe { RemoteFile::connect(path) } {
                Ok(f) => ModelRef(std::sync::Arc::new(f)),
                Err(e) => {
                    // As `open` of a device node whose driver is gone.
                    set_errno(e.raw_os_error().unwrap_or(libc::ENXIO));
                    return -1;
                }
            },
        };
        // SAFETY: a NUL-terminated name and flags; the descriptor only stands for the model file.
        let fd = unsafe { libc::memfd_create(c"uverbs-mlx5-model".as_ptr(), cloexec) };
        if fd < 0 {
            return fd;
        }
        let Some(identity) = Identity::of(fd) else {
            // Just made: `fstat` cannot fail on it but for lack of memory.
            let errno = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::ENOMEM);
            // SAFETY: our own descriptor, made above and known to nothing else.
            unsafe { (real::close())(fd) };
            set_errno(errno);
            return -1;
        };
        let mut files = self.files.write().unwrap_or_else(|p| p.into_inner());
        files.insert(fd, Entry { file, identity });
        self.open_files.store(files.len(), Ordering::Release);
        fd
    }

    /// Makes `new` stand for the model file behind `fd`, if it is one (a duplicate descriptor: the
    /// same open file, closed in the model when the last of them is).
    pub(crate) fn duplicate(&self, fd: c_int, new: c_int) {
        let Some(entry) = self.entry(fd) else {
            return;
        };
        let mut files = self.files.write().unwrap_or_else(|p| p.into_inner());
        files.insert(new, entry);
        self.open_files.store(files.len(), Ordering::Release);
    }

    /// The entry of `fd`, if it stands for a model file and still is the descriptor this library
    /// made (or a duplicate of it). A stale entry (the descriptor was closed behind this library's
    /// back, and its number may now be another file's) is dropped, and `None` returned: the call
    /// then goes to libc, as for any file.
    fn entry(&self, fd: c_int) -> Option<Entry> {
        if self.open_files.load(Ordering::Acquire) == 0 {
            return None;
        }
        let entry = self
            .files
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&fd)
            .cloned()?;
        if Identity::of(fd) == Some(entry.identity) {
            return Some(entry);
        }
        let stale = {
            let mut files = self.files.write().unwrap_or_else(|p| p.into_inner());
            // Only the entry looked at: another thread may have opened the device and been given
            // this number since.
            let stale = match files.get(&fd) {
                Some(e) if e.identity == entry.identity => files.remove(&fd),
                _ => None,
            };
            self.open_files.store(files.len(), Ordering::Release);
            stale
        };
        // The model file (and its context, if nothing else keeps it) goes here, outside the lock.
        drop((stale, entry));
        None
    }

    /// The model file behind `fd`, if it is one (see [`Device::entry`]).
    #[inline]
    pub(crate) fn file(&self, fd: c_int) -> Option<ModelRef> {
        self.entry(fd).map(|e| e.file)
    }

    /// Whether `fd` is a model file.
    pub(crate) fn is_file(&self, fd: c_int) -> bool {
        self.entry(fd).is_some()
    }

    /// Closes the model file behind `fd`, if it is one (the descriptor itself is the caller's to
    /// close).
    pub(crate) fn forget(&self, fd: c_int) {
        self.forget_range(fd, fd);
    }

    /// Closes the model files behind the descriptors `first..=last` (those of them that are
    /// model files; the descriptors are the caller's to close).
    pub(crate) fn forget_range(&self, first: c_int, last: c_int) {
        if self.open_files.load(Ordering::Acquire) == 0 || first > last {
            return;
        }
        let gone: Vec<Entry> = {
            let mut files = self.files.write().unwrap_or_else(|p| p.into_inner());
            let gone = if first == last {
                files.remove(&first).into_iter().collect()
            } else {
                let fds: Vec<c_int> = files
                    .keys()
                    .copied()
                    .filter(|fd| (first..=last).contains(fd))
                    .collect();
                fds.iter().filter_map(|fd| files.remove(fd)).collect()
            };
            self.open_files.store(files.len(), Ordering::Release);
            gone
        };
        // The model files (and their contexts, if no mapping or object keeps them) go here,
        // outside the lock.
        drop(gone);
    }

    /// Fills `buf` as `fstat` of the device node does: a character device, read-write for all.
    ///
    /// # Safety
    /// `buf` is valid for writing a `struct stat`.
    pub(crate) unsafe fn fill_stat(&self, buf: *mut libc::stat) -> c_int {
        if buf.is_null() {
            set_errno(libc::EFAULT);
            return -1;
        }
        // SAFETY: `struct stat` is plain integers, for which all zeros is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        st.st_mode = libc::S_IFCHR | 0o666;
        st.st_rdev = self.rdev;
        st.st_nlink = 1;
        st.st_blksize = 4096;
        // SAFETY: `buf` is valid for a `struct stat` (the caller's contract).
        unsafe { buf.write(st) };
        0
    }

    /// `ioctl` on a model file.
    ///
    /// # Safety
    /// For `RDMA_VERBS_IOCTL`, `arg` is the caller's header, with the buffers its attributes name,
    /// valid for the call.
    pub(crate) unsafe fn ioctl(
        &self,
        file: &ModelRef,
        request: c_ulong,
        arg: *mut c_void,
    ) -> c_int {
        if request != RDMA_VERBS_IOCTL as c_ulong {
            set_errno(libc::ENOTTY);
            return -1;
        }
        let ids = if self.trace && !arg.is_null() {
            // SAFETY: the caller's header (`RDMA_VERBS_IOCTL`'s argument) is readable for the call.
            let hdr = unsafe { arg.cast::<uapi::ib_uverbs_ioctl_hdr>().read_unaligned() };
            Some((hdr.object_id, hdr.method_id))
        } else {
            None
        };
        // SAFETY: the caller's header, as the model's `ioctl` requires.
        let r = unsafe { file.0.ioctl(arg.cast()) };
        if let Some((object, method)) = ids {
            note(&format!(
                "ioctl object {object:#x} method {method:#x}: {r:?}"
            ));
            if r.is_ok()
                && (object, method) == (uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_GET_CONTEXT)
            {
                // SAFETY: the caller's header and attributes, valid for the call (above).
                if let Some(resp) = unsafe { get_context_answer(arg) } {
                    note(&format!(
                        "  mlx5 context: tot_bfregs {}, num_dyn_bfregs {}, bf_reg_size {}, \
                         cqe_version {}",
                        resp.tot_bfregs, resp.num_dyn_bfregs, resp.bf_reg_size, resp.cqe_version
                    ));
                }
            }
        }
        match r {
            Ok(()) => 0,
            Err(e) => {
                self.report_unknown();
                set_errno(e as c_int);
                -1
            }
        }
    }

    /// `write` of a legacy command on a model file.
    ///
    /// # Safety
    /// The response pointer the command carries is valid for the response size it announces.
    pub(crate) unsafe fn write(&self, file: &ModelRef, cmd: &[u8]) -> isize {
        // SAFETY: the caller's command, as the model's `write` requires.
        let r = unsafe { file.0.write(cmd) };
        if self.trace {
            let command = cmd
                .get(..4)
                .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]));
            note(&format!("write command {command:#x?}: {r:?}"));
        }
        match r {
            Ok(n) => n as isize,
            Err(e) => {
                self.report_unknown();
                set_errno(e as c_int);
                -1
            }
        }
    }

    /// `mmap` of a model file: a page of the model's, mapped where the model maps it (a caller that
    /// insists on an address with `MAP_FIXED` is refused, as the model cannot place it).
    pub(crate) fn mmap(
        &self,
        file: &ModelRef,
        addr: *mut c_void,
        len: usize,
        flags: c_int,
        offset: libc::off_t,
    ) -> *mut c_void {
        if flags & libc::MAP_FIXED != 0 && !addr.is_null() {
            set_errno(libc::EINVAL);
            return libc::MAP_FAILED;
        }
        let Ok(offset) = u64::try_from(offset) else {
            set_errno(libc::EINVAL);
            return libc::MAP_FAILED;
        };
        let r = file.0.mmap(len, offset);
        if self.trace {
            note(&format!(
                "mmap {len} bytes at offset {offset:#x}: {:?}",
                r.as_ref().map(|m| m.as_ptr())
            ));
        }
        match r {
            Ok(map) => {
                let p = map.as_mut_ptr().cast::<c_void>();
                // The caller owns the mapping now and unmaps it with `munmap`.
                std::mem::forget(map);
                p
            }
            Err(e) => {
                set_errno(e.raw_os_error().unwrap_or(libc::EINVAL));
                libc::MAP_FAILED
            }
        }
    }

    /// Says on standard error, once each, which commands the model lacks (a daemon says so on
    /// its own standard error).
    fn report_unknown(&self) {
        let Source::Local(model) = &self.source else {
            return;
        };
        if self.quiet {
            return;
        }
        let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
        for c in model.unknown_commands() {
            if reported.insert(c) {
                note(&format!(
                    "the mlx5 model lacks {c}; answered as the kernel would"
                ));
            }
        }
    }
}
