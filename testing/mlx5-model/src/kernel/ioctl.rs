//! `RDMA_VERBS_IOCTL` (`ib_uverbs_ioctl`, `ib_uverbs_run_method`, `uverbs_process_attr`): the
//! header, then every attribute's TLV against the method's specification, then the mandatory
//! ones; a destroy method's object is destroyed before its handler runs. The decoded attributes
//! ([`Bundle`]) are what a handler reads and answers through.

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, IntoBytes};

use super::methods::{find_method, UHW};
use super::{zext, File, Udata};
use crate::events::FileKind;
use crate::objects::{Destroyed, FileState};
use crate::uaccess;

pub(super) const HDR_LEN: usize = std::mem::size_of::<uapi::ib_uverbs_ioctl_hdr>();
pub(super) const ATTR_LEN: usize = std::mem::size_of::<uapi::ib_uverbs_attr>();

pub(super) fn set_valid_output(hdr: u64, idx: usize, flags: u16) -> Result<(), Errno> {
    let at = hdr + (HDR_LEN + idx * ATTR_LEN + 4) as u64;
    uaccess::write(
        at,
        &(flags | uapi::UVERBS_ATTR_F_VALID_OUTPUT).to_ne_bytes(),
    )
}

/// How an object attribute is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    New,
    Read,
    Destroy,
}

/// An attribute type with its limits (`struct uverbs_attr_spec`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Ty {
    In {
        min: u16,
        max: u16,
        zero_trailing: bool,
    },
    Out {
        min: u16,
        max: u16,
        zero_trailing: bool,
    },
    Idr {
        obj: u16,
        access: Access,
    },
    Fd {
        obj: u16,
        access: Access,
    },
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    pub(super) id: u16,
    pub(super) ty: Ty,
    pub(super) mandatory: bool,
}

/// A decoded attribute's value.
#[derive(Debug)]
enum Val {
    /// An input's bytes (copied from the attribute or from user memory).
    Bytes(Vec<u8>),
    /// An output buffer.
    Out { addr: u64, len: usize },
    /// An existing object's handle.
    Handle(u32),
    /// An existing event file.
    EventFile(u64),
    /// A new object or file, to be made by the method.
    New,
}

#[derive(Debug)]
struct Attr {
    /// Index in the user's attribute array.
    idx: usize,
    id: u16,
    flags: u16,
    val: Val,
}

/// The decoded attributes of one ioctl (`struct uverbs_attr_bundle`).
#[derive(Debug)]
pub(super) struct Bundle {
    pub(super) hdr: u64,
    attrs: Vec<Attr>,
    pub(super) destroyed: Destroyed,
}

