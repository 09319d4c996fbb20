//! Devices and contexts of the `next` API: [`devices`], [`DeviceList`], [`Device`], [`Context`]
//! and the attributes its queries return.

use std::borrow::Cow;
use std::ffi::CStr;
use std::fmt;
use std::ops::Deref;
use std::time::Duration;

use super::cq::{CompletionChannel, CompletionQueueBuilder};
use super::error::{Error, Result};
use super::ffi;
use super::pd::ProtectionDomain;
use super::values::{Gid, GidEntry, Guid, LinkLayer, PhysicalState, PortSpeed, PortWidth};

/// The port every object of this API is on unless said otherwise, as in `ibverbs`.
pub(crate) const PORT_NUM: u8 = 1;

/// The RDMA devices of this machine (`ibv_get_device_list`): the kernel's, or the mlx5 model's
/// where `UVERBS_MODEL_SOCKET` names a model daemon.
pub fn devices() -> Result<DeviceList> {
    crate::devices()
        .map(DeviceList)
        .map_err(|e| Error::from_uverbs(e, Error::GetDeviceList))
}

/// The devices [`devices`] found.
#[must_use]
pub struct DeviceList(crate::DeviceList);

impl fmt::Debug for DeviceList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl DeviceList {
    /// The devices, in the kernel's order.
    pub fn iter(&self) -> DeviceListIter<'_> {
        DeviceListIter(self.0.iter())
    }

    /// How many devices there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The device at `index`.
    pub fn get(&self, index: usize) -> Option<Device<'_>> {
        self.0.get(index).map(Device)
    }
}

impl<'a> IntoIterator for &'a DeviceList {
    type Item = Device<'a>;
    type IntoIter = DeviceListIter<'a>;

    fn into_iter(self) -> DeviceListIter<'a> {
        self.iter()
    }
}

/// An iterator over a [`DeviceList`].
#[derive(Debug)]
pub struct DeviceListIter<'iter>(crate::DeviceListIter<'iter>);

impl<'iter> Iterator for DeviceListIter<'iter> {
    type Item = Device<'iter>;

    fn next(&mut self) -> Option<Device<'iter>> {
        self.0.next().map(Device)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

/// An RDMA device of a [`DeviceList`].
pub struct Device<'devlist>(crate::Device<'devlist>);

impl fmt::Debug for Device<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.name())
            .field("guid", &self.guid().ok())
            .finish()
    }
}

impl<'devlist> Device<'devlist> {
    /// Opens the device. As in `ibverbs`, port 1 must be ACTIVE or ARMED
    /// ([`Error::PortNotActive`]).
    pub fn open(&self) -> Result<Context> {
        let ctx = self
            .0
            .open()
            .map_err(|e| Error::from_uverbs(e, Error::OpenDevice))?;
        let ctx = Context { ctx };
        ctx.active_port(PORT_NUM)?;
        Ok(ctx)
    }

    /// The device's name (`rxe0`, `mlx5_0`).
    pub fn name(&self) -> Option<&'devlist CStr> {
        self.0.name()
    }

    /// The node GUID.
    pub fn guid(&self) -> Result<Guid> {
        let guid = self
            .0
            .guid()
            .map_err(|e| Error::from_uverbs(e, Error::DeviceGuid))?;
        Ok(Guid::from_bytes(guid.bytes()))
    }

    /// The kernel's index of the device; [`Error::DeviceIndexUnavailable`] where the kernel did
    /// not say.
    pub fn index(&self) -> Result<i32> {
        self.0.index().map_err(|_| Error::DeviceIndexUnavailable)
    }

    /// The transport: InfiniBand's for every device uverbs drives (RoCE is the InfiniBand
    /// transport over Ethernet).
    pub fn transport_type(&self) -> ffi::ibv_transport_type {
        ffi::ibv_transport_type::IBV_TRANSPORT_IB
    }
}

/// An open device (`ibv_context`); cheap to clone, and kept alive by everything made from it.
#[must_use]
#[derive(Clone)]
pub struct Context {
    pub(crate) ctx: crate::Context,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Context").field(&self.ctx.name()).finish()
    }
}

/// A context of uverbs' own API, in this module's: the two faces share the device, and objects
/// of both may be used side by side.
impl From<crate::Context> for Context {
    fn from(ctx: crate::Context) -> Context {
        Context { ctx }
    }
}

impl Context {
    /// Queries `port` and fails unless it is ACTIVE or ARMED.
    pub(crate) fn active_port(&self, port: u8) -> Result<PortAttr> {
        let attr = self.query_port(port)?;
        match attr.state() {
            ffi::ibv_port_state::IBV_PORT_ACTIVE | ffi::ibv_port_state::IBV_PORT_ARMED => Ok(attr),
            _ => Err(Error::PortNotActive(port)),
        }
    }

