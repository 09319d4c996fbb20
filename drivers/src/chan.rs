//! The command channel: uverbs ioctl commands, write commands and the fallback between them.
//!
//! An [`IoctlCmd`] is the header and attribute array of one `RDMA_VERBS_IOCTL` call, built on the
//! stack. Its lifetime `'a` covers every buffer an attribute points to, so the kernel can only ever see
//! live memory. The [`Channel`] owns the open `uverbsN` file, knows the device's `driver_id` (which every
//! ioctl header must carry) and decides how a write-only verb reaches the kernel: through
//! `UVERBS_METHOD_INVOKE_WRITE` where the kernel has it, otherwise as a legacy `write()`. It also
//! remembers, as rdma-core does, when the kernel has no ioctl support at all (`ENOTTY`), so that verbs
//! with a write equivalent fall back to it.
//!
//! # Raw commands are `unsafe`
//!
//! Whether a value in a command is a user address is the kernel's business, not the type system's:
//! an attribute built with [`IoctlCmd::in_u64`] carries a raw address when the kernel's method
//! expects an output pointer there, a `REG_MR` request names the memory to register by address,
//! and driver data names buffers (mlx5's `CREATE_CQ`/`CREATE_QP`/`CREATE_SRQ` give the device the
//! ring and the doorbell record it then writes). So every function that sends a command its caller
//! composed — [`Channel::ioctl`], [`Channel::ioctl_or_write`], [`Channel::raw`], [`Channel::write`],
//! [`Channel::write_ex`], [`Channel::command`], [`Channel::write_legacy`] — is an `unsafe fn`
//! with the contract in [`Channel::ioctl`]'s and [`Channel::write`]'s `# Safety` sections, and the
//! device file itself is not lent out (a `write(2)` on it would bypass both). The commands this
//! channel builds itself ([`Channel::has_invoke_write`], [`Channel::ring_send_doorbell`]) are safe.

use std::marker::PhantomData;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::error::{Error, RawVerb, Result, Verb};
use crate::sys;

/// The most attributes one command carries (QP creation needs 17 with driver data).
pub const MAX_ATTRS: usize = 20;

const HDR_LEN: usize = std::mem::size_of::<uapi::ib_uverbs_ioctl_hdr>();
const ATTR_LEN: usize = std::mem::size_of::<uapi::ib_uverbs_attr>();

/// The memory of one ioctl command: the header directly followed by the attributes, as the kernel
/// reads it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct IoctlBuf {
    hdr: uapi::ib_uverbs_ioctl_hdr,
    attrs: [uapi::ib_uverbs_attr; MAX_ATTRS],
}

/// Where an attribute sits in its command, to read what the kernel wrote back into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot(usize);

/// One `RDMA_VERBS_IOCTL` command under construction.
///
/// Attributes are mandatory unless [`IoctlCmd::optional`] is called after adding one: the kernel then
/// ignores it if it does not know it, instead of failing the whole command with `EPROTONOSUPPORT`.
#[derive(Debug)]
pub struct IoctlCmd<'a> {
    buf: IoctlBuf,
    num_attrs: usize,
    /// The buffers the attributes point to are borrowed for `'a`.
    _buffers: PhantomData<&'a mut [u8]>,
}

impl<'a> IoctlCmd<'a> {
    /// A command for `method` of `object`.
    pub fn new(object: u16, method: u16) -> Self {
        let zero_attr = uapi::ib_uverbs_attr::default();
        IoctlCmd {
            buf: IoctlBuf {
                hdr: uapi::ib_uverbs_ioctl_hdr {
                    object_id: object,
                    method_id: method,
                    ..Default::default()
                },
                attrs: [zero_attr; MAX_ATTRS],
            },
            num_attrs: 0,
            _buffers: PhantomData,
        }
    }

    /// The object id of this command.
    pub fn object(&self) -> u16 {
        self.buf.hdr.object_id
    }

    /// The method id of this command.
    pub fn method(&self) -> u16 {
        self.buf.hdr.method_id
    }

    fn push(&mut self, attr_id: u16, len: usize, data: u64) -> Slot {
        assert!(
            self.num_attrs < MAX_ATTRS,
            "an ioctl command has room for {MAX_ATTRS} attributes; this is a bug in uverbs"
        );
        let len = u16::try_from(len).expect("attribute payloads are far below 64 KiB");
        let slot = self.num_attrs;
        self.buf.attrs[slot] = uapi::ib_uverbs_attr {
            attr_id,
            len,
            flags: uapi::UVERBS_ATTR_F_MANDATORY,
            attr_data: 0,
            data,
        };
        self.num_attrs += 1;
        Slot(slot)
    }

    /// Marks the attribute added last as optional.
    pub fn optional(&mut self) -> &mut Self {
        if let Some(a) = self.buf.attrs[..self.num_attrs].last_mut() {
            a.flags &= !uapi::UVERBS_ATTR_F_MANDATORY;
        }
        self
    }

    /// An 8-byte inline value: the form of `CONST_IN` attributes (port numbers, indices, types).
    pub fn in_u64(&mut self, attr_id: u16, value: u64) -> &mut Self {
        self.push(attr_id, 8, value);
        self
    }

    /// A 4-byte inline value (`PTR_IN` of a `u32`, or `FLAGS_IN`).
    pub fn in_u32(&mut self, attr_id: u16, value: u32) -> &mut Self {
        self.push(attr_id, 4, u64::from(value));
        self
    }

