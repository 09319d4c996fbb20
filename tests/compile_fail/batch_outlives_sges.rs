// A batch borrows its requests' scatter/gather lists until it is submitted.
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
    let mr = pd.allocate::<u8>(64).unwrap();
    let mut batch = qp.start_send();
    {
        let sges = [mr.sge(..).unwrap()];
        batch.signaled().send(1, &sges);
    }
    // SAFETY: this program is only type-checked.
    let _ = unsafe { batch.submit() };
}
