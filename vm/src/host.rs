//! The host side of `uverbs vm`: boots each guest with virtme-ng in a process group of its own,
//! relays its output, watches its state directory, and bounds everything: a boot that does not
//! reach the guest's init, a command that overruns, a guest that dies without a status. Every way
//! out (the end, an error, SIGINT, SIGTERM, SIGHUP) kills what it started.

use super::plan::{files, Devices, Link, Plan, EXIT_SETUP, EXIT_TIMEOUT};
use super::setup::{self, Kernel, Tools};
use super::Options;
use nix::sys::signal::{killpg, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::Pid;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most boots one guest gets in one run (`uverbs vm reboot` asks for another).
const MAX_BOOTS: u32 = 8;
/// How long after its own timeout the guest has to report before the host gives up on it.
const GRACE: Duration = Duration::from_secs(60);
/// How long the guest's setup may take, from its init's start to the command's.
const SETUP: Duration = Duration::from_secs(180);

/// Boots the guests, runs the command, returns the exit status.
pub fn run(opts: &Options) -> Result<i32, String> {
    // Signals become readable events, polled with everything else: no handler, no `unsafe`.
    // (Children start with an empty signal mask: std resets it before exec.)
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        mask.add(s);
    }
    mask.thread_block()
        .map_err(|e| format!("sigprocmask: {e}"))?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| format!("signalfd: {e}"))?;

    let (tools, kernels) = setup::prepare(&opts.kernels, opts.no_install, opts.quiet)?;
    let two = opts.hosts > 1;
    let memory = opts
        .memory
        .clone()
        .unwrap_or_else(|| if two { "1G" } else { "2G" }.into());
    let need = memory_mib(&memory)
        .ok_or_else(|| format!("--memory: not a size: '{memory}' (e.g. 2G, 1536M)"))?;
    // In MiB, as qemu reads it whatever the unit given.
    let memory = format!("{need}M");
    if let Some(avail) = setup::available_memory_mib() {
        let total = need * u64::from(opts.hosts);
        if total + 256 > avail {
            return Err(format!("not enough memory: the guests need {total} MiB, the host has {avail} MiB available"));
        }
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let cwd = cwd
        .to_str()
        .ok_or("the current directory's path is not UTF-8")?
        .to_owned();
    let mut rwdirs = Vec::new();
    if !opts.ro && cwd != "/" {
        rwdirs.push(PathBuf::from(&cwd));
    }
    for d in &opts.rwdirs {
        let p = fs::canonicalize(d).map_err(|e| format!("--rwdir {d}: {e}"))?;
        if !p.is_dir() {
            return Err(format!("--rwdir {d}: not a directory"));
        }
        rwdirs.push(p);
    }
    for d in &rwdirs {
        if d.to_str()
            .is_none_or(|s| s.contains('=') || s.contains(','))
        {
            return Err(format!(
                "{}: virtme-ng cannot share a path with '=' or ',' in it",
                d.display()
            ));
        }
        passable(d)?;
    }
    passable(&exe)?;
    for k in &kernels {
        passable(&k.image)?;
    }
    let kvm = opts.kvm.unwrap_or_else(setup::kvm_usable);
    let work = WorkDir::new()?;
    passable(&work.0)?;
    setup::require_space(&work.0, 16, "the guests' state")?;
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| !matches!(k.as_str(), "PWD" | "OLDPWD" | "SHLVL" | "_"))
        .collect();
    let ports = if two {
        Some(two_free_udp_ports()?)
    } else {
        None
    };

    let mut guests = Vec::new();
    for (n, kernel) in (1..=opts.hosts).zip(kernels) {
        let dir = work.0.join(format!("host{n}"));
        fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let link = two.then(|| Link {
            mac: format!("52:54:00:4c:00:{n:02x}"),
            addr: format!("10.77.0.{n}"),
            peer: format!("10.77.0.{}", 3 - n),
            addr6: format!("fd77::{n}"),
            peer6: format!("fd77::{}", 3 - n),
            netem: opts.netem.clone(),
        });
        let devices = match (two, opts.devices) {
            (true, _) => Devices::Link,
            (false, None) => Devices::Loopback,
            (false, Some(0)) => Devices::None,
            (false, Some(k)) => Devices::Veth(k),
        };
        let qemu_net = ports.map(|(p1, p2)| {
            let (mine, theirs) = if n == 1 { (p1, p2) } else { (p2, p1) };
            format!(
                "-netdev socket,id=uvlink,udp=127.0.0.1:{theirs},localaddr=127.0.0.1:{mine} \
                 -device virtio-net-pci,netdev=uvlink,mac={}",
                link.as_ref().map_or("", |l| l.mac.as_str())
            )
        });
        let plan = Plan {
            cwd: cwd.clone(),
            command: opts.command.clone(),
            env: env.clone(),
            timeout_s: opts.timeout_s,
            devices,
            host: n,
            hosts: opts.hosts,
            boot: 1,
            link,
            quiet: opts.quiet,
        };
        guests.push(Guest {
            label: if two {
                format!("host {n} ({})", kernel.release)
            } else {
                kernel.release.clone()
            },
            prefix: two.then(|| format!("[{n}] ")),
            kernel,
            dir,
            plan,
            qemu_net,
            vm: None,
            early_panics: 0,
            outcome: None,
        });
    }
    let boot_timeout =
        Duration::from_secs(opts.boot_timeout_s.unwrap_or(if two { 240 } else { 120 }));
    let launch = Launch {
        tools: &tools,
        exe: &exe,
        memory: &memory,
        cpus: opts.cpus.unwrap_or(if two { 1 } else { 2 }),
        kvm,
        rwdirs: &rwdirs,
        quiet: opts.quiet,
    };
    let started = Instant::now();
    for g in &mut guests {
        g.boot(&launch)?;
    }
    let code = supervise(&mut guests, &launch, &signals, opts, boot_timeout);
    for g in &mut guests {
        g.kill();
    }
    if !opts.quiet {
        say!(
            "exit status {code} ({} s in all)",
            started.elapsed().as_secs()
        );
    }
    Ok(code)
}

