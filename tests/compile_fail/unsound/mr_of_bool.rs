// The device may write any bytes into a memory region (a peer's RDMA WRITE, a received message), so
// its elements must be valid for every bit pattern: a region of `bool` would let a peer create a
// `bool` that is neither `false` nor `true`.
fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd.allocate::<bool>(8).unwrap();
    assert!(!mr[0]);
}
