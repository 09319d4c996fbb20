//! The library's discovery, context and query API: on the test device the harness promised
//! (`UVERBS_TEST_DEVICE`: rxe in the VM, or a ConnectX), or else on the mlx5 model.
//!
//! What holds of every device is asserted of every device (the answers agree with sysfs, the
//! ioctl and write paths agree, the kernel's errors are typed); what is particular to a backend is
//! asserted per backend ([`Backend`]): rxe has firmware `0.0.0`, only RoCE v2 GIDs and an active
//! Ethernet port; the model has the firmware, GIDs and sysfs tree it documents and no device node;
//! of ConnectX hardware only what any ConnectX has (a real firmware version, a device node, the
//! `mlx5_core` PCI driver, GID types and link layer as its sysfs says).

mod common;

use common::{any_device, test_device, TestDevice};
use uverbs::{CommandPath, Driver, ErrorExt, GidType, LinkLayer, PortState};
use uverbs_drivers::chan::IoctlCmd;
use uverbs_drivers::uapi;
use uverbs_drivers::{Error, Verb};

/// What the device under test is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// The kernel's soft-RoCE device.
    Rxe,
    /// The mlx5 model in this process.
    Model,
    /// A ConnectX (`mlx5_ib`).
    Mlx5Hardware,
}

/// The backend of `dev`, checked against its name: `rxe*` is rxe, `mlx5_*` mlx5 (the model's
/// default name is `mlx5_0` too); another kernel device is not one these tests know.
fn backend(dev: &TestDevice) -> Backend {
    let name = dev.name();
    let driver = dev.device().driver();
    // The model is test equipment in this process, told apart from a ConnectX by that alone.
    let b = if dev.model().is_some() {
        Backend::Model
    } else if name.starts_with("rxe") {
        Backend::Rxe
    } else if name.starts_with("mlx5_") {
        Backend::Mlx5Hardware
    } else {
        panic!("{name} ({driver:?}): the device tests know rxe* and mlx5_* devices");
    };
    let expected = match b {
        Backend::Rxe => Driver::Rxe,
        Backend::Model | Backend::Mlx5Hardware => Driver::Mlx5,
    };
    assert_eq!(driver, expected, "{name} is {b:?}");
    b
}

fn sysfs(dev: &uverbs::Device<'_>, file: &str) -> String {
    let p = dev.sysfs_path().join(file);
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .to_owned()
}

#[test]
fn discovery_finds_the_device() {
    let Some(td) = any_device("discovery_finds_the_device") else {
        return;
    };
    let name = td.name().to_owned();
    let backend = backend(&td);
    let list = td.list();
    assert!(!list.is_empty());
    let dev = list.find(&name).unwrap();
    assert_eq!(dev.name().unwrap().to_str().unwrap(), name);
    match backend {
        // A kernel device has its device node; the model says so that it has none.
        Backend::Rxe | Backend::Mlx5Hardware => assert!(
            dev.uverbs_path().exists(),
            "{}",
            dev.uverbs_path().display()
        ),
        Backend::Model => {
            assert!(!dev.uverbs_path().exists());
            assert_eq!(
                dev.uverbs_path(),
                std::path::Path::new(&format!("/dev/infiniband/{name}-model"))
            );
        }
    }
    if backend == Backend::Mlx5Hardware {
        // A ConnectX is a PCI function driven by mlx5_core.
        let driver = std::fs::read_link(dev.sysfs_path().join("device/driver")).unwrap();
        assert!(driver.ends_with("mlx5_core"), "{}", driver.display());
    }
    assert!(dev.index().unwrap() >= 0, "netlink gives the device index");
    // The GUID is what sysfs says.
    assert_eq!(dev.guid().unwrap().to_string(), sysfs(&dev, "node_guid"));
    // Iteration by index and by iterator agree.
    assert_eq!(list.iter().count(), list.len());
    assert_eq!(
        list.into_iter()
            .map(|d| d.name_str())
            .collect::<Vec<_>>()
            .len(),
        list.len()
    );
    assert!(list.get(list.len()).is_none());
}

