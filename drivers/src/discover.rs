//! Device discovery: which RDMA devices exist, their uverbs character devices, and their drivers.
//!
//! sysfs is the source of the device list (`/sys/class/infiniband_verbs/uverbsN/{ibdev,dev,abi_version}`
//! and `/sys/class/infiniband/<ibdev>/{node_type,node_guid,...}`), as in rdma-core's `find_sysfs_devs`.
//! The RDMA netlink interface adds the kernel's device index and the driver id. Where netlink cannot
//! answer, the driver is recognised from sysfs (the PCI driver's name, or an rxe device's `parent`).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use uverbs_uapi as uapi;

use crate::error::{Error, Result};
use crate::netlink::Netlink;
use crate::sys::remote::{RemoteFile, SOCKET_ENV};
use crate::sys::ModelRef;

pub use crate::sys::{sysfs_root, SYSFS};

/// How sysfs shows a backend's devices, for recognising the driver where netlink cannot name it
/// (each backend's entry in the list of backends says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SysfsSign {
    /// A software device over a network interface: a `parent` file and no bus device, or a name
    /// that starts with this.
    NetdevParent(&'static str),
    /// A device on a PCI function bound to this kernel driver (`device/driver`).
    PciDriver(&'static str),
}

/// Declares [`Driver`] from the list of backends.
macro_rules! declare_driver {
    ([$($V:ident: $m:ident, $P:path, $id:ident, $name:literal, $sk:ident($sv:literal);)+]) => {
        /// The drivers this crate has backends for (one variant per backend, made from the one
        /// list of backends), and the rest. More backends add variants: match with a `_` arm.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Driver {
            $(
                #[doc = concat!("The driver of the `", $name, "` backend (`uapi::", stringify!($id), "`).")]
                $V,
            )+
            /// Any other driver, by its `enum rdma_driver_id` (0 when unknown).
            Other(u32),
        }

        impl Driver {
            /// The drivers this crate has a backend for, in the list's order.
            pub const SUPPORTED: &'static [Driver] = &[$(Driver::$V),+];

            /// The driver of an `enum rdma_driver_id` value.
            pub fn from_id(id: u32) -> Driver {
                match id {
                    $(uapi::$id => Driver::$V,)+
                    other => Driver::Other(other),
                }
            }

            /// Its `enum rdma_driver_id` value, which every ioctl header carries.
            pub fn id(self) -> u32 {
                match self {
                    $(Driver::$V => uapi::$id,)+
                    Driver::Other(id) => id,
                }
            }

            /// A short name (the backend's, or `driver id N`).
            pub fn name(self) -> String {
                match self {
                    $(Driver::$V => $name.into(),)+
                    Driver::Other(0) => "unknown".into(),
                    Driver::Other(id) => format!("driver id {id}"),
                }
            }

            /// How sysfs shows its devices; `None` for a driver without a backend.
            pub fn sysfs_sign(self) -> Option<SysfsSign> {
                match self {
                    $(Driver::$V => Some(SysfsSign::$sk($sv)),)+
                    Driver::Other(_) => None,
                }
            }
        }
    };
}
crate::backends!(declare_driver);

