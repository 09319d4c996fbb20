//! The kernel half's entry points: an open file of the model device, which decodes
//! `RDMA_VERBS_IOCTL` (`uverbs_ioctl.c`), legacy `write()` commands (`uverbs_main.c`) and `mmap`
//! (`mlx5_ib_mmap`) as Linux 6.1 does, and runs the verbs of [`super::objects`].
//!
//! An ioctl is checked as `ib_uverbs_ioctl` and `ib_uverbs_run_method` check it: the header
//! (`length`, `num_attrs`, reserved fields, `driver_id`), the method (`EPROTONOSUPPORT` when the
//! model has none), then every attribute against the method's specification (unknown: ignored
//! unless mandatory; duplicates; lengths; inline payloads of up to 8 bytes, pointers beyond;
//! object handles and file descriptors looked up), then the mandatory ones. A destroy method
//! destroys its object before its handler runs. Outputs get `UVERBS_ATTR_F_VALID_OUTPUT`, new
//! handles and descriptors are written into their attributes.
//!
//! A write command is checked as `ib_uverbs_write` and `verify_hdr` check it, split into the core
//! request, the response buffer and the driver's data, and run by the same command implementation
//! that `UVERBS_METHOD_INVOKE_WRITE` runs with its attributes.
//!
//! The files, one job each:
//!
//! * this one: the open file ([`File`]), the driver data of a command ([`Udata`]), and the entry
//!   points of [`ModelFile`], which hand each call to its decoder;
//! * `ioctl`: decoding an ioctl's header and attributes against a method's specification;
//! * `write`: the framing of a legacy write command, and of one carried by `INVOKE_WRITE`;
//! * `methods`: the method tables, which handler runs each write command and ioctl method, with
//!   its sizes and attribute specifications;
//! * the handlers, by object: `context` (the context and its event files), `device` (device, port
//!   and GID queries), `pd_mr`, `cq`, `qp`, `srq`, `ah`, `uar` (UAR pages as objects);
//! * `mmap`: the UAR pages, static and those of UAR objects.

mod ah;
mod context;
mod cq;
mod device;
mod ioctl;
mod methods;
mod mmap;
mod pd_mr;
mod qp;
mod srq;
mod uar;
mod write;

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard};

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, IntoBytes};

use super::objects::{FileState, Object};
use super::{uaccess, Device, ObjectCounts};
use uverbs_drivers::sys::ModelFile;

/// One open file of a model device (`struct ib_uverbs_file`).
pub(crate) struct File {
    pub(super) dev: Arc<Device>,
    pub(super) id: u64,
    /// The memfd of the file's UAR pages; `None` if it could not be made, and then `GET_CONTEXT`
    /// fails.
    pub(super) uar_fd: Option<OwnedFd>,
    st: Mutex<FileState>,
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("File")
            .field("device", &self.dev.cfg.name)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl File {
    /// Opens the device.
    pub(super) fn new(dev: Arc<Device>) -> File {
        let id = dev.new_file_id();
        File {
            dev,
            id,
            uar_fd: super::uar::create_memfd().ok(),
            st: Mutex::new(FileState::default()),
        }
    }

    /// Opens the device: a new file, registered with the device so that its objects are counted
    /// ([`super::Mlx5Model::objects`]).
    pub(super) fn open(dev: Arc<Device>) -> Arc<File> {
        let file = Arc::new(File::new(dev));
        file.dev.register_file(&file);
        file
    }

    fn lock(&self) -> MutexGuard<'_, FileState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The objects in the file's handle table, and whether it has a context.
    pub(super) fn object_counts(&self) -> ObjectCounts {
        let st = self.lock();
        let mut c = ObjectCounts {
            files: 1,
            contexts: usize::from(st.ctx.is_some()),
            ..ObjectCounts::default()
        };
        for obj in st.objects.values() {
            *match obj {
                Object::Pd(_) => &mut c.pds,
                Object::Mr(_) => &mut c.mrs,
                Object::Cq(_) => &mut c.cqs,
                Object::Qp(_) => &mut c.qps,
                Object::Srq(_) => &mut c.srqs,
                Object::Ah(_) => &mut c.ahs,
                Object::Uar(_) => &mut c.uars,
            } += 1;
        }
        c
    }

    /// Removes the context of a `GET_CONTEXT` that failed after creating it.
    pub(super) fn drop_context(&self, st: &mut FileState) {
        if st.ctx.take().is_some() {
            self.dev.context_dropped();
        }
    }

    /// Runs a command, turning a panic (a model bug) into `EIO` so that the caller survives. The
    /// model prints nothing: the panic reaches the process's panic hook as any panic does, and the
    /// command counts as failed ([`crate::ModelStats`]'s `failed`).
    fn guarded<T>(&self, f: impl FnOnce() -> Result<T, Errno>) -> Result<T, Errno> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or_else(|_| Err(Errno::EIO));
        if r.is_err() {
            self.dev
                .failed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        r
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let mut st = self.lock();
        self.close_all(&mut st);
        let had = st.ctx.take().is_some();
        drop(st);
        self.dev.file_closed(had);
        self.dev.unregister_file(self.id);
    }
}

// ---------------------------------------------------------------------------------------------
// Driver data.

/// The driver's data of a command (`struct ib_udata`): the request bytes, and where the answer
/// goes.
#[derive(Debug, Default)]
pub(crate) struct Udata {
    inbuf: Vec<u8>,
    out_addr: u64,
    out_len: usize,
}

impl Udata {
    /// Bytes of driver request.
    pub(super) fn inlen(&self) -> usize {
        self.inbuf.len()
    }

