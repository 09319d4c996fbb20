//! An open device: [`Context`].

use std::collections::HashMap;
use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use uverbs_drivers::backend::{Capability, CqBackend};
use uverbs_drivers::chan::CommandPath;
use uverbs_drivers::discover::{self, DeviceInfo, Driver};
use uverbs_drivers::error::{Error, Verb};
use uverbs_drivers::ucontext::Ucontext;
use uverbs_drivers::verbs::DeviceContext;

use crate::attr::{DeviceAttr, GidEntry, NodeType, PortAttr};
use crate::channel::CompletionChannel;
use crate::cq::{CompletionQueue, CqInner};
use crate::event::AsyncEvent;
use crate::pd::ProtectionDomain;

/// An open RDMA device with its user context.
///
/// Unlike `ibverbs` 0.9.2, opening does not fail when port 1 is not active: tools such as
/// `uverbs devinfo` must be able to show a port that is down. Use [`Context::query_port`] to check.
/// `Context` is `Send + Sync`; the objects created from it keep it alive.
#[derive(Debug, Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) drv: Arc<DeviceContext>,
    gid_table: Vec<GidEntry>,
    /// Port 1 as it was when the context was opened: `ibverbs` takes the LID and the default path
    /// MTU from here.
    pub(crate) port1: Option<PortAttr>,
    /// The CQs by the user handle their events carry.
    pub(crate) cq_events: CqEvents,
}

impl Inner {
    /// The kernel's user context: the commands every backend shares.
    pub(crate) fn ucontext(&self) -> &Ucontext {
        self.drv.ucontext()
    }
}

/// The completion queues by the user handle their events carry: a key of the context rather than
/// their `id`, which a user may give several queues. Reading a completion event must reach the
/// queue (rdma-core's `ibv_get_cq_event` calls the provider's `cq_event`: mlx5 advances the arm
/// sequence number there), and completion and async events are translated back to the `id`.
#[derive(Debug, Default)]
pub(crate) struct CqEvents {
    next: AtomicU64,
    map: Mutex<HashMap<u64, (isize, Weak<CqInner>)>>,
}

impl CqEvents {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (isize, Weak<CqInner>)>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A key no other CQ of the context has.
    pub(crate) fn next_key(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn insert(&self, key: u64, id: isize, cq: &Arc<CqInner>) {
        self.map().insert(key, (id, Arc::downgrade(cq)));
    }

    pub(crate) fn remove(&self, key: u64) {
        self.map().remove(&key);
    }

    /// A completion event with user handle `key` was read: acknowledges it to the CQ and returns
    /// the CQ's `id`; `None` when no CQ of this context has the key (it was destroyed after the
    /// event was queued).
    pub(crate) fn completion(&self, key: u64) -> Option<isize> {
        let (id, cq) = self.map().get(&key).cloned()?;
        if let Some(cq) = cq.upgrade() {
            cq.imp.event();
        }
        Some(id)
    }

    /// The `id` of the CQ whose events carry `key`, if this table has it.
    pub(crate) fn id(&self, key: u64) -> Option<isize> {
        self.map().get(&key).map(|(id, _)| *id)
    }
}

impl Context {
    pub(crate) fn open(info: &DeviceInfo) -> io::Result<Context> {
        Context::open_with(info, CommandPath::from_env())
    }

    pub(crate) fn open_with(info: &DeviceInfo, path: CommandPath) -> io::Result<Context> {
        let drv = DeviceContext::open_with(info, path)?;
        let gid_table = read_gid_table(drv.ucontext())?;
        let port1 = drv.ucontext().query_port(1).ok().map(PortAttr::new);
        Ok(Context {
            inner: Arc::new(Inner {
                drv: Arc::new(drv),
                gid_table,
                port1,
                cq_events: CqEvents::default(),
            }),
        })
    }

    /// Opens the device named `name` (a convenience over [`crate::devices`]).
    pub fn open_by_name(name: &str) -> io::Result<Context> {
        Context::open(&discover::find_device(name)?)
    }

    /// Whether commands travel as legacy `write()`s only (an old kernel, or `UVERBS_COMMAND_PATH=write`).
    pub fn is_legacy_path(&self) -> bool {
        self.inner.ucontext().channel().is_legacy()
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.inner.drv.info().name
    }

