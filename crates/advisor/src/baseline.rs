//! Reading a finished baseline run (a run without IPA) into the advisor's [`Input`]:
//! the catalog's objects, the device and the ARIES log's records from its database
//! image ([`read_image`], or an exported log file, [`crate::log_file`]), and the
//! engine's counters, GC work and time from its `bench --json` result; then
//! [`analyze`] runs the analysis and the recommendation on them. Shared by the command
//! line (`deltaflash advise`, `deltaflash log export`, the dashboard's analyzer) and
//! the Python package.
//!
//! Sources: the log (records still in the log region after the run, read with
//! `engine::log::history`) has updates and their byte ranges but no evictions, so the
//! eviction figures come from the engine's per-object counters of the measured run. A
//! database image or result that does not parse is an error naming the file.

use crate::io_time::MeasuredTime;
use crate::log_file::{self, Header, ObjectEntry, Row};
use crate::model::{counted_exactly, Histogram};
use crate::{Baseline, DeviceFacts, DeviceState, Input, ObjectStats, Policy, Recommendation};
use engine::logrec::Body;
use engine::store::{SMALL_UPDATE_BYTES, UPDATE_SIZE_BUCKETS};
use engine::{Database, DbOptions};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// A log as the advisor reads it: its header and its records.
pub type Log = (Header, Vec<Row>);

