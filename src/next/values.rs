//! The value types of `uverbs::next` that no device stands behind: identifiers ([`Guid`],
//! [`Gid`], [`GidEntry`]), decoded port attributes ([`PortSpeed`], [`PortWidth`], [`LinkLayer`],
//! [`PhysicalState`]), what two queue pairs exchange to connect ([`QueuePairEndpoint`]) and remote
//! memory ([`RemoteMemorySlice`], [`RemoteKey`]).

use std::fmt;
use std::net::Ipv6Addr;
use std::ops::{Bound, RangeBounds};
use std::path::Path;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use super::ffi;

/// A 64-bit globally unique identifier (node GUID, system image GUID), held in network byte
/// order.
///
/// As in `ibverbs`, `From<u64>` takes the GUID as a host integer whose big-endian bytes are the
/// GUID (`0x0002_c903_00a0_7c8e` is `0002:c903:00a0:7c8e`), and `u64::from` gives that integer
/// back. `AsRef<`[`ffi::__be64`]`>` lends the bytes as C's `__be64` (the integer whose in-memory
/// bytes are the GUID). `ibverbs` builds the GUIDs it reads
/// from the device by passing a `__be64` to `From<u64>`, which reverses them on little-endian
/// hosts; uverbs builds them from the bytes, so `Display` and [`Guid::oui`] match `ibv_devinfo`.
///
/// Serializes (feature `serde`) as a struct with one field, `raw`, the 8 bytes: `ibverbs`' format.
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[derive(Default, Copy, Clone, Eq, PartialEq, Hash, zerocopy::IntoBytes, zerocopy::Immutable)]
#[repr(C, align(8))]
pub struct Guid {
    raw: [u8; 8],
}

impl Guid {
    /// A GUID from its bytes in network order.
    pub(crate) const fn from_bytes(raw: [u8; 8]) -> Guid {
        Guid { raw }
    }

    /// The 24-bit Organizationally Unique Identifier: the first three bytes.
    pub fn oui(&self) -> u32 {
        u32::from_be_bytes([0, self.raw[0], self.raw[1], self.raw[2]])
    }

    /// Whether the GUID is all zeroes, which is reserved (and what a device without one reports).
    pub fn is_reserved(&self) -> bool {
        self.raw == [0; 8]
    }
}

/// `0002:c903:00a0:7c8e`: four groups of four hex digits.
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

/// `Guid(0002:c903:00a0:7c8e)`.
impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({self})")
    }
}

/// The GUID whose bytes are `value`'s big-endian bytes.
impl From<u64> for Guid {
    fn from(value: u64) -> Guid {
        Guid {
            raw: value.to_be_bytes(),
        }
    }
}

/// The host integer whose big-endian bytes are the GUID.
impl From<Guid> for u64 {
    fn from(guid: Guid) -> u64 {
        u64::from_be_bytes(guid.raw)
    }
}

/// The bytes read as C's `__be64`: the integer whose in-memory bytes are the GUID.
impl AsRef<ffi::__be64> for Guid {
    fn as_ref(&self) -> &ffi::__be64 {
        zerocopy::transmute_ref!(self)
    }
}

/// A 128-bit global identifier: an InfiniBand GID, or (RoCE) an IPv6 address, in network byte
/// order.
///
/// Serializes (feature `serde`) as a struct with one field, `raw`, the 16 bytes: `ibverbs`' format.
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[derive(Default, Copy, Clone, Eq, PartialEq, Hash)]
#[repr(transparent)]
pub struct Gid {
    #[cfg_attr(feature = "serde", serde(with = "gid_bytes"))]
    raw: ffi::ibv_gid,
}

