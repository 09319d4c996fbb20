//! A small GNU-getopt-compatible option parser, so that the tools accept exactly what the rdma-core
//! tools they mirror accept: `-d rxe0`, `-drxe0`, `-vd rxe0`, `--ib-dev=rxe0`, `--ib-dev rxe0`,
//! unambiguous prefixes of long options (`--verb`), non-options anywhere, and `--` to end options.
//!
//! Not clap: the tools must match rdma-core's `ibv_*` and perftest's `ib_*` flag for flag (their
//! getopt's bundling, prefixes, argument forms and error exits), which a clap parser would change.

/// One option a tool accepts.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    /// The short form, e.g. `'d'`.
    pub short: char,
    /// The long form without dashes, e.g. `"ib-dev"`.
    pub long: &'static str,
    /// Whether it takes an argument.
    pub arg: bool,
}

impl Opt {
    /// An option that takes an argument (`-d rxe0`, `--ib-dev=rxe0`).
    pub const fn arg(short: char, long: &'static str) -> Opt {
        Opt {
            short,
            long,
            arg: true,
        }
    }

    /// An option that takes none (`-l`, `--list`).
    pub const fn flag(short: char, long: &'static str) -> Opt {
        Opt {
            short,
            long,
            arg: false,
        }
    }
}

/// `-d, --ib-dev=<dev>`, as libibverbs' examples and perftest spell it.
pub const IB_DEV: Opt = Opt::arg('d', "ib-dev");

/// `-i, --ib-port=<port>`, as libibverbs' examples and perftest spell it.
pub const IB_PORT: Opt = Opt::arg('i', "ib-port");

/// A parsed item, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// An option (by its short form) and its argument.
    Opt(char, Option<String>),
    /// A non-option argument.
    Arg(String),
}

/// Parses `args` (without the program name). Errors are glibc's messages without the program prefix.
pub fn parse(args: &[String], opts: &[Opt]) -> Result<Vec<Item>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            out.extend(args[i..].iter().cloned().map(Item::Arg));
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let opt: Opt = match opts.iter().find(|o| o.long == name) {
                Some(o) => *o,
                None => {
                    let matches: Vec<&Opt> =
                        opts.iter().filter(|o| o.long.starts_with(name)).collect();
                    match matches.as_slice() {
                        [one] => **one,
                        [] => return Err(format!("unrecognized option '--{name}'")),
                        many => {
                            let names: Vec<String> =
                                many.iter().map(|o| format!("'--{}'", o.long)).collect();
                            return Err(format!(
                                "option '--{name}' is ambiguous; possibilities: {}",
                                names.join(" ")
                            ));
                        }
                    }
                }
            };
            if opt.arg {
                let value = match value {
                    Some(v) => v,
                    None if i < args.len() => {
                        i += 1;
                        args[i - 1].clone()
                    }
                    None => return Err(format!("option '--{}' requires an argument", opt.long)),
                };
                out.push(Item::Opt(opt.short, Some(value)));
            } else {
                if value.is_some() {
                    return Err(format!("option '--{}' doesn't allow an argument", opt.long));
                }
                out.push(Item::Opt(opt.short, None));
            }
        } else if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let Some(opt) = opts.iter().find(|o| o.short == c) else {
                    return Err(format!("invalid option -- '{c}'"));
                };
                if opt.arg {
                    let rest: String = chars[j..].iter().collect();
                    let value = if !rest.is_empty() {
                        rest
                    } else if i < args.len() {
                        i += 1;
                        args[i - 1].clone()
                    } else {
                        return Err(format!("option requires an argument -- '{c}'"));
                    };
                    out.push(Item::Opt(c, Some(value)));
                    break;
                }
                out.push(Item::Opt(c, None));
            }
        } else {
            out.push(Item::Arg(a.clone()));
        }
    }
    Ok(out)
}

