// Used directly (not through `uverbs`), uverbs-drivers' `reg_mr` took a raw address as a safe
// function: a program with `unsafe` forbidden registered memory it had freed for remote writes.
// It is an `unsafe fn` now (E0133).
#![forbid(unsafe_code)]

use uverbs_drivers::cmd;

fn main() {
    let info = uverbs_drivers::discover::find_device("rxe0").unwrap();
    let dev = uverbs_drivers::verbs::DeviceContext::open(&info).unwrap();
    let ctx = dev.ucontext();
    let pd = cmd::alloc_pd(ctx, &mut []).unwrap();
    let buf = vec![0u8; 4096];
    let addr = buf.as_ptr() as u64;
    drop(buf);
    let remote_write = 0x1 | 0x2;
    let keys = cmd::reg_mr(ctx, pd, addr, 4096, addr, remote_write).unwrap();
    println!("rkey {:#x} names freed memory", keys.rkey);
}
