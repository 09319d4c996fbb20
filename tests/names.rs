//! The names uverbs gives events, node types, port states and completion statuses, against the
//! names rdma-core's own libibverbs gives them (`ibv_event_type_str`, `ibv_node_type_str`,
//! `ibv_port_state_str`, `ibv_wc_status_str`): a C program built here with `cc -libverbs` prints
//! libibverbs' for every value, known or not, and the test compares line by line. Needs a C
//! compiler and libibverbs-dev (`tests/run` installs both); without the header it says it was
//! skipped.

use std::process::Command;

use uverbs::{AsyncEventKind, NodeType, PortState};

const PROGRAM: &str = r#"
#include <infiniband/verbs.h>
#include <stdio.h>
int main(void)
{
	for (int i = 0; i <= 9; i++)
		printf("node %d %s\n", i, ibv_node_type_str(i));
	for (int i = 0; i <= 7; i++)
		printf("port %d %s\n", i, ibv_port_state_str(i));
	for (int i = 0; i <= 22; i++)
		printf("event %d %s\n", i, ibv_event_type_str(i));
	for (int i = 0; i <= 25; i++)
		printf("wc %d %s\n", i, ibv_wc_status_str(i));
	return 0;
}
"#;

/// libibverbs' lines, or `None` (after saying so) where its header is not installed.
fn libibverbs_names() -> Option<String> {
    let dir = std::env::temp_dir().join(format!("uverbs-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, exe) = (dir.join("names.c"), dir.join("names"));
    std::fs::write(&src, PROGRAM).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg("-libverbs")
        .output()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    if !built.status.success() {
        let err = String::from_utf8_lossy(&built.stderr);
        if err.contains("infiniband/verbs.h") {
            eprintln!("names: skipped: libibverbs-dev is not installed (<infiniband/verbs.h>)");
            return None;
        }
        panic!("{cc} failed on the libibverbs program: {err}");
    }
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success(), "the libibverbs program failed");
    let _ = std::fs::remove_dir_all(&dir);
    Some(String::from_utf8(out.stdout).unwrap())
}

fn ours() -> String {
    let mut s = String::new();
    for i in 0..=9u32 {
        s += &format!("node {i} {}\n", NodeType::from(i));
    }
    for i in 0..=7u8 {
        s += &format!("port {i} {}\n", PortState::from(i).verbs_str());
    }
    for i in 0..=22u32 {
        s += &format!("event {i} {}\n", AsyncEventKind::from(i));
    }
    for i in 0..=25u32 {
        s += &format!("wc {i} {}\n", uverbs::wc_status_str(i));
    }
    s
}

#[test]
fn names_are_libibverbs_names() {
    let Some(theirs) = libibverbs_names() else {
        return;
    };
    let ours = ours();
    for (n, (t, o)) in theirs.lines().zip(ours.lines()).enumerate() {
        assert_eq!(
            o, t,
            "line {n}: uverbs (left) and libibverbs (right) differ"
        );
    }
    assert_eq!(theirs.lines().count(), ours.lines().count());
}

#[test]
fn names_round_trip_and_display() {
    assert_eq!(AsyncEventKind::PortActive.to_string(), "port active");
    assert_eq!(AsyncEventKind::Unknown(77).as_str(), "unknown");
    assert_eq!(NodeType::Rnic.to_string(), "iWARP NIC");
    assert_eq!(NodeType::from(0), NodeType::Unknown(0));
    assert_eq!(NodeType::Unknown(0).as_str(), "unknown");
    // `as_str` stays what ibv_devinfo prints.
    assert_eq!(PortState::Active.as_str(), "PORT_ACTIVE");
    assert_eq!(PortState::Active.verbs_str(), "active");
}
