//! What the driver makes of the kernel's answers, and of the sizes it derives from them: the
//! `GET_CONTEXT` driver data of mlx5 (`parse_response`; rxe has none), the UAR layout, the queue
//! geometries computed from the context's limits and the caller's capacities (`QpSizes`,
//! `SrqSizes`, `cq_entries`), address vectors, rxe completion records (`wc_from_bytes`), and the
//! ioctl command layout (`IoctlCmd::to_bytes`) the kernel parses in turn.
//!
//! Must hold: no panic (overflow checks are on); a geometry that is accepted is consistent (powers
//! of two within the limits, the buffer holds both queues, every request the QP says it takes fits
//! a WQE the device accepts: the largest inline send is posted on a `SendQueue` of that geometry);
//! every BlueFlame register lies inside its UAR page; the ioctl bytes are the attributes given.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use uverbs_drivers::chan::{IoctlCmd, MAX_ATTRS};
use uverbs_drivers::mlx5::ah::{build_av, AhLink};
use uverbs_drivers::mlx5::cq::cq_entries;
use uverbs_drivers::mlx5::qp::{sq_overhead, Limits, QpSizes};
use uverbs_drivers::mlx5::sq::{QpType, SendQueue, SendQueueConfig};
use uverbs_drivers::mlx5::srq::{SrqSizes, NEXT_SEG_SIZE};
use uverbs_drivers::mlx5::uar::{UarLayout, ADAPTER_PAGE_SIZE};
use uverbs_drivers::mlx5::wqe::{MAX_DS, MAX_WQE_COUNT};
use uverbs_drivers::mlx5::Mlx5Context;
use uverbs_drivers::rxe::cq::wc_from_bytes;
use uverbs_drivers::uapi;
use uverbs_drivers::wr::{send_flags, SendWr};

#[derive(Arbitrary, Debug)]
enum Attr {
    InU64(u16, u64),
    InU32(u16, u32),
    InBytes(u16, Vec<u8>),
    OutBytes(u16, u8),
    Idr(u16, u32),
    NewIdr(u16),
    Optional,
    UhwIn(Vec<u8>),
    UhwOut(u8),
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// The mlx5 `GET_CONTEXT` response, padded or cut to its size unless `raw`.
    context: Vec<u8>,
    raw: bool,
    page_shift: u8,
    qp_type: u8,
    /// max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data.
    cap: [u32; 5],
    small_cap: bool,
    srq: bool,
    srq_wr_sge: (u32, u32),
    cqe: u32,
    ah_attr: [u8; 32],
    ethernet: bool,
    roce_v2: bool,
    sport: u16,
    wc: Vec<u8>,
    driver_id: u32,
    attrs: Vec<Attr>,
}

