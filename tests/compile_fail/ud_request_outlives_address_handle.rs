// A UD send request borrows its address handle until it is posted.
use uverbs::{AddressVector, SendRequest};

fn context() -> uverbs::Context {
    unimplemented!()
}

fn av() -> AddressVector {
    unimplemented!()
}

fn main() {
    let ctx = context();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd.allocate::<u8>(64).unwrap();
    let ah = pd.create_ah(&av()).unwrap();
    let sges = [mr.sge(..).unwrap()];
    let request = SendRequest::send_ud(1, &sges, &ah, 0x11, 0x1111_1111);
    drop(ah);
    let _ = request.wr_id();
}
