//! The connection manager against rdma-core's programs, each pair both ways, between the two rxe
//! devices of the VM's veth pair (rxa on 10.78.0.1, rxb on 10.78.0.2; `tests/vm/cm-net`):
//!
//! * `uverbs rping` against `rping -s` / `rping -c` (buffer advertisement, RDMA READ and WRITE of
//!   the ping data, `-v` output compared line by line, `-C` count), at 64 B and 4000 B;
//! * `uverbs cmatose` against `ucmatose` (several connections), `uverbs udaddy` against `udaddy`
//!   (datagrams), `uverbs mckey` against `mckey` (multicast);
//! * `uverbs send-lat -R`, `write-bw -R`, `read-bw -R` against perftest's `ib_send_lat -R`,
//!   `ib_write_bw -R`, `ib_read_bw -R`;
//! * the `cm_echo` example, server and client.
//!
//! Each pair runs in a guest-side script (`tests/vm/cm-interop-*.sh`, bounded timeouts, a PASS or
//! FAIL line per pair) with the `uverbs` binary built for this test. Outside the VM they say they
//! were skipped; in the VM a missing network or tool fails them.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::Command;

fn script(test: &str, name: &str, tools: &[&str]) {
    if std::env::var_os("UVERBS_CM_SERVER").is_none() {
        assert!(
            std::env::var_os("UVERBS_VM").is_none(),
            "{test}: the VM harness promised the connection manager's network, but \
             UVERBS_CM_SERVER is unset"
        );
        eprintln!("SKIPPED {test}: no connection manager network (run under tests/vm/run)");
        return;
    }
    for tool in tools {
        assert!(common::oracle(test, tool), "{test}: {tool} is missing");
    }
    // The repository root: the scripts are in its tests/vm, the examples in its target.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let examples = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("examples")))
        .unwrap_or_default();
    let out = Command::new("bash")
        .arg(root.join("tests/vm").join(name))
        .env("UVERBS_BIN", env!("CARGO_BIN_EXE_uverbs"))
        .env("UVERBS_EXAMPLES", examples)
        .current_dir(&root)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {name}: {e}"));
    let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "{name} failed ({}):\n{}",
        out.status,
        stdout
            .lines()
            .filter(|l| l.contains("FAIL"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(stdout.contains("PASS"), "{name} reported no pair");
}

#[test]
fn rping_both_ways() {
    script("rping_both_ways", "cm-interop-rping.sh", &["rping"]);
}

#[test]
fn ucmatose_udaddy_mckey_both_ways() {
    script(
        "ucmatose_udaddy_mckey_both_ways",
        "cm-interop-rdmacm.sh",
        &["ucmatose", "udaddy", "mckey"],
    );
}

#[test]
fn perftest_rdma_cm_both_ways() {
    script(
        "perftest_rdma_cm_both_ways",
        "cm-interop-perftest.sh",
        &["ib_send_lat", "ib_write_bw", "ib_read_bw"],
    );
}

#[test]
fn cm_echo_example() {
    script("cm_echo_example", "cm-interop-example.sh", &[]);
}
