//! Tests of the kernel half: command decoding and errors on raw bytes, and the production
//! `Ucontext` and verbs against the model on every command path.

use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use uverbs_uapi as uapi;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::hca::{CqDesc, EventSink, Hca, HcaStats, MrDesc, QpAttrs, QpDesc, SrqDesc};
use super::*;
use uverbs_drivers::chan::CommandPath;
use uverbs_drivers::cmd;
use uverbs_drivers::error::Error;
use uverbs_drivers::qp_state::mask as m;
use uverbs_drivers::qp_state::state as qps;
use uverbs_drivers::ucontext::Ucontext;
use uverbs_drivers::verbs::DeviceContext;

// ---------------------------------------------------------------------------------------------
// Helpers.

/// What the kernel half handed the HCA, recorded; everything is passed on to a real HCA.
#[derive(Debug)]
struct Recorder {
    hca: Arc<Hca>,
    cqs: Mutex<Vec<CqDesc>>,
    qps: Mutex<Vec<QpDesc>>,
    srqs: Mutex<Vec<SrqDesc>>,
    mrs: Mutex<Vec<MrDesc>>,
    modifies: Mutex<Vec<(u32, QpAttrs)>>,
}

impl Silicon for Recorder {
    fn reg_mr(&self, mr: MrDesc) {
        self.mrs.lock().unwrap().push(mr);
        self.hca.reg_mr(mr)
    }
    fn dereg_mr(&self, lkey: u32) {
        self.hca.dereg_mr(lkey)
    }
    fn create_cq(&self, cq: CqDesc) {
        self.cqs.lock().unwrap().push(cq);
        self.hca.create_cq(cq)
    }
    fn resize_cq(
        &self,
        cqn: u32,
        buf: usize,
        ncqe: u32,
        cqe_size: u32,
    ) -> std::result::Result<u32, Errno> {
        self.hca.resize_cq(cqn, buf, ncqe, cqe_size)
    }
    fn destroy_cq(&self, cqn: u32) {
        self.hca.destroy_cq(cqn)
    }
    fn create_qp(&self, qp: QpDesc) {
        self.qps.lock().unwrap().push(qp);
        self.hca.create_qp(qp)
    }
    fn modify_qp(&self, qpn: u32, attrs: &QpAttrs) -> std::result::Result<(), Errno> {
        self.modifies.lock().unwrap().push((qpn, *attrs));
        self.hca.modify_qp(qpn, attrs)
    }
    fn query_qp(&self, qpn: u32) -> Option<QpAttrs> {
        self.hca.query_qp(qpn)
    }
    fn destroy_qp(&self, qpn: u32) {
        self.hca.destroy_qp(qpn)
    }
    fn create_srq(&self, srq: SrqDesc) {
        self.srqs.lock().unwrap().push(srq);
        self.hca.create_srq(srq)
    }
    fn set_srq_limit(&self, srqn: u32, limit: u32) {
        self.hca.set_srq_limit(srqn, limit)
    }
    fn srq_limit(&self, srqn: u32) -> u32 {
        self.hca.srq_limit(srqn)
    }
    fn destroy_srq(&self, srqn: u32) {
        self.hca.destroy_srq(srqn)
    }
    fn attach_mcast(&self, qpn: u32, gid: [u8; 16]) -> std::result::Result<(), Errno> {
        self.hca.attach_mcast(qpn, gid)
    }
    fn detach_mcast(&self, qpn: u32, gid: [u8; 16]) -> std::result::Result<(), Errno> {
        self.hca.detach_mcast(qpn, gid)
    }
    fn set_port_active(&self, active: bool) {
        self.hca.set_port_active(active)
    }
    fn stats(&self) -> HcaStats {
        self.hca.stats()
    }
}

fn recorded(cfg: ModelConfig) -> (Mlx5Model, Arc<Recorder>) {
    let slot: Arc<Mutex<Option<Arc<Recorder>>>> = Arc::default();
    let s2 = Arc::clone(&slot);
    let model = Mlx5Model::with_silicon(cfg, move |gids, sink: Arc<dyn EventSink>| {
        let r = Arc::new(Recorder {
            hca: Hca::new(gids, sink),
            cqs: Mutex::default(),
            qps: Mutex::default(),
            srqs: Mutex::default(),
            mrs: Mutex::default(),
            modifies: Mutex::default(),
        });
        *s2.lock().unwrap() = Some(Arc::clone(&r));
        r as Arc<dyn Silicon>
    })
    .unwrap();
    let r = slot.lock().unwrap().take().unwrap();
    (model, r)
}

/// `n` pages of page-aligned, zeroed memory, followed by an inaccessible guard page.
fn pages(n: usize) -> memmap2::MmapMut {
    let page = uverbs_drivers::sys::page_size();
    let mut m = memmap2::MmapMut::map_anon((n + 1) * page).unwrap();
    let guard = std::ptr::NonNull::new(m[n * page..].as_mut_ptr().cast()).unwrap();
    // SAFETY: the guard page is the last page of this mapping, which the tests never touch.
    unsafe { nix::sys::mman::mprotect(guard, page, nix::sys::mman::ProtFlags::PROT_NONE) }.unwrap();
    m
}

fn errno(e: Error) -> Errno {
    e.errno()
}

const PATHS: [(IoctlSupport, CommandPath); 3] = [
    (IoctlSupport::Full, CommandPath::Auto),
    (IoctlSupport::InvokeWriteOnly, CommandPath::Auto),
    (IoctlSupport::Full, CommandPath::LegacyWrite),
];

fn open(model: &Mlx5Model, path: CommandPath) -> Arc<Ucontext> {
    open_info(&model.device_info(), path)
}

/// The user context of a newly opened device context (which it outlives: the mlx5 backend's
/// context only adds what its objects share).
fn open_info(info: &DeviceInfo, path: CommandPath) -> Arc<Ucontext> {
    Arc::clone(DeviceContext::open_with(info, path).unwrap().ucontext())
}

/// A CQ of `n` entries (rdma-core's sizing) with its buffer and doorbell record.
struct CqMem {
    buf: memmap2::MmapMut,
    db: memmap2::MmapMut,
    ncqe: u32,
}

impl CqMem {
    fn new(requested: u32) -> CqMem {
        let ncqe = (requested + 1).next_power_of_two();
        let bytes = ncqe as usize * 64;
        let buf = pages(bytes.div_ceil(uverbs_drivers::sys::page_size()));
        CqMem {
            buf,
            db: pages(1),
            ncqe,
        }
    }

    fn cmd(&self) -> uapi::mlx5_ib_create_cq {
        let mut c = uapi::mlx5_ib_create_cq::new_zeroed();
        c.buf_addr = self.buf.as_ptr() as u64;
        c.db_addr = self.db.as_ptr() as u64;
        c.cqe_size = 64;
        c
    }
}

/// Creates a CQ on `mem`.
///
/// # Safety
/// As [`cmd::create_cq_with_udata`]: the CQ is destroyed (or its context closed) before `mem`
/// is dropped, and nothing accesses `mem` in ways that race with the device meanwhile.
unsafe fn create_cq(
    ctx: &Ucontext,
    mem: &CqMem,
    channel: Option<std::os::fd::BorrowedFd<'_>>,
    user_handle: u64,
) -> uverbs_drivers::Result<(u32, u32, u32)> {
    let cmd = mem.cmd();
    let mut resp = uapi::mlx5_ib_create_cq_resp::new_zeroed();
    // SAFETY: `cmd` names `mem`'s buffer and doorbell record; this function's contract.
    let (h, cqe) = unsafe {
        cmd::create_cq_with_udata(
            ctx,
            mem.ncqe - 1,
            user_handle,
            0,
            channel,
            cmd.as_bytes(),
            resp.as_mut_bytes(),
        )
    }?;
    Ok((h, cqe, resp.cqn))
}

/// A QP's memory: RQ of `rq` WQEs of 32 bytes then SQ of `sq` basic blocks.
struct QpMem {
    buf: memmap2::MmapMut,
    db: memmap2::MmapMut,
    rq: u32,
    sq: u32,
}

impl QpMem {
    fn new(rq: u32, sq: u32) -> QpMem {
        let bytes = rq as usize * 32 + sq as usize * 64;
        QpMem {
            buf: pages(bytes.div_ceil(uverbs_drivers::sys::page_size()).max(1)),
            db: pages(1),
            rq,
            sq,
        }
    }

    fn cmd(&self, uidx: u32) -> uapi::mlx5_ib_create_qp {
        let mut c = uapi::mlx5_ib_create_qp::new_zeroed();
        c.buf_addr = self.buf.as_ptr() as u64;
        c.db_addr = self.db.as_ptr() as u64;
        c.sq_wqe_count = self.sq;
        c.rq_wqe_count = self.rq;
        c.rq_wqe_shift = if self.rq == 0 { 0 } else { 5 };
        c.uidx = uidx;
        c
    }
}

fn qp_init(pd: u32, cq: u32, qp_type: u8, rq: u32) -> uverbs_drivers::cmd::QpInit {
    uverbs_drivers::cmd::QpInit {
        pd,
        send_cq: cq,
        recv_cq: cq,
        qp_type,
        cap: uapi::ib_uverbs_qp_cap {
            max_send_wr: 16,
            max_recv_wr: rq,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        sq_sig_all: false,
        user_handle: 0x5150,
        srq: None,
    }
}

/// Creates a QP whose ring and doorbell record `cmd` names.
///
/// # Safety
/// As [`cmd::create_qp_with_udata`]: what `cmd` names stays allocated until the QP is
/// destroyed (or its context closed), and nothing accesses it in ways that race with the device.
unsafe fn create_qp(
    ctx: &Ucontext,
    init: &uverbs_drivers::cmd::QpInit,
    cmd: &uapi::mlx5_ib_create_qp,
) -> uverbs_drivers::Result<(uverbs_drivers::cmd::QpCreated, uapi::mlx5_ib_create_qp_resp)> {
    let mut resp = uapi::mlx5_ib_create_qp_resp::new_zeroed();
    // SAFETY: this function's contract.
    let c = unsafe { cmd::create_qp_with_udata(ctx, init, cmd.as_bytes(), resp.as_mut_bytes()) }?;
    Ok((c, resp))
}

fn alloc_pd(ctx: &Ucontext) -> u32 {
    let mut resp = uapi::mlx5_ib_alloc_pd_resp::new_zeroed();
    cmd::alloc_pd(ctx, resp.as_mut_bytes()).unwrap()
}

fn modify(
    ctx: &Ucontext,
    handle: u32,
    mask: u32,
    f: impl FnOnce(&mut uapi::ib_uverbs_modify_qp),
) -> uverbs_drivers::Result<()> {
    let mut req = uapi::ib_uverbs_modify_qp::new_zeroed();
    req.qp_handle = handle;
    req.attr_mask = mask;
    f(&mut req);
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::modify_qp(ctx, &req) }
}

/// RESET → INIT → RTR → RTS of an RC QP connected to `dest_qpn` over GID index 1.
fn connect_rc(ctx: &Ucontext, handle: u32, dest_qpn: u32) -> uverbs_drivers::Result<()> {
    modify(
        ctx,
        handle,
        m::STATE | m::PKEY_INDEX | m::PORT | m::ACCESS_FLAGS,
        |r| {
            r.qp_state = qps::INIT;
            r.port_num = 1;
            r.qp_access_flags =
                uapi::IB_UVERBS_ACCESS_REMOTE_WRITE | uapi::IB_UVERBS_ACCESS_REMOTE_READ;
        },
    )?;
    modify(
        ctx,
        handle,
        m::STATE
            | m::AV
            | m::PATH_MTU
            | m::DEST_QPN
            | m::RQ_PSN
            | m::MAX_DEST_RD_ATOMIC
            | m::MIN_RNR_TIMER,
        |r| {
            r.qp_state = qps::RTR;
            r.path_mtu = 5;
            r.dest_qp_num = dest_qpn;
            r.max_dest_rd_atomic = 1;
            r.min_rnr_timer = 12;
            r.dest.is_global = 1;
            r.dest.port_num = 1;
            r.dest.sgid_index = 1;
            r.dest.hop_limit = 64;
            r.dest.dgid = ModelConfig::default().gids[1];
        },
    )?;
    modify(
        ctx,
        handle,
        m::STATE | m::TIMEOUT | m::RETRY_CNT | m::RNR_RETRY | m::SQ_PSN | m::MAX_QP_RD_ATOMIC,
        |r| {
            r.qp_state = qps::RTS;
            r.timeout = 14;
            r.retry_cnt = 7;
            r.rnr_retry = 7;
            r.max_rd_atomic = 1;
        },
    )
}

/// A raw ioctl buffer: header and attributes.
#[repr(C, align(8))]
struct RawIoctl {
    hdr: uapi::ib_uverbs_ioctl_hdr,
    attrs: [uapi::ib_uverbs_attr; 8],
}

impl RawIoctl {
    fn new(object: u16, method: u16, attrs: &[uapi::ib_uverbs_attr]) -> RawIoctl {
        let mut r = RawIoctl {
            hdr: uapi::ib_uverbs_ioctl_hdr {
                length: (24 + 16 * attrs.len()) as u16,
                object_id: object,
                method_id: method,
                num_attrs: attrs.len() as u16,
                reserved1: 0,
                driver_id: uapi::RDMA_DRIVER_MLX5,
                reserved2: 0,
            },
            attrs: [uapi::ib_uverbs_attr::default(); 8],
        };
        r.attrs[..attrs.len()].copy_from_slice(attrs);
        r
    }

