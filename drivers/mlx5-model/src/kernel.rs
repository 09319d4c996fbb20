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

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::events::{into_user_fd, FileKind};
use super::objects::{CqParams, Destroyed, FileState, Object, QpParams, SrqParams};
use super::{caps, uaccess, Device, IoctlSupport, ObjectCounts};
use uverbs_drivers::sys::ModelFile;

const HDR_LEN: usize = std::mem::size_of::<uapi::ib_uverbs_ioctl_hdr>();
const ATTR_LEN: usize = std::mem::size_of::<uapi::ib_uverbs_attr>();

/// One open file of a model device (`struct ib_uverbs_file`).
pub(crate) struct File {
    pub(super) dev: Arc<Device>,
    pub(super) id: u64,
    /// The memfd of the file's UAR pages (what `as_fd` returns); `None` if it could not be made,
    /// and then `GET_CONTEXT` fails.
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
// Driver data and the write-command context.

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

/// A write command being run (`struct uverbs_attr_bundle` of a write method: `ucore` and
/// `driver_udata`).
#[derive(Debug)]
pub(super) struct Io {
    core_in: Vec<u8>,
    out_addr: u64,
    out_len: usize,
    /// With `INVOKE_WRITE`: the ioctl header's address and the index of `UVERBS_ATTR_CORE_OUT`,
    /// which the response marks valid.
    core_out_attr: Option<(u64, usize)>,
    udata: Udata,
}

fn zext<T: FromBytes + IntoBytes>(bytes: &[u8]) -> T {
    let mut v = T::new_zeroed();
    let dst = v.as_mut_bytes();
    let n = dst.len().min(bytes.len());
    dst[..n].copy_from_slice(&bytes[..n]);
    v
}

fn set_valid_output(hdr: u64, idx: usize, flags: u16) -> Result<(), Errno> {
    let at = hdr + (HDR_LEN + idx * ATTR_LEN + 4) as u64;
    uaccess::write(
        at,
        &(flags | uapi::UVERBS_ATTR_F_VALID_OUTPUT).to_ne_bytes(),
    )
}

impl Io {
    /// `uverbs_request`: the core request, zero-extended; bytes beyond it must be zero
    /// (`EOPNOTSUPP`).
    fn request<T: FromBytes + IntoBytes>(&self) -> Result<T, Errno> {
        let size = std::mem::size_of::<T>();
        if self.core_in.len() > size && self.core_in[size..].iter().any(|&b| b != 0) {
            return Err(Errno::EOPNOTSUPP);
        }
        Ok(zext(&self.core_in))
    }

    /// `uverbs_response`: the core response, and zeroes in the rest of the user's buffer.
    fn response(&self, bytes: &[u8]) -> Result<(), Errno> {
        let n = bytes.len().min(self.out_len);
        if self.out_len > bytes.len() {
            uaccess::clear(
                self.out_addr.wrapping_add(bytes.len() as u64),
                self.out_len - bytes.len(),
            )?;
        }
        uaccess::write(self.out_addr, &bytes[..n])?;
        if let Some((hdr, idx)) = self.core_out_attr {
            let flags: u16 = uaccess::read_obj(hdr + (HDR_LEN + idx * ATTR_LEN + 4) as u64)?;
            set_valid_output(hdr, idx, flags)?;
        }
        Ok(())
    }