/// Serializes an [`ffi::ibv_gid`] as its bytes, so that [`Gid`] has `ibverbs`' format.
#[cfg(feature = "serde")]
mod gid_bytes {
    use super::ffi;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(gid: &ffi::ibv_gid, s: S) -> Result<S::Ok, S::Error> {
        gid.raw.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ffi::ibv_gid, D::Error> {
        <[u8; 16]>::deserialize(d).map(|raw| ffi::ibv_gid { raw })
    }
}

impl Gid {
    /// The subnet prefix: the first 8 bytes, as a host integer.
    pub fn subnet_prefix(&self) -> u64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.raw.raw[..8]);
        u64::from_be_bytes(b)
    }

    /// The interface id: the last 8 bytes, as a host integer.
    pub fn interface_id(&self) -> u64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.raw.raw[8..]);
        u64::from_be_bytes(b)
    }

    /// Whether this is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), as RoCE v2 GIDs of IPv4
    /// addresses are.
    pub fn is_ipv4_mapped(&self) -> bool {
        Ipv6Addr::from(*self).to_ipv4_mapped().is_some()
    }
}

impl From<Gid> for Ipv6Addr {
    fn from(gid: Gid) -> Ipv6Addr {
        Ipv6Addr::from(gid.raw.raw)
    }
}

impl From<Ipv6Addr> for Gid {
    fn from(addr: Ipv6Addr) -> Gid {
        Gid::from(addr.octets())
    }
}

/// As an IPv6 address: `fe80::5054:ff:fe12:3456`, `::ffff:192.0.2.1`.
impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Ipv6Addr::from(*self), f)
    }
}

/// `Gid(fe80::1)`.
impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

impl From<ffi::ibv_gid> for Gid {
    fn from(raw: ffi::ibv_gid) -> Gid {
        Gid { raw }
    }
}

impl From<Gid> for ffi::ibv_gid {
    fn from(gid: Gid) -> ffi::ibv_gid {
        gid.raw
    }
}

impl From<Gid> for [u8; 16] {
    fn from(gid: Gid) -> [u8; 16] {
        gid.raw.raw
    }
}

impl From<[u8; 16]> for Gid {
    fn from(raw: [u8; 16]) -> Gid {
        Gid {
            raw: ffi::ibv_gid { raw },
        }
    }
}

impl AsRef<ffi::ibv_gid> for Gid {
    fn as_ref(&self) -> &ffi::ibv_gid {
        &self.raw
    }
}

impl AsMut<ffi::ibv_gid> for Gid {
    fn as_mut(&mut self) -> &mut ffi::ibv_gid {
        &mut self.raw
    }
}

/// An entry of a port's GID table.
#[derive(Debug, Clone)]
pub struct GidEntry {
    /// The GID.
    pub gid: Gid,
    /// Its index in the table.
    pub gid_index: u32,
    /// The port, from 1.
    pub port_num: u32,
    /// Its type.
    pub gid_type: ffi::ibv_gid_type,
    /// The interface index of its network device (0 for none).
    pub ndev_ifindex: u32,
}

/// # Panics
///
/// Panics if `gid_type` is not an [`ffi::ibv_gid_type`] value, as `ibverbs` does.
impl From<ffi::ibv_gid_entry> for GidEntry {
    fn from(e: ffi::ibv_gid_entry) -> GidEntry {
        let gid_type = ffi::ibv_gid_type::from_raw(e.gid_type)
            .unwrap_or_else(|| panic!("unknown ibv_gid_type: {}", e.gid_type));
        GidEntry {
            gid: Gid::from(e.gid),
            gid_index: e.gid_index,
            port_num: e.port_num,
            gid_type,
            ndev_ifindex: e.ndev_ifindex,
        }
    }
}

impl GidEntry {
    /// The entry as uverbs' own API reads it ([`crate::GidEntry`]), converted as
    /// `From<ffi::ibv_gid_entry>` converts.
    ///
    /// # Panics
    ///
    /// `None` for an entry whose `gid_type` is not an [`ffi::ibv_gid_type`] value (`ibverbs`'
    /// `gid_table` panics on one; uverbs leaves the entry out).
    pub(crate) fn from_uverbs(e: &crate::GidEntry) -> Option<GidEntry> {
        ffi::ibv_gid_type::from_raw(e.gid_type)?;
        Some(GidEntry::from(ffi::ibv_gid_entry {
            gid: ffi::ibv_gid { raw: e.gid.bytes() },
            gid_index: e.gid_index,
            port_num: e.port_num,
            gid_type: e.gid_type,
            ndev_ifindex: e.ndev_ifindex,
        }))
    }

