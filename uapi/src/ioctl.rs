//! The uverbs ioctl framing: `rdma/rdma_user_ioctl_cmds.h`.
//!
//! [`ib_uverbs_ioctl_hdr`] followed by [`ib_uverbs_attr`] entries is the argument of
//! `RDMA_VERBS_IOCTL = _IOWR(RDMA_IOCTL_MAGIC, RDMA_VERBS_IOCTL_NR, struct ib_uverbs_ioctl_hdr)`
//! (encode the request itself with `nix`). The id-namespace constants (`UVERBS_ID_NS_*`,
//! `UVERBS_UDATA_DRIVER_DATA_*`, `UVERBS_ATTR_UHW_IN/OUT`) of `rdma/ib_user_ioctl_cmds.h` also live here.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// ioctl(2) type byte (magic) of `RDMA_VERBS_IOCTL`.
pub const RDMA_IOCTL_MAGIC: u8 = 0x1b;

// enum (anonymous)
/// Attribute flag (`ib_uverbs_attr.flags`): `MANDATORY` (user input).
pub const UVERBS_ATTR_F_MANDATORY: u16 = 1 << 0;
/// Attribute flag (`ib_uverbs_attr.flags`): `VALID_OUTPUT` (valid output bit should be ignored and considered set in mandatory fields. This bit is kernel output).
pub const UVERBS_ATTR_F_VALID_OUTPUT: u16 = 1 << 1;

/// Mask of the namespace bits of object/method/attr ids.
pub const UVERBS_ID_NS_MASK: u16 = 0xF000;

/// Shift of the namespace bits of object/method/attr ids.
pub const UVERBS_ID_NS_SHIFT: u32 = 12;

/// Namespace number of driver-specific ids.
pub const UVERBS_UDATA_DRIVER_DATA_NS: u16 = 1;

/// First driver-specific id (`1 << UVERBS_ID_NS_SHIFT` = 0x1000); newer kernels call it `UVERBS_ID_DRIVER_NS`.
pub const UVERBS_UDATA_DRIVER_DATA_FLAG: u16 = 1 << UVERBS_ID_NS_SHIFT;

// enum (anonymous)
/// Driver-data attribute id accepted by every method with driver data: `IN`.
pub const UVERBS_ATTR_UHW_IN: u16 = UVERBS_UDATA_DRIVER_DATA_FLAG;
/// Driver-data attribute id accepted by every method with driver data: `OUT`.
pub const UVERBS_ATTR_UHW_OUT: u16 = 0x1001;

/// ioctl(2) number (`_IOC_NR`) of `RDMA_VERBS_IOCTL = _IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr)`.
pub const RDMA_VERBS_IOCTL_NR: u8 = 1;

/// First driver-specific id (0x1000): newer kernels' name for `UVERBS_UDATA_DRIVER_DATA_FLAG`.
///
/// Not in the 6.1 header (added by a later rename, same value); not checked by the C layout test.
pub const UVERBS_ID_DRIVER_NS: u16 = UVERBS_UDATA_DRIVER_DATA_FLAG;

/// First driver attribute id after `UVERBS_ATTR_UHW_IN`/`UVERBS_ATTR_UHW_OUT` (0x1002).
///
/// Not in the 6.1 header (newer kernels define it next to the UHW ids); not checked by the C layout test.
pub const UVERBS_ID_DRIVER_NS_WITH_UHW: u16 = UVERBS_ATTR_UHW_OUT + 1;

/// One attribute of an ioctl command (16 bytes): id, payload length, flags and inline value / pointer / handle / fd.
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_attr {
    /// Attribute id (`UVERBS_ATTR_*`, or driver id with bit 12 set).
    pub attr_id: u16,
    /// Payload length in bytes (0 for IDR/FD attributes); payloads up to 8 bytes of PTR_IN attrs are inline in `data`.
    pub len: u16,
    /// `UVERBS_ATTR_F_*`; the kernel ORs in `UVERBS_ATTR_F_VALID_OUTPUT`.
    pub flags: u16,
    /// C union `attr_data`: `enum_data { u8 elem_id; u8 reserved }` (byte 0, byte 1) or `u16 reserved`; must be 0 except for ENUM_IN attrs. See [`ib_uverbs_attr::enum_elem_id`].
    pub attr_data: u16,
    /// C anonymous union `data`/`data_s64`: inline value, user pointer, object handle or fd. See [`ib_uverbs_attr::data_s64`].
    pub data: u64,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_attr>() == 16);
const _: () = assert!(core::mem::align_of::<ib_uverbs_attr>() == 8);

/// Header of the `RDMA_VERBS_IOCTL` command buffer (24 bytes); followed by `num_attrs` [`ib_uverbs_attr`] entries (the C flexible array `attrs[]` is omitted).
///
/// C flexible array member(s) omitted: `attrs` (at offset 24).
#[repr(C)]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout, Default,
)]
pub struct ib_uverbs_ioctl_hdr {
    /// Total bytes: 24 + 16 * `num_attrs`.
    pub length: u16,
    /// Object id (`UVERBS_OBJECT_*` or driver object).
    pub object_id: u16,
    /// Method id (`UVERBS_METHOD_*` or driver method).
    pub method_id: u16,
    /// Number of attributes that follow.
    pub num_attrs: u16,
    /// Reserved; must be 0 (else EPROTONOSUPPORT).
    pub reserved1: u64,
    /// The device's `RDMA_DRIVER_*` id (else EINVAL).
    pub driver_id: u32,
    /// Reserved; must be 0 (else EPROTONOSUPPORT).
    pub reserved2: u32,
}

const _: () = assert!(core::mem::size_of::<ib_uverbs_ioctl_hdr>() == 24);
const _: () = assert!(core::mem::align_of::<ib_uverbs_ioctl_hdr>() == 8);

impl ib_uverbs_attr {
    /// Reads `attr_data.enum_data.elem_id` (byte 0 of `attr_data`): the element of an ENUM_IN attribute.
    pub const fn enum_elem_id(&self) -> u8 {
        self.attr_data.to_ne_bytes()[0]
    }

    /// Sets `attr_data.enum_data.elem_id` and clears `attr_data.enum_data.reserved`.
    pub fn set_enum_elem_id(&mut self, elem_id: u8) {
        self.attr_data = u16::from_ne_bytes([elem_id, 0]);
    }

    /// Reads `data_s64`, the signed view of `data` used by FD attributes.
    pub const fn data_s64(&self) -> i64 {
        self.data as i64
    }

    /// Writes `data_s64`, the signed view of `data` used by FD attributes.
    pub fn set_data_s64(&mut self, value: i64) {
        self.data = value as u64;
    }
}
