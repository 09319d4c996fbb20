//! The library's discovery, context and query API on a real device.

mod common;

use common::test_device;
use uverbs::{CommandPath, Driver, ErrorExt, GidType, LinkLayer, PortState};
use uverbs_drivers::chan::IoctlCmd;
use uverbs_drivers::uapi;
use uverbs_drivers::{Error, Verb};

#[test]
fn discovery_finds_the_device() {
    let Some(name) = test_device("discovery_finds_the_device") else {
        return;
    };
    let list = uverbs::devices().unwrap();
    assert!(!list.is_empty());
    let dev = list.find(&name).unwrap();
    assert_eq!(dev.name().unwrap().to_str().unwrap(), name);
    assert_eq!(dev.driver(), Driver::Rxe, "{name} should be an rxe device");
    assert!(
        dev.uverbs_path().exists(),
        "{}",
        dev.uverbs_path().display()
    );
    assert!(dev.index().unwrap() >= 0, "netlink gives the device index");
    // The GUID is what sysfs says.
    let sysfs = std::fs::read_to_string(dev.sysfs_path().join("node_guid")).unwrap();
    assert_eq!(dev.guid().unwrap().to_string(), sysfs.trim());
    // Iteration by index and by iterator agree.
    assert_eq!(list.iter().count(), list.len());
    assert_eq!(
        (&list)
            .into_iter()
            .map(|d| d.name_str())
            .collect::<Vec<_>>()
            .len(),
        list.len()
    );
    assert!(list.get(list.len()).is_none());
}

#[test]
fn context_queries_agree_with_sysfs() {
    let Some(name) = test_device("context_queries_agree_with_sysfs") else {
        return;
    };
    let list = uverbs::devices().unwrap();
    let dev = list.find(&name).unwrap();
    let ctx = dev.open().unwrap();
    assert_eq!(ctx.name(), name);
    assert!(ctx.num_comp_vectors() >= 1);
    let attr = ctx.query_device().unwrap();
    assert_eq!(attr.node_guid(), dev.guid().unwrap());
    assert_eq!(attr.fw_ver(), "0.0.0", "rxe has no firmware");
    assert!(attr.phys_port_cnt() >= 1);
    assert!(attr.max_qp() > 0 && attr.max_cq() > 0 && attr.max_mr() > 0 && attr.max_qp_wr() > 0);
    assert!(attr.is_extended(), "6.1+ kernels answer EX_QUERY_DEVICE");

    let port = ctx.query_port(1).unwrap();
    assert_eq!(port.state(), PortState::Active);
    assert_eq!(port.link_layer(), LinkLayer::Ethernet);
    let sysfs_state = std::fs::read_to_string(dev.sysfs_path().join("ports/1/state")).unwrap();
    assert_eq!(sysfs_state.trim(), "4: ACTIVE");
    assert!(port.active_mtu().bytes().is_some());
    assert!(port.gid_tbl_len() > 0);

    // The GID table matches sysfs entry by entry, and rxe's GIDs are RoCE v2.
    let table = ctx.gid_table();
    assert!(
        !table.is_empty(),
        "rxe on lo has at least the link-local and ::1 GIDs"
    );
    for e in table {
        let text = std::fs::read_to_string(
            dev.sysfs_path()
                .join(format!("ports/{}/gids/{}", e.port_num, e.gid_index)),
        )
        .unwrap();
        assert_eq!(e.gid.to_string(), text.trim(), "GID {}", e.gid_index);
        assert_eq!(e.kind(), GidType::RoceV2);
        assert_ne!(e.ndev_ifindex, 0);
        let single = ctx
            .query_gid_entry(1, e.gid_index)
            .unwrap()
            .expect("listed entries are present");
        assert_eq!(single, *e);
    }
    // A slot past the used ones is empty, not an error.
    let last = table.iter().map(|e| e.gid_index).max().unwrap();
    assert_eq!(ctx.query_gid_entry(1, last + 1).unwrap(), None);
}