    /// The name of the entry's network device (`eth0`), or `None` if it has none, or if no
    /// device in `/sys/class/net` has its interface index (or the name is not UTF-8).
    pub fn netdev_name(&self) -> Option<String> {
        netdev_name_in(Path::new("/sys/class/net"), self.ndev_ifindex)
    }
}

/// The name of the network device with this interface index among those of `class_net` (a
/// `/sys/class/net`): the entry whose `ifindex` file holds it.
fn netdev_name_in(class_net: &Path, ifindex: u32) -> Option<String> {
    if ifindex == 0 {
        return None;
    }
    std::fs::read_dir(class_net)
        .ok()?
        .flatten()
        .find(|dev| {
            std::fs::read_to_string(dev.path().join("ifindex"))
                .is_ok_and(|text| text.trim().parse::<u32>() == Ok(ifindex))
        })
        .and_then(|dev| dev.file_name().into_string().ok())
}

/// The signalling rate of one lane of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PortSpeed {
    /// Single data rate: 2.5 Gb/s signalling, 2 Gb/s of data.
    Sdr,
    /// Double data rate: 4 Gb/s of data.
    Ddr,
    /// Quad data rate: 8 Gb/s of data (also 10GbE).
    Qdr,
    /// FDR10: 10 Gb/s of data.
    Fdr10,
    /// Fourteen data rate: 13.64 Gb/s of data.
    Fdr,
    /// Enhanced data rate: 25 Gb/s.
    Edr,
    /// High data rate: 50 Gb/s.
    Hdr,
    /// Next data rate: 100 Gb/s.
    Ndr,
    /// eXtended data rate: 200 Gb/s.
    Xdr,
    /// A value this crate does not know.
    Unknown(u32),
}

impl PortSpeed {
    /// Decodes `active_speed_ex` (or `active_speed`): one bit per speed.
    pub(crate) fn from_raw(raw: u32) -> PortSpeed {
        match raw {
            1 => PortSpeed::Sdr,
            2 => PortSpeed::Ddr,
            4 => PortSpeed::Qdr,
            8 => PortSpeed::Fdr10,
            16 => PortSpeed::Fdr,
            32 => PortSpeed::Edr,
            64 => PortSpeed::Hdr,
            128 => PortSpeed::Ndr,
            256 => PortSpeed::Xdr,
            other => PortSpeed::Unknown(other),
        }
    }

    /// The data rate of one lane, in Gb/s, or `None` for an unknown speed.
    pub fn lane_gbps(self) -> Option<f64> {
        Some(match self {
            PortSpeed::Sdr => 2.0,
            PortSpeed::Ddr => 4.0,
            PortSpeed::Qdr => 8.0,
            PortSpeed::Fdr10 => 10.0,
            PortSpeed::Fdr => 13.64,
            PortSpeed::Edr => 25.0,
            PortSpeed::Hdr => 50.0,
            PortSpeed::Ndr => 100.0,
            PortSpeed::Xdr => 200.0,
            PortSpeed::Unknown(_) => return None,
        })
    }
}

/// `SDR`, `DDR`, ..., `XDR`; `unknown (N)`.
impl fmt::Display for PortSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortSpeed::Sdr => "SDR",
            PortSpeed::Ddr => "DDR",
            PortSpeed::Qdr => "QDR",
            PortSpeed::Fdr10 => "FDR10",
            PortSpeed::Fdr => "FDR",
            PortSpeed::Edr => "EDR",
            PortSpeed::Hdr => "HDR",
            PortSpeed::Ndr => "NDR",
            PortSpeed::Xdr => "XDR",
            PortSpeed::Unknown(raw) => return write!(f, "unknown ({raw})"),
        })
    }
}

