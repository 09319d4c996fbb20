//! Object, method and attribute ids of the core ioctl API: every enum of `rdma/ib_user_ioctl_cmds.h`.
//!
//! All ids are `u16`, as in `ib_uverbs_ioctl_hdr.object_id`/`method_id` and `ib_uverbs_attr.attr_id`.
//! Each group below is one C enum (named in a comment); ids are only unique within their object/method.

// enum uverbs_default_objects
/// Core ioctl object id: `DEVICE` (no instances of DEVICE are allowed).
pub const UVERBS_OBJECT_DEVICE: u16 = 0;
/// Core ioctl object id: `PD`.
pub const UVERBS_OBJECT_PD: u16 = 1;
/// Core ioctl object id: `COMP_CHANNEL`.
pub const UVERBS_OBJECT_COMP_CHANNEL: u16 = 2;
/// Core ioctl object id: `CQ`.
pub const UVERBS_OBJECT_CQ: u16 = 3;
/// Core ioctl object id: `QP`.
pub const UVERBS_OBJECT_QP: u16 = 4;
/// Core ioctl object id: `SRQ`.
pub const UVERBS_OBJECT_SRQ: u16 = 5;
/// Core ioctl object id: `AH`.
pub const UVERBS_OBJECT_AH: u16 = 6;
/// Core ioctl object id: `MR`.
pub const UVERBS_OBJECT_MR: u16 = 7;
/// Core ioctl object id: `MW`.
pub const UVERBS_OBJECT_MW: u16 = 8;
/// Core ioctl object id: `FLOW`.
pub const UVERBS_OBJECT_FLOW: u16 = 9;
/// Core ioctl object id: `XRCD`.
pub const UVERBS_OBJECT_XRCD: u16 = 10;
/// Core ioctl object id: `RWQ_IND_TBL`.
pub const UVERBS_OBJECT_RWQ_IND_TBL: u16 = 11;
/// Core ioctl object id: `WQ`.
pub const UVERBS_OBJECT_WQ: u16 = 12;
/// Core ioctl object id: `FLOW_ACTION`.
pub const UVERBS_OBJECT_FLOW_ACTION: u16 = 13;
/// Core ioctl object id: `DM`.
pub const UVERBS_OBJECT_DM: u16 = 14;
/// Core ioctl object id: `COUNTERS`.
pub const UVERBS_OBJECT_COUNTERS: u16 = 15;
/// Core ioctl object id: `ASYNC_EVENT`.
pub const UVERBS_OBJECT_ASYNC_EVENT: u16 = 16;

// enum uverbs_methods_device
/// Method id of `UVERBS_OBJECT_DEVICE`: `INVOKE_WRITE`.
pub const UVERBS_METHOD_INVOKE_WRITE: u16 = 0;
/// Method id of `UVERBS_OBJECT_DEVICE`: `INFO_HANDLES`.
pub const UVERBS_METHOD_INFO_HANDLES: u16 = 1;
/// Method id of `UVERBS_OBJECT_DEVICE`: `QUERY_PORT`.
pub const UVERBS_METHOD_QUERY_PORT: u16 = 2;
/// Method id of `UVERBS_OBJECT_DEVICE`: `GET_CONTEXT`.
pub const UVERBS_METHOD_GET_CONTEXT: u16 = 3;
/// Method id of `UVERBS_OBJECT_DEVICE`: `QUERY_CONTEXT`.
pub const UVERBS_METHOD_QUERY_CONTEXT: u16 = 4;
/// Method id of `UVERBS_OBJECT_DEVICE`: `QUERY_GID_TABLE`.
pub const UVERBS_METHOD_QUERY_GID_TABLE: u16 = 5;
/// Method id of `UVERBS_OBJECT_DEVICE`: `QUERY_GID_ENTRY`.
pub const UVERBS_METHOD_QUERY_GID_ENTRY: u16 = 6;