    /// The device's driver (and so the backend in use).
    pub fn driver(&self) -> Driver {
        self.inner.drv.info().driver
    }

    /// Whether the device offers `capability` (its verbs answer
    /// [`Error`](crate::Error)`::Unsupported` where it does not). Answered from what the device
    /// reports where the kernel reports it (`query_device`: memory windows, moderation, timestamps,
    /// on-demand paging), from a probe of the kernel that changes nothing where it reports nothing
    /// (re-registration), and otherwise from what the backend knows of itself and its kernel
    /// driver; [`Capability`]'s variants say which. Cheap after the first call: the attributes and
    /// the probe are asked once per context.
    ///
    /// ```no_run
    /// # fn main() -> std::io::Result<()> {
    /// use uverbs::Capability;
    ///
    /// let ctx = uverbs::devices()?.iter().next().expect("no rdma device").open()?;
    /// let pd = ctx.alloc_pd()?;
    /// if ctx.supports(Capability::MemoryWindows) {
    ///     let window = pd.alloc_mw()?; // bind it with SendRequest::bind_mw
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn supports(&self, capability: Capability) -> bool {
        self.inner.drv.supports(capability)
    }

    /// Creates a completion queue with room for at least `min_cq_entries` completions. `id` is an
    /// opaque value the kernel reports in the queue's events.
    pub fn create_cq(&self, min_cq_entries: i32, id: isize) -> io::Result<CompletionQueue<'_>> {
        CompletionQueue::new(self, min_cq_entries, id, None, 0, false)
    }

    /// Creates a completion queue as `attr` says (`ibv_create_cq_ex`): its size, `id`, channel
    /// and vector as the other constructors take them, and completion timestamps
    /// ([`CqAttr::timestamps`]: the device's clock in every completion, read with
    /// [`CompletionQueue::poll_timestamped`]; [`Error`](crate::Error)`::Unsupported` on rxe).
    pub fn create_cq_ex(&self, attr: &CqAttr<'_>) -> io::Result<CompletionQueue<'_>> {
        CompletionQueue::new(
            self,
            attr.min_entries,
            attr.id,
            attr.channel,
            attr.comp_vector,
            attr.timestamps,
        )
    }

    /// The device's clock, to turn completion timestamps into wall-clock time (mlx5: the
    /// clock-info page the kernel maps and keeps current). [`Error`](crate::Error)`::Unsupported`
    /// where the device has none (rxe).
    pub fn device_clock(&self) -> io::Result<DeviceClock> {
        Ok(DeviceClock {
            clock: self.inner.drv.clock()?,
            _ctx: Arc::clone(&self.inner),
        })
    }

    /// Creates a completion queue that reports to `channel` when armed, on completion vector
    /// `comp_vector` (below [`Context::num_comp_vectors`]).
    pub fn create_cq_with_channel(
        &self,
        min_cq_entries: i32,
        id: isize,
        channel: &CompletionChannel,
        comp_vector: u32,
    ) -> io::Result<CompletionQueue<'_>> {
        CompletionQueue::new(self, min_cq_entries, id, Some(channel), comp_vector, false)
    }

    /// Creates a completion channel (`ibv_create_comp_channel`).
    pub fn create_comp_channel(&self) -> io::Result<CompletionChannel> {
        CompletionChannel::new(self)
    }

