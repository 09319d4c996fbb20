//! The doorbell trace: what a driver hands the device, recorded at the device's side.
//!
//! With `UVERBS_MODEL_TRACE=FILE` in the environment of the process the model runs in (the
//! program under the preload library, a test, or the model daemon), the HCA appends one line to
//! FILE for every send doorbell it checks: the doorbell record's value, every WQE of the batch as
//! it fetched it from the send ring (with its position there), and the register write it found in
//! the QP's BlueFlame buffers (a BlueFlame copy, an 8-byte doorbell, or none). The line is
//! written when the engine's check of the doorbell ends (the register write was seen, or the
//! grace period ran out), so a program that posts one request at a time and waits for the
//! file to grow by a line gets one record per post. `tests/rdma-core/wqe_compare.py` compares the
//! records of libmlx5 and uverbs for the same requests.
//!
//! Each line is a JSON object:
//!
//! ```text
//! {"qpn":N,"wqe_cnt":N,"dbrec":N,"wqes":[{"at":N,"bytes":"HEX"}...],
//!  "uar":"blueflame"|"doorbell"|"missing"|"bad_copy"|"unchecked","buffer":N|null,"uar_bytes":"HEX"}
//! ```
//!
//! `at` is the WQE's producer counter (its index in the ring is `at % wqe_cnt`), `bytes` its
//! whole basic blocks (wrapping at the ring's end, as the device reads them), `buffer` which of the
//! QP's BlueFlame buffers held the write (0 and 1: the two halves of its register), `uar_bytes`
//! what that buffer held (the copy, or the 8-byte doorbell).

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;

/// The environment variable naming the trace file.
pub const TRACE_ENV: &str = "UVERBS_MODEL_TRACE";

/// An open trace file.
#[derive(Debug)]
pub(super) struct Trace {
    file: File,
}

/// How the engine's check of a doorbell ended (the trace's `uar` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UarWrite {
    /// A BlueFlame copy equal to the WQE in the ring.
    BlueFlame,
    /// An 8-byte doorbell (the first 8 bytes of the batch's last WQE).
    Doorbell,
    /// No register write naming the WQE within the grace period.
    Missing,
    /// A BlueFlame copy that differs from the WQE in the ring.
    BadCopy,
    /// Not checked (superseded, a register shared with other QPs, WQEs that could not be walked).
    Unchecked,
}

impl UarWrite {
    fn name(self) -> &'static str {
        match self {
            UarWrite::BlueFlame => "blueflame",
            UarWrite::Doorbell => "doorbell",
            UarWrite::Missing => "missing",
            UarWrite::BadCopy => "bad_copy",
            UarWrite::Unchecked => "unchecked",
        }
    }
}

/// The WQEs of one doorbell, fetched when the engine saw the doorbell record change.
#[derive(Debug, Clone)]
pub(super) struct Batch {
    pub dbrec: u16,
    pub wqe_cnt: u32,
    /// Each WQE's producer counter and blocks.
    pub wqes: Vec<(u32, Vec<u8>)>,
}

impl Trace {
    /// The trace the environment asks for, if any. A file that cannot be opened is reported once
    /// on stderr and not traced (the model still works).
    pub fn from_env() -> Option<Trace> {
        let path = std::env::var_os(TRACE_ENV)?;
        match File::options().create(true).append(true).open(&path) {
            Ok(file) => Some(Trace { file }),
            Err(e) => {
                eprintln!(
                    "mlx5 model: cannot open the trace file {}: {e}",
                    path.to_string_lossy()
                );
                None
            }
        }
    }

    /// Appends the record of a doorbell of QP `qpn` (one write of the whole line).
    pub fn record(
        &mut self,
        qpn: u32,
        batch: &Batch,
        uar: UarWrite,
        found: Option<(usize, &[u8])>,
    ) {
        let line = line(qpn, batch, uar, found);
        if let Err(e) = self.file.write_all(line.as_bytes()) {
            eprintln!("mlx5 model: writing the trace: {e}");
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// One record, newline included.
fn line(qpn: u32, batch: &Batch, uar: UarWrite, found: Option<(usize, &[u8])>) -> String {
    let wqes: Vec<String> = batch
        .wqes
        .iter()
        .map(|(at, bytes)| format!("{{\"at\":{at},\"bytes\":\"{}\"}}", hex(bytes)))
        .collect();
    let (buffer, uar_bytes) = match found {
        Some((b, bytes)) => (b.to_string(), hex(bytes)),
        None => ("null".to_string(), String::new()),
    };
    format!(
        "{{\"qpn\":{qpn},\"wqe_cnt\":{},\"dbrec\":{},\"wqes\":[{}],\"uar\":\"{}\",\"buffer\":{buffer},\"uar_bytes\":\"{uar_bytes}\"}}\n",
        batch.wqe_cnt,
        batch.dbrec,
        wqes.join(","),
        uar.name(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_one_json_line() {
        let batch = Batch {
            dbrec: 3,
            wqe_cnt: 64,
            wqes: vec![(2, vec![0x00, 0x0a, 0xff])],
        };
        assert_eq!(
            line(0x11, &batch, UarWrite::Doorbell, Some((1, &[0xde, 0xad]))),
            "{\"qpn\":17,\"wqe_cnt\":64,\"dbrec\":3,\"wqes\":[{\"at\":2,\"bytes\":\"000aff\"}],\
             \"uar\":\"doorbell\",\"buffer\":1,\"uar_bytes\":\"dead\"}\n"
        );
        assert_eq!(
            line(1, &batch, UarWrite::Missing, None),
            "{\"qpn\":1,\"wqe_cnt\":64,\"dbrec\":3,\"wqes\":[{\"at\":2,\"bytes\":\"000aff\"}],\
             \"uar\":\"missing\",\"buffer\":null,\"uar_bytes\":\"\"}\n"
        );
    }
}
