//! What a run will cost before it is made: its simulated seconds, CPU seconds and peak
//! memory, from rates measured per workload (each constant below cites its
//! measurement), and whether it can be made on this machine at all.
//!
//! `reproduce --plan` lists these per run; `reproduce` refuses a run that cannot be made
//! ([`Estimate::refusal`]) before anything starts, instead of dying in its middle: one
//! whose database would outgrow its device (TPC-C on the emulator, [`crate::ipa::tpcc_room`]),
//! or whose peak memory is above the memory available.
//!
//! The estimates are bounds for planning, not predictions: CPU per simulated second
//! grows with throughput (buffer, scheme), so each workload's rate is the highest
//! measured. Peak memory of an engine or index run is its device's pages at the
//! measured bytes per page (page data, metadata, mapping and buffer pool together),
//! every page counted resident; of TPC-C on the emulator, the database it may reach
//! ([`crate::ipa::tpcc_room`]) at the measured device bytes per database byte, on a
//! device with room for it; of a SQLite run (a sparse device, aged with shared ballast
//! pages), the measured base plus its rows' bytes.

use crate::input::RunInput;
use workloads::config::DeviceConfig;
use workloads::ExperimentConfig;

/// A run's estimated cost and size.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The workload (`tpcc`, `sqlite ycsb`, `index ipl`).
    pub workload: String,
    /// Its size and device in a few words.
    pub size: String,
    /// Simulated seconds of an engine run (warm-up and measured); `None` for runs
    /// counted in operations.
    pub sim_seconds: Option<f64>,
    pub cpu_seconds: f64,
    pub peak_bytes: u64,
    /// Why the run cannot be made whatever the memory: its database outgrows its device.
    pub outgrows_device: Option<String>,
}

/// CPU seconds per simulated second of an engine workload on a device preset (warm-up
/// and measured time; the highest measured), and CPU seconds per GiB of device for
/// loading and preconditioning it.
struct EngineRate {
    workload: &'static str,
    preset: &'static str,
    cpu_per_sim_second: f64,
    setup_cpu_per_device_gib: f64,
}

/// Measured on 2026-11-27, `bench … --json` (main e92b880, release build, 2 shared
/// cores) and the runs of `reproduce --all --quick` at 1545772 (docs/benchmarks.md; the same
/// model: `cpu_seconds` split by `run_wall_seconds` over `wall_seconds`):
/// - tpcc: 10 warehouses on 1,024 blocks per chip (full scale), [0x0], 10% buffer,
///   steady precondition, 130 simulated s: 84.1 CPU s in all, 47.3 of them in the run
///   (0.364 per simulated s at 1,694 tps, 213 µs a transaction) and 36.8 loading and
///   aging the 4 GiB device. The quick runs reach 7,283 tps (1 warehouse, 90% buffer),
///   so the bound is 7,283 tps × 213 µs = 1.55 CPU s per simulated s.
/// - tpcb: scale 2 on 32 blocks per chip (the quick size): 11.7 CPU s for 310
///   simulated s (0.034 per simulated s at 2,855 tps, 10% buffer); the quick
///   runs reach 0.107 (11,498 tps); setup ≤ 1.0 CPU s on 0.125 GiB.
/// - tatp: at most 0.225 per simulated s (28,676 tps), setup ≤ 8.7 CPU s on ≤ 1 GiB.
/// - on openssd-mlc (one I/O at a time, so far fewer transactions per simulated s):
///   tpcc at most 0.066 per simulated s at quick scale (1 warehouse), doubled for a
///   larger database as the full TPC-C run's 213 µs a transaction is twice the quick
///   runs' ~100; tpcb at most 0.034; tatp at most 0.045.
/// - linkbench: 100,000 nodes on 64 blocks per chip (full scale), [0x0], 90% buffer:
///   51.6 CPU s for 310 simulated s, 49.7 in the run (0.160 per simulated s at 8,942
///   tps), 1.9 loading and aging 0.25 GiB; the quick runs (25,000 nodes) reach 0.222.
const ENGINE_RATES: &[EngineRate] = &[
    EngineRate { workload: "tpcc", preset: "openssd-mlc", cpu_per_sim_second: 0.132, setup_cpu_per_device_gib: 9.2 },
    EngineRate { workload: "tpcb", preset: "openssd-mlc", cpu_per_sim_second: 0.034, setup_cpu_per_device_gib: 8.0 },
    EngineRate { workload: "tatp", preset: "openssd-mlc", cpu_per_sim_second: 0.045, setup_cpu_per_device_gib: 8.7 },
    EngineRate { workload: "tpcc", preset: ANY_PRESET, cpu_per_sim_second: 1.55, setup_cpu_per_device_gib: 9.2 },
    EngineRate { workload: "tpcb", preset: ANY_PRESET, cpu_per_sim_second: 0.107, setup_cpu_per_device_gib: 8.0 },
    EngineRate { workload: "tatp", preset: ANY_PRESET, cpu_per_sim_second: 0.225, setup_cpu_per_device_gib: 8.7 },
    EngineRate { workload: "linkbench", preset: ANY_PRESET, cpu_per_sim_second: 0.222, setup_cpu_per_device_gib: 7.6 },
];
/// A rate for a workload on any preset not listed before it.
const ANY_PRESET: &str = "*";
/// A workload not measured: the highest rate above.
const UNMEASURED_ENGINE: EngineRate =
    EngineRate { workload: "other", preset: ANY_PRESET, cpu_per_sim_second: 1.55, setup_cpu_per_device_gib: 9.2 };

