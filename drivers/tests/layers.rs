//! The layering `docs/architecture.md` states for this crate, checked against the sources: the
//! modules form a stack, each using only those below it (or beside it, in its own layer), with no
//! import circle.
//!
//! The layer table is read from `docs/architecture.md` itself (the `| layer | modules | what |`
//! table), so the page and the check cannot drift apart. Every module of `src/` must be in it once.
//! A module's uses are the `crate::X` paths of its code (`use` lines, `use crate::{X, Y::Z}`
//! groups, fully qualified paths) and `super::` chains that reach the crate root; comments (doc
//! links included: documentation may name the layer above, code may not), string literals and
//! unit tests (`#[cfg(test)] mod`: a test may use any module) are not counted. The crate root
//! (`lib.rs`: the list of backends, the drop-error hook, re-exports) is not a layer and may be
//! named by all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate's directory.
fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The layers of `docs/architecture.md`'s table, bottom first: (name, modules).
fn layer_table() -> Vec<(String, Vec<String>)> {
    let doc = manifest_dir().join("../docs/architecture.md");
    let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the layering test runs in the repository)",
            doc.display()
        )
    });
    parse_layer_table(&text)
}

/// The rows of the first table whose header is `| layer | modules | what |`.
fn parse_layer_table(text: &str) -> Vec<(String, Vec<String>)> {
    let mut lines = text.lines().map(str::trim);
    lines
        .by_ref()
        .find(|l| l.replace(' ', "") == "|layer|modules|what|")
        .expect("docs/architecture.md has no `| layer | modules | what |` table");
    let mut layers = Vec::new();
    for line in lines.skip(1) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').collect();
        let modules = cells[2]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|m| m.trim_end_matches('/').to_owned())
            .collect();
        layers.push((cells[1].trim().to_owned(), modules));
    }
    layers
}

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The module path of a file relative to `src/`: `sys/remote.rs` is `[sys, remote]`, `cmd/mod.rs`
/// is `[cmd]`, `lib.rs` is `[]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && stem == "lib")) {
        parts.push(stem.to_owned());
    }
    parts
}

