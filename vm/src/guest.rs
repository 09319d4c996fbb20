//! The guest side of `uverbs vm`: the same binary, started by virtme-ng's init inside the guest as
//! `uverbs vm __guest STATEDIR`. It loads soft-RoCE, brings up the devices and the network the plan
//! asks for, raises the memlock limit and runs the command with its bound, then writes the exit
//! status where the host reads it. Everything it cannot do ends in one line in `STATEDIR/error`,
//! which the host prints, and exit status 125.

use super::plan::{
    files, Devices, Link, Plan, EXIT_CANNOT_EXEC, EXIT_NOT_FOUND, EXIT_SETUP, EXIT_TIMEOUT,
};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `uverbs vm __guest STATEDIR`.
pub fn main(args: &[String]) -> i32 {
    let [state] = args else {
        eprintln!(
            "{} __guest: expected one argument, the state directory",
            crate::name()
        );
        return 2;
    };
    let state = PathBuf::from(state);
    let _ = fs::write(state.join(files::BOOTED), b"");
    let plan: Plan = match fs::read(state.join(files::PLAN))
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(p) => p,
        Err(e) => return setup_failed(&state, &format!("cannot read the plan: {e}")),
    };
    let guest = Guest { state, plan };
    match guest.set_up() {
        Ok(env) => guest.run(env),
        Err(e) => setup_failed(&guest.state, &e),
    }
}

/// `uverbs vm reboot`, inside a guest: reboots it at once, as a power cycle would, and asks the host
/// to boot it again and run the command a second time (with `UVERBS_VM_BOOT` one higher).
pub fn reboot_main(args: &[String]) -> i32 {
    if !args.is_empty() {
        eprintln!("{} reboot: takes no arguments", crate::name());
        return 2;
    }
    let Some(state) = std::env::var_os("UVERBS_VM_STATE") else {
        eprintln!(
            "{} reboot: not inside a guest of the VM runner (UVERBS_VM_STATE is unset)",
            crate::name()
        );
        return 2;
    };
    // reboot(2) on the wrong machine would be a power cut: only in a guest this tool started.
    let in_guest = std::env::var_os("UVERBS_VM").is_some_and(|v| v == "1")
        && Path::new(&state).join(files::PLAN).is_file()
        && fs::read_to_string("/proc/cmdline").is_ok_and(|c| c.contains("virtme"));
    if !in_guest {
        eprintln!(
            "{} reboot: not inside a guest of the VM runner",
            crate::name()
        );
        return 2;
    }
    if let Err(e) = fs::write(Path::new(&state).join(files::REBOOT), b"") {
        eprintln!(
            "{} reboot: cannot ask the host for a new boot: {e}",
            crate::name()
        );
        return 1;
    }
    nix::unistd::sync();
    match nix::sys::reboot::reboot(nix::sys::reboot::RebootMode::RB_AUTOBOOT) {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("{} reboot: reboot(2): {e}", crate::name());
            1
        }
    }
}

fn setup_failed(state: &Path, why: &str) -> i32 {
    // The host says it, in one line: `STATEDIR/error`.
    let _ = fs::write(state.join(files::ERROR), why.as_bytes());
    finish(state, EXIT_SETUP)
}

fn finish(state: &Path, rc: i32) -> i32 {
    // Write then rename: the host never reads half a status.
    let tmp = state.join("rc.tmp");
    if fs::write(&tmp, format!("{rc}\n")).is_ok() {
        let _ = fs::rename(&tmp, state.join(files::RC));
    }
    rc
}

struct Guest {
    state: PathBuf,
    plan: Plan,
}

impl Guest {
    fn say(&self, what: &str) {
        if !self.plan.quiet {
            let host = if self.plan.hosts > 1 {
                format!(" {}", self.plan.host)
            } else {
                String::new()
            };
            eprintln!("{} (guest{host}): {what}", crate::name());
        }
    }