impl Bundle {
    fn get(&self, id: u16) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.id == id)
    }

    pub(super) fn has(&self, id: u16) -> bool {
        self.get(id).is_some()
    }

    pub(super) fn bytes(&self, id: u16) -> Option<&[u8]> {
        match &self.get(id)?.val {
            Val::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// `uverbs_copy_from` (`ENOENT` when absent).
    pub(super) fn copy_from<T: FromBytes + IntoBytes>(&self, id: u16) -> Result<T, Errno> {
        let b = self.bytes(id).ok_or(Errno::ENOENT)?;
        if b.len() > std::mem::size_of::<T>() {
            return Err(Errno::EINVAL);
        }
        Ok(zext(b))
    }

    /// `uverbs_copy_from_or_zero`.
    pub(super) fn copy_from_or_zero<T: FromBytes + IntoBytes>(&self, id: u16) -> Result<T, Errno> {
        let b = self.bytes(id).ok_or(Errno::ENOENT)?;
        Ok(zext(b))
    }

    /// `uverbs_get_const` of a value at most `max`.
    pub(super) fn get_const(&self, id: u16, max: u64) -> Result<u64, Errno> {
        let v: u64 = self.copy_from(id)?;
        if v > max {
            return Err(Errno::EINVAL);
        }
        Ok(v)
    }

    /// `uverbs_get_flags32`: 0 when absent.
    pub(super) fn flags32(&self, id: u16, allowed: u32) -> Result<u32, Errno> {
        let Some(b) = self.bytes(id) else {
            return Ok(0);
        };
        let v = if b.len() == 4 {
            u64::from(u32::from_ne_bytes(b.try_into().expect("4 bytes")))
        } else {
            u64::from_ne_bytes(b.try_into().map_err(|_| Errno::EINVAL)?)
        };
        let v = u32::try_from(v).map_err(|_| Errno::EINVAL)?;
        if v & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        Ok(v)
    }

    pub(super) fn handle(&self, id: u16) -> Option<u32> {
        match self.get(id)?.val {
            Val::Handle(h) => Some(h),
            _ => None,
        }
    }

    pub(super) fn event_file(&self, id: u16) -> Option<u64> {
        match self.get(id)?.val {
            Val::EventFile(f) => Some(f),
            _ => None,
        }
    }

    pub(super) fn out(&self, id: u16) -> Option<(u64, usize, usize, u16)> {
        let a = self.get(id)?;
        match a.val {
            Val::Out { addr, len } => Some((addr, len, a.idx, a.flags)),
            _ => None,
        }
    }

    /// `uverbs_copy_to`: what fits; absent is no error.
    pub(super) fn copy_to(&self, id: u16, bytes: &[u8]) -> Result<(), Errno> {
        let Some((addr, len, idx, flags)) = self.out(id) else {
            return Ok(());
        };
        uaccess::write(addr, &bytes[..bytes.len().min(len)])?;
        set_valid_output(self.hdr, idx, flags)
    }

    /// `uverbs_copy_to_struct_or_zero`.
    pub(super) fn copy_to_struct_or_zero(&self, id: u16, bytes: &[u8]) -> Result<(), Errno> {
        let (addr, len, _, _) = self.out(id).ok_or(Errno::ENOENT)?;
        if len > bytes.len() {
            uaccess::clear(addr.wrapping_add(bytes.len() as u64), len - bytes.len())?;
        }
        self.copy_to(id, bytes)
    }

    /// Writes a new handle or descriptor into its attribute's `data`.
    pub(super) fn set_data(&self, id: u16, value: u64) -> Result<(), Errno> {
        let a = self.get(id).ok_or(Errno::ENOENT)?;
        uaccess::write(
            self.hdr + (HDR_LEN + a.idx * ATTR_LEN + 8) as u64,
            &value.to_ne_bytes(),
        )
    }

    /// The driver's data (`uverbs_fill_udata`).
    pub(super) fn udata(&self) -> Udata {
        let inbuf = self
            .bytes(uapi::UVERBS_ATTR_UHW_IN)
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        let (out_addr, out_len) = self
            .out(uapi::UVERBS_ATTR_UHW_OUT)
            .map_or((0, 0), |(a, l, _, _)| (a, l));
        Udata {
            inbuf,
            out_addr,
            out_len,
        }
    }
}

fn file_kind(obj: u16) -> FileKind {
    if obj == uapi::UVERBS_OBJECT_COMP_CHANNEL {
        FileKind::Comp
    } else {
        FileKind::Async
    }
}

impl File {
    /// `uverbs_process_attr`.
    fn process_attr(
        &self,
        st: &FileState,
        spec: &Spec,
        ua: &uapi::ib_uverbs_attr,
    ) -> Result<Val, Errno> {
        let len = usize::from(ua.len);
        match spec.ty {
            Ty::In {
                min,
                max,
                zero_trailing,
            } => {
                let inline = len <= 8;
                if len > usize::from(max) && zero_trailing {
                    let extra = len - usize::from(max);
                    let cleared = if inline {
                        ua.data.to_ne_bytes()[usize::from(max)..len]
                            .iter()
                            .all(|&b| b == 0)
                    } else {
                        uaccess::is_cleared(ua.data.wrapping_add(u64::from(max)), extra)?
                    };
                    if !cleared {
                        return Err(Errno::EOPNOTSUPP);
                    }
                }
                if len < usize::from(min) || (!zero_trailing && len > usize::from(max)) {
                    return Err(Errno::EINVAL);
                }
                if ua.attr_data != 0 {
                    return Err(Errno::EINVAL);
                }
                let bytes = if inline {
                    ua.data.to_ne_bytes()[..len].to_vec()
                } else {
                    let mut v = vec![0u8; len];
                    uaccess::read(ua.data, &mut v)?;
                    v
                };
                Ok(Val::Bytes(bytes))
            }
            Ty::Out {
                min,
                max,
                zero_trailing,
            } => {
                if len < usize::from(min) || (!zero_trailing && len > usize::from(max)) {
                    return Err(Errno::EINVAL);
                }
                if ua.attr_data != 0 {
                    return Err(Errno::EINVAL);
                }
                Ok(Val::Out { addr: ua.data, len })
            }
            Ty::Idr { obj, access } => {
                if ua.attr_data != 0 || len != 0 {
                    return Err(Errno::EINVAL);
                }
                match access {
                    Access::New => Ok(Val::New),
                    Access::Read | Access::Destroy => {
                        File::lookup(st, ua.data, obj).map(Val::Handle)
                    }
                }
            }
            Ty::Fd { obj, access } => {
                if ua.attr_data != 0 || len != 0 {
                    return Err(Errno::EINVAL);
                }
                match access {
                    Access::New => Ok(Val::New),
                    Access::Read | Access::Destroy => self
                        .dev
                        .events
                        .lookup(self.id, ua.data_s64(), file_kind(obj))
                        .map(Val::EventFile),
                }
            }
        }
    }

    /// `ib_uverbs_ioctl` and `ib_uverbs_run_method`.
    pub(super) fn ioctl_at(&self, hdr_addr: u64) -> Result<(), Errno> {
        let hdr: uapi::ib_uverbs_ioctl_hdr = uaccess::read_obj(hdr_addr)?;
        let n = usize::from(hdr.num_attrs);
        let length = usize::from(hdr.length);
        if length > uverbs_drivers::sys::page_size() || length != HDR_LEN + n * ATTR_LEN {
            return Err(Errno::EINVAL);
        }
        if hdr.reserved1 != 0 || hdr.reserved2 != 0 {
            return Err(Errno::EPROTONOSUPPORT);
        }
        if hdr.driver_id != uapi::RDMA_DRIVER_MLX5 {
            return Err(Errno::EINVAL);
        }
        let Some(method) = find_method(self.dev.cfg.ioctl, hdr.object_id, hdr.method_id) else {
            self.dev.lacks(crate::UnknownCommand::Ioctl {
                object: hdr.object_id,
                method: hdr.method_id,
            });
            return Err(Errno::EPROTONOSUPPORT);
        };
        let mut raw = vec![0u8; n * ATTR_LEN];
        uaccess::read(hdr_addr + HDR_LEN as u64, &mut raw)?;
        let uattrs = <[uapi::ib_uverbs_attr]>::ref_from_bytes(&raw).map_err(|_| Errno::EINVAL)?;
        let mut st = self.lock();
        let mut b = Bundle {
            hdr: hdr_addr,
            attrs: Vec::with_capacity(n),
            destroyed: Destroyed::default(),
        };
        for (idx, ua) in uattrs.iter().enumerate() {
            let uhw = if method.udata { &UHW[..] } else { &[][..] };
            let Some(spec) = method
                .attrs
                .iter()
                .chain(uhw.iter())
                .find(|s| s.id == ua.attr_id)
            else {
                if ua.flags & uapi::UVERBS_ATTR_F_MANDATORY != 0 {
                    return Err(Errno::EPROTONOSUPPORT);
                }
                continue;
            };
            if b.has(spec.id) {
                return Err(Errno::EINVAL);
            }
            let val = self.process_attr(&st, spec, ua)?;
            b.attrs.push(Attr {
                idx,
                id: spec.id,
                flags: ua.flags,
                val,
            });
        }
        if method.attrs.iter().any(|s| s.mandatory && !b.has(s.id)) {
            return Err(Errno::EINVAL);
        }
        if let Some(spec) = method.attrs.iter().find(|s| {
            matches!(
                s.ty,
                Ty::Idr {
                    access: Access::Destroy,
                    ..
                }
            )
        }) {
            let Ty::Idr { obj, .. } = spec.ty else {
                unreachable!("matched above")
            };
            let handle = b.handle(spec.id).ok_or(Errno::EINVAL)?;
            b.destroyed = self.destroy(&mut st, u64::from(handle), obj)?;
        }
        match (method.run)(self, &mut st, &mut b) {
            Ok(()) => {}
            // Only the framework may say "not supported".
            Err(Errno::EPROTONOSUPPORT) => return Err(Errno::EINVAL),
            Err(e) => return Err(e),
        }
        if method.udata {
            if let Some((_, _, idx, flags)) = b.out(uapi::UVERBS_ATTR_UHW_OUT) {
                set_valid_output(hdr_addr, idx, flags)?;
            }
        }
        Ok(())
    }
}
