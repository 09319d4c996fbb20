//! On-demand paging: the capabilities `query_device` reports, regions registered with
//! `IBV_ACCESS_ON_DEMAND` over memory not yet touched, the implicit region over the whole address
//! space, `advise_mr` prefetch, and a fault the device cannot resolve. The mlx5 model pages on
//! demand as a ConnectX does (rdma-core's pyverbs `test_odp` also runs on it, in
//! `tests/rdma-core/run`); rxe on Linux 6.1 and 6.12 has no on-demand paging (it came in 6.14), so
//! there every one of these is a typed `Unsupported`: each test asks `Context::supports`
//! (`Capability::OnDemandPaging`, `ImplicitOnDemandPaging`), which follows the device's
//! `odp_caps`.

mod common;

use std::time::Duration;

use common::any_device;
use common::verbs::{wait_for, RcPair};
use uverbs::memmap2::MmapMut;
use uverbs::{
    ibv_access_flags, ibv_wc, ibv_wc_status, Capability, CompletionQueue, ErrorExt, MemoryRegion,
    MrAdvice, QueuePair, SendRequest, Verb,
};
use uverbs_drivers::uapi::ib_verbs::{IB_ODP_SUPPORT, IB_ODP_SUPPORT_IMPLICIT};
use uverbs_drivers::Error;

use ibv_access_flags as A;

fn rw() -> ibv_access_flags {
    A::IBV_ACCESS_LOCAL_WRITE | A::IBV_ACCESS_REMOTE_WRITE | A::IBV_ACCESS_REMOTE_READ
}

fn odp() -> ibv_access_flags {
    rw() | A::IBV_ACCESS_ON_DEMAND
}

fn run(qp: &QueuePair<'_>, cq: &CompletionQueue<'_>, req: SendRequest<'_>, id: u64) -> ibv_wc {
    // SAFETY: every buffer the requests name outlives the wait for their completion, and is
    // read only after it.
    unsafe { qp.post_send_list(&[req]) }.unwrap();
    wait_for(cq, id, &mut Vec::new(), Duration::from_secs(30))
}

fn unsupported(err: &std::io::Error, verb: Verb) {
    assert!(
        matches!(err.uverbs_error(), Some(Error::Unsupported { verb: v }) if *v == verb),
        "expected Unsupported for {verb}, got {err}"
    );
}

#[test]
fn on_demand_regions_take_a_peers_writes_into_untouched_memory() {
    let Some(dev) = any_device("on_demand_regions_take_a_peers_writes_into_untouched_memory")
    else {
        return;
    };
    let ctx = dev.open();
    let caps = ctx.query_device().unwrap().odp_caps();
    let pd = ctx.alloc_pd().unwrap();
    // Memory no one has touched: its pages come in when the device writes them.
    let map = MmapMut::map_anon(1 << 20).unwrap();
    let region = pd.register_mapping::<u8>(map, odp());
    if !ctx.supports(Capability::OnDemandPaging) {
        assert_eq!(
            caps.general_caps, 0,
            "a device that pages nothing on demand (rxe before 6.14) reports no capability"
        );
        unsupported(&region.unwrap_err(), Verb::RegMr);
        let plain = pd.allocate::<u8>(64).unwrap();
        let err = pd
            .advise_mr(MrAdvice::Prefetch, true, &[plain.sge(..).unwrap()])
            .unwrap_err();
        unsupported(&err, Verb::AdviseMr);
        return;
    }
    assert_eq!(caps.general_caps & IB_ODP_SUPPORT, IB_ODP_SUPPORT);
    assert_eq!(
        ctx.supports(Capability::ImplicitOnDemandPaging),
        caps.general_caps & IB_ODP_SUPPORT_IMPLICIT != 0
    );
    let mut region = region.unwrap();
    assert_eq!(region.access(), odp());
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, _b) = RcPair::new(&pd, &cq).access(rw()).connect();
    let mut src = pd.allocate::<u8>(4096).unwrap();
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    // Pages far apart, each written for the first time by the device.
    for (id, at) in [(1u64, 0usize), (2, 300_000), (3, (1 << 20) - 4096)] {
        let sge = [src.sge(..).unwrap()];
        let remote = region.remote().offset(at as u64).unwrap();
        let wc = run(&a, &cq, SendRequest::rdma_write(id, &sge, remote), id);
        assert!(wc.is_valid(), "RDMA WRITE at {at}: {wc:?}");
        assert_eq!(&region[at..at + 4096], &src[..], "at {at}");
    }
    // Advice: in, writable, without faulting; with and without waiting.
    let sges = [
        region.sge(500_000..600_000).unwrap(),
        region.sge(..10).unwrap(),
    ];
    for advice in [
        MrAdvice::Prefetch,
        MrAdvice::PrefetchWrite,
        MrAdvice::PrefetchNoFault,
    ] {
        for flush in [true, false] {
            pd.advise_mr(advice, flush, &sges).unwrap();
        }
    }
    region[1234] = 9;
    assert_eq!(region[1234], 9);

    // What advice cannot name: nothing, a region that is not on demand, one of another domain.
    let err = pd.advise_mr(MrAdvice::Prefetch, true, &[]).unwrap_err();
    assert!(
        matches!(
            err.uverbs_error(),
            Some(Error::InvalidArgument {
                verb: Verb::AdviseMr,
                ..
            })
        ),
        "{err}"
    );
    let pinned: MemoryRegion<u8> = pd.allocate(64).unwrap();
    let pd2 = ctx.alloc_pd().unwrap();
    for (what, target_pd, sge) in [
        ("a pinned region", &pd, pinned.sge(..).unwrap()),
        (
            "a region of another domain",
            &pd2,
            region.sge(..64).unwrap(),
        ),
    ] {
        let err = target_pd
            .advise_mr(MrAdvice::Prefetch, true, &[sge])
            .unwrap_err();
        match err.uverbs_error() {
            Some(Error::Kernel {
                verb: Verb::AdviseMr,
                errno,
            }) => assert_eq!(*errno, nix::errno::Errno::ENOENT, "{what}"),
            other => panic!("{what}: {other:?} ({err})"),
        }
    }
}

