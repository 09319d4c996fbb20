//! The connection manager's values that no kernel uapi header carries, against librdmacm's headers
//! (`librdmacm-dev`): the event numbers (`<rdma/rdma_cma.h>`, the same as the kernel's internal
//! `rdma_cm.h`), `AF_IB` and the layout of `struct sockaddr_ib` (`<infiniband/ib.h>`), in which the
//! kernel reports GIDs. A separate program from `layout.rs` because librdmacm's headers include
//! glibc's `<netinet/in.h>`, which conflicts with the kernel's `<linux/in6.h>`.

use std::mem::{offset_of, size_of};

mod common;

use uverbs_uapi::*;

fn table() -> Vec<(i128, &'static str)> {
    macro_rules! same {
        ($($rust:expr => $c:literal),+ $(,)?) => { vec![$(($rust as i128, $c)),+] };
    }
    same![
        RDMA_CM_EVENT_ADDR_RESOLVED => "RDMA_CM_EVENT_ADDR_RESOLVED",
        RDMA_CM_EVENT_ADDR_ERROR => "RDMA_CM_EVENT_ADDR_ERROR",
        RDMA_CM_EVENT_ROUTE_RESOLVED => "RDMA_CM_EVENT_ROUTE_RESOLVED",
        RDMA_CM_EVENT_ROUTE_ERROR => "RDMA_CM_EVENT_ROUTE_ERROR",
        RDMA_CM_EVENT_CONNECT_REQUEST => "RDMA_CM_EVENT_CONNECT_REQUEST",
        RDMA_CM_EVENT_CONNECT_RESPONSE => "RDMA_CM_EVENT_CONNECT_RESPONSE",
        RDMA_CM_EVENT_CONNECT_ERROR => "RDMA_CM_EVENT_CONNECT_ERROR",
        RDMA_CM_EVENT_UNREACHABLE => "RDMA_CM_EVENT_UNREACHABLE",
        RDMA_CM_EVENT_REJECTED => "RDMA_CM_EVENT_REJECTED",
        RDMA_CM_EVENT_ESTABLISHED => "RDMA_CM_EVENT_ESTABLISHED",
        RDMA_CM_EVENT_DISCONNECTED => "RDMA_CM_EVENT_DISCONNECTED",
        RDMA_CM_EVENT_DEVICE_REMOVAL => "RDMA_CM_EVENT_DEVICE_REMOVAL",
        RDMA_CM_EVENT_MULTICAST_JOIN => "RDMA_CM_EVENT_MULTICAST_JOIN",
        RDMA_CM_EVENT_MULTICAST_ERROR => "RDMA_CM_EVENT_MULTICAST_ERROR",
        RDMA_CM_EVENT_ADDR_CHANGE => "RDMA_CM_EVENT_ADDR_CHANGE",
        RDMA_CM_EVENT_TIMEWAIT_EXIT => "RDMA_CM_EVENT_TIMEWAIT_EXIT",
        RDMA_PS_TCP => "RDMA_PS_TCP",
        RDMA_PS_UDP => "RDMA_PS_UDP",
        AF_IB => "AF_IB",
        size_of::<sockaddr_ib>() => "sizeof(struct sockaddr_ib)",
        offset_of!(sockaddr_ib, sib_family) => "offsetof(struct sockaddr_ib, sib_family)",
        offset_of!(sockaddr_ib, sib_pkey) => "offsetof(struct sockaddr_ib, sib_pkey)",
        offset_of!(sockaddr_ib, sib_flowinfo) => "offsetof(struct sockaddr_ib, sib_flowinfo)",
        offset_of!(sockaddr_ib, sib_addr) => "offsetof(struct sockaddr_ib, sib_addr)",
        offset_of!(sockaddr_ib, sib_sid) => "offsetof(struct sockaddr_ib, sib_sid)",
        offset_of!(sockaddr_ib, sib_sid_mask) => "offsetof(struct sockaddr_ib, sib_sid_mask)",
        offset_of!(sockaddr_ib, sib_scope_id) => "offsetof(struct sockaddr_ib, sib_scope_id)",
    ]
}

#[test]
fn rdma_cm_values_match_librdmacm() {
    let table = table();
    assert_eq!(table.len(), 27, "entries in the table");
    common::assert_matches_c(
        "rdma_cma",
        "#include <stddef.h>\n#include <rdma/rdma_cma.h>\n#include <infiniband/ib.h>\n",
        "librdmacm-dev",
        &table,
    );
}