    /// `uverbs_response_length`.
    fn response_length(&self, size: usize) -> u32 {
        self.out_len.min(size) as u32
    }
}

// ---------------------------------------------------------------------------------------------
// Write methods.

type WriteFn = fn(&File, &mut FileState, &mut Io) -> Result<(), Errno>;

/// One write method (`struct uverbs_api_write_method`).
#[derive(Clone, Copy)]
struct WriteDef {
    req: usize,
    resp: usize,
    udata: bool,
    has_resp: bool,
    /// Needs a context (`EINVAL` otherwise).
    ctx: bool,
    run: WriteFn,
}

const fn sz<T>() -> usize {
    std::mem::size_of::<T>()
}

const fn io_def(req: usize, resp: usize, udata: bool, ctx: bool, run: WriteFn) -> WriteDef {
    WriteDef {
        req,
        resp,
        udata,
        has_resp: true,
        ctx,
        run,
    }
}

const fn i_def(req: usize, udata: bool, run: WriteFn) -> WriteDef {
    WriteDef {
        req,
        resp: 0,
        udata,
        has_resp: false,
        ctx: true,
        run,
    }
}

fn notsupp(_: &File, _: &mut FileState, _: &mut Io) -> Result<(), Errno> {
    Err(Errno::EOPNOTSUPP)
}

/// A method the kernel has and the model does not do: `EOPNOTSUPP`, after the header checks.
const NOTSUPP: WriteDef = WriteDef {
    req: 0,
    resp: 0,
    udata: false,
    has_resp: false,
    ctx: false,
    run: notsupp,
};

/// The highest non-extended and extended write command numbers of 6.1, plus one.
const NUM_WRITE: u32 = uapi::IB_USER_VERBS_CMD_OPEN_QP + 1;
const NUM_WRITE_EX: u32 = uapi::IB_USER_VERBS_EX_CMD_MODIFY_CQ + 1;

/// `uapi_get_method`.
fn write_method(command: u32) -> Result<WriteDef, Errno> {
    use uapi::*;
    if command & !(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK) != 0 {
        return Err(Errno::EINVAL);
    }
    let idx = command & IB_USER_VERBS_CMD_COMMAND_MASK;
    if command & IB_USER_VERBS_CMD_FLAG_EXTENDED != 0 {
        if idx >= NUM_WRITE_EX {
            return Err(Errno::EOPNOTSUPP);
        }
        return Ok(match idx {
            IB_USER_VERBS_EX_CMD_QUERY_DEVICE => io_def(
                sz::<ib_uverbs_ex_query_device>(),
                184, // offsetofend(struct ib_uverbs_ex_query_device_resp, response_length)
                true,
                true,
                w_ex_query_device,
            ),
            IB_USER_VERBS_EX_CMD_CREATE_CQ => io_def(
                sz::<ib_uverbs_ex_create_cq>(),
                sz::<ib_uverbs_ex_create_cq_resp>(),
                true,
                true,
                w_ex_create_cq,
            ),
            IB_USER_VERBS_EX_CMD_CREATE_QP => io_def(
                52, // offsetofend(struct ib_uverbs_ex_create_qp, comp_mask)
                sz::<ib_uverbs_ex_create_qp_resp>(),
                true,
                true,
                w_ex_create_qp,
            ),
            IB_USER_VERBS_EX_CMD_MODIFY_QP => io_def(
                sz::<ib_uverbs_modify_qp>(),
                sz::<ib_uverbs_ex_modify_qp_resp>(),
                true,
                true,
                w_ex_modify_qp,
            ),
            _ => NOTSUPP,
        });
    }
    if idx >= NUM_WRITE {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(match idx {
        IB_USER_VERBS_CMD_GET_CONTEXT => io_def(
            sz::<ib_uverbs_get_context>(),
            sz::<ib_uverbs_get_context_resp>(),
            true,
            false,
            w_get_context,
        ),
        IB_USER_VERBS_CMD_QUERY_DEVICE => io_def(
            sz::<ib_uverbs_query_device>(),
            sz::<ib_uverbs_query_device_resp>(),
            false,
            true,
            w_query_device,
        ),
        IB_USER_VERBS_CMD_QUERY_PORT => io_def(
            sz::<ib_uverbs_query_port>(),
            sz::<ib_uverbs_query_port_resp>(),
            false,
            true,
            w_query_port,
        ),
        IB_USER_VERBS_CMD_ALLOC_PD => io_def(
            sz::<ib_uverbs_alloc_pd>(),
            sz::<ib_uverbs_alloc_pd_resp>(),
            true,
            true,
            w_alloc_pd,
        ),
        IB_USER_VERBS_CMD_DEALLOC_PD => i_def(sz::<ib_uverbs_dealloc_pd>(), false, w_dealloc_pd),
        IB_USER_VERBS_CMD_CREATE_AH => io_def(
            sz::<ib_uverbs_create_ah>(),
            sz::<ib_uverbs_create_ah_resp>(),
            true,
            true,
            w_create_ah,
        ),
        IB_USER_VERBS_CMD_DESTROY_AH => i_def(sz::<ib_uverbs_destroy_ah>(), false, w_destroy_ah),
        IB_USER_VERBS_CMD_REG_MR => io_def(
            sz::<ib_uverbs_reg_mr>(),
            sz::<ib_uverbs_reg_mr_resp>(),
            true,
            true,
            w_reg_mr,
        ),
        IB_USER_VERBS_CMD_DEREG_MR => i_def(sz::<ib_uverbs_dereg_mr>(), false, w_dereg_mr),
        IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL => io_def(
            sz::<ib_uverbs_create_comp_channel>(),
            sz::<ib_uverbs_create_comp_channel_resp>(),
            false,
            true,
            w_create_comp_channel,
        ),
        IB_USER_VERBS_CMD_CREATE_CQ => io_def(
            sz::<ib_uverbs_create_cq>(),
            sz::<ib_uverbs_create_cq_resp>(),
            true,
            true,
            w_create_cq,
        ),
        IB_USER_VERBS_CMD_DESTROY_CQ => io_def(
            sz::<ib_uverbs_destroy_cq>(),
            sz::<ib_uverbs_destroy_cq_resp>(),
            false,
            true,
            w_destroy_cq,
        ),
        IB_USER_VERBS_CMD_REQ_NOTIFY_CQ => {
            i_def(sz::<ib_uverbs_req_notify_cq>(), false, w_req_notify_cq)
        }
        IB_USER_VERBS_CMD_CREATE_QP => io_def(
            sz::<ib_uverbs_create_qp>(),
            sz::<ib_uverbs_create_qp_resp>(),
            true,
            true,
            w_create_qp,
        ),
        IB_USER_VERBS_CMD_QUERY_QP => io_def(
            sz::<ib_uverbs_query_qp>(),
            sz::<ib_uverbs_query_qp_resp>(),
            false,
            true,
            w_query_qp,
        ),
        IB_USER_VERBS_CMD_MODIFY_QP => i_def(sz::<ib_uverbs_modify_qp>(), true, w_modify_qp),
        IB_USER_VERBS_CMD_DESTROY_QP => io_def(
            sz::<ib_uverbs_destroy_qp>(),
            sz::<ib_uverbs_destroy_qp_resp>(),
            false,
            true,
            w_destroy_qp,
        ),
        IB_USER_VERBS_CMD_ATTACH_MCAST => {
            i_def(sz::<ib_uverbs_attach_mcast>(), false, w_attach_mcast)
        }
        IB_USER_VERBS_CMD_DETACH_MCAST => {
            i_def(sz::<ib_uverbs_detach_mcast>(), false, w_detach_mcast)
        }
        IB_USER_VERBS_CMD_CREATE_SRQ => io_def(
            sz::<ib_uverbs_create_srq>(),
            sz::<ib_uverbs_create_srq_resp>(),
            true,
            true,
            w_create_srq,
        ),
        IB_USER_VERBS_CMD_MODIFY_SRQ => i_def(sz::<ib_uverbs_modify_srq>(), true, w_modify_srq),
        IB_USER_VERBS_CMD_QUERY_SRQ => io_def(
            sz::<ib_uverbs_query_srq>(),
            sz::<ib_uverbs_query_srq_resp>(),
            false,
            true,
            w_query_srq,
        ),
        IB_USER_VERBS_CMD_DESTROY_SRQ => io_def(
            sz::<ib_uverbs_destroy_srq>(),
            sz::<ib_uverbs_destroy_srq_resp>(),
            false,
            true,
            w_destroy_srq,
        ),
        // ALLOC_MW / DEALLOC_MW (no memory windows on this model), RESIZE_CQ, POLL_CQ, the
        // kernel-mediated posts, XRC: the kernel has them, the model does not.
        _ => NOTSUPP,
    })
}

impl File {
    /// `ib_uverbs_write`.
    fn write_cmd(&self, cmd: &[u8]) -> Result<usize, Errno> {
        let hdr_len = sz::<uapi::ib_uverbs_cmd_hdr>();
        if cmd.len() < hdr_len {
            return Err(Errno::EINVAL);
        }
        let hdr = uapi::ib_uverbs_cmd_hdr::read_from_bytes(&cmd[..hdr_len]).expect("8 bytes");
        let def = write_method(hdr.command)?;
        let count = cmd.len();
        let mut io = if hdr.command & uapi::IB_USER_VERBS_CMD_FLAG_EXTENDED != 0 {
            let ex_len = sz::<uapi::ib_uverbs_ex_cmd_hdr>();
            if count < hdr_len + ex_len {
                return Err(Errno::EINVAL);
            }
            let ex = uapi::ib_uverbs_ex_cmd_hdr::read_from_bytes(&cmd[hdr_len..hdr_len + ex_len])
                .expect("16 bytes");
            let body = &cmd[hdr_len + ex_len..];
            let core_in = usize::from(hdr.in_words) * 8;
            let drv_in = usize::from(ex.provider_in_words) * 8;
            if core_in + drv_in != body.len() {
                return Err(Errno::EINVAL);
            }
            if core_in < def.req {
                return Err(Errno::ENOSPC);
            }
            if ex.cmd_hdr_reserved != 0 {
                return Err(Errno::EINVAL);
            }
            let core_out = usize::from(hdr.out_words) * 8;
            let drv_out = usize::from(ex.provider_out_words) * 8;
            if ex.response != 0 {
                if core_out == 0 && drv_out == 0 {
                    return Err(Errno::EINVAL);
                }
                if core_out < def.resp {
                    return Err(Errno::ENOSPC);
                }
            } else if core_out != 0 || drv_out != 0 {
                return Err(Errno::EINVAL);
            }
            Io {
                core_in: body[..core_in].to_vec(),
                out_addr: ex.response,
                out_len: core_out,
                core_out_attr: None,
                udata: Udata {
                    inbuf: body[core_in..].to_vec(),
                    out_addr: ex.response.wrapping_add(core_out as u64),
                    out_len: drv_out,
                },
            }
        } else {
            if usize::from(hdr.in_words) * 4 != count {
                return Err(Errno::EINVAL);
            }
            if count < def.req + hdr_len {
                return Err(Errno::ENOSPC);
            }
            let out_len = usize::from(hdr.out_words) * 4;
            if out_len < def.resp {
                return Err(Errno::ENOSPC);
            }
            let body = &cmd[hdr_len..];
            let (core, drv) = if def.udata {
                body.split_at(def.req)
            } else {
                (body, &[][..])
            };
            let response = if def.has_resp {
                u64::from_ne_bytes(body[..8].try_into().expect("checked length"))
            } else {
                0
            };
            // With driver data the response is the core part and the driver's answer after it.
            let (core_out, udata_out) = if def.has_resp && def.udata {
                (def.resp, out_len - def.resp)
            } else {
                (out_len, 0)
            };
            Io {
                core_in: core.to_vec(),
                out_addr: response,
                out_len: core_out,
                core_out_attr: None,
                udata: Udata {
                    inbuf: drv.to_vec(),
                    out_addr: response.wrapping_add(def.resp as u64),
                    out_len: udata_out,
                },
            }
        };
        let mut st = self.lock();
        if def.ctx && st.ctx.is_none() {
            return Err(Errno::EINVAL);
        }
        (def.run)(self, &mut st, &mut io)?;
        Ok(count)
    }
}

// ---------------------------------------------------------------------------------------------
// Ioctl methods.

/// How an object attribute is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    New,
    Read,
    Destroy,
}

/// An attribute type with its limits (`struct uverbs_attr_spec`).
#[derive(Debug, Clone, Copy)]
enum Ty {
    In {
        min: u16,
        max: u16,
        zero_trailing: bool,
    },
    Out {
        min: u16,
        max: u16,
        zero_trailing: bool,
    },
    Idr {
        obj: u16,
        access: Access,
    },
    Fd {
        obj: u16,
        access: Access,
    },
}

#[derive(Debug, Clone, Copy)]
struct Spec {
    id: u16,
    ty: Ty,
    mandatory: bool,
}

const fn ptr_in(id: u16, size: usize, mandatory: bool) -> Spec {
    Spec {
        id,
        ty: Ty::In {
            min: size as u16,
            max: size as u16,
            zero_trailing: false,
        },
        mandatory,
    }
}

const fn const_in(id: u16, mandatory: bool) -> Spec {
    ptr_in(id, 8, mandatory)
}

const fn flags_in(id: u16, mandatory: bool) -> Spec {
    Spec {
        id,
        ty: Ty::In {
            min: 4,
            max: 8,
            zero_trailing: false,
        },
        mandatory,
    }
}

const fn ptr_out(id: u16, size: usize, mandatory: bool) -> Spec {
    Spec {
        id,
        ty: Ty::Out {
            min: size as u16,
            max: size as u16,
            zero_trailing: false,
        },
        mandatory,
    }
}

/// `UVERBS_ATTR_STRUCT(type, last)` of an output.
const fn struct_out(id: u16, min: usize, size: usize, mandatory: bool) -> Spec {
    Spec {
        id,
        ty: Ty::Out {
            min: min as u16,
            max: size as u16,
            zero_trailing: true,
        },
        mandatory,
    }
}

const fn idr(id: u16, obj: u16, access: Access, mandatory: bool) -> Spec {
    Spec {
        id,
        ty: Ty::Idr { obj, access },
        mandatory,
    }
}

const fn fd(id: u16, obj: u16, access: Access, mandatory: bool) -> Spec {
    Spec {
        id,
        ty: Ty::Fd { obj, access },
        mandatory,
    }
}

/// `UVERBS_ATTR_UHW()`.
const UHW: [Spec; 2] = [
    Spec {
        id: uapi::UVERBS_ATTR_UHW_IN,
        ty: Ty::In {
            min: 0,
            max: u16::MAX,
            zero_trailing: false,
        },
        mandatory: false,
    },
    Spec {
        id: uapi::UVERBS_ATTR_UHW_OUT,
        ty: Ty::Out {
            min: 0,
            max: u16::MAX,
            zero_trailing: false,
        },
        mandatory: false,
    },
];

type MethodFn = fn(&File, &mut FileState, &mut Bundle) -> Result<(), Errno>;

/// One ioctl method.
struct MethodDef {
    object: u16,
    method: u16,
    attrs: &'static [Spec],
    udata: bool,
    run: MethodFn,
}

mod specs {
    use super::*;
    use uapi::*;

