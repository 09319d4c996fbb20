//! The Linux RDMA user ABI (placeholder while the modules are written).
#![no_std]
#![forbid(unsafe_code)]
