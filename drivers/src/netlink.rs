//! The RDMA netlink interface (`NETLINK_RDMA`, client `RDMA_NL_NLDEV`), used for what sysfs does not
//! say: a device's kernel index and the `driver_id` that every uverbs ioctl must carry.
//!
//! Two requests are enough, as in rdma-core's `ibdev_nl.c`: `RDMA_NLDEV_CMD_GET` as a dump lists the
//! devices (index, name), and `RDMA_NLDEV_CMD_GET_CHARDEV` asks, per device, for its `uverbs` character
//! device (name, dev_t, ABI version, driver id). Message building and parsing are plain functions over
//! bytes, tested without a kernel.

use std::os::fd::AsFd;
use std::time::Duration;

use nix::errno::Errno;
use uverbs_uapi as uapi;

use crate::error::{Error, Result};
use crate::sys;

const NLMSG_HDRLEN: usize = 16;
const NLA_HDRLEN: usize = 4;

/// A device as the kernel's RDMA netlink interface lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NlDevice {
    /// The kernel's device index (`ibv_get_device_index`).
    pub index: u32,
    /// The device name, e.g. `rxe0`.
    pub name: String,
}

/// A device's uverbs character device, as `RDMA_NLDEV_CMD_GET_CHARDEV` describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NlChardev {
    /// `uverbsN`.
    pub name: String,
    /// (major, minor).
    pub dev: Option<(u32, u32)>,
    /// The driver's uverbs ABI version.
    pub abi: Option<u64>,
    /// `enum rdma_driver_id`; absent for drivers that do not bind one.
    pub driver_id: Option<u32>,
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// One netlink request: `nlmsghdr` followed by attributes.
fn request(op: u16, flags: u16, seq: u32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut msg = vec![0u8; NLMSG_HDRLEN];
    for (ty, payload) in attrs {
        let len = NLA_HDRLEN + payload.len();
        msg.extend_from_slice(&(len as u16).to_ne_bytes());
        msg.extend_from_slice(&ty.to_ne_bytes());
        msg.extend_from_slice(payload);
        msg.resize(align4(msg.len()), 0);
    }
    let len = msg.len() as u32;
    msg[0..4].copy_from_slice(&len.to_ne_bytes());
    msg[4..6].copy_from_slice(&uapi::rdma_nl_get_type(uapi::RDMA_NL_NLDEV, op).to_ne_bytes());
    msg[6..8].copy_from_slice(&flags.to_ne_bytes());
    msg[8..12].copy_from_slice(&seq.to_ne_bytes());
    msg
}

/// A netlink message found in a received datagram.
#[derive(Debug)]
enum Message<'a> {
    /// A reply carrying attributes.
    Data(&'a [u8]),
    /// `NLMSG_ERROR`: 0 is an acknowledgement, otherwise a negative errno.
    Error(i32),
    /// `NLMSG_DONE`: end of a dump.
    Done,
}

/// Splits a datagram into messages.
fn messages(mut buf: &[u8]) -> std::result::Result<Vec<Message<'_>>, &'static str> {
    let mut out = Vec::new();
    while buf.len() >= NLMSG_HDRLEN {
        let len = u32::from_ne_bytes(buf[0..4].try_into().unwrap()) as usize;
        let ty = u16::from_ne_bytes(buf[4..6].try_into().unwrap());
        if len < NLMSG_HDRLEN || len > buf.len() {
            return Err("truncated netlink message");
        }
        let body = &buf[NLMSG_HDRLEN..len];
        out.push(match ty as i32 {
            libc::NLMSG_ERROR => {
                let code = body.get(0..4).ok_or("short NLMSG_ERROR")?;
                Message::Error(i32::from_ne_bytes(code.try_into().unwrap()))
            }
            libc::NLMSG_DONE => Message::Done,
            _ => Message::Data(body),
        });
        buf = &buf[align4(len).min(buf.len())..];
    }
    Ok(out)
}

/// The attributes of a message body, as (type, payload).
fn attributes(mut body: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if body.len() < NLA_HDRLEN {
            return None;
        }
        let len = u16::from_ne_bytes(body[0..2].try_into().unwrap()) as usize;
        // The two top bits of the type are flags (nested, network byte order).
        let ty = u16::from_ne_bytes(body[2..4].try_into().unwrap()) & 0x3fff;
        if len < NLA_HDRLEN || len > body.len() {
            return None;
        }
        let payload = &body[NLA_HDRLEN..len];
        body = &body[align4(len).min(body.len())..];
        Some((ty, payload))
    })
}

