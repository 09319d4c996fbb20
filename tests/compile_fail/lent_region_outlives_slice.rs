// A region lent a slice cannot outlive the slice (E0597): the device could write memory the
// program has freed.
fn main() {
    let ctx = uverbs::devices().unwrap().iter().next().unwrap().open().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let region;
    {
        let mut buf = vec![0u8; 64];
        region = pd
            .register_slice(&mut buf[..], uverbs::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE)
            .unwrap();
    }
    drop(region);
}
