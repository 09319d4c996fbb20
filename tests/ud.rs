//! Unreliable datagrams end to end: UD queue pairs activated with a Q_Key, address handles, the
//! 40-byte GRH area in front of every received datagram, wrong-Q_Key datagrams dropped, the MTU
//! limit, UD and connected sends kept apart, address handles outliving their protection domain,
//! and multicast groups.

mod common;

use std::net::{Ipv4Addr, Ipv6Addr, UdpSocket};
use std::time::{Duration, Instant};

use common::verbs::{handshake, poll_n};
use common::{any_device, TestDevice};
use uverbs::{
    ibv_qp_type, ibv_wc, ibv_wc_flags, ibv_wc_opcode, AddressHandle, AddressVector, CommandPath,
    CompletionQueue, Context, ErrorExt, Gid, GidEntry, ProtectionDomain, QueuePair, ReceiveRequest,
    SendRequest, Verb, MULTICAST_QPN,
};
use uverbs_drivers::Error;

const GID_INDEX: u32 = 1;
const QKEY: u32 = 0x1111_1111;
/// The GRH area at the start of every UD receive buffer.
const GRH: usize = 40;

/// A UD queue pair in RTS, and its GID.
fn ud_qp<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
    qkey: u32,
) -> (QueuePair<'a>, Gid) {
    let prepared = pd
        .create_qp(cq, cq, ibv_qp_type::IBV_QPT_UD)
        .set_gid_index(GID_INDEX)
        .set_qkey(qkey)
        .set_max_send_wr(8)
        .set_max_recv_wr(8)
        // Two entries per request: mlx5 grants exactly what is asked (rxe rounds up).
        .set_max_send_sge(2)
        .set_max_recv_sge(2)
        .set_max_inline_data(64)
        .build()
        .unwrap();
    let gid = prepared.endpoint().gid.expect("a GID index was set");
    (prepared.activate_ud().unwrap(), gid)
}

/// The device opened on both command paths.
fn contexts(dev: &TestDevice) -> Vec<(&'static str, Context)> {
    vec![
        ("ioctl", dev.open_with(CommandPath::Auto)),
        ("write", dev.open_with(CommandPath::LegacyWrite)),
    ]
}

fn av_to(dgid: Gid) -> AddressVector {
    AddressVector {
        dgid: Some(dgid),
        sgid_index: GID_INDEX as u8,
        hop_limit: 64,
        port_num: 1,
        ..AddressVector::default()
    }
}

fn ah_to(pd: &ProtectionDomain<'_>, dgid: Gid) -> AddressHandle {
    pd.create_ah(&av_to(dgid)).unwrap()
}

/// Whatever completes within `wait`.
fn poll_for(cq: &CompletionQueue<'_>, wait: Duration) -> Vec<ibv_wc> {
    let mut out = Vec::new();
    let mut buf = [ibv_wc::default(); 16];
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        out.extend_from_slice(cq.poll(&mut buf).unwrap());
        std::thread::sleep(Duration::from_millis(5));
    }
    out
}

fn one(wcs: &[ibv_wc], wr_id: u64) -> ibv_wc {
    let found: Vec<&ibv_wc> = wcs.iter().filter(|w| w.wr_id() == wr_id).collect();
    assert_eq!(found.len(), 1, "completions for wr_id {wr_id}: {wcs:?}");
    *found[0]
}

/// Posts; the regions in these tests outlive their queue pairs and are only read after completion.
fn post(qp: &QueuePair<'_>, reqs: &[SendRequest<'_>]) {
    // SAFETY: see above.
    unsafe { qp.post_send_list(reqs) }.unwrap();
}

fn post_recv(qp: &QueuePair<'_>, reqs: &[ReceiveRequest<'_>]) {
    // SAFETY: see `post`.
    unsafe { qp.post_receive_list(reqs) }.unwrap();
}

fn fill(buf: &mut [u8], seed: u8) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(13).wrapping_add(seed);
    }
}

