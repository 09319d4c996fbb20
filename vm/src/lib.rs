//! The VM runner: run a command on soft-RoCE (Linux's `rdma_rxe`) inside a throw-away qemu guest,
//! on one kernel or on two joined by an emulated link. RDMA CI for any project, with one command:
//!
//! ```text
//! cargo install uverbs-vm
//! uverbs-vm -- cargo test          # your tests, with rxe0 on lo, in a guest
//! ```
//!
//! The same runner is `uverbs vm` in the uverbs tools. It depends on no RDMA library: the guest
//! brings up rxe with `rdma_rxe`, `ib_uverbs` and `rdma_ucm`, and the command uses whatever RDMA
//! stack it likes (rdma-core's, uverbs, pyverbs).
//!
//! The host side (`host`) boots Debian kernels under qemu with virtme-ng, which shares the host's
//! root filesystem read-only with the guest; the guest side (`guest`) is this same program,
//! started by the guest's init, which brings up rxe and runs the command. They talk through one
//! directory per guest that the host shares read-write (`plan`). `setup` finds or installs what it
//! takes.

/// A line on standard error, after the runner's name.
macro_rules! say {
    ($($t:tt)*) => {
        eprintln!("{}: {}", crate::name(), format_args!($($t)*))
    };
}

mod guest;
mod host;
mod plan;
mod setup;

use std::sync::OnceLock;

use plan::EXIT_SETUP;

/// How the program running the VM runner is invoked: the name its messages and help give, and the
/// arguments that come before the runner's own (the guest's init runs this same program with
/// them, then `__guest STATEDIR`).
#[derive(Debug, Clone, Copy)]
pub struct Invocation {
    /// What messages and the help call the runner (`uverbs-vm`, `uverbs vm`).
    pub name: &'static str,
    /// The arguments that select the runner in its program (none for `uverbs-vm`, `vm` for
    /// `uverbs`).
    pub args: &'static [&'static str],
}

/// The runner as its own program, `uverbs-vm`.
pub const STANDALONE: Invocation = Invocation {
    name: "uverbs-vm",
    args: &[],
};

/// The runner as the uverbs tools' subcommand, `uverbs vm`.
pub const UVERBS_TOOLS: Invocation = Invocation {
    name: "uverbs vm",
    args: &["vm"],
};

static INVOCATION: OnceLock<Invocation> = OnceLock::new();

fn invocation() -> Invocation {
    *INVOCATION.get().unwrap_or(&STANDALONE)
}

/// What the runner's messages call it.
fn name() -> &'static str {
    invocation().name
}

const HELP: &str = "\
Usage: uverbs vm [OPTIONS] [--] CMD [ARGS...]

Run CMD, in the current directory, as root inside a throw-away qemu guest whose kernel has
soft-RoCE: rxe0 on lo (or --devices N), rdma_ucm loaded, memlock unlimited. The host's files are
seen read-only, except the current directory and --rwdir. Exits with CMD's status.

Options:
  --kernel 6.1|6.12|PATH     the guest kernel: the newest installed of a series, or an image
                             (default 6.1)
  --hosts 1|2                boot two guests joined by an emulated Ethernet link; rxe0 sits on
                             it and CMD runs on both (see below)
  --kernels K1,K2            each host's kernel (with --hosts 2)
  --devices N                N rxe devices, rxe0..rxe{N-1}, on veth pairs with their own
                             addresses (10.78.P.1 and .2); 0 for none
  --netem ARGS               with --hosts 2: `tc qdisc add ... netem ARGS` on both link ends
                             (e.g. 'delay 1ms loss 1%')
  --timeout S                bound CMD (default 600); exit status 124 when it runs out
  --boot-timeout S           bound each boot (default 120, 240 with --hosts 2)
  --memory SIZE, --cpus N    per guest (default 2G and 2; 1G and 1 with --hosts 2)
  --rwdir DIR                also make DIR writable from the guest (repeatable)
  --ro                       keep the current directory read-only too
  --kvm, --no-kvm            use KVM or not (default: KVM when it works here)
  --no-install               install nothing: say what is missing and stop
  -q, --quiet                no progress lines
  -h, --help                 this text

