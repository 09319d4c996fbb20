//! A shared receive queue on the `ibverbs` crate's main-branch API: two reliable-connected queue
//! pairs connected to each other in one process, the receiving one built with `set_srq`, so that
//! it takes its receives from a `ProtectionDomain::create_srq` queue (posted to with
//! `SharedReceiveQueue::post_receive`) instead of a receive queue of its own. Several messages
//! are sent; each receive must complete once, on the receiving queue pair, and each message must
//! arrive once, whole. Then it prints `srq: ok`.
//!
//! It runs on the first RDMA device, or on the one named by `IBVERBS_DEVICE`.
use uverbs::next as ibverbs;

use std::time::{Duration, Instant};

/// How many messages go across, each into its own receive.
const MESSAGES: usize = 8;

/// Each receive buffer's (and send buffer's) size.
const SLOT: usize = 64;

const DEADLINE: Duration = Duration::from_secs(60);

/// Message `i`: a different text, and a different length, for each.
fn message(i: usize) -> Vec<u8> {
    let mut m = format!("message {i} through the shared receive queue").into_bytes();
    m.extend(std::iter::repeat_n(b'.', i));
    m
}

fn recv_wr_id(i: usize) -> u64 {
    1000 + i as u64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = open_device()?;
    let pd = ctx.alloc_pd()?;
    let gid_index = routable_gid_index(&ctx)?;
    // The sender's completions and the receiver's, apart.
    let send_cq = ctx.create_cq(16).build()?;
    let recv_cq = ctx.create_cq(16).build()?;

    let srq = pd.create_srq(MESSAGES as u32, 1, 0)?;
    let sender = pd
        .create_qp(&send_cq, &send_cq, ibverbs::ibv_qp_type::IBV_QPT_RC)?
        .set_gid_index(gid_index)
        .set_max_send_wr(MESSAGES as u32)
        .build()?;
    let receiver = pd
        .create_qp(&recv_cq, &recv_cq, ibverbs::ibv_qp_type::IBV_QPT_RC)?
        .set_gid_index(gid_index)
        .set_srq(&srq)
        .build()?;
    // Each end's endpoint goes to the other, as a connection's exchange would carry them.
    let (sender_end, receiver_end) = (sender.endpoint()?, receiver.endpoint()?);
    let mut sender = sender.handshake(receiver_end)?;
    let receiver = receiver.handshake(sender_end)?;

    let mut recv = pd.allocate(MESSAGES * SLOT)?;
    recv.bytes_mut().fill(0xa5);
    let mut send = pd.allocate(MESSAGES * SLOT)?;
    for i in 0..MESSAGES {
        let m = message(i);
        assert!(m.len() <= SLOT);
        send.bytes_mut()[i * SLOT..i * SLOT + m.len()].copy_from_slice(&m);
    }

    for i in 0..MESSAGES {
        // SAFETY: `recv` lives until the end of `main`, after every receive completed, and is
        // read only after they all did.
        unsafe { srq.post_receive(&[recv.slice(i * SLOT..(i + 1) * SLOT)], recv_wr_id(i)) }?;
    }
    for i in 0..MESSAGES {
        let len = message(i).len();
        // SAFETY: `send` lives until the end of `main`, after every send completed, and is not
        // written again.
        unsafe { sender.post_send(&[send.slice(i * SLOT..i * SLOT + len)], i as u64) }?;
    }

    // Receive i → its byte length, once each; send i → done, once each.
    let mut received: Vec<Option<usize>> = vec![None; MESSAGES];
    let mut sent = vec![false; MESSAGES];
    let deadline = Instant::now() + DEADLINE;
    while received.iter().any(Option::is_none) || sent.iter().any(|s| !s) {
        if let Some(mut completions) = send_cq.poll()? {
            while let Some(wc) = completions.next() {
                if let Err((status, vendor_err)) = wc.ok() {
                    panic!("send {} failed: {status:?} ({vendor_err:#x})", wc.wr_id());
                }
                assert_eq!(wc.opcode(), ibverbs::ibv_wc_opcode::IBV_WC_SEND);
                let i = usize::try_from(wc.wr_id()).unwrap();
                assert!(i < MESSAGES, "a send nobody posted: {}", wc.wr_id());
                assert!(!sent[i], "send {i} completed twice");
                sent[i] = true;
            }
        }
        if let Some(mut completions) = recv_cq.poll()? {
            while let Some(wc) = completions.next() {
                if let Err((status, vendor_err)) = wc.ok() {
                    panic!(
                        "receive {} failed: {status:?} ({vendor_err:#x})",
                        wc.wr_id()
                    );
                }
                assert_eq!(wc.opcode(), ibverbs::ibv_wc_opcode::IBV_WC_RECV);
                // A shared receive queue's completion names the queue pair that took it.
                assert_eq!(wc.qp_num(), receiver.qp_num());
                let i = (0..MESSAGES)
                    .find(|&i| recv_wr_id(i) == wc.wr_id())
                    .unwrap_or_else(|| panic!("a receive nobody posted: {}", wc.wr_id()));
                assert!(received[i].is_none(), "receive {i} completed twice");
                received[i] = Some(wc.len());
            }
        }
        assert!(
            Instant::now() < deadline,
            "not everything completed within {DEADLINE:?}: received {received:?}, sent {sent:?}"
        );
    }

    // Which buffer took which message is the queue's business: find each message in the buffer
    // whose completion gave its length, and see that every message is there exactly once.
    let mut arrived = vec![0; MESSAGES];
    for (slot, len) in received.iter().enumerate() {
        let len = len.unwrap();
        let buffer = &recv.bytes()[slot * SLOT..(slot + 1) * SLOT];
        let i = (0..MESSAGES)
            .find(|&i| message(i) == buffer[..len])
            .unwrap_or_else(|| {
                panic!(
                    "receive {slot} holds no message: {:?}",
                    String::from_utf8_lossy(&buffer[..len])
                )
            });
        assert!(
            buffer[len..].iter().all(|&b| b == 0xa5),
            "receive {slot} was written past its message"
        );
        arrived[i] += 1;
    }
    assert_eq!(arrived, [1; MESSAGES], "each message, once");
    println!("srq: ok");
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