    pub(super) const INVOKE_WRITE: &[Spec] = &[
        Spec {
            id: UVERBS_ATTR_CORE_IN,
            ty: Ty::In {
                min: 4,
                max: u16::MAX,
                zero_trailing: false,
            },
            mandatory: false,
        },
        Spec {
            id: UVERBS_ATTR_CORE_OUT,
            ty: Ty::Out {
                min: 0,
                max: u16::MAX,
                zero_trailing: false,
            },
            mandatory: false,
        },
        const_in(UVERBS_ATTR_WRITE_CMD, true),
    ];
    pub(super) const QUERY_PORT: &[Spec] = &[
        const_in(UVERBS_ATTR_QUERY_PORT_PORT_NUM, true),
        struct_out(
            UVERBS_ATTR_QUERY_PORT_RESP,
            48,
            sz::<ib_uverbs_query_port_resp_ex>(),
            true,
        ),
    ];
    pub(super) const GET_CONTEXT: &[Spec] = &[
        ptr_out(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, 4, false),
        ptr_out(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, 8, false),
    ];
    pub(super) const QUERY_GID_TABLE: &[Spec] = &[
        const_in(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, true),
        flags_in(UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, false),
        Spec {
            id: UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES,
            ty: Ty::Out {
                min: 0,
                max: u16::MAX,
                zero_trailing: false,
            },
            mandatory: true,
        },
        ptr_out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, 8, true),
    ];
    pub(super) const QUERY_GID_ENTRY: &[Spec] = &[
        const_in(UVERBS_ATTR_QUERY_GID_ENTRY_PORT, true),
        const_in(UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, true),
        flags_in(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, true),
        struct_out(
            UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY,
            sz::<ib_uverbs_gid_entry>(),
            sz::<ib_uverbs_gid_entry>(),
            true,
        ),
    ];
    pub(super) const ASYNC_EVENT_ALLOC: &[Spec] = &[fd(
        UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE,
        UVERBS_OBJECT_ASYNC_EVENT,
        Access::New,
        true,
    )];
    pub(super) const PD_DESTROY: &[Spec] = &[idr(
        UVERBS_ATTR_DESTROY_PD_HANDLE,
        UVERBS_OBJECT_PD,
        Access::Destroy,
        true,
    )];
    pub(super) const MR_DESTROY: &[Spec] = &[idr(
        UVERBS_ATTR_DESTROY_MR_HANDLE,
        UVERBS_OBJECT_MR,
        Access::Destroy,
        true,
    )];
    pub(super) const AH_DESTROY: &[Spec] = &[idr(
        UVERBS_ATTR_DESTROY_AH_HANDLE,
        UVERBS_OBJECT_AH,
        Access::Destroy,
        true,
    )];
    pub(super) const CQ_CREATE: &[Spec] = &[
        idr(
            UVERBS_ATTR_CREATE_CQ_HANDLE,
            UVERBS_OBJECT_CQ,
            Access::New,
            true,
        ),
        ptr_in(UVERBS_ATTR_CREATE_CQ_CQE, 4, true),
        ptr_in(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 8, true),
        fd(
            UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL,
            UVERBS_OBJECT_COMP_CHANNEL,
            Access::Read,
            false,
        ),
        ptr_in(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 4, true),
        flags_in(UVERBS_ATTR_CREATE_CQ_FLAGS, false),
        ptr_out(UVERBS_ATTR_CREATE_CQ_RESP_CQE, 4, true),
        fd(
            UVERBS_ATTR_CREATE_CQ_EVENT_FD,
            UVERBS_OBJECT_ASYNC_EVENT,
            Access::Read,
            false,
        ),
    ];
    pub(super) const CQ_DESTROY: &[Spec] = &[
        idr(
            UVERBS_ATTR_DESTROY_CQ_HANDLE,
            UVERBS_OBJECT_CQ,
            Access::Destroy,
            true,
        ),
        ptr_out(
            UVERBS_ATTR_DESTROY_CQ_RESP,
            sz::<ib_uverbs_destroy_cq_resp>(),
            true,
        ),
    ];
    pub(super) const QP_CREATE: &[Spec] = &[
        idr(
            UVERBS_ATTR_CREATE_QP_HANDLE,
            UVERBS_OBJECT_QP,
            Access::New,
            true,
        ),
        idr(
            UVERBS_ATTR_CREATE_QP_XRCD_HANDLE,
            UVERBS_OBJECT_XRCD,
            Access::Read,
            false,
        ),
        idr(
            UVERBS_ATTR_CREATE_QP_PD_HANDLE,
            UVERBS_OBJECT_PD,
            Access::Read,
            false,
        ),
        idr(
            UVERBS_ATTR_CREATE_QP_SRQ_HANDLE,
            UVERBS_OBJECT_SRQ,
            Access::Read,
            false,
        ),
        idr(
            UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE,
            UVERBS_OBJECT_CQ,
            Access::Read,
            false,
        ),
        idr(
            UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE,
            UVERBS_OBJECT_CQ,
            Access::Read,
            false,
        ),
        idr(
            UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE,
            UVERBS_OBJECT_RWQ_IND_TBL,
            Access::Read,
            false,
        ),
        ptr_in(UVERBS_ATTR_CREATE_QP_USER_HANDLE, 8, true),
        Spec {
            id: UVERBS_ATTR_CREATE_QP_CAP,
            ty: Ty::In {
                min: sz::<ib_uverbs_qp_cap>() as u16,
                max: sz::<ib_uverbs_qp_cap>() as u16,
                zero_trailing: true,
            },
            mandatory: true,
        },
        const_in(UVERBS_ATTR_CREATE_QP_TYPE, true),
        flags_in(UVERBS_ATTR_CREATE_QP_FLAGS, false),
        ptr_in(UVERBS_ATTR_CREATE_QP_SOURCE_QPN, 4, false),
        fd(
            UVERBS_ATTR_CREATE_QP_EVENT_FD,
            UVERBS_OBJECT_ASYNC_EVENT,
            Access::Read,
            false,
        ),
        struct_out(
            UVERBS_ATTR_CREATE_QP_RESP_CAP,
            sz::<ib_uverbs_qp_cap>(),
            sz::<ib_uverbs_qp_cap>(),
            true,
        ),
        ptr_out(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, 4, true),
    ];
    pub(super) const QP_DESTROY: &[Spec] = &[
        idr(
            UVERBS_ATTR_DESTROY_QP_HANDLE,
            UVERBS_OBJECT_QP,
            Access::Destroy,
            true,
        ),
        ptr_out(
            UVERBS_ATTR_DESTROY_QP_RESP,
            sz::<ib_uverbs_destroy_qp_resp>(),
            true,
        ),
    ];
    pub(super) const SRQ_CREATE: &[Spec] = &[
        idr(
            UVERBS_ATTR_CREATE_SRQ_HANDLE,
            UVERBS_OBJECT_SRQ,
            Access::New,
            true,
        ),
        idr(
            UVERBS_ATTR_CREATE_SRQ_PD_HANDLE,
            UVERBS_OBJECT_PD,
            Access::Read,
            true,
        ),
        idr(
            UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE,
            UVERBS_OBJECT_XRCD,
            Access::Read,
            false,
        ),
        idr(
            UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE,
            UVERBS_OBJECT_CQ,
            Access::Read,
            false,
        ),
        ptr_in(UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, 8, true),
        ptr_in(UVERBS_ATTR_CREATE_SRQ_MAX_WR, 4, true),
        ptr_in(UVERBS_ATTR_CREATE_SRQ_MAX_SGE, 4, true),
        ptr_in(UVERBS_ATTR_CREATE_SRQ_LIMIT, 4, true),
        ptr_in(UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS, 4, false),
        const_in(UVERBS_ATTR_CREATE_SRQ_TYPE, true),
        fd(
            UVERBS_ATTR_CREATE_SRQ_EVENT_FD,
            UVERBS_OBJECT_ASYNC_EVENT,
            Access::Read,
            false,
        ),
        ptr_out(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, 4, true),
        ptr_out(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, 4, true),
        ptr_out(UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, 4, false),
    ];
    pub(super) const SRQ_DESTROY: &[Spec] = &[
        idr(
            UVERBS_ATTR_DESTROY_SRQ_HANDLE,
            UVERBS_OBJECT_SRQ,
            Access::Destroy,
            true,
        ),
        ptr_out(
            UVERBS_ATTR_DESTROY_SRQ_RESP,
            sz::<ib_uverbs_destroy_srq_resp>(),
            true,
        ),
    ];
}

