// Posting a receive takes the region mutably: not while a view of it is alive.
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
    let mut mr = pd.allocate::<u8>(64).unwrap();
    let view: &[u8] = &mr[..];
    // SAFETY: this program is only type-checked.
    let _ = unsafe { qp.post_receive(&mut mr, .., 1) };
    println!("{}", view[0]);
}