    /// Loads the modules, creates the devices, raises memlock. Returns the variables the command
    /// gets on top of the host's.
    fn set_up(&self) -> Result<Vec<(String, String)>, String> {
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_default();
        self.say(&format!("kernel {kernel} up after {:.1} s", uptime()));
        let mut env = vec![
            ("UVERBS_VM".to_owned(), "1".to_owned()),
            ("UVERBS_VM_HOST".to_owned(), self.plan.host.to_string()),
            ("UVERBS_VM_HOSTS".to_owned(), self.plan.hosts.to_string()),
            ("UVERBS_VM_BOOT".to_owned(), self.plan.boot.to_string()),
            ("UVERBS_VM_KERNEL".to_owned(), kernel.clone()),
            (
                "UVERBS_VM_STATE".to_owned(),
                self.state.display().to_string(),
            ),
        ];
        if run(&["modprobe", "-a", "rdma_rxe", "ib_uverbs", "rdma_ucm"]).is_err() {
            let detail = run(&["modprobe", "rdma_rxe"]).err().unwrap_or_default();
            return Err(format!("kernel {kernel} cannot load rdma_rxe: {detail}"));
        }
        let mut devices: Vec<(String, String)> = Vec::new(); // (rxe name, IPv4 address)
        match self.plan.devices {
            Devices::None => {}
            Devices::Loopback => {
                run(&["ip", "link", "set", "lo", "up"])?;
                add_rxe("rxe0", "lo")?;
                devices.push(("rxe0".into(), "127.0.0.1".into()));
            }
            Devices::Veth(n) => devices = veth_devices(n)?,
            Devices::Link => {
                let link = self
                    .plan
                    .link
                    .as_ref()
                    .ok_or("a two-host plan without a link")?;
                let netdev = link_up(link)?;
                add_rxe("rxe0", &netdev)?;
                devices.push(("rxe0".into(), link.addr.clone()));
                env.push(("UVERBS_VM_NETDEV".into(), netdev));
                env.push(("UVERBS_VM_ADDR".into(), link.addr.clone()));
                env.push(("UVERBS_VM_PEER".into(), link.peer.clone()));
                env.push(("UVERBS_VM_ADDR6".into(), link.addr6.clone()));
                env.push(("UVERBS_VM_PEER6".into(), link.peer6.clone()));
            }
        }
        wait_for_devices(devices.len())?;
        let names: Vec<&str> = devices.iter().map(|d| d.0.as_str()).collect();
        let addrs: Vec<&str> = devices.iter().map(|d| d.1.as_str()).collect();
        env.push(("UVERBS_VM_DEVICES".into(), names.join(" ")));
        env.push(("UVERBS_VM_ADDRS".into(), addrs.join(" ")));
        let inf = nix::sys::resource::RLIM_INFINITY;
        nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_MEMLOCK, inf, inf)
            .map_err(|e| format!("setrlimit(RLIMIT_MEMLOCK, unlimited): {e}"))?;
        self.say(&format!(
            "{} ready after {:.1} s",
            if names.is_empty() {
                "no rxe device".to_owned()
            } else {
                names.join(", ")
            },
            uptime()
        ));
        Ok(env)
    }

    /// Runs the command with its bound; returns (and reports) its exit status.
    fn run(&self, extra: Vec<(String, String)>) -> i32 {
        let plan = &self.plan;
        let program = &plan.command[0];
        let mut cmd = Command::new(program);
        cmd.args(&plan.command[1..])
            .env_clear()
            .envs(plan.env.iter().map(|(k, v)| (k, v)))
            .envs(extra)
            .current_dir(&plan.cwd)
            .stdin(Stdio::null())
            .process_group(0);
        let _ = fs::write(self.state.join(files::STARTED), b"");
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let (rc, what) = match e.kind() {
                    ErrorKind::NotFound if !Path::new(&plan.cwd).is_dir() => {
                        (EXIT_SETUP, format!("cannot enter {}: {e}", plan.cwd))
                    }
                    ErrorKind::NotFound => (EXIT_NOT_FOUND, "command not found".to_owned()),
                    _ => (EXIT_CANNOT_EXEC, format!("cannot execute: {e}")),
                };
                let _ = fs::write(self.state.join(files::ERROR), format!("{program}: {what}"));
                return finish(&self.state, rc);
            }
        };
        let pgid = Pid::from_raw(child.id() as i32);
        let deadline = Instant::now() + Duration::from_secs(plan.timeout_s);
        let mut killed_at: Option<Instant> = None;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => break None,
            }
            let now = Instant::now();
            match killed_at {
                None if now >= deadline => {
                    let _ = killpg(pgid, Signal::SIGTERM);
                    killed_at = Some(now);
                }
                Some(t) if now >= t + Duration::from_secs(10) => {
                    let _ = killpg(pgid, Signal::SIGKILL);
                }
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // Whatever the command left running in its group goes too.
        let _ = killpg(pgid, Signal::SIGKILL);
        if killed_at.is_some() {
            let _ = fs::write(self.state.join(files::TIMED_OUT), b"");
            return finish(&self.state, EXIT_TIMEOUT);
        }
        use std::os::unix::process::ExitStatusExt;
        let rc = match status {
            Some(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
            None => EXIT_SETUP,
        };
        finish(&self.state, rc)
    }
}

