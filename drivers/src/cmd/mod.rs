//! The core uverbs object commands: protection domains, memory regions and windows, completion
//! queues and queue pairs, created and destroyed through the command channel.
//!
//! These are the driver-independent halves of each verb; the backends add their driver data
//! (`udata`) and map what the kernel hands back. Creation goes through the ioctl method where the
//! kernel has one (CQ, QP), otherwise through the write command; destruction through the ioctl
//! `*_DESTROY` methods with the write commands as fallback, as rdma-core does.
//!
//! Each command is a function whose first argument is the context it is issued on (`uctx`, a
//! [`Ucontext`]), as rdma-core's `ibv_cmd_*` take their `ibv_context`: the context type lives in
//! [`crate::ucontext`] alone, and the commands are a layer of functions over it ([`srq`] holds the
//! shared receive queue's).

pub mod srq;

use std::os::fd::{AsRawFd, BorrowedFd};

use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::chan::{IoctlCmd, Outcome};
use crate::error::{Error, Result, Verb};
use crate::ucontext::Ucontext;

/// The keys and handle of a registered memory region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MrKeys {
    /// The kernel's handle for the region.
    pub handle: u32,
    /// The local key, for scatter/gather entries.
    pub lkey: u32,
    /// The remote key, for peers' RDMA operations.
    pub rkey: u32,
}

/// What a queue pair is created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpInit {
    /// The protection domain's handle.
    pub pd: u32,
    /// The send completion queue's handle.
    pub send_cq: u32,
    /// The receive completion queue's handle.
    pub recv_cq: u32,
    /// The transport (`IB_UVERBS_QPT_*`).
    pub qp_type: u8,
    /// Requested capacities.
    pub cap: uapi::ib_uverbs_qp_cap,
    /// Whether every send work request completes with a CQE, signaled or not.
    pub sq_sig_all: bool,
    /// The value async events for this QP carry.
    pub user_handle: u64,
    /// The handle of the shared receive queue the QP takes its receives from: it then has no
    /// receive queue of its own.
    pub srq: Option<u32>,
}

/// What the kernel answered to `CREATE_QP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpCreated {
    /// The kernel's handle.
    pub handle: u32,
    /// The queue pair number.
    pub qpn: u32,
    /// The capacities the kernel granted (on 6.1 rxe, `max_send_wr`/`max_recv_wr` echo the request;
    /// the rings' own headers are the truth).
    pub cap: uapi::ib_uverbs_qp_cap,
}

/// `ALLOC_PD`: a new protection domain's handle. `drv_out` receives the driver's answer.
pub fn alloc_pd(uctx: &Ucontext, drv_out: &mut [u8]) -> Result<u32> {
    let mut req = uapi::ib_uverbs_alloc_pd::new_zeroed();
    let mut resp = uapi::ib_uverbs_alloc_pd_resp::new_zeroed();
    // SAFETY: ALLOC_PD's request holds no address and there is no driver request; the outputs
    // are `resp` and `drv_out`, borrowed for the call.
    unsafe {
        uctx.channel().write(
            Verb::AllocPd,
            uapi::IB_USER_VERBS_CMD_ALLOC_PD,
            &mut req,
            &mut resp,
            &[],
            drv_out,
        )
    }?;
    Ok(resp.pd_handle)
}

/// Destroys an object that answers nothing: `ioctl` is its (object, `*_DESTROY` method, handle
/// attribute); `legacy` the write command and its request, for kernels without the ioctl.
///
/// Safe because every caller passes a destroy method and the matching destroy command, whose
/// only argument is `handle`: destroying an object makes the kernel and the device stop using
/// what it names, it never makes them touch user memory.
fn destroy<Req>(
    uctx: &Ucontext,
    verb: Verb,
    ioctl: (u16, u16, u16),
    handle: u32,
    legacy: (u32, Req),
) -> Result<()>
where
    Req: IntoBytes + FromBytes + Immutable + KnownLayout,
{
    let (object, method, handle_attr) = ioctl;
    let mut cmd = IoctlCmd::new(object, method);
    cmd.idr(handle_attr, handle);
    // SAFETY: a `*_DESTROY` method with one handle attribute and no pointer (see above).
    if unsafe { uctx.channel().ioctl_or_write(verb, &mut cmd) }? == Outcome::UseWrite {
        let (command, mut req) = legacy;
        // SAFETY: the matching destroy command, whose request is a handle (see above).
        unsafe { uctx.channel().command(verb, command, &mut req) }?;
    }
    Ok(())
}

/// Destroys a protection domain.
///
/// # Safety
/// `handle` must name an object of this context that the caller owns, that nothing else
/// (a `verbs` object, another owner) relies on, and that the caller does not name again: the
/// kernel gives a freed handle to the next object made, and an owner still using the old
/// number then acts on that one (F34: a region's `rereg` widening another region's access).
pub unsafe fn dealloc_pd(uctx: &Ucontext, handle: u32) -> Result<()> {
    let legacy = (
        uapi::IB_USER_VERBS_CMD_DEALLOC_PD,
        uapi::ib_uverbs_dealloc_pd { pd_handle: handle },
    );
    let ioctl = (
        uapi::UVERBS_OBJECT_PD,
        uapi::UVERBS_METHOD_PD_DESTROY,
        uapi::UVERBS_ATTR_DESTROY_PD_HANDLE,
    );
    destroy(uctx, Verb::DeallocPd, ioctl, handle, legacy)
}