fn check_qp_sizes(input: &Input, limits: &Limits) {
    let qp_type = [QpType::Rc, QpType::Uc, QpType::Ud][usize::from(input.qp_type % 3)];
    let mut c = input.cap;
    if input.small_cap {
        // Capacities a program would ask for, so that the accepting paths are reached often.
        c = [c[0] % 300, c[1] % 300, c[2] % 40, c[3] % 40, c[4] % 1100];
    }
    let cap = uapi::ib_uverbs_qp_cap {
        max_send_wr: c[0],
        max_recv_wr: c[1],
        max_send_sge: c[2],
        max_recv_sge: c[3],
        max_inline_data: c[4],
    };
    let sizes = QpSizes::new(&limits, qp_type, &cap, input.srq);
    let ds_limit = match qp_type {
        QpType::Ud => (MAX_DS - 4) * 16 - 4,
        QpType::Rc | QpType::Uc => (MAX_DS - 2) * 16 - 4,
    };
    if cap.max_send_wr > 0 && cap.max_inline_data as usize > ds_limit {
        // More inline data than a WQE of MAX_DS octowords holds is refused, never lowered (F3).
        assert!(sizes.is_err(), "{cap:?} accepted: {sizes:?}");
    }
    let Ok(s) = sizes else {
        return;
    };
    let desc = limits.max_sq_desc_sz as usize;
    if cap.max_send_wr > 0 {
        assert!(s.sq_wqe_cnt.is_power_of_two(), "{s:?}");
        assert!(s.sq_wqe_cnt <= limits.max_send_wqebb && s.sq_wqe_cnt as usize <= MAX_WQE_COUNT);
        assert!(s.sq_max_post >= cap.max_send_wr, "{s:?} for {cap:?}");
        assert_eq!(s.max_send_sge, cap.max_send_sge);
        assert!(
            s.max_inline_data >= cap.max_inline_data,
            "{s:?} for {cap:?}"
        );
        // The largest WQE the QP claims to take fits the device's descriptor size: an inline RDMA
        // write (UD: an inline send) of max_inline_data bytes, an atomic or UD send with
        // max_send_sge entries.
        let (header, gather_header) = match qp_type {
            QpType::Ud => (16 + 48, 16 + 48),
            QpType::Rc | QpType::Uc => (16 + 16, 16 + 32),
        };
        let inline = header + (4 + s.max_inline_data as usize).div_ceil(16) * 16;
        assert!(
            inline <= desc,
            "{qp_type:?} {cap:?}: max_inline_data {} makes {inline}-byte WQEs, the device takes \
             {desc} (sq_overhead {})",
            s.max_inline_data,
            sq_overhead(qp_type)
        );
        assert!(inline / 16 <= MAX_DS);
        assert!(gather_header + 16 * s.max_send_sge as usize <= desc);
        // And a send queue of this geometry takes it.
        let mut ring = vec![0u8; s.sq_wqe_cnt as usize * 64];
        let cfg = SendQueueConfig {
            qpn: 1,
            user_index: None,
            qp_type,
            max_send_wr: s.sq_max_post,
            max_send_sge: s.max_send_sge,
            max_inline_data: s.max_inline_data,
            sq_sig_all: false,
        };
        let mut sq = SendQueue::new(&mut ring[..], cfg).expect("the computed ring");
        let data = vec![0x5a; s.max_inline_data as usize];
        let mut wr = SendWr::send(1, &[]);
        wr.flags = send_flags::INLINE;
        wr.inline = &data;
        if qp_type != QpType::Ud {
            wr.opcode = uverbs_drivers::wr::opcode::RDMA_WRITE;
            if let Err(e) = sq.post(&wr, None) {
                panic!("{qp_type:?} {s:?}: the largest inline write is refused: {e}");
            }
        }
    } else {
        assert_eq!((s.sq_wqe_cnt, s.sq_max_post), (0, 0));
    }
    if cap.max_recv_wr > 0 && !input.srq {
        assert!(s.rq_wqe_cnt.is_power_of_two());
        assert!(s.rq_max_post >= cap.max_recv_wr);
        assert!(s.rq_max_gs >= cap.max_recv_sge);
        assert!(1usize << s.rq_wqe_shift <= limits.max_rq_desc_sz as usize);
        assert_eq!((s.rq_wqe_cnt as usize) << s.rq_wqe_shift, s.sq_offset);
    } else {
        assert_eq!((s.rq_wqe_cnt, s.sq_offset), (0, 0));
    }
    assert_eq!(s.buf_len, s.sq_offset + s.sq_wqe_cnt as usize * 64);
}

/// An input attribute's data word: the bytes inline when at most 8, else the pointer.
fn in_value(data: &[u8]) -> u64 {
    if data.len() <= 8 {
        let mut inline = [0u8; 8];
        inline[..data.len()].copy_from_slice(data);
        u64::from_ne_bytes(inline)
    } else {
        data.as_ptr() as u64
    }
}

fn check_ioctl(input: &Input) {
    // Every buffer first, so that they outlive the command.
    let mut outs: Vec<Vec<u8>> = input
        .attrs
        .iter()
        .map(|a| match a {
            Attr::OutBytes(_, n) | Attr::UhwOut(n) => vec![0u8; usize::from(*n)],
            _ => Vec::new(),
        })
        .collect();
    let mut cmd = IoctlCmd::new(1, 2);
    // (attr_id, len, mandatory, data) expected per attribute.
    let mut want: Vec<(u16, u16, bool, u64)> = Vec::new();
    for (a, out) in input.attrs.iter().zip(outs.iter_mut()) {
        if want.len() == MAX_ATTRS {
            break;
        }
        match a {
            Attr::InU64(id, v) => {
                cmd.in_u64(*id, *v);
                want.push((*id, 8, true, *v));
            }
            Attr::InU32(id, v) => {
                cmd.in_u32(*id, *v);
                want.push((*id, 4, true, u64::from(*v)));
            }
            Attr::InBytes(id, data) if data.len() < 0x1_0000 => {
                cmd.in_bytes(*id, data);
                want.push((*id, data.len() as u16, true, in_value(data)));
            }
            Attr::UhwIn(data) if data.len() < 0x1_0000 => {
                cmd.uhw_in(data);
                if !data.is_empty() {
                    want.push((
                        uapi::UVERBS_ATTR_UHW_IN,
                        data.len() as u16,
                        false,
                        in_value(data),
                    ));
                }
            }
            Attr::InBytes(..) | Attr::UhwIn(_) => {}
            Attr::OutBytes(id, _) => {
                let p = out.as_mut_ptr() as u64;
                let len = out.len() as u16;
                let slot = cmd.out_bytes(*id, out);
                assert!(!cmd.output_valid(slot));
                want.push((*id, len, true, p));
            }
            Attr::UhwOut(_) => {
                if out.is_empty() {
                    continue;
                }
                let p = out.as_mut_ptr() as u64;
                let len = out.len() as u16;
                cmd.uhw_out(out);
                want.push((uapi::UVERBS_ATTR_UHW_OUT, len, false, p));
            }
            Attr::Idr(id, h) => {
                cmd.idr(*id, *h);
                want.push((*id, 0, true, u64::from(*h)));
            }
            Attr::NewIdr(id) => {
                let slot = cmd.new_idr(*id);
                assert_eq!(cmd.handle(slot), 0);
                want.push((*id, 0, true, 0));
            }
            Attr::Optional => {
                cmd.optional();
                if let Some(last) = want.last_mut() {
                    last.2 = false;
                }
            }
        }
    }
    let bytes = cmd.to_bytes(input.driver_id);
    let hdr_len = std::mem::size_of::<uapi::ib_uverbs_ioctl_hdr>();
    let attr_len = std::mem::size_of::<uapi::ib_uverbs_attr>();
    assert_eq!(bytes.len(), hdr_len + attr_len * want.len());
    let hdr = uapi::ib_uverbs_ioctl_hdr::read_from_bytes(&bytes[..hdr_len]).expect("header");
    assert_eq!(usize::from(hdr.length), bytes.len());
    assert_eq!(usize::from(hdr.num_attrs), want.len());
    assert_eq!(
        (hdr.object_id, hdr.method_id, hdr.driver_id),
        (1, 2, input.driver_id)
    );
    for (i, (id, len, mandatory, data)) in want.iter().enumerate() {
        let at = hdr_len + i * attr_len;
        let a = uapi::ib_uverbs_attr::read_from_bytes(&bytes[at..at + attr_len]).expect("attr");
        assert_eq!(
            (a.attr_id, a.len, a.data),
            (*id, *len, *data),
            "attribute {i}"
        );
        assert_eq!(
            a.flags & uapi::UVERBS_ATTR_F_MANDATORY != 0,
            *mandatory,
            "attribute {i}"
        );
    }
}