fn assert_invalid_argument(e: &std::io::Error) {
    assert!(
        matches!(e.uverbs_error(), Some(Error::InvalidArgument { .. })),
        "expected a typed InvalidArgument, got {e}"
    );
}

/// The GRH area holds the IP header of the datagram: IPv6 (40 bytes), or for an IPv4 GID 20 zero
/// bytes, then the IPv4 header. Either way the source address is the sender's GID.
fn assert_grh_from(grh: &[u8], sender: Gid) {
    let g = sender.bytes();
    let ipv4_mapped = g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
    if ipv4_mapped {
        assert_eq!(&grh[..20], &[0u8; 20], "IPv4: 20 zero bytes first");
        assert_eq!(grh[20] >> 4, 4, "an IPv4 header: {grh:02x?}");
        assert_eq!(&grh[32..36], &g[12..], "source address: {grh:02x?}");
    } else {
        assert_eq!(grh[0] >> 4, 6, "an IPv6 header: {grh:02x?}");
        assert_eq!(&grh[8..24], &g, "source GID: {grh:02x?}");
    }
}

#[test]
fn ud_datagrams_land_after_the_grh() {
    let Some(dev) = any_device("ud_datagrams_land_after_the_grh") else {
        return;
    };
    for (path, ctx) in contexts(&dev) {
        eprintln!("command path: {path}");
        let cq = ctx.create_cq(32, 0).unwrap();
        let pd = ctx.alloc_pd().unwrap();
        let (a, a_gid) = ud_qp(&pd, &cq, QKEY);
        let (b, b_gid) = ud_qp(&pd, &cq, QKEY);
        let ah = ah_to(&pd, b_gid);
        assert_eq!(ah.address_vector(), av_to(b_gid));
        let mut tx = pd.allocate::<u8>(300).unwrap();
        fill(&mut tx, 5);
        let rx = pd.allocate::<u8>(3 * 256).unwrap();
        post_recv(
            &b,
            &[
                ReceiveRequest::new(1, &[rx.sge(..256).unwrap()]),
                ReceiveRequest::new(2, &[rx.sge(256..512).unwrap()]),
                ReceiveRequest::new(3, &[rx.sge(512..).unwrap()]),
            ],
        );
        let inline = [0xa5u8; 33];
        post(
            &a,
            &[
                SendRequest::send_ud(10, &[tx.sge(..100).unwrap()], &ah, b.qp_num(), QKEY),
                SendRequest::send_ud_with_imm(
                    11,
                    &[tx.sge(100..150).unwrap(), tx.sge(200..210).unwrap()],
                    &ah,
                    b.qp_num(),
                    QKEY,
                    0x0102_0304,
                ),
                SendRequest::send_ud_inline(12, &inline, &ah, b.qp_num(), QKEY),
            ],
        );
        let wcs = poll_n(&cq, 6);
        for id in [10, 11, 12] {
            let s = one(&wcs, id);
            assert!(s.is_valid(), "send {id}: {:?}", s.error());
            assert_eq!(s.opcode(), ibv_wc_opcode::IBV_WC_SEND);
        }
        let expected: [(u64, usize, Vec<u8>); 3] = [
            (1, 0, tx[..100].to_vec()),
            (2, 256, [&tx[100..150], &tx[200..210]].concat()),
            (3, 512, inline.to_vec()),
        ];
        for (wr_id, at, payload) in expected {
            let r = one(&wcs, wr_id);
            assert!(r.is_valid(), "receive {wr_id}: {:?}", r.error());
            assert_eq!(r.opcode(), ibv_wc_opcode::IBV_WC_RECV);
            assert_eq!(r.len(), GRH + payload.len(), "byte_len counts the GRH area");
            assert_eq!(r.qp_num, b.qp_num());
            assert_eq!(r.src_qp, a.qp_num(), "the sender's QPN");
            assert_ne!((r.wc_flags & ibv_wc_flags::IBV_WC_GRH).0, 0, "GRH flag");
            assert_grh_from(&rx[at..at + GRH], a_gid);
            assert_eq!(&rx[at + GRH..at + GRH + payload.len()], &payload[..]);
        }
        let r = one(&wcs, 2);
        assert_eq!(r.imm_data().map(u32::from_be), Some(0x0102_0304));
        assert_ne!((r.wc_flags & ibv_wc_flags::IBV_WC_WITH_IMM).0, 0);
    }
}

