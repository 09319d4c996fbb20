//! The method tables: which handler runs each write command (`uapi_get_method`) and each ioctl
//! method (the `UVERBS_METHOD` declarations of `uverbs_std_types_*.c`), with the sizes and
//! attribute specifications the decoders check.

use nix::errno::Errno;
use uverbs_uapi as uapi;

use super::ah::{w_create_ah, w_destroy_ah};
use super::context::{
    m_async_event_alloc, m_get_context, m_query_context, w_create_comp_channel, w_get_context,
};
use super::cq::{
    m_cq_create, m_cq_destroy, w_create_cq, w_destroy_cq, w_ex_create_cq, w_ex_modify_cq,
    w_req_notify_cq, w_resize_cq,
};
use super::device::{
    m_query_gid_entry, m_query_gid_table, m_query_port, w_ex_query_device, w_query_device,
    w_query_port,
};
use super::ioctl::{Access, Bundle, Spec, Ty};
use super::pd_mr::{
    m_advise_mr, m_pd_query, m_query_mr, m_reg_dmabuf_mr, w_alloc_pd, w_dealloc_pd, w_dereg_mr,
    w_reg_mr, w_rereg_mr,
};
use super::qp::{
    m_qp_create, m_qp_destroy, w_attach_mcast, w_create_qp, w_destroy_qp, w_detach_mcast,
    w_ex_create_qp, w_ex_modify_qp, w_modify_qp, w_query_qp,
};
use super::srq::{
    m_srq_create, m_srq_destroy, w_create_srq, w_destroy_srq, w_modify_srq, w_query_srq,
};
use super::uar::m_uar_alloc;
use super::write::{m_invoke_write, Io};
use super::{sz, File};
use crate::objects::FileState;
use crate::IoctlSupport;

type WriteFn = fn(&File, &mut FileState, &mut Io) -> Result<(), Errno>;

