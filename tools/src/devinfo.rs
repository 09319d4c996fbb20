//! `uverbs devices` and `uverbs devinfo`: what rdma-core's `ibv_devices` and `ibv_devinfo` (v44, the
//! version Debian 12 ships) print, byte for byte, plus `--json`.

use std::fmt::Write;
use std::io;

use serde::Serialize;
use uverbs::{Context, DeviceAttr, GidEntry, GidType, LinkLayer, NodeType, PortAttr};

use crate::args::{self, Item, Opt};

/// `uverbs devices [--json]`.
pub fn devices_main(argv: &[String]) -> i32 {
    let json = argv.iter().any(|a| a == "--json");
    let list = match uverbs::devices() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("Failed to get IB devices list: {}", errno_text(&e));
            return 1;
        }
    };
    if json {
        println!("{}", devices_json(&list));
        return 0;
    }
    let mut out = String::new();
    writeln!(out, "    {:<16}\t   node GUID", "device").unwrap();
    writeln!(out, "    {:<16}\t----------------", "------").unwrap();
    for d in &list {
        let guid = d.guid().map(u64::from).unwrap_or(0);
        writeln!(out, "    {:<16}\t{guid:016x}", d.name_str()).unwrap();
    }
    print!("{out}");
    0
}

/// One device of `uverbs devices --json`.
#[derive(Debug, Serialize)]
struct DeviceEntry {
    name: String,
    node_guid: Option<String>,
    driver: String,
    uverbs: String,
    index: Option<i32>,
}

/// `uverbs devices --json`: the list, pretty-printed.
fn devices_json(list: &uverbs::DeviceList) -> String {
    let devs: Vec<DeviceEntry> = list
        .iter()
        .map(|d| DeviceEntry {
            name: d.name_str().to_owned(),
            node_guid: d.guid().ok().map(|g| g.to_string()),
            driver: d.driver().name().to_owned(),
            uverbs: d.uverbs_path().display().to_string(),
            index: d.index().ok(),
        })
        .collect();
    pretty(&devs)
}

/// Two-space indented JSON, as `--json` has always printed it.
fn pretty(value: &impl Serialize) -> String {
    // Serializing plain structs of strings and integers into memory cannot fail.
    serde_json::to_string_pretty(value).expect("JSON of plain data")
}

const OPTS: &[Opt] = &[
    args::IB_DEV,
    args::IB_PORT,
    Opt::flag('l', "list"),
    Opt::flag('v', "verbose"),
    Opt::flag('j', "json"),
];

fn usage(argv0: &str) {
    print!(
        "Usage: {argv0}             print the ca attributes\n\n\
         Options:\n  \
         -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n  \
         -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n  \
         -l, --list             print only the IB devices names\n  \
         -v, --verbose          print all the attributes of the IB device(s)\n  \
         -j, --json             print the attributes as JSON (uverbs extension)\n"
    );
}

/// `uverbs devinfo [-d DEV] [-i PORT] [-l] [-v] [--json]`, with `ibv_devinfo`'s exit codes.
pub fn devinfo_main(argv0: &str, argv: &[String]) -> i32 {
    let items = match args::parse_or_usage(argv0, argv, OPTS, || usage(argv0), 255) {
        Ok(i) => i,
        Err(status) => return status,
    };
    let (mut dev_name, mut port, mut verbose, mut json) = (None, 0u8, false, false);
    for item in items {
        match item {
            Item::Opt('d', Some(d)) => dev_name = Some(d),
            Item::Opt('i', Some(p)) => {
                let v = args::strtol(&p);
                if v <= 0 {
                    usage(argv0);
                    return 1;
                }
                // ibv_devinfo passes the port as a uint8_t.
                port = (v & 0xff) as u8;
            }
            Item::Opt('l', _) => return list_main(),
            Item::Opt('v', _) => verbose = true,
            Item::Opt('j', _) => json = true,
            _ => {}
        }
    }
    let list = match uverbs::devices() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("Failed to get IB devices list: {}", errno_text(&e));
            return 255;
        }
    };
    let selected: Vec<_> = match &dev_name {
        Some(name) => match list.find(name) {
            Some(d) => vec![d],
            None => {
                eprintln!("IB device '{name}' wasn't found");
                return 255;
            }
        },
        None if list.is_empty() => {
            eprintln!("No IB devices found");
            return 255;
        }
        None => list.iter().collect(),
    };
    let mut rc = 0;
    let mut docs = Vec::new();
    for dev in selected {
        let ctx = match dev.open() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("Failed to open device: {e}");
                rc |= 1;
                continue;
            }
        };
        if json {
            match device_json(&ctx, port) {
                Ok(doc) => docs.push(doc),
                Err((code, msg)) => {
                    eprintln!("{msg}");
                    rc |= code;
                }
            }
        } else {
            let mut out = String::new();
            let r = print_hca_cap(&ctx, port, verbose, &mut out);
            print!("{out}");
            if let Err((code, msg)) = r {
                eprintln!("{msg}");
                rc |= code;
            }
        }
    }
    if json {
        println!("{}", pretty(&docs));
    }
    rc & 0xff
}

