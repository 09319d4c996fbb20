//! The steps of the device removal test (`hostile_device_removal_at_run_time`, rxe in the VM):
//! [`Restore`] runs `rdma link delete` and puts the device back however the test ends; the checks
//! that the open context works on while the removal waits, and that the device works again once
//! added back.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use uverbs::{
    ibv_qp_state, ibv_wc, CompletionQueue, Context, ErrorExt, MemoryRegion, ProtectionDomain,
    QueuePair, ReceiveRequest, SendRequest,
};

use crate::common;
use crate::common::verbs::{poll_n, GID_INDEX};
use crate::fixture::rc_builder;

/// Puts the device back however the removal test ends: waits for the pending `rdma link delete`
/// (once the test's objects are gone it completes), then adds the device again if it is missing
/// and waits until it has its loopback GID, so that the tests after this one find it as before.
pub struct Restore {
    name: String,
    netdev: String,
    child: Option<std::process::Child>,
}

impl Restore {
    /// For the device `name`, if this runs in the VM (else the test is skipped: `None`); fails
    /// unless the device is rxe over a network interface, as the VM promises.
    pub fn rxe_in_vm(name: &str) -> Option<Restore> {
        let parent = std::fs::read_to_string(format!("/sys/class/infiniband/{name}/parent"))
            .unwrap_or_default()
            .trim()
            .to_string();
        let is_rxe = uverbs::devices()
            .unwrap()
            .find(name)
            .is_some_and(|d| d.driver() == uverbs::Driver::Rxe);
        if !common::in_vm(
            "hostile_device_removal_at_run_time",
            "deleting the device (`rdma link delete`)",
        ) {
            return None;
        }
        // The VM promised rxe over a network interface: anything else fails.
        assert!(
            is_rxe && !parent.is_empty(),
            "{name} in the VM: rxe {is_rxe}, over {parent:?}"
        );
        Some(Restore {
            name: name.to_string(),
            netdev: parent,
            child: None,
        })
    }

    /// Starts `rdma link delete` with a context open: the removal takes the device node away
    /// first, then waits for this process's context. Waits until the node is gone, checking that
    /// the removal is still pending then; and no new context can be opened meanwhile (a typed
    /// error).
    pub fn delete_while_open(&mut self) {
        let name = self.name.clone();
        let node: PathBuf = uverbs::devices()
            .unwrap()
            .find(&name)
            .unwrap()
            .uverbs_path()
            .to_path_buf();
        assert!(node.exists(), "{}", node.display());
        self.child = Some(
            std::process::Command::new("rdma")
                .args(["link", "delete", &name])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        // Once the node is gone, the removal must still be pending.
        let deadline = Instant::now() + Duration::from_secs(30);
        while node.exists() {
            assert_eq!(
                self.wait_child(Duration::ZERO),
                None,
                "the removal finished with the context open and {} still there",
                node.display()
            );
            assert!(
                Instant::now() < deadline,
                "{} still there after 30 s",
                node.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            self.wait_child(Duration::ZERO),
            None,
            "the removal did not wait for the open context"
        );
        // No new context while the removal is pending: a typed error.
        let e = Context::open_by_name(&name).unwrap_err();
        assert!(e.uverbs_error().is_some(), "opening during removal: {e}");
        eprintln!("opening {name} during its removal: {e}");
    }

    /// Closes `ctx`, the last of the test's objects, and checks that the removal was waiting for
    /// it and then completes: the device is gone.
    pub fn completes_on_close(&mut self, ctx: Context) {
        assert!(
            self.wait_child(Duration::ZERO).is_none(),
            "the removal finished while the context was still open"
        );
        drop(ctx);
        let status = self
            .wait_child(Duration::from_secs(30))
            .expect("the removal did not finish once the context was closed");
        assert!(status.success(), "rdma link delete: {status:?}");
        assert!(!self.present(), "the device is still there");
        assert!(
            uverbs::devices().unwrap().find(&self.name).is_none(),
            "the device is still listed"
        );
    }

    fn wait_child(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn present(&self) -> bool {
        std::path::Path::new(&format!("/sys/class/infiniband/{}", self.name)).exists()
    }

    /// Adds the device again and waits (up to 30 s) for GID index 1 to be there.
    pub fn add_back(&self) -> Result<(), String> {
        if !self.present() {
            let out = common::run(
                "rdma",
                &[
                    "link",
                    "add",
                    &self.name,
                    "type",
                    "rxe",
                    "netdev",
                    &self.netdev,
                ],
            );
            if !out.status.success() {
                return Err(format!("rdma link add: {}", common::stderr(&out)));
            }
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Context::open_by_name(&self.name)
                .map(|c| c.gid_table().iter().any(|g| g.gid_index == GID_INDEX))
                .unwrap_or(false);
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} has no GID index {GID_INDEX} after 30 s",
                    self.name
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if self.wait_child(Duration::from_secs(30)).is_none() {
            if let Some(mut c) = self.child.take() {
                eprintln!("rdma link delete still pending after 30 s: killing it");
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if let Err(e) = self.add_back() {
            eprintln!("could not restore {}: {e}", self.name);
        }
    }
}

/// While the removal waits, the open context works on: verbs (new objects included), a message
/// from `a` (in RTS, `tx` its source) to its peer (which has receives posted), both completing
/// on `cq`; and no async event arrives.
pub fn works_on(
    ctx: &Context,
    pd: &ProtectionDomain<'_>,
    cq: &CompletionQueue<'_>,
    a: &QueuePair<'_>,
    tx: &MemoryRegion<u64>,
) {
    assert!(ctx.query_port(1).is_ok() && ctx.query_device().is_ok());
    let extra_cq = ctx.create_cq(4, 0).unwrap();
    let extra_pd = ctx.alloc_pd().unwrap();
    let extra_mr = pd.allocate::<u8>(64).unwrap();
    assert_eq!(a.query().unwrap().qp_state, Some(ibv_qp_state::IBV_QPS_RTS));
    let s = [tx.sge(..1).unwrap()];
    // SAFETY: `tx` outlives the queue pair (the caller drops it after the queue pairs).
    unsafe { a.post_send_list(&[SendRequest::send(1, &s)]) }.unwrap();
    let got = poll_n(cq, 2);
    assert!(got.iter().all(ibv_wc::is_valid), "{got:?}");
    assert_eq!(
        ctx.get_async_event_timeout(Duration::from_millis(500))
            .unwrap(),
        None,
        "no async event for the removal"
    );
    drop((extra_cq, extra_pd, extra_mr));
}

/// The device `name`, added back, works: a queue pair connected to itself sends a message to
/// itself.
pub fn works_again(name: &str) {
    let ctx = Context::open_by_name(name).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, 0).unwrap();
    let prepared = rc_builder(&pd, &cq).build().unwrap();
    let ep = prepared.endpoint();
    let qp = prepared.handshake(ep).unwrap();
    let mr = pd.allocate::<u64>(2).unwrap();
    let r = [mr.sge(1..2).unwrap()];
    let s = [mr.sge(..1).unwrap()];
    // SAFETY: `mr` outlives the queue pair.
    unsafe { qp.post_receive_list(&[ReceiveRequest::new(1, &r)]) }.unwrap();
    // SAFETY: as above.
    unsafe { qp.post_send_list(&[SendRequest::send(2, &s)]) }.unwrap();
    let got = poll_n(&cq, 2);
    assert!(got.iter().all(ibv_wc::is_valid), "after re-adding: {got:?}");
}
