// A batch holds its queue pair exclusively: no other post comes between its requests.
use uverbs::ibv_qp_type::IBV_QPT_RC;
use uverbs::SendRequest;

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
    batch.send_inline(1, b"first");
    // SAFETY: this program is only type-checked.
    let _ = unsafe { qp.post_send_list(&[SendRequest::send_inline(2, b"between")]) };
    // SAFETY: as above.
    let _ = unsafe { batch.submit() };
}