    /// Starts building a completion queue of at least `min_cq_entries` entries.
    pub fn create_cq(&self, min_cq_entries: i32) -> CompletionQueueBuilder {
        CompletionQueueBuilder::new(self.clone(), min_cq_entries)
    }

    /// A completion channel, which any number of this context's completion queues can report to.
    pub fn create_comp_channel(&self) -> Result<CompletionChannel> {
        CompletionChannel::new(self)
    }

    /// A protection domain.
    pub fn alloc_pd(&self) -> Result<ProtectionDomain> {
        ProtectionDomain::new(self)
    }

    /// The GID tables of every port, read anew (an entry of a type libibverbs does not know is
    /// left out, where `ibverbs` panics).
    pub fn gid_table(&self) -> Result<Vec<GidEntry>> {
        let table = self
            .ctx
            .query_gid_table()
            .map_err(|e| Error::from_uverbs(e, Error::QueryGidTable))?;
        Ok(table.iter().filter_map(GidEntry::from_uverbs).collect())
    }

    /// The GID at `gid_index` of port `port_num`.
    pub fn query_gid(&self, port_num: u8, gid_index: u32) -> Result<Gid> {
        let wrap = |source| Error::QueryGid {
            port_num,
            gid_index,
            source,
        };
        match self.ctx.query_gid_entry(port_num, gid_index) {
            Ok(Some(e)) => Ok(Gid::from(e.gid.bytes())),
            Ok(None) => Err(wrap(std::io::Error::from_raw_os_error(libc::EINVAL))),
            Err(e) => Err(Error::from_uverbs(e, wrap)),
        }
    }

    /// The completion vectors of the device.
    pub fn num_comp_vectors(&self) -> u32 {
        self.ctx.num_comp_vectors()
    }

    /// The device's attributes.
    pub fn query_device(&self) -> Result<DeviceAttr> {
        self.query_device_ex().map(|ex| ex.orig())
    }

    /// The device's attributes, with the extended ones.
    pub fn query_device_ex(&self) -> Result<DeviceAttrEx> {
        let attr = self
            .ctx
            .query_device()
            .map_err(|e| Error::from_uverbs(e, Error::QueryDevice))?;
        Ok(DeviceAttrEx(device_attr_ex(&attr)))
    }

    /// The attributes of port `port_num`.
    pub fn query_port(&self, port_num: u8) -> Result<PortAttr> {
        let attr = self
            .ctx
            .query_port(port_num)
            .map_err(|e| Error::from_uverbs(e, |source| Error::QueryPort { port_num, source }))?;
        Ok(PortAttr(port_attr(attr.raw())))
    }

    /// The device's free-running clock now (`ibv_query_rt_values_ex`). uverbs does not read the
    /// clock's current value (it converts completion timestamps with `crate::DeviceClock`
    /// instead): always [`Error::Unsupported`].
    pub fn query_rt_values_ex(&self) -> Result<Duration> {
        Err(Error::Unsupported)
    }
}

/// Fills libibverbs' `ibv_device_attr_ex` from uverbs' answer.
fn device_attr_ex(attr: &crate::DeviceAttr) -> ffi::ibv_device_attr_ex {
    let raw = attr.raw();
    let b = &raw.base;
    let mut fw_ver = [0 as std::ffi::c_char; 64];
    for (d, s) in fw_ver.iter_mut().zip(attr.fw_ver().bytes().take(63)) {
        *d = s as std::ffi::c_char;
    }
    let int = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    let orig = ffi::ibv_device_attr {
        fw_ver,
        node_guid: b.node_guid,
        sys_image_guid: b.sys_image_guid,
        max_mr_size: b.max_mr_size,
        page_size_cap: b.page_size_cap,
        vendor_id: b.vendor_id,
        vendor_part_id: b.vendor_part_id,
        hw_ver: b.hw_ver,
        max_qp: int(b.max_qp),
        max_qp_wr: int(b.max_qp_wr),
        device_cap_flags: b.device_cap_flags,
        max_sge: int(b.max_sge),
        max_sge_rd: int(b.max_sge_rd),
        max_cq: int(b.max_cq),
        max_cqe: int(b.max_cqe),
        max_mr: int(b.max_mr),
        max_pd: int(b.max_pd),
        max_qp_rd_atom: int(b.max_qp_rd_atom),
        max_ee_rd_atom: int(b.max_ee_rd_atom),
        max_res_rd_atom: int(b.max_res_rd_atom),
        max_qp_init_rd_atom: int(b.max_qp_init_rd_atom),
        max_ee_init_rd_atom: int(b.max_ee_init_rd_atom),
        atomic_cap: ffi::ibv_atomic_cap::from_raw(b.atomic_cap)
            .unwrap_or(ffi::ibv_atomic_cap::IBV_ATOMIC_NONE),
        max_ee: int(b.max_ee),
        max_rdd: int(b.max_rdd),
        max_mw: int(b.max_mw),
        max_raw_ipv6_qp: int(b.max_raw_ipv6_qp),
        max_raw_ethy_qp: int(b.max_raw_ethy_qp),
        max_mcast_grp: int(b.max_mcast_grp),
        max_mcast_qp_attach: int(b.max_mcast_qp_attach),
        max_total_mcast_qp_attach: int(b.max_total_mcast_qp_attach),
        max_ah: int(b.max_ah),
        max_fmr: int(b.max_fmr),
        max_map_per_fmr: int(b.max_map_per_fmr),
        max_srq: int(b.max_srq),
        max_srq_wr: int(b.max_srq_wr),
        max_srq_sge: int(b.max_srq_sge),
        max_pkeys: b.max_pkeys,
        local_ca_ack_delay: b.local_ca_ack_delay,
        phys_port_cnt: b.phys_port_cnt,
    };
    ffi::ibv_device_attr_ex {
        orig_attr: orig,
        completion_timestamp_mask: attr.completion_timestamp_mask(),
        hca_core_clock: attr.hca_core_clock(),
        device_cap_flags_ex: raw.device_cap_flags_ex,
        phys_port_cnt_ex: u32::from(b.phys_port_cnt),
        ..Default::default()
    }
}