/// `REG_MR`: registers `len` bytes at `addr` (seen by the device at `iova`) in `pd`.
///
/// The kernel pins the pages and checks that the range is mapped and, for writable access,
/// writable; a bad range is an `EFAULT` from the kernel.
///
/// # Safety
/// Until the region is deregistered (after which the device no longer touches it), the device
/// reads `addr..addr + len` whenever a work request or a peer holding the keys asks, and with
/// any write access (local or remote) writes it with bytes a peer or a work request chooses, at
/// any time. So the caller must
///
/// * own that range for this and keep it allocated (not freed, unmapped or reused for anything
///   else) until [`dereg_mr`] of the returned handle has succeeded — if it fails, the
///   memory must be leaked;
/// * keep there only values valid for every bit pattern and without uninitialised bytes (what
///   `uverbs` requires with `FromBytes + IntoBytes`), as a peer may write any bytes and read
///   every byte;
/// * access the range itself only in ways that tolerate the device's accesses (DMA, outside
///   the language's memory model): for work requests it posts, as the post contracts say
///   (nothing written before a send completes, nothing accessed before a receive completes).
pub unsafe fn reg_mr(
    uctx: &Ucontext,
    pd: u32,
    addr: u64,
    len: u64,
    iova: u64,
    access: u32,
) -> Result<MrKeys> {
    let mut req = uapi::ib_uverbs_reg_mr::new_zeroed();
    req.start = addr;
    req.length = len;
    req.hca_va = iova;
    req.pd_handle = pd;
    req.access_flags = access;
    let mut resp = uapi::ib_uverbs_reg_mr_resp::new_zeroed();
    // SAFETY: the range the request names is this function's contract; the only output is
    // `resp`, borrowed for the call.
    unsafe {
        uctx.channel().write(
            Verb::RegMr,
            uapi::IB_USER_VERBS_CMD_REG_MR,
            &mut req,
            &mut resp,
            &[],
            &mut [],
        )
    }?;
    Ok(MrKeys {
        handle: resp.mr_handle,
        lkey: resp.lkey,
        rkey: resp.rkey,
    })
}

/// `REREG_MR`: changes what `flags` (`IB_MR_REREG_*`) name of region `handle`: its memory
/// (`addr`, `len`, `iova`), protection domain (`pd`) and access flags (`access`). Returns the
/// new lkey and rkey.
///
/// # Safety
/// With `IB_MR_REREG_TRANS`, [`reg_mr`]'s contract for the new range, which the
/// region then covers instead of the old one (also if the call fails: the kernel may have
/// moved the region before failing). Without it, none: the region keeps its memory.
#[allow(clippy::too_many_arguments)] // The command's fields, one to one.
pub unsafe fn rereg_mr(
    uctx: &Ucontext,
    handle: u32,
    flags: u32,
    addr: u64,
    len: u64,
    iova: u64,
    pd: u32,
    access: u32,
) -> Result<(u32, u32)> {
    let mut req = uapi::ib_uverbs_rereg_mr::new_zeroed();
    req.mr_handle = handle;
    req.flags = flags;
    req.start = addr;
    req.length = len;
    req.hca_va = iova;
    req.pd_handle = pd;
    req.access_flags = access;
    let mut resp = uapi::ib_uverbs_rereg_mr_resp::new_zeroed();
    // SAFETY: a range the request names is this function's contract; the only output is
    // `resp`, borrowed for the call.
    unsafe {
        uctx.channel().write(
            Verb::ReregMr,
            uapi::IB_USER_VERBS_CMD_REREG_MR,
            &mut req,
            &mut resp,
            &[],
            &mut [],
        )
    }?;
    Ok((resp.lkey, resp.rkey))
}

/// Whether the kernel driver has `REREG_MR`: a driver without answers `EOPNOTSUPP` before it looks
/// at the request (the core's `notsupp` method), one with it looks the region up. So this asks it
/// to change the access of a region that does not exist (handle `u32::MAX`, never given out), to
/// flags the core refuses anyway (remote write without local write): any other answer than
/// `EOPNOTSUPP` means the driver has the command. Nothing changes either way.
pub fn has_rereg_mr(uctx: &Ucontext) -> bool {
    let mut req = uapi::ib_uverbs_rereg_mr::new_zeroed();
    req.mr_handle = u32::MAX;
    req.flags = uapi::ib_verbs::IB_MR_REREG_ACCESS;
    req.access_flags = uapi::IB_UVERBS_ACCESS_REMOTE_WRITE;
    let mut resp = uapi::ib_uverbs_rereg_mr_resp::new_zeroed();
    // SAFETY: no `IB_MR_REREG_TRANS`, so the request names no memory; the handle names no object
    // (the kernel hands out small ones), and the access it asks for is refused anyway; the only
    // output is `resp`, borrowed for the call.
    let answer = unsafe {
        uctx.channel().write(
            Verb::ReregMr,
            uapi::IB_USER_VERBS_CMD_REREG_MR,
            &mut req,
            &mut resp,
            &[],
            &mut [],
        )
    };
    !matches!(answer, Err(Error::Unsupported { .. }))
}

