// A memory region moves to another thread only if its elements are `Send`: an element type can be
// valid for every bit pattern and still not be `Send` (here through a `PhantomData` of a pointer).
use std::marker::PhantomData;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd
        .register(vec![PhantomData::<*const u8>; 8], uverbs::ibv_access_flags(0))
        .unwrap();
    std::thread::spawn(move || drop(mr));
}
