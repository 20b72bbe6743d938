//! `--publish DIR`: an invocation's summary, reports and figures copied from the output
//! directory into `DIR` (`docs/results`), and the results page written beside it as
//! `DIR.md` (`docs/results.md`) with its links into `DIR`. The page's prose per paper
//! comes from the hand-written `DIR/prose.md` (see [`crate::results_page::prose_for`]);
//! every number comes from the invocation.
//!
//! The tool never replaces a file it did not write: `DIR/.deltaflash-published` lists
//! the files it wrote there, and `DIR.md` is replaced only if it is a generated page
//! ([`results_page::GENERATED`]), unless the caller allows overwriting.

use crate::experiment::{Experiment, Scale};
use crate::report::Outcome;
use crate::results_page;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The list of files the tool wrote into a publish directory, one name a line.
pub const MANIFEST: &str = ".deltaflash-published";
/// The hand-written prose per paper, in the publish directory.
pub const PROSE: &str = "prose.md";

/// Copies the invocation's files from `out` into `dir` and writes `DIR.md`; returns
/// the page's path.
pub fn publish(
    experiments: &[&Experiment],
    scale: Scale,
    outcome: &Outcome,
    out: &Path,
    dir: &Path,
    overwrite: bool,
) -> Result<PathBuf, String> {
    let shown = dir.display();
    let name =
        dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| format!("--publish {shown}: no directory name"))?;
    let page = dir.with_file_name(format!("{name}.md"));
    let mut files = vec!["summary.json".to_string()];
    for e in experiments {
        let stem = e.file_stem();
        files.extend([format!("{stem}.md"), format!("{stem}.json")]);
        if outcome.figures.iter().any(|f| f == e.id) {
            files.push(format!("{stem}.svg"));
        }
    }
    let mut written = written_before(dir)?;
    if !overwrite {
        if let Some(foreign) = files.iter().find(|f| dir.join(f).exists() && !written.contains(*f)) {
            return Err(format!(
                "--publish {shown}: {foreign} exists and was not written by reproduce; pass --overwrite to replace it"
            ));
        }
        let generated = fs::read_to_string(&page).map_or(true, |t| t.starts_with(results_page::GENERATED));
        if page.exists() && !generated {
            return Err(format!(
                "--publish {shown}: {} exists and is not a generated results page; pass --overwrite to replace it",
                page.display()
            ));
        }
    }
    fs::create_dir_all(dir).map_err(|e| format!("--publish {shown}: {e}"))?;
    check_apart(out, dir)?;
    let runs = runs_within(out, dir);
    for f in &files {
        let (from, to) = (out.join(f), dir.join(f));
        match &runs {
            Some(prefix) if f.ends_with(".md") => {
                let text = fs::read_to_string(&from).map_err(|e| format!("{}: {e}", from.display()))?;
                fs::write(&to, link_runs(&text, prefix, dir)).map_err(|e| format!("{}: {e}", to.display()))?;
            }
            _ => {
                fs::copy(&from, &to).map_err(|e| format!("{}: {e}", from.display()))?;
            }
        }
        written.insert(f.clone());
    }
    let manifest: String = written.iter().map(|f| format!("{f}\n")).collect();
    fs::write(dir.join(MANIFEST), manifest).map_err(|e| format!("{}: {e}", dir.join(MANIFEST).display()))?;
    let prose = match fs::read_to_string(dir.join(PROSE)) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", dir.join(PROSE).display())),
    };
    let text = results_page::markdown(experiments, scale, outcome, &format!("{name}/"), prose.as_deref());
    fs::write(&page, text).map_err(|e| format!("{}: {e}", page.display()))?;
    Ok(page)
}

/// Refuses to publish into the output directory itself (its files would be copied onto
/// themselves); the command line asks before any run is made.
pub fn check_apart(out: &Path, dir: &Path) -> Result<(), String> {
    let same = match (out.canonicalize(), dir.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => std::path::absolute(out).ok() == std::path::absolute(dir).ok(),
    };
    if same {
        return Err(format!(
            "--publish {}: is the output directory itself; publish into another (docs/results)",
            dir.display()
        ));
    }
    Ok(())
}

/// The path from `dir` to the output directory `out` (`full/`), when `out` lies inside
/// `dir`: then its kept runs are published with the reports (docs/results/full/runs),
/// and the reports link to them.
fn runs_within(out: &Path, dir: &Path) -> Option<String> {
    let (out, dir) = (out.canonicalize().ok()?, dir.canonicalize().ok()?);
    let inside = out.strip_prefix(&dir).ok()?.to_str()?;
    Some(format!("{inside}/"))
}

/// A report with each run's file (`| runs/KEY.json |`, the runs table's file column)
/// made a link through `prefix` where that file exists under `dir`.
fn link_runs(report: &str, prefix: &str, dir: &Path) -> String {
    let mut linked = String::with_capacity(report.len());
    for line in report.split_inclusive('\n') {
        let file = line.find("| runs/").and_then(|at| {
            let from = at + 2;
            line[from..].find(" |").map(|len| from..from + len)
        });
        match file {
            Some(span) if dir.join(prefix).join(&line[span.clone()]).is_file() => {
                let name = &line[span.clone()];
                linked += &format!("{}[{name}]({prefix}{name}){}", &line[..span.start], &line[span.end..]);
            }
            _ => linked += line,
        }
    }
    linked
}

/// The files an earlier publish wrote into `dir`.
fn written_before(dir: &Path) -> Result<BTreeSet<String>, String> {
    match fs::read_to_string(dir.join(MANIFEST)) {
        Ok(text) => Ok(text.lines().filter(|l| !l.is_empty()).map(String::from).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(e) => Err(format!("{}: {e}", dir.join(MANIFEST).display())),
    }
}