/// Reads the catalog, the device and the log of a database image.
pub fn read_image(path: &Path) -> Result<Log, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    // A scratch copy in memory: opening (restart, closing checkpoint) leaves the image as it is.
    let read_only = nand::ImageOptions { read_only: true, ..nand::ImageOptions::default() };
    let mut storage = nand::MemoryStorage::open_image_with(path, read_only).map_err(|e| at(&e))?;
    let _lock = storage.detach_image();
    let mut db = Database::open(nand::Device::new(Box::new(storage)), DbOptions::default()).map_err(|e| at(&e))?;
    let catalog = db.catalog().clone();
    let row_bytes = row_bytes(&mut db).map_err(|e| at(&e))?;
    let (mut device, _) = db.close_on().map_err(|e| at(&e))?;
    let region = |name: &str| device.region_id(name);
    let log = region(engine::db::LOG)
        .ok_or_else(|| at(&"the database keeps no log region (it was not written with the ARIES journal)"))?;
    let system_chips = region(engine::db::SYSTEM).map_or(0, |r| device.chips(r).len());
    let (log_chips, geometry) = (device.chips(log).len(), device.device().geometry().clone());
    // The baseline runs in one data region; its over-provisioning and GC thresholds.
    let data_spec = device
        .region_ids()
        .find(|&r| engine::db::is_data_region(device.region_name(r)))
        .map(|r| device.region_spec(r).clone())
        .ok_or_else(|| at(&"the database has no data region"))?;
    let records = engine::log::history(device.as_mut(), log, 0).map_err(|e| at(&e))?;

    let mut objects = Vec::new();
    let mut owner: HashMap<(u16, u32), usize> = HashMap::new();
    let mut by_id: HashMap<u32, usize> = HashMap::new();
    let tables = catalog.tables.iter().map(|t| (t.id, t.name.clone(), "table", t.name.clone(), &t.space));
    let indexes = catalog.indexes.iter().map(|i| (i.id, i.name.clone(), "index", i.table.clone(), &i.space));
    for (k, (id, name, kind, table, space)) in tables.chain(indexes).enumerate() {
        let mut pages = 0;
        let mut extents = Vec::new();
        for (k, &start) in space.extents.iter().enumerate() {
            let used = if k + 1 == space.extents.len() { space.used_in_last } else { space.extent_pages };
            for p in start..start + used {
                owner.insert((space.region, p), objects.len());
            }
            pages += used as u64;
            extents.push([start, used]);
        }
        pages = pages.saturating_sub(space.free.len() as u64);
        by_id.insert(id, objects.len());
        let extent_pages = space.extent_pages;
        let row_bytes = row_bytes.get(k).cloned().unwrap_or_default();
        objects.push(ObjectEntry { name, kind: kind.into(), table, pages, extents, extent_pages, row_bytes });
    }
    let name_of = |i: Option<&usize>| i.map(|&i| objects[i].name.clone());
    let rows = records
        .iter()
        .map(|(lsn, record)| {
            let mut row = Row {
                lsn: *lsn,
                tx: record.tx,
                kind: String::new(),
                object: None,
                region: None,
                page: None,
                bytes: None,
                meta_bytes: None,
            };
            let mut on_page = |kind: &str, page: &engine::store::PageId, bytes: u64| {
                row.kind = kind.into();
                row.object = name_of(owner.get(&(page.region, page.page)));
                (row.region, row.page, row.bytes) = (Some(page.region), Some(page.page), Some(bytes));
            };
            let changed = |ranges: &[engine::logrec::Range]| ranges.iter().map(|r| r.after.len() as u64).sum();
            match &record.body {
                Body::Update { page, ranges } => {
                    on_page("update", page, changed(ranges));
                    row.meta_bytes = slot_change_meta_bytes(ranges);
                }
                Body::Clr { page, ranges, .. } => on_page("clr", page, changed(ranges)),
                Body::Format { page, ranges } => on_page("format", page, changed(ranges)),
                Body::Image { page, bytes } => on_page("image", page, bytes.len() as u64),
                Body::Alloc { object, page, .. } | Body::Free { object, page } => {
                    row.kind = if matches!(record.body, Body::Alloc { .. }) { "alloc" } else { "free" }.into();
                    (row.object, row.page) = (name_of(by_id.get(object)), Some(*page));
                }
                Body::Commit => row.kind = "commit".into(),
                Body::End => row.kind = "end".into(),
                Body::Checkpoint { .. } => row.kind = "checkpoint".into(),
            }
            row
        })
        .collect();
    let data_chips = geometry.chips().saturating_sub((system_chips + log_chips) as u32).max(1);
    let header = Header {
        format: log_file::FORMAT.into(),
        version: log_file::VERSION,
        device: DeviceFacts {
            page_bytes: catalog.page_bytes,
            flash_page_bytes: device.page_bytes(),
            cell: geometry.cell,
            data_chips,
            pages_per_chip: geometry.blocks_per_chip as u64 * geometry.pages_per_block as u64,
            latencies: geometry.latencies.clone(),
            pages_per_block: geometry.pages_per_block,
            over_provisioning: data_spec.over_provisioning,
            gc_foreground_free_blocks: data_spec.gc.foreground_free_blocks,
            gc_background_free_blocks: data_spec.gc.background_free_blocks,
        },
        objects,
        measured_from_lsn: None,
    };
    Ok((header, rows))
}

/// Each table's rows by their stored bytes ([bytes, rows], ascending), in the
/// catalog's table order: every row read and encoded as the heap stores it.
fn row_bytes(db: &mut Database) -> engine::Result<Vec<Vec<[u64; 2]>>> {
    let mut out = Vec::new();
    let mut encoded = Vec::new();
    for table in db.catalog().tables.iter().map(|t| t.name.clone()).collect::<Vec<_>>() {
        let id = db.table_id(&table)?;
        let columns = db.columns(id).to_vec();
        let mut counts: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
        let tx = db.begin();
        db.for_each_row(&tx, id, |row| {
            encoded.clear();
            engine::types::encode_row(&columns, row, &mut encoded);
            *counts.entry(encoded.len() as u64).or_default() += 1;
        })?;
        db.commit(tx)?;
        out.push(counts.into_iter().map(|(bytes, rows)| [bytes, rows]).collect());
    }
    Ok(out)
}

