//! The experiment API: one run of a registered workload on an emulated device, built
//! from an [`ExperimentConfig`], reporting [`Progress`] to a callback that may stop it,
//! and returning an [`ExperimentResult`] (the JSON of `deltaflash bench`). The command
//! line, and later the dashboard and the Python package, are thin callers of this.
//!
//! A run: create the device and the database, create the regions (one IPA region, an
//! IPA/plain split, or the config's schema SQL with `${IPA}` replaced), load the
//! workload, checkpoint, size the buffer pool as a share of the loaded database,
//! precondition the device (`driver.precondition`: filled, or aged to GC steady state), run
//! the driver (warm-up, then the measured time), optionally check consistency. Everything is
//! seeded by `config.seed` and timed in simulated time, so the same config gives the same
//! result apart from the wall-clock fields. `run` takes `&self`: each call is a fresh
//! device and database.

pub use crate::build_info::{GIT_COMMIT, VERSION};
use crate::config::{ConfigError, Derived, DeviceConfig, ExperimentConfig, StorageConfig};
use crate::driver::{self, Control, DriverConfig, Event, Interval, Metrics, RunError};
use crate::precondition;
pub use crate::workload::Consistency;
use crate::workload::Workload;
use engine::db::BufferSize;
use engine::{Database, DbOptions, IpaScheme};
use flash::{FtlVolume, IplStore};
use nand::Device;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::fmt;
use std::time::Instant;

/// What a run reports as it goes. Each call's answer may stop the run.
pub enum Progress<'a> {
    /// The database is about to be loaded (on a large one, the longest wait before the
    /// run; it is not interrupted).
    Loading { workload: &'static str, size: &'a str, scheme: IpaScheme },
    /// Loaded, after `wall_seconds`; how full the data regions are.
    Loaded { wall_seconds: f64, fill: Fill },
    /// The run, every 256 transactions: simulated seconds since it began (warm-up
    /// included) out of `total_sim_seconds`, transactions so far, and committed
    /// transactions per simulated second over about the last simulated second.
    Running { sim_seconds: f64, total_sim_seconds: f64, transactions: u64, throughput_tps: f64 },
    /// An interval line (`driver.progress_interval_s`), as it completes.
    Interval(&'a Interval),
}

/// How much of the data regions' logical space the loaded database takes: the knob
/// that sets how hard GC works.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Fill {
    pub database_mib: f64,
    pub data_regions_mib: f64,
}

impl Fill {
    fn of(db: &Database) -> Fill {
        const MIB: f64 = 1024.0 * 1024.0;
        let catalog = db.catalog();
        let dev = db.page_device();
        let page_bytes = dev.page_bytes() as f64;
        let data_pages: f64 = dev
            .region_ids()
            .filter(|&r| engine::db::is_data_region(dev.region_name(r)))
            .map(|r| dev.logical_pages(r) as f64)
            .sum();
        Fill {
            database_mib: (catalog.pages_in_use() * catalog.page_bytes) as f64 / MIB,
            data_regions_mib: data_pages * page_bytes / MIB,
        }
    }

    /// The share of the data regions in use.
    pub fn share(&self) -> f64 {
        self.database_mib / self.data_regions_mib.max(f64::MIN_POSITIVE)
    }
}

/// The preconditioning's report and its wall time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Preconditioned {
    #[serde(flatten)]
    pub report: precondition::Report,
    pub wall_seconds: f64,
}

