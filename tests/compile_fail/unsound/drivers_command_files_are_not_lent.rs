// uverbs-drivers lent command files too: `CmFile` (the connection manager's file) through `AsFd`,
// `sys::DeviceFile::as_fd` the uverbs device file, and `sys::ModelFile::as_fd` a model's stand-in
// descriptor, which for a model daemon's device (`sys::remote::RemoteFile`) was the socket the
// daemon takes commands from and writes this process's memory for. A `write(2)` on any of them is
// a command whose pointers the kernel (or the daemon) writes through. All three are gone (E0277,
// E0599); `CmFile::readiness_fd` lends an epoll instance instead.
#![forbid(unsafe_code)]

use std::os::fd::{AsFd, BorrowedFd};

use uverbs_drivers::cm::CmFile;
use uverbs_drivers::sys::{DeviceFile, ModelRef};

fn command_file(fd: &impl AsFd) -> std::fs::File {
    std::fs::File::from(fd.as_fd().try_clone_to_owned().unwrap())
}

fn device_file(file: &DeviceFile) -> BorrowedFd<'_> {
    file.as_fd()
}

fn model_file(model: &ModelRef) -> BorrowedFd<'_> {
    model.0.as_fd()
}

fn main() {
    let cm = CmFile::open().unwrap();
    let _ = command_file(&cm);
    let info = uverbs_drivers::discover::find_device("mlx5_0").unwrap();
    let model = info.model.unwrap();
    let _ = model_file(&model);
    let _ = device_file;
}
