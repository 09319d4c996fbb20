//! The connection manager's values that no kernel uapi header carries, against librdmacm's headers
//! (`librdmacm-dev`): the event numbers (`<rdma/rdma_cma.h>`, the same as the kernel's internal
//! `rdma_cm.h`), `AF_IB` and the layout of `struct sockaddr_ib` (`<infiniband/ib.h>`), in which the
//! kernel reports GIDs. A separate program from `layout.rs` because librdmacm's headers include
//! glibc's `<netinet/in.h>`, which conflicts with the kernel's `<linux/in6.h>`.

use std::fmt::Write;
use std::mem::{offset_of, size_of};
use std::process::Command;

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
    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <rdma/rdma_cma.h>\n\
         #include <infiniband/ib.h>\nint main(void)\n{\n",
    );
    for (_, c) in &table {
        writeln!(src, "\tprintf(\"%lld\\n\", (long long)({c}));").unwrap();
    }
    src.push_str("\treturn 0;\n}\n");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("uapi-rdma-cma-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c, exe) = (dir.join("rdma_cma.c"), dir.join("rdma_cma"));
    std::fs::write(&c, src).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cc}`: {e} (install gcc)"));
    assert!(
        out.status.success(),
        "compiling against <rdma/rdma_cma.h> failed (install librdmacm-dev, headers only):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let values: Vec<i128> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(values.len(), table.len());
    let bad: Vec<String> = table
        .iter()
        .zip(&values)
        .filter(|((rust, _), c)| rust != *c)
        .map(|((rust, name), c)| format!("{name}: Rust {rust}, C {c}"))
        .collect();
    assert!(bad.is_empty(), "values differ from librdmacm: {bad:?}");
}
