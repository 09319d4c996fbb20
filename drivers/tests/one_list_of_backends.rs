//! The backends are listed once (`backends!` in `drivers/src/lib.rs`), and nothing else in the
//! drivers or the library names one: adding a backend touches its folder and that list
//! (`docs/adding-a-backend.md`). This reads the sources and fails on any other mention of a
//! backend's module, context type, `Driver` or `Backend` variant outside the backend's own folder
//! (test modules excepted: they may build a device of a given driver).

use std::fs;
use std::path::{Path, PathBuf};

/// One entry of the list: the variant, the folder (module), the context type's last segment.
struct Entry {
    variant: String,
    module: String,
    context: String,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The entries of `backends!`, read from `drivers/src/lib.rs`.
fn list() -> Vec<Entry> {
    let lib = fs::read_to_string(repo().join("drivers/src/lib.rs")).unwrap();
    let start = lib
        .find("macro_rules! backends")
        .expect("the list of backends");
    let body = &lib[start..];
    let body = &body[body.find('[').unwrap() + 1..body.find(']').unwrap()];
    body.split(';')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (variant, rest) = l.split_once(':').expect("Variant: module, Context, ...");
            let fields: Vec<&str> = rest.split(',').map(str::trim).collect();
            Entry {
                variant: variant.trim().to_owned(),
                module: fields[0].to_owned(),
                context: fields[1].rsplit("::").next().unwrap().to_owned(),
            }
        })
        .collect()
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's text without its test module (the part from `#[cfg(test)]` followed by `mod`), its
/// comments, and (for lib.rs) the list itself.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    let mut in_list = false;
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") && lines.peek().is_some_and(|n| n.contains("mod ")) {
            break;
        }
        if t.starts_with("macro_rules! backends") {
            in_list = true;
        }
        if in_list {
            if t == "}" && line.starts_with('}') {
                in_list = false;
            }
            continue;
        }
        let code = line.split("//").next().unwrap_or("");
        out.push_str(code);
        out.push('\n');
    }
    out
}

#[test]
fn the_backends_are_named_in_one_list_only() {
    let list = list();
    assert!(list.len() >= 2, "the list has rxe and mlx5 at least");
    let mut files = Vec::new();
    sources(&repo().join("drivers/src"), &mut files);
    sources(&repo().join("src"), &mut files);
    let mut found = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(repo())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let code = code(file);
        for e in &list {
            if rel.starts_with(&format!("drivers/src/{}/", e.module)) {
                continue;
            }
            let needles = [
                format!("crate::{}::", e.module),
                format!("uverbs_drivers::{}::", e.module),
                format!("Driver::{}", e.variant),
                format!("Backend::{}", e.variant),
                e.context.clone(),
            ];
            for n in &needles {
                for (i, line) in code.lines().enumerate() {
                    let hit = line.match_indices(n.as_str()).any(|(at, _)| {
                        // A whole name: not the tail of a longer identifier.
                        let before = line[..at].chars().last();
                        let after = line[at + n.len()..].chars().next();
                        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    });
                    if hit {
                        found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "backends named outside the list and their folders:\n{}",
        found.join("\n")
    );
}

/// The test reads what it means to: each backend's folder exists, defines its context type, and
/// is declared as a hidden module of the crate (by name, so that `cargo fmt` formats it).
#[test]
fn each_listed_backend_has_its_folder_and_context() {
    let lib = fs::read_to_string(repo().join("drivers/src/lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';'))
        .collect();
    for e in list() {
        assert!(
            declared.contains(&e.module.as_str()),
            "{}: no `pub mod {};` in drivers/src/lib.rs",
            e.variant,
            e.module
        );
        let at = lib.find(&format!("pub mod {};", e.module)).unwrap();
        assert!(
            lib[..at]
                .rfind("#[doc(hidden)]")
                .is_some_and(|h| lib[h..at].trim() == "#[doc(hidden)]"),
            "{}: its module is not #[doc(hidden)] (a backend's internals are not API)",
            e.variant
        );
    }
    for e in list() {
        let dir = repo().join("drivers/src").join(&e.module);
        assert!(dir.is_dir(), "{}: no folder {}", e.variant, dir.display());
        let mut files = Vec::new();
        sources(&dir, &mut files);
        assert!(
            files.iter().any(|f| fs::read_to_string(f)
                .unwrap()
                .contains(&format!("pub struct {}", e.context))),
            "{}: no `pub struct {}` in its folder",
            e.variant,
            e.context
        );
    }
}