    fn run(&mut self, file: &uverbs_drivers::sys::ModelRef) -> std::result::Result<(), Errno> {
        // SAFETY: the header is followed by its attributes in this struct, and every pointer
        // attribute the tests build points to live memory of the right size (or is meant to be
        // rejected, which the model does without touching it).
        unsafe { file.0.ioctl(std::ptr::addr_of_mut!(self.hdr)) }
    }
}

fn attr(attr_id: u16, len: u16, flags: u16, data: u64) -> uapi::ib_uverbs_attr {
    uapi::ib_uverbs_attr {
        attr_id,
        len,
        flags,
        attr_data: 0,
        data,
    }
}

const MAND: u16 = uapi::UVERBS_ATTR_F_MANDATORY;

fn model_file(info: &uverbs_drivers::discover::DeviceInfo) -> uverbs_drivers::sys::ModelRef {
    info.model.clone().unwrap()
}

/// The file a context talks to (each context opens its own).
fn context_file(ctx: &Ucontext) -> uverbs_drivers::sys::ModelRef {
    ctx.channel()
        .model_file()
        .expect("a context of the model talks to a model file")
        .clone()
}

// ---------------------------------------------------------------------------------------------
// The ioctl framework.

#[test]
fn ioctl_headers_and_attributes_are_checked() {
    let model = Mlx5Model::new().unwrap();
    let info = model.device_info();
    let file = model_file(&info);
    let mut port_resp = uapi::ib_uverbs_query_port_resp_ex::new_zeroed();
    let resp_ptr = port_resp.as_mut_bytes().as_mut_ptr() as u64;
    let good = [
        attr(uapi::UVERBS_ATTR_QUERY_PORT_PORT_NUM, 8, MAND, 1),
        attr(uapi::UVERBS_ATTR_QUERY_PORT_RESP, 48, MAND, resp_ptr),
    ];
    let dev = uapi::UVERBS_OBJECT_DEVICE;
    let qport = uapi::UVERBS_METHOD_QUERY_PORT;
    // No context yet.
    assert_eq!(
        RawIoctl::new(dev, qport, &good).run(&file),
        Err(Errno::EINVAL)
    );
    // Header checks come first.
    let mut r = RawIoctl::new(dev, qport, &good);
    r.hdr.length += 16;
    assert_eq!(r.run(&file), Err(Errno::EINVAL));
    let mut r = RawIoctl::new(dev, qport, &good);
    r.hdr.reserved1 = 1;
    assert_eq!(r.run(&file), Err(Errno::EPROTONOSUPPORT));
    let mut r = RawIoctl::new(dev, qport, &good);
    r.hdr.reserved2 = 1;
    assert_eq!(r.run(&file), Err(Errno::EPROTONOSUPPORT));
    let mut r = RawIoctl::new(dev, qport, &good);
    r.hdr.driver_id = uapi::RDMA_DRIVER_RXE;
    assert_eq!(r.run(&file), Err(Errno::EINVAL));
    assert_eq!(
        RawIoctl::new(dev, 99, &good).run(&file),
        Err(Errno::EPROTONOSUPPORT)
    );
    // A driver object the model does not have (VAR objects, for virtio doorbells).
    assert_eq!(
        RawIoctl::new(
            uapi::MLX5_IB_OBJECT_VAR,
            uapi::MLX5_IB_METHOD_VAR_OBJ_ALLOC,
            &[]
        )
        .run(&file),
        Err(Errno::EPROTONOSUPPORT)
    );
    // SAFETY: an unmapped header address: the model must answer EFAULT without touching it.
    let bad = unsafe {
        file.0
            .ioctl(std::ptr::without_provenance_mut::<uapi::ib_uverbs_ioctl_hdr>(8))
    };
    assert_eq!(bad, Err(Errno::EFAULT));

    // With a context.
    let ctx = open_info(&info, CommandPath::Auto);
    let file = context_file(&ctx);
    let mut r = RawIoctl::new(dev, qport, &good);
    r.run(&file).unwrap();
    assert_eq!(port_resp.legacy_resp.state, caps::PORT_ACTIVE);
    assert_eq!(r.attrs[1].flags, MAND | uapi::UVERBS_ATTR_F_VALID_OUTPUT);
    assert_eq!(r.attrs[0].flags, MAND, "inputs are not marked");
    // An unknown optional attribute is ignored, an unknown mandatory one refused.
    let mut a = good.to_vec();
    a.push(attr(0x20, 8, 0, 0));
    RawIoctl::new(dev, qport, &a).run(&file).unwrap();
    a[2].flags = MAND;
    assert_eq!(
        RawIoctl::new(dev, qport, &a).run(&file),
        Err(Errno::EPROTONOSUPPORT)
    );
    // Duplicates, missing mandatory attributes, bad lengths and reserved bits.
    assert_eq!(
        RawIoctl::new(dev, qport, &[good[0], good[0], good[1]]).run(&file),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        RawIoctl::new(dev, qport, &good[1..]).run(&file),
        Err(Errno::EINVAL)
    );
    let mut a = good;
    a[0].len = 4;
    assert_eq!(RawIoctl::new(dev, qport, &a).run(&file), Err(Errno::EINVAL));
    let mut a = good;
    a[1].len = 40;
    assert_eq!(RawIoctl::new(dev, qport, &a).run(&file), Err(Errno::EINVAL));
    let mut a = good;
    a[0].attr_data = 1;
    assert_eq!(RawIoctl::new(dev, qport, &a).run(&file), Err(Errno::EINVAL));
    // A longer output is zero-filled (a struct with zero_trailing).
    let mut big = [0xffu8; 64];
    let mut a = good;
    a[1] = attr(
        uapi::UVERBS_ATTR_QUERY_PORT_RESP,
        64,
        MAND,
        big.as_mut_ptr() as u64,
    );
    RawIoctl::new(dev, qport, &a).run(&file).unwrap();
    assert_eq!(big[48..], [0u8; 16]);
    assert_eq!(big[26], caps::PORT_ACTIVE); // ib_uverbs_query_port_resp.state
                                            // Bad port, bad output pointer.
    let mut a = good;
    a[0].data = 2;
    assert_eq!(RawIoctl::new(dev, qport, &a).run(&file), Err(Errno::EINVAL));
    let mut a = good;
    a[0].data = 256;
    assert_eq!(RawIoctl::new(dev, qport, &a).run(&file), Err(Errno::EINVAL));
    let mut a = good;
    a[1].data = 16;
    assert_eq!(RawIoctl::new(dev, qport, &a).run(&file), Err(Errno::EFAULT));
    // Object handles: none (ENOENT), another type (EINVAL), a negative one (EINVAL).
    let pd = alloc_pd(&ctx);
    let destroy = |h: u64, obj: u16, method: u16| {
        RawIoctl::new(obj, method, &[attr(0, 0, MAND, h)]).run(&file)
    };
    assert_eq!(
        destroy(77, uapi::UVERBS_OBJECT_MR, uapi::UVERBS_METHOD_MR_DESTROY),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        destroy(
            u64::from(pd),
            uapi::UVERBS_OBJECT_MR,
            uapi::UVERBS_METHOD_MR_DESTROY
        ),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        destroy(
            u64::MAX,
            uapi::UVERBS_OBJECT_PD,
            uapi::UVERBS_METHOD_PD_DESTROY
        ),
        Err(Errno::EINVAL)
    );
    let mut r = RawIoctl::new(
        uapi::UVERBS_OBJECT_PD,
        uapi::UVERBS_METHOD_PD_DESTROY,
        &[attr(0, 4, MAND, u64::from(pd))],
    );
    assert_eq!(
        r.run(&file),
        Err(Errno::EINVAL),
        "object attributes have no length"
    );
    destroy(
        u64::from(pd),
        uapi::UVERBS_OBJECT_PD,
        uapi::UVERBS_METHOD_PD_DESTROY,
    )
    .unwrap();
    assert_eq!(
        destroy(
            u64::from(pd),
            uapi::UVERBS_OBJECT_PD,
            uapi::UVERBS_METHOD_PD_DESTROY
        ),
        Err(Errno::ENOENT)
    );
    // Memory windows are not on this model: no MW methods.
    assert_eq!(
        destroy(0, uapi::UVERBS_OBJECT_MW, uapi::UVERBS_METHOD_MW_DESTROY),
        Err(Errno::EPROTONOSUPPORT)
    );
}

#[test]
fn invoke_write_probe_and_get_context() {
    let model = Mlx5Model::new().unwrap();
    let file = model.open();
    // The probe: INVOKE_WRITE of QUERY_DEVICE without its core attributes is ENOSPC.
    let probe = [attr(
        uapi::UVERBS_ATTR_WRITE_CMD,
        8,
        MAND,
        u64::from(uapi::IB_USER_VERBS_CMD_QUERY_DEVICE),
    )];
    let mut r = RawIoctl::new(
        uapi::UVERBS_OBJECT_DEVICE,
        uapi::UVERBS_METHOD_INVOKE_WRITE,
        &probe,
    );
    assert_eq!(r.run(&file), Err(Errno::ENOSPC));
    let bad = [attr(uapi::UVERBS_ATTR_WRITE_CMD, 8, MAND, 0x4000_0001)];
    let mut r = RawIoctl::new(
        uapi::UVERBS_OBJECT_DEVICE,
        uapi::UVERBS_METHOD_INVOKE_WRITE,
        &bad,
    );
    assert_eq!(r.run(&file), Err(Errno::EINVAL));
    let unknown = [attr(uapi::UVERBS_ATTR_WRITE_CMD, 8, MAND, 200)];
    let mut r = RawIoctl::new(
        uapi::UVERBS_OBJECT_DEVICE,
        uapi::UVERBS_METHOD_INVOKE_WRITE,
        &unknown,
    );
    assert_eq!(r.run(&file), Err(Errno::EOPNOTSUPP));

    // GET_CONTEXT by ioctl, with rdma-core's request.
    let req = uverbs_drivers::mlx5::Mlx5Context::request();
    let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
    let mut ncv = 0u32;
    let mut core = 0u64;
    let attrs = [
        attr(
            uapi::UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS,
            4,
            MAND,
            std::ptr::addr_of_mut!(ncv) as u64,
        ),
        attr(
            uapi::UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT,
            8,
            0,
            std::ptr::addr_of_mut!(core) as u64,
        ),
        attr(
            uapi::UVERBS_ATTR_UHW_IN,
            32,
            0,
            req.as_bytes().as_ptr() as u64,
        ),
        attr(
            uapi::UVERBS_ATTR_UHW_OUT,
            72,
            0,
            resp.as_mut_bytes().as_mut_ptr() as u64,
        ),
    ];
    let mut r = RawIoctl::new(
        uapi::UVERBS_OBJECT_DEVICE,
        uapi::UVERBS_METHOD_GET_CONTEXT,
        &attrs,
    );
    r.run(&file).unwrap();
    assert_eq!(ncv, 8);
    assert_eq!(core, uapi::IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS);
    assert!(r.attrs[..4]
        .iter()
        .all(|a| a.attr_id == uapi::UVERBS_ATTR_UHW_IN
            || a.flags & uapi::UVERBS_ATTR_F_VALID_OUTPUT != 0));
    assert_eq!(resp.tot_bfregs, 16);
    assert_eq!(resp.bf_reg_size, 512);
    assert_eq!(resp.cqe_version, 1);
    assert_eq!(resp.response_length, 72);
    assert_eq!(resp.num_ports, 1);
    assert_eq!(resp.log_uar_size, 12);
    assert_eq!(
        resp.num_uars_per_page as usize,
        uverbs_drivers::sys::page_size() / 4096
    );
    assert_eq!(resp.cache_line_size, 64);
    assert_eq!(resp.eth_min_inline, uapi::MLX5_USER_INLINE_MODE_NONE);
    assert_ne!(
        resp.cmds_supp_uhw & uapi::MLX5_USER_CMDS_SUPP_UHW_CREATE_AH,
        0
    );
    assert_eq!(
        (resp.max_send_wqebb, resp.max_recv_wr, resp.max_srq_recv_wr),
        (32768, 32768, 32768)
    );
    // One context per file (this one follows the kernel's rule).
    assert_eq!(
        RawIoctl::new(
            uapi::UVERBS_OBJECT_DEVICE,
            uapi::UVERBS_METHOD_GET_CONTEXT,
            &attrs
        )
        .run(&file),
        Err(Errno::EINVAL)
    );
    // The async event file.
    let fd_attr = [attr(
        uapi::UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE,
        0,
        MAND,
        0,
    )];
    let mut r = RawIoctl::new(
        uapi::UVERBS_OBJECT_ASYNC_EVENT,
        uapi::UVERBS_METHOD_ASYNC_EVENT_ALLOC,
        &fd_attr,
    );
    r.run(&file).unwrap();
    // SAFETY: the command succeeded, so the attribute holds a descriptor made for us.
    let async_fd = unsafe { OwnedFd::from_raw_fd(r.attrs[0].data as i32) };
    // It blocks, as the kernel's does, until its user says otherwise (the driver's readers poll
    // first and need it non-blocking).
    let flags = nix::fcntl::fcntl(&async_fd, nix::fcntl::FcntlArg::F_GETFL).unwrap();
    assert_eq!(flags & libc::O_NONBLOCK, 0, "a new event file blocks");
    uverbs_drivers::sys::set_nonblocking(async_fd.as_fd()).unwrap();
    assert_eq!(
        uverbs_drivers::event::read_async_event(async_fd.as_fd(), Some(Duration::ZERO)).unwrap(),
        None
    );
    model.set_port_active(false);
    let ev =
        uverbs_drivers::event::read_async_event(async_fd.as_fd(), Some(Duration::from_secs(5)))
            .unwrap()
            .unwrap();
    assert_eq!((ev.element, ev.event_type), (1, 10)); // port 1, IB_EVENT_PORT_ERR
    model.set_port_active(true);
    let ev =
        uverbs_drivers::event::read_async_event(async_fd.as_fd(), Some(Duration::from_secs(5)))
            .unwrap()
            .unwrap();
    assert_eq!((ev.element, ev.event_type), (1, 9)); // IB_EVENT_PORT_ACTIVE

    // Requests the kernel refuses.
    type Change = fn(&mut uapi::mlx5_ib_alloc_ucontext_req_v2);
    let cases: [(Change, Errno); 6] = [
        (|r| r.flags = 2, Errno::EOPNOTSUPP),
        (|r| r.comp_mask = 1, Errno::EOPNOTSUPP),
        (
            |r| r.flags = uapi::MLX5_IB_ALLOC_UCTX_DEVX,
            Errno::EOPNOTSUPP,
        ),
        (|r| r.total_num_bfregs = 0, Errno::EINVAL),
        (|r| r.total_num_bfregs = 1024, Errno::ENOMEM),
        (|r| r.num_low_latency_bfregs = 16, Errno::EINVAL),
    ];
    for (change, e) in cases {
        let f = model.open();
        let mut q = uverbs_drivers::mlx5::Mlx5Context::request();
        change(&mut q);
        let attrs = [attr(
            uapi::UVERBS_ATTR_UHW_IN,
            32,
            0,
            q.as_bytes().as_ptr() as u64,
        )];
        let mut r = RawIoctl::new(
            uapi::UVERBS_OBJECT_DEVICE,
            uapi::UVERBS_METHOD_GET_CONTEXT,
            &attrs,
        );
        assert_eq!(r.run(&f), Err(e), "{q:?}");
    }
    // Too short a request.
    let f = model.open();
    let attrs = [attr(
        uapi::UVERBS_ATTR_UHW_IN,
        12,
        0,
        req.as_bytes().as_ptr() as u64,
    )];
    assert_eq!(
        RawIoctl::new(
            uapi::UVERBS_OBJECT_DEVICE,
            uapi::UVERBS_METHOD_GET_CONTEXT,
            &attrs
        )
        .run(&f),
        Err(Errno::EINVAL)
    );
}