/// The number of lanes of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PortWidth {
    /// One lane.
    Width1x,
    /// Four lanes.
    Width4x,
    /// Eight lanes.
    Width8x,
    /// Twelve lanes.
    Width12x,
    /// Two lanes.
    Width2x,
    /// A value this crate does not know.
    Unknown(u8),
}

impl PortWidth {
    /// Decodes `active_width`: one bit per width.
    pub(crate) fn from_raw(raw: u8) -> PortWidth {
        match raw {
            1 => PortWidth::Width1x,
            2 => PortWidth::Width4x,
            4 => PortWidth::Width8x,
            8 => PortWidth::Width12x,
            16 => PortWidth::Width2x,
            other => PortWidth::Unknown(other),
        }
    }

    /// The number of lanes, or `None` for an unknown width.
    pub fn lanes(self) -> Option<u8> {
        match self {
            PortWidth::Width1x => Some(1),
            PortWidth::Width2x => Some(2),
            PortWidth::Width4x => Some(4),
            PortWidth::Width8x => Some(8),
            PortWidth::Width12x => Some(12),
            PortWidth::Unknown(_) => None,
        }
    }
}

/// `4x`; `unknown (N)`.
impl fmt::Display for PortWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortWidth::Width1x => "1x",
            PortWidth::Width4x => "4x",
            PortWidth::Width8x => "8x",
            PortWidth::Width12x => "12x",
            PortWidth::Width2x => "2x",
            PortWidth::Unknown(raw) => return write!(f, "unknown ({raw})"),
        })
    }
}

/// The link layer of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkLayer {
    /// Not reported (older kernels; InfiniBand).
    Unspecified,
    /// InfiniBand.
    InfiniBand,
    /// Ethernet (RoCE).
    Ethernet,
    /// A value this crate does not know.
    Unknown(u8),
}

impl LinkLayer {
    /// Decodes `link_layer` (`IBV_LINK_LAYER_*`).
    pub(crate) fn from_raw(raw: u8) -> LinkLayer {
        match raw {
            0 => LinkLayer::Unspecified,
            1 => LinkLayer::InfiniBand,
            2 => LinkLayer::Ethernet,
            other => LinkLayer::Unknown(other),
        }
    }
}

/// `unspecified`, `InfiniBand`, `Ethernet`; `unknown (N)`.
impl fmt::Display for LinkLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkLayer::Unspecified => "unspecified",
            LinkLayer::InfiniBand => "InfiniBand",
            LinkLayer::Ethernet => "Ethernet",
            LinkLayer::Unknown(raw) => return write!(f, "unknown ({raw})"),
        })
    }
}

/// The physical state of a port's link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PhysicalState {
    /// Sleeping.
    Sleep,
    /// Polling for a peer.
    Polling,
    /// Disabled.
    Disabled,
    /// Configuring and training the link.
    PortConfigurationTraining,
    /// The link is up.
    LinkUp,
    /// Recovering from a link error.
    LinkErrorRecovery,
    /// In a physical test mode.
    PhyTest,
    /// A value this crate does not know.
    Unknown(u8),
}

impl PhysicalState {
    /// Decodes `phys_state` (1 to 7).
    pub(crate) fn from_raw(raw: u8) -> PhysicalState {
        match raw {
            1 => PhysicalState::Sleep,
            2 => PhysicalState::Polling,
            3 => PhysicalState::Disabled,
            4 => PhysicalState::PortConfigurationTraining,
            5 => PhysicalState::LinkUp,
            6 => PhysicalState::LinkErrorRecovery,
            7 => PhysicalState::PhyTest,
            other => PhysicalState::Unknown(other),
        }
    }
}

/// The variant's name (`LinkUp`); `unknown (N)`.
impl fmt::Display for PhysicalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PhysicalState::Sleep => "Sleep",
            PhysicalState::Polling => "Polling",
            PhysicalState::Disabled => "Disabled",
            PhysicalState::PortConfigurationTraining => "PortConfigurationTraining",
            PhysicalState::LinkUp => "LinkUp",
            PhysicalState::LinkErrorRecovery => "LinkErrorRecovery",
            PhysicalState::PhyTest => "PhyTest",
            PhysicalState::Unknown(raw) => return write!(f, "unknown ({raw})"),
        })
    }
}