// enum uverbs_attrs_invoke_write_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_INVOKE_WRITE`: `CORE_IN`: PTR_IN: the core request struct without `ib_uverbs_cmd_hdr`/`ib_uverbs_ex_cmd_hdr`.
pub const UVERBS_ATTR_CORE_IN: u16 = 0;
/// Attribute id of `UVERBS_METHOD_INVOKE_WRITE`: `CORE_OUT`: PTR_OUT: the core response struct.
pub const UVERBS_ATTR_CORE_OUT: u16 = 1;
/// Attribute id of `UVERBS_METHOD_INVOKE_WRITE`: `WRITE_CMD`: CONST_IN, mandatory: the write command number, OR `IB_USER_VERBS_CMD_FLAG_EXTENDED` for extended commands.
pub const UVERBS_ATTR_WRITE_CMD: u16 = 2;

// enum uverbs_attrs_query_port_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_QUERY_PORT`: `PORT_NUM`: CONST_IN u8, passed as an 8-byte inline value.
pub const UVERBS_ATTR_QUERY_PORT_PORT_NUM: u16 = 0;
/// Attribute id of `UVERBS_METHOD_QUERY_PORT`: `RESP`: PTR_OUT `ib_uverbs_query_port_resp_ex`.
pub const UVERBS_ATTR_QUERY_PORT_RESP: u16 = 1;

// enum uverbs_attrs_get_context_attr_ids
/// Attribute id of `UVERBS_METHOD_GET_CONTEXT`: `NUM_COMP_VECTORS`: PTR_OUT u32, optional.
pub const UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
/// Attribute id of `UVERBS_METHOD_GET_CONTEXT`: `CORE_SUPPORT`: PTR_OUT u64 `IB_UVERBS_CORE_SUPPORT_*`, optional.
pub const UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT: u16 = 1;

// enum uverbs_attrs_query_context_attr_ids
/// Attribute id of `UVERBS_METHOD_QUERY_CONTEXT`: `NUM_COMP_VECTORS`: PTR_OUT u32, optional.
pub const UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
/// Attribute id of `UVERBS_METHOD_QUERY_CONTEXT`: `CORE_SUPPORT`: PTR_OUT u64 `IB_UVERBS_CORE_SUPPORT_*`, optional.
pub const UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT: u16 = 1;

// enum uverbs_attrs_create_cq_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_CQ_CREATE`: `HANDLE`: IDR, new object; the kernel writes the handle into `data`.
pub const UVERBS_ATTR_CREATE_CQ_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_CQ_CREATE`: `CQE`: PTR_IN u32.
pub const UVERBS_ATTR_CREATE_CQ_CQE: u16 = 1;
/// Attribute id of `UVERBS_METHOD_CQ_CREATE`: `USER_HANDLE`: PTR_IN u64.
pub const UVERBS_ATTR_CREATE_CQ_USER_HANDLE: u16 = 2;
/// Attribute id of `UVERBS_METHOD_CQ_CREATE`: `COMP_CHANNEL`: FD of a completion channel, optional.
pub const UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL: u16 = 3;
/// Attribute id of `UVERBS_METHOD_CQ_CREATE`: `COMP_VECTOR`: PTR_IN u32.
pub const UVERBS_ATTR_CREATE_CQ_COMP_VECTOR: u16 = 4;
/// Attribute id of `UVERBS_METHOD_CQ_CREATE`: `FLAGS`: FLAGS_IN `IB_UVERBS_CQ_FLAGS_*`, optional.
pub const UVERBS_ATTR_CREATE_CQ_FLAGS: u16 = 5;
/// Attribute id of `UVERBS_METHOD_CQ_CREATE`: `RESP_CQE`: PTR_OUT u32.
pub const UVERBS_ATTR_CREATE_CQ_RESP_CQE: u16 = 6;
/// Attribute id of `UVERBS_METHOD_CQ_CREATE`: `EVENT_FD`: FD of the async event file, optional.
pub const UVERBS_ATTR_CREATE_CQ_EVENT_FD: u16 = 7;

// enum uverbs_attrs_destroy_cq_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_CQ_DESTROY`: `HANDLE`: IDR, destroy.
pub const UVERBS_ATTR_DESTROY_CQ_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_CQ_DESTROY`: `RESP`: PTR_OUT `ib_uverbs_destroy_cq_resp`.
pub const UVERBS_ATTR_DESTROY_CQ_RESP: u16 = 1;

// enum uverbs_attrs_create_flow_action_esp
/// Attribute id of `UVERBS_METHOD_FLOW_ACTION_ESP_CREATE`: `CREATE_FLOW_ACTION_ESP_HANDLE`.
pub const UVERBS_ATTR_CREATE_FLOW_ACTION_ESP_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_FLOW_ACTION_ESP_CREATE`: `FLOW_ACTION_ESP_ATTRS`.
pub const UVERBS_ATTR_FLOW_ACTION_ESP_ATTRS: u16 = 1;
/// Attribute id of `UVERBS_METHOD_FLOW_ACTION_ESP_CREATE`: `FLOW_ACTION_ESP_ESN`.
pub const UVERBS_ATTR_FLOW_ACTION_ESP_ESN: u16 = 2;
/// Attribute id of `UVERBS_METHOD_FLOW_ACTION_ESP_CREATE`: `FLOW_ACTION_ESP_KEYMAT`.
pub const UVERBS_ATTR_FLOW_ACTION_ESP_KEYMAT: u16 = 3;
/// Attribute id of `UVERBS_METHOD_FLOW_ACTION_ESP_CREATE`: `FLOW_ACTION_ESP_REPLAY`.
pub const UVERBS_ATTR_FLOW_ACTION_ESP_REPLAY: u16 = 4;
/// Attribute id of `UVERBS_METHOD_FLOW_ACTION_ESP_CREATE`: `FLOW_ACTION_ESP_ENCAP`.
pub const UVERBS_ATTR_FLOW_ACTION_ESP_ENCAP: u16 = 5;

