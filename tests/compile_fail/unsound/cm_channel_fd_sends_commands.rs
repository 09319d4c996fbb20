// `cm::EventChannel` lent its file, `/dev/infiniband/rdma_cm` (`AsFd`): `try_clone_to_owned` and
// `File::from` made it writable from safe code, and every connection manager command carries a
// `response` address the kernel writes its answer to (here CREATE_ID's, aimed at a boxed
// reference, whose pointer becomes the new identifier's handle). The impl is gone (E0277); a
// reactor waits on `EventChannel::readiness_fd`, an epoll instance that takes no commands.
#![forbid(unsafe_code)]

use std::io::Write;
use std::os::fd::AsFd;

fn command_file(fd: &impl AsFd) -> std::fs::File {
    std::fs::File::from(fd.as_fd().try_clone_to_owned().unwrap())
}

fn main() {
    let channel = uverbs::cm::EventChannel::new().unwrap();
    let victim: Box<&u64> = Box::new(&7);
    let mut create_id = Vec::new();
    create_id.extend_from_slice(&0u32.to_ne_bytes()); // CREATE_ID
    create_id.extend_from_slice(&24u16.to_ne_bytes()); // in
    create_id.extend_from_slice(&4u16.to_ne_bytes()); // out
    create_id.extend_from_slice(&0u64.to_ne_bytes()); // uid
    create_id.extend_from_slice(&(&*victim as *const &u64 as u64).to_ne_bytes()); // response
    create_id.extend_from_slice(&[0x06, 0x01, 2, 0, 0, 0, 0, 0]); // RDMA_PS_TCP, RC
    command_file(&channel).write_all(&create_id).unwrap();
    println!("{}", **victim);
}
