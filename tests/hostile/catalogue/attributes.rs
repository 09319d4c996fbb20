//! Attributes, transitions, ports, GIDs, limits and object sizes the library or the kernel
//! refuses.

use nix::errno::Errno;
use uverbs::{ibv_qp_state, QpAttr};

use crate::case::{case, Case, Expect, Ty, EINVAL, INVALID};
use crate::common::verbs::GID_INDEX;
use crate::fixture::{init_attr, modify, rc_builder, refused, rtr_attr, to_state};

/// State transitions that do not exist, and attributes out of range.
pub fn transitions_and_attributes() -> Vec<Case> {
    vec![
        case("reset_to_rts", Expect::Typed(Ty::InvalidModify), |e| {
            modify(&e.reset_qp(), to_state(ibv_qp_state::IBV_QPS_RTS))
        }),
        case("rts_to_init", Expect::Typed(Ty::InvalidModify), |e| {
            modify(&e.a, init_attr())
        }),
        case(
            "init_without_a_port",
            Expect::Typed(Ty::InvalidModify),
            |e| {
                modify(
                    &e.reset_qp(),
                    QpAttr {
                        port_num: None,
                        ..init_attr()
                    },
                )
            },
        ),
        case("init_to_sqd", Expect::Typed(Ty::InvalidModify), |e| {
            let qp = e.reset_qp();
            qp.modify(&init_attr()).unwrap();
            modify(&qp, to_state(ibv_qp_state::IBV_QPS_SQD))
        }),
        case("qp_state_out_of_range", INVALID, |e| {
            modify(&e.a, to_state(7))
        }),
        case("path_mtu_out_of_range", INVALID, |e| {
            modify(
                &e.a,
                QpAttr {
                    path_mtu: Some(9),
                    ..QpAttr::default()
                },
            )
        }),
        case("dest_qp_num_over_24_bits", INVALID, |e| {
            let qp = e.reset_qp();
            qp.modify(&init_attr()).unwrap();
            modify(&qp, rtr_attr(e.loopback_gid(), 1 << 24, GID_INDEX as u8))
        }),
    ]
}

/// Ports and GID indexes that do not exist.
pub fn ports_and_gids() -> Vec<Case> {
    vec![
        case("invalid_port_number", EINVAL, |e| {
            modify(
                &e.reset_qp(),
                QpAttr {
                    port_num: Some(2),
                    ..init_attr()
                },
            )
        }),
        // An empty GID table slot: the core's rdma_get_gid_attr says ENODATA.
        case(
            "empty_source_gid_slot_at_rtr",
            Expect::Typed(Ty::Kernel(Errno::ENODATA)),
            |e| {
                let qp = e.reset_qp();
                qp.modify(&init_attr()).unwrap();
                modify(&qp, rtr_attr(e.loopback_gid(), qp.qp_num(), 200))
            },
        ),
        case("query_port_0", EINVAL, |e| refused(e.ctx.query_port(0))),
        case("query_port_past_the_last", EINVAL, |e| {
            refused(e.ctx.query_port(2))
        }),
        case("gid_index_past_the_table_at_build", INVALID, |e| {
            refused(rc_builder(e.pd, e.cq).set_gid_index(200).build())
        }),
    ]
}

/// Queue pair settings over their limits (the device's or the transport's).
pub fn qp_limits() -> Vec<Case> {
    vec![
        case("retry_count_above_7", INVALID, |e| {
            refused(rc_builder(e.pd, e.cq).set_retry_count(8).build())
        }),
        case("max_send_wr_over_the_device_limit", EINVAL, |e| {
            let max = e.ctx.query_device().unwrap().max_qp_wr();
            refused(rc_builder(e.pd, e.cq).set_max_send_wr(max + 1).build())
        })
        .on_mlx5(
            INVALID,
            "mlx5: the backend sizes the send queue in basic blocks itself and refuses it first",
        ),
        case("max_send_sge_over_the_device_limit", EINVAL, |e| {
            let max = e.ctx.query_device().unwrap().max_sge();
            refused(rc_builder(e.pd, e.cq).set_max_send_sge(max + 1).build())
        })
        .on_mlx5(
            INVALID,
            "mlx5: the backend sizes the send WQE itself and refuses it first",
        ),
    ]
}

/// Completion queues, memory regions and shared receive queues of impossible sizes, and a CQ
/// armed without a channel.
pub fn object_sizes() -> Vec<Case> {
    vec![
        case("cq_of_zero_entries", INVALID, |e| {
            refused(e.ctx.create_cq(0, 0))
        }),
        case("cq_of_negative_entries", INVALID, |e| {
            refused(e.ctx.create_cq(-1, 0))
        }),
        case("cq_over_max_cqe", EINVAL, |e| {
            let max = e.ctx.query_device().unwrap().max_cqe();
            refused(e.ctx.create_cq(max as i32 + 1, 0))
        }),
        case("empty_memory_region", INVALID, |e| {
            refused(e.pd.allocate::<u64>(0))
        }),
        case("srq_limit_above_its_capacity", INVALID, |e| {
            let srq = e.pd.create_srq(4, 1).unwrap();
            refused(srq.arm(srq.caps().max_wr + 1))
        }),
        case("srq_of_zero_requests", INVALID, |e| {
            refused(e.pd.create_srq(0, 1))
        }),
        case("arming_a_cq_without_a_channel", INVALID, |e| {
            refused(e.cq.req_notify(false))
        }),
    ]
}