fn list_main() -> i32 {
    let list = match uverbs::devices() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("Failed to get IB devices list: {}", errno_text(&e));
            return 255;
        }
    };
    let n = list.len();
    let mut out = format!("{n} HCA{} found:\n", if n != 1 { "s" } else { "" });
    for d in &list {
        writeln!(out, "\t{}", d.name_str()).unwrap();
    }
    out.push('\n');
    print!("{out}");
    0
}

/// `enum ibv_transport_type` of a node type, as libibverbs derives it.
fn transport(node: NodeType) -> i32 {
    match node {
        NodeType::Ca | NodeType::Switch | NodeType::Router => 0,
        NodeType::Rnic => 1,
        NodeType::Usnic => 2,
        NodeType::UsnicUdp => 3,
        NodeType::Unspecified => 4,
        NodeType::Unknown(_) => -1,
    }
}

fn transport_str(t: i32) -> &'static str {
    match t {
        0 => "InfiniBand",
        1 => "iWARP",
        2 => "usNIC",
        3 => "usNIC UDP",
        4 => "unspecified",
        _ => "invalid transport",
    }
}

fn port_state_str(v: u8) -> &'static str {
    match v {
        1 => "PORT_DOWN",
        2 => "PORT_INIT",
        3 => "PORT_ARMED",
        4 => "PORT_ACTIVE",
        _ => "invalid state",
    }
}

fn phys_state_str(v: u8) -> &'static str {
    match v {
        1 => "SLEEP",
        2 => "POLLING",
        3 => "DISABLED",
        4 => "PORT_CONFIGURATION TRAINNING",
        5 => "LINK_UP",
        6 => "LINK_ERROR_RECOVERY",
        7 => "PHY TEST",
        _ => "invalid physical state",
    }
}

fn atomic_cap_str(v: u32) -> &'static str {
    match v {
        0 => "ATOMIC_NONE",
        1 => "ATOMIC_HCA",
        2 => "ATOMIC_GLOB",
        _ => "invalid atomic capability",
    }
}

fn mtu_str(v: u8) -> &'static str {
    match v {
        1 => "256",
        2 => "512",
        3 => "1024",
        4 => "2048",
        5 => "4096",
        _ => "invalid MTU",
    }
}

fn width_str(v: u8) -> &'static str {
    match v {
        1 => "1",
        2 => "4",
        4 => "8",
        8 => "12",
        16 => "2",
        _ => "invalid width",
    }
}

fn speed_str(v: u8) -> &'static str {
    match v {
        1 => "2.5 Gbps",
        2 => "5.0 Gbps",
        4 | 8 => "10.0 Gbps",
        16 => "14.0 Gbps",
        32 => "25.0 Gbps",
        64 => "50.0 Gbps",
        128 => "100.0 Gbps",
        _ => "invalid speed",
    }
}

fn vl_str(v: u8) -> &'static str {
    match v {
        1 => "1",
        2 => "2",
        3 => "4",
        4 => "8",
        5 => "15",
        _ => "invalid value",
    }
}

fn link_layer_str(v: u8) -> &'static str {
    match v {
        0 => "Unspecified",
        1 => "InfiniBand",
        2 => "Ethernet",
        _ => "Unknown",
    }
}

const FLAG: &str = "\t\t\t\t\t";

/// Prints the names of the set bits in table order, then the unknown ones (`fmt_unknown` formats them).
fn print_flags(
    out: &mut String,
    v: u64,
    table: &[(u64, &str)],
    fmt_unknown: impl Fn(u64) -> String,
) {
    let mut known = 0;
    for &(bit, name) in table {
        known |= bit;
        if v & bit != 0 {
            writeln!(out, "{FLAG}{name}").unwrap();
        }
    }
    if v & !known != 0 {
        writeln!(out, "{FLAG}Unknown flags: {}", fmt_unknown(v & !known)).unwrap();
    }
}

const DEVICE_CAP_FLAGS: &[(u64, &str)] = &[
    (1 << 0, "RESIZE_MAX_WR"),
    (1 << 1, "BAD_PKEY_CNTR"),
    (1 << 2, "BAD_QKEY_CNTR"),
    (1 << 3, "RAW_MULTI"),
    (1 << 4, "AUTO_PATH_MIG"),
    (1 << 5, "CHANGE_PHY_PORT"),
    (1 << 6, "UD_AV_PORT_ENFORCE"),
    (1 << 7, "CURR_QP_STATE_MOD"),
    (1 << 8, "SHUTDOWN_PORT"),
    (1 << 9, "INIT_TYPE"),
    (1 << 10, "PORT_ACTIVE_EVENT"),
    (1 << 11, "SYS_IMAGE_GUID"),
    (1 << 12, "RC_RNR_NAK_GEN"),
    (1 << 13, "SRQ_RESIZE"),
    (1 << 14, "N_NOTIFY_CQ"),
    (1 << 17, "MEM_WINDOW"),
    (1 << 18, "UD_IP_CSUM"),
    (1 << 20, "XRC"),
    (1 << 21, "MEM_MGT_EXTENSIONS"),
    (1 << 23, "MEM_WINDOW_TYPE_2A"),
    (1 << 24, "MEM_WINDOW_TYPE_2B"),
    (1 << 25, "RC_IP_CSUM"),
    (1 << 26, "RAW_IP_CSUM"),
    (1 << 29, "MANAGED_FLOW_STEERING"),
];