const METHODS: &[MethodDef] = &[
    MethodDef {
        object: uapi::UVERBS_OBJECT_DEVICE,
        method: uapi::UVERBS_METHOD_INVOKE_WRITE,
        attrs: specs::INVOKE_WRITE,
        udata: true,
        run: m_invoke_write,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_DEVICE,
        method: uapi::UVERBS_METHOD_QUERY_PORT,
        attrs: specs::QUERY_PORT,
        udata: false,
        run: m_query_port,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_DEVICE,
        method: uapi::UVERBS_METHOD_GET_CONTEXT,
        attrs: specs::GET_CONTEXT,
        udata: true,
        run: m_get_context,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_DEVICE,
        method: uapi::UVERBS_METHOD_QUERY_GID_TABLE,
        attrs: specs::QUERY_GID_TABLE,
        udata: false,
        run: m_query_gid_table,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_DEVICE,
        method: uapi::UVERBS_METHOD_QUERY_GID_ENTRY,
        attrs: specs::QUERY_GID_ENTRY,
        udata: false,
        run: m_query_gid_entry,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_ASYNC_EVENT,
        method: uapi::UVERBS_METHOD_ASYNC_EVENT_ALLOC,
        attrs: specs::ASYNC_EVENT_ALLOC,
        udata: false,
        run: m_async_event_alloc,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_PD,
        method: uapi::UVERBS_METHOD_PD_DESTROY,
        attrs: specs::PD_DESTROY,
        udata: false,
        run: m_nothing,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_MR,
        method: uapi::UVERBS_METHOD_MR_DESTROY,
        attrs: specs::MR_DESTROY,
        udata: false,
        run: m_nothing,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_AH,
        method: uapi::UVERBS_METHOD_AH_DESTROY,
        attrs: specs::AH_DESTROY,
        udata: false,
        run: m_nothing,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_CQ,
        method: uapi::UVERBS_METHOD_CQ_CREATE,
        attrs: specs::CQ_CREATE,
        udata: true,
        run: m_cq_create,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_CQ,
        method: uapi::UVERBS_METHOD_CQ_DESTROY,
        attrs: specs::CQ_DESTROY,
        udata: false,
        run: m_cq_destroy,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_QP,
        method: uapi::UVERBS_METHOD_QP_CREATE,
        attrs: specs::QP_CREATE,
        udata: true,
        run: m_qp_create,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_QP,
        method: uapi::UVERBS_METHOD_QP_DESTROY,
        attrs: specs::QP_DESTROY,
        udata: false,
        run: m_qp_destroy,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_SRQ,
        method: uapi::UVERBS_METHOD_SRQ_CREATE,
        attrs: specs::SRQ_CREATE,
        udata: true,
        run: m_srq_create,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_SRQ,
        method: uapi::UVERBS_METHOD_SRQ_DESTROY,
        attrs: specs::SRQ_DESTROY,
        udata: false,
        run: m_srq_destroy,
    },
];

fn find_method(support: IoctlSupport, object: u16, method: u16) -> Option<&'static MethodDef> {
    let m = METHODS
        .iter()
        .find(|m| m.object == object && m.method == method)?;
    match support {
        IoctlSupport::Full => Some(m),
        IoctlSupport::InvokeWriteOnly => (object == uapi::UVERBS_OBJECT_DEVICE
            && method == uapi::UVERBS_METHOD_INVOKE_WRITE)
            .then_some(m),
    }
}

/// A decoded attribute's value.
#[derive(Debug)]
enum Val {
    /// An input's bytes (copied from the attribute or from user memory).
    Bytes(Vec<u8>),
    /// An output buffer.
    Out { addr: u64, len: usize },
    /// An existing object's handle.
    Handle(u32),
    /// An existing event file.
    EventFile(u64),
    /// A new object or file, to be made by the method.
    New,
}

#[derive(Debug)]
struct Attr {
    /// Index in the user's attribute array.
    idx: usize,
    id: u16,
    flags: u16,
    val: Val,
}

/// The decoded attributes of one ioctl (`struct uverbs_attr_bundle`).
#[derive(Debug)]
pub(super) struct Bundle {
    hdr: u64,
    attrs: Vec<Attr>,
    destroyed: Destroyed,
}