// enum uverbs_attrs_modify_flow_action_esp
/// Attribute id of `UVERBS_METHOD_FLOW_ACTION_ESP_MODIFY`: the flow action handle (same id as the create handle).
pub const UVERBS_ATTR_MODIFY_FLOW_ACTION_ESP_HANDLE: u16 =
    UVERBS_ATTR_CREATE_FLOW_ACTION_ESP_HANDLE;

// enum uverbs_attrs_destroy_flow_action_esp
/// Attribute id of `UVERBS_METHOD_FLOW_ACTION_DESTROY`: the flow action handle.
pub const UVERBS_ATTR_DESTROY_FLOW_ACTION_HANDLE: u16 = 0;

// enum uverbs_attrs_create_qp_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `HANDLE`: IDR, new object; the kernel writes the handle into `data`.
pub const UVERBS_ATTR_CREATE_QP_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `XRCD_HANDLE`: IDR, optional.
pub const UVERBS_ATTR_CREATE_QP_XRCD_HANDLE: u16 = 1;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `PD_HANDLE`: IDR, optional.
pub const UVERBS_ATTR_CREATE_QP_PD_HANDLE: u16 = 2;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `SRQ_HANDLE`: IDR, optional.
pub const UVERBS_ATTR_CREATE_QP_SRQ_HANDLE: u16 = 3;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `SEND_CQ_HANDLE`: IDR, optional.
pub const UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE: u16 = 4;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `RECV_CQ_HANDLE`: IDR, optional.
pub const UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE: u16 = 5;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `IND_TABLE_HANDLE`: IDR, optional.
pub const UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE: u16 = 6;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `USER_HANDLE`: PTR_IN u64.
pub const UVERBS_ATTR_CREATE_QP_USER_HANDLE: u16 = 7;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `CAP`: PTR_IN `ib_uverbs_qp_cap`.
pub const UVERBS_ATTR_CREATE_QP_CAP: u16 = 8;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `TYPE`: CONST_IN `IB_UVERBS_QPT_*`.
pub const UVERBS_ATTR_CREATE_QP_TYPE: u16 = 9;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `FLAGS`: FLAGS_IN `IB_UVERBS_QP_CREATE_*`, optional.
pub const UVERBS_ATTR_CREATE_QP_FLAGS: u16 = 10;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `SOURCE_QPN`: PTR_IN u32, optional.
pub const UVERBS_ATTR_CREATE_QP_SOURCE_QPN: u16 = 11;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `EVENT_FD`: FD of the async event file, optional.
pub const UVERBS_ATTR_CREATE_QP_EVENT_FD: u16 = 12;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `RESP_CAP`: PTR_OUT `ib_uverbs_qp_cap`.
pub const UVERBS_ATTR_CREATE_QP_RESP_CAP: u16 = 13;
/// Attribute id of `UVERBS_METHOD_QP_CREATE`: `RESP_QP_NUM`: PTR_OUT u32.
pub const UVERBS_ATTR_CREATE_QP_RESP_QP_NUM: u16 = 14;