const ODP_TRANSPORT_CAPS: &[(u64, &str)] = &[
    (1 << 0, "SUPPORT_SEND"),
    (1 << 1, "SUPPORT_RECV"),
    (1 << 2, "SUPPORT_WRITE"),
    (1 << 3, "SUPPORT_READ"),
    (1 << 4, "SUPPORT_ATOMIC"),
    (1 << 5, "SUPPORT_SRQ"),
];

const QP_TYPES: &[(u64, &str)] = &[(1 << 8, "SUPPORT_RAW_PACKET"), (1 << 4, "SUPPORT_UD")];

fn upper_hex(v: u64) -> String {
    format!("0x{v:X}")
}

fn odp_trans_caps(out: &mut String, name: &str, v: u32) {
    writeln!(out, "\t{name}:").unwrap();
    if v == 0 {
        writeln!(out, "{FLAG}NO SUPPORT").unwrap();
    } else {
        print_flags(out, u64::from(v), ODP_TRANSPORT_CAPS, upper_hex);
    }
}

/// The device's attributes in `ibv_devinfo`'s words; `Err((exit code bits, message))` on failure.
fn print_hca_cap(
    ctx: &Context,
    port: u8,
    verbose: bool,
    out: &mut String,
) -> Result<(), (i32, String)> {
    let attr = ctx
        .query_device()
        .map_err(|e| (2, format!("Failed to query device props: {e}")))?;
    let ports = attr.phys_port_cnt();
    if port != 0 && port > ports {
        return Err((4, "Invalid port requested for device".into()));
    }
    let transport = transport(ctx.node_type());
    let b = &attr.raw().base;
    writeln!(out, "hca_id:\t{}", ctx.name()).unwrap();
    writeln!(
        out,
        "\ttransport:\t\t\t{} ({transport})",
        transport_str(transport)
    )
    .unwrap();
    if !attr.fw_ver().is_empty() {
        writeln!(out, "\tfw_ver:\t\t\t\t{}", attr.fw_ver()).unwrap();
    }
    writeln!(out, "\tnode_guid:\t\t\t{}", attr.node_guid()).unwrap();
    writeln!(out, "\tsys_image_guid:\t\t\t{}", attr.sys_image_guid()).unwrap();
    writeln!(out, "\tvendor_id:\t\t\t0x{:04x}", b.vendor_id).unwrap();
    writeln!(out, "\tvendor_part_id:\t\t\t{}", b.vendor_part_id as i32).unwrap();
    writeln!(out, "\thw_ver:\t\t\t\t0x{:X}", b.hw_ver).unwrap();
    if let Some(board) = ctx.board_id() {
        writeln!(out, "\tboard_id:\t\t\t{board}").unwrap();
    }
    writeln!(out, "\tphys_port_cnt:\t\t\t{ports}").unwrap();
    if verbose {
        print_verbose_device(ctx, &attr, out);
    }
    for p in 1..=ports {
        if port != 0 && p != port {
            continue;
        }
        let pa = ctx.query_port(p).map_err(|e| {
            let errno = e.raw_os_error().or_else(|| uverbs_errno(&e)).unwrap_or(1);
            (errno, format!("Failed to query port {p} props: {e}"))
        })?;
        print_port(ctx, p, transport, &pa, verbose, out)?;
    }
    Ok(())
}

/// `perror`'s text for an error: the errno's description where there is one.
fn errno_text(e: &io::Error) -> String {
    match uverbs_errno(e) {
        Some(errno) => io::Error::from_raw_os_error(errno)
            .to_string()
            .replace(&format!(" (os error {errno})"), ""),
        None => e.to_string(),
    }
}

fn uverbs_errno(e: &io::Error) -> Option<i32> {
    use uverbs::ErrorExt;
    e.uverbs_error().map(|u| u.errno() as i32)
}

