// `uverbs::next` (the `ibverbs` main-branch API): a request being built holds its batch
// exclusively, so a second request cannot be started before the first is posted.
use uverbs::next as ibverbs;

fn two_requests(qp: &mut ibverbs::QueuePair) {
    let mut batch = qp.start_send();
    let first = batch.signaled();
    let second = batch.signaled(); // error: `batch` is already mutably borrowed by `first`
    let _ = (first, second);
}

fn main() {}
