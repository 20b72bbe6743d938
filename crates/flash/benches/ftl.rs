//! Criterion benches of the flash layer: a host write through the
//! page-level FTL in steady state, with page bytes kept and metadata only, under
//! sequential overwrites (GC finds fully invalid victims and only erases) and uniform
//! random overwrites (GC copies valid pages: write amplification about 5 at 10%
//! over-provisioning on the paper's device, more on this small one). The difference
//! between the two is the cost of GC copying. `cargo bench -p flash`; the figures are
//! for comparing builds on one machine, not results.

use criterion::{criterion_group, criterion_main, Criterion};
use flash::ftl::{self, Ftl, FtlConfig, FtlKind};
use nand::{Device, Geometry, MemoryStorage, SimTime};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

/// The paper's 16-chip SLC device cut to 32 blocks per chip (128 MiB raw), formatted as
/// a page-level FTL with 10% over-provisioning, filled once and overwritten once more
/// at random so GC is in steady state before anything is timed.
fn warm_ftl(keep_data: bool) -> (Box<dyn Ftl>, SimTime) {
    let g = Geometry { blocks_per_chip: 32, ..Geometry::paper_emulator() };
    let dev = Device::new(Box::new(MemoryStorage::new(g, keep_data)));
    let mut ftl = ftl::format(dev, &FtlConfig::new(FtlKind::Page)).expect("a page FTL fits the device");
    let page = vec![0x11u8; ftl.page_bytes()];
    let logical = ftl.logical_pages();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut now = 0;
    for lpn in (0..logical).chain((0..logical).map(|_| rng.gen_range(0..logical))) {
        now = ftl.write(lpn, &page, now).expect("warm-up write").start_ns;
    }
    (ftl, now)
}

fn page_ftl(c: &mut Criterion) {
    let mut group = c.benchmark_group("page_ftl/write");
    for keep_data in [true, false] {
        let data = if keep_data { "with_data" } else { "no_data" };
        for pattern in ["sequential", "uniform"] {
            let (mut ftl, mut now) = warm_ftl(keep_data);
            let logical = ftl.logical_pages();
            // Distinct bytes per write, as a database's pages would be.
            let mut page = vec![0u8; ftl.page_bytes()];
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut next = 0u32;
            group.bench_function(format!("{pattern}_{data}"), |b| {
                b.iter(|| {
                    let lpn = if pattern == "sequential" {
                        next = (next + 1) % logical;
                        next
                    } else {
                        rng.gen_range(0..logical)
                    };
                    page[..8].copy_from_slice(&now.to_le_bytes());
                    let t = ftl.write(lpn, &page, now).expect("a steady-state write");
                    now = now.max(t.start_ns);
                    black_box(t)
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = page_ftl
}
criterion_main!(benches);