    /// An input buffer: inline in the attribute when it is at most 8 bytes, a pointer otherwise (the
    /// kernel's rule, `uverbs_attr_ptr_is_inline`).
    pub fn in_bytes(&mut self, attr_id: u16, data: &'a [u8]) -> &mut Self {
        let value = if data.len() <= 8 {
            let mut inline = [0u8; 8];
            inline[..data.len()].copy_from_slice(data);
            u64::from_ne_bytes(inline)
        } else {
            data.as_ptr() as u64
        };
        self.push(attr_id, data.len(), value);
        self
    }

    /// An input struct (see [`IoctlCmd::in_bytes`]).
    pub fn in_obj<T: IntoBytes + Immutable>(&mut self, attr_id: u16, value: &'a T) -> &mut Self {
        self.in_bytes(attr_id, value.as_bytes())
    }

    /// An output buffer, always passed by pointer. The kernel sets `VALID_OUTPUT` on the attribute when
    /// it wrote it; see [`IoctlCmd::output_valid`].
    pub fn out_bytes(&mut self, attr_id: u16, buf: &'a mut [u8]) -> Slot {
        self.push(attr_id, buf.len(), buf.as_mut_ptr() as u64)
    }

    /// An output struct (see [`IoctlCmd::out_bytes`]).
    pub fn out_obj<T: IntoBytes + FromBytes>(&mut self, attr_id: u16, value: &'a mut T) -> Slot {
        self.out_bytes(attr_id, value.as_mut_bytes())
    }

    /// A handle of an existing object (an `IDR` attribute).
    pub fn idr(&mut self, attr_id: u16, handle: u32) -> &mut Self {
        self.push(attr_id, 0, u64::from(handle));
        self
    }

    /// A new object: the kernel writes its handle back; read it with [`IoctlCmd::handle`].
    pub fn new_idr(&mut self, attr_id: u16) -> Slot {
        self.push(attr_id, 0, 0)
    }

    /// An existing file descriptor (an `FD` attribute).
    pub fn fd(&mut self, attr_id: u16, fd: BorrowedFd<'a>) -> &mut Self {
        use std::os::fd::AsRawFd;
        self.push(attr_id, 0, fd.as_raw_fd() as u64);
        self
    }

    /// A new file: the kernel writes its descriptor back; take it with [`IoctlCmd::take_fd`]. The
    /// attribute's value is -1 until then (the kernel ignores it for a new object), so that an
    /// answer that wrote none is told from descriptor 0.
    pub fn new_fd(&mut self, attr_id: u16) -> Slot {
        self.push(attr_id, 0, NO_FD as u64)
    }

    /// Driver-specific input (`UVERBS_ATTR_UHW_IN`), left out when empty.
    pub fn uhw_in(&mut self, data: &'a [u8]) -> &mut Self {
        if !data.is_empty() {
            self.in_bytes(uapi::UVERBS_ATTR_UHW_IN, data).optional();
        }
        self
    }

    /// Driver-specific output (`UVERBS_ATTR_UHW_OUT`), left out when empty.
    pub fn uhw_out(&mut self, buf: &'a mut [u8]) -> &mut Self {
        if !buf.is_empty() {
            self.out_bytes(uapi::UVERBS_ATTR_UHW_OUT, buf);
            self.optional();
        }
        self
    }

    /// The handle the kernel returned for a new object.
    pub fn handle(&self, slot: Slot) -> u32 {
        self.buf.attrs[slot.0].data as u32
    }

    /// The file the kernel created for a new-fd attribute ([`IoctlCmd::new_fd`]); an error naming
    /// `verb` when the attribute holds no descriptor number (nothing wrote it).
    ///
    /// # Safety
    /// Call at most once per slot, and only after the command succeeded: the descriptor is then a fresh
    /// one that nobody else owns.
    pub unsafe fn take_fd(&self, verb: Verb, slot: Slot) -> Result<OwnedFd> {
        let fd = written_fd(verb, self.buf.attrs[slot.0].data as i64)?;
        // SAFETY: per this function's contract the command succeeded, so the number written into
        // the attribute (it held -1 before) is the descriptor the kernel installed for it, and this
        // is the only place that takes it.
        Ok(unsafe { sys::adopt_fd(fd) })
    }

    /// Whether the kernel wrote an output attribute (`UVERBS_ATTR_F_VALID_OUTPUT`).
    pub fn output_valid(&self, slot: Slot) -> bool {
        self.buf.attrs[slot.0].flags & uapi::UVERBS_ATTR_F_VALID_OUTPUT != 0
    }

    /// Fills in the header for `driver_id` and returns the bytes the kernel will read.
    fn seal(&mut self, driver_id: u32) -> usize {
        let len = HDR_LEN + ATTR_LEN * self.num_attrs;
        self.buf.hdr.length = len as u16;
        self.buf.hdr.num_attrs = self.num_attrs as u16;
        self.buf.hdr.driver_id = driver_id;
        len
    }

    /// The header and attributes exactly as the kernel will read them (for tests and tracing).
    pub fn to_bytes(&mut self, driver_id: u32) -> Vec<u8> {
        let len = self.seal(driver_id);
        let mut out = self.buf.hdr.as_bytes().to_vec();
        out.extend_from_slice(self.buf.attrs.as_bytes());
        out.truncate(len);
        out
    }
}

