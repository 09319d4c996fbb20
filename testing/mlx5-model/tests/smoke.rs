//! The mlx5 backend end to end on the software model, at the driver level:
//! open the model, create a PD, an MR, a CQ and an RC QP, connect the QP to itself through GID
//! index 1, and move data: SEND (BlueFlame and doorbell paths, inline), RDMA WRITE with immediate,
//! RDMA READ, atomics, unsignaled requests, arming, and a UD datagram to itself.
//!
//! `through_a_daemon_from_another_process` runs the same tests again in a child process on a model
//! this process serves (`Mlx5Model::serve`): the child's rings, doorbell records, CQEs and memory
//! regions are then another process's memory for the model, its event files are sent to it over
//! the socket, and its UAR pages are the daemon's memfd mapped in the child.
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs_drivers::backend::{AhInit, CqBackend, CqInit, QpBackend};
use uverbs_drivers::cmd::{self, MrKeys, QpInit};
use uverbs_drivers::qp_state::mask;
use uverbs_drivers::uapi;
use uverbs_drivers::verbs::{Ah, Cq, DeviceContext, Pd, Qp, UdAddress};
use uverbs_drivers::wc::WorkCompletion;
use uverbs_drivers::wr::{opcode, send_flags, RecvWr, SendWr, Sge, UdDest};
use uverbs_mlx5_model::Mlx5Model;

const GID_INDEX: u8 = 1;

/// Set in the child of `through_a_daemon_from_another_process`: the daemon's socket.
const DAEMON_ENV: &str = "UVERBS_SMOKE_DAEMON";

struct Setup {
    _model: Option<Mlx5Model>,
    ctx: Arc<DeviceContext>,
    pd: Pd,
    mr: MrKeys,
    buf: Vec<u64>,
}

impl Setup {
    fn new() -> Setup {
        let (model, info) = match std::env::var_os(DAEMON_ENV) {
            Some(path) => (
                None,
                // SAFETY: the daemon at `path` is the model the parent test serves
                // (`through_a_daemon_from_another_process`).
                unsafe { uverbs_drivers::discover::remote_device(std::path::Path::new(&path)) }
                    .expect("connecting to the daemon"),
            ),
            None => {
                let model = Mlx5Model::new().expect("starting the model");
                let info = model.device_info();
                (Some(model), info)
            }
        };
        let ctx = Arc::new(DeviceContext::open(&info).expect("opening the model"));
        let pd = Pd::alloc(&ctx).unwrap();
        let mut buf = vec![0u64; 1024];
        let addr = buf.as_mut_ptr() as u64;
        let access = uapi::IB_UVERBS_ACCESS_LOCAL_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_READ
            | uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC;
        // SAFETY: `buf`'s 8 KiB of `u64`s (any bytes are valid ones) move into the `Setup`, whose
        // `Drop` deregisters the region before its fields, `buf` included, are dropped; the tests
        // read `buf` only after polling the completions of the work they posted.
        let mr =
            unsafe { cmd::reg_mr(ctx.ucontext(), pd.handle(), addr, 8192, addr, access) }.unwrap();
        Setup {
            _model: model,
            ctx,
            pd,
            mr,
            buf,
        }
    }

    fn addr(&self, offset: usize) -> u64 {
        self.buf.as_ptr() as u64 + offset as u64
    }

    fn sge(&self, offset: usize, length: u32) -> Sge {
        Sge {
            addr: self.addr(offset),
            length,
            lkey: self.mr.lkey,
        }
    }

