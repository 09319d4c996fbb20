// The completions `poll` returns borrow the caller's buffer mutably.
use uverbs::ibv_wc;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let cq = ctx.create_cq(16, 0).unwrap();
    let mut buf = [ibv_wc::default(); 8];
    let done = cq.poll(&mut buf).unwrap();
    buf[0] = ibv_wc::default();
    let _ = done.len();
}
