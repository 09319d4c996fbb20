//! The Linux RDMA user ABI ("uverbs") as plain Rust types: ids, structs and flags.
//!
//! # Naming
//!
//! Every item keeps the exact C name of the kernel uapi header it mirrors (`ib_uverbs_ioctl_hdr`,
//! `UVERBS_METHOD_GET_CONTEXT`, `mlx5_ib_create_qp`, ...), and every field keeps its C field name, so the
//! headers and the kernel sources remain the documentation. C enum values become `pub const`s whose
//! Rust type is the width they are used with: object/method/attribute ids are `u16`, write command
//! numbers `u32`, flags the width of the field they go into (see each module).
//!
//! # Coverage
//!
//! The layouts are those of the Linux **6.1** uapi headers (`/usr/include/rdma` from Debian 12's
//! `linux-libc-dev`), which carry everything a direct user-space driver needs (ioctl framework with
//! INVOKE_WRITE, GET_CONTEXT/ASYNC_EVENT_ALLOC, CQ/QP/SRQ create ioctls, QUERY_PORT and GID ioctls,
//! netlink chardev discovery with driver id, rxe `ah_num` and `rxe_queue_buf`, mlx5 dynamic UARs).
//! Newer kernels only add things: e.g. `ib_uverbs_query_port_resp_ex` keeps its 48-byte size but
//! turns reserved bytes into `active_speed_ex` (~6.7), `mlx5_ib_query_device_resp` grows by
//! `reg_c0`, rxe adds the `wr.flush` union member (~6.2) without changing sizes, and new objects,
//! methods and attributes get new ids. Items that are not in the 6.1 headers are few, say so in their
//! documentation and are not part of the C layout test.
//!
//! | module | header(s) |
//! |---|---|
//! | [`ioctl`] | `rdma_user_ioctl_cmds.h` (+ id namespaces of `ib_user_ioctl_cmds.h`) |
//! | [`cmds`] | `ib_user_ioctl_cmds.h` |
//! | [`ioctl_verbs`] | `ib_user_ioctl_verbs.h` |
//! | [`verbs`] | `ib_user_verbs.h` |
//! | [`rxe`] | `rdma_user_rxe.h` |
//! | [`mlx5`] | `mlx5-abi.h`, `mlx5_user_ioctl_cmds.h`, `mlx5_user_ioctl_verbs.h` |
//! | [`netlink`] | `rdma_netlink.h` (device discovery subset) |
//! | [`rdma_cm`] | `rdma_user_cm.h` (the connection manager, ABI 4; event numbers from librdmacm's `rdma_cma.h`) |
//! | [`ib_verbs`] | none: values the ABI carries from the kernel's internal `ib_verbs.h` (QP states and attribute masks, send flags, completion status, receive opcodes and flags) |
//!
//! Everything is re-exported at the crate root.
//!
//! # Representation rules
//!
//! * Structs are `#[repr(C)]` and derive `zerocopy`'s `FromBytes`, `IntoBytes`, `Immutable` and
//!   `KnownLayout`, so they can be copied to and from kernel buffers without `unsafe`.
//! * Implicit C padding is made explicit with fields named `_pad`/`_padN` (zero), which exist only
//!   where C has no field. Where a C flexible array member raises the struct's alignment
//!   (`__aligned_u64 driver_data[]`), the struct gets `#[repr(C, align(8))]`; the flexible arrays
//!   themselves are omitted and sit at `size_of::<T>()`.
//! * `__aligned_u64` is `u64`. Big-endian fields (`__be16/32/64`) are plain integers holding the raw
//!   bytes as they are in memory ("big-endian on the wire"); convert with `from_be`/`to_be`.
//! * Unions, which `zerocopy` cannot derive `IntoBytes` for, are stored as their largest member or as a
//!   byte array of the union's size named after the C member, with typed views and accessors:
//!   `ib_uverbs_attr.attr_data: u16`, `ib_uverbs_attr.data: u64` (+ `data_s64()`),
//!   `ib_uverbs_wc.ex`/`ib_uverbs_send_wr.ex`/`rxe_send_wr.ex: u32`, `ib_uverbs_send_wr.wr: [u8; 32]`
//!   (views `ib_uverbs_send_wr_rdma`/`_atomic`/`_ud`), `rxe_send_wr.wr: [u8; 120]` (views
//!   `rxe_send_wr_rdma`/`_atomic`/`_ud`/`_mw`), `rxe_av.sgid_addr`/`dgid_addr: [u8; 28]` (views
//!   [`sockaddr_in`]/[`sockaddr_in6`]), `rxe_gid` (a struct with `raw`), `mlx5_ib_create_qp.sq_buf_addr`
//!   (+ `access_key()`), and the flow specs' header union as `hdr`.
//!
//! The integration test `tests/layout.rs` compiles a C program against the system headers and checks
//! the size, alignment and every field offset of every struct here (including union members by their
//! C path) and the value of every constant.
#![no_std]
#![forbid(unsafe_code)]
#![allow(non_camel_case_types)]

pub mod cmds;
pub mod ib_verbs;
pub mod ioctl;
pub mod ioctl_verbs;
pub mod mlx5;
pub mod netlink;
pub mod rdma_cm;
pub mod rxe;
pub mod verbs;

pub use cmds::*;
pub use ib_verbs::*;
pub use ioctl::*;
pub use ioctl_verbs::*;
pub use mlx5::*;
pub use netlink::*;
pub use rdma_cm::*;
pub use rxe::*;
pub use verbs::*;

use zerocopy::{FromBytes, Immutable, IntoBytes};

/// Reads union member `V` from the start of the byte array that stores a C union.
///
/// Panics if `V` is larger than the union; every view's size is checked at compile time.
fn union_get<V: FromBytes + IntoBytes, const N: usize>(bytes: &[u8; N]) -> V {
    let mut v = V::new_zeroed();
    let dst = v.as_mut_bytes();
    let len = dst.len();
    dst.copy_from_slice(&bytes[..len]);
    v
}

/// Stores union member `V` at the start of the byte array that stores a C union; zeroes the rest.
fn union_set<V: IntoBytes + Immutable, const N: usize>(bytes: &mut [u8; N], v: &V) {
    let src = v.as_bytes();
    bytes.fill(0);
    bytes[..src.len()].copy_from_slice(src);
}
