//! Used by `tests/datapath.rs` under `strace`: posts receives, posts sends one by one, polls, then
//! posts a list of sends with one call and polls again, each phase fenced by a `getpid()` call, so the
//! test can count the system calls each phase makes.
//!
//! Usage: `syscall_probe DEVICE COUNT`

use uverbs::{ibv_qp_type, ibv_wc, ReceiveRequest, SendRequest};

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
    let _ = std::process::id(); // marker: polling done
    assert!(wcs.iter().all(ibv_wc::is_valid));

    // A list of sends: one post, one doorbell.
    let sges: Vec<_> = (0..count).map(|i| [mr.sge(i..i + 1).unwrap()]).collect();
    let rsges: Vec<_> = (0..count)
        .map(|i| [mr.sge(count + i..count + i + 1).unwrap()])
        .collect();
    let recvs: Vec<_> = rsges
        .iter()
        .enumerate()
        .map(|(i, s)| ReceiveRequest::new(i as u64, s))
        .collect();
    let sends: Vec<_> = sges
        .iter()
        .enumerate()
        .map(|(i, s)| SendRequest::send(i as u64, s))
        .collect();
    // SAFETY: as above.
    unsafe { qp.post_receive_list(&recvs) }.unwrap();
    let _ = std::process::id(); // marker: list post starts
                                // SAFETY: as above.
    unsafe { qp.post_send_list(&sends) }.unwrap();
    let _ = std::process::id(); // marker: list post done
    let mut done = 0;
    while done < 2 * count {
        done += cq.poll(&mut wcs[done..]).unwrap().len();
    }
    let _ = std::process::id(); // marker: end
    assert!(wcs.iter().all(ibv_wc::is_valid));
}