/// CPU seconds per operation of a SQLite workload (transactions as its result counts
/// them) or an index benchmark (inserts, queries and scans). Measured 2026-11-27 with
/// `bench --engine sqlite --storage ftl:page --device femu --journal base-wal
/// --free-space 75%` (main e92b880, release): TPC-C, 4 warehouses, 1,000 transactions:
/// 23.9 CPU s, 0.78 ms a transaction in the run, the rest loading and aging; YCSB,
/// 100,000 records and operations: 21.9 CPU s, 27 µs an operation in the run. The
/// per-operation bounds are the quick catalogue's highest at 1545772, setup included:
/// sqlite-bench 0.72 CPU s for 4,000 (16 KiB values), ycsb 1.60 for 20,000 operations;
/// index ipl 1.12 for 100,000 inserts. At full size they still bound the runs
/// (2026-11-28, release binary of 6006728, less the aging below): nolgn:fig6's
/// heaviest measured, Base-WAL FULL at 16 KiB values (`bench --engine sqlite --storage
/// ftl:page --journal base-wal --device femu --host-stack ext4 --free-space 50% --sync
/// full --param num=200000 --param value_size=16384 --param
/// 'ops=["fillrandom","overwrite"]' --param batch=1`), 64.7 CPU s, 1.31e-4 an
/// operation; nolgn:fig11's TPC-C (4 warehouses, 10,000 transactions, NoLgn NORMAL)
/// 19.1 CPU s at 50% free and 22.3 at 25%, 0.68 and 0.84 ms a transaction. YCSB's
/// bound is nolgn:fig10's heaviest, workload E (scans) at 50% free on NoLgn-FTL
/// (`--workload ycsb --param mix='"e"' --param records=100000 --param
/// operations=100000`): 30.8 CPU s, 9.3e-5 an operation; rounded up.
const SQLITE_BENCH_CPU_PER_OP: f64 = 1.8e-4;
const YCSB_CPU_PER_OP: f64 = 1.0e-4;
const SQLITE_TPCC_CPU_PER_TRANSACTION: f64 = 1.0e-3;
const INDEX_CPU_PER_OP: f64 = 1.12e-5;
/// CPU seconds to age the full FEMU device (`sqlite_flash::FlashSqlite::age`): a fill
/// of the share not left free, then as many random overwrites as the FTL has logical
/// pages, so most of the cost is the same at every free share, and each quarter more
/// that is filled adds its fill and the GC that a fuller device does. Measured
/// 2026-11-28 (release binary of 6006728, 2 shared cores, `/usr/bin/time` user + system)
/// with aging alone, `bench --engine sqlite --storage ftl:nolgn --journal nolgn
/// --device femu --host-stack ext4 --sync normal --workload sqlite-bench --param
/// num=1000 --param value_size=256 --param 'ops=["fillrandom","overwrite"]' --param
/// batch=1`: 12.3 CPU s at `--free-space 50%` (two quarters filled), 13.9 at 25%
/// (three), so 1.6 a quarter on 9.1; rounded up. Loading a database (TPC-C, YCSB) is
/// in the per-operation costs above.
const SQLITE_AGING_CPU: f64 = 10.0;
const SQLITE_AGING_CPU_PER_QUARTER: f64 = 2.0;
/// Peak memory of a SQLite run besides its device: the process, SQLite's caches and the
/// FTL's tables. The TPC-C run above peaked at 665 MiB, 533 MiB of them the device;
/// nolgn:fig6's quick NoLgn-FTL run at 16 KiB values at 140 MiB RSS, 36 MiB the device
/// and 2 MiB its mapping (`bench --engine sqlite --storage ftl:nolgn --journal nolgn
/// --device femu --chips 2 --blocks-per-chip 64 --free-space 25% --sync normal --param
/// num=2000 --param value_size=16384 --param 'ops=["fillrandom","overwrite"]' --param
/// batch=1`, `/usr/bin/time -v`, release binary of 021458a, 2026-11-28); rounded up.
const SQLITE_PROCESS_BYTES: u64 = 192 << 20;
/// The FTL's tables per device page of 4 KiB: the quick run above kept 2 MiB of mapping
/// for its 131,072 pages.
const FTL_MAPPING_BYTES_PER_4K_PAGE: f64 = 16.0;
/// What the device keeps per byte of rows (page headers, the WAL, dead versions not yet
/// collected): the runs above kept 1.13–1.16× their peak RSS less the base; rounded up.
const SQLITE_BYTES_PER_ROW_BYTE: f64 = 1.5;
/// YCSB's record: 10 fields of 100 B (the YCSB core workload's default).
const YCSB_RECORD_BYTES: f64 = 1_000.0;

