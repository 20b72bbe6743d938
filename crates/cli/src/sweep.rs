//! `deltaflash sweep --grid GRID.toml`: the Cartesian product of a parameter grid, each
//! point an independent seeded experiment (`workloads::Experiment`), run on `--jobs`
//! threads of this machine; with `--ray ADDRESS`, the Python package runs the same grid
//! as Ray tasks (`python3 -m deltaflash sweep`), since Ray's scheduler is Python's.
//!
//! A grid file has `[base]`, an experiment config as `bench --config` reads it (every
//! field optional), and `[grid]`, dotted config fields with the list of values each
//! takes (`"engine.buffer_share" = [0.1, 0.2]`). Every point is checked before anything
//! runs; an error names the file, the point and the field. A grid of more than 10,000
//! points runs only with `--yes` (`workloads::limits::check_grid_points`).
//!
//! Results go to a JSON-lines file as each point finishes, one line per point
//! (`{"point": {...}, "result": {...}}` or `{"point": {...}, "error": "..."}`), the
//! format the Python package's `sweep` writes; a sweep whose file already holds a point's
//! result skips it, so an interrupted sweep (Ctrl-C, kill) resumes where it stopped. A
//! line cut by a kill is ignored and its point runs again. There are no retries here: a
//! local run is deterministic and would fail the same way again.

use crate::table::{print_table, Row};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use workloads::limits::{self, cut_quoted, quote};
use workloads::{Control, Experiment, ExperimentConfig, ExperimentResult};

#[derive(Args)]
pub struct SweepArgs {
    /// Grid file (TOML): `[base]`, the experiment config every point starts from, and
    /// `[grid]`, dotted config fields and their values ("engine.ipa" = ["0x0", "2x3"]).
    #[arg(long, value_name = "FILE")]
    grid: PathBuf,
    /// JSON-lines results file, appended to as points finish; points it already holds
    /// are skipped (resume) [default: GRID.results.jsonl].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Points run at once, on threads of this machine [default: the cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024), conflicts_with = "ray")]
    jobs: Option<u32>,
    /// Run the points as Ray tasks through the Python package (`python3 -m deltaflash
    /// sweep`; `pip install ./python[ray]`): `local` starts Ray on this machine, `auto`
    /// or HOST:PORT joins a cluster. $DELTAFLASH_PYTHON names another interpreter.
    #[arg(long, value_name = "ADDRESS")]
    ray: Option<String>,
    /// Run a grid of more than 10,000 points (each is a whole experiment).
    #[arg(long)]
    yes: bool,
}

/// One point: the grid's fields and values, and its resolved experiment.
struct Point {
    fields: Map<String, Value>,
    experiment: Experiment,
}

/// The point's identity in the results file: its fields as compact JSON, keys sorted
/// (the same text as Python's `json.dumps(point, sort_keys=True, separators=(",", ":"))`).
fn key(fields: &Map<String, Value>) -> String {
    let sorted: std::collections::BTreeMap<&String, &Value> = fields.iter().collect();
    serde_json::to_string(&sorted).unwrap_or_default()
}

/// Sets a dotted field of a JSON config, creating the tables on the way.
fn set(config: &mut Value, dotted: &str, value: Value) -> Result<(), String> {
    let mut node = config;
    let mut names = dotted.split('.').peekable();
    while let Some(name) = names.next() {
        let Value::Object(table) = node else {
            return Err(format!("{}: the config has no table above {}", quote(dotted), quote(name)));
        };
        if names.peek().is_none() {
            table.insert(name.to_string(), value);
            return Ok(());
        }
        node = table.entry(name).or_insert_with(|| Value::Object(Map::new()));
    }
    Err(format!("{} is not a config field", quote(dotted)))
}

/// A grid field and the values it takes.
type Axis = (String, Vec<Value>);