    /// Allocates a protection domain.
    pub fn alloc_pd(&self) -> io::Result<ProtectionDomain<'_>> {
        ProtectionDomain::new(self)
    }

    /// The kind of node the device is, from sysfs (`node_type`); `Unknown(0)` where it cannot be read.
    pub fn node_type(&self) -> NodeType {
        let text = self
            .inner
            .drv
            .info()
            .sysfs_attr("node_type")
            .unwrap_or_default();
        // "1: CA": the number before the colon, as strtoul reads it.
        let digits: String = text
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        NodeType::from(digits.parse::<u32>().unwrap_or(0))
    }

    /// Entry `index` of `port`'s P_Key table (`ibv_query_pkey`), in host order: `0xffff` is the
    /// default key, full membership. Read from sysfs (`ports/<port>/pkeys/<index>`) as libibverbs
    /// reads it: no command to the device. Port 0, or an index past the table, is an
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn query_pkey(&self, port: u8, index: u16) -> io::Result<u16> {
        let bad = |what: String| Error::InvalidArgument {
            verb: Verb::QueryPkey,
            what,
        };
        if port == 0 {
            return Err(bad("port 0 (ports are numbered from 1)".into()).into());
        }
        let rel = format!("ports/{port}/pkeys/{index}");
        let text = match self.inner.drv.info().sysfs_attr(&rel) {
            Ok(text) => text,
            Err(Error::Sysfs { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(
                    bad(format!("P_Key index {index} of port {port}: there is none")).into(),
                );
            }
            Err(e) => return Err(e.into()),
        };
        // "0xffff", as the kernel's show_port_pkey prints it.
        text.strip_prefix("0x")
            .and_then(|hex| u16::from_str_radix(hex, 16).ok())
            .ok_or_else(|| {
                Error::Protocol {
                    verb: Verb::QueryPkey,
                    what: format!("sysfs {rel} reads {text:?}, not a P_Key"),
                }
                .into()
            })
    }

    /// The board id from sysfs (`board_id`), where the driver has one (mlx5 does, rxe does not).
    pub fn board_id(&self) -> Option<String> {
        self.inner
            .drv
            .info()
            .sysfs_attr("board_id")
            .ok()
            .filter(|s| !s.is_empty())
    }

    /// The device's attributes (`ibv_query_device_ex`).
    pub fn query_device(&self) -> io::Result<DeviceAttr> {
        let attrs = self.inner.ucontext().query_device()?;
        let fw_ver = self.inner.drv.format_fw_ver(attrs.resp.base.fw_ver);
        Ok(DeviceAttr::new(attrs, fw_ver))
    }

    /// A port's attributes; ports are numbered from 1 (`ibv_query_port`).
    pub fn query_port(&self, port: u8) -> io::Result<PortAttr> {
        Ok(PortAttr::new(self.inner.ucontext().query_port(port)?))
    }

    /// The GID table of every port, as read when the context was opened, without empty slots.
    pub fn gid_table(&self) -> &[GidEntry] {
        &self.inner.gid_table
    }

    /// Reads the GID table again (it changes when IP addresses come and go on RoCE).
    pub fn query_gid_table(&self) -> io::Result<Vec<GidEntry>> {
        read_gid_table(self.inner.ucontext())
    }

    /// One GID table entry, `None` for an empty slot (`ibv_query_gid_ex`).
    pub fn query_gid_entry(&self, port: u8, index: u32) -> io::Result<Option<GidEntry>> {
        Ok(self
            .inner
            .ucontext()
            .query_gid_entry(port, index)?
            .as_ref()
            .map(GidEntry::from))
    }

    /// The number of completion vectors (`num_comp_vectors`).
    pub fn num_comp_vectors(&self) -> u32 {
        self.inner.ucontext().num_comp_vectors()
    }

    /// The device's async event file, for `poll`/`epoll` (non-blocking; read it with
    /// [`Context::get_async_event`] and friends).
    pub fn async_fd(&self) -> BorrowedFd<'_> {
        self.inner.ucontext().async_fd()
    }

    fn read_async_event(&self, timeout: Option<Duration>) -> io::Result<Option<AsyncEvent>> {
        /// `IBV_EVENT_CQ_ERR`: the element is a CQ's user handle.
        const CQ_ERR: u32 = 0;
        Ok(self
            .inner
            .ucontext()
            .read_async_event(timeout)?
            .map(|mut desc| {
                if desc.event_type == CQ_ERR {
                    if let Some(id) = self.inner.cq_events.id(desc.element) {
                        desc.element = id as u64;
                    }
                }
                AsyncEvent::from(desc)
            }))
    }

    /// Waits for the next async event of the device (`ibv_get_async_event`): an error or state
    /// change of a completion queue, queue pair or shared receive queue created in this context, or
    /// of a port. Nothing needs to be acknowledged.
    pub fn get_async_event(&self) -> io::Result<AsyncEvent> {
        self.read_async_event(None)?.ok_or_else(|| {
            Error::Protocol {
                verb: Verb::ReadEvent,
                what: "a wait without a timeout returned no event".into(),
            }
            .into()
        })
    }

    /// Waits up to `timeout` for the next async event: `Ok(None)` when none came.
    pub fn get_async_event_timeout(&self, timeout: Duration) -> io::Result<Option<AsyncEvent>> {
        self.read_async_event(Some(timeout))
    }

    /// Returns the next async event if one is waiting, without blocking.
    pub fn try_get_async_event(&self) -> io::Result<Option<AsyncEvent>> {
        self.read_async_event(Some(Duration::ZERO))
    }

    /// Waits for the next async event without blocking the thread, on the tokio runtime the future
    /// runs on (feature `tokio`; see [`CompletionChannel::wait_async`] for how).
    #[cfg(feature = "tokio")]
    pub async fn wait_async_event(&self) -> io::Result<AsyncEvent> {
        crate::reactor::wait_readable_then(self.async_fd(), || self.try_get_async_event()).await
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// The driver-level context, for tools and tests that issue raw commands.
    ///
    /// # Safety
    /// The driver level's raw-address calls (`reg_mr`, the `*_with_udata` creations, the
    /// `Channel` command functions, the mlx5 doorbell writers) are `unsafe fn`s with their own
    /// contracts, but its safe functions still act on any kernel object by handle, the objects
    /// this crate created and owns included: destroying, deregistering or modifying one of them
    /// behind its owner's back (a `QueuePair` reset to RESET while its ring holds WQEs whose
    /// buffers were released at their completion, a handle destroyed and reused by the kernel for
    /// another object that the first owner's `Drop` then destroys) breaks what their safe API
    /// relies on. The caller must not use the driver level on objects of this crate in any way
    /// their own API would not.
    #[allow(unsafe_code)]
    pub unsafe fn driver_context(&self) -> &DeviceContext {
        &self.inner.drv
    }
}

