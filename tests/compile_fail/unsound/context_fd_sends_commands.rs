// `Context` lent its command file (`AsFd`, `AsRawFd`): `try_clone_to_owned` and `File::from` make
// it writable from safe code, and a `write(2)` on it is a legacy command, REG_MR of any address
// included, bypassing every contract. The impls are gone (E0277); `Context::async_fd` still lends
// the event file, which takes no commands.
#![forbid(unsafe_code)]

use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};

fn context() -> uverbs::Context {
    unimplemented!()
}

fn command_file(fd: &impl AsFd) -> std::fs::File {
    std::fs::File::from(fd.as_fd().try_clone_to_owned().unwrap())
}

fn raw(fd: &impl AsRawFd) -> i32 {
    fd.as_raw_fd()
}

fn main() {
    let ctx = context();
    let reg_mr_of_freed_memory = [0u8; 56];
    command_file(&ctx)
        .write_all(&reg_mr_of_freed_memory)
        .unwrap();
    println!("{}", raw(&ctx));
}