fn print_verbose_device(ctx: &Context, attr: &DeviceAttr, out: &mut String) {
    let b = &attr.raw().base;
    let x = attr.raw();
    let i = |v: u32| v as i32;
    writeln!(out, "\tmax_mr_size:\t\t\t0x{:x}", b.max_mr_size).unwrap();
    writeln!(out, "\tpage_size_cap:\t\t\t0x{:x}", b.page_size_cap).unwrap();
    writeln!(out, "\tmax_qp:\t\t\t\t{}", i(b.max_qp)).unwrap();
    writeln!(out, "\tmax_qp_wr:\t\t\t{}", i(b.max_qp_wr)).unwrap();
    writeln!(out, "\tdevice_cap_flags:\t\t0x{:08x}", b.device_cap_flags).unwrap();
    print_flags(
        out,
        u64::from(b.device_cap_flags),
        DEVICE_CAP_FLAGS,
        upper_hex,
    );
    writeln!(out, "\tmax_sge:\t\t\t{}", i(b.max_sge)).unwrap();
    writeln!(out, "\tmax_sge_rd:\t\t\t{}", i(b.max_sge_rd)).unwrap();
    writeln!(out, "\tmax_cq:\t\t\t\t{}", i(b.max_cq)).unwrap();
    writeln!(out, "\tmax_cqe:\t\t\t{}", i(b.max_cqe)).unwrap();
    writeln!(out, "\tmax_mr:\t\t\t\t{}", i(b.max_mr)).unwrap();
    writeln!(out, "\tmax_pd:\t\t\t\t{}", i(b.max_pd)).unwrap();
    writeln!(out, "\tmax_qp_rd_atom:\t\t\t{}", i(b.max_qp_rd_atom)).unwrap();
    writeln!(out, "\tmax_ee_rd_atom:\t\t\t{}", i(b.max_ee_rd_atom)).unwrap();
    writeln!(out, "\tmax_res_rd_atom:\t\t{}", i(b.max_res_rd_atom)).unwrap();
    writeln!(
        out,
        "\tmax_qp_init_rd_atom:\t\t{}",
        i(b.max_qp_init_rd_atom)
    )
    .unwrap();
    writeln!(
        out,
        "\tmax_ee_init_rd_atom:\t\t{}",
        i(b.max_ee_init_rd_atom)
    )
    .unwrap();
    writeln!(
        out,
        "\tatomic_cap:\t\t\t{} ({})",
        atomic_cap_str(b.atomic_cap),
        i(b.atomic_cap)
    )
    .unwrap();
    writeln!(out, "\tmax_ee:\t\t\t\t{}", i(b.max_ee)).unwrap();
    writeln!(out, "\tmax_rdd:\t\t\t{}", i(b.max_rdd)).unwrap();
    writeln!(out, "\tmax_mw:\t\t\t\t{}", i(b.max_mw)).unwrap();
    writeln!(out, "\tmax_raw_ipv6_qp:\t\t{}", i(b.max_raw_ipv6_qp)).unwrap();
    writeln!(out, "\tmax_raw_ethy_qp:\t\t{}", i(b.max_raw_ethy_qp)).unwrap();
    writeln!(out, "\tmax_mcast_grp:\t\t\t{}", i(b.max_mcast_grp)).unwrap();
    writeln!(
        out,
        "\tmax_mcast_qp_attach:\t\t{}",
        i(b.max_mcast_qp_attach)
    )
    .unwrap();
    writeln!(
        out,
        "\tmax_total_mcast_qp_attach:\t{}",
        i(b.max_total_mcast_qp_attach)
    )
    .unwrap();
    writeln!(out, "\tmax_ah:\t\t\t\t{}", i(b.max_ah)).unwrap();
    writeln!(out, "\tmax_fmr:\t\t\t{}", i(b.max_fmr)).unwrap();
    if b.max_fmr != 0 {
        writeln!(out, "\tmax_map_per_fmr:\t\t{}", i(b.max_map_per_fmr)).unwrap();
    }
    writeln!(out, "\tmax_srq:\t\t\t{}", i(b.max_srq)).unwrap();
    if b.max_srq != 0 {
        writeln!(out, "\tmax_srq_wr:\t\t\t{}", i(b.max_srq_wr)).unwrap();
        writeln!(out, "\tmax_srq_sge:\t\t\t{}", i(b.max_srq_sge)).unwrap();
    }
    writeln!(out, "\tmax_pkeys:\t\t\t{}", b.max_pkeys).unwrap();
    writeln!(out, "\tlocal_ca_ack_delay:\t\t{}", b.local_ca_ack_delay).unwrap();

    let odp = attr.odp_caps();
    writeln!(out, "\tgeneral_odp_caps:").unwrap();
    print_flags(
        out,
        odp.general_caps,
        &[(1, "ODP_SUPPORT"), (2, "ODP_SUPPORT_IMPLICIT")],
        upper_hex,
    );
    odp_trans_caps(out, "rc_odp_caps", odp.rc_caps);
    odp_trans_caps(out, "uc_odp_caps", odp.uc_caps);
    odp_trans_caps(out, "ud_odp_caps", odp.ud_caps);
    odp_trans_caps(out, "xrc_odp_caps", odp.xrc_caps);

    if x.timestamp_mask != 0 {
        writeln!(
            out,
            "\tcompletion timestamp_mask:\t\t\t0x{:016x}",
            x.timestamp_mask
        )
        .unwrap();
    } else {
        writeln!(out, "\tcompletion_timestamp_mask not supported").unwrap();
    }
    if x.hca_core_clock != 0 {
        writeln!(out, "\thca_core_clock:\t\t\t{}kHZ", x.hca_core_clock).unwrap();
    } else {
        writeln!(out, "\tcore clock not supported").unwrap();
    }
    if x.raw_packet_caps != 0 {
        writeln!(out, "\traw packet caps:").unwrap();
        let names = [
            "C-VLAN stripping offload",
            "Scatter FCS offload",
            "IP csum offload",
            "Delay drop",
        ];
        for (bit, name) in names.iter().enumerate() {
            if x.raw_packet_caps & (1 << bit) != 0 {
                writeln!(out, "{FLAG}{name}").unwrap();
            }
        }
    }
    writeln!(
        out,
        "\tdevice_cap_flags_ex:\t\t0x{:X}",
        x.device_cap_flags_ex
    )
    .unwrap();
    print_flags(
        out,
        x.device_cap_flags_ex & 0xffff_ffff_0000_0000,
        &[
            (1 << 34, "RAW_SCATTER_FCS"),
            (1 << 36, "PCI_WRITE_END_PADDING"),
        ],
        upper_hex,
    );
    // TSO, the RSS hash and packet pacing come from mlx5's private answer to QUERY_DEVICE, which
    // this backend does not ask for yet: they print as zero, as for rxe.
    writeln!(out, "\ttso_caps:\n\t\tmax_tso:\t\t\t0").unwrap();
    writeln!(out, "\trss_caps:").unwrap();
    writeln!(
        out,
        "\t\tmax_rwq_indirection_tables:\t\t\t{}",
        x.rss_caps.max_rwq_indirection_tables
    )
    .unwrap();
    writeln!(
        out,
        "\t\tmax_rwq_indirection_table_size:\t\t\t{}",
        x.rss_caps.max_rwq_indirection_table_size
    )
    .unwrap();
    writeln!(out, "\t\trx_hash_function:\t\t\t\t0x0").unwrap();
    writeln!(out, "\t\trx_hash_fields_mask:\t\t\t\t0x0").unwrap();
    if x.rss_caps.supported_qpts != 0 {
        writeln!(out, "\t\tsupported_qp:").unwrap();
        print_flags(
            out,
            u64::from(x.rss_caps.supported_qpts),
            QP_TYPES,
            upper_hex,
        );
    }
    writeln!(out, "\tmax_wq_type_rq:\t\t\t{}", x.max_wq_type_rq).unwrap();
    writeln!(out, "\tpacket_pacing_caps:").unwrap();
    writeln!(
        out,
        "\t\tqp_rate_limit_min:\t0kbps\n\t\tqp_rate_limit_max:\t0kbps"
    )
    .unwrap();
    let tm = &x.tm_caps;
    if tm.max_num_tags != 0 {
        writeln!(out, "\tmax_rndv_hdr_size:\t\t{}", tm.max_rndv_hdr_size).unwrap();
        writeln!(out, "\tmax_num_tags:\t\t\t{}", tm.max_num_tags).unwrap();
        writeln!(out, "\tmax_ops:\t\t\t{}", tm.max_ops).unwrap();
        writeln!(out, "\tmax_sge:\t\t\t{}", tm.max_sge).unwrap();
        writeln!(out, "\tflags:").unwrap();
        if tm.flags & 1 != 0 {
            writeln!(out, "{FLAG}IBV_TM_CAP_RC").unwrap();
        }
    } else {
        writeln!(out, "\ttag matching not supported").unwrap();
    }
    let cqm = &x.cq_moderation_caps;
    if cqm.max_cq_moderation_count != 0 && cqm.max_cq_moderation_period != 0 {
        writeln!(out, "\n\tcq moderation caps:").unwrap();
        writeln!(out, "\t\tmax_cq_count:\t{}", cqm.max_cq_moderation_count).unwrap();
        writeln!(
            out,
            "\t\tmax_cq_period:\t{} us\n",
            cqm.max_cq_moderation_period
        )
        .unwrap();
    }
    if x.max_dm_size != 0 {
        writeln!(
            out,
            "\tmaximum available device memory:\t{}Bytes\n",
            x.max_dm_size
        )
        .unwrap();
    }
    writeln!(
        out,
        "\tnum_comp_vectors:\t\t{}",
        ctx.num_comp_vectors() as i32
    )
    .unwrap();
}

