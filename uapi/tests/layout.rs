//! Checks every struct layout and constant value of `uverbs-uapi` against the C headers.
//!
//! One table (the `layout!` invocation at the bottom) drives both sides: for each entry the macro
//! computes the Rust value (`size_of`, `align_of`, `offset_of!`, field sizes, constant values) and
//! the matching C expression (`sizeof`, `_Alignof`, `offsetof`, `sizeof(((T *)0)->path)`, the C
//! constant). The C expressions are compiled into a program against `/usr/include/rdma` (the 6.1
//! uapi headers of `linux-libc-dev`), whose output is compared line by line with the Rust values.
//!
//! Table syntax, per struct:
//! * `struct NAME { f1, f2, .. }` (or `struct NAME as union { .. }` for a C union): fields whose C
//!   path equals the Rust field name (offset and size checked); explicit `_pad` fields are not listed.
//! * `alias { "c.path" => (rust_field, extra_offset, size) }`: C members that have no Rust field of
//!   their own (members of unions stored as a single field).
//! * `views { "c.path" at rust_field: ViewType { f1, .. } }`: a C union member / anonymous struct
//!   modelled by a separate Rust type stored in (or read from) `rust_field`; checks the view's size and
//!   each view field at `offset_of!(NAME, rust_field) + offset_of!(ViewType, f)`.
//! * `flex { "c_member" }`: omitted flexible array members, which must start at `size_of::<NAME>()`.
//!
//! Constants: `consts { NAME, .. }` compares `NAME as i128` with the C constant; `exprs` compares a
//! Rust expression with a C expression (for values the headers only define indirectly).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use uverbs_uapi::*;
use zerocopy::IntoBytes;

/// One value computed on both sides.
struct Check {
    /// Line key, e.g. `off ib_uverbs_attr.data`.
    key: String,
    /// The Rust-side value.
    rust: i128,
    /// The C expression printing the same quantity.
    c_expr: String,
}

/// Everything the table produced.
struct Table {
    checks: Vec<Check>,
    structs: usize,
    consts: usize,
}

fn c_field(name: &str) -> &str {
    name.trim_start_matches("r#")
}

fn join(prefix: &str, field: &str) -> String {
    if prefix.is_empty() {
        c_field(field).to_string()
    } else {
        format!("{prefix}.{}", c_field(field))
    }
}

impl Table {
    fn push(&mut self, key: String, rust: usize, c_expr: String) {
        self.checks.push(Check {
            key,
            rust: rust as i128,
            c_expr,
        });
    }

    fn size(&mut self, ctype: &str, name: &str, size: usize, align: usize) {
        self.structs += 1;
        self.push(format!("size {name}"), size, format!("sizeof({ctype})"));
        self.push(format!("align {name}"), align, format!("_Alignof({ctype})"));
    }

    fn member(&mut self, ctype: &str, name: &str, path: &str, off: usize, size: Option<usize>) {
        self.push(
            format!("off {name}.{path}"),
            off,
            format!("offsetof({ctype}, {path})"),
        );
        if let Some(size) = size {
            self.push(
                format!("fsize {name}.{path}"),
                size,
                format!("sizeof((({ctype} *)0)->{path})"),
            );
        }
    }

    fn constant(&mut self, name: &str, value: i128, c_expr: &str) {
        self.consts += 1;
        self.checks.push(Check {
            key: format!("const {name}"),
            rust: value,
            c_expr: c_expr.to_string(),
        });
    }
}

/// Size of field `$f` of a value of type `$t` (every type here implements `Default`).
macro_rules! field_size {
    ($t:ident, $f:ident) => {{
        let v = <$t as Default>::default();
        core::mem::size_of_val(&v.$f)
    }};
}

macro_rules! layout {
    (
        structs {
            $(
                struct $name:ident $(as $kind:ident)? { $($f:ident),* $(,)? }
                $( alias { $($apath:literal => ($afield:ident, $aadd:expr, $asize:expr)),* $(,)? } )?
                $( views { $($vpath:literal at $vfield:ident : $vty:ident { $($vf:ident),* $(,)? }),* $(,)? } )?
                $( flex { $($flex:literal),* $(,)? } )?
            )*
        }
        consts { $($c:ident),* $(,)? }
        exprs { $($ename:literal => ($rexpr:expr, $cexpr:literal)),* $(,)? }
    ) => {
        fn table() -> Table {
            let mut t = Table { checks: Vec::new(), structs: 0, consts: 0 };
            $(
                {
                    let kind = concat!("" $(, stringify!($kind))?);
                    let kind = if kind.is_empty() { "struct" } else { kind };
                    let name = stringify!($name);
                    let ctype = format!("{kind} {name}");
                    t.size(&ctype, name, core::mem::size_of::<$name>(), core::mem::align_of::<$name>());
                    $(
                        t.member(&ctype, name, c_field(stringify!($f)),
                            core::mem::offset_of!($name, $f), Some(field_size!($name, $f)));
                    )*
                    $($(
                        t.member(&ctype, name, $apath,
                            core::mem::offset_of!($name, $afield) + $aadd, Some($asize));
                    )*)?
                    $($(
                        {
                            let base = core::mem::offset_of!($name, $vfield);
                            let prefix: &str = $vpath;
                            // A view stored in a field of its own type is already checked as a field.
                            if !prefix.is_empty() && prefix != stringify!($vfield) {
                                t.member(&ctype, name, prefix, base, Some(core::mem::size_of::<$vty>()));
                            }
                            $(
                                t.member(&ctype, name, &join(prefix, stringify!($vf)),
                                    base + core::mem::offset_of!($vty, $vf), Some(field_size!($vty, $vf)));
                            )*
                        }
                    )*)?
                    $($(
                        // Flexible arrays have no sizeof; they start right after the fixed part.
                        t.member(&ctype, name, $flex, core::mem::size_of::<$name>(), None);
                    )*)?
                }
            )*
            $( t.constant(stringify!($c), $c as i128, stringify!($c)); )*
            $( t.constant($ename, $rexpr as i128, $cexpr); )*
            t
        }
    };
}

const HEADERS: &[&str] = &[
    "stddef.h",
    "stdio.h",
    "linux/netlink.h",
    "rdma/rdma_user_ioctl_cmds.h",
    "rdma/ib_user_ioctl_cmds.h",
    "rdma/ib_user_ioctl_verbs.h",
    "rdma/ib_user_verbs.h",
    "rdma/rdma_user_rxe.h",
    "rdma/mlx5-abi.h",
    "rdma/mlx5_user_ioctl_cmds.h",
    "rdma/mlx5_user_ioctl_verbs.h",
    "rdma/rdma_netlink.h",
    "rdma/rdma_user_cm.h",
];

const INSTALL_HINT: &str = "the layout test needs a C compiler and the Linux uapi headers \
     (/usr/include/rdma/*.h): install gcc and linux-libc-dev (Debian/Ubuntu: \
     `apt-get install gcc linux-libc-dev`), or point CC at a compiler";

fn c_program(checks: &[Check]) -> String {
    let mut src = String::new();
    for h in HEADERS {
        writeln!(src, "#include <{h}>").unwrap();
    }
    src.push_str("\nint main(void)\n{\n");
    for c in checks {
        writeln!(
            src,
            "\tprintf(\"{} %lld\\n\", (long long)({}));",
            c.key, c.c_expr
        )
        .unwrap();
    }
    src.push_str("\treturn 0;\n}\n");
    src
}

