// A device borrows the list it came from.
fn main() {
    let device = {
        let list = uverbs::devices().unwrap();
        list.get(0).unwrap()
    };
    let _ = device.name();
}