/// What an answer's descriptor field holds until the kernel writes a descriptor there: the crate
/// fills new-fd attributes ([`IoctlCmd::new_fd`]) and the descriptor fields of write commands'
/// responses (`async_fd` of `GET_CONTEXT`, `fd` of `CREATE_COMP_CHANNEL`, as `u32::MAX`) with it
/// before the command, and adopts only a number that replaced it ([`written_fd`]).
pub const NO_FD: RawFd = -1;

/// The descriptor number an answer's field holds (`value`, read as the kernel's signed `int`), if
/// it holds one: refused with an error naming `verb` while it still holds [`NO_FD`] (nothing wrote
/// it: a file that is not the kernel's took the command and answered nothing) or any other
/// negative or out-of-range value.
pub fn written_fd(verb: Verb, value: i64) -> Result<RawFd> {
    match RawFd::try_from(value) {
        Ok(fd) if fd >= 0 => Ok(fd),
        Ok(NO_FD) => Err(Error::Protocol {
            verb,
            what: "the command succeeded but wrote no descriptor into its answer".into(),
        }),
        _ => Err(Error::Protocol {
            verb,
            what: format!("descriptor {value} in the answer"),
        }),
    }
}

/// How an ioctl attempt ended when a write fallback exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The kernel ran the ioctl.
    Done,
    /// The kernel has no ioctl for this (ENOTTY or EPROTONOSUPPORT): use the write command.
    UseWrite,
}

const INVOKE_WRITE_UNKNOWN: u8 = 0;
const INVOKE_WRITE_YES: u8 = 1;
const INVOKE_WRITE_NO: u8 = 2;

/// How commands reach the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommandPath {
    /// The ioctl interface, falling back to `write()` where the kernel lacks a method (the default).
    #[default]
    Auto,
    /// Only the legacy `write()` commands, as on kernels before the ioctl interface; verbs without a
    /// write command use sysfs where rdma-core does. For testing the fallback on a modern kernel, and
    /// selected by `UVERBS_COMMAND_PATH=write`.
    LegacyWrite,
}

impl CommandPath {
    /// The path chosen by the environment: `UVERBS_COMMAND_PATH=write` selects
    /// [`CommandPath::LegacyWrite`], anything else (or nothing) [`CommandPath::Auto`].
    pub fn from_env() -> CommandPath {
        match std::env::var("UVERBS_COMMAND_PATH").as_deref() {
            Ok("write") => CommandPath::LegacyWrite,
            _ => CommandPath::Auto,
        }
    }
}

/// An open uverbs device file and the rules for talking to it.
#[derive(Debug)]
pub struct Channel {
    file: sys::DeviceFile,
    driver_id: u32,
    /// Set once the kernel answered ENOTTY: it has no `RDMA_VERBS_IOCTL` at all.
    no_ioctl: std::sync::atomic::AtomicBool,
    invoke_write: AtomicU8,
}

impl Channel {
    /// Opens `path`, a uverbs character device (`/dev/infiniband/uverbsN`), for a device whose
    /// driver has `driver_id`; where `dev` is given, it must be that device's number (what sysfs
    /// says).
    ///
    /// Anything but a uverbs character device is refused with [`Error::NotAUverbsDevice`] before a
    /// command is written to it: a path that is not a character device is not even opened, and a
    /// character device must be filed under `infiniband_verbs` in sysfs
    /// (`dev/char/MAJ:MIN/subsystem` under [`sys::sysfs_root`], the tree discovery reads). The file
    /// is checked again once open (the path may name another file by then). The channel's commands
    /// carry pointers the kernel writes through, and their answers name descriptors the crate
    /// adopts: another file would take them under its own protocol, or (a regular file, a
    /// `/dev/null`) accept them and answer nothing.
    pub fn open(path: &Path, dev: Option<(u32, u32)>, driver_id: u32) -> Result<Channel> {
        let st = nix::sys::stat::stat(path).map_err(|e| Error::kernel(Verb::OpenDevice, e))?;
        check_uverbs_device(path, &st, dev)?;
        let fd = sys::open_device(path).map_err(|e| Error::kernel(Verb::OpenDevice, e))?;
        let opened = nix::sys::stat::fstat(&fd).map_err(|e| Error::kernel(Verb::OpenDevice, e))?;
        check_uverbs_device(path, &opened, dev)?;
        Ok(Channel::from_fd(fd, driver_id))
    }

    /// Wraps an already open device file.
    pub fn from_fd(fd: OwnedFd, driver_id: u32) -> Channel {
        Channel::from_file(sys::DeviceFile::Kernel(fd), driver_id)
    }

    /// Wraps a device file: the kernel's or a model's.
    pub fn from_file(file: sys::DeviceFile, driver_id: u32) -> Channel {
        Channel {
            file,
            driver_id,
            no_ioctl: std::sync::atomic::AtomicBool::new(false),
            invoke_write: AtomicU8::new(INVOKE_WRITE_UNKNOWN),
        }
    }

    /// Restricts the channel to `path`: with [`CommandPath::LegacyWrite`] it behaves as on a kernel
    /// without the ioctl interface.
    pub fn set_path(&self, path: CommandPath) {
        let legacy = path == CommandPath::LegacyWrite;
        self.no_ioctl.store(legacy, Ordering::Relaxed);
        let iw = if legacy {
            INVOKE_WRITE_NO
        } else {
            INVOKE_WRITE_UNKNOWN
        };
        self.invoke_write.store(iw, Ordering::Relaxed);
    }