impl Bundle {
    fn get(&self, id: u16) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.id == id)
    }

    fn has(&self, id: u16) -> bool {
        self.get(id).is_some()
    }

    fn bytes(&self, id: u16) -> Option<&[u8]> {
        match &self.get(id)?.val {
            Val::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// `uverbs_copy_from` (`ENOENT` when absent).
    fn copy_from<T: FromBytes + IntoBytes>(&self, id: u16) -> Result<T, Errno> {
        let b = self.bytes(id).ok_or(Errno::ENOENT)?;
        if b.len() > std::mem::size_of::<T>() {
            return Err(Errno::EINVAL);
        }
        Ok(zext(b))
    }

    /// `uverbs_copy_from_or_zero`.
    fn copy_from_or_zero<T: FromBytes + IntoBytes>(&self, id: u16) -> Result<T, Errno> {
        let b = self.bytes(id).ok_or(Errno::ENOENT)?;
        Ok(zext(b))
    }

    /// `uverbs_get_const` of a value at most `max`.
    fn get_const(&self, id: u16, max: u64) -> Result<u64, Errno> {
        let v: u64 = self.copy_from(id)?;
        if v > max {
            return Err(Errno::EINVAL);
        }
        Ok(v)
    }

    /// `uverbs_get_flags32`: 0 when absent.
    fn flags32(&self, id: u16, allowed: u32) -> Result<u32, Errno> {
        let Some(b) = self.bytes(id) else {
            return Ok(0);
        };
        let v = if b.len() == 4 {
            u64::from(u32::from_ne_bytes(b.try_into().expect("4 bytes")))
        } else {
            u64::from_ne_bytes(b.try_into().map_err(|_| Errno::EINVAL)?)
        };
        let v = u32::try_from(v).map_err(|_| Errno::EINVAL)?;
        if v & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        Ok(v)
    }

    fn handle(&self, id: u16) -> Option<u32> {
        match self.get(id)?.val {
            Val::Handle(h) => Some(h),
            _ => None,
        }
    }

    fn event_file(&self, id: u16) -> Option<u64> {
        match self.get(id)?.val {
            Val::EventFile(f) => Some(f),
            _ => None,
        }
    }

    fn out(&self, id: u16) -> Option<(u64, usize, usize, u16)> {
        let a = self.get(id)?;
        match a.val {
            Val::Out { addr, len } => Some((addr, len, a.idx, a.flags)),
            _ => None,
        }
    }

    /// `uverbs_copy_to`: what fits; absent is no error.
    fn copy_to(&self, id: u16, bytes: &[u8]) -> Result<(), Errno> {
        let Some((addr, len, idx, flags)) = self.out(id) else {
            return Ok(());
        };
        uaccess::write(addr, &bytes[..bytes.len().min(len)])?;
        set_valid_output(self.hdr, idx, flags)
    }

    /// `uverbs_copy_to_struct_or_zero`.
    fn copy_to_struct_or_zero(&self, id: u16, bytes: &[u8]) -> Result<(), Errno> {
        let (addr, len, _, _) = self.out(id).ok_or(Errno::ENOENT)?;
        if len > bytes.len() {
            uaccess::clear(addr.wrapping_add(bytes.len() as u64), len - bytes.len())?;
        }
        self.copy_to(id, bytes)
    }

    /// Writes a new handle or descriptor into its attribute's `data`.
    fn set_data(&self, id: u16, value: u64) -> Result<(), Errno> {
        let a = self.get(id).ok_or(Errno::ENOENT)?;
        uaccess::write(
            self.hdr + (HDR_LEN + a.idx * ATTR_LEN + 8) as u64,
            &value.to_ne_bytes(),
        )
    }

    /// The driver's data (`uverbs_fill_udata`).
    fn udata(&self) -> Udata {
        let inbuf = self
            .bytes(uapi::UVERBS_ATTR_UHW_IN)
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        let (out_addr, out_len) = self
            .out(uapi::UVERBS_ATTR_UHW_OUT)
            .map_or((0, 0), |(a, l, _, _)| (a, l));
        Udata {
            inbuf,
            out_addr,
            out_len,
        }
    }
}

fn file_kind(obj: u16) -> FileKind {
    if obj == uapi::UVERBS_OBJECT_COMP_CHANNEL {
        FileKind::Comp
    } else {
        FileKind::Async
    }
}

impl File {
    /// `uverbs_process_attr`.
    fn process_attr(
        &self,
        st: &FileState,
        spec: &Spec,
        ua: &uapi::ib_uverbs_attr,
    ) -> Result<Val, Errno> {
        let len = usize::from(ua.len);
        match spec.ty {
            Ty::In {
                min,
                max,
                zero_trailing,
            } => {
                let inline = len <= 8;
                if len > usize::from(max) && zero_trailing {
                    let extra = len - usize::from(max);
                    let cleared = if inline {
                        ua.data.to_ne_bytes()[usize::from(max)..len]
                            .iter()
                            .all(|&b| b == 0)
                    } else {
                        uaccess::is_cleared(ua.data.wrapping_add(u64::from(max)), extra)?
                    };
                    if !cleared {
                        return Err(Errno::EOPNOTSUPP);
                    }
                }
                if len < usize::from(min) || (!zero_trailing && len > usize::from(max)) {
                    return Err(Errno::EINVAL);
                }
                if ua.attr_data != 0 {
                    return Err(Errno::EINVAL);
                }
                let bytes = if inline {
                    ua.data.to_ne_bytes()[..len].to_vec()
                } else {
                    let mut v = vec![0u8; len];
                    uaccess::read(ua.data, &mut v)?;
                    v
                };
                Ok(Val::Bytes(bytes))
            }
            Ty::Out {
                min,
                max,
                zero_trailing,
            } => {
                if len < usize::from(min) || (!zero_trailing && len > usize::from(max)) {
                    return Err(Errno::EINVAL);
                }
                if ua.attr_data != 0 {
                    return Err(Errno::EINVAL);
                }
                Ok(Val::Out { addr: ua.data, len })
            }
            Ty::Idr { obj, access } => {
                if ua.attr_data != 0 || len != 0 {
                    return Err(Errno::EINVAL);
                }
                match access {
                    Access::New => Ok(Val::New),
                    Access::Read | Access::Destroy => {
                        File::lookup(st, ua.data, obj).map(Val::Handle)
                    }
                }
            }
            Ty::Fd { obj, access } => {
                if ua.attr_data != 0 || len != 0 {
                    return Err(Errno::EINVAL);
                }
                match access {
                    Access::New => Ok(Val::New),
                    Access::Read | Access::Destroy => self
                        .dev
                        .events
                        .lookup(self.id, ua.data_s64(), file_kind(obj))
                        .map(Val::EventFile),
                }
            }
        }
    }

    /// `ib_uverbs_ioctl` and `ib_uverbs_run_method`.
    fn ioctl_at(&self, hdr_addr: u64) -> Result<(), Errno> {
        let hdr: uapi::ib_uverbs_ioctl_hdr = uaccess::read_obj(hdr_addr)?;
        let n = usize::from(hdr.num_attrs);
        let length = usize::from(hdr.length);
        if length > uverbs_drivers::sys::page_size() || length != HDR_LEN + n * ATTR_LEN {
            return Err(Errno::EINVAL);
        }
        if hdr.reserved1 != 0 || hdr.reserved2 != 0 {
            return Err(Errno::EPROTONOSUPPORT);
        }
        if hdr.driver_id != uapi::RDMA_DRIVER_MLX5 {
            return Err(Errno::EINVAL);
        }
        let method = find_method(self.dev.cfg.ioctl, hdr.object_id, hdr.method_id)
            .ok_or(Errno::EPROTONOSUPPORT)?;
        let mut raw = vec![0u8; n * ATTR_LEN];
        uaccess::read(hdr_addr + HDR_LEN as u64, &mut raw)?;
        let uattrs = <[uapi::ib_uverbs_attr]>::ref_from_bytes(&raw).map_err(|_| Errno::EINVAL)?;
        let mut st = self.lock();
        let mut b = Bundle {
            hdr: hdr_addr,
            attrs: Vec::with_capacity(n),
            destroyed: Destroyed::default(),
        };
        for (idx, ua) in uattrs.iter().enumerate() {
            let uhw = if method.udata { &UHW[..] } else { &[][..] };
            let Some(spec) = method
                .attrs
                .iter()
                .chain(uhw.iter())
                .find(|s| s.id == ua.attr_id)
            else {
                if ua.flags & uapi::UVERBS_ATTR_F_MANDATORY != 0 {
                    return Err(Errno::EPROTONOSUPPORT);
                }
                continue;
            };
            if b.has(spec.id) {
                return Err(Errno::EINVAL);
            }
            let val = self.process_attr(&st, spec, ua)?;
            b.attrs.push(Attr {
                idx,
                id: spec.id,
                flags: ua.flags,
                val,
            });
        }
        if method.attrs.iter().any(|s| s.mandatory && !b.has(s.id)) {
            return Err(Errno::EINVAL);
        }
        if let Some(spec) = method.attrs.iter().find(|s| {
            matches!(
                s.ty,
                Ty::Idr {
                    access: Access::Destroy,
                    ..
                }
            )
        }) {
            let Ty::Idr { obj, .. } = spec.ty else {
                unreachable!("matched above")
            };
            let handle = b.handle(spec.id).ok_or(Errno::EINVAL)?;
            b.destroyed = self.destroy(&mut st, u64::from(handle), obj)?;
        }
        match (method.run)(self, &mut st, &mut b) {
            Ok(()) => {}
            // Only the framework may say "not supported".
            Err(Errno::EPROTONOSUPPORT) => return Err(Errno::EINVAL),
            Err(e) => return Err(e),
        }
        if method.udata {
            if let Some((_, _, idx, flags)) = b.out(uapi::UVERBS_ATTR_UHW_OUT) {
                set_valid_output(hdr_addr, idx, flags)?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The commands.

fn m_nothing(_: &File, _: &mut FileState, _: &mut Bundle) -> Result<(), Errno> {
    Ok(())
}

/// `UVERBS_METHOD_INVOKE_WRITE`: a write command carried by attributes.
fn m_invoke_write(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let cmd = b.get_const(uapi::UVERBS_ATTR_WRITE_CMD, u64::from(u32::MAX))? as u32;
    let def = write_method(cmd)?;
    let core_in = b
        .bytes(uapi::UVERBS_ATTR_CORE_IN)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let out = b.out(uapi::UVERBS_ATTR_CORE_OUT);
    let (out_addr, out_len) = out.map_or((0, 0), |(a, l, _, _)| (a, l));
    if core_in.len() < def.req || out_len < def.resp {
        return Err(Errno::ENOSPC);
    }
    if def.ctx && st.ctx.is_none() {
        return Err(Errno::EINVAL);
    }
    let mut io = Io {
        core_in,
        out_addr,
        out_len,
        core_out_attr: out.map(|(_, _, idx, _)| (b.hdr, idx)),
        udata: b.udata(),
    };
    (def.run)(f, st, &mut io)
}

const CORE_SUPPORT: u64 = uapi::IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;

fn m_get_context(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    if st.ctx.is_some() {
        return Err(Errno::EINVAL);
    }
    f.get_context(st, &b.udata())?;
    let r = b
        .copy_to(
            uapi::UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS,
            &f.dev.cfg.num_comp_vectors.to_ne_bytes(),
        )
        .and_then(|()| {
            b.copy_to(
                uapi::UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT,
                &CORE_SUPPORT.to_ne_bytes(),
            )
        });
    if r.is_err() {
        f.drop_context(st);
    }
    r
}

fn w_get_context(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let _req: uapi::ib_uverbs_get_context = io.request()?;
    if st.ctx.is_some() {
        return Err(Errno::EINVAL);
    }
    f.get_context(st, &io.udata)?;
    let (id, user) = match f.new_async_file(st) {
        Ok(x) => x,
        Err(e) => {
            f.drop_context(st);
            return Err(e);
        }
    };
    let resp = uapi::ib_uverbs_get_context_resp {
        async_fd: user.as_raw_fd() as u32,
        num_comp_vectors: f.dev.cfg.num_comp_vectors,
    };
    if let Err(e) = io.response(resp.as_bytes()) {
        f.drop_async_file(st, id);
        f.drop_context(st);
        return Err(e);
    }
    into_user_fd(user);
    Ok(())
}

fn m_async_event_alloc(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let (id, user) = f.new_async_file(st)?;
    if let Err(e) = b.set_data(
        uapi::UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE,
        user.as_raw_fd() as u64,
    ) {
        f.drop_async_file(st, id);
        return Err(e);
    }
    into_user_fd(user);
    Ok(())
}

fn w_query_device(f: &File, _: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let _req: uapi::ib_uverbs_query_device = io.request()?;
    io.response(caps::device_attr(&f.dev.cfg).as_bytes())
}

/// The ends of the fields of `mlx5_ib_query_device_resp` that `mlx5_ib_query_device` adds when
/// the user's buffer has room for them.
const MLX5_QUERY_DEVICE_FIELDS: [usize; 11] = [8, 16, 32, 40, 56, 60, 64, 72, 96, 100, 102];

fn w_ex_query_device(f: &File, _: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_query_device = io.request()?;
    if cmd.comp_mask != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    // mlx5_ib_query_device with driver data.
    let uhw_out = io.udata.outlen();
    if uhw_out != 0 && uhw_out < 8 {
        return Err(Errno::EINVAL);
    }
    if io.udata.inbuf().iter().any(|&b| b != 0) {
        return Err(Errno::EINVAL);
    }
    if uhw_out != 0 {
        let mut d = caps::mlx5_query_device_resp();
        let n = MLX5_QUERY_DEVICE_FIELDS
            .iter()
            .copied()
            .filter(|&end| end <= uhw_out)
            .max()
            .unwrap_or(8);
        d.response_length = n as u32;
        io.udata.copy_out(&d.as_bytes()[..n])?;
    }
    let mut resp = caps::device_attr_ex(&f.dev.cfg);
    resp.response_length = io.response_length(std::mem::size_of_val(&resp));
    io.response(resp.as_bytes())
}

fn w_query_port(f: &File, _: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_query_port = io.request()?;
    let resp = f.query_port(u64::from(cmd.port_num))?;
    io.response(resp.as_bytes())
}

fn m_query_port(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    if st.ctx.is_none() {
        return Err(Errno::EINVAL);
    }
    let port = b.get_const(uapi::UVERBS_ATTR_QUERY_PORT_PORT_NUM, u64::from(u8::MAX))?;
    let mut resp = uapi::ib_uverbs_query_port_resp_ex::new_zeroed();
    resp.legacy_resp = f.query_port(port)?;
    b.copy_to_struct_or_zero(uapi::UVERBS_ATTR_QUERY_PORT_RESP, resp.as_bytes())
}

fn m_query_gid_table(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    b.flags32(uapi::UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0)?;
    let esize = b.get_const(uapi::UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, u64::MAX)?;
    if esize == 0 {
        return Err(Errno::EINVAL);
    }
    let (addr, len, idx, flags) = b
        .out(uapi::UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES)
        .ok_or(Errno::ENOENT)?;
    let esize = usize::try_from(esize).map_err(|_| Errno::EINVAL)?;
    if len % esize != 0 || len / esize == 0 {
        return Err(Errno::EINVAL);
    }
    if st.ctx.is_none() {
        return Err(Errno::EINVAL);
    }
    let entries = f.gid_table(len / esize)?;
    let ksize = std::mem::size_of::<uapi::ib_uverbs_gid_entry>();
    for (i, e) in entries.iter().enumerate() {
        let at = addr.wrapping_add((i * esize) as u64);
        uaccess::write(at, &e.as_bytes()[..ksize.min(esize)])?;
        if esize > ksize {
            uaccess::clear(at.wrapping_add(ksize as u64), esize - ksize)?;
        }
    }
    set_valid_output(b.hdr, idx, flags)?;
    b.copy_to(
        uapi::UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES,
        &(entries.len() as u64).to_ne_bytes(),
    )
}

fn m_query_gid_entry(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    b.flags32(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0)?;
    let port = b.get_const(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_PORT, u64::from(u32::MAX))?;
    let index = b.get_const(
        uapi::UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX,
        u64::from(u32::MAX),
    )?;
    if st.ctx.is_none() {
        return Err(Errno::EINVAL);
    }
    let e = f.gid_entry(port, index)?;
    b.copy_to_struct_or_zero(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, e.as_bytes())
}

/// Undoes a creation whose answer could not be written. A failure (a model bug: the object was
/// just created) is not printed; the command fails with the write's error either way.
fn undo(f: &File, st: &mut FileState, handle: u32, type_id: u16) {
    let _ = f.destroy(st, u64::from(handle), type_id);
}

fn w_alloc_pd(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let _req: uapi::ib_uverbs_alloc_pd = io.request()?;
    let h = f.alloc_pd(st, &io.udata)?;
    let resp = uapi::ib_uverbs_alloc_pd_resp { pd_handle: h };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_PD))
}

fn w_dealloc_pd(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_dealloc_pd = io.request()?;
    f.destroy(st, u64::from(cmd.pd_handle), uapi::UVERBS_OBJECT_PD)
        .map(drop)
}

fn w_reg_mr(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_reg_mr = io.request()?;
    let (h, key) = f.reg_mr(st, &cmd)?;
    let resp = uapi::ib_uverbs_reg_mr_resp {
        mr_handle: h,
        lkey: key,
        rkey: key,
    };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_MR))
}

fn w_dereg_mr(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_dereg_mr = io.request()?;
    f.destroy(st, u64::from(cmd.mr_handle), uapi::UVERBS_OBJECT_MR)
        .map(drop)
}

fn w_create_ah(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_create_ah = io.request()?;
    let h = f.create_ah(st, &cmd, &io.udata)?;
    let resp = uapi::ib_uverbs_create_ah_resp { ah_handle: h };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_AH))
}

