//! Text that arrives from outside and names addresses: GIDs and GUIDs as sysfs prints them
//! (`parse_gid`, `parse_guid`), which is also the text form of `Gid` (its `Display`). The CLI's
//! peer messages have their own target, `peer_messages`.
//!
//! Must hold: no panic; whatever parses, printed and parsed again, gives the same value; every
//! `Gid` prints as text that parses back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;

use uverbs_drivers::discover::parse_guid;
use uverbs_drivers::gid::{Gid, Guid};
use uverbs_drivers::ucontext::parse_gid;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(raw) = parse_gid(&text) {
        let printed = Gid::from_bytes(raw).to_string();
        assert_eq!(parse_gid(&printed), Some(raw), "{text:?} -> {printed:?}");
    }
    if let Some(v) = parse_guid(&text) {
        let printed = Guid::from(v).to_string();
        assert_eq!(parse_guid(&printed), Some(v), "{text:?} -> {printed:?}");
    }
    if data.len() >= 16 {
        let raw: [u8; 16] = data[..16].try_into().expect("16 bytes");
        let printed = Gid::from_bytes(raw).to_string();
        assert_eq!(parse_gid(&printed), Some(raw), "{printed:?}");
    }
});
