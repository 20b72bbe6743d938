//! Measures what writing through to an image file costs: programs, appends and erases
//! per second on the in-memory device and on an image under each sync mode.
//!
//! `cargo run --release -p nand --example write_through [OPS]` (default 200,000).
//! The sync modes differ only at sync points; this marks one commit every 16 operations.

use nand::{BlockId, Device, Geometry, ImageOptions, MemoryStorage, Span, SyncMode, SyncPoint};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ops: u64 = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(200_000);
    let mut g = Geometry::paper_emulator();
    g.blocks_per_chip = 256;
    let dir = tempfile::tempdir()?;
    println!(
        "{ops} operations (first programs, 64-byte appends, erases) on {} pages of {} bytes",
        g.total_pages(),
        g.page_bytes
    );
    println!("{:<22} {:>12} {:>14}", "store", "ops/s", "µs per op");
    let memory = run(Device::new(Box::new(MemoryStorage::new(g.clone(), true))), ops)?;
    report("memory", ops, memory);
    for (name, sync) in [
        ("image, sync off", SyncMode::Off),
        ("image, sync normal", SyncMode::Normal),
        ("image, sync full", SyncMode::Full),
    ] {
        let path = dir.path().join(format!("{name}.img").replace([' ', ','], "_"));
        drop(MemoryStorage::create_image(&path, g.clone(), true)?);
        let storage = MemoryStorage::open_image_with(&path, ImageOptions { read_only: false, sync })?;
        report(name, ops, run(Device::new(Box::new(storage)), ops)?);
    }
    Ok(())
}

fn report(name: &str, ops: u64, seconds: f64) {
    println!("{name:<22} {:>12.0} {:>14.2}", ops as f64 / seconds, seconds * 1e6 / ops as f64);
}

/// Fills blocks in order (a first program, then three appends per page), erasing each
/// block before reuse; a commit sync point every 16 operations. Returns wall seconds.
fn run(mut d: Device, ops: u64) -> Result<f64, Box<dyn std::error::Error>> {
    let g = d.geometry().clone();
    let page = vec![0x5Au8; g.page_bytes as usize];
    let (mut block, mut page_in_block, mut appends) = (0u32, 0u32, 0u32);
    let start = Instant::now();
    for op in 0..ops {
        let ppn = g.ppn(BlockId(block), page_in_block);
        if page_in_block == 0 && appends == 0 && d.storage().program_count(ppn) > 0 {
            d.erase(BlockId(block), 0)?;
        } else if appends == 0 {
            d.program(ppn, 0, &[Span::new(0, &page)])?;
            appends = 1;
        } else {
            d.program(ppn, 0, &[Span::new(64 * appends as usize, &[0u8; 64])])?;
            appends = (appends + 1) % g.nop as u32;
            if appends == 0 {
                page_in_block += 1;
                if page_in_block == g.pages_per_block {
                    page_in_block = 0;
                    block = (block + 1) % g.total_blocks();
                }
            }
        }
        if op % 16 == 15 {
            d.storage_mut().sync(SyncPoint::Commit)?;
        }
    }
    d.storage_mut().flush()?;
    Ok(start.elapsed().as_secs_f64())
}
