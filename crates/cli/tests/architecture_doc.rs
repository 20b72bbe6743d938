//! `docs/architecture.md` names real things: every backticked path in it exists in the
//! repository, and every backticked Rust item (`Region::write_group`, `PageDevice`,
//! `REGISTRY`) is defined somewhere under `crates/`. A rename that leaves the page
//! behind fails here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The backticked spans of a Markdown text.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A span that names a file or directory of the repository (not a pattern such as
/// `crates/workloads/src/<name>.rs`).
fn is_path(span: &str) -> bool {
    const TOPS: [&str; 5] = ["crates/", "docs/", "scripts/", "web/", "python/"];
    TOPS.iter().any(|t| span.starts_with(t)) && !span.contains([' ', '<'])
}

/// The item a span names, when it is a Rust path or identifier worth checking: the last
/// segment of `a::B::c`, a CamelCase or ALL_CAPS name, or a snake_case name with an
/// underscore. Plain words (`log`, `format`) and anything with spaces, generics or
/// calls are left alone.
fn rust_item(span: &str) -> Option<&str> {
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let segments: Vec<&str> = span.split("::").collect();
    if !segments.iter().all(|s| ident(s)) {
        return None;
    }
    let last = *segments.last()?;
    let first_upper = last.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    let named =
        segments.len() > 1 || first_upper || (last.contains('_') && last.chars().any(|c| c.is_ascii_lowercase()));
    named.then_some(last)
}

/// Every name defined by `fn`, `struct`, `enum`, `trait`, `type`, `static`, `const` or
/// `mod` in the Rust sources under `dir`.
fn defined_names(dir: &Path, names: &mut HashSet<String>) {
    const KEYWORDS: [&str; 8] = ["fn", "struct", "enum", "trait", "type", "static", "const", "mod"];
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                defined_names(&path, names);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let words: Vec<&str> =
                text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect();
            for pair in words.windows(2) {
                if KEYWORDS.contains(&pair[0]) {
                    names.insert(pair[1].to_string());
                }
            }
        }
    }
}

#[test]
fn every_path_and_item_the_architecture_page_names_exists() {
    let root = workspace_root();
    let page = root.join("docs/architecture.md");
    let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("reading {}: {e}", page.display()));
    let mut names = HashSet::new();
    defined_names(&root.join("crates"), &mut names);
    let mut missing = Vec::new();
    for span in code_spans(&text) {
        if is_path(span) {
            if !root.join(span).exists() {
                missing.push(format!("path `{span}`"));
            }
        } else if let Some(item) = rust_item(span) {
            if !names.contains(item) {
                missing.push(format!("item `{span}` (no definition of `{item}` under crates/)"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/architecture.md names what does not exist:\n{}", missing.join("\n"));
}

#[test]
fn the_checks_tell_names_from_words() {
    assert!(is_path("crates/flash/src/ipl/"));
    assert!(!is_path("crates/x y"));
    assert!(!is_path("crates/workloads/src/<name>.rs"));
    assert_eq!(rust_item("nand::Device::program"), Some("program"));
    assert_eq!(rust_item("PageDevice"), Some("PageDevice"));
    assert_eq!(rust_item("REGISTRY"), Some("REGISTRY"));
    assert_eq!(rust_item("end_op"), Some("end_op"));
    assert_eq!(rust_item("format"), None);
    assert_eq!(rust_item("commit(tid)"), None);
    assert_eq!(rust_item("Registered::of::<…>()"), None);
    assert_eq!(code_spans("a `b` c `d::E` f"), vec!["b", "d::E"]);
}
