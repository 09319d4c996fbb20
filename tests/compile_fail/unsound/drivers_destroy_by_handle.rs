// F34: uverbs-drivers' by-handle destroys and `modify_qp` were safe. Freeing a live region's
// handle by hand let the kernel give the number to the next registration (lowest free first),
// and the first region's safe `rereg` then changed that one: a raw region registered for remote
// reads only got remote write access (reproduced on the model: a `String` took invalid UTF-8).
// They are `unsafe fn`s now, whose callers promise the handle is theirs alone (E0133).
#![forbid(unsafe_code)]

use uverbs_drivers::cmd;
use uverbs_drivers::verbs::{DeviceContext, Iova, Pd, Region};

fn main() {
    let info = uverbs_drivers::discover::find_device("mlx5_0").unwrap();
    let dev = std::sync::Arc::new(DeviceContext::open(&info).unwrap());
    let pd = std::sync::Arc::new(Pd::alloc(&dev).unwrap());
    let mut a = Region::register(&pd, vec![0u8; 4096], 0x1, Iova::Address).unwrap();
    cmd::dereg_mr(dev.ucontext(), a.mr().keys().handle).unwrap();
    cmd::destroy_qp(dev.ucontext(), 0).unwrap();
    a.rereg(None, Some(0x1 | 0x2 | 0x4)).unwrap();
}