    /// Whether the channel uses only legacy `write()` commands (the kernel has no ioctl interface, or
    /// [`CommandPath::LegacyWrite`] was chosen).
    pub fn is_legacy(&self) -> bool {
        self.no_ioctl.load(Ordering::Relaxed)
    }

    /// The model file the channel talks to, if it talks to a model ([`sys::ModelFile`]; the
    /// model's tests send it commands of their own). A kernel device file is never handed out: a
    /// descriptor of it would let safe code `write(2)` any command, bypassing the contracts of the
    /// functions below; a model's commands are `unsafe fn`s with those contracts.
    pub fn model_file(&self) -> Option<&sys::ModelRef> {
        match &self.file {
            sys::DeviceFile::Kernel(_) => None,
            sys::DeviceFile::Model(m) => Some(m),
        }
    }

    /// Maps `len` bytes of the device file at `offset`: queue rings, doorbell and BlueFlame pages. A
    /// failure is an [`Verb::Mmap`] error with the errno.
    pub fn map(&self, len: usize, offset: u64) -> Result<memmap2::MmapRaw> {
        self.file.mmap(len, offset).map_err(|e| {
            Error::kernel(
                Verb::Mmap,
                Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
            )
        })
    }

    /// [`Channel::map`], read-only (a page the kernel refuses to map writable).
    pub fn map_read_only(&self, len: usize, offset: u64) -> Result<memmap2::MmapRaw> {
        self.file.mmap_read_only(len, offset).map_err(|e| {
            Error::kernel(
                Verb::Mmap,
                Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
            )
        })
    }

    /// The `enum rdma_driver_id` value every ioctl header carries.
    pub fn driver_id(&self) -> u32 {
        self.driver_id
    }

    /// Runs an ioctl command; any failure is an error naming `verb`.
    ///
    /// # Safety
    /// Every user address the kernel (or, through it, the device) will use because of this command
    /// must be valid for that use for as long as it lasts:
    ///
    /// * an attribute the kernel's method reads or writes through a pointer must have been added
    ///   with [`IoctlCmd::in_bytes`], [`IoctlCmd::in_obj`], [`IoctlCmd::out_bytes`],
    ///   [`IoctlCmd::out_obj`], [`IoctlCmd::uhw_in`] or [`IoctlCmd::uhw_out`] (whose lifetimes keep
    ///   the buffer alive for the call), never as a number ([`IoctlCmd::in_u64`],
    ///   [`IoctlCmd::in_u32`]) that the kernel would take for an address;
    /// * an address inside a request or driver data (a region to register, a ring or doorbell
    ///   record the device writes) must name memory the caller owns for it, that nothing else
    ///   reads or writes in ways that race with the device, and that stays allocated until the
    ///   kernel object using it is destroyed (or, for one command, until it returns);
    /// * the command must not destroy or change a kernel object that another owner (a safe wrapper
    ///   of this crate or of `uverbs`) relies on.
    pub unsafe fn ioctl(&self, verb: Verb, cmd: &mut IoctlCmd<'_>) -> Result<()> {
        // SAFETY: the caller keeps this function's contract, which is `raw_ioctl`'s.
        unsafe { self.raw_ioctl(cmd) }.map_err(|e| Error::kernel(verb, e))
    }

    /// Runs an ioctl command for a verb that also has a write command: when the kernel has no ioctl
    /// support, or not this method (or a mandatory attribute of it), returns [`Outcome::UseWrite`]
    /// instead of an error (rdma-core's `execute_ioctl_fallback`).
    ///
    /// # Safety
    /// As [`Channel::ioctl`].
    pub unsafe fn ioctl_or_write(&self, verb: Verb, cmd: &mut IoctlCmd<'_>) -> Result<Outcome> {
        if self.no_ioctl.load(Ordering::Relaxed) {
            return Ok(Outcome::UseWrite);
        }
        // SAFETY: the caller keeps this function's contract, which is `raw_ioctl`'s.
        match unsafe { self.raw_ioctl(cmd) } {
            Ok(()) => Ok(Outcome::Done),
            Err(Errno::ENOTTY) => {
                self.no_ioctl.store(true, Ordering::Relaxed);
                Ok(Outcome::UseWrite)
            }
            Err(Errno::EPROTONOSUPPORT) => Ok(Outcome::UseWrite),
            Err(e) => Err(Error::kernel(verb, e)),
        }
    }

    /// # Safety
    /// As [`Channel::ioctl`].
    unsafe fn raw_ioctl(&self, cmd: &mut IoctlCmd<'_>) -> nix::Result<()> {
        cmd.seal(self.driver_id);
        let hdr = std::ptr::addr_of_mut!(cmd.buf).cast::<uapi::ib_uverbs_ioctl_hdr>();
        // SAFETY: `IoctlBuf` is the header directly followed by the attribute array (repr(C), and the
        // header's 24 bytes keep the 8-byte-aligned attributes contiguous), `seal` set `length` and
        // `num_attrs` to cover only initialised attributes, and every pointer attribute was made from a
        // slice borrowed for `'a`, which outlives `cmd`; that no other attribute or driver data is
        // taken for an address of memory the caller does not own for it is this function's
        // contract.
        unsafe { self.file.ioctl(hdr) }
    }