fn print_port(
    ctx: &Context,
    port: u8,
    transport: i32,
    pa: &PortAttr,
    verbose: bool,
    out: &mut String,
) -> Result<(), (i32, String)> {
    let l = &pa.raw().legacy_resp;
    writeln!(out, "\t\tport:\t{port}").unwrap();
    writeln!(
        out,
        "\t\t\tstate:\t\t\t{} ({})",
        port_state_str(l.state),
        l.state
    )
    .unwrap();
    writeln!(
        out,
        "\t\t\tmax_mtu:\t\t{} ({})",
        mtu_str(l.max_mtu),
        l.max_mtu
    )
    .unwrap();
    writeln!(
        out,
        "\t\t\tactive_mtu:\t\t{} ({})",
        mtu_str(l.active_mtu),
        l.active_mtu
    )
    .unwrap();
    writeln!(out, "\t\t\tsm_lid:\t\t\t{}", l.sm_lid).unwrap();
    writeln!(out, "\t\t\tport_lid:\t\t{}", l.lid).unwrap();
    writeln!(out, "\t\t\tport_lmc:\t\t0x{:02x}", l.lmc).unwrap();
    writeln!(out, "\t\t\tlink_layer:\t\t{}", link_layer_str(l.link_layer)).unwrap();
    if verbose {
        writeln!(out, "\t\t\tmax_msg_sz:\t\t0x{:x}", l.max_msg_sz).unwrap();
        writeln!(out, "\t\t\tport_cap_flags:\t\t0x{:08x}", l.port_cap_flags).unwrap();
        writeln!(
            out,
            "\t\t\tport_cap_flags2:\t0x{:04x}",
            pa.port_cap_flags2()
        )
        .unwrap();
        writeln!(
            out,
            "\t\t\tmax_vl_num:\t\t{} ({})",
            vl_str(l.max_vl_num),
            l.max_vl_num
        )
        .unwrap();
        writeln!(out, "\t\t\tbad_pkey_cntr:\t\t0x{:x}", l.bad_pkey_cntr).unwrap();
        writeln!(out, "\t\t\tqkey_viol_cntr:\t\t0x{:x}", l.qkey_viol_cntr).unwrap();
        writeln!(out, "\t\t\tsm_sl:\t\t\t{}", l.sm_sl).unwrap();
        writeln!(out, "\t\t\tpkey_tbl_len:\t\t{}", l.pkey_tbl_len).unwrap();
        writeln!(out, "\t\t\tgid_tbl_len:\t\t{}", l.gid_tbl_len as i32).unwrap();
        writeln!(out, "\t\t\tsubnet_timeout:\t\t{}", l.subnet_timeout).unwrap();
        writeln!(out, "\t\t\tinit_type_reply:\t{}", l.init_type_reply).unwrap();
        writeln!(
            out,
            "\t\t\tactive_width:\t\t{}X ({})",
            width_str(l.active_width),
            l.active_width
        )
        .unwrap();
        writeln!(
            out,
            "\t\t\tactive_speed:\t\t{} ({})",
            speed_str(l.active_speed),
            l.active_speed
        )
        .unwrap();
        if transport == 0 {
            writeln!(
                out,
                "\t\t\tphys_state:\t\t{} ({})",
                phys_state_str(l.phys_state),
                l.phys_state
            )
            .unwrap();
        }
        let gids = ctx
            .query_gid_table()
            .map_err(|e| (255, format!("Failed to query gid to port {port}: {e}")))?;
        let ethernet = pa.link_layer() == LinkLayer::Ethernet;
        let mut port_gids: Vec<&GidEntry> = gids
            .iter()
            .filter(|g| g.port_num == u32::from(port))
            .collect();
        port_gids.sort_by_key(|g| g.gid_index);
        for g in port_gids {
            // ibv_devinfo skips a GID whose interface id (last 8 bytes) is zero.
            if g.gid.interface_id() == 0 {
                continue;
            }
            out.push_str(&format_gid_line(g, ethernet));
        }
    }
    out.push('\n');
    Ok(())
}

