//! `uverbs send-lat | write-lat | send-bw | write-bw | read-bw` against each other and against
//! perftest's `ib_send_lat`, `ib_write_lat`, `ib_send_bw`, `ib_write_bw` and `ib_read_bw`, each way
//! round: the TCP exchange, the queue pair setup and the data path must be wire compatible with
//! perftest's, and the result table must have perftest's shape with sensible numbers.
//!
//! Every child process is bounded: a hang kills both sides and fails the test.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use common::process::{loopback_args, serve_then_connect, Done, Running};
use common::{stderr, stdout, test_device, uverbs};

/// How long one run (both sides) may take.
const RUN_LIMIT: Duration = Duration::from_secs(180);
/// How long a server may take to start listening.
const LISTEN_LIMIT: Duration = Duration::from_secs(60);

const UVERBS: &str = env!("CARGO_BIN_EXE_uverbs");

/// A distinct TCP port per run (a base that depends on the process id, apart from pingpong.rs's).
fn next_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 40000 + (std::process::id() % 200) as u16 * 100;
    base + NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The five tools, by uverbs subcommand.
const TOOLS: [&str; 5] = ["send-lat", "write-lat", "send-bw", "write-bw", "read-bw"];

/// Who plays a side: `uverbs <tool>` or perftest's `ib_<tool>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Impl {
    Uverbs,
    Perftest,
}

fn perftest_name(tool: &str) -> String {
    format!("ib_{}", tool.replace('-', "_"))
}

/// Starts `who`'s `tool` with `args`.
fn spawn(who: Impl, tool: &str, args: &[String]) -> Running {
    let mut c = match who {
        Impl::Uverbs => {
            let mut c = Command::new(UVERBS);
            c.arg(tool);
            c
        }
        Impl::Perftest => Command::new(perftest_name(tool)),
    };
    c.args(args);
    let what = format!(
        "{} {}",
        match who {
            Impl::Uverbs => format!("uverbs {tool}"),
            Impl::Perftest => perftest_name(tool),
        },
        args.join(" ")
    );
    Running::spawn(what, c)
}

/// Runs the server with `sargs`, waits until it listens, then the client with `cargs` (to
/// 127.0.0.1), both with `-p PORT`; a side still running at the deadline is killed.
fn pair(tool: &str, server: Impl, sargs: &[&str], client: Impl, cargs: &[&str]) -> (Done, Done) {
    let port = next_port();
    let (sargs, cargs) = loopback_args(port, sargs, cargs);
    serve_then_connect(
        port,
        spawn(server, tool, &sargs),
        || spawn(client, tool, &cargs),
        LISTEN_LIMIT,
        RUN_LIMIT,
    )
}

/// What perftest prints when its CPU frequency estimate (rdtsc against gettimeofday) fails, which
/// happens now and then under emulation: it then cannot report (bandwidth tests exit with "Can't
/// produce a report", latency tests print inf or nan) and the run fails for reasons of its own.
const PERFTEST_CLOCK_FAILURE: &str = "Correlation coefficient r^2";

