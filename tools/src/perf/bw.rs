//! The bandwidth loops: `run_iter_bw` (the client of every bandwidth test) and
//! `run_iter_bw_server` (the `send-bw` server, which receives).
//!
//! Nothing in a measured loop allocates: requests are built on the stack (or, for post lists,
//! once before the loop), completions land in a fixed array, and the timestamps go into vectors
//! sized before the loop.

use uverbs::{
    ibv_wc, MemoryRegion, PostFailure, QueuePair, ReceiveRequest, RemoteMemory, SendRequest, Sge,
};

use super::args::{Params, Verb};
use super::exchange::BwReport;
use super::report::{bw_report, BwTiming};
use super::{ctx_err, poll_once, poll_wait, wc_error, Fail, Rdma, POLL_BATCH};

/// The timestamp arrays (`tposted`, `tcompleted`), allocated once for every size.
#[derive(Debug)]
pub struct Times {
    tposted: Vec<u64>,
    tcompleted: Vec<u64>,
}

impl Times {
    /// Room for one timestamp per message of every queue pair, or just the start and end with
    /// `-N`.
    pub fn new(p: &Params) -> Times {
        let n = if p.no_peak {
            1
        } else {
            (p.iters * u64::from(p.num_qps)) as usize
        };
        Times {
            tposted: vec![0; n],
            tcompleted: vec![0; n],
        }
    }
}

/// The test's request for `sge` (and `remote`), with `wr_id` (the queue pair's index), signaled
/// or not; inline when small enough.
fn request<'a>(
    p: &Params,
    mr: &'a MemoryRegion<u8>,
    sge: &'a [Sge; 1],
    remote: RemoteMemory,
    signaled: bool,
    wr_id: u64,
) -> SendRequest<'a> {
    let inline = u64::from(sge[0].length) <= u64::from(p.inline_size);
    let wr = match p.test.verb() {
        Verb::Send if inline => {
            let off = (sge[0].addr - mr.as_ptr() as u64) as usize;
            SendRequest::send_inline(wr_id, &mr[off..off + sge[0].length as usize])
        }
        Verb::Send => SendRequest::send(wr_id, sge),
        Verb::Write if inline => {
            let off = (sge[0].addr - mr.as_ptr() as u64) as usize;
            SendRequest::rdma_write_inline(wr_id, &mr[off..off + sge[0].length as usize], remote)
        }
        Verb::Write => SendRequest::rdma_write(wr_id, sge, remote),
        Verb::Read => SendRequest::rdma_read(wr_id, sge, remote),
    };
    if signaled {
        wr
    } else {
        wr.unsignaled()
    }
}

/// One request of a `--batch` post, built before the post as a `SendRequest` is for
/// `post_send_list`; [`post_batch`] turns it into the batch API's call.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    verb: Verb,
    sge: &'a [Sge; 1],
    /// The bytes sent inline, if the request is inline.
    inline: Option<&'a [u8]>,
    remote: RemoteMemory,
    signaled: bool,
    wr_id: u64,
}

impl<'a> Item<'a> {
    /// The test's request for `sge` (and `remote`), as [`request`] builds it for `post_send_list`.
    fn new(
        p: &Params,
        mr: &'a MemoryRegion<u8>,
        sge: &'a [Sge; 1],
        remote: RemoteMemory,
        signaled: bool,
        wr_id: u64,
    ) -> Item<'a> {
        let verb = p.test.verb();
        let inline = (verb != Verb::Read && u64::from(sge[0].length) <= u64::from(p.inline_size))
            .then(|| {
                let off = (sge[0].addr - mr.as_ptr() as u64) as usize;
                &mr[off..off + sge[0].length as usize]
            });
        Item {
            verb,
            sge,
            inline,
            remote,
            signaled,
            wr_id,
        }
    }
}

/// One post of the `--batch` client: `items` through the batch API, from
/// [`QueuePair::start_send`] to [`uverbs::SendBatch::submit`] (one doorbell). What
/// `benches/compare` counts for `uverbs-batch` (`uverbs::perf::bw::post_batch`, inclusive); no
/// closure inside, whose symbol would match that name too.
///
/// # Safety
/// As [`QueuePair::post_send_list`] for the memory the items name.
#[inline(never)]
pub unsafe fn post_batch(qp: &mut QueuePair<'_>, items: &[Item<'_>]) -> Result<(), PostFailure> {
    let mut b = qp.start_send();
    for it in items {
        let id = it.wr_id;
        match (it.verb, it.inline, it.signaled) {
            (Verb::Send, Some(d), true) => b.signaled().send_inline(id, d),
            (Verb::Send, Some(d), false) => b.send_inline(id, d),
            (Verb::Send, None, true) => b.signaled().send(id, it.sge),
            (Verb::Send, None, false) => b.send(id, it.sge),
            (Verb::Write, Some(d), true) => b.signaled().write_inline(id, d, it.remote),
            (Verb::Write, Some(d), false) => b.write_inline(id, d, it.remote),
            (Verb::Write, None, true) => b.signaled().write(id, it.sge, it.remote),
            (Verb::Write, None, false) => b.write(id, it.sge, it.remote),
            (Verb::Read, _, true) => b.signaled().read(id, it.sge, it.remote),
            (Verb::Read, _, false) => b.read(id, it.sge, it.remote),
        }
    }
    // SAFETY: the items' memory is covered by this function's contract.
    unsafe { b.submit() }
}

