//! The worker pool: `jobs` threads take checked runs from a bounded queue and run them
//! through the experiment API, each on a scratch device image under the data directory
//! so that the finished device can be read back (the Device page) and, for a baseline
//! without IPA, analysed (the Analyzer page). A run's live state (phase, progress, ETA,
//! interval lines) is kept in memory and announced on a `watch` channel that the event
//! streams follow; when the run ends its record is written to disk and the live state
//! stays until the process ends.
//!
//! Invariants: at most `jobs` runs at once and `queue_max` waiting; a run's record is
//! stored exactly once, in its final status (done, failed or cancelled); after
//! [`Pool::shutdown`] nothing is queued and every run has been stored. A panic inside a
//! run (a bug) is caught and stored as a failure, so a worker never dies.

use crate::store::{Store, Summary, Untouched, WRITTEN_BY};
use crate::validate::Checked;
use crate::AnalyzeFn;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use workloads::{Control, Experiment, ExperimentConfig, ExperimentError, Progress};

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(self, Status::Done | Status::Failed | Status::Cancelled)
    }
}

/// A run in this process: what the Live page shows.
pub struct Live {
    pub id: u64,
    pub label: String,
    pub config: ExperimentConfig,
    pub submitted_unix_s: u64,
    pub tags: Vec<String>,
    pub sets: Vec<String>,
    cancel: AtomicBool,
    state: Mutex<LiveState>,
    /// Bumped on every change; event streams wait on it.
    changed: watch::Sender<u64>,
}

#[derive(Default)]
struct LiveState {
    status: Option<Status>,
    /// loading, running, finishing (reading the device back).
    phase: &'static str,
    started: Option<Instant>,
    /// When the measured run (after loading) began: the ETA's clock.
    running_since: Option<Instant>,
    sim_seconds: f64,
    total_sim_seconds: f64,
    transactions: u64,
    throughput_tps: f64,
    intervals: Vec<Value>,
    error: Option<String>,
}

impl Live {
    fn state(&self) -> MutexGuard<'_, LiveState> {
        // A panic while holding the lock is caught per run; the state stays readable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut LiveState)) {
        f(&mut self.state());
        self.changed.send_modify(|v| *v += 1);
    }

    pub fn status(&self) -> Status {
        self.state().status.unwrap_or(Status::Queued)
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Asks the run to stop; true if it had not ended.
    pub fn cancel(&self) -> bool {
        self.cancel.store(true, Ordering::Relaxed);
        !self.status().is_final()
    }

    /// The live view, with the interval lines from index `from` on.
    pub fn snapshot(&self, from: usize) -> Value {
        let s = self.state();
        let status = s.status.unwrap_or(Status::Queued);
        let progress = if s.total_sim_seconds > 0.0 { (s.sim_seconds / s.total_sim_seconds).min(1.0) } else { 0.0 };
        let wall_s = s.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        // The run's rate so far, from the end of loading (its length is not known ahead).
        let eta_s = match s.running_since {
            Some(t) if status == Status::Running && s.phase == "running" && progress > 0.01 => {
                Some(t.elapsed().as_secs_f64() * (1.0 - progress) / progress)
            }
            _ => None,
        };
        json!({
            "id": self.id,
            "label": self.label,
            "status": status.name(),
            "phase": s.phase,
            "sim_seconds": s.sim_seconds,
            "total_sim_seconds": s.total_sim_seconds,
            "progress": progress,
            "transactions": s.transactions,
            "throughput_tps": s.throughput_tps,
            "wall_s": wall_s,
            "eta_s": eta_s,
            "intervals_from": from.min(s.intervals.len()),
            "intervals": s.intervals.get(from..).unwrap_or_default(),
            "error": s.error,
        })
    }
}

/// Why a stored run was not changed or deleted.
#[derive(Debug, PartialEq)]
pub enum Unchanged {
    /// It has not ended (its record is written when it does).
    Pending,
    Stored(Untouched),
}

/// Why a run was not queued.
#[derive(Debug, PartialEq)]
pub enum Refused {
    QueueFull(usize),
    ShuttingDown,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::QueueFull(n) => write!(f, "the queue is full ({n} runs waiting); try again when one has started"),
            Refused::ShuttingDown => f.write_str("the server is shutting down"),
        }
    }
}

struct Inner {
    queue: VecDeque<Arc<Live>>,
    /// Runs of this process, by id.
    live: BTreeMap<u64, Arc<Live>>,
    /// Runs stored on disk (earlier processes' and this one's finished runs).
    history: BTreeMap<u64, Summary>,
    next_id: u64,
    shutting_down: bool,
}

