// uverbs-drivers' BlueFlame and doorbell writers were safe: any program could ring a queue pair's
// doorbell or write a WQE (a post) without the register's lock, or ask for a writer wider than
// the register and store past the mapped page. Both are `unsafe fn` now (E0133).
#![forbid(unsafe_code)]

use uverbs_drivers::verbs::{Backend, DeviceContext};

fn main() {
    let info = uverbs_drivers::discover::find_device("mlx5_0").unwrap();
    let ctx = DeviceContext::open(&info).unwrap();
    let Backend::Mlx5(m) = ctx.backend() else {
        return;
    };
    let uars = m.uars().unwrap();
    let _past_the_page = uars.bfreg(1).unwrap().writer(1 << 20);
    let _any_doorbell = uars.cq_uar();
}
