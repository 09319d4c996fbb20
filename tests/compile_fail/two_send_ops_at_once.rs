// One request at a time is configured on a batch: two half-built requests cannot overlap.
use uverbs::ibv_qp_type::IBV_QPT_RC;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let mut qp = pd
        .create_qp(&cq, &cq, IBV_QPT_RC)
        .build()
        .unwrap()
        .into_queue_pair();
    let mut batch = qp.start_send();
    let first = batch.signaled();
    let second = batch.fenced();
    first.send_inline(1, b"first");
    second.send_inline(2, b"second");
}