#[test]
fn the_implicit_region_reaches_any_memory_and_a_hole_is_an_error_completion() {
    let Some(dev) =
        any_device("the_implicit_region_reaches_any_memory_and_a_hole_is_an_error_completion")
    else {
        return;
    };
    let ctx = dev.open();
    let pd = ctx.alloc_pd().unwrap();
    // SAFETY: the keys are given to no peer but the test's own queue pair, and every request
    // below names only the buffers it set aside for them.
    let implicit = unsafe { pd.register_implicit_on_demand(rw()) };
    if !ctx.supports(Capability::ImplicitOnDemandPaging) {
        unsupported(&implicit.unwrap_err(), Verb::RegMr);
        return;
    }
    let implicit = implicit.unwrap();
    assert_eq!(implicit.access(), odp());
    let cq = ctx.create_cq(16, 0).unwrap();
    let (a, _b) = RcPair::new(&pd, &cq).access(rw()).connect();

    // Plain heap memory, registered nowhere else: the implicit keys cover it, as a local source
    // and as a remote target.
    let from: Vec<u8> = (0..3000).map(|i| (i % 199) as u8).collect();
    let mut to = vec![0u8; 3000];
    let sge = [implicit.sge(&from).unwrap()];
    let remote = implicit.remote(&to);
    let wc = run(&a, &cq, SendRequest::rdma_write(1, &sge, remote), 1);
    assert!(wc.is_valid(), "{wc:?}");
    assert_eq!(to, from);
    // And a peer's read back out of it.
    to.iter_mut().for_each(|b| *b = b.wrapping_add(1));
    let mut back = pd.allocate::<u8>(3000).unwrap();
    let dst = [back.sge(..).unwrap()];
    let wc = run(
        &a,
        &cq,
        SendRequest::rdma_read(2, &dst, implicit.remote(&to)),
        2,
    );
    assert!(wc.is_valid(), "{wc:?}");
    assert_eq!(&back[..], &to[..]);
    back.fill(0);

    // A page that cannot come in (PROT_NONE): the write fails with an error completion, and the
    // pages around it are untouched.
    let mut guarded = MmapMut::map_anon(3 * 4096).unwrap();
    guarded.fill(0x11);
    let hole = guarded.as_mut_ptr().wrapping_add(4096);
    // SAFETY: the middle page of a mapping this test owns becomes inaccessible; nothing reads it.
    let rc = unsafe { libc::mprotect(hole.cast(), 4096, libc::PROT_NONE) };
    assert_eq!(rc, 0);
    let mut remote = implicit.remote(&guarded[..64]);
    remote.addr = hole as u64;
    let small = [implicit.sge(&from[..64]).unwrap()];
    let wc = run(&a, &cq, SendRequest::rdma_write(3, &small, remote), 3);
    assert_eq!(
        wc.error().map(|(s, _)| s),
        Some(ibv_wc_status::IBV_WC_REM_ACCESS_ERR),
        "{wc:?}"
    );
    assert!(guarded[..4096].iter().all(|&b| b == 0x11));
    assert!(guarded[8192..].iter().all(|&b| b == 0x11));
}
