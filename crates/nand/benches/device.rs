//! Criterion benches of the device model: a page program, a copyback,
//! a page read and a block erase through [`Device`], with page bytes kept and metadata only, and the
//! timing calendars on their own (issued in time order, and by 32 issuers whose clocks
//! spread as a closed-loop driver's do). `cargo bench -p nand`; the figures are for
//! comparing builds on one machine, not results.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use nand::{BlockId, Device, Geometry, MemoryStorage, Ppn, SimTime, Span, Timelines};
use std::hint::black_box;

/// The paper's 16-chip SLC device, cut to 16 blocks per chip (64 MiB) so a data-keeping
/// run stays small; endurance raised so the erase bench never wears a block out.
fn geometry() -> Geometry {
    Geometry { blocks_per_chip: 16, endurance: u32::MAX, ..Geometry::paper_emulator() }
}

fn device(keep_data: bool) -> Device {
    Device::new(Box::new(MemoryStorage::new(geometry(), keep_data)))
}

/// Pages in the order a striping writer programs them: page `i` of every block in
/// turn, so consecutive programs go to different chips.
struct Cursor {
    next: u32,
    total: u32,
}

impl Cursor {
    fn new(g: &Geometry) -> Self {
        Cursor { next: 0, total: g.total_pages() }
    }

    fn step(&mut self, g: &Geometry) -> Ppn {
        let blocks = g.total_blocks();
        let (page, block) = (self.next / blocks, self.next % blocks);
        self.next = (self.next + 1) % self.total;
        g.ppn(BlockId(block), page)
    }
}

fn program(c: &mut Criterion) {
    let mut group = c.benchmark_group("device/program");
    for keep_data in [true, false] {
        let name = if keep_data { "with_data" } else { "no_data" };
        let mut dev = device(keep_data);
        let g = dev.geometry().clone();
        let page = vec![0x3Cu8; g.page_bytes as usize];
        let oob = [0u8; 48];
        let mut cursor = Cursor::new(&g);
        let mut now: SimTime = 0;
        // Each program of a block's page 0 erases the block first: one erase per
        // `pages_per_block` programs is part of the figure, as on a device in use.
        group.bench_function(name, |b| {
            b.iter(|| {
                let ppn = cursor.step(&g);
                if g.page_in_block(ppn) == 0 {
                    dev.erase(g.block_of(ppn), now).expect("erase within endurance");
                }
                let spans = [Span::new(0, &page), Span::new(g.page_bytes as usize, &oob)];
                let t = dev.program(ppn, now, &spans).expect("a legal first program");
                now = now.max(t.start_ns);
                black_box(t)
            })
        });
    }
    group.finish();
}

fn copyback(c: &mut Criterion) {
    let mut group = c.benchmark_group("device/copyback");
    for keep_data in [true, false] {
        let name = if keep_data { "with_data" } else { "no_data" };
        let mut dev = device(keep_data);
        let g = dev.geometry().clone();
        // Block 0 of every chip is the source, programmed once with distinct pages; the
        // copies go to the chip's other blocks in turn, chips taking turns.
        for chip in 0..g.chips() {
            for p in 0..g.pages_per_block {
                let page: Vec<u8> = (0..g.page_bytes).map(|i| (i ^ p ^ chip) as u8).collect();
                let oob = [chip as u8, p as u8];
                let spans = [Span::new(0, &page), Span::new(g.page_bytes as usize, &oob)];
                dev.program(g.ppn(g.block_id(chip, 0), p), 0, &spans).expect("a legal first program");
            }
        }
        let header = [0u8; 16];
        let copies_per_chip = (g.blocks_per_chip - 1) * g.pages_per_block;
        let (mut next, mut now): (u32, SimTime) = (0, 0);
        // Each copy to a block's page 0 erases that block first, as in the program bench.
        group.bench_function(name, |b| {
            b.iter(|| {
                let (chip, copy) = (next % g.chips(), next / g.chips());
                next = (next + 1) % (copies_per_chip * g.chips());
                let (block, page) = (g.block_id(chip, 1 + copy / g.pages_per_block), copy % g.pages_per_block);
                if page == 0 {
                    dev.erase(block, now).expect("erase within endurance");
                }
                let (src, dst) = (g.ppn(g.block_id(chip, 0), page), g.ppn(block, page));
                let t = dev
                    .copyback(src, dst, now, &[Span::new(g.page_bytes as usize + 8, &header)])
                    .expect("a legal copyback");
                now = now.max(t.start_ns);
                black_box(t)
            })
        });
    }
    group.finish();
}

