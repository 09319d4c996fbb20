// A region's bytes go to the peer (RDMA READ, sends), so none may be uninitialised: a region of
// `MaybeUninit` (valid for every bit pattern, but not initialised) would hand a peer stale heap
// contents.
use std::mem::MaybeUninit;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd
        .register(
            vec![MaybeUninit::<u64>::uninit(); 512],
            uverbs::ibv_access_flags::IBV_ACCESS_REMOTE_READ,
        )
        .unwrap();
    println!("{}", mr.remote().rkey);
}
