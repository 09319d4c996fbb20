//! Used by `tests/datapath.rs` under `strace`: posts receives, posts sends and polls in three phases,
//! each fenced by a `getpid()` call, so the test can count the system calls each phase makes.
//!
//! Usage: `syscall_probe DEVICE COUNT`

use uverbs::{ibv_qp_type, ibv_wc};

fn main() {
    let mut args = std::env::args().skip(1);
    let device = args.next().expect("usage: syscall_probe DEVICE COUNT");
    let count: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: syscall_probe DEVICE COUNT");

    let ctx = uverbs::Context::open_by_name(&device).unwrap();
    let cq = ctx.create_cq(2 * count as i32 + 1, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let gid = ctx.gid_table()[1].gid_index;
    let prepared = pd
        .create_qp(&cq, &cq, ibv_qp_type::IBV_QPT_RC)
        .set_gid_index(gid)
        .set_max_send_wr(count as u32)
        .set_max_recv_wr(count as u32)
        .build()
        .unwrap();
    let endpoint = prepared.endpoint();
    let mut qp = prepared.handshake(endpoint).unwrap();
    let mut mr = pd.allocate::<u8>(2 * count).unwrap();
    let mut wcs = vec![ibv_wc::default(); 2 * count];

    let _ = std::process::id(); // marker: receives start
    for i in 0..count {
        // SAFETY: `mr` outlives the requests and is not touched until they complete.
        unsafe { qp.post_receive(&mut mr, count + i..count + i + 1, i as u64) }.unwrap();
    }
    let _ = std::process::id(); // marker: sends start
    for i in 0..count {
        // SAFETY: as above.
        unsafe { qp.post_send(&mut mr, i..i + 1, (count + i) as u64) }.unwrap();
    }
    let _ = std::process::id(); // marker: polling starts
    let mut done = 0;
    while done < 2 * count {
        let n = cq.poll(&mut wcs[done..]).unwrap().len();
        done += n;
    }
    let _ = std::process::id(); // marker: end
    assert!(wcs.iter().all(ibv_wc::is_valid));
}