/// Fills libibverbs' `ibv_port_attr` from the kernel's answer.
fn port_attr(raw: &uverbs_drivers::uapi::ib_uverbs_query_port_resp_ex) -> ffi::ibv_port_attr {
    let p = &raw.legacy_resp;
    let mtu = |m: u8| ffi::ibv_mtu::from_raw(u32::from(m)).unwrap_or(ffi::ibv_mtu::IBV_MTU_1024);
    ffi::ibv_port_attr {
        state: ffi::ibv_port_state::from_raw(u32::from(p.state))
            .unwrap_or(ffi::ibv_port_state::IBV_PORT_NOP),
        max_mtu: mtu(p.max_mtu),
        active_mtu: mtu(p.active_mtu),
        gid_tbl_len: i32::try_from(p.gid_tbl_len).unwrap_or(i32::MAX),
        port_cap_flags: p.port_cap_flags,
        max_msg_sz: p.max_msg_sz,
        bad_pkey_cntr: p.bad_pkey_cntr,
        qkey_viol_cntr: p.qkey_viol_cntr,
        pkey_tbl_len: p.pkey_tbl_len,
        lid: p.lid,
        sm_lid: p.sm_lid,
        lmc: p.lmc,
        max_vl_num: p.max_vl_num,
        sm_sl: p.sm_sl,
        subnet_timeout: p.subnet_timeout,
        init_type_reply: p.init_type_reply,
        active_width: p.active_width,
        active_speed: p.active_speed,
        phys_state: p.phys_state,
        link_layer: p.link_layer,
        flags: p.flags,
        port_cap_flags2: raw.port_cap_flags2,
        active_speed_ex: 0,
    }
}

/// A device's attributes (`ibv_device_attr`, whose fields it dereferences to).
#[derive(Clone)]
pub struct DeviceAttr(ffi::ibv_device_attr);

impl DeviceAttr {
    /// The node GUID.
    pub fn node_guid(&self) -> Guid {
        Guid::from_bytes(self.0.node_guid.to_ne_bytes())
    }

    /// The system image GUID.
    pub fn sys_image_guid(&self) -> Guid {
        Guid::from_bytes(self.0.sys_image_guid.to_ne_bytes())
    }

    /// The firmware version.
    pub fn fw_ver(&self) -> Cow<'_, str> {
        let bytes: Vec<u8> = self
            .0
            .fw_ver
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Cow::Owned(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The attributes as libibverbs lays them out.
    pub fn as_raw(&self) -> &ffi::ibv_device_attr {
        &self.0
    }
}

impl fmt::Debug for DeviceAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceAttr")
            .field("node_guid", &self.node_guid())
            .field("sys_image_guid", &self.sys_image_guid())
            .field("fw_ver", &self.fw_ver())
            .field("vendor_id", &format_args!("{:#06x}", self.0.vendor_id))
            .field("vendor_part_id", &self.0.vendor_part_id)
            .field("phys_port_cnt", &self.0.phys_port_cnt)
            .field("max_qp", &self.0.max_qp)
            .field("max_cq", &self.0.max_cq)
            .field("max_mr", &self.0.max_mr)
            .finish_non_exhaustive()
    }
}

impl Deref for DeviceAttr {
    type Target = ffi::ibv_device_attr;

    fn deref(&self) -> &ffi::ibv_device_attr {
        &self.0
    }
}

/// A device's extended attributes (`ibv_device_attr_ex`, whose fields it dereferences to).
#[derive(Clone)]
pub struct DeviceAttrEx(ffi::ibv_device_attr_ex);

