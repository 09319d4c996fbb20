//! `uverbs-vm`: the VM runner as a program of its own (see the library's documentation, or
//! `uverbs-vm --help`).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(uverbs_vm::main(&args, uverbs_vm::STANDALONE));
}
