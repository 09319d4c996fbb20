//! Shared receive queue commands: create (the `SRQ_CREATE` ioctl, or the `CREATE_SRQ` write command),
//! modify (`MODIFY_SRQ`: the limit), query and destroy. The backends map the ring the kernel hands
//! back ([`crate::rxe::srq`]).

use uverbs_uapi as uapi;
use zerocopy::FromZeros;

use crate::chan::{IoctlCmd, Outcome};
use crate::error::{Result, Verb};
use crate::ucontext::Ucontext;

/// `ibv_srq_attr_mask` / the kernel's `ib_srq_attr_mask`: what a `MODIFY_SRQ` changes, by short
/// names; the values are `uverbs_uapi`'s.
pub mod attr_mask {
    pub use uverbs_uapi::{IB_SRQ_LIMIT as LIMIT, IB_SRQ_MAX_WR as MAX_WR};
}

/// What a shared receive queue is created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SrqInit {
    /// The protection domain's handle.
    pub pd: u32,
    /// Receive work requests it must hold.
    pub max_wr: u32,
    /// Scatter entries per receive work request.
    pub max_sge: u32,
    /// The initial limit (0: not armed).
    pub limit: u32,
    /// The value async events for this SRQ carry.
    pub user_handle: u64,
}

/// What the kernel answered to `CREATE_SRQ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SrqCreated {
    /// The kernel's handle.
    pub handle: u32,
    /// Receive work requests granted (rxe: the ring's capacity).
    pub max_wr: u32,
    /// Scatter entries per request granted.
    pub max_sge: u32,
    /// The SRQ number.
    pub srqn: u32,
}

/// `CREATE_SRQ` of a basic shared receive queue. `drv_out` receives the driver's answer (rxe:
/// `rxe_create_srq_resp`, where to map the ring). The SRQ reports its async events to this
/// context's async event file.
pub fn create_srq(uctx: &Ucontext, init: &SrqInit, drv_out: &mut [u8]) -> Result<SrqCreated> {
    // SAFETY: no driver request, so the command names no user memory but `drv_out` and the
    // outputs `create_srq_with_udata` borrows for the call.
    unsafe { create_srq_with_udata(uctx, init, &[], drv_out) }
}

/// [`create_srq`] with driver data in both directions: `drv_in` is the driver's
/// request (mlx5: `mlx5_ib_create_srq`, where the WQE buffer and doorbell record are).
///
/// # Safety
/// Any address `drv_in` names (mlx5: the WQE ring the device reads and the doorbell record)
/// must keep [`crate::chan::Channel::ioctl`]'s contract for as long as the SRQ exists: owned by
/// the caller for the device, allocated until after [`destroy_srq`] succeeded.
pub unsafe fn create_srq_with_udata(
    uctx: &Ucontext,
    init: &SrqInit,
    drv_in: &[u8],
    drv_out: &mut [u8],
) -> Result<SrqCreated> {
    let (mut max_wr, mut max_sge, mut srqn) = (0u32, 0u32, 0u32);
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_SRQ, uapi::UVERBS_METHOD_SRQ_CREATE);
    let handle = cmd.new_idr(uapi::UVERBS_ATTR_CREATE_SRQ_HANDLE);
    cmd.idr(uapi::UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, init.pd);
    cmd.in_u64(
        uapi::UVERBS_ATTR_CREATE_SRQ_TYPE,
        u64::from(uapi::IB_UVERBS_SRQT_BASIC),
    );
    cmd.in_u64(uapi::UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, init.user_handle);
    cmd.in_u32(uapi::UVERBS_ATTR_CREATE_SRQ_MAX_WR, init.max_wr);
    cmd.in_u32(uapi::UVERBS_ATTR_CREATE_SRQ_MAX_SGE, init.max_sge);
    cmd.in_u32(uapi::UVERBS_ATTR_CREATE_SRQ_LIMIT, init.limit);
    // Without it the kernel delivers none of the SRQ's events (the write command uses the
    // context's default event file instead).
    cmd.fd(uapi::UVERBS_ATTR_CREATE_SRQ_EVENT_FD, uctx.async_fd())
        .optional();
    cmd.out_obj(uapi::UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, &mut max_wr);
    cmd.out_obj(uapi::UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, &mut max_sge);
    cmd.out_obj(uapi::UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, &mut srqn);
    cmd.uhw_in(drv_in).uhw_out(drv_out);
    // SAFETY: the pointer attributes are the three outputs and the udata slices, borrowed for
    // the call; what `drv_in` names is this function's contract.
    if unsafe { uctx.channel().ioctl_or_write(Verb::CreateSrq, &mut cmd) }? == Outcome::Done {
        let handle = cmd.handle(handle);
        return Ok(SrqCreated {
            handle,
            max_wr,
            max_sge,
            srqn,
        });
    }
    let mut req = uapi::ib_uverbs_create_srq::new_zeroed();
    req.user_handle = init.user_handle;
    req.pd_handle = init.pd;
    req.max_wr = init.max_wr;
    req.max_sge = init.max_sge;
    req.srq_limit = init.limit;
    let mut resp = uapi::ib_uverbs_create_srq_resp::new_zeroed();
    // SAFETY: the request holds handles and sizes, no address; what `drv_in` names is this
    // function's contract.
    unsafe {
        uctx.channel().write(
            Verb::CreateSrq,
            uapi::IB_USER_VERBS_CMD_CREATE_SRQ,
            &mut req,
            &mut resp,
            drv_in,
            drv_out,
        )
    }?;
    Ok(SrqCreated {
        handle: resp.srq_handle,
        max_wr: resp.max_wr,
        max_sge: resp.max_sge,
        srqn: resp.srqn,
    })
}