/// One run's results: the metrics, what the run was, and how long it took on the wall.
/// Serialised flat, with the field names `deltaflash bench --json` has always written.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentResult {
    #[serde(flatten)]
    pub metrics: Metrics,
    /// The IPA scheme `NxM`, and V (0 without IPA).
    pub ipa: String,
    pub v: u8,
    /// Bytes each page reserves for delta-records, in percent of the page.
    pub space_overhead_pct: f64,
    /// The buffer pool while measuring, MiB: `engine.buffer_share` of the database as
    /// the load and the precondition left it.
    pub buffer_mib: f64,
    /// From creating the device to the end, loading included.
    pub wall_seconds: f64,
    /// Wall time of the warm-up and the measured run.
    pub run_wall_seconds: f64,
    #[serde(flatten)]
    pub fill: Fill,
    /// Warm-up and measured simulated seconds per run wall second.
    pub simulated_seconds_per_wall_second: f64,
    /// What the emulated device keeps in memory at the end of the run (page images,
    /// OOB, metadata): the bench commands report the peak RSS against it.
    pub memory_device_bytes: u64,
    /// The heap bytes of the page store's maps and tables (regions, FTL or IPL store).
    pub memory_mapping_bytes: u64,
    /// The bytes of the pages the buffer pool holds at the end of the run: data the run
    /// keeps in memory beside the device's.
    pub memory_buffer_pool_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency_check: Option<Consistency>,
    /// What the preconditioning did (`driver.precondition` other than `none`); the
    /// warm-up and the measurement start after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precondition: Option<Preconditioned>,
    /// The resolved config: it alone reproduces the run.
    pub config: ExperimentConfig,
    pub seed: u64,
    pub version: String,
    pub git_commit: String,
}

impl ExperimentResult {
    /// The result as a JSON value (keys sorted, as the files have always been).
    pub fn to_json(&self) -> serde_json::Value {
        match serde_json::to_value(self) {
            Ok(v) => v,
            Err(e) => panic!("an experiment result always serialises: {e}"),
        }
    }

    /// The rows of the paper's Table 7 layout as (label, value): what `compare` prints
    /// and the Python package's `compare` DataFrame holds.
    pub fn table_rows(&self) -> Vec<(&'static str, f64)> {
        let m = &self.metrics;
        let mut rows = vec![
            ("Host reads", m.host_reads as f64),
            ("Host writes", m.host_writes as f64),
            ("  out-of-place writes", m.out_of_place_writes as f64),
            ("  in-place appends", m.in_place_appends as f64),
            ("GC page migrations", m.gc_page_migrations as f64),
            ("GC erases", m.gc_erases as f64),
            ("Migrations per host write", m.gc_migrations_per_host_write),
            ("Erases per host write", m.gc_erases_per_host_write),
            ("READ I/O latency [ms]", m.read_latency_ms),
            ("WRITE I/O latency [ms]", m.write_latency_ms),
            ("Throughput [tps]", m.throughput_tps),
            ("Buffer hit ratio [%]", 100.0 * m.buffer_hits as f64 / (m.buffer_hits + m.buffer_misses).max(1) as f64),
            ("DBMS write amplification", m.dbms_write_amplification),
            ("Space overhead [%]", self.space_overhead_pct),
            ("Flash programs (device)", m.flash_programs as f64),
            ("Flash erases (device)", m.flash_erases as f64),
            ("Device write amplification", m.write_amplification),
        ];
        if let Some(f) = &m.ftl {
            rows.extend([
                ("FTL merges switch", f.merges_switch as f64),
                ("FTL merges partial", f.merges_partial as f64),
                ("FTL merges full", f.merges_full as f64),
                ("FTL translation reads", f.translation_reads as f64),
                ("FTL translation writes", f.translation_writes as f64),
            ]);
        }
        rows
    }
}

/// Where a run failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stage {
    /// Creating the device, the database or its regions.
    Setup,
    Loading,
    /// This many simulated seconds into the run.
    Running {
        after_s: f64,
    },
}

/// Why an experiment did not produce a result.
#[derive(Clone, Debug, PartialEq)]
pub enum ExperimentError {
    Config(ConfigError),
    /// The engine or the workload failed. `full`: the data regions ran out of space.
    Failed {
        stage: Stage,
        error: String,
        full: Option<Fill>,
        blocks_per_chip: u32,
    },
    /// The progress callback stopped the run.
    Stopped {
        stage: Stage,
    },
}