/// `REG_DMABUF_MR`: registers `len` bytes at `offset` of the dma-buf `fd` in `pd`, seen by the
/// device at `iova`, with `IB_UVERBS_ACCESS_*` flags `access`. The kernel takes its own
/// reference to the dma-buf, so `fd` may be closed afterwards.
pub fn reg_dmabuf_mr(
    uctx: &Ucontext,
    pd: u32,
    fd: BorrowedFd<'_>,
    offset: u64,
    len: u64,
    iova: u64,
    access: u32,
) -> Result<MrKeys> {
    let (mut lkey, mut rkey) = (0u32, 0u32);
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_MR, uapi::UVERBS_METHOD_REG_DMABUF_MR);
    let handle = cmd.new_idr(uapi::UVERBS_ATTR_REG_DMABUF_MR_HANDLE);
    cmd.idr(uapi::UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, pd);
    cmd.in_u64(uapi::UVERBS_ATTR_REG_DMABUF_MR_OFFSET, offset);
    cmd.in_u64(uapi::UVERBS_ATTR_REG_DMABUF_MR_LENGTH, len);
    cmd.in_u64(uapi::UVERBS_ATTR_REG_DMABUF_MR_IOVA, iova);
    // A raw descriptor (`UVERBS_ATTR_RAW_FD`: an `s32` inline), not a uverbs file object.
    cmd.in_u32(uapi::UVERBS_ATTR_REG_DMABUF_MR_FD, fd.as_raw_fd() as u32);
    cmd.in_u32(uapi::UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, access);
    cmd.out_obj(uapi::UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, &mut lkey);
    cmd.out_obj(uapi::UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, &mut rkey);
    // SAFETY: inline numbers, and the two keys as the pointer attributes, borrowed for the
    // call. The memory registered is the dma-buf's, which the kernel pins through its own
    // reference, not an address of this process.
    unsafe { uctx.channel().ioctl(Verb::RegDmabufMr, &mut cmd) }?;
    Ok(MrKeys {
        handle: cmd.handle(handle),
        lkey,
        rkey,
    })
}

/// `ADVISE_MR` (an ioctl method of the MR object, naming protection domain `pd`): `advice`
/// (`IB_UVERBS_ADVISE_MR_ADVICE_*`) for the on-demand memory `sges` name, each by a local key
/// of a region in `pd`; with `IB_UVERBS_ADVISE_MR_FLAG_FLUSH` in `flags`, the call returns
/// once the pages are in. The entries are the ABI's (`ib_uverbs_sge`, the layout of
/// `wr::Sge`, a layer above this one).
pub fn advise_mr(
    uctx: &Ucontext,
    pd: u32,
    advice: u32,
    flags: u32,
    sges: &[uapi::ib_uverbs_sge],
) -> Result<()> {
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_MR, uapi::UVERBS_METHOD_ADVISE_MR);
    cmd.idr(uapi::UVERBS_ATTR_ADVISE_MR_PD_HANDLE, pd);
    cmd.in_u64(uapi::UVERBS_ATTR_ADVISE_MR_ADVICE, u64::from(advice));
    cmd.in_u32(uapi::UVERBS_ATTR_ADVISE_MR_FLAGS, flags);
    cmd.in_bytes(uapi::UVERBS_ATTR_ADVISE_MR_SGE_LIST, sges.as_bytes());
    // SAFETY: the entries are read by the kernel during the call (a pointer attribute); the
    // addresses they name are only looked up in regions already registered (paged in, never
    // written with data).
    unsafe { uctx.channel().ioctl(Verb::AdviseMr, &mut cmd) }
}

/// Deregisters a memory region.
///
/// # Safety
/// `handle` must name an object of this context that the caller owns, that nothing else
/// (a `verbs` object, another owner) relies on, and that the caller does not name again: the
/// kernel gives a freed handle to the next object made, and an owner still using the old
/// number then acts on that one (F34: a region's `rereg` widening another region's access).
pub unsafe fn dereg_mr(uctx: &Ucontext, handle: u32) -> Result<()> {
    let legacy = (
        uapi::IB_USER_VERBS_CMD_DEREG_MR,
        uapi::ib_uverbs_dereg_mr { mr_handle: handle },
    );
    let ioctl = (
        uapi::UVERBS_OBJECT_MR,
        uapi::UVERBS_METHOD_MR_DESTROY,
        uapi::UVERBS_ATTR_DESTROY_MR_HANDLE,
    );
    destroy(uctx, Verb::DeregMr, ioctl, handle, legacy)
}