// enum uverbs_attrs_destroy_qp_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_QP_DESTROY`: `HANDLE`: IDR, destroy.
pub const UVERBS_ATTR_DESTROY_QP_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_QP_DESTROY`: `RESP`: PTR_OUT `ib_uverbs_destroy_qp_resp`.
pub const UVERBS_ATTR_DESTROY_QP_RESP: u16 = 1;

// enum uverbs_methods_qp
/// Method id of `UVERBS_OBJECT_QP`: `CREATE`.
pub const UVERBS_METHOD_QP_CREATE: u16 = 0;
/// Method id of `UVERBS_OBJECT_QP`: `DESTROY`.
pub const UVERBS_METHOD_QP_DESTROY: u16 = 1;

// enum uverbs_attrs_create_srq_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `HANDLE`: IDR, new object; the kernel writes the handle into `data`.
pub const UVERBS_ATTR_CREATE_SRQ_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `PD_HANDLE`.
pub const UVERBS_ATTR_CREATE_SRQ_PD_HANDLE: u16 = 1;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `XRCD_HANDLE`.
pub const UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE: u16 = 2;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `CQ_HANDLE`.
pub const UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE: u16 = 3;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `USER_HANDLE`: PTR_IN u64.
pub const UVERBS_ATTR_CREATE_SRQ_USER_HANDLE: u16 = 4;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `MAX_WR`: PTR_IN u32.
pub const UVERBS_ATTR_CREATE_SRQ_MAX_WR: u16 = 5;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `MAX_SGE`: PTR_IN u32.
pub const UVERBS_ATTR_CREATE_SRQ_MAX_SGE: u16 = 6;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `LIMIT`: PTR_IN u32.
pub const UVERBS_ATTR_CREATE_SRQ_LIMIT: u16 = 7;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `MAX_NUM_TAGS`.
pub const UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS: u16 = 8;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `TYPE`: CONST_IN `IB_UVERBS_SRQT_*`.
pub const UVERBS_ATTR_CREATE_SRQ_TYPE: u16 = 9;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `EVENT_FD`.
pub const UVERBS_ATTR_CREATE_SRQ_EVENT_FD: u16 = 10;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `RESP_MAX_WR`: PTR_OUT u32.
pub const UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR: u16 = 11;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `RESP_MAX_SGE`: PTR_OUT u32.
pub const UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE: u16 = 12;
/// Attribute id of `UVERBS_METHOD_SRQ_CREATE`: `RESP_SRQ_NUM`: PTR_OUT u32.
pub const UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM: u16 = 13;

// enum uverbs_attrs_destroy_srq_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_SRQ_DESTROY`: `HANDLE`.
pub const UVERBS_ATTR_DESTROY_SRQ_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_SRQ_DESTROY`: `RESP`: PTR_OUT `ib_uverbs_destroy_srq_resp`.
pub const UVERBS_ATTR_DESTROY_SRQ_RESP: u16 = 1;

// enum uverbs_methods_srq
/// Method id of `UVERBS_OBJECT_SRQ`: `CREATE`.
pub const UVERBS_METHOD_SRQ_CREATE: u16 = 0;
/// Method id of `UVERBS_OBJECT_SRQ`: `DESTROY`.
pub const UVERBS_METHOD_SRQ_DESTROY: u16 = 1;

// enum uverbs_methods_cq
/// Method id of `UVERBS_OBJECT_CQ`: `CREATE`.
pub const UVERBS_METHOD_CQ_CREATE: u16 = 0;
/// Method id of `UVERBS_OBJECT_CQ`: `DESTROY`.
pub const UVERBS_METHOD_CQ_DESTROY: u16 = 1;

// enum uverbs_attrs_create_wq_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `HANDLE`.
pub const UVERBS_ATTR_CREATE_WQ_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `PD_HANDLE`.
pub const UVERBS_ATTR_CREATE_WQ_PD_HANDLE: u16 = 1;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `CQ_HANDLE`.
pub const UVERBS_ATTR_CREATE_WQ_CQ_HANDLE: u16 = 2;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `USER_HANDLE`.
pub const UVERBS_ATTR_CREATE_WQ_USER_HANDLE: u16 = 3;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `TYPE`.
pub const UVERBS_ATTR_CREATE_WQ_TYPE: u16 = 4;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `EVENT_FD`.
pub const UVERBS_ATTR_CREATE_WQ_EVENT_FD: u16 = 5;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `MAX_WR`.
pub const UVERBS_ATTR_CREATE_WQ_MAX_WR: u16 = 6;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `MAX_SGE`.
pub const UVERBS_ATTR_CREATE_WQ_MAX_SGE: u16 = 7;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `FLAGS`.
pub const UVERBS_ATTR_CREATE_WQ_FLAGS: u16 = 8;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `RESP_MAX_WR`.
pub const UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR: u16 = 9;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `RESP_MAX_SGE`.
pub const UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE: u16 = 10;
/// Attribute id of `UVERBS_METHOD_WQ_CREATE`: `RESP_WQ_NUM`.
pub const UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM: u16 = 11;

// enum uverbs_attrs_destroy_wq_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_WQ_DESTROY`: `HANDLE`.
pub const UVERBS_ATTR_DESTROY_WQ_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_WQ_DESTROY`: `RESP`.
pub const UVERBS_ATTR_DESTROY_WQ_RESP: u16 = 1;

// enum uverbs_methods_wq
/// Method id of `UVERBS_OBJECT_WQ`: `CREATE`.
pub const UVERBS_METHOD_WQ_CREATE: u16 = 0;
/// Method id of `UVERBS_OBJECT_WQ`: `DESTROY`.
pub const UVERBS_METHOD_WQ_DESTROY: u16 = 1;

// enum uverbs_methods_actions_flow_action_ops
/// Method id of `UVERBS_OBJECT_FLOW_ACTION`: `ESP_CREATE`.
pub const UVERBS_METHOD_FLOW_ACTION_ESP_CREATE: u16 = 0;
/// Method id of `UVERBS_OBJECT_FLOW_ACTION`: `DESTROY`.
pub const UVERBS_METHOD_FLOW_ACTION_DESTROY: u16 = 1;
/// Method id of `UVERBS_OBJECT_FLOW_ACTION`: `ESP_MODIFY`.
pub const UVERBS_METHOD_FLOW_ACTION_ESP_MODIFY: u16 = 2;

// enum uverbs_attrs_alloc_dm_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_DM_ALLOC`: `HANDLE`.
pub const UVERBS_ATTR_ALLOC_DM_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_DM_ALLOC`: `LENGTH`.
pub const UVERBS_ATTR_ALLOC_DM_LENGTH: u16 = 1;
/// Attribute id of `UVERBS_METHOD_DM_ALLOC`: `ALIGNMENT`.
pub const UVERBS_ATTR_ALLOC_DM_ALIGNMENT: u16 = 2;

// enum uverbs_attrs_free_dm_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_DM_FREE`: the DM handle.
pub const UVERBS_ATTR_FREE_DM_HANDLE: u16 = 0;

