//! The numbers perftest reports and how it prints them (`print_report_lat`, `print_report_bw`,
//! `print_full_bw_report`), from timestamps in nanoseconds of a monotonic clock instead of CPU
//! cycles.

use serde::Serialize;

use super::exchange::BwReport;

/// perftest's `RESULT_LINE`.
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";

/// perftest's `RESULT_FMT_LAT`.
pub const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";

/// perftest's `RESULT_FMT` / `RESULT_FMT_G`.
pub fn bw_header(gbits: bool) -> &'static str {
    if gbits {
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
    } else {
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
    }
}

/// `LAT_MEASURE_TAIL`: the largest samples left out of the statistics.
const LAT_MEASURE_TAIL: usize = 2;

/// One latency result, in microseconds one way (half the round trip).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatStats {
    /// The message size.
    pub bytes: u64,
    /// Iterations run.
    pub iters: u64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample kept (perftest drops the top [`LAT_MEASURE_TAIL`] - 1 and reports the
    /// next).
    pub max: f64,
    /// The median ("typical").
    pub typical: f64,
    /// The mean of the samples kept.
    pub avg: f64,
    /// Their standard deviation.
    pub stdev: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
}

/// `print_report_lat`'s numbers: the samples are the times between consecutive posts (one round
/// trip each), sorted, without the [`LAT_MEASURE_TAIL`] largest, halved. Unlike perftest, the
/// standard deviation is computed in floating point (perftest truncates each deviation to an
/// integer number of microseconds).
pub fn lat_stats(bytes: u64, tposted: &[u64]) -> LatStats {
    let iters = tposted.len() as u64;
    let mut delta: Vec<u64> = tposted
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    delta.sort_unstable();
    // `-n` is at least 5, so at least 4 samples and 2 kept.
    let m = delta.len().saturating_sub(LAT_MEASURE_TAIL).max(1);
    let unit = 2.0 * 1000.0;
    let us = |ns: u64| ns as f64 / unit;
    let median = if (m - 1) % 2 != 0 {
        (delta[m / 2] + delta[m / 2 - 1]) / 2
    } else {
        delta[m / 2]
    };
    let avg = delta[..m].iter().map(|&d| us(d)).sum::<f64>() / m as f64;
    let var = delta[..m]
        .iter()
        .map(|&d| (avg - us(d)).powi(2))
        .sum::<f64>()
        / m as f64;
    let at = |q: f64| delta[((m as f64 * q).ceil() as usize).min(delta.len() - 1)];
    LatStats {
        bytes,
        iters,
        min: us(delta[0]),
        max: us(delta[m.min(delta.len() - 1)]),
        typical: us(median),
        avg,
        stdev: var.sqrt(),
        p99: us(at(0.99)),
        p999: us(at(0.999)),
    }
}

/// perftest's `-H` report: every sample (the round trips, sorted, halved) in microseconds, one
/// `index, value` line each after a `#, usec` header.
pub fn lat_histogram(tposted: &[u64]) -> String {
    let mut delta: Vec<u64> = tposted
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    delta.sort_unstable();
    let mut out = String::from("#, usec\n");
    for (i, d) in delta.iter().enumerate() {
        out.push_str(&format!("{}, {}\n", i + 1, *d as f64 / 2000.0));
    }
    out
}

/// How a bandwidth run was timed, for [`bw_report`].
#[derive(Debug, Clone, Copy)]
pub struct BwTiming<'a> {
    /// Post times (ns), one per post of a list, indexed by the first message's number; with
    /// `no_peak`, only `[0]`, the start.
    pub tposted: &'a [u64],
    /// Completion times (ns), indexed by the number of the last message completed; with `no_peak`,
    /// only `[0]`, the end.
    pub tcompleted: &'a [u64],
    /// Messages (all queue pairs).
    pub messages: u64,
    /// Whether only the start and end were recorded.
    pub no_peak: bool,
    /// Completions are one per this many messages.
    pub cq_mod: u64,
    /// Messages per post.
    pub post_list: u64,
}

/// perftest's `ROUND_UP`.
fn round_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a) * a
}

