//! `uverbs devices` and `uverbs devinfo` against rdma-core's `ibv_devices` and `ibv_devinfo`, the
//! oracle: the outputs must be identical, so a single differing field fails the test.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_same_output, run, stderr, stdout, test_device, uverbs};

/// Compares one invocation of both tools, exit status included.
fn compare(ibv: &str, args: &[&str], env_write_path: bool) {
    let reference = run(ibv, args);
    let ours = if env_write_path {
        std::process::Command::new(env!("CARGO_BIN_EXE_uverbs"))
            .arg(ibv.trim_start_matches("ibv_"))
            .args(args)
            .env("UVERBS_COMMAND_PATH", "write")
            .output()
            .unwrap()
    } else {
        let mut all = vec![ibv.trim_start_matches("ibv_")];
        all.extend_from_slice(args);
        uverbs(&all)
    };
    let what = format!(
        "{ibv} {}{}",
        args.join(" "),
        if env_write_path { " (write path)" } else { "" }
    );
    assert_same_output(&what, &stdout(&reference), &stdout(&ours));
    assert_eq!(
        reference.status.code(),
        ours.status.code(),
        "{what}: exit status"
    );
}

#[test]
fn devices_matches_ibv_devices() {
    if test_device("devices_matches_ibv_devices").is_none() {
        return;
    }
    compare("ibv_devices", &[], false);
}

#[test]
fn devinfo_matches_ibv_devinfo() {
    let Some(dev) = test_device("devinfo_matches_ibv_devinfo") else {
        return;
    };
    compare("ibv_devinfo", &[], false);
    compare("ibv_devinfo", &["-d", &dev], false);
    compare("ibv_devinfo", &["-l"], false);
    compare("ibv_devinfo", &["-d", &dev, "-i", "1"], false);
}

#[test]
fn devinfo_verbose_matches_ibv_devinfo_field_by_field() {
    let Some(dev) = test_device("devinfo_verbose_matches_ibv_devinfo_field_by_field") else {
        return;
    };
    compare("ibv_devinfo", &["-v"], false);
    compare("ibv_devinfo", &["-v", "-d", &dev, "-i", "1"], false);
    // The output really carries the fields the issue names.
    let out = stdout(&uverbs(&["devinfo", "-v", "-d", &dev]));
    for field in [
        "node_guid:",
        "sys_image_guid:",
        "vendor_id:",
        "vendor_part_id:",
        "max_qp:",
        "max_cq:",
        "max_mr:",
        "max_qp_wr:",
        "state:",
        "active_mtu:",
        "link_layer:",
        "GID[",
    ] {
        assert!(
            out.contains(field),
            "uverbs devinfo -v lacks {field}\n{out}"
        );
    }
}

#[test]
fn devinfo_over_the_legacy_write_path_matches_too() {
    let Some(dev) = test_device("devinfo_over_the_legacy_write_path_matches_too") else {
        return;
    };
    // GET_CONTEXT, EX_QUERY_DEVICE and QUERY_PORT as write() commands, the GID table from sysfs: what
    // an old kernel gets. rxe reports port_cap_flags2 = 0, so the output must still be identical.
    compare("ibv_devinfo", &["-v", "-d", &dev], true);
}

/// Runs `ibv_devinfo ARGS` and `uverbs devinfo ARGS` and compares everything they print, and how
/// they exit: stdout and stderr line for line, with `ibv_devinfo` read as `uverbs devinfo` (the
/// program's name is in the usage and in getopt's messages) and uverbs' own usage line for `-j`
/// (`(uverbs extension)`) left out.
fn compare_all(args: &[&str]) {
    let theirs = run("ibv_devinfo", args);
    let ours = uverbs(&[&["devinfo"][..], args].concat());
    let what = format!("devinfo {}", args.join(" "));
    let as_ours = |t: String| t.replace("ibv_devinfo", "uverbs devinfo");
    let without_extensions = |t: String| -> String {
        t.lines()
            .filter(|l| !l.contains("(uverbs extension)"))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    assert_same_output(
        &format!("{what}: stdout"),
        &as_ours(stdout(&theirs)),
        &without_extensions(stdout(&ours)),
    );
    assert_same_output(
        &format!("{what}: stderr"),
        &as_ours(stderr(&theirs)),
        &stderr(&ours),
    );
    assert_eq!(
        theirs.status.code(),
        ours.status.code(),
        "{what}: exit status"
    );
}

/// Bad input: what `ibv_devinfo` prints and how it exits, `uverbs devinfo` prints and exits too.
#[test]
fn devinfo_errors_match() {
    if !common::oracle("devinfo_errors_match", "ibv_devinfo") {
        return;
    }
    // Port 0 and a bad option: the usage (naming the program), exit 1 / 255. No device needed.
    for args in [&["-i", "0"][..], &["-h"], &["--bogus"]] {
        compare_all(args);
    }
    let o = uverbs(&["devinfo", "-h"]);
    assert!(
        stdout(&o).starts_with("Usage: uverbs devinfo"),
        "{}",
        stdout(&o)
    );
    // An unknown device, invalid port numbers: the device list is needed.
    if test_device("devinfo_errors_match (unknown device, invalid ports)").is_none() {
        return;
    }
    for args in [&["-d", "no_such_dev0"][..], &["-i", "2"], &["-i", "300"]] {
        compare_all(args);
    }
}

#[test]
fn devinfo_json_is_consistent_with_the_text() {
    let Some(dev) = test_device("devinfo_json_is_consistent_with_the_text") else {
        return;
    };
    let json = stdout(&uverbs(&["devinfo", "--json", "-d", &dev]));
    let text = stdout(&run("ibv_devinfo", &["-v", "-d", &dev]));
    let guid = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("node_guid:"))
        .expect("node_guid line")
        .trim();
    assert!(
        json.contains(&format!("\"node_guid\": \"{guid}\"")),
        "{json}"
    );
    assert!(json.contains(&format!("\"hca_id\": \"{dev}\"")), "{json}");
    assert!(
        json.trim_start().starts_with('[') && json.trim_end().ends_with(']'),
        "{json}"
    );
}