/// `ALLOC_MW`: a memory window of `mw_type` (1 or 2) in protection domain `pd`. Returns its
/// handle and its initial rkey (for a type 2 window, unusable until bound).
pub fn alloc_mw(uctx: &Ucontext, pd: u32, mw_type: u8) -> Result<(u32, u32)> {
    let mut req = uapi::ib_uverbs_alloc_mw::new_zeroed();
    req.pd_handle = pd;
    req.mw_type = mw_type;
    let mut resp = uapi::ib_uverbs_alloc_mw_resp::new_zeroed();
    // SAFETY: ALLOC_MW's request is a handle and a type (a window is bound to memory only by a
    // work request, under the post contracts); the only output is `resp`.
    unsafe {
        uctx.channel().write(
            Verb::AllocMw,
            uapi::IB_USER_VERBS_CMD_ALLOC_MW,
            &mut req,
            &mut resp,
            &[],
            &mut [],
        )
    }?;
    Ok((resp.mw_handle, resp.rkey))
}

/// Destroys a memory window (the `MW_DESTROY` ioctl, or the `DEALLOC_MW` write command).
///
/// # Safety
/// `handle` must name an object of this context that the caller owns, that nothing else
/// (a `verbs` object, another owner) relies on, and that the caller does not name again: the
/// kernel gives a freed handle to the next object made, and an owner still using the old
/// number then acts on that one (F34: a region's `rereg` widening another region's access).
pub unsafe fn dealloc_mw(uctx: &Ucontext, handle: u32) -> Result<()> {
    let legacy = (
        uapi::IB_USER_VERBS_CMD_DEALLOC_MW,
        uapi::ib_uverbs_dealloc_mw { mw_handle: handle },
    );
    let ioctl = (
        uapi::UVERBS_OBJECT_MW,
        uapi::UVERBS_METHOD_MW_DESTROY,
        uapi::UVERBS_ATTR_DESTROY_MW_HANDLE,
    );
    destroy(uctx, Verb::DeallocMw, ioctl, handle, legacy)
}

/// `CREATE_COMP_CHANNEL`: a file that completion events of the CQs created with it arrive on,
/// set non-blocking (read it with [`crate::event`]).
pub fn create_comp_channel(uctx: &Ucontext) -> Result<std::os::fd::OwnedFd> {
    let mut req = uapi::ib_uverbs_create_comp_channel::new_zeroed();
    let mut resp = uapi::ib_uverbs_create_comp_channel_resp {
        fd: crate::chan::NO_FD as u32,
    };
    // SAFETY: the request holds no address; the only output is `resp`.
    unsafe {
        uctx.channel().write(
            Verb::CreateCompChannel,
            uapi::IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL,
            &mut req,
            &mut resp,
            &[],
            &mut [],
        )
    }?;
    // The kernel's `int`, in a `__u32`.
    let fd = crate::chan::written_fd(Verb::CreateCompChannel, i64::from(resp.fd as i32))?;
    // SAFETY: the command succeeded and wrote `fd` (it held `NO_FD` before): the descriptor the
    // kernel just installed for the new channel, owned by nothing else.
    let fd = unsafe { crate::sys::adopt_fd(fd) };
    // Non-blocking, so that reactors can drive it; `crate::event` waits by polling first.
    crate::sys::set_nonblocking(std::os::fd::AsFd::as_fd(&fd))
        .map_err(|e| Error::kernel(Verb::CreateCompChannel, e))?;
    Ok(fd)
}

/// `REQ_NOTIFY_CQ`: asks for one completion event on the CQ's channel at the next completion
/// (or the next solicited one).
pub fn req_notify_cq(uctx: &Ucontext, cq_handle: u32, solicited_only: bool) -> Result<()> {
    let mut req = uapi::ib_uverbs_req_notify_cq {
        cq_handle,
        solicited_only: u32::from(solicited_only),
    };
    // SAFETY: a handle and a flag, no address: arming a CQ only makes the kernel send an
    // event to its channel.
    unsafe {
        uctx.channel().command(
            Verb::ReqNotifyCq,
            uapi::IB_USER_VERBS_CMD_REQ_NOTIFY_CQ,
            &mut req,
        )
    }
}

/// `CREATE_CQ` with at least `cqe` entries: returns (handle, entries granted). `channel` is a
/// completion channel's fd, `drv_out` receives the driver's answer.
pub fn create_cq(
    uctx: &Ucontext,
    cqe: u32,
    user_handle: u64,
    comp_vector: u32,
    channel: Option<BorrowedFd<'_>>,
    flags: u32,
    drv_out: &mut [u8],
) -> Result<(u32, u32)> {
    // SAFETY: no driver request, so the command names no user memory but `drv_out` and the
    // outputs `create_cq_with_udata` borrows for the call.
    unsafe {
        create_cq_with_flags(
            uctx,
            cqe,
            user_handle,
            comp_vector,
            channel,
            flags,
            &[],
            drv_out,
        )
    }
}