    /// Whether write commands can travel as `INVOKE_WRITE` ioctls (probed once, as rdma-core does:
    /// `INVOKE_WRITE` of `QUERY_DEVICE` without its core attributes must fail with anything but
    /// ENOTTY/EPROTONOSUPPORT).
    pub fn has_invoke_write(&self) -> bool {
        match self.invoke_write.load(Ordering::Relaxed) {
            INVOKE_WRITE_YES => return true,
            INVOKE_WRITE_NO => return false,
            _ => {}
        }
        let yes = if self.no_ioctl.load(Ordering::Relaxed) {
            false
        } else {
            let mut cmd =
                IoctlCmd::new(uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_INVOKE_WRITE);
            cmd.in_u64(
                uapi::UVERBS_ATTR_WRITE_CMD,
                u64::from(uapi::IB_USER_VERBS_CMD_QUERY_DEVICE),
            );
            // SAFETY: INVOKE_WRITE of QUERY_DEVICE with only the command number: no attribute is
            // a pointer and there is no request, so the kernel touches no user memory.
            match unsafe { self.raw_ioctl(&mut cmd) } {
                Err(Errno::ENOTTY) => {
                    self.no_ioctl.store(true, Ordering::Relaxed);
                    false
                }
                Err(Errno::EPROTONOSUPPORT) => false,
                _ => true,
            }
        };
        self.invoke_write.store(
            if yes {
                INVOKE_WRITE_YES
            } else {
                INVOKE_WRITE_NO
            },
            Ordering::Relaxed,
        );
        yes
    }

    /// Sends a write command: `req` is the core request (for commands with a response, starting with
    /// the `response` pointer field, which this fills in), `resp` the core response (`()` for none),
    /// `drv_in`/`drv_out` the driver's udata.
    ///
    /// # Safety
    /// The `response` field is filled in here and `resp`/`drv_out` are borrowed for the call, but
    /// what `command` means is the kernel's: any address in `req` or `drv_in` (`REG_MR`'s range,
    /// mlx5's ring and doorbell record, a work request list) must keep [`Channel::ioctl`]'s
    /// contract, as must the effect of the command on objects other owners rely on.
    pub unsafe fn write<Req, Resp>(
        &self,
        verb: Verb,
        command: u32,
        req: &mut Req,
        resp: &mut Resp,
        drv_in: &[u8],
        drv_out: &mut [u8],
    ) -> Result<()>
    where
        Req: IntoBytes + FromBytes + Immutable + KnownLayout,
        Resp: IntoBytes + FromBytes + Immutable + KnownLayout,
    {
        // SAFETY: the caller keeps this function's contract, which is `write_any`'s.
        unsafe {
            self.write_any(
                verb,
                command,
                false,
                req.as_mut_bytes(),
                resp.as_mut_bytes(),
                drv_in,
                drv_out,
            )
        }
    }

    /// Sends a write command that has neither a response nor driver data (destroys, modifies,
    /// notifications): `req` is the whole core request.
    ///
    /// # Safety
    /// As [`Channel::write`].
    pub unsafe fn command<Req>(&self, verb: Verb, command: u32, req: &mut Req) -> Result<()>
    where
        Req: IntoBytes + FromBytes + Immutable + KnownLayout,
    {
        // SAFETY: the caller keeps this function's contract, which is `write`'s.
        unsafe { self.write(verb, command, req, &mut (), &[], &mut []) }
    }

    /// Sends an extended write command (`IB_USER_VERBS_EX_CMD_*`): `req` and `resp` are the core
    /// structs, which have no `response` field.
    ///
    /// # Safety
    /// As [`Channel::write`].
    pub unsafe fn write_ex<Req, Resp>(
        &self,
        verb: Verb,
        command: u32,
        req: &mut Req,
        resp: &mut Resp,
        drv_in: &[u8],
        drv_out: &mut [u8],
    ) -> Result<()>
    where
        Req: IntoBytes + FromBytes + Immutable + KnownLayout,
        Resp: IntoBytes + FromBytes + Immutable + KnownLayout,
    {
        // SAFETY: the caller keeps this function's contract, which is `write_any`'s.
        unsafe {
            self.write_any(
                verb,
                command,
                true,
                req.as_mut_bytes(),
                resp.as_mut_bytes(),
                drv_in,
                drv_out,
            )
        }
    }