fn attr_u32(p: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(p.get(0..4)?.try_into().ok()?))
}

fn attr_u64(p: &[u8]) -> Option<u64> {
    Some(u64::from_ne_bytes(p.get(0..8)?.try_into().ok()?))
}

fn attr_str(p: &[u8]) -> String {
    let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
    String::from_utf8_lossy(&p[..end]).into_owned()
}

fn parse_device(body: &[u8]) -> Option<NlDevice> {
    let (mut index, mut name) = (None, None);
    for (ty, p) in attributes(body) {
        match ty {
            uapi::RDMA_NLDEV_ATTR_DEV_INDEX => index = attr_u32(p),
            uapi::RDMA_NLDEV_ATTR_DEV_NAME => name = Some(attr_str(p)),
            _ => {}
        }
    }
    Some(NlDevice {
        index: index?,
        name: name?,
    })
}

/// Decodes the "huge" dev_t encoding the kernel uses in `RDMA_NLDEV_ATTR_CHARDEV`.
fn decode_dev(v: u64) -> (u32, u32) {
    let major = ((v & 0xfff00) >> 8) as u32;
    let minor = ((v & 0xff) | ((v >> 12) & 0xfff00)) as u32;
    (major, minor)
}

fn parse_chardev(body: &[u8]) -> NlChardev {
    let mut c = NlChardev::default();
    for (ty, p) in attributes(body) {
        match ty {
            uapi::RDMA_NLDEV_ATTR_CHARDEV_NAME => c.name = attr_str(p),
            uapi::RDMA_NLDEV_ATTR_CHARDEV => c.dev = attr_u64(p).map(decode_dev),
            uapi::RDMA_NLDEV_ATTR_CHARDEV_ABI => c.abi = attr_u64(p),
            // The kernel puts a u32 here; the header's comment says u64.
            uapi::RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID => c.driver_id = attr_u32(p),
            _ => {}
        }
    }
    c
}

/// A connected RDMA netlink socket.
#[derive(Debug)]
pub struct Netlink {
    fd: std::os::fd::OwnedFd,
    seq: u32,
}

impl Netlink {
    /// Opens the socket; replies that take longer than `timeout` are an error, never a hang.
    pub fn open(timeout: Duration) -> Result<Netlink> {
        let fd = sys::rdma_netlink_socket(timeout).map_err(|e| Error::Netlink {
            what: "socket",
            errno: Some(e),
        })?;
        Ok(Netlink { fd, seq: 1 })
    }