/// `print_report_bw`'s numbers: average bandwidth and message rate over the whole run, and the
/// peak, from the best average over any run of consecutive messages between a post and a
/// completion.
pub fn bw_report(size: u64, t: &BwTiming<'_>, gbits: bool) -> BwReport {
    let n = t.messages;
    let format_factor = if gbits { 125_000_000.0 } else { 1_048_576.0 };
    let last = if t.no_peak { 0 } else { (n - 1) as usize };
    let total_ns = t.tcompleted[last].saturating_sub(t.tposted[0]).max(1) as f64;
    let secs = total_ns / 1e9;
    let bw_avg = size as f64 * n as f64 / secs / format_factor;
    let msg_rate = n as f64 / secs / 1e6;
    let bw_peak = if t.no_peak {
        0.0
    } else {
        // perftest starts from `tcompleted[0] - tposted[0]` in unsigned arithmetic: when CQ
        // moderation left `tcompleted[0]` unset (0), that wraps to a huge value and the loop
        // decides.
        let mut opt_delta = match t.tcompleted[0] {
            0 => u64::MAX,
            done => done.saturating_sub(t.tposted[0]),
        };
        let step = t.post_list.max(1);
        let cq_mod = t.cq_mod.max(1);
        let mut i = 0;
        while i < n {
            let mut j = round_up(i + 1, cq_mod) - 1;
            while j < n {
                let d =
                    t.tcompleted[j as usize].saturating_sub(t.tposted[i as usize]) / (j - i + 1);
                opt_delta = opt_delta.min(d);
                j += cq_mod;
            }
            if n % cq_mod != 0 {
                let j = n - 1;
                let d =
                    t.tcompleted[j as usize].saturating_sub(t.tposted[i as usize]) / (j - i + 1);
                opt_delta = opt_delta.min(d);
            }
            i += step;
        }
        size as f64 * 1e9 / (opt_delta.max(1) as f64 * format_factor)
    };
    BwReport {
        size,
        iters: n,
        bw_peak,
        bw_avg,
        msg_rate,
    }
}

/// C's `%-W.Pf`.
fn f(v: f64, width: usize, prec: usize) -> String {
    if v.is_nan() {
        format!("{:<width$}", "-nan")
    } else {
        format!("{v:<width$.prec$}")
    }
}

/// perftest's `REPORT_FMT_LAT` line.
pub fn lat_row(s: &LatStats) -> String {
    format!(
        " {:<7} {}          {}        {}      {}  \t       {}     \t{}\t\t{} \t\t{}",
        s.bytes,
        s.iters,
        f(s.min, 7, 2),
        f(s.max, 7, 2),
        f(s.typical, 7, 2),
        f(s.avg, 7, 2),
        f(s.stdev, 7, 2),
        f(s.p99, 7, 2),
        f(s.p999, 7, 2)
    )
}

/// perftest's `REPORT_FMT` line (`REPORT_FMT_EXT` for an average under 0.1 Gb/s).
pub fn bw_row(r: &BwReport, gbits: bool) -> String {
    if gbits && r.bw_avg < 0.1 {
        format!(
            " {:<7}    {}           {}            {}            {}",
            r.size,
            r.iters,
            f(r.bw_peak, 7, 6),
            f(r.bw_avg, 7, 6),
            f(r.msg_rate, 7, 6)
        )
    } else {
        format!(
            " {:<7}    {:<10}       {}            {}\t\t   {}",
            r.size,
            r.iters,
            f(r.bw_peak, 7, 2),
            f(r.bw_avg, 7, 2),
            f(r.msg_rate, 7, 6)
        )
    }
}

/// A JSON number as Rust's `Display` writes it (`500`, `12.5`, `0.0000001`: no `.0`, no exponent,
/// as these lines have always been), `null` for NaN and infinities, which JSON lacks.
#[derive(Debug, Clone, Copy)]
struct Num(f64);

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = if self.0.is_finite() {
            self.0.to_string()
        } else {
            "null".to_owned()
        };
        serde_json::value::RawValue::from_string(text)
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

/// One `--json` line: compact, on one line.
fn line(value: &impl Serialize) -> String {
    // Serializing plain structs of strings and numbers into memory cannot fail.
    serde_json::to_string(value).expect("JSON of plain data")
}

/// A latency result of `--json`.
#[derive(Debug, Serialize)]
struct LatLine<'a> {
    test: &'a str,
    role: &'a str,
    bytes: u64,
    iterations: u64,
    unit: &'static str,
    min: Num,
    median: Num,
    avg: Num,
    stdev: Num,
    p99: Num,
    p99_9: Num,
    max: Num,
}

/// A bandwidth result of `--json`.
#[derive(Debug, Serialize)]
struct BwLine<'a> {
    test: &'a str,
    role: &'a str,
    measured_by: &'a str,
    bytes: u64,
    iterations: u64,
    bw_unit: &'static str,
    bw_peak: Num,
    bw_avg: Num,
    msg_rate_mpps: Num,
}

/// One latency result as a JSON object on one line.
pub fn lat_json(test: &str, role: &str, s: &LatStats) -> String {
    line(&LatLine {
        test,
        role,
        bytes: s.bytes,
        iterations: s.iters,
        unit: "usec",
        min: Num(s.min),
        median: Num(s.typical),
        avg: Num(s.avg),
        stdev: Num(s.stdev),
        p99: Num(s.p99),
        p99_9: Num(s.p999),
        max: Num(s.max),
    })
}