/// What a peer needs to connect to a queue pair: its number, its port's LID and (for RoCE, or
/// routed InfiniBand) its GID.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct QueuePairEndpoint {
    /// The queue pair number.
    pub num: u32,
    /// The port's LID.
    pub lid: u16,
    /// The GID, if a GID index was set on the builder.
    pub gid: Option<Gid>,
}

/// A piece of a peer's registered memory: the target of RDMA reads, writes and atomics.
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
pub struct RemoteMemorySlice {
    /// The start address, in the peer's address space.
    pub addr: u64,
    /// The length in bytes.
    pub len: usize,
    /// The remote key of the memory region it lies in.
    pub rkey: u32,
}

impl RemoteMemorySlice {
    /// The part of this slice that `bounds` selects, relative to its start (`slice(8..16)` is
    /// bytes 8 to 15).
    ///
    /// # Panics
    ///
    /// Panics if `bounds` is empty or reaches outside this slice, or if a bound or the new
    /// address overflows.
    pub fn slice(&self, bounds: impl RangeBounds<usize>) -> Self {
        let (addr, len) = sub_range(self.addr, self.len, bounds);
        RemoteMemorySlice {
            addr,
            len,
            rkey: self.rkey,
        }
    }
}

/// The address and length of the part of `addr..addr + len` that `bounds` selects, with
/// `ibverbs`' bound rules (`Excluded(i)` as a start is `i + 1`, `Included(i)` as an end is `i + 1`,
/// unbounded is `0` or `len`), in checked arithmetic.
///
/// # Panics
///
/// Panics if the range is empty, if it ends past `len`, or on overflow. Local slices
/// (`MemoryRegion::slice`, `LocalMemorySlice::slice`) take their parts with it too.
pub(crate) fn sub_range(addr: u64, len: usize, bounds: impl RangeBounds<usize>) -> (u64, usize) {
    let start = match bounds.start_bound() {
        Bound::Included(&i) => i,
        Bound::Excluded(&i) => i
            .checked_add(1)
            .unwrap_or_else(|| panic!("slice start bound Excluded({i}) overflows usize")),
        Bound::Unbounded => 0,
    };
    let end = match bounds.end_bound() {
        Bound::Included(&i) => i
            .checked_add(1)
            .unwrap_or_else(|| panic!("slice end bound Included({i}) overflows usize")),
        Bound::Excluded(&i) => i,
        Bound::Unbounded => len,
    };
    assert!(
        start <= len && end <= len,
        "slice range {start}..{end} is out of bounds of a slice of {len} bytes"
    );
    assert!(
        start < end,
        "slice range {start}..{end} is empty (a memory slice has at least one byte)"
    );
    let new_addr = u64::try_from(start)
        .ok()
        .and_then(|start| addr.checked_add(start))
        .unwrap_or_else(|| panic!("slice address {addr:#x} + {start} overflows u64"));
    (new_addr, end - start)
}

/// The key that lets a peer reach a memory region (what `MemoryRegion::rkey` returns); only the
/// crate makes one.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RemoteKey {
    /// The key.
    pub key: u32,
}