#[test]
fn ud_datagram_with_the_wrong_qkey_is_dropped() {
    let Some(dev) = any_device("ud_datagram_with_the_wrong_qkey_is_dropped") else {
        return;
    };
    let ctx = dev.open();
    let send_cq = ctx.create_cq(16, 0).unwrap();
    let recv_cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (a, _) = ud_qp(&pd, &send_cq, QKEY);
    let (b, b_gid) = {
        let prepared = pd
            .create_qp(&recv_cq, &recv_cq, ibv_qp_type::IBV_QPT_UD)
            .set_gid_index(GID_INDEX)
            .set_qkey(QKEY)
            .build()
            .unwrap();
        let gid = prepared.endpoint().gid.unwrap();
        // `handshake` on a UD queue pair is `activate_ud`: the remote endpoint is not used.
        let ep = prepared.endpoint();
        (prepared.handshake(ep).unwrap(), gid)
    };
    assert_eq!(b.query().unwrap().qkey, Some(QKEY));
    let ah = ah_to(&pd, b_gid);
    let mut tx = pd.allocate::<u8>(64).unwrap();
    fill(&mut tx, 1);
    let rx = pd.allocate::<u8>(GRH + 64).unwrap();
    post_recv(&b, &[ReceiveRequest::new(1, &[rx.sge(..).unwrap()])]);
    let wrong = [tx.sge(..32).unwrap()];
    post(
        &a,
        &[SendRequest::send_ud(2, &wrong, &ah, b.qp_num(), QKEY ^ 1)],
    );
    // The sender sees success: UD has no acknowledgements.
    let s = poll_n(&send_cq, 1)[0];
    assert!(s.is_valid(), "{:?}", s.error());
    let got = poll_for(&recv_cq, Duration::from_millis(500));
    assert!(
        got.is_empty(),
        "a wrong-Q_Key datagram was received: {got:?}"
    );
    let right = [tx.sge(32..).unwrap()];
    post(
        &a,
        &[SendRequest::send_ud(3, &right, &ah, b.qp_num(), QKEY)],
    );
    assert!(poll_n(&send_cq, 1)[0].is_valid());
    let r = poll_n(&recv_cq, 1)[0];
    assert!(r.is_valid(), "{:?}", r.error());
    assert_eq!((r.wr_id(), r.len()), (1, GRH + 32));
    assert_eq!(&rx[GRH..GRH + 32], &tx[32..]);
}

#[test]
fn ud_datagram_larger_than_the_mtu_is_refused() {
    let Some(dev) = any_device("ud_datagram_larger_than_the_mtu_is_refused") else {
        return;
    };
    let ctx = dev.open();
    let mtu = ctx.query_port(1).unwrap().active_mtu().bytes().unwrap() as usize;
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (a, _) = ud_qp(&pd, &cq, QKEY);
    let (b, b_gid) = ud_qp(&pd, &cq, QKEY);
    let ah = ah_to(&pd, b_gid);
    let mut tx = pd.allocate::<u8>(mtu + 1).unwrap();
    fill(&mut tx, 9);
    let rx = pd.allocate::<u8>(GRH + mtu + 1).unwrap();
    post_recv(&b, &[ReceiveRequest::new(1, &[rx.sge(..).unwrap()])]);
    let too_big = [tx.sge(..).unwrap()];
    let exact = [tx.sge(..mtu).unwrap()];
    // The first request goes, the second is refused (the kernel would report success and send
    // nothing), the third is not posted.
    let reqs = [
        SendRequest::send_ud(2, &exact, &ah, b.qp_num(), QKEY),
        SendRequest::send_ud(3, &too_big, &ah, b.qp_num(), QKEY),
        SendRequest::send_ud(4, &exact, &ah, b.qp_num(), QKEY),
    ];
    // SAFETY: as in `post`.
    let e = unsafe { a.post_send_list(&reqs) }.unwrap_err();
    assert_eq!(e.index, 1);
    assert_invalid_argument(&e.error);
    let wcs = poll_n(&cq, 2);
    assert!(one(&wcs, 2).is_valid());
    let r = one(&wcs, 1);
    assert!(r.is_valid(), "{:?}", r.error());
    assert_eq!(r.len(), GRH + mtu, "a datagram of exactly the MTU arrives");
    assert_eq!(&rx[GRH..GRH + mtu], &tx[..mtu]);
    let more = poll_for(&cq, Duration::from_millis(300));
    assert!(
        more.is_empty(),
        "nothing after the refused request: {more:?}"
    );
}