fn read(c: &mut Criterion) {
    let mut group = c.benchmark_group("device/read");
    for keep_data in [true, false] {
        let name = if keep_data { "with_data" } else { "no_data" };
        let mut dev = device(keep_data);
        let g = dev.geometry().clone();
        let mut cursor = Cursor::new(&g);
        let page: Vec<u8> = (0..g.page_bytes).map(|i| i as u8).collect();
        for _ in 0..g.total_pages() {
            dev.program(cursor.step(&g), 0, &[Span::new(0, &page)]).expect("a legal first program");
        }
        let mut now: SimTime = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                let read = dev.read(cursor.step(&g), now).expect("a page in range");
                now = now.max(read.timing.start_ns);
                black_box(read.data[0])
            })
        });
    }
    group.finish();
}

fn erase(c: &mut Criterion) {
    let mut group = c.benchmark_group("device/erase");
    for keep_data in [true, false] {
        let name = if keep_data { "full_block_with_data" } else { "full_block_no_data" };
        let g = geometry();
        let page = vec![0x5Au8; g.page_bytes as usize];
        let blocks = g.total_blocks();
        let mut next = 0;
        // A programmed block each time (its pages programmed in the setup, not timed).
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || {
                    let mut dev = device(keep_data);
                    let block = BlockId(next);
                    next = (next + 1) % blocks;
                    for p in 0..g.pages_per_block {
                        dev.program(g.ppn(block, p), 0, &[Span::new(0, &page)]).expect("a legal first program");
                    }
                    (dev, block)
                },
                |(dev, block)| black_box(dev.erase(*block, 0).expect("erase within endurance")),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn timing(c: &mut Criterion) {
    let mut group = c.benchmark_group("timing");
    let g = Geometry::paper_emulator();
    let lat = g.latencies.clone();
    let (array_ns, transfer_ns) = (lat.program_ns[0], lat.transfer_ns(g.raw_page_bytes()));
    // One issuer: each program issued when the previous one started, chips in turn.
    let mut lines = Timelines::new(g.chips(), g.channels, 0);
    let (mut chip, mut now) = (0u32, 0u64);
    group.bench_function("program_in_time_order", |b| {
        b.iter(|| {
            chip = (chip + 1) % g.chips();
            let t = lines.program(chip, g.channel_of_chip(chip), now, array_ns, transfer_ns);
            now = t.start_ns;
            black_box(t)
        })
    });
    // 32 issuers, each on its own clock (a closed loop at queue depth 32): operations
    // arrive out of time order and fill gaps before later bookings.
    let mut lines = Timelines::new(g.chips(), g.channels, 0);
    let mut clocks = [0u64; 32];
    let (mut issuer, mut state) = (0usize, 0x9E37_79B9_7F4A_7C15u64);
    group.bench_function("program_32_issuers", |b| {
        b.iter(|| {
            // xorshift: a fixed, cheap sequence of chips.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let chip = (state % g.chips() as u64) as u32;
            issuer = (issuer + 1) % clocks.len();
            let t = lines.program(chip, g.channel_of_chip(chip), clocks[issuer], array_ns, transfer_ns);
            clocks[issuer] = t.end_ns;
            black_box(t)
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = program, copyback, read, erase, timing
}
criterion_main!(benches);
