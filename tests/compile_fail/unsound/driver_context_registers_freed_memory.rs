// FINDING (compiles today; must not): safe code, with `unsafe` forbidden, registers memory it has
// freed for remote writes, through `Context::driver_context()` and uverbs-drivers' safe `reg_mr`
// that takes a raw address. A peer given the rkey then writes into whatever reuses that memory.
#![forbid(unsafe_code)]

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.driver_context().alloc_pd(&mut []).unwrap();
    let buf = vec![0u8; 4096];
    let addr = buf.as_ptr() as u64;
    drop(buf);
    let remote_write = 0x1 | 0x2;
    let keys = ctx
        .driver_context()
        .reg_mr(pd, addr, 4096, addr, remote_write)
        .unwrap();
    println!("rkey {:#x} names freed memory", keys.rkey);
}
