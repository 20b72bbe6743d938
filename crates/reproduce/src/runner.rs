//! One `reproduce` invocation: plan the runs of the chosen experiments, reuse the ones
//! the output directory keeps, run the others (`jobs` at once, each single-threaded and
//! seeded, fewer when their estimated memory does not fit together:
//! [`crate::memory_gate`]), then compare and write the reports.
//!
//! Each run's CPU seconds come with its result ([`crate::input`]); the reports give
//! them per run and per experiment, and `results.md` ([`crate::results_page`]) every
//! experiment of the invocation per paper.
//!
//! Runs are keyed by their input and the model version, so two experiments that need the
//! same run share it, a second invocation re-executes nothing that finished, and a run
//! kept by an older model is made again (stale, [`crate::store`]). Before anything
//! starts, each run not kept is estimated ([`crate::cost`]) and one that cannot be made
//! on this machine is refused with the numbers; [`plan`] gives the same list without
//! running (`reproduce --plan`). A run may be of any kind ([`crate::input`]); the runner
//! only checks, executes and keeps it.

use crate::ablation;
use crate::compare::{self, Cell, Missing};
use crate::cost::{self, Estimate};
use crate::experiment::{Experiment, RunSpec, Scale};
use crate::memory_gate::MemoryGate;
use crate::ray::{self, Ray};
use crate::reference::{self, ReferenceCell};
pub use crate::report::Outcome;
use crate::report::{self, Cost, RunRecord, NOT_MADE};
use crate::results_page;
use crate::store::Store;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What to run and where.
#[derive(Clone, Debug)]
pub struct Options {
    pub scale: Scale,
    /// Runs at once.
    pub jobs: usize,
    pub out: PathBuf,
    /// Write into an existing directory that is not a reproduce output directory.
    pub overwrite: bool,
}

/// A run to make (or reuse), shared by the experiments that need it.
struct Planned {
    spec: RunSpec,
    /// The id and run label of the first experiment that needs it, for progress lines.
    name: String,
    /// That experiment's id.
    experiment: &'static str,
    key: String,
    /// Whether some experiment needs it among its headline runs (not only for an
    /// ablation variant).
    headline: bool,
    /// Its estimated cost and size, computed once ([`cost::estimate`]).
    estimate: Estimate,
}

/// A run's result, or why it failed.
type RunResult = Result<Value, String>;

/// Runs `experiments` and writes their reports and `summary.json` under `options.out`.
/// `log` gets one progress line at a time (the caller prints it on stderr).
pub fn reproduce(
    experiments: &[&Experiment],
    options: &Options,
    log: &(dyn Fn(String) + Sync),
) -> Result<Outcome, String> {
    reproduce_on(experiments, options, Make::Here, log)
}

/// Where the runs an output directory does not keep are made.
#[derive(Clone, Copy)]
pub enum Make<'a> {
    /// On `options.jobs` threads of this process.
    Here,
    /// As Ray tasks (see [`crate::ray`]).
    Ray(&'a Ray),
    /// Nowhere: the reports compare what is kept, and say which cells wait for runs not
    /// made yet (how far a long `--full` invocation has come).
    Nothing,
}

