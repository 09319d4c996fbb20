// While a region holds the lent slice, the program cannot touch the slice directly (E0499): it
// reads and writes it through the region, which knows the device may write it too.
fn main() {
    let ctx = uverbs::devices().unwrap().iter().next().unwrap().open().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let mut buf = vec![0u8; 64];
    let access = uverbs::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE;
    pd.with_slice(&mut buf[..], access, |region| {
        buf[0] = 1;
        region[1] = 2;
    })
    .unwrap();
}
