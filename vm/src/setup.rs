//! What `uverbs vm` needs on the host, found or installed: qemu, virtme-ng, the tools the guest
//! runs (`rdma`, `ip`, `tc`, `modprobe`), and kernels that carry `rdma_rxe`. On Debian (12 and 13)
//! it installs what is missing on first use (apt-get, and virtme-ng with pip into a venv when no
//! `vng` is on the PATH), saying so first; `--no-install` only says what is missing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A kernel the guest boots.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The image (`/boot/vmlinuz-...`).
    pub image: PathBuf,
    /// Its release (`uname -r` in the guest): the name of its modules directory.
    pub release: String,
}

/// The host's tools, once present.
#[derive(Debug)]
pub struct Tools {
    /// The `vng` executable.
    pub vng: PathBuf,
}

/// A reason the machine cannot run a guest, in one line.
pub type Refusal = String;

struct Need {
    /// What is missing, as the user would look for it.
    what: String,
    /// The Debian package that brings it (none: installed otherwise).
    package: Option<&'static str>,
}

/// Where virtme-ng is pip-installed when no `vng` is on the PATH.
fn venv() -> PathBuf {
    if let Some(v) = std::env::var_os("UVERBS_VM_VENV") {
        return v.into();
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("/var/lib"));
    data.join("uverbs-vm/venv")
}

/// Finds `name` on the PATH (and in the sbin directories, which a non-root PATH may lack).
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| {
            fs::metadata(p).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
}

fn find_vng() -> Option<PathBuf> {
    which("vng").or_else(|| Some(venv().join("bin/vng")).filter(|p| p.is_file()))
}

/// The Debian release this runs on (`VERSION_CODENAME` in /etc/os-release), if any.
fn codename() -> Option<String> {
    let release = fs::read_to_string("/etc/os-release").ok()?;
    release
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|c| c.trim_matches('"').to_owned())
}

/// The Debian package that brings a kernel series on this release: Debian 12 (bookworm) has 6.1
/// as its kernel and 6.12 from bookworm-security, Debian 13 (trixie) has 6.12.
fn kernel_package(series: &str) -> Option<&'static str> {
    match (codename().as_deref(), series) {
        (Some("bookworm"), "6.1") => Some("linux-image-amd64"),
        (Some("bookworm"), "6.12") => Some("linux-image-6.12-amd64"),
        (Some("trixie"), "6.12") => Some("linux-image-amd64"),
        _ => None,
    }
}

/// Checks (and, unless `no_install`, installs) what booting `kernels` needs; returns the tools
/// and the kernels resolved.
pub fn prepare(
    kernels: &[String],
    no_install: bool,
    quiet: bool,
) -> Result<(Tools, Vec<Kernel>), Refusal> {
    let missing = missing(kernels);
    if !missing.is_empty() {
        if no_install {
            return Err(format!(
                "missing: {} (run without --no-install to install them)",
                names(&missing)
            ));
        }
        install(&missing, quiet)?;
        let still = self::missing(kernels);
        if !still.is_empty() {
            return Err(format!("still missing after installing: {}", names(&still)));
        }
    }
    let vng = find_vng().ok_or("virtme-ng's vng is not on the PATH")?;
    let kernels = kernels
        .iter()
        .map(|k| resolve_kernel(k))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((Tools { vng }, kernels))
}

