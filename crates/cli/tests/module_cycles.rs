//! No import cycles between the top-level modules of any crate: each module's code
//! (comments and `#[cfg(test)]` parts aside) may name `crate::m` only for modules `m`
//! below it, so every crate reads bottom-up. A module's children (`db/txn.rs` under
//! `db`) count as the module itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src` belongs to (`""` for lib.rs and main.rs).
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let first = rel.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
    match first.strip_suffix(".rs") {
        Some("lib" | "main") => String::new(),
        Some(name) => name.to_string(),
        None => first,
    }
}

/// The code of a file without comment lines and without its `#[cfg(test)] mod …`
/// (test modules sit at the end of a file).
fn code(text: &str) -> String {
    let test_module = text
        .match_indices("#[cfg(test)]")
        .find(|(at, attr)| {
            let rest = text[at + attr.len()..].trim_start();
            ["mod ", "pub mod ", "pub(crate) mod "].iter().any(|m| rest.starts_with(m))
        })
        .map_or(text.len(), |(at, _)| at);
    text[..test_module].lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The identifiers following each `prefix` in `code`.
fn names_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    code.match_indices(prefix)
        .filter(|(at, _)| !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .filter_map(|(at, _)| {
            let rest = &code[at + prefix.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
        .collect()
}

/// Edges between the top-level modules of the crate at `src`.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| top_module(src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let from = top_module(src, file);
        let code = code(&fs::read_to_string(file).unwrap());
        let is_top_file = file.parent() == Some(src);
        let mut targets: Vec<&str> = names_after(&code, "crate::");
        // `super::x` in a top-level file names a sibling module.
        if is_top_file {
            targets.extend(names_after(&code, "super::"));
        }
        for to in targets {
            if to != from && modules.contains(to) && !from.is_empty() {
                graph.entry(from.clone()).or_default().insert(to.to_string());
            }
        }
    }
    graph
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn no_crate_has_a_module_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for entry in fs::read_dir(&crates).unwrap().flatten() {
        let src = entry.path().join("src");
        if src.is_dir() {
            for cycle in cycles(&module_graph(&src)) {
                found.push(format!("{}: {}", entry.file_name().to_string_lossy(), cycle.join(" <-> ")));
            }
        }
    }
    found.sort();
    assert!(found.is_empty(), "module cycles (move the shared items down to a module both use):\n{}", found.join("\n"));
}

#[test]
fn a_cycle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
        ("d".to_string(), BTreeSet::from(["a".to_string()])),
    ]
    .into();
    assert_eq!(cycles(&graph), vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]);
}

#[test]
fn imports_are_read_from_code_only() {
    let text = "//! see [`crate::x`]\nuse crate::y::Z;\nlet a = my_crate::w;\n#[cfg(test)]\nfn f() { crate::v::g() }\n\
                #[cfg(test)]\nmod tests { use crate::t; }";
    assert_eq!(names_after(&code(text), "crate::"), vec!["y", "v"]);
}