fn supervise(
    guests: &mut [Guest],
    launch: &Launch,
    signals: &SignalFd,
    opts: &Options,
    boot_timeout: Duration,
) -> i32 {
    loop {
        let mut fds = [nix::poll::PollFd::new(
            signals.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(200u16));
        if let Ok(Some(info)) = signals.read_signal() {
            let (name, code) = match Signal::try_from(info.ssi_signo as i32) {
                Ok(Signal::SIGINT) => ("interrupted", 130),
                Ok(Signal::SIGHUP) => ("hung up", 129),
                Ok(Signal::SIGQUIT) => ("quit", 131),
                _ => ("terminated", 143),
            };
            say!("{name}: stopping the guests");
            return code;
        }
        for g in guests.iter_mut() {
            if g.outcome.is_none() {
                g.check(launch, opts.timeout_s, boot_timeout);
            }
        }
        // The first failure (in host order) ends the run; the other hosts are stopped.
        if let Some(g) = guests
            .iter()
            .find(|g| g.outcome.as_ref().is_some_and(|o| o.code != 0))
        {
            let o = g.outcome.as_ref().expect("just found");
            if let Some(why) = &o.why {
                if guests.len() > 1 {
                    say!("error: {}: {why}", g.label);
                } else {
                    say!("error: {why}");
                }
            } else if guests.len() > 1 {
                say!("{}: the command exited with status {}", g.label, o.code);
            }
            return o.code;
        }
        if guests.iter().all(|g| g.outcome.is_some()) {
            return 0;
        }
    }
}

/// How every guest is started.
struct Launch<'a> {
    tools: &'a Tools,
    exe: &'a Path,
    memory: &'a str,
    cpus: u32,
    kvm: bool,
    rwdirs: &'a [PathBuf],
    quiet: bool,
}

/// How a guest ended: an exit status, and the one line that explains it when the command's own
/// status does not.
#[derive(Debug)]
struct Outcome {
    code: i32,
    why: Option<String>,
}