impl From<ConfigError> for ExperimentError {
    fn from(e: ConfigError) -> Self {
        ExperimentError::Config(e)
    }
}

impl ExperimentError {
    /// The message, with config fields spelled by `spell` (the command line passes its
    /// flag names: `device.blocks_per_chip` → `--blocks-per-chip`).
    pub fn message(&self, spell: &dyn Fn(&str) -> String) -> String {
        match self {
            ExperimentError::Config(e) => e.message(spell),
            ExperimentError::Failed { stage, error, full, blocks_per_chip } => {
                let (mut message, instead) = match stage {
                    Stage::Setup => (error.clone(), ""),
                    Stage::Loading => (format!("loading stopped: {error}"), "load a smaller database"),
                    Stage::Running { after_s } => (
                        format!("the run stopped after {after_s:.1} simulated seconds: {error}"),
                        "run for less simulated time (inserts grow the database as it runs)",
                    ),
                };
                if let Some(fill) = full {
                    message += &format!(
                        "\n  the database has grown to {:.1} MiB in data regions of {:.1} MiB; give the device more \
                         flash ({}, now {blocks_per_chip}) or {instead}",
                        fill.database_mib,
                        fill.data_regions_mib,
                        spell("device.blocks_per_chip")
                    );
                }
                message
            }
            ExperimentError::Stopped { stage: Stage::Running { after_s } } => {
                format!("stopped after {after_s:.1} simulated seconds")
            }
            ExperimentError::Stopped { .. } => "stopped before the run".to_string(),
        }
    }
}

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(&|field| field.to_string()))
    }
}

impl std::error::Error for ExperimentError {}

/// A checked experiment, ready to run.
pub struct Experiment {
    config: ExperimentConfig,
    derived: Derived,
}

impl Experiment {
    /// Checks the config (every field, see [`ExperimentConfig`]) and the device's
    /// memory footprint, and fills in its defaults.
    pub fn new(config: ExperimentConfig) -> Result<Experiment, ExperimentError> {
        let (config, derived) = config.resolve()?;
        config.device.check_footprint(&derived.geometry)?;
        Ok(Experiment { config, derived })
    }

    /// The resolved config.
    pub fn config(&self) -> &ExperimentConfig {
        &self.config
    }

    /// The workload's size in words ("10 warehouses").
    pub fn size(&self) -> String {
        self.derived.params.size()
    }

    pub fn scheme(&self) -> IpaScheme {
        self.derived.scheme
    }

    /// Runs it. `on_progress` sees each step; answering `Control::Stop` ends the run
    /// with [`ExperimentError::Stopped`] (for a shared flag:
    /// `|_| if flag.load(Ordering::Relaxed) { Control::Stop } else { Control::Continue }`).
    ///
    /// A run that fails or is stopped removes the image file it created
    /// (`device.image`): a half-loaded database must not pass for a result.
    pub fn run(&self, on_progress: &mut dyn FnMut(Progress) -> Control) -> Result<ExperimentResult, ExperimentError> {
        let device = self.device()?;
        let result = self.run_on(device, on_progress);
        if let (Err(_), Some(image)) = (&result, &self.config.device.image) {
            let _ = std::fs::remove_file(image);
        }
        result
    }

