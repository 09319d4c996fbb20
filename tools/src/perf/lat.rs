//! The latency loops: `run_iter_lat_send` and `run_iter_lat_write`.
//!
//! Nothing in a measured loop allocates: requests are built on the stack, completions land in a
//! fixed array, and the timestamps go into a vector sized before the loop.

use uverbs::{ibv_wc, MemoryRegion, ReceiveRequest, SendRequest};

use super::args::{Params, Test};
use super::{ctx_err, poll_wait, wc_error, Fail, Rdma};

/// `ctx_set_recv_wqes` for `send-lat`: `rx_depth` receives of `size` bytes into queue pair 0's
/// receive half (all at the same address, as perftest's latency tests do).
pub fn post_receives(
    r: &Rdma<'_, '_>,
    mr: &MemoryRegion<u8>,
    p: &Params,
    size: u64,
) -> Result<(), Fail> {
    let off = r.layout.recv_offset(0);
    let sge = [mr
        .sge(off..off + size as usize)
        .map_err(ctx_err("Couldn't post recv"))?];
    let rr = [ReceiveRequest::new(0, &sge)];
    for _ in 0..p.rx_depth {
        // SAFETY: the region outlives the queue pair's use of it (both live until the run ends,
        // and the queue pair is destroyed first), and this program never reads or writes the
        // receive half while receives are posted: it only counts their completions.
        unsafe { r.qps[0].post_receive_list(&rr) }
            .map_err(|f| Fail::from(format!("Couldn't post recv: {}", f.error)))?;
    }
    Ok(())
}

/// One `send-lat` run of `p.iters` round trips of `size` bytes; the receives are posted and the
/// peer synchronised already. `tposted[i]` gets the time of the `i`-th send.
///
/// The client sends first. Each side waits for a receive, reposts it while more are needed, and
/// sends; with `-t` above 1 only every `cq_mod`-th send (and the last) is signaled, and its
/// completion is awaited right after the post.
pub fn send_lat(
    r: &Rdma<'_, '_>,
    mr: &MemoryRegion<u8>,
    p: &Params,
    size: u64,
    tposted: &mut [u64],
) -> Result<(), Fail> {
    let qp = &r.qps[0];
    let client = p.is_client();
    let iters = p.iters;
    let cq_mod = u64::from(p.cq_mod.max(1));
    let rx_depth = u64::from(p.rx_depth);
    let size_us = size as usize;
    let send_sge = [mr.sge(0..size_us).map_err(ctx_err("Couldn't post send"))?];
    let roff = r.layout.recv_offset(0);
    let recv_sge = [mr
        .sge(roff..roff + size_us)
        .map_err(ctx_err("Couldn't post recv"))?];
    let rr = [ReceiveRequest::new(0, &recv_sge)];
    let inline = size <= u64::from(p.inline_size);
    let mut wcs = [ibv_wc::default(); 1];
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    while scnt < iters || rcnt < iters {
        if rcnt < iters && !(scnt < 1 && client) {
            poll_wait(r.recv_cq, r.channel, &mut wcs)?;
            if wcs[0].error().is_some() {
                return Err(wc_error(
                    Test::SendLat,
                    "server",
                    &wcs[0],
                    &format!("rcnt={rcnt}"),
                ));
            }
            rcnt += 1;
            if rcnt + rx_depth <= iters {
                // SAFETY: as in `post_receives`.
                unsafe { qp.post_receive_list(&rr) }.map_err(|f| {
                    Fail::run(
                        Test::SendLat,
                        format!("Couldn't post recv: rcnt={rcnt}: {}", f.error),
                    )
                })?;
            }
        }
        if scnt < iters {
            tposted[scnt as usize] = r.now();
            scnt += 1;
            let signaled = scnt % cq_mod == 0 || scnt == iters;
            let wr = if inline {
                SendRequest::send_inline(0, &mr[..size_us])
            } else {
                SendRequest::send(0, &send_sge)
            };
            let wr = if signaled { wr } else { wr.unsignaled() };
            // SAFETY: the send half is never written during the run, and the region outlives the
            // queue pair; inline data is copied during the call.
            unsafe { qp.post_send_list(&[wr]) }.map_err(|f| {
                Fail::run(
                    Test::SendLat,
                    format!("Couldn't post send: scnt={scnt}: {}", f.error),
                )
            })?;
            if signaled {
                poll_wait(r.send_cq, r.channel, &mut wcs)?;
                if wcs[0].error().is_some() {
                    return Err(wc_error(
                        Test::SendLat,
                        "client",
                        &wcs[0],
                        &format!("scnt={scnt}, ccnt={scnt}"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// One `write-lat` run of `p.iters` round trips of `size` bytes. `tposted[i]` gets the time of the
/// `i`-th write.
///
/// The server writes first. Each side waits until the last byte of its receive half holds the
/// iteration number (mod 256) the peer wrote there, stores its own next number in the last byte of
/// its send half, RDMA-writes the `size` bytes to the peer's receive half, and waits for the write's
/// completion.
pub fn write_lat(
    r: &Rdma<'_, '_>,
    mr: &mut MemoryRegion<u8>,
    p: &Params,
    size: u64,
    tposted: &mut [u64],
) -> Result<(), Fail> {
    let qp = &r.qps[0];
    let server = !p.is_client();
    let iters = p.iters;
    let size_us = size as usize;
    let post_off = size_us - 1;
    let poll_off = r.layout.recv_offset(0) + size_us - 1;
    let sge = [mr.sge(0..size_us).map_err(ctx_err("Couldn't post send"))?];
    let remote = r.remote[0];
    let inline = size <= u64::from(p.inline_size);
    let mut wcs = [ibv_wc::default(); 1];
    let (mut scnt, mut ccnt, mut rcnt) = (0u64, 0u64, 0u64);
    while scnt < iters || ccnt < iters || rcnt < iters {
        if rcnt < iters && !(scnt < 1 && server) {
            rcnt += 1;
            let want = rcnt as u8;
            // The peer's RDMA WRITE lands in this memory behind the compiler's back: `wait_for`
            // loads the byte afresh each time, then orders later reads of the region after it.
            mr.wait_for(poll_off, |b| b == want, None);
        }
        if scnt < iters {
            tposted[scnt as usize] = r.now();
            scnt += 1;
            // The previous write has completed (awaited below), so the device no longer reads the
            // send half.
            // Not `mr[post_off] = ..`: that borrows the whole region, whose receive half the
            // peer may be writing.
            mr.write_volatile(post_off, scnt as u8);
            let wr = if inline {
                SendRequest::rdma_write_inline(0, &mr[..size_us], remote)
            } else {
                SendRequest::rdma_write(0, &sge, remote)
            };
            // SAFETY: the send half is not written again until this write's completion has been
            // polled (below), and the region outlives the queue pair; inline data is copied during
            // the call.
            unsafe { qp.post_send_list(&[wr]) }.map_err(|f| {
                Fail::run(
                    Test::WriteLat,
                    format!("Couldn't post send: scnt={scnt}: {}", f.error),
                )
            })?;
        }
        if ccnt < iters {
            poll_wait(r.send_cq, None, &mut wcs)?;
            if wcs[0].error().is_some() {
                return Err(wc_error(
                    Test::WriteLat,
                    "client",
                    &wcs[0],
                    &format!("scnt={scnt}, ccnt={ccnt}"),
                ));
            }
            ccnt += 1;
        }
    }
    Ok(())
}