#[test]
fn context_queries_agree_with_sysfs() {
    let Some(td) = any_device("context_queries_agree_with_sysfs") else {
        return;
    };
    let name = td.name().to_owned();
    let backend = backend(&td);
    let dev = td.device();
    let ctx = dev.open().unwrap();
    assert_eq!(ctx.name(), name);
    assert!(ctx.num_comp_vectors() >= 1);
    let attr = ctx.query_device().unwrap();
    assert_eq!(attr.node_guid(), dev.guid().unwrap());
    match backend {
        // rxe has no firmware: the kernel's sysfs file is empty, and the query says 0.0.0.
        Backend::Rxe => {
            assert_eq!(attr.fw_ver(), "0.0.0", "rxe has no firmware");
            assert_eq!(sysfs(&dev, "fw_ver"), "");
        }
        Backend::Model | Backend::Mlx5Hardware => {
            assert_eq!(attr.fw_ver(), sysfs(&dev, "fw_ver"))
        }
    }
    match backend {
        Backend::Rxe => {}
        Backend::Model => assert_eq!(attr.fw_ver(), "22.36.1010", "the model's ConnectX-6 Dx"),
        Backend::Mlx5Hardware => {
            // major.minor.subminor, the major being the device generation (12 and up).
            let parts: Vec<u32> = attr
                .fw_ver()
                .split('.')
                .map(|p| p.parse().unwrap())
                .collect();
            assert!(
                parts.len() == 3 && parts[0] >= 12,
                "a ConnectX firmware version: {}",
                attr.fw_ver()
            );
        }
    }
    assert!(attr.phys_port_cnt() >= 1);
    assert!(attr.max_qp() > 0 && attr.max_cq() > 0 && attr.max_mr() > 0 && attr.max_qp_wr() > 0);
    assert!(attr.is_extended(), "6.1+ kernels answer EX_QUERY_DEVICE");

    // The suites need an active port on every backend.
    let port = ctx.query_port(1).unwrap();
    assert_eq!(port.state(), PortState::Active);
    assert_eq!(sysfs(&dev, "ports/1/state"), "4: ACTIVE");
    let link_layer = sysfs(&dev, "ports/1/link_layer");
    match link_layer.as_str() {
        "Ethernet" => assert_eq!(port.link_layer(), LinkLayer::Ethernet),
        "InfiniBand" => assert_eq!(port.link_layer(), LinkLayer::InfiniBand),
        other => panic!("link layer {other:?}"),
    }
    if backend != Backend::Mlx5Hardware {
        // rxe and the model are RoCE devices; a ConnectX may be either.
        assert_eq!(port.link_layer(), LinkLayer::Ethernet);
    }
    assert!(port.active_mtu().bytes().is_some());
    assert!(port.gid_tbl_len() > 0);

    // The GID table matches sysfs entry by entry (GID, type); rxe's and the model's GIDs are all
    // RoCE v2.
    let table = ctx.gid_table();
    assert!(
        !table.is_empty(),
        "rxe on lo has at least the link-local and ::1 GIDs, the model those two"
    );
    for e in table {
        let text = std::fs::read_to_string(
            dev.sysfs_path()
                .join(format!("ports/{}/gids/{}", e.port_num, e.gid_index)),
        )
        .unwrap();
        assert_eq!(e.gid.to_string(), text.trim(), "GID {}", e.gid_index);
        let ty = sysfs(&dev, &format!("ports/1/gid_attrs/types/{}", e.gid_index));
        let expected = match (ty.as_str(), port.link_layer()) {
            ("RoCE v2", _) => GidType::RoceV2,
            ("IB/RoCE v1", LinkLayer::Ethernet) => GidType::RoceV1,
            ("IB/RoCE v1", _) => GidType::Ib,
            (other, _) => panic!("GID {} of type {other:?}", e.gid_index),
        };
        assert_eq!(e.kind(), expected, "GID {}", e.gid_index);
        if backend != Backend::Mlx5Hardware {
            assert_eq!(e.kind(), GidType::RoceV2);
        }
        // A RoCE GID belongs to a network device.
        if port.link_layer() == LinkLayer::Ethernet {
            assert_ne!(e.ndev_ifindex, 0);
        }
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

/// `Context::supports` says what each device offers (README's table of the newer verbs), and
/// agrees with the attributes the device reports. This is the one place where the capabilities of
/// a known device are written down: the other tests ask `supports` and test the verbs where it
/// says yes and the typed `Unsupported` where it says no, so a wrong answer here would quietly
/// narrow them.
#[test]
fn capabilities_are_what_each_device_offers() {
    use uverbs::Capability as C;
    let Some(td) = any_device("capabilities_are_what_each_device_offers") else {
        return;
    };
    let backend = backend(&td);
    let ctx = td.open();
    let attr = ctx.query_device().unwrap();
    let offered: Vec<C> = C::ALL
        .iter()
        .copied()
        .filter(|&c| ctx.supports(c))
        .collect();
    // Asked again, and on the legacy write path: the same answers.
    let again: Vec<C> = C::ALL
        .iter()
        .copied()
        .filter(|&c| ctx.supports(c))
        .collect();
    assert_eq!(offered, again);
    let legacy = td.open_with(CommandPath::LegacyWrite);
    let on_write: Vec<C> = C::ALL
        .iter()
        .copied()
        .filter(|&c| legacy.supports(c))
        .collect();
    assert_eq!(offered, on_write, "the write path");
    eprintln!("{} ({backend:?}) offers {offered:?}", td.name());
    let expected: Option<Vec<C>> = match backend {
        Backend::Model => Some(vec![
            C::CqModeration,
            C::CqResize,
            C::CompletionTimestamps,
            C::DeviceClock,
            C::OnDemandPaging,
            C::ImplicitOnDemandPaging,
            C::DmabufRegions,
            C::Rereg,
            C::ReregMemory,
        ]),
        Backend::Rxe => {
            // rxe learnt REREG_MR (of protection domain and access) after 6.1, on-demand paging
            // in 6.14.
            let mut v = vec![C::MemoryWindows, C::CqResize];
            match common::behaviour::kernel() {
                (6, 1) => Some(v),
                (6, 12) => {
                    v.push(C::Rereg);
                    Some(v)
                }
                _ => None,
            }
        }
        // Depends on the HCA and firmware: checked against the attributes only.
        Backend::Mlx5Hardware => None,
    };
    if let Some(expected) = expected {
        assert_eq!(offered, expected, "{}", td.name());
    }
    // What the device reports decides where it reports anything.
    let caps = attr.raw().cq_moderation_caps;
    if backend == Backend::Model {
        // A ConnectX's: the CQ context's 16-bit count and 12-bit period.
        assert_eq!(
            (caps.max_cq_moderation_count, caps.max_cq_moderation_period),
            (u16::MAX, 4095)
        );
    }
    if ctx.supports(C::CqModeration) {
        assert!(caps.max_cq_moderation_count != 0 || caps.max_cq_moderation_period != 0);
    }
    if ctx.supports(C::CompletionTimestamps) {
        assert_ne!(attr.completion_timestamp_mask(), 0);
        assert!(attr.hca_core_clock() > 0);
    }
    if ctx.supports(C::MemoryWindows) {
        assert!(attr.max_mw() > 0);
    }
    let odp = attr.odp_caps().general_caps;
    const ODP: u64 = 1;
    const IMPLICIT: u64 = 2;
    assert_eq!(ctx.supports(C::OnDemandPaging), odp & ODP != 0, "{odp:#x}");
    assert_eq!(
        ctx.supports(C::ImplicitOnDemandPaging),
        odp & (ODP | IMPLICIT) == ODP | IMPLICIT,
        "{odp:#x}"
    );
    assert!(!ctx.supports(C::ReregMemory) || ctx.supports(C::Rereg));
}

#[test]
fn the_legacy_write_path_gives_the_same_answers() {
    let Some(td) = any_device("the_legacy_write_path_gives_the_same_answers") else {
        return;
    };
    let dev = td.device();
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
fn p_keys_read_as_libibverbs_reads_them() {
    let Some(dev) = any_device("p_keys_read_as_libibverbs_reads_them") else {
        return;
    };
    let ctx = dev.open();
    let len = ctx.query_port(1).unwrap().pkey_tbl_len();
    assert!(len >= 1, "a P_Key table of {len} entries");
    // Entry 0 is the default key, full membership, on every device here; every entry of the
    // table reads, and agrees with sysfs.
    assert_eq!(ctx.query_pkey(1, 0).unwrap(), 0xffff);
    for i in 0..len {
        let pkey = ctx.query_pkey(1, i).unwrap();
        let text = sysfs(&dev.device(), &format!("ports/1/pkeys/{i}"));
        assert_eq!(format!("{pkey:#06x}"), text, "entry {i}");
    }
    // Past the table, and port 0: typed errors that name the verb.
    for (port, index) in [(1, len), (0, 0)] {
        let err = ctx.query_pkey(port, index).unwrap_err();
        match err.uverbs_error() {
            Some(Error::InvalidArgument {
                verb: Verb::QueryPkey,
                ..
            }) => {}
            other => panic!("port {port} index {index}: got {other:?} ({err})"),
        }
        assert!(err.to_string().contains("query P_Key"), "{err}");
    }
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
    // SAFETY: only raw destroys of a handle that does not exist are sent, no user memory at all
    // and no object of `ctx`.
    let chan = unsafe { ctx.driver_context() }.ucontext().channel();
    // Destroying a protection domain that does not exist, through the ioctl interface.
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_PD, uapi::UVERBS_METHOD_PD_DESTROY);
    cmd.idr(uapi::UVERBS_ATTR_DESTROY_PD_HANDLE, 0xdead);
    // SAFETY: one handle attribute, no pointer; the handle names no object.
    let err = unsafe { chan.raw(&mut cmd) }.unwrap_err();
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
    // SAFETY: DEALLOC_PD's request is a handle, no address; the handle names no object.
    let err = unsafe {
        chan.write(
            Verb::DeallocPd,
            uapi::IB_USER_VERBS_CMD_DEALLOC_PD,
            &mut req,
            &mut (),
            &[],
            &mut [],
        )
    }
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
    let info = uverbs_drivers::discover::find_device(&name).unwrap();
    // Another driver's id than the device's.
    let wrong = match info.driver {
        uverbs_drivers::discover::Driver::Mlx5 => uapi::RDMA_DRIVER_RXE,
        _ => uapi::RDMA_DRIVER_MLX5,
    };
    let chan = uverbs_drivers::chan::Channel::open(&info.devnode, info.dev, wrong).unwrap();
    let mut out = 0u32;
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_GET_CONTEXT);
    cmd.out_obj(uapi::UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, &mut out);
    // SAFETY: one output attribute, `out`, borrowed for the call; no driver data.
    let err = unsafe { chan.ioctl(Verb::GetContext, &mut cmd) }.unwrap_err();
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