/// `run_iter_bw`: streams `p.iters` messages of `size` bytes on each queue pair, keeping at most
/// `tx_depth` outstanding per queue pair, `post_list` per post, one completion per `cq_mod`.
/// With `--batch`, each post is one batch ([`post_batch`]) instead of one `post_send_list`.
pub fn client(
    r: &mut Rdma<'_, '_>,
    mr: &MemoryRegion<u8>,
    p: &Params,
    size: u64,
    t: &mut Times,
) -> Result<BwReport, Fail> {
    let nq = r.qps.len();
    let iters = p.iters;
    let tot = iters * nq as u64;
    let post_list = u64::from(p.post_list);
    let cq_mod = u64::from(p.cq_mod.max(1));
    let tx_depth = u64::from(p.tx_depth);
    let size_us = size as usize;
    let layout = r.layout;
    let fail = |m: String| Fail::run(p.test, m);

    // Post lists are built once: the same local and remote addresses, the last of every cq_mod
    // requests signaled (`ctx_set_send_wqes`).
    let list_sges: Vec<[Sge; 1]> = (0..nq)
        .map(|q| {
            let off = layout.send_offset(q);
            mr.sge(off..off + size_us).map(|s| [s])
        })
        .collect::<Result<_, _>>()
        .map_err(ctx_err("Couldn't post send"))?;
    let lists: Vec<Vec<SendRequest<'_>>> = if post_list > 1 {
        (0..nq)
            .map(|q| {
                (0..post_list)
                    .map(|j| {
                        let signaled = (j + 1) % cq_mod == 0;
                        request(p, mr, &list_sges[q], r.remote[q], signaled, q as u64)
                    })
                    .collect()
            })
            .collect()
    } else {
        Vec::new()
    };
    let item_lists: Vec<Vec<Item<'_>>> = if post_list > 1 && p.batch {
        (0..nq)
            .map(|q| {
                (0..post_list)
                    .map(|j| {
                        let signaled = (j + 1) % cq_mod == 0;
                        Item::new(p, mr, &list_sges[q], r.remote[q], signaled, q as u64)
                    })
                    .collect()
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut scnt = vec![0u64; nq];
    let mut ccnt = vec![0u64; nq];
    let mut wcs = [ibv_wc::default(); POLL_BATCH];
    let (mut totscnt, mut totccnt) = (0u64, 0u64);
    t.tposted.iter_mut().for_each(|x| *x = 0);
    t.tcompleted.iter_mut().for_each(|x| *x = 0);

    if p.no_peak {
        t.tposted[0] = r.now();
    }
    while totscnt < tot || totccnt < tot {
        for q in 0..nq {
            while scnt[q] < iters && scnt[q] - ccnt[q].min(scnt[q]) + post_list <= tx_depth {
                if !p.no_peak {
                    t.tposted[totscnt as usize] = r.now();
                }
                let posted = if post_list == 1 {
                    let k = scnt[q];
                    let signaled = k % cq_mod == cq_mod - 1 || k == iters - 1;
                    let off = layout.cycle_offset(size, k);
                    let loff = layout.send_offset(q) + off as usize;
                    let sge = [mr
                        .sge(loff..loff + size_us)
                        .map_err(ctx_err("Couldn't post send"))?];
                    let remote = r.remote[q].offset(off).ok_or_else(|| {
                        fail(format!(
                            "Couldn't post send: offset {off} is outside the remote buffer of {} \
                             bytes at {:#x}",
                            r.remote[q].len, r.remote[q].addr
                        ))
                    })?;
                    if p.batch {
                        let item = Item::new(p, mr, &sge, remote, signaled, q as u64);
                        // SAFETY: as below.
                        unsafe { post_batch(&mut r.qps[q], &[item]) }
                    } else {
                        let wr = request(p, mr, &sge, remote, signaled, q as u64);
                        // SAFETY: the region outlives the queue pairs and is neither written nor
                        // read by this program during the run (the data is meaningless); inline
                        // data is copied during the call.
                        unsafe { r.qps[q].post_send_list(&[wr]) }
                    }
                } else if p.batch {
                    // SAFETY: as above.
                    unsafe { post_batch(&mut r.qps[q], &item_lists[q]) }
                } else {
                    // SAFETY: as above.
                    unsafe { r.qps[q].post_send_list(&lists[q]) }
                };
                posted.map_err(|f| {
                    fail(format!(
                        "Couldn't post send: qp {q} scnt={}: {}",
                        scnt[q], f.error
                    ))
                })?;
                scnt[q] += post_list;
                totscnt += post_list;
            }
        }
        if totccnt < tot {
            let ne = if r.channel.is_some() {
                poll_wait(r.send_cq, r.channel, &mut wcs)?
            } else {
                poll_once(r.send_cq, &mut wcs)?
            };
            for wc in &wcs[..ne] {
                if wc.error().is_some() {
                    return Err(wc_error(
                        p.test,
                        "client",
                        wc,
                        &format!("scnt={totscnt}, ccnt={totccnt}"),
                    ));
                }
                let q = (wc.wr_id() as usize).min(nq - 1);
                ccnt[q] += cq_mod;
                totccnt += cq_mod;
                if !p.no_peak {
                    t.tcompleted[(totccnt.min(tot) - 1) as usize] = r.now();
                }
            }
        }
    }
    if p.no_peak {
        t.tcompleted[0] = r.now();
    }
    Ok(bw_report(
        size,
        &BwTiming {
            tposted: &t.tposted,
            tcompleted: &t.tcompleted,
            messages: tot,
            no_peak: p.no_peak,
            cq_mod,
            post_list,
        },
        p.report_gbits,
    ))
}

/// `ctx_set_recv_wqes` for the `send-bw` server: `rx_depth` receives of `size` bytes per queue
/// pair, moving through the cycle buffer of its receive half.
pub fn post_receives(
    r: &Rdma<'_, '_>,
    mr: &MemoryRegion<u8>,
    p: &Params,
    size: u64,
) -> Result<(), Fail> {
    for (q, qp) in r.qps.iter().enumerate() {
        for j in 0..u64::from(p.rx_depth) {
            post_receive(r, mr, qp, q, size, j).map_err(|m| {
                Fail::from(format!("Couldn't post recv Qp = {q}: counter={j}: {m}"))
            })?;
        }
    }
    Ok(())
}

/// Posts receive number `n` of queue pair `q`.
#[inline]
fn post_receive(
    r: &Rdma<'_, '_>,
    mr: &MemoryRegion<u8>,
    qp: &uverbs::QueuePair<'_>,
    q: usize,
    size: u64,
    n: u64,
) -> Result<(), String> {
    let off = r.layout.recv_offset(q) + r.layout.cycle_offset(size, n) as usize;
    let sge = [mr
        .sge(off..off + size as usize)
        .map_err(|e| e.to_string())?];
    let rr = [ReceiveRequest::new(q as u64, &sge)];
    // SAFETY: the region outlives the queue pairs, and this program never reads or writes the
    // receive halves: it only counts the receives' completions.
    unsafe { qp.post_receive_list(&rr) }.map_err(|f| f.error.to_string())
}

/// `run_iter_bw_server`: takes `p.iters` messages per queue pair, reposting receives while more
/// are to come; timed from the first completion to the last (no peak).
pub fn server(
    r: &Rdma<'_, '_>,
    mr: &MemoryRegion<u8>,
    p: &Params,
    size: u64,
    t: &mut Times,
) -> Result<BwReport, Fail> {
    let nq = r.qps.len();
    let iters = p.iters;
    let tot = iters * nq as u64;
    let mut rcnt_q = vec![0u64; nq];
    let mut posted = vec![u64::from(p.rx_depth); nq];
    let mut wcs = [ibv_wc::default(); POLL_BATCH];
    let mut rcnt = 0u64;
    let mut first = true;
    while rcnt < tot {
        let ne = poll_wait(r.recv_cq, r.channel, &mut wcs)?;
        if first {
            t.tposted[0] = r.now();
            first = false;
        }
        for wc in &wcs[..ne] {
            let q = (wc.wr_id() as usize).min(nq - 1);
            if wc.error().is_some() {
                return Err(wc_error(
                    p.test,
                    "server",
                    wc,
                    &format!("rcnt={}", rcnt_q[q]),
                ));
            }
            rcnt_q[q] += 1;
            rcnt += 1;
            if posted[q] < iters {
                post_receive(r, mr, &r.qps[q], q, size, posted[q]).map_err(|m| {
                    Fail::run(
                        p.test,
                        format!("Couldn't post recv Qp={q} rcnt={}: {m}", rcnt_q[q]),
                    )
                })?;
                posted[q] += 1;
            }
        }
    }
    t.tcompleted[0] = r.now();
    Ok(bw_report(
        size,
        &BwTiming {
            tposted: &t.tposted,
            tcompleted: &t.tcompleted,
            messages: tot,
            no_peak: true,
            cq_mod: 1,
            post_list: 1,
        },
        p.report_gbits,
    ))
}