// ---------------------------------------------------------------------------------------------
// Write commands.

fn write(file: &uverbs_drivers::sys::ModelRef, bytes: &[u8]) -> std::result::Result<usize, Errno> {
    // SAFETY: every response pointer the tests put in a command points to a live buffer of the
    // announced size (or is meant to be rejected).
    unsafe { file.0.write(bytes) }
}

fn legacy(command: u32, req: &[u8], out_words: u16) -> Vec<u8> {
    let hdr = uapi::ib_uverbs_cmd_hdr {
        command,
        in_words: ((8 + req.len()) / 4) as u16,
        out_words,
    };
    let mut v = hdr.as_bytes().to_vec();
    v.extend_from_slice(req);
    v
}

#[test]
fn write_commands_are_checked() {
    let model = Mlx5Model::new().unwrap();
    let file = model.open();
    assert_eq!(write(&file, &[0u8; 4]), Err(Errno::EINVAL));
    // GET_CONTEXT with the driver request after the core one, the async fd in the response.
    let mut out = [0u8; 8 + 72];
    let mut req = (out.as_mut_ptr() as u64).to_ne_bytes().to_vec();
    req.extend_from_slice(uverbs_drivers::mlx5::Mlx5Context::request().as_bytes());
    let cmd = legacy(uapi::IB_USER_VERBS_CMD_GET_CONTEXT, &req, 20);
    assert_eq!(write(&file, &cmd), Ok(cmd.len()));
    let resp = uapi::ib_uverbs_get_context_resp::read_from_bytes(&out[..8]).unwrap();
    assert_eq!(resp.num_comp_vectors, 8);
    // SAFETY: the command succeeded, so `async_fd` was made for us.
    let async_fd = unsafe { OwnedFd::from_raw_fd(resp.async_fd as i32) };
    uverbs_drivers::sys::set_nonblocking(async_fd.as_fd()).unwrap();
    assert_eq!(
        uverbs_drivers::event::read_async_event(async_fd.as_fd(), Some(Duration::ZERO)).unwrap(),
        None
    );
    let drv = uapi::mlx5_ib_alloc_ucontext_resp::read_from_bytes(&out[8..]).unwrap();
    assert_eq!((drv.tot_bfregs, drv.cqe_version), (16, 1));
    // Length checks: in_words must match, core sizes must fit.
    let mut bad = cmd.clone();
    bad[4] += 1;
    assert_eq!(write(&file, &bad), Err(Errno::EINVAL));
    let qd = legacy(uapi::IB_USER_VERBS_CMD_QUERY_DEVICE, &0u64.to_ne_bytes(), 2);
    assert_eq!(write(&file, &qd), Err(Errno::ENOSPC));
    let mut out = uapi::ib_uverbs_query_device_resp::new_zeroed();
    let qd = legacy(
        uapi::IB_USER_VERBS_CMD_QUERY_DEVICE,
        &(out.as_mut_bytes().as_mut_ptr() as u64).to_ne_bytes(),
        44,
    );
    assert_eq!(write(&file, &qd), Ok(16));
    assert_eq!(
        (out.vendor_id, out.vendor_part_id, out.max_mw),
        (0x02c9, 4125, 0)
    );
    // A bad response pointer.
    let qd = legacy(
        uapi::IB_USER_VERBS_CMD_QUERY_DEVICE,
        &16u64.to_ne_bytes(),
        44,
    );
    assert_eq!(write(&file, &qd), Err(Errno::EFAULT));
    // Non-zero bytes after a request without driver data.
    let mut q = 0u64.to_ne_bytes().to_vec();
    q.extend_from_slice(&[1, 0, 0, 0]);
    assert_eq!(
        write(&file, &legacy(uapi::IB_USER_VERBS_CMD_QUERY_DEVICE, &q, 44)),
        Err(Errno::EOPNOTSUPP)
    );
    // Unknown and unsupported commands, bad command bits.
    assert_eq!(write(&file, &legacy(200, &[], 0)), Err(Errno::EOPNOTSUPP));
    assert_eq!(
        write(&file, &legacy(uapi::IB_USER_VERBS_CMD_POLL_CQ, &[0; 16], 0)),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(
        write(
            &file,
            &legacy(uapi::IB_USER_VERBS_CMD_ALLOC_MW, &[0; 16], 2)
        ),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(write(&file, &legacy(0x100, &[], 0)), Err(Errno::EINVAL));
    // Extended header checks.
    let ex = |in_words: u16, out_words: u16, response: u64, reserved: u32, body: &[u8]| {
        let hdr = uapi::ib_uverbs_cmd_hdr {
            command: uapi::IB_USER_VERBS_EX_CMD_QUERY_DEVICE
                | uapi::IB_USER_VERBS_CMD_FLAG_EXTENDED,
            in_words,
            out_words,
        };
        let exh = uapi::ib_uverbs_ex_cmd_hdr {
            response,
            provider_in_words: 0,
            provider_out_words: 0,
            cmd_hdr_reserved: reserved,
        };
        let mut v = hdr.as_bytes().to_vec();
        v.extend_from_slice(exh.as_bytes());
        v.extend_from_slice(body);
        v
    };
    let mut resp = uapi::ib_uverbs_ex_query_device_resp::new_zeroed();
    let rp = resp.as_mut_bytes().as_mut_ptr() as u64;
    let words = (std::mem::size_of_val(&resp) / 8) as u16;
    assert_eq!(write(&file, &ex(1, words, rp, 0, &[0; 8])), Ok(32));
    assert_eq!(resp.response_length as usize, std::mem::size_of_val(&resp));
    assert_eq!(resp.base.max_qp, 1 << 17);
    assert_eq!(
        write(&file, &ex(2, words, rp, 0, &[0; 8])),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        write(&file, &ex(1, words, rp, 1, &[0; 8])),
        Err(Errno::EINVAL)
    );
    assert_eq!(write(&file, &ex(1, 0, rp, 0, &[0; 8])), Err(Errno::EINVAL));
    assert_eq!(write(&file, &ex(1, 2, rp, 0, &[0; 8])), Err(Errno::ENOSPC));
    assert_eq!(
        write(&file, &ex(1, words, 0, 0, &[0; 8])),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        write(&file, &ex(1, words, rp, 0, &[1, 0, 0, 0, 0, 0, 0, 0])),
        Err(Errno::EINVAL)
    );
    assert!(model.stats().failed > 0);
}

// ---------------------------------------------------------------------------------------------
// The verbs through the production code, on every command path.

#[test]
fn queries_on_every_path() {
    for (ioctl, path) in PATHS {
        let model = Mlx5Model::with_config(ModelConfig {
            ioctl,
            ..ModelConfig::default()
        })
        .unwrap();
        let ctx = open(&model, path);
        assert_eq!(ctx.num_comp_vectors(), 8, "{ioctl:?} {path:?}");
        let dev = ctx.query_device().unwrap();
        assert!(dev.extended);
        let b = dev.resp.base;
        assert_eq!(
            (b.vendor_id, b.vendor_part_id, b.fw_ver),
            (0x02c9, 4125, caps::FW_VER)
        );
        assert_eq!(
            <uverbs_drivers::mlx5::Mlx5Context as uverbs_drivers::backend::Provider>::format_fw_ver(
                b.fw_ver
            ),
            "22.36.1010"
        );
        assert_eq!(
            (b.max_qp, b.max_qp_wr, b.max_sge, b.max_cq, b.max_cqe),
            (1 << 17, 32768, 30, 1 << 24, 4194303)
        );
        assert_eq!(
            (b.max_mw, b.atomic_cap, b.phys_port_cnt, b.max_qp_rd_atom),
            (0, 1, 1, 16)
        );
        assert_eq!((b.max_srq_wr, b.max_srq_sge), (32767, 31));
        assert_eq!(u64::from_be(b.node_guid), DEFAULT_NODE_GUID);
        assert_eq!(ctx.info().node_guid().unwrap(), DEFAULT_NODE_GUID);
        let port = ctx.query_port(1).unwrap().legacy_resp;
        assert_eq!(
            (port.state, port.max_mtu, port.active_mtu, port.link_layer),
            (4, 5, 5, 2)
        );
        assert_eq!(
            (port.gid_tbl_len, port.port_cap_flags, port.phys_state),
            (255, 0x0401_0000, 5)
        );
        assert_eq!(errno(ctx.query_port(2).unwrap_err()), Errno::EINVAL);
        let gids = ctx.query_gid_table(16).unwrap();
        assert_eq!(gids.len(), 2, "{ioctl:?} {path:?}");
        let g1 = gids[1];
        assert_eq!(
            (g1.gid_index, g1.port_num, g1.gid_type),
            (1, 1, uapi::IB_UVERBS_GID_TYPE_ROCE_V2)
        );
        assert_eq!(g1.gid.as_bytes(), &ModelConfig::default().gids[1]);
        assert_eq!(g1.netdev_ifindex, gids[0].netdev_ifindex);
        let e = ctx.query_gid_entry(1, 1).unwrap().unwrap();
        assert_eq!(e.gid, g1.gid);
        assert!(ctx.query_gid_entry(1, 7).unwrap().is_none());
        model.set_port_active(false);
        assert_eq!(ctx.query_port(1).unwrap().legacy_resp.state, 1);
        let ev = ctx
            .read_async_event(Some(Duration::from_secs(5)))
            .unwrap()
            .unwrap();
        assert_eq!((ev.element, ev.event_type), (1, 10));
    }
}

#[test]
fn pds_and_mrs() {
    for (ioctl, path) in PATHS {
        let model = Mlx5Model::with_config(ModelConfig {
            ioctl,
            ..ModelConfig::default()
        })
        .unwrap();
        let ctx = open(&model, path);
        let mut pd_resp = uapi::mlx5_ib_alloc_pd_resp::new_zeroed();
        let pd = cmd::alloc_pd(&ctx, pd_resp.as_mut_bytes()).unwrap();
        assert_ne!(pd_resp.pdn, 0);
        // mlx5 needs room for its answer.
        assert_eq!(
            errno(cmd::alloc_pd(&ctx, &mut []).unwrap_err()),
            Errno::EFAULT
        );
        let mem = pages(4);
        let rw = uapi::IB_UVERBS_ACCESS_LOCAL_WRITE | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE;
        let a = mem.as_ptr() as u64;
        // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
        let keys = unsafe { cmd::reg_mr(&ctx, pd, a, 4 * 4096, a, rw) }.unwrap();
        assert_eq!(keys.lkey, keys.rkey);
        assert_ne!(keys.lkey, 0x100);
        // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
        let keys2 = unsafe { cmd::reg_mr(&ctx, pd, a + 16, 100, 0x1000_0010, rw) }.unwrap();
        assert_ne!(keys2.lkey, keys.lkey);
        // The kernel's refusals.
        let e = |r: uverbs_drivers::Result<uverbs_drivers::cmd::MrKeys>| errno(r.unwrap_err());
        assert_eq!(
            // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
            e(unsafe { cmd::reg_mr(&ctx, pd, 0x1000, 4096, 0x1000, rw) }),
            Errno::EFAULT
        );
        assert_eq!(
            // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
            e(unsafe { cmd::reg_mr(&ctx, pd, a, 0, a, rw) }),
            Errno::EINVAL
        );
        assert_eq!(
            // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
            e(unsafe { cmd::reg_mr(&ctx, pd, a, 4096, a + 1, rw) }),
            Errno::EINVAL
        );
        assert_eq!(
            // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
            e(unsafe { cmd::reg_mr(&ctx, pd, a, 4096, a, uapi::IB_UVERBS_ACCESS_REMOTE_WRITE) }),
            Errno::EINVAL
        );
        assert_eq!(
            // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
            e(unsafe { cmd::reg_mr(&ctx, pd, a, 4096, a, 1 << 15) }),
            Errno::EINVAL
        );
        // On demand: memory that is not mapped yet registers (nothing is pinned), but the
        // implicit region (the whole address space) must be at IOVA 0.
        let odp = uapi::IB_UVERBS_ACCESS_ON_DEMAND | uapi::IB_UVERBS_ACCESS_LOCAL_WRITE;
        // SAFETY: no work is posted; the region names no memory of this process that is mapped.
        assert!(unsafe { cmd::reg_mr(&ctx, pd, 0x1000, 4096, 0x1000, odp) }.is_ok());
        assert_eq!(
            // SAFETY: refused, so nothing is registered.
            e(unsafe { cmd::reg_mr(&ctx, pd, 0, u64::MAX, 0x1000, odp) }),
            Errno::EINVAL
        );
        assert_eq!(
            // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
            e(unsafe { cmd::reg_mr(&ctx, pd + 100, a, 4096, a, rw) }),
            Errno::EINVAL
        );
        assert_eq!(
            // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
            e(unsafe { cmd::reg_mr(&ctx, pd, a, 5 * 4096, a, rw) }),
            Errno::EFAULT
        );
        let code = pds_and_mrs as *const () as usize as u64;
        assert_eq!(
            // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
            e(unsafe { cmd::reg_mr(&ctx, pd, code, 64, code, rw) }),
            Errno::EFAULT
        );
        // SAFETY: no work is posted, and `drop(ctx)` below deregisters before `mem` drops.
        unsafe { cmd::reg_mr(&ctx, pd, code, 64, code, 0) }.unwrap();
        assert!(matches!(
            cmd::alloc_mw(&ctx, pd, 2),
            Err(Error::Unsupported { .. })
        ));
        // The PD is busy while its MRs exist.
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            errno(unsafe { cmd::dealloc_pd(&ctx, pd) }.unwrap_err()),
            Errno::EBUSY
        );
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::dereg_mr(&ctx, keys.handle) }.unwrap();
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            errno(unsafe { cmd::dereg_mr(&ctx, keys.handle) }.unwrap_err()),
            Errno::ENOENT
        );
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            errno(unsafe { cmd::dereg_mr(&ctx, pd) }.unwrap_err()),
            Errno::EINVAL
        );
        // keys2, the one over code, and the on-demand one.
        assert_eq!(model.stats().mrs, 3);
        drop(ctx);
        // Closing the file releases what was left.
        let s = model.stats();
        assert_eq!(
            (s.pds, s.mrs, s.contexts, s.files),
            (0, 0, 0, 0),
            "{ioctl:?} {path:?}"
        );
    }
}