    fn bytes(&self, offset: usize, len: usize) -> Vec<u8> {
        // SAFETY: in bounds of `buf`; the device is done with it (its completions were polled).
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>().add(offset), len) }
            .to_vec()
    }

    fn fill(&mut self, offset: usize, data: &[u8]) {
        // SAFETY: in bounds of `buf`, which the device is not using now.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.buf.as_mut_ptr().cast::<u8>().add(offset),
                data.len(),
            )
        };
    }

    fn qp(&self, cq: &Cq, qp_type: u8, depth: u32) -> Qp {
        let init = QpInit {
            pd: self.pd.handle(),
            send_cq: cq.handle(),
            recv_cq: cq.handle(),
            qp_type,
            cap: uapi::ib_uverbs_qp_cap {
                max_send_wr: depth,
                max_recv_wr: depth,
                max_send_sge: 2,
                max_recv_sge: 2,
                max_inline_data: 64,
            },
            sq_sig_all: false,
            user_handle: 0,
            srq: None,
        };
        Qp::create(&self.ctx, &init, cq, cq, None).unwrap()
    }

    fn gid(&self) -> [u8; 16] {
        let e = self
            .ctx
            .ucontext()
            .query_gid_entry(1, u32::from(GID_INDEX))
            .unwrap()
            .expect("GID index 1");
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&e.gid[0].to_ne_bytes());
        g[8..].copy_from_slice(&e.gid[1].to_ne_bytes());
        g
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        // SAFETY: the region is this test's own, made by the raw command above; no wrapper holds it.
        unsafe { cmd::dereg_mr(self.ctx.ucontext(), self.mr.handle) }.unwrap();
    }
}

/// RESET -> INIT -> RTR -> RTS, connected to `dest_qpn` over GID index 1.
fn connect(qp: &Qp, dest_qpn: u32, dgid: [u8; 16]) {
    let mut m = uapi::ib_uverbs_modify_qp {
        qp_state: 1,
        attr_mask: mask::STATE | mask::PKEY_INDEX | mask::PORT | mask::ACCESS_FLAGS,
        port_num: 1,
        qp_access_flags: uapi::IB_UVERBS_ACCESS_LOCAL_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_WRITE
            | uapi::IB_UVERBS_ACCESS_REMOTE_READ
            | uapi::IB_UVERBS_ACCESS_REMOTE_ATOMIC,
        ..Default::default()
    };
    qp.modify(&m).unwrap();
    m = uapi::ib_uverbs_modify_qp {
        qp_state: 2,
        attr_mask: mask::STATE
            | mask::AV
            | mask::PATH_MTU
            | mask::DEST_QPN
            | mask::RQ_PSN
            | mask::MAX_DEST_RD_ATOMIC
            | mask::MIN_RNR_TIMER,
        path_mtu: 3,
        dest_qp_num: dest_qpn,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ..Default::default()
    };
    m.dest.dgid = dgid;
    m.dest.is_global = 1;
    m.dest.sgid_index = GID_INDEX;
    m.dest.hop_limit = 64;
    m.dest.port_num = 1;
    qp.modify(&m).unwrap();
    m = uapi::ib_uverbs_modify_qp {
        qp_state: 3,
        attr_mask: mask::STATE
            | mask::SQ_PSN
            | mask::TIMEOUT
            | mask::RETRY_CNT
            | mask::RNR_RETRY
            | mask::MAX_QP_RD_ATOMIC,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
        ..Default::default()
    };
    qp.modify(&m).unwrap();
}

fn poll(cq: &Cq, n: usize) -> Vec<WorkCompletion> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut out = Vec::new();
    while out.len() < n {
        let mut batch = vec![WorkCompletion::default(); n - out.len()];
        let got = cq.poll(&mut batch).unwrap();
        out.extend_from_slice(&batch[..got]);
        assert!(
            Instant::now() < deadline,
            "{} of {n} completions: {out:?}",
            out.len()
        );
    }
    out
}

/// A UD send through an address handle.
struct Datagram<'a>(SendWr<'a>, &'a Ah);

impl<'a> AsRef<SendWr<'a>> for Datagram<'a> {
    fn as_ref(&self) -> &SendWr<'a> {
        &self.0
    }
}

impl UdAddress for Datagram<'_> {
    fn address_handle(&self) -> Option<&Ah> {
        Some(self.1)
    }
}