    /// # Safety
    /// As [`Channel::write`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn write_any(
        &self,
        verb: Verb,
        command: u32,
        extended: bool,
        req: &mut [u8],
        resp: &mut [u8],
        drv_in: &[u8],
        drv_out: &mut [u8],
    ) -> Result<()> {
        let full_command = if extended {
            command | uapi::IB_USER_VERBS_CMD_FLAG_EXTENDED
        } else {
            command
        };
        if self.has_invoke_write() {
            let mut cmd =
                IoctlCmd::new(uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_INVOKE_WRITE);
            cmd.in_u64(uapi::UVERBS_ATTR_WRITE_CMD, u64::from(full_command));
            cmd.in_bytes(uapi::UVERBS_ATTR_CORE_IN, req);
            if !resp.is_empty() {
                cmd.out_bytes(uapi::UVERBS_ATTR_CORE_OUT, resp);
            }
            cmd.uhw_in(drv_in).uhw_out(drv_out);
            // SAFETY: the pointer attributes are the slices just added; what `req` and `drv_in`
            // name is the caller's contract.
            return unsafe { self.ioctl(verb, &mut cmd) };
        }
        let cmd = legacy_write_buffer(
            full_command,
            extended,
            req,
            resp.len(),
            drv_in,
            drv_out.len(),
        )
        .map_err(|what| Error::InvalidArgument { verb, what })?;
        // The core response as the caller filled it (the kernel writes all of it on success, or
        // zeroes what it has no field for): a descriptor field the caller set to `NO_FD` stays so
        // unless it is written.
        let mut out = vec![0u8; cmd.out_len];
        out[..resp.len()].copy_from_slice(resp);
        // SAFETY: `send` points the response field at `out`; what `req` and `drv_in` name is the
        // caller's contract.
        unsafe { cmd.send(&self.file, &mut out) }.map_err(|e| Error::kernel(verb, e))?;
        let (core, driver) = out.split_at(resp.len());
        resp.copy_from_slice(core);
        drv_out.copy_from_slice(driver);
        Ok(())
    }

    /// Sends a command by number as a raw `write()` in the legacy format, bypassing `INVOKE_WRITE`. This
    /// is how rdma-core rings the rxe send doorbell (`POST_SEND` with no work requests).
    ///
    /// # Safety
    /// As [`Channel::write`].
    pub unsafe fn write_legacy<Req, Resp>(
        &self,
        verb: Verb,
        command: u32,
        req: &mut Req,
        resp: &mut Resp,
    ) -> Result<()>
    where
        Req: IntoBytes + FromBytes + Immutable + KnownLayout,
        Resp: IntoBytes + FromBytes + Immutable + KnownLayout,
    {
        let resp = resp.as_mut_bytes();
        let cmd = legacy_write_buffer(command, false, req.as_mut_bytes(), resp.len(), &[], 0)
            .map_err(|what| Error::InvalidArgument { verb, what })?;
        // SAFETY: `send` points the response field at `resp`; what `req` names is the caller's
        // contract.
        unsafe { cmd.send(&self.file, resp) }.map_err(|e| Error::kernel(verb, e))?;
        Ok(())
    }

    /// The rxe send doorbell: a `POST_SEND` write command with no work requests, which makes the
    /// kernel look at the queue pair's send ring (rdma-core's `post_send_db`). One `write()` of the
    /// 32 bytes [`SendDoorbell`] built when the queue pair was created, never `INVOKE_WRITE`.
    #[inline]
    pub fn ring_send_doorbell(&self, db: &SendDoorbell) -> Result<()> {
        // SAFETY: the only user pointer in the command is `response`, which points to `db.resp`, a
        // live 4-byte `ib_uverbs_post_send_resp` (out_words = 1) that no Rust code reads as plain
        // memory (an atomic, which the kernel may store to during any poster's call).
        let n =
            unsafe { self.file.write(&db.cmd) }.map_err(|e| Error::kernel(Verb::PostSend, e))?;
        if n != db.cmd.len() {
            return Err(short_doorbell(n));
        }
        Ok(())
    }

    /// A raw ioctl by ids, for tools and tests: the error names the ids.
    ///
    /// # Safety
    /// As [`Channel::ioctl`].
    pub unsafe fn raw(&self, cmd: &mut IoctlCmd<'_>) -> Result<()> {
        let verb = Verb::Raw(RawVerb::Ioctl(cmd.object(), cmd.method()));
        // SAFETY: the caller keeps this function's contract, which is `ioctl`'s.
        unsafe { self.ioctl(verb, cmd) }
    }
}

/// Checks that `st` (of `path`) is a uverbs character device, and device `expected` where that is
/// given (see [`Channel::open`]).
fn check_uverbs_device(
    path: &Path,
    st: &nix::sys::stat::FileStat,
    expected: Option<(u32, u32)>,
) -> Result<()> {
    let refuse = |what: String| {
        Err(Error::NotAUverbsDevice {
            path: path.to_owned(),
            what,
        })
    };
    let kind = st.st_mode & libc::S_IFMT;
    if kind != libc::S_IFCHR {
        let what = match kind {
            libc::S_IFREG => "a regular file",
            libc::S_IFDIR => "a directory",
            libc::S_IFIFO => "a FIFO",
            libc::S_IFSOCK => "a socket",
            libc::S_IFBLK => "a block device",
            _ => "not a character device",
        };
        return refuse(what.into());
    }
    let actual = (
        nix::sys::stat::major(st.st_rdev) as u32,
        nix::sys::stat::minor(st.st_rdev) as u32,
    );
    if let Some(expected) = expected {
        if actual != expected {
            return refuse(format!(
                "character device {}:{}, sysfs says the device is {}:{}",
                actual.0, actual.1, expected.0, expected.1
            ));
        }
    }
    let root = sys::sysfs_root();
    match sys::char_device_subsystem(&root, actual) {
        Ok(s) if s == "infiniband_verbs" => Ok(()),
        Ok(s) => refuse(format!(
            "character device {}:{} of subsystem {}",
            actual.0,
            actual.1,
            s.to_string_lossy()
        )),
        Err(e) => refuse(format!(
            "character device {}:{}, whose subsystem {} does not say ({e})",
            actual.0,
            actual.1,
            root.join("dev/char").display()
        )),
    }
}