impl Driver {
    /// The names of the drivers with a backend, for messages (`rxe, mlx5`).
    pub fn supported_names() -> String {
        Driver::SUPPORTED
            .iter()
            .map(|d| d.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What discovery knows of one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The RDMA device name (`rxe0`, `mlx5_0`).
    pub name: String,
    /// The uverbs character device name (`uverbs0`).
    pub uverbs: String,
    /// Its device node (`/dev/infiniband/uverbs0`).
    pub devnode: PathBuf,
    /// Its (major, minor), from sysfs `dev`.
    pub dev: Option<(u32, u32)>,
    /// The driver's uverbs ABI version (sysfs `abi_version`).
    pub abi_version: u32,
    /// The driver.
    pub driver: Driver,
    /// The kernel's device index, where netlink gave one.
    pub index: Option<u32>,
    /// `/sys/class/infiniband/<name>`.
    pub sysfs_dir: PathBuf,
    /// The model behind a model device (an open file of it, [`crate::sys::ModelFile`]; the crate
    /// `uverbs-mlx5-model` makes them); `None` for a kernel device.
    pub model: Option<crate::sys::ModelRef>,
}

impl DeviceInfo {
    /// What discovery lists for a model daemon's device: its name and sysfs directory, and
    /// `file`, a connection to the daemon, as its `model`.
    pub fn from_remote(file: RemoteFile) -> DeviceInfo {
        let info = file.info().clone();
        DeviceInfo {
            devnode: PathBuf::from(format!("/dev/infiniband/{}", info.uverbs)),
            uverbs: info.uverbs,
            name: info.name,
            dev: None,
            abi_version: info.abi_version,
            driver: Driver::from_id(info.driver_id),
            index: Some(info.index),
            sysfs_dir: info.sysfs_dir,
            model: Some(ModelRef(std::sync::Arc::new(file))),
        }
    }

    /// Reads a file of the device's sysfs directory, trimmed.
    pub fn sysfs_attr(&self, rel: &str) -> Result<String> {
        read_trimmed(&self.sysfs_dir.join(rel))
    }

    /// The node GUID from sysfs (`node_guid`, "xxxx:xxxx:xxxx:xxxx"), as a host-order number whose
    /// big-endian bytes are the GUID.
    pub fn node_guid(&self) -> Result<u64> {
        let path = self.sysfs_dir.join("node_guid");
        parse_guid(&read_trimmed(&path)?).ok_or_else(|| Error::Sysfs {
            path,
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not a GUID"),
        })
    }
}

/// Reads a sysfs file without its trailing newline.
pub fn read_trimmed(path: &Path) -> Result<String> {
    fs::read_to_string(path)
        .map(|s| s.trim_end_matches('\n').to_owned())
        .map_err(|source| Error::Sysfs {
            path: path.to_owned(),
            source,
        })
}

/// Parses "xxxx:xxxx:xxxx:xxxx".
pub fn parse_guid(s: &str) -> Option<u64> {
    let mut v = 0u64;
    let mut groups = 0;
    for g in s.trim().split(':') {
        if g.is_empty() || g.len() > 4 {
            return None;
        }
        v = (v << 16) | u64::from(u16::from_str_radix(g, 16).ok()?);
        groups += 1;
    }
    (groups == 4).then_some(v)
}

/// Every uverbs device, in libibverbs' order: by the kernel's device index (by name where netlink
/// gives none).
///
/// Where [`UVERBS_MODEL_SOCKET`](SOCKET_ENV) names a model daemon's socket, the list is the
/// daemon's device alone, with an open file of it as its `model` ([`remote_device`],
/// [`crate::sys::remote`]): its name and sysfs directory are the daemon's.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    if let Some(path) = std::env::var_os(SOCKET_ENV).filter(|p| !p.is_empty()) {
        // SAFETY: the daemon the user named in `UVERBS_MODEL_SOCKET` is the one this process is to
        // trust as its kernel (as a library named in `LD_PRELOAD` is trusted as libc): the
        // variable is that promise, and it says nothing else.
        let info = unsafe { remote_device(Path::new(&path)) }.map_err(|e| Error::Protocol {
            verb: crate::error::Verb::OpenDevice,
            what: format!(
                "the model daemon at {} ({}): {e}",
                Path::new(&path).display(),
                SOCKET_ENV
            ),
        })?;
        return Ok(vec![info]);
    }
    let netlink = Netlink::open(Duration::from_secs(2)).ok();
    devices_in(&sysfs_root(), Path::new("/dev/infiniband"), netlink)
}

/// The device of the model daemon at `path` (a new connection to it, [`RemoteFile::connect`]), as
/// discovery lists it when [`SOCKET_ENV`] is set.
///
/// # Safety
/// As [`RemoteFile::connect`]: the server at `path` is a uverbs-mlx5-model daemon, trusted as the
/// kernel by every context opened on the device.
pub unsafe fn remote_device(path: &Path) -> std::io::Result<DeviceInfo> {
    // SAFETY: this function's contract is `connect`'s.
    let file = unsafe { RemoteFile::connect(path) }?;
    Ok(DeviceInfo::from_remote(file))
}