/// [`pair`] and `check`, run again (up to 3 times in all) when the check fails and a perftest
/// side printed [`PERFTEST_CLOCK_FAILURE`]. A failure of uverbs' own is never retried.
fn checked_pair(
    tool: &str,
    server: Impl,
    sargs: &[&str],
    client: Impl,
    cargs: &[&str],
    check: impl Fn(&Done, &Done),
) -> (Done, Done) {
    for attempt in 1.. {
        let (s, c) = pair(tool, server, sargs, client, cargs);
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&s, &c)));
        let perftest_clock = [(server, &s), (client, &c)]
            .iter()
            .any(|(who, d)| *who == Impl::Perftest && d.stderr.contains(PERFTEST_CLOCK_FAILURE));
        match checked {
            Ok(()) => return (s, c),
            Err(_) if perftest_clock && attempt < 3 => {
                eprintln!("perftest could not measure its clock (attempt {attempt}); again");
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
    unreachable!()
}

const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";

/// The rows of the result table under `header`: each row's numbers.
fn rows(d: &Done, header: &str) -> Vec<Vec<f64>> {
    let mut lines = d.stdout.lines().skip_while(|l| !l.starts_with(header));
    assert!(lines.next().is_some(), "no '{header}' header\n{d}");
    lines
        .take_while(|l| !l.starts_with("-----"))
        .map(|l| {
            l.split_whitespace()
                .map(|w| {
                    w.parse::<f64>()
                        .unwrap_or_else(|_| panic!("not a number '{w}' in '{l}'\n{d}"))
                })
                .collect()
        })
        .collect()
}

/// The QPN of a `" local address:"` or `" remote address:"` line.
fn qpn(d: &Done, which: &str) -> String {
    d.stdout
        .lines()
        .find(|l| l.starts_with(which))
        .and_then(|l| l.split("QPN ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no '{which}' line with a QPN\n{d}"))
        .to_owned()
}

/// Whether `d` is perftest and reported that it could not measure its clock, so that its numbers
/// are inf or nan (it still runs the test and the exchange; `-F` keeps it from exiting).
fn perftest_clock_failed(d: &Done) -> bool {
    d.what.starts_with("ib_") && d.stderr.contains(PERFTEST_CLOCK_FAILURE)
}

/// Rows equal number for number, NaN matching NaN (a result passed through the exchange).
fn same_rows(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

/// Checks one run: both exit 0, see each other's QPN, and print a table row per size with
/// perftest's columns (message size and iterations) and sensible numbers (unless perftest said it
/// could not measure its clock).
fn check(tool: &str, s: &Done, c: &Done, sizes: &[u64], iters: u64) {
    let both = format!("{s}\n{c}");
    for d in [s, c] {
        assert_eq!(d.code(), Some(0), "{} failed\n{both}", d.what);
    }
    assert_eq!(
        qpn(s, " remote address:"),
        qpn(c, " local address:"),
        "{both}"
    );
    assert_eq!(
        qpn(c, " remote address:"),
        qpn(s, " local address:"),
        "{both}"
    );
    if tool.ends_with("-lat") {
        for d in [s, c] {
            let r = rows(d, LAT_HEADER);
            assert_eq!(r.len(), sizes.len(), "rows of {}\n{both}", d.what);
            for (row, &size) in r.iter().zip(sizes) {
                assert_eq!(row.len(), 9, "{row:?}\n{both}");
                assert_eq!((row[0], row[1]), (size as f64, iters as f64), "{both}");
                if perftest_clock_failed(d) {
                    continue;
                }
                let (min, max, typical, avg, stdev, p99, p999) =
                    (row[2], row[3], row[4], row[5], row[6], row[7], row[8]);
                // perftest squares deviations in `int` microseconds, which overflows (to -nan)
                // past about 46 ms; uverbs' standard deviation is a number.
                let perftest_overflow = d.what.starts_with("ib_") && stdev.is_nan();
                assert!(
                    min > 0.0 && avg > 0.0 && (stdev >= 0.0 || perftest_overflow),
                    "{row:?}\n{both}"
                );
                assert!(min <= typical && typical <= max, "{row:?}\n{both}");
                assert!(min <= avg && avg <= max, "{row:?}\n{both}");
                assert!(typical <= p99 && p99 <= p999, "{row:?}\n{both}");
            }
        }
    } else {
        let header =
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
        let (cr, sr) = (rows(c, header), rows(s, header));
        assert_eq!(cr.len(), sizes.len(), "client rows\n{both}");
        for (row, &size) in cr.iter().zip(sizes) {
            assert_eq!(row.len(), 5, "{row:?}\n{both}");
            assert_eq!(row[0], size as f64, "{both}");
            assert_eq!(row[1] % iters as f64, 0.0, "{both}");
            if perftest_clock_failed(c) {
                continue;
            }
            // The peak is 0 with -N; tiny messages round to 0.00 MB/s, not to 0 messages.
            assert!(
                row[2] >= 0.0 && row[3] >= 0.0 && row[4] > 0.0,
                "{row:?}\n{both}"
            );
            assert!(size < 4096 || row[3] > 0.0, "{row:?}\n{both}");
        }
        if tool == "send-bw" {
            // The server measures what it receives, without a peak.
            assert_eq!(sr.len(), sizes.len(), "server rows\n{both}");
            for (row, &size) in sr.iter().zip(sizes) {
                assert_eq!(row[0], size as f64, "{both}");
                if !perftest_clock_failed(s) {
                    assert!(
                        row[2] == 0.0 && row[3] >= 0.0 && row[4] > 0.0,
                        "{row:?}\n{both}"
                    );
                }
            }
        } else {
            // The server prints the client's last result, as the client sent it.
            assert_eq!(sr.len(), 1, "server rows\n{both}");
            assert!(same_rows(&sr[0], cr.last().unwrap()), "{both}");
        }
    }
}

/// Runs `tool` with `args` on both sides, `server` and `client` as given, and checks the result.
fn run(
    test: &str,
    tool: &str,
    server: Impl,
    client: Impl,
    args: &[&str],
    sizes: &[u64],
    iters: u64,
) {
    let Some(dev) = test_device(test) else {
        return;
    };
    let n = iters.to_string();
    // -F: perftest does not exit when it cannot measure its clock (uverbs ignores it).
    let mut all = vec!["-d", dev.as_str(), "-n", n.as_str(), "-F"];
    all.extend_from_slice(args);
    let t = Instant::now();
    let (s, c) = checked_pair(tool, server, &all, client, &all, |s, c| {
        check(tool, s, c, sizes, iters)
    });
    let last = |d: &Done| {
        d.stdout
            .lines()
            .rev()
            .find(|l| l.starts_with(' ') && l.trim_start().starts_with(char::is_numeric))
            .unwrap_or("")
            .to_owned()
    };
    eprintln!(
        "{test}: {:.1} s wall\n  server: {}\n  client: {}",
        t.elapsed().as_secs_f64(),
        last(&s),
        last(&c)
    );
}

fn default_size(tool: &str) -> u64 {
    if tool.ends_with("-lat") {
        2
    } else {
        65536
    }
}

/// Every tool, uverbs on both sides.
#[test]
fn perf_uverbs_both_sides() {
    for tool in TOOLS {
        run(
            &format!("perf_uverbs_both_sides {tool}"),
            tool,
            Impl::Uverbs,
            Impl::Uverbs,
            &[],
            &[default_size(tool)],
            200,
        );
    }
}

/// Every tool, uverbs serving perftest's client.
#[test]
fn perf_uverbs_server_perftest_client() {
    for tool in TOOLS {
        run(
            &format!("perf_uverbs_server_perftest_client {tool}"),
            tool,
            Impl::Uverbs,
            Impl::Perftest,
            &[],
            &[default_size(tool)],
            200,
        );
    }
}

/// Every tool, perftest's server with uverbs' client.
#[test]
fn perf_perftest_server_uverbs_client() {
    for tool in TOOLS {
        run(
            &format!("perf_perftest_server_uverbs_client {tool}"),
            tool,
            Impl::Perftest,
            Impl::Uverbs,
            &[],
            &[default_size(tool)],
            200,
        );
    }
}

/// `-a`: every size from 2 to 8 MiB, with the per-size synchronisation of `send-lat` and `send-bw`
/// (and none for `write-lat`) matching perftest's, each way round.
#[test]
fn perf_all_sizes() {
    let sizes: Vec<u64> = (1..24).map(|i| 1u64 << i).collect();
    for (tool, server, client) in [
        ("send-lat", Impl::Uverbs, Impl::Perftest),
        ("write-lat", Impl::Perftest, Impl::Uverbs),
        ("send-bw", Impl::Perftest, Impl::Uverbs),
        ("write-bw", Impl::Uverbs, Impl::Perftest),
    ] {
        run(
            &format!("perf_all_sizes {tool}"),
            tool,
            server,
            client,
            &["-a"],
            &sizes,
            5,
        );
    }
}

/// Multiple queue pairs, post lists, CQ moderation, completion events, inline data, outstanding
/// reads and MTU, against perftest where it has the option too.
#[test]
fn perf_options() {
    for (tool, server, client, args, size) in [
        (
            "write-bw",
            Impl::Uverbs,
            Impl::Uverbs,
            &["-q", "2", "-l", "4", "-Q", "2", "-s", "1K", "-t", "16"][..],
            1024,
        ),
        (
            "write-bw",
            Impl::Perftest,
            Impl::Uverbs,
            &["-q", "3", "-s", "100", "-l", "2"][..],
            100,
        ),
        (
            "send-bw",
            Impl::Uverbs,
            Impl::Perftest,
            &["-q", "2", "-e", "-s", "3000"][..],
            3000,
        ),
        (
            "send-bw",
            Impl::Uverbs,
            Impl::Uverbs,
            &["-e", "-s", "100", "-Q", "8"][..],
            100,
        ),
        (
            "read-bw",
            Impl::Perftest,
            Impl::Uverbs,
            &["-o", "4", "-e", "-s", "5000"][..],
            5000,
        ),
        (
            "read-bw",
            Impl::Uverbs,
            Impl::Uverbs,
            &["-q", "2", "-N", "-m", "1024"][..],
            65536,
        ),
        // The batch API (uverbs' own option, so uverbs on both sides; the server ignores it): one
        // batch per post, of one request or of a post list.
        (
            "send-bw",
            Impl::Uverbs,
            Impl::Uverbs,
            &["--batch", "-l", "4", "-s", "64"][..],
            64,
        ),
        (
            "write-bw",
            Impl::Uverbs,
            Impl::Uverbs,
            &["--batch", "-q", "2", "-s", "1K"][..],
            1024,
        ),
        (
            "read-bw",
            Impl::Uverbs,
            Impl::Uverbs,
            &["--batch", "-l", "2", "-s", "512"][..],
            512,
        ),
        (
            "send-lat",
            Impl::Uverbs,
            Impl::Uverbs,
            &["-e", "-s", "64"][..],
            64,
        ),
        (
            "send-lat",
            Impl::Perftest,
            Impl::Uverbs,
            &["-s", "100", "-m", "512"][..],
            100,
        ),
        (
            "write-lat",
            Impl::Uverbs,
            Impl::Uverbs,
            &["-s", "64", "-x", "1"][..],
            64,
        ),
    ] {
        run(
            &format!("perf_options {tool} {args:?}"),
            tool,
            server,
            client,
            args,
            &[size],
            64,
        );
    }
    // Inline sends and writes (perftest disables inline on rxe, so uverbs on both sides).
    for tool in ["send-lat", "write-lat", "send-bw", "write-bw"] {
        run(
            &format!("perf_options {tool} -I 64"),
            tool,
            Impl::Uverbs,
            Impl::Uverbs,
            &["-I", "64", "-s", "32"],
            &[32],
            64,
        );
    }
}

/// `--report_gbits`: the Gb/s header, and the average 8 × 2^20 / 10^9 times the MB/s one would be.
#[test]
fn perf_report_gbits() {
    let Some(dev) = test_device("perf_report_gbits") else {
        return;
    };
    let args = ["-d", dev.as_str(), "-n", "100", "-F", "--report_gbits"];
    let header = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
    checked_pair(
        "write-bw",
        Impl::Uverbs,
        &args,
        Impl::Perftest,
        &args,
        |s, c| {
            assert_eq!((s.code(), c.code()), (Some(0), Some(0)), "{s}\n{c}");
            let (sr, cr) = (rows(s, header), rows(c, header));
            assert!(same_rows(&sr[0], &cr[0]), "{s}\n{c}");
            assert!(perftest_clock_failed(c) || cr[0][3] > 0.0, "{c}");
        },
    );
}

/// A JSON field's number (the JSON is flat, one object per line).
fn json_num(line: &str, key: &str) -> f64 {
    let pat = format!("\"{key}\":");
    let rest = &line[line
        .find(&pat)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + pat.len()..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|_| panic!("{key} is not a number in {line}"))
}

/// `--json`: only JSON on stdout, one object per size, with the latency percentiles or the
/// bandwidth numbers.
#[test]
fn perf_json() {
    let Some(dev) = test_device("perf_json") else {
        return;
    };
    let lat = ["-d", dev.as_str(), "-n", "50", "-s", "8", "--json"];
    let (s, c) = pair("send-lat", Impl::Uverbs, &lat, Impl::Uverbs, &lat);
    for (d, role) in [(&s, "server"), (&c, "client")] {
        assert_eq!(d.code(), Some(0), "{d}");
        let lines: Vec<&str> = d.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{d}");
        let l = lines[0];
        assert!(
            l.starts_with("{\"test\":\"send_lat\"") && l.ends_with('}'),
            "{l}"
        );
        assert!(l.contains(&format!("\"role\":\"{role}\"")), "{l}");
        assert_eq!(json_num(l, "bytes"), 8.0);
        assert_eq!(json_num(l, "iterations"), 50.0);
        let v: Vec<f64> = ["min", "median", "avg", "p99", "p99_9", "max"]
            .iter()
            .map(|k| json_num(l, k))
            .collect();
        assert!(
            v[0] > 0.0 && v[0] <= v[1] && v[1] <= v[3] && v[3] <= v[4],
            "{l}"
        );
        assert!(v[0] <= v[2] && v[2] <= v[5] && v[1] <= v[5], "{l}");
    }
    let bw = ["-d", dev.as_str(), "-n", "64", "-s", "4096", "-a", "--json"];
    let (s, c) = pair("read-bw", Impl::Uverbs, &bw, Impl::Uverbs, &bw);
    assert_eq!((s.code(), c.code()), (Some(0), Some(0)), "{s}\n{c}");
    let lines: Vec<&str> = c.stdout.lines().collect();
    assert_eq!(lines.len(), 23, "{c}");
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(json_num(l, "bytes"), (2u64 << i) as f64, "{l}");
        assert_eq!(json_num(l, "iterations"), 64.0, "{l}");
        assert!(
            json_num(l, "bw_avg") > 0.0 && json_num(l, "msg_rate_mpps") > 0.0,
            "{l}"
        );
        assert!(l.contains("\"bw_unit\":\"MB/sec\""), "{l}");
    }
    // The server reports the client's last result.
    let srv: Vec<&str> = s.stdout.lines().collect();
    assert_eq!(srv.len(), 1, "{s}");
    assert!(srv[0].contains("\"measured_by\":\"client\""), "{s}");
    assert_eq!(json_num(srv[0], "bw_avg"), json_num(lines[22], "bw_avg"));
}

/// The option names of a usage text's option lines: `-a, --all  Run sizes...` gives `-a` and
/// `--all`; `-c, --connection=<RC>` gives `-c` and `--connection`.
fn usage_options(usage: &str) -> Vec<Vec<String>> {
    usage
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .map(|l| {
            l.split(", ")
                .map(|part| part.split(['=', ' ']).next().unwrap_or(part))
                .take_while(|name| name.starts_with('-'))
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

/// How perftest 6.06's tools exit after `-h` or `-V` (uverbs exits 0).
const PERFTEST_INFO_STATUS: i32 = 1;

/// Help, version and bad command lines: no device needed, no hang, and where perftest has the
/// same situation, what perftest's own tool prints (its first message line, the program's name
/// read as ours) and its exit status.
#[test]
fn perf_cli_usage_and_errors() {
    let test = "perf_cli_usage_and_errors";
    let perftest = TOOLS
        .iter()
        .all(|t| common::oracle(test, &perftest_name(t)));
    // The options perftest's tools name in their usage (all five: `ib_send_lat` takes `-t` but
    // names it only in the bandwidth tools' usage).
    let known: Vec<Vec<String>> = if perftest {
        TOOLS
            .iter()
            .flat_map(|t| usage_options(&stdout(&common::run(&perftest_name(t), &["-h"]))))
            .collect()
    } else {
        Vec::new()
    };
    for tool in TOOLS {
        let o = uverbs(&[tool, "-h"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).starts_with("Usage:"), "{}", stdout(&o));
        assert!(
            stdout(&o).contains(&format!("uverbs {tool} <host>")),
            "{}",
            stdout(&o)
        );
        let o = uverbs(&[tool, "-V"]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).starts_with("Version: 6.06"), "{}", stdout(&o));
        if !perftest {
            continue;
        }
        // The usage's head as perftest's, and every option it names is one of perftest's, with the
        // same short and long names (but for `--json` and `--batch`, uverbs' own); the version
        // line starts with perftest's.
        let name = perftest_name(tool);
        let ours = stdout(&uverbs(&[tool, "-h"]));
        // A known difference: perftest exits 1 after printing its usage or version (it leaves
        // through its parser's error path); uverbs takes them as requests and exits 0.
        let theirs = common::run(&name, &["-h"]);
        assert_eq!(
            theirs.status.code(),
            Some(PERFTEST_INFO_STATUS),
            "{name} -h"
        );
        let theirs = stdout(&theirs).replace(&name, &format!("uverbs {tool}"));
        let head = |t: &str| t.lines().take(3).map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(head(&ours), head(&theirs), "{tool} -h: the usage's head");
        for names in usage_options(&ours) {
            if names == ["--json"] || names == ["--batch"] {
                continue;
            }
            assert!(
                known.contains(&names),
                "uverbs {tool} -h names {names:?}, which no perftest tool's usage has"
            );
        }
        let theirs = common::run(&name, &["-V"]);
        assert_eq!(
            theirs.status.code(),
            Some(PERFTEST_INFO_STATUS),
            "{name} -V"
        );
        let version = stdout(&theirs);
        let version = version.lines().next().unwrap_or("").trim_end();
        assert!(
            stdout(&uverbs(&[tool, "-V"])).starts_with(version),
            "{tool} -V: perftest says {version:?}"
        );
    }
    // Bad command lines perftest's parser refuses as well.
    for args in [
        &["send-lat", "-n", "4"][..],
        &["send-lat", "-q", "2"],
        &["write-lat", "-e"],
        &["read-bw", "-I", "16"],
        &["send-lat", "-l", "2"],
        &["write-bw", "-n", "10", "-l", "3"],
        &["write-bw", "-s", "0"],
        &["write-bw", "-n", "12x"],
        &["write-bw", "a", "b"],
        &["send-bw", "--bogus"],
    ] {
        let o = uverbs(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).trim().is_empty(), "{args:?}: no message");
        if !perftest {
            continue;
        }
        let name = perftest_name(args[0]);
        let theirs = common::run(&name, &args[1..]);
        assert_eq!(
            theirs.status.code(),
            o.status.code(),
            "{args:?}: the exit status of {name}'s\n{}",
            stderr(&theirs)
        );
        let text = stderr(&theirs).replace(&name, &format!("uverbs {}", args[0]));
        let message = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_else(|| panic!("{name} {:?} printed no message", &args[1..]));
        assert!(
            stderr(&o).lines().any(|l| l == message),
            "{args:?}: no {message:?} (as {name} says) in\n{}",
            stderr(&o)
        );
    }
    // What uverbs refuses where perftest would run (no bidirectional tests): its own words, and
    // the status of perftest's refusals. (`-R` and `-z`, rdma_cm, are run against perftest by
    // tests/cm_interop.rs.)
    let (args, message) = (
        ["write-bw", "-b"],
        "uverbs write-bw: -b (bidirectional) is not supported",
    );
    let o = uverbs(&args);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    assert!(
        stderr(&o).lines().any(|l| l.starts_with(message)),
        "{args:?}: no '{message}' in\n{}",
        stderr(&o)
    );
    let o = uverbs(&["help"]);
    for tool in TOOLS {
        assert!(stdout(&o).contains(tool), "{tool} not in help");
    }
}

/// Failures that need the device but no peer exit with status 1 and a clear message.
#[test]
fn perf_errors_without_peer() {
    let Some(dev) = test_device("perf_errors_without_peer") else {
        return;
    };
    let free_port = next_port().to_string();
    for (args, message) in [
        (
            vec!["send-lat", "-d", "nosuchdev"],
            "IB device nosuchdev not found".to_string(),
        ),
        (
            vec![
                "write-bw",
                "-d",
                &dev,
                "-i",
                "2",
                "-p",
                &free_port,
                "127.0.0.1",
            ],
            " Unable to query port 2 attributes".to_string(),
        ),
        (
            vec!["read-bw", "-d", &dev, "-p", &free_port, "127.0.0.1"],
            format!("Couldn't connect to 127.0.0.1:{free_port}"),
        ),
    ] {
        let o = uverbs(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&message),
            "{args:?}: no '{message}' in\n{}",
            stderr(&o)
        );
    }
}