/// One `GID[%3d]` line: IB and RoCE v1 GIDs in full hex, RoCE v2 ones as glibc's `inet_ntop` writes
/// them, with the type only on Ethernet ports.
fn format_gid_line(g: &GidEntry, ethernet: bool) -> String {
    let (text, suffix) = match g.kind() {
        GidType::RoceV2 => (inet_ntop6(&g.gid.bytes()), "RoCE v2"),
        _ => (g.gid.to_string(), "RoCE v1"),
    };
    let suffix = if ethernet {
        format!(", {suffix}")
    } else {
        String::new()
    };
    format!("\t\t\tGID[{:3}]:\t\t{text}{suffix}\n", g.gid_index as i32)
}

/// glibc's `inet_ntop(AF_INET6, ...)`, which differs from `Ipv6Addr`'s `Display` for IPv4-compatible
/// addresses (`::10.0.0.1`).
pub fn inet_ntop6(b: &[u8; 16]) -> String {
    let w: Vec<u16> = b
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    let (mut best, mut cur): ((isize, usize), (isize, usize)) = ((-1, 0), (-1, 0));
    for (i, &word) in w.iter().enumerate() {
        if word == 0 {
            if cur.0 == -1 {
                cur = (i as isize, 1);
            } else {
                cur.1 += 1;
            }
        } else if cur.0 != -1 {
            if best.0 == -1 || cur.1 > best.1 {
                best = cur;
            }
            cur.0 = -1;
        }
    }
    if cur.0 != -1 && (best.0 == -1 || cur.1 > best.1) {
        best = cur;
    }
    if best.0 != -1 && best.1 < 2 {
        best.0 = -1;
    }
    let mut s = String::new();
    for (i, &word) in w.iter().enumerate() {
        let i = i as isize;
        if best.0 != -1 && i >= best.0 && i < best.0 + best.1 as isize {
            if i == best.0 {
                s.push(':');
            }
            continue;
        }
        if i != 0 {
            s.push(':');
        }
        if i == 6 && best.0 == 0 && (best.1 == 6 || (best.1 == 5 && w[5] == 0xffff)) {
            write!(s, "{}.{}.{}.{}", b[12], b[13], b[14], b[15]).unwrap();
            return s;
        }
        write!(s, "{word:x}").unwrap();
    }
    if best.0 != -1 && best.0 + best.1 as isize == 8 {
        s.push(':');
    }
    s
}

/// One device of `uverbs devinfo --json`: fields in `ibv_devinfo -v`'s order.
#[derive(Debug, Serialize)]
struct DeviceDoc {
    hca_id: String,
    driver: String,
    transport: &'static str,
    fw_ver: String,
    node_guid: String,
    sys_image_guid: String,
    vendor_id: u32,
    vendor_part_id: u32,
    hw_ver: u32,
    board_id: Option<String>,
    phys_port_cnt: u8,
    max_mr_size: u64,
    page_size_cap: u64,
    max_qp: u32,
    max_qp_wr: u32,
    device_cap_flags: u32,
    device_cap_flags_ex: u64,
    max_sge: u32,
    max_sge_rd: u32,
    max_cq: u32,
    max_cqe: u32,
    max_mr: u32,
    max_pd: u32,
    max_qp_rd_atom: u32,
    max_res_rd_atom: u32,
    max_qp_init_rd_atom: u32,
    atomic_cap: &'static str,
    max_mw: u32,
    max_mcast_grp: u32,
    max_mcast_qp_attach: u32,
    max_total_mcast_qp_attach: u32,
    max_ah: u32,
    max_srq: u32,
    max_srq_wr: u32,
    max_srq_sge: u32,
    max_pkeys: u16,
    local_ca_ack_delay: u8,
    num_comp_vectors: u32,
    ports: Vec<PortDoc>,
}

