// A memory region is shared between threads only if its elements are `Sync`.
use std::cell::Cell;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let cell: &'static Cell<u8> = Box::leak(Box::new(Cell::new(0)));
    let mr = pd.register(vec![cell; 8], uverbs::ibv_access_flags(0)).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| mr[0].set(1));
    });
}
