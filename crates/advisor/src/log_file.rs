//! The log as the advisor reads it: what `deltaflash log export` writes from a database
//! image and `deltaflash advise --log` reads back, and what `--analyze IMAGE` builds in
//! memory. JSON lines: first a [`Header`] (the device, the catalog's objects, and where
//! the measured run begins), then one [`Row`] per log record, oldest first, each naming
//! the object whose page it changes (resolved from the catalog at export).
//!
//! [`objects`] turns the rows into the advisor's per-object input: update records at
//! or past `measured_from_lsn` are the measured run's (counted per page, their sizes
//! kept, those adding or removing a slot counted with their metadata bytes), and so
//! are its page allocations; earlier ones (the load, the warm-up) are only counted
//! apart.

use crate::{DeviceFacts, ObjectInput};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The value of [`Header::format`].
pub const FORMAT: &str = "deltaflash-log";
/// The version this code writes and reads.
pub const VERSION: u32 = 1;

/// A table or index of the catalog.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObjectEntry {
    pub name: String,
    /// "table" or "index".
    pub kind: String,
    /// The table it belongs to (itself for a table).
    pub table: String,
    /// Pages it holds (its extents, less freed pages).
    pub pages: u64,
    /// Its extents in the order it took them: [first page, pages used] in its region
    /// (the load's order of page allocation; absent in logs exported without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extents: Vec<[u32; 2]>,
    /// Pages per extent: it grows by whole extents (0: not known).
    #[serde(default)]
    pub extent_pages: u32,
    /// A table's rows by their stored bytes, [bytes, rows], ascending (absent for an
    /// index, and in logs exported without it): how many fit a page of a given body
    /// ([`crate::space`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub row_bytes: Vec<[u64; 2]>,
}

/// The first line of an exported log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// The device, its fields at the header's top level (`page_bytes`, `cell`, …).
    #[serde(flatten)]
    pub device: DeviceFacts,
    pub objects: Vec<ObjectEntry>,
    /// The first LSN of the measured run, when the export was given the run's result
    /// (`measured_from_lsn`); without it every record counts as measured.
    pub measured_from_lsn: Option<u64>,
}

/// One log record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub lsn: u64,
    pub tx: u64,
    /// update, clr, format, alloc, free, commit, end, checkpoint or image.
    #[serde(rename = "type")]
    pub kind: String,
    /// The object whose page the record changes (page records of catalog objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Changed bytes (update, clr, format: the after-images' lengths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Of those, the page header's and the slot directory's, for an update that adds or
    /// removes a slot (it moves the directory's start, `free_end`): what IPA's eviction
    /// rule counts against V (`engine::delta::choose_eviction`). Absent on other records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_bytes: Option<u64>,
}

