// A lent completion borrows its `Completions`: it is gone before the next one is taken.
fn cq() -> uverbs::CompletionQueue<'static> {
    unimplemented!()
}

fn main() {
    let cq = cq();
    if let Some(mut completions) = cq.start_poll().unwrap() {
        let first = completions.next().unwrap();
        let second = completions.next();
        let _ = (first.wr_id(), second);
    }; // A statement: the iteration (which has a `Drop`) ends here, before `cq`.
}