/// [`reproduce`], the runs not kept made where `make` says.
pub fn reproduce_on(
    experiments: &[&Experiment],
    options: &Options,
    make: Make,
    log: &(dyn Fn(String) + Sync),
) -> Result<Outcome, String> {
    let reference = reference::load()?;
    let store = Store::open(&options.out, options.overwrite)?;
    let (planned, plans) = distinct_runs(experiments, options.scale);
    let states = states(&store, &planned, workloads::limits::available_memory_bytes());
    let stale = states.iter().filter(|s| matches!(s, State::ToMake { stale: true })).count();
    if stale > 0 {
        let then = if matches!(make, Make::Nothing) { "not reused" } else { "made again" };
        log(format!("{stale} runs kept in {} were made by an older model version: {then}", store.dir().display()));
    }
    for (p, state) in planned.iter().zip(&states) {
        if let State::Refused(why) = state {
            log(format!("{}: {why}", p.name));
        }
    }
    let results = match make {
        Make::Ray(ray) => run_on_ray(&store, &planned, &states, ray, log),
        Make::Here => run_all(&store, &planned, &states, options.jobs, log),
        Make::Nothing => states.iter().map(|state| (kept_only(state), false)).collect(),
    };
    let executed = results.iter().filter(|r| matches!(r, (Ok(_), true))).count();
    let reused = results.iter().filter(|r| matches!(r, (Ok(_), false))).count();
    let not_made = results.iter().filter(|r| matches!(&r.0, Err(e) if e == NOT_MADE)).count();
    let failed = results.iter().filter(|r| r.0.is_err()).count() - not_made;
    let refused = states.iter().filter(|s| matches!(s, State::Refused(_))).count();
    let by_key: HashMap<&str, &RunResult> =
        planned.iter().map(|p| p.key.as_str()).zip(results.iter().map(|r| &r.0)).collect();
    let cpu_seconds = results.iter().filter_map(|r| r.0.as_ref().ok()).filter_map(cpu_of).sum();
    let mut all_cells = Vec::new();
    let (mut costs, mut figures) = (Vec::new(), Vec::new());
    for (e, specs) in experiments.iter().zip(&plans) {
        let (cells, cost, figure) = experiment(&store, e, options.scale, specs, &by_key, &reference)?;
        all_cells.extend(cells);
        costs.push(cost);
        if figure {
            figures.push(e.id.to_string());
        }
    }
    let outcome =
        Outcome { cells: all_cells, executed, reused, failed, not_made, stale, refused, costs, figures, cpu_seconds };
    let summary = report::summary_json(options.scale, &outcome.cells, &outcome.costs, cpu_seconds);
    store.write("summary.json", &(serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())? + "\n"))?;
    store.write(results_page::FILE, &results_page::markdown(experiments, options.scale, &outcome, "", None))?;
    Ok(outcome)
}

/// A run's result when nothing is made: kept, refused, or not made.
fn kept_only(state: &State) -> RunResult {
    match state {
        State::Kept(result) => Ok(result.clone()),
        State::Refused(why) => Err(why.clone()),
        State::ToMake { .. } => Err(NOT_MADE.to_string()),
    }
}

/// A result's recorded CPU seconds (absent from runs kept before they were recorded).
fn cpu_of(result: &Value) -> Option<f64> {
    result.get("cpu_seconds").and_then(Value::as_f64)
}

/// Where a planned run stands before anything runs.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    /// Kept in the output directory by the current model: reused.
    Kept(Value),
    /// To make; `stale` when the directory keeps it only from an older model version.
    ToMake { stale: bool },
    /// Cannot be made here: why, with the numbers ([`Estimate::refusal`]).
    Refused(String),
}

/// Each planned run's state, refusals judged against `available_bytes` of memory.
fn states(store: &Store, planned: &[Planned], available_bytes: Option<u64>) -> Vec<State> {
    planned
        .iter()
        .map(|p| match store.load(&p.spec.input) {
            Some(result) => State::Kept(result),
            None => match p.estimate.refusal(available_bytes) {
                Some(why) => State::Refused(why),
                None => State::ToMake { stale: store.stale(&p.spec.input) },
            },
        })
        .collect()
}

/// One run of a plan: the experiment and label that first need it, its key, its
/// estimate and its state.
#[derive(Clone, Debug)]
pub struct PlanRow {
    pub name: String,
    pub experiment: &'static str,
    pub key: String,
    pub estimate: Estimate,
    pub state: State,
}

/// The runs `reproduce` would make or reuse for `experiments`, deduplicated, in the
/// order it would take them, each with its estimate and state; nothing runs, nothing is
/// written (an `options.out` that does
/// not exist yet keeps nothing).
pub fn plan(experiments: &[&Experiment], options: &Options, available_bytes: Option<u64>) -> Vec<PlanRow> {
    let (planned, _) = distinct_runs(experiments, options.scale);
    let states = match Store::existing(&options.out) {
        Some(store) => states(&store, &planned, available_bytes),
        None => planned
            .iter()
            .map(|p| match p.estimate.refusal(available_bytes) {
                Some(why) => State::Refused(why),
                None => State::ToMake { stale: false },
            })
            .collect(),
    };
    execution_order(&planned, &states)
        .into_iter()
        .map(|i| {
            let p = &planned[i];
            PlanRow {
                estimate: p.estimate.clone(),
                name: p.name.clone(),
                experiment: p.experiment,
                key: p.key.clone(),
                state: states[i].clone(),
            }
        })
        .collect()
}