#[test]
fn cqs_channels_and_events() {
    for (ioctl, path) in PATHS {
        let (model, rec) = recorded(ModelConfig {
            ioctl,
            ..ModelConfig::default()
        });
        let ctx = open(&model, path);
        let chan = cmd::create_comp_channel(&ctx).unwrap();
        let mem = CqMem::new(15);
        // SAFETY: no work is posted; the CQ is destroyed below, before `mem` drops.
        let (h, cqe, cqn) = unsafe { create_cq(&ctx, &mem, Some(chan.as_fd()), 0xc0ffee) }.unwrap();
        assert_eq!(cqe, 15);
        let d = *rec.cqs.lock().unwrap().last().unwrap();
        assert_eq!((d.cqn, d.ncqe, d.cqe_size, d.cqe_version), (cqn, 16, 64, 1));
        assert_eq!(
            (d.buf, d.dbrec),
            (mem.buf.as_ptr() as usize, mem.db.as_ptr() as usize)
        );
        // Two completion events; the user reads one; destroy drops the other.
        model.dev.events.completion(cqn);
        model.dev.events.completion(cqn);
        assert_eq!(
            uverbs_drivers::event::read_comp_event(chan.as_fd(), Some(Duration::ZERO)).unwrap(),
            Some(0xc0ffee)
        );
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            unsafe { cmd::destroy_cq(&ctx, h) }.unwrap(),
            (1, 0),
            "{ioctl:?} {path:?}"
        );
        assert_eq!(
            uverbs_drivers::event::read_comp_event(chan.as_fd(), Some(Duration::ZERO)).unwrap(),
            None
        );
        // Refusals.
        let e = |cmd: uapi::mlx5_ib_create_cq, cqe: u32| {
            let mut resp = uapi::mlx5_ib_create_cq_resp::new_zeroed();
            errno(
                // SAFETY: refused (asserted), so no CQ uses what the command names.
                unsafe {
                    cmd::create_cq_with_udata(
                        &ctx,
                        cqe,
                        0,
                        0,
                        None,
                        cmd.as_bytes(),
                        resp.as_mut_bytes(),
                    )
                }
                .unwrap_err(),
            )
        };
        let good = mem.cmd();
        let mut c = good;
        c.cqe_size = 32;
        assert_eq!(e(c, 15), Errno::EINVAL);
        let mut c = good;
        c.buf_addr = 0x1000;
        assert_eq!(e(c, 15), Errno::EFAULT);
        let mut c = good;
        c.db_addr = 0x1000;
        assert_eq!(e(c, 15), Errno::EFAULT);
        let mut c = good;
        c.db_addr += 4;
        assert_eq!(e(c, 15), Errno::EINVAL);
        let mut c = good;
        c.buf_addr += 32;
        assert_eq!(e(c, 15), Errno::EINVAL);
        let mut c = good;
        c.cqe_comp_en = 1;
        assert_eq!(e(c, 15), Errno::EOPNOTSUPP);
        let mut c = good;
        c.flags = uapi::MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX;
        assert_eq!(e(c, 15), Errno::EINVAL);
        let mut c = good;
        c.reserved1 = 1;
        assert_eq!(e(c, 15), Errno::EINVAL);
        assert_eq!(
            e(good, 64),
            Errno::EFAULT,
            "a buffer too small for the entries"
        );
        assert_eq!(e(good, 1 << 22), Errno::EINVAL);
        let mut resp = uapi::mlx5_ib_create_cq_resp::new_zeroed();
        assert_eq!(
            errno(
                // SAFETY: refused (asserted), so no CQ uses what the command names.
                unsafe {
                    cmd::create_cq_with_udata(
                        &ctx,
                        15,
                        0,
                        8,
                        None,
                        good.as_bytes(),
                        resp.as_mut_bytes(),
                    )
                }
                .unwrap_err()
            ),
            Errno::EINVAL,
            "comp_vector"
        );
        assert_eq!(
            errno(
                // SAFETY: refused (asserted), so no CQ uses what the command names.
                unsafe {
                    cmd::create_cq_with_udata(
                        &ctx,
                        15,
                        0,
                        0,
                        None,
                        &good.as_bytes()[..16],
                        resp.as_mut_bytes(),
                    )
                }
                .unwrap_err()
            ),
            Errno::EINVAL
        );
        assert_eq!(
            errno(
                // SAFETY: refused (asserted), so no CQ uses what the command names.
                unsafe {
                    cmd::create_cq_with_udata(&ctx, 15, 0, 0, None, good.as_bytes(), &mut [])
                }
                .unwrap_err()
            ),
            Errno::EFAULT,
            "no room for the CQ number"
        );
        let not_a_channel = ctx.async_fd();
        assert_eq!(
            errno(
                // SAFETY: refused (asserted), so no CQ uses what the command names.
                unsafe {
                    cmd::create_cq_with_udata(
                        &ctx,
                        15,
                        0,
                        0,
                        Some(not_a_channel),
                        good.as_bytes(),
                        resp.as_mut_bytes(),
                    )
                }
                .unwrap_err()
            ),
            Errno::EBADF
        );
        assert_eq!(model.stats().cqs, 0);
        // An async event of a CQ reaches the context's event file with the CQ's handle.
        // SAFETY: no work is posted; the CQ is destroyed below, before `mem` drops.
        let (h, _, cqn) = unsafe { create_cq(&ctx, &mem, None, 0xabc) }.unwrap();
        model.dev.events.async_event(0, hca::ObjectKind::Cq, cqn);
        let ev = ctx
            .read_async_event(Some(Duration::from_secs(1)))
            .unwrap()
            .unwrap();
        assert_eq!((ev.element, ev.event_type), (0xabc, 0));
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        assert_eq!(unsafe { cmd::destroy_cq(&ctx, h) }.unwrap(), (0, 1));
        // An unused channel the user closed is collected at the next creation.
        drop(chan);
        let c2 = cmd::create_comp_channel(&ctx).unwrap();
        assert_eq!(model.stats().event_files, 2, "{ioctl:?} {path:?}");
        drop(c2);
    }
}

