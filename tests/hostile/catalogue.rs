//! The catalogue: every case, grouped by topic. Each group is a function returning its cases in
//! the order they run, in the file of its area ([`requests`], [`keys`], [`queues`],
//! [`attributes`], [`transport`]); [`GROUPS`] lists the groups, and [`catalogue`] puts them
//! together and labels each case with its group's topic.

mod attributes;
mod keys;
mod queues;
mod requests;
mod transport;

use attributes::{object_sizes, ports_and_gids, qp_limits, transitions_and_attributes};
use keys::{local_keys, remote_bounds, remote_keys_and_rights, revoked_keys_and_other_pds};
use queues::{full_queues, qp_states, srq_misuse};
use requests::{boundaries, lengths_and_atomics, ranges, sges_and_inline, short_receive};
use transport::{address_handles_and_ud, multicast_and_windows, small_cqs};

use crate::case::Case;

/// The number of cases in the catalogue: one lost (a merge, a stray edit) fails the test.
pub const CASES: usize = 83;

/// A group of the catalogue: its topic, and the function that returns its cases.
type Group = (&'static str, fn() -> Vec<Case>);

/// The catalogue's groups, in the order they run.
const GROUPS: [Group; 19] = [
    ("ranges", ranges),
    ("SGEs and inline data", sges_and_inline),
    ("lengths and atomics alignment", lengths_and_atomics),
    ("boundaries", boundaries),
    ("a short receive", short_receive),
    ("local keys and bounds", local_keys),
    ("remote keys and rights", remote_keys_and_rights),
    ("remote bounds", remote_bounds),
    ("revoked keys, other PDs", revoked_keys_and_other_pds),
    ("queue pair states", qp_states),
    ("full queues", full_queues),
    ("shared receive queues", srq_misuse),
    ("transitions and attributes", transitions_and_attributes),
    ("ports and GIDs", ports_and_gids),
    ("queue pair limits", qp_limits),
    ("CQ, MR and SRQ sizes", object_sizes),
    ("address handles and UD", address_handles_and_ud),
    ("multicast, windows, invalidation", multicast_and_windows),
    ("small CQs", small_cqs),
];

/// Every case, each labelled with its group's topic.
pub fn catalogue() -> Vec<Case> {
    GROUPS
        .iter()
        .flat_map(|&(topic, cases)| cases().into_iter().map(move |c| Case { topic, ..c }))
        .collect()
}

/// Checks that the case names are unique and that all [`CASES`] cases are there.
pub fn assert_complete(cases: &[Case]) {
    let mut names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    // Every case of the catalogue, counted: one lost (a merge, a stray edit) fails here.
    assert_eq!(cases.len(), CASES, "the catalogue has {CASES} cases");
}