#[test]
fn rc_loopback_on_one_queue_pair() {
    let mut s = Setup::new();
    let cq = Cq::create(
        &s.ctx,
        &CqInit {
            cqe: 16,
            user_handle: 0,
            comp_vector: 0,
            channel: None,
            flags: 0,
        },
    )
    .unwrap();
    assert_eq!(cq.entries(), 31);
    let qp = s.qp(&cq, uapi::IB_UVERBS_QPT_RC, 4);
    let cap = qp.cap();
    assert!(cap.max_send_wr >= 4 && cap.max_recv_wr >= 4 && cap.max_inline_data >= 64);
    let gid = s.gid();
    connect(&qp, qp.qpn(), gid);

    // SEND of 100 bytes: one WQE, BlueFlame.
    let msg: Vec<u8> = (0..100u8).collect();
    s.fill(0, &msg);
    let rsge = [s.sge(4096, 200)];
    let ssge = [s.sge(0, 100)];
    // SAFETY: the buffers outlive the requests and are untouched until polled.
    unsafe {
        qp.post_recv(&[RecvWr {
            wr_id: 1,
            sges: &rsge,
        }])
    }
    .unwrap();
    // SAFETY: as above.
    unsafe { qp.post_send(&[SendWr::send(2, &ssge)], UdAddress::address_handle) }.unwrap();
    let wcs = poll(&cq, 2);
    let recv = wcs.iter().find(|w| w.wr_id == 1).expect("receive");
    let send = wcs.iter().find(|w| w.wr_id == 2).expect("send");
    assert_eq!((recv.status, recv.opcode, recv.byte_len), (0, 128, 100));
    assert_eq!((send.status, send.opcode), (0, 0));
    assert_eq!((recv.qp_num, send.qp_num), (qp.qpn(), qp.qpn()));
    assert_eq!(s.bytes(4096, 100), msg);

    // Two unsignaled inline SENDs and a signaled one, one doorbell; three receives.
    let rsges: Vec<[Sge; 1]> = (0..3).map(|i| [s.sge(4096 + i * 256, 256)]).collect();
    let recvs: Vec<RecvWr> = (0..3)
        .map(|i| RecvWr {
            wr_id: 10 + i as u64,
            sges: &rsges[i],
        })
        .collect();
    // SAFETY: as above.
    unsafe { qp.post_recv(&recvs) }.unwrap();
    let texts: [&[u8]; 3] = [b"one", b"two two", b"three three three"];
    let sends: Vec<SendWr> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut w = SendWr::send(20 + i as u64, &[]);
            w.flags = send_flags::INLINE | if i == 2 { send_flags::SIGNALED } else { 0 };
            w.inline = t;
            w
        })
        .collect();
    // SAFETY: inline data only.
    unsafe { qp.post_send(&sends, UdAddress::address_handle) }.unwrap();
    let wcs = poll(&cq, 4);
    let mut ids: Vec<u64> = wcs.iter().map(|w| w.wr_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![10, 11, 12, 22], "{wcs:?}");
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(&s.bytes(4096 + i * 256, t.len()), t);
    }

    // RDMA WRITE with immediate: consumes a receive.
    s.fill(0, &[0xabu8; 64]);
    // SAFETY: as above.
    unsafe {
        qp.post_recv(&[RecvWr {
            wr_id: 30,
            sges: &[],
        }])
    }
    .unwrap();
    let wsge = [s.sge(0, 64)];
    let mut w = SendWr::send(31, &wsge);
    w.opcode = opcode::RDMA_WRITE_WITH_IMM;
    w.imm_or_inv = 0x1234_5678u32.to_be();
    w.remote_addr = s.addr(6144);
    w.rkey = s.mr.rkey;
    // SAFETY: as above.
    unsafe { qp.post_send(&[w], UdAddress::address_handle) }.unwrap();
    let wcs = poll(&cq, 2);
    let imm = wcs
        .iter()
        .find(|w| w.wr_id == 30)
        .expect("write-with-immediate receive");
    assert_eq!((imm.status, imm.opcode, imm.byte_len), (0, 129, 64));
    assert_eq!(imm.imm_data, 0x1234_5678u32.to_be());
    assert_eq!(s.bytes(6144, 64), vec![0xab; 64]);

    // RDMA READ back, and a fetch-and-add.
    let rd = [s.sge(7168, 64)];
    let mut r = SendWr::send(40, &rd);
    r.opcode = opcode::RDMA_READ;
    r.remote_addr = s.addr(6144);
    r.rkey = s.mr.rkey;
    s.fill(7680, &5u64.to_ne_bytes());
    let old = [s.sge(7936, 8)];
    let mut fa = SendWr::send(41, &old);
    fa.opcode = opcode::ATOMIC_FETCH_AND_ADD;
    fa.remote_addr = s.addr(7680);
    fa.rkey = s.mr.rkey;
    fa.compare_add = 3;
    // SAFETY: as above.
    unsafe { qp.post_send(&[r, fa], UdAddress::address_handle) }.unwrap();
    let wcs = poll(&cq, 2);
    assert!(wcs.iter().all(|w| w.status == 0), "{wcs:?}");
    assert_eq!(s.bytes(7168, 64), vec![0xab; 64]);
    assert_eq!(s.bytes(7936, 8), 5u64.to_ne_bytes());
    assert_eq!(s.bytes(7680, 8), 8u64.to_ne_bytes());

    // Memory windows are not supported.
    let mut inv = SendWr::send(50, &[]);
    inv.opcode = opcode::LOCAL_INV;
    // SAFETY: nothing is posted.
    let e = unsafe { qp.post_send(&[inv], UdAddress::address_handle) }.unwrap_err();
    assert!(matches!(e.error, uverbs_drivers::Error::Unsupported { .. }));

    // A reset forgets everything and the queue pair works again.
    let mut m = uapi::ib_uverbs_modify_qp {
        qp_state: 0,
        attr_mask: mask::STATE,
        ..Default::default()
    };
    qp.modify(&m).unwrap();
    connect(&qp, qp.qpn(), gid);
    // SAFETY: as above.
    unsafe {
        qp.post_recv(&[RecvWr {
            wr_id: 60,
            sges: &rsge,
        }])
    }
    .unwrap();
    // SAFETY: as above.
    unsafe { qp.post_send(&[SendWr::send(61, &ssge)], UdAddress::address_handle) }.unwrap();
    assert_eq!(poll(&cq, 2).len(), 2);
    m.qp_state = 0;
    qp.modify(&m).unwrap();
    drop(qp);
}

