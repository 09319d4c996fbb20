//! `docs/architecture.md` names only files that exist: every repository path in it (`drivers/…`,
//! `src/…`, `tests/…`, …, with `tests/common::any_device` read as the module `tests/common`), and
//! every file or folder it names by its place within a crate (`mlx5/clock.rs`, `hca/mem.rs`,
//! `guest.rs`), which must be the end of some path in the repository. Paths on the machine
//! (`/dev/infiniband/…`), placeholders (`drivers/src/<backend>/`) and prose (`WQE/CQE`) are not
//! files of it.

use std::path::{Path, PathBuf};

/// The repository's top-level folders, which start a path the page names in full.
const TOP: &[&str] = &[
    "benches", "docs", "drivers", "examples", "fuzz", "src", "testing", "tests", "tools", "uapi",
    "vm",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file and folder of the repository (no build output, no hidden folder), relative to it.
fn tree() -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(root().join(&d)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || (d.as_os_str().is_empty() && name == "target") {
                continue;
            }
            let rel = d.join(&name);
            if entry.file_type().unwrap().is_dir() {
                out.push(format!("{}/", rel.display()));
                dirs.push(rel);
            } else {
                out.push(rel.display().to_string());
            }
        }
    }
    out
}

/// The words of `text` that name files: with a `/` or ending in `.rs`, `.md`, `.c`, `.sh`.
fn named_paths(text: &str) -> Vec<String> {
    let words = text
        .split(|c: char| c.is_whitespace() || "`()[],;\"'*".contains(c))
        .map(|w| w.split("::").next().unwrap_or(w))
        .map(|w| w.trim_end_matches(['.', ':']))
        .filter(|w| {
            let file = [".rs", ".md", ".c", ".sh"].iter().any(|e| w.ends_with(e));
            // The repository's paths are lower case but for a file's name (`README.md`); prose
            // has words with a `/` too (`WQE/CQE`).
            let lower = w
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "/_.-".contains(c));
            let pathlike = w
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_.-".contains(c));
            !w.is_empty() && !w.starts_with('/') && pathlike && (file || (lower && w.contains('/')))
        })
        .map(str::to_owned);
    let mut out: Vec<String> = words.collect();
    out.sort();
    out.dedup();
    out
}

/// Whether the repository has `path`: in full where it starts at a top-level folder, else as the
/// end of some path.
fn exists(path: &str, tree: &[String]) -> bool {
    let first = path.split('/').next().unwrap_or("");
    if TOP.contains(&first) {
        let p = root().join(path);
        return p.exists() || p.with_extension("rs").is_file() || p.join("mod.rs").is_file();
    }
    tree.iter()
        .any(|t| t == path || t.ends_with(&format!("/{path}")))
}

#[test]
fn architecture_names_only_files_that_exist() {
    let text = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let tree = tree();
    let named = named_paths(&text);
    assert!(
        named.iter().any(|p| p == "drivers/tests/layers.rs"),
        "the scan found {named:?}"
    );
    let missing: Vec<&String> = named.iter().filter(|p| !exists(p, &tree)).collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names files that do not exist: {missing:?}"
    );
}

#[test]
fn the_scan_reads_paths_as_the_page_writes_them() {
    let text = "`tests/common::any_device`, (`src/qp/mod.rs`), `/dev/infiniband/uverbs0`, \
                `drivers/src/<backend>/`, see cqe.rs. A `sys::remote` seam, WQE/CQE bytes";
    assert_eq!(
        named_paths(text),
        ["cqe.rs", "src/qp/mod.rs", "tests/common"]
    );
    let tree = tree();
    assert!(exists("tests/common", &tree) && exists("mlx5/clock.rs", &tree));
    assert!(!exists("src/qp.rs", &tree) && !exists("nowhere/at_all.rs", &tree));
}
