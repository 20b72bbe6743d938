//! The repository describes the product as it is: no tracked doc, source, script or
//! build file names the work session or the tracker entry a change came from (the
//! word for one, then a number). What changed and when lives in git.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The words that, followed by a number, date a text instead of describing the product.
const DIARY_WORDS: [&str; 2] = ["session", "issue"];

/// Which tracked files are checked: by extension, and the Makefile.
fn is_checked(path: &str) -> bool {
    const EXTENSIONS: [&str; 7] = [".md", ".rs", ".sh", ".py", ".toml", ".mjs", ".js"];
    path == "Makefile" || path.ends_with("/Makefile") || EXTENSIONS.iter().any(|e| path.ends_with(e))
}

/// The byte offsets in `line` where a diary word followed by a number starts:
/// "<word> 12", "<word>s 12", "<word>-12", "<word> #12", in any case, the word not
/// the tail of a longer one.
fn diary_mentions(line: &str) -> Vec<usize> {
    let lower = line.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut found = Vec::new();
    for word in DIARY_WORDS {
        for (start, _) in lower.match_indices(word) {
            if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
                continue;
            }
            let mut i = start + word.len();
            if bytes.get(i) == Some(&b's') {
                i += 1;
            }
            if !matches!(bytes.get(i), Some(b' ' | b'-' | b'#')) {
                continue;
            }
            i += 1;
            if bytes.get(i) == Some(&b'#') {
                i += 1;
            }
            if bytes.get(i).is_some_and(u8::is_ascii_digit) {
                found.push(start);
            }
        }
    }
    found
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tracked_files(root: &Path) -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .expect("running `git ls-files` in the workspace root");
    assert!(out.status.success(), "`git ls-files` failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()).map(|p| String::from_utf8_lossy(p).into_owned()).collect()
}

/// At most 80 characters of `line` from `at`, for the failure message.
fn excerpt(line: &str, at: usize) -> String {
    line[at..].chars().take(80).collect()
}

#[test]
fn no_tracked_file_names_a_session_or_an_issue_number() {
    let root = workspace_root();
    let mut offenders = Vec::new();
    for path in tracked_files(&root).into_iter().filter(|p| is_checked(p)) {
        let Ok(text) = std::fs::read_to_string(root.join(&path)) else { continue };
        for (n, line) in text.lines().enumerate() {
            for at in diary_mentions(line) {
                offenders.push(format!("{path}:{}: {}", n + 1, excerpt(line, at)));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "{} place(s) date the text by a work session or tracker number; describe the product \
         instead (history lives in git):\n{}",
        offenders.len(),
        offenders.join("\n")
    );
}

#[test]
fn the_matcher_finds_each_form_and_leaves_plain_words_alone() {
    let (s, i) = (DIARY_WORDS[0], DIARY_WORDS[1]);
    for dated in [
        format!("{s} 27"),
        format!("in {s}s 31 and 32"),
        format!("{i}-21 section"),
        format!("({} 4)", i.to_uppercase()),
        format!("see {i} #5"),
        format!("{i}s 3 and 4"),
    ] {
        assert_eq!(diary_mentions(&dated).len(), 1, "{dated}");
    }
    for plain in [
        format!("end a mount {s}: unmount"),
        format!("a read-only {s} (also on a chmod 444 file)"),
        format!("tissue {}", 5),
        format!("the {i} tracker"),
        format!("{s}_27"),
    ] {
        assert!(diary_mentions(&plain).is_empty(), "{plain}");
    }
}