#[test]
fn ud_datagram_to_itself_and_arming() {
    let mut s = Setup::new();
    let channel = cmd::create_comp_channel(s.ctx.ucontext()).unwrap();
    let cq = Cq::create(
        &s.ctx,
        &CqInit {
            cqe: 8,
            user_handle: 77,
            comp_vector: 0,
            channel: Some(std::os::fd::AsFd::as_fd(&channel)),
            flags: 0,
        },
    )
    .unwrap();
    let qp = s.qp(&cq, uapi::IB_UVERBS_QPT_UD, 2);
    const QKEY: u32 = 0x1111;
    for (state, mask_bits) in [
        (
            1u8,
            mask::STATE | mask::PKEY_INDEX | mask::PORT | mask::QKEY,
        ),
        (2, mask::STATE),
        (3, mask::STATE | mask::SQ_PSN),
    ] {
        qp.modify(&uapi::ib_uverbs_modify_qp {
            qp_state: state,
            attr_mask: mask_bits,
            port_num: 1,
            qkey: QKEY,
            ..Default::default()
        })
        .unwrap();
    }
    let attr = uapi::ib_uverbs_ah_attr {
        grh: uapi::ib_uverbs_global_route {
            dgid: s.gid(),
            sgid_index: GID_INDEX,
            hop_limit: 64,
            ..Default::default()
        },
        is_global: 1,
        port_num: 1,
        ..Default::default()
    };
    let init = AhInit {
        attr,
        ethernet: true,
        roce_v2: true,
    };
    let ah = Ah::create(&s.pd, &init).unwrap();
    s.fill(0, b"datagram");
    let rsge = [s.sge(4096, 40 + 64)];
    // SAFETY: as above.
    unsafe {
        qp.post_recv(&[RecvWr {
            wr_id: 1,
            sges: &rsge,
        }])
    }
    .unwrap();
    cq.req_notify(false).unwrap();
    let ssge = [s.sge(0, 8)];
    let mut w = SendWr::send(2, &ssge);
    w.ud = Some(UdDest {
        remote_qpn: qp.qpn(),
        remote_qkey: QKEY,
    });
    // SAFETY: as above.
    unsafe { qp.post_send(&[Datagram(w, &ah)], UdAddress::address_handle) }.unwrap();
    let handle = uverbs_drivers::event::read_comp_event(
        std::os::fd::AsFd::as_fd(&channel),
        Some(Duration::from_secs(20)),
    )
    .unwrap();
    assert_eq!(handle, Some(77));
    cq.event();
    let wcs = poll(&cq, 2);
    let recv = wcs.iter().find(|w| w.wr_id == 1).expect("receive");
    assert_eq!((recv.status, recv.byte_len, recv.src_qp), (0, 48, qp.qpn()));
    assert_eq!(recv.wc_flags & 1, 1, "GRH");
    assert_eq!(s.bytes(4096 + 40, 8), b"datagram");
    // Armed again, with nothing new: no event.
    cq.req_notify(false).unwrap();
    let none = uverbs_drivers::event::read_comp_event(
        std::os::fd::AsFd::as_fd(&channel),
        Some(Duration::from_millis(100)),
    )
    .unwrap();
    assert_eq!(none, None);
    drop(ah);
    drop(qp);
}