#[test]
fn qps_modify_query_and_destroy() {
    for (ioctl, path) in PATHS {
        let (model, rec) = recorded(ModelConfig {
            ioctl,
            ..ModelConfig::default()
        });
        let ctx = open(&model, path);
        let pd = alloc_pd(&ctx);
        let cqm = CqMem::new(63);
        // SAFETY: no work is posted, so the device never touches what the command names.
        let (cq, _, cqn) = unsafe { create_cq(&ctx, &cqm, None, 1) }.unwrap();
        let qm = QpMem::new(16, 64);
        let init = qp_init(pd, cq, uapi::IB_UVERBS_QPT_RC, 16);
        // SAFETY: no work is posted, so the device never touches what the command names.
        let (qp, resp) = unsafe { create_qp(&ctx, &init, &qm.cmd(7)) }.unwrap();
        // The first QP of a context gets the first high-class bfreg: index 24, on UAR 6.
        assert_eq!(resp.bfreg_index, 24);
        assert_eq!(qp.cap, init.cap);
        let d = *rec.qps.lock().unwrap().last().unwrap();
        let uar = rec.cqs.lock().unwrap().last().unwrap().uar;
        assert_eq!(d.qpn, qp.qpn);
        assert_eq!(d.bf_reg - uar, 6 * 4096 + 0x800);
        assert_eq!(
            (d.rq_wqe_cnt, d.rq_wqe_shift, d.sq_offset, d.sq_wqe_cnt),
            (16, 5, 512, 64)
        );
        assert_eq!(
            (d.send_cqn, d.recv_cqn, d.uidx, d.srqn, d.bf_buf_size),
            (cqn, cqn, 7, None, 256)
        );
        // The CQ is busy while the QP uses it.
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            errno(unsafe { cmd::destroy_cq(&ctx, cq) }.unwrap_err()),
            Errno::EBUSY
        );
        // Invalid transitions and attributes.
        let e = |mask: u32, f: fn(&mut uapi::ib_uverbs_modify_qp)| {
            errno(modify(&ctx, qp.handle, mask, f).unwrap_err())
        };
        assert_eq!(e(m::STATE, |r| r.qp_state = qps::RTS), Errno::EINVAL);
        assert_eq!(
            e(m::STATE | m::PKEY_INDEX | m::PORT, |r| {
                r.qp_state = qps::INIT;
                r.port_num = 1;
            }),
            Errno::EINVAL
        );
        assert_eq!(
            e(m::STATE | m::PKEY_INDEX | m::PORT | m::ACCESS_FLAGS, |r| {
                r.qp_state = qps::INIT;
                r.port_num = 2;
            }),
            Errno::EINVAL
        );
        assert_eq!(e(m::STATE, |r| r.qp_state = 9), Errno::EINVAL);
        assert_eq!(e(1 << 21, |_| ()), Errno::EOPNOTSUPP);
        // RESET → RESET is nothing.
        modify(&ctx, qp.handle, m::STATE, |r| r.qp_state = qps::RESET).unwrap();
        connect_rc(&ctx, qp.handle, qp.qpn).unwrap();
        let q = cmd::query_qp(&ctx, qp.handle, 0).unwrap();
        assert_eq!(
            (q.qp_state, q.path_mtu, q.dest_qp_num, q.port_num),
            (qps::RTS, 5, qp.qpn, 1)
        );
        assert_eq!(
            (
                q.timeout,
                q.retry_cnt,
                q.rnr_retry,
                q.max_rd_atomic,
                q.max_dest_rd_atomic
            ),
            (14, 7, 7, 1, 1)
        );
        assert_eq!(
            q.qp_access_flags,
            uapi::IB_UVERBS_ACCESS_REMOTE_WRITE | uapi::IB_UVERBS_ACCESS_REMOTE_READ
        );
        assert_eq!(
            (q.dest.is_global, q.dest.sgid_index, q.dest.port_num),
            (1, 1, 1)
        );
        assert_eq!(q.dest.dgid, ModelConfig::default().gids[1]);
        assert_eq!((q.max_recv_wr, q.max_recv_sge, q.max_send_wr), (16, 2, 0));
        // Access flags reach the HCA without remote reads before responder resources exist.
        let mods = rec.modifies.lock().unwrap().clone();
        assert_eq!(mods[0].1.access, uapi::IB_UVERBS_ACCESS_REMOTE_WRITE);
        assert_eq!(
            mods[1].1.access & uapi::IB_UVERBS_ACCESS_REMOTE_READ,
            uapi::IB_UVERBS_ACCESS_REMOTE_READ
        );
        // RTS → ERR → RESET.
        modify(&ctx, qp.handle, m::STATE, |r| r.qp_state = qps::ERR).unwrap();
        assert_eq!(
            cmd::query_qp(&ctx, qp.handle, 0).unwrap().qp_state,
            qps::ERR
        );
        assert_eq!(
            e(m::STATE | m::CUR_STATE, |r| {
                r.qp_state = qps::RTS;
                r.cur_qp_state = qps::SQE;
            }),
            Errno::EINVAL
        );
        modify(&ctx, qp.handle, m::STATE, |r| r.qp_state = qps::RESET).unwrap();
        // A path needs a valid source GID.
        modify(
            &ctx,
            qp.handle,
            m::STATE | m::PKEY_INDEX | m::PORT | m::ACCESS_FLAGS,
            |r| {
                r.qp_state = qps::INIT;
                r.port_num = 1;
            },
        )
        .unwrap();
        let rtr = m::STATE
            | m::AV
            | m::PATH_MTU
            | m::DEST_QPN
            | m::RQ_PSN
            | m::MAX_DEST_RD_ATOMIC
            | m::MIN_RNR_TIMER;
        assert_eq!(
            e(rtr, |r| {
                r.qp_state = qps::RTR;
                r.path_mtu = 5;
                r.dest.is_global = 1;
                r.dest.port_num = 1;
                r.dest.sgid_index = 9;
            }),
            Errno::ENODATA
        );
        assert_eq!(
            e(rtr, |r| {
                r.qp_state = qps::RTR;
                r.path_mtu = 5;
                r.dest.is_global = 1;
                r.dest.port_num = 1;
                r.dest.sgid_index = 255;
            }),
            Errno::EINVAL
        );
        assert_eq!(
            e(rtr, |r| {
                r.qp_state = qps::RTR;
                r.path_mtu = 5;
                r.dest.port_num = 1;
            }),
            Errno::EINVAL
        );
        assert_eq!(
            e(rtr, |r| {
                r.qp_state = qps::RTR;
                r.path_mtu = 6;
                r.dest.is_global = 1;
                r.dest.port_num = 1;
            }),
            Errno::EINVAL
        );
        // Creation refusals.
        let ce = |init: &uverbs_drivers::cmd::QpInit, cmd: &uapi::mlx5_ib_create_qp| {
            // SAFETY: refused (asserted), so no QP uses what the command names.
            errno(unsafe { create_qp(&ctx, init, cmd) }.unwrap_err())
        };
        assert_eq!(
            ce(&init, &qm.cmd(0xff_ffff)),
            Errno::EINVAL,
            "cqe version 1 needs a user index"
        );
        assert_eq!(ce(&init, &qm.cmd(1 << 24)), Errno::EINVAL);
        let mut c = qm.cmd(1);
        c.rq_wqe_count = 8;
        c.rq_wqe_shift = 6;
        let mut i = init;
        i.cap.max_recv_wr = 0;
        assert_eq!(ce(&i, &c), Errno::EINVAL, "no RQ, yet RQ sizes");
        let mut c = qm.cmd(1);
        c.sq_wqe_count = 48;
        assert_eq!(ce(&init, &c), Errno::EINVAL);
        let mut c = qm.cmd(1);
        c.flags = uapi::MLX5_QP_FLAG_BFREG_INDEX;
        assert_eq!(ce(&init, &c), Errno::EINVAL);
        let mut c = qm.cmd(1);
        c.buf_addr = 0x1000;
        assert_eq!(ce(&init, &c), Errno::EFAULT);
        let mut c = qm.cmd(1);
        c.db_addr = 0;
        assert_eq!(ce(&init, &c), Errno::EFAULT);
        assert_eq!(
            errno(
                // SAFETY: refused (asserted), so no QP uses what the command names.
                unsafe {
                    cmd::create_qp_with_udata(&ctx, &init, &qm.cmd(1).as_bytes()[..40], &mut [])
                }
                .unwrap_err()
            ),
            Errno::EINVAL,
            "udata too short"
        );
        let mut long = qm.cmd(1).as_bytes().to_vec();
        long.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(
            // SAFETY: refused (asserted), so no QP uses what the command names.
            errno(unsafe { cmd::create_qp_with_udata(&ctx, &init, &long, &mut []) }.unwrap_err()),
            Errno::EINVAL,
            "non-zero bytes after the request"
        );
        let mut i = init;
        i.qp_type = uapi::IB_UVERBS_QPT_RAW_PACKET;
        assert!(matches!(
            // SAFETY: refused (asserted), so no QP uses what the command names.
            errno(unsafe { create_qp(&ctx, &i, &qm.cmd(1)) }.unwrap_err()),
            Errno::EOPNOTSUPP | Errno::EPERM
        ));
        let mut i = init;
        i.pd = cq;
        assert!(matches!(
            // SAFETY: refused (asserted), so no QP uses what the command names.
            errno(unsafe { create_qp(&ctx, &i, &qm.cmd(1)) }.unwrap_err()),
            Errno::EINVAL
        ));
        // A QP without a driver answer buffer is fine.
        // SAFETY: no work is posted; destroyed on the next line.
        let c2 = unsafe { cmd::create_qp_with_udata(&ctx, &init, qm.cmd(2).as_bytes(), &mut []) }
            .unwrap();
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::destroy_qp(&ctx, c2.handle) }.unwrap();
        // UD and multicast.
        let ud = qp_init(pd, cq, uapi::IB_UVERBS_QPT_UD, 16);
        // SAFETY: no work is posted, so the device never touches what the command names.
        let (udqp, _) = unsafe { create_qp(&ctx, &ud, &qm.cmd(3)) }.unwrap();
        let mgid = {
            let mut g = [0u8; 16];
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(&[239, 1, 2, 3]);
            g
        };
        assert_eq!(
            errno(cmd::attach_mcast(&ctx, qp.handle, &mgid, 0).unwrap_err()),
            Errno::EINVAL
        );
        assert_eq!(
            errno(
                cmd::attach_mcast(&ctx, udqp.handle, &ModelConfig::default().gids[1], 0)
                    .unwrap_err()
            ),
            Errno::EINVAL
        );
        cmd::attach_mcast(&ctx, udqp.handle, &mgid, 0).unwrap();
        cmd::attach_mcast(&ctx, udqp.handle, &mgid, 0).unwrap();
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            errno(unsafe { cmd::destroy_qp(&ctx, udqp.handle) }.unwrap_err()),
            Errno::EBUSY
        );
        cmd::detach_mcast(&ctx, udqp.handle, &mgid, 0).unwrap();
        assert_eq!(
            errno(cmd::detach_mcast(&ctx, udqp.handle, &mgid, 0).unwrap_err()),
            Errno::EINVAL
        );
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::destroy_qp(&ctx, udqp.handle) }.unwrap();
        // An async event of the QP.
        model.dev.events.async_event(3, hca::ObjectKind::Qp, qp.qpn);
        let ev = ctx
            .read_async_event(Some(Duration::from_secs(1)))
            .unwrap()
            .unwrap();
        assert_eq!((ev.element, ev.event_type), (0x5150, 3));
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        assert_eq!(unsafe { cmd::destroy_qp(&ctx, qp.handle) }.unwrap(), 1);
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            errno(unsafe { cmd::destroy_qp(&ctx, qp.handle) }.unwrap_err()),
            Errno::ENOENT
        );
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::destroy_cq(&ctx, cq) }.unwrap();
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::dealloc_pd(&ctx, pd) }.unwrap();
        let s = model.stats();
        assert_eq!((s.qps, s.cqs, s.pds), (0, 0, 0), "{ioctl:?} {path:?}");
    }
}

#[test]
fn srqs_and_ahs() {
    for (ioctl, path) in PATHS {
        let (model, rec) = recorded(ModelConfig {
            ioctl,
            ..ModelConfig::default()
        });
        let ctx = open(&model, path);
        let pd = alloc_pd(&ctx);
        let buf = pages(2);
        let db = pages(1);
        let mut cmd = uapi::mlx5_ib_create_srq::new_zeroed();
        cmd.buf_addr = buf.as_ptr() as u64;
        cmd.db_addr = db.as_ptr() as u64 + 64;
        cmd.uidx = 9;
        let init = uverbs_drivers::cmd::srq::SrqInit {
            pd,
            max_wr: 100,
            max_sge: 2,
            limit: 10,
            user_handle: 0x5e,
        };
        let mut resp = uapi::mlx5_ib_create_srq_resp::new_zeroed();
        // SAFETY: no work is posted, so the device never touches `buf` or `db`.
        let srq = unsafe {
            cmd::srq::create_srq_with_udata(&ctx, &init, cmd.as_bytes(), resp.as_mut_bytes())
        }
        .unwrap();
        assert_eq!((srq.max_wr, srq.max_sge, srq.srqn), (127, 2, 0));
        let d = *rec.srqs.lock().unwrap().last().unwrap();
        assert_eq!(
            (d.srqn, d.wqe_cnt, d.wqe_shift, d.uidx),
            (resp.srqn, 128, 6, 9)
        );
        // The limit given at creation is not armed (ibv_create_srq ignores it).
        assert_eq!(cmd::srq::query_srq(&ctx, srq.handle).unwrap().srq_limit, 0);
        // SAFETY: no driver data: the command names no memory.
        unsafe {
            cmd::srq::modify_srq(
                &ctx,
                srq.handle,
                uverbs_drivers::cmd::srq::attr_mask::LIMIT,
                0,
                5,
                &[],
            )
        }
        .unwrap();
        let q = cmd::srq::query_srq(&ctx, srq.handle).unwrap();
        assert_eq!((q.max_wr, q.max_sge, q.srq_limit), (127, 2, 5));
        assert_eq!(
            errno(
                // SAFETY: no driver data: the command names no memory.
                unsafe {
                    cmd::srq::modify_srq(
                        &ctx,
                        srq.handle,
                        uverbs_drivers::cmd::srq::attr_mask::LIMIT,
                        0,
                        128,
                        &[],
                    )
                }
                .unwrap_err()
            ),
            Errno::EINVAL
        );
        assert_eq!(
            errno(
                // SAFETY: no driver data: the command names no memory.
                unsafe {
                    cmd::srq::modify_srq(
                        &ctx,
                        srq.handle,
                        uverbs_drivers::cmd::srq::attr_mask::MAX_WR,
                        200,
                        0,
                        &[],
                    )
                }
                .unwrap_err()
            ),
            Errno::EINVAL
        );
        let mut big = init;
        big.max_wr = 32768;
        assert_eq!(
            errno(
                // SAFETY: refused (asserted), so no SRQ uses what the command names.
                unsafe {
                    cmd::srq::create_srq_with_udata(&ctx, &big, cmd.as_bytes(), resp.as_mut_bytes())
                }
                .unwrap_err()
            ),
            Errno::EINVAL
        );
        let mut c = cmd;
        c.reserved0 = 1;
        assert_eq!(
            errno(
                // SAFETY: refused (asserted), so no SRQ uses what the command names.
                unsafe {
                    cmd::srq::create_srq_with_udata(&ctx, &init, c.as_bytes(), resp.as_mut_bytes())
                }
                .unwrap_err()
            ),
            Errno::EINVAL
        );
        let mut c = cmd;
        c.buf_addr = 0x2000;
        assert_eq!(
            errno(
                // SAFETY: refused (asserted), so no SRQ uses what the command names.
                unsafe {
                    cmd::srq::create_srq_with_udata(&ctx, &init, c.as_bytes(), resp.as_mut_bytes())
                }
                .unwrap_err()
            ),
            Errno::EFAULT
        );
        // A QP on the SRQ has no RQ of its own and keeps the SRQ busy.
        let cqm = CqMem::new(15);
        // SAFETY: no work is posted, so the device never touches what the command names.
        let (cq, _, _) = unsafe { create_cq(&ctx, &cqm, None, 1) }.unwrap();
        let qm = QpMem::new(0, 16);
        let mut qi = qp_init(pd, cq, uapi::IB_UVERBS_QPT_RC, 8);
        qi.srq = Some(srq.handle);
        // SAFETY: no work is posted, so the device never touches what the command names.
        let (qp, _) = unsafe { create_qp(&ctx, &qi, &qm.cmd(4)) }.unwrap();
        assert_eq!((qp.cap.max_recv_wr, qp.cap.max_recv_sge), (0, 0));
        assert_eq!(
            rec.qps.lock().unwrap().last().unwrap().srqn,
            Some(resp.srqn)
        );
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            errno(unsafe { cmd::srq::destroy_srq(&ctx, srq.handle) }.unwrap_err()),
            Errno::EBUSY
        );
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::destroy_qp(&ctx, qp.handle) }.unwrap();
        model
            .dev
            .events
            .async_event(15, hca::ObjectKind::Srq, resp.srqn);
        let ev = ctx
            .read_async_event(Some(Duration::from_secs(1)))
            .unwrap()
            .unwrap();
        assert_eq!((ev.element, ev.event_type), (0x5e, 15));
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            unsafe { cmd::srq::destroy_srq(&ctx, srq.handle) }.unwrap(),
            1
        );

        // Address handles: the destination MAC a neighbour table gives.
        let ah = |dgid: [u8; 16], sgid: u8| -> uverbs_drivers::Result<[u8; 6]> {
            let mut attr = uapi::ib_uverbs_ah_attr::new_zeroed();
            attr.is_global = 1;
            attr.port_num = 1;
            attr.grh.dgid = dgid;
            attr.grh.sgid_index = sgid;
            let mut resp = uapi::mlx5_ib_create_ah_resp::new_zeroed();
            let h = cmd::create_ah(&ctx, pd, &attr, resp.as_mut_bytes())?;
            assert_eq!(resp.response_length, 10);
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            unsafe { cmd::destroy_ah(&ctx, h) }?;
            Ok(resp.dmac)
        };
        let gids = ModelConfig::default().gids;
        assert_eq!(ah(gids[1], 1).unwrap(), [0; 6]);
        let mac = model.config().mac();
        assert_eq!(ah(gids[0], 0).unwrap(), [0; 6], "own GID on lo");
        let mut other = gids[0];
        other[15] ^= 1;
        let mut expect = mac;
        expect[5] ^= 1;
        assert_eq!(
            ah(other, 0).unwrap(),
            expect,
            "link-local: the MAC inside the GID"
        );
        let mut v4 = gids[1];
        v4[12..].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(ah(v4, 1).unwrap(), [2, 0, 10, 0, 0, 2]);
        v4[12..].copy_from_slice(&[239, 129, 2, 3]);
        assert_eq!(ah(v4, 1).unwrap(), [1, 0, 0x5e, 1, 2, 3]);
        assert_eq!(errno(ah(gids[1], 7).unwrap_err()), Errno::ENODATA);
        let mut attr = uapi::ib_uverbs_ah_attr::new_zeroed();
        attr.port_num = 1;
        let mut r = uapi::mlx5_ib_create_ah_resp::new_zeroed();
        assert_eq!(
            errno(cmd::create_ah(&ctx, pd, &attr, r.as_mut_bytes()).unwrap_err()),
            Errno::EINVAL,
            "RoCE needs the GRH"
        );
        attr.is_global = 1;
        assert_eq!(
            errno(cmd::create_ah(&ctx, pd, &attr, &mut r.as_mut_bytes()[..8]).unwrap_err()),
            Errno::EINVAL,
            "mlx5 needs room for the MAC"
        );
        let h = cmd::create_ah(&ctx, pd, &attr, r.as_mut_bytes()).unwrap();
        assert_eq!(
            // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
            errno(unsafe { cmd::dealloc_pd(&ctx, pd) }.unwrap_err()),
            Errno::EBUSY
        );
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::destroy_ah(&ctx, h) }.unwrap();
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::destroy_cq(&ctx, cq) }.unwrap();
        // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
        unsafe { cmd::dealloc_pd(&ctx, pd) }.unwrap();
    }
}