    /// Sends `req` and feeds every data message of the reply to `each`, until the kernel says it is
    /// done (a dump) or has answered (a single request).
    fn exchange(
        &mut self,
        what: &'static str,
        req: &[u8],
        dump: bool,
        mut each: impl FnMut(&[u8]),
    ) -> Result<()> {
        let fail = |errno| Error::Netlink { what, errno };
        sys::netlink_send(self.fd.as_fd(), req).map_err(|e| fail(Some(e)))?;
        self.seq = self.seq.wrapping_add(1);
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            let n = match sys::netlink_recv(self.fd.as_fd(), &mut buf) {
                Ok(n) => n,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(fail(Some(e))),
            };
            if n == 0 {
                return Err(fail(None));
            }
            for msg in messages(&buf[..n]).map_err(|_| fail(Some(Errno::EPROTO)))? {
                match msg {
                    Message::Data(body) => {
                        each(body);
                        if !dump {
                            return Ok(());
                        }
                    }
                    Message::Done => return Ok(()),
                    Message::Error(0) if !dump => return Ok(()),
                    Message::Error(0) => {}
                    Message::Error(code) => return Err(fail(Some(Errno::from_raw(-code)))),
                }
            }
        }
    }

    /// Every RDMA device the kernel has.
    pub fn devices(&mut self) -> Result<Vec<NlDevice>> {
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
        let req = request(uapi::RDMA_NLDEV_CMD_GET, flags, self.seq, &[]);
        let mut out = Vec::new();
        self.exchange("device dump", &req, true, |body| {
            out.extend(parse_device(body))
        })?;
        Ok(out)
    }

    /// The uverbs character device of the device with kernel index `index`.
    pub fn uverbs_chardev(&mut self, index: u32) -> Result<NlChardev> {
        let flags = libc::NLM_F_REQUEST as u16;
        let req = request(
            uapi::RDMA_NLDEV_CMD_GET_CHARDEV,
            flags,
            self.seq,
            &[
                (uapi::RDMA_NLDEV_ATTR_DEV_INDEX, &index.to_ne_bytes()),
                (uapi::RDMA_NLDEV_ATTR_CHARDEV_TYPE, b"uverbs\0"),
            ],
        );
        let mut out = NlChardev::default();
        self.exchange("chardev query", &req, false, |body| {
            out = parse_chardev(body)
        })?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nla(ty: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(payload);
        v.resize(align4(v.len()), 0);
        v
    }

    fn msg(ty: u16, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&[0u8; 10]);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn chardev_request_layout() {
        let req = request(
            uapi::RDMA_NLDEV_CMD_GET_CHARDEV,
            1,
            7,
            &[(1, &3u32.to_ne_bytes()), (69, b"uverbs\0")],
        );
        // 16 header + 8 (index) + 12 ("uverbs\0" padded from 11).
        assert_eq!(req.len(), 36);
        assert_eq!(u32::from_ne_bytes(req[0..4].try_into().unwrap()), 36);
        assert_eq!(
            u16::from_ne_bytes(req[4..6].try_into().unwrap()),
            (5 << 10) + 15
        );
        assert_eq!(u32::from_ne_bytes(req[8..12].try_into().unwrap()), 7);
        assert_eq!(&req[16..24], &[8, 0, 1, 0, 3, 0, 0, 0]);
        assert_eq!(&req[24..28], &[11, 0, 69, 0]);
        assert_eq!(&req[28..35], b"uverbs\0");
    }

    #[test]
    fn parses_a_device_dump_and_stops_at_done() {
        let mut body = nla(uapi::RDMA_NLDEV_ATTR_DEV_INDEX, &2u32.to_ne_bytes());
        body.extend(nla(uapi::RDMA_NLDEV_ATTR_DEV_NAME, b"rxe0\0"));
        let mut dgram = msg(0x1401, &body);
        dgram.extend(msg(libc::NLMSG_DONE as u16, &[0; 4]));
        let msgs = messages(&dgram).unwrap();
        assert_eq!(msgs.len(), 2);
        let Message::Data(b) = msgs[0] else {
            panic!("{msgs:?}")
        };
        assert_eq!(
            parse_device(b),
            Some(NlDevice {
                index: 2,
                name: "rxe0".into()
            })
        );
        assert!(matches!(msgs[1], Message::Done));
    }

    #[test]
    fn parses_chardev_reply() {
        let mut body = nla(uapi::RDMA_NLDEV_ATTR_CHARDEV_NAME, b"uverbs3\0");
        // major 231, minor 195 in the kernel's huge encoding.
        let dev: u64 = (231 << 8) | 195;
        body.extend(nla(uapi::RDMA_NLDEV_ATTR_CHARDEV, &dev.to_ne_bytes()));
        body.extend(nla(uapi::RDMA_NLDEV_ATTR_CHARDEV_ABI, &2u64.to_ne_bytes()));
        body.extend(nla(
            uapi::RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID,
            &14u32.to_ne_bytes(),
        ));
        let c = parse_chardev(&body);
        assert_eq!(c.name, "uverbs3");
        assert_eq!(c.dev, Some((231, 195)));
        assert_eq!(c.abi, Some(2));
        assert_eq!(c.driver_id, Some(14));
    }

    #[test]
    fn error_message_carries_errno() {
        let dgram = msg(libc::NLMSG_ERROR as u16, &(-19i32).to_ne_bytes());
        let msgs = messages(&dgram).unwrap();
        assert!(matches!(msgs[0], Message::Error(-19)));
    }

    #[test]
    fn truncated_message_is_an_error() {
        let mut dgram = msg(0x1401, &[0; 8]);
        dgram.truncate(20);
        assert!(messages(&dgram).is_err());
    }

    #[test]
    fn large_minor_numbers_decode() {
        assert_eq!(
            decode_dev((231 << 8) | 0x12 | (0x345 << 20)),
            (231, 0x34512)
        );
    }
}
