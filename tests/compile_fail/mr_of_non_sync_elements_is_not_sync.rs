// A memory region is shared between threads only if its elements are `Sync`.
use std::cell::Cell;
use std::marker::PhantomData;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd
        .register(vec![PhantomData::<Cell<u8>>; 8], uverbs::ibv_access_flags(0))
        .unwrap();
    std::thread::scope(|s| {
        s.spawn(|| mr.len());
    });
}