pub struct Pool {
    inner: Mutex<Inner>,
    work: Condvar,
    store: Store,
    queue_max: usize,
    analyze: Option<Arc<AnalyzeFn>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl Pool {
    pub fn start(
        store: Store,
        history: Vec<Summary>,
        jobs: usize,
        queue_max: usize,
        analyze: Option<Arc<AnalyzeFn>>,
    ) -> Arc<Pool> {
        let next_id = history.iter().map(|s| s.id + 1).max().unwrap_or(1);
        let pool = Arc::new(Pool {
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                live: BTreeMap::new(),
                history: history.into_iter().map(|s| (s.id, s)).collect(),
                next_id,
                shutting_down: false,
            }),
            work: Condvar::new(),
            store,
            queue_max,
            analyze,
            workers: Mutex::new(Vec::new()),
        });
        let handles = (0..jobs)
            .map(|k| {
                let pool = pool.clone();
                std::thread::Builder::new()
                    .name(format!("run-worker-{k}"))
                    .spawn(move || pool.work_loop())
                    .map_err(|e| eprintln!("warning: cannot start worker {k}: {e}"))
            })
            .filter_map(Result::ok)
            .collect();
        *pool.workers() = handles;
        pool
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn workers(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.workers.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn has_analyzer(&self) -> bool {
        self.analyze.is_some()
    }

    /// Queues a checked run; its id.
    pub fn submit(&self, checked: Checked) -> Result<u64, Refused> {
        let mut inner = self.inner();
        if inner.shutting_down {
            return Err(Refused::ShuttingDown);
        }
        if inner.queue.len() >= self.queue_max {
            return Err(Refused::QueueFull(inner.queue.len()));
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let label = if checked.label.is_empty() { format!("run {id}") } else { checked.label };
        let live = Arc::new(Live {
            id,
            label,
            config: checked.config,
            tags: checked.tags,
            sets: checked.sets,
            submitted_unix_s: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            cancel: AtomicBool::new(false),
            state: Mutex::new(LiveState { phase: "queued", ..LiveState::default() }),
            changed: watch::channel(0).0,
        });
        inner.queue.push_back(live.clone());
        inner.live.insert(id, live);
        drop(inner);
        self.work.notify_one();
        Ok(id)
    }

    /// This process's run `id`.
    pub fn live(&self, id: u64) -> Option<Arc<Live>> {
        self.inner().live.get(&id).cloned()
    }

    /// Every run: stored ones and this process's, by id.
    pub fn list(&self) -> Vec<Value> {
        let inner = self.inner();
        let mut all: BTreeMap<u64, Value> =
            inner.history.iter().map(|(id, s)| (*id, serde_json::to_value(s).unwrap_or(Value::Null))).collect();
        for (id, live) in &inner.live {
            if !inner.history.contains_key(id) {
                all.insert(*id, summary_of_live(live));
            }
        }
        all.into_values().collect()
    }

    /// Deletes a run's record (only one the dashboard wrote, of a run that ended).
    pub fn delete(&self, id: u64) -> Result<(), Unchanged> {
        let mut inner = self.inner();
        if inner.live.get(&id).is_some_and(|l| !l.status().is_final()) {
            return Err(Unchanged::Pending);
        }
        self.store.delete(id).map_err(Unchanged::Stored)?;
        inner.history.remove(&id);
        inner.live.remove(&id);
        Ok(())
    }

    /// Replaces a stored run's tags and run sets; its new summary.
    pub fn annotate(&self, id: u64, tags: &[String], sets: &[String]) -> Result<Summary, Unchanged> {
        let mut inner = self.inner();
        if inner.live.get(&id).is_some_and(|l| !l.status().is_final()) {
            return Err(Unchanged::Pending);
        }
        let record = self.store.annotate(id, tags, sets).map_err(Unchanged::Stored)?;
        let summary = Summary::of(&record).ok_or(Unchanged::Stored(Untouched::Foreign))?;
        inner.history.insert(id, summary.clone());
        Ok(summary)
    }

    /// Queued and running runs.
    pub fn pending(&self) -> usize {
        self.inner().live.values().filter(|l| !l.status().is_final()).count()
    }

    /// Cancels everything, waits for the workers; every run is stored after this.
    pub fn shutdown(&self) {
        let queued: Vec<Arc<Live>> = {
            let mut inner = self.inner();
            inner.shutting_down = true;
            for live in inner.live.values() {
                live.cancel.store(true, Ordering::Relaxed);
            }
            inner.queue.drain(..).collect()
        };
        self.work.notify_all();
        for live in queued {
            self.finish(&live, Status::Cancelled, Value::Null, Some("cancelled before it started".into()), None);
        }
        let handles: Vec<JoinHandle<()>> = self.workers().drain(..).collect();
        for handle in handles {
            let _ = handle.join();
        }
    }

    fn work_loop(self: Arc<Self>) {
        loop {
            let live = {
                let mut inner = self.inner();
                loop {
                    if let Some(live) = inner.queue.pop_front() {
                        break live;
                    }
                    if inner.shutting_down {
                        return;
                    }
                    inner = self.work.wait(inner).unwrap_or_else(|p| p.into_inner());
                }
            };
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| self.execute(&live)));
            if let Err(panic) = outcome {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let error = format!("internal error (a bug, please report it): {message}");
                self.finish(&live, Status::Failed, Value::Null, Some(error), None);
            }
        }
    }