/// Looks a device up by name among the discovered ones.
pub fn find_device(name: &str) -> Result<DeviceInfo> {
    devices()?
        .into_iter()
        .find(|d| d.name == name)
        .ok_or_else(|| Error::NoSuchDevice {
            name: name.to_owned(),
        })
}

/// Discovery against a given sysfs root and device directory (a fake tree in tests), with netlink
/// where there is a socket.
pub fn devices_in(
    sysfs: &Path,
    devdir: &Path,
    mut netlink: Option<Netlink>,
) -> Result<Vec<DeviceInfo>> {
    let class = sysfs.join("class/infiniband_verbs");
    let entries = match fs::read_dir(&class) {
        Ok(e) => e,
        // No uverbs at all: ibv_get_device_list fails with ENOSYS here, and so do we.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::NoRdmaSubsystem),
        Err(source) => {
            return Err(Error::Sysfs {
                path: class,
                source,
            })
        }
    };
    let nl_devices = netlink
        .as_mut()
        .and_then(|nl| nl.devices().ok())
        .unwrap_or_default();
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Sysfs {
            path: class.clone(),
            source,
        })?;
        let uverbs = entry.file_name().to_string_lossy().into_owned();
        if !uverbs.starts_with("uverbs") {
            continue;
        }
        let dir = entry.path();
        // A device may vanish between the listing and the reads: skip it, as rdma-core does.
        let Ok(name) = read_trimmed(&dir.join("ibdev")) else {
            continue;
        };
        let dev = read_trimmed(&dir.join("dev")).ok().and_then(|s| {
            let (a, b) = s.split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        });
        let abi_version = read_trimmed(&dir.join("abi_version"))
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let sysfs_dir = sysfs.join("class/infiniband").join(&name);
        let mut index = None;
        let mut driver_id = None;
        if let (Some(nl), Some(d)) = (netlink.as_mut(), nl_devices.iter().find(|d| d.name == name))
        {
            index = Some(d.index);
            if let Ok(c) = nl.uverbs_chardev(d.index) {
                driver_id = c.driver_id;
            }
        }
        let driver = match driver_id {
            Some(id) => Driver::from_id(id),
            None => driver_from_sysfs(&name, &sysfs_dir),
        };
        out.push(DeviceInfo {
            devnode: devdir.join(&uverbs),
            name,
            uverbs,
            dev,
            abi_version,
            driver,
            index,
            sysfs_dir,
            model: None,
        });
    }
    // libibverbs lists devices in the order of the kernel's netlink dump, by device index (it
    // reverses the dump into a list and the list again into its device list); without netlink,
    // by name.
    out.sort_by(|a, b| {
        (a.index.unwrap_or(u32::MAX), &a.name).cmp(&(b.index.unwrap_or(u32::MAX), &b.name))
    });
    Ok(out)
}

