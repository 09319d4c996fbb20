// `uverbs::next` (the `ibverbs` main-branch API): a batch holds its queue pair exclusively, so a
// second batch cannot be started while the first is open.
use uverbs::next as ibverbs;

fn two_batches(qp: &mut ibverbs::QueuePair) {
    let first = qp.start_send();
    let second = qp.start_send(); // error: `*qp` is already mutably borrowed by `first`
    let _ = (first, second);
}

fn main() {}
