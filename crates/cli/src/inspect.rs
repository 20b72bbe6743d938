//! `deltaflash inspect IMAGE`: geometry, regions, wear, page states of a device image:
//! per region and per chip (free, valid, appended = valid with an in-place append,
//! invalid, unused = retired or skipped by pSLC). An image of an IPL store or a
//! conventional FTL gets its geometry, what it holds and its device-wide wear.

use crate::table::{print_table, Row};
use flash::Flash;
use nand::{Device, ImageOptions, MemoryStorage};
use std::path::Path;

pub fn run(path: &Path) -> Result<(), String> {
    refuse_special_file(path)?;
    let read_only = ImageOptions { read_only: true, ..ImageOptions::default() };
    let storage = MemoryStorage::open_image_with(path, read_only).map_err(|e| e.to_string())?;
    let device = Device::new(Box::new(storage));
    let g = device.geometry().clone();
    println!("device image {}", path.display());
    print_table(&[
        Row::kv("cells", g.cell.name()),
        Row::kv("channels × chips per channel", format!("{} × {}", g.channels, g.chips_per_channel)),
        Row::kv("blocks per chip", g.blocks_per_chip),
        Row::kv("pages per block", g.pages_per_block),
        Row::kv("page + OOB bytes", format!("{} + {}", g.page_bytes, g.oob_bytes)),
        Row::kv("NOP (LSB pages) / endurance", format!("{} / {}", g.nop, g.endurance)),
        Row::kv(
            "host queue depth",
            match g.latencies.host_queue_depth {
                0 => "no limit".to_string(),
                n => n.to_string(),
            },
        ),
        Row::kv("raw capacity", format!("{:.1} MiB", g.capacity_bytes() as f64 / (1 << 20) as f64)),
        Row::kv("keeps page bytes", device.storage().keeps_data()),
    ]);
    let all_erases: Vec<u32> = (0..g.total_blocks()).map(|b| device.storage().erase_count(nand::BlockId(b))).collect();
    if device.storage().config_area().is_empty() {
        println!("\nno region layout stored (the device was never formatted)");
        print_histogram("device", &all_erases);
        return Ok(());
    }
    let flash = match Flash::open(device, 0) {
        Ok((flash, _)) => flash,
        // An IPL store or a conventional FTL: the device-wide wear is all it shows.
        Err(e @ flash::Error::WrongStore { .. }) => {
            println!("\n{e} (region details are for NoFTL regions)");
            print_histogram("device", &all_erases);
            return Ok(());
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    for region in flash.regions() {
        let id = flash.region_id(region.name()).expect("listed region");
        let o = flash.occupancy(id);
        let w = region.wear();
        let spec = region.spec();
        println!("\nregion {}", region.name());
        print_table(&[
            Row::kv("IPA mode", spec.ipa_mode.name()),
            Row::kv("chips", format!("{:?}", region.chips())),
            Row::kv("over-provisioning", format!("{:.3}", spec.over_provisioning)),
            Row::kv("logical pages", region.logical_pages()),
            Row::kv("valid pages", o.valid_pages),
            Row::kv("  of which trim records", o.tombstone_pages),
            Row::kv("invalid pages", o.invalid_pages),
            Row::kv("free pages", o.free_pages),
            Row::kv("free / retired blocks", format!("{} / {}", o.free_blocks, o.retired_blocks)),
            Row::kv("P/E min / mean / max", format!("{} / {:.1} / {}", w.pe_min, w.pe_mean, w.pe_max)),
        ]);
        print_histogram(region.name(), &region.erase_counts().collect::<Vec<_>>());
        let mut rows =
            vec![Row::new(["chip", "free", "valid", "appended", "invalid", "unused"].map(String::from).to_vec())];
        rows.extend(flash.chip_pages(id).iter().map(|c| {
            let counts = [c.free_pages, c.valid_pages, c.appended_pages, c.invalid_pages, c.unused_pages];
            Row::new(std::iter::once(c.chip.to_string()).chain(counts.map(|n| n.to_string())).collect())
        }));
        println!("page states per chip of {}", region.name());
        print_table(&rows);
    }
    Ok(())
}

/// An image is a regular file: a FIFO would block the open and the read until a writer
/// came, and a directory or device is no image either.
fn refuse_special_file(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "a socket or another special file"
    };
    Err(format!("{}: is {what}, not a device image file", path.display()))
}

/// Erase counts in up to ten equal-width buckets, with bars.
fn print_histogram(name: &str, counts: &[u32]) {
    let (Some(&min), Some(&max)) = (counts.iter().min(), counts.iter().max()) else {
        return;
    };
    let buckets = ((max - min + 1) as usize).min(10);
    let width = (max - min + 1).div_ceil(buckets as u32);
    let mut hist = vec![0usize; buckets];
    for &c in counts {
        hist[((c - min) / width) as usize] += 1;
    }
    let peak = *hist.iter().max().unwrap_or(&1);
    println!("wear histogram of {name} (erases per block → blocks)");
    let rows: Vec<Row> = hist
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let lo = min + i as u32 * width;
            let bar = "#".repeat((n * 40).div_ceil(peak.max(1)));
            Row::new(vec![format!("{lo}..{}", lo + width - 1), n.to_string(), bar])
        })
        .collect();
    print_table(&rows);
}