    /// [`Experiment::run`] on the fresh `device`.
    fn run_on(
        &self,
        device: Device,
        on_progress: &mut dyn FnMut(Progress) -> Control,
    ) -> Result<ExperimentResult, ExperimentError> {
        let (c, d) = (&self.config, &self.derived);
        // A failure because a region ran out of extents reports how full each region was.
        let failed = |db: &Database, stage: Stage, error: String, out_of_extents: bool| {
            let full = out_of_extents.then(|| Fill::of(db));
            ExperimentError::Failed { stage, error, full, blocks_per_chip: d.geometry.blocks_per_chip }
        };
        let setup = |e: engine::Error| ExperimentError::Failed {
            stage: Stage::Setup,
            error: e.to_string(),
            full: None,
            blocks_per_chip: d.geometry.blocks_per_chip,
        };
        let page_bytes = c.engine.db_page_bytes.unwrap_or(4096);
        let options = DbOptions {
            page_bytes,
            buffer: BufferSize::Pages(4096),
            cleaner: c.engine.cleaner_policy(),
            replacement: c.engine.replacement,
            checkpoint_log_share: c.engine.checkpoint_log_share,
            log_buffer_bytes: c.engine.log_buffer_bytes.unwrap_or(DbOptions::default().log_buffer_bytes),
            log_chips: c.engine.log_chips.unwrap_or(1),
            // Resolved: nolgn on NoLgn-FTL, whose transactions make a log unnecessary.
            journal: c.engine.journal.unwrap_or(engine::JournalKind::Aries),
            heap_space: c.engine.heap_space,
            ..DbOptions::default()
        };
        let wall = Instant::now();
        let log_device = self.log_device()?;
        let mut db = match &c.storage {
            StorageConfig::Noftl => match log_device {
                Some(log) => Database::create_with_external_log(device, log, options),
                None => Database::create(device, options),
            },
            StorageConfig::Ftl(ftl) => {
                // The FTL is the whole device; the database's regions are partitions of
                // its logical pages.
                let ftl = flash::ftl::format(device, ftl).map_err(|e| setup(e.into()))?;
                let volume = FtlVolume::format(ftl, Vec::new(), 0).map_err(|e| setup(e.into()))?;
                create_on(Box::new(volume), log_device, options)
            }
            StorageConfig::Ipl(ipl) => {
                // In-Page Logging over the whole device, its DB page the engine's; the
                // database's regions are partitions of its erase units.
                let store =
                    IplStore::format(device, ipl.store_config(page_bytes), Vec::new()).map_err(|e| setup(e.into()))?;
                create_on(Box::new(store), log_device, options)
            }
        }
        .map_err(setup)?;
        self.create_regions(&mut db).map_err(|e| match e {
            RegionError::Schema(problem) => ExperimentError::from(ConfigError::field("engine.schema", problem)),
            RegionError::Engine(e) => setup(e),
        })?;
        let mut rng = ChaCha8Rng::seed_from_u64(c.seed);
        let mut wl = d.params.build(&mut rng);
        let placement = self.placement(&db, wl.as_ref())?;
        let size = d.params.size();
        let stopped = |stage| Err(ExperimentError::Stopped { stage });
        if on_progress(Progress::Loading { workload: wl.name(), size: &size, scheme: d.scheme }) == Control::Stop {
            return stopped(Stage::Loading);
        }
        wl.load(&mut db, &placement, &mut rng)
            .map_err(|err| failed(&db, Stage::Loading, err.to_string(), err.is_no_free_extent()))?;
        let fill = Fill::of(&db);
        if on_progress(Progress::Loaded { wall_seconds: wall.elapsed().as_secs_f64(), fill }) == Control::Stop {
            return stopped(Stage::Loading);
        }
        db.checkpoint().map_err(setup)?;
        db.set_buffer(BufferSize::Share(c.engine.buffer_share)).map_err(setup)?;
        db.set_group_commit((c.engine.group_commit_us * 1000.0) as u64);
        let driver = &c.driver;
        let config = DriverConfig {
            terminals: driver.terminals,
            warmup_s: driver.warmup_s,
            duration_s: driver.sim_time_s,
            cpu_ns_per_operation: (driver.cpu_per_operation_us * 1000.0) as u64,
            progress_s: driver.progress_interval_s,
            switch: driver.switch_at_s.zip(driver.switch_ddl.clone()),
            max_transactions: driver.transactions,
        };
        let total_sim_seconds = driver.warmup_s + driver.sim_time_s;
        let run_error = |db: &Database, run_start: u64, e: RunError| {
            let after_s = db.now().saturating_sub(run_start) as f64 / 1e9;
            match e {
                RunError::Stopped { sim_seconds } => {
                    ExperimentError::Stopped { stage: Stage::Running { after_s: sim_seconds } }
                }
                err => failed(db, Stage::Running { after_s }, err.to_string(), err.is_no_free_extent()),
            }
        };
        let (precondition_start, precondition_wall) = (db.now(), Instant::now());
        let precondition = precondition::run(&mut db, wl.as_mut(), driver.precondition, &config, &mut rng, &mut || {
            on_progress(Progress::Running { sim_seconds: 0.0, total_sim_seconds, transactions: 0, throughput_tps: 0.0 })
        })
        .map_err(|e| run_error(&db, precondition_start, e))?
        .map(|report| Preconditioned { report, wall_seconds: precondition_wall.elapsed().as_secs_f64() });
        if c.engine.buffer_of_aged_database {
            db.grow_buffer(BufferSize::Share(c.engine.buffer_share));
        }
        let buffer_mib = (db.buffer_frames() * page_bytes) as f64 / (1024.0 * 1024.0);
        let run_start = db.now();
        let run_wall = Instant::now();
        let mut rate = Rate::default();
        let metrics = driver::run(&mut db, wl.as_mut(), &config, &mut rng, &mut |event| match event {
            Event::Tick { sim_seconds, transactions, committed } => on_progress(Progress::Running {
                sim_seconds,
                total_sim_seconds,
                transactions,
                throughput_tps: rate.update(sim_seconds, committed),
            }),
            Event::Interval(line) => on_progress(Progress::Interval(line)),
        });
        let metrics = metrics.map_err(|e| run_error(&db, run_start, e))?;
        let run_wall_seconds = run_wall.elapsed().as_secs_f64();
        let consistency_check = driver.check.then(|| match wl.check(&mut db) {
            Ok(()) => Consistency::Passed,
            Err(e) => Consistency::Failed(e),
        });
        let memory_device_bytes = db.page_device().device().storage().memory_bytes();
        let memory_mapping_bytes = db.page_device().mapping_bytes();
        let memory_buffer_pool_bytes = db.buffer_cached_bytes();
        if c.device.image.is_some() {
            db.close().map_err(setup)?;
        }
        let simulated = metrics.sim_seconds + driver.warmup_s;
        Ok(ExperimentResult {
            ipa: d.scheme.to_string(),
            v: d.scheme.v,
            space_overhead_pct: d.scheme.area_bytes() as f64 * 100.0 / page_bytes as f64,
            buffer_mib,
            wall_seconds: wall.elapsed().as_secs_f64(),
            run_wall_seconds,
            fill,
            simulated_seconds_per_wall_second: simulated / run_wall_seconds.max(1e-9),
            memory_device_bytes,
            memory_mapping_bytes,
            memory_buffer_pool_bytes,
            consistency_check,
            precondition,
            config: c.clone(),
            seed: c.seed,
            version: VERSION.to_string(),
            git_commit: GIT_COMMIT.to_string(),
            metrics,
        })
    }

