//! Memory as programs already have it: a slice lent for the region's lifetime, a memory mapping
//! (anonymous, memfd shared memory, huge pages), memory registered raw under an `unsafe` contract;
//! regions seen by the device at another address than their own (zero-based, any IOVA); and
//! `rereg` of a live region's access flags and protection domain.
//!
//! Every kind of memory is the target of a peer's RDMA WRITE and the source of its RDMA READ, and
//! the bytes are compared one by one, both where they landed and what came back. Bad input is a
//! typed error naming the verb. Both backends: rxe in the VM, the mlx5 model on the host.

mod common;

use std::os::fd::FromRawFd;
use std::time::Duration;

use common::any_device;
use common::verbs::{wait_for, RcPair};
use uverbs::memmap2::{MmapMut, MmapOptions};
use uverbs::{
    ibv_access_flags, ibv_wc, ibv_wc_status, Capability, CompletionQueue, ErrorExt, Iova,
    MemoryRegion, ProtectionDomain, QueuePair, RemoteMemory, SendRequest, Sge, Verb,
};
use uverbs_drivers::Error;

use ibv_access_flags as A;

const LEN: usize = 8192;

fn rw() -> ibv_access_flags {
    A::IBV_ACCESS_LOCAL_WRITE | A::IBV_ACCESS_REMOTE_WRITE | A::IBV_ACCESS_REMOTE_READ
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

fn connect<'a>(
    pd: &'a ProtectionDomain<'_>,
    cq: &'a CompletionQueue<'_>,
) -> (QueuePair<'a>, QueuePair<'a>) {
    RcPair::new(pd, cq).depth(8, 8).access(rw()).connect()
}

/// Posts `req` on `qp` and returns its completion (30 s at most).
fn run(qp: &QueuePair<'_>, cq: &CompletionQueue<'_>, req: SendRequest<'_>, id: u64) -> ibv_wc {
    // SAFETY: every buffer the tests' requests name outlives the wait for the completion below,
    // and none is accessed until it has been polled.
    unsafe { qp.post_send_list(&[req]) }.unwrap();
    wait_for(cq, id, &mut Vec::new(), Duration::from_secs(30))
}

/// A peer writes `data` at `at` bytes into `target`, then reads the target's first `back` bytes
/// into its own buffer; returns what it read. `target` is any region's remote description.
fn write_then_read(
    qp: &QueuePair<'_>,
    cq: &CompletionQueue<'_>,
    local: &mut MemoryRegion<u8>,
    target: RemoteMemory,
    at: usize,
    data: &[u8],
) -> Vec<u8> {
    local[..data.len()].copy_from_slice(data);
    let sge = [local.sge(..data.len()).unwrap()];
    let remote = target.offset(at as u64).unwrap();
    let wc = run(qp, cq, SendRequest::rdma_write(1, &sge, remote), 1);
    assert!(wc.is_valid(), "RDMA WRITE: {wc:?}");
    local.fill(0);
    let back = [local.sge(..target.len as usize).unwrap()];
    let wc = run(qp, cq, SendRequest::rdma_read(2, &back, target), 2);
    assert!(wc.is_valid(), "RDMA READ: {wc:?}");
    local[..target.len as usize].to_vec()
}

/// What a peer's write then read of a region of `LEN` bytes must show: `data` at `at` over
/// `before`.
fn expected(before: &[u8], at: usize, data: &[u8]) -> Vec<u8> {
    let mut e = before.to_vec();
    e[at..at + data.len()].copy_from_slice(data);
    e
}