// enum uverbs_methods_dm
/// Method id of `UVERBS_OBJECT_DM`: `ALLOC`.
pub const UVERBS_METHOD_DM_ALLOC: u16 = 0;
/// Method id of `UVERBS_OBJECT_DM`: `FREE`.
pub const UVERBS_METHOD_DM_FREE: u16 = 1;

// enum uverbs_attrs_reg_dm_mr_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_DM_MR_REG`: `HANDLE`.
pub const UVERBS_ATTR_REG_DM_MR_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_DM_MR_REG`: `OFFSET`.
pub const UVERBS_ATTR_REG_DM_MR_OFFSET: u16 = 1;
/// Attribute id of `UVERBS_METHOD_DM_MR_REG`: `LENGTH`.
pub const UVERBS_ATTR_REG_DM_MR_LENGTH: u16 = 2;
/// Attribute id of `UVERBS_METHOD_DM_MR_REG`: `PD_HANDLE`.
pub const UVERBS_ATTR_REG_DM_MR_PD_HANDLE: u16 = 3;
/// Attribute id of `UVERBS_METHOD_DM_MR_REG`: `ACCESS_FLAGS`.
pub const UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS: u16 = 4;
/// Attribute id of `UVERBS_METHOD_DM_MR_REG`: `DM_HANDLE`.
pub const UVERBS_ATTR_REG_DM_MR_DM_HANDLE: u16 = 5;
/// Attribute id of `UVERBS_METHOD_DM_MR_REG`: `RESP_LKEY`.
pub const UVERBS_ATTR_REG_DM_MR_RESP_LKEY: u16 = 6;
/// Attribute id of `UVERBS_METHOD_DM_MR_REG`: `RESP_RKEY`.
pub const UVERBS_ATTR_REG_DM_MR_RESP_RKEY: u16 = 7;

// enum uverbs_methods_mr
/// Method id of `UVERBS_OBJECT_MR`: `DM_MR_REG`.
pub const UVERBS_METHOD_DM_MR_REG: u16 = 0;
/// Method id of `UVERBS_OBJECT_MR`: `MR_DESTROY`.
pub const UVERBS_METHOD_MR_DESTROY: u16 = 1;
/// Method id of `UVERBS_OBJECT_MR`: `ADVISE_MR`.
pub const UVERBS_METHOD_ADVISE_MR: u16 = 2;
/// Method id of `UVERBS_OBJECT_MR`: `QUERY_MR`.
pub const UVERBS_METHOD_QUERY_MR: u16 = 3;
/// Method id of `UVERBS_OBJECT_MR`: `REG_DMABUF_MR`.
pub const UVERBS_METHOD_REG_DMABUF_MR: u16 = 4;

// enum uverbs_attrs_mr_destroy_ids
/// Attribute id of `UVERBS_METHOD_MR_DESTROY`: the MR handle.
pub const UVERBS_ATTR_DESTROY_MR_HANDLE: u16 = 0;

// enum uverbs_attrs_advise_mr_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_ADVISE_MR`: `PD_HANDLE`.
pub const UVERBS_ATTR_ADVISE_MR_PD_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_ADVISE_MR`: `ADVICE`.
pub const UVERBS_ATTR_ADVISE_MR_ADVICE: u16 = 1;
/// Attribute id of `UVERBS_METHOD_ADVISE_MR`: `FLAGS`.
pub const UVERBS_ATTR_ADVISE_MR_FLAGS: u16 = 2;
/// Attribute id of `UVERBS_METHOD_ADVISE_MR`: `SGE_LIST`.
pub const UVERBS_ATTR_ADVISE_MR_SGE_LIST: u16 = 3;

// enum uverbs_attrs_query_mr_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_QUERY_MR`: `HANDLE`.
pub const UVERBS_ATTR_QUERY_MR_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_QUERY_MR`: `RESP_LKEY`.
pub const UVERBS_ATTR_QUERY_MR_RESP_LKEY: u16 = 1;
/// Attribute id of `UVERBS_METHOD_QUERY_MR`: `RESP_RKEY`.
pub const UVERBS_ATTR_QUERY_MR_RESP_RKEY: u16 = 2;
/// Attribute id of `UVERBS_METHOD_QUERY_MR`: `RESP_LENGTH`.
pub const UVERBS_ATTR_QUERY_MR_RESP_LENGTH: u16 = 3;
/// Attribute id of `UVERBS_METHOD_QUERY_MR`: `RESP_IOVA`.
pub const UVERBS_ATTR_QUERY_MR_RESP_IOVA: u16 = 4;

// enum uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `HANDLE`.
pub const UVERBS_ATTR_REG_DMABUF_MR_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `PD_HANDLE`.
pub const UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE: u16 = 1;
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `OFFSET`.
pub const UVERBS_ATTR_REG_DMABUF_MR_OFFSET: u16 = 2;
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `LENGTH`.
pub const UVERBS_ATTR_REG_DMABUF_MR_LENGTH: u16 = 3;
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `IOVA`.
pub const UVERBS_ATTR_REG_DMABUF_MR_IOVA: u16 = 4;
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `FD`.
pub const UVERBS_ATTR_REG_DMABUF_MR_FD: u16 = 5;
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `ACCESS_FLAGS`.
pub const UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS: u16 = 6;
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `RESP_LKEY`.
pub const UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY: u16 = 7;
/// Attribute id of `UVERBS_METHOD_REG_DMABUF_MR`: `RESP_RKEY`.
pub const UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY: u16 = 8;

// enum uverbs_attrs_create_counters_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_COUNTERS_CREATE`: the new counters handle.
pub const UVERBS_ATTR_CREATE_COUNTERS_HANDLE: u16 = 0;