/// The advisor's objects from the header's catalog and the update rows: the measured
/// run's updates per page and sizes, and the earlier updates counted apart. Rows naming
/// an object not in the header are an error naming the row.
pub fn objects(header: &Header, rows: &[Row], measured_from_lsn: Option<u64>) -> Result<Vec<ObjectInput>, String> {
    let mut out: Vec<ObjectInput> = header
        .objects
        .iter()
        .map(|o| ObjectInput {
            name: o.name.clone(),
            kind: o.kind.clone(),
            table: o.table.clone(),
            pages: o.pages,
            extent_pages: o.extent_pages,
            page_numbers: o.extents.iter().flat_map(|&[first, used]| first..first.saturating_add(used)).collect(),
            row_bytes: o.row_bytes.iter().map(|&[bytes, rows]| (bytes, rows)).collect(),
            ..Default::default()
        })
        .collect();
    let index: HashMap<&str, usize> = header.objects.iter().enumerate().map(|(i, o)| (o.name.as_str(), i)).collect();
    let mut per_page: HashMap<(usize, u16, u32), u64> = HashMap::new();
    for row in rows.iter().filter(|r| r.kind == "update" || r.kind == "alloc") {
        let Some(name) = &row.object else { continue };
        let &i = index.get(name.as_str()).ok_or_else(|| {
            format!("log record at LSN {}: object `{}` is not in the header's catalog", row.lsn, crate::quote(name))
        })?;
        let measured = measured_from_lsn.is_none_or(|from| row.lsn >= from);
        match (row.kind.as_str(), measured) {
            ("alloc", true) => out[i].allocated_pages += 1,
            ("alloc", false) => {}
            (_, false) => out[i].updates_before_measurement += 1,
            (_, true) => {
                *per_page.entry((i, row.region.unwrap_or_default(), row.page.unwrap_or_default())).or_default() += 1;
                out[i].update_bytes.push(row.bytes.unwrap_or_default());
                if let Some(meta) = row.meta_bytes {
                    out[i].slot_updates += 1;
                    out[i].slot_update_meta_sizes.record(meta);
                }
            }
        }
    }
    let mut counts: Vec<((usize, u16, u32), u64)> = per_page.into_iter().collect();
    counts.sort_unstable();
    for ((i, _, page), count) in counts {
        out[i].page_updates.push(count);
        out[i].updated_pages.push(page);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nand::{CellType, Latencies};

    fn header() -> Header {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            device: DeviceFacts {
                page_bytes: 4096,
                flash_page_bytes: 4096,
                cell: CellType::Slc,
                data_chips: 2,
                pages_per_chip: 1024,
                latencies: Latencies::slc_typical(),
                pages_per_block: 64,
                over_provisioning: 0.1,
                gc_foreground_free_blocks: 2,
                gc_background_free_blocks: 4,
            },
            objects: vec![ObjectEntry {
                name: "t".into(),
                kind: "table".into(),
                table: "t".into(),
                pages: 9,
                extents: vec![[0, 8], [16, 1]],
                extent_pages: 8,
                row_bytes: vec![[90, 40], [300, 60]],
            }],
            measured_from_lsn: Some(100),
        }
    }

    fn update(lsn: u64, page: u32, bytes: u64) -> Row {
        Row {
            lsn,
            tx: 1,
            kind: "update".into(),
            object: Some("t".into()),
            region: Some(2),
            page: Some(page),
            bytes: Some(bytes),
            meta_bytes: None,
        }
    }

    #[test]
    fn updates_before_the_measurement_are_counted_apart() {
        let rows = [update(10, 1, 4), update(20, 1, 4), update(100, 1, 8), update(120, 3, 2), update(130, 1, 8)];
        let o = &objects(&header(), &rows, Some(100)).unwrap()[0];
        assert_eq!(o.updates_before_measurement, 2);
        assert_eq!(o.page_updates, vec![2, 1]);
        assert_eq!(o.updated_pages, vec![1, 3]);
        assert_eq!(o.page_numbers, vec![0, 1, 2, 3, 4, 5, 6, 7, 16]);
        assert_eq!(o.update_bytes, vec![8, 2, 8]);
        assert_eq!(o.row_bytes, vec![(90, 40), (300, 60)]);
        let all = &objects(&header(), &rows, None).unwrap()[0];
        assert_eq!((all.updates_before_measurement, all.update_bytes.len()), (0, 5));
    }

    /// A header as `deltaflash log export` wrote it before the device's GC facts were
    /// in it: it reads, the region defaults standing in for them.
    #[test]
    fn a_header_without_the_gc_facts_reads_with_the_region_defaults() {
        let line = r#"{"format":"deltaflash-log","version":1,"page_bytes":4096,"flash_page_bytes":4096,"cell":"slc","data_chips":2,"pages_per_chip":1024,"latencies":{"read_ns":[25000,25000,25000],"program_ns":[200000,200000,200000],"erase_ns":1500000,"transfer_ps_per_byte":2500,"host_queue_depth":0},"objects":[{"name":"t","kind":"table","table":"t","pages":9}],"measured_from_lsn":100}"#;
        let h: Header = serde_json::from_str(line).unwrap();
        let mut expected = header();
        expected.device.pages_per_block = 0;
        expected.objects[0].extents.clear();
        expected.objects[0].extent_pages = 0;
        expected.objects[0].row_bytes.clear();
        assert_eq!(h, expected);
        // The device's fields stay at the header's top level.
        let written: serde_json::Value = serde_json::to_value(header()).unwrap();
        assert_eq!(written["page_bytes"], 4096);
        assert_eq!(written["cell"], "slc");
        assert_eq!(written["gc_background_free_blocks"], 4);
        assert!(written.get("device").is_none());
    }

    #[test]
    fn rows_round_trip_and_unknown_objects_are_named() {
        let text = serde_json::to_string(&update(5, 7, 3)).unwrap();
        assert_eq!(text, r#"{"lsn":5,"tx":1,"type":"update","object":"t","region":2,"page":7,"bytes":3}"#);
        assert_eq!(serde_json::from_str::<Row>(&text).unwrap(), update(5, 7, 3));
        let h: Header = serde_json::from_str(&serde_json::to_string(&header()).unwrap()).unwrap();
        assert_eq!(h, header());
        let mut stray = update(5, 7, 3);
        stray.object = Some("x".repeat(200));
        let e = objects(&header(), &[stray], None).unwrap_err();
        assert!(e.starts_with("log record at LSN 5: object `xxx") && e.len() < 200, "{e}");
    }
}
