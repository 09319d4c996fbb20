//! Runs on a real RDMA device: `uverbs vm -- cargo test` gives it soft-RoCE.

use rxe_ci_ibverbs::send_over_rc;

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn one_queue_pair_sends_to_itself() {
    let data = pattern(4096);
    assert_eq!(send_over_rc(&data, true).unwrap(), data);
}

#[test]
fn two_queue_pairs_exchange_a_megabyte() {
    let data = pattern(1 << 20);
    assert_eq!(send_over_rc(&data, false).unwrap(), data);
}
