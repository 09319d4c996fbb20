//! dma-buf memory regions (`ibv_reg_dmabuf_mr`): memory another driver exports, registered by
//! its descriptor. The real exporter here is `udmabuf` (a dma-buf over a memfd, built into Debian's
//! 6.12 kernel, absent from 6.1's and from this project's host): where `/dev/udmabuf` exists the
//! test makes one and runs a peer's RDMA WRITE into it and READ out of it on the mlx5 model, and
//! compares the bytes with the memfd's own view, byte for byte. Where the device has no dma-buf
//! regions (`Capability::DmabufRegions`: rxe) registration is a typed `Unsupported`; where it has
//! them (the model) a descriptor that is not a dma-buf, or a range past its end, is the kernel's
//! `EINVAL`.

mod common;

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use common::any_device;
use common::verbs::{wait_for, RcPair};
use uverbs::memmap2::MmapMut;
use uverbs::{
    ibv_access_flags, ibv_wc, Capability, CompletionQueue, ErrorExt, QueuePair, SendRequest, Verb,
};
use uverbs_drivers::Error;

use ibv_access_flags as A;

const SIZE: usize = 64 * 1024;

fn rw() -> ibv_access_flags {
    A::IBV_ACCESS_LOCAL_WRITE | A::IBV_ACCESS_REMOTE_WRITE | A::IBV_ACCESS_REMOTE_READ
}