In the guest CMD sees UVERBS_VM=1, UVERBS_VM_DEVICES (the rxe devices), UVERBS_VM_ADDRS (their
IPv4 addresses), UVERBS_VM_KERNEL, and with --hosts 2: UVERBS_VM_HOST (1 or 2), UVERBS_VM_ADDR and
UVERBS_VM_PEER (10.77.0.1 and .2), UVERBS_VM_ADDR6, UVERBS_VM_PEER6, UVERBS_VM_NETDEV (the link's
interface, for tc and ip link), UVERBS_VM_BOOT. `uverbs vm reboot`, run in a guest, reboots it at
once; the host boots it again and runs CMD again with UVERBS_VM_BOOT one higher. When one host's
CMD fails the other is stopped.

The first use installs qemu, the kernels, virtme-ng and iproute2 (on Debian 12 and 13), saying so
first. Exit status: CMD's; 124 a timeout (which one is said); 125 the machine or the guest could
not run it (one line says why); 126 CMD cannot be executed; 127 CMD not found; 129, 130, 131, 143
SIGHUP, SIGINT, SIGQUIT, SIGTERM (the guests are stopped); 2 bad options.
";

/// Everything the command line says.
#[derive(Debug, Clone)]
pub struct Options {
    kernels: Vec<String>,
    hosts: u32,
    devices: Option<u32>,
    netem: Option<String>,
    timeout_s: u64,
    boot_timeout_s: Option<u64>,
    memory: Option<String>,
    cpus: Option<u32>,
    rwdirs: Vec<String>,
    ro: bool,
    kvm: Option<bool>,
    no_install: bool,
    quiet: bool,
    command: Vec<String>,
}

/// Runs the VM runner with the command line `args` (those after `how.args`), as the program `how`
/// says; returns the exit status. The runner's `--help` lists the options.
pub fn main(args: &[String], how: Invocation) -> i32 {
    let _ = INVOCATION.set(how);
    let help = || print!("{}", HELP.replace("uverbs vm", how.name));
    match args.first().map(String::as_str) {
        Some("__guest") => return guest::main(&args[1..]),
        Some("reboot") => return guest::reboot_main(&args[1..]),
        Some("-h" | "--help") => {
            help();
            return 0;
        }
        _ => {}
    }
    let opts = match parse(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            help();
            return 0;
        }
        Err(e) => {
            say!("{e}\nTry '{} --help'.", how.name);
            return 2;
        }
    };
    match host::run(&opts) {
        Ok(code) => code,
        Err(e) => {
            say!("error: {e}");
            EXIT_SETUP
        }
    }
}

