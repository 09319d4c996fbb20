// A memory region moves to another thread only if its elements are `Send` (registering takes any
// `Copy` type, raw pointers included).
fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd
        .register(vec![std::ptr::null::<u8>(); 8], uverbs::ibv_access_flags(0))
        .unwrap();
    std::thread::spawn(move || drop(mr));
}