impl RemoteKey {
    /// The key `key`.
    pub(crate) fn new(key: u32) -> RemoteKey {
        RemoteKey { key }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_is_big_endian() {
        let g = Guid::from(0x0002_c903_00a0_7c8e_u64);
        assert_eq!(g.to_string(), "0002:c903:00a0:7c8e");
        assert_eq!(format!("{g:?}"), "Guid(0002:c903:00a0:7c8e)");
        assert_eq!(g.oui(), 0x0002c9);
        assert_eq!(u64::from(g), 0x0002_c903_00a0_7c8e);
        assert_eq!(Guid::from(0x1234_5678_9abc_def0).oui(), 0x123456);
        assert_eq!(
            Guid::from_bytes([0x00, 0x02, 0xc9, 0x03, 0x00, 0xa0, 0x7c, 0x8e]),
            g
        );
        // The __be64 of C: the integer whose bytes in memory are the GUID's.
        assert_eq!(
            *<Guid as AsRef<u64>>::as_ref(&g),
            u64::from_ne_bytes([0x00, 0x02, 0xc9, 0x03, 0x00, 0xa0, 0x7c, 0x8e])
        );
        assert!(!g.is_reserved());
        assert!(Guid::default().is_reserved());
        assert_eq!(Guid::default().to_string(), "0000:0000:0000:0000");
    }

    #[test]
    fn gid_views() {
        let g = Gid::from("fe80::5054:ff:fe12:3456".parse::<Ipv6Addr>().unwrap());
        assert_eq!(g.to_string(), "fe80::5054:ff:fe12:3456");
        assert_eq!(format!("{g:?}"), "Gid(fe80::5054:ff:fe12:3456)");
        assert_eq!(g.subnet_prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(g.interface_id(), 0x5054_00ff_fe12_3456);
        assert!(!g.is_ipv4_mapped());

        let v4 = Gid::from("::ffff:192.0.2.1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(v4.to_string(), "::ffff:192.0.2.1");
        assert!(v4.is_ipv4_mapped());
        // IPv4-compatible (::a.b.c.d) is not IPv4-mapped.
        let compat = Gid::from("::c000:201".parse::<Ipv6Addr>().unwrap());
        assert!(!compat.is_ipv4_mapped());

        let bytes: [u8; 16] = g.into();
        assert_eq!(Gid::from(bytes), g);
        let raw = ffi::ibv_gid::from(g);
        assert_eq!(raw.raw, bytes);
        assert_eq!(Gid::from(raw), g);
        assert_eq!(Ipv6Addr::from(g), Ipv6Addr::from(bytes));

        let mut m = Gid::default();
        assert_eq!(m.as_ref().raw, [0; 16]);
        m.as_mut().raw[15] = 1;
        assert_eq!(m.to_string(), "::1");
        assert_eq!(std::mem::size_of::<Gid>(), 16);
    }

    #[test]
    fn gid_entry_from_ffi() {
        let e = GidEntry::from(ffi::ibv_gid_entry {
            gid: ffi::ibv_gid { raw: [1; 16] },
            gid_index: 3,
            port_num: 1,
            gid_type: 2,
            ndev_ifindex: 0,
        });
        assert_eq!(e.gid, Gid::from([1; 16]));
        assert_eq!((e.gid_index, e.port_num), (3, 1));
        assert_eq!(e.gid_type, ffi::ibv_gid_type::IBV_GID_TYPE_ROCE_V2);
        assert_eq!(e.netdev_name(), None, "ifindex 0 is no device");
    }

    #[test]
    fn gid_entry_from_uverbs() {
        let e = GidEntry::from_uverbs(&crate::GidEntry {
            gid: crate::Gid::from_bytes([2; 16]),
            gid_index: 1,
            port_num: 1,
            gid_type: 1,
            ndev_ifindex: 5,
        })
        .unwrap();
        assert_eq!(e.gid, Gid::from([2; 16]));
        assert_eq!((e.gid_index, e.port_num, e.ndev_ifindex), (1, 1, 5));
        assert_eq!(e.gid_type, ffi::ibv_gid_type::IBV_GID_TYPE_ROCE_V1);
    }

    #[test]
    fn gid_table_leaves_out_entries_of_unknown_type() {
        let e = crate::GidEntry {
            gid: crate::Gid::from_bytes([2; 16]),
            gid_index: 1,
            port_num: 1,
            gid_type: 3,
            ndev_ifindex: 5,
        };
        assert!(GidEntry::from_uverbs(&e).is_none());
    }

    #[test]
    #[should_panic(expected = "unknown ibv_gid_type: 3")]
    fn gid_entry_of_unknown_type_panics() {
        let _ = GidEntry::from(ffi::ibv_gid_entry {
            gid_type: 3,
            ..Default::default()
        });
    }

    #[test]
    fn netdev_names_come_from_sysfs() {
        let root = std::env::temp_dir().join(format!("uverbs-next-netdev-{}", std::process::id()));
        for (name, index) in [("lo", "1\n"), ("eth7", "42\n"), ("bad", "x\n")] {
            std::fs::create_dir_all(root.join(name)).unwrap();
            std::fs::write(root.join(name).join("ifindex"), index).unwrap();
        }
        assert_eq!(netdev_name_in(&root, 42).as_deref(), Some("eth7"));
        assert_eq!(netdev_name_in(&root, 1).as_deref(), Some("lo"));
        assert_eq!(netdev_name_in(&root, 7), None);
        assert_eq!(netdev_name_in(&root, 0), None);
        assert_eq!(netdev_name_in(&root.join("missing"), 1), None);
        std::fs::remove_dir_all(&root).unwrap();

        // The real table, where there is one: loopback's name is found by its index.
        if let Ok(text) = std::fs::read_to_string("/sys/class/net/lo/ifindex") {
            let index: u32 = text.trim().parse().unwrap();
            let entry = GidEntry {
                gid: Gid::default(),
                gid_index: 0,
                port_num: 1,
                gid_type: ffi::ibv_gid_type::IBV_GID_TYPE_ROCE_V2,
                ndev_ifindex: index,
            };
            assert_eq!(entry.netdev_name().as_deref(), Some("lo"));
        }
    }

    #[test]
    fn port_speed() {
        let all = [
            (1, PortSpeed::Sdr, "SDR", 2.0),
            (2, PortSpeed::Ddr, "DDR", 4.0),
            (4, PortSpeed::Qdr, "QDR", 8.0),
            (8, PortSpeed::Fdr10, "FDR10", 10.0),
            (16, PortSpeed::Fdr, "FDR", 13.64),
            (32, PortSpeed::Edr, "EDR", 25.0),
            (64, PortSpeed::Hdr, "HDR", 50.0),
            (128, PortSpeed::Ndr, "NDR", 100.0),
            (256, PortSpeed::Xdr, "XDR", 200.0),
        ];
        for (raw, speed, text, gbps) in all {
            assert_eq!(PortSpeed::from_raw(raw), speed);
            assert_eq!(speed.to_string(), text);
            assert_eq!(speed.lane_gbps(), Some(gbps));
        }
        assert_eq!(PortSpeed::from_raw(3), PortSpeed::Unknown(3));
        assert_eq!(PortSpeed::Unknown(3).to_string(), "unknown (3)");
        assert_eq!(PortSpeed::Unknown(3).lane_gbps(), None);
    }

    #[test]
    fn port_width() {
        let all = [
            (1, PortWidth::Width1x, "1x"),
            (2, PortWidth::Width4x, "4x"),
            (4, PortWidth::Width8x, "8x"),
            (8, PortWidth::Width12x, "12x"),
            (16, PortWidth::Width2x, "2x"),
        ];
        for (raw, width, text) in all {
            assert_eq!(PortWidth::from_raw(raw), width);
            assert_eq!(width.to_string(), text);
        }
        assert_eq!(PortWidth::Width4x.lanes(), Some(4));
        assert_eq!(PortWidth::from_raw(0), PortWidth::Unknown(0));
        assert_eq!(PortWidth::Unknown(0).lanes(), None);
        assert_eq!(PortWidth::Unknown(32).to_string(), "unknown (32)");
    }

    #[test]
    fn link_layer_and_physical_state() {
        assert_eq!(LinkLayer::from_raw(0), LinkLayer::Unspecified);
        assert_eq!(LinkLayer::from_raw(1), LinkLayer::InfiniBand);
        assert_eq!(LinkLayer::from_raw(2), LinkLayer::Ethernet);
        assert_eq!(LinkLayer::from_raw(9), LinkLayer::Unknown(9));
        let texts: Vec<String> = (0..4).map(|r| LinkLayer::from_raw(r).to_string()).collect();
        assert_eq!(
            texts,
            ["unspecified", "InfiniBand", "Ethernet", "unknown (3)"]
        );

        let names = [
            "unknown (0)",
            "Sleep",
            "Polling",
            "Disabled",
            "PortConfigurationTraining",
            "LinkUp",
            "LinkErrorRecovery",
            "PhyTest",
            "unknown (8)",
        ];
        for (raw, name) in names.iter().enumerate() {
            assert_eq!(PhysicalState::from_raw(raw as u8).to_string(), *name);
        }
        assert_eq!(PhysicalState::from_raw(5), PhysicalState::LinkUp);
    }

    const R: RemoteMemorySlice = RemoteMemorySlice {
        addr: 0x1000,
        len: 64,
        rkey: 7,
    };

    #[test]
    fn remote_slice_bounds() {
        let part = |addr, len| RemoteMemorySlice { addr, len, rkey: 7 };
        assert_eq!(R.slice(..), R);
        assert_eq!(R.slice(8..16), part(0x1008, 8));
        assert_eq!(R.slice(8..=16), part(0x1008, 9));
        assert_eq!(R.slice(..4), part(0x1000, 4));
        assert_eq!(R.slice(60..), part(0x103c, 4));
        assert_eq!(R.slice(63..64), part(0x103f, 1));
        assert_eq!(
            R.slice((Bound::Excluded(7), Bound::Excluded(9))),
            part(0x1008, 1)
        );
        assert_eq!(R.slice(8..16).slice(4..), part(0x100c, 4));
        assert_eq!(RemoteKey::new(9).key, 9);
    }

    #[test]
    #[should_panic(expected = "is empty")]
    fn remote_slice_empty_panics() {
        let _ = R.slice(8..8);
    }

    #[test]
    #[should_panic(expected = "is empty")]
    fn remote_slice_reversed_panics() {
        #[allow(clippy::reversed_empty_ranges)]
        let _ = R.slice(9..8);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn remote_slice_past_the_end_panics() {
        let _ = R.slice(60..65);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn remote_slice_start_past_the_end_panics() {
        let _ = R.slice(65..);
    }

    #[test]
    #[should_panic(expected = "overflows usize")]
    fn remote_slice_end_overflow_panics() {
        let _ = R.slice(0..=usize::MAX);
    }

    #[test]
    #[should_panic(expected = "overflows usize")]
    fn remote_slice_start_overflow_panics() {
        let _ = R.slice((Bound::Excluded(usize::MAX), Bound::Unbounded));
    }

    #[test]
    #[should_panic(expected = "overflows u64")]
    fn remote_slice_address_overflow_panics() {
        let top = RemoteMemorySlice {
            addr: u64::MAX - 1,
            len: 16,
            rkey: 0,
        };
        let _ = top.slice(4..);
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_uses_the_raw_field() {
        use serde::de::value::{Error, MapDeserializer, SeqDeserializer};
        use serde::de::IntoDeserializer;

        let gid_bytes: Vec<u8> = (0..16).collect();
        let map = MapDeserializer::<_, Error>::new(std::iter::once((
            "raw",
            SeqDeserializer::<_, Error>::new(gid_bytes.iter().copied()),
        )));
        let gid = Gid::deserialize(map).unwrap();
        assert_eq!(
            <[u8; 16]>::from(gid),
            *<&[u8; 16]>::try_from(&gid_bytes[..]).unwrap()
        );

        let guid_bytes = [0u8, 2, 0xc9, 3, 0, 0xa0, 0x7c, 0x8e];
        let map = MapDeserializer::<_, Error>::new(std::iter::once((
            "raw",
            SeqDeserializer::<_, Error>::new(guid_bytes.into_iter()),
        )));
        assert_eq!(
            Guid::deserialize(map).unwrap(),
            Guid::from(0x0002_c903_00a0_7c8e)
        );

        let wrong =
            MapDeserializer::<_, Error>::new(std::iter::once(("bytes", 0u8.into_deserializer())));
        assert!(Guid::deserialize(wrong).is_err());
    }
}
