// A send request borrows its scatter/gather list.
use uverbs::ibv_qp_type::IBV_QPT_RC;
use uverbs::SendRequest;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let cq = ctx.create_cq(16, 0).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let qp = pd
        .create_qp(&cq, &cq, IBV_QPT_RC)
        .build()
        .unwrap()
        .into_queue_pair();
    let mr = pd.allocate::<u8>(64).unwrap();
    let request = {
        let sges = [mr.sge(..).unwrap()];
        SendRequest::send(1, &sges)
    };
    // SAFETY: this program is only type-checked.
    let _ = unsafe { qp.post_send_list(&[request]) };
}
