// A queue pair borrows its completion queues.
use uverbs::ibv_qp_type::IBV_QPT_RC;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let send_cq = ctx.create_cq(16, 0).unwrap();
    let recv_cq = ctx.create_cq(16, 1).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let qp = pd
        .create_qp(&send_cq, &recv_cq, IBV_QPT_RC)
        .build()
        .unwrap()
        .into_queue_pair();
    drop(recv_cq);
    let _ = qp.qp_num();
}