/// Peak resident bytes per device page of 4 KiB (pages of another size scale with it),
/// before the buffer pool: TPC-C at full scale (above) peaked at 2,149 MiB RSS on the
/// emulator's 1,048,576 pages (1,832 MiB the device kept, 105 MiB buffer pool, 20 MiB
/// mapping): 2,149 B a page. The buffer pool adds its share of the database, bounded
/// here by `buffer_share` × this: LinkBench at full (90% buffer, 65,536 pages) peaked
/// at 292 MiB, TPC-B at full (10%, 32,768 pages) at 138 MiB, both below the bound.
const PEAK_BYTES_PER_4K_PAGE: f64 = 2_149.0;
/// What a process takes besides its device (binary, tables, threads): rounded up from
/// the 138 MiB TPC-B's 32,768-page run peaked at, less its pages.
const BASE_BYTES: u64 = 128 << 20;

/// What an emulator device of TPC-C keeps per byte of database (page images, OOB and
/// cells of its data pages, the log pages not yet reclaimed, dead pages not yet
/// discarded). Measured 2026-11-28 at main 9c934a4, 10 warehouses on 1,024 blocks per
/// chip from a fresh device, 30 simulated s (docs/benchmarks.md): `memory_device_bytes`
/// was 1.43-1.46 times the database's pages after the run, every page held raw (the
/// highest taken; the page pool's packing of cold pages, `nand::pool`, keeps less).
const TPCC_DEVICE_BYTES_PER_DATABASE_BYTE: f64 = 1.46;
/// The engine's page mapping per device page of 4 KiB: the runs above kept 20 MiB of
/// mapping for the 1,048,576 pages of the full device.
const MAPPING_BYTES_PER_4K_PAGE: f64 = 20.0;
/// Bytes in a GiB, for the sizes the estimates and the runner's progress lines print.
pub(crate) const GIB: f64 = (1u64 << 30) as f64;

