//! An open device file and the user context the kernel allocated on it (`struct ib_ucontext`): the
//! command channel, the async event file, and the query verbs. Nothing here depends on the backend:
//! [`crate::verbs::DeviceContext`] pairs a `Ucontext` with its backend's context.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::chan::{written_fd, Channel, CommandPath, IoctlCmd, Outcome, NO_FD};
use crate::discover::DeviceInfo;
use crate::error::{Error, Result, Verb};
use crate::event;
use crate::sys;

/// What `QUERY_DEVICE` returned: the extended response where the kernel has it.
#[derive(Debug, Clone)]
pub struct DeviceAttrs {
    /// The response; when `extended` is false only its `base` is filled.
    pub resp: uapi::ib_uverbs_ex_query_device_resp,
    /// Whether this came from `EX_QUERY_DEVICE`.
    pub extended: bool,
}

/// An open device file with its user context: what every backend's objects are created on.
#[derive(Debug)]
pub struct Ucontext {
    chan: Channel,
    info: DeviceInfo,
    async_fd: OwnedFd,
    num_comp_vectors: u32,
    core_support: Option<u64>,
}

impl Ucontext {
    /// Opens the device and allocates a user context on it (`GET_CONTEXT`) on command path `path`,
    /// with the backend's driver data: `drv_in` is sent, and the driver's answer is written into
    /// `drv_out`.
    pub fn open(
        info: &DeviceInfo,
        path: CommandPath,
        drv_in: &[u8],
        drv_out: &mut [u8],
    ) -> Result<Ucontext> {
        let chan = match &info.model {
            // A context of its own on a newly opened file, as with a kernel device node.
            Some(model) => {
                let file = model.0.reopen().map_err(|e| {
                    Error::kernel(
                        Verb::OpenDevice,
                        Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)),
                    )
                })?;
                Channel::from_file(sys::DeviceFile::Model(file), info.driver.id())
            }
            None => Channel::open(&info.devnode, info.dev, info.driver.id())?,
        };
        chan.set_path(path);
        let (async_fd, num_comp_vectors, core_support) = get_context(&chan, drv_in, drv_out)?;
        // Non-blocking, so that reactors can drive it; `crate::event` waits by polling first.
        sys::set_nonblocking(async_fd.as_fd()).map_err(|e| Error::kernel(Verb::GetContext, e))?;
        Ok(Ucontext {
            chan,
            info: info.clone(),
            async_fd,
            num_comp_vectors,
            core_support,
        })
    }

    /// The command channel.
    #[inline]
    pub fn channel(&self) -> &Channel {
        &self.chan
    }

    /// What discovery knew of the device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The device's async event file (readable with `ib_uverbs_async_event_desc` records; non-blocking,
    /// see [`Ucontext::read_async_event`]).
    pub fn async_fd(&self) -> BorrowedFd<'_> {
        self.async_fd.as_fd()
    }

    /// Takes the next event of the device's async event file, waiting up to `timeout` (`None`:
    /// forever, `Some(ZERO)`: not at all).
    ///
    /// The kernel queues an event of a CQ, QP or SRQ only if the object was created with this file
    /// as its event file (the create commands here pass it), and events of the ports always.
    pub fn read_async_event(
        &self,
        timeout: Option<Duration>,
    ) -> Result<Option<uapi::ib_uverbs_async_event_desc>> {
        event::read_async_event(self.async_fd(), timeout)
    }

    /// The number of completion vectors.
    pub fn num_comp_vectors(&self) -> u32 {
        self.num_comp_vectors
    }

    /// The `IB_UVERBS_CORE_SUPPORT_*` bits, where the kernel reported them.
    pub fn core_support(&self) -> Option<u64> {
        self.core_support
    }

    /// `EX_QUERY_DEVICE`, or `QUERY_DEVICE` on a kernel without it.
    pub fn query_device(&self) -> Result<DeviceAttrs> {
        let mut req = uapi::ib_uverbs_ex_query_device::new_zeroed();
        let mut resp = uapi::ib_uverbs_ex_query_device_resp::new_zeroed();
        // SAFETY: a query: the request holds no address, the only output is `resp`.
        let ex = unsafe {
            self.chan.write_ex(
                Verb::QueryDevice,
                uapi::IB_USER_VERBS_EX_CMD_QUERY_DEVICE,
                &mut req,
                &mut resp,
                &[],
                &mut [],
            )
        };
        match ex {
            Ok(()) => Ok(DeviceAttrs {
                resp,
                extended: true,
            }),
            Err(Error::Unsupported { .. })
            | Err(Error::Kernel {
                errno: Errno::ENOSYS,
                ..
            }) => {
                let mut req = uapi::ib_uverbs_query_device::new_zeroed();
                let mut base = uapi::ib_uverbs_query_device_resp::new_zeroed();
                // SAFETY: as above; the only output is `base`.
                unsafe {
                    self.chan.write(
                        Verb::QueryDevice,
                        uapi::IB_USER_VERBS_CMD_QUERY_DEVICE,
                        &mut req,
                        &mut base,
                        &[],
                        &mut [],
                    )
                }?;
                let mut resp = uapi::ib_uverbs_ex_query_device_resp::new_zeroed();
                resp.base = base;
                Ok(DeviceAttrs {
                    resp,
                    extended: false,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// `QUERY_PORT` for a port (numbered from 1).
    ///
    /// The response is the 6.1 `ib_uverbs_query_port_resp_ex`; kernels from 6.7 on also fill
    /// `active_speed_ex` in what 6.1 calls `reserved[2..6]` (see [`port_active_speed_ex`]).
    pub fn query_port(&self, port: u8) -> Result<uapi::ib_uverbs_query_port_resp_ex> {
        let mut resp = uapi::ib_uverbs_query_port_resp_ex::new_zeroed();
        let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_QUERY_PORT);
        cmd.in_u64(uapi::UVERBS_ATTR_QUERY_PORT_PORT_NUM, u64::from(port));
        cmd.out_obj(uapi::UVERBS_ATTR_QUERY_PORT_RESP, &mut resp);
        // SAFETY: a port number inline and `resp` as the one pointer attribute.
        match unsafe { self.chan.ioctl_or_write(Verb::QueryPort, &mut cmd) }? {
            Outcome::Done => Ok(resp),
            Outcome::UseWrite => {
                let mut req = uapi::ib_uverbs_query_port::new_zeroed();
                req.port_num = port;
                let mut legacy = uapi::ib_uverbs_query_port_resp::new_zeroed();
                // SAFETY: a port number; the only output is `legacy`.
                unsafe {
                    self.chan.write(
                        Verb::QueryPort,
                        uapi::IB_USER_VERBS_CMD_QUERY_PORT,
                        &mut req,
                        &mut legacy,
                        &[],
                        &mut [],
                    )
                }?;
                let mut resp = uapi::ib_uverbs_query_port_resp_ex::new_zeroed();
                resp.legacy_resp = legacy;
                Ok(resp)
            }
        }
    }

    /// The whole GID table (all ports), at most `max_entries` of it: `QUERY_GID_TABLE`, or sysfs on a
    /// kernel without it. Empty slots are not listed.
    ///
    /// The kernel returns the table in one attribute, whose length is 16 bits: room for 2047
    /// entries. A longer table is read entry by entry (`QUERY_GID_ENTRY`).
    pub fn query_gid_table(&self, max_entries: usize) -> Result<Vec<uapi::ib_uverbs_gid_entry>> {
        if max_entries > MAX_GID_TABLE_ENTRIES {
            return self
                .gid_table_by_entry(max_entries, |port, index| self.query_gid_entry(port, index));
        }
        let mut entries = vec![uapi::ib_uverbs_gid_entry::new_zeroed(); max_entries];
        let mut count = 0u64;
        let mut cmd = IoctlCmd::new(
            uapi::UVERBS_OBJECT_DEVICE,
            uapi::UVERBS_METHOD_QUERY_GID_TABLE,
        );
        cmd.in_u64(
            uapi::UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE,
            std::mem::size_of::<uapi::ib_uverbs_gid_entry>() as u64,
        );
        cmd.in_u32(uapi::UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0)
            .optional();
        cmd.out_bytes(
            uapi::UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES,
            entries.as_mut_bytes(),
        );
        cmd.out_obj(
            uapi::UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES,
            &mut count,
        );
        // SAFETY: inline numbers, and `entries` and `count` as the pointer attributes.
        match unsafe { self.chan.ioctl_or_write(Verb::QueryGidTable, &mut cmd) }? {
            Outcome::Done => {
                let count = usize::try_from(count).unwrap_or(usize::MAX);
                if count > max_entries {
                    return Err(Error::Protocol {
                        verb: Verb::QueryGidTable,
                        what: format!("{count} entries reported for room for {max_entries}"),
                    });
                }
                entries.truncate(count);
                Ok(entries)
            }
            Outcome::UseWrite => self.gid_table_from_sysfs(max_entries),
        }
    }

    /// The GID table read from sysfs (`ports/N/gids/M`, `gid_attrs/{types,ndevs}/M`), as rdma-core
    /// does on kernels without the GID ioctls. Needs the ports' table lengths, so it queries them.
    pub fn gid_table_from_sysfs(
        &self,
        max_entries: usize,
    ) -> Result<Vec<uapi::ib_uverbs_gid_entry>> {
        self.gid_table_by_entry(max_entries, |port, index| {
            sysfs_gid_entry(&self.info, port, index)
        })
    }

    /// The GID table of every port, at most `max_entries` of it, read one slot at a time with
    /// `entry` (which gives `None` for an empty slot).
    fn gid_table_by_entry(
        &self,
        max_entries: usize,
        mut entry: impl FnMut(u8, u32) -> Result<Option<uapi::ib_uverbs_gid_entry>>,
    ) -> Result<Vec<uapi::ib_uverbs_gid_entry>> {
        let ports = self.query_device()?.resp.base.phys_port_cnt;
        let mut out = Vec::new();
        for port in 1..=ports {
            let len = self.query_port(port)?.legacy_resp.gid_tbl_len;
            for index in 0..len {
                if out.len() == max_entries {
                    return Ok(out);
                }
                if let Some(e) = entry(port, index)? {
                    out.push(e);
                }
            }
        }
        Ok(out)
    }

    /// One GID entry: `QUERY_GID_ENTRY`, or sysfs. `None` for an empty slot.
    pub fn query_gid_entry(
        &self,
        port: u8,
        index: u32,
    ) -> Result<Option<uapi::ib_uverbs_gid_entry>> {
        let mut entry = uapi::ib_uverbs_gid_entry::new_zeroed();
        let mut cmd = IoctlCmd::new(
            uapi::UVERBS_OBJECT_DEVICE,
            uapi::UVERBS_METHOD_QUERY_GID_ENTRY,
        );
        cmd.in_u64(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_PORT, u64::from(port));
        cmd.in_u64(
            uapi::UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX,
            u64::from(index),
        );
        cmd.in_u32(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0);
        cmd.out_obj(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, &mut entry);
        // SAFETY: inline numbers, and `entry` as the one pointer attribute.
        match unsafe { self.chan.ioctl_or_write(Verb::QueryGidEntry, &mut cmd) } {
            Ok(Outcome::Done) => Ok(Some(entry)),
            // The kernel's answer for an empty (zero) slot.
            Err(Error::Kernel {
                errno: Errno::ENODATA,
                ..
            }) => Ok(None),
            Ok(Outcome::UseWrite) => sysfs_gid_entry(&self.info, port, index),
            Err(e) => Err(e),
        }
    }
}

/// `GET_CONTEXT` (ioctl, or the write command), then the async event file.
fn get_context(
    chan: &Channel,
    drv_in: &[u8],
    drv_out: &mut [u8],
) -> Result<(OwnedFd, u32, Option<u64>)> {
    let mut num_comp_vectors = 0u32;
    let mut core_support = 0u64;
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_GET_CONTEXT);
    cmd.out_obj(
        uapi::UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS,
        &mut num_comp_vectors,
    );
    let core_slot = cmd.out_obj(
        uapi::UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT,
        &mut core_support,
    );
    cmd.optional();
    cmd.uhw_in(drv_in).uhw_out(drv_out);
    // SAFETY: the pointer attributes are the two outputs and the udata slices; the drivers'
    // `GET_CONTEXT` requests (`context_request`) hold capabilities and counts, no address.
    match unsafe { chan.ioctl_or_write(Verb::GetContext, &mut cmd) }? {
        Outcome::Done => {
            let core_valid = cmd.output_valid(core_slot);
            let mut cmd = IoctlCmd::new(
                uapi::UVERBS_OBJECT_ASYNC_EVENT,
                uapi::UVERBS_METHOD_ASYNC_EVENT_ALLOC,
            );
            let fd_slot = cmd.new_fd(uapi::UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE);
            // SAFETY: one new-fd attribute, no pointer.
            unsafe { chan.ioctl(Verb::AsyncEventAlloc, &mut cmd) }?;
            // SAFETY: the command succeeded, so the slot holds the new event file's descriptor, taken
            // exactly once here.
            let async_fd = unsafe { cmd.take_fd(Verb::AsyncEventAlloc, fd_slot) }?;
            Ok((
                async_fd,
                num_comp_vectors,
                core_valid.then_some(core_support),
            ))
        }
        Outcome::UseWrite => {
            let mut req = uapi::ib_uverbs_get_context::new_zeroed();
            let mut resp = uapi::ib_uverbs_get_context_resp {
                async_fd: NO_FD as u32,
                ..FromZeros::new_zeroed()
            };
            // SAFETY: as the ioctl above, as a write command.
            unsafe {
                chan.write(
                    Verb::GetContext,
                    uapi::IB_USER_VERBS_CMD_GET_CONTEXT,
                    &mut req,
                    &mut resp,
                    drv_in,
                    drv_out,
                )
            }?;
            // The kernel's `int`, in a `__u32`.
            let fd = written_fd(Verb::GetContext, i64::from(resp.async_fd as i32))?;
            // SAFETY: GET_CONTEXT succeeded and wrote `async_fd` (it held `NO_FD` before): the
            // descriptor the kernel just installed for this context's event file, which nothing
            // else owns.
            let async_fd = unsafe { sys::adopt_fd(fd) };
            Ok((async_fd, resp.num_comp_vectors, None))
        }
    }
}

/// The most GID entries one `QUERY_GID_TABLE` returns: its entries attribute's length is a `u16`.
const MAX_GID_TABLE_ENTRIES: usize =
    u16::MAX as usize / std::mem::size_of::<uapi::ib_uverbs_gid_entry>();

/// The kernel's `enum ib_uverbs_gid_type` for a sysfs type string.
fn gid_type_from_sysfs(s: &str) -> u32 {
    match s {
        "RoCE v2" => uapi::IB_UVERBS_GID_TYPE_ROCE_V2,
        "IB/RoCE v1" | "RoCE v1" => uapi::IB_UVERBS_GID_TYPE_ROCE_V1,
        _ => uapi::IB_UVERBS_GID_TYPE_IB,
    }
}

/// Reads one GID entry from sysfs; `None` for an empty slot.
pub fn sysfs_gid_entry(
    info: &DeviceInfo,
    port: u8,
    index: u32,
) -> Result<Option<uapi::ib_uverbs_gid_entry>> {
    let base = format!("ports/{port}/");
    let text = info.sysfs_attr(&format!("{base}gids/{index}"))?;
    let Some(raw) = parse_gid(&text) else {
        return Err(Error::Protocol {
            verb: Verb::QueryGidEntry,
            what: format!("sysfs GID {text:?}"),
        });
    };
    if raw == [0u8; 16] {
        return Ok(None);
    }
    // IB ports have no GID types; reading one fails, which means IB.
    let gid_type = info
        .sysfs_attr(&format!("{base}gid_attrs/types/{index}"))
        .map(|t| gid_type_from_sysfs(&t))
        .unwrap_or(uapi::IB_UVERBS_GID_TYPE_IB);
    let ifindex = info
        .sysfs_attr(&format!("{base}gid_attrs/ndevs/{index}"))
        .ok()
        .and_then(|name| std::ffi::CString::new(name).ok())
        .and_then(|name| sys::if_nametoindex(&name))
        .unwrap_or(0);
    let mut e = uapi::ib_uverbs_gid_entry::new_zeroed();
    e.gid = <[u64; 2]>::read_from_bytes(&raw).expect("16 bytes");
    e.gid_index = index;
    e.port_num = u32::from(port);
    e.gid_type = gid_type;
    e.netdev_ifindex = ifindex;
    Ok(Some(e))
}

/// Parses a GID as sysfs prints it: eight groups of four hex digits separated by colons.
pub fn parse_gid(s: &str) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    let groups: Vec<&str> = s.trim().split(':').collect();
    if groups.len() != 8 {
        return None;
    }
    for (i, g) in groups.iter().enumerate() {
        if g.len() != 4 {
            return None;
        }
        let v = u16::from_str_radix(g, 16).ok()?;
        out[2 * i..2 * i + 2].copy_from_slice(&v.to_be_bytes());
    }
    Some(out)
}

/// `active_speed_ex` of a `QUERY_PORT` response from a kernel that has it (6.7+); 0 otherwise.
pub fn port_active_speed_ex(resp: &uapi::ib_uverbs_query_port_resp_ex) -> u32 {
    u32::from_ne_bytes(resp.reserved[2..6].try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::fd::AsRawFd;
    use std::sync::Arc;

    use crate::discover::Driver;
    use crate::sys::{ModelFile, ModelRef};

    /// How [`Answering`] answers.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Answers {
        /// No ioctl (ENOTTY); every write succeeds and writes nothing: a file that takes any bytes.
        NothingWritten,
        /// Every ioctl succeeds and writes nothing.
        IoctlsWriteNothing,
        /// No ioctl; `GET_CONTEXT` writes a new descriptor (a pipe's read end) as its
        /// `async_fd`, every other write succeeds and writes nothing.
        OnlyTheContextsFd,
    }

    /// A device file that reports success for commands whose answers it does not write (the
    /// kernel's file never does that; a regular file's `write()`, or a model's bug, would): the
    /// driver must adopt no descriptor number it did not see written.
    #[derive(Debug, Clone, Copy)]
    struct Answering(Answers);

    // SAFETY: it writes no descriptor number but a new one (`OnlyTheContextsFd`: a pipe made for
    // the command, given away once), and writes nothing else but that answer, through the response
    // pointer of `GET_CONTEXT` within its 8 bytes; every other field it leaves unwritten, which the
    // driver refuses.
    unsafe impl ModelFile for Answering {
        unsafe fn ioctl(&self, _hdr: *mut uapi::ib_uverbs_ioctl_hdr) -> nix::Result<()> {
            match self.0 {
                Answers::IoctlsWriteNothing => Ok(()),
                _ => Err(Errno::ENOTTY),
            }
        }

        unsafe fn write(&self, cmd: &[u8]) -> nix::Result<usize> {
            let command = u32::from_ne_bytes(cmd[..4].try_into().unwrap());
            if self.0 == Answers::OnlyTheContextsFd
                && command == uapi::IB_USER_VERBS_CMD_GET_CONTEXT
            {
                let resp = u64::from_ne_bytes(cmd[8..16].try_into().unwrap());
                let (r, _w) = nix::unistd::pipe()?;
                let answer = uapi::ib_uverbs_get_context_resp {
                    async_fd: std::os::fd::IntoRawFd::into_raw_fd(r) as u32,
                    num_comp_vectors: 1,
                };
                // SAFETY: `resp` is the response pointer of the command, valid for its 8 bytes
                // (`out_words` 2: the driver data is empty); unaligned, as a user pointer may be.
                unsafe { (resp as *mut uapi::ib_uverbs_get_context_resp).write_unaligned(answer) };
            }
            Ok(cmd.len())
        }

        fn mmap(&self, _len: usize, _offset: u64) -> std::io::Result<memmap2::MmapRaw> {
            Err(std::io::Error::from_raw_os_error(libc::ENODEV))
        }

        fn reopen(&self) -> std::io::Result<ModelRef> {
            Ok(ModelRef(Arc::new(*self)))
        }
    }

    fn device(answers: Answers) -> DeviceInfo {
        DeviceInfo {
            name: "answering0".into(),
            uverbs: "uverbs99".into(),
            devnode: "/nonexistent".into(),
            dev: None,
            abi_version: 1,
            driver: Driver::Other(0),
            index: None,
            sysfs_dir: "/nonexistent".into(),
            model: Some(ModelRef(Arc::new(Answering(answers)))),
        }
    }

    /// Set in the children of [`a_descriptor_field_nothing_wrote_is_never_adopted`]: the case.
    const CHILD: &str = "UVERBS_DRIVERS_UCONTEXT_TEST_CHILD";

    const TEST: &str = "ucontext::tests::a_descriptor_field_nothing_wrote_is_never_adopted";

    /// Identity and status flags of descriptor 0: `(st_dev, st_ino, F_GETFL)`, or why it has none.
    fn stdin_state() -> std::result::Result<(u64, u64, i32), String> {
        let fd = std::io::stdin();
        let st = nix::sys::stat::fstat(fd.as_fd()).map_err(|e| format!("fd 0: {e}"))?;
        let fl = nix::fcntl::fcntl(fd.as_fd(), nix::fcntl::FcntlArg::F_GETFL)
            .map_err(|e| format!("fd 0: {e}"))?;
        Ok((st.st_dev, st.st_ino, fl))
    }

    /// Runs `make`, which makes an object that owns the descriptor the command answered with (a
    /// context's async event file, a completion channel), and asserts it was refused
    /// (`Error::Protocol`) and that descriptor 0 kept its identity and flags throughout.
    fn refused<T>(what: &str, make: impl FnOnce() -> Result<T>, fd: impl Fn(&T) -> i32) {
        let before = stdin_state();
        assert!(before.is_ok(), "{before:?}");
        let made = make();
        let alive = stdin_state();
        let result = made.as_ref().map(&fd).map_err(ToString::to_string);
        let was_refused = matches!(made, Err(Error::Protocol { .. }));
        drop(made);
        let after = stdin_state();
        println!(
            "{what}: descriptor {result:?}; fd 0 before {before:?}, while it lived {alive:?}, \
             after {after:?}"
        );
        assert_eq!(alive, before, "{what}: fd 0 changed while the object lived");
        assert_eq!(after, before, "{what}: fd 0 changed after the drop");
        assert!(was_refused, "{what}: {result:?}");
    }

    /// One case, in a child process whose standard input is a pipe (the old code closed it).
    fn case(case: &str) {
        let open = |answers, path| move || Ucontext::open(&device(answers), path, &[], &mut []);
        let async_fd = |u: &Ucontext| u.async_fd().as_raw_fd();
        match case {
            "write" => refused(
                "GET_CONTEXT, a write nothing answered",
                open(Answers::NothingWritten, CommandPath::Auto),
                async_fd,
            ),
            "legacy" => refused(
                "GET_CONTEXT on the legacy path, a write nothing answered",
                open(Answers::NothingWritten, CommandPath::LegacyWrite),
                async_fd,
            ),
            "ioctl" => refused(
                "GET_CONTEXT and ASYNC_EVENT_ALLOC, ioctls nothing answered",
                open(Answers::IoctlsWriteNothing, CommandPath::Auto),
                async_fd,
            ),
            "comp_channel" => {
                let uctx = open(Answers::OnlyTheContextsFd, CommandPath::Auto)()
                    .expect("a context whose async fd was written");
                assert_ne!(uctx.async_fd().as_raw_fd(), 0);
                refused(
                    "CREATE_COMP_CHANNEL, a write nothing answered",
                    || crate::cmd::create_comp_channel(&uctx),
                    |f| f.as_raw_fd(),
                );
            }
            other => panic!("no case {other}"),
        }
    }

    /// Review R1: `GET_CONTEXT` (legacy write and ioctl) and `CREATE_COMP_CHANNEL` adopted the
    /// number in their answer's descriptor field whether or not anything wrote it: a zeroed
    /// response made the crate own descriptor 0 (it set `O_NONBLOCK` on standard input and closed
    /// it on drop). The fields are now pre-filled with -1 and an unwritten one is refused. Each
    /// case runs in a child process of its own.
    #[test]
    #[cfg_attr(miri, ignore = "runs child processes")]
    fn a_descriptor_field_nothing_wrote_is_never_adopted() {
        if let Some(c) = std::env::var_os(CHILD) {
            case(c.to_str().unwrap());
            return;
        }
        let mut failed = Vec::new();
        for c in ["write", "legacy", "ioctl", "comp_channel"] {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", TEST, "--test-threads=1", "--nocapture"])
                .env(CHILD, c)
                .env("RUST_BACKTRACE", "0")
                .stdin(std::process::Stdio::piped())
                .output()
                .expect("running the child");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            println!("{text}");
            if !(out.status.success() && text.contains("1 passed")) {
                failed.push(format!("case {c}:\n{text}"));
            }
        }
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }

    #[test]
    fn sysfs_gid_text() {
        let g = parse_gid("fe80:0000:0000:0000:5054:00ff:fe12:3456").unwrap();
        assert_eq!(g[0..2], [0xfe, 0x80]);
        assert_eq!(g[14..16], [0x34, 0x56]);
        assert_eq!(
            parse_gid("0000:0000:0000:0000:0000:ffff:7f00:0001").unwrap()[10..],
            [0xff, 0xff, 127, 0, 0, 1]
        );
        assert!(parse_gid("fe80::1").is_none());
        assert!(parse_gid("fe80:0000:0000:0000:5054:00ff:fe12").is_none());
    }

    #[test]
    fn gid_types() {
        assert_eq!(
            gid_type_from_sysfs("RoCE v2"),
            uapi::IB_UVERBS_GID_TYPE_ROCE_V2
        );
        assert_eq!(
            gid_type_from_sysfs("IB/RoCE v1"),
            uapi::IB_UVERBS_GID_TYPE_ROCE_V1
        );
    }
}
