//! The smallest data path on the `ibverbs` crate's main-branch API: one reliable-connected queue
//! pair connected to itself posts one receive and one send, and both completions are taken with
//! the lending poll (`CompletionQueue::poll` lends a `Completions`, whose `next` lends each
//! `WorkCompletion`). The received bytes are checked, then it prints `loopback: ok`.
//!
//! It runs on the first RDMA device, or on the one named by `IBVERBS_DEVICE`.
use uverbs::next as ibverbs;

use std::time::{Duration, Instant};

/// What is sent: long enough to span more than one word, short enough for any MTU.
const MESSAGE: &[u8] = b"hello from the next API, over a queue pair connected to itself";

const RECV_WR_ID: u64 = 1;
const SEND_WR_ID: u64 = 2;

/// How long a completion may take (soft-RoCE under emulation is slow, but a lost completion must
/// fail the program rather than hang it).
const DEADLINE: Duration = Duration::from_secs(60);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = open_device()?;
    let cq = ctx.create_cq(16).build()?;
    let pd = ctx.alloc_pd()?;
    let gid_index = routable_gid_index(&ctx)?;

    let prepared = pd
        .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)?
        .set_gid_index(gid_index)
        .build()?;
    // Connected to itself: its own endpoint is the remote one.
    let endpoint = prepared.endpoint()?;
    let mut qp = prepared.handshake(endpoint)?;

    let mut recv = pd.allocate(128)?;
    let mut send = pd.allocate(MESSAGE.len())?;
    send.bytes_mut().copy_from_slice(MESSAGE);
    // Something the message is not, so that a receive that wrote nothing shows.
    recv.bytes_mut().fill(0xa5);

    // SAFETY: both regions live until the end of `main`, after both completions were polled, and
    // neither is touched while its request is outstanding.
    unsafe { qp.post_receive(&[recv.slice(..)], RECV_WR_ID) }?;
    // SAFETY: as above.
    unsafe { qp.post_send(&[send.slice(..)], SEND_WR_ID) }?;

    let mut sent = false;
    let mut received = None;
    let deadline = Instant::now() + DEADLINE;
    while !sent || received.is_none() {
        if let Some(mut completions) = cq.poll()? {
            while let Some(wc) = completions.next() {
                if let Err((status, vendor_err)) = wc.ok() {
                    panic!(
                        "work request {} failed: {status:?} (vendor error {vendor_err:#x})",
                        wc.wr_id()
                    );
                }
                match wc.wr_id() {
                    SEND_WR_ID => {
                        assert!(!sent, "the send completed twice");
                        assert_eq!(wc.opcode(), ibverbs::ibv_wc_opcode::IBV_WC_SEND);
                        sent = true;
                    }
                    RECV_WR_ID => {
                        assert!(received.is_none(), "the receive completed twice");
                        assert_eq!(wc.opcode(), ibverbs::ibv_wc_opcode::IBV_WC_RECV);
                        assert_eq!(wc.qp_num(), qp.qp_num());
                        received = Some(wc.len());
                    }
                    other => panic!("a completion nobody asked for: work request {other}"),
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "no completion within {DEADLINE:?} (sent: {sent}, received: {received:?})"
        );
    }

    assert_eq!(received, Some(MESSAGE.len()), "the received length");
    assert_eq!(&recv.bytes()[..MESSAGE.len()], MESSAGE);
    assert!(
        recv.bytes()[MESSAGE.len()..].iter().all(|&b| b == 0xa5),
        "the receive wrote past the message"
    );
    println!("loopback: ok");
    Ok(())
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