    /// The driver request.
    pub(super) fn inbuf(&self) -> &[u8] {
        &self.inbuf
    }

    /// Room for the driver's answer.
    pub(super) fn outlen(&self) -> usize {
        self.out_len
    }

    /// `ib_copy_to_udata`: the whole of `bytes` (cut to the room there is, where the kernel would
    /// write past it); `EFAULT` when there is no room at all.
    pub(super) fn copy_out(&self, bytes: &[u8]) -> Result<(), Errno> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.out_len == 0 {
            return Err(Errno::EFAULT);
        }
        uaccess::write(self.out_addr, &bytes[..bytes.len().min(self.out_len)])
    }
}

#[cfg(test)]
impl Udata {
    /// Driver data of `inbuf`, answered into `out`.
    pub(super) fn for_test(inbuf: &[u8], out: &mut [u8]) -> Udata {
        Udata {
            inbuf: inbuf.to_vec(),
            out_addr: out.as_mut_ptr() as u64,
            out_len: out.len(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers of the decoders and the handlers.

fn zext<T: FromBytes + IntoBytes>(bytes: &[u8]) -> T {
    let mut v = T::new_zeroed();
    let dst = v.as_mut_bytes();
    let n = dst.len().min(bytes.len());
    dst[..n].copy_from_slice(&bytes[..n]);
    v
}

const fn sz<T>() -> usize {
    std::mem::size_of::<T>()
}

/// Undoes a creation whose answer could not be written. A failure (a model bug: the object was
/// just created) is not printed; the command fails with the write's error either way.
fn undo(f: &File, st: &mut FileState, handle: u32, type_id: u16) {
    let _ = f.destroy(st, u64::from(handle), type_id);
}

// ---------------------------------------------------------------------------------------------
// The entry points.

// SAFETY: the kernel half keeps the kernel's contract with the driver: a successful command has
// written a newly created descriptor (`task::install_fd`, given away exactly once) into each of
// its new-fd attributes and fd response fields, and every write to user memory goes through
// `uaccess`, which copies at most the length the command gives for that pointer.
unsafe impl ModelFile for File {
    unsafe fn ioctl(&self, hdr: *mut uapi::ib_uverbs_ioctl_hdr) -> nix::Result<()> {
        self.user_ioctl(hdr as u64)
    }

    unsafe fn write(&self, cmd: &[u8]) -> nix::Result<usize> {
        self.user_write(cmd)
    }

    fn mmap(&self, len: usize, offset: u64) -> std::io::Result<memmap2::MmapRaw> {
        self.dev
            .mmaps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let r = self.do_mmap(len, offset);
        if r.is_err() {
            self.dev
                .failed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        r
    }

    fn reopen(&self) -> std::io::Result<uverbs_drivers::sys::ModelRef> {
        Ok(uverbs_drivers::sys::ModelRef(File::open(Arc::clone(
            &self.dev,
        ))))
    }
}

impl File {
    /// `ioctl(RDMA_VERBS_IOCTL)` with its header at `hdr` in the current task's memory
    /// (`crate::task`): this process's, or a daemon client's.
    pub(crate) fn user_ioctl(&self, hdr: u64) -> Result<(), Errno> {
        self.dev
            .ioctls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.guarded(|| self.ioctl_at(hdr))
    }

    /// `write()` of a legacy command, whose pointers name the current task's memory.
    pub(crate) fn user_write(&self, cmd: &[u8]) -> Result<usize, Errno> {
        self.dev
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.guarded(|| self.write_cmd(cmd))
    }

    /// `mmap()` for a client that maps the pages itself: the file and the offset in it that
    /// `len` bytes at `offset` of the device file are (counted as an mmap).
    pub(crate) fn user_mmap_source(
        &self,
        len: usize,
        offset: u64,
    ) -> std::io::Result<(OwnedFd, u64)> {
        self.dev
            .mmaps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let r = self.mmap_source(len, offset);
        if r.is_err() {
            self.dev
                .failed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        r
    }
}