/// The options, or `None` for `--help`.
fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        kernels: vec!["6.1".into()],
        hosts: 1,
        devices: None,
        netem: None,
        timeout_s: 600,
        boot_timeout_s: None,
        memory: None,
        cpus: None,
        rwdirs: Vec::new(),
        ro: false,
        kvm: None,
        no_install: false,
        quiet: false,
        command: Vec::new(),
    };
    let mut kernel: Option<String> = None;
    let mut kernels: Option<Vec<String>> = None;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            i -= 1; // the command starts here
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            let v = args
                .get(i)
                .cloned()
                .ok_or_else(|| format!("{name} needs {what}"))?;
            i += 1;
            Ok(v)
        };
        let number = |v: String, min: u64, max: u64| -> Result<u64, String> {
            v.parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| format!("{name}: expected a number from {min} to {max}, not '{v}'"))
        };
        match name {
            "--kernel" => kernel = Some(value("a kernel")?),
            "--kernels" => {
                kernels = Some(value("kernels")?.split(',').map(str::to_owned).collect())
            }
            "--hosts" => o.hosts = number(value("a count")?, 1, 2)? as u32,
            "--devices" => o.devices = Some(number(value("a count")?, 0, 16)? as u32),
            "--netem" => o.netem = Some(value("netem arguments")?),
            "--timeout" => o.timeout_s = number(value("seconds")?, 1, 7 * 86400)?,
            "--boot-timeout" => o.boot_timeout_s = Some(number(value("seconds")?, 1, 86400)?),
            "--memory" => o.memory = Some(value("a size")?),
            "--cpus" => o.cpus = Some(number(value("a count")?, 1, 64)? as u32),
            "--rwdir" => o.rwdirs.push(value("a directory")?),
            "--ro" => o.ro = true,
            "--kvm" => o.kvm = Some(true),
            "--no-kvm" => o.kvm = Some(false),
            "--no-install" => o.no_install = true,
            "-q" | "--quiet" => o.quiet = true,
            "-h" | "--help" => return Ok(None),
            _ => return Err(format!("unknown option '{name}'")),
        }
        if inline.is_some()
            && matches!(
                name,
                "--ro" | "--kvm" | "--no-kvm" | "--no-install" | "--quiet"
            )
        {
            return Err(format!("{name} takes no value"));
        }
    }
    o.command = args[i..].to_vec();
    if o.command.is_empty() {
        return Err("no command given".into());
    }
    o.kernels = match (kernels, kernel) {
        (Some(_), Some(_)) => return Err("give --kernel or --kernels, not both".into()),
        (Some(list), None) => {
            if list.len() != o.hosts as usize {
                return Err(format!(
                    "--kernels names {} kernels for {} host(s)",
                    list.len(),
                    o.hosts
                ));
            }
            list
        }
        (None, k) => vec![k.unwrap_or_else(|| "6.1".into()); o.hosts as usize],
    };
    if o.hosts > 1 && o.devices.is_some() {
        return Err("--devices is for one host; with --hosts 2 each has rxe0 on the link".into());
    }
    if o.hosts == 1 && o.netem.is_some() {
        return Err("--netem needs --hosts 2 (it shapes the link between them)".into());
    }
    Ok(Some(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Options, String> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .map(|o| o.expect("not --help"))
    }

    #[test]
    fn the_command_starts_at_the_first_non_option() {
        let o = p(&["--kernel", "6.12", "cargo", "test", "--release"]).unwrap();
        assert_eq!(o.kernels, ["6.12"]);
        assert_eq!(o.command, ["cargo", "test", "--release"]);
        let o = p(&["--timeout=5", "--", "--weird", "-x"]).unwrap();
        assert_eq!(
            (o.timeout_s, o.command.as_slice()),
            (5, ["--weird", "-x"].map(String::from).as_slice())
        );
    }

    #[test]
    fn help_is_help_anywhere_among_the_options() {
        let args = ["--kernel", "6.12", "--help", "true"].map(String::from);
        assert!(parse(&args).unwrap().is_none());
    }

    #[test]
    fn two_hosts_get_a_kernel_each() {
        let o = p(&["--hosts", "2", "--kernels", "6.1,6.12", "--", "true"]).unwrap();
        assert_eq!(o.kernels, ["6.1", "6.12"]);
        let o = p(&["--hosts", "2", "--kernel", "6.12", "true"]).unwrap();
        assert_eq!(o.kernels, ["6.12", "6.12"]);
    }

    #[test]
    fn bad_options_say_what_is_wrong() {
        let e = |a: &[&str]| p(a).unwrap_err();
        assert_eq!(
            e(&["--timeout", "0", "true"]),
            "--timeout: expected a number from 1 to 604800, not '0'"
        );
        assert_eq!(
            e(&["--hosts", "3", "true"]),
            "--hosts: expected a number from 1 to 2, not '3'"
        );
        assert_eq!(
            e(&["--frobnicate", "true"]),
            "unknown option '--frobnicate'"
        );
        assert_eq!(e(&["--kernel"]), "--kernel needs a kernel");
        assert_eq!(e(&["--kernel", "6.1"]), "no command given");
        assert_eq!(
            e(&["--hosts", "2", "--kernels", "6.1", "true"]),
            "--kernels names 1 kernels for 2 host(s)"
        );
        assert!(
            e(&["--hosts", "2", "--devices", "2", "true"]).starts_with("--devices is for one host")
        );
        assert!(e(&["--netem", "loss 1%", "true"]).starts_with("--netem needs --hosts 2"));
        assert_eq!(e(&["--ro=1", "true"]), "--ro takes no value");
    }
}