fuzz_target!(|input: Input| {
    let size = std::mem::size_of::<uapi::mlx5_ib_alloc_ucontext_resp>();
    let mut resp = input.context.clone();
    if !input.raw {
        resp.resize(size, 0);
    }
    match Mlx5Context::parse_response(&resp) {
        Ok(ctx) => {
            assert_eq!(resp.len(), size);
            assert!(ctx.cqe_version <= 1);
            let page = 1usize << (12 + input.page_shift % 5);
            if let Ok(l) = UarLayout::new(&ctx, page) {
                assert!(l.pages >= 1 && l.uars_per_page >= 1);
                assert!(l.uars_per_page * ADAPTER_PAGE_SIZE <= page);
                let n = l.bfregs();
                assert!(n >= ctx.tot_bfregs as usize);
                for i in [0, 1, n / 2, n - 1] {
                    let (p, off) = l.bfreg_location(i);
                    assert!(p < l.pages, "bfreg {i} on page {p} of {}", l.pages);
                    assert!(off + l.bf_reg_size.max(8) <= page, "bfreg {i} at {off:#x}");
                    assert_eq!(off % 8, 0);
                }
            }
            let limits = Mlx5Context::limits_of(&ctx);
            check_qp_sizes(&input, &limits);
            let (wr, sge) = input.srq_wr_sge;
            if let Ok(s) = SrqSizes::new(wr, sge, limits.max_srq_recv_wr, limits.max_rq_desc_sz) {
                assert!(s.wqe_cnt.is_power_of_two() && s.capacity() >= wr);
                assert!(1usize << s.wqe_shift <= limits.max_rq_desc_sz as usize);
                assert!(s.max_gs >= sge);
                assert_eq!(
                    NEXT_SEG_SIZE + 16 * s.max_gs as usize,
                    1usize << s.wqe_shift
                );
            }
        }
        Err(_) => assert!(
            resp.len() != size
                || resp[std::mem::offset_of!(uapi::mlx5_ib_alloc_ucontext_resp, cqe_version)] > 1
        ),
    }
    if let Ok(n) = cq_entries(input.cqe) {
        assert!(n.is_power_of_two() && n > input.cqe && n <= 1 << 24);
    }
    let mut attr = uapi::ib_uverbs_ah_attr::new_zeroed();
    attr.as_mut_bytes().copy_from_slice(&input.ah_attr);
    let link = AhLink {
        ethernet: input.ethernet,
        roce_v2: input.roce_v2,
    };
    if let Ok(av) = build_av(&attr, link, input.sport) {
        if input.ethernet && input.roce_v2 {
            assert!(av.rlid.get() >= 0xc000, "RoCE v2 source ports are 0xc000..");
        }
    }
    let wc = wc_from_bytes(&input.wc);
    assert_eq!(
        wc.is_some(),
        input.wc.len() >= std::mem::size_of::<uapi::ib_uverbs_wc>()
    );
    check_ioctl(&input);
});
