// `rxe::queue::Queue::map` was public and safe: any code with a `&Channel` could map a queue at an
// offset of its choosing, taking the pending mapping of a ring the crate was creating (rxe maps
// each once), or mapping an mlx5 UAR page, into which `publish_producer`/`publish_consumer` then
// make device stores from safe code. It is private to the crate now (E0624).
#![forbid(unsafe_code)]

use uverbs_drivers::rxe::queue::Queue;
use uverbs_drivers::uapi::mminfo;
use uverbs_drivers::verbs::DeviceContext;
use uverbs_drivers::Verb;

fn main() {
    let info = uverbs_drivers::discover::find_device("rxe0").unwrap();
    let ctx = DeviceContext::open(&info).unwrap();
    let mi = mminfo {
        offset: 0x1000,
        size: 4096,
        pad: 0,
    };
    let q = Queue::map(ctx.ucontext().channel(), &mi, 64, Verb::CreateCq).unwrap();
    q.publish_producer(1);
}