impl DeviceAttrEx {
    /// The attributes of [`Context::query_device`].
    pub fn orig(&self) -> DeviceAttr {
        DeviceAttr(self.0.orig_attr)
    }

    /// The node GUID.
    pub fn node_guid(&self) -> Guid {
        self.orig().node_guid()
    }

    /// The system image GUID.
    pub fn sys_image_guid(&self) -> Guid {
        self.orig().sys_image_guid()
    }

    /// The bits of a completion timestamp that count (0: none).
    pub fn completion_timestamp_mask(&self) -> u64 {
        self.0.completion_timestamp_mask
    }

    /// The frequency of the completion timestamps' clock, kHz.
    pub fn hca_core_clock_khz(&self) -> u64 {
        self.0.hca_core_clock
    }

    /// Atomic operations from PCIe (none on the devices uverbs drives: zeros).
    pub fn pci_atomic_caps(&self) -> ffi::ibv_pci_atomic_caps {
        self.0.pci_atomic_caps
    }

    /// Packet pacing (none on the devices uverbs drives: zeros).
    pub fn packet_pacing_caps(&self) -> ffi::ibv_packet_pacing_caps {
        self.0.packet_pacing_caps
    }

    /// Raw packet capabilities (0: uverbs offers no raw packet queue pairs).
    pub fn raw_packet_caps(&self) -> u32 {
        self.0.raw_packet_caps
    }

    /// Device memory (0: uverbs offers none).
    pub fn max_device_memory(&self) -> u64 {
        self.0.max_dm_size
    }

    /// The attributes as libibverbs lays them out.
    pub fn as_raw(&self) -> &ffi::ibv_device_attr_ex {
        &self.0
    }
}

impl fmt::Debug for DeviceAttrEx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceAttrEx")
            .field("orig", &self.orig())
            .field(
                "completion_timestamp_mask",
                &format_args!("{:#x}", self.completion_timestamp_mask()),
            )
            .field("hca_core_clock_khz", &self.hca_core_clock_khz())
            .field(
                "raw_packet_caps",
                &format_args!("{:#x}", self.raw_packet_caps()),
            )
            .field("max_device_memory", &self.max_device_memory())
            .finish_non_exhaustive()
    }
}

impl Deref for DeviceAttrEx {
    type Target = ffi::ibv_device_attr_ex;

    fn deref(&self) -> &ffi::ibv_device_attr_ex {
        &self.0
    }
}

/// A port's attributes (`ibv_port_attr`, whose fields it dereferences to).
#[derive(Clone)]
pub struct PortAttr(ffi::ibv_port_attr);

impl PortAttr {
    /// The port's logical state.
    pub fn state(&self) -> ffi::ibv_port_state {
        self.0.state
    }

    /// The largest MTU the port supports.
    pub fn max_mtu(&self) -> ffi::ibv_mtu {
        self.0.max_mtu
    }

    /// The MTU in use.
    pub fn active_mtu(&self) -> ffi::ibv_mtu {
        self.0.active_mtu
    }

    /// The speed of each lane.
    pub fn active_speed(&self) -> PortSpeed {
        if self.0.active_speed_ex != 0 {
            PortSpeed::from_raw(self.0.active_speed_ex)
        } else {
            PortSpeed::from_raw(u32::from(self.0.active_speed))
        }
    }

    /// The number of lanes.
    pub fn active_width(&self) -> PortWidth {
        PortWidth::from_raw(self.0.active_width)
    }

    /// InfiniBand or Ethernet (RoCE).
    pub fn link_layer(&self) -> LinkLayer {
        LinkLayer::from_raw(self.0.link_layer)
    }

    /// The physical state.
    pub fn phys_state(&self) -> PhysicalState {
        PhysicalState::from_raw(self.0.phys_state)
    }

    /// The attributes as libibverbs lays them out.
    pub fn as_raw(&self) -> &ffi::ibv_port_attr {
        &self.0
    }
}

impl fmt::Debug for PortAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortAttr")
            .field("state", &self.state())
            .field("phys_state", &self.phys_state())
            .field("link_layer", &self.link_layer())
            .field("active_mtu", &self.active_mtu())
            .field("max_mtu", &self.max_mtu())
            .field("active_speed", &self.active_speed())
            .field("active_width", &self.active_width())
            .field("lid", &self.0.lid)
            .field("sm_lid", &self.0.sm_lid)
            .field("gid_tbl_len", &self.0.gid_tbl_len)
            .field("pkey_tbl_len", &self.0.pkey_tbl_len)
            .finish_non_exhaustive()
    }
}

impl Deref for PortAttr {
    type Target = ffi::ibv_port_attr;

    fn deref(&self) -> &ffi::ibv_port_attr {
        &self.0
    }
}