/// A legacy `write()` command, laid out but with its response pointer still to be filled in.
#[derive(Debug)]
struct LegacyWrite {
    /// The bytes to write.
    bytes: Vec<u8>,
    /// Where in `bytes` the 8-byte response pointer goes, for commands that have one.
    response_at: Option<usize>,
    /// The bytes the kernel writes back: the core response, then the driver's response.
    out_len: usize,
}

/// Lays out a legacy write command (uverbs_main.c `ib_uverbs_write`): a non-extended command counts
/// its whole length in 4-byte words and carries its response pointer in the first 8 bytes of `req`; an
/// extended one counts the core and driver parts separately in 8-byte words, after a second header that
/// holds the response pointer.
fn legacy_write_buffer(
    command: u32,
    extended: bool,
    req: &[u8],
    resp_len: usize,
    drv_in: &[u8],
    drv_out_len: usize,
) -> Result<LegacyWrite, String> {
    let words = |n: usize, unit: usize, what: &str| -> Result<u16, String> {
        if n % unit != 0 {
            return Err(format!("{what} is {n} bytes, not a multiple of {unit}"));
        }
        u16::try_from(n / unit).map_err(|_| format!("{what} is too long ({n} bytes)"))
    };
    let mut bytes = Vec::with_capacity(32 + req.len() + drv_in.len());
    let response_at;
    if extended {
        let hdr = uapi::ib_uverbs_cmd_hdr {
            command,
            in_words: words(req.len(), 8, "request")?,
            out_words: words(resp_len, 8, "response")?,
        };
        let ex = uapi::ib_uverbs_ex_cmd_hdr {
            response: 0,
            provider_in_words: words(drv_in.len(), 8, "driver request")?,
            provider_out_words: words(drv_out_len, 8, "driver response")?,
            cmd_hdr_reserved: 0,
        };
        bytes.extend_from_slice(hdr.as_bytes());
        response_at = bytes.len();
        bytes.extend_from_slice(ex.as_bytes());
    } else {
        let total_in = std::mem::size_of::<uapi::ib_uverbs_cmd_hdr>() + req.len() + drv_in.len();
        let hdr = uapi::ib_uverbs_cmd_hdr {
            command,
            in_words: words(total_in, 4, "request")?,
            out_words: words(resp_len + drv_out_len, 4, "response")?,
        };
        bytes.extend_from_slice(hdr.as_bytes());
        response_at = bytes.len();
        if resp_len > 0 && req.len() < 8 {
            return Err("a command with a response must start with the response pointer".into());
        }
    }
    bytes.extend_from_slice(req);
    bytes.extend_from_slice(drv_in);
    let has_response_field = extended || resp_len > 0;
    Ok(LegacyWrite {
        bytes,
        response_at: has_response_field.then_some(response_at),
        out_len: resp_len + drv_out_len,
    })
}

impl LegacyWrite {
    /// Points the command's response field at `out` and writes it.
    ///
    /// # Safety
    /// Any address in the request or driver data keeps [`Channel::write`]'s contract.
    unsafe fn send(mut self, file: &sys::DeviceFile, out: &mut [u8]) -> nix::Result<usize> {
        debug_assert_eq!(out.len(), self.out_len);
        if let Some(at) = self.response_at {
            let ptr = if out.is_empty() {
                0
            } else {
                out.as_mut_ptr() as u64
            };
            self.bytes[at..at + 8].copy_from_slice(&ptr.to_ne_bytes());
        }
        // SAFETY: the response field just written points to `out`, live for the call and exactly as
        // long as the output the header announces (null when none is announced); any other address
        // in the command is valid by this function's contract.
        unsafe { file.write(&self.bytes) }
    }
}

/// A send doorbell of one queue pair, built once: the 32-byte `POST_SEND` command with no work
/// requests (which tells the kernel to process the send queue: rxe's `post_send_db`), and the
/// answer it points to. Boxed, so that the pointer in the command stays valid.
#[derive(Debug)]
pub struct SendDoorbell {
    cmd: [u8; 32],
    /// The kernel's `ib_uverbs_post_send_resp` (`bad_wr`, always 0 here), written by the kernel
    /// during every doorbell and never read.
    resp: std::sync::atomic::AtomicU32,
}

impl SendDoorbell {
    /// The doorbell of the queue pair `qp_handle`.
    pub fn new(qp_handle: u32) -> Box<SendDoorbell> {
        let mut db = Box::new(SendDoorbell {
            cmd: [0; 32],
            resp: std::sync::atomic::AtomicU32::new(0),
        });
        let hdr = uapi::ib_uverbs_cmd_hdr {
            command: uapi::IB_USER_VERBS_CMD_POST_SEND,
            in_words: 8,
            out_words: 1,
        };
        let req = uapi::ib_uverbs_post_send {
            response: db.resp.as_ptr() as u64,
            qp_handle,
            wr_count: 0,
            sge_count: 0,
            // sizeof(struct ibv_send_wr): the kernel checks it is at least its own send WR's size even
            // when no WR follows.
            wqe_size: 128,
        };
        db.cmd[..8].copy_from_slice(hdr.as_bytes());
        db.cmd[8..].copy_from_slice(req.as_bytes());
        db
    }
}

