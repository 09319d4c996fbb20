// A BIND_MW request borrows the window whose key it advances.
use uverbs::{ibv_access_flags, SendRequest};

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd.allocate::<u8>(64).unwrap();
    let mw = pd.alloc_mw().unwrap();
    let (request, _remote) = SendRequest::bind_mw(
        1,
        &mw,
        &mr,
        ..,
        ibv_access_flags::IBV_ACCESS_REMOTE_READ,
    )
    .unwrap();
    drop(mw);
    let _ = request.wr_id();
}
