//! GIDs and GUIDs as the public API shows them, with libibverbs' `ibv_gid` union beside them.
//!
//! They live here rather than in the public crate because `Gid` must lend itself out as an `ibv_gid`
//! (as `ibverbs` 0.9.2's does), which takes a reference cast, and all `unsafe` code lives in this
//! crate. Both are 8-byte aligned so that the casts are sound (`ibverbs`' own align-1 `Gid` made them
//! misaligned).

use std::fmt;

/// The two 64-bit halves of a GID (`ibv_gid.global`), each in network byte order.
#[repr(C)]
#[derive(Debug, Default, Copy, Clone)]
pub struct ibv_gid_global {
    /// Subnet prefix, network byte order.
    pub subnet_prefix: u64,
    /// Interface id, network byte order.
    pub interface_id: u64,
}

/// A GID as libibverbs has it (`union ibv_gid`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Copy, Clone)]
pub union ibv_gid {
    /// The 16 bytes.
    pub raw: [u8; 16],
    /// The two halves.
    pub global: ibv_gid_global,
}

impl ibv_gid {
    /// The 16 bytes (reading the union safely: every bit pattern is valid for both members).
    pub fn bytes(&self) -> [u8; 16] {
        // SAFETY: both members are 16 bytes of plain integers with no invalid bit patterns.
        unsafe { self.raw }
    }
}

impl Default for ibv_gid {
    fn default() -> Self {
        ibv_gid { raw: [0; 16] }
    }
}

impl fmt::Debug for ibv_gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ibv_gid({})", Gid::from_bytes(self.bytes()))
    }
}

/// A 128-bit global identifier, in network byte order.
///
/// Converts to and from [`ibv_gid`] (also by reference, as `ibverbs` does), and serializes (feature
/// `serde`) as a struct with one field, `raw`, which is `ibverbs`' wire format.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[repr(C, align(8))]
pub struct Gid {
    raw: [u8; 16],
}

const _: () = assert!(std::mem::size_of::<Gid>() == std::mem::size_of::<ibv_gid>());
const _: () = assert!(std::mem::align_of::<Gid>() == std::mem::align_of::<ibv_gid>());

impl Gid {
    /// A GID from its bytes.
    pub const fn from_bytes(raw: [u8; 16]) -> Gid {
        Gid { raw }
    }

    /// The bytes.
    pub const fn bytes(&self) -> [u8; 16] {
        self.raw
    }

    /// The subnet prefix: the first 8 bytes, as a host number.
    pub fn subnet_prefix(&self) -> u64 {
        u64::from_be_bytes(self.raw[..8].try_into().expect("8 bytes"))
    }

    /// The interface id: the last 8 bytes, as a host number.
    pub fn interface_id(&self) -> u64 {
        u64::from_be_bytes(self.raw[8..].try_into().expect("8 bytes"))
    }

    /// Whether this is the all-zero GID of an empty table slot.
    pub fn is_zero(&self) -> bool {
        self.raw == [0; 16]
    }

    /// The IPv6 address this GID is (RoCE GIDs are IP addresses).
    pub fn to_ipv6(&self) -> std::net::Ipv6Addr {
        std::net::Ipv6Addr::from(self.raw)
    }
}

impl From<ibv_gid> for Gid {
    fn from(gid: ibv_gid) -> Gid {
        Gid { raw: gid.bytes() }
    }
}

impl From<Gid> for ibv_gid {
    fn from(gid: Gid) -> ibv_gid {
        ibv_gid { raw: gid.raw }
    }
}

impl AsRef<ibv_gid> for Gid {
    fn as_ref(&self) -> &ibv_gid {
        // SAFETY: `Gid` and `ibv_gid` have the same size and alignment (asserted above), every bit
        // pattern is valid for both, and the lifetime of the result is that of `self`.
        unsafe { &*(self as *const Gid).cast::<ibv_gid>() }
    }
}

impl AsMut<ibv_gid> for Gid {
    fn as_mut(&mut self) -> &mut ibv_gid {
        // SAFETY: as for `as_ref`; any bytes written through the union are a valid `Gid`.
        unsafe { &mut *(self as *mut Gid).cast::<ibv_gid>() }
    }
}

impl From<[u8; 16]> for Gid {
    fn from(raw: [u8; 16]) -> Gid {
        Gid { raw }
    }
}

impl From<std::net::Ipv6Addr> for Gid {
    fn from(a: std::net::Ipv6Addr) -> Gid {
        Gid { raw: a.octets() }
    }
}

/// Formats as sysfs and `ibv_devinfo` (for IB and RoCE v1 GIDs) do: eight groups of four hex digits.
impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, pair) in self.raw.chunks(2).enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{:02x}{:02x}", pair[0], pair[1])?;
        }
        Ok(())
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

/// A 64-bit globally unique identifier (node GUID, system image GUID, port GUID).
///
/// Stored in network byte order; converts to and from the host number whose big-endian bytes are the
/// GUID. `AsRef<u64>` lends out the raw big-endian value (`__be64`), as in `ibverbs`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[repr(C, align(8))]
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

    /// Whether the GUID is all zeroes, which is reserved.
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

impl AsRef<u64> for Guid {
    fn as_ref(&self) -> &u64 {
        // SAFETY: `Guid` is 8 bytes with 8-byte alignment, and every bit pattern is a valid u64.
        unsafe { &*(self as *const Guid).cast::<u64>() }
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

/// The Internet checksum of an IPv4 header (RFC 791: the ones' complement of the ones'-complement
/// sum of its 16-bit words). Over a header whose checksum field is zero it is the value to store
/// there; over a header with a valid checksum it is 0.
pub fn ipv4_checksum(header: &[u8; 20]) -> u16 {
    let mut sum: u32 = header
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
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
        assert_eq!(Guid::from_be(0x0002_c903_0031_7f20u64.to_be()), g);
        assert_eq!(*g.as_ref(), 0x0002_c903_0031_7f20u64.to_be());
        assert!(!g.is_reserved());
        assert!(Guid::default().is_reserved());
    }

    #[test]
    fn gid_views() {
        let mut g = Gid::from("fe80::1".parse::<std::net::Ipv6Addr>().unwrap());
        assert_eq!(g.to_string(), "fe80:0000:0000:0000:0000:0000:0000:0001");
        assert_eq!(g.subnet_prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(g.interface_id(), 1);
        let r: &ibv_gid = g.as_ref();
        assert_eq!(r.bytes()[0], 0xfe);
        let mut bytes = g.bytes();
        bytes[15] = 2;
        *g.as_mut() = ibv_gid { raw: bytes };
        assert_eq!(g.interface_id(), 2);
        let u: ibv_gid = g.into();
        assert_eq!(Gid::from(u), g);
    }

    #[test]
    fn ipv4_checksum_of_a_known_header() {
        // The classic example: 192.168.0.1 -> 192.168.0.199, UDP, checksum 0xb861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(ipv4_checksum(&h), 0);
    }
}