/// `src` with its comments and the contents of its string and character literals blanked out
/// (newlines kept, so line numbers hold).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, s: &[u8]| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if (rest.starts_with(b"r\"") || rest.starts_with(b"r#"))
            && (i == 0
                || !is_ident_byte(b[i - 1])
                || (b[i - 1] == b'b' && (i == 1 || !is_ident_byte(b[i - 2]))))
        {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let start = 2 + hashes;
            let end = rest[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(rest.len(), |p| start + p + close.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\'', '\u{0}'), or a lifetime ('a), which is code.
            let len = if rest.get(1) == Some(&b'\\') {
                rest.get(3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|p| p + 4)
            } else {
                src[i + 1..]
                    .chars()
                    .next()
                    .map(char::len_utf8)
                    .filter(|&n| rest.get(1 + n) == Some(&b'\''))
                    .map(|n| n + 2)
            };
            match len {
                Some(n) => {
                    blank(&mut out, &rest[..n]);
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = src[i..].chars().next().expect("in the text");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// `code` (from [`code_only`]) with its `#[cfg(test)] mod name { ... }` blocks blanked out (newlines
/// kept): a module's unit tests may use any module of the crate.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_owned();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|p| from + p) {
        let after = out[at + "#[cfg(test)]".len()..].trim_start();
        let is_mod = after.starts_with("mod ") || after.starts_with("pub(crate) mod ");
        let open = out[at..].find('{').map(|p| at + p);
        let (true, Some(open)) = (is_mod, open) else {
            from = at + 1;
            continue;
        };
        let mut depth = 0usize;
        let mut end = out.len();
        for (i, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
        from = end;
    }
    out
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s.bytes().position(|c| !is_ident_byte(c)).unwrap_or(s.len());
    &s[..end]
}

/// The crate-root names the code of a file at module depth `depth` uses, with the line of each
/// use: `crate::X`, each `X` of `crate::{X, Y::Z}`, and `super::…::X` where the `super`s reach the
/// root.
fn root_names(code: &str, depth: usize) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let bytes = code.as_bytes();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let word_start = at == 0 || !is_ident_byte(bytes[at - 1]);
        if word_start && rest.starts_with("crate::") {
            let after = rest["crate::".len()..].trim_start();
            if let Some(group) = after.strip_prefix('{') {
                // The top-level names of a `use crate::{...}` group.
                let (mut nest, mut expect_name) = (0usize, true);
                let mut j = 0;
                let gb = group.as_bytes();
                while j < gb.len() {
                    match gb[j] {
                        b'{' => nest += 1,
                        b'}' if nest == 0 => break,
                        b'}' => nest -= 1,
                        b',' if nest == 0 => expect_name = true,
                        c if is_ident_byte(c) && expect_name && nest == 0 => {
                            let name = ident(&group[j..]);
                            out.push((name.to_owned(), line_of(at)));
                            expect_name = false;
                            j += name.len();
                            continue;
                        }
                        _ => {}
                    }
                    j += 1;
                }
            } else {
                out.push((ident(after).to_owned(), line_of(at)));
            }
            at += "crate::".len();
            continue;
        }
        if word_start && rest.starts_with("super::") {
            let mut supers = 0;
            let mut r = rest;
            while let Some(t) = r.strip_prefix("super::") {
                supers += 1;
                r = t.trim_start();
            }
            if supers >= depth {
                out.push((ident(r).to_owned(), line_of(at)));
            }
            at += "super::".len() * supers;
            continue;
        }
        at += rest.chars().next().map_or(1, char::len_utf8);
    }
    out
}

/// A use of one module by another: where, and what.
#[derive(Debug)]
struct Use {
    from: String,
    to: String,
    file: String,
    line: usize,
}

/// The uses between the top-level modules of the sources under `src`.
fn module_uses(src: &Path) -> (BTreeSet<String>, Vec<Use>) {
    let files = sources(src);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_path(f.strip_prefix(src).unwrap()))
        .filter_map(|p| p.first().cloned())
        .collect();
    let mut uses = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        let path = module_path(rel);
        let Some(from) = path.first() else {
            continue; // The crate root.
        };
        let code = without_test_modules(&code_only(&std::fs::read_to_string(file).unwrap()));
        for (name, line) in root_names(&code, path.len()) {
            if modules.contains(&name) && &name != from {
                uses.push(Use {
                    from: from.clone(),
                    to: name,
                    file: rel.display().to_string(),
                    line,
                });
            }
        }
    }
    (modules, uses)
}

/// The uses that go up the table, as messages.
fn upward(layers: &[(String, Vec<String>)], uses: &[Use]) -> Vec<String> {
    let level: BTreeMap<&str, (usize, &str)> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, (name, ms))| ms.iter().map(move |m| (m.as_str(), (i, name.as_str()))))
        .collect();
    uses.iter()
        .filter_map(|u| {
            let (from, from_layer) = level[u.from.as_str()];
            let (to, to_layer) = level[u.to.as_str()];
            (to > from).then(|| {
                format!(
                    "src/{}:{}: `{}` ({from_layer}) uses `{}` ({to_layer}), a layer above it",
                    u.file, u.line, u.from, u.to
                )
            })
        })
        .collect()
}

/// A circle of the module graph, as `a -> b -> a`, if there is one.
fn circle(uses: &[Use]) -> Option<String> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for u in uses {
        graph.entry(&u.from).or_default().insert(&u.to);
    }
    // Depth first, with the path so far: a node met again on the path closes a circle.
    fn visit<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<String> {
        if let Some(at) = path.iter().position(|&n| n == node) {
            let mut c = path[at..].to_vec();
            c.push(node);
            return Some(c.join(" -> "));
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for &next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|&n| visit(n, &graph, &mut Vec::new(), &mut done))
}

