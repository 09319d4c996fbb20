//! How each backend does what the verbs leave to the implementation.
//!
//! The tests ask a device what it can do ([`uverbs::Context::supports`]) and what it reports
//! (`query_device`, a queue's capacity, its caps). What is left differs between correct
//! implementations and no device reports it: the status a request the device refuses completes
//! with, the async events it raises, how many completions a CQ holds beyond its capacity, where the
//! queues' rings live. That is written down here, one row per backend, and nowhere else in the
//! tests (rdma-core's pyverbs keeps the same knowledge in its per-provider test classes). A backend
//! without a row fails the first test that asks, naming this file: no test reads "not one backend"
//! as "the other".

use uverbs::{ibv_wc_status as S, Driver};

/// Where a backend's queue rings live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rings {
    /// The kernel allocates them and the process maps them (one mapping more per queue held); the
    /// kernel sizes them and refuses a size past the device's limits (`Error::Kernel`).
    Kernel,
    /// The backend allocates them in the process's own memory (no mapping of the device's per
    /// queue); it sizes them and refuses a size its format cannot hold before the kernel sees it
    /// (`Error::InvalidArgument`), as rdma-core's provider does.
    Process,
}

/// What a backend does where the verbs leave it the choice. See the module's documentation.
#[derive(Debug, Clone, Copy)]
pub struct Behaviour {
    /// Where its queue rings live.
    pub rings: Rings,
    /// Completions a CQ holds beyond [`uverbs::CompletionQueue::capacity`] before it overruns.
    pub cq_slack: usize,
    /// Whether a receive CQ that overruns moves the receiving queue pair to ERR (else the
    /// completion is dropped with a `CqErr` and the queue pair carries on).
    pub receive_cq_overrun_fails_the_qp: bool,
    /// Whether destroying a queue pair removes its completions from its CQs.
    pub destroy_qp_cleans_its_cqs: bool,
    /// How many of `max_qp_wr`'s units one RC send request (one scatter entry) takes.
    pub rc_send_units: u32,
    /// The status of an RDMA operation the target queue pair's access flags do not grant.
    pub qp_access_denied: u32,
    /// The statuses of a send whose entry names a local key the device cannot use (a dead one,
    /// another domain's).
    pub send_unusable_lkey: &'static [u32],
    /// The statuses of a receive whose entry the device cannot write (another domain's).
    pub receive_unusable_entry: &'static [u32],
    /// The statuses of an RDMA read into an entry the device cannot write (another domain's).
    pub read_into_unusable_entry: &'static [u32],
    /// Whether the device raises `QpAccessErr` on the target of a remote access violation and
    /// `CommEst` when the first packet reaches a queue pair in RTR.
    pub raises_qp_access_err_and_comm_est: bool,
    /// Whether it raises `QpLastWqeReached` for a queue pair on an SRQ that goes to ERR (`None`:
    /// not known for this kernel).
    pub raises_last_wqe_reached: Option<bool>,
}

/// The row of `driver`, the backend of the device under test.
pub fn of(driver: Driver) -> Behaviour {
    match driver {
        // The kernel's soft-RoCE; what differs between 6.1 and 6.12 says so.
        Driver::Rxe => Behaviour {
            rings: Rings::Kernel,
            cq_slack: 0,
            // `RESPST_ERR_CQ_OVERFLOW`.
            receive_cq_overrun_fails_the_qp: true,
            destroy_qp_cleans_its_cqs: false,
            rc_send_units: 1,
            // `check_op_valid` NAKs the request as invalid (`RESPST_ERR_UNSUPPORTED_OPCODE`).
            qp_access_denied: S::IBV_WC_REM_INV_REQ_ERR,
            // 6.1 completes the request with the status, 6.12 flushes it with the rest of the
            // queue.
            send_unusable_lkey: &[S::IBV_WC_LOC_QP_OP_ERR, S::IBV_WC_WR_FLUSH_ERR],
            // Its responder fails the receive as a malformed WQE.
            receive_unusable_entry: &[S::IBV_WC_LOC_QP_OP_ERR],
            read_into_unusable_entry: &[S::IBV_WC_LOC_PROT_ERR, S::IBV_WC_WR_FLUSH_ERR],
            raises_qp_access_err_and_comm_est: false,
            // Learnt on 6.12 (IB spec o10-37).
            raises_last_wqe_reached: match kernel() {
                (6, 1) => Some(false),
                (6, 12) => Some(true),
                _ => None,
            },
        },
        // A ConnectX as the mlx5 model (the tests' software ConnectX) behaves.
        Driver::Mlx5 => Behaviour {
            rings: Rings::Process,
            // The kernel makes the ring `roundup_pow_of_two(cqe + 1)` and reports one less
            // (rdma-core's `ncqe - 1`): the device fills every entry.
            cq_slack: 1,
            receive_cq_overrun_fails_the_qp: false,
            // As rdma-core's `mlx5_destroy_qp` (`__mlx5_cq_clean`).
            destroy_qp_cleans_its_cqs: true,
            // `max_qp_wr` counts 64-byte basic blocks; an RC send WQE takes 4 (libmlx5's
            // `sq_overhead` and one data segment, rounded up).
            rc_send_units: 4,
            qp_access_denied: S::IBV_WC_REM_ACCESS_ERR,
            send_unusable_lkey: &[S::IBV_WC_LOC_PROT_ERR],
            receive_unusable_entry: &[S::IBV_WC_LOC_PROT_ERR],
            read_into_unusable_entry: &[S::IBV_WC_LOC_PROT_ERR],
            raises_qp_access_err_and_comm_est: true,
            raises_last_wqe_reached: Some(true),
        },
        other => panic!(
            "the tests do not know how the {other:?} backend does what the verbs leave to the \
             implementation: add its row to tests/common/behaviour.rs"
        ),
    }
}

/// The running kernel's (major, minor).
pub fn kernel() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.trim().split(['.', '-', '+']);
    let major = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor)
}