    /// A fresh device: in memory, or backed by a new image file.
    fn device(&self) -> Result<Device, ExperimentError> {
        Ok(self.config.device.create(self.derived.geometry.clone())?)
    }

    /// The log's own device (`engine.log_device_mib`), in memory; `None` when the log
    /// is a region of the database device.
    ///
    /// It keeps its pages' metadata only (`device.no_data`): it enforces the NAND rules
    /// and times and counts every program and erase, but keeps no page bytes, because
    /// nothing reads them. A run reads its log back only at a restart (recovery), which
    /// an experiment does not have, and the device goes with the run. Keeping the bytes
    /// cost a quick TPC-C run 1.1 GiB of its 1.5 GiB peak and 7% of its time
    /// (docs/benchmarks.md).
    fn log_device(&self) -> Result<Option<Device>, ExperimentError> {
        let Some(geometry) = &self.derived.log_geometry else { return Ok(None) };
        let metadata_only = DeviceConfig { no_data: true, ..self.config.device.clone() };
        Ok(Some(metadata_only.create(geometry.clone())?))
    }

    /// The schema's SQL with `${IPA}` replaced, or the default regions: one IPA region
    /// `data`, or with `ipa_objects` an IPA region `data` on half the free chips and a
    /// plain region on the rest.
    fn create_regions(&self, db: &mut Database) -> Result<(), RegionError> {
        let (engine, options) = (&self.config.engine, &self.derived.region_options);
        if let Some(text) = &engine.schema {
            db.execute(&text.replace("${IPA}", options)).map_err(|e| RegionError::Schema(e.to_string()))?;
        } else if !engine.ipa_objects.is_empty() {
            let free = self.derived.geometry.chips() - 2;
            db.execute(&format!(
                "CREATE REGION data ({options}, MAX_CHIPS={});
                 CREATE TABLESPACE ts_data (REGION=data);
                 CREATE REGION plain (IPA_MODE=none);
                 CREATE TABLESPACE ts_plain (REGION=plain);",
                (free / 2).max(1)
            ))
            .map_err(RegionError::Engine)?;
        } else {
            db.execute(&format!("CREATE REGION data ({options}); CREATE TABLESPACE ts_data (REGION=data);"))
                .map_err(RegionError::Engine)?;
        }
        Ok(())
    }