struct Guest {
    label: String,
    prefix: Option<String>,
    kernel: Kernel,
    dir: PathBuf,
    plan: Plan,
    qemu_net: Option<String>,
    vm: Option<Vm>,
    /// Boots that ended in a kernel panic before the guest's init ran.
    early_panics: u32,
    outcome: Option<Outcome>,
}

/// Kills the guest's qemu whichever way the run ends (an early return, a panic).
impl Drop for Guest {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One running vng (and its qemu), in a process group of its own.
struct Vm {
    child: Child,
    started: Instant,
    booted: Option<Instant>,
    /// When the guest said the command starts (its timeout runs from there).
    begun: Option<Instant>,
    reported: Option<Instant>,
    pumps: Vec<JoinHandle<()>>,
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Guest {
    fn boot(&mut self, l: &Launch) -> Result<(), String> {
        for f in [
            files::STARTED,
            files::BOOTED,
            files::RC,
            files::TIMED_OUT,
            files::ERROR,
            files::REBOOT,
            files::CONSOLE,
        ] {
            let _ = fs::remove_file(self.dir.join(f));
        }
        let plan = serde_json::to_vec(&self.plan).map_err(|e| e.to_string())?;
        fs::write(self.dir.join(files::PLAN), plan)
            .map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let dir = self
            .dir
            .to_str()
            .ok_or("the state directory's path is not UTF-8")?;
        let exe = l.exe.to_str().ok_or("this program's path is not UTF-8")?;
        let mut cmd = Command::new(&l.tools.vng);
        cmd.arg("--run")
            .arg(&self.kernel.image)
            .args([
                "--force-9p",
                "--user",
                "root",
                "--memory",
                l.memory,
                "--cpus",
            ])
            .arg(l.cpus.to_string())
            .arg(format!("--rwdir={dir}"));
        for d in l.rwdirs {
            cmd.arg(format!("--rwdir={}", d.display()));
        }
        if !l.kvm {
            cmd.arg("--disable-kvm");
        }
        // vng sends the kernel's console to /dev/null with loglevel=0: a second serial port
        // records its warnings and worse (an oops, a panic) in the state directory, where `check`
        // reads them.
        let console = self.dir.join(files::CONSOLE);
        let mut qemu = format!(
            "-chardev file,id=uvconsole,path={} -device virtconsole,chardev=uvconsole",
            console.display()
        );
        if let Some(net) = &self.qemu_net {
            qemu = format!("{qemu} {net}");
        }
        cmd.arg(format!("--qemu-opts={qemu}"));
        cmd.args(["--append", "console=hvc0 loglevel=5"]);
        cmd.arg("--exec").arg(format!(
            "exec {}{} __guest {}",
            quote(exe),
            crate::invocation()
                .args
                .iter()
                .map(|a| format!(" {}", quote(a)))
                .collect::<String>(),
            quote(dir)
        ));
        // vng runs virtme-run from the PATH: its own directory goes first.
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = l
            .tools
            .vng
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .chain(std::env::split_paths(&path));
        cmd.env(
            "PATH",
            std::env::join_paths(dirs).map_err(|e| e.to_string())?,
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
        if !l.quiet {
            let accel = if l.kvm { "KVM" } else { "TCG, no KVM" };
            let boot = if self.plan.boot > 1 {
                format!(", boot {}", self.plan.boot)
            } else {
                String::new()
            };
            say!("booting {} ({accel}{boot})", self.label);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", l.tools.vng.display()))?;
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let pumps = vec![
            pump(out, false, self.prefix.clone()),
            pump(err, true, self.prefix.clone()),
        ];
        self.vm = Some(Vm {
            child,
            started: Instant::now(),
            booted: None,
            begun: None,
            reported: None,
            pumps,
        });
        Ok(())
    }

    /// Looks at the guest once; sets `outcome` when it has ended.
    fn check(&mut self, l: &Launch, timeout_s: u64, boot_timeout: Duration) {
        let Some(vm) = self.vm.as_mut() else { return };
        let now = Instant::now();
        if vm.booted.is_none() && self.dir.join(files::BOOTED).exists() {
            vm.booted = Some(now);
        }
        if vm.begun.is_none() && self.dir.join(files::STARTED).exists() {
            vm.begun = Some(now);
        }
        if vm.reported.is_none() && self.dir.join(files::RC).exists() {
            vm.reported = Some(now);
        }
        let waited = vm.child.try_wait();
        let exited = !matches!(waited, Ok(None));
        let overdue = match (vm.booted, vm.reported) {
            // The guest powers off right after it reports; a stuck power-off is not a failure.
            (_, Some(t)) => now > t + Duration::from_secs(20),
            (None, None) => now > vm.started + boot_timeout,
            (Some(t), None) => match vm.begun {
                Some(b) => now > b + Duration::from_secs(timeout_s) + GRACE,
                None => now > t + SETUP,
            },
        };
        if !exited && !overdue {
            return;
        }
        let (booted, begun, reported) = (
            vm.booted.is_some(),
            vm.begun.is_some(),
            vm.reported.is_some(),
        );
        let status = waited.ok().flatten();
        self.kill();
        let read = |f: &str| {
            fs::read_to_string(self.dir.join(f))
                .ok()
                .map(|s| s.trim().to_owned())
        };
        let panic = self.console_panic();
        let rc = read(files::RC);
        self.outcome = Some(if reported || rc.is_some() {
            let code = rc.and_then(|s| s.parse().ok()).unwrap_or(EXIT_SETUP);
            let why = if self.dir.join(files::TIMED_OUT).exists() {
                Some(format!("TIMEOUT: the command did not finish within --timeout {timeout_s} s; it was killed"))
            } else {
                read(files::ERROR)
            };
            Outcome { code, why }
        } else if let (Some(line), false, 0) = (&panic, booted, self.early_panics) {
            // The kernel died before the guest's init ran: nothing of the command's yet. Under
            // emulation this has been seen once in many hundreds of boots; one more try.
            say!(
                "{}: the guest kernel panicked while booting ({line}); booting it again",
                self.label
            );
            self.early_panics += 1;
            match self.boot_again(l) {
                None => return,
                Some(failed) => failed,
            }
        } else if self.dir.join(files::REBOOT).exists() && self.plan.boot < MAX_BOOTS {
            self.plan.boot += 1;
            match self.boot_again(l) {
                None => return,
                Some(failed) => failed,
            }
        } else if !booted && !exited {
            Outcome {
                code: EXIT_TIMEOUT,
                why: Some(format!(
                    "TIMEOUT: the guest did not boot within --boot-timeout {} s; it was killed",
                    boot_timeout.as_secs()
                )),
            }
        } else if !exited && !begun {
            Outcome {
                code: EXIT_TIMEOUT,
                why: Some(format!(
                    "TIMEOUT: the guest's setup (modules, rxe devices, network) did not finish within {} s of its boot; it was killed",
                    SETUP.as_secs()
                )),
            }
        } else if !exited {
            Outcome {
                code: EXIT_TIMEOUT,
                why: Some(format!(
                    "TIMEOUT: the command did not finish within --timeout {timeout_s} s and the guest stopped responding; it was killed"
                )),
            }
        } else if let Some(line) = panic {
            Outcome {
                code: EXIT_SETUP,
                why: Some(format!("the guest kernel panicked: {line}")),
            }
        } else if self.dir.join(files::REBOOT).exists() {
            Outcome {
                code: EXIT_SETUP,
                why: Some(format!("the guest asked for more than {MAX_BOOTS} boots")),
            }
        } else {
            let how = status.map_or_else(|| "unknown status".to_owned(), |s| s.to_string());
            let what = if booted {
                "the guest stopped without reporting the command's status"
            } else {
                "the guest failed to boot"
            };
            Outcome {
                code: EXIT_SETUP,
                why: Some(format!("{what} (vng: {how}); its console is above")),
            }
        });
    }

    /// The kernel panic the guest's console recorded, with the oops before it when there was one.
    fn console_panic(&self) -> Option<String> {
        let console = fs::read(self.dir.join(files::CONSOLE)).ok()?;
        let text = String::from_utf8_lossy(&console);
        let panic = text.lines().find(|l| l.contains("Kernel panic"))?.trim();
        let oops = ["Oops", "BUG:", "RIP:"];
        Some(
            match text.lines().find(|l| oops.iter().any(|o| l.contains(o))) {
                Some(oops) => format!("{panic}; {}", oops.trim()),
                None => panic.to_owned(),
            },
        )
    }

    /// Boots the guest once more; the outcome when it cannot.
    fn boot_again(&mut self, l: &Launch) -> Option<Outcome> {
        self.boot(l).err().map(|e| Outcome {
            code: EXIT_SETUP,
            why: Some(format!("cannot boot again: {e}")),
        })
    }

    /// Kills the guest's whole process group (vng and qemu) and reaps it.
    fn kill(&mut self) {
        let Some(mut vm) = self.vm.take() else { return };
        let _ = killpg(Pid::from_raw(vm.child.id() as i32), Signal::SIGKILL);
        let _ = vm.child.wait();
        for p in vm.pumps.drain(..) {
            let _ = p.join();
        }
    }
}

/// Copies a guest's output to ours, line by line (with the host's prefix when there are two).
/// Keeps reading when ours cannot be written: a stalled pipe would stall the guest. (A kernel
/// panic is not seen here: vng sends the console to /dev/null; `check` reads `STATE/console`.)
fn pump(from: impl Read + Send + 'static, stderr: bool, prefix: Option<String>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut from = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match from.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let mut out: Box<dyn Write> = if stderr {
                Box::new(std::io::stderr().lock())
            } else {
                Box::new(std::io::stdout().lock())
            };
            if let Some(p) = &prefix {
                let _ = out.write_all(p.as_bytes());
            }
            let _ = out.write_all(&line);
            let _ = out.flush();
        }
    })
}