#[test]
fn ud_and_connected_sends_do_not_mix() {
    let Some(dev) = any_device("ud_and_connected_sends_do_not_mix") else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (ud, ud_gid) = ud_qp(&pd, &cq, QKEY);
    let ah = ah_to(&pd, ud_gid);
    let build_rc = || {
        pd.create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
            .set_gid_index(GID_INDEX)
            .build()
            .unwrap()
    };
    let (x, y) = (build_rc(), build_rc());
    // A connected queue pair is not activated without its peer.
    let e = build_rc().activate_ud().unwrap_err();
    assert_invalid_argument(&e);
    let (rc, _peer) = handshake(x, y);
    let mut mr = pd.allocate::<u8>(64).unwrap();
    let sge = [mr.sge(..8).unwrap()];
    // A UD destination on an RC queue pair.
    let req = SendRequest::send_ud(1, &sge, &ah, ud.qp_num(), QKEY);
    // SAFETY: as in `post` (nothing is posted).
    let e = unsafe { rc.post_send_list(&[req]) }.unwrap_err();
    assert_eq!(e.index, 0);
    assert_invalid_argument(&e.error);
    // A send without a destination on a UD queue pair, in both API styles.
    // SAFETY: as in `post` (nothing is posted).
    let e = unsafe { ud.post_send_list(&[SendRequest::send(2, &sge)]) }.unwrap_err();
    assert_invalid_argument(&e.error);
    let mut ud = ud;
    // SAFETY: as in `post` (nothing is posted).
    let e = unsafe { ud.post_send(&mut mr, ..8, 3) }.unwrap_err();
    assert_invalid_argument(&e);
    // An address handle of another protection domain.
    let pd2 = ctx.alloc_pd().unwrap();
    let foreign = ah_to(&pd2, ud_gid);
    let req = SendRequest::send_ud(4, &sge, &foreign, ud.qp_num(), QKEY);
    // SAFETY: as in `post` (nothing is posted).
    let e = unsafe { ud.post_send_list(&[req]) }.unwrap_err();
    assert_invalid_argument(&e.error);
    // A QPN beyond 24 bits.
    let req = SendRequest::send_ud(5, &sge, &ah, 1 << 24, QKEY);
    // SAFETY: as in `post` (nothing is posted).
    let e = unsafe { ud.post_send_list(&[req]) }.unwrap_err();
    assert_invalid_argument(&e.error);
    // Address vectors RoCE cannot route, and multicast on a connected queue pair.
    for av in [
        AddressVector {
            dgid: None,
            ..av_to(ud_gid)
        },
        AddressVector {
            port_num: 0,
            ..av_to(ud_gid)
        },
        AddressVector {
            sgid_index: 200,
            ..av_to(ud_gid)
        },
    ] {
        assert_invalid_argument(&pd.create_ah(&av).unwrap_err());
    }
    let mgid = Gid::from("ff0e::1:2".parse::<Ipv6Addr>().unwrap());
    assert_invalid_argument(&rc.attach_mcast(&mgid, 0).unwrap_err());
    assert_invalid_argument(&ud.attach_mcast(&ud_gid, 0).unwrap_err());
    assert!(
        poll_for(&cq, Duration::from_millis(200)).is_empty(),
        "nothing was posted"
    );
}