/// Where each use of `a` by `b` in a circle is, for the message.
fn where_used<'u>(uses: &'u [Use], circle: &str) -> Vec<String> {
    let nodes: Vec<&str> = circle.split(" -> ").collect();
    nodes
        .windows(2)
        .flat_map(|w| {
            uses.iter()
                .filter(move |u| u.from == w[0] && u.to == w[1])
                .take(1)
                .map(|u: &'u Use| {
                    format!("src/{}:{}: `{}` uses `{}`", u.file, u.line, u.from, u.to)
                })
        })
        .collect()
}

#[test]
fn every_module_is_in_one_layer_of_the_table() {
    let layers = layer_table();
    let (modules, _) = module_uses(&manifest_dir().join("src"));
    let mut seen = BTreeMap::new();
    for (layer, ms) in &layers {
        for m in ms {
            if let Some(other) = seen.insert(m.clone(), layer.clone()) {
                panic!("`{m}` is in two layers of docs/architecture.md: {other} and {layer}");
            }
        }
    }
    let listed: BTreeSet<String> = seen.keys().cloned().collect();
    let missing: Vec<_> = modules.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&modules).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "docs/architecture.md's layer table and src/ disagree: modules in no layer {missing:?}, \
         layers naming modules that do not exist {gone:?}"
    );
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let layers = layer_table();
    let (_, uses) = module_uses(&manifest_dir().join("src"));
    assert!(!uses.is_empty(), "the scan found no uses at all");
    let up = upward(&layers, &uses);
    assert!(
        up.is_empty(),
        "uses against docs/architecture.md's layers:\n{}",
        up.join("\n")
    );
}

#[test]
fn no_import_circle_between_modules() {
    let (_, uses) = module_uses(&manifest_dir().join("src"));
    if let Some(c) = circle(&uses) {
        panic!(
            "an import circle between the modules: {c}\n{}",
            where_used(&uses, &c).join("\n")
        );
    }
}

/// The checks themselves: what they must see, and what they must not.
#[test]
fn the_scan_sees_uses_in_code_only_and_finds_circles() {
    let src = r##"
        //! A link to [`crate::doc_only`] and a path in a /* comment crate::in_comment */.
        use crate::{alpha, beta::{Thing, Other}, gamma as g};
        use crate::delta::Delta;
        fn f<'a>(x: &'a str) -> char {
            let _ = "crate::in_string";
            let _ = r#"crate::in_raw_string"#;
            let _ = super::super::epsilon::E;
            let _ = super::zeta::Z;
            let _ = mycrate::not_ours;
            '"'
        }
        fn g() { crate::eta::h('\'') }
    "##;
    let names: Vec<String> = root_names(&code_only(src), 2)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names,
        ["alpha", "beta", "gamma", "delta", "epsilon", "eta"],
        "{}",
        code_only(src)
    );
    assert_eq!(
        root_names("use crate::x;\n\nuse crate::y;", 1)[1],
        ("y".into(), 3)
    );
    let with_tests = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    \
                      fn f() { if true {} }\n}\nuse crate::c;\n";
    let names: Vec<String> = root_names(&without_test_modules(with_tests), 1)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["a", "c"]);

    let table = "x\n| layer | modules | what |\n|---|---|---|\n| low | `a`, `b/` | `T` |\n\
                 | high | `c` | |\n\nafter\n";
    let layers = parse_layer_table(table);
    assert_eq!(
        layers,
        [
            ("low".to_owned(), vec!["a".to_owned(), "b".to_owned()]),
            ("high".to_owned(), vec!["c".to_owned()])
        ]
    );
    let u = |from: &str, to: &str| Use {
        from: from.into(),
        to: to.into(),
        file: format!("{from}.rs"),
        line: 1,
    };
    let down = [u("c", "a"), u("b", "a")];
    assert!(upward(&layers, &down).is_empty());
    assert!(circle(&down).is_none());
    let up = [u("a", "c")];
    assert_eq!(upward(&layers, &up).len(), 1);
    let around = [u("c", "a"), u("a", "b"), u("b", "a")];
    assert_eq!(circle(&around).as_deref(), Some("a -> b -> a"));
    assert_eq!(where_used(&around, "a -> b -> a").len(), 2);
}