// enum uverbs_attrs_destroy_counters_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_COUNTERS_DESTROY`: the counters handle.
pub const UVERBS_ATTR_DESTROY_COUNTERS_HANDLE: u16 = 0;

// enum uverbs_attrs_read_counters_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_COUNTERS_READ`: `HANDLE`.
pub const UVERBS_ATTR_READ_COUNTERS_HANDLE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_COUNTERS_READ`: `BUFF`.
pub const UVERBS_ATTR_READ_COUNTERS_BUFF: u16 = 1;
/// Attribute id of `UVERBS_METHOD_COUNTERS_READ`: `FLAGS`.
pub const UVERBS_ATTR_READ_COUNTERS_FLAGS: u16 = 2;

// enum uverbs_methods_actions_counters_ops
/// Method id of `UVERBS_OBJECT_COUNTERS`: `CREATE`.
pub const UVERBS_METHOD_COUNTERS_CREATE: u16 = 0;
/// Method id of `UVERBS_OBJECT_COUNTERS`: `DESTROY`.
pub const UVERBS_METHOD_COUNTERS_DESTROY: u16 = 1;
/// Method id of `UVERBS_OBJECT_COUNTERS`: `READ`.
pub const UVERBS_METHOD_COUNTERS_READ: u16 = 2;

// enum uverbs_attrs_info_handles_id
/// Attribute id of `UVERBS_METHOD_INFO_HANDLES`: `OBJECT_ID`.
pub const UVERBS_ATTR_INFO_OBJECT_ID: u16 = 0;
/// Attribute id of `UVERBS_METHOD_INFO_HANDLES`: `TOTAL_HANDLES`.
pub const UVERBS_ATTR_INFO_TOTAL_HANDLES: u16 = 1;
/// Attribute id of `UVERBS_METHOD_INFO_HANDLES`: `HANDLES_LIST`.
pub const UVERBS_ATTR_INFO_HANDLES_LIST: u16 = 2;

// enum uverbs_methods_pd
/// Method id of `UVERBS_OBJECT_PD`: destroy the PD.
pub const UVERBS_METHOD_PD_DESTROY: u16 = 0;

// enum uverbs_attrs_pd_destroy_ids
/// Attribute id of `UVERBS_METHOD_PD_DESTROY`: the PD handle.
pub const UVERBS_ATTR_DESTROY_PD_HANDLE: u16 = 0;

// enum uverbs_methods_mw
/// Method id of `UVERBS_OBJECT_MW`: destroy the memory window.
pub const UVERBS_METHOD_MW_DESTROY: u16 = 0;

// enum uverbs_attrs_mw_destroy_ids
/// Attribute id of `UVERBS_METHOD_MW_DESTROY`: the MW handle.
pub const UVERBS_ATTR_DESTROY_MW_HANDLE: u16 = 0;

// enum uverbs_methods_xrcd
/// Method id of `UVERBS_OBJECT_XRCD`: destroy the XRC domain.
pub const UVERBS_METHOD_XRCD_DESTROY: u16 = 0;

// enum uverbs_attrs_xrcd_destroy_ids
/// Attribute id of `UVERBS_METHOD_XRCD_DESTROY`: the XRCD handle.
pub const UVERBS_ATTR_DESTROY_XRCD_HANDLE: u16 = 0;

// enum uverbs_methods_ah
/// Method id of `UVERBS_OBJECT_AH`: destroy the address handle.
pub const UVERBS_METHOD_AH_DESTROY: u16 = 0;

// enum uverbs_attrs_ah_destroy_ids
/// Attribute id of `UVERBS_METHOD_AH_DESTROY`: the AH handle.
pub const UVERBS_ATTR_DESTROY_AH_HANDLE: u16 = 0;

// enum uverbs_methods_rwq_ind_tbl
/// Method id of `UVERBS_OBJECT_RWQ_IND_TBL`: destroy the indirection table.
pub const UVERBS_METHOD_RWQ_IND_TBL_DESTROY: u16 = 0;

// enum uverbs_attrs_rwq_ind_tbl_destroy_ids
/// Attribute id of `UVERBS_METHOD_RWQ_IND_TBL_DESTROY`: the table handle.
pub const UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE: u16 = 0;

// enum uverbs_methods_flow
/// Method id of `UVERBS_OBJECT_FLOW`: destroy the flow.
pub const UVERBS_METHOD_FLOW_DESTROY: u16 = 0;

// enum uverbs_attrs_flow_destroy_ids
/// Attribute id of `UVERBS_METHOD_FLOW_DESTROY`: the flow handle.
pub const UVERBS_ATTR_DESTROY_FLOW_HANDLE: u16 = 0;

// enum uverbs_method_async_event
/// Method id of `UVERBS_OBJECT_ASYNC_EVENT`: allocate the async event fd.
pub const UVERBS_METHOD_ASYNC_EVENT_ALLOC: u16 = 0;

// enum uverbs_attrs_async_event_create
/// Attribute id of `UVERBS_METHOD_ASYNC_EVENT_ALLOC`: the new fd (FD attr, returned in `data`).
pub const UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE: u16 = 0;

// enum uverbs_attrs_query_gid_table_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_QUERY_GID_TABLE`: `ENTRY_SIZE`: CONST_IN u64: size of one `ib_uverbs_gid_entry`.
pub const UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE: u16 = 0;
/// Attribute id of `UVERBS_METHOD_QUERY_GID_TABLE`: `FLAGS`: FLAGS_IN, optional.
pub const UVERBS_ATTR_QUERY_GID_TABLE_FLAGS: u16 = 1;
/// Attribute id of `UVERBS_METHOD_QUERY_GID_TABLE`: `RESP_ENTRIES`: PTR_OUT array of `ib_uverbs_gid_entry`.
pub const UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES: u16 = 2;
/// Attribute id of `UVERBS_METHOD_QUERY_GID_TABLE`: `RESP_NUM_ENTRIES`: PTR_OUT u64.
pub const UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES: u16 = 3;

// enum uverbs_attrs_query_gid_entry_cmd_attr_ids
/// Attribute id of `UVERBS_METHOD_QUERY_GID_ENTRY`: `PORT`: CONST_IN u32.
pub const UVERBS_ATTR_QUERY_GID_ENTRY_PORT: u16 = 0;
/// Attribute id of `UVERBS_METHOD_QUERY_GID_ENTRY`: `GID_INDEX`: CONST_IN u32.
pub const UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX: u16 = 1;
/// Attribute id of `UVERBS_METHOD_QUERY_GID_ENTRY`: `FLAGS`: FLAGS_IN u32, mandatory, must be 0.
pub const UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS: u16 = 2;
/// Attribute id of `UVERBS_METHOD_QUERY_GID_ENTRY`: `RESP_ENTRY`: PTR_OUT `ib_uverbs_gid_entry`.
pub const UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY: u16 = 3;