#[test]
fn ud_address_handle_outlives_its_protection_domain() {
    let Some(dev) = any_device("ud_address_handle_outlives_its_protection_domain") else {
        return;
    };
    let drop_errors = uverbs_drivers::drop_errors();
    for (path, ctx) in contexts(&dev) {
        eprintln!("command path: {path}");
        let cq = ctx.create_cq(16, 0).unwrap();
        // An address handle alone keeps its domain alive: dropped first, the domain is not destroyed
        // (the kernel would refuse while the handle exists, and `Drop` would report that).
        let gid = ctx
            .gid_table()
            .iter()
            .find(|e| e.gid_index == GID_INDEX && e.port_num == 1)
            .unwrap()
            .gid;
        let lone_pd = ctx.alloc_pd().unwrap();
        let lone = ah_to(&lone_pd, gid);
        drop(lone_pd);
        drop(lone);
        // A handle used for a send, then dropped after everything else of its domain.
        let pd = ctx.alloc_pd().unwrap();
        let rx = pd.allocate::<u8>(GRH + 16).unwrap();
        let mut tx = pd.allocate::<u8>(16).unwrap();
        fill(&mut tx, 3);
        let (a, _) = ud_qp(&pd, &cq, QKEY);
        let (b, b_gid) = ud_qp(&pd, &cq, QKEY);
        let ah = ah_to(&pd, b_gid);
        post_recv(&b, &[ReceiveRequest::new(1, &[rx.sge(..).unwrap()])]);
        post(
            &a,
            &[SendRequest::send_ud(
                2,
                &[tx.sge(..).unwrap()],
                &ah,
                b.qp_num(),
                QKEY,
            )],
        );
        let wcs = poll_n(&cq, 2);
        assert!(
            one(&wcs, 1).is_valid() && one(&wcs, 2).is_valid(),
            "{wcs:?}"
        );
        assert_eq!(&rx[GRH..], &tx[..]);
        drop(a);
        drop(b);
        drop(rx);
        drop(tx);
        drop(pd);
        drop(ah);
        assert_eq!(
            uverbs_drivers::drop_errors(),
            drop_errors,
            "no destroy failed"
        );
    }
}

