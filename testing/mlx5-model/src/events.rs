//! Event files: the async event files and completion channels of the model's contexts, and the
//! routing of the HCA's events to them (the kernel's `ib_uverbs_comp_handler` /
//! `ib_uverbs_async_handler`).
//!
//! Each event file is a pipe. The user gets a descriptor of its read end (blocking, as the kernel's
//! event files are until the user makes them non-blocking) and reads
//! records of the kernel's sizes from it (`ib_uverbs_comp_event_desc`, 8 bytes, on a completion
//! channel; `ib_uverbs_async_event_desc`, 16 bytes, on an async event file); the model keeps the
//! write end and a second descriptor of the read end. The kernel counts an event as reported when
//! the user reads it, and drops the unread events of an object it destroys; the model does the same:
//! it knows which object each record still in the pipe belongs to (the records leave the pipe in the
//! order they entered it, so the last `unread` of those it wrote are still there), and at destroy
//! time it takes the pipe's contents out, keeps the records of other objects and puts them back.
//!
//! The routing tables map the HCA's CQ, QP and SRQ numbers to the user handles and files of the
//! objects. All of it sits behind one lock that is never held while the kernel half calls into the
//! HCA, so that the HCA's engine can always deliver an event (it delivers from its own thread).

use std::collections::{HashMap, HashSet, VecDeque};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag};
use uverbs_uapi as uapi;
use zerocopy::IntoBytes;

use super::hca::{EventSink, ObjectKind};

mod raw {
    nix::ioctl_read_bad!(fionread, libc::FIONREAD, libc::c_int);
}

/// What an event file carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileKind {
    /// An async event file (`ib_uverbs_async_event_desc` records).
    Async,
    /// A completion channel (`ib_uverbs_comp_event_desc` records).
    Comp,
}

impl FileKind {
    fn record_len(self) -> usize {
        match self {
            FileKind::Async => std::mem::size_of::<uapi::ib_uverbs_async_event_desc>(),
            FileKind::Comp => std::mem::size_of::<uapi::ib_uverbs_comp_event_desc>(),
        }
    }
}

/// Names the object a record belongs to (device-unique); [`PORT_TAG`] for port events.
pub(super) type Tag = u64;

/// The tag of port events, which no destroy removes.
pub(super) const PORT_TAG: Tag = 0;

/// The largest pipe the model asks for (the default `pipe-max-size`); the records beyond it wait in
/// the model until there is room.
const PIPE_SIZE: i32 = 1 << 20;

/// One event file.
#[derive(Debug)]
struct EventFile {
    kind: FileKind,
    /// The model file (open device) it belongs to.
    owner: u64,
    read: OwnedFd,
    write: OwnedFd,
    /// The pipe's inode: how a descriptor the user passes is recognised.
    ino: (libc::dev_t, libc::ino_t),
    /// The tags of the records written to the pipe, oldest first; the last `unread` of them are the
    /// records still in the pipe.
    shadow: VecDeque<Tag>,
    /// Records that found the pipe full, in order (written before any newer record).
    pending: VecDeque<(Tag, [u8; 16])>,
}

/// The pipe that descriptor `fd` of the current task (`crate::task`) is: `EBADF` for anything
/// else.
fn inode_of(fd: RawFd) -> Result<(libc::dev_t, libc::ino_t), Errno> {
    let st = crate::task::fd_stat(fd)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return Err(Errno::EBADF);
    }
    Ok((st.st_dev, st.st_ino))
}

