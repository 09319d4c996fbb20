// A completion queue borrows its context: the context cannot be dropped while the CQ is used.
fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let cq = ctx.create_cq(16, 0).unwrap();
    drop(ctx);
    let mut wc = [uverbs::ibv_wc::default(); 4];
    let _ = cq.poll(&mut wc);
}