#[test]
fn ud_multicast_reaches_every_attached_qp() {
    let Some(dev) = any_device("ud_multicast_reaches_every_attached_qp") else {
        return;
    };
    for (path, ctx) in contexts(&dev) {
        eprintln!("command path: {path}");
        let send_cq = ctx.create_cq(16, 0).unwrap();
        let cq_b = ctx.create_cq(16, 0).unwrap();
        let cq_c = ctx.create_cq(16, 0).unwrap();
        let pd = ctx.alloc_pd().unwrap();
        let (a, a_gid) = ud_qp(&pd, &send_cq, QKEY);
        let (b, _) = ud_qp(&pd, &cq_b, QKEY);
        let (c, _) = ud_qp(&pd, &cq_c, QKEY);
        let mgid = multicast_gid(a_gid);
        let local = *ctx
            .gid_table()
            .iter()
            .find(|e| e.gid_index == GID_INDEX && e.port_num == 1)
            .unwrap();
        // RoCE v2 carries the datagrams as IP multicast: the host must be a member of the group on
        // the device's interface, or IP drops them (rdma_cm would join it; verbs alone do not).
        let _membership = join_ip_group(mgid, &local);
        b.attach_mcast(&mgid, 0).unwrap();
        b.attach_mcast(&mgid, 0).unwrap(); // Twice is once.
        c.attach_mcast(&mgid, 0).unwrap();
        let group = ah_to(&pd, mgid);
        let mut tx = pd.allocate::<u8>(64).unwrap();
        fill(&mut tx, 7);
        let rx_b = pd.allocate::<u8>(2 * (GRH + 64)).unwrap();
        let rx_c = pd.allocate::<u8>(2 * (GRH + 64)).unwrap();
        for (qp, rx) in [(&b, &rx_b), (&c, &rx_c)] {
            post_recv(
                qp,
                &[
                    ReceiveRequest::new(1, &[rx.sge(..GRH + 64).unwrap()]),
                    ReceiveRequest::new(2, &[rx.sge(GRH + 64..).unwrap()]),
                ],
            );
        }
        let first = [tx.sge(..48).unwrap()];
        post(
            &a,
            &[SendRequest::send_ud(
                10,
                &first,
                &group,
                MULTICAST_QPN,
                QKEY,
            )],
        );
        assert!(poll_n(&send_cq, 1)[0].is_valid());
        for (cq, rx) in [(&cq_b, &rx_b), (&cq_c, &rx_c)] {
            let r = poll_n(cq, 1)[0];
            assert!(r.is_valid(), "{:?}", r.error());
            assert_eq!((r.wr_id(), r.len()), (1, GRH + 48));
            assert_eq!(r.src_qp, a.qp_num());
            assert_eq!(&rx[GRH..GRH + 48], &tx[..48]);
        }
        // Detached, C no longer receives; B still does.
        c.detach_mcast(&mgid, 0).unwrap();
        let second = [tx.sge(48..).unwrap()];
        post(
            &a,
            &[SendRequest::send_ud(
                11,
                &second,
                &group,
                MULTICAST_QPN,
                QKEY,
            )],
        );
        assert!(poll_n(&send_cq, 1)[0].is_valid());
        let r = poll_n(&cq_b, 1)[0];
        assert_eq!((r.wr_id(), r.len()), (2, GRH + 16));
        assert_eq!(&rx_b[2 * GRH + 64..2 * GRH + 64 + 16], &tx[48..]);
        let got = poll_for(&cq_c, Duration::from_millis(500));
        assert!(got.is_empty(), "a detached queue pair received: {got:?}");
        // B is still attached when dropped: it is detached first, so its destruction succeeds.
        let drop_errors = uverbs_drivers::drop_errors();
        drop((a, b, c));
        assert_eq!(
            uverbs_drivers::drop_errors(),
            drop_errors,
            "no destroy failed"
        );
    }
}

/// Joins the IP multicast group `mgid` on the interface of `local`, for as long as the socket is
/// open.
fn join_ip_group(mgid: Gid, local: &GidEntry) -> UdpSocket {
    let (group, iface) = (mgid.to_ipv6(), local.gid.to_ipv6());
    match (group.to_ipv4_mapped(), iface.to_ipv4_mapped()) {
        (Some(group), Some(iface)) => {
            let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
            s.join_multicast_v4(&group, &iface).unwrap();
            s
        }
        _ => {
            let s = UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0)).unwrap();
            s.join_multicast_v6(&group, local.ndev_ifindex).unwrap();
            s
        }
    }
}

/// A multicast group GID of the same family as `local`: an IPv4-mapped 239.x group for an IPv4
/// GID (RoCE v2 routes by the source GID's family), an `ff0e::` one otherwise.
fn multicast_gid(local: Gid) -> Gid {
    let g = local.bytes();
    if g[..10] == [0; 10] && g[10..12] == [0xff, 0xff] {
        Gid::from(Ipv4Addr::new(239, 1, 2, 3).to_ipv6_mapped())
    } else {
        Gid::from("ff0e::1:2".parse::<Ipv6Addr>().unwrap())
    }
}

