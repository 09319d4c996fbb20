//! Write commands (`ib_uverbs_write`, `verify_hdr`): the framing of a legacy `write()` command
//! into the core request, the response buffer and the driver's data, and the same for a command
//! carried by `UVERBS_METHOD_INVOKE_WRITE`'s attributes. Both run the write method's handler.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, IntoBytes};

use super::ioctl::{set_valid_output, Bundle, ATTR_LEN, HDR_LEN};
use super::methods::write_method;
use super::{sz, zext, File, Udata};
use crate::objects::FileState;
use crate::uaccess;

/// A write command being run (`struct uverbs_attr_bundle` of a write method: `ucore` and
/// `driver_udata`).
#[derive(Debug)]
pub(super) struct Io {
    core_in: Vec<u8>,
    out_addr: u64,
    out_len: usize,
    /// With `INVOKE_WRITE`: the ioctl header's address and the index of `UVERBS_ATTR_CORE_OUT`,
    /// which the response marks valid.
    core_out_attr: Option<(u64, usize)>,
    pub(super) udata: Udata,
}

impl Io {
    /// `uverbs_request`: the core request, zero-extended; bytes beyond it must be zero
    /// (`EOPNOTSUPP`).
    pub(super) fn request<T: FromBytes + IntoBytes>(&self) -> Result<T, Errno> {
        let size = std::mem::size_of::<T>();
        if self.core_in.len() > size && self.core_in[size..].iter().any(|&b| b != 0) {
            return Err(Errno::EOPNOTSUPP);
        }
        Ok(zext(&self.core_in))
    }

    /// `uverbs_response`: the core response, and zeroes in the rest of the user's buffer.
    pub(super) fn response(&self, bytes: &[u8]) -> Result<(), Errno> {
        let n = bytes.len().min(self.out_len);
        if self.out_len > bytes.len() {
            uaccess::clear(
                self.out_addr.wrapping_add(bytes.len() as u64),
                self.out_len - bytes.len(),
            )?;
        }
        uaccess::write(self.out_addr, &bytes[..n])?;
        if let Some((hdr, idx)) = self.core_out_attr {
            let flags: u16 = uaccess::read_obj(hdr + (HDR_LEN + idx * ATTR_LEN + 4) as u64)?;
            set_valid_output(hdr, idx, flags)?;
        }
        Ok(())
    }

    /// `uverbs_response_length`.
    pub(super) fn response_length(&self, size: usize) -> u32 {
        self.out_len.min(size) as u32
    }
}

impl File {
    /// `ib_uverbs_write`.
    pub(super) fn write_cmd(&self, cmd: &[u8]) -> Result<usize, Errno> {
        let hdr_len = sz::<uapi::ib_uverbs_cmd_hdr>();
        if cmd.len() < hdr_len {
            return Err(Errno::EINVAL);
        }
        let hdr = uapi::ib_uverbs_cmd_hdr::read_from_bytes(&cmd[..hdr_len]).expect("8 bytes");
        let def = write_method(hdr.command).inspect_err(|_| {
            self.dev.lacks(crate::UnknownCommand::Write {
                command: hdr.command,
            })
        })?;
        let count = cmd.len();
        let mut io = if hdr.command & uapi::IB_USER_VERBS_CMD_FLAG_EXTENDED != 0 {
            let ex_len = sz::<uapi::ib_uverbs_ex_cmd_hdr>();
            if count < hdr_len + ex_len {
                return Err(Errno::EINVAL);
            }
            let ex = uapi::ib_uverbs_ex_cmd_hdr::read_from_bytes(&cmd[hdr_len..hdr_len + ex_len])
                .expect("16 bytes");
            let body = &cmd[hdr_len + ex_len..];
            let core_in = usize::from(hdr.in_words) * 8;
            let drv_in = usize::from(ex.provider_in_words) * 8;
            if core_in + drv_in != body.len() {
                return Err(Errno::EINVAL);
            }
            if core_in < def.req {
                return Err(Errno::ENOSPC);
            }
            if ex.cmd_hdr_reserved != 0 {
                return Err(Errno::EINVAL);
            }
            let core_out = usize::from(hdr.out_words) * 8;
            let drv_out = usize::from(ex.provider_out_words) * 8;
            if ex.response != 0 {
                if core_out == 0 && drv_out == 0 {
                    return Err(Errno::EINVAL);
                }
                if core_out < def.resp {
                    return Err(Errno::ENOSPC);
                }
            } else if core_out != 0 || drv_out != 0 {
                return Err(Errno::EINVAL);
            }
            Io {
                core_in: body[..core_in].to_vec(),
                out_addr: ex.response,
                out_len: core_out,
                core_out_attr: None,
                udata: Udata {
                    inbuf: body[core_in..].to_vec(),
                    out_addr: ex.response.wrapping_add(core_out as u64),
                    out_len: drv_out,
                },
            }
        } else {
            if usize::from(hdr.in_words) * 4 != count {
                return Err(Errno::EINVAL);
            }
            if count < def.req + hdr_len {
                return Err(Errno::ENOSPC);
            }
            let out_len = usize::from(hdr.out_words) * 4;
            if out_len < def.resp {
                return Err(Errno::ENOSPC);
            }
            let body = &cmd[hdr_len..];
            let (core, drv) = if def.udata {
                body.split_at(def.req)
            } else {
                (body, &[][..])
            };
            let response = if def.has_resp {
                u64::from_ne_bytes(body[..8].try_into().expect("checked length"))
            } else {
                0
            };
            // With driver data the response is the core part and the driver's answer after it.
            let (core_out, udata_out) = if def.has_resp && def.udata {
                (def.resp, out_len - def.resp)
            } else {
                (out_len, 0)
            };
            Io {
                core_in: core.to_vec(),
                out_addr: response,
                out_len: core_out,
                core_out_attr: None,
                udata: Udata {
                    inbuf: drv.to_vec(),
                    out_addr: response.wrapping_add(def.resp as u64),
                    out_len: udata_out,
                },
            }
        };
        let mut st = self.lock();
        if def.ctx && st.ctx.is_none() {
            return Err(Errno::EINVAL);
        }
        (def.run)(self, &mut st, &mut io)?;
        Ok(count)
    }
}

/// `UVERBS_METHOD_INVOKE_WRITE`: a write command carried by attributes.
pub(super) fn m_invoke_write(f: &File, st: &mut FileState, b: &mut Bundle) -> Result<(), Errno> {
    let cmd = b.get_const(uapi::UVERBS_ATTR_WRITE_CMD, u64::from(u32::MAX))? as u32;
    let def = write_method(cmd)?;
    let core_in = b
        .bytes(uapi::UVERBS_ATTR_CORE_IN)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let out = b.out(uapi::UVERBS_ATTR_CORE_OUT);
    let (out_addr, out_len) = out.map_or((0, 0), |(a, l, _, _)| (a, l));
    if core_in.len() < def.req || out_len < def.resp {
        return Err(Errno::ENOSPC);
    }
    if def.ctx && st.ctx.is_none() {
        return Err(Errno::EINVAL);
    }
    let mut io = Io {
        core_in,
        out_addr,
        out_len,
        core_out_attr: out.map(|(_, _, idx, _)| (b.hdr, idx)),
        udata: b.udata(),
    };
    (def.run)(f, st, &mut io)
}