/// One write method (`struct uverbs_api_write_method`).
#[derive(Clone, Copy)]
pub(super) struct WriteDef {
    pub(super) req: usize,
    pub(super) resp: usize,
    pub(super) udata: bool,
    pub(super) has_resp: bool,
    /// Needs a context (`EINVAL` otherwise).
    pub(super) ctx: bool,
    pub(super) run: WriteFn,
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
pub(super) fn write_method(command: u32) -> Result<WriteDef, Errno> {
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
            IB_USER_VERBS_EX_CMD_MODIFY_CQ => {
                i_def(sz::<ib_uverbs_ex_modify_cq>(), false, w_ex_modify_cq)
            }
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
        IB_USER_VERBS_CMD_REREG_MR => io_def(
            sz::<ib_uverbs_rereg_mr>(),
            sz::<ib_uverbs_rereg_mr_resp>(),
            true,
            true,
            w_rereg_mr,
        ),
        IB_USER_VERBS_CMD_DEREG_MR => i_def(sz::<ib_uverbs_dereg_mr>(), false, w_dereg_mr),
        IB_USER_VERBS_CMD_RESIZE_CQ => io_def(
            sz::<ib_uverbs_resize_cq>(),
            sz::<ib_uverbs_resize_cq_resp>(),
            true,
            true,
            w_resize_cq,
        ),
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
        // ALLOC_MW / DEALLOC_MW (no memory windows on this model), POLL_CQ, the
        // kernel-mediated posts, XRC: the kernel has them, the model does not.
        _ => NOTSUPP,
    })
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
pub(super) const UHW: [Spec; 2] = [
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
pub(super) struct MethodDef {
    object: u16,
    method: u16,
    pub(super) attrs: &'static [Spec],
    pub(super) udata: bool,
    pub(super) run: MethodFn,
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
    /// The core's two outputs and mlx5's (`ADD_UVERBS_ATTRIBUTES_SIMPLE(mlx5_ib_query_context,
    /// ...)`: `UVERBS_ATTR_STRUCT(struct mlx5_ib_alloc_ucontext_resp, dump_fill_mkey)`).
    pub(super) const QUERY_CONTEXT: &[Spec] = &[
        ptr_out(UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, 4, false),
        ptr_out(UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, 8, false),
        struct_out(
            MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
            sz::<mlx5_ib_alloc_ucontext_resp>(),
            sz::<mlx5_ib_alloc_ucontext_resp>(),
            true,
        ),
    ];
    pub(super) const PD_QUERY: &[Spec] = &[
        idr(
            MLX5_IB_ATTR_QUERY_PD_HANDLE,
            UVERBS_OBJECT_PD,
            Access::Read,
            true,
        ),
        ptr_out(MLX5_IB_ATTR_QUERY_PD_RESP_PDN, 4, true),
    ];
    pub(super) const ADVISE_MR: &[Spec] = &[
        idr(
            UVERBS_ATTR_ADVISE_MR_PD_HANDLE,
            UVERBS_OBJECT_PD,
            Access::Read,
            true,
        ),
        const_in(UVERBS_ATTR_ADVISE_MR_ADVICE, true),
        flags_in(UVERBS_ATTR_ADVISE_MR_FLAGS, true),
        Spec {
            id: UVERBS_ATTR_ADVISE_MR_SGE_LIST,
            ty: Ty::In {
                min: sz::<ib_uverbs_sge>() as u16,
                max: u16::MAX,
                zero_trailing: false,
            },
            mandatory: true,
        },
    ];
    pub(super) const REG_DMABUF_MR: &[Spec] = &[
        idr(
            UVERBS_ATTR_REG_DMABUF_MR_HANDLE,
            UVERBS_OBJECT_MR,
            Access::New,
            true,
        ),
        idr(
            UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE,
            UVERBS_OBJECT_PD,
            Access::Read,
            true,
        ),
        ptr_in(UVERBS_ATTR_REG_DMABUF_MR_OFFSET, 8, true),
        ptr_in(UVERBS_ATTR_REG_DMABUF_MR_LENGTH, 8, true),
        ptr_in(UVERBS_ATTR_REG_DMABUF_MR_IOVA, 8, true),
        ptr_in(UVERBS_ATTR_REG_DMABUF_MR_FD, 4, true),
        flags_in(UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, false),
        ptr_out(UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, 4, true),
        ptr_out(UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, 4, true),
    ];
    pub(super) const QUERY_MR: &[Spec] = &[
        idr(
            UVERBS_ATTR_QUERY_MR_HANDLE,
            UVERBS_OBJECT_MR,
            Access::Read,
            true,
        ),
        ptr_out(UVERBS_ATTR_QUERY_MR_RESP_RKEY, 4, true),
        ptr_out(UVERBS_ATTR_QUERY_MR_RESP_LKEY, 4, true),
        ptr_out(UVERBS_ATTR_QUERY_MR_RESP_LENGTH, 8, true),
        ptr_out(UVERBS_ATTR_QUERY_MR_RESP_IOVA, 8, false),
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
    pub(super) const UAR_OBJ_ALLOC: &[Spec] = &[
        idr(
            MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE,
            MLX5_IB_OBJECT_UAR,
            Access::New,
            true,
        ),
        const_in(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, true),
        ptr_out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, 4, true),
        ptr_out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, 4, true),
        ptr_out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, 8, true),
    ];
    pub(super) const UAR_OBJ_DESTROY: &[Spec] = &[idr(
        MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE,
        MLX5_IB_OBJECT_UAR,
        Access::Destroy,
        true,
    )];
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
        method: uapi::UVERBS_METHOD_QUERY_CONTEXT,
        attrs: specs::QUERY_CONTEXT,
        udata: false,
        run: m_query_context,
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
        object: uapi::UVERBS_OBJECT_PD,
        method: uapi::MLX5_IB_METHOD_PD_QUERY,
        attrs: specs::PD_QUERY,
        udata: false,
        run: m_pd_query,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_MR,
        method: uapi::UVERBS_METHOD_REG_DMABUF_MR,
        attrs: specs::REG_DMABUF_MR,
        udata: false,
        run: m_reg_dmabuf_mr,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_MR,
        method: uapi::UVERBS_METHOD_ADVISE_MR,
        attrs: specs::ADVISE_MR,
        udata: false,
        run: m_advise_mr,
    },
    MethodDef {
        object: uapi::UVERBS_OBJECT_MR,
        method: uapi::UVERBS_METHOD_QUERY_MR,
        attrs: specs::QUERY_MR,
        udata: false,
        run: m_query_mr,
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
    // mlx5_ib's UAR objects (`DECLARE_UVERBS_NAMED_OBJECT(MLX5_IB_OBJECT_UAR, ...)`).
    MethodDef {
        object: uapi::MLX5_IB_OBJECT_UAR,
        method: uapi::MLX5_IB_METHOD_UAR_OBJ_ALLOC,
        attrs: specs::UAR_OBJ_ALLOC,
        udata: false,
        run: m_uar_alloc,
    },
    MethodDef {
        object: uapi::MLX5_IB_OBJECT_UAR,
        method: uapi::MLX5_IB_METHOD_UAR_OBJ_DESTROY,
        attrs: specs::UAR_OBJ_DESTROY,
        udata: false,
        run: m_nothing,
    },
];

pub(super) fn find_method(
    support: IoctlSupport,
    object: u16,
    method: u16,
) -> Option<&'static MethodDef> {
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

fn m_nothing(_: &File, _: &mut FileState, _: &mut Bundle) -> Result<(), Errno> {
    Ok(())
}