/// Every distinct run of the experiments (in first-need order), and per experiment
/// its runs with their keys.
fn distinct_runs(experiments: &[&Experiment], scale: Scale) -> (Vec<Planned>, Vec<Vec<(RunSpec, String)>>) {
    let mut planned: Vec<Planned> = Vec::new();
    let mut plans = Vec::new();
    for e in experiments {
        let (specs, headline_len) = match &e.implementation {
            Some(i) => {
                let headline = (i.runs)(scale);
                (ablation::runs(&headline, &i.variants_at(scale)), headline.len())
            }
            None => (Vec::new(), 0),
        };
        let mut keyed = Vec::new();
        for (n, spec) in specs.into_iter().enumerate() {
            let key = Store::key(&spec.input);
            let headline = n < headline_len;
            match planned.iter_mut().find(|p| p.key == key) {
                Some(p) => p.headline |= headline,
                None => planned.push(Planned {
                    estimate: cost::estimate(&spec.input),
                    spec: spec.clone(),
                    name: format!("{} {}", e.id, spec.label),
                    experiment: e.id,
                    key: key.clone(),
                    headline,
                }),
            }
            keyed.push((spec, key));
        }
        plans.push(keyed);
    }
    (planned, plans)
}

/// Each planned run's result and whether it was executed now (not reused, not
/// refused), in order.
fn run_all(
    store: &Store,
    planned: &[Planned],
    states: &[State],
    jobs: usize,
    log: &(dyn Fn(String) + Sync),
) -> Vec<(RunResult, bool)> {
    let total = planned.len();
    let order = execution_order(planned, states);
    let next = AtomicUsize::new(0);
    let gate = MemoryGate::new(workloads::limits::device_memory_limit_bytes(None));
    let left = Mutex::new(Left::new(planned, states));
    let done: Mutex<Vec<(usize, (RunResult, bool))>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, total.max(1)) {
            scope.spawn(|| loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(n) else { return };
                let p = &planned[i];
                let tag = format!("[{}/{total}] {}", n + 1, p.name);
                let outcome = match &states[i] {
                    State::Kept(result) => {
                        log(format!("{tag}: reused runs/{}.json", p.key));
                        (Ok(result.clone()), false)
                    }
                    State::Refused(why) => (Err(why.clone()), false),
                    State::ToMake { .. } => {
                        let _admission = gate.admit(p.estimate.peak_bytes, |held| {
                            log(format!(
                                "{tag}: waits for memory: about {:.1} GiB at its peak beside {:.1} GiB of the runs going on",
                                p.estimate.peak_bytes as f64 / cost::GIB,
                                held as f64 / cost::GIB
                            ))
                        });
                        let made = execute(store, p, &tag, log);
                        let taken = made.as_ref().ok().and_then(cpu_of);
                        log(left.lock().unwrap_or_else(|e| e.into_inner()).finish(p.estimate.cpu_seconds, taken, jobs));
                        (made, true)
                    }
                };
                done.lock().unwrap_or_else(|e| e.into_inner()).push((i, outcome));
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The runs of an invocation still to make and their estimated CPU seconds, for the
/// line that follows each made run: a `--full` invocation lasts hours. The estimates
/// are bounds ([`crate::cost`]), so the line also scales what is left by the CPU
/// seconds the runs made so far took against their estimates.
struct Left {
    runs: usize,
    made: usize,
    cpu_seconds: f64,
    /// Of the runs made so far that recorded their CPU time: estimated and taken.
    made_estimated: f64,
    made_taken: f64,
}

impl Left {
    fn new(planned: &[Planned], states: &[State]) -> Left {
        let to_make: Vec<&Planned> =
            planned.iter().zip(states).filter(|(_, s)| matches!(s, State::ToMake { .. })).map(|(p, _)| p).collect();
        let cpu_seconds = to_make.iter().map(|p| p.estimate.cpu_seconds).sum();
        Left { runs: to_make.len(), made: 0, cpu_seconds, made_estimated: 0.0, made_taken: 0.0 }
    }

    /// Counts one run made (estimated at `estimate` CPU seconds, taking `taken` if it
    /// recorded them) and says what is left.
    fn finish(&mut self, estimate: f64, taken: Option<f64>, jobs: usize) -> String {
        self.made += 1;
        self.cpu_seconds = (self.cpu_seconds - estimate).max(0.0);
        if let Some(taken) = taken {
            (self.made_estimated, self.made_taken) = (self.made_estimated + estimate, self.made_taken + taken);
        }
        let hours = self.cpu_seconds / 3600.0;
        let jobs = jobs.max(1) as f64;
        let mut line = format!(
            "{} of {} runs to make made; about {hours:.1} CPU h left by the plan's estimates ({:.1} h on {jobs} at once)",
            self.made,
            self.runs,
            hours / jobs
        );
        if self.made_estimated > 0.0 {
            let at_rate = hours * self.made_taken / self.made_estimated;
            line += &format!(", {at_rate:.1} CPU h ({:.1} h) at the rate of the runs made so far", at_rate / jobs);
        }
        line
    }
}

/// The order to take the planned runs in (indices into `planned`), so that an
/// interrupted invocation has made the most: headline runs before ablation variants';
/// within each, the experiments with the fewest estimated CPU seconds left to make
/// first, so whole experiments finish early; within an experiment the longest run
/// first, so a batch does not end on one long run while the other cores idle. Kept and
/// refused runs cost nothing and come first.
fn execution_order(planned: &[Planned], states: &[State]) -> Vec<usize> {
    let cost: Vec<f64> = planned
        .iter()
        .zip(states)
        .map(|(p, s)| match s {
            State::ToMake { .. } => p.estimate.cpu_seconds,
            _ => 0.0,
        })
        .collect();
    let mut left: HashMap<(&str, bool), f64> = HashMap::new();
    for (p, c) in planned.iter().zip(&cost) {
        *left.entry((p.experiment, p.headline)).or_default() += c;
    }
    let mut order: Vec<usize> = (0..planned.len()).collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&planned[a], &planned[b]);
        let group = |p: &Planned| left[&(p.experiment, p.headline)];
        (!pa.headline)
            .cmp(&!pb.headline)
            .then(group(pa).total_cmp(&group(pb)))
            .then(pa.experiment.cmp(pb.experiment))
            .then(cost[b].total_cmp(&cost[a]))
            .then(a.cmp(&b))
    });
    order
}