/// The header and slot-directory bytes of an update that adds or removes a slot (it
/// changes the slot count or the directory's start, `free_end`: header bytes 18–19 and
/// 22–23), `None` for any other update. The ranges are the record's changed spans,
/// sorted; the header is the first `HEADER_BYTES` (engine::page). The directory runs
/// from the new `free_end` to the delta area: where the record holds both its bytes,
/// the spans from there on; where it changed only one of them (the diff logs differing
/// bytes), the last span, which lies past the tuples.
fn slot_change_meta_bytes(ranges: &[engine::logrec::Range]) -> Option<u64> {
    let header = engine::page::HEADER_BYTES;
    let span = |r: &engine::logrec::Range| (r.offset as usize, r.offset as usize + r.after.len());
    let touches = |lo: usize, hi: usize| ranges.iter().any(|r| span(r).0 < hi && lo < span(r).1);
    if !touches(18, 20) && !touches(22, 24) {
        return None;
    }
    let free_end = ranges.iter().find_map(|r| {
        let from = 22usize.checked_sub(r.offset as usize)?;
        r.after.get(from..from + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    });
    let directory_from =
        free_end.or_else(|| ranges.last().map(|r| span(r).0)).map_or(usize::MAX, |from| from.max(header));
    // Bytes that differ (a span may hold equal bytes: the log merges spans fewer than 8
    // bytes apart, as in a shifted slot directory where most of each slot is unchanged).
    let meta = ranges
        .iter()
        .flat_map(|r| {
            let from = r.offset as usize;
            r.after.iter().enumerate().filter(move |&(k, &after)| {
                let at = from + k;
                (at < header || at >= directory_from) && r.before.get(k).is_none_or(|&before| before != after)
            })
        })
        .count() as u64;
    Some(meta)
}

/// Where a result's measured run begins in the log (`None` in results written before
/// it was recorded, or without a log).
pub fn measured_from_lsn(result: &Value) -> Option<u64> {
    result.get("measured_from_lsn").and_then(Value::as_u64)
}

/// The advisor's input from a log (header and records, from an image or an exported
/// file) and the baseline's `bench --json` result: the measured run's updates (from
/// the result's `measured_from_lsn`, else the log header's), the device, GC and time.
pub fn input_of(log: Log, result: &Value, source: &str) -> Result<Input, String> {
    let (header, rows) = log;
    let measured_from = measured_from_lsn(result).or(header.measured_from_lsn);
    if measured_from.is_none() {
        eprintln!(
            "{source}: no measured_from_lsn: every update record in the log counts as the measured run's (the load's too)"
        );
    }
    let number = |name: &str| result.get(name).and_then(Value::as_f64).unwrap_or(0.0);
    let count = |name: &str| result.get(name).and_then(Value::as_u64).unwrap_or(0);
    let per_transaction =
        |name: &str| result.pointer(&format!("/time_per_transaction_ms/{name}")).and_then(Value::as_f64).unwrap_or(0.0);
    let precondition = result.pointer("/config/driver/precondition").and_then(Value::as_str);
    let page_bytes = header.device.page_bytes;
    let mut input = Input {
        objects: log_file::objects(&header, &rows, measured_from)?,
        device: header.device,
        baseline: Baseline {
            gc_page_migrations: count("gc_page_migrations"),
            gc_erases: count("gc_erases"),
            time: MeasuredTime {
                throughput_tps: number("throughput_tps"),
                transaction_ms: per_transaction("response"),
                cpu_ms: per_transaction("other"),
                commit_ms: per_transaction("commits"),
                read_latency_ms: number("read_latency_ms"),
                write_latency_ms: number("write_latency_ms"),
                measured_s: number("sim_seconds"),
            },
            warmup_s: result.pointer("/config/driver/warmup_s").and_then(Value::as_f64).unwrap_or(0.0),
            measured_s: number("sim_seconds"),
            aging_writes: result
                .pointer("/precondition/windows")
                .and_then(Value::as_array)
                .map_or(0.0, |w| w.iter().filter_map(|w| w.get("host_writes").and_then(Value::as_f64)).sum()),
            device_state: DeviceState::of_precondition(precondition).map_err(|e| format!("{source}: {e}"))?,
            loaded_pages: number("database_mib") * (1u64 << 20) as f64 / page_bytes.max(1) as f64,
            heap_space: match result.pointer("/config/engine/heap_space") {
                None => Default::default(),
                Some(v) => serde_json::from_value(v.clone())
                    .map_err(|_| format!("{source}: config.engine.heap_space is {v} (expected packed or innodb)"))?,
            },
        },
    };
    add_counters(&mut input, result, source)?;
    Ok(input)
}

/// Adds the per-object counters of a `bench --json` result to `input`.
fn add_counters(input: &mut Input, result: &Value, source: &str) -> Result<(), String> {
    let objects = result
        .get("objects")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{source}: no \"objects\" array (is it a `bench --json` result?)"))?;
    for (k, o) in objects.iter().enumerate() {
        let field = |name: &str| {
            o.get(name).and_then(Value::as_u64).ok_or_else(|| format!("{source}: objects[{k}].{name} is not a count"))
        };
        let name =
            o.get("name").and_then(Value::as_str).ok_or_else(|| format!("{source}: objects[{k}] has no name"))?;
        let sizes = o
            .get("update_size_writes")
            .and_then(Value::as_array)
            .filter(|a| a.len() == engine::store::UPDATE_SIZE_BUCKETS)
            .ok_or_else(|| {
                format!(
                    "{source}: objects[{k}].update_size_writes is not {} counts",
                    engine::store::UPDATE_SIZE_BUCKETS
                )
            })?;
        let Some(target) = input.objects.iter_mut().find(|t| t.name == name) else {
            return Err(format!("{source}: object `{name}` is not in the database image's catalog"));
        };
        target.reads = field("reads")?;
        target.writes = field("out_of_place_writes")? + field("in_place_appends")?;
        for (b, v) in target.write_sizes.buckets.iter_mut().zip(sizes) {
            *b = v.as_u64().ok_or_else(|| format!("{source}: objects[{k}].update_size_writes holds {v}"))?;
        }
        target.write_sizes.small = small_sizes(o, &target.write_sizes, &format!("{source}: objects[{k}]"))?;
    }
    Ok(())
}