    /// Runs one experiment and stores its record.
    fn execute(&self, live: &Arc<Live>) {
        if live.cancel.load(Ordering::Relaxed) {
            self.finish(live, Status::Cancelled, Value::Null, Some("cancelled before it started".into()), None);
            return;
        }
        let total = live.config.driver.warmup_s + live.config.driver.sim_time_s;
        live.update(|s| {
            s.status = Some(Status::Running);
            s.phase = "loading";
            s.started = Some(Instant::now());
            s.total_sim_seconds = total;
        });
        let image = self.store.scratch_image(live.id);
        let mut config = live.config.clone();
        config.device.image = Some(image.clone());
        let outcome = Experiment::new(config).and_then(|experiment| {
            experiment.run(&mut |progress| {
                match progress {
                    Progress::Loading { .. } | Progress::Loaded { .. } => live.update(|s| s.phase = "loading"),
                    Progress::Running { sim_seconds, total_sim_seconds, transactions, throughput_tps } => {
                        live.update(|s| {
                            s.phase = "running";
                            s.running_since.get_or_insert_with(Instant::now);
                            (s.sim_seconds, s.total_sim_seconds) = (sim_seconds, total_sim_seconds);
                            (s.transactions, s.throughput_tps) = (transactions, throughput_tps);
                        })
                    }
                    Progress::Interval(line) => {
                        let line = serde_json::to_value(line).unwrap_or(Value::Null);
                        live.update(|s| s.intervals.push(line));
                    }
                }
                if live.cancel.load(Ordering::Relaxed) {
                    Control::Stop
                } else {
                    Control::Continue
                }
            })
        });
        live.update(|s| s.phase = "finishing");
        let (status, mut result, error) = match outcome {
            Ok(r) => (Status::Done, r.to_json(), None),
            Err(e @ ExperimentError::Stopped { .. }) => (Status::Cancelled, Value::Null, Some(e.to_string())),
            Err(e) => (Status::Failed, Value::Null, Some(e.to_string())),
        };
        // The result reproduces the run without the scratch image.
        if let Some(config) = result.get_mut("config").and_then(|c| c.get_mut("device")).and_then(Value::as_object_mut)
        {
            config.remove("image");
        }
        let mut extra = serde_json::Map::new();
        if status == Status::Done {
            match crate::device::snapshot(&image) {
                Ok(d) => extra.insert("device".into(), serde_json::to_value(d).unwrap_or(Value::Null)),
                Err(e) => extra.insert("device_error".into(), Value::String(e)),
            };
            if let (Some(analyze), true) = (&self.analyze, is_baseline(&live.config)) {
                match analyze(&live.config, &image, &result) {
                    Ok(a) => extra.insert("analysis".into(), a),
                    Err(e) => extra.insert("analysis_error".into(), Value::String(e)),
                };
            }
        }
        let _ = std::fs::remove_file(&image);
        self.finish(live, status, result, error, Some(extra));
    }

    /// Stores the record of a run that ended, and publishes its final state.
    fn finish(
        &self,
        live: &Arc<Live>,
        status: Status,
        result: Value,
        error: Option<String>,
        extra: Option<serde_json::Map<String, Value>>,
    ) {
        let intervals = live.state().intervals.clone();
        let mut record = json!({
            "id": live.id,
            "label": live.label,
            "status": status.name(),
            "written_by": WRITTEN_BY,
            "submitted_unix_s": live.submitted_unix_s,
            "tags": live.tags,
            "sets": live.sets,
            "config": live.config,
            "seed": live.config.seed,
            "git_commit": workloads::experiment::GIT_COMMIT,
            "result": result,
            "error": error,
            "intervals": intervals,
        });
        if let (Some(map), Some(extra)) = (record.as_object_mut(), extra) {
            map.extend(extra);
        }
        let stored = self.store.save(live.id, &record);
        let error = match stored {
            Ok(()) => error,
            Err(e) => Some(format!("{}the record was not stored: {e}", error.map(|e| e + "; ").unwrap_or_default())),
        };
        if let Some(summary) = Summary::of(&record) {
            self.inner().history.insert(live.id, summary);
        }
        live.update(|s| {
            s.status = Some(status);
            s.phase = status.name();
            s.error = error;
        });
    }
}

/// A run the analyzer reads: no IPA, one data region.
fn is_baseline(c: &ExperimentConfig) -> bool {
    c.engine.ipa == "0x0"
        && c.engine.schema.is_none()
        && c.engine.ipa_objects.is_empty()
        && c.storage == workloads::config::StorageConfig::Noftl
}

fn summary_of_live(live: &Live) -> Value {
    let record = json!({
        "id": live.id,
        "label": live.label,
        "status": live.status().name(),
        "submitted_unix_s": live.submitted_unix_s,
        "config": live.config,
        "tags": live.tags,
        "sets": live.sets,
    });
    Summary::of(&record).map_or(Value::Null, |s| serde_json::to_value(s).unwrap_or(Value::Null))
}