/// The grid file's base config and grid, as JSON.
fn read_grid(path: &Path) -> Result<(Value, Vec<Axis>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), cut_quoted(e.message().trim())))?;
    if let Some(other) = doc.keys().find(|k| *k != "base" && *k != "grid") {
        return Err(format!("{}: {}: a grid file has only [base] and [grid]", path.display(), quote(other)));
    }
    let base = match doc.get("base") {
        Some(b) => serde_json::to_value(b).map_err(|e| format!("{}: [base]: {e}", path.display()))?,
        None => Value::Object(Map::new()),
    };
    let Some(toml::Value::Table(grid)) = doc.get("grid") else {
        return Err(format!("{}: no [grid] table (dotted config fields and their values)", path.display()));
    };
    let mut axes = Vec::new();
    for (field, values) in grid {
        let values = match serde_json::to_value(values) {
            Ok(Value::Array(v)) if !v.is_empty() => v,
            _ => {
                return Err(format!("{}: [grid] {}: must be a non-empty list of values", path.display(), quote(field)))
            }
        };
        axes.push((field.clone(), values));
    }
    if axes.is_empty() {
        return Err(format!("{}: [grid] names no field", path.display()));
    }
    Ok((base, axes))
}

/// Every combination of the axes' values, the first axis varying slowest.
fn combinations(axes: &[Axis]) -> Vec<Map<String, Value>> {
    let mut points = vec![Map::new()];
    for (field, values) in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut p = p.clone();
                    p.insert(field.clone(), v.clone());
                    p
                })
            })
            .collect();
    }
    points
}

/// The grid's points, each checked; more than 10,000 only when `confirmed`.
fn points(path: &Path, confirmed: bool) -> Result<Vec<Point>, String> {
    let (base, axes) = read_grid(path)?;
    let count = axes.iter().try_fold(1u64, |n, (_, values)| n.checked_mul(values.len() as u64));
    limits::check_grid_points(count, confirmed, "--yes").map_err(|e| format!("{}: {e}", path.display()))?;
    combinations(&axes)
        .into_iter()
        .map(|fields| {
            let at = |e: String| format!("{}: point {}: {e}", path.display(), quote(&key(&fields)));
            let mut config = base.clone();
            for (field, value) in &fields {
                set(&mut config, field, value.clone()).map_err(at)?;
            }
            let config: ExperimentConfig =
                serde_json::from_value(config).map_err(|e| at(cut_quoted(&e.to_string())))?;
            let experiment = Experiment::new(config).map_err(|e| at(e.to_string()))?;
            Ok(Point { fields, experiment })
        })
        .collect()
}

/// The keys of the points a results file holds a result for.
fn finished(path: &Path) -> Result<HashSet<String>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut done = HashSet::new();
    let mut entries = 0;
    for (number, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let parsed = serde_json::from_str::<Value>(line);
        entries += usize::from(parsed.as_ref().is_ok_and(|entry| entry.get("point").is_some()));
        match parsed {
            Ok(entry) if entry.get("result").is_some() => {
                if let Some(Value::Object(point)) = entry.get("point") {
                    done.insert(key(point));
                }
            }
            Ok(_) => {}
            Err(_) => eprintln!("{}:{}: skipping an incomplete line", path.display(), number + 1),
        }
    }
    // Results are appended: a file of the user's that holds none is not written to.
    let only_a_cut_line = text.starts_with("{\"") && text.lines().count() == 1;
    if entries == 0 && !text.trim().is_empty() && !only_a_cut_line {
        return Err(format!(
            "{}: not a sweep results file (no line holds a point's result); it is left as it is: choose another --out",
            path.display()
        ));
    }
    Ok(done)
}

/// Whether the file's last line has no newline (a write cut by a kill).
fn ends_cut(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.last().is_some_and(|&b| b != b'\n'))
}

/// A point's line in the results file.
fn line(fields: &Map<String, Value>, outcome: &Result<ExperimentResult, String>) -> String {
    let entry = match outcome {
        Ok(r) => {
            let mut result = r.to_json();
            result["table_rows"] = json!(r.table_rows());
            json!({ "point": fields, "result": result })
        }
        Err(e) => json!({ "point": fields, "error": e }),
    };
    entry.to_string()
}