#[test]
fn reset_and_destroy_remove_only_their_queue_pairs_completions() {
    let s = Setup::new();
    let cq = Cq::create(
        &s.ctx,
        &CqInit {
            cqe: 32,
            user_handle: 0,
            comp_vector: 0,
            channel: None,
            flags: 0,
        },
    )
    .unwrap();
    let gid = s.gid();
    let qp1 = s.qp(&cq, uapi::IB_UVERBS_QPT_RC, 4);
    let qp2 = s.qp(&cq, uapi::IB_UVERBS_QPT_RC, 4);
    connect(&qp1, qp1.qpn(), gid);
    connect(&qp2, qp2.qpn(), gid);
    let ssge = [s.sge(0, 8)];
    let exchange = |qp: &Qp, id: u64, at: usize| {
        let rsge = [s.sge(at, 8)];
        // SAFETY: the buffers outlive the queue pairs; nothing reads them.
        unsafe {
            qp.post_recv(&[RecvWr {
                wr_id: id,
                sges: &rsge,
            }])
        }
        .unwrap();
        // SAFETY: as above.
        unsafe { qp.post_send(&[SendWr::send(id + 1, &ssge)], UdAddress::address_handle) }.unwrap();
    };
    // Completions of qp1, qp2, qp1 in the CQ, none polled.
    exchange(&qp1, 10, 1024);
    exchange(&qp2, 20, 2048);
    exchange(&qp1, 30, 3072);
    std::thread::sleep(Duration::from_millis(500));
    // qp1 is reset: its four completions go, qp2's two stay, in order.
    qp1.modify(&uapi::ib_uverbs_modify_qp {
        qp_state: 0,
        attr_mask: mask::STATE,
        ..Default::default()
    })
    .unwrap();
    let mut ids: Vec<u64> = poll(&cq, 2).iter().map(|w| w.wr_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![20, 21]);
    let mut left = [WorkCompletion::default(); 16];
    assert_eq!(cq.poll(&mut left).unwrap(), 0, "left over: {left:?}");
    // qp1 works again after the reset.
    connect(&qp1, qp1.qpn(), gid);
    exchange(&qp1, 40, 1024);
    let mut ids: Vec<u64> = poll(&cq, 2).iter().map(|w| w.wr_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![40, 41]);
    // Destroying qp2 with completions waiting removes them.
    exchange(&qp2, 50, 2048);
    exchange(&qp1, 60, 3072);
    std::thread::sleep(Duration::from_millis(500));
    drop(qp2);
    let mut ids: Vec<u64> = poll(&cq, 2).iter().map(|w| w.wr_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![60, 61]);
    let mut left = [WorkCompletion::default(); 16];
    assert_eq!(cq.poll(&mut left).unwrap(), 0, "left over: {left:?}");
    drop(qp1);
}

