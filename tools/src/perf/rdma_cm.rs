//! perftest's `-R`: the test queue pairs connected by the RDMA connection manager
//! (`create_rdma_cm_connection` in `perftest_communication.c`), one connection per queue pair to
//! the server's port `-p` (the control connection's listener is gone by then).
//!
//! The order, which perftest relies on:
//!
//! 1. After the MTU exchange, a synchronisation (56 zero bytes each way). A server here listens
//!    *before* answering it; perftest's server listens only after, so a client here retries a
//!    connect that is rejected for want of a listener (up to 30 times, 100 ms apart).
//! 2. The client resolves an identifier per queue pair; the device the first one resolves to
//!    carries the test (the server's: the device of the first request), whatever `-d` says.
//! 3. The client creates each queue pair on its identifier and connects it; the server creates
//!    one on each request and accepts it (then sets the RNR timer, as perftest does). Both ask for
//!    `-o` RDMA read resources in a READ test, none otherwise.
//! 4. Another synchronisation; the queue pairs are in RTS, so the handshakes that follow only carry
//!    keys and addresses (the PSNs are the CM's).
//! 5. At the end the client disconnects each connection and waits for each `DISCONNECTED`; the
//!    server just destroys its identifiers.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use uverbs::cm::{CmId, EventChannel, EventKind, PortSpace};
use uverbs::{CompletionQueue, Context, ProtectionDomain, QpAttr, QpCaps, QueuePair};

use super::args::Params;
use super::exchange::{cm_params, resolve_ipv4, resolve_with_retries, Comm};
use super::{Fail, MIN_RNR_TIMER};

/// How many times a client connects when the server is not listening yet, and how long it waits
/// in between (perftest's `rdma_cm_client_connection` tries 10 times; a loaded server may take
/// longer than a second from its reply to its listen).
const CONNECT_TRIES: u32 = 30;
const RETRY_DELAY: Duration = Duration::from_millis(100);
/// How long one step of the connection (a request, an answer) may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// The test connections' identifiers, from the first synchronisation to the end of the run.
#[derive(Debug)]
pub struct TestCm {
    channel: EventChannel,
    /// The client's: the server's address and port.
    dst: Option<SocketAddr>,
    /// The server's listener, until every queue pair is connected.
    listen: Option<CmId>,
    /// The server's first request, not accepted yet.
    first: Option<CmId>,
    /// One per queue pair (the client's resolved ones, the server's accepted ones).
    ids: Vec<CmId>,
}

fn cm_err(what: &str) -> impl Fn(std::io::Error) -> Fail + '_ {
    move |e| Fail::from(format!("{what}: {e}"))
}

impl TestCm {
    /// Steps 1 and 2: up to the point where the device is known.
    pub fn start(p: &Params, comm: &mut Comm) -> Result<TestCm, Fail> {
        let channel =
            EventChannel::new().map_err(cm_err("Failed to create RDMA CM event channel"))?;
        let mut cm = TestCm {
            channel,
            dst: None,
            listen: None,
            first: None,
            ids: Vec::new(),
        };
        match &p.servername {
            Some(host) => {
                cm.dst = Some(resolve_ipv4(host, p.port)?);
                comm.cm_sync().map_err(|m| {
                    Fail::from(format!(
                        "Failed to sync between client and server before creating RDMA CM connection: {m}"
                    ))
                })?;
                cm.resolve(p.num_qps as usize)?;
            }
            None => {
                let listen = cm
                    .channel
                    .create_id(PortSpace::Tcp)
                    .map_err(cm_err("Failed to create RDMA CM server control ID"))?;
                listen
                    .bind(SocketAddr::V4(SocketAddrV4::new(
                        Ipv4Addr::UNSPECIFIED,
                        p.port,
                    )))
                    .map_err(cm_err("Failed to bind RDMA CM address on the server"))?;
                listen
                    .listen(p.num_qps)
                    .map_err(cm_err("Failed to listen on RDMA CM server listen ID"))?;
                comm.cm_sync().map_err(|m| {
                    Fail::from(format!(
                        "Failed to sync between client and server before creating RDMA CM connection: {m}"
                    ))
                })?;
                cm.first = Some(next_request(&listen)?);
                cm.listen = Some(listen);
            }
        }
        Ok(cm)
    }

    /// The client's identifiers, their addresses and routes resolved.
    fn resolve(&mut self, n: usize) -> Result<(), Fail> {
        let dst = self.dst.expect("client");
        self.ids.clear();
        for _ in 0..n {
            let id = self
                .channel
                .create_id(PortSpace::Tcp)
                .map_err(cm_err("Failed to create RDMA CM ID"))?;
            resolve_with_retries(&id, dst)?;
            self.ids.push(id);
        }
        Ok(())
    }

    fn device_id(&self) -> &CmId {
        self.first.as_ref().unwrap_or_else(|| &self.ids[0])
    }

    /// The device the connections are on (`cma_id->verbs`).
    pub fn open_context(&self) -> Result<Context, Fail> {
        self.device_id()
            .open_context()
            .map_err(cm_err(" Couldn't get context for the RDMA CM device"))
    }

