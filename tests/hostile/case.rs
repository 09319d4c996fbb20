//! What a case is: its name, what it runs, what it must get on each backend and which guarded
//! bytes it may change; and [`check`], which compares what it got with what it must get.

use std::io;
use std::ops::Range;

use nix::errno::Errno;
use uverbs::{ibv_wc, ibv_wc_status, AsyncEventKind, Driver, ErrorExt};
use uverbs_drivers::Error;

use crate::fixture::Env;
use crate::guarded::Mem;

/// A typed error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    InvalidArgument,
    WrongState(u8),
    QueueFull,
    InvalidModify,
    Unsupported,
    Kernel(Errno),
}

/// What a case must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// This typed error from the call, and nothing posted.
    Typed(Ty),
    /// The designated request completes with one of these statuses.
    Status(&'static [u32]),
    /// A CQ_ERR async event naming the case's CQ.
    CqErr,
    /// It works, as documented (a boundary that is not an error).
    Success,
}

/// What a case got.
#[derive(Debug)]
pub enum Outcome {
    Refused(io::Error),
    Completion(ibv_wc),
    CqErr(Vec<uverbs::AsyncEvent>, isize),
    Done,
}

pub struct Case {
    pub name: &'static str,
    /// The catalogue's group it belongs to (set by [`catalogue`](crate::catalogue::catalogue)).
    pub topic: &'static str,
    pub run: fn(&mut Env<'_>) -> Outcome,
    pub rxe: Expect,
    pub mlx5: Expect,
    /// Why the backends differ, where they do.
    pub note: &'static str,
    /// Bytes the case may change (offsets into a guarded buffer).
    pub writes: Vec<(Mem, Range<usize>)>,
}

/// A case that must get `expect` on both backends.
pub fn case(name: &'static str, expect: Expect, run: fn(&mut Env<'_>) -> Outcome) -> Case {
    Case {
        name,
        topic: "",
        run,
        rxe: expect,
        mlx5: expect,
        note: "",
        writes: Vec::new(),
    }
}

impl Case {
    pub fn on_mlx5(mut self, expect: Expect, note: &'static str) -> Case {
        self.mlx5 = expect;
        self.note = note;
        self
    }

    pub fn on_rxe(mut self, expect: Expect, note: &'static str) -> Case {
        self.rxe = expect;
        self.note = note;
        self
    }

    pub fn writes(mut self, m: Mem, r: Range<usize>) -> Case {
        self.writes.push((m, r));
        self
    }

    /// What it must get on the device's backend: its column of the catalogue. A backend the
    /// catalogue has no column for fails here, naming it (no backend is taken for another).
    pub fn expect(&self, driver: Driver) -> Expect {
        match driver {
            Driver::Rxe => self.rxe,
            Driver::Mlx5 => self.mlx5,
            other => panic!(
                "the hostile catalogue has no column for the {other:?} backend: add one \
                 (tests/hostile/case.rs)"
            ),
        }
    }
}

pub const INVALID: Expect = Expect::Typed(Ty::InvalidArgument);
pub const EINVAL: Expect = Expect::Typed(Ty::Kernel(Errno::EINVAL));
pub const LOC_PROT: Expect = Expect::Status(&[ibv_wc_status::IBV_WC_LOC_PROT_ERR]);
pub const REM_ACCESS: Expect = Expect::Status(&[ibv_wc_status::IBV_WC_REM_ACCESS_ERR]);
pub const FLUSHED: Expect = Expect::Status(&[ibv_wc_status::IBV_WC_WR_FLUSH_ERR]);
/// rxe's answer to a request that fails on its local bounds: see [`RXE_LOC_PROT_NOTE`].
pub const RXE_LOC_PROT: Expect = Expect::Status(&[
    ibv_wc_status::IBV_WC_LOC_PROT_ERR,
    ibv_wc_status::IBV_WC_WR_FLUSH_ERR,
]);
pub const RXE_LOC_PROT_NOTE: &str = "rxe fails the request on its local bounds and moves the \
     queue pair to ERR; 6.1 completes it with LOC_PROT_ERR, 6.12 completes it (with the rest of \
     the queue) as WR_FLUSH_ERR";
/// rxe's answer to a send whose entry names a key it cannot use (forged, another domain's).
pub const RXE_LOC_KEY: Expect = Expect::Status(&[
    ibv_wc_status::IBV_WC_LOC_QP_OP_ERR,
    ibv_wc_status::IBV_WC_WR_FLUSH_ERR,
]);
pub const RXE_LOC_KEY_NOTE: &str = "rxe fails a send whose entry's lkey it cannot use and moves \
     the queue pair to ERR; 6.1 completes it with LOC_QP_OP_ERR, 6.12 completes it (with the \
     rest of the queue) as WR_FLUSH_ERR";
/// rxe's answer when an incoming message does not fit the receive's entries.
pub const RXE_RECV_PROT: Expect = Expect::Status(&[ibv_wc_status::IBV_WC_LOC_QP_OP_ERR]);
pub const RXE_RECV_PROT_NOTE: &str = "rxe's responder fails a receive whose entry it cannot \
     write (a bad key, bounds, another domain) as a malformed WQE: LOC_QP_OP_ERR; the mlx5 model \
     reports LOC_PROT_ERR";

/// Whether `outcome` is what `case` must get (`expect`): the same typed error, a completion with
/// one of the statuses, CQ_ERR events naming the case's CQ only, or success.
pub fn check(case: &Case, expect: Expect, outcome: &Outcome) -> Result<(), String> {
    match (expect, outcome) {
        (Expect::Typed(ty), Outcome::Refused(e)) => check_typed(ty, e),
        (Expect::Status(statuses), Outcome::Completion(wc)) => {
            if statuses.contains(&wc.status()) {
                Ok(())
            } else {
                Err(format!(
                    "expected a completion with status {:?}, got {} ({wc:?})",
                    statuses
                        .iter()
                        .map(|s| uverbs::wc_status_str(*s))
                        .collect::<Vec<_>>(),
                    uverbs::wc_status_str(wc.status())
                ))
            }
        }
        (Expect::CqErr, Outcome::CqErr(events, id)) => {
            let named =
                |e: &uverbs::AsyncEvent| e.kind == AsyncEventKind::CqErr && e.element == *id as u64;
            if !events.is_empty() && events.iter().all(named) {
                Ok(())
            } else {
                Err(format!(
                    "expected CQ_ERR events naming {id:#x} only: {events:?}"
                ))
            }
        }
        (Expect::Success, Outcome::Done) => Ok(()),
        (expect, outcome) => Err(format!(
            "{}: expected {expect:?}, got {outcome:?}",
            case.name
        )),
    }
}

/// Whether the refusal `e` is the typed error `ty`.
fn check_typed(ty: Ty, e: &io::Error) -> Result<(), String> {
    let Some(err) = e.uverbs_error() else {
        return Err(format!("an untyped error: {e}"));
    };
    let ok = match (ty, err) {
        (Ty::InvalidArgument, Error::InvalidArgument { .. })
        | (Ty::QueueFull, Error::QueueFull { .. })
        | (Ty::InvalidModify, Error::InvalidModify { .. })
        | (Ty::Unsupported, Error::Unsupported { .. }) => true,
        (Ty::WrongState(s), Error::WrongState { state, .. }) => *state == s,
        (Ty::Kernel(n), Error::Kernel { errno, .. }) => *errno == n,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("expected {ty:?}, got {err:?} ({err})"))
    }
}
