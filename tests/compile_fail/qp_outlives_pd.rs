// A queue pair borrows the protection domain it was created in.
use uverbs::ibv_qp_type::IBV_QPT_RC;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let qp = pd.create_qp(&cq, &cq, IBV_QPT_RC).build().unwrap();
    drop(pd);
    let _ = qp.endpoint();
}
