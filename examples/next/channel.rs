//! Waiting for completions instead of spinning, on the `ibverbs` crate's main-branch API: a
//! completion channel (`Context::create_comp_channel`), a completion queue attached to it with a
//! context value (`set_comp_channel(&ch).set_context(7)`), armed with `req_notify(false)`. A
//! reliable-connected queue pair connected to itself receives what it sends; `wait` on the
//! channel returns the armed queue's context, 7, and the completions are then polled (re-arming
//! before each drain, so that none can slip between a drain and the next wait). Then it prints
//! `channel: ok`.
//!
//! It runs on the first RDMA device, or on the one named by `IBVERBS_DEVICE`.
use uverbs::next as ibverbs;

use std::time::Duration;

/// The value the completion queue was built with, which the channel's events return.
const CQ_CONTEXT: isize = 7;

const MESSAGE: &[u8] = b"woken by a completion event";

const RECV_WR_ID: u64 = 1;
const SEND_WR_ID: u64 = 2;

/// How long one wait may take before the program gives up.
const WAIT: Duration = Duration::from_secs(10);

/// How many events a few completions can be worth at most (one per completion, when each comes
/// after the previous drain), with room to spare before a runaway loop is called one.
const MAX_EVENTS: usize = 8;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = open_device()?;
    let ch = ctx.create_comp_channel()?;
    let cq = ctx
        .create_cq(16)
        .set_comp_channel(&ch)
        .set_context(CQ_CONTEXT)
        .build()?;
    assert!(cq.comp_channel().is_some(), "the queue keeps its channel");
    let pd = ctx.alloc_pd()?;
    let gid_index = routable_gid_index(&ctx)?;

    let prepared = pd
        .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)?
        .set_gid_index(gid_index)
        .build()?;
    let endpoint = prepared.endpoint()?;
    let mut qp = prepared.handshake(endpoint)?;

    let mut recv = pd.allocate(64)?;
    recv.bytes_mut().fill(0xa5);
    let mut send = pd.allocate(MESSAGE.len())?;
    send.bytes_mut().copy_from_slice(MESSAGE);

    // Nothing is outstanding yet: arm the queue before posting, so that the first completion
    // raises an event.
    cq.req_notify(false)?;
    // SAFETY: both regions live until the end of `main`, after both completions were polled, and
    // neither is touched while its request is outstanding.
    unsafe { qp.post_receive(&[recv.slice(..)], RECV_WR_ID) }?;
    // SAFETY: as above.
    unsafe { qp.post_send(&[send.slice(..)], SEND_WR_ID) }?;

    let mut sent = false;
    let mut received = None;
    let mut events = 0;
    while !sent || received.is_none() {
        let woken = ch.wait(Some(WAIT))?;
        assert_eq!(
            woken,
            Some(CQ_CONTEXT),
            "the channel's event (None: nothing within {WAIT:?}; sent: {sent}, received: \
             {received:?})"
        );
        events += 1;
        assert!(events <= MAX_EVENTS, "{events} events for two completions");
        // Re-arm first, then drain: a completion that comes after the drain raises the next
        // event.
        cq.req_notify(false)?;
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
                        sent = true;
                    }
                    RECV_WR_ID => {
                        assert!(received.is_none(), "the receive completed twice");
                        received = Some(wc.len());
                    }
                    other => panic!("a completion nobody asked for: work request {other}"),
                }
            }
        }
    }

    assert_eq!(received, Some(MESSAGE.len()), "the received length");
    assert_eq!(&recv.bytes()[..MESSAGE.len()], MESSAGE);
    assert!(
        recv.bytes()[MESSAGE.len()..].iter().all(|&b| b == 0xa5),
        "the receive wrote past the message"
    );
    println!("channel: {events} event(s) for the two completions");
    println!("channel: ok");
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
