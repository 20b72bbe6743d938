//! Reading a finished baseline run (a run without IPA) into the advisor's [`Input`]:
//! per object the catalog's pages and the ARIES log's updates from its database image,
//! and the engine's counters from its `bench --json` result; then [`analyze`] runs the
//! analysis and the recommendation on them. Shared by the command line (`deltaflash
//! advise`, the dashboard's analyzer) and the Python package.
//!
//! Sources: the log (records still in the log region after the run, read with
//! `engine::log::history`) has updates and their byte ranges but no evictions, so the
//! eviction figures come from the engine's per-object counters of the measured run. A
//! database image or result that does not parse is an error naming the file.

use crate::{Input, ObjectInput, ObjectStats, Policy, Recommendation};
use engine::logrec::Body;
use engine::{Database, DbOptions};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// What the image holds: objects with pages and log updates, and the device.
pub struct FromImage {
    pub input: Input,
    pub log_records: usize,
}

/// Reads the catalog and the log of a database image.
pub fn read_image(path: &Path) -> Result<FromImage, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    // A scratch copy in memory: opening (restart, closing checkpoint) leaves the image as it is.
    let read_only = nand::ImageOptions { read_only: true, ..nand::ImageOptions::default() };
    let mut storage = nand::MemoryStorage::open_image_with(path, read_only).map_err(|e| at(&e))?;
    let _lock = storage.detach_image();
    let db = Database::open(nand::Device::new(Box::new(storage)), DbOptions::default()).map_err(|e| at(&e))?;
    let catalog = db.catalog().clone();
    let (mut device, _) = db.close_on().map_err(|e| at(&e))?;
    let region = |name: &str| device.region_id(name);
    let log = region(engine::db::LOG)
        .ok_or_else(|| at(&"the database keeps no log region (it was not written with the ARIES journal)"))?;
    let system_chips = region(engine::db::SYSTEM).map_or(0, |r| device.chips(r).len());
    let (log_chips, geometry) = (device.chips(log).len(), device.device().geometry().clone());
    let records = engine::log::history(device.as_mut(), log, 0).map_err(|e| at(&e))?;

    let mut objects = Vec::new();
    let mut owner: HashMap<(u16, u32), usize> = HashMap::new();
    let tables = catalog.tables.iter().map(|t| (t.name.clone(), "table", t.name.clone(), &t.space));
    let indexes = catalog.indexes.iter().map(|i| (i.name.clone(), "index", i.table.clone(), &i.space));
    for (name, kind, table, space) in tables.chain(indexes) {
        let mut pages = 0;
        for (k, &start) in space.extents.iter().enumerate() {
            let used = if k + 1 == space.extents.len() { space.used_in_last } else { space.extent_pages };
            for p in start..start + used {
                owner.insert((space.region, p), objects.len());
            }
            pages += used as u64;
        }
        pages = pages.saturating_sub(space.free.len() as u64);
        objects.push(ObjectInput { name, kind: kind.into(), table, pages, ..Default::default() });
    }
    let mut per_page: HashMap<(u16, u32), u64> = HashMap::new();
    for (_, record) in &records {
        if let Body::Update { page, ranges } = &record.body {
            let Some(&i) = owner.get(&(page.region, page.page)) else { continue };
            *per_page.entry((page.region, page.page)).or_default() += 1;
            objects[i].update_bytes.push(ranges.iter().map(|r| r.after.len() as u64).sum());
        }
    }
    for (key, count) in per_page {
        if let Some(&i) = owner.get(&key) {
            objects[i].page_updates.push(count);
        }
    }
    let data_chips = geometry.chips().saturating_sub((system_chips + log_chips) as u32).max(1);
    Ok(FromImage {
        input: Input {
            objects,
            page_bytes: catalog.page_bytes,
            flash_page_bytes: device.page_bytes(),
            cell: geometry.cell,
            data_chips,
        },
        log_records: records.len(),
    })
}

/// Adds the per-object counters of a `bench --json` result to `input`.
pub fn add_counters(input: &mut Input, result: &Value, source: &str) -> Result<(), String> {
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
        for (b, v) in target.write_sizes.iter_mut().zip(sizes) {
            *b = v.as_u64().ok_or_else(|| format!("{source}: objects[{k}].update_size_writes holds {v}"))?;
        }
    }
    Ok(())
}

/// What the advisor made of a baseline run.
pub struct Analysis {
    pub stats: Vec<ObjectStats>,
    pub recommendation: Recommendation,
    /// Log records read from the image.
    pub log_records: usize,
}

/// The statistics and the recommendation of a baseline run: what its image holds and
/// its `bench --json` result (`source` names the result in errors).
pub fn analyze(from_image: FromImage, result: &Value, source: &str) -> Result<Analysis, String> {
    let FromImage { mut input, log_records } = from_image;
    add_counters(&mut input, result, source)?;
    let stats = crate::analyze(&input);
    let recommendation = crate::recommend(&input, &Policy::default())
        .ok_or_else(|| format!("{source} wrote no data pages in its measured time: nothing to advise on"))?;
    Ok(Analysis { stats, recommendation, log_records })
}