#[cold]
fn short_doorbell(n: usize) -> Error {
    Error::Protocol {
        verb: Verb::PostSend,
        what: format!("the doorbell write took {n} of 32 bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(bytes: &[u8], i: usize) -> uapi::ib_uverbs_attr {
        uapi::ib_uverbs_attr::read_from_bytes(
            &bytes[HDR_LEN + i * ATTR_LEN..HDR_LEN + (i + 1) * ATTR_LEN],
        )
        .unwrap()
    }

    #[test]
    fn header_counts_attributes_and_carries_driver_id() {
        let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_QUERY_PORT);
        cmd.in_u64(uapi::UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
        let mut resp = uapi::ib_uverbs_query_port_resp_ex::default();
        let resp_ptr = resp.as_mut_bytes().as_mut_ptr() as u64;
        cmd.out_obj(uapi::UVERBS_ATTR_QUERY_PORT_RESP, &mut resp);
        let bytes = cmd.to_bytes(uapi::RDMA_DRIVER_RXE);
        assert_eq!(bytes.len(), 24 + 2 * 16);
        let hdr = uapi::ib_uverbs_ioctl_hdr::read_from_bytes(&bytes[..24]).unwrap();
        assert_eq!(hdr.length, 56);
        assert_eq!(hdr.object_id, uapi::UVERBS_OBJECT_DEVICE);
        assert_eq!(hdr.method_id, uapi::UVERBS_METHOD_QUERY_PORT);
        assert_eq!(hdr.num_attrs, 2);
        assert_eq!(hdr.driver_id, 14);
        assert_eq!((hdr.reserved1, hdr.reserved2), (0, 0));
        let port = attr(&bytes, 0);
        assert_eq!(
            (port.attr_id, port.len, port.flags, port.data),
            (0, 8, 1, 1)
        );
        let out = attr(&bytes, 1);
        assert_eq!((out.len as usize, out.flags, out.data), (48, 1, resp_ptr));
    }

    #[test]
    fn small_inputs_are_inline_large_ones_by_pointer() {
        let small = [1u8, 2, 3, 4, 5];
        let large = [7u8; 9];
        let mut cmd = IoctlCmd::new(3, 0);
        cmd.in_bytes(1, &small).in_bytes(2, &large);
        let bytes = cmd.to_bytes(0);
        let a = attr(&bytes, 0);
        assert_eq!(a.len, 5);
        assert_eq!(a.data.to_ne_bytes(), [1, 2, 3, 4, 5, 0, 0, 0]);
        let b = attr(&bytes, 1);
        assert_eq!(b.len, 9);
        assert_eq!(b.data, large.as_ptr() as u64);
    }

    #[test]
    fn optional_clears_mandatory_and_empty_udata_is_left_out() {
        let mut out = [0u8; 16];
        let mut cmd = IoctlCmd::new(3, 0);
        cmd.new_idr(0);
        cmd.in_u32(4, 9).optional();
        cmd.uhw_in(&[]).uhw_out(&mut out);
        let bytes = cmd.to_bytes(1);
        assert_eq!(bytes.len(), 24 + 3 * 16);
        assert_eq!(attr(&bytes, 0).flags, uapi::UVERBS_ATTR_F_MANDATORY);
        assert_eq!(attr(&bytes, 1).flags, 0);
        let uhw = attr(&bytes, 2);
        assert_eq!(
            (uhw.attr_id, uhw.flags, uhw.len),
            (uapi::UVERBS_ATTR_UHW_OUT, 0, 16)
        );
    }

    #[test]
    fn legacy_write_counts_words_and_places_the_response_pointer() {
        // QUERY_PORT: {response u64, port_num u8, reserved[7]} → 40-byte response.
        let req = [0u8; 16];
        let lw = legacy_write_buffer(uapi::IB_USER_VERBS_CMD_QUERY_PORT, false, &req, 40, &[], 0)
            .unwrap();
        assert_eq!(lw.bytes.len(), 24);
        let hdr = uapi::ib_uverbs_cmd_hdr::read_from_bytes(&lw.bytes[..8]).unwrap();
        assert_eq!((hdr.command, hdr.in_words, hdr.out_words), (2, 6, 10));
        assert_eq!(lw.response_at, Some(8));
        assert_eq!(lw.out_len, 40);
    }

    #[test]
    fn legacy_extended_write_has_the_second_header() {
        let req = [0u8; 8];
        let drv_out = 16;
        let lw = legacy_write_buffer(
            uapi::IB_USER_VERBS_EX_CMD_QUERY_DEVICE | uapi::IB_USER_VERBS_CMD_FLAG_EXTENDED,
            true,
            &req,
            304,
            &[],
            drv_out,
        )
        .unwrap();
        assert_eq!(lw.bytes.len(), 8 + 16 + 8);
        let hdr = uapi::ib_uverbs_cmd_hdr::read_from_bytes(&lw.bytes[..8]).unwrap();
        assert_eq!(
            (hdr.command, hdr.in_words, hdr.out_words),
            (0x8000_0001, 1, 38)
        );
        let ex = uapi::ib_uverbs_ex_cmd_hdr::read_from_bytes(&lw.bytes[8..24]).unwrap();
        assert_eq!((ex.provider_in_words, ex.provider_out_words), (0, 2));
        assert_eq!(lw.response_at, Some(8));
        assert_eq!(lw.out_len, 320);
    }

    #[test]
    fn legacy_write_rejects_unaligned_lengths() {
        let err = legacy_write_buffer(2, false, &[0u8; 16], 41, &[], 0).unwrap_err();
        assert!(err.contains("multiple of 4"), "{err}");
    }
}
