//! The C side of the value tests: compiles a program that prints C expressions against system
//! headers, runs it, and compares the values with Rust's.

use std::fmt::Write;
use std::process::Command;

/// Checks every `(Rust value, C expression)` of `table` against the C value, with `includes`
/// (`#include` lines) in front; `package` names what provides the headers, for the error.
pub fn assert_matches_c(name: &str, includes: &str, package: &str, table: &[(i128, &str)]) {
    let mut src = format!("#include <stdio.h>\n{includes}int main(void)\n{{\n");
    for (_, c) in table {
        writeln!(src, "\tprintf(\"%lld\\n\", (long long)({c}));").unwrap();
    }
    src.push_str("\treturn 0;\n}\n");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("uapi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c, exe) = (dir.join(format!("{name}.c")), dir.join(name));
    std::fs::write(&c, src).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cc}`: {e} (install gcc)"));
    assert!(
        out.status.success(),
        "compiling against {} failed (install {package}, headers only):\n{}",
        includes.trim(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let values: Vec<i128> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(values.len(), table.len());
    let bad: Vec<String> = table
        .iter()
        .zip(&values)
        .filter(|((rust, _), c)| rust != *c)
        .map(|((rust, name), c)| format!("{name}: Rust {rust}, C {c}"))
        .collect();
    assert!(bad.is_empty(), "values differ from {package}: {bad:?}");
}