/// The exact counts of writes changing fewer than `SMALL_UPDATE_BYTES` body bytes
/// (`update_size_small`): `None` where the result has none (recorded before runs kept
/// them, or every write was larger), an error where they do not count the small
/// buckets' writes.
fn small_sizes(o: &Value, sizes: &Histogram, at: &str) -> Result<Option<[u64; SMALL_UPDATE_BYTES]>, String> {
    let Some(values) = o.get("update_size_small") else {
        return Ok(None);
    };
    let counts: Option<Vec<u64>> = values.as_array().map(|a| a.iter().map(Value::as_u64).collect()).unwrap_or(None);
    let small: [u64; SMALL_UPDATE_BYTES] = counts
        .and_then(|c| c.try_into().ok())
        .ok_or_else(|| format!("{at}.update_size_small is not {SMALL_UPDATE_BYTES} counts"))?;
    let in_small_buckets: u64 = (0..UPDATE_SIZE_BUCKETS).filter(|&k| counted_exactly(k)).map(|k| sizes[k]).sum();
    let counted: u64 = small.iter().sum();
    if counted != in_small_buckets {
        return Err(format!(
            "{at}.update_size_small counts {counted} writes where update_size_writes counts {in_small_buckets} \
             below {SMALL_UPDATE_BYTES} bytes"
        ));
    }
    Ok(Some(small))
}

/// What the advisor made of a baseline run.
pub struct Analysis {
    pub stats: Vec<ObjectStats>,
    pub recommendation: Recommendation,
    /// Log records read.
    pub log_records: usize,
}