/// The estimate of one run.
pub fn estimate(input: &RunInput) -> Estimate {
    match input {
        RunInput::Engine(config) => engine(config),
        RunInput::Sqlite(config) => {
            let name = config.workload.name.as_str();
            let param = |k: &str| config.workload.params.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
            let (ops, per_op, row_bytes, size) = match name {
                "ycsb" => (
                    param("operations") + param("records"),
                    YCSB_CPU_PER_OP,
                    param("records") * YCSB_RECORD_BYTES,
                    format!("records {}, operations {}", param("records"), param("operations")),
                ),
                "tpcc" => (
                    param("transactions"),
                    SQLITE_TPCC_CPU_PER_TRANSACTION,
                    0.0,
                    format!("warehouses {}, transactions {}", param("warehouses"), param("transactions")),
                ),
                _ => {
                    let phases = config.workload.params.get("ops").and_then(|v| v.as_array()).map_or(1, Vec::len);
                    (
                        param("num") * phases as f64,
                        SQLITE_BENCH_CPU_PER_OP,
                        param("num") * param("value_size"),
                        format!("rows {} × {phases} phases, {} B values", param("num"), param("value_size")),
                    )
                }
            };
            // The quarters of the device the aging fills: 1, 2 or 3 at 75%, 50% or 25% free.
            let aging_cpu = config
                .free_space
                .map_or(0.0, |f| SQLITE_AGING_CPU + (1.0 - f.share()) * 4.0 * SQLITE_AGING_CPU_PER_QUARTER);
            Estimate {
                workload: format!("sqlite {name}"),
                size,
                sim_seconds: None,
                cpu_seconds: aging_cpu + ops * per_op,
                peak_bytes: sqlite_peak(&config.device, row_bytes),
                outgrows_device: None,
            }
        }
        RunInput::Index(config) => {
            let ops = f64::from(config.inserts) + f64::from(config.queries) + f64::from(config.scans);
            let device = DeviceConfig { preset: config.device.clone(), ..DeviceConfig::default() };
            Estimate {
                workload: format!("index {:?}", config.index).to_lowercase(),
                size: format!("{} inserts, {} B nodes", config.inserts, config.node_bytes),
                sim_seconds: None,
                cpu_seconds: ops * INDEX_CPU_PER_OP,
                peak_bytes: device_peak(&device, 0.0),
                outgrows_device: None,
            }
        }
    }
}

fn engine(config: &ExperimentConfig) -> Estimate {
    let name = config.workload.name.as_str();
    let preset = config.device.preset.as_str();
    let rate = ENGINE_RATES
        .iter()
        .find(|r| r.workload == name && (r.preset == preset || r.preset == ANY_PRESET))
        .unwrap_or(&UNMEASURED_ENGINE);
    let sim_seconds = config.driver.warmup_s.max(0.0) + config.driver.sim_time_s.max(0.0);
    let device_gib = raw_bytes(&config.device) / GIB;
    let params: Vec<String> = config.workload.params.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let blocks = config.device.blocks_per_chip.map_or(String::new(), |b| format!(", {b} blocks per chip"));
    let mut peak_bytes = device_peak(&config.device, config.engine.buffer_share);
    let outgrows_device = crate::ipa::tpcc_room(config).and_then(|(capacity_mib, needed_mib)| {
        let room = (needed_mib / capacity_mib).max(1.0);
        peak_bytes = tpcc_peak(config, needed_mib, room);
        (needed_mib > capacity_mib).then(|| {
            let blocks = config.device.geometry().map_or(0.0, |g| f64::from(g.blocks_per_chip));
            format!(
                "its database grows to about {:.1} GiB, its data regions hold {:.1} GiB; a device with room for \
                 it ({:.0} blocks per chip) would take about {:.0} GiB of memory",
                needed_mib / 1024.0,
                capacity_mib / 1024.0,
                (blocks * room).ceil(),
                peak_bytes as f64 / GIB
            )
        })
    });
    peak_bytes += log_device_peak(config);
    Estimate {
        workload: name.to_string(),
        size: format!("{} on {}{blocks}", params.join(", "), config.device.preset),
        sim_seconds: Some(sim_seconds),
        cpu_seconds: rate.setup_cpu_per_device_gib * device_gib + sim_seconds * rate.cpu_per_sim_second,
        peak_bytes,
        outgrows_device,
    }
}

/// The peak bytes of a run's own log device (0 when the log is on the database device):
/// its bookkeeping, as it keeps no page bytes (`workloads::Experiment`'s log device).
fn log_device_peak(config: &ExperimentConfig) -> u64 {
    config.log_device_geometry().map_or(0, |g| workloads::limits::bookkeeping_bytes(&g, false))
}

/// Data bytes of a device's pages (0 for a device its config cannot build; the run's
/// check says why).
fn raw_bytes(device: &DeviceConfig) -> f64 {
    device.geometry().map_or(0.0, |g| {
        f64::from(g.chips()) * f64::from(g.blocks_per_chip) * f64::from(g.pages_per_block) * f64::from(g.page_bytes)
    })
}

/// The peak memory of a run on `device` with a buffer pool of `buffer_share`: every
/// page resident at the measured bytes per page, plus the process's base.
fn device_peak(device: &DeviceConfig, buffer_share: f64) -> u64 {
    let per_page = PEAK_BYTES_PER_4K_PAGE * (1.0 + buffer_share.clamp(0.0, 1.0));
    BASE_BYTES + (raw_bytes(device) / 4096.0 * per_page) as u64
}

