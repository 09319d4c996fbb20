//! Unreliable datagrams on the `ibverbs` crate's main-branch API: a UD queue pair
//! (`activate_ud` with a Q_Key) sends two datagrams to itself through an address handle built from
//! its own endpoint (`AddressHandleAttribute` with the destination LID and a GRH for the GID):
//! one with `QueuePair::post_send_ud`, one in a batch addressed with `.to(&ah, qpn, qkey)`. Every
//! UD receive buffer starts with 40 bytes for the GRH, so each payload is checked after them. Then
//! it prints `ud: ok`.
//!
//! It runs on the first RDMA device, or on the one named by `IBVERBS_DEVICE`.
use uverbs::next as ibverbs;

use std::time::{Duration, Instant};

/// The room a UD receive leaves for the global routing header in front of the payload.
const GRH: usize = 40;

/// The Q_Key both ends use (the same queue pair).
const QKEY: u32 = 0x1111_1111;

/// The two datagrams, each to its own receive buffer.
const MESSAGES: [&[u8]; 2] = [
    b"a datagram by post_send_ud",
    b"a datagram from a batch, sent .to() the handle",
];

/// Each receive buffer's size: the GRH and the longest message, with room to spare.
const SLOT: usize = GRH + 64;

const DEADLINE: Duration = Duration::from_secs(60);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = open_device()?;
    let cq = ctx.create_cq(16).build()?;
    let pd = ctx.alloc_pd()?;
    let gid_index = routable_gid_index(&ctx)?;

    let prepared = pd
        .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_UD)?
        .set_gid_index(gid_index)
        .set_max_send_wr(MESSAGES.len() as u32)
        .set_max_recv_wr(MESSAGES.len() as u32)
        .build()?;
    // The gid index was set, so the endpoint carries this port's GID at that index.
    let me = prepared.endpoint()?;
    let gid = me
        .gid
        .expect("the endpoint of a queue pair with a GID index has a GID");
    let mut qp = prepared.activate_ud(QKEY)?;

    // The way to this queue pair: its port's LID (what InfiniBand routes by) and, in a GRH, its
    // GID (what RoCE routes by), sent from the same GID index; one hop.
    let mut to_me = ibverbs::AddressHandleAttribute::new();
    to_me
        .set_dest_lid(me.lid)
        .set_grh(gid, gid_index as u8, 1, 0);
    let ah = pd.create_address_handle(&to_me)?;

    let mut recv = pd.allocate(MESSAGES.len() * SLOT)?;
    recv.bytes_mut().fill(0xa5);
    let mut send = pd.allocate(MESSAGES.len() * SLOT)?;
    for (i, message) in MESSAGES.iter().enumerate() {
        send.bytes_mut()[i * SLOT..i * SLOT + message.len()].copy_from_slice(message);
    }
    let payload = |i: usize| [send.slice(i * SLOT..i * SLOT + MESSAGES[i].len())];

    for i in 0..MESSAGES.len() {
        // SAFETY: `recv` lives until the end of `main`, after every completion was polled, and is
        // read only after its receives completed.
        unsafe { qp.post_receive(&[recv.slice(i * SLOT..(i + 1) * SLOT)], recv_wr_id(i)) }?;
    }

    // SAFETY: `send` and `ah` live until the end of `main`, after the completions were polled,
    // and `send` is not written again.
    unsafe { qp.post_send_ud(&payload(0), &ah, me.num, QKEY, send_wr_id(0)) }?;
    let second = payload(1);
    let mut batch = qp.start_send();
    batch
        .to(&ah, me.num, QKEY)
        .signaled()
        .send(send_wr_id(1), &second);
    // SAFETY: as for `post_send_ud` above.
    unsafe { batch.submit() }?;

    // wr_id → (byte length, source QP, whether a GRH came), for each completed receive.
    let mut received = vec![None; MESSAGES.len()];
    let mut sent = vec![false; MESSAGES.len()];
    let deadline = Instant::now() + DEADLINE;
    while received.iter().any(Option::is_none) || sent.iter().any(|s| !s) {
        if let Some(mut completions) = cq.poll()? {
            while let Some(wc) = completions.next() {
                if let Err((status, vendor_err)) = wc.ok() {
                    panic!(
                        "work request {} failed: {status:?} (vendor error {vendor_err:#x})",
                        wc.wr_id()
                    );
                }
                let id = wc.wr_id();
                if let Some(i) = (0..MESSAGES.len()).find(|&i| recv_wr_id(i) == id) {
                    assert_eq!(wc.opcode(), ibverbs::ibv_wc_opcode::IBV_WC_RECV);
                    assert!(received[i].is_none(), "receive {i} completed twice");
                    received[i] = Some((wc.len(), wc.src_qp(), wc.has_grh()));
                } else if let Some(i) = (0..MESSAGES.len()).find(|&i| send_wr_id(i) == id) {
                    assert_eq!(wc.opcode(), ibverbs::ibv_wc_opcode::IBV_WC_SEND);
                    assert!(!sent[i], "send {i} completed twice");
                    sent[i] = true;
                } else {
                    panic!("a completion nobody asked for: work request {id}");
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "not every datagram arrived within {DEADLINE:?}: received {received:?}, sent {sent:?}"
        );
    }

    // A UD queue pair's receives are taken in the order they were posted: datagram i landed in
    // buffer i.
    for (i, message) in MESSAGES.iter().enumerate() {
        let (len, src_qp, grh) = received[i].unwrap();
        assert_eq!(
            len,
            GRH + message.len(),
            "datagram {i}: the GRH and the payload"
        );
        assert_eq!(src_qp, me.num, "datagram {i} came from this queue pair");
        let buffer = &recv.bytes()[i * SLOT..(i + 1) * SLOT];
        assert_eq!(
            &buffer[GRH..GRH + message.len()],
            *message,
            "datagram {i}'s payload (GRH present: {grh})"
        );
        assert!(
            buffer[GRH + message.len()..].iter().all(|&b| b == 0xa5),
            "datagram {i} was written past its payload"
        );
    }
    println!("ud: ok");
    Ok(())
}

fn recv_wr_id(i: usize) -> u64 {
    100 + i as u64
}

fn send_wr_id(i: usize) -> u64 {
    200 + i as u64
}

/// Opens the device named by `IBVERBS_DEVICE`, or else the first one.
fn open_device() -> ibverbs::Result<ibverbs::Context> {
    let wanted = std::env::var("IBVERBS_DEVICE").ok();
    let devices = ibverbs::devices()?;
    let device = devices
        .iter()
        .find(|d| match (&wanted, d.name()) {
            (None, _) => true,
            (Some(want), Some(name)) => name.to_bytes() == want.as_bytes(),
            (Some(_), None) => false,
        })
        .unwrap_or_else(|| match &wanted {
            Some(want) => panic!("no RDMA device named {want}"),
            None => panic!("no RDMA device available"),
        });
    device.open()
}

/// The GID index to route by on port 1 (the queue pair's port; GID indices are per port): the
/// RoCE v2 entry holding an IPv4 address (`::ffff:a.b.c.d`), which plain-Ethernet networks
/// answer on, or else the port's first entry.
fn routable_gid_index(ctx: &ibverbs::Context) -> ibverbs::Result<u32> {
    let gids = ctx.gid_table()?;
    let entry = gids
        .iter()
        .filter(|e| e.port_num == 1)
        .find(|e| {
            e.gid_type == ibverbs::ibv_gid_type::IBV_GID_TYPE_ROCE_V2 && e.gid.is_ipv4_mapped()
        })
        .or_else(|| gids.iter().find(|e| e.port_num == 1))
        .expect("port 1 has no GID");
    Ok(entry.gid_index)
}