/// Each planned run's result and whether it was made now: the ones to make made on Ray.
fn run_on_ray(
    store: &Store,
    planned: &[Planned],
    states: &[State],
    ray: &Ray,
    log: &(dyn Fn(String) + Sync),
) -> Vec<(RunResult, bool)> {
    let jobs: Vec<ray::Job> = planned
        .iter()
        .zip(states)
        .filter(|(_, s)| matches!(s, State::ToMake { .. }))
        .map(|(p, _)| (p.key.as_str(), p.name.as_str(), &p.spec.input))
        .collect();
    let kept = states.iter().filter(|s| matches!(s, State::Kept(_))).count();
    log(format!("{kept} runs kept in {}, {} to make on Ray", store.dir().display(), jobs.len()));
    let mut made = ray::run(store, &jobs, ray, log);
    planned
        .iter()
        .zip(states)
        .map(|(p, state)| match state {
            State::ToMake { .. } => (made.remove(&p.key).unwrap_or_else(|| Err("not made on Ray".into())), true),
            kept_or_refused => (kept_only(kept_or_refused), false),
        })
        .collect()
}

/// Makes one run (its kind logs its start, progress and end) and keeps the result in
/// the store; logs a failure.
fn execute(store: &Store, p: &Planned, tag: &str, log: &(dyn Fn(String) + Sync)) -> RunResult {
    let result = p.spec.input.execute(tag, log).and_then(|value| {
        store.save(&p.spec.input, &value)?;
        Ok(value)
    });
    if let Err(e) = &result {
        log(format!("{tag}: FAILED: {e}"));
    }
    result
}

