//! Code decides on an error by its variant, never by its text: a reworded message must
//! not change what the program does. This scans the non-test sources of every crate for
//! a string match (`contains`, `starts_with`, `ends_with` with a literal) on something
//! that holds an error or its message, and fails on each one it finds.

use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The string matches that, applied to an error's text, make a decision of it.
const MATCHES: [&str; 3] = [".contains(\"", ".starts_with(\"", ".ends_with(\""];

/// Receivers that hold an error or its text (lower case).
const ERROR_WORDS: [&str; 6] = ["err", "msg", "message", "to_string()", "cause", "reason"];

/// The expression a method is called on: the text before `at` back to the nearest
/// delimiter that cannot be part of a receiver, stepping over the calls in it
/// (`e.to_string()`).
fn receiver(line: &str, at: usize) -> &str {
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in line[..at].char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth > 0 => depth -= 1,
            _ if depth == 0 && " ({,=!&|;".contains(c) => {
                start = i + c.len_utf8();
                break;
            }
            _ => {}
        }
    }
    &line[start..at]
}

/// The places in `line` where an error's text is matched against a literal.
fn text_decisions(line: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for pattern in MATCHES {
        for (at, _) in line.match_indices(pattern) {
            let on = receiver(line, at).to_ascii_lowercase();
            if ERROR_WORDS.iter().any(|w| on.contains(w)) || line.contains("Error::") {
                found.push(at);
            }
        }
    }
    found
}

/// The part of a source file that is not a test: everything before its `#[cfg(test)]`
/// module.
fn non_test_part(text: &str) -> &str {
    text.find("\n#[cfg(test)]").map_or(text, |i| &text[..i])
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && path.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_decision_is_made_on_an_errors_text() {
    let root = workspace_root();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("reading crates/") {
        let src = krate.expect("a crate").path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    files.sort();
    let mut offenders = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        for (n, line) in non_test_part(&text).lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for at in text_decisions(line) {
                let quoted: String = line[at - receiver(line, at).len()..].chars().take(80).collect();
                offenders.push(format!("{}:{}: {quoted}", path.strip_prefix(&root).unwrap_or(path).display(), n + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "decisions made on an error's text; give the error a variant and match on it:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_scan_tells_error_text_from_other_text() {
    assert_eq!(text_decisions(r#"let full = error.contains("no free extent");"#).len(), 1);
    assert_eq!(text_decisions(r#"if e.to_string().starts_with("disk") {"#).len(), 1);
    assert_eq!(text_decisions(r#"matches!(&e, Error::Corrupt(m) if m.contains("slot"))"#).len(), 1);
    assert!(text_decisions(r#"let ended = stat.contains(") Z ");"#).is_empty());
    assert!(text_decisions(r#"l.starts_with("MemAvailable:")"#).is_empty());
    assert_eq!(non_test_part("fn a() {}\n#[cfg(test)]\nmod tests {}"), "fn a() {}");
}