/// A memfd of `len` bytes, sealed against shrinking (what `udmabuf` requires).
fn memfd(len: usize) -> std::fs::File {
    // SAFETY: a plain system call with a NUL-terminated name; the fd it returns is ours.
    let fd = unsafe { libc::memfd_create(c"uverbs-dmabuf".as_ptr(), libc::MFD_ALLOW_SEALING) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` is an open descriptor nothing else owns.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.set_len(len as u64).unwrap();
    // SAFETY: F_ADD_SEALS on our own memfd.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) };
    assert_eq!(rc, 0, "F_ADD_SEALS: {}", std::io::Error::last_os_error());
    file
}

/// `struct udmabuf_create` (`<linux/udmabuf.h>`).
#[repr(C)]
struct UdmabufCreate {
    memfd: u32,
    flags: u32,
    offset: u64,
    size: u64,
}

/// `UDMABUF_CREATE` = `_IOW('u', 0x42, struct udmabuf_create)`.
const UDMABUF_CREATE: libc::c_ulong =
    (1 << 30) | (24 << 16) | ((b'u' as libc::c_ulong) << 8) | 0x42;
const UDMABUF_FLAGS_CLOEXEC: u32 = 1;

/// A dma-buf over all of `file`, or `None` where the kernel has no `udmabuf`.
fn udmabuf(file: &std::fs::File) -> Option<OwnedFd> {
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/udmabuf")
        .ok()?;
    let req = UdmabufCreate {
        memfd: file.as_raw_fd() as u32,
        flags: UDMABUF_FLAGS_CLOEXEC,
        offset: 0,
        size: file.metadata().unwrap().len(),
    };
    // SAFETY: UDMABUF_CREATE reads the request, which lives for the call; it returns a new
    // descriptor, which becomes ours.
    let fd = unsafe { libc::ioctl(dev.as_raw_fd(), UDMABUF_CREATE, &req) };
    assert!(
        fd >= 0,
        "UDMABUF_CREATE: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a new descriptor nothing else owns.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn run(qp: &QueuePair<'_>, cq: &CompletionQueue<'_>, req: SendRequest<'_>, id: u64) -> ibv_wc {
    // SAFETY: every buffer the requests name outlives the wait for their completion.
    unsafe { qp.post_send_list(&[req]) }.unwrap();
    wait_for(cq, id, &mut Vec::new(), Duration::from_secs(30))
}

#[test]
fn dmabuf_regions_are_refused_with_a_typed_error_where_they_cannot_be() {
    let Some(dev) =
        any_device("dmabuf_regions_are_refused_with_a_typed_error_where_they_cannot_be")
    else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let file = memfd(SIZE);
    let err = pd
        .register_dmabuf(file.as_fd(), 0, 4096, 0, rw())
        .unwrap_err();
    if !ctx.supports(Capability::DmabufRegions) {
        assert!(
            matches!(
                err.uverbs_error(),
                Some(Error::Unsupported {
                    verb: Verb::RegDmabufMr
                })
            ),
            "no dma-buf regions: {err}"
        );
        return;
    }
    // A memfd is no dma-buf.
    match err.uverbs_error() {
        Some(Error::Kernel {
            verb: Verb::RegDmabufMr,
            errno,
        }) => assert_eq!(*errno, nix::errno::Errno::EINVAL, "{err}"),
        other => panic!("a memfd: {other:?} ({err})"),
    }
    let err = pd.register_dmabuf(file.as_fd(), 0, 0, 0, rw()).unwrap_err();
    assert!(
        matches!(
            err.uverbs_error(),
            Some(Error::InvalidArgument {
                verb: Verb::RegDmabufMr,
                ..
            })
        ),
        "zero bytes: {err}"
    );
}

#[test]
fn a_peers_writes_land_in_a_udmabuf_and_its_reads_come_back_byte_for_byte() {
    let file = memfd(SIZE);
    let Some(dmabuf) = udmabuf(&file) else {
        eprintln!("SKIPPED: no /dev/udmabuf on this kernel (Debian's 6.12 has it, 6.1 does not)");
        return;
    };
    // The model in this process, also in the VM: rxe has no dma-buf regions.
    let model = uverbs_mlx5_model::Mlx5Model::new().expect("starting the mlx5 model");
    let list = uverbs::DeviceList::from_infos(vec![model.device_info()]).unwrap();
    let ctx = list.iter().next().unwrap().open().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, _b) = RcPair::new(&pd, &cq).access(rw()).connect();

    // Bytes 4096.. of the buffer, seen by the device at 0x5000_0000.
    let (offset, len, iova) = (4096u64, 32 * 1024u64, 0x5000_0000u64);
    let region = pd
        .register_dmabuf(dmabuf.as_fd(), offset, len, iova, rw())
        .unwrap();
    drop(dmabuf); // the kernel (here: the model) keeps its own reference
    assert_eq!((region.iova(), region.len()), (iova, len));
    assert_eq!(region.remote().addr, iova);
    // Past the end of the dma-buf: refused.
    let file2 = memfd(8192);
    let small = udmabuf(&file2).unwrap();
    let err = pd
        .register_dmabuf(small.as_fd(), 4096, 8192, 0, rw())
        .unwrap_err();
    assert!(
        matches!(
            err.uverbs_error(),
            Some(Error::Kernel {
                verb: Verb::RegDmabufMr,
                ..
            })
        ),
        "{err}"
    );

    // SAFETY: the memfd is this test's; nothing truncates it while mapped.
    let mut view = unsafe { MmapMut::map_mut(&file) }.unwrap();
    view.fill(0x33);
    let mut src = pd.allocate::<u8>(8192).unwrap();
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i * 13 % 253) as u8;
    }
    let at = 1000u64;
    let sge = [src.sge(..).unwrap()];
    let wc = run(
        &a,
        &cq,
        SendRequest::rdma_write(1, &sge, region.remote().offset(at).unwrap()),
        1,
    );
    assert!(wc.is_valid(), "RDMA WRITE into the dma-buf: {wc:?}");
    let start = (offset + at) as usize;
    assert_eq!(&view[start..start + 8192], &src[..], "the memfd's view");
    assert!(view[..start].iter().all(|&b| b == 0x33), "before the write");
    assert!(view[start + 8192..].iter().all(|&b| b == 0x33), "after it");

    // A peer's read of the region's first bytes: what the memfd holds there.
    view[offset as usize..offset as usize + 16].copy_from_slice(b"dma-buf contents");
    let mut back = pd.allocate::<u8>(16).unwrap();
    let dst = [back.sge(..).unwrap()];
    let wc = run(&a, &cq, SendRequest::rdma_read(2, &dst, region.remote()), 2);
    assert!(wc.is_valid(), "RDMA READ out of the dma-buf: {wc:?}");
    assert_eq!(&back[..], b"dma-buf contents");
    back.fill(0);
    // As a local source: scatter entries name the IOVA.
    let local = [region.sge(0..16).unwrap()];
    assert_eq!(local[0].addr, iova);
    let wc = run(
        &a,
        &cq,
        SendRequest::rdma_write(3, &local, back.remote()),
        3,
    );
    assert!(wc.is_valid(), "{wc:?}");
    assert_eq!(&back[..], b"dma-buf contents");
    assert!(region.sge(0..len + 1).is_err());
}