fn w_destroy_ah(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_destroy_ah = io.request()?;
    f.destroy(st, u64::from(cmd.ah_handle), uapi::UVERBS_OBJECT_AH)
        .map(drop)
}

fn w_create_comp_channel(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let _req: uapi::ib_uverbs_create_comp_channel = io.request()?;
    let (id, user) = f.create_comp_channel(st)?;
    let resp = uapi::ib_uverbs_create_comp_channel_resp {
        fd: user.as_raw_fd() as u32,
    };
    if let Err(e) = io.response(resp.as_bytes()) {
        f.drop_comp_channel(st, id);
        return Err(e);
    }
    into_user_fd(user);
    Ok(())
}

/// The core part of `create_cq` shared by both write commands.
fn write_create_cq(
    f: &File,
    st: &mut FileState,
    io: &Io,
    cmd: &uapi::ib_uverbs_ex_create_cq,
) -> Result<(u32, u32), Errno> {
    if cmd.comp_vector >= f.dev.cfg.num_comp_vectors {
        return Err(Errno::EINVAL);
    }
    let channel = if cmd.comp_channel >= 0 {
        Some(
            f.dev
                .events
                .lookup(f.id, i64::from(cmd.comp_channel), FileKind::Comp)?,
        )
    } else {
        None
    };
    let p = CqParams {
        cqe: cmd.cqe,
        user_handle: cmd.user_handle,
        comp_vector: cmd.comp_vector,
        channel,
        async_file: st.default_async,
        flags: cmd.flags,
    };
    f.create_cq(st, &p, &io.udata)
}

fn w_create_cq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_create_cq = io.request()?;
    let ex = uapi::ib_uverbs_ex_create_cq {
        user_handle: cmd.user_handle,
        cqe: cmd.cqe,
        comp_vector: cmd.comp_vector,
        comp_channel: cmd.comp_channel,
        comp_mask: 0,
        flags: 0,
        reserved: 0,
    };
    let (h, cqe) = write_create_cq(f, st, io, &ex)?;
    let resp = uapi::ib_uverbs_create_cq_resp { cq_handle: h, cqe };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_CQ))
}

fn w_ex_create_cq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_create_cq = io.request()?;
    if cmd.comp_mask != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    let (h, cqe) = write_create_cq(f, st, io, &cmd)?;
    let mut resp = uapi::ib_uverbs_ex_create_cq_resp::new_zeroed();
    resp.base = uapi::ib_uverbs_create_cq_resp { cq_handle: h, cqe };
    resp.response_length = io.response_length(std::mem::size_of_val(&resp));
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_CQ))
}

fn m_cq_create(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let comp_vector: u32 = b.copy_from(uapi::UVERBS_ATTR_CREATE_CQ_COMP_VECTOR)?;
    let cqe: u32 = b.copy_from(uapi::UVERBS_ATTR_CREATE_CQ_CQE)?;
    let user_handle: u64 = b.copy_from(uapi::UVERBS_ATTR_CREATE_CQ_USER_HANDLE)?;
    let flags = b.flags32(
        uapi::UVERBS_ATTR_CREATE_CQ_FLAGS,
        uapi::IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION | uapi::IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN,
    )?;
    let p = CqParams {
        cqe,
        user_handle,
        comp_vector,
        channel: b.event_file(uapi::UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL),
        async_file: b
            .event_file(uapi::UVERBS_ATTR_CREATE_CQ_EVENT_FD)
            .or(st.default_async),
        flags,
    };
    let (h, entries) = f.create_cq(st, &p, &b.udata())?;
    b.set_data(uapi::UVERBS_ATTR_CREATE_CQ_HANDLE, u64::from(h))
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_CQ))?;
    b.copy_to(uapi::UVERBS_ATTR_CREATE_CQ_RESP_CQE, &entries.to_ne_bytes())
}

