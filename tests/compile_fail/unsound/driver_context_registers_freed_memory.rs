// F5: safe code, with `unsafe` forbidden, registered memory it had freed for remote writes,
// through `Context::driver_context()` and uverbs-drivers' `reg_mr` that takes a raw address (a peer
// given the rkey then writes into whatever reuses that memory). Both are `unsafe fn` now (E0133
// twice: `driver_context` keeps the objects of `uverbs` out of safe code's reach, `reg_mr` guards
// the address).
#![forbid(unsafe_code)]

use uverbs_drivers::cmd;

fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = cmd::alloc_pd(ctx.driver_context().ucontext(), &mut []).unwrap();
    let buf = vec![0u8; 4096];
    let addr = buf.as_ptr() as u64;
    drop(buf);
    let remote_write = 0x1 | 0x2;
    let keys = cmd::reg_mr(
        ctx.driver_context().ucontext(),
        pd,
        addr,
        4096,
        addr,
        remote_write,
    )
    .unwrap();
    println!("rkey {:#x} names freed memory", keys.rkey);
}