/// One bandwidth result as a JSON object on one line; `measured_by` says which side timed it
/// (the server of `write-bw` and `read-bw` reports the client's numbers, as perftest does).
pub fn bw_json(test: &str, role: &str, measured_by: &str, r: &BwReport, gbits: bool) -> String {
    line(&BwLine {
        test,
        role,
        measured_by,
        bytes: r.size,
        iterations: r.iters,
        bw_unit: if gbits { "Gb/sec" } else { "MB/sec" },
        bw_peak: Num(r.bw_peak),
        bw_avg: Num(r.bw_avg),
        msg_rate_mpps: Num(r.msg_rate),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_like_perftest() {
        // Round trips of 10, 20, 30, 40, 1000 and 2000 us: the two largest are dropped.
        let mut t = vec![0u64];
        for rtt in [10_000u64, 20_000, 30_000, 40_000, 1_000_000, 2_000_000] {
            t.push(t.last().unwrap() + rtt);
        }
        let s = lat_stats(2, &t);
        assert_eq!(s.iters, 7);
        assert_eq!(s.min, 5.0);
        // m = 4 samples kept: 5, 10, 15, 20 (us one way); max is delta[m] = 500.
        assert_eq!(s.max, 500.0);
        assert_eq!(s.typical, 12.5);
        assert_eq!(s.avg, 12.5);
        assert!((s.stdev - 5.590_169_943_749_474).abs() < 1e-9);
        assert_eq!(s.p99, 500.0);
        let row = lat_row(&s);
        assert!(
            row.starts_with(" 2       7          5.00           500.00"),
            "{row}"
        );
        let j = lat_json("send_lat", "client", &s);
        assert!(
            j.contains("\"median\":12.5") && j.contains("\"max\":500"),
            "{j}"
        );
    }

    /// The `--json` lines, byte for byte: numbers as Rust's `Display` writes them (no `.0`, no
    /// exponent), `null` for what JSON cannot hold.
    #[test]
    fn json_lines_byte_for_byte() {
        let s = LatStats {
            bytes: 8,
            iters: 1000,
            min: 0.0000001,
            max: 1e20,
            typical: 500.0,
            avg: 0.1 + 0.2,
            stdev: f64::NAN,
            p99: f64::INFINITY,
            p999: -0.0,
        };
        assert_eq!(
            lat_json("send_lat", "client", &s),
            "{\"test\":\"send_lat\",\"role\":\"client\",\"bytes\":8,\"iterations\":1000,\
             \"unit\":\"usec\",\"min\":0.0000001,\"median\":500,\"avg\":0.30000000000000004,\
             \"stdev\":null,\"p99\":null,\"p99_9\":-0,\"max\":100000000000000000000}"
        );
        let r = BwReport {
            size: 65536,
            iters: 5000,
            bw_peak: 1234.5,
            bw_avg: 1000.0,
            msg_rate: 0.015258,
        };
        assert_eq!(
            bw_json("write_bw", "server", "client", &r, true),
            "{\"test\":\"write_bw\",\"role\":\"server\",\"measured_by\":\"client\",\
             \"bytes\":65536,\"iterations\":5000,\"bw_unit\":\"Gb/sec\",\"bw_peak\":1234.5,\
             \"bw_avg\":1000,\"msg_rate_mpps\":0.015258}"
        );
    }

    #[test]
    fn bandwidth_like_perftest() {
        // 4 messages of 1 MiB, one completion each, 1 ms apart: 1000 MiB/s on average.
        let tposted = [0, 1_000_000, 2_000_000, 3_000_000];
        let tcompleted = [1_000_000, 2_000_000, 3_000_000, 4_000_000];
        let t = BwTiming {
            tposted: &tposted,
            tcompleted: &tcompleted,
            messages: 4,
            no_peak: false,
            cq_mod: 1,
            post_list: 1,
        };
        let r = bw_report(1 << 20, &t, false);
        assert!((r.bw_avg - 1000.0).abs() < 1e-9, "{r:?}");
        assert!((r.bw_peak - 1000.0).abs() < 1e-9, "{r:?}");
        assert!((r.msg_rate - 0.001).abs() < 1e-12);
        assert_eq!(
            bw_row(&r, false),
            " 1048576    4                1000.00            1000.00\t\t   0.001000"
        );
        // One completion per 2 messages: tcompleted[0] is never set.
        let sparse = [0, 2_000_000, 0, 4_000_000];
        let m = BwTiming {
            tcompleted: &sparse,
            cq_mod: 2,
            ..t
        };
        let r = bw_report(1 << 20, &m, false);
        assert!((r.bw_peak - 1000.0).abs() < 1e-9, "{r:?}");
        let g = bw_report(1 << 20, &t, true);
        assert!((g.bw_avg - 8.388_608).abs() < 1e-9);
        let t = BwTiming {
            tposted: &[0],
            tcompleted: &[4_000_000],
            no_peak: true,
            ..t
        };
        let r = bw_report(1 << 20, &t, false);
        assert_eq!(r.bw_peak, 0.0);
        assert!((r.bw_avg - 1000.0).abs() < 1e-9);
        assert!(bw_json("write_bw", "server", "client", &r, false).contains("\"bw_avg\":1000"));
    }

    #[test]
    fn histogram_lists_sorted_one_way_samples() {
        // Round trips of 10, 20 and 10 ns: one way 5, 5 and 10 ns.
        let h = lat_histogram(&[0, 10, 30, 40]);
        assert_eq!(h, "#, usec\n1, 0.005\n2, 0.005\n3, 0.01\n");
    }
}
