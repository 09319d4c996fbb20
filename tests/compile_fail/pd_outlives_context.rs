// A protection domain borrows its context: it cannot outlive it.
fn context() -> uverbs::Context {
    unimplemented!()
}

fn main() {
    let pd = {
        let ctx = context();
        ctx.alloc_pd().unwrap()
    };
    drop(pd);
}