    /// Where each table goes: the schema's `ts_<table>` if it has one, else `ts_data`;
    /// with `ipa_objects`, the tables not named go to `ts_plain`.
    fn placement(&self, db: &Database, wl: &dyn Workload) -> Result<impl Fn(&str) -> String, ExperimentError> {
        let catalog = db.catalog();
        let tables = wl.tables();
        let own: Vec<String> =
            tables.iter().filter(|t| catalog.tablespace(&format!("ts_{t}")).is_ok()).map(|t| t.to_string()).collect();
        if self.config.engine.schema.is_some() && own.len() < tables.len() && catalog.tablespace("ts_data").is_err() {
            return Err(ConfigError::field(
                "engine.schema",
                format!(
                    "tables without a ts_<table> tablespace need one named ts_data (tables: {})",
                    tables.join(", ")
                ),
            )
            .into());
        }
        let split = self.config.engine.ipa_objects.clone();
        Ok(move |table: &str| {
            if own.iter().any(|t| t == table) {
                format!("ts_{table}")
            } else if split.is_empty() || split.iter().any(|t| t == table) {
                "ts_data".to_string()
            } else {
                "ts_plain".to_string()
            }
        })
    }
}

enum RegionError {
    /// The config's schema SQL failed.
    Schema(String),
    Engine(engine::Error),
}

/// Committed transactions per simulated second, over windows of about one second.
#[derive(Default)]
struct Rate {
    since_s: f64,
    since_committed: u64,
    tps: f64,
}

impl Rate {
    fn update(&mut self, sim_seconds: f64, committed: u64) -> f64 {
        let span = sim_seconds - self.since_s;
        if span > 0.0 && (span >= 1.0 || self.tps == 0.0) {
            self.tps = (committed - self.since_committed) as f64 / span;
        }
        if span >= 1.0 {
            (self.since_s, self.since_committed) = (sim_seconds, committed);
        }
        self.tps
    }
}

/// A database on the page device `store`, its log on `log_device` when given, else a
/// region of `store`.
fn create_on(
    store: Box<dyn flash::PageDevice>,
    log_device: Option<Device>,
    options: DbOptions,
) -> engine::Result<Database> {
    match log_device {
        Some(log) => Database::create_on_with_external_log(store, log, options),
        None => Database::create_on(store, options),
    }
}