fn uptime() -> f64 {
    fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Runs a setup command; an error is the command line and the first line it printed.
fn run(argv: &[&str]) -> Result<(), String> {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`{}`: {e}", argv.join(" ")))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let first = text.lines().next().unwrap_or("").trim();
    Err(format!(
        "`{}` failed ({}): {first}",
        argv.join(" "),
        out.status
    ))
}

fn sysctl(path: &str, value: &str) -> Result<(), String> {
    fs::write(format!("/proc/sys/{path}"), value).map_err(|e| format!("sysctl {path}={value}: {e}"))
}

fn add_rxe(name: &str, netdev: &str) -> Result<(), String> {
    run(&["rdma", "link", "add", name, "type", "rxe", "netdev", netdev])
}

/// Waits until `n` rxe devices and their uverbs character devices exist.
fn wait_for_devices(n: usize) -> Result<(), String> {
    let count = |dir: &str, prefix: &str| {
        fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                    .count()
            })
            .unwrap_or(0)
    };
    let start = Instant::now();
    while count("/sys/class/infiniband", "") < n || count("/dev/infiniband", "uverbs") < n {
        if start.elapsed() > Duration::from_secs(30) {
            return Err(format!(
                "{n} rxe device(s) did not appear within 30 s (/sys/class/infiniband has {}, /dev/infiniband {} uverbs)",
                count("/sys/class/infiniband", ""),
                count("/dev/infiniband", "uverbs")
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// `n` rxe devices on veth pairs: pair `p` joins `uv{2p}` (10.78.p.1, fd78:p::1) and `uv{2p+1}`
/// (10.78.p.2, fd78:p::2), and `rxe{i}` sits on `uv{i}`. Both ends are local addresses, so without
/// more the kernel would deliver their traffic through `lo`: rules send what is generated locally
/// for the other end out of the veth (the local table, moved behind them, still delivers what
/// arrives), static neighbours spare ARP, and `accept_local` lets a packet from a local address in.
fn veth_devices(n: u32) -> Result<Vec<(String, String)>, String> {
    for fam in ["-4", "-6"] {
        run(&["ip", fam, "rule", "add", "pref", "1000", "lookup", "local"])?;
        run(&["ip", fam, "rule", "del", "pref", "0", "lookup", "local"])?;
    }
    sysctl("net/ipv4/conf/all/accept_local", "1")?;
    sysctl("net/ipv4/conf/all/rp_filter", "0")?;
    let mut devices = Vec::new();
    for p in 0..n.div_ceil(2) {
        let ends = [format!("uv{}", 2 * p), format!("uv{}", 2 * p + 1)];
        let v4 = [format!("10.78.{p}.1"), format!("10.78.{p}.2")];
        let v6 = [format!("fd78:{p}::1"), format!("fd78:{p}::2")];
        run(&[
            "ip", "link", "add", &ends[0], "type", "veth", "peer", "name", &ends[1],
        ])?;
        for (i, end) in ends.iter().enumerate() {
            sysctl(&format!("net/ipv4/conf/{end}/accept_local"), "1")?;
            sysctl(&format!("net/ipv4/conf/{end}/rp_filter"), "0")?;
            run(&["ip", "link", "set", end, "up"])?;
            run(&["ip", "addr", "add", &format!("{}/24", v4[i]), "dev", end])?;
            run(&[
                "ip",
                "-6",
                "addr",
                "add",
                &format!("{}/64", v6[i]),
                "dev",
                end,
                "nodad",
            ])?;
        }
        let macs: Vec<String> = ends
            .iter()
            .map(|e| {
                fs::read_to_string(format!("/sys/class/net/{e}/address"))
                    .map(|s| s.trim().to_owned())
            })
            .collect::<Result<_, _>>()
            .map_err(|e| format!("reading a veth MAC address: {e}"))?;
        for i in 0..2 {
            let (to, out, table) = (1 - i, &ends[i], (100 + 2 * p + i as u32).to_string());
            for (fam, addrs) in [("-4", &v4), ("-6", &v6)] {
                run(&[
                    "ip", fam, "rule", "add", "pref", "10", "iif", "lo", "to", &addrs[to],
                    "lookup", &table,
                ])?;
                run(&[
                    "ip", fam, "route", "add", &addrs[to], "dev", out, "src", &addrs[i], "table",
                    &table,
                ])?;
                run(&[
                    "ip",
                    fam,
                    "neigh",
                    "replace",
                    &addrs[to],
                    "lladdr",
                    &macs[to],
                    "dev",
                    out,
                    "nud",
                    "permanent",
                ])?;
            }
        }
        for (i, end) in ends.iter().enumerate() {
            let idx = 2 * p + i as u32;
            if idx < n {
                let name = format!("rxe{idx}");
                add_rxe(&name, end)?;
                devices.push((name, v4[i].clone()));
            }
        }
    }
    Ok(devices)
}

/// Brings up this guest's end of the link to the other guest: finds the virtio-net interface by its
/// MAC address, gives it its addresses, and puts netem on it if asked. Returns its name.
fn link_up(link: &Link) -> Result<String, String> {
    let _ = run(&["modprobe", "virtio_net"]);
    let start = Instant::now();
    let netdev = loop {
        let found = fs::read_dir("/sys/class/net").ok().and_then(|d| {
            d.flatten().find_map(|e| {
                let mac = fs::read_to_string(e.path().join("address")).ok()?;
                (mac.trim().eq_ignore_ascii_case(&link.mac))
                    .then(|| e.file_name().to_string_lossy().into_owned())
            })
        });
        if let Some(n) = found {
            break n;
        }
        if start.elapsed() > Duration::from_secs(20) {
            return Err(format!(
                "no network interface with MAC {} appeared within 20 s",
                link.mac
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    run(&["ip", "link", "set", &netdev, "up"])?;
    run(&[
        "ip",
        "addr",
        "add",
        &format!("{}/24", link.addr),
        "dev",
        &netdev,
    ])?;
    run(&[
        "ip",
        "-6",
        "addr",
        "add",
        &format!("{}/64", link.addr6),
        "dev",
        &netdev,
        "nodad",
    ])?;
    if let Some(netem) = &link.netem {
        let mut argv = vec!["tc", "qdisc", "add", "dev", &netdev, "root", "netem"];
        argv.extend(netem.split_whitespace());
        run(&argv)?;
    }
    Ok(netdev)
}