/// Recognises the driver without netlink, by the signs of each backend's devices in sysfs (a PCI
/// function bound to its kernel driver; a `parent` network interface and no bus device).
fn driver_from_sysfs(name: &str, dir: &Path) -> Driver {
    let pci = fs::read_link(dir.join("device/driver")).ok();
    let netdev = dir.join("parent").exists() && !dir.join("device").exists();
    for &driver in Driver::SUPPORTED {
        let found = match driver.sysfs_sign() {
            Some(SysfsSign::PciDriver(k)) => pci
                .as_ref()
                .is_some_and(|t| t.file_name().is_some_and(|n| n == k)),
            Some(SysfsSign::NetdevParent(prefix)) => name.starts_with(prefix) || netdev,
            None => false,
        };
        if found {
            return driver;
        }
    }
    Driver::Other(uapi::RDMA_DRIVER_UNKNOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_tree() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    fn write(root: &Path, rel: &str, content: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "creates files (mkdir): Miri isolates the file system")]
    fn finds_devices_from_sysfs_alone() {
        let t = fake_tree();
        let r = t.path();
        write(r, "class/infiniband_verbs/abi_version", "6\n");
        write(r, "class/infiniband_verbs/uverbs1/ibdev", "rxe1\n");
        write(r, "class/infiniband_verbs/uverbs1/dev", "231:193\n");
        write(r, "class/infiniband_verbs/uverbs1/abi_version", "2\n");
        write(
            r,
            "class/infiniband/rxe1/node_guid",
            "5054:00ff:fe12:3456\n",
        );
        write(r, "class/infiniband/rxe1/parent", "lo\n");
        write(r, "class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
        write(r, "class/infiniband_verbs/uverbs0/dev", "231:192\n");
        write(r, "class/infiniband_verbs/uverbs0/abi_version", "1\n");
        fs::create_dir_all(r.join("bus/pci/drivers/mlx5_core")).unwrap();
        fs::create_dir_all(r.join("devices/pci0/0000:01:00.0")).unwrap();
        fs::create_dir_all(r.join("class/infiniband/mlx5_0")).unwrap();
        std::os::unix::fs::symlink(
            r.join("devices/pci0/0000:01:00.0"),
            r.join("class/infiniband/mlx5_0/device"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            r.join("bus/pci/drivers/mlx5_core"),
            r.join("devices/pci0/0000:01:00.0/driver"),
        )
        .unwrap();

        let devs = devices_in(r, Path::new("/dev/infiniband"), None).unwrap();
        assert_eq!(devs.len(), 2);
        assert_eq!(devs[0].name, "mlx5_0");
        assert_eq!(devs[0].driver, Driver::Mlx5);
        assert_eq!(devs[0].uverbs, "uverbs0");
        assert_eq!(devs[0].dev, Some((231, 192)));
        assert_eq!(devs[1].name, "rxe1");
        assert_eq!(devs[1].driver, Driver::Rxe);
        assert_eq!(devs[1].abi_version, 2);
        assert_eq!(devs[1].devnode, Path::new("/dev/infiniband/uverbs1"));
        assert_eq!(devs[1].index, None);
        assert_eq!(devs[1].node_guid().unwrap(), 0x5054_00ff_fe12_3456);
    }

    #[test]
    #[cfg_attr(miri, ignore = "creates files (mkdir): Miri isolates the file system")]
    fn no_uverbs_class_is_enosys() {
        let t = fake_tree();
        let err = devices_in(t.path(), Path::new("/dev/infiniband"), None).unwrap_err();
        assert!(matches!(err, Error::NoRdmaSubsystem));
        assert_eq!(err.errno(), nix::errno::Errno::ENOSYS);
    }

    #[test]
    #[cfg_attr(miri, ignore = "creates files (mkdir): Miri isolates the file system")]
    fn empty_uverbs_class_means_no_devices() {
        let t = fake_tree();
        write(t.path(), "class/infiniband_verbs/abi_version", "6\n");
        assert!(devices_in(t.path(), Path::new("/dev/infiniband"), None)
            .unwrap()
            .is_empty());
    }

    #[test]
    #[cfg_attr(miri, ignore = "creates files (mkdir): Miri isolates the file system")]
    fn unknown_driver_is_other() {
        let t = fake_tree();
        write(t.path(), "class/infiniband_verbs/uverbs0/ibdev", "hfi1_0\n");
        let devs = devices_in(t.path(), Path::new("/dev/infiniband"), None).unwrap();
        assert_eq!(devs[0].driver, Driver::Other(0));
        assert_eq!(devs[0].driver.name(), "unknown");
    }

    #[test]
    fn guid_parsing() {
        assert_eq!(
            parse_guid("0002:c903:0031:7f20"),
            Some(0x0002_c903_0031_7f20)
        );
        assert_eq!(parse_guid("0002:c903:0031"), None);
        assert_eq!(parse_guid("0002:c903:0031:7g20"), None);
        assert_eq!(parse_guid("00002:c903:0031:7f20"), None);
    }
}