/// [`create_cq`] with driver data in both directions: `drv_in` is the driver's request
/// (mlx5: `mlx5_ib_create_cq`, where the CQ buffer and doorbell record are).
///
/// # Safety
/// As [`create_cq_with_flags`].
pub unsafe fn create_cq_with_udata(
    uctx: &Ucontext,
    cqe: u32,
    user_handle: u64,
    comp_vector: u32,
    channel: Option<BorrowedFd<'_>>,
    drv_in: &[u8],
    drv_out: &mut [u8],
) -> Result<(u32, u32)> {
    // SAFETY: this function's contract, which is `create_cq_with_flags`'.
    unsafe {
        create_cq_with_flags(
            uctx,
            cqe,
            user_handle,
            comp_vector,
            channel,
            0,
            drv_in,
            drv_out,
        )
    }
}

/// `RESIZE_CQ`: room for at least `cqe` completions in CQ `handle`, the pending ones kept;
/// returns the entries granted. `drv_out` receives the driver's answer (rxe: where to map the
/// new ring).
///
/// # Safety
/// Any address `drv_in` names (mlx5: the new CQ buffer) must keep
/// [`create_cq_with_udata`]'s contract for the CQ's remaining life.
pub unsafe fn resize_cq(
    uctx: &Ucontext,
    handle: u32,
    cqe: u32,
    drv_in: &[u8],
    drv_out: &mut [u8],
) -> Result<u32> {
    let mut req = uapi::ib_uverbs_resize_cq::new_zeroed();
    req.cq_handle = handle;
    req.cqe = cqe;
    let mut resp = uapi::ib_uverbs_resize_cq_resp::new_zeroed();
    // SAFETY: `resp` and `drv_out` are borrowed for the call; what `drv_in` names is this
    // function's contract.
    unsafe {
        uctx.channel().write(
            Verb::ResizeCq,
            uapi::IB_USER_VERBS_CMD_RESIZE_CQ,
            &mut req,
            &mut resp,
            drv_in,
            drv_out,
        )
    }?;
    Ok(resp.cqe)
}

/// `EX_MODIFY_CQ`: completion moderation of CQ `handle`, an event after `count` completions
/// or `period_us` microseconds, whichever comes first.
pub fn modify_cq(uctx: &Ucontext, handle: u32, count: u16, period_us: u16) -> Result<()> {
    let mut req = uapi::ib_uverbs_ex_modify_cq::new_zeroed();
    req.cq_handle = handle;
    req.attr_mask = uapi::ib_verbs::IB_CQ_MODERATE;
    req.attr.cq_count = count;
    req.attr.cq_period = period_us;
    // SAFETY: the request names no memory and only changes the CQ's event moderation.
    unsafe {
        uctx.channel().write_ex(
            Verb::ModifyCq,
            uapi::IB_USER_VERBS_EX_CMD_MODIFY_CQ,
            &mut req,
            &mut (),
            &[],
            &mut [],
        )
    }
}

/// `CREATE_CQ` with `flags` (`IB_UVERBS_CQ_FLAGS_*`: completion timestamps; an ioctl attribute,
/// or `EX_CREATE_CQ` on the write path) and driver data in both directions: `drv_in` is the
/// driver's request (mlx5: `mlx5_ib_create_cq`, where the CQ buffer and doorbell record are).
///
/// # Safety
/// Any address `drv_in` names (mlx5: the CQ ring and its doorbell record, which the device
/// then writes) must keep [`crate::chan::Channel::ioctl`]'s contract for as long as the CQ
/// exists: owned by the caller for the device, untouched by others, allocated until after
/// [`destroy_cq`] succeeded.
#[allow(clippy::too_many_arguments)] // The command's fields, one to one.
pub unsafe fn create_cq_with_flags(
    uctx: &Ucontext,
    cqe: u32,
    user_handle: u64,
    comp_vector: u32,
    channel: Option<BorrowedFd<'_>>,
    flags: u32,
    drv_in: &[u8],
    drv_out: &mut [u8],
) -> Result<(u32, u32)> {
    let mut granted = 0u32;
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_CQ, uapi::UVERBS_METHOD_CQ_CREATE);
    let handle = cmd.new_idr(uapi::UVERBS_ATTR_CREATE_CQ_HANDLE);
    cmd.in_u32(uapi::UVERBS_ATTR_CREATE_CQ_CQE, cqe);
    cmd.in_u64(uapi::UVERBS_ATTR_CREATE_CQ_USER_HANDLE, user_handle);
    cmd.in_u32(uapi::UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, comp_vector);
    if let Some(fd) = channel {
        cmd.fd(uapi::UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, fd);
    }
    cmd.fd(uapi::UVERBS_ATTR_CREATE_CQ_EVENT_FD, uctx.async_fd())
        .optional();
    if flags != 0 {
        cmd.in_u32(uapi::UVERBS_ATTR_CREATE_CQ_FLAGS, flags);
    }
    cmd.out_obj(uapi::UVERBS_ATTR_CREATE_CQ_RESP_CQE, &mut granted);
    cmd.uhw_in(drv_in).uhw_out(drv_out);
    // SAFETY: the pointer attributes are `granted` and the udata slices, borrowed for the call;
    // what `drv_in` names is this function's contract.
    if unsafe { uctx.channel().ioctl_or_write(Verb::CreateCq, &mut cmd) }? == Outcome::Done {
        let h = cmd.handle(handle);
        return Ok((h, granted));
    }
    if flags != 0 {
        let mut req = uapi::ib_uverbs_ex_create_cq::new_zeroed();
        req.user_handle = user_handle;
        req.cqe = cqe;
        req.comp_vector = comp_vector;
        req.comp_channel = channel.map_or(-1, |fd| fd.as_raw_fd());
        req.flags = flags;
        let mut resp = uapi::ib_uverbs_ex_create_cq_resp::new_zeroed();
        // SAFETY: as below.
        unsafe {
            uctx.channel().write_ex(
                Verb::CreateCq,
                uapi::IB_USER_VERBS_EX_CMD_CREATE_CQ,
                &mut req,
                &mut resp,
                drv_in,
                drv_out,
            )
        }?;
        return Ok((resp.base.cq_handle, resp.base.cqe));
    }
    let mut req = uapi::ib_uverbs_create_cq::new_zeroed();
    req.user_handle = user_handle;
    req.cqe = cqe;
    req.comp_vector = comp_vector;
    req.comp_channel = channel.map_or(-1, |fd| fd.as_raw_fd());
    let mut resp = uapi::ib_uverbs_create_cq_resp::new_zeroed();
    // SAFETY: the request holds no address; what `drv_in` names is this function's contract.
    unsafe {
        uctx.channel().write(
            Verb::CreateCq,
            uapi::IB_USER_VERBS_CMD_CREATE_CQ,
            &mut req,
            &mut resp,
            drv_in,
            drv_out,
        )
    }?;
    Ok((resp.cq_handle, resp.cqe))
}

