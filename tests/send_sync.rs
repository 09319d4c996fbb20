//! Thread safety of the public types (docs/soundness.md has the table and the reasons).
//!
//! Every public type of `uverbs` is `Send + Sync`; `MemoryRegion<T>` exactly when `T` is. That is
//! asserted here at compile time; what must *not* compile (regions of `Cell`s shared, of `Rc`s
//! moved, a queue pair sent to a detached thread, objects outliving what they borrow) is in
//! tests/compile_fail. The runtime test checks the other half of the design: the objects without a
//! lifetime (memory regions, shared receive queues, completion channels) keep the kernel objects
//! they depend on alive through reference counts, so they may outlive the protection domain and
//! the context, move to other threads, and still be destroyed cleanly.

mod common;

use std::thread;

use common::any_device;
use uverbs::*;

fn send_sync<T: Send + Sync>() {}

/// The bounds, checked by the compiler: this function does not build if one of them is lost.
#[test]
fn public_types_are_send_and_sync() {
    // Objects.
    send_sync::<Context>();
    send_sync::<ProtectionDomain<'static>>();
    send_sync::<CompletionQueue<'static>>();
    send_sync::<CompletionChannel>();
    send_sync::<QueuePairBuilder<'static>>();
    send_sync::<PreparedQueuePair<'static>>();
    send_sync::<QueuePair<'static>>();
    send_sync::<SharedReceiveQueue>();
    send_sync::<AddressHandle>();
    send_sync::<MemoryWindow>();
    send_sync::<MemoryRegion<u8>>();
    send_sync::<MemoryRegion<u64>>();
    send_sync::<MemoryRegion<std::sync::atomic::AtomicU64>>();
    send_sync::<uverbs::BorrowedMemoryRegion<'static, u64>>();
    send_sync::<uverbs::RawMemoryRegion>();
    send_sync::<uverbs::Registration>();
    send_sync::<uverbs::Iova>();
    send_sync::<uverbs::ImplicitOdpRegion>();
    send_sync::<uverbs::MrAdvice>();
    send_sync::<uverbs::DeviceClock>();
    send_sync::<uverbs::DmabufMemoryRegion>();
    send_sync::<uverbs::TimestampedWc>();
    send_sync::<uverbs::CqAttr<'static>>();
    // The connection manager.
    send_sync::<cm::EventChannel>();
    send_sync::<cm::CmId>();
    send_sync::<cm::Event>();
    send_sync::<cm::EventKind>();
    send_sync::<cm::Listener>();
    send_sync::<cm::Connection>();
    send_sync::<cm::ConnParams>();
    send_sync::<cm::PeerParam>();
    send_sync::<cm::UdPeer>();
    send_sync::<cm::DevicePort>();
    send_sync::<cm::EndpointConfig>();
    // Discovery.
    send_sync::<DeviceList>();
    send_sync::<Device<'static>>();
    send_sync::<DeviceListIter<'static>>();
    send_sync::<Driver>();
    send_sync::<CommandPath>();
    send_sync::<Guid>();
    // Requests and results.
    send_sync::<SendRequest<'static>>();
    send_sync::<ReceiveRequest<'static>>();
    send_sync::<uverbs::SendBatch<'static, 'static>>();
    send_sync::<uverbs::SendOp<'static, 'static, 'static>>();
    send_sync::<uverbs::RecvBatch<'static, 'static>>();
    send_sync::<uverbs::Completions<'static>>();
    send_sync::<uverbs::Completion<'static>>();
    send_sync::<Sge>();
    send_sync::<RemoteMemory>();
    send_sync::<RemoteKey>();
    send_sync::<PostFailure>();
    send_sync::<ibv_wc>();
    send_sync::<AsyncEvent>();
    send_sync::<AsyncEventKind>();
    send_sync::<Error>();
    send_sync::<Verb>();
    // Attributes and plain values.
    send_sync::<QueuePairEndpoint>();
    send_sync::<AddressVector>();
    send_sync::<QpAttr>();
    send_sync::<QpCaps>();
    send_sync::<SrqCaps>();
    send_sync::<DeviceAttr>();
    send_sync::<PortAttr>();
    send_sync::<OdpCaps>();
    send_sync::<DeviceCapFlags>();
    send_sync::<PortCapFlags>();
    send_sync::<Gid>();
    send_sync::<GidEntry>();
    send_sync::<GidType>();
    send_sync::<LinkLayer>();
    send_sync::<Mtu>();
    send_sync::<NodeType>();
    send_sync::<PhysState>();
    send_sync::<PortState>();
    send_sync::<Speed>();
    send_sync::<Width>();
    send_sync::<AtomicCap>();
    send_sync::<ibv_access_flags>();
    send_sync::<ibv_send_flags>();
    send_sync::<ibv_wc_flags>();
    send_sync::<ibv_qp_attr_mask>();
    send_sync::<ibv_gid>();
    send_sync::<ibv_gid_global>();
    send_sync::<uverbs_mlx5_model::Mlx5Model>();
    send_sync::<uverbs_mlx5_model::ModelConfig>();
}

/// `MemoryRegion<T>` follows `T`: the region hands out `&T` and `&mut T` (it dereferences to
/// `[T]`), so it must be `Sync` only with `T: Sync` and `Send` only with `T: Send`.
#[test]
fn memory_regions_follow_their_elements() {
    fn region<T: Send + Sync + Copy + Default>() {
        send_sync::<MemoryRegion<T>>();
        send_sync::<uverbs::BorrowedMemoryRegion<'static, T>>();
    }
    region::<u8>();
    region::<[u64; 4]>();
    // The negative cases (`Cell`, `Rc`) are compile-fail tests.
}

#[test]
fn unborrowed_objects_outlive_their_domain_and_context_across_threads() {
    let Some(dev) =
        any_device("unborrowed_objects_outlive_their_domain_and_context_across_threads")
    else {
        return;
    };
    let errors_before = uverbs_drivers::drop_errors();
    // The region, the SRQ and the channel are created in a domain and context that are dropped at
    // the end of this block; nothing borrows them, so they live on.
    let (mut mr, srq, channel) = {
        let ctx = dev.open();
        let pd = ctx.alloc_pd().unwrap();
        let mut mr = pd.allocate::<u64>(64).unwrap();
        mr[3] = 0x1234;
        let srq = pd.create_srq(8, 1).unwrap();
        let channel = ctx.create_comp_channel().unwrap();
        (mr, srq, channel)
    };
    // Still registered, and usable: keys, entries, contents.
    let sge = mr.sge(2..4).unwrap();
    assert_eq!((sge.length, sge.lkey), (16, mr.lkey()));
    assert_eq!(mr[3], 0x1234);
    mr[4] = 7;
    assert!(srq.caps().max_wr >= 8);
    assert!(matches!(channel.try_get_event(), Ok(None)));
    // Moved to other threads and destroyed there, after their domain and context: every destroy
    // reaches a kernel object that still exists, so none fails.
    thread::scope(|s| {
        s.spawn(move || {
            assert_eq!(mr[4], 7);
            drop(mr);
        });
        s.spawn(move || drop(srq));
        s.spawn(move || drop(channel));
    });
    assert_eq!(
        uverbs_drivers::drop_errors(),
        errors_before,
        "a destroy failed (see stderr)"
    );
}