#[test]
fn the_legacy_write_path_gives_the_same_answers() {
    let Some(name) = test_device("the_legacy_write_path_gives_the_same_answers") else {
        return;
    };
    let list = uverbs::devices().unwrap();
    let dev = list.find(&name).unwrap();
    let modern = dev.open_with(CommandPath::Auto).unwrap();
    let legacy = dev.open_with(CommandPath::LegacyWrite).unwrap();
    assert!(!modern.is_legacy_path());
    assert!(legacy.is_legacy_path());
    assert_eq!(legacy.num_comp_vectors(), modern.num_comp_vectors());
    let (a, b) = (
        modern.query_device().unwrap(),
        legacy.query_device().unwrap(),
    );
    assert_eq!(a.raw(), b.raw());
    let (p, q) = (modern.query_port(1).unwrap(), legacy.query_port(1).unwrap());
    assert_eq!(p.raw().legacy_resp, q.raw().legacy_resp);
    assert_eq!(
        modern.gid_table(),
        legacy.gid_table(),
        "ioctl table vs sysfs"
    );
}

#[test]
fn opening_a_missing_device_is_a_typed_error() {
    if test_device("opening_a_missing_device_is_a_typed_error").is_none() {
        return;
    }
    let err = uverbs::Context::open_by_name("no_such_dev0").unwrap_err();
    match err.uverbs_error() {
        Some(e @ Error::NoSuchDevice { name }) => {
            assert_eq!(name, "no_such_dev0");
            assert_eq!(e.errno(), nix::errno::Errno::ENODEV);
        }
        other => panic!("expected NoSuchDevice, got {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("no RDMA device named \"no_such_dev0\""),
        "{err}"
    );
}

#[test]
fn a_bad_port_is_a_typed_kernel_error() {
    let Some(name) = test_device("a_bad_port_is_a_typed_kernel_error") else {
        return;
    };
    let ctx = uverbs::Context::open_by_name(&name).unwrap();
    let err = ctx.query_port(9).unwrap_err();
    match err.uverbs_error() {
        Some(Error::Kernel {
            verb: Verb::QueryPort,
            errno,
        }) => assert_eq!(*errno, nix::errno::Errno::EINVAL),
        other => panic!("expected QUERY_PORT EINVAL, got {other:?} ({err})"),
    }
    assert!(
        err.to_string().contains("QUERY_PORT failed: EINVAL"),
        "{err}"
    );
}

#[test]
fn a_bad_handle_is_a_typed_kernel_error() {
    let Some(name) = test_device("a_bad_handle_is_a_typed_kernel_error") else {
        return;
    };
    let ctx = uverbs::Context::open_by_name(&name).unwrap();
    // SAFETY: only a raw destroy of a handle that does not exist is sent: no user memory at all.
    let chan = unsafe { ctx.driver_context() }.channel();
    // Destroying a protection domain that does not exist, through the ioctl interface.
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_PD, uapi::UVERBS_METHOD_PD_DESTROY);
    cmd.idr(uapi::UVERBS_ATTR_DESTROY_PD_HANDLE, 0xdead);
    let err = chan.raw(&mut cmd).unwrap_err();
    match &err {
        Error::Kernel {
            verb: Verb::Raw(_),
            errno,
        } => assert_eq!(*errno, nix::errno::Errno::ENOENT, "{err}"),
        other => panic!("expected a kernel error, got {other:?}"),
    }
    assert!(err.to_string().contains("object 0x1 method 0x0"), "{err}");
    // And through the write interface.
    let mut req = uapi::ib_uverbs_dealloc_pd { pd_handle: 0xdead };
    let err = chan
        .write(
            Verb::DeallocPd,
            uapi::IB_USER_VERBS_CMD_DEALLOC_PD,
            &mut req,
            &mut (),
            &[],
            &mut [],
        )
        .unwrap_err();
    match &err {
        Error::Kernel {
            verb: Verb::DeallocPd,
            errno,
        } => assert_eq!(*errno, nix::errno::Errno::ENOENT, "{err}"),
        other => panic!("expected a kernel error, got {other:?}"),
    }
    // The context still works afterwards.
    assert!(ctx.query_port(1).is_ok());
}

#[test]
fn a_wrong_driver_id_is_rejected_by_the_kernel() {
    let Some(name) = test_device("a_wrong_driver_id_is_rejected_by_the_kernel") else {
        return;
    };
    let info = uverbs_drivers::context::find_device(&name).unwrap();
    let chan = uverbs_drivers::chan::Channel::open(&info.devnode, info.dev, uapi::RDMA_DRIVER_MLX5)
        .unwrap();
    let mut out = 0u32;
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_GET_CONTEXT);
    cmd.out_obj(uapi::UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, &mut out);
    let err = chan.ioctl(Verb::GetContext, &mut cmd).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Kernel {
                verb: Verb::GetContext,
                errno: nix::errno::Errno::EINVAL
            }
        ),
        "{err}"
    );
}