/// Destroys a completion queue (the kernel refuses while a queue pair uses it). Returns the number
/// of completion and async events the kernel delivered for it.
///
/// # Safety
/// `handle` must name an object of this context that the caller owns, that nothing else
/// (a `verbs` object, another owner) relies on, and that the caller does not name again: the
/// kernel gives a freed handle to the next object made, and an owner still using the old
/// number then acts on that one (F34: a region's `rereg` widening another region's access).
pub unsafe fn destroy_cq(uctx: &Ucontext, handle: u32) -> Result<(u32, u32)> {
    let mut resp = uapi::ib_uverbs_destroy_cq_resp::new_zeroed();
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_CQ, uapi::UVERBS_METHOD_CQ_DESTROY);
    cmd.idr(uapi::UVERBS_ATTR_DESTROY_CQ_HANDLE, handle);
    cmd.out_obj(uapi::UVERBS_ATTR_DESTROY_CQ_RESP, &mut resp);
    // SAFETY: a handle and `resp`, borrowed for the call; destroying only stops the device.
    if unsafe { uctx.channel().ioctl_or_write(Verb::DestroyCq, &mut cmd) }? == Outcome::UseWrite {
        let mut req = uapi::ib_uverbs_destroy_cq::new_zeroed();
        req.cq_handle = handle;
        // SAFETY: as above, as a write command.
        unsafe {
            uctx.channel().write(
                Verb::DestroyCq,
                uapi::IB_USER_VERBS_CMD_DESTROY_CQ,
                &mut req,
                &mut resp,
                &[],
                &mut [],
            )
        }?;
    }
    Ok((resp.comp_events_reported, resp.async_events_reported))
}

/// `CREATE_QP`. `drv_out` receives the driver's answer (rxe: the rings' mmap info).
pub fn create_qp(uctx: &Ucontext, init: &QpInit, drv_out: &mut [u8]) -> Result<QpCreated> {
    // SAFETY: no driver request, so the command names no user memory but `drv_out` and the
    // outputs `create_qp_with_udata` borrows for the call.
    unsafe { create_qp_with_udata(uctx, init, &[], drv_out) }
}

