//! The handlers of the device's queries: `QUERY_DEVICE` (and its extended form), `QUERY_PORT`,
//! the GID table and a GID entry.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromZeros, IntoBytes};

use super::ioctl::{set_valid_output, Bundle};
use super::write::Io;
use super::File;
use crate::objects::FileState;
use crate::{caps, uaccess};

pub(super) fn w_query_device(f: &File, _: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let _req: uapi::ib_uverbs_query_device = io.request()?;
    io.response(caps::device_attr(&f.dev.cfg).as_bytes())
}

/// The ends of the fields of `mlx5_ib_query_device_resp` that `mlx5_ib_query_device` adds when
/// the user's buffer has room for them.
const MLX5_QUERY_DEVICE_FIELDS: [usize; 11] = [8, 16, 32, 40, 56, 60, 64, 72, 96, 100, 102];

pub(super) fn w_ex_query_device(f: &File, _: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_ex_query_device = io.request()?;
    if cmd.comp_mask != 0 || cmd.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    // mlx5_ib_query_device with driver data.
    let uhw_out = io.udata.outlen();
    if uhw_out != 0 && uhw_out < 8 {
        return Err(Errno::EINVAL);
    }
    if io.udata.inbuf().iter().any(|&b| b != 0) {
        return Err(Errno::EINVAL);
    }
    if uhw_out != 0 {
        let mut d = caps::mlx5_query_device_resp();
        let n = MLX5_QUERY_DEVICE_FIELDS
            .iter()
            .copied()
            .filter(|&end| end <= uhw_out)
            .max()
            .unwrap_or(8);
        d.response_length = n as u32;
        io.udata.copy_out(&d.as_bytes()[..n])?;
    }
    let mut resp = caps::device_attr_ex(&f.dev.cfg);
    resp.response_length = io.response_length(std::mem::size_of_val(&resp));
    io.response(resp.as_bytes())
}

pub(super) fn w_query_port(f: &File, _: &mut FileState, io: &mut Io) -> Result<(), Errno> {
    let cmd: uapi::ib_uverbs_query_port = io.request()?;
    let resp = f.query_port(u64::from(cmd.port_num))?;
    io.response(resp.as_bytes())
}

pub(super) fn m_query_port(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    if st.ctx.is_none() {
        return Err(Errno::EINVAL);
    }
    let port = b.get_const(uapi::UVERBS_ATTR_QUERY_PORT_PORT_NUM, u64::from(u8::MAX))?;
    let mut resp = uapi::ib_uverbs_query_port_resp_ex::new_zeroed();
    resp.legacy_resp = f.query_port(port)?;
    b.copy_to_struct_or_zero(uapi::UVERBS_ATTR_QUERY_PORT_RESP, resp.as_bytes())
}

pub(super) fn m_query_gid_table(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    b.flags32(uapi::UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0)?;
    let esize = b.get_const(uapi::UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, u64::MAX)?;
    if esize == 0 {
        return Err(Errno::EINVAL);
    }
    let (addr, len, idx, flags) = b
        .out(uapi::UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES)
        .ok_or(Errno::ENOENT)?;
    let esize = usize::try_from(esize).map_err(|_| Errno::EINVAL)?;
    if len % esize != 0 || len / esize == 0 {
        return Err(Errno::EINVAL);
    }
    if st.ctx.is_none() {
        return Err(Errno::EINVAL);
    }
    let entries = f.gid_table(len / esize)?;
    let ksize = std::mem::size_of::<uapi::ib_uverbs_gid_entry>();
    for (i, e) in entries.iter().enumerate() {
        let at = addr.wrapping_add((i * esize) as u64);
        uaccess::write(at, &e.as_bytes()[..ksize.min(esize)])?;
        if esize > ksize {
            uaccess::clear(at.wrapping_add(ksize as u64), esize - ksize)?;
        }
    }
    set_valid_output(b.hdr, idx, flags)?;
    b.copy_to(
        uapi::UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES,
        &(entries.len() as u64).to_ne_bytes(),
    )
}

pub(super) fn m_query_gid_entry(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    b.flags32(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0)?;
    let port = b.get_const(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_PORT, u64::from(u32::MAX))?;
    let index = b.get_const(
        uapi::UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX,
        u64::from(u32::MAX),
    )?;
    if st.ctx.is_none() {
        return Err(Errno::EINVAL);
    }
    let e = f.gid_entry(port, index)?;
    b.copy_to_struct_or_zero(uapi::UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, e.as_bytes())
}
