//! Each experiment of IPA Table 2 and Fig. 6 and of the IPL paper at `Scale::Smoke`:
//! every run completes, every reference cell gets a value of ours, the report states
//! the experiment's notes and each run's conditions, and a figure writes its SVG with
//! one marker per paper value.

use reproduce::catalogue;
use reproduce::Scale;
use reproduce::{reproduce, Options};

/// Runs `id` at smoke scale into a temporary directory; returns the Markdown report and
/// the SVG, if one was written.
fn smoke(id: &str) -> (String, Option<String>) {
    let e = catalogue::find(id).expect("listed");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let options = Options { scale: Scale::Smoke, jobs: 2, out: out.clone(), overwrite: false };
    let outcome = reproduce(&[e], &options, &|_| {}).expect("the invocation completes");
    assert_eq!(outcome.failed, 0, "{id}: a run failed");
    assert!(!outcome.cells.is_empty(), "{id} has reference cells");
    let missing: Vec<_> =
        outcome.cells.iter().filter(|c| c.ours.is_none()).map(|c| format!("{} / {}", c.row, c.column)).collect();
    assert!(missing.is_empty(), "{id}: cells without our value: {missing:?}");
    let md = std::fs::read_to_string(out.join(format!("{}.md", e.file_stem()))).unwrap();
    let notes = (e.implementation.as_ref().unwrap().notes)(Scale::Smoke);
    assert!(!notes.is_empty(), "{id} states its conditions");
    for note in &notes {
        assert!(md.contains(note.as_str()), "{id}: the report lacks the note {note}");
    }
    assert!(md.contains("| run | conditions | file | wall s |"), "{md}");
    let svg = std::fs::read_to_string(out.join(format!("{}.svg", e.file_stem()))).ok();
    if let Some(svg) = &svg {
        let markers = svg.matches(r#"class="paper-point""#).count();
        assert_eq!(markers, outcome.cells.len(), "{id}: one marker per paper value");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
    }
    (md, svg)
}

/// Every cell row of `id`'s Markdown report names each of `variants` that changes a
/// run at smoke scale in its ablation column, and none names a variant that changes none
/// (it would only repeat the headline's values).
fn ablation_names(id: &str, md: &str, variants: &[&str]) {
    let e = catalogue::find(id).expect("listed");
    let applied: Vec<&str> =
        e.implementation.as_ref().unwrap().variants_at(Scale::Smoke).iter().map(|v| v.name).collect();
    assert!(variants.iter().any(|v| applied.contains(v)), "{id}: some variant changes a smoke run");
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("| count |") || l.contains("| times |")).collect();
    assert!(!rows.is_empty(), "{md}");
    for row in rows {
        for v in variants {
            let named = row.contains(&format!("{v}: "));
            assert_eq!(named, applied.contains(v), "{id}: the ablation and {v}: {row}");
        }
    }
}

#[test]
fn ipl_table3_smoke() {
    let (md, svg) = smoke("ipl:table3");
    assert!(md.contains("| IPL B+-tree | ipl on native"), "{md}");
    assert!(svg.is_none(), "a table without a numeric axis has no figure");
    ablation_names("ipl:table3", &md, &["buffer 50%", "buffer 150%"]);
}

#[test]
fn ipl_table4_smoke() {
    let (md, _) = smoke("ipl:table4");
    ablation_names("ipl:table4", &md, &["buffer 50%", "buffer 150%"]);
}

#[test]
fn ipl_fig6_smoke() {
    let (md, svg) = smoke("ipl:fig6");
    ablation_names("ipl:fig6", &md, &["buffer axis 50%", "buffer axis 150%", "log blocks, other reading"]);
    let svg = svg.expect("a figure writes its SVG");
    assert!(svg.contains(">buffer frames</text>") && svg.contains("B+-tree on BAST, 16 (11%) log blocks"), "{svg}");
}

#[test]
fn ipa_table2_smoke() {
    let (md, _) = smoke("ipa:table2");
    ablation_names("ipa:table2", &md, &["net change at the write", "device 150%"]);
}

#[test]
fn ipa_fig6_smoke() {
    let (_, svg) = smoke("ipa:fig6");
    let svg = svg.expect("a figure writes its SVG");
    assert!(svg.contains(">[2x100]</text>") && svg.contains(">host writes as in-place appends (%)</text>"), "{svg}");
}