/// [`create_qp`] with driver data in both directions: `drv_in` is the driver's request
/// (mlx5: `mlx5_ib_create_qp`, where the work-queue buffer and doorbell record are).
///
/// # Safety
/// Any address `drv_in` names (mlx5: the work-queue ring the device reads and the doorbell
/// record it writes) must keep [`crate::chan::Channel::ioctl`]'s contract for as long as the QP
/// exists: owned by the caller for the device, allocated until after [`destroy_qp`]
/// succeeded.
pub unsafe fn create_qp_with_udata(
    uctx: &Ucontext,
    init: &QpInit,
    drv_in: &[u8],
    drv_out: &mut [u8],
) -> Result<QpCreated> {
    let mut cap = init.cap;
    let mut qpn = 0u32;
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_QP, uapi::UVERBS_METHOD_QP_CREATE);
    let handle = cmd.new_idr(uapi::UVERBS_ATTR_CREATE_QP_HANDLE);
    cmd.idr(uapi::UVERBS_ATTR_CREATE_QP_PD_HANDLE, init.pd);
    cmd.idr(uapi::UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, init.send_cq);
    cmd.idr(uapi::UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, init.recv_cq);
    if let Some(srq) = init.srq {
        cmd.idr(uapi::UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, srq);
    }
    cmd.in_u64(uapi::UVERBS_ATTR_CREATE_QP_USER_HANDLE, init.user_handle);
    cmd.in_obj(uapi::UVERBS_ATTR_CREATE_QP_CAP, &init.cap);
    cmd.in_u64(uapi::UVERBS_ATTR_CREATE_QP_TYPE, u64::from(init.qp_type));
    if init.sq_sig_all {
        cmd.in_u32(
            uapi::UVERBS_ATTR_CREATE_QP_FLAGS,
            uapi::IB_UVERBS_QP_CREATE_SQ_SIG_ALL,
        );
    }
    cmd.fd(uapi::UVERBS_ATTR_CREATE_QP_EVENT_FD, uctx.async_fd())
        .optional();
    cmd.out_obj(uapi::UVERBS_ATTR_CREATE_QP_RESP_CAP, &mut cap);
    cmd.out_obj(uapi::UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, &mut qpn);
    cmd.uhw_in(drv_in).uhw_out(drv_out);
    // SAFETY: the pointer attributes are `init.cap`, `cap`, `qpn` and the udata slices,
    // borrowed
    // for the call; what `drv_in` names is this function's contract.
    if unsafe { uctx.channel().ioctl_or_write(Verb::CreateQp, &mut cmd) }? == Outcome::Done {
        let h = cmd.handle(handle);
        return Ok(QpCreated {
            handle: h,
            qpn,
            cap,
        });
    }
    let mut req = uapi::ib_uverbs_create_qp::new_zeroed();
    req.user_handle = init.user_handle;
    req.pd_handle = init.pd;
    req.send_cq_handle = init.send_cq;
    req.recv_cq_handle = init.recv_cq;
    req.max_send_wr = init.cap.max_send_wr;
    req.max_recv_wr = init.cap.max_recv_wr;
    req.max_send_sge = init.cap.max_send_sge;
    req.max_recv_sge = init.cap.max_recv_sge;
    req.max_inline_data = init.cap.max_inline_data;
    req.sq_sig_all = u8::from(init.sq_sig_all);
    req.qp_type = init.qp_type;
    if let Some(srq) = init.srq {
        req.is_srq = 1;
        req.srq_handle = srq;
    }
    let mut resp = uapi::ib_uverbs_create_qp_resp::new_zeroed();
    // SAFETY: the request holds handles and sizes, no address; what `drv_in` names is this
    // function's contract.
    unsafe {
        uctx.channel().write(
            Verb::CreateQp,
            uapi::IB_USER_VERBS_CMD_CREATE_QP,
            &mut req,
            &mut resp,
            drv_in,
            drv_out,
        )
    }?;
    Ok(QpCreated {
        handle: resp.qp_handle,
        qpn: resp.qpn,
        cap: uapi::ib_uverbs_qp_cap {
            max_send_wr: resp.max_send_wr,
            max_recv_wr: resp.max_recv_wr,
            max_send_sge: resp.max_send_sge,
            max_recv_sge: resp.max_recv_sge,
            max_inline_data: resp.max_inline_data,
        },
    })
}

/// `MODIFY_QP` with the attributes `req` carries (its `qp_handle` and `attr_mask` included).
///
/// # Safety
/// `req.qp_handle` must name a queue pair of this context that the caller owns and that no
/// `verbs::Qp` holds (whose rings and state would then disagree with the kernel's; F34).
pub unsafe fn modify_qp(uctx: &Ucontext, req: &uapi::ib_uverbs_modify_qp) -> Result<()> {
    let mut req = *req;
    // SAFETY: `ib_uverbs_modify_qp` holds states, numbers and an address vector, no user
    // address.
    unsafe {
        uctx.channel()
            .command(Verb::ModifyQp, uapi::IB_USER_VERBS_CMD_MODIFY_QP, &mut req)
    }
}

/// `QUERY_QP`: the queue pair's current attributes.
pub fn query_qp(
    uctx: &Ucontext,
    handle: u32,
    attr_mask: u32,
) -> Result<uapi::ib_uverbs_query_qp_resp> {
    let mut req = uapi::ib_uverbs_query_qp::new_zeroed();
    req.qp_handle = handle;
    req.attr_mask = attr_mask;
    let mut resp = uapi::ib_uverbs_query_qp_resp::new_zeroed();
    // SAFETY: a handle and a mask; the only output is `resp`, borrowed for the call.
    unsafe {
        uctx.channel().write(
            Verb::QueryQp,
            uapi::IB_USER_VERBS_CMD_QUERY_QP,
            &mut req,
            &mut resp,
            &[],
            &mut [],
        )
    }?;
    Ok(resp)
}