#[test]
fn uar_pages_are_shared_with_the_model() {
    let model = Mlx5Model::new().unwrap();
    let info = model.device_info();
    let file = model_file(&info);
    let page = uverbs_drivers::sys::page_size();
    assert_eq!(
        file.0.mmap(page, 0).unwrap_err().raw_os_error(),
        Some(libc::EINVAL),
        "no context"
    );
    let ctx = open_info(&info, CommandPath::Auto);
    let file = context_file(&ctx);
    let a = file.0.mmap(page, 7 * page as u64).unwrap();
    let b = file.0.mmap(page, ((2u64 << 8) | 7) * page as u64).unwrap();
    // SAFETY: both mappings are one page long and live; the test is their only user.
    unsafe {
        std::ptr::write_volatile(a.as_mut_ptr().add(0x800).cast::<u64>(), 0x1234);
        assert_eq!(
            std::ptr::read_volatile(b.as_ptr().add(0x800).cast::<u64>()),
            0x1234
        );
    }
    let e = |len: usize, off: u64| file.0.mmap(len, off).unwrap_err().raw_os_error();
    assert_eq!(e(page, 8 * page as u64), Some(libc::EINVAL));
    assert_eq!(e(2 * page, 0), Some(libc::EINVAL));
    assert_eq!(
        e(page, 5 << 8 << page.trailing_zeros()),
        Some(libc::EOPNOTSUPP)
    );
    assert_eq!(e(page, 1 << 8 << page.trailing_zeros()), Some(libc::ENOSYS));
    assert_eq!(e(page, 6 << 8 << page.trailing_zeros()), Some(libc::EINVAL));
    assert_eq!(e(page, 100), Some(libc::EINVAL));
    // Registering UAR memory is refused, as pinning device memory is.
    let mut pd_resp = uapi::mlx5_ib_alloc_pd_resp::new_zeroed();
    let pd = cmd::alloc_pd(&ctx, pd_resp.as_mut_bytes()).unwrap();
    let at = a.as_ptr() as u64;
    assert_eq!(
        // SAFETY: refused (asserted): nothing is registered.
        errno(unsafe { cmd::reg_mr(&ctx, pd, at, 64, at, 0) }.unwrap_err()),
        Errno::EFAULT
    );
}

/// `MLX5_IB_METHOD_UAR_OBJ_ALLOC` of allocation type `ty`: the handle, page index, mmap offset
/// and length.
fn alloc_uar(ctx: &Ucontext, ty: u64) -> std::result::Result<(u32, u32, u64, u32), Errno> {
    use uverbs_drivers::chan::IoctlCmd;
    use uverbs_drivers::error::Verb;
    let (mut page_id, mut offset, mut length) = (0u32, 0u64, 0u32);
    let mut cmd = IoctlCmd::new(uapi::MLX5_IB_OBJECT_UAR, uapi::MLX5_IB_METHOD_UAR_OBJ_ALLOC);
    let h = cmd.new_idr(uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE);
    cmd.in_u64(uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, ty);
    cmd.out_obj(uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, &mut offset);
    cmd.out_obj(uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, &mut length);
    cmd.out_obj(uapi::MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, &mut page_id);
    // SAFETY: the outputs are this function's locals; the new object is the caller's.
    unsafe { ctx.channel().ioctl(Verb::Mmap, &mut cmd) }.map_err(errno)?;
    let handle = cmd.handle(h);
    Ok((handle, page_id, offset, length))
}

/// `MLX5_IB_METHOD_UAR_OBJ_DESTROY`.
fn destroy_uar(ctx: &Ucontext, handle: u32) -> std::result::Result<(), Errno> {
    use uverbs_drivers::chan::IoctlCmd;
    use uverbs_drivers::error::Verb;
    let mut cmd = IoctlCmd::new(
        uapi::MLX5_IB_OBJECT_UAR,
        uapi::MLX5_IB_METHOD_UAR_OBJ_DESTROY,
    );
    cmd.idr(uapi::MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, handle);
    // SAFETY: destroys a UAR object of the test's own, which nothing else uses.
    unsafe { ctx.channel().ioctl(Verb::Mmap, &mut cmd) }.map_err(errno)
}

#[test]
fn dynamic_uars_as_libmlx5_uses_them() {
    const BF: u64 = uapi::MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF as u64;
    const NC: u64 = uapi::MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC as u64;
    let (model, rec) = recorded(ModelConfig::default());
    let info = model.device_info();
    let page = uverbs_drivers::sys::page_size();
    let shift = page.trailing_zeros();
    // libmlx5's request: dynamic UARs asked for, so no static bfregs are given.
    let mut req = uverbs_drivers::mlx5::Mlx5Context::request();
    req.lib_caps |= uapi::MLX5_LIB_CAP_DYN_UAR;
    let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
    let ctx = Ucontext::open(
        &info,
        CommandPath::Auto,
        req.as_bytes(),
        resp.as_mut_bytes(),
    )
    .unwrap();
    assert_eq!((resp.tot_bfregs, resp.num_dyn_bfregs), (0, 0));
    assert_eq!(resp.bf_reg_size, 512);
    let file = context_file(&ctx);
    let e = |len: usize, off: u64| file.0.mmap(len, off).unwrap_err().raw_os_error();
    assert_eq!(e(page, 0), Some(libc::EINVAL), "no static pages");

    // UAR objects: the type is a 32-bit enum of two values; offsets from command 9 on.
    assert_eq!(alloc_uar(&ctx, 2), Err(Errno::EOPNOTSUPP));
    assert_eq!(alloc_uar(&ctx, 1 << 32), Err(Errno::EINVAL));
    let (nc, nc_page, nc_off, len) = alloc_uar(&ctx, NC).unwrap();
    let (bf, bf_page, bf_off, _) = alloc_uar(&ctx, BF).unwrap();
    assert_eq!(len as usize, page);
    assert_eq!(nc_off, (9 << 8) << shift);
    assert_eq!(bf_off, ((9 << 8) | 1) << shift);
    assert_ne!(nc_page, bf_page);
    assert_eq!(model.objects().uars, 2);
    assert_eq!(
        e(2 * page, bf_off),
        Some(libc::EINVAL),
        "the entry's length"
    );
    assert_eq!(
        e(page, ((9 << 8) | 2) << shift),
        Some(libc::EINVAL),
        "no entry"
    );
    let nc_map = file.0.mmap(page, nc_off).unwrap();
    let bf_map = file.0.mmap(page, bf_off).unwrap();
    let again = file.0.mmap(page, bf_off).unwrap();
    // SAFETY: the mappings are one page each and live; the test is their only user.
    unsafe {
        std::ptr::write_volatile(bf_map.as_mut_ptr().add(0xb00).cast::<u64>(), 7);
        assert_eq!(
            std::ptr::read_volatile(again.as_ptr().add(0xb00).cast::<u64>()),
            7
        );
        assert_eq!(
            std::ptr::read_volatile(nc_map.as_ptr().add(0xb00).cast::<u64>()),
            0
        );
        std::ptr::write_volatile(bf_map.as_mut_ptr().add(0xb00).cast::<u64>(), 0);
    }
    drop(again);

    // A CQ names its UAR page: there is no static one to default to, and an index that is not one
    // of the context's UARs is refused.
    let pd = alloc_pd(&ctx);
    let chan = cmd::create_comp_channel(&ctx).unwrap();
    let cqm = CqMem::new(15);
    for i in 0..cqm.ncqe as usize {
        // SAFETY: the buffer holds `ncqe` 64-byte entries; op_own is the last byte of each.
        unsafe { cqm.buf.as_ptr().cast_mut().add(i * 64 + 63).write(0xf0) };
    }
    let new_cq = |cmd: &uapi::mlx5_ib_create_cq| {
        let mut out = uapi::mlx5_ib_create_cq_resp::new_zeroed();
        // SAFETY: `cmd` names `cqm`'s ring and doorbell record, which outlive the CQ (destroyed
        // below).
        unsafe {
            cmd::create_cq_with_udata(
                &ctx,
                cqm.ncqe - 1,
                0xfeed,
                0,
                Some(chan.as_fd()),
                cmd.as_bytes(),
                out.as_mut_bytes(),
            )
        }
        .map(|(h, _)| (h, out.cqn))
        .map_err(errno)
    };
    let mut cmd = cqm.cmd();
    assert_eq!(new_cq(&cmd), Err(Errno::EINVAL));
    cmd.flags = uapi::MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX;
    cmd.uar_page_index = (nc_page + bf_page + 1) as u16;
    assert_eq!(new_cq(&cmd), Err(Errno::EINVAL));
    cmd.uar_page_index = nc_page as u16;
    let (cq, cqn) = new_cq(&cmd).unwrap();

    // A QP names its page too (in `bfreg_index`): no static bfreg, no legacy dynamic bfreg, not
    // both flags; the answer names no bfreg.
    let qm = QpMem::new(16, 16);
    let init = qp_init(pd, cq, uapi::IB_UVERBS_QPT_RC, 16);
    let new_qp = |flags: u32, index: u32| {
        let mut c = qm.cmd(1);
        c.flags = flags;
        c.bfreg_index = index;
        // SAFETY: `qm` outlives the QP (destroyed below).
        unsafe { create_qp(&ctx, &init, &c) }.map_err(errno)
    };
    assert_eq!(new_qp(0, 0).unwrap_err(), Errno::EINVAL);
    assert_eq!(
        new_qp(uapi::MLX5_QP_FLAG_BFREG_INDEX, 0).unwrap_err(),
        Errno::EINVAL
    );
    let both = uapi::MLX5_QP_FLAG_BFREG_INDEX | uapi::MLX5_QP_FLAG_UAR_PAGE_INDEX;
    assert_eq!(new_qp(both, bf_page).unwrap_err(), Errno::EINVAL);
    assert_eq!(
        new_qp(uapi::MLX5_QP_FLAG_UAR_PAGE_INDEX, 0xdead).unwrap_err(),
        Errno::EINVAL
    );
    let (qp, qp_resp) = new_qp(uapi::MLX5_QP_FLAG_UAR_PAGE_INDEX, bf_page).unwrap();
    assert_eq!(qp_resp.bfreg_index, 1 << 31, "MLX5_IB_INVALID_BFREG");
    let desc = *rec.qps.lock().unwrap().last().unwrap();
    assert_eq!((desc.bf_regs, desc.bf_buf_size), (2, 256));
    connect_rc(&ctx, qp.handle, qp.qpn).unwrap();

    // An RDMA WRITE: the CQ armed through the NC page, the WQE copied (BlueFlame) into the BF
    // page's second register, where libmlx5 puts the second QP of a page.
    let mut mem = pages(1);
    mem[..8].copy_from_slice(b"dyn-uar!");
    let a = mem.as_ptr() as u64;
    let rw = uapi::IB_UVERBS_ACCESS_LOCAL_WRITE | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE;
    // SAFETY: deregistered at the end, before `mem`; the WRITEs are waited for.
    let mr = unsafe { cmd::reg_mr(&ctx, pd, a, 4096, a, rw) }.unwrap();
    let wqe = |index: u16, to: u64| {
        let mut w = [0u8; 64];
        w[0..4].copy_from_slice(&((u32::from(index) << 8) | 0x08).to_be_bytes());
        w[4..8].copy_from_slice(&((qp.qpn << 8) | 3).to_be_bytes());
        w[11] = 0x08; // CQ_UPDATE
        w[16..24].copy_from_slice(&to.to_be_bytes());
        w[24..28].copy_from_slice(&mr.rkey.to_be_bytes());
        w[32..36].copy_from_slice(&8u32.to_be_bytes());
        w[36..40].copy_from_slice(&mr.lkey.to_be_bytes());
        w[40..48].copy_from_slice(&a.to_be_bytes());
        w
    };
    let sq = qm.buf.as_ptr() as usize + 512;
    let first = wqe(0, a + 2048);
    // SAFETY: the WQE goes into the SQ ring the QP owns; the doorbell records are aligned words of
    // pages the test owns; the UAR registers written are inside their one-page mappings.
    unsafe {
        std::ptr::copy_nonoverlapping(first.as_ptr(), sq as *mut u8, 64);
        (*((cqm.db.as_ptr() as usize + 4) as *const std::sync::atomic::AtomicU32))
            .store(0, std::sync::atomic::Ordering::Release);
        let arm = u64::from(cqn);
        std::ptr::write_volatile(nc_map.as_mut_ptr().add(0x20).cast::<u64>(), arm.to_be());
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        (*((qm.db.as_ptr() as usize + 4) as *const std::sync::atomic::AtomicU32))
            .store(1u32.to_be(), std::sync::atomic::Ordering::Release);
        for (i, word) in first.chunks_exact(8).enumerate() {
            std::ptr::write_volatile(
                bf_map.as_mut_ptr().add(0xa00 + 8 * i).cast::<u64>(),
                u64::from_ne_bytes(word.try_into().unwrap()),
            );
        }
    }
    let ev =
        uverbs_drivers::event::read_comp_event(chan.as_fd(), Some(Duration::from_secs(5))).unwrap();
    assert_eq!(ev, Some(0xfeed));
    assert_eq!(&mem[2048..2056], b"dyn-uar!");

    // The UAR object goes while the QP still rings its page: the offset maps nothing more and the
    // next allocation takes it, with another page; the QP's doorbells still reach the HCA (an
    // 8-byte doorbell, into the first register this time).
    destroy_uar(&ctx, bf).unwrap();
    assert_eq!(destroy_uar(&ctx, bf), Err(Errno::ENOENT));
    assert_eq!(model.objects().uars, 1);
    assert_eq!(e(page, bf_off), Some(libc::EINVAL));
    let (bf2, bf2_page, bf2_off, _) = alloc_uar(&ctx, BF).unwrap();
    assert_eq!(bf2_off, bf_off);
    assert_ne!(bf2_page, bf_page);
    let second = wqe(1, a + 2056);
    // SAFETY: as above; the old page is still mapped (`bf_map`).
    unsafe {
        std::ptr::copy_nonoverlapping(second.as_ptr(), (sq + 64) as *mut u8, 64);
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        (*((qm.db.as_ptr() as usize + 4) as *const std::sync::atomic::AtomicU32))
            .store(2u32.to_be(), std::sync::atomic::Ordering::Release);
        std::ptr::write_volatile(
            bf_map.as_mut_ptr().add(0x800).cast::<u64>(),
            u64::from_ne_bytes(second[..8].try_into().unwrap()),
        );
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    // SAFETY: an aligned word of `mem`, which the HCA writes (the test only reads it).
    let landed = || unsafe { std::ptr::read_volatile(mem.as_ptr().add(2056).cast::<[u8; 8]>()) };
    while &landed() != b"dyn-uar!" {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(50));
    let st = model.stats().hca;
    assert_eq!(
        (st.blueflame_copies, st.uar_doorbells, st.doorbells_missing),
        (1, 1, 0),
        "{st:?}"
    );
    assert_eq!(st.arm_doorbell_mismatches, 0, "{st:?}");

    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::destroy_qp(&ctx, qp.handle) }.unwrap();
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::destroy_cq(&ctx, cq) }.unwrap();
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::dereg_mr(&ctx, mr.handle) }.unwrap();
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::dealloc_pd(&ctx, pd) }.unwrap();
    destroy_uar(&ctx, nc).unwrap();
    // UAR objects left at close go with the file.
    assert_eq!(model.objects().uars, 1);
    let _ = bf2;
    drop((ctx, file));
    let left = model.objects();
    assert_eq!((left.contexts, left.uars), (0, 0), "{left:?}");

    // A context of static bfregs may have UAR objects too.
    let sctx = open_info(&info, CommandPath::Auto);
    let (h, _, off, _) = alloc_uar(&sctx, BF).unwrap();
    assert_eq!(off, (9 << 8) << shift);
    destroy_uar(&sctx, h).unwrap();
}