/// `2G`, `1536M`, `1024` (MiB) → MiB.
fn memory_mib(s: &str) -> Option<u64> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().ok()?;
    let mib = match unit {
        "" | "M" | "m" | "MB" | "MiB" => n,
        "G" | "g" | "GB" | "GiB" => n.checked_mul(1024)?,
        _ => return None,
    };
    (mib >= 256).then_some(mib)
}

/// Two distinct UDP ports free on 127.0.0.1 just now (each qemu binds one a moment later).
fn two_free_udp_ports() -> Result<(u16, u16), String> {
    let bind = || {
        std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| Ok((s.local_addr()?.port(), s)))
            .map_err(|e| format!("no free UDP port on 127.0.0.1: {e}"))
    };
    let ((a, _first), (b, _second)) = (bind()?, bind()?);
    Ok((a, b))
}

/// vng hands its arguments to a shell (`virtme-run` is run with `shell=True`), unquoted: a path
/// it gets must not contain anything that shell would read.
fn passable(path: &Path) -> Result<(), String> {
    let text = path.to_str().unwrap_or("\u{fffd}");
    match text.chars().find(|c| !(c.is_ascii_alphanumeric() || "._/+@:%~-".contains(*c))) {
        None => Ok(()),
        Some(c) => Err(format!(
            "{text}: virtme-ng passes paths through a shell, and this one has {c:?} in it; use a path of letters, digits and ._/+@:%~-"
        )),
    }
}

/// The run's state directories, removed at the end (kept with `UVERBS_VM_KEEP=1`).
struct WorkDir(PathBuf);

impl WorkDir {
    fn new() -> Result<Self, String> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        for attempt in 0..100u32 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let dir = base.join(format!(
                "uverbs-vm.{}.{nanos:x}{attempt}",
                std::process::id()
            ));
            match fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(Self(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!(
                        "cannot create a state directory in {}: {e}",
                        base.display()
                    ))
                }
            }
        }
        Err(format!(
            "cannot create a state directory in {}",
            base.display()
        ))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if std::env::var_os("UVERBS_VM_KEEP").is_some_and(|v| v == "1") {
            say!("state kept in {}", self.0.display());
        } else {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes() {
        assert_eq!(memory_mib("2G"), Some(2048));
        assert_eq!(memory_mib("1536M"), Some(1536));
        assert_eq!(memory_mib("1024"), Some(1024));
        assert_eq!(memory_mib("12K"), None);
        assert_eq!(memory_mib("100M"), None);
        assert_eq!(memory_mib("G"), None);
    }
}
