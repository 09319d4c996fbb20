//! `uverbs`: command-line tools over the uverbs crate, modelled on rdma-core's.
//!
//! * `uverbs devices`: as `ibv_devices`.
//! * `uverbs devinfo [-d DEV] [-i PORT] [-l] [-v] [--json]`: as `ibv_devinfo`.
//! * `uverbs rc-pingpong [options] [host]`: as `ibv_rc_pingpong`.
//! * `uverbs send-lat|write-lat|send-bw|write-bw|read-bw [options] [host]`: as perftest's `ib_*`.
//! * `uverbs rping -s|-c [-vVd] [-S size] [-C count] [-a addr] [-I addr] [-p port]`: as librdmacm's
//!   `rping`.
//! * `uverbs cmatose [options]`: as rdma-core's `ucmatose` (RC connections through the RDMA CM).
//! * `uverbs udaddy [options]`: as `udaddy` (UD peers resolved through the RDMA CM).
//! * `uverbs mckey -m ADDR [options]`: as `mckey` (multicast through the RDMA CM).
//! * `uverbs vm [options] -- CMD`: runs CMD on soft-RoCE in a throw-away guest (one kernel or two).

mod args;
mod cmatose;
mod devinfo;
mod mckey;
mod perf;
mod pingpong;
mod rdmacm;
mod rping;
mod udaddy;

const HELP: &str = "\
uverbs: RDMA verbs tools in pure Rust (no libibverbs)

Usage: uverbs <command> [options]

Commands:
  devices [--json]                          list RDMA devices (as ibv_devices)
  devinfo [-d DEV] [-i PORT] [-l] [-v] [--json]
                                            show device and port attributes (as ibv_devinfo)
  rc-pingpong [options] [host]              RC ping-pong test (as ibv_rc_pingpong)
  send-lat | write-lat [options] [host]     latency tests (as perftest's ib_send_lat, ib_write_lat)
  send-bw | write-bw | read-bw [options] [host]
                                            bandwidth tests (as ib_send_bw, ib_write_bw, ib_read_bw)
  cmatose [options]                         RC connections via the RDMA CM (as ucmatose)
  udaddy [options]                          UD peers via the RDMA CM (as udaddy)
  mckey -m ADDR [options]                   multicast via the RDMA CM (as mckey)
  rping -s|-c [-vVd] [-S size] [-C count] [-a addr] [-I addr] [-p port]
                                            RDMA CM ping (as librdmacm's rping)
  vm [options] [--] CMD [ARGS...]           run CMD on soft-RoCE in a qemu guest (rxe CI)
  help                                      this text
";

fn main() {
    // The library prints nothing; the tools report a destroy `Drop` could not do, as rdma-core's
    // do. `writeln!`, not `eprintln!`, which panics when stderr cannot be written.
    uverbs::set_drop_error_hook(|e| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "uverbs: {e}");
    });
    let argv: Vec<String> = std::env::args().collect();
    let code = match argv.get(1).map(String::as_str) {
        Some("devices") => devinfo::devices_main(&argv[2..]),
        Some("devinfo") => devinfo::devinfo_main("uverbs devinfo", &argv[2..]),
        Some("rc-pingpong") => pingpong::rc_pingpong_main("uverbs rc-pingpong", &argv[2..]),
        Some("send-lat") => perf::main(perf::Test::SendLat, &argv[2..]),
        Some("write-lat") => perf::main(perf::Test::WriteLat, &argv[2..]),
        Some("send-bw") => perf::main(perf::Test::SendBw, &argv[2..]),
        Some("write-bw") => perf::main(perf::Test::WriteBw, &argv[2..]),
        Some("read-bw") => perf::main(perf::Test::ReadBw, &argv[2..]),
        Some("cmatose") => cmatose::cmatose_main("uverbs cmatose", &argv[2..]),
        Some("udaddy") => udaddy::udaddy_main("uverbs udaddy", &argv[2..]),
        Some("mckey") => mckey::mckey_main("uverbs mckey", &argv[2..]),
        Some("rping") => rping::rping_main(&argv[2..]),
        Some("vm") => uverbs_vm::main(&argv[2..], uverbs_vm::UVERBS_TOOLS),
        Some("help" | "-h" | "--help") => {
            print!("{HELP}");
            0
        }
        Some("--version" | "-V") => {
            println!("uverbs {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some(other) => {
            eprintln!("uverbs: unknown command '{other}'\n\n{HELP}");
            2
        }
        None => {
            eprint!("{HELP}");
            2
        }
    };
    std::process::exit(code);
}
