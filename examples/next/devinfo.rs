//! An `ibv_devinfo` on the `ibverbs` crate's main-branch API: every RDMA device with its name,
//! GUID, index and transport; then, opened, its attributes (`query_device`, read through the
//! `DeviceAttr`'s `Deref` to the verbs' own structure, and `query_device_ex`), each port's
//! (`query_port`: state, MTU, speed and width, link layer, physical state) and the GID table
//! (`gid_table`, with each entry's network device).
//!
//! Exits with status 1 when there is no device, or none that opens; otherwise prints
//! `devinfo: ok` last.
use uverbs::next as ibverbs;

use std::process::ExitCode;

fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let devices = ibverbs::devices()?;
    if devices.is_empty() {
        eprintln!("no RDMA devices found");
        return Ok(ExitCode::FAILURE);
    }

    let mut opened = 0;
    for device in &devices {
        let name = device
            .name()
            .map_or_else(|| "?".into(), |n| n.to_string_lossy().into_owned());
        println!("hca_id:\t{name}");
        println!("\ttransport:\t\t\t{:?}", device.transport_type());
        match device.guid() {
            Ok(guid) => println!("\tguid:\t\t\t\t{guid}"),
            Err(e) => println!("\tguid:\t\t\t\t(unknown: {e})"),
        }
        match device.index() {
            Ok(index) => println!("\tindex:\t\t\t\t{index}"),
            Err(e) => println!("\tindex:\t\t\t\t(unknown: {e})"),
        }

        let ctx = match device.open() {
            Ok(ctx) => ctx,
            Err(e) => {
                println!("\tcould not open the device: {e}");
                continue;
            }
        };
        opened += 1;
        print_device(&ctx)?;
        println!();
    }

    if opened == 0 {
        eprintln!("no RDMA device could be opened");
        return Ok(ExitCode::FAILURE);
    }
    println!("devinfo: ok");
    Ok(ExitCode::SUCCESS)
}