/// Compares one experiment and writes `ID.md`, `ID.json`, and `ID.svg` if it has a
/// figure; returns its cells, its cost and whether it wrote a figure.
fn experiment(
    store: &Store,
    e: &Experiment,
    scale: Scale,
    specs: &[(RunSpec, String)],
    results: &HashMap<&str, &RunResult>,
    reference: &[ReferenceCell],
) -> Result<(Vec<Cell>, Cost, bool), String> {
    let outcome = |key: &str| results.get(key).copied();
    let values: Vec<Option<&Value>> = specs.iter().map(|(_, k)| outcome(k).and_then(|r| r.as_ref().ok())).collect();
    let records: Vec<RunRecord> = specs
        .iter()
        .map(|(spec, key)| {
            let r = outcome(key);
            let value = r.and_then(|r| r.as_ref().ok());
            RunRecord {
                label: spec.label.clone(),
                conditions: spec.input.conditions(),
                key: key.clone(),
                wall_seconds: value.and_then(|v| v.get("wall_seconds")).and_then(Value::as_f64),
                cpu_seconds: value.and_then(cpu_of),
                error: r.and_then(|r| r.as_ref().err()).cloned(),
            }
        })
        .collect();
    let first_error = records.iter().find_map(|r| r.error.as_deref());
    let variants = e.implementation.as_ref().map_or_else(Vec::new, |i| i.variants_at(scale));
    let headline = &values[..ablation::headline_len(values.len(), variants.len())];
    let (ours, missing) = match &e.implementation {
        None => (Vec::new(), Some(Missing::NotImplemented)),
        Some(i) => (
            (i.cells)(headline),
            first_error.map(|e| if e == NOT_MADE { Missing::NotMade } else { Missing::RunFailed(e) }),
        ),
    };
    let mut cells = compare::join(e.id, reference, &ours, missing);
    if let Some(i) = &e.implementation {
        let per_variant: Vec<Vec<_>> =
            values[headline.len()..].chunks(headline.len().max(1)).map(|r| (i.cells)(r)).collect();
        ablation::annotate(&mut cells, &variants, &per_variant);
        (i.explain)(headline, reference, &mut cells);
    }
    let stem = e.file_stem();
    let notes = e.implementation.as_ref().map_or_else(Vec::new, |i| (i.notes)(scale));
    let plot = e.implementation.as_ref().and_then(|i| i.plot);
    if let Some(plot) = plot {
        store.write(&format!("{stem}.svg"), &plot(headline, &cells).to_svg())?;
    }
    store.write(&format!("{stem}.md"), &report::experiment_markdown(e, scale, &notes, &variants, &records, &cells))?;
    let json = report::experiment_json(e, scale, &notes, &variants, &records, &cells);
    store.write(&format!("{stem}.json"), &(serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n"))?;
    Ok((cells, Cost::of(e.id, &records), plot.is_some()))
}

#[cfg(test)]
mod tests {
    use super::Left;

    #[test]
    fn each_made_run_says_how_many_remain_and_their_estimated_cpu_hours() {
        let mut left = Left { runs: 3, made: 0, cpu_seconds: 3.0 * 3600.0, made_estimated: 0.0, made_taken: 0.0 };
        assert_eq!(
            left.finish(1800.0, None, 2),
            "1 of 3 runs to make made; about 2.5 CPU h left by the plan's estimates (1.2 h on 2 at once)"
        );
        // A run that took half its estimate halves what is left at that rate.
        assert_eq!(
            left.finish(1800.0, Some(900.0), 2),
            "2 of 3 runs to make made; about 2.0 CPU h left by the plan's estimates (1.0 h on 2 at once), \
             1.0 CPU h (0.5 h) at the rate of the runs made so far"
        );
        // A run estimated above what is left does not make the remainder negative.
        assert!(left.finish(5.0 * 3600.0, None, 2).starts_with("3 of 3 runs to make made; about 0.0 CPU h left"));
    }
}