fn read_gid_table(drv: &Ucontext) -> io::Result<Vec<GidEntry>> {
    let ports = drv.query_device()?.resp.base.phys_port_cnt;
    let mut total = 0usize;
    for port in 1..=ports {
        total += usize::try_from(drv.query_port(port)?.legacy_resp.gid_tbl_len).unwrap_or(0);
    }
    Ok(drv
        .query_gid_table(total)?
        .iter()
        .map(GidEntry::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn context_is_send_and_sync() {
        assert_send_sync::<Context>();
    }
}

/// What [`Context::create_cq_ex`] creates (the parts of `struct ibv_cq_init_attr_ex` uverbs
/// takes).
#[derive(Debug, Clone, Copy, Default)]
pub struct CqAttr<'a> {
    /// At least this many completions (1 or more).
    pub min_entries: i32,
    /// The opaque value the queue's events report.
    pub id: isize,
    /// The completion channel it reports to when armed.
    pub channel: Option<&'a CompletionChannel>,
    /// The completion vector (below [`Context::num_comp_vectors`]).
    pub comp_vector: u32,
    /// The device's clock in every completion (`IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`).
    pub timestamps: bool,
}

/// The device's free-running clock, as wall-clock time: from [`Context::device_clock`].
///
/// Completion timestamps ([`crate::TimestampedWc::timestamp`]) count the device's cycles
/// (`DeviceAttr::hca_core_clock` kHz). This converts them as `mlx5dv_ts_to_ns` does, through the
/// reference point the kernel keeps current (read anew on every call, under its sequence count).
#[derive(Debug, Clone)]
pub struct DeviceClock {
    clock: uverbs_drivers::verbs::DeviceClock,
    _ctx: Arc<Inner>,
}

impl DeviceClock {
    /// Nanoseconds since the Unix epoch (the kernel's `CLOCK_REALTIME`) at device time
    /// `timestamp`.
    pub fn to_unix_nanos(&self, timestamp: u64) -> u64 {
        self.clock.to_unix_nanos(timestamp)
    }

    /// The wall-clock time at device time `timestamp`.
    pub fn to_system_time(&self, timestamp: u64) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_nanos(self.to_unix_nanos(timestamp))
    }
}