fn memfd(len: usize) -> std::fs::File {
    // SAFETY: a plain system call with a NUL-terminated name; the fd it returns is new and ours.
    let fd = unsafe { libc::memfd_create(c"uverbs-test".as_ptr(), 0) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` is an open file descriptor nothing else owns.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.set_len(len as u64).unwrap();
    file
}

/// Huge pages for the test, if the machine has or can be given some: `None` (and a line saying
/// so) where it cannot.
fn huge_mapping(len: usize) -> Option<MmapMut> {
    if let Ok(m) = MmapOptions::new().len(len).huge(None).map_anon() {
        return Some(m);
    }
    // The VM's kernel (we are root there, and the machine is thrown away) reserves none by
    // default: ask for a few. Never on the host.
    if std::env::var_os("UVERBS_VM").is_some() {
        let _ = std::fs::write("/proc/sys/vm/nr_hugepages", "4");
    }
    match MmapOptions::new().len(len).huge(None).map_anon() {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("memory: no huge pages on this machine ({e}); that case is skipped");
            None
        }
    }
}

#[test]
fn slices_mappings_and_raw_memory_carry_a_peers_writes_and_reads() {
    let Some(dev) = any_device("slices_mappings_and_raw_memory_carry_a_peers_writes_and_reads")
    else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, _b) = connect(&pd, &cq);
    let mut local = pd.allocate::<u8>(LEN).unwrap();
    let data = pattern(3000, 7);
    let at = 1234;

    // A slice lent for the region's lifetime: the bytes are the slice's, seen after the region is
    // gone, and what was there before the registration is what a peer reads.
    let mut buf = pattern(LEN, 99);
    let before = buf.clone();
    pd.with_slice(&mut buf[..], rw(), |region| {
        assert_eq!(region.len(), LEN);
        assert_eq!(region.remote().addr, region.as_ptr() as u64);
        let got = write_then_read(&a, &cq, &mut local, region.remote(), at, &data);
        assert_eq!(got, expected(&before, at, &data), "a lent slice");
        assert_eq!(&region[at..at + data.len()], &data[..]);
    })
    .unwrap();
    assert_eq!(
        buf,
        expected(&before, at, &data),
        "the slice after the region"
    );

    // Mappings: anonymous, memfd shared memory (seen through a second mapping of the same file),
    // huge pages where the machine has them.
    let file = memfd(LEN);
    // SAFETY: the memfd is this test's alone; nothing truncates it while mapped.
    let shared = unsafe { MmapMut::map_mut(&file) }.unwrap();
    let mut mappings = vec![
        ("an anonymous mapping", MmapMut::map_anon(LEN).unwrap()),
        ("a memfd mapping", shared),
    ];
    if let Some(huge) = huge_mapping(2 << 20) {
        mappings.push(("a huge-page mapping", huge));
    }
    for (what, mut map) in mappings {
        let fill = pattern(map.len(), 3);
        map.copy_from_slice(&fill);
        let mut region: MemoryRegion<u8> = pd.register_mapping(map, rw()).unwrap();
        let got = write_then_read(&a, &cq, &mut local, region.remote().clipped(LEN), at, &data);
        assert_eq!(got, expected(&fill[..LEN], at, &data), "{what}");
        assert_eq!(&region[at..at + data.len()], &data[..], "{what}");
        region[0] = 0x5a;
        assert!(region.write_volatile(1, 0xa5));
        assert_eq!(region.read_volatile(1), Some(0xa5));
    }
    // The memfd's other view sees what the peer wrote through the registered one.
    // SAFETY: as above.
    let view = unsafe { MmapMut::map_mut(&file) }.unwrap();
    assert_eq!(
        &view[at..at + data.len()],
        &data[..],
        "the memfd's contents"
    );
    assert_eq!(view[0], 0x5a);

    // Typed elements over a mapping: 8-byte words, in place.
    let mut words: MemoryRegion<u64> = pd
        .register_mapping(MmapMut::map_anon(LEN).unwrap(), rw())
        .unwrap();
    assert_eq!(words.len(), LEN / 8);
    words.fill(0x0101_0101_0101_0101);
    let got = write_then_read(&a, &cq, &mut local, words.remote(), 16, &data[..64]);
    assert_eq!(got, expected(&[1u8; LEN], 16, &data[..64]));
    assert_eq!(words[2].to_ne_bytes(), data[..8]);

    // Raw memory the test manages: the region gives out entries and keys, never the bytes.
    let mut raw_map = MmapMut::map_anon(LEN).unwrap();
    raw_map.copy_from_slice(&pattern(LEN, 5));
    let raw_before = raw_map.to_vec();
    let ptr = raw_map.as_mut_ptr();
    // SAFETY: the mapping outlives the region (dropped at the end of this block), and the test
    // reads it only after the region is gone.
    let raw = unsafe { pd.register_raw(ptr, LEN, rw()) }.unwrap();
    assert_eq!((raw.addr(), raw.len(), raw.iova()), (ptr, LEN, ptr as u64));
    let got = write_then_read(&a, &cq, &mut local, raw.remote(), at, &data);
    assert_eq!(got, expected(&raw_before, at, &data), "raw memory");
    drop(raw);
    assert_eq!(&raw_map[..], &expected(&raw_before, at, &data)[..]);
}

/// Narrows a remote description to its first `len` bytes (a huge-page mapping is larger).
trait Clip {
    fn clipped(self, len: usize) -> RemoteMemory;
}

impl Clip for RemoteMemory {
    fn clipped(mut self, len: usize) -> RemoteMemory {
        self.len = self.len.min(len as u64);
        self
    }
}

#[test]
fn zero_based_and_chosen_iova_regions_are_addressed_at_their_iova() {
    let Some(dev) = any_device("zero_based_and_chosen_iova_regions_are_addressed_at_their_iova")
    else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, _b) = connect(&pd, &cq);
    let mut local = pd.allocate::<u8>(LEN).unwrap();
    let data = pattern(500, 11);
    let page = 4096u64;

    // Zero-based over page-aligned memory: the peer addresses the first byte as 0.
    let mut zero: MemoryRegion<u8> = pd
        .registration(rw())
        .iova(Iova::ZeroBased)
        .mapping(MmapMut::map_anon(LEN).unwrap())
        .unwrap();
    assert_eq!(zero.iova(), 0);
    assert_eq!(zero.remote().addr, 0);
    let got = write_then_read(&a, &cq, &mut local, zero.remote(), 100, &data);
    assert_eq!(got, expected(&[0; LEN], 100, &data));
    assert_eq!(&zero[100..600], &data[..]);

    // Its scatter entries name IOVAs too: a local RDMA WRITE source at 0 + 4000.
    zero[4000..4500].copy_from_slice(&data);
    assert_eq!(zero.sge(4000..4500).unwrap().addr, 4000);
    let target = pd.allocate::<u8>(LEN).unwrap();
    let sge = [zero.sge(4000..4500).unwrap()];
    let wc = run(
        &a,
        &cq,
        SendRequest::rdma_write(3, &sge, target.remote()),
        3,
    );
    assert!(wc.is_valid(), "{wc:?}");
    assert_eq!(&target[..500], &data[..]);

    // A chosen IOVA keeping the memory's offset within its page: a vector's buffer, wherever the
    // allocator put it.
    let v = vec![0u8; LEN];
    let offset = v.as_ptr() as u64 % page;
    let iova = 0x7_0000_0000 + offset;
    let at: MemoryRegion<u8> = pd.registration(rw()).iova(Iova::At(iova)).vec(v).unwrap();
    assert_eq!(at.remote().addr, iova);
    let got = write_then_read(&a, &cq, &mut local, at.remote(), 7, &data);
    assert_eq!(got, expected(&[0; LEN], 7, &data));
    // The process address is no address of the region's: a peer naming it is refused.
    let mut wrong = at.remote();
    wrong.addr = at.as_ptr() as u64;
    let (a2, _b2) = connect(&pd, &cq);
    let src = [local.sge(..8).unwrap()];
    let wc = run(&a2, &cq, SendRequest::rdma_write(4, &src, wrong), 4);
    assert_eq!(
        wc.error().map(|(s, _)| s),
        Some(ibv_wc_status::IBV_WC_REM_ACCESS_ERR),
        "{wc:?}"
    );

    // Another offset within the page is refused before the kernel sees it.
    let v = vec![0u8; 64];
    let off = v.as_ptr() as u64 % page;
    let err = pd
        .registration(rw())
        .iova(Iova::At(0x10_0000 + (off + 1) % page))
        .vec(v)
        .unwrap_err();
    assert_typed(&err, Verb::RegMr, "another offset within a page");
}

fn assert_typed(err: &std::io::Error, verb: Verb, what: &str) {
    match err.uverbs_error() {
        Some(Error::InvalidArgument { verb: v, .. }) if *v == verb => {}
        other => panic!("{what}: expected InvalidArgument for {verb}, got {other:?} ({err})"),
    }
    assert!(err.to_string().contains(&verb.to_string()), "{err}");
}

/// Whether the kernel refused `REREG_MR` as unsupported: accepted only where the device says it
/// cannot (`Capability::Rereg`, `Capability::ReregMemory`): rxe has `rereg_user_mr` (protection
/// domain and access flags) on 6.12 and not on 6.1, and changes no region's memory; the mlx5 model
/// (as mlx5_ib) has both.
fn rereg_unsupported(err: &std::io::Error) -> bool {
    matches!(
        err.uverbs_error(),
        Some(Error::Unsupported {
            verb: Verb::ReregMr
        })
    )
}

#[test]
fn rereg_changes_a_live_regions_access_and_protection_domain() {
    let Some(dev) = any_device("rereg_changes_a_live_regions_access_and_protection_domain") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let pd2 = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 0).unwrap();
    let mut local = pd.allocate::<u8>(64).unwrap();
    local.copy_from_slice(&pattern(64, 1));
    let src = [local.sge(..).unwrap()];

    // Local write only: a peer's RDMA WRITE is refused, and changes nothing.
    let mut target = pd
        .allocate_with_access::<u8>(LEN, A::IBV_ACCESS_LOCAL_WRITE)
        .unwrap();
    {
        let (a, _b) = connect(&pd, &cq);
        let wc = run(
            &a,
            &cq,
            SendRequest::rdma_write(1, &src, target.remote()),
            1,
        );
        assert_eq!(
            wc.error().map(|(s, _)| s),
            Some(ibv_wc_status::IBV_WC_REM_ACCESS_ERR),
            "{wc:?}"
        );
    }
    assert!(target.iter().all(|&b| b == 0));

    if let Err(e) = target.rereg(None, Some(rw())) {
        assert!(
            rereg_unsupported(&e) && !ctx.supports(Capability::Rereg),
            "rereg of the access flags: {e}"
        );
        eprintln!(
            "rereg: {} cannot re-register on this kernel ({e}); only the refusals are tested",
            dev.name()
        );
        refusals(&dev, &mut target);
        return;
    }
    assert_eq!(target.access(), rw());
    {
        let (a, _b) = connect(&pd, &cq);
        let wc = run(
            &a,
            &cq,
            SendRequest::rdma_write(2, &src, target.remote()),
            2,
        );
        assert!(wc.is_valid(), "after rereg of the access: {wc:?}");
    }
    assert_eq!(&target[..64], &local[..]);

    // Moved to another protection domain: queue pairs of the old one can no longer reach it, and
    // those of the new one can.
    target.rereg(Some(&pd2), None).unwrap();
    let local_err = {
        let (mut a, _b) = connect(&pd, &cq);
        // SAFETY: refused before anything is posted.
        unsafe { a.post_send(&mut target, ..8, 9) }.unwrap_err()
    };
    assert_typed(&local_err, Verb::PostSend, "a region of another domain");
    {
        let (a, _b) = connect(&pd, &cq);
        let wc = run(
            &a,
            &cq,
            SendRequest::rdma_write(3, &src, target.remote()),
            3,
        );
        assert_eq!(
            wc.error().map(|(s, _)| s),
            Some(ibv_wc_status::IBV_WC_REM_ACCESS_ERR),
            "a queue pair of the old domain: {wc:?}"
        );
    }
    {
        let mut local2 = pd2.allocate::<u8>(64).unwrap();
        local2.copy_from_slice(&pattern(64, 2));
        let src2 = [local2.sge(..).unwrap()];
        let (a, _b) = connect(&pd2, &cq);
        let wc = run(
            &a,
            &cq,
            SendRequest::rdma_write(4, &src2, target.remote()),
            4,
        );
        assert!(wc.is_valid(), "a queue pair of the new domain: {wc:?}");
        assert_eq!(&target[..64], &local2[..]);
    }
    // Lent slices and raw memory re-register too.
    let mut buf = vec![0u8; 256];
    pd.with_slice(&mut buf[..], A::IBV_ACCESS_LOCAL_WRITE, |lent| {
        lent.rereg(None, Some(rw())).unwrap();
        assert_eq!(lent.access(), rw());
    })
    .unwrap();
    refusals(&dev, &mut target);
}

/// What `rereg` refuses on every backend, before the kernel: nothing to change, a domain of
/// another context; the region is unchanged afterwards.
fn refusals(dev: &common::TestDevice, target: &mut MemoryRegion<u8>) {
    let (lkey, access) = (target.lkey(), target.access());
    let err = target.rereg(None, None).unwrap_err();
    assert_typed(&err, Verb::ReregMr, "nothing to change");
    let other = dev.open();
    let other_pd = other.alloc_pd().unwrap();
    let err = target.rereg(Some(&other_pd), None).unwrap_err();
    assert_typed(&err, Verb::ReregMr, "a domain of another context");
    assert_eq!((target.lkey(), target.access()), (lkey, access));
}

#[test]
fn bad_memory_is_a_typed_error() {
    let Some(dev) = any_device("bad_memory_is_a_typed_error") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();

    let mut empty: [u64; 0] = [];
    let err = pd
        .with_slice(&mut empty[..], rw(), |_| panic!("called"))
        .unwrap_err();
    assert_typed(&err, Verb::RegMr, "an empty slice");
    let mut units = [(); 4];
    let err = pd
        .with_slice(&mut units[..], rw(), |_| panic!("called"))
        .unwrap_err();
    assert_typed(&err, Verb::RegMr, "zero-sized elements");

    // A mapping that is not a whole number of elements.
    let map = MmapOptions::new().len(4100).map_anon().unwrap();
    let err = pd.register_mapping::<u64>(map, rw()).unwrap_err();
    assert_typed(&err, Verb::RegMr, "a mapping of 4100 bytes as u64s");

    // Raw: null, and zero bytes.
    // SAFETY: refused before the kernel sees it.
    let err = unsafe { pd.register_raw(std::ptr::null_mut(), 64, rw()) }.unwrap_err();
    assert_typed(&err, Verb::RegMr, "a null address");
    let mut byte = [0u8; 1];
    // SAFETY: as above (zero bytes).
    let err = unsafe { pd.register_raw(byte.as_mut_ptr(), 0, rw()) }.unwrap_err();
    assert_typed(&err, Verb::RegMr, "zero bytes");

    // Raw memory that is not mapped (a guard page): the kernel refuses to pin it.
    let mut guarded = MmapMut::map_anon(3 * 4096).unwrap();
    let guard = guarded.as_mut_ptr().wrapping_add(4096);
    // SAFETY: the middle page of a mapping this test owns becomes inaccessible.
    let rc = unsafe { libc::mprotect(guard.cast(), 4096, libc::PROT_NONE) };
    assert_eq!(rc, 0);
    // SAFETY: the kernel refuses it (nothing is registered), so nothing touches the page.
    let err = unsafe { pd.register_raw(guard, 4096, rw()) }.unwrap_err();
    match err.uverbs_error() {
        Some(Error::Kernel {
            verb: Verb::RegMr,
            errno,
        }) => assert_eq!(*errno, nix::errno::Errno::EFAULT, "{err}"),
        other => panic!("a PROT_NONE page: {other:?} ({err})"),
    }
    // The pages around it are intact and still register.
    guarded[..4096].fill(1);
    // SAFETY: the first page stays mapped until `guarded` goes, after the region.
    let ok = unsafe { pd.register_raw(guarded.as_mut_ptr(), 4096, rw()) }.unwrap();
    drop(ok);
    assert!(guarded[..4096].iter().all(|&b| b == 1));
}

#[test]
fn a_receive_into_a_dropped_lent_region_completes_in_error_and_leaves_the_slice_alone() {
    let Some(dev) = any_device(
        "a_receive_into_a_dropped_lent_region_completes_in_error_and_leaves_the_slice_alone",
    ) else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, b) = connect(&pd, &cq);
    let mut buf = vec![0x11u8; 256];
    pd.with_slice(&mut buf[..], rw(), |region| {
        let sge: [Sge; 1] = [region.sge(..).unwrap()];
        // SAFETY: the entry's memory is deregistered before anything is sent: the device cannot
        // write it (the receive completes in error), which is what this test checks.
        unsafe { b.post_receive_list(&[uverbs::ReceiveRequest::new(7, &sge)]) }.unwrap();
    })
    .unwrap();
    let mut msg = pd.allocate::<u8>(64).unwrap();
    msg.fill(0xee);
    let s = [msg.sge(..).unwrap()];
    // SAFETY: `msg` outlives the wait below.
    unsafe { a.post_send_list(&[SendRequest::send(8, &s)]) }.unwrap();
    let mut seen = Vec::new();
    let rx = wait_for(&cq, 7, &mut seen, Duration::from_secs(30));
    assert!(
        !rx.is_valid(),
        "the receive into a deregistered region: {rx:?}"
    );
    assert!(buf.iter().all(|&x| x == 0x11), "the slice was written");
}

#[test]
fn rereg_memory_moves_a_live_region_to_new_memory() {
    let Some(dev) = any_device("rereg_memory_moves_a_live_region_to_new_memory") else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, _b) = connect(&pd, &cq);
    let mut local = pd.allocate::<u8>(LEN).unwrap();
    let mut region = pd.register(vec![0u8; 4096], rw()).unwrap();
    let data = pattern(1000, 21);
    let got = write_then_read(&a, &cq, &mut local, region.remote(), 100, &data);
    assert_eq!(got, expected(&[0; 4096], 100, &data));

    let err = region.rereg_memory(Vec::new()).unwrap_err();
    assert_typed(&err, Verb::RegMr, "an empty vector");
    if let Err(e) = region.rereg_memory(pattern(LEN, 4)) {
        assert!(
            rereg_unsupported(&e) && !ctx.supports(Capability::ReregMemory),
            "rereg of the memory: {e}"
        );
        // Unchanged: the old memory, the old keys.
        assert_eq!(region.len(), 4096);
        assert_eq!(&region[100..1100], &data[..]);
        return;
    }
    // Now the region is the new vector, at its own address, and takes a peer's writes there.
    assert_eq!(region.len(), LEN);
    assert_eq!(region.remote().addr, region.as_ptr() as u64);
    let before = pattern(LEN, 4);
    assert_eq!(&region[..], &before[..]);
    let data2 = pattern(2000, 77);
    let got = write_then_read(&a, &cq, &mut local, region.remote(), 5000, &data2);
    assert_eq!(got, expected(&before, 5000, &data2));
    assert_eq!(&region[5000..7000], &data2[..]);
}