/// Compiles and runs the C side; returns its `key value` lines as a map.
fn run_c(checks: &[Check]) -> BTreeMap<String, i128> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("uapi-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, c_program(checks)).expect("write layout.c");

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut words = cc.split_whitespace();
    let prog = words.next().unwrap_or("cc");
    let out = Command::new(prog)
        .args(words)
        .args(["-std=gnu11", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run C compiler `{cc}`: {e}\n{INSTALL_HINT}"));
    assert!(
        out.status.success(),
        "C compiler `{cc}` failed on {}:\n{}\n{INSTALL_HINT}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe)
        .output()
        .expect("run compiled layout program");
    assert!(
        run.status.success(),
        "layout program failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);

    let mut map = BTreeMap::new();
    for line in String::from_utf8(run.stdout).expect("utf-8 output").lines() {
        let (key, value) = line.rsplit_once(' ').expect("`key value` line");
        map.insert(
            key.to_string(),
            value.parse::<i128>().expect("numeric value"),
        );
    }
    map
}

#[test]
fn layout_matches_c_headers() {
    let t = table();
    // The exact sizes of the table: an entry lost (a struct, a constant, a field of a struct) fails
    // here rather than passing unchecked. Adding entries means updating these figures (and the
    // README's, which quotes the first two).
    assert_eq!(t.structs, 212, "structs in the table");
    assert_eq!(t.consts, 850, "constants in the table");
    assert_eq!(t.checks.len(), 3552, "checks in the table");

    let mut seen = std::collections::BTreeSet::new();
    for c in &t.checks {
        assert!(seen.insert(&c.key), "duplicate table entry `{}`", c.key);
    }

    let c = run_c(&t.checks);
    let mut bad = Vec::new();
    for check in &t.checks {
        match c.get(&check.key) {
            Some(&v) if v == check.rust => {}
            Some(&v) => bad.push(format!(
                "{}: Rust {} != C {} (C: {})",
                check.key, check.rust, v, check.c_expr
            )),
            None => bad.push(format!("{}: missing from the C output", check.key)),
        }
    }
    if !bad.is_empty() {
        for b in &bad {
            eprintln!("MISMATCH {b}");
        }
        panic!(
            "{} of {} layout/constant checks differ from the C headers (listed above)",
            bad.len(),
            t.checks.len()
        );
    }
    eprintln!(
        "{} structs, {} constants, {} checks: all match",
        t.structs,
        t.consts,
        t.checks.len()
    );
}

/// Constants that exist only in newer headers are outside the C check; pin their values here.
#[test]
fn constants_not_in_the_6_1_headers() {
    assert_eq!(UVERBS_ID_DRIVER_NS, UVERBS_UDATA_DRIVER_DATA_FLAG);
    assert_eq!(UVERBS_ID_DRIVER_NS_WITH_UHW, 0x1002);
    assert_eq!(IB_USER_LEGACY_LAST_QP_ATTR_MASK, 1 << 20);
    assert_eq!(IB_USER_LAST_QP_ATTR_MASK, 1 << 25);
}

/// The union accessors read and write the bytes the C union members occupy.
#[test]
fn union_accessors_round_trip() {
    let mut a = ib_uverbs_attr::default();
    a.set_enum_elem_id(3);
    assert_eq!(a.enum_elem_id(), 3);
    assert_eq!(a.as_bytes()[6..8], [3, 0]);
    a.set_data_s64(-1);
    assert_eq!(a.data, u64::MAX);
    assert_eq!(a.data_s64(), -1);

    let mut wr = rxe_send_wr::default();
    let mut ud = rxe_send_wr_ud {
        remote_qpn: 0x11,
        remote_qkey: 0x22,
        ah_num: 7,
        ..Default::default()
    };
    ud.av.port_num = 1;
    ud.av.set_dgid_addr_in6(&sockaddr_in6 {
        sin6_family: 10,
        sin6_scope_id: 9,
        ..Default::default()
    });
    wr.set_ud(&ud);
    assert_eq!(wr.ud(), ud);
    assert_eq!(wr.ud().av.dgid_addr_in6().sin6_scope_id, 9);
    // wr.ud.ah_num is at offset 36 of struct rxe_send_wr (checked against C by the layout test).
    assert_eq!(wr.as_bytes()[36..40], 7u32.to_ne_bytes());
    let rdma = rxe_send_wr_rdma {
        remote_addr: 0x1234,
        rkey: 5,
        reserved: 0,
    };
    wr.set_rdma(&rdma);
    assert_eq!(wr.rdma(), rdma);
    assert!(wr.wr[core::mem::size_of::<rxe_send_wr_rdma>()..]
        .iter()
        .all(|&b| b == 0));
    let mw = rxe_send_wr_mw {
        addr: 1,
        length: 2,
        mr_lkey: 3,
        mw_rkey: 4,
        rkey: 5,
        access: 6,
    };
    wr.set_mw(&mw);
    assert_eq!(wr.mw(), mw);
    let atomic = rxe_send_wr_atomic {
        remote_addr: 8,
        compare_add: 9,
        swap: 10,
        rkey: 11,
        reserved: 0,
    };
    wr.set_atomic(&atomic);
    assert_eq!(wr.atomic(), atomic);

    let mut swr = ib_uverbs_send_wr::default();
    let sud = ib_uverbs_send_wr_ud {
        ah: 1,
        remote_qpn: 2,
        remote_qkey: 3,
        reserved: 0,
    };
    swr.set_ud(&sud);
    assert_eq!(swr.ud(), sud);
    let srdma = ib_uverbs_send_wr_rdma {
        remote_addr: 4,
        rkey: 5,
        reserved: 0,
    };
    swr.set_rdma(&srdma);
    assert_eq!(swr.rdma(), srdma);
    let satomic = ib_uverbs_send_wr_atomic {
        remote_addr: 1,
        compare_add: 2,
        swap: 3,
        rkey: 4,
        reserved: 0,
    };
    swr.set_atomic(&satomic);
    assert_eq!(swr.atomic(), satomic);

    let mut raw = [0u8; 16];
    raw.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    let gid = rxe_gid { raw };
    assert_eq!(gid.subnet_prefix().to_ne_bytes(), raw[..8]);
    assert_eq!(gid.interface_id().to_ne_bytes(), raw[8..]);

    let mut av = rxe_av::default();
    av.set_sgid_addr_in(&sockaddr_in {
        sin_family: 2,
        sin_port: 0x1234,
        sin_addr: 0x0100_007f,
        __pad: [0; 8],
    });
    assert_eq!(av.sgid_addr_in().sin_addr, 0x0100_007f);

    let mut qp = mlx5_ib_create_qp::default();
    qp.set_access_key(0xabc);
    assert_eq!((qp.access_key(), qp.sq_buf_addr), (0xabc, 0xabc));
}

layout! {
    structs {
        struct ib_uverbs_attr { attr_id, len, flags, attr_data, data }
            alias {
                "attr_data.enum_data" => (attr_data, 0, 2),
                "attr_data.enum_data.elem_id" => (attr_data, 0, 1),
                "attr_data.enum_data.reserved" => (attr_data, 1, 1),
                "attr_data.reserved" => (attr_data, 0, 2),
                "data_s64" => (data, 0, 8),
            }
        struct ib_uverbs_ioctl_hdr {
            length, object_id, method_id, num_attrs, reserved1, driver_id, reserved2,
        }
            flex { "attrs" }
        struct ib_uverbs_flow_action_esp_keymat_aes_gcm {
            iv, iv_algo, salt, icv_len, key_len, aes_key,
        }
        struct ib_uverbs_flow_action_esp_replay_bmp { size }
        struct ib_uverbs_flow_action_esp_encap { val_ptr, next_ptr, len, r#type }
        struct ib_uverbs_flow_action_esp { spi, seq, tfc_pad, flags, hard_limit_pkts }
        struct ib_uverbs_query_port_resp_ex { legacy_resp, port_cap_flags2, reserved }
        struct ib_uverbs_qp_cap {
            max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data,
        }
        struct ib_uverbs_gid_entry { gid, gid_index, port_num, gid_type, netdev_ifindex }
        struct ib_uverbs_async_event_desc { element, event_type, reserved }
        struct ib_uverbs_comp_event_desc { cq_handle }
        struct ib_uverbs_cq_moderation_caps {
            max_cq_moderation_count, max_cq_moderation_period, reserved,
        }
        struct ib_uverbs_cmd_hdr { command, in_words, out_words }
        struct ib_uverbs_ex_cmd_hdr {
            response, provider_in_words, provider_out_words, cmd_hdr_reserved,
        }
        struct ib_uverbs_get_context { response }
            flex { "driver_data" }
        struct ib_uverbs_get_context_resp { async_fd, num_comp_vectors }
            flex { "driver_data" }
        struct ib_uverbs_query_device { response }
            flex { "driver_data" }
        struct ib_uverbs_query_device_resp {
            fw_ver, node_guid, sys_image_guid, max_mr_size, page_size_cap, vendor_id,
            vendor_part_id, hw_ver, max_qp, max_qp_wr, device_cap_flags, max_sge, max_sge_rd,
            max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom, max_ee_rd_atom, max_res_rd_atom,
            max_qp_init_rd_atom, max_ee_init_rd_atom, atomic_cap, max_ee, max_rdd, max_mw,
            max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp, max_mcast_qp_attach,
            max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr,
            max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt, reserved,
        }
        struct ib_uverbs_ex_query_device { comp_mask, reserved }
        struct ib_uverbs_odp_caps { general_caps, per_transport_caps, reserved }
            views {
                "per_transport_caps" at per_transport_caps: ib_uverbs_odp_caps_per_transport_caps { rc_odp_caps, uc_odp_caps, ud_odp_caps },
            }
        struct ib_uverbs_rss_caps {
            supported_qpts, max_rwq_indirection_tables, max_rwq_indirection_table_size, reserved,
        }
        struct ib_uverbs_tm_caps {
            max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge, reserved,
        }
        struct ib_uverbs_ex_query_device_resp {
            base, comp_mask, response_length, odp_caps, timestamp_mask, hca_core_clock,
            device_cap_flags_ex, rss_caps, max_wq_type_rq, raw_packet_caps, tm_caps,
            cq_moderation_caps, max_dm_size, xrc_odp_caps, reserved,
        }
        struct ib_uverbs_query_port { response, port_num, reserved }
            flex { "driver_data" }
        struct ib_uverbs_query_port_resp {
            port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr, gid_tbl_len, pkey_tbl_len,
            lid, sm_lid, state, max_mtu, active_mtu, lmc, max_vl_num, sm_sl, subnet_timeout,
            init_type_reply, active_width, active_speed, phys_state, link_layer, flags, reserved,
        }
        struct ib_uverbs_alloc_pd { response }
            flex { "driver_data" }
        struct ib_uverbs_alloc_pd_resp { pd_handle }
            flex { "driver_data" }
        struct ib_uverbs_dealloc_pd { pd_handle }
        struct ib_uverbs_open_xrcd { response, fd, oflags }
            flex { "driver_data" }
        struct ib_uverbs_open_xrcd_resp { xrcd_handle }
            flex { "driver_data" }
        struct ib_uverbs_close_xrcd { xrcd_handle }
        struct ib_uverbs_reg_mr { response, start, length, hca_va, pd_handle, access_flags }
            flex { "driver_data" }
        struct ib_uverbs_reg_mr_resp { mr_handle, lkey, rkey }
            flex { "driver_data" }
        struct ib_uverbs_rereg_mr {
            response, mr_handle, flags, start, length, hca_va, pd_handle, access_flags,
        }
            flex { "driver_data" }
        struct ib_uverbs_rereg_mr_resp { lkey, rkey }
            flex { "driver_data" }
        struct ib_uverbs_dereg_mr { mr_handle }
        struct ib_uverbs_alloc_mw { response, pd_handle, mw_type, reserved }
            flex { "driver_data" }
        struct ib_uverbs_alloc_mw_resp { mw_handle, rkey }
            flex { "driver_data" }
        struct ib_uverbs_dealloc_mw { mw_handle }
        struct ib_uverbs_create_comp_channel { response }
        struct ib_uverbs_create_comp_channel_resp { fd }
        struct ib_uverbs_create_cq {
            response, user_handle, cqe, comp_vector, comp_channel, reserved,
        }
            flex { "driver_data" }
        struct ib_uverbs_ex_create_cq {
            user_handle, cqe, comp_vector, comp_channel, comp_mask, flags, reserved,
        }
        struct ib_uverbs_create_cq_resp { cq_handle, cqe }
            flex { "driver_data" }
        struct ib_uverbs_ex_create_cq_resp { base, comp_mask, response_length }
        struct ib_uverbs_resize_cq { response, cq_handle, cqe }
            flex { "driver_data" }
        struct ib_uverbs_resize_cq_resp { cqe, reserved }
            flex { "driver_data" }
        struct ib_uverbs_poll_cq { response, cq_handle, ne }
        struct ib_uverbs_wc {
            wr_id, status, opcode, vendor_err, byte_len, ex, qp_num, src_qp, wc_flags, pkey_index,
            slid, sl, dlid_path_bits, port_num, reserved,
        }
            alias {
                "ex.imm_data" => (ex, 0, 4),
                "ex.invalidate_rkey" => (ex, 0, 4),
            }
        struct ib_uverbs_poll_cq_resp { count, reserved }
            flex { "wc" }
        struct ib_uverbs_req_notify_cq { cq_handle, solicited_only }
        struct ib_uverbs_destroy_cq { response, cq_handle, reserved }
        struct ib_uverbs_destroy_cq_resp { comp_events_reported, async_events_reported }
        struct ib_uverbs_global_route {
            dgid, flow_label, sgid_index, hop_limit, traffic_class, reserved,
        }
        struct ib_uverbs_ah_attr {
            grh, dlid, sl, src_path_bits, static_rate, is_global, port_num, reserved,
        }
        struct ib_uverbs_qp_attr {
            qp_attr_mask, qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn,
            dest_qp_num, qp_access_flags, ah_attr, alt_ah_attr, max_send_wr, max_recv_wr,
            max_send_sge, max_recv_sge, max_inline_data, pkey_index, alt_pkey_index,
            en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer,
            port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved,
        }
        struct ib_uverbs_create_qp {
            response, user_handle, pd_handle, send_cq_handle, recv_cq_handle, srq_handle,
            max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, sq_sig_all,
            qp_type, is_srq, reserved,
        }
            flex { "driver_data" }
        struct ib_uverbs_ex_create_qp {
            user_handle, pd_handle, send_cq_handle, recv_cq_handle, srq_handle, max_send_wr,
            max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, sq_sig_all, qp_type, is_srq,
            reserved, comp_mask, create_flags, rwq_ind_tbl_handle, source_qpn,
        }
        struct ib_uverbs_open_qp { response, user_handle, pd_handle, qpn, qp_type, reserved }
            flex { "driver_data" }
        struct ib_uverbs_create_qp_resp {
            qp_handle, qpn, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data,
            reserved,
        }
            flex { "driver_data" }
        struct ib_uverbs_ex_create_qp_resp { base, comp_mask, response_length }
        struct ib_uverbs_qp_dest {
            dgid, flow_label, dlid, reserved, sgid_index, hop_limit, traffic_class, sl,
            src_path_bits, static_rate, is_global, port_num,
        }
        struct ib_uverbs_query_qp { response, qp_handle, attr_mask }
            flex { "driver_data" }
        struct ib_uverbs_query_qp_resp {
            dest, alt_dest, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data,
            qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags, pkey_index, alt_pkey_index,
            qp_state, cur_qp_state, path_mtu, path_mig_state, sq_draining, max_rd_atomic,
            max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry,
            alt_port_num, alt_timeout, sq_sig_all, reserved,
        }
            flex { "driver_data" }
        struct ib_uverbs_modify_qp {
            dest, alt_dest, qp_handle, attr_mask, qkey, rq_psn, sq_psn, dest_qp_num,
            qp_access_flags, pkey_index, alt_pkey_index, qp_state, cur_qp_state, path_mtu,
            path_mig_state, en_sqd_async_notify, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer,
            port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved,
        }
            flex { "driver_data" }
        struct ib_uverbs_ex_modify_qp { base, rate_limit, reserved }
        struct ib_uverbs_ex_modify_qp_resp { comp_mask, response_length }
        struct ib_uverbs_destroy_qp { response, qp_handle, reserved }
        struct ib_uverbs_destroy_qp_resp { events_reported }
        struct ib_uverbs_sge { addr, length, lkey }
        struct ib_uverbs_send_wr { wr_id, num_sge, opcode, send_flags, ex, wr }
            alias {
                "ex.imm_data" => (ex, 0, 4),
                "ex.invalidate_rkey" => (ex, 0, 4),
            }
            views {
                "wr.rdma" at wr: ib_uverbs_send_wr_rdma { remote_addr, rkey, reserved },
                "wr.atomic" at wr: ib_uverbs_send_wr_atomic { remote_addr, compare_add, swap, rkey, reserved },
                "wr.ud" at wr: ib_uverbs_send_wr_ud { ah, remote_qpn, remote_qkey, reserved },
            }
        struct ib_uverbs_post_send { response, qp_handle, wr_count, sge_count, wqe_size }
            flex { "send_wr" }
        struct ib_uverbs_post_send_resp { bad_wr }
        struct ib_uverbs_recv_wr { wr_id, num_sge, reserved }
        struct ib_uverbs_post_recv { response, qp_handle, wr_count, sge_count, wqe_size }
            flex { "recv_wr" }
        struct ib_uverbs_post_recv_resp { bad_wr }
        struct ib_uverbs_post_srq_recv { response, srq_handle, wr_count, sge_count, wqe_size }
            flex { "recv" }
        struct ib_uverbs_post_srq_recv_resp { bad_wr }
        struct ib_uverbs_create_ah { response, user_handle, pd_handle, reserved, attr }
            flex { "driver_data" }
        struct ib_uverbs_create_ah_resp { ah_handle }
            flex { "driver_data" }
        struct ib_uverbs_destroy_ah { ah_handle }
        struct ib_uverbs_attach_mcast { gid, qp_handle, mlid, reserved }
            flex { "driver_data" }
        struct ib_uverbs_detach_mcast { gid, qp_handle, mlid, reserved }
            flex { "driver_data" }
        struct ib_uverbs_flow_spec_hdr { r#type, size, reserved }
            flex { "flow_spec_data" }
        struct ib_uverbs_flow_eth_filter { dst_mac, src_mac, ether_type, vlan_tag }
        struct ib_uverbs_flow_spec_eth { hdr, val, mask }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_ipv4_filter { src_ip, dst_ip, proto, tos, ttl, flags }
        struct ib_uverbs_flow_spec_ipv4 { hdr, val, mask }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_tcp_udp_filter { dst_port, src_port }
        struct ib_uverbs_flow_spec_tcp_udp { hdr, val, mask }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_ipv6_filter {
            src_ip, dst_ip, flow_label, next_hdr, traffic_class, hop_limit, reserved,
        }
        struct ib_uverbs_flow_spec_ipv6 { hdr, val, mask }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_spec_action_tag { hdr, tag_id, reserved1 }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_spec_action_drop { hdr }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_spec_action_handle { hdr, handle, reserved1 }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_spec_action_count { hdr, handle, reserved1 }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_tunnel_filter { tunnel_id }
        struct ib_uverbs_flow_spec_tunnel { hdr, val, mask }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_spec_esp_filter { spi, seq }
        struct ib_uverbs_flow_spec_esp { hdr, val, mask }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_gre_filter { c_ks_res0_ver, protocol, key }
        struct ib_uverbs_flow_spec_gre { hdr, val, mask }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_mpls_filter { label }
        struct ib_uverbs_flow_spec_mpls { hdr, val, mask }
            views {
                "" at hdr: ib_uverbs_flow_spec_hdr { r#type, size, reserved },
            }
        struct ib_uverbs_flow_attr { r#type, size, priority, num_of_specs, reserved, port, flags }
            flex { "flow_specs" }
        struct ib_uverbs_create_flow { comp_mask, qp_handle, flow_attr }
        struct ib_uverbs_create_flow_resp { comp_mask, flow_handle }
        struct ib_uverbs_destroy_flow { comp_mask, flow_handle }
        struct ib_uverbs_create_srq { response, user_handle, pd_handle, max_wr, max_sge, srq_limit }
            flex { "driver_data" }
        struct ib_uverbs_create_xsrq {
            response, user_handle, srq_type, pd_handle, max_wr, max_sge, srq_limit, max_num_tags,
            xrcd_handle, cq_handle,
        }
            flex { "driver_data" }
        struct ib_uverbs_create_srq_resp { srq_handle, max_wr, max_sge, srqn }
            flex { "driver_data" }
        struct ib_uverbs_modify_srq { srq_handle, attr_mask, max_wr, srq_limit }
            flex { "driver_data" }
        struct ib_uverbs_query_srq { response, srq_handle, reserved }
            flex { "driver_data" }
        struct ib_uverbs_query_srq_resp { max_wr, max_sge, srq_limit, reserved }
        struct ib_uverbs_destroy_srq { response, srq_handle, reserved }
        struct ib_uverbs_destroy_srq_resp { events_reported }
        struct ib_uverbs_ex_create_wq {
            comp_mask, wq_type, user_handle, pd_handle, cq_handle, max_wr, max_sge, create_flags,
            reserved,
        }
        struct ib_uverbs_ex_create_wq_resp {
            comp_mask, response_length, wq_handle, max_wr, max_sge, wqn,
        }
        struct ib_uverbs_ex_destroy_wq { comp_mask, wq_handle }
        struct ib_uverbs_ex_destroy_wq_resp {
            comp_mask, response_length, events_reported, reserved,
        }
        struct ib_uverbs_ex_modify_wq {
            attr_mask, wq_handle, wq_state, curr_wq_state, flags, flags_mask,
        }
        struct ib_uverbs_ex_create_rwq_ind_table { comp_mask, log_ind_tbl_size }
            flex { "wq_handles" }
        struct ib_uverbs_ex_create_rwq_ind_table_resp {
            comp_mask, response_length, ind_tbl_handle, ind_tbl_num,
        }
        struct ib_uverbs_ex_destroy_rwq_ind_table { comp_mask, ind_tbl_handle }
        struct ib_uverbs_cq_moderation { cq_count, cq_period }
        struct ib_uverbs_ex_modify_cq { cq_handle, attr_mask, attr, reserved }
        struct rxe_gid as union { raw }
            alias {
                "global" => (raw, 0, 16),
                "global.subnet_prefix" => (raw, 0, 8),
                "global.interface_id" => (raw, 8, 8),
            }
        struct rxe_global_route { dgid, flow_label, sgid_index, hop_limit, traffic_class }
        struct rxe_av { port_num, network_type, dmac, grh, sgid_addr, dgid_addr }
            views {
                "sgid_addr._sockaddr_in" at sgid_addr: sockaddr_in { sin_family, sin_port, sin_addr, __pad },
                "sgid_addr._sockaddr_in6" at sgid_addr: sockaddr_in6 { sin6_family, sin6_port, sin6_flowinfo, sin6_addr, sin6_scope_id },
                "dgid_addr._sockaddr_in" at dgid_addr: sockaddr_in { sin_family, sin_port, sin_addr, __pad },
                "dgid_addr._sockaddr_in6" at dgid_addr: sockaddr_in6 { sin6_family, sin6_port, sin6_flowinfo, sin6_addr, sin6_scope_id },
            }
        struct rxe_send_wr { wr_id, reserved, opcode, send_flags, ex, wr }
            alias {
                "ex.imm_data" => (ex, 0, 4),
                "ex.invalidate_rkey" => (ex, 0, 4),
            }
            views {
                "wr.rdma" at wr: rxe_send_wr_rdma { remote_addr, rkey, reserved },
                "wr.atomic" at wr: rxe_send_wr_atomic { remote_addr, compare_add, swap, rkey, reserved },
                "wr.ud" at wr: rxe_send_wr_ud { remote_qpn, remote_qkey, pkey_index, reserved, ah_num, pad, av },
                "wr.mw" at wr: rxe_send_wr_mw { addr, length, mr_lkey, mw_rkey, rkey, access },
            }
        struct rxe_sge { addr, length, lkey }
        struct mminfo { offset, size, pad }
        struct rxe_dma_info { length, resid, cur_sge, num_sge, sge_offset, reserved }
            flex { "inline_data", "sge" }
        struct rxe_send_wqe {
            wr, status, state, iova, mask, first_psn, last_psn, ack_length, ssn, has_rd_atomic,
            dma,
        }
        struct rxe_recv_wqe { wr_id, reserved, padding, dma }
        struct rxe_create_ah_resp { ah_num, reserved }
        struct rxe_create_cq_resp { mi }
        struct rxe_resize_cq_resp { mi }
        struct rxe_create_qp_resp { rq_mi, sq_mi }
        struct rxe_create_srq_resp { mi, srq_num, reserved }
        struct rxe_modify_srq_cmd { mmap_info_addr }
        struct rxe_queue_buf {
            log2_elem_size, index_mask, pad_1, producer_index, pad_2, consumer_index, pad_3,
        }
            flex { "data" }
        struct mlx5_ib_alloc_ucontext_req { total_num_bfregs, num_low_latency_bfregs }
        struct mlx5_ib_alloc_ucontext_req_v2 {
            total_num_bfregs, num_low_latency_bfregs, flags, comp_mask, max_cqe_version, reserved0,
            reserved1, reserved2, lib_caps,
        }
        struct mlx5_ib_alloc_ucontext_resp {
            qp_tab_size, bf_reg_size, tot_bfregs, cache_line_size, max_sq_desc_sz, max_rq_desc_sz,
            max_send_wqebb, max_recv_wr, max_srq_recv_wr, num_ports, flow_action_flags, comp_mask,
            response_length, cqe_version, cmds_supp_uhw, eth_min_inline, clock_info_versions,
            hca_core_clock_offset, log_uar_size, num_uars_per_page, num_dyn_bfregs, dump_fill_mkey,
        }
        struct mlx5_ib_alloc_pd_resp { pdn }
        struct mlx5_ib_tso_caps { max_tso, supported_qpts }
        struct mlx5_ib_rss_caps { rx_hash_fields_mask, rx_hash_function, reserved }
        struct mlx5_ib_cqe_comp_caps { max_num, supported_format }
        struct mlx5_packet_pacing_caps {
            qp_rate_limit_min, qp_rate_limit_max, supported_qpts, cap_flags, reserved,
        }
        struct mlx5_ib_sw_parsing_caps { sw_parsing_offloads, supported_qpts }
        struct mlx5_ib_striding_rq_caps {
            min_single_stride_log_num_of_bytes, max_single_stride_log_num_of_bytes,
            min_single_wqe_log_num_of_strides, max_single_wqe_log_num_of_strides, supported_qpts,
            reserved,
        }
        struct mlx5_ib_dci_streams_caps { max_log_num_concurent, max_log_num_errored }
        struct mlx5_ib_query_device_resp {
            comp_mask, response_length, tso_caps, rss_caps, cqe_comp_caps, packet_pacing_caps,
            mlx5_ib_support_multi_pkt_send_wqes, flags, sw_parsing_caps, striding_rq_caps,
            tunnel_offloads_caps, dci_streams_caps, reserved,
        }
        struct mlx5_ib_create_cq {
            buf_addr, db_addr, cqe_size, cqe_comp_en, cqe_comp_res_format, flags, uar_page_index,
            reserved0, reserved1,
        }
        struct mlx5_ib_create_cq_resp { cqn, reserved }
        struct mlx5_ib_resize_cq { buf_addr, cqe_size, reserved0, reserved1 }
        struct mlx5_ib_create_srq { buf_addr, db_addr, flags, reserved0, uidx, reserved1 }
        struct mlx5_ib_create_srq_resp { srqn, reserved }
        struct mlx5_ib_create_qp_dci_streams { log_num_concurent, log_num_errored }
        struct mlx5_ib_create_qp {
            buf_addr, db_addr, sq_wqe_count, rq_wqe_count, rq_wqe_shift, flags, uidx, bfreg_index,
            sq_buf_addr, ece_options, dci_streams, reserved,
        }
            alias {
                "access_key" => (sq_buf_addr, 0, 8),
            }
        struct mlx5_ib_create_qp_rss {
            rx_hash_fields_mask, rx_hash_function, rx_key_len, reserved, rx_hash_key, comp_mask,
            flags,
        }
        struct mlx5_ib_create_qp_resp {
            bfreg_index, ece_options, comp_mask, tirn, tisn, rqn, sqn, reserved1, tir_icm_addr,
        }
        struct mlx5_ib_alloc_mw { comp_mask, num_klms, reserved1, reserved2 }
        struct mlx5_ib_create_wq {
            buf_addr, db_addr, rq_wqe_count, rq_wqe_shift, user_index, flags, comp_mask,
            single_stride_log_num_of_bytes, single_wqe_log_num_of_strides, two_byte_shift_en,
        }
        struct mlx5_ib_create_ah_resp { response_length, dmac, reserved }
        struct mlx5_ib_burst_info { max_burst_sz, typical_pkt_sz, reserved }
        struct mlx5_ib_modify_qp { comp_mask, burst_info, ece_options }
        struct mlx5_ib_modify_qp_resp { response_length, dctn, ece_options, reserved }
        struct mlx5_ib_create_wq_resp { response_length, reserved }
        struct mlx5_ib_create_rwq_ind_tbl_resp { response_length, reserved }
        struct mlx5_ib_modify_wq { comp_mask, reserved }
        struct mlx5_ib_clock_info {
            sign, resv, nsec, cycles, frac, mult, shift, mask, overflow_period,
        }
        struct mlx5_ib_flow_counters_desc { description, index }
        struct mlx5_ib_flow_counters_data { counters_data, ncounters, reserved }
        struct mlx5_ib_create_flow { ncounters_data, reserved }
            flex { "data" }
        struct mlx5_ib_match_params { match_params }
        struct mlx5_ib_uapi_devx_async_cmd_hdr { wr_id }
            flex { "out_data" }
        struct mlx5_ib_uapi_devx_async_event_hdr { cookie }
            flex { "out_data" }
        struct mlx5_ib_uapi_reg { value, mask }
        struct mlx5_ib_uapi_query_port {
            flags, vport, vport_vhca_id, esw_owner_vhca_id, rsvd0, vport_steering_icm_rx,
            vport_steering_icm_tx, reg_c0,
        }
        struct sockaddr_in { sin_family, sin_port, sin_addr, __pad }
        struct sockaddr_in6 { sin6_family, sin6_port, sin6_flowinfo, sin6_addr, sin6_scope_id }
        struct __kernel_sockaddr_storage { ss_family, __data }
        struct rdma_ucm_cmd_hdr { cmd, r#in, out }
        struct rdma_ucm_create_id { uid, response, ps, qp_type, reserved }
        struct rdma_ucm_create_id_resp { id }
        struct rdma_ucm_destroy_id { response, id, reserved }
        struct rdma_ucm_destroy_id_resp { events_reported }
        struct rdma_ucm_bind { id, addr_size, reserved, addr }
        struct rdma_ucm_resolve_addr {
            id, timeout_ms, src_size, dst_size, reserved, src_addr, dst_addr,
        }
        struct rdma_ucm_resolve_route { id, timeout_ms }
        struct rdma_ucm_query { response, id, option }
        struct rdma_ucm_query_addr_resp {
            node_guid, port_num, reserved, pkey, src_size, dst_size, src_addr, dst_addr,
            ibdev_index, reserved1,
        }
        struct ib_path_rec_data { flags, reserved, path_rec }
        struct rdma_ucm_query_path_resp { num_paths, reserved }
            flex { "path_data" }
        struct rdma_ucm_conn_param {
            qp_num, qkey, private_data, private_data_len, srq, responder_resources,
            initiator_depth, flow_control, retry_count, rnr_retry_count, valid,
        }
        struct rdma_ucm_ud_param { qp_num, qkey, ah_attr, private_data, private_data_len, reserved }
        struct rdma_ucm_ece { vendor_id, attr_mod }
        struct rdma_ucm_connect { conn_param, id, reserved, ece }
        struct rdma_ucm_listen { id, backlog }
        struct rdma_ucm_accept { uid, conn_param, id, reserved, ece }
        struct rdma_ucm_reject { id, private_data_len, reason, reserved, private_data }
        struct rdma_ucm_disconnect { id }
        struct rdma_ucm_init_qp_attr { response, id, qp_state }
        struct rdma_ucm_notify { id, event }
        struct rdma_ucm_join_mcast { response, uid, id, addr_size, join_flags, addr }
        struct rdma_ucm_get_event { response }
        struct rdma_ucm_event_resp { uid, id, event, status, param, reserved, ece }
            views {
                "param.conn" at param: rdma_ucm_conn_param {
                    qp_num, qkey, private_data, private_data_len, srq, responder_resources,
                    initiator_depth, flow_control, retry_count, rnr_retry_count, valid,
                },
                "param.ud" at param: rdma_ucm_ud_param {
                    qp_num, qkey, ah_attr, private_data, private_data_len, reserved,
                },
            }
        struct rdma_ucm_set_option { optval, id, level, optname, optlen }
        struct rdma_ucm_migrate_id { response, id, fd }
        struct rdma_ucm_migrate_resp { events_reported }
    }
    consts {
        RDMA_IOCTL_MAGIC, UVERBS_ATTR_F_MANDATORY, UVERBS_ATTR_F_VALID_OUTPUT, UVERBS_ID_NS_MASK,
        UVERBS_ID_NS_SHIFT, UVERBS_UDATA_DRIVER_DATA_NS, UVERBS_UDATA_DRIVER_DATA_FLAG,
        UVERBS_OBJECT_DEVICE, UVERBS_OBJECT_PD, UVERBS_OBJECT_COMP_CHANNEL, UVERBS_OBJECT_CQ,
        UVERBS_OBJECT_QP, UVERBS_OBJECT_SRQ, UVERBS_OBJECT_AH, UVERBS_OBJECT_MR, UVERBS_OBJECT_MW,
        UVERBS_OBJECT_FLOW, UVERBS_OBJECT_XRCD, UVERBS_OBJECT_RWQ_IND_TBL, UVERBS_OBJECT_WQ,
        UVERBS_OBJECT_FLOW_ACTION, UVERBS_OBJECT_DM, UVERBS_OBJECT_COUNTERS,
        UVERBS_OBJECT_ASYNC_EVENT, UVERBS_ATTR_UHW_IN, UVERBS_ATTR_UHW_OUT,
        UVERBS_METHOD_INVOKE_WRITE, UVERBS_METHOD_INFO_HANDLES, UVERBS_METHOD_QUERY_PORT,
        UVERBS_METHOD_GET_CONTEXT, UVERBS_METHOD_QUERY_CONTEXT, UVERBS_METHOD_QUERY_GID_TABLE,
        UVERBS_METHOD_QUERY_GID_ENTRY, UVERBS_ATTR_CORE_IN, UVERBS_ATTR_CORE_OUT,
        UVERBS_ATTR_WRITE_CMD, UVERBS_ATTR_QUERY_PORT_PORT_NUM, UVERBS_ATTR_QUERY_PORT_RESP,
        UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT,
        UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT,
        UVERBS_ATTR_CREATE_CQ_HANDLE, UVERBS_ATTR_CREATE_CQ_CQE, UVERBS_ATTR_CREATE_CQ_USER_HANDLE,
        UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, UVERBS_ATTR_CREATE_CQ_COMP_VECTOR,
        UVERBS_ATTR_CREATE_CQ_FLAGS, UVERBS_ATTR_CREATE_CQ_RESP_CQE,
        UVERBS_ATTR_CREATE_CQ_EVENT_FD, UVERBS_ATTR_DESTROY_CQ_HANDLE, UVERBS_ATTR_DESTROY_CQ_RESP,
        UVERBS_ATTR_CREATE_FLOW_ACTION_ESP_HANDLE, UVERBS_ATTR_FLOW_ACTION_ESP_ATTRS,
        UVERBS_ATTR_FLOW_ACTION_ESP_ESN, UVERBS_ATTR_FLOW_ACTION_ESP_KEYMAT,
        UVERBS_ATTR_FLOW_ACTION_ESP_REPLAY, UVERBS_ATTR_FLOW_ACTION_ESP_ENCAP,
        UVERBS_ATTR_MODIFY_FLOW_ACTION_ESP_HANDLE, UVERBS_ATTR_DESTROY_FLOW_ACTION_HANDLE,
        UVERBS_ATTR_CREATE_QP_HANDLE, UVERBS_ATTR_CREATE_QP_XRCD_HANDLE,
        UVERBS_ATTR_CREATE_QP_PD_HANDLE, UVERBS_ATTR_CREATE_QP_SRQ_HANDLE,
        UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE,
        UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE, UVERBS_ATTR_CREATE_QP_USER_HANDLE,
        UVERBS_ATTR_CREATE_QP_CAP, UVERBS_ATTR_CREATE_QP_TYPE, UVERBS_ATTR_CREATE_QP_FLAGS,
        UVERBS_ATTR_CREATE_QP_SOURCE_QPN, UVERBS_ATTR_CREATE_QP_EVENT_FD,
        UVERBS_ATTR_CREATE_QP_RESP_CAP, UVERBS_ATTR_CREATE_QP_RESP_QP_NUM,
        UVERBS_ATTR_DESTROY_QP_HANDLE, UVERBS_ATTR_DESTROY_QP_RESP, UVERBS_METHOD_QP_CREATE,
        UVERBS_METHOD_QP_DESTROY, UVERBS_ATTR_CREATE_SRQ_HANDLE, UVERBS_ATTR_CREATE_SRQ_PD_HANDLE,
        UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE, UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE,
        UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, UVERBS_ATTR_CREATE_SRQ_MAX_WR,
        UVERBS_ATTR_CREATE_SRQ_MAX_SGE, UVERBS_ATTR_CREATE_SRQ_LIMIT,
        UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS, UVERBS_ATTR_CREATE_SRQ_TYPE,
        UVERBS_ATTR_CREATE_SRQ_EVENT_FD, UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR,
        UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM,
        UVERBS_ATTR_DESTROY_SRQ_HANDLE, UVERBS_ATTR_DESTROY_SRQ_RESP, UVERBS_METHOD_SRQ_CREATE,
        UVERBS_METHOD_SRQ_DESTROY, UVERBS_METHOD_CQ_CREATE, UVERBS_METHOD_CQ_DESTROY,
        UVERBS_ATTR_CREATE_WQ_HANDLE, UVERBS_ATTR_CREATE_WQ_PD_HANDLE,
        UVERBS_ATTR_CREATE_WQ_CQ_HANDLE, UVERBS_ATTR_CREATE_WQ_USER_HANDLE,
        UVERBS_ATTR_CREATE_WQ_TYPE, UVERBS_ATTR_CREATE_WQ_EVENT_FD, UVERBS_ATTR_CREATE_WQ_MAX_WR,
        UVERBS_ATTR_CREATE_WQ_MAX_SGE, UVERBS_ATTR_CREATE_WQ_FLAGS,
        UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR, UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE,
        UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM, UVERBS_ATTR_DESTROY_WQ_HANDLE,
        UVERBS_ATTR_DESTROY_WQ_RESP, UVERBS_METHOD_WQ_CREATE, UVERBS_METHOD_WQ_DESTROY,
        UVERBS_METHOD_FLOW_ACTION_ESP_CREATE, UVERBS_METHOD_FLOW_ACTION_DESTROY,
        UVERBS_METHOD_FLOW_ACTION_ESP_MODIFY, UVERBS_ATTR_ALLOC_DM_HANDLE,
        UVERBS_ATTR_ALLOC_DM_LENGTH, UVERBS_ATTR_ALLOC_DM_ALIGNMENT, UVERBS_ATTR_FREE_DM_HANDLE,
        UVERBS_METHOD_DM_ALLOC, UVERBS_METHOD_DM_FREE, UVERBS_ATTR_REG_DM_MR_HANDLE,
        UVERBS_ATTR_REG_DM_MR_OFFSET, UVERBS_ATTR_REG_DM_MR_LENGTH,
        UVERBS_ATTR_REG_DM_MR_PD_HANDLE, UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS,
        UVERBS_ATTR_REG_DM_MR_DM_HANDLE, UVERBS_ATTR_REG_DM_MR_RESP_LKEY,
        UVERBS_ATTR_REG_DM_MR_RESP_RKEY, UVERBS_METHOD_DM_MR_REG, UVERBS_METHOD_MR_DESTROY,
        UVERBS_METHOD_ADVISE_MR, UVERBS_METHOD_QUERY_MR, UVERBS_METHOD_REG_DMABUF_MR,
        UVERBS_ATTR_DESTROY_MR_HANDLE, UVERBS_ATTR_ADVISE_MR_PD_HANDLE,
        UVERBS_ATTR_ADVISE_MR_ADVICE, UVERBS_ATTR_ADVISE_MR_FLAGS, UVERBS_ATTR_ADVISE_MR_SGE_LIST,
        UVERBS_ATTR_QUERY_MR_HANDLE, UVERBS_ATTR_QUERY_MR_RESP_LKEY,
        UVERBS_ATTR_QUERY_MR_RESP_RKEY, UVERBS_ATTR_QUERY_MR_RESP_LENGTH,
        UVERBS_ATTR_QUERY_MR_RESP_IOVA, UVERBS_ATTR_REG_DMABUF_MR_HANDLE,
        UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, UVERBS_ATTR_REG_DMABUF_MR_OFFSET,
        UVERBS_ATTR_REG_DMABUF_MR_LENGTH, UVERBS_ATTR_REG_DMABUF_MR_IOVA,
        UVERBS_ATTR_REG_DMABUF_MR_FD, UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS,
        UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY,
        UVERBS_ATTR_CREATE_COUNTERS_HANDLE, UVERBS_ATTR_DESTROY_COUNTERS_HANDLE,
        UVERBS_ATTR_READ_COUNTERS_HANDLE, UVERBS_ATTR_READ_COUNTERS_BUFF,
        UVERBS_ATTR_READ_COUNTERS_FLAGS, UVERBS_METHOD_COUNTERS_CREATE,
        UVERBS_METHOD_COUNTERS_DESTROY, UVERBS_METHOD_COUNTERS_READ, UVERBS_ATTR_INFO_OBJECT_ID,
        UVERBS_ATTR_INFO_TOTAL_HANDLES, UVERBS_ATTR_INFO_HANDLES_LIST, UVERBS_METHOD_PD_DESTROY,
        UVERBS_ATTR_DESTROY_PD_HANDLE, UVERBS_METHOD_MW_DESTROY, UVERBS_ATTR_DESTROY_MW_HANDLE,
        UVERBS_METHOD_XRCD_DESTROY, UVERBS_ATTR_DESTROY_XRCD_HANDLE, UVERBS_METHOD_AH_DESTROY,
        UVERBS_ATTR_DESTROY_AH_HANDLE, UVERBS_METHOD_RWQ_IND_TBL_DESTROY,
        UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, UVERBS_METHOD_FLOW_DESTROY,
        UVERBS_ATTR_DESTROY_FLOW_HANDLE, UVERBS_METHOD_ASYNC_EVENT_ALLOC,
        UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE,
        UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES,
        UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, UVERBS_ATTR_QUERY_GID_ENTRY_PORT,
        UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS,
        UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, IB_UVERBS_ACCESS_OPTIONAL_FIRST,
        IB_UVERBS_ACCESS_OPTIONAL_LAST, IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS,
        IB_UVERBS_ACCESS_LOCAL_WRITE, IB_UVERBS_ACCESS_REMOTE_WRITE, IB_UVERBS_ACCESS_REMOTE_READ,
        IB_UVERBS_ACCESS_REMOTE_ATOMIC, IB_UVERBS_ACCESS_MW_BIND, IB_UVERBS_ACCESS_ZERO_BASED,
        IB_UVERBS_ACCESS_ON_DEMAND, IB_UVERBS_ACCESS_HUGETLB, IB_UVERBS_ACCESS_RELAXED_ORDERING,
        IB_UVERBS_ACCESS_OPTIONAL_RANGE, IB_UVERBS_SRQT_BASIC, IB_UVERBS_SRQT_XRC,
        IB_UVERBS_SRQT_TM, IB_UVERBS_WQT_RQ, IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING,
        IB_UVERBS_WQ_FLAGS_SCATTER_FCS, IB_UVERBS_WQ_FLAGS_DELAY_DROP,
        IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING, IB_UVERBS_QPT_RC, IB_UVERBS_QPT_UC,
        IB_UVERBS_QPT_UD, IB_UVERBS_QPT_RAW_PACKET, IB_UVERBS_QPT_XRC_INI, IB_UVERBS_QPT_XRC_TGT,
        IB_UVERBS_QPT_DRIVER, IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK,
        IB_UVERBS_QP_CREATE_SCATTER_FCS, IB_UVERBS_QP_CREATE_CVLAN_STRIPPING,
        IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING, IB_UVERBS_QP_CREATE_SQ_SIG_ALL,
        IB_UVERBS_PCF_SM, IB_UVERBS_PCF_NOTICE_SUP, IB_UVERBS_PCF_TRAP_SUP,
        IB_UVERBS_PCF_OPT_IPD_SUP, IB_UVERBS_PCF_AUTO_MIGR_SUP, IB_UVERBS_PCF_SL_MAP_SUP,
        IB_UVERBS_PCF_MKEY_NVRAM, IB_UVERBS_PCF_PKEY_NVRAM, IB_UVERBS_PCF_LED_INFO_SUP,
        IB_UVERBS_PCF_SM_DISABLED, IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP,
        IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP, IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP,
        IB_UVERBS_PCF_CM_SUP, IB_UVERBS_PCF_SNMP_TUNNEL_SUP, IB_UVERBS_PCF_REINIT_SUP,
        IB_UVERBS_PCF_DEVICE_MGMT_SUP, IB_UVERBS_PCF_VENDOR_CLASS_SUP, IB_UVERBS_PCF_DR_NOTICE_SUP,
        IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP, IB_UVERBS_PCF_BOOT_MGMT_SUP,
        IB_UVERBS_PCF_LINK_LATENCY_SUP, IB_UVERBS_PCF_CLIENT_REG_SUP,
        IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP, IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP,
        IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP, IB_UVERBS_PCF_MCAST_FDB_TOP_SUP,
        IB_UVERBS_PCF_HIERARCHY_INFO_SUP, IB_UVERBS_PCF_IP_BASED_GIDS, IB_UVERBS_QPF_GRH_REQUIRED,
        IB_UVERBS_FLOW_ACTION_ESP_KEYMAT_AES_GCM, IB_UVERBS_FLOW_ACTION_IV_ALGO_SEQ,
        IB_UVERBS_FLOW_ACTION_ESP_REPLAY_NONE, IB_UVERBS_FLOW_ACTION_ESP_REPLAY_BMP,
        IB_UVERBS_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO,
        IB_UVERBS_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD, IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TUNNEL,
        IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TRANSPORT, IB_UVERBS_FLOW_ACTION_ESP_FLAGS_DECRYPT,
        IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ENCRYPT, IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW,
        IB_UVERBS_READ_COUNTERS_PREFER_CACHED, IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH,
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE, IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
        IB_UVERBS_ADVISE_MR_FLAG_FLUSH, RDMA_DRIVER_UNKNOWN, RDMA_DRIVER_MLX5, RDMA_DRIVER_MLX4,
        RDMA_DRIVER_CXGB3, RDMA_DRIVER_CXGB4, RDMA_DRIVER_MTHCA, RDMA_DRIVER_BNXT_RE,
        RDMA_DRIVER_OCRDMA, RDMA_DRIVER_NES, RDMA_DRIVER_I40IW, RDMA_DRIVER_IRDMA,
        RDMA_DRIVER_VMW_PVRDMA, RDMA_DRIVER_QEDR, RDMA_DRIVER_HNS, RDMA_DRIVER_USNIC,
        RDMA_DRIVER_RXE, RDMA_DRIVER_HFI1, RDMA_DRIVER_QIB, RDMA_DRIVER_EFA, RDMA_DRIVER_SIW,
        RDMA_DRIVER_ERDMA, IB_UVERBS_GID_TYPE_IB, IB_UVERBS_GID_TYPE_ROCE_V1,
        IB_UVERBS_GID_TYPE_ROCE_V2, IB_USER_VERBS_ABI_VERSION, IB_USER_VERBS_CMD_THRESHOLD,
        IB_USER_VERBS_CMD_GET_CONTEXT, IB_USER_VERBS_CMD_QUERY_DEVICE,
        IB_USER_VERBS_CMD_QUERY_PORT, IB_USER_VERBS_CMD_ALLOC_PD, IB_USER_VERBS_CMD_DEALLOC_PD,
        IB_USER_VERBS_CMD_CREATE_AH, IB_USER_VERBS_CMD_MODIFY_AH, IB_USER_VERBS_CMD_QUERY_AH,
        IB_USER_VERBS_CMD_DESTROY_AH, IB_USER_VERBS_CMD_REG_MR, IB_USER_VERBS_CMD_REG_SMR,
        IB_USER_VERBS_CMD_REREG_MR, IB_USER_VERBS_CMD_QUERY_MR, IB_USER_VERBS_CMD_DEREG_MR,
        IB_USER_VERBS_CMD_ALLOC_MW, IB_USER_VERBS_CMD_BIND_MW, IB_USER_VERBS_CMD_DEALLOC_MW,
        IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, IB_USER_VERBS_CMD_CREATE_CQ,
        IB_USER_VERBS_CMD_RESIZE_CQ, IB_USER_VERBS_CMD_DESTROY_CQ, IB_USER_VERBS_CMD_POLL_CQ,
        IB_USER_VERBS_CMD_PEEK_CQ, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, IB_USER_VERBS_CMD_CREATE_QP,
        IB_USER_VERBS_CMD_QUERY_QP, IB_USER_VERBS_CMD_MODIFY_QP, IB_USER_VERBS_CMD_DESTROY_QP,
        IB_USER_VERBS_CMD_POST_SEND, IB_USER_VERBS_CMD_POST_RECV, IB_USER_VERBS_CMD_ATTACH_MCAST,
        IB_USER_VERBS_CMD_DETACH_MCAST, IB_USER_VERBS_CMD_CREATE_SRQ, IB_USER_VERBS_CMD_MODIFY_SRQ,
        IB_USER_VERBS_CMD_QUERY_SRQ, IB_USER_VERBS_CMD_DESTROY_SRQ,
        IB_USER_VERBS_CMD_POST_SRQ_RECV, IB_USER_VERBS_CMD_OPEN_XRCD, IB_USER_VERBS_CMD_CLOSE_XRCD,
        IB_USER_VERBS_CMD_CREATE_XSRQ, IB_USER_VERBS_CMD_OPEN_QP,
        IB_USER_VERBS_EX_CMD_QUERY_DEVICE, IB_USER_VERBS_EX_CMD_CREATE_CQ,
        IB_USER_VERBS_EX_CMD_CREATE_QP, IB_USER_VERBS_EX_CMD_MODIFY_QP,
        IB_USER_VERBS_EX_CMD_CREATE_FLOW, IB_USER_VERBS_EX_CMD_DESTROY_FLOW,
        IB_USER_VERBS_EX_CMD_CREATE_WQ, IB_USER_VERBS_EX_CMD_MODIFY_WQ,
        IB_USER_VERBS_EX_CMD_DESTROY_WQ, IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL,
        IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, IB_USER_VERBS_EX_CMD_MODIFY_CQ,
        IB_USER_VERBS_CMD_COMMAND_MASK, IB_USER_VERBS_CMD_FLAG_EXTENDED,
        IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION, IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN,
        IB_UVERBS_WC_SEND, IB_UVERBS_WC_RDMA_WRITE, IB_UVERBS_WC_RDMA_READ, IB_UVERBS_WC_COMP_SWAP,
        IB_UVERBS_WC_FETCH_ADD, IB_UVERBS_WC_BIND_MW, IB_UVERBS_WC_LOCAL_INV, IB_UVERBS_WC_TSO,
        IB_UVERBS_CREATE_QP_MASK_IND_TABLE, IB_UVERBS_CREATE_QP_SUP_COMP_MASK,
        IB_UVERBS_WR_RDMA_WRITE, IB_UVERBS_WR_RDMA_WRITE_WITH_IMM, IB_UVERBS_WR_SEND,
        IB_UVERBS_WR_SEND_WITH_IMM, IB_UVERBS_WR_RDMA_READ, IB_UVERBS_WR_ATOMIC_CMP_AND_SWP,
        IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD, IB_UVERBS_WR_LOCAL_INV, IB_UVERBS_WR_BIND_MW,
        IB_UVERBS_WR_SEND_WITH_INV, IB_UVERBS_WR_TSO, IB_UVERBS_WR_RDMA_READ_WITH_INV,
        IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP, IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD,
        IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE, IB_DEVICE_NAME_MAX, IB_UVERBS_DEVICE_RESIZE_MAX_WR,
        IB_UVERBS_DEVICE_BAD_PKEY_CNTR, IB_UVERBS_DEVICE_BAD_QKEY_CNTR, IB_UVERBS_DEVICE_RAW_MULTI,
        IB_UVERBS_DEVICE_AUTO_PATH_MIG, IB_UVERBS_DEVICE_CHANGE_PHY_PORT,
        IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE, IB_UVERBS_DEVICE_CURR_QP_STATE_MOD,
        IB_UVERBS_DEVICE_SHUTDOWN_PORT, IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT,
        IB_UVERBS_DEVICE_SYS_IMAGE_GUID, IB_UVERBS_DEVICE_RC_RNR_NAK_GEN,
        IB_UVERBS_DEVICE_SRQ_RESIZE, IB_UVERBS_DEVICE_N_NOTIFY_CQ, IB_UVERBS_DEVICE_MEM_WINDOW,
        IB_UVERBS_DEVICE_UD_IP_CSUM, IB_UVERBS_DEVICE_XRC, IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS,
        IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A, IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B,
        IB_UVERBS_DEVICE_RC_IP_CSUM, IB_UVERBS_DEVICE_RAW_IP_CSUM,
        IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING, IB_UVERBS_DEVICE_RAW_SCATTER_FCS,
        IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING, IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING,
        IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS, IB_UVERBS_RAW_PACKET_CAP_IP_CSUM,
        IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP, RXE_NETWORK_TYPE_IPV4, RXE_NETWORK_TYPE_IPV6,
        MLX5_QP_FLAG_SIGNATURE, MLX5_QP_FLAG_SCATTER_CQE, MLX5_QP_FLAG_TUNNEL_OFFLOADS,
        MLX5_QP_FLAG_BFREG_INDEX, MLX5_QP_FLAG_TYPE_DCT, MLX5_QP_FLAG_TYPE_DCI,
        MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC, MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC,
        MLX5_QP_FLAG_ALLOW_SCATTER_CQE, MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE,
        MLX5_QP_FLAG_UAR_PAGE_INDEX, MLX5_QP_FLAG_DCI_STREAM, MLX5_SRQ_FLAG_SIGNATURE,
        MLX5_WQ_FLAG_SIGNATURE, MLX5_IB_UVERBS_ABI_VERSION, MLX5_LIB_CAP_4K_UAR,
        MLX5_LIB_CAP_DYN_UAR, MLX5_IB_ALLOC_UCTX_DEVX,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY, MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS, MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG, MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE,
        MLX5_USER_CMDS_SUPP_UHW_CREATE_AH, MLX5_USER_INLINE_MODE_NA, MLX5_USER_INLINE_MODE_NONE,
        MLX5_USER_INLINE_MODE_L2, MLX5_USER_INLINE_MODE_IP, MLX5_USER_INLINE_MODE_TCP_UDP,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_REQ_METADATA,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_SPI_STEERING,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_FULL_OFFLOAD,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_TX_IV_IS_ESN,
        MLX5_IB_CQE_RES_FORMAT_HASH, MLX5_IB_CQE_RES_FORMAT_CSUM,
        MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX, MLX5_IB_PP_SUPPORT_BURST, MPW_RESERVED,
        MLX5_IB_ALLOW_MPW, MLX5_IB_SUPPORT_EMPW, MLX5_IB_SW_PARSING, MLX5_IB_SW_PARSING_CSUM,
        MLX5_IB_SW_PARSING_LSO, MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP,
        MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD, MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE,
        MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT, MLX5_IB_TUNNELED_OFFLOADS_VXLAN,
        MLX5_IB_TUNNELED_OFFLOADS_GRE, MLX5_IB_TUNNELED_OFFLOADS_GENEVE,
        MLX5_IB_TUNNELED_OFFLOADS_MPLS_GRE, MLX5_IB_TUNNELED_OFFLOADS_MPLS_UDP,
        MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD, MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX,
        MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS, MLX5_RX_HASH_FUNC_TOEPLITZ, MLX5_RX_HASH_SRC_IPV4,
        MLX5_RX_HASH_DST_IPV4, MLX5_RX_HASH_SRC_IPV6, MLX5_RX_HASH_DST_IPV6,
        MLX5_RX_HASH_SRC_PORT_TCP, MLX5_RX_HASH_DST_PORT_TCP, MLX5_RX_HASH_SRC_PORT_UDP,
        MLX5_RX_HASH_DST_PORT_UDP, MLX5_RX_HASH_IPSEC_SPI, MLX5_RX_HASH_INNER,
        MLX5_IB_CREATE_QP_RESP_MASK_TIRN, MLX5_IB_CREATE_QP_RESP_MASK_TISN,
        MLX5_IB_CREATE_QP_RESP_MASK_RQN, MLX5_IB_CREATE_QP_RESP_MASK_SQN,
        MLX5_IB_CREATE_QP_RESP_MASK_TIR_ICM_ADDR, MLX5_IB_CREATE_WQ_STRIDING_RQ,
        MLX5_IB_MMAP_REGULAR_PAGE, MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES, MLX5_IB_MMAP_WC_PAGE,
        MLX5_IB_MMAP_NC_PAGE, MLX5_IB_MMAP_CORE_CLOCK, MLX5_IB_MMAP_ALLOC_WC,
        MLX5_IB_MMAP_CLOCK_INFO, MLX5_IB_MMAP_DEVICE_MEM, MLX5_IB_CLOCK_INFO_KERNEL_UPDATING,
        MLX5_IB_CLOCK_INFO_V1, MLX5_IB_ATTR_CREATE_FLOW_ACTION_FLAGS,
        MLX5_IB_METHOD_DM_MAP_OP_ADDR, MLX5_IB_METHOD_DM_QUERY,
        MLX5_IB_ATTR_DM_MAP_OP_ADDR_REQ_HANDLE, MLX5_IB_ATTR_DM_MAP_OP_ADDR_REQ_OP,
        MLX5_IB_ATTR_DM_MAP_OP_ADDR_RESP_START_OFFSET, MLX5_IB_ATTR_DM_MAP_OP_ADDR_RESP_PAGE_INDEX,
        MLX5_IB_ATTR_QUERY_DM_REQ_HANDLE, MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET,
        MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX, MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH,
        MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX,
        MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, MLX5_IB_METHOD_DEVX_OTHER, MLX5_IB_METHOD_DEVX_QUERY_UAR,
        MLX5_IB_METHOD_DEVX_QUERY_EQN, MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT,
        MLX5_IB_ATTR_DEVX_OTHER_CMD_IN, MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT,
        MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE, MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN,
        MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_OUT, MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX,
        MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX, MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE,
        MLX5_IB_ATTR_DEVX_OBJ_MODIFY_HANDLE, MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_IN,
        MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_OUT, MLX5_IB_ATTR_DEVX_OBJ_QUERY_HANDLE,
        MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_IN, MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_OUT,
        MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_HANDLE, MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_CMD_IN,
        MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_FD, MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_WR_ID,
        MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_OUT_LEN, MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE,
        MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE,
        MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST, MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_NUM,
        MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE, MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC,
        MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN, MLX5_IB_METHOD_DEVX_OBJ_CREATE,
        MLX5_IB_METHOD_DEVX_OBJ_DESTROY, MLX5_IB_METHOD_DEVX_OBJ_MODIFY,
        MLX5_IB_METHOD_DEVX_OBJ_QUERY, MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY,
        MLX5_IB_ATTR_VAR_OBJ_ALLOC_HANDLE, MLX5_IB_ATTR_VAR_OBJ_ALLOC_MMAP_OFFSET,
        MLX5_IB_ATTR_VAR_OBJ_ALLOC_MMAP_LENGTH, MLX5_IB_ATTR_VAR_OBJ_ALLOC_PAGE_ID,
        MLX5_IB_ATTR_VAR_OBJ_DESTROY_HANDLE, MLX5_IB_METHOD_VAR_OBJ_ALLOC,
        MLX5_IB_METHOD_VAR_OBJ_DESTROY, MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE,
        MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET,
        MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID,
        MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, MLX5_IB_METHOD_UAR_OBJ_ALLOC,
        MLX5_IB_METHOD_UAR_OBJ_DESTROY, MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE,
        MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR, MLX5_IB_ATTR_DEVX_UMEM_REG_LEN,
        MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS, MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID,
        MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP, MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD,
        MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE, MLX5_IB_METHOD_PP_OBJ_ALLOC,
        MLX5_IB_METHOD_PP_OBJ_DESTROY, MLX5_IB_ATTR_PP_OBJ_ALLOC_HANDLE,
        MLX5_IB_ATTR_PP_OBJ_ALLOC_CTX, MLX5_IB_ATTR_PP_OBJ_ALLOC_FLAGS,
        MLX5_IB_ATTR_PP_OBJ_ALLOC_INDEX, MLX5_IB_ATTR_PP_OBJ_DESTROY_HANDLE,
        MLX5_IB_METHOD_DEVX_UMEM_REG, MLX5_IB_METHOD_DEVX_UMEM_DEREG,
        MLX5_IB_ATTR_DEVX_ASYNC_CMD_FD_ALLOC_HANDLE, MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_HANDLE,
        MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_FLAGS, MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC,
        MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC, MLX5_IB_OBJECT_DEVX, MLX5_IB_OBJECT_DEVX_OBJ,
        MLX5_IB_OBJECT_DEVX_UMEM, MLX5_IB_OBJECT_FLOW_MATCHER, MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD,
        MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD, MLX5_IB_OBJECT_VAR, MLX5_IB_OBJECT_PP,
        MLX5_IB_OBJECT_UAR, MLX5_IB_OBJECT_STEERING_ANCHOR,
        MLX5_IB_ATTR_FLOW_MATCHER_CREATE_HANDLE, MLX5_IB_ATTR_FLOW_MATCHER_MATCH_MASK,
        MLX5_IB_ATTR_FLOW_MATCHER_FLOW_TYPE, MLX5_IB_ATTR_FLOW_MATCHER_MATCH_CRITERIA,
        MLX5_IB_ATTR_FLOW_MATCHER_FLOW_FLAGS, MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE,
        MLX5_IB_ATTR_FLOW_MATCHER_DESTROY_HANDLE, MLX5_IB_METHOD_FLOW_MATCHER_CREATE,
        MLX5_IB_METHOD_FLOW_MATCHER_DESTROY, MLX5_IB_ATTR_STEERING_ANCHOR_CREATE_HANDLE,
        MLX5_IB_ATTR_STEERING_ANCHOR_FT_TYPE, MLX5_IB_ATTR_STEERING_ANCHOR_PRIORITY,
        MLX5_IB_ATTR_STEERING_ANCHOR_FT_ID, MLX5_IB_ATTR_STEERING_ANCHOR_DESTROY_HANDLE,
        MLX5_IB_METHOD_STEERING_ANCHOR_CREATE, MLX5_IB_METHOD_STEERING_ANCHOR_DESTROY,
        MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, MLX5_IB_DW_MATCH_PARAM, MLX5_IB_FLOW_TYPE_NORMAL,
        MLX5_IB_FLOW_TYPE_SNIFFER, MLX5_IB_FLOW_TYPE_ALL_DEFAULT, MLX5_IB_FLOW_TYPE_MC_DEFAULT,
        MLX5_IB_ATTR_CREATE_FLOW_FLAGS_DEFAULT_MISS, MLX5_IB_ATTR_CREATE_FLOW_FLAGS_DROP,
        MLX5_IB_ATTR_CREATE_FLOW_HANDLE, MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE,
        MLX5_IB_ATTR_CREATE_FLOW_DEST_QP, MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX,
        MLX5_IB_ATTR_CREATE_FLOW_MATCHER, MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS,
        MLX5_IB_ATTR_CREATE_FLOW_TAG, MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX,
        MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX_OFFSET, MLX5_IB_ATTR_CREATE_FLOW_FLAGS,
        MLX5_IB_ATTR_DESTROY_FLOW_HANDLE, MLX5_IB_METHOD_CREATE_FLOW, MLX5_IB_METHOD_DESTROY_FLOW,
        MLX5_IB_METHOD_FLOW_ACTION_CREATE_MODIFY_HEADER,
        MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT,
        MLX5_IB_ATTR_CREATE_MODIFY_HEADER_HANDLE, MLX5_IB_ATTR_CREATE_MODIFY_HEADER_ACTIONS_PRM,
        MLX5_IB_ATTR_CREATE_MODIFY_HEADER_FT_TYPE, MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_HANDLE,
        MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_TYPE, MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_FT_TYPE,
        MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_DATA_BUF, MLX5_IB_ATTR_QUERY_PD_HANDLE,
        MLX5_IB_ATTR_QUERY_PD_RESP_PDN, MLX5_IB_METHOD_PD_QUERY, MLX5_IB_METHOD_QUERY_PORT,
        MLX5_IB_ATTR_QUERY_PORT_PORT_NUM, MLX5_IB_ATTR_QUERY_PORT,
        MLX5_IB_UAPI_FLOW_ACTION_FLAGS_REQUIRE_METADATA, MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_RX,
        MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_TX, MLX5_IB_UAPI_FLOW_TABLE_TYPE_FDB,
        MLX5_IB_UAPI_FLOW_TABLE_TYPE_RDMA_RX, MLX5_IB_UAPI_FLOW_TABLE_TYPE_RDMA_TX,
        MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2,
        MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL,
        MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2,
        MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL, MLX5_IB_UAPI_DM_TYPE_MEMIC,
        MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM, MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_SW_ICM,
        MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM,
        MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA, MLX5_IB_UAPI_PP_ALLOC_FLAGS_DEDICATED_INDEX,
        MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF, MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC,
        MLX5_IB_UAPI_QUERY_PORT_VPORT, MLX5_IB_UAPI_QUERY_PORT_VPORT_VHCA_ID,
        MLX5_IB_UAPI_QUERY_PORT_VPORT_STEERING_ICM_RX,
        MLX5_IB_UAPI_QUERY_PORT_VPORT_STEERING_ICM_TX, MLX5_IB_UAPI_QUERY_PORT_VPORT_REG_C0,
        MLX5_IB_UAPI_QUERY_PORT_ESW_OWNER_VHCA_ID, RDMA_NL_IWCM, RDMA_NL_RSVD, RDMA_NL_LS,
        RDMA_NL_NLDEV, RDMA_NL_NUM_CLIENTS, RDMA_NODE_IB_CA, RDMA_NODE_IB_SWITCH,
        RDMA_NODE_IB_ROUTER, RDMA_NODE_RNIC, RDMA_NODE_USNIC, RDMA_NODE_USNIC_UDP,
        RDMA_NODE_UNSPECIFIED, RDMA_NLDEV_CMD_UNSPEC, RDMA_NLDEV_CMD_GET, RDMA_NLDEV_CMD_SET,
        RDMA_NLDEV_CMD_NEWLINK, RDMA_NLDEV_CMD_DELLINK, RDMA_NLDEV_CMD_PORT_GET,
        RDMA_NLDEV_CMD_SYS_GET, RDMA_NLDEV_CMD_SYS_SET, RDMA_NLDEV_CMD_RES_GET,
        RDMA_NLDEV_CMD_RES_QP_GET, RDMA_NLDEV_CMD_RES_CM_ID_GET, RDMA_NLDEV_CMD_RES_CQ_GET,
        RDMA_NLDEV_CMD_RES_MR_GET, RDMA_NLDEV_CMD_RES_PD_GET, RDMA_NLDEV_CMD_GET_CHARDEV,
        RDMA_NLDEV_CMD_STAT_SET, RDMA_NLDEV_CMD_STAT_GET, RDMA_NLDEV_CMD_STAT_DEL,
        RDMA_NLDEV_CMD_RES_QP_GET_RAW, RDMA_NLDEV_CMD_RES_CQ_GET_RAW,
        RDMA_NLDEV_CMD_RES_MR_GET_RAW, RDMA_NLDEV_CMD_RES_CTX_GET, RDMA_NLDEV_CMD_RES_SRQ_GET,
        RDMA_NLDEV_CMD_STAT_GET_STATUS, RDMA_NLDEV_NUM_OPS, RDMA_NLDEV_ATTR_UNSPEC,
        RDMA_NLDEV_ATTR_PAD, RDMA_NLDEV_ATTR_DEV_INDEX, RDMA_NLDEV_ATTR_DEV_NAME,
        RDMA_NLDEV_ATTR_PORT_INDEX, RDMA_NLDEV_ATTR_CAP_FLAGS, RDMA_NLDEV_ATTR_FW_VERSION,
        RDMA_NLDEV_ATTR_NODE_GUID, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, RDMA_NLDEV_ATTR_SUBNET_PREFIX,
        RDMA_NLDEV_ATTR_LID, RDMA_NLDEV_ATTR_SM_LID, RDMA_NLDEV_ATTR_LMC,
        RDMA_NLDEV_ATTR_PORT_STATE, RDMA_NLDEV_ATTR_PORT_PHYS_STATE, RDMA_NLDEV_ATTR_DEV_NODE_TYPE,
        RDMA_NLDEV_ATTR_RES_SUMMARY, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY,
        RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR,
        RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY, RDMA_NLDEV_ATTR_RES_LQPN,
        RDMA_NLDEV_ATTR_RES_RQPN, RDMA_NLDEV_ATTR_RES_RQ_PSN, RDMA_NLDEV_ATTR_RES_SQ_PSN,
        RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, RDMA_NLDEV_ATTR_RES_TYPE, RDMA_NLDEV_ATTR_RES_STATE,
        RDMA_NLDEV_ATTR_RES_PID, RDMA_NLDEV_ATTR_RES_KERN_NAME, RDMA_NLDEV_ATTR_RES_CM_ID,
        RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY, RDMA_NLDEV_ATTR_RES_PS, RDMA_NLDEV_ATTR_RES_SRC_ADDR,
        RDMA_NLDEV_ATTR_RES_DST_ADDR, RDMA_NLDEV_ATTR_RES_CQ, RDMA_NLDEV_ATTR_RES_CQ_ENTRY,
        RDMA_NLDEV_ATTR_RES_CQE, RDMA_NLDEV_ATTR_RES_USECNT, RDMA_NLDEV_ATTR_RES_POLL_CTX,
        RDMA_NLDEV_ATTR_RES_MR, RDMA_NLDEV_ATTR_RES_MR_ENTRY, RDMA_NLDEV_ATTR_RES_RKEY,
        RDMA_NLDEV_ATTR_RES_LKEY, RDMA_NLDEV_ATTR_RES_IOVA, RDMA_NLDEV_ATTR_RES_MRLEN,
        RDMA_NLDEV_ATTR_RES_PD, RDMA_NLDEV_ATTR_RES_PD_ENTRY, RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY,
        RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY, RDMA_NLDEV_ATTR_NDEV_INDEX,
        RDMA_NLDEV_ATTR_NDEV_NAME, RDMA_NLDEV_ATTR_DRIVER, RDMA_NLDEV_ATTR_DRIVER_ENTRY,
        RDMA_NLDEV_ATTR_DRIVER_STRING, RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE,
        RDMA_NLDEV_ATTR_DRIVER_S32, RDMA_NLDEV_ATTR_DRIVER_U32, RDMA_NLDEV_ATTR_DRIVER_S64,
        RDMA_NLDEV_ATTR_DRIVER_U64, RDMA_NLDEV_ATTR_RES_PDN, RDMA_NLDEV_ATTR_RES_CQN,
        RDMA_NLDEV_ATTR_RES_MRN, RDMA_NLDEV_ATTR_RES_CM_IDN, RDMA_NLDEV_ATTR_RES_CTXN,
        RDMA_NLDEV_ATTR_LINK_TYPE, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, RDMA_NLDEV_ATTR_DEV_PROTOCOL,
        RDMA_NLDEV_NET_NS_FD, RDMA_NLDEV_ATTR_CHARDEV_TYPE, RDMA_NLDEV_ATTR_CHARDEV_NAME,
        RDMA_NLDEV_ATTR_CHARDEV_ABI, RDMA_NLDEV_ATTR_CHARDEV, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID,
        RDMA_NLDEV_ATTR_STAT_MODE, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK,
        RDMA_NLDEV_ATTR_STAT_COUNTER, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY,
        RDMA_NLDEV_ATTR_STAT_COUNTER_ID, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS,
        RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
        RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, RDMA_NLDEV_ATTR_DEV_DIM,
        RDMA_NLDEV_ATTR_RES_RAW, RDMA_NLDEV_ATTR_RES_CTX, RDMA_NLDEV_ATTR_RES_CTX_ENTRY,
        RDMA_NLDEV_ATTR_RES_SRQ, RDMA_NLDEV_ATTR_RES_SRQ_ENTRY, RDMA_NLDEV_ATTR_RES_SRQN,
        RDMA_NLDEV_ATTR_MIN_RANGE, RDMA_NLDEV_ATTR_MAX_RANGE, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK,
        RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC,
        RDMA_NLDEV_ATTR_MAX, RDMA_USER_CM_ABI_VERSION, RDMA_MAX_PRIVATE_DATA,
        RDMA_USER_CM_CMD_CREATE_ID, RDMA_USER_CM_CMD_DESTROY_ID, RDMA_USER_CM_CMD_BIND_IP,
        RDMA_USER_CM_CMD_RESOLVE_IP, RDMA_USER_CM_CMD_RESOLVE_ROUTE, RDMA_USER_CM_CMD_QUERY_ROUTE,
        RDMA_USER_CM_CMD_CONNECT, RDMA_USER_CM_CMD_LISTEN, RDMA_USER_CM_CMD_ACCEPT,
        RDMA_USER_CM_CMD_REJECT, RDMA_USER_CM_CMD_DISCONNECT, RDMA_USER_CM_CMD_INIT_QP_ATTR,
        RDMA_USER_CM_CMD_GET_EVENT, RDMA_USER_CM_CMD_GET_OPTION, RDMA_USER_CM_CMD_SET_OPTION,
        RDMA_USER_CM_CMD_NOTIFY, RDMA_USER_CM_CMD_JOIN_IP_MCAST, RDMA_USER_CM_CMD_LEAVE_MCAST,
        RDMA_USER_CM_CMD_MIGRATE_ID, RDMA_USER_CM_CMD_QUERY, RDMA_USER_CM_CMD_BIND,
        RDMA_USER_CM_CMD_RESOLVE_ADDR, RDMA_USER_CM_CMD_JOIN_MCAST, RDMA_PS_IPOIB, RDMA_PS_IB,
        RDMA_PS_TCP, RDMA_PS_UDP, RDMA_USER_CM_QUERY_ADDR, RDMA_USER_CM_QUERY_PATH,
        RDMA_USER_CM_QUERY_GID, RDMA_MC_JOIN_FLAG_FULLMEMBER,
        RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, RDMA_MC_JOIN_FLAG_RESERVED, RDMA_OPTION_ID,
        RDMA_OPTION_IB, RDMA_OPTION_ID_TOS, RDMA_OPTION_ID_REUSEADDR, RDMA_OPTION_ID_AFONLY,
        RDMA_OPTION_ID_ACK_TIMEOUT, RDMA_OPTION_IB_PATH,
    }
    exprs {
        "RDMA_VERBS_IOCTL_NR" => (RDMA_VERBS_IOCTL_NR, "_IOC_NR(RDMA_VERBS_IOCTL)"),
        "RDMA_VERBS_IOCTL_TYPE" => (RDMA_IOCTL_MAGIC, "_IOC_TYPE(RDMA_VERBS_IOCTL)"),
        "RDMA_VERBS_IOCTL_SIZE" => (core::mem::size_of::<ib_uverbs_ioctl_hdr>(), "_IOC_SIZE(RDMA_VERBS_IOCTL)"),
        "NETLINK_RDMA" => (NETLINK_RDMA, "NETLINK_RDMA"),
        "rdma_nl_get_type(NLDEV, CMD_GET)" => (
            rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
            "RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)"
        ),
        "rdma_nl_get_type(NLDEV, CMD_GET_CHARDEV)" => (
            rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV),
            "RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV)"
        ),
        "rdma_nl_get_client(0x140f)" => (rdma_nl_get_client(0x140f), "RDMA_NL_GET_CLIENT(0x140f)"),
        "rdma_nl_get_op(0x140f)" => (rdma_nl_get_op(0x140f), "RDMA_NL_GET_OP(0x140f)"),
    }
}
