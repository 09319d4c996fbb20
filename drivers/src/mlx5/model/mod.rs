//! A software mlx5 device: the `mlx5_ib` kernel driver and a ConnectX HCA, in this process.
//!
//! SKELETON: `kernel` (the command half) and `hca` (the silicon half) are being written.

pub mod hca;