/// Review R8: `Mlx5Context::uars` took the channel to map the UAR pages through from its caller,
/// and kept whatever the first call mapped: another context's pages (or a regular file's) made every
/// doorbell and BlueFlame copy of this context go there, and its requests were never executed. The
/// pages are now always mapped through the context's own file: asking for them first, with a
/// second context open on the same device, leaves the doorbells working.
#[test]
fn doorbells_ring_the_contexts_own_uar_pages() {
    let mut s = Setup::new();
    let other = DeviceContext::open(s.ctx.info()).expect("a second context");
    let uverbs_drivers::verbs::Backend::Mlx5(m) = s.ctx.backend() else {
        panic!("not the mlx5 backend");
    };
    // Before any queue of this context maps them.
    m.uars().unwrap();
    let cq = Cq::create(
        &s.ctx,
        &CqInit {
            cqe: 16,
            user_handle: 0,
            comp_vector: 0,
            channel: None,
            flags: 0,
        },
    )
    .unwrap();
    let qp = s.qp(&cq, uapi::IB_UVERBS_QPT_RC, 4);
    let gid = s.gid();
    connect(&qp, qp.qpn(), gid);
    let msg: Vec<u8> = (0..64u8).collect();
    s.fill(0, &msg);
    let rsge = [s.sge(4096, 64)];
    let ssge = [s.sge(0, 64)];
    // SAFETY: the buffers outlive the requests and are untouched until polled.
    unsafe {
        qp.post_recv(&[RecvWr {
            wr_id: 1,
            sges: &rsge,
        }])
    }
    .unwrap();
    // SAFETY: as above.
    unsafe { qp.post_send(&[SendWr::send(2, &ssge)], UdAddress::address_handle) }.unwrap();
    let wcs = poll(&cq, 2);
    assert!(wcs.iter().all(|w| w.status == 0), "{wcs:?}");
    assert_eq!(s.bytes(4096, 64), msg);
    // The model executes what the doorbell record announces even without the register write, but
    // checks that the write came to the queue pair's own register (in a daemon's child, the
    // parent's model counts it).
    if let Some(model) = &s._model {
        let deadline = Instant::now() + Duration::from_secs(20);
        let st = loop {
            let st = model.stats().hca;
            if st.doorbells_missing + st.uar_doorbells + st.blueflame_copies > 0 {
                break st;
            }
            assert!(Instant::now() < deadline, "no doorbell verdict: {st:?}");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(
            (st.doorbells_missing, st.blueflame_mismatches),
            (0, 0),
            "the doorbell did not reach the queue pair's register: {st:?}"
        );
    }
    drop(qp);
    drop(other);
}

/// The tests above, run by a child process (this test binary again) on a model this process
/// serves: every verb, doorbell and completion crosses the process boundary. When the child is
/// gone, its connections are closed and every object it left is gone with them.
#[test]
fn through_a_daemon_from_another_process() {
    if std::env::var_os(DAEMON_ENV).is_some() {
        return; // The child itself.
    }
    let model = Mlx5Model::new().expect("starting the model");
    let dir = std::env::temp_dir().join(format!("uverbs-smoke-daemon.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("model.sock");
    let _ = std::fs::remove_file(&sock);
    let server = model.serve(&sock).expect("serving the model");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "rc_loopback_on_one_queue_pair",
            "ud_datagram_to_itself_and_arming",
            "reset_and_destroy_remove_only_their_queue_pairs_completions",
            "doorbells_ring_the_contexts_own_uar_pages",
            "--test-threads=1",
        ])
        .env(DAEMON_ENV, &sock)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting the child");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child did not finish in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(status.success(), "the child failed:\n{text}");
    assert!(text.contains("test result: ok. 4 passed"), "{text}");
    // The child's connections close as it exits; the files and what was in them go.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.clients() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.clients(), 0);
    assert_eq!(model.objects(), Default::default());
    let st = model.stats();
    assert!(st.ioctls > 0 && st.mmaps > 0 && st.hca.cqes > 0, "{st:?}");
    drop(server);
    assert!(!sock.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
