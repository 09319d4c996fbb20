//! The loopback program of the `ibverbs` crate (0.9.2, `examples/loopback.rs`), unchanged but for the
//! crate's name (and SAFETY comments): one RC queue pair connected to itself sends a `u64` from one half of a memory region
//! to the other.
//!
//! Run it on soft-RoCE: `cargo build --example loopback && tests/vm/run -- target/debug/examples/loopback`

// The only change: what `Cargo.toml`'s `ibverbs = { package = "uverbs", ... }` would do.
use uverbs as ibverbs;

fn main() {
    let ctx = ibverbs::devices()
        .unwrap()
        .iter()
        .next()
        .expect("no rdma device available")
        .open()
        .unwrap();

    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();

    let qp_builder = pd
        .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(1)
        .build()
        .unwrap();

    let endpoint = qp_builder.endpoint();
    let mut qp = qp_builder.handshake(endpoint).unwrap();

    let mut mr = pd.allocate::<u64>(2).unwrap();
    mr[1] = 0x42;

    // SAFETY: `mr` outlives both requests and is not touched until their completions are polled.
    unsafe { qp.post_receive(&mut mr, ..1, 2) }.unwrap();
    // SAFETY: as above.
    unsafe { qp.post_send(&mut mr, 1.., 1) }.unwrap();

    let mut sent = false;
    let mut received = false;
    let mut completions = [ibverbs::ibv_wc::default(); 16];
    while !sent || !received {
        let completed = cq.poll(&mut completions[..]).unwrap();
        if completed.is_empty() {
            continue;
        }
        assert!(completed.len() <= 2);
        for wr in completed {
            match wr.wr_id() {
                1 => {
                    assert!(!sent);
                    sent = true;
                    println!("sent");
                }
                2 => {
                    assert!(!received);
                    received = true;
                    assert_eq!(mr[0], 0x42);
                    println!("received");
                }
                _ => unreachable!(),
            }
        }
    }
}