    /// The port of that device.
    pub fn port(&self) -> Result<u8, Fail> {
        Ok(self
            .device_id()
            .device()
            .map_err(cm_err("rdma_cm query failed"))?
            .map_or(1, |d| d.port))
    }

    /// Step 3: a queue pair per identifier, connected (the client's with retries). `rd_atomic`:
    /// the RDMA read resources both ways.
    pub fn connect<'r>(
        &mut self,
        p: &Params,
        pd: &'r ProtectionDomain<'_>,
        send_cq: &'r CompletionQueue<'_>,
        recv_cq: &'r CompletionQueue<'_>,
        caps: QpCaps,
        rd_atomic: u8,
    ) -> Result<Vec<QueuePair<'r>>, Fail> {
        let params = cm_params(rd_atomic);
        let nq = p.num_qps as usize;
        let create = |id: &CmId| {
            id.create_qp(pd, send_cq, recv_cq, caps).map_err(|e| {
                Fail::from(format!(
                    "Couldn't create QP: {e} (TX depth {}, inline size {})",
                    caps.max_send_wr, caps.max_inline_data
                ))
            })
        };
        if self.dst.is_none() {
            let listen = self.listen.take().expect("server");
            let mut qps = Vec::with_capacity(nq);
            for _ in 0..nq {
                let id = match self.first.take() {
                    Some(id) => id,
                    None => next_request(&listen)?,
                };
                let qp = create(&id)?;
                id.accept(&params)
                    .map_err(cm_err("Failed to accept RDMA CM connection"))?;
                // perftest: ibv_modify_qp(MIN_RNR_TIMER), its result ignored.
                let _ = qp.modify(&QpAttr {
                    min_rnr_timer: Some(MIN_RNR_TIMER),
                    ..QpAttr::default()
                });
                qps.push(qp);
                self.ids.push(id);
            }
            // rdma_destroy_id(listen_id): the port is free again.
            drop(listen);
            return Ok(qps);
        }
        let mut attempt = 1;
        loop {
            if self.ids.is_empty() {
                self.resolve(nq)?;
            }
            let mut qps = Vec::with_capacity(nq);
            for id in &self.ids {
                let qp = create(id)?;
                id.connect(&params)
                    .map_err(cm_err("Failed to connect through RDMA CM"))?;
                qps.push(qp);
            }
            let mut rejected = None;
            for id in &self.ids {
                let ev = id
                    .get_event_timeout(STEP_TIMEOUT)
                    .map_err(cm_err("Failed to get RDMA CM event"))?;
                match ev.kind {
                    EventKind::Established { .. } => {}
                    EventKind::Rejected { reason, .. } => {
                        rejected = Some(reason);
                        break;
                    }
                    EventKind::Unreachable { errno }
                    | EventKind::ConnectError { errno }
                    | EventKind::AddrError { errno }
                    | EventKind::RouteError { errno } => {
                        return Err(Fail::from(format!(
                            "RDMA CM event error:\nEvent: RDMA_CM_EVENT_{}; error: {}.",
                            ev.name(),
                            -errno
                        )))
                    }
                    _ => {
                        return Err(Fail::from(format!(
                            "Unexpected RDMA CM event RDMA_CM_EVENT_{}",
                            ev.name()
                        )))
                    }
                }
            }
            let Some(reason) = rejected else {
                return Ok(qps);
            };
            if attempt >= CONNECT_TRIES {
                return Err(Fail::from(format!(
                    "RDMA CM event error:\nEvent: RDMA_CM_EVENT_REJECTED; error: {reason} ({}).\n\
                     Failed to connect RDMA CM client, tried {CONNECT_TRIES} times.",
                    uverbs::cm::reject_reason_name(reason)
                )));
            }
            // The server does not listen yet: start over with new identifiers (perftest reports
            // each failed attempt the same way).
            eprintln!(
                "RDMA CM event error:\nEvent: RDMA_CM_EVENT_REJECTED; error: {reason}.\n\
                 (attempt {attempt} of {CONNECT_TRIES}; retrying in {} ms)",
                RETRY_DELAY.as_millis()
            );
            drop(qps);
            self.ids.clear();
            attempt += 1;
            std::thread::sleep(RETRY_DELAY);
        }
    }

    /// Step 5: the client disconnects every connection and waits for each to go down (bounded);
    /// the server leaves it to dropping the identifiers.
    pub fn disconnect(&self) {
        if self.dst.is_none() {
            return;
        }
        for id in &self.ids {
            let _ = id.disconnect();
        }
        for id in &self.ids {
            loop {
                match id.get_event_timeout(Duration::from_secs(5)) {
                    Ok(ev) if matches!(ev.kind, EventKind::Disconnected) => break,
                    Ok(_) => continue,
                    Err(_) => break,
                }
            }
        }
    }
}

/// The next connection request at `listen`; any other event of it is an error.
fn next_request(listen: &CmId) -> Result<CmId, Fail> {
    let ev = listen
        .get_event_timeout(Duration::from_secs(3600))
        .map_err(cm_err("Failed to get RDMA CM event"))?;
    match ev.kind {
        EventKind::ConnectRequest { id, .. } => Ok(id),
        other => Err(Fail::from(format!(
            "RDMA CM event error:\nEvent: unexpected {other:?} at the listener"
        ))),
    }
}
