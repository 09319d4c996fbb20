//! Device discovery: [`devices`], [`DeviceList`], [`Device`] and [`Guid`], as in the `ibverbs` crate.

use std::ffi::{CStr, CString};
use std::fmt;
use std::io;
use std::path::Path;

use uverbs_drivers::discover::{self, DeviceInfo};

use crate::Context;

pub use uverbs_drivers::chan::CommandPath;
pub use uverbs_drivers::discover::Driver;

/// Lists the RDMA devices of this machine that have a uverbs character device.
///
/// As `ibv_get_device_list`, fails with `ENOSYS` ([`crate::Error::NoRdmaSubsystem`]) when the kernel
/// has no uverbs support at all, and returns an empty list when it has, but no device.
pub fn devices() -> io::Result<DeviceList> {
    let infos = discover::devices()?;
    DeviceList::from_infos(infos)
}

/// The devices found by [`devices`].
pub struct DeviceList {
    infos: Vec<DeviceInfo>,
    names: Vec<CString>,
}

impl DeviceList {
    /// A list of devices found by other means than [`devices`]: a software device such as the
    /// mlx5 model (the crate `uverbs-mlx5-model`), which hands out its `DeviceInfo`.
    pub fn from_infos(infos: Vec<DeviceInfo>) -> io::Result<DeviceList> {
        let names = infos
            .iter()
            .map(|i| {
                CString::new(i.name.as_str())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
            })
            .collect::<io::Result<_>>()?;
        Ok(DeviceList { infos, names })
    }

    /// Iterates over the devices.
    pub fn iter(&self) -> DeviceListIter<'_> {
        DeviceListIter { list: self, i: 0 }
    }

    /// The number of devices.
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// The device at `index`.
    pub fn get(&self, index: usize) -> Option<Device<'_>> {
        Some(Device {
            info: self.infos.get(index)?,
            name: &self.names[index],
        })
    }

    /// The device named `name`.
    pub fn find(&self, name: &str) -> Option<Device<'_>> {
        self.iter().find(|d| d.info.name == name)
    }
}

impl fmt::Debug for DeviceList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a DeviceList {
    type Item = Device<'a>;
    type IntoIter = DeviceListIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over a [`DeviceList`].
#[derive(Debug)]
pub struct DeviceListIter<'a> {
    list: &'a DeviceList,
    i: usize,
}

impl<'a> Iterator for DeviceListIter<'a> {
    type Item = Device<'a>;
    fn next(&mut self) -> Option<Device<'a>> {
        let d = self.list.get(self.i)?;
        self.i += 1;
        Some(d)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.list.len() - self.i;
        (n, Some(n))
    }
}

impl ExactSizeIterator for DeviceListIter<'_> {}

/// An RDMA device, borrowed from its [`DeviceList`].
#[derive(Clone, Copy)]
pub struct Device<'devlist> {
    info: &'devlist DeviceInfo,
    name: &'devlist CStr,
}

impl<'devlist> Device<'devlist> {
    /// Opens the device: allocates a user context, with the driver data of its backend.
    ///
    /// Fails with [`crate::Error::UnsupportedDriver`] for a device that is neither rxe nor mlx5.
    pub fn open(&self) -> io::Result<Context> {
        Context::open(self.info)
    }

    /// Opens the device on a given command path (see [`CommandPath`]).
    pub fn open_with(&self, path: CommandPath) -> io::Result<Context> {
        Context::open_with(self.info, path)
    }

    /// The device's name (`rxe0`, `mlx5_0`). Always `Some`; the `Option` is the `ibverbs` signature.
    pub fn name(&self) -> Option<&'devlist CStr> {
        Some(self.name)
    }

    /// The device's name as a `&str`.
    pub fn name_str(&self) -> &'devlist str {
        &self.info.name
    }

    /// The node GUID (from sysfs, as `ibv_get_device_guid`).
    pub fn guid(&self) -> io::Result<Guid> {
        Ok(Guid::from(self.info.node_guid()?))
    }

    /// The kernel's index of the device (`ibv_get_device_index`); an error where the kernel's netlink
    /// interface did not say.
    pub fn index(&self) -> io::Result<i32> {
        self.info
            .index
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::Unsupported,
                    "the kernel did not report a device index",
                )
            })
    }

    /// The driver, and so the backend, of the device.
    pub fn driver(&self) -> Driver {
        self.info.driver
    }

    /// The uverbs character device (`/dev/infiniband/uverbsN`).
    pub fn uverbs_path(&self) -> &'devlist Path {
        &self.info.devnode
    }

    /// The device's sysfs directory (`/sys/class/infiniband/<name>`).
    pub fn sysfs_path(&self) -> &'devlist Path {
        &self.info.sysfs_dir
    }

    /// The driver's uverbs ABI version.
    pub fn abi_version(&self) -> u32 {
        self.info.abi_version
    }
}

impl fmt::Debug for Device<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.info.name)
            .field("uverbs", &self.info.uverbs)
            .field("driver", &self.info.driver)
            .finish()
    }
}

pub use uverbs_drivers::gid::Guid;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_list() {
        let l = DeviceList::from_infos(Vec::new()).unwrap();
        assert!(l.is_empty());
        assert_eq!(l.len(), 0);
        assert!(l.get(0).is_none());
        assert_eq!(l.iter().count(), 0);
    }
}