/// What `need` names, as a list for a message.
fn names(need: &[Need]) -> String {
    need.iter()
        .map(|n| n.what.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn missing(kernels: &[String]) -> Vec<Need> {
    let mut need = Vec::new();
    let tools: [(&str, &'static str); 6] = [
        ("qemu-system-x86_64", "qemu-system-x86"),
        ("busybox", "busybox-static"),
        ("rdma", "iproute2"),
        ("tc", "iproute2"),
        ("modprobe", "kmod"),
        ("ip", "iproute2"),
    ];
    for (cmd, pkg) in tools {
        if which(cmd).is_none() {
            need.push(Need {
                what: cmd.to_owned(),
                package: Some(pkg),
            });
        }
    }
    if find_vng().is_none() {
        need.push(Need {
            what: "vng (virtme-ng)".into(),
            package: None,
        });
        if which("python3").is_none() {
            need.push(Need {
                what: "python3".into(),
                package: Some("python3"),
            });
        }
        if Command::new("python3")
            .args(["-c", "import ensurepip, venv"])
            .stderr(Stdio::null())
            .status()
            .map_or(true, |s| !s.success())
        {
            need.push(Need {
                what: "python3's venv".into(),
                package: Some("python3-venv"),
            });
        }
    }
    for k in kernels {
        // Only the series this tool can install; `resolve_kernel` explains the others.
        if let (Some(package), None) = (kernel_package(k), newest_image(k)) {
            need.push(Need {
                what: format!("a Linux {k} kernel in /boot"),
                package: Some(package),
            });
        }
    }
    need
}

fn as_root(argv: &[&str]) -> Command {
    let mut cmd = if nix::unistd::geteuid().is_root() {
        Command::new(argv[0])
    } else {
        // `env` inside sudo: its env_reset would drop DEBIAN_FRONTEND.
        let mut c = Command::new("sudo");
        c.args(["env", "DEBIAN_FRONTEND=noninteractive", argv[0]]);
        c
    };
    cmd.args(&argv[1..])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null());
    cmd
}

fn checked(mut cmd: Command, what: &str) -> Result<(), Refusal> {
    // The installers' output goes to stderr: stdout belongs to the guest command.
    let status = cmd
        .stdout(std::io::stderr())
        .status()
        .map_err(|e| format!("{what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

fn install(need: &[Need], quiet: bool) -> Result<(), Refusal> {
    let mut packages: Vec<&str> = need.iter().filter_map(|n| n.package).collect();
    packages.sort_unstable();
    packages.dedup();
    let pip = need
        .iter()
        .any(|n| n.package.is_none() && n.what.starts_with("vng"));
    if !packages.is_empty() {
        if which("apt-get").is_none() {
            return Err(format!(
                "not a Debian system (no apt-get): install {} by hand, or the packages {}",
                names(need),
                packages.join(" ")
            ));
        }
        if !nix::unistd::geteuid().is_root() && which("sudo").is_none() {
            return Err(format!(
                "need root or sudo to install {}",
                packages.join(" ")
            ));
        }
        // Kernels and qemu take about 600 MB once installed.
        require_space(Path::new("/var/cache/apt"), 1536, "installing packages")?;
        if !quiet {
            say!("first use: installing {} with apt-get", packages.join(" "));
        }
        checked(as_root(&["apt-get", "update", "-q"]), "apt-get update")?;
        if packages.contains(&"linux-image-6.12-amd64") && !apt_has("linux-image-6.12-amd64") {
            add_bookworm_security()?;
        }
        let mut argv = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
        argv.extend(&packages);
        checked(as_root(&argv), "apt-get install")?;
    }
    if pip {
        let venv = venv();
        if !quiet {
            say!(
                "first use: installing virtme-ng with pip into {}",
                venv.display()
            );
        }
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "venv"]).arg(&venv);
        checked(cmd, "python3 -m venv")?;
        let mut cmd = Command::new(venv.join("bin/pip"));
        cmd.args(["install", "-q", "virtme-ng"])
            .stdin(Stdio::null());
        checked(cmd, "pip install virtme-ng")?;
    }
    Ok(())
}

fn apt_has(package: &str) -> bool {
    Command::new("apt-cache")
        .args(["policy", package])
        .env("LC_ALL", "C")
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout).lines().any(|l| {
                l.trim()
                    .strip_prefix("Candidate:")
                    .is_some_and(|c| c.trim() != "(none)")
            })
        })
}

/// Debian 12 ships its 6.12 kernel through bookworm-security.
fn add_bookworm_security() -> Result<(), Refusal> {
    if codename().as_deref() != Some("bookworm") {
        return Err(
            "linux-image-6.12-amd64 is not available from this system's apt sources".into(),
        );
    }
    say!("adding deb.debian.org/debian-security bookworm-security for linux-image-6.12-amd64");
    let list = "/etc/apt/sources.list.d/uverbs-vm-bookworm-security.list";
    let line = "deb http://deb.debian.org/debian-security bookworm-security main\n";
    let mut tee = as_root(&["tee", list]);
    tee.stdin(Stdio::piped()).stdout(Stdio::null());
    let mut child = tee.spawn().map_err(|e| format!("tee {list}: {e}"))?;
    use std::io::Write;
    child.stdin.take().map(|mut s| s.write_all(line.as_bytes()));
    let ok = child.wait().is_ok_and(|s| s.success());
    if !ok {
        return Err(format!("cannot write {list}"));
    }
    checked(as_root(&["apt-get", "update", "-q"]), "apt-get update")
}

/// Refuses (in one line) when the filesystem holding `path` has less than `mib` MiB free.
pub fn require_space(path: &Path, mib: u64, purpose: &str) -> Result<(), Refusal> {
    let probe = path
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    match nix::sys::statvfs::statvfs(probe) {
        Ok(st) => {
            // Both are u64 on the 64-bit Linux targets this tool boots guests on.
            let free = st.blocks_available() * st.fragment_size() / (1 << 20);
            if free < mib {
                return Err(format!(
                    "no space: {purpose} needs {mib} MiB free on {}, it has {free} MiB",
                    probe.display()
                ));
            }
            Ok(())
        }
        Err(_) => Ok(()),
    }
}

/// Orders release strings as `sort -V` does for these: by their runs of digits, as numbers.
fn version_key(s: &str) -> Vec<u64> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The newest `/boot/vmlinuz-<series>{.,-,+}*` whose modules have `rdma_rxe` (a cloud kernel
/// beside the generic one may lack it).
fn newest_image(series: &str) -> Option<PathBuf> {
    let mut found: Vec<(bool, Vec<u64>, PathBuf)> = fs::read_dir("/boot")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let release = name.strip_prefix("vmlinuz-")?;
            let rest = release.strip_prefix(series)?;
            matches!(rest.chars().next(), Some('.' | '-' | '+'))
                .then(|| (has_rxe(release), version_key(&name), e.path()))
        })
        .collect();
    found.sort();
    found.pop().map(|f| f.2)
}