/// The statistics and the recommendation of a baseline run: its log and its
/// `bench --json` result (`source` names the result in errors).
pub fn analyze(log: Log, result: &Value, source: &str) -> Result<Analysis, String> {
    let log_records = log.1.len();
    let input = input_of(log, result, source)?;
    let stats = crate::analyze(&input);
    let recommendation = crate::recommend(&input, &Policy::default())
        .ok_or_else(|| format!("{source} wrote no data pages in its measured time: nothing to advise on"))?;
    Ok(Analysis { stats, recommendation, log_records })
}

#[cfg(test)]
mod tests {
    use super::{slot_change_meta_bytes, Histogram, SMALL_UPDATE_BYTES};
    use engine::logrec::Range;
    use serde_json::json;

    /// One table of 8 pages on two chips, 1,000 one-byte writes in the measured run: the
    /// log (header and records) and the `bench --json` result.
    fn small_run() -> (super::Log, serde_json::Value) {
        let header = json!({
            "format": "deltaflash-log", "version": 1, "page_bytes": 4096, "flash_page_bytes": 4096,
            "cell": "slc", "data_chips": 2, "pages_per_chip": 1024, "pages_per_block": 64,
            "latencies": {"read_ns": [25000, 25000, 25000], "program_ns": [200000, 200000, 200000],
                "erase_ns": 1500000, "transfer_ps_per_byte": 2500, "host_queue_depth": 0},
            "objects": [{"name": "t", "kind": "table", "table": "t", "pages": 8, "extents": [[0, 8]],
                "extent_pages": 8}],
            "measured_from_lsn": 100
        });
        let rows: Vec<super::Row> = (0..80u64)
            .map(|k| {
                serde_json::from_value::<super::Row>(
                    json!({"lsn": 100 + k, "tx": 1, "type": "update", "object": "t", "region": 2,
                    "page": k % 8, "bytes": 1}),
                )
                .unwrap()
            })
            .collect();
        let mut sizes = vec![0u64; engine::store::UPDATE_SIZE_BUCKETS];
        sizes[0] = 1000;
        let result = json!({
            "throughput_tps": 100.0, "read_latency_ms": 0.5, "write_latency_ms": 0.5, "sim_seconds": 10.0,
            "gc_page_migrations": 10000, "gc_erases": 100,
            "time_per_transaction_ms": {"response": 10.0, "other": 1.0, "commits": 6.0},
            "config": {"driver": {"precondition": "none", "warmup_s": 1.0}},
            "objects": [{"name": "t", "reads": 0, "out_of_place_writes": 1000, "in_place_appends": 0,
                "update_size_writes": sizes}]
        });
        ((serde_json::from_value(header).unwrap(), rows), result)
    }

    #[test]
    fn the_wait_for_the_log_at_commit_is_read_and_kept_by_the_time_model() {
        // One table of 8 pages on two chips, 1,000 one-byte writes: appends and no GC
        // modelled, so the data chips' busy time falls to a fraction of the baseline's
        // (whose measured GC the model cannot place). A transaction of 10 ms waited 6 ms
        // for the log at commit, on the log's own chips: that part stays.
        let (log, result) = small_run();
        let r = super::analyze(log, &result, "the test's run").unwrap().recommendation;
        let t = r.predicted.advised.time;
        assert!(t.transaction_ms >= 7.0 && t.transaction_ms < 10.0, "{t:?}");
        assert!(t.throughput_tps <= 100.0 * 10.0 / 7.0, "{t:?}");
    }

