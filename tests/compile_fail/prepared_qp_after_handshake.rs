// `handshake` consumes the prepared queue pair: it cannot be used afterwards.
use uverbs::ibv_qp_type::IBV_QPT_RC;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let prepared = pd.create_qp(&cq, &cq, IBV_QPT_RC).build().unwrap();
    let remote = prepared.endpoint();
    let _qp = prepared.handshake(remote).unwrap();
    let _ = prepared.endpoint();
}
