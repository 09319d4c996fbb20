// uverbs-drivers' raw command paths let safe code send a command the caller composed: an
// attribute added as a number where the kernel's method expects an output pointer (here the
// QUERY_PORT response, written to a freed buffer), or a write command whose request or driver
// data names memory by address (REG_MR of freed memory through `write` and `command`). All are
// `unsafe fn` now (E0133).
#![forbid(unsafe_code)]

use uverbs_drivers::chan::IoctlCmd;
use uverbs_drivers::error::Verb;
use uverbs_uapi as uapi;

fn main() {
    let info = uverbs_drivers::discover::find_device("rxe0").unwrap();
    let dev = uverbs_drivers::verbs::DeviceContext::open(&info).unwrap();
    let ctx = dev.ucontext();
    let freed = vec![0u8; 64].as_ptr() as u64;
    let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_DEVICE, uapi::UVERBS_METHOD_QUERY_PORT);
    cmd.in_u64(uapi::UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    cmd.in_u64(uapi::UVERBS_ATTR_QUERY_PORT_RESP, freed);
    ctx.channel().raw(&mut cmd).unwrap();
    ctx.channel().ioctl(Verb::QueryPort, &mut cmd).unwrap();
    ctx.channel()
        .ioctl_or_write(Verb::QueryPort, &mut cmd)
        .unwrap();
    let mut req = uapi::ib_uverbs_reg_mr {
        start: freed,
        length: 64,
        hca_va: freed,
        access_flags: 0x3,
        ..Default::default()
    };
    let mut resp = uapi::ib_uverbs_reg_mr_resp::default();
    let reg = uapi::IB_USER_VERBS_CMD_REG_MR;
    ctx.channel()
        .write(Verb::RegMr, reg, &mut req, &mut resp, &[], &mut [])
        .unwrap();
    ctx.channel()
        .write_ex(Verb::RegMr, reg, &mut req, &mut resp, &[], &mut [])
        .unwrap();
    ctx.channel()
        .write_legacy(Verb::RegMr, reg, &mut req, &mut resp)
        .unwrap();
    ctx.channel().command(Verb::RegMr, reg, &mut req).unwrap();
}