    #[test]
    fn the_space_overhead_is_a_share_of_the_loaded_database() {
        // The result says the load left 4 pages (16 KiB) where the image holds 8 at the
        // run's end (the run grew the table): the delta areas' pages count against the
        // 4. The heap's rows come from the image, the heap space from the run's config:
        // InnoDB's leaves 3,808 bytes of a page's body to rows, 28 of 132 bytes and their
        // slots exactly, so any delta area costs one.
        let (mut log, mut result) = small_run();
        log.0.objects[0].row_bytes = vec![[132, 7_560]];
        result["database_mib"] = json!(16.0 / 1024.0);
        result["config"]["engine"] = json!({"heap_space": "innodb"});
        let input = super::input_of(log, &result, "the test's run").unwrap();
        assert_eq!(input.baseline.loaded_pages, 4.0);
        assert_eq!(input.baseline.heap_space, engine::heap::HeapSpace::Innodb);
        assert_eq!(input.objects[0].row_bytes, vec![(132, 7_560)]);
        let r = crate::recommend(&input, &crate::Policy::default()).unwrap();
        let p = &r.predicted.advised;
        let growth = crate::space::growth(&input.objects[0], 4096, r.scheme().area_bytes(), input.baseline.heap_space);
        assert!((growth - 28.0 / 27.0).abs() < 1e-12, "{growth}");
        assert!((p.space_overhead_db_pct - 8.0 * (growth - 1.0) * 100.0 / 4.0).abs() < 1e-9, "{p:?}");
        result["config"]["engine"] = json!({"heap_space": "sideways"});
        let e = super::input_of(small_run().0, &result, "the test's run").unwrap_err();
        assert!(e.contains("heap_space"), "{e}");
    }

    /// A span whose bytes were all 0 before.
    fn range(offset: u16, after: &[u8]) -> Range {
        Range { offset, before: vec![0; after.len()], after: after.to_vec() }
    }

    #[test]
    fn exact_small_sizes_are_read_where_they_count_the_small_buckets() {
        // 3 writes of 8 bytes and one of 40: the small counts hold the three.
        let mut sizes = Histogram::default();
        sizes[3] = 3;
        sizes[5] = 1;
        let mut small = vec![0u64; SMALL_UPDATE_BYTES];
        small[8] = 3;
        let read = super::small_sizes(&json!({ "update_size_small": small }), &sizes, "r.json: objects[0]").unwrap();
        assert_eq!(read.map(|s| s[8]), Some(3));
        // A result recorded before runs kept them: the buckets alone.
        assert_eq!(super::small_sizes(&json!({}), &sizes, "r.json: objects[0]").unwrap(), None);
        // Counts that disagree with the buckets, or of the wrong length, are refused by name.
        small[9] = 1;
        let e = super::small_sizes(&json!({ "update_size_small": small }), &sizes, "r.json: objects[0]").unwrap_err();
        assert!(e.contains("r.json: objects[0].update_size_small counts 4 writes") && e.contains("counts 3"), "{e}");
        let e = super::small_sizes(&json!({ "update_size_small": [1, 2] }), &sizes, "r.json: objects[0]").unwrap_err();
        assert!(e.contains("is not 32 counts"), "{e}");
    }

    #[test]
    fn a_slot_insert_counts_its_header_and_directory_bytes() {
        // A B+-tree insert: slot count and free_end (4000 = 0x0FA0) in the header, the
        // tuple at 500, the shifted slots from 4000 on; only differing bytes count.
        let insert = [range(18, &[5, 0, 0, 0, 0xA0, 0x0F]), range(500, &[7; 20]), range(4000, &[1; 40])];
        assert_eq!(slot_change_meta_bytes(&insert), Some(3 + 40));
        // Only free_end's low byte changed: the last span is the directory.
        let low = [range(18, &[5, 0, 0, 0, 0xA0]), range(500, &[7; 20]), range(4000, &[1; 40])];
        assert_eq!(slot_change_meta_bytes(&low), Some(2 + 40));
        // A merged span of shifted slots: the equal bytes in it do not count.
        let shifted = Range { offset: 4000, before: vec![1, 2, 3, 4, 1, 2], after: vec![1, 9, 3, 4, 1, 9] };
        assert_eq!(slot_change_meta_bytes(&[range(18, &[5]), shifted]), Some(1 + 2));
        // An in-place update of a tuple changes no slot.
        assert_eq!(slot_change_meta_bytes(&[range(500, &[7; 4])]), None);
    }
}