fn w_destroy_cq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_destroy_cq = io.request()?;
    let d = f.destroy(st, u64::from(cmd.cq_handle), uapi::UVERBS_OBJECT_CQ)?;
    let resp = uapi::ib_uverbs_destroy_cq_resp {
        comp_events_reported: d.comp_events,
        async_events_reported: d.async_events,
    };
    io.response(resp.as_bytes())
}

fn m_cq_destroy(_: &File, _: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let resp = uapi::ib_uverbs_destroy_cq_resp {
        comp_events_reported: b.destroyed.comp_events,
        async_events_reported: b.destroyed.async_events,
    };
    b.copy_to(uapi::UVERBS_ATTR_DESTROY_CQ_RESP, resp.as_bytes())
}

fn w_req_notify_cq(_: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_req_notify_cq = io.request()?;
    if !matches!(st.objects.get(&cmd.cq_handle), Some(Object::Cq(_))) {
        return Err(Errno::EINVAL);
    }
    // mlx5 CQs are armed through their doorbell; the kernel path is not modelled.
    Err(Errno::EOPNOTSUPP)
}

/// `IB_QP_CREATE_*` flags the write commands accept.
const WRITE_QP_CREATE_FLAGS: u32 =
    (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11);

/// The core part of `create_qp` shared by both write commands.
fn write_create_qp(
    f: &File,
    st: &mut FileState,
    io: &Io,
    cmd: &uapi::ib_uverbs_ex_create_qp,
) -> Result<(u32, u32, uapi::ib_uverbs_qp_cap), Errno> {
    if cmd.comp_mask & uapi::IB_UVERBS_CREATE_QP_MASK_IND_TABLE != 0 {
        // No receive work queue indirection tables on this model: the handle names nothing.
        return Err(Errno::EINVAL);
    }
    let is = |h: u32, ty: u16| st.objects.get(&h).is_some_and(|o| o.type_id() == ty);
    let srq = if cmd.is_srq != 0 {
        if !is(cmd.srq_handle, uapi::UVERBS_OBJECT_SRQ) {
            return Err(Errno::EINVAL);
        }
        Some(cmd.srq_handle)
    } else {
        None
    };
    if cmd.recv_cq_handle != cmd.send_cq_handle && !is(cmd.recv_cq_handle, uapi::UVERBS_OBJECT_CQ) {
        return Err(Errno::EINVAL);
    }
    if !is(cmd.send_cq_handle, uapi::UVERBS_OBJECT_CQ) || !is(cmd.pd_handle, uapi::UVERBS_OBJECT_PD)
    {
        return Err(Errno::EINVAL);
    }
    if cmd.create_flags & !WRITE_QP_CREATE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let p = QpParams {
        qp_type: cmd.qp_type,
        pd: cmd.pd_handle,
        send_cq: cmd.send_cq_handle,
        recv_cq: cmd.recv_cq_handle,
        srq,
        cap: uapi::ib_uverbs_qp_cap {
            max_send_wr: cmd.max_send_wr,
            max_recv_wr: cmd.max_recv_wr,
            max_send_sge: cmd.max_send_sge,
            max_recv_sge: cmd.max_recv_sge,
            max_inline_data: cmd.max_inline_data,
        },
        sq_sig_all: cmd.sq_sig_all != 0,
        user_handle: cmd.user_handle,
        create_flags: cmd.create_flags,
        async_file: st.default_async,
    };
    f.create_qp(st, &p, &io.udata)
}

fn qp_resp(h: u32, qpn: u32, cap: &uapi::ib_uverbs_qp_cap) -> uapi::ib_uverbs_create_qp_resp {
    uapi::ib_uverbs_create_qp_resp {
        qp_handle: h,
        qpn,
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
        reserved: 0,
    }
}

fn w_create_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_create_qp = io.request()?;
    let mut ex = uapi::ib_uverbs_ex_create_qp::new_zeroed();
    ex.user_handle = cmd.user_handle;
    ex.pd_handle = cmd.pd_handle;
    ex.send_cq_handle = cmd.send_cq_handle;
    ex.recv_cq_handle = cmd.recv_cq_handle;
    ex.srq_handle = cmd.srq_handle;
    ex.max_send_wr = cmd.max_send_wr;
    ex.max_recv_wr = cmd.max_recv_wr;
    ex.max_send_sge = cmd.max_send_sge;
    ex.max_recv_sge = cmd.max_recv_sge;
    ex.max_inline_data = cmd.max_inline_data;
    ex.sq_sig_all = cmd.sq_sig_all;
    ex.qp_type = cmd.qp_type;
    ex.is_srq = cmd.is_srq;
    let (h, qpn, cap) = write_create_qp(f, st, io, &ex)?;
    io.response(qp_resp(h, qpn, &cap).as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_QP))
}

fn w_ex_create_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_create_qp = io.request()?;
    if cmd.comp_mask & !uapi::IB_UVERBS_CREATE_QP_SUP_COMP_MASK != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    let (h, qpn, cap) = write_create_qp(f, st, io, &cmd)?;
    let mut resp = uapi::ib_uverbs_ex_create_qp_resp::new_zeroed();
    resp.base = qp_resp(h, qpn, &cap);
    resp.response_length = io.response_length(std::mem::size_of_val(&resp));
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_QP))
}

fn m_qp_create(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    use uapi::*;
    let cap: ib_uverbs_qp_cap = b.copy_from_or_zero(UVERBS_ATTR_CREATE_QP_CAP)?;
    let user_handle: u64 = b.copy_from(UVERBS_ATTR_CREATE_QP_USER_HANDLE)?;
    let qp_type = b.get_const(UVERBS_ATTR_CREATE_QP_TYPE, u64::from(u8::MAX))? as u8;
    let (pd, send_cq, recv_cq) = match qp_type {
        IB_UVERBS_QPT_XRC_TGT => {
            let others = [
                UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE,
                UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE,
                UVERBS_ATTR_CREATE_QP_PD_HANDLE,
                UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE,
            ];
            if others.iter().any(|&id| b.has(id)) {
                return Err(Errno::EINVAL);
            }
            // There are no XRC domains on this model, so no handle can name one.
            return Err(Errno::ENOENT);
        }
        IB_UVERBS_QPT_RAW_PACKET
        | IB_UVERBS_QPT_RC
        | IB_UVERBS_QPT_UC
        | IB_UVERBS_QPT_UD
        | IB_UVERBS_QPT_XRC_INI
        | IB_UVERBS_QPT_DRIVER => {
            if b.has(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE)
                || (b.has(UVERBS_ATTR_CREATE_QP_SOURCE_QPN) && qp_type == IB_UVERBS_QPT_XRC_INI)
            {
                return Err(Errno::EINVAL);
            }
            let pd = b
                .handle(UVERBS_ATTR_CREATE_QP_PD_HANDLE)
                .ok_or(Errno::ENOENT)?;
            let send_cq = b
                .handle(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE)
                .ok_or(Errno::ENOENT)?;
            let recv_cq = if qp_type == IB_UVERBS_QPT_XRC_INI {
                send_cq
            } else {
                b.handle(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE)
                    .ok_or(Errno::ENOENT)?
            };
            (pd, send_cq, recv_cq)
        }
        _ => return Err(Errno::EINVAL),
    };
    let flags = b.flags32(
        UVERBS_ATTR_CREATE_QP_FLAGS,
        IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK
            | IB_UVERBS_QP_CREATE_SCATTER_FCS
            | IB_UVERBS_QP_CREATE_CVLAN_STRIPPING
            | IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING
            | IB_UVERBS_QP_CREATE_SQ_SIG_ALL,
    )?;
    // check_creation_flags
    let mut create_flags = flags & !IB_UVERBS_QP_CREATE_SQ_SIG_ALL;
    if create_flags != 0 && qp_type != IB_UVERBS_QPT_DRIVER {
        if qp_type != IB_UVERBS_QPT_RAW_PACKET && qp_type != IB_UVERBS_QPT_UD {
            return Err(Errno::EINVAL);
        }
        if create_flags & (IB_UVERBS_QP_CREATE_SCATTER_FCS | IB_UVERBS_QP_CREATE_CVLAN_STRIPPING)
            != 0
            && qp_type != IB_UVERBS_QPT_RAW_PACKET
        {
            return Err(Errno::EINVAL);
        }
    }
    if b.has(UVERBS_ATTR_CREATE_QP_SOURCE_QPN) {
        let _: u32 = b.copy_from(UVERBS_ATTR_CREATE_QP_SOURCE_QPN)?;
        create_flags |= 1 << 10; // IB_QP_CREATE_SOURCE_QPN
    }
    let p = QpParams {
        qp_type,
        pd,
        send_cq,
        recv_cq,
        srq: b.handle(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE),
        cap,
        sq_sig_all: flags & IB_UVERBS_QP_CREATE_SQ_SIG_ALL != 0,
        user_handle,
        create_flags,
        async_file: b
            .event_file(UVERBS_ATTR_CREATE_QP_EVENT_FD)
            .or(st.default_async),
    };
    let (h, qpn, cap) = f.create_qp(st, &p, &b.udata())?;
    b.set_data(UVERBS_ATTR_CREATE_QP_HANDLE, u64::from(h))
        .inspect_err(|_| undo(f, st, h, UVERBS_OBJECT_QP))?;
    b.copy_to_struct_or_zero(UVERBS_ATTR_CREATE_QP_RESP_CAP, cap.as_bytes())?;
    b.copy_to(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, &qpn.to_ne_bytes())
}

