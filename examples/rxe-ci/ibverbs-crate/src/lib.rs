//! Moves bytes over an RC queue pair with the `ibverbs` 0.9.2 API: what a project of its own would
//! do, and test on rxe with `uverbs vm -- cargo test` (see tests/).

use std::time::{Duration, Instant};

/// Sends `payload` from one queue pair to another on the first RDMA device and returns what the
/// receiver got. `same_qp` connects one queue pair to itself instead.
pub fn send_over_rc(payload: &[u8], same_qp: bool) -> std::io::Result<Vec<u8>> {
    let devices = ibverbs::devices()?;
    let device = devices.iter().next().ok_or_else(|| std::io::Error::other("no RDMA device"))?;
    let ctx = device.open()?;
    let cq = ctx.create_cq(16, 0)?;
    let pd = ctx.alloc_pd()?;
    let n = payload.len();
    let mut mr = pd.allocate::<u8>(2 * n)?;
    mr[n..].copy_from_slice(payload);
    let build = || pd.create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC).set_gid_index(1).build();
    let a = build()?;
    let (mut sender, mut receiver) = if same_qp {
        let e = a.endpoint();
        (a.handshake(e)?, None)
    } else {
        let b = build()?;
        let (ea, eb) = (a.endpoint(), b.endpoint());
        (a.handshake(eb)?, Some(b.handshake(ea)?))
    };
    // SAFETY: `mr` outlives the work requests: both complete before it is read or dropped.
    unsafe { receiver.as_mut().unwrap_or(&mut sender).post_receive(&mut mr, ..n, 2)? };
    // SAFETY: as above.
    unsafe { sender.post_send(&mut mr, n.., 1)? };
    let mut done = [false; 2];
    let mut completions = [ibverbs::ibv_wc::default(); 16];
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(done[0] && done[1]) {
        if Instant::now() > deadline {
            return Err(std::io::Error::other("no completion within 10 s"));
        }
        for wc in cq.poll(&mut completions)? {
            if let Some((status, vendor)) = wc.error() {
                return Err(std::io::Error::other(format!("work request {} failed: {status:?} ({vendor})", wc.wr_id())));
            }
            done[wc.wr_id() as usize - 1] = true;
        }
    }
    Ok(mr[..n].to_vec())
}