/// Whether the modules of kernel `release` list `rdma_rxe` (as a module or built in).
fn has_rxe(release: &str) -> bool {
    let modules = Path::new("/lib/modules").join(release);
    ["modules.dep", "modules.builtin"].iter().any(|f| {
        fs::read_to_string(modules.join(f)).is_ok_and(|list| {
            list.lines().any(|line| {
                line.split(':')
                    .next()
                    .is_some_and(|m| m.contains("/rdma_rxe.ko"))
            })
        })
    })
}

/// The release a bzImage announces in its setup header (`kernel_version`, boot protocol 2.0+).
pub fn image_release(image: &[u8]) -> Option<String> {
    if image.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let ptr = u16::from_le_bytes(image.get(0x20e..0x210)?.try_into().ok()?) as usize;
    let text = image.get(ptr.checked_add(0x200)?..)?;
    let end = text.iter().position(|&b| b == 0 || b == b' ')?;
    let release = std::str::from_utf8(&text[..end]).ok()?;
    (!release.is_empty()).then(|| release.to_owned())
}

/// `6.1`, `6.12` (the newest installed of that series) or a path to an image; checks that the image
/// is readable, that its modules are installed and that they include `rdma_rxe`.
pub fn resolve_kernel(spec: &str) -> Result<Kernel, Refusal> {
    let image = if spec.contains('/') {
        PathBuf::from(spec)
    } else {
        let series_ok = {
            let mut parts = spec.split('.');
            let ok = |p: Option<&str>| {
                p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            };
            ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
        };
        if !series_ok {
            return Err(format!("unknown kernel '{spec}': give a series such as 6.1 or 6.12, or a path to a vmlinuz"));
        }
        newest_image(spec).ok_or_else(|| {
            format!(
                "no Linux {spec} kernel with rdma_rxe in /boot (uverbs vm installs 6.1 and 6.12 on Debian 12, 6.12 on Debian 13; elsewhere give --kernel PATH)"
            )
        })?
    };
    let bytes = fs::read(&image).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("kernel image {} not found", image.display()),
        std::io::ErrorKind::PermissionDenied => {
            format!(
                "kernel image {} is not readable (run as root, or make it readable)",
                image.display()
            )
        }
        _ => format!("kernel image {}: {e}", image.display()),
    })?;
    let release = image_release(&bytes)
        .or_else(|| {
            image
                .file_name()?
                .to_str()?
                .strip_prefix("vmlinuz-")
                .map(str::to_owned)
        })
        .ok_or_else(|| {
            format!(
                "{} is not a Linux kernel image (no bzImage header)",
                image.display()
            )
        })?;
    let modules = Path::new("/lib/modules").join(&release);
    if !modules.is_dir() {
        return Err(format!(
            "kernel {release} ({}) has no modules in {}: the guest loads rdma_rxe from there",
            image.display(),
            modules.display()
        ));
    }
    if !has_rxe(&release) {
        return Err(format!(
            "kernel {release} has no rdma_rxe (soft-RoCE) module: not in {}/modules.dep nor modules.builtin",
            modules.display()
        ));
    }
    Ok(Kernel { image, release })
}

/// `MemAvailable` in MiB, if the kernel says.
pub fn available_memory_mib() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? / 1024)
}

/// Whether KVM can be used: `/dev/kvm` opens read-write and the CPU announces virtualisation
/// (inside a VM without nested virtualisation the device may exist but not work).
pub fn kvm_usable() -> bool {
    let cpu = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpu.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let virt = flags.split_whitespace().any(|f| f == "vmx" || f == "svm");
    virt && fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_from_a_setup_header() {
        let mut image = vec![0u8; 0x400];
        image[0x202..0x206].copy_from_slice(b"HdrS");
        image[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        image[0x300..0x300 + 20].copy_from_slice(b"6.1.0-9-amd64 (x) #1");
        assert_eq!(image_release(&image).as_deref(), Some("6.1.0-9-amd64"));
        image[0x202] = b'X';
        assert_eq!(image_release(&image), None);
        assert_eq!(image_release(&image[..0x100]), None);
    }

    #[test]
    fn versions_order_numerically() {
        assert!(version_key("vmlinuz-6.12.10-amd64") > version_key("vmlinuz-6.12.9-amd64"));
        assert!(version_key("vmlinuz-6.1.0-40-amd64") > version_key("vmlinuz-6.1.0-9-amd64"));
    }

    #[test]
    fn unknown_kernels_are_refused_by_name() {
        let e = resolve_kernel("banana").unwrap_err();
        assert!(e.contains("unknown kernel 'banana'"), "{e}");
        let e = resolve_kernel("/nonexistent/vmlinuz").unwrap_err();
        assert!(e.contains("not found"), "{e}");
    }
}
