//! Programs that must not compile, checked with `trybuild`: what the API's lifetimes and
//! thread-safety bounds rule out (tests/compile_fail/*.rs, each with the compiler's error in its
//! `.stderr` snapshot). The snapshots are those of the stable toolchain CI uses; after a compiler
//! upgrade changes their wording, regenerate them with
//!
//! ```text
//! TRYBUILD=overwrite cargo test --all-features --test compile_fail
//! ```
//!
//! and check that each still names the intended error (E0597, E0505, E0382, E0499, E0502, E0506, E0277,
//! and for the soundness cases E0133, E0599, E0624).

/// Whether this runs inside the VM harness (tests/vm/suite: `UVERBS_VM` set, as for the other
/// suites' `common::in_vm`), whose guest sees the sources read-only and has no toolchain:
/// compiling is the host's business. A host with a device (`UVERBS_TEST_DEVICE=mlx5_0`, or
/// `tests/vm/run --native`) has its toolchain, so the programs are compiled there.
fn in_vm() -> bool {
    let vm = std::env::var_os("UVERBS_VM").is_some_and(|v| !v.is_empty());
    if vm {
        eprintln!("SKIPPED: compile-fail tests run on the host (cargo test), not in the VM");
    }
    vm
}

#[test]
fn lifetimes_and_thread_bounds() {
    if in_vm() {
        return;
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}

/// Soundness holes found by review (docs/soundness.md) and closed: safe code can no longer reach
/// uverbs-drivers' raw verbs (`Context::driver_context` is an `unsafe fn`, E0133), nor call them
/// on uverbs-drivers directly (`reg_mr`, the `Channel` command functions, the mlx5 doorbell
/// writers are `unsafe fn`s, E0133), nor borrow a command file to `write(2)` commands (`Context`
/// has no `AsFd`/`AsRawFd`, `cm::EventChannel` and uverbs-drivers' `CmFile` no `AsFd`, its
/// `DeviceFile` and `ModelFile` no `as_fd`: E0277, E0599), nor make a memory region of a type some
/// bit patterns of which are invalid (`bool`, references: the `FromBytes` bound, E0277), nor trust
/// a server at a path of its choosing as the kernel (`sys::remote::RemoteFile::connect` and
/// `discover::remote_device` are `unsafe fn`s, E0133), nor map an rxe queue at an offset of its
/// choosing (`rxe::queue::Queue::map` is private to the crate, E0624).
#[test]
fn soundness_holes_must_not_compile() {
    if in_vm() {
        return;
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/unsound/*.rs");
}
