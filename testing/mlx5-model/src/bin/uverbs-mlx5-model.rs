//! `uverbs-mlx5-model`: the mlx5 model as a shared device, a daemon that several processes use at
//! once, as one HCA serves one host.
//!
//! ```text
//! uverbs-mlx5-model serve --socket PATH [--print-sysfs] [--name NAME]
//! ```
//!
//! hosts one model device (a ConnectX-6 Dx, `mlx5_0`) and serves it on a unix socket at `PATH`
//! until SIGINT, SIGTERM or SIGHUP, then removes the socket and the device's sysfs tree. Clients
//! find it with `UVERBS_MODEL_SOCKET=PATH`: uverbs (its discovery lists the daemon's device), and
//! rdma-core's programs under the preload library (`libuverbs_mlx5_preload.so`). `--print-sysfs`
//! prints the root of the device's sysfs tree (what `SYSFS_PATH` is for libibverbs) on standard
//! output once the socket is ready. Commands the model lacks are named on standard error, once
//! each.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};
use uverbs_mlx5_model::{Mlx5Model, ModelConfig};

const USAGE: &str = "usage: uverbs-mlx5-model serve --socket PATH [--print-sysfs] [--name NAME]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("serve") {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let mut socket = None;
    let mut print_sysfs = false;
    let mut cfg = ModelConfig::default();
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--socket" | "-s" => socket = it.next().map(PathBuf::from),
            "--print-sysfs" => print_sysfs = true,
            "--name" => match it.next() {
                Some(n) => cfg.name = n.clone(),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("uverbs-mlx5-model: unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(socket) = socket else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };

    // The signals that end the daemon are taken synchronously by the main thread (blocked here,
    // before any thread starts, so every thread inherits the mask).
    let mut signals = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signals.add(s);
    }
    if let Err(e) = signals.thread_block() {
        eprintln!("uverbs-mlx5-model: blocking signals: {e}");
        return ExitCode::FAILURE;
    }

    let model = match Mlx5Model::with_config(cfg) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("uverbs-mlx5-model: {e}");
            return ExitCode::FAILURE;
        }
    };
    let server = match model.serve(&socket) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("uverbs-mlx5-model: serving on {}: {e}", socket.display());
            let _ = std::fs::remove_dir_all(model.sysfs_root());
            return ExitCode::FAILURE;
        }
    };
    if print_sysfs {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", model.sysfs_root().display());
        let _ = out.flush();
    }
    eprintln!(
        "uverbs-mlx5-model: serving {} on {} (pid {})",
        model.config().name,
        socket.display(),
        std::process::id()
    );

    // Names each command the model lacks once, as the preload library does in-process.
    let reporter = model.clone();
    let _ = std::thread::Builder::new()
        .name("unknown-commands".into())
        .spawn(move || {
            let mut said = BTreeSet::new();
            loop {
                for c in reporter.unknown_commands() {
                    if said.insert(c) {
                        eprintln!(
                            "uverbs-mlx5-model: the mlx5 model lacks {c}; answered as the kernel would"
                        );
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });

    let sig = signals.wait();
    drop(server);
    // Clients may still hold the device (their connections keep it alive); its tree goes now.
    let _ = std::fs::remove_dir_all(model.sysfs_root());
    eprintln!(
        "uverbs-mlx5-model: {}, stopped",
        sig.map_or_else(|e| e.to_string(), |s| s.as_str().to_owned())
    );
    ExitCode::SUCCESS
}