/// `--ray`: the Python package runs the grid.
fn on_ray(args: &SweepArgs, address: &str, out: &Path) -> Result<bool, String> {
    let python = std::env::var("DELTAFLASH_PYTHON").unwrap_or_else(|_| "python3".into());
    let status = std::process::Command::new(&python)
        .args(["-m", "deltaflash", "sweep", "--grid"])
        .arg(&args.grid)
        .arg("--out")
        .arg(out)
        .args(["--ray", address])
        .status()
        .map_err(|e| format!("--ray runs `{python} -m deltaflash sweep` (pip install ./python[ray]): {e}"))?;
    Ok(status.success())
}

pub fn run(args: SweepArgs) -> Result<bool, String> {
    let out = args.out.clone().unwrap_or_else(|| args.grid.with_extension("results.jsonl"));
    if let Some(address) = &args.ray {
        return on_ray(&args, address, &out);
    }
    let points = points(&args.grid, args.yes)?;
    let done = finished(&out)?;
    let todo: Vec<usize> = (0..points.len()).filter(|&i| !done.contains(&key(&points[i].fields))).collect();
    let jobs = crate::bench::jobs(args.jobs);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out)
        .map_err(|e| format!("{}: {e}", out.display()))?;
    if ends_cut(&out) {
        // End a last line cut by a kill, so the next result starts a line of its own.
        writeln!(file).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let bar = ProgressBar::new(points.len() as u64);
    bar.set_style(ProgressStyle::with_template("sweep [{bar:30}] {pos}/{len} points {msg}").expect("valid template"));
    bar.set_position((points.len() - todo.len()) as u64);
    eprintln!(
        "{} points, {} done in {}, {} to run on {jobs} threads",
        points.len(),
        points.len() - todo.len(),
        out.display(),
        todo.len()
    );
    let mut outcomes = vec![None; points.len()];
    let next = AtomicUsize::new(0);
    let (send, receive) = mpsc::channel();
    let written = std::thread::scope(|scope| {
        for _ in 0..jobs.min(todo.len()) {
            let send = send.clone();
            let (todo, next, points) = (&todo, &next, &points);
            scope.spawn(move || {
                while let Some(&i) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let outcome = points[i].experiment.run(&mut |_| Control::Continue).map_err(|e| e.to_string());
                    if send.send((i, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(send);
        for (i, outcome) in receive {
            let point = &points[i];
            // One write per line, so a kill leaves at most the last line cut.
            writeln!(file, "{}", line(&point.fields, &outcome)).map_err(|e| format!("{}: {e}", out.display()))?;
            if let Err(e) = &outcome {
                bar.suspend(|| eprintln!("point {}: {e}", quote(&key(&point.fields))));
            }
            outcomes[i] = Some(outcome);
            bar.inc(1);
        }
        Ok::<(), String>(())
    });
    bar.finish_and_clear();
    written?;
    let axes: Vec<String> = points.first().map(|p| p.fields.keys().cloned().collect()).unwrap_or_default();
    let mut rows = vec![Row::new(
        axes.iter().cloned().chain(["tps", "GC erases", "device WA", "outcome"].map(String::from)).collect(),
    )];
    let mut ok = true;
    for (point, outcome) in points.iter().zip(&outcomes) {
        let mut cells: Vec<String> = axes.iter().map(|a| point.fields[a].to_string()).collect();
        match outcome {
            Some(Ok(r)) => cells.extend([
                format!("{:.1}", r.metrics.throughput_tps),
                r.metrics.gc_erases.to_string(),
                format!("{:.3}", r.metrics.write_amplification),
                "ran".into(),
            ]),
            Some(Err(_)) => {
                ok = false;
                cells.extend(["–", "–", "–", "FAILED"].map(String::from));
            }
            None => cells.extend(["–", "–", "–", "done before"].map(String::from)),
        }
        rows.push(Row::new(cells));
    }
    print_table(&rows);
    println!("results: {}", out.display());
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("grid.toml");
        std::fs::write(&path, text).expect("write grid");
        (dir, path)
    }

    #[test]
    fn points_are_the_product_and_set_dotted_fields() {
        let (_dir, path) = grid(
            "[base]\nseed = 4\n[base.workload]\nname = \"tpcc\"\n\
             [grid]\n\"engine.ipa\" = [\"0x0\", \"2x3\"]\n\"workload.warehouses\" = [1, 2, 3]\n",
        );
        let points = points(&path, false).expect("points");
        assert_eq!(points.len(), 6);
        let keys: Vec<String> = points.iter().map(|p| key(&p.fields)).collect();
        assert_eq!(keys[0], r#"{"engine.ipa":"0x0","workload.warehouses":1}"#);
        assert_eq!(keys[5], r#"{"engine.ipa":"2x3","workload.warehouses":3}"#);
        let c = points[5].experiment.config();
        assert_eq!((c.seed, c.engine.ipa.as_str(), c.workload.name.as_str()), (4, "2x3", "tpcc"));
        assert_eq!(c.workload.params["warehouses"], json!(3));
    }

    #[test]
    fn bad_grids_name_file_point_and_field() {
        let (_d, path) = grid("[grid]\n\"engine.buffer_share\" = [0.1, 3.0]\n");
        let e = points(&path, false).err().expect("refused");
        assert!(e.contains(r#"point `{"engine.buffer_share":3.0}`: engine.buffer_share"#), "{e}");
        let (_d, path) = grid("[grid]\n\"engine.bufer\" = [0.1]\n");
        assert!(points(&path, false).err().expect("refused").contains("bufer"));
        let (_d, path) = grid("[grid]\nseed = 3\n");
        assert!(points(&path, false).err().expect("refused").contains("`seed`: must be a non-empty list"));
        let (_d, path) = grid("[base]\nseed = 1\n");
        assert!(points(&path, false).err().expect("refused").contains("no [grid]"));
        let (_d, path) = grid("[base]\nseed = 1\n[grid]\n\"seed.x\" = [1]\n");
        assert!(points(&path, false).err().expect("refused").contains("no table above `x`"));
    }

    #[test]
    fn grids_over_ten_thousand_points_need_yes() {
        // 1,000,000 points: refused before one is built.
        let values: Vec<String> = (1..=1000).map(|s| s.to_string()).collect();
        let axis = values.join(", ");
        let (_d, path) = grid(&format!("[grid]\nseed = [{axis}]\n\"engine.v\" = [{axis}]\n"));
        let e = points(&path, false).err().expect("refused");
        assert!(e.contains("the grid has 1000000 points, more than 10000") && e.contains("pass --yes"), "{e}");
        let (_d, path) =
            grid(&format!("[grid]\nseed = [{}]\n", (1..=10_000).map(|s| s.to_string()).collect::<Vec<_>>().join(",")));
        assert_eq!(points(&path, false).map(|p| p.len()).ok(), Some(10_000), "10,000 points need no --yes");
        let (_d, path) =
            grid(&format!("[grid]\nseed = [{}]\n", (1..=10_001).map(|s| s.to_string()).collect::<Vec<_>>().join(",")));
        assert!(points(&path, false).is_err());
        assert_eq!(points(&path, true).map(|p| p.len()).ok(), Some(10_001));
    }

    #[test]
    fn grid_errors_quote_at_most_80_characters_of_a_value() {
        let long = "x".repeat(10 << 20);
        for text in [
            format!("[base.device]\npreset = \"{long}\"\n[grid]\nseed = [1]\n"),
            format!("[grid]\n\"device.preset\" = [\"{long}\"]\n"),
            format!("[grid]\n\"device.chips\" = [\"{long}\"]\n"),
            format!("[grid]\n\"{long}\" = [1]\n"),
            format!("[{long}]\n"),
        ] {
            let (_d, path) = grid(&text);
            let e = points(&path, false).err().expect("refused");
            assert!(e.len() < 600 && !e.contains(&"x".repeat(81)), "{} bytes: {}", e.len(), &e[..e.len().min(300)]);
        }
    }

    #[test]
    fn finished_reads_results_and_skips_errors_and_cut_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.jsonl");
        assert!(finished(&path).expect("no file").is_empty());
        std::fs::write(
            &path,
            "{\"point\":{\"seed\":1},\"result\":{}}\n{\"point\":{\"seed\":2},\"error\":\"x\"}\n{\"point\":{\"se",
        )
        .expect("write");
        let done = finished(&path).expect("read");
        assert_eq!(done, HashSet::from([r#"{"seed":1}"#.to_string()]));
        assert!(ends_cut(&path));
    }
}
