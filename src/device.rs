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
    pub(crate) fn from_infos(infos: Vec<DeviceInfo>) -> io::Result<DeviceList> {
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

/// A 64-bit globally unique identifier (node GUID, system image GUID, port GUID).
///
/// Stored in network byte order, as the kernel and `ibverbs` keep it; converts to and from the host
/// number whose big-endian bytes are the GUID.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct Guid {
    raw: [u8; 8],
}

impl Guid {
    /// A GUID from its bytes in network order.
    pub const fn from_bytes(raw: [u8; 8]) -> Guid {
        Guid { raw }
    }

    /// A GUID from a big-endian value as the kernel's structs hold it (`__be64` read natively).
    pub const fn from_be(be: u64) -> Guid {
        Guid {
            raw: be.to_ne_bytes(),
        }
    }

    /// The bytes in network order.
    pub const fn bytes(&self) -> [u8; 8] {
        self.raw
    }

    /// The 24-bit Organizationally Unique Identifier: the first three bytes.
    pub fn oui(&self) -> u32 {
        u32::from_be_bytes([0, self.raw[0], self.raw[1], self.raw[2]])
    }

    /// Whether the GUID is zero, which no device has.
    pub fn is_reserved(&self) -> bool {
        self.raw == [0; 8]
    }
}

impl From<u64> for Guid {
    fn from(v: u64) -> Guid {
        Guid {
            raw: v.to_be_bytes(),
        }
    }
}

impl From<Guid> for u64 {
    fn from(g: Guid) -> u64 {
        u64::from_be_bytes(g.raw)
    }
}

/// Formats as `ibv_devinfo` does: `xxxx:xxxx:xxxx:xxxx`.
impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.raw;
        write!(
            f,
            "{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}",
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
        )
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({self})")
    }
}

/// Formats as `ibv_devices` does: 16 hex digits.
impl fmt::LowerHex for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&u64::from(*self), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_conversions() {
        let g = Guid::from(0x0002_c903_0031_7f20u64);
        assert_eq!(g.bytes(), [0x00, 0x02, 0xc9, 0x03, 0x00, 0x31, 0x7f, 0x20]);
        assert_eq!(g.oui(), 0x0002c9);
        assert_eq!(u64::from(g), 0x0002_c903_0031_7f20);
        assert_eq!(g.to_string(), "0002:c903:0031:7f20");
        assert_eq!(format!("{g:016x}"), "0002c90300317f20");
        assert_eq!(Guid::from_be(0x0002_c903_0031_7f20u64.to_be()), g);
        assert!(!g.is_reserved());
        assert!(Guid::default().is_reserved());
    }

    #[test]
    fn empty_list() {
        let l = DeviceList::from_infos(Vec::new()).unwrap();
        assert!(l.is_empty());
        assert_eq!(l.len(), 0);
        assert!(l.get(0).is_none());
        assert_eq!(l.iter().count(), 0);
    }
}