impl EventFile {
    fn new(kind: FileKind, owner: u64) -> Result<(EventFile, OwnedFd), Errno> {
        // The user's end blocks, as the kernel's event files do until the user sets `O_NONBLOCK`
        // (libibverbs' `ibv_get_cq_event` waits in a blocking read); the model's own ends never
        // do. So the model reads through an open file description of its own (the pipe opened
        // again through /proc), not a duplicate of the user's, whose flags the user sets.
        let (user, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        nix::fcntl::fcntl(&write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        // Best effort: a bigger pipe holds more unread events before they wait in `pending`.
        let _ = nix::fcntl::fcntl(&write, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
        let read = nix::fcntl::open(
            format!("/proc/self/fd/{}", user.as_raw_fd()).as_str(),
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )?;
        let st = nix::sys::stat::fstat(&read)?;
        let ino = (st.st_dev, st.st_ino);
        Ok((
            EventFile {
                kind,
                owner,
                read,
                write,
                ino,
                shadow: VecDeque::new(),
                pending: VecDeque::new(),
            },
            user,
        ))
    }

    /// Bytes still in the pipe.
    fn unread_bytes(&self) -> usize {
        let mut n: libc::c_int = 0;
        // SAFETY: `read` is an open pipe descriptor owned by this value, and FIONREAD writes one
        // `c_int` through the pointer, which points to `n`.
        match unsafe { raw::fionread(self.read.as_raw_fd(), &mut n) } {
            Ok(_) => usize::try_from(n).unwrap_or(0),
            Err(_) => 0,
        }
    }

    /// Forgets the tags of records the user has read.
    fn trim(&mut self) {
        let unread = self.unread_bytes() / self.kind.record_len();
        while self.shadow.len() > unread {
            self.shadow.pop_front();
        }
    }

    /// Writes one record into the pipe: `Ok(false)` when the pipe is full.
    fn put(&mut self, tag: Tag, rec: &[u8]) -> Result<bool, Errno> {
        match nix::unistd::write(&self.write, rec) {
            Ok(n) if n == rec.len() => {
                self.shadow.push_back(tag);
                Ok(true)
            }
            // Writes of at most PIPE_BUF bytes are all or nothing.
            Ok(_) => Err(Errno::EIO),
            Err(Errno::EAGAIN) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Moves waiting records into the pipe while there is room.
    fn flush(&mut self) {
        let len = self.kind.record_len();
        while let Some((tag, rec)) = self.pending.front().copied() {
            match self.put(tag, &rec[..len]) {
                Ok(true) => {
                    self.pending.pop_front();
                }
                Ok(false) => break,
                Err(_) => {
                    self.pending.pop_front();
                }
            }
        }
    }

    /// Queues a record for the user.
    fn push(&mut self, tag: Tag, rec: &[u8]) {
        self.trim();
        self.flush();
        let mut buf = [0u8; 16];
        buf[..rec.len()].copy_from_slice(rec);
        if !self.pending.is_empty() || !matches!(self.put(tag, rec), Ok(true)) {
            self.pending.push_back((tag, buf));
        }
    }

    /// Removes the unread records of `tag` (from the pipe and from the waiting ones); returns how
    /// many there were.
    fn remove(&mut self, tag: Tag) -> u32 {
        let len = self.kind.record_len();
        let mut drained = Vec::new();
        let mut buf = [0u8; 16];
        loop {
            match nix::unistd::read(&self.read, &mut buf[..len]) {
                Ok(n) if n == len => drained.push(buf),
                _ => break,
            }
        }
        // The drained records are the last `drained.len()` of those written.
        let skip = self.shadow.len().saturating_sub(drained.len());
        let tags: Vec<Tag> = self.shadow.iter().skip(skip).copied().collect();
        self.shadow.clear();
        let mut removed = 0u32;
        let mut keep = Vec::new();
        for (i, rec) in drained.iter().enumerate() {
            // More records than tags cannot happen; keep such records as port events.
            let t = tags.get(i).copied().unwrap_or(PORT_TAG);
            if t == tag && tag != PORT_TAG {
                removed += 1;
            } else {
                keep.push((t, *rec));
            }
        }
        let before = self.pending.len();
        self.pending.retain(|(t, _)| *t != tag);
        removed += (before - self.pending.len()) as u32;
        let waiting = std::mem::take(&mut self.pending);
        self.pending.extend(keep);
        self.pending.extend(waiting);
        self.flush();
        removed
    }
}

/// Where a CQ's events go.
#[derive(Debug, Clone)]
pub(super) struct CqRoute {
    /// The CQ's tag.
    pub tag: Tag,
    /// The user handle the events carry.
    pub user_handle: u64,
    /// Its completion channel.
    pub channel: Option<u64>,
    /// Its async event file.
    pub async_file: Option<u64>,
    comp_written: u32,
    async_written: u32,
}

impl CqRoute {
    /// A route for a new CQ.
    pub fn new(tag: Tag, user_handle: u64, channel: Option<u64>, async_file: Option<u64>) -> Self {
        CqRoute {
            tag,
            user_handle,
            channel,
            async_file,
            comp_written: 0,
            async_written: 0,
        }
    }
}

/// Where a QP's or SRQ's async events go.
#[derive(Debug, Clone)]
pub(super) struct Route {
    /// The object's tag.
    pub tag: Tag,
    /// The user handle the events carry.
    pub user_handle: u64,
    /// Its async event file.
    pub async_file: Option<u64>,
    written: u32,
}

impl Route {
    /// A route for a new QP or SRQ.
    pub fn new(tag: Tag, user_handle: u64, async_file: Option<u64>) -> Self {
        Route {
            tag,
            user_handle,
            async_file,
            written: 0,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    files: HashMap<u64, EventFile>,
    next_id: u64,
    cqs: HashMap<u32, CqRoute>,
    qps: HashMap<u32, Route>,
    srqs: HashMap<u32, Route>,
    delivered: u64,
    dropped: u64,
}

/// The event files of a model device and the routes to them.
#[derive(Debug, Default)]
pub(super) struct Events {
    state: Mutex<State>,
}

/// Counters for [`super::ModelStats`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct EventCounts {
    pub files: usize,
    pub delivered: u64,
    pub dropped: u64,
}

fn async_record(element: u64, event_type: u32) -> uapi::ib_uverbs_async_event_desc {
    uapi::ib_uverbs_async_event_desc {
        element,
        event_type,
        reserved: 0,
    }
}

impl State {
    fn deliver(&mut self, file: Option<u64>, tag: Tag, rec: &[u8]) -> bool {
        match file.and_then(|id| self.files.get_mut(&id)) {
            Some(f) => {
                f.push(tag, rec);
                self.delivered += 1;
                true
            }
            None => {
                self.dropped += 1;
                false
            }
        }
    }
}

impl Events {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new event file of `owner`: its id, and the descriptor for the user (whom it belongs to from
    /// now on).
    pub fn create(&self, kind: FileKind, owner: u64) -> Result<(u64, OwnedFd), Errno> {
        let (file, user) = EventFile::new(kind, owner)?;
        let mut st = self.lock();
        st.next_id += 1;
        let id = st.next_id;
        st.files.insert(id, file);
        Ok((id, user))
    }

    /// Closes an event file (its user descriptor stays open and reads end of file).
    pub fn close(&self, id: u64) {
        self.lock().files.remove(&id);
    }

    /// The event file of `owner` of this kind that descriptor `fd` refers to: what the kernel's
    /// `fdget` + type check finds, `EBADF` for anything else.
    pub fn lookup(&self, owner: u64, fd: i64, kind: FileKind) -> Result<u64, Errno> {
        let fd = RawFd::try_from(fd).map_err(|_| Errno::EBADF)?;
        let ino = inode_of(fd).map_err(|_| Errno::EBADF)?;
        let st = self.lock();
        st.files
            .iter()
            .find(|(_, f)| f.owner == owner && f.kind == kind && f.ino == ino)
            .map(|(id, _)| *id)
            .ok_or(Errno::EBADF)
    }

    /// Whether the event file exists.
    #[cfg(test)]
    pub fn exists(&self, id: u64) -> bool {
        self.lock().files.contains_key(&id)
    }

    /// Closes the event files of `owner` that nothing refers to any more: no object reports to
    /// them and the user closed every descriptor of them (the kernel frees such a file).
    pub fn collect_garbage(&self, owner: u64) -> Vec<u64> {
        let mut st = self.lock();
        let mut used: HashSet<u64> = HashSet::new();
        for r in st.cqs.values() {
            used.extend(r.channel);
            used.extend(r.async_file);
        }
        for r in st.qps.values().chain(st.srqs.values()) {
            used.extend(r.async_file);
        }
        let candidates: Vec<(u64, libc::ino_t, [RawFd; 2])> = st
            .files
            .iter()
            .filter(|(id, f)| f.owner == owner && !used.contains(id))
            .map(|(id, f)| (*id, f.ino.1, [f.read.as_raw_fd(), f.write.as_raw_fd()]))
            .collect();
        if candidates.is_empty() {
            return Vec::new();
        }
        let Some(open) = open_pipe_fds() else {
            return Vec::new();
        };
        // The model's own ends are in the same table only when the task is this process.
        let same_table = crate::task::remote_pid().is_none_or(|p| p == std::process::id() as i32);
        let mut closed = Vec::new();
        for (id, ino, ours) in candidates {
            let user_open = open
                .iter()
                .any(|(fd, i)| *i == ino && !(same_table && ours.contains(fd)));
            if !user_open {
                st.files.remove(&id);
                closed.push(id);
            }
        }
        closed
    }

    /// Closes every event file of `owner` (the model file is closed).
    pub fn close_owner(&self, owner: u64) {
        self.lock().files.retain(|_, f| f.owner != owner);
    }

    /// Routes a new CQ's events.
    pub fn add_cq(&self, cqn: u32, route: CqRoute) {
        self.lock().cqs.insert(cqn, route);
    }

    /// Stops routing a destroyed CQ's events and drops those the user has not read: returns the
    /// numbers of completion and async events the user read (`ib_uverbs_destroy_cq_resp`).
    pub fn remove_cq(&self, cqn: u32) -> (u32, u32) {
        let mut st = self.lock();
        let Some(r) = st.cqs.remove(&cqn) else {
            return (0, 0);
        };
        let mut comp = r.comp_written;
        if let Some(f) = r.channel.and_then(|id| st.files.get_mut(&id)) {
            comp = comp.saturating_sub(f.remove(r.tag));
        }
        let mut asy = r.async_written;
        if let Some(f) = r.async_file.and_then(|id| st.files.get_mut(&id)) {
            asy = asy.saturating_sub(f.remove(r.tag));
        }
        (comp, asy)
    }

    /// Routes a new QP's async events.
    pub fn add_qp(&self, qpn: u32, route: Route) {
        self.lock().qps.insert(qpn, route);
    }

    /// Stops routing a destroyed QP's events: returns how many the user read.
    pub fn remove_qp(&self, qpn: u32) -> u32 {
        let mut st = self.lock();
        let r = st.qps.remove(&qpn);
        remove_route(&mut st, r)
    }

    /// Routes a new SRQ's async events.
    pub fn add_srq(&self, srqn: u32, route: Route) {
        self.lock().srqs.insert(srqn, route);
    }

    /// Stops routing a destroyed SRQ's events: returns how many the user read.
    pub fn remove_srq(&self, srqn: u32) -> u32 {
        let mut st = self.lock();
        let r = st.srqs.remove(&srqn);
        remove_route(&mut st, r)
    }

    /// A completion event of CQ `cqn` (`ib_uverbs_comp_handler`): to its channel, if it has one.
    pub fn completion(&self, cqn: u32) {
        let mut st = self.lock();
        let Some(r) = st.cqs.get(&cqn).cloned() else {
            st.dropped += 1;
            return;
        };
        if r.channel.is_none() {
            // No channel: the kernel has nowhere to queue it either.
            st.dropped += 1;
            return;
        }
        let rec = uapi::ib_uverbs_comp_event_desc {
            cq_handle: r.user_handle,
        };
        if st.deliver(r.channel, r.tag, rec.as_bytes()) {
            if let Some(r) = st.cqs.get_mut(&cqn) {
                r.comp_written = r.comp_written.wrapping_add(1);
            }
        }
    }

    /// An async event (`ib_uverbs_async_handler`): for a CQ, QP or SRQ to its async event file with
    /// the object's user handle; for a port to every async event file, with the port number.
    pub fn async_event(&self, event_type: u32, kind: ObjectKind, element: u32) {
        let mut st = self.lock();
        match kind {
            ObjectKind::Port => {
                let rec = async_record(u64::from(element), event_type);
                let ids: Vec<u64> = st
                    .files
                    .iter()
                    .filter(|(_, f)| f.kind == FileKind::Async)
                    .map(|(id, _)| *id)
                    .collect();
                for id in ids {
                    st.deliver(Some(id), PORT_TAG, rec.as_bytes());
                }
            }
            ObjectKind::Cq => {
                let Some(r) = st.cqs.get(&element).cloned() else {
                    st.dropped += 1;
                    return;
                };
                let rec = async_record(r.user_handle, event_type);
                if st.deliver(r.async_file, r.tag, rec.as_bytes()) {
                    if let Some(r) = st.cqs.get_mut(&element) {
                        r.async_written = r.async_written.wrapping_add(1);
                    }
                }
            }
            ObjectKind::Qp | ObjectKind::Srq => {
                let table = if kind == ObjectKind::Qp {
                    &st.qps
                } else {
                    &st.srqs
                };
                let Some(r) = table.get(&element).cloned() else {
                    st.dropped += 1;
                    return;
                };
                let rec = async_record(r.user_handle, event_type);
                if st.deliver(r.async_file, r.tag, rec.as_bytes()) {
                    let table = if kind == ObjectKind::Qp {
                        &mut st.qps
                    } else {
                        &mut st.srqs
                    };
                    if let Some(r) = table.get_mut(&element) {
                        r.written = r.written.wrapping_add(1);
                    }
                }
            }
        }
    }

    /// Counters.
    pub fn counts(&self) -> EventCounts {
        let st = self.lock();
        EventCounts {
            files: st.files.len(),
            delivered: st.delivered,
            dropped: st.dropped,
        }
    }
}

fn remove_route(st: &mut State, r: Option<Route>) -> u32 {
    let Some(r) = r else {
        return 0;
    };
    let mut n = r.written;
    if let Some(f) = r.async_file.and_then(|id| st.files.get_mut(&id)) {
        n = n.saturating_sub(f.remove(r.tag));
    }
    n
}

/// The pipes open in the current task (`crate::task`): (descriptor, inode) for every `pipe:[N]`
/// in its `/proc/<pid>/fd`; `None` when that cannot be read.
fn open_pipe_fds() -> Option<Vec<(RawFd, libc::ino_t)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(crate::task::proc_dir().join("fd")).ok()? {
        let Ok(entry) = entry else { continue };
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<RawFd>().ok())
        else {
            continue;
        };
        let Ok(link) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let link = link.to_string_lossy();
        if let Some(ino) = link
            .strip_prefix("pipe:[")
            .and_then(|s| s.strip_suffix(']'))
            .and_then(|s| s.parse::<libc::ino_t>().ok())
        {
            out.push((fd, ino));
        }
    }
    Some(out)
}

/// The HCA's event sink: hands events to the routing tables. It holds no lock of the kernel half
/// other than the routing lock, which is never held across a call into the HCA.
#[derive(Debug)]
pub(super) struct Sink(pub Arc<Events>);

impl EventSink for Sink {
    fn completion(&self, cqn: u32) {
        self.0.completion(cqn);
    }

    fn async_event(&self, event_type: u32, kind: ObjectKind, element: u32) {
        self.0.async_event(event_type, kind, element);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromBytes;

    /// One record from the user's end without waiting (`None` when there is none): the user's end
    /// blocks, as the kernel's does, so this makes it non-blocking first, as the driver does.
    fn read_rec(fd: &OwnedFd, len: usize) -> Option<Vec<u8>> {
        uverbs_drivers::sys::set_nonblocking(std::os::fd::AsFd::as_fd(fd)).unwrap();
        let mut buf = vec![0u8; len];
        match nix::unistd::read(fd, &mut buf) {
            Ok(n) if n == len => Some(buf),
            _ => None,
        }
    }

    #[test]
    fn completion_records_and_destroy_drops_unread() {
        let ev = Events::default();
        let (ch, user) = ev.create(FileKind::Comp, 1).unwrap();
        assert_eq!(
            ev.lookup(1, i64::from(user.as_raw_fd()), FileKind::Comp),
            Ok(ch)
        );
        assert_eq!(
            ev.lookup(1, i64::from(user.as_raw_fd()), FileKind::Async),
            Err(Errno::EBADF)
        );
        assert_eq!(
            ev.lookup(2, i64::from(user.as_raw_fd()), FileKind::Comp),
            Err(Errno::EBADF)
        );
        assert_eq!(ev.lookup(1, -1, FileKind::Comp), Err(Errno::EBADF));
        ev.add_cq(10, CqRoute::new(100, 0xaa, Some(ch), None));
        ev.add_cq(11, CqRoute::new(101, 0xbb, Some(ch), None));
        ev.completion(10);
        ev.completion(11);
        ev.completion(10);
        ev.completion(11);
        // The user reads the first one (CQ 10's).
        let r = read_rec(&user, 8).unwrap();
        assert_eq!(u64::from_ne_bytes(r.try_into().unwrap()), 0xaa);
        // Destroying CQ 10: one read, one dropped; CQ 11's two stay in order.
        assert_eq!(ev.remove_cq(10), (1, 0));
        for _ in 0..2 {
            let r = read_rec(&user, 8).unwrap();
            assert_eq!(u64::from_ne_bytes(r.try_into().unwrap()), 0xbb);
        }
        assert!(read_rec(&user, 8).is_none());
        assert_eq!(ev.remove_cq(11), (2, 0));
        // No route: dropped.
        ev.completion(10);
        assert!(read_rec(&user, 8).is_none());
    }

    #[test]
    fn async_events_go_to_their_file_and_ports_to_all() {
        let ev = Events::default();
        let (a, ua) = ev.create(FileKind::Async, 1).unwrap();
        let (_b, ub) = ev.create(FileKind::Async, 2).unwrap();
        ev.add_qp(5, Route::new(7, 0x77, Some(a)));
        ev.async_event(3, ObjectKind::Qp, 5);
        ev.async_event(9, ObjectKind::Port, 1);
        let r =
            uapi::ib_uverbs_async_event_desc::read_from_bytes(&read_rec(&ua, 16).unwrap()).unwrap();
        assert_eq!((r.element, r.event_type), (0x77, 3));
        let r =
            uapi::ib_uverbs_async_event_desc::read_from_bytes(&read_rec(&ua, 16).unwrap()).unwrap();
        assert_eq!((r.element, r.event_type), (1, 9));
        let r =
            uapi::ib_uverbs_async_event_desc::read_from_bytes(&read_rec(&ub, 16).unwrap()).unwrap();
        assert_eq!((r.element, r.event_type), (1, 9));
        assert_eq!(ev.remove_qp(5), 1);
    }

    #[test]
    fn garbage_collection_keeps_used_and_open_files() {
        let ev = Events::default();
        let (a, ua) = ev.create(FileKind::Comp, 1).unwrap();
        let (b, ub) = ev.create(FileKind::Comp, 1).unwrap();
        let (c, uc) = ev.create(FileKind::Comp, 1).unwrap();
        ev.add_cq(1, CqRoute::new(1, 0, Some(b), None));
        drop(ub);
        drop(uc);
        assert_eq!(ev.collect_garbage(1), vec![c]);
        assert!(ev.exists(a) && ev.exists(b) && !ev.exists(c));
        drop(ua);
        ev.close_owner(1);
        assert!(!ev.exists(a) && !ev.exists(b));
    }
}
