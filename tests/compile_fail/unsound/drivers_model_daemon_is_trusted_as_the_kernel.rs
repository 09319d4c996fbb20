// Connecting to a model daemon made the crate trust whatever server listened at the path as its
// kernel: the daemon writes this process's memory through the commands' pointers (with
// `process_vm_writev`), names the descriptor numbers the driver adopts, and was named this
// process's tracer (`PR_SET_PTRACER`, with the pid the server claimed). `RemoteFile::connect` and
// `discover::remote_device` (once `remote::device_info`) were safe; they are `unsafe fn`s now, whose
// contract is that the server is a uverbs-mlx5-model daemon (E0133). Discovery calls them for
// `UVERBS_MODEL_SOCKET`, the daemon the user chose.
#![forbid(unsafe_code)]

use std::path::Path;

use uverbs_drivers::discover;
use uverbs_drivers::sys::remote::RemoteFile;
use uverbs_drivers::verbs::DeviceContext;

fn main() {
    let path = Path::new("/tmp/anyone-may-listen-here.sock");
    let _file = RemoteFile::connect(path).unwrap();
    let info = discover::remote_device(path).unwrap();
    let _ctx = DeviceContext::open(&info).unwrap();
}