/// `MODIFY_SRQ`: changes what `attr_mask` ([`attr_mask`]) names. `drv_in` is the driver's
/// request (rxe: `rxe_modify_srq_cmd`, which it requires even when not resizing).
///
/// # Safety
/// Any address `drv_in` names must keep [`crate::chan::Channel::ioctl`]'s contract for the
/// call: rxe's `mmap_info_addr` is where the kernel writes the resized ring's mmap information.
pub unsafe fn modify_srq(
    uctx: &Ucontext,
    handle: u32,
    attr_mask: u32,
    max_wr: u32,
    limit: u32,
    drv_in: &[u8],
) -> Result<()> {
    let mut req = uapi::ib_uverbs_modify_srq {
        srq_handle: handle,
        attr_mask,
        max_wr,
        srq_limit: limit,
    };
    // SAFETY: the core request holds a handle and numbers; what `drv_in` names is this
    // function's contract.
    unsafe {
        uctx.channel().write(
            Verb::ModifySrq,
            uapi::IB_USER_VERBS_CMD_MODIFY_SRQ,
            &mut req,
            &mut (),
            drv_in,
            &mut [],
        )
    }
}

/// `QUERY_SRQ`: the SRQ's size and current limit (0 once the limit event fired).
pub fn query_srq(uctx: &Ucontext, handle: u32) -> Result<uapi::ib_uverbs_query_srq_resp> {
    let mut req = uapi::ib_uverbs_query_srq::new_zeroed();
    req.srq_handle = handle;
    let mut resp = uapi::ib_uverbs_query_srq_resp::new_zeroed();
    // SAFETY: a handle; the only output is `resp`, borrowed for the call.
    unsafe {
        uctx.channel().write(
            Verb::QuerySrq,
            uapi::IB_USER_VERBS_CMD_QUERY_SRQ,
            &mut req,
            &mut resp,
            &[],
            &mut [],
        )
    }?;
    Ok(resp)
}

/// Destroys a shared receive queue (the kernel refuses while a queue pair uses it); returns the
/// number of async events the kernel delivered for it.
///
/// # Safety
/// `handle` must name an object of this context that the caller owns, that nothing else
/// (a `verbs` object, another owner) relies on, and that the caller does not name again: the
/// kernel gives a freed handle to the next object made, and an owner still using the old
/// number then acts on that one (F34: a region's `rereg` widening another region's access).
pub unsafe fn destroy_srq(uctx: &Ucontext, handle: u32) -> Result<u32> {
    let mut resp = uapi::ib_uverbs_destroy_srq_resp::new_zeroed();
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_SRQ, uapi::UVERBS_METHOD_SRQ_DESTROY);
    cmd.idr(uapi::UVERBS_ATTR_DESTROY_SRQ_HANDLE, handle);
    cmd.out_obj(uapi::UVERBS_ATTR_DESTROY_SRQ_RESP, &mut resp);
    // SAFETY: a handle and `resp`, borrowed for the call; destroying only stops the device.
    if unsafe { uctx.channel().ioctl_or_write(Verb::DestroySrq, &mut cmd) }? == Outcome::UseWrite {
        let mut req = uapi::ib_uverbs_destroy_srq::new_zeroed();
        req.srq_handle = handle;
        // SAFETY: as above, as a write command.
        unsafe {
            uctx.channel().write(
                Verb::DestroySrq,
                uapi::IB_USER_VERBS_CMD_DESTROY_SRQ,
                &mut req,
                &mut resp,
                &[],
                &mut [],
            )
        }?;
    }
    Ok(resp.events_reported)
}
