// F17: a lent slice's region could be leaked while registered. `register_slice` was safe, and
// leaking is safe (`mem::forget`, `ManuallyDrop`, `Box::leak`, an `Rc` cycle): the borrow of the
// slice ended with the region still registered, the vector was freed, a new `String` got the same
// allocation, and a peer's RDMA WRITE through the old rkey filled it with invalid UTF-8
// (reproduced on the mlx5 model). `register_slice` is now an `unsafe fn` (E0133) whose caller
// promises the drop; `ProtectionDomain::with_slice` is the safe form, which keeps the region in
// its own frame.
#![forbid(unsafe_code)]

fn pd() -> uverbs::ProtectionDomain<'static> {
    unimplemented!()
}

fn main() {
    let pd = pd();
    let access = uverbs::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
        | uverbs::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE;
    let remote = {
        let mut buf = vec![0u8; 16384];
        let region = pd.register_slice(&mut buf[..], access).unwrap();
        let remote = region.remote();
        std::mem::forget(region);
        remote
    };
    let reused = String::from_utf8(vec![b'a'; 16384]).unwrap();
    println!("{:#x} {}", remote.addr, reused.len());
}
