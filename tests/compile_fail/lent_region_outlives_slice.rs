// A region lent a slice cannot leave `with_slice`'s closure (the frame that deregisters it before
// the borrow ends): returned or stored outside, it would outlive its registration's scope and the
// device could write memory the program has back.
fn main() {
    let ctx = uverbs::devices().unwrap().iter().next().unwrap().open().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let access = uverbs::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE;
    let mut buf = vec![0u8; 64];
    let mut kept = None;
    pd.with_slice(&mut buf[..], access, |region| kept = Some(region))
        .unwrap();
    let returned = pd.with_slice(&mut buf[..], access, |region| region).unwrap();
    drop((kept, returned));
}