/// Destroys a queue pair; returns the number of async events the kernel delivered for it.
///
/// # Safety
/// `handle` must name an object of this context that the caller owns, that nothing else
/// (a `verbs` object, another owner) relies on, and that the caller does not name again: the
/// kernel gives a freed handle to the next object made, and an owner still using the old
/// number then acts on that one (F34: a region's `rereg` widening another region's access).
pub unsafe fn destroy_qp(uctx: &Ucontext, handle: u32) -> Result<u32> {
    let mut resp = uapi::ib_uverbs_destroy_qp_resp::new_zeroed();
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_QP, uapi::UVERBS_METHOD_QP_DESTROY);
    cmd.idr(uapi::UVERBS_ATTR_DESTROY_QP_HANDLE, handle);
    cmd.out_obj(uapi::UVERBS_ATTR_DESTROY_QP_RESP, &mut resp);
    // SAFETY: a handle and `resp`, borrowed for the call; destroying only stops the device.
    if unsafe { uctx.channel().ioctl_or_write(Verb::DestroyQp, &mut cmd) }? == Outcome::UseWrite {
        let mut req = uapi::ib_uverbs_destroy_qp::new_zeroed();
        req.qp_handle = handle;
        // SAFETY: as above, as a write command.
        unsafe {
            uctx.channel().write(
                Verb::DestroyQp,
                uapi::IB_USER_VERBS_CMD_DESTROY_QP,
                &mut req,
                &mut resp,
                &[],
                &mut [],
            )
        }?;
    }
    Ok(resp.events_reported)
}

// Address handles and multicast attachment (UD).

/// `CREATE_AH`: an address handle for `attr` in protection domain `pd`; returns its handle.
/// `drv_out` receives the driver's answer (rxe: `rxe_create_ah_resp`, whose 8 bytes must be
/// passed for the kernel to hand out the AH number).
pub fn create_ah(
    uctx: &Ucontext,
    pd: u32,
    attr: &uapi::ib_uverbs_ah_attr,
    drv_out: &mut [u8],
) -> Result<u32> {
    let mut req = uapi::ib_uverbs_create_ah::new_zeroed();
    req.pd_handle = pd;
    req.attr = *attr;
    let mut resp = uapi::ib_uverbs_create_ah_resp::new_zeroed();
    // SAFETY: a handle and an address vector, no user address; the outputs are `resp` and
    // `drv_out`, borrowed for the call.
    unsafe {
        uctx.channel().write(
            Verb::CreateAh,
            uapi::IB_USER_VERBS_CMD_CREATE_AH,
            &mut req,
            &mut resp,
            &[],
            drv_out,
        )
    }?;
    Ok(resp.ah_handle)
}

/// Destroys an address handle (the `AH_DESTROY` ioctl, or the `DESTROY_AH` write command).
///
/// # Safety
/// `handle` must name an object of this context that the caller owns, that nothing else
/// (a `verbs` object, another owner) relies on, and that the caller does not name again: the
/// kernel gives a freed handle to the next object made, and an owner still using the old
/// number then acts on that one (F34: a region's `rereg` widening another region's access).
pub unsafe fn destroy_ah(uctx: &Ucontext, handle: u32) -> Result<()> {
    let legacy = (
        uapi::IB_USER_VERBS_CMD_DESTROY_AH,
        uapi::ib_uverbs_destroy_ah { ah_handle: handle },
    );
    let ioctl = (
        uapi::UVERBS_OBJECT_AH,
        uapi::UVERBS_METHOD_AH_DESTROY,
        uapi::UVERBS_ATTR_DESTROY_AH_HANDLE,
    );
    destroy(uctx, Verb::DestroyAh, ioctl, handle, legacy)
}

/// `ATTACH_MCAST`: queue pair `qp_handle` (UD) receives the datagrams sent to multicast group
/// `gid` (network order; `mlid` is the multicast LID on InfiniBand, 0 on RoCE).
pub fn attach_mcast(uctx: &Ucontext, qp_handle: u32, gid: &[u8; 16], mlid: u16) -> Result<()> {
    let mut req = uapi::ib_uverbs_attach_mcast {
        gid: *gid,
        qp_handle,
        mlid,
        reserved: 0,
    };
    // SAFETY: a GID and two numbers, no address.
    unsafe {
        uctx.channel().command(
            Verb::AttachMcast,
            uapi::IB_USER_VERBS_CMD_ATTACH_MCAST,
            &mut req,
        )
    }
}

/// `DETACH_MCAST`: undoes [`attach_mcast`].
pub fn detach_mcast(uctx: &Ucontext, qp_handle: u32, gid: &[u8; 16], mlid: u16) -> Result<()> {
    let mut req = uapi::ib_uverbs_detach_mcast {
        gid: *gid,
        qp_handle,
        mlid,
        reserved: 0,
    };
    // SAFETY: a GID and two numbers, no address.
    unsafe {
        uctx.channel().command(
            Verb::DetachMcast,
            uapi::IB_USER_VERBS_CMD_DETACH_MCAST,
            &mut req,
        )
    }
}
