//! Source compatibility with the `ibverbs` crate 0.9.2: this file names the API the way programs
//! written against `ibverbs` do (paths, signatures, trait impls, constants), so a break is a compile
//! error here. It needs no device: the checks are types and values.

use std::io;

use uverbs as ibverbs;

use ibverbs::{
    ibv_access_flags, ibv_gid_type, ibv_qp_type, ibv_wc, ibv_wc_opcode, ibv_wc_status,
    CompletionQueue, Context, Device, DeviceList, Gid, GidEntry, Guid, MemoryRegion,
    PreparedQueuePair, ProtectionDomain, QueuePair, QueuePairBuilder, QueuePairEndpoint, RemoteKey,
};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn public_types_are_send_and_sync_as_in_ibverbs() {
    assert_send_sync::<DeviceList>();
    assert_send_sync::<Device<'static>>();
    assert_send_sync::<Context>();
    assert_send_sync::<CompletionQueue<'static>>();
    assert_send_sync::<ProtectionDomain<'static>>();
    assert_send_sync::<QueuePair<'static>>();
    assert_send_sync::<MemoryRegion<u8>>();
    assert_send_sync::<QueuePairBuilder<'static>>();
    assert_send_sync::<PreparedQueuePair<'static>>();
    assert_send_sync::<QueuePairEndpoint>();
    assert_send_sync::<RemoteKey>();
}

#[test]
fn signatures_are_those_of_ibverbs() {
    let _: fn() -> io::Result<DeviceList> = ibverbs::devices;
    let _: fn(&DeviceList) -> usize = DeviceList::len;
    let _: fn(&DeviceList) -> bool = DeviceList::is_empty;
    fn get(l: &DeviceList) -> Option<Device<'_>> {
        l.get(0)
    }
    let _ = get;
    let _ = |l: &DeviceList| -> Vec<Option<std::ffi::CString>> {
        l.iter()
            .map(|d: Device<'_>| d.name().map(|n| n.to_owned()))
            .collect()
    };
    let _ = |l: &DeviceList| l.into_iter().count();
    let _ = |d: &Device<'_>| -> (io::Result<Context>, io::Result<Guid>, io::Result<i32>) {
        (d.open(), d.guid(), d.index())
    };
    fn cq(c: &Context) -> io::Result<CompletionQueue<'_>> {
        c.create_cq(16, 0isize)
    }
    fn pd(c: &Context) -> io::Result<ProtectionDomain<'_>> {
        c.alloc_pd()
    }
    fn gids(c: &Context) -> &[GidEntry] {
        c.gid_table()
    }
    let _ = (cq, pd, gids);
    let _ = |pd: &ProtectionDomain<'_>| -> io::Result<MemoryRegion<u64>> { pd.allocate::<u64>(2) };
    let _ = |cq: &CompletionQueue<'_>, wcs: &mut [ibv_wc]| -> usize {
        cq.poll(wcs).map(|w| w.len()).unwrap_or(0)
    };
    let _ = |pd: &ProtectionDomain<'_>, cq: &CompletionQueue<'_>| -> io::Result<()> {
        let prepared = pd
            .create_qp(cq, cq, ibv_qp_type::IBV_QPT_RC)
            .set_access(ibv_access_flags::IBV_ACCESS_LOCAL_WRITE)
            .allow_remote_rw()
            .set_gid_index(1)
            .set_min_rnr_timer(16)
            .set_timeout(4)
            .set_retry_count(6)
            .set_rnr_retry(6)
            .set_max_rd_atomic(1)
            .set_max_dest_rd_atomic(1)
            .set_path_mtu(5)
            .set_rq_psn(0)
            .set_context(0)
            .set_max_send_wr(1)
            .set_max_recv_wr(1)
            .build()?;
        let endpoint: QueuePairEndpoint = prepared.endpoint();
        let mut qp: QueuePair<'_> = prepared.handshake(endpoint)?;
        let mut mr = pd.allocate::<u8>(8)?;
        // SAFETY: never called.
        unsafe {
            qp.post_receive(&mut mr, 0..1, 1)?;
            qp.post_receive(&mut mr, ..1, 1)?;
            qp.post_send(&mut mr, 1.., 2)?;
            qp.post_send(&mut mr, .., 2)?;
        }
        let _: RemoteKey = mr.rkey();
        let _: u32 = mr.rkey().key;
        let _: &[u8] = &mr;
        Ok(())
    };
}

#[test]
fn work_completions_behave_as_in_ibverbs() {
    let wc = ibv_wc::default();
    assert!(!wc.is_valid());
    assert_eq!(wc.error(), Some((ibv_wc_status::IBV_WC_GENERAL_ERR, 0)));
    assert_eq!(wc.opcode(), ibv_wc_opcode::IBV_WC_LOCAL_INV);
    assert_eq!(wc.wr_id(), 0);
    assert_eq!(wc.len(), 0);
    assert_eq!(wc.imm_data(), None);
    let _: (u32, u32, u32, u16, u16, u8, u8) = (
        wc.imm_data,
        wc.qp_num,
        wc.src_qp,
        wc.pkey_index,
        wc.slid,
        wc.sl,
        wc.dlid_path_bits,
    );
    assert_eq!(wc.wc_flags.0, 0);
    let _: ibv_wc_status::Type = ibv_wc_status::IBV_WC_SUCCESS;
    assert_eq!(std::mem::size_of::<ibv_wc>(), 48);
}

#[test]
fn constants_and_flags_have_ibverbs_values() {
    assert_eq!(ibv_qp_type::IBV_QPT_RC, 2);
    assert_eq!(ibv_qp_type::IBV_QPT_UC, 3);
    assert_eq!(ibv_qp_type::IBV_QPT_UD, 4);
    let all = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
        | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
        | ibv_access_flags::IBV_ACCESS_REMOTE_READ
        | ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC;
    assert_eq!(all, ibv_access_flags(0xf));
    let mut a = ibv_access_flags(1);
    a |= ibv_access_flags(2);
    a &= ibv_access_flags(3);
    assert_eq!(a.0, 3);
    let _: ibv_gid_type = 2u32;
    assert_eq!(ibv_wc_opcode::IBV_WC_RECV, 128);
}

#[test]
fn gids_guids_and_endpoints_convert_as_in_ibverbs() {
    let gid = Gid::from(std::net::Ipv6Addr::LOCALHOST);
    assert_eq!(gid.interface_id(), 1);
    assert_eq!(gid.subnet_prefix(), 0);
    let raw: ibverbs::ibv_gid = gid.into();
    assert_eq!(Gid::from(raw), gid);
    let by_ref: &ibverbs::ibv_gid = gid.as_ref();
    assert_eq!(Gid::from(*by_ref), gid);
    let guid = Guid::from(0x0002_c903_0031_7f20u64);
    assert_eq!(u64::from(guid), 0x0002_c903_0031_7f20);
    assert_eq!(guid.oui(), 0x0002c9);
    assert!(!guid.is_reserved());
    let be: &u64 = guid.as_ref();
    assert_eq!(*be, 0x0002_c903_0031_7f20u64.to_be());
    let e = QueuePairEndpoint {
        num: 0x11,
        lid: 0x22,
        gid: Some(gid),
    };
    assert_eq!(e, e.clone());
}