/// Everything an open device tells about itself and its ports.
fn print_device(ctx: &ibverbs::Context) -> ibverbs::Result<()> {
    let attr = ctx.query_device()?;
    println!("\tfw_ver:\t\t\t\t{}", attr.fw_ver());
    println!("\tnode_guid:\t\t\t{}", attr.node_guid());
    println!("\tsys_image_guid:\t\t\t{}", attr.sys_image_guid());
    // The rest through `Deref`, as the verbs' own structure has them.
    println!("\tvendor_id:\t\t\t{:#06x}", attr.vendor_id);
    println!("\tvendor_part_id:\t\t\t{}", attr.vendor_part_id);
    println!("\thw_ver:\t\t\t\t{:#x}", attr.hw_ver);
    println!("\tphys_port_cnt:\t\t\t{}", attr.phys_port_cnt);
    println!("\tmax_mr_size:\t\t\t{:#x}", attr.max_mr_size);
    println!("\tpage_size_cap:\t\t\t{:#x}", attr.page_size_cap);
    println!("\tmax_qp:\t\t\t\t{}", attr.max_qp);
    println!("\tmax_qp_wr:\t\t\t{}", attr.max_qp_wr);
    println!("\tdevice_cap_flags:\t\t{:#010x}", attr.device_cap_flags);
    println!("\tmax_sge:\t\t\t{}", attr.max_sge);
    println!("\tmax_sge_rd:\t\t\t{}", attr.max_sge_rd);
    println!("\tmax_cq:\t\t\t\t{}", attr.max_cq);
    println!("\tmax_cqe:\t\t\t{}", attr.max_cqe);
    println!("\tmax_mr:\t\t\t\t{}", attr.max_mr);
    println!("\tmax_pd:\t\t\t\t{}", attr.max_pd);
    println!("\tmax_qp_rd_atom:\t\t\t{}", attr.max_qp_rd_atom);
    println!("\tmax_qp_init_rd_atom:\t\t{}", attr.max_qp_init_rd_atom);
    println!("\tmax_res_rd_atom:\t\t{}", attr.max_res_rd_atom);
    println!("\tatomic_cap:\t\t\t{:?}", attr.atomic_cap);
    println!("\tmax_mw:\t\t\t\t{}", attr.max_mw);
    println!("\tmax_mcast_grp:\t\t\t{}", attr.max_mcast_grp);
    println!("\tmax_ah:\t\t\t\t{}", attr.max_ah);
    println!("\tmax_srq:\t\t\t{}", attr.max_srq);
    println!("\tmax_srq_wr:\t\t\t{}", attr.max_srq_wr);
    println!("\tmax_srq_sge:\t\t\t{}", attr.max_srq_sge);
    println!("\tmax_pkeys:\t\t\t{}", attr.max_pkeys);
    println!("\tlocal_ca_ack_delay:\t\t{}", attr.local_ca_ack_delay);
    println!("\tnum_comp_vectors:\t\t{}", ctx.num_comp_vectors());

    match ctx.query_device_ex() {
        Ok(ex) => {
            println!(
                "\tcompletion_timestamp_mask:\t{:#x}",
                ex.completion_timestamp_mask()
            );
            println!("\thca_core_clock:\t\t\t{} kHz", ex.hca_core_clock_khz());
            let atomics = ex.pci_atomic_caps();
            println!(
                "\tpci_atomic_caps:\t\tfetch_add {:#x}, swap {:#x}, compare_swap {:#x}",
                atomics.fetch_add, atomics.swap, atomics.compare_swap
            );
            let pacing = ex.packet_pacing_caps();
            println!(
                "\tpacket_pacing_caps:\t\t{}..{} kbps, QP types {:#x}",
                pacing.qp_rate_limit_min, pacing.qp_rate_limit_max, pacing.supported_qpts
            );
            println!("\traw_packet_caps:\t\t{:#x}", ex.raw_packet_caps());
            println!("\tmax_device_memory:\t\t{}", ex.max_device_memory());
            // Through `Deref` too, and the base attributes again, as `orig`.
            println!("\tdevice_cap_flags_ex:\t\t{:#x}", ex.device_cap_flags_ex);
            println!("\tphys_port_cnt_ex:\t\t{}", ex.phys_port_cnt_ex);
            assert_eq!(ex.orig().max_qp, attr.max_qp, "query_device_ex's max_qp");
        }
        Err(ibverbs::Error::Unsupported) => {
            println!("\t(no extended device attributes: the device does not support the query)")
        }
        Err(e) => return Err(e),
    }
    match ctx.query_rt_values_ex() {
        Ok(clock) => println!("\traw_clock:\t\t\t{clock:?}"),
        Err(ibverbs::Error::Unsupported) => println!("\traw_clock:\t\t\t(not supported)"),
        Err(e) => return Err(e),
    }

    let gids = ctx.gid_table()?;
    for port in 1..=attr.phys_port_cnt {
        let p = ctx.query_port(port)?;
        println!("\t\tport:\t{port}");
        println!("\t\t\tstate:\t\t\t{:?}", p.state());
        println!("\t\t\tmax_mtu:\t\t{:?}", p.max_mtu());
        println!("\t\t\tactive_mtu:\t\t{:?}", p.active_mtu());
        let (speed, width) = (p.active_speed(), p.active_width());
        match (speed.lane_gbps(), width.lanes()) {
            (Some(gbps), Some(lanes)) => println!(
                "\t\t\tactive_speed:\t\t{speed} x {width} ({:.1} Gb/s)",
                gbps * f64::from(lanes)
            ),
            _ => println!("\t\t\tactive_speed:\t\t{speed} x {width}"),
        }
        println!("\t\t\tphys_state:\t\t{}", p.phys_state());
        println!("\t\t\tlink_layer:\t\t{}", p.link_layer());
        // Through `Deref`.
        println!("\t\t\tsm_lid:\t\t\t{}", p.sm_lid);
        println!("\t\t\tport_lid:\t\t{}", p.lid);
        println!("\t\t\tport_lmc:\t\t{:#04x}", p.lmc);
        println!("\t\t\tmax_msg_sz:\t\t{:#x}", p.max_msg_sz);
        println!("\t\t\tport_cap_flags:\t\t{:#010x}", p.port_cap_flags);
        println!("\t\t\tmax_vl_num:\t\t{}", p.max_vl_num);
        println!("\t\t\tpkey_tbl_len:\t\t{}", p.pkey_tbl_len);
        println!("\t\t\tgid_tbl_len:\t\t{}", p.gid_tbl_len);
        for entry in gids.iter().filter(|e| e.port_num == u32::from(port)) {
            let netdev = entry.netdev_name();
            println!(
                "\t\t\tGID[{:3}]:\t\t{}, {:?}, {}",
                entry.gid_index,
                entry.gid,
                entry.gid_type,
                netdev.as_deref().unwrap_or("(no network device)")
            );
        }
    }
    Ok(())
}
