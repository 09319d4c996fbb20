// Nor may a region hold references, which a peer's write would turn into dangling ones.
fn context() -> uverbs::Context {
    unimplemented!()
}

static BYTE: u8 = 7;

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd
        .register(vec![Some(&BYTE); 8], uverbs::ibv_access_flags(0))
        .unwrap();
    assert_eq!(mr[0], Some(&7));
}