#[test]
fn a_context_its_pds_and_mrs_can_be_imported() {
    // What `ibv_import_device`, `ibv_import_pd` and `ibv_import_mr` ask of a duplicate of the
    // command descriptor: the same file, its context, PD and MR.
    use uverbs_drivers::chan::IoctlCmd;
    use uverbs_drivers::error::Verb;
    let model = Mlx5Model::new().unwrap();
    let info = model.device_info();
    let query_context = |file: &uverbs_drivers::sys::ModelRef, len: usize| {
        let mut out = vec![0xffu8; len];
        let (mut ncomp, mut core) = (0u32, 0u64);
        let mut r = RawIoctl::new(
            uapi::UVERBS_OBJECT_DEVICE,
            uapi::UVERBS_METHOD_QUERY_CONTEXT,
            &[
                attr(
                    uapi::UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS,
                    4,
                    0,
                    std::ptr::addr_of_mut!(ncomp) as u64,
                ),
                attr(
                    uapi::UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT,
                    8,
                    0,
                    std::ptr::addr_of_mut!(core) as u64,
                ),
                attr(
                    uapi::MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
                    len as u16,
                    MAND,
                    out.as_mut_ptr() as u64,
                ),
            ],
        );
        r.run(file).map(|()| (out, ncomp, core))
    };
    // No context yet.
    assert_eq!(
        query_context(&model_file(&info), 72).unwrap_err(),
        Errno::EINVAL
    );
    let mut req = uverbs_drivers::mlx5::Mlx5Context::request();
    req.lib_caps |= uapi::MLX5_LIB_CAP_DYN_UAR;
    let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
    let ctx = Ucontext::open(
        &info,
        CommandPath::Auto,
        req.as_bytes(),
        resp.as_mut_bytes(),
    )
    .unwrap();
    let file = context_file(&ctx);
    // The driver's answer again, byte for byte; its room is at least the whole struct, and more
    // is cleared.
    let (out, ncomp, core) = query_context(&file, 80).unwrap();
    assert_eq!(&out[..72], resp.as_bytes());
    assert_eq!(&out[72..], &[0; 8]);
    assert_eq!(ncomp, ctx.num_comp_vectors());
    assert_eq!(Some(core), ctx.core_support());
    assert_eq!(query_context(&file, 64).unwrap_err(), Errno::EINVAL);
    let mut r = RawIoctl::new(
        uapi::UVERBS_OBJECT_DEVICE,
        uapi::UVERBS_METHOD_QUERY_CONTEXT,
        &[],
    );
    assert_eq!(
        r.run(&file),
        Err(Errno::EINVAL),
        "the driver's output is mandatory"
    );

    // PD_QUERY: the PD number of a PD handle.
    let mut pd_resp = uapi::mlx5_ib_alloc_pd_resp::new_zeroed();
    let pd = cmd::alloc_pd(&ctx, pd_resp.as_mut_bytes()).unwrap();
    let query_pd = |handle: u32| {
        let mut pdn = 0u32;
        let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_PD, uapi::MLX5_IB_METHOD_PD_QUERY);
        cmd.idr(uapi::MLX5_IB_ATTR_QUERY_PD_HANDLE, handle);
        cmd.out_obj(uapi::MLX5_IB_ATTR_QUERY_PD_RESP_PDN, &mut pdn);
        // SAFETY: a query; its only output is `pdn`.
        unsafe { ctx.channel().ioctl(Verb::AllocPd, &mut cmd) }
            .map_err(errno)
            .map(|()| pdn)
    };
    assert_eq!(query_pd(pd), Ok(pd_resp.pdn));
    assert_eq!(query_pd(pd + 1), Err(Errno::ENOENT));

    // QUERY_MR: lkey, rkey, length and iova (optional).
    let mut mem = pages(2);
    let a = mem.as_mut_ptr() as u64;
    // SAFETY: deregistered below, before `mem`; nothing is posted.
    let mr = unsafe { cmd::reg_mr(&ctx, pd, a + 16, 4000, 0x7000_0010, 1) }.unwrap();
    assert_eq!(query_pd(mr.handle), Err(Errno::EINVAL), "not a PD");
    let query_mr = |handle: u32, iova: bool| {
        let (mut lkey, mut rkey, mut length, mut va) = (0u32, 0u32, 0u64, 0u64);
        let mut cmd = IoctlCmd::new(uapi::UVERBS_OBJECT_MR, uapi::UVERBS_METHOD_QUERY_MR);
        cmd.idr(uapi::UVERBS_ATTR_QUERY_MR_HANDLE, handle);
        cmd.out_obj(uapi::UVERBS_ATTR_QUERY_MR_RESP_LKEY, &mut lkey);
        cmd.out_obj(uapi::UVERBS_ATTR_QUERY_MR_RESP_RKEY, &mut rkey);
        cmd.out_obj(uapi::UVERBS_ATTR_QUERY_MR_RESP_LENGTH, &mut length);
        if iova {
            cmd.out_obj(uapi::UVERBS_ATTR_QUERY_MR_RESP_IOVA, &mut va);
        }
        // SAFETY: a query; its only outputs are the locals above.
        unsafe { ctx.channel().ioctl(Verb::RegMr, &mut cmd) }
            .map_err(errno)
            .map(|()| (lkey, rkey, length, va))
    };
    assert_eq!(
        query_mr(mr.handle, true),
        Ok((mr.lkey, mr.rkey, 4000, 0x7000_0010))
    );
    assert_eq!(query_mr(mr.handle, false), Ok((mr.lkey, mr.rkey, 4000, 0)));
    assert_eq!(query_mr(pd, true), Err(Errno::EINVAL), "not an MR");
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::dereg_mr(&ctx, mr.handle) }.unwrap();
    assert_eq!(query_mr(mr.handle, true), Err(Errno::ENOENT));
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::dealloc_pd(&ctx, pd) }.unwrap();

    // A context of static bfregs answers them too (libmlx5 then refuses to import it).
    let sctx = open_info(&info, CommandPath::Auto);
    let (out, _, _) = query_context(&context_file(&sctx), 72).unwrap();
    let sresp = uapi::mlx5_ib_alloc_ucontext_resp::read_from_bytes(&out).unwrap();
    assert_eq!(sresp.tot_bfregs, 16);
    assert_eq!(sresp.response_length, 72);
}

#[test]
fn each_context_opens_its_own_file_and_files_close() {
    let model = Mlx5Model::new().unwrap();
    let root = model.sysfs_root().to_owned();
    assert!(root
        .join("class/infiniband/mlx5_0/ports/1/gids/254")
        .exists());
    let found =
        uverbs_drivers::discover::devices_in(&root, std::path::Path::new("/dev/infiniband"), None)
            .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].name.as_str(), found[0].abi_version),
        ("mlx5_0", 1)
    );
    let info = model.device_info();
    assert_eq!(info.driver, uverbs_drivers::discover::Driver::Mlx5);
    assert!(!info.devnode.exists());
    {
        let a = open_info(&info, CommandPath::Auto);
        let b = open_info(&info, CommandPath::LegacyWrite);
        let pa = alloc_pd(&a);
        let pb = alloc_pd(&b);
        assert_eq!((pa, pb), (pa, pb));
        assert_eq!(model.stats().contexts, 2, "a context per opened file");
        assert_eq!(model.stats().pds, 2);
        drop(a);
        assert_eq!(
            model.stats().pds,
            1,
            "closing a context's file frees its objects"
        );
        let c = open_info(&info, CommandPath::Auto);
        assert_eq!(model.stats().contexts, 2);
        drop((b, c));
    }
    assert_eq!(model.stats().pds, 0);
    assert_eq!(model.stats().contexts, 0);
    drop(info);
    assert_eq!(model.stats().files, 0);
    // Each context opens a file of its own (the kernel allows one context per open file).
    let info = model.device_info();
    let a = open_info(&info, CommandPath::Auto);
    let b = open_info(&info, CommandPath::Auto);
    assert!(context_file(&a) != context_file(&b));
    drop((a, b, info));
    drop(model);
    assert!(!root.exists(), "the sysfs tree goes with the device");
}