/// One port of [`DeviceDoc`].
#[derive(Debug, Serialize)]
struct PortDoc {
    port: u8,
    state: &'static str,
    max_mtu: Option<u32>,
    active_mtu: Option<u32>,
    sm_lid: u16,
    port_lid: u16,
    port_lmc: u8,
    link_layer: &'static str,
    max_msg_sz: u32,
    port_cap_flags: u32,
    port_cap_flags2: u16,
    max_vl_num: u8,
    bad_pkey_cntr: u32,
    qkey_viol_cntr: u32,
    sm_sl: u8,
    pkey_tbl_len: u16,
    gid_tbl_len: u32,
    subnet_timeout: u8,
    init_type_reply: u8,
    active_width: Option<u32>,
    active_speed: u8,
    active_speed_ex: u32,
    phys_state: &'static str,
    gids: Vec<GidDoc>,
}

/// One GID of [`PortDoc`].
#[derive(Debug, Serialize)]
struct GidDoc {
    index: u32,
    gid: String,
    #[serde(rename = "type")]
    kind: &'static str,
    ndev_ifindex: u32,
}

fn device_json(ctx: &Context, port: u8) -> Result<DeviceDoc, (i32, String)> {
    let attr = ctx
        .query_device()
        .map_err(|e| (2, format!("Failed to query device props: {e}")))?;
    let b = &attr.raw().base;
    let gids = ctx
        .query_gid_table()
        .map_err(|e| (255, format!("Failed to query the GID table: {e}")))?;
    let mut ports = Vec::new();
    for p in 1..=b.phys_port_cnt {
        if port != 0 && p != port {
            continue;
        }
        let pa = ctx.query_port(p).map_err(|e| {
            (
                uverbs_errno(&e).unwrap_or(1),
                format!("Failed to query port {p} props: {e}"),
            )
        })?;
        let l = &pa.raw().legacy_resp;
        let gids = gids
            .iter()
            .filter(|g| g.port_num == u32::from(p))
            .map(|g| GidDoc {
                index: g.gid_index,
                gid: g.gid.to_ipv6().to_string(),
                kind: match g.kind() {
                    GidType::Ib => "IB",
                    GidType::RoceV1 => "RoCE v1",
                    GidType::RoceV2 => "RoCE v2",
                    GidType::Unknown(_) => "unknown",
                },
                ndev_ifindex: g.ndev_ifindex,
            })
            .collect();
        ports.push(PortDoc {
            port: p,
            state: port_state_str(l.state),
            max_mtu: pa.max_mtu().bytes(),
            active_mtu: pa.active_mtu().bytes(),
            sm_lid: l.sm_lid,
            port_lid: l.lid,
            port_lmc: l.lmc,
            link_layer: link_layer_str(l.link_layer),
            max_msg_sz: l.max_msg_sz,
            port_cap_flags: l.port_cap_flags,
            port_cap_flags2: pa.port_cap_flags2(),
            max_vl_num: l.max_vl_num,
            bad_pkey_cntr: l.bad_pkey_cntr,
            qkey_viol_cntr: l.qkey_viol_cntr,
            sm_sl: l.sm_sl,
            pkey_tbl_len: l.pkey_tbl_len,
            gid_tbl_len: l.gid_tbl_len,
            subnet_timeout: l.subnet_timeout,
            init_type_reply: l.init_type_reply,
            active_width: pa.active_width().lanes(),
            active_speed: l.active_speed,
            active_speed_ex: pa.active_speed_ex(),
            phys_state: phys_state_str(l.phys_state),
            gids,
        });
    }
    Ok(DeviceDoc {
        hca_id: ctx.name().to_owned(),
        driver: ctx.driver().name().to_owned(),
        transport: transport_str(transport(ctx.node_type())),
        fw_ver: attr.fw_ver().to_owned(),
        node_guid: attr.node_guid().to_string(),
        sys_image_guid: attr.sys_image_guid().to_string(),
        vendor_id: b.vendor_id,
        vendor_part_id: b.vendor_part_id,
        hw_ver: b.hw_ver,
        board_id: ctx.board_id(),
        phys_port_cnt: b.phys_port_cnt,
        max_mr_size: b.max_mr_size,
        page_size_cap: b.page_size_cap,
        max_qp: b.max_qp,
        max_qp_wr: b.max_qp_wr,
        device_cap_flags: b.device_cap_flags,
        device_cap_flags_ex: attr.raw().device_cap_flags_ex,
        max_sge: b.max_sge,
        max_sge_rd: b.max_sge_rd,
        max_cq: b.max_cq,
        max_cqe: b.max_cqe,
        max_mr: b.max_mr,
        max_pd: b.max_pd,
        max_qp_rd_atom: b.max_qp_rd_atom,
        max_res_rd_atom: b.max_res_rd_atom,
        max_qp_init_rd_atom: b.max_qp_init_rd_atom,
        atomic_cap: atomic_cap_str(b.atomic_cap),
        max_mw: b.max_mw,
        max_mcast_grp: b.max_mcast_grp,
        max_mcast_qp_attach: b.max_mcast_qp_attach,
        max_total_mcast_qp_attach: b.max_total_mcast_qp_attach,
        max_ah: b.max_ah,
        max_srq: b.max_srq,
        max_srq_wr: b.max_srq_wr,
        max_srq_sge: b.max_srq_sge,
        max_pkeys: b.max_pkeys,
        local_ca_ack_delay: b.local_ca_ack_delay,
        num_comp_vectors: ctx.num_comp_vectors(),
        ports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--json`'s layout, as the writer before serde_json had it: two-space indentation, keys in
    /// field order, `null`, `[]`, escapes.
    #[test]
    fn pretty_json_layout() {
        #[derive(Serialize)]
        struct Doc {
            name: &'static str,
            ports: Vec<u8>,
            none: Option<u32>,
            empty: Vec<u8>,
            neg: i32,
            ok: bool,
        }
        let doc = Doc {
            name: "rx\"e\n0",
            ports: vec![1, 2],
            none: None,
            empty: vec![],
            neg: -3,
            ok: true,
        };
        assert_eq!(
            pretty(&doc),
            "{\n  \"name\": \"rx\\\"e\\n0\",\n  \"ports\": [\n    1,\n    2\n  ],\n  \"none\": null,\n  \"empty\": [],\n  \"neg\": -3,\n  \"ok\": true\n}"
        );
        assert_eq!(pretty(&Vec::<Doc>::new()), "[]");
    }

    fn ntop(s: &str) -> String {
        inet_ntop6(&s.parse::<std::net::Ipv6Addr>().unwrap().octets())
    }

    #[test]
    fn inet_ntop_matches_glibc() {
        assert_eq!(ntop("fe80::a00:27ff:fe58:ef89"), "fe80::a00:27ff:fe58:ef89");
        assert_eq!(ntop("::ffff:10.0.0.1"), "::ffff:10.0.0.1");
        assert_eq!(ntop("::ffff:0.0.0.0"), "::ffff:0.0.0.0");
        assert_eq!(ntop("2001:db8::1:0:0:1"), "2001:db8::1:0:0:1");
        assert_eq!(ntop("1:0:0:1::1"), "1:0:0:1::1");
        assert_eq!(ntop("::1"), "::1");
        assert_eq!(ntop("::"), "::");
        assert_eq!(ntop("1::"), "1::");
        assert_eq!(ntop("::10.0.0.1"), "::10.0.0.1");
        assert_eq!(ntop("0:0:0:0:0:0:1:0"), "::0.1.0.0");
        assert_eq!(ntop("1:2:3:4:5:6:7:8"), "1:2:3:4:5:6:7:8");
        assert_eq!(ntop("1:0:2:3:4:5:6:7"), "1:0:2:3:4:5:6:7");
    }

    #[test]
    fn gid_line_formats() {
        let mut raw = [0u8; 16];
        raw[0] = 0xfe;
        raw[1] = 0x80;
        raw[15] = 1;
        let mut g = GidEntry {
            gid: uverbs::Gid::from_bytes(raw),
            gid_index: 9,
            port_num: 1,
            gid_type: uverbs::IBV_GID_TYPE_ROCE_V1,
            ndev_ifindex: 1,
        };
        assert_eq!(
            format_gid_line(&g, true),
            "\t\t\tGID[  9]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001, RoCE v1\n"
        );
        g.gid_type = uverbs::IBV_GID_TYPE_ROCE_V2;
        assert_eq!(
            format_gid_line(&g, true),
            "\t\t\tGID[  9]:\t\tfe80::1, RoCE v2\n"
        );
        assert_eq!(format_gid_line(&g, false), "\t\t\tGID[  9]:\t\tfe80::1\n");
    }

    #[test]
    fn flags_and_unknown_bits() {
        let mut out = String::new();
        print_flags(&mut out, 0xffff_ffff, DEVICE_CAP_FLAGS, upper_hex);
        assert!(out.starts_with("\t\t\t\t\tRESIZE_MAX_WR\n"));
        assert!(
            out.ends_with("\t\t\t\t\tUnknown flags: 0xD8498000\n"),
            "{out}"
        );
        let mut out = String::new();
        odp_trans_caps(&mut out, "rc_odp_caps", 0xff);
        assert!(
            out.ends_with("SUPPORT_SRQ\n\t\t\t\t\tUnknown flags: 0xC0\n"),
            "{out}"
        );
    }

    #[test]
    fn lookup_tables() {
        assert_eq!(width_str(3), "invalid width");
        assert_eq!(speed_str(8), "10.0 Gbps");
        assert_eq!(phys_state_str(4), "PORT_CONFIGURATION TRAINNING");
        assert_eq!(port_state_str(5), "invalid state");
        assert_eq!(vl_str(5), "15");
        assert_eq!(transport(NodeType::Rnic), 1);
    }
}
