//! The connection manager's event decoder (`uverbs_drivers::cm::decode_event`) on whatever bytes
//! the kernel might write: any length, any event number, any status, any parameter union.
//!
//! Must hold: no panic; an event that decodes has a known number, private data no longer than its
//! array, a 24-bit queue pair number, and parameters of the kind its port space and event say; a
//! short answer is refused; the addresses of a `sockaddr_storage` decode without panicking and
//! an IP address round-trips through the encoder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zerocopy::FromBytes;

use uverbs_drivers::cm::{decode_addr, decode_event, encode_addr, CmEventData, EVENT_MIN_LEN};
use uverbs_drivers::uapi::{self, RDMA_CM_EVENT_TIMEWAIT_EXIT, RDMA_MAX_PRIVATE_DATA};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, bytes)) = data.split_first() else {
        return;
    };
    let datagram = flags & 1 == 1;
    match decode_event(bytes, datagram) {
        Ok(e) => {
            assert!(bytes.len() >= EVENT_MIN_LEN);
            assert!(e.event <= RDMA_CM_EVENT_TIMEWAIT_EXIT);
            match &e.data {
                CmEventData::Conn(c) => {
                    assert!(!datagram);
                    assert!(c.private_data.len() <= RDMA_MAX_PRIVATE_DATA);
                    assert!(c.qp_num < 1 << 24);
                }
                CmEventData::Ud(u) => {
                    assert!(datagram || e.event == uapi::RDMA_CM_EVENT_MULTICAST_JOIN);
                    assert!(u.private_data.len() <= RDMA_MAX_PRIVATE_DATA);
                    assert!(u.qp_num < 1 << 24);
                }
                CmEventData::None => {}
            }
        }
        Err(_) => {}
    }
    if let Ok((ss, _)) = uapi::__kernel_sockaddr_storage::read_from_prefix(bytes) {
        if let Some(addr) = decode_addr(&ss) {
            let (again, _) = encode_addr(&addr);
            assert_eq!(decode_addr(&again), Some(addr));
        }
    }
});