#[test]
fn a_reply_goes_back_through_an_address_handle_made_from_the_completion() {
    let Some(dev) =
        any_device("a_reply_goes_back_through_an_address_handle_made_from_the_completion")
    else {
        return;
    };
    let ctx = dev.open();
    let cq = ctx.create_cq(32, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (a, a_gid) = ud_qp(&pd, &cq, QKEY);
    let (b, b_gid) = ud_qp(&pd, &cq, QKEY);
    let mut tx = pd.allocate::<u8>(64).unwrap();
    fill(&mut tx, 9);
    let rx = pd.allocate::<u8>(2 * 256).unwrap();
    post_recv(&b, &[ReceiveRequest::new(1, &[rx.sge(..256).unwrap()])]);
    post_recv(&a, &[ReceiveRequest::new(2, &[rx.sge(256..).unwrap()])]);
    let to_b = ah_to(&pd, b_gid);
    post(
        &a,
        &[SendRequest::send_ud(
            10,
            &[tx.sge(..32).unwrap()],
            &to_b,
            b.qp_num(),
            QKEY,
        )],
    );
    let wcs = poll_n(&cq, 2);
    let got = one(&wcs, 1);
    assert!(got.is_valid(), "{:?}", got.error());
    let grh = &rx[..GRH];

    // The route back: to A's GID, from the GID index A sent to, as the packet came.
    let av = AddressVector::from_completion(&ctx, 1, &got, grh)
        .unwrap_or_else(|e| panic!("{e}: GRH area {grh:02x?}"));
    assert_eq!(av.dgid, Some(a_gid));
    assert_eq!(u32::from(av.sgid_index), GID_INDEX);
    assert_eq!(av.port_num, 1);
    assert_eq!(
        av.hop_limit,
        av_to(b_gid).hop_limit,
        "the sender's hop limit"
    );
    let back = pd.create_ah_from_wc(1, &got, grh).unwrap();
    assert_eq!(back.address_vector(), av);
    post(
        &b,
        &[SendRequest::send_ud(
            11,
            &[tx.sge(32..).unwrap()],
            &back,
            got.src_qp,
            QKEY,
        )],
    );
    let wcs = poll_n(&cq, 2);
    let reply = one(&wcs, 2);
    assert!(reply.is_valid(), "{:?}", reply.error());
    assert_eq!(reply.src_qp, b.qp_num());
    assert_grh_from(&rx[256..256 + GRH], b_gid);
    assert_eq!(&rx[256 + GRH..256 + GRH + 32], &tx[32..]);

    // What cannot give a route: typed errors naming CREATE_AH.
    let mut no_grh = got;
    no_grh.wc_flags = ibv_wc_flags(no_grh.wc_flags.0 & !ibv_wc_flags::IBV_WC_GRH.0);
    let mut garbage = grh.to_vec();
    garbage[20..].fill(0);
    garbage[..4].fill(0);
    let mut to_group = grh.to_vec();
    if got_ipv4(grh) {
        to_group[36] = 0xe0; // 224.x.x.x
        fix_ipv4_checksum(&mut to_group[20..]);
    } else {
        to_group[24] = 0xff;
    }
    let mut elsewhere = grh.to_vec();
    if got_ipv4(grh) {
        elsewhere[39] ^= 0x40; // another host's address
        fix_ipv4_checksum(&mut elsewhere[20..]);
    } else {
        elsewhere[39] ^= 0x40;
    }
    for (what, wc, g) in [
        ("no GRH", no_grh, grh),
        ("a short GRH area", got, &grh[..39]),
        ("no IP header", got, &garbage[..]),
        ("a multicast destination", got, &to_group[..]),
        (
            "a destination that is no GID of the port",
            got,
            &elsewhere[..],
        ),
    ] {
        let err = pd.create_ah_from_wc(1, &wc, g).unwrap_err();
        assert!(
            matches!(
                err.uverbs_error(),
                Some(Error::InvalidArgument {
                    verb: Verb::CreateAh,
                    ..
                })
            ),
            "{what}: {err}"
        );
    }
}

fn got_ipv4(grh: &[u8]) -> bool {
    grh[20] == 0x45
}

/// Recomputes the checksum of the IPv4 header at the start of `h`.
fn fix_ipv4_checksum(h: &mut [u8]) {
    h[10..12].fill(0);
    let check = uverbs_drivers::gid::ipv4_checksum(h[..20].try_into().unwrap());
    h[10..12].copy_from_slice(&check.to_be_bytes());
}

#[test]
fn a_batch_of_datagrams_goes_out_whole_or_not_at_all() {
    let Some(dev) = any_device("a_batch_of_datagrams_goes_out_whole_or_not_at_all") else {
        return;
    };
    let ctx = dev.open();
    let mtu = ctx.query_port(1).unwrap().active_mtu().bytes().unwrap() as usize;
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let (mut a, _) = ud_qp(&pd, &cq, QKEY);
    let (mut b, b_gid) = ud_qp(&pd, &cq, QKEY);
    let ah = ah_to(&pd, b_gid);
    let mut tx = pd.allocate::<u8>(mtu + 1).unwrap();
    fill(&mut tx, 3);
    let rx = pd.allocate::<u8>(2 * (GRH + 64)).unwrap();
    let r: Vec<_> = (0..2)
        .map(|i| [rx.sge(i * (GRH + 64)..(i + 1) * (GRH + 64)).unwrap()])
        .collect();
    let mut rb = b.start_recv();
    rb.recv(1, &r[0]);
    rb.recv(2, &r[1]);
    // SAFETY: `rx` outlives the receives and is read after their completions.
    unsafe { rb.submit() }.unwrap();

    // A datagram over the MTU refuses the whole batch: the fine one before it is not sent either.
    let small = [tx.sge(..64).unwrap()];
    let too_big = [tx.sge(..).unwrap()];
    let bq = b.qp_num();
    let mut batch = a.start_send();
    batch.to(&ah, bq, QKEY).signaled().send(10, &small);
    batch.to(&ah, bq, QKEY).signaled().send(11, &too_big);
    // SAFETY: `tx` outlives the requests.
    let e = unsafe { batch.submit() }.unwrap_err();
    assert_eq!(e.index, 1);
    assert_invalid_argument(&e.error);
    let none = poll_for(&cq, Duration::from_millis(300));
    assert!(none.is_empty(), "a refused batch sent something: {none:?}");

    // The backend refuses one (more inline data than the queue pair takes): the datagram before
    // it is not sent either.
    let long = vec![7u8; a.caps().max_inline_data as usize + 1];
    let mut batch = a.start_send();
    batch.to(&ah, bq, QKEY).signaled().send(13, &small);
    batch.to(&ah, bq, QKEY).signaled().send_inline(14, &long);
    // SAFETY: as above.
    let e = unsafe { batch.submit() }.unwrap_err();
    assert_eq!(e.index, 1);
    assert_invalid_argument(&e.error);
    assert!(poll_for(&cq, Duration::from_millis(300)).is_empty());

    // A datagram without a destination is refused too (UD needs one).
    let mut batch = a.start_send();
    batch.signaled().send(12, &small);
    // SAFETY: as above.
    let e = unsafe { batch.submit() }.unwrap_err();
    assert_eq!(e.index, 0);
    assert!(poll_for(&cq, Duration::from_millis(300)).is_empty());

    // Two datagrams, one with immediate data, one inline, both in one batch.
    let mut batch = a.start_send();
    batch
        .to(&ah, bq, QKEY)
        .signaled()
        .send_imm(20, &small, 0x0102_0304);
    batch
        .signaled()
        .to(&ah, bq, QKEY)
        .send_inline(21, b"inline datagram");
    // SAFETY: as above.
    unsafe { batch.submit() }.unwrap();
    let wcs = poll_n(&cq, 4);
    assert!(one(&wcs, 20).is_valid() && one(&wcs, 21).is_valid());
    let (r1, r2) = (one(&wcs, 1), one(&wcs, 2));
    assert_eq!((r1.len(), r2.len()), (GRH + 64, GRH + 15));
    assert_eq!(r1.imm_data(), Some(0x0102_0304u32.to_be()));
    assert_eq!(r1.src_qp, a.qp_num());
    assert_eq!(&rx[GRH..GRH + 64], &tx[..64]);
    let second = GRH + 64 + GRH;
    assert_eq!(&rx[second..second + 15], b"inline datagram");
}