#[test]
fn sysfs_gid_table_and_config() {
    let mut cfg = ModelConfig {
        name: "mlx5_7".into(),
        node_guid: 0x0002_c903_00aa_bbcc,
        mtu: 1024,
        ..ModelConfig::default()
    };
    cfg.gids = ModelConfig::default_gids(cfg.node_guid);
    cfg.gids.push([0; 16]);
    cfg.gids
        .push(std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 5).octets());
    let model = Mlx5Model::with_config(cfg).unwrap();
    let ctx = open(&model, CommandPath::LegacyWrite);
    let t = ctx.gid_table_from_sysfs(255).unwrap();
    assert_eq!(t.len(), 3);
    assert_eq!(t[2].gid_index, 3);
    assert_eq!(
        t[0].gid.as_bytes()[8..],
        [0x02, 0x02, 0xc9, 0xff, 0xfe, 0xaa, 0xbb, 0xcc]
    );
    assert_eq!(ctx.query_port(1).unwrap().legacy_resp.active_mtu, 3);
    assert_eq!(ctx.info().sysfs_attr("node_type").unwrap(), "1: CA");
    assert_eq!(ctx.info().sysfs_attr("ports/1/state").unwrap(), "4: ACTIVE");
    model.set_port_active(false);
    assert_eq!(ctx.info().sysfs_attr("ports/1/state").unwrap(), "1: DOWN");
    // More GIDs than a ConnectX's 255 make the table longer, up to the model's limit.
    let long = Mlx5Model::with_config(ModelConfig {
        gids: vec![[1; 16]; 256],
        ..ModelConfig::default()
    })
    .unwrap();
    let ctx = open(&long, CommandPath::LegacyWrite);
    assert_eq!(ctx.query_port(1).unwrap().legacy_resp.gid_tbl_len, 256);
    assert!(Mlx5Model::with_config(ModelConfig {
        gids: vec![[1; 16]; 4097],
        ..ModelConfig::default()
    })
    .is_err());
}

#[test]
fn rc_loopback_through_the_hca() {
    // A QP connected to itself: an RDMA WRITE moves data and completes on the CQ, and an armed CQ
    // raises a completion event on its channel.
    let model = Mlx5Model::new().unwrap();
    let ctx = open(&model, CommandPath::Auto);
    let pd = alloc_pd(&ctx);
    let chan = cmd::create_comp_channel(&ctx).unwrap();
    let cqm = CqMem::new(15);
    for i in 0..cqm.ncqe as usize {
        // SAFETY: the buffer holds `ncqe` 64-byte entries; op_own is the last byte of each.
        unsafe { cqm.buf.as_ptr().cast_mut().add(i * 64 + 63).write(0xf0) };
    }
    // SAFETY: destroyed at the end, before `cqm`/`qm`; the one WRITE is waited for.
    let (cq, _, cqn) = unsafe { create_cq(&ctx, &cqm, Some(chan.as_fd()), 0xfeed) }.unwrap();
    let qm = QpMem::new(16, 16);
    // SAFETY: destroyed at the end, before `cqm`/`qm`; the one WRITE is waited for.
    let (qp, resp) = unsafe {
        create_qp(
            &ctx,
            &qp_init(pd, cq, uapi::IB_UVERBS_QPT_RC, 16),
            &qm.cmd(1),
        )
    }
    .unwrap();
    connect_rc(&ctx, qp.handle, qp.qpn).unwrap();
    let mut mem = pages(1);
    mem[..8].copy_from_slice(b"uverbs!!");
    let a = mem.as_ptr() as u64;
    let rw = uapi::IB_UVERBS_ACCESS_LOCAL_WRITE | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE;
    // SAFETY: deregistered at the end, before `mem`; the one WRITE is waited for.
    let mr = unsafe { cmd::reg_mr(&ctx, pd, a, 4096, a, rw) }.unwrap();
    // One RDMA WRITE WQE: ctrl, raddr, data segment, at SQ index 0 (after the 512-byte RQ).
    let sq = qm.buf.as_ptr() as usize + 512;
    let mut wqe = [0u8; 48];
    wqe[0..4].copy_from_slice(&0x08u32.to_be_bytes()); // index 0, opcode RDMA_WRITE
    wqe[4..8].copy_from_slice(&((qp.qpn << 8) | 3).to_be_bytes()); // 3 16-byte segments
    wqe[11] = 0x08; // CQ_UPDATE
    wqe[16..24].copy_from_slice(&(a + 2048).to_be_bytes());
    wqe[24..28].copy_from_slice(&mr.rkey.to_be_bytes());
    wqe[32..36].copy_from_slice(&8u32.to_be_bytes());
    wqe[36..40].copy_from_slice(&mr.lkey.to_be_bytes());
    wqe[40..48].copy_from_slice(&a.to_be_bytes());
    // Arm the CQ (sn 0, ci 0): doorbell record, then the UAR register.
    let page = uverbs_drivers::sys::page_size();
    let file = context_file(&ctx);
    let uar0 = file.0.mmap(page, 0).unwrap();
    let arm = 0u32; // sn 0, REQ_NOT (any completion), ci 0
    let dbrec = cqm.db.as_ptr() as usize;
    // SAFETY: the WQE goes into the SQ ring the QP owns; the doorbell records are 8-byte aligned
    // words of pages owned by this test; the UAR mapping is one page, and the registers written
    // are inside it.
    unsafe {
        std::ptr::copy_nonoverlapping(wqe.as_ptr(), sq as *mut u8, 48);
        (*((dbrec + 4) as *const std::sync::atomic::AtomicU32))
            .store(arm.to_be(), std::sync::atomic::Ordering::Release);
        let v = (u64::from(arm) << 32) | u64::from(cqn);
        std::ptr::write_volatile(uar0.as_mut_ptr().add(0x20).cast::<u64>(), v.to_be());
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        (*((qm.db.as_ptr() as usize + 4) as *const std::sync::atomic::AtomicU32))
            .store(1u32.to_be(), std::sync::atomic::Ordering::Release);
        let bf = file
            .0
            .mmap(page, u64::from(resp.bfreg_index / 4) * page as u64)
            .unwrap();
        let reg = bf
            .as_mut_ptr()
            .add(0x800 + (resp.bfreg_index as usize % 4) * 512);
        std::ptr::write_volatile(
            reg.cast::<u64>(),
            u64::from_ne_bytes(wqe[..8].try_into().unwrap()),
        );
    }
    let ev =
        uverbs_drivers::event::read_comp_event(chan.as_fd(), Some(Duration::from_secs(5))).unwrap();
    assert_eq!(ev, Some(0xfeed));
    assert_eq!(&mem[2048..2056], b"uverbs!!");
    // The CQE: requester, owner bit 0, wqe_counter 0, opcode RDMA_WRITE in sop_drop_qpn.
    let op_own = cqm.buf[63];
    assert_eq!(op_own >> 4, 0, "MLX5_CQE_REQ");
    assert_eq!(
        u32::from_be_bytes(cqm.buf[56..60].try_into().unwrap()) & 0xff_ffff,
        qp.qpn
    );
    assert!(model.stats().hca.send_cqes >= 1);
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::destroy_qp(&ctx, qp.handle) }.unwrap();
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    assert_eq!(unsafe { cmd::destroy_cq(&ctx, cq) }.unwrap(), (1, 0));
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::dereg_mr(&ctx, mr.handle) }.unwrap();
    // SAFETY: the object is this test's own, made by a raw command; no wrapper holds it.
    unsafe { cmd::dealloc_pd(&ctx, pd) }.unwrap();
}

#[test]
fn get_context_with_dynamic_uars() {
    use super::kernel::{File, Udata};
    use super::objects::FileState;
    let model = Mlx5Model::new().unwrap();
    let file = File::new(Arc::clone(&model.dev));
    let mut req = uverbs_drivers::mlx5::Mlx5Context::request();
    let get = |req: &uapi::mlx5_ib_alloc_ucontext_req_v2| {
        let mut st = FileState::default();
        let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
        file.get_context(
            &mut st,
            &Udata::for_test(req.as_bytes(), resp.as_mut_bytes()),
        )
        .map(|()| resp)
    };
    // Static bfregs: a request for none is refused, as one for too many.
    req.total_num_bfregs = 0;
    req.num_low_latency_bfregs = 0;
    assert_eq!(get(&req).unwrap_err(), Errno::EINVAL);
    req.total_num_bfregs = 513;
    assert_eq!(get(&req).unwrap_err(), Errno::ENOMEM);
    req.total_num_bfregs = u32::MAX; // ALIGN wraps to 0
    assert_eq!(get(&req).unwrap_err(), Errno::EINVAL);
    // Dynamic UARs: the static count is not looked at (beyond the low-latency check), and none
    // are given.
    req.lib_caps |= uapi::MLX5_LIB_CAP_DYN_UAR;
    for total in [0, 513, u32::MAX] {
        req.total_num_bfregs = total;
        let resp = get(&req).unwrap();
        assert_eq!((resp.tot_bfregs, resp.num_dyn_bfregs), (0, 0));
        assert_eq!(resp.bf_reg_size, 512);
    }
    req.total_num_bfregs = 4;
    req.num_low_latency_bfregs = 4;
    assert_eq!(get(&req).unwrap_err(), Errno::EINVAL);
    // DEVX is refused whatever the UARs.
    req.num_low_latency_bfregs = 0;
    req.flags = uapi::MLX5_IB_ALLOC_UCTX_DEVX;
    assert_eq!(get(&req).unwrap_err(), Errno::EOPNOTSUPP);
    // A kernel from before the ioctl methods does not know the capability: static bfregs.
    req.flags = 0;
    let old = Mlx5Model::with_config(ModelConfig {
        ioctl: IoctlSupport::InvokeWriteOnly,
        ..ModelConfig::default()
    })
    .unwrap();
    let file = File::new(Arc::clone(&old.dev));
    let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
    file.get_context(
        &mut FileState::default(),
        &Udata::for_test(req.as_bytes(), resp.as_mut_bytes()),
    )
    .unwrap();
    assert_eq!(resp.tot_bfregs, 4);
}

#[test]
fn cqe_version_0_and_the_first_request_format() {
    use super::kernel::{File, Udata};
    use super::objects::{CqParams, FileState, QpParams};
    for v0_request in [false, true] {
        let model = Mlx5Model::new().unwrap();
        let file = File::new(Arc::clone(&model.dev));
        let mut st = FileState::default();
        let mut req = uverbs_drivers::mlx5::Mlx5Context::request();
        req.max_cqe_version = 0;
        let req_bytes = if v0_request {
            &req.as_bytes()[..8]
        } else {
            req.as_bytes()
        };
        let mut resp = uapi::mlx5_ib_alloc_ucontext_resp::new_zeroed();
        file.get_context(&mut st, &Udata::for_test(req_bytes, resp.as_mut_bytes()))
            .unwrap();
        assert_eq!(resp.cqe_version, 0);
        assert_eq!(resp.tot_bfregs, 16);
        let mut pdn = [0u8; 4];
        let pd = file
            .alloc_pd(&mut st, &Udata::for_test(&[], &mut pdn))
            .unwrap();
        let cqm = CqMem::new(7);
        let p = CqParams {
            cqe: 7,
            user_handle: 0,
            comp_vector: 0,
            channel: None,
            async_file: None,
            flags: 0,
        };
        let mut cqn = [0u8; 4];
        let (cq, _) = file
            .create_cq(
                &mut st,
                &p,
                &Udata::for_test(cqm.cmd().as_bytes(), &mut cqn),
            )
            .unwrap();
        // Timestamps are taken (every CQE has one); overrun-ignoring CQs are not.
        let mut flags = p;
        flags.flags = uapi::IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN;
        assert_eq!(
            file.create_cq(
                &mut st,
                &flags,
                &Udata::for_test(cqm.cmd().as_bytes(), &mut cqn)
            ),
            Err(Errno::EOPNOTSUPP)
        );
        let qm = QpMem::new(8, 8);
        let qp = QpParams {
            qp_type: uapi::IB_UVERBS_QPT_UC,
            pd,
            send_cq: cq,
            recv_cq: cq,
            srq: None,
            cap: uapi::ib_uverbs_qp_cap {
                max_send_wr: 8,
                max_recv_wr: 8,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: true,
            user_handle: 0,
            create_flags: 0,
            async_file: None,
        };
        let mut out = uapi::mlx5_ib_create_qp_resp::new_zeroed();
        // Version 0: no user index may be given.
        assert_eq!(
            file.create_qp(
                &mut st,
                &qp,
                &Udata::for_test(qm.cmd(5).as_bytes(), out.as_mut_bytes())
            ),
            Err(Errno::EINVAL)
        );
        let (_, qpn, _) = file
            .create_qp(
                &mut st,
                &qp,
                &Udata::for_test(qm.cmd(objects::DEFAULT_UIDX).as_bytes(), out.as_mut_bytes()),
            )
            .unwrap();
        assert!(qpn >= 0x100);
        // The first request format has no bfreg classes: every QP rings the doorbell register.
        let expect = if v0_request { 0 } else { 24 };
        assert_eq!(out.bfreg_index, expect);
        let mut bad = QpParams {
            create_flags: 1 << 1,
            ..qp
        };
        assert_eq!(
            file.create_qp(
                &mut st,
                &bad,
                &Udata::for_test(qm.cmd(objects::DEFAULT_UIDX).as_bytes(), out.as_mut_bytes())
            ),
            Err(Errno::EOPNOTSUPP)
        );
        bad.create_flags = 0;
        bad.qp_type = uapi::IB_UVERBS_QPT_XRC_INI;
        assert_eq!(
            file.create_qp(
                &mut st,
                &bad,
                &Udata::for_test(qm.cmd(objects::DEFAULT_UIDX).as_bytes(), out.as_mut_bytes())
            ),
            Err(Errno::EOPNOTSUPP)
        );
        file.close_all(&mut st);
        assert_eq!(model.stats().qps, 0);
    }
}