/// The peak memory of a SQLite run on `device` whose rows take `row_bytes`: the process,
/// the device's bookkeeping (its arrays, cells and OOB bytes, which it takes whatever it
/// holds: `workloads::limits::bookkeeping_bytes`) and the FTL's mapping, and the page
/// images its rows need. Not every page: aging writes repeated-byte ballast pages, which
/// share one image, and pages that died give theirs back, so a run keeps its live data.
fn sqlite_peak(device: &DeviceConfig, row_bytes: f64) -> u64 {
    let bookkeeping = device.geometry().map_or(0, |g| workloads::limits::bookkeeping_bytes(&g, !device.no_data));
    let mapping = raw_bytes(device) / 4096.0 * FTL_MAPPING_BYTES_PER_4K_PAGE;
    SQLITE_PROCESS_BYTES + bookkeeping + (mapping + row_bytes * SQLITE_BYTES_PER_ROW_BYTE) as u64
}

/// The peak memory of a TPC-C run on the emulator whose database grows to `needed_mib`,
/// on its device scaled by `room` (1 when it has room): the device's per-page arrays
/// (allocated up front) and the engine's mapping, the bytes the device keeps per byte
/// of database, and the buffer pool's share of the loaded database (with
/// `engine.buffer_of_aged_database`, of the database at its largest: a bound, as the pool
/// grows with the aging's inserts, not the run's).
fn tpcc_peak(config: &ExperimentConfig, needed_mib: f64, room: f64) -> u64 {
    let upfront = config.device.geometry().map_or(0.0, |g| g.memory_footprint().upfront_bytes as f64);
    let pages = raw_bytes(&config.device) / 4096.0;
    let pooled_mib = if config.engine.buffer_of_aged_database {
        needed_mib
    } else {
        needed_mib.min(crate::ipa::tpcc_loaded_mib(config))
    };
    let mib = 1024.0 * 1024.0;
    let bytes = (upfront + pages * MAPPING_BYTES_PER_4K_PAGE) * room
        + needed_mib * mib * TPCC_DEVICE_BYTES_PER_DATABASE_BYTE
        + config.engine.buffer_share.clamp(0.0, 1.0) * pooled_mib * mib;
    BASE_BYTES + bytes as u64
}