/// [`parse`], as the tools' `main`s call it: on an error, prints getopt's message after `prog`
/// (`prog: invalid option -- 'x'`) and then the usage (`usage`), and gives `Err(status)`, the exit
/// status the tool ends with.
pub fn parse_or_usage(
    prog: &str,
    args: &[String],
    opts: &[Opt],
    usage: impl FnOnce(),
    status: i32,
) -> Result<Vec<Item>, i32> {
    parse(args, opts).map_err(|msg| {
        eprintln!("{prog}: {msg}");
        usage();
        status
    })
}

/// C's `strtol(s, NULL, 0)`: leading blanks, a sign, base from the prefix (`0x` hex, `0` octal), and
/// the longest run of digits; trailing garbage is ignored and no digits give 0.
pub fn strtol(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if h.starts_with(|c: char| c.is_ascii_hexdigit()) {
            (16, h)
        } else {
            (10, "0")
        }
    } else if s.starts_with('0') {
        (8, s)
    } else {
        (10, s)
    };
    let mut v: i64 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        v = v
            .saturating_mul(i64::from(radix))
            .saturating_add(i64::from(d));
    }
    if neg {
        -v
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        IB_DEV,
        IB_PORT,
        Opt::flag('l', "list"),
        Opt::flag('v', "verbose"),
    ];

    fn p(args: &[&str]) -> Result<Vec<Item>, String> {
        parse(
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            OPTS,
        )
    }

    fn opt(c: char, v: Option<&str>) -> Item {
        Item::Opt(c, v.map(str::to_owned))
    }

    #[test]
    fn short_forms() {
        assert_eq!(p(&["-d", "rxe0"]).unwrap(), vec![opt('d', Some("rxe0"))]);
        assert_eq!(p(&["-drxe0"]).unwrap(), vec![opt('d', Some("rxe0"))]);
        assert_eq!(
            p(&["-vd", "rxe0"]).unwrap(),
            vec![opt('v', None), opt('d', Some("rxe0"))]
        );
        assert_eq!(
            p(&["x", "-v"]).unwrap(),
            vec![Item::Arg("x".into()), opt('v', None)]
        );
    }

    #[test]
    fn long_forms() {
        assert_eq!(p(&["--ib-dev=rxe0"]).unwrap(), vec![opt('d', Some("rxe0"))]);
        assert_eq!(
            p(&["--ib-dev", "rxe0"]).unwrap(),
            vec![opt('d', Some("rxe0"))]
        );
        assert_eq!(p(&["--verb"]).unwrap(), vec![opt('v', None)]);
        assert_eq!(
            p(&["--ib"]).unwrap_err(),
            "option '--ib' is ambiguous; possibilities: '--ib-dev' '--ib-port'"
        );
        assert_eq!(p(&["--foo"]).unwrap_err(), "unrecognized option '--foo'");
        assert_eq!(
            p(&["--list=x"]).unwrap_err(),
            "option '--list' doesn't allow an argument"
        );
        assert_eq!(
            p(&["--ib-dev"]).unwrap_err(),
            "option '--ib-dev' requires an argument"
        );
    }

    #[test]
    fn errors_as_glibc_words_them() {
        assert_eq!(p(&["-h"]).unwrap_err(), "invalid option -- 'h'");
        assert_eq!(
            p(&["-d"]).unwrap_err(),
            "option requires an argument -- 'd'"
        );
    }

    #[test]
    fn double_dash_ends_options() {
        assert_eq!(p(&["--", "-v"]).unwrap(), vec![Item::Arg("-v".into())]);
    }

    #[test]
    fn strtol_like_c() {
        assert_eq!(strtol("1"), 1);
        assert_eq!(strtol("0x1f"), 31);
        assert_eq!(strtol("010"), 8);
        assert_eq!(strtol(" 1abc"), 1);
        assert_eq!(strtol("abc"), 0);
        assert_eq!(strtol("-5"), -5);
        assert_eq!(strtol("0x"), 0);
    }
}