fn w_query_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_query_qp = io.request()?;
    let resp = f.query_qp(st, cmd.qp_handle)?;
    io.response(resp.as_bytes())
}

fn w_modify_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_modify_qp = io.request()?;
    if cmd.attr_mask & !((uapi::IB_USER_LEGACY_LAST_QP_ATTR_MASK << 1) - 1) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    f.modify_qp(st, &cmd, &io.udata)
}

fn w_ex_modify_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_modify_qp = io.request()?;
    if cmd.base.attr_mask & !((uapi::IB_USER_LAST_QP_ATTR_MASK << 1) - 1) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    f.modify_qp(st, &cmd.base, &io.udata)?;
    let resp = uapi::ib_uverbs_ex_modify_qp_resp {
        comp_mask: 0,
        response_length: io.response_length(sz::<uapi::ib_uverbs_ex_modify_qp_resp>()),
    };
    io.response(resp.as_bytes())
}

fn w_destroy_qp(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_destroy_qp = io.request()?;
    let d = f.destroy(st, u64::from(cmd.qp_handle), uapi::UVERBS_OBJECT_QP)?;
    let resp = uapi::ib_uverbs_destroy_qp_resp {
        events_reported: d.async_events,
    };
    io.response(resp.as_bytes())
}

fn m_qp_destroy(_: &File, _: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let resp = uapi::ib_uverbs_destroy_qp_resp {
        events_reported: b.destroyed.async_events,
    };
    b.copy_to(uapi::UVERBS_ATTR_DESTROY_QP_RESP, resp.as_bytes())
}

fn w_attach_mcast(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_attach_mcast = io.request()?;
    f.mcast(st, cmd.qp_handle, cmd.gid, cmd.mlid, true)
}

fn w_detach_mcast(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_detach_mcast = io.request()?;
    f.mcast(st, cmd.qp_handle, cmd.gid, cmd.mlid, false)
}

fn w_create_srq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_create_srq = io.request()?;
    let p = SrqParams {
        pd: cmd.pd_handle,
        max_wr: cmd.max_wr,
        max_sge: cmd.max_sge,
        srq_type: uapi::IB_UVERBS_SRQT_BASIC,
        user_handle: cmd.user_handle,
        async_file: st.default_async,
    };
    let (h, max_wr, max_sge) = f.create_srq(st, &p, &io.udata)?;
    // The core reports the SRQ number only for XRC SRQs.
    let resp = uapi::ib_uverbs_create_srq_resp {
        srq_handle: h,
        max_wr,
        max_sge,
        srqn: 0,
    };
    io.response(resp.as_bytes())
        .inspect_err(|_| undo(f, st, h, uapi::UVERBS_OBJECT_SRQ))
}

fn m_srq_create(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    use uapi::*;
    let max_sge: u32 = b.copy_from(UVERBS_ATTR_CREATE_SRQ_MAX_SGE)?;
    let max_wr: u32 = b.copy_from(UVERBS_ATTR_CREATE_SRQ_MAX_WR)?;
    let _limit: u32 = b.copy_from(UVERBS_ATTR_CREATE_SRQ_LIMIT)?;
    let user_handle: u64 = b.copy_from(UVERBS_ATTR_CREATE_SRQ_USER_HANDLE)?;
    let srq_type = b.get_const(UVERBS_ATTR_CREATE_SRQ_TYPE, u64::from(u32::MAX))? as u32;
    match srq_type {
        IB_UVERBS_SRQT_XRC | IB_UVERBS_SRQT_TM => {
            // Both need a CQ; XRC an XRC domain, which this model never has.
            b.handle(UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE)
                .ok_or(Errno::ENOENT)?;
            if srq_type == IB_UVERBS_SRQT_XRC {
                return Err(Errno::ENOENT);
            }
        }
        IB_UVERBS_SRQT_BASIC => {}
        _ => return Err(Errno::EINVAL),
    }
    let p = SrqParams {
        pd: b
            .handle(UVERBS_ATTR_CREATE_SRQ_PD_HANDLE)
            .ok_or(Errno::ENOENT)?,
        max_wr,
        max_sge,
        srq_type,
        user_handle,
        async_file: b
            .event_file(UVERBS_ATTR_CREATE_SRQ_EVENT_FD)
            .or(st.default_async),
    };
    let (h, max_wr, max_sge) = f.create_srq(st, &p, &b.udata())?;
    b.set_data(UVERBS_ATTR_CREATE_SRQ_HANDLE, u64::from(h))
        .inspect_err(|_| undo(f, st, h, UVERBS_OBJECT_SRQ))?;
    b.copy_to(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, &max_wr.to_ne_bytes())?;
    b.copy_to(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, &max_sge.to_ne_bytes())
}

fn w_modify_srq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_modify_srq = io.request()?;
    f.modify_srq(st, &cmd)
}

fn w_query_srq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_query_srq = io.request()?;
    let resp = f.query_srq(st, cmd.srq_handle)?;
    io.response(resp.as_bytes())
}

fn w_destroy_srq(f: &File, st: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_destroy_srq = io.request()?;
    let d = f.destroy(st, u64::from(cmd.srq_handle), uapi::UVERBS_OBJECT_SRQ)?;
    let resp = uapi::ib_uverbs_destroy_srq_resp {
        events_reported: d.async_events,
    };
    io.response(resp.as_bytes())
}

fn m_srq_destroy(_: &File, _: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let resp = uapi::ib_uverbs_destroy_srq_resp {
        events_reported: b.destroyed.async_events,
    };
    b.copy_to(uapi::UVERBS_ATTR_DESTROY_SRQ_RESP, resp.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// mmap.

impl File {
    /// `mlx5_ib_mmap`.
    fn do_mmap(&self, len: usize, offset: u64) -> std::io::Result<memmap2::MmapRaw> {
        let err = |e: i32| Err(std::io::Error::from_raw_os_error(e));
        let page = uverbs_drivers::sys::page_size() as u64;
        if len == 0 || offset % page != 0 {
            return err(libc::EINVAL);
        }
        let st = self.lock();
        let Some(ctx) = st.ctx.as_ref() else {
            return err(libc::EINVAL);
        };
        let pgoff = offset / page;
        let command = ((pgoff >> 8) & 0xff) as u32;
        match command {
            uapi::MLX5_IB_MMAP_REGULAR_PAGE
            | uapi::MLX5_IB_MMAP_WC_PAGE
            | uapi::MLX5_IB_MMAP_NC_PAGE => match &self.uar_fd {
                Some(fd) => ctx.uars.map_page(fd, pgoff & 0xff, len),
                None => err(libc::EINVAL),
            },
            // A dynamic UAR: the model hands out none.
            uapi::MLX5_IB_MMAP_ALLOC_WC => err(libc::EINVAL),
            uapi::MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES => err(libc::ENOSYS),
            // No clock page and no clock info on this model.
            uapi::MLX5_IB_MMAP_CORE_CLOCK | uapi::MLX5_IB_MMAP_CLOCK_INFO => err(libc::EOPNOTSUPP),
            _ => err(libc::EINVAL),
        }
    }
}

// SAFETY: the kernel half keeps the kernel's contract with the driver: a successful command has
// written a newly created descriptor (`events::into_user_fd`, given away exactly once) into each of
// its new-fd attributes and fd response fields, and every write to user memory goes through
// `uaccess`, which copies at most the length the command gives for that pointer.
unsafe impl ModelFile for File {
    unsafe fn ioctl(&self, hdr: *mut uapi::ib_uverbs_ioctl_hdr) -> nix::Result<()> {
        self.dev
            .ioctls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.guarded(|| self.ioctl_at(hdr as u64))
    }

    unsafe fn write(&self, cmd: &[u8]) -> nix::Result<usize> {
        self.dev
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.guarded(|| self.write_cmd(cmd))
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

    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.uar_fd {
            Some(fd) => fd.as_fd(),
            None => self.dev.node_fd.as_fd(),
        }
    }

    fn reopen(&self) -> uverbs_drivers::sys::ModelRef {
        uverbs_drivers::sys::ModelRef(File::open(Arc::clone(&self.dev)))
    }
}