impl Estimate {
    /// Why the run cannot be made with `available_bytes` of memory (`None`: not known),
    /// naming the numbers; `None` when it can.
    pub fn refusal(&self, available_bytes: Option<u64>) -> Option<String> {
        if let Some(why) = &self.outgrows_device {
            return Some(format!("refused before starting: {why}"));
        }
        let available = available_bytes?;
        (self.peak_bytes > available).then(|| {
            format!(
                "refused before starting: needs about {:.1} GiB of memory at its peak, {:.1} GiB are available",
                self.peak_bytes as f64 / GIB,
                available as f64 / GIB
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Scale;
    use workloads::sqlite::flash::FlashRunConfig;

    fn first_run(id: &str, scale: Scale) -> RunInput {
        run_at(id, scale, 0)
    }

    fn run_at(id: &str, scale: Scale, i: usize) -> RunInput {
        let e = crate::catalogue::find(id).expect("listed");
        (e.implementation.as_ref().expect("implemented").runs)(scale).remove(i).input
    }

    /// Table 9's first full-scale run (10% buffer, [0x0]).
    fn full_table9_run(i: usize) -> ExperimentConfig {
        match run_at("ipa:table9", Scale::Full, i) {
            RunInput::Engine(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tpcc_for_the_papers_two_hours_outgrows_the_emulator_and_is_refused_with_the_numbers() {
        let mut config = full_table9_run(0);
        config.driver.sim_time_s = 2.0 * 3600.0;
        let e = estimate(&RunInput::Engine(config));
        assert_eq!(e.workload, "tpcc");
        assert_eq!(e.sim_seconds, Some(7210.0));
        let why = e.refusal(None).expect("refused whatever the memory");
        assert!(why.contains("its database grows to about") && why.contains("GiB of memory"), "{why}");
        assert!(why.contains("blocks per chip)"), "{why}");
        assert!(e.cpu_seconds > 3600.0, "{}", e.cpu_seconds);
    }

    #[test]
    fn full_tpcc_measures_in_proportion_to_its_database_and_has_room() {
        let e = estimate(&first_run("ipa:table9", Scale::Full));
        assert_eq!(e.sim_seconds, Some(10.0 + 162.0));
        assert_eq!(e.refusal(None), None);
        let quick = estimate(&first_run("ipa:table9", Scale::Quick));
        assert_eq!(quick.refusal(None), None, "quick TPC-C has room");
    }

    #[test]
    fn full_tpcc_grows_at_its_shapes_measured_rate() {
        // Table 9's [0x0] at a 10% buffer, aged: 1,867 tps and 51.6 aging transactions per
        // MiB of data regions measured, both × 1.4 for the schemes, at 800 B each.
        let (capacity, needed) = crate::ipa::tpcc_room(&full_table9_run(0)).expect("a TPC-C run");
        let mib = 1024.0 * 1024.0;
        let aging = 51.6 * 1.4 * capacity * 800.0 / mib;
        let running = 1_867.0 * 1.4 * 800.0 * 172.0 / mib;
        assert!((needed - (1_280.0 + aging + running)).abs() < 1e-6, "{needed} MiB");
        // At 20% the rates lie between the 10% and 50% measurements.
        let (_, at_20) = crate::ipa::tpcc_room(&full_table9_run(2)).expect("a TPC-C run");
        let (_, at_50) = crate::ipa::tpcc_room(&full_table9_run(4)).expect("a TPC-C run");
        assert!(needed < at_20 && at_20 < at_50, "{needed} {at_20} {at_50}");
    }

    #[test]
    fn a_run_above_the_memory_available_is_refused() {
        let e = estimate(&first_run("ipa:table7", Scale::Quick));
        assert!(e.peak_bytes > BASE_BYTES);
        assert_eq!(e.refusal(Some(e.peak_bytes)), None);
        let why = e.refusal(Some(e.peak_bytes / 2)).expect("refused");
        assert!(why.contains("GiB of memory at its peak") && why.contains("GiB are available"), "{why}");
    }

    #[test]
    fn a_sqlite_runs_peak_counts_its_devices_bookkeeping_and_rows_not_every_page() {
        let sqlite = |scale: Scale, i: usize| match run_at("nolgn:fig6", scale, i) {
            RunInput::Sqlite(c) => c,
            other => panic!("{other:?}"),
        };
        // The quick NoLgn-FTL run at 16 KiB values peaked at 140 MiB (SQLITE_PROCESS_BYTES).
        let quick = sqlite(Scale::Quick, 8);
        assert_eq!(quick.workload.params["value_size"], 16384);
        let peak = estimate(&RunInput::Sqlite(quick)).peak_bytes;
        assert!((140 << 20..=280 << 20).contains(&peak), "{} MiB", peak >> 20);
        // At full size the FEMU device's 18 GiB of pages are not all counted.
        let full = sqlite(Scale::Full, 0);
        let g = full.device.geometry().unwrap();
        let peak = estimate(&RunInput::Sqlite(full)).peak_bytes;
        assert!(peak > workloads::limits::bookkeeping_bytes(&g, true) && peak < g.capacity_bytes() / 8, "{peak}");
    }

    #[test]
    fn sqlite_and_index_runs_are_estimated_by_their_operations() {
        for id in ["nolgn:fig7", "ipl:table3"] {
            let quick = estimate(&first_run(id, Scale::Quick));
            let full = estimate(&first_run(id, Scale::Full));
            assert_eq!(quick.sim_seconds, None, "{id}");
            assert!(quick.cpu_seconds > 0.0 && full.cpu_seconds > quick.cpu_seconds, "{id}: {quick:?} {full:?}");
        }
    }

    #[test]
    fn aging_costs_the_same_overwrites_at_every_free_share_and_a_fill_per_quarter() {
        use workloads::sqlite::FreeSpace;
        let with_free = |free: Option<FreeSpace>| match first_run("nolgn:fig6", Scale::Full) {
            RunInput::Sqlite(c) => estimate(&RunInput::Sqlite(FlashRunConfig { free_space: free, ..c })).cpu_seconds,
            other => panic!("{other:?}"),
        };
        let none = with_free(None);
        let at = [FreeSpace::Pct75, FreeSpace::Pct50, FreeSpace::Pct25].map(|f| with_free(Some(f)) - none);
        assert_eq!(at, [12.0, 14.0, 16.0], "the aging's CPU seconds at 75%, 50% and 25% free");
    }
}
