//! GC's page migrations and the in-place appends in one region over a run, by
//! replaying the run's page writes (evictions) on a block-level model of the region's
//! greedy GC and its pages' delta areas.
//!
//! Why not a closed form alone: the pages a run never writes (cold pages) cost GC work
//! only while they share blocks with written pages. FIFO cleaning moves them every pass
//! (the bound of Desnoyers' LRU model, "Analytic modeling of SSD write performance",
//! SYSTOR 2012); greedy GC with a host and a GC block open per chip (`flash::region`)
//! moves a cold page it meets into a GC block, where cold pages gather, and a block of
//! cold pages is never the one with the fewest valid pages again: greedy sorts cold
//! from written pages over time, and in the limit (the closed form of [`crate::gc`] on
//! the written pages alone) costs nothing for them. Where a run stands between the two
//! depends on how many writes it has made since the load, which no steady-state formula
//! has; this replay counts them.
//!
//! The model: the region's chips, each with its blocks of `pages_per_block` pages, one
//! open block for host writes and one for GC's. The tables' pages are laid down in the
//! order the load allocated them (their page numbers: a loader that inserts into
//! several tables at once interleaves their pages, one that loads table by table does
//! not), striped over the chips, then the fill's pages (preconditioning), which no
//! write touches. A DB page larger than a flash page is k flash pages
//! (`engine::store::PageStore`: flash pages `k·page .. k·page + k`, laid down on
//! consecutive chips as the region's round robin places them, every out-of-place write
//! programming all k); its delta area sits in its last flash page, so an append
//! programs that one alone. Each page write (an eviction) picks a DB page with
//! probability proportional to its rate ([`Page`]). In an IPA region it needs r
//! delta-records, drawn from its object's distribution ([`Appends`], [`crate::model`]);
//! it is appended in place while the records since the page's last out-of-place write
//! stay within N, else the page goes out-of-place with an empty delta area (on odd-MLC
//! flash only a page whose last flash page lands on an LSB page takes appends). The
//! load wrote every page out-of-place, so a run starts with every delta area empty: the
//! first evictions after the load are mostly appends, and a run shorter than a few
//! cycles of its pages appends more than the renewal model's long-run share. An
//! out-of-place write programs each of the page's flash pages in its chip's host
//! block; a chip with fewer than `min_free_blocks` free blocks collects the full block
//! with the fewest valid pages, moving those to its GC block. Writes are counted in DB
//! pages, migrations in flash pages, as the engine's and the region's counters count
//! them. [`crate::aging`] says how many writes, and which of them are measured. A
//! fixed seed (SplitMix64: Steele, Lea and Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014) makes the replay the same every time.

use crate::gc;
use std::collections::BTreeSet;

/// A page of the region: where the load put it (`order`: pages are laid down in
/// increasing order), how often the run writes it (`rate`, relative to the other
/// pages; 0 for a page the run never writes), and which of [`Appends::records`] its
/// evictions follow (`kind`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Page {
    pub order: u64,
    pub rate: f64,
    pub kind: u32,
}

/// How a region's pages take in-place appends: N records per delta area (0: no IPA),
/// per page kind P(an eviction needs r records) for r = 1..=N at index r − 1 (the rest
/// needs more than N and goes out-of-place), and the share of out-of-place writes that
/// land on a page taking appends (1; odd-MLC: the LSB pages').
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Appends {
    pub n: u32,
    pub records: Vec<Vec<f64>>,
    pub lsb_share: f64,
}

/// What a replayed stretch of page writes did: out-of-place writes of DB pages, and
/// GC's migrations of flash pages.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Done {
    pub out_of_place_writes: f64,
    pub migrations: f64,
}

impl Done {
    /// GC's flash page migrations per out-of-place DB page write (0 without one).
    pub fn migrations_per_write(&self) -> f64 {
        if self.out_of_place_writes > 0.0 {
            self.migrations / self.out_of_place_writes
        } else {
            0.0
        }
    }
}

/// A region as the replay takes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Region {
    pub chips: u32,
    /// Blocks per chip in the region's mode, and the pages programmed per block.
    pub blocks_per_chip: u32,
    pub pages_per_block: u32,
    /// The fill's flash pages (preconditioning): laid down after the tables', never
    /// written.
    pub static_pages: u64,
    /// Flash pages per DB page (k ≥ 1), programmed together by an out-of-place write.
    pub flash_pages_per_db_page: u32,
    /// DB pages per page of `pages`: 1, in an IPA region the tables' growth by the
    /// delta area (their rows spread over more pages).
    pub db_pages_per_page: f64,
    /// A chip collects while it has fewer free blocks than this.
    pub min_free_blocks: u32,
}

pub(crate) const SEED: u64 = 0x5eed_0f9c;

pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Where nothing is: a page's slot before it is laid down.
const NOWHERE: u32 = u32::MAX;

struct Chip {
    /// Free (erased) blocks, and the open host and GC blocks with their fill.
    free: Vec<u32>,
    host: (u32, u32),
    gc: (u32, u32),
    /// Full blocks by (valid pages, block): greedy's candidates, fewest valid first.
    full: BTreeSet<(u32, u32)>,
}

struct Replay {
    pages_per_block: u32,
    min_free: usize,
    /// Per block: the pages programmed in it (in order), how many are still valid, and
    /// whether it is full (in its chip's `full`).
    content: Vec<Vec<u32>>,
    valid: Vec<u32>,
    is_full: Vec<bool>,
    /// Per page: its block.
    at: Vec<u32>,
    chips: Vec<Chip>,
    migrations: u64,
}

impl Replay {
    /// Programs `page` into the chip's host (or GC) block, opening a free one when full.
    /// A write with no free block left is dropped (the room check keeps that from
    /// happening).
    fn program(&mut self, chip: usize, page: u32, gc: bool) {
        let c = &mut self.chips[chip];
        let open = if gc { &mut c.gc } else { &mut c.host };
        if open.1 == self.pages_per_block {
            let Some(block) = c.free.pop() else { return };
            let done = std::mem::replace(open, (block, 0)).0;
            c.full.insert((self.valid[done as usize], done));
            self.is_full[done as usize] = true;
        }
        let block = open.0;
        open.1 += 1;
        let old = self.at[page as usize];
        if old != NOWHERE {
            let v = self.valid[old as usize];
            if self.is_full[old as usize] {
                c.full.remove(&(v, old));
                c.full.insert((v - 1, old));
            }
            self.valid[old as usize] = v - 1;
        }
        self.content[block as usize].push(page);
        self.valid[block as usize] += 1;
        self.at[page as usize] = block;
    }

    /// Greedy GC on `chip` until it has `min_free` free blocks (or nothing to gain).
    fn collect(&mut self, chip: usize) {
        while self.chips[chip].free.len() < self.min_free {
            let Some(&(valid, victim)) = self.chips[chip].full.first() else { return };
            if valid >= self.pages_per_block {
                return;
            }
            self.chips[chip].full.remove(&(valid, victim));
            self.is_full[victim as usize] = false;
            let pages = std::mem::take(&mut self.content[victim as usize]);
            for page in pages {
                if self.at[page as usize] == victim {
                    self.migrations += 1;
                    self.program(chip, page, true);
                }
            }
            self.valid[victim as usize] = 0;
            self.chips[chip].free.push(victim);
        }
    }
}

/// One region's greedy GC, replayed write by write (see the module doc): the tables'
/// pages laid down in the load's order, then out-of-place writes drawn by rate.
pub struct RegionReplay {
    kind: Kind,
    /// The fraction of a write carried to the next call (calls ask for shares of writes).
    carry: f64,
}

enum Kind {
    /// Nothing written, or too few blocks: no GC.
    Idle,
    /// Pages past the room: every write out-of-place, at the closed form's migrations
    /// at its clamp (per DB page write: per flash page times its flash pages).
    Full(f64),
    Blocks(Box<Blocks>),
}

struct Blocks {
    replay: Replay,
    chips: usize,
    /// Flash pages per DB page: DB page `u` is flash pages `k·u .. k·u + k`.
    parts: u32,
    /// The DB pages' cumulative rates, in the load's order (a page's id is its place).
    cumulative: Vec<f64>,
    /// Per DB page (by id): its kind, the records its delta area holds, and whether it
    /// takes appends where it lies (its last flash page, which holds the delta area).
    kind: Vec<u32>,
    used: Vec<u32>,
    appendable: Vec<bool>,
    /// Per kind: P(r ≤ k records) for k = 1..=N.
    records_at_most: Vec<Vec<f64>>,
    lsb_share: f64,
    rng: SplitMix64,
}

impl Blocks {
    fn uniform(&mut self) -> f64 {
        self.rng.uniform()
    }

    /// Whether a page just written out-of-place takes appends (odd-MLC: an LSB page).
    fn lands_appendable(&mut self) -> bool {
        self.lsb_share >= 1.0 || (self.lsb_share > 0.0 && self.uniform() < self.lsb_share)
    }

    /// One eviction of page `id`: appended in place if its records fit the delta
    /// area's rest, else out-of-place. Returns whether it went out-of-place.
    fn evict(&mut self, id: u32) -> bool {
        let i = id as usize;
        if self.appendable[i] {
            let x = self.uniform();
            let cdf = &self.records_at_most[self.kind[i] as usize];
            let free = (cdf.len() as u32).saturating_sub(self.used[i]);
            let records = cdf.partition_point(|&c| c <= x) as u32 + 1;
            if records <= free {
                self.used[i] += records;
                return false;
            }
        }
        for flash in id * self.parts..(id + 1) * self.parts {
            let chip = flash as usize % self.chips;
            self.replay.collect(chip);
            self.replay.program(chip, flash, false);
        }
        self.used[i] = 0;
        self.appendable[i] = self.lands_appendable();
        true
    }
}

impl RegionReplay {
    /// `region` as the load left it, holding `pages` whose evictions take `appends`.
    pub fn new(pages: &[Page], region: Region, appends: &Appends) -> RegionReplay {
        let chips = region.chips.max(1) as usize;
        let per_block = region.pages_per_block.max(1);
        let blocks = region.blocks_per_chip as usize;
        let weight: f64 = pages.iter().map(|p| p.rate).sum();
        let idle = RegionReplay { kind: Kind::Idle, carry: 0.0 };
        if weight <= 0.0 || blocks < 3 {
            return idle;
        }
        // The DB pages in the load's order: `db_pages_per_page` of each (an IPA
        // region's tables spread their rows over more pages, each written as often as
        // its share), each of `parts` flash pages; then the fill's flash pages, never
        // written.
        let mut order: Vec<usize> = (0..pages.len()).collect();
        order.sort_by_key(|&i| pages[i].order);
        let scale = region.db_pages_per_page.max(f64::MIN_POSITIVE);
        let parts = region.flash_pages_per_db_page.max(1);
        let mut laid: Vec<(f64, u32)> = Vec::with_capacity((pages.len() as f64 * scale) as usize);
        for (k, &i) in order.iter().enumerate() {
            let copies = ((k + 1) as f64 * scale).floor() - (k as f64 * scale).floor();
            let p = pages[i];
            let kind = if (p.kind as usize) < appends.records.len() { p.kind } else { 0 };
            laid.extend((0..copies as usize).map(|_| (p.rate / copies, kind)));
        }
        let flash_pages = laid.len() as u64 * parts as u64 + region.static_pages;
        // Room: the pages must leave the kept free blocks free; a region past that is
        // taken as full (the closed form at its clamp).
        let min_free = region.min_free_blocks.max(1) as usize;
        let room = (blocks.saturating_sub(min_free + 1) * chips) as u64 * per_block as u64;
        if flash_pages > room {
            let per_write = gc::migrations_per_write(gc::MAX_UTILISATION) * parts as f64;
            return RegionReplay { kind: Kind::Full(per_write), ..idle };
        }
        let mut replay = Replay {
            pages_per_block: per_block,
            min_free,
            content: vec![Vec::new(); blocks * chips],
            valid: vec![0; blocks * chips],
            is_full: vec![false; blocks * chips],
            at: vec![NOWHERE; flash_pages as usize],
            chips: (0..chips)
                .map(|k| {
                    let mut free: Vec<u32> = (0..blocks).rev().map(|b| (k * blocks + b) as u32).collect();
                    let host = free.pop().expect("blocks ≥ 3");
                    let gc = free.pop().expect("blocks ≥ 3");
                    Chip { free, host: (host, 0), gc: (gc, 0), full: BTreeSet::new() }
                })
                .collect(),
            migrations: 0,
        };
        // Flash page ids in the load's order, striped over the chips.
        for id in 0..flash_pages as u32 {
            replay.program(id as usize % chips, id, false);
        }
        let mut cumulative = Vec::with_capacity(laid.len());
        let mut sum = 0.0;
        for &(rate, _) in &laid {
            sum += rate;
            cumulative.push(sum);
        }
        let n = appends.n as usize;
        let records_at_most = appends
            .records
            .iter()
            .map(|p| {
                let mut sum = 0.0;
                (0..n)
                    .map(|r| {
                        sum += p.get(r).copied().unwrap_or(0.0);
                        sum
                    })
                    .collect()
            })
            .collect();
        let kind: Vec<u32> = laid.iter().map(|&(_, kind)| kind).collect();
        let ids = laid.len();
        let mut blocks = Blocks {
            replay,
            chips,
            parts,
            cumulative,
            kind,
            used: vec![0; ids],
            appendable: vec![false; ids],
            records_at_most,
            lsb_share: if n > 0 && !appends.records.is_empty() { appends.lsb_share } else { 0.0 },
            rng: SplitMix64(SEED),
        };
        for i in 0..ids {
            blocks.appendable[i] = blocks.lands_appendable();
        }
        RegionReplay { kind: Kind::Blocks(Box::new(blocks)), ..idle }
    }

    /// Replays `writes` DB page writes (a fraction is carried to the next call), each
    /// a page drawn by rate, appended or written out-of-place.
    pub fn write(&mut self, writes: f64) -> Done {
        let total = self.carry + writes.max(0.0);
        let whole = total.floor();
        self.carry = total - whole;
        match &mut self.kind {
            Kind::Idle => Done::default(),
            Kind::Full(per_write) => Done { out_of_place_writes: whole, migrations: whole * *per_write },
            Kind::Blocks(b) => {
                let (sum, last) = (b.cumulative.last().copied().unwrap_or(0.0), b.cumulative.len() - 1);
                let before = b.replay.migrations;
                let mut out_of_place = 0u64;
                for _ in 0..whole as u64 {
                    let x = b.uniform() * sum;
                    let id = b.cumulative.partition_point(|&c| c <= x).min(last) as u32;
                    out_of_place += b.evict(id) as u64;
                }
                Done { out_of_place_writes: out_of_place as f64, migrations: (b.replay.migrations - before) as f64 }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Migrations per write over `measured` writes after `before` (0 without writes).
    fn migrations_per_write(pages: &[Page], region: Region, (before, measured): (f64, f64)) -> f64 {
        let mut replay = RegionReplay::new(pages, region, &Appends::default());
        replay.write(before);
        if measured < 1.0 {
            return 0.0;
        }
        replay.write(measured).migrations / measured
    }

    fn region(blocks_per_chip: u32) -> Region {
        Region {
            chips: 2,
            blocks_per_chip,
            pages_per_block: 64,
            static_pages: 0,
            flash_pages_per_db_page: 1,
            db_pages_per_page: 1.0,
            min_free_blocks: 2,
        }
    }

    /// `n` pages at `rate`, laid down from `order` on.
    fn pages(n: f64, rate: f64, order: u64) -> Vec<Page> {
        (0..n.round() as u64).map(|k| Page { order: order + k, rate, kind: 0 }).collect()
    }

    #[test]
    fn uniform_writes_settle_near_the_closed_form() {
        // 2 chips of 100 blocks, 97 of which hold pages beside the 2 kept free and the
        // open ones; 80% of the 98 circulating valid, written uniformly for 40 fills:
        // greedy's WA − 1 within 15% of the FIFO fixed point's at the same utilisation.
        let circulating: f64 = 2.0 * 98.0 * 64.0;
        let n = (0.8 * circulating).round();
        let hot = pages(n, 1.0, 0);
        let long = (30.0 * n, 10.0 * n);
        let simulated = migrations_per_write(&hot, region(100), long);
        let closed = gc::migrations_per_write(0.8);
        assert!((simulated / closed - 1.0).abs() < 0.15, "{simulated} against {closed}");
        // The same seed, the same result.
        assert_eq!(simulated, migrations_per_write(&hot, region(100), long));
    }

    #[test]
    fn cold_pages_loaded_among_written_ones_cost_moves_that_cold_blocks_do_not() {
        let circulating: f64 = 2.0 * 98.0 * 64.0;
        let (hot_n, cold_n) = ((0.5 * circulating).round(), (0.3 * circulating).round());
        let run = (20.0 * hot_n, 5.0 * hot_n);
        // Interleaved by the load: of every eight pages five written, three not.
        let mixed: Vec<Page> = (0..(hot_n + cold_n) as u64)
            .map(|k| Page { order: k, rate: if k % 8 < 5 { 1.0 } else { 0.0 }, kind: 0 })
            .collect();
        let mixed = migrations_per_write(&mixed, region(100), run);
        // Loaded after the written pages, the cold pages fill blocks of their own that
        // greedy never picks: the written pages alone in the room the cold ones leave,
        // the closed form's case.
        let apart = [pages(hot_n, 1.0, 0), pages(cold_n, 0.0, 1 << 32)].concat();
        let apart = migrations_per_write(&apart, region(100), run);
        let limit = gc::migrations_per_write(0.5 / 0.7);
        assert!(mixed > 1.3 * apart, "{mixed} against {apart}");
        assert!((apart / limit - 1.0).abs() < 0.25, "{apart} against {limit}");
        // No write, no GC; pages past the room: the closed form's clamp.
        let hot = pages(hot_n, 1.0, 0);
        assert_eq!(migrations_per_write(&hot, region(100), (0.0, 0.0)), 0.0);
        let full = pages(circulating, 1.0, 0);
        assert_eq!(migrations_per_write(&full, region(100), run), gc::migrations_per_write(gc::MAX_UTILISATION));
        // A DB page of two flash pages halves the room; each of its writes programs
        // two flash pages, and GC moves twice as many per DB page written.
        let halved = Region { flash_pages_per_db_page: 2, ..region(100) };
        let clamp = gc::migrations_per_write(gc::MAX_UTILISATION);
        assert_eq!(migrations_per_write(&hot, halved, run), 2.0 * clamp);
    }

    #[test]
    fn fresh_delta_areas_append_first_and_settle_on_the_renewal_share() {
        // Every eviction needs one record, N = 2: a page's cycle is one out-of-place
        // write and two appends, 2/3 appends in the long run. The load left every area
        // empty, so the first eviction of each page appends.
        let hot = pages(2_000.0, 1.0, 0);
        let appends = Appends { n: 2, records: vec![vec![1.0, 0.0]], lsb_share: 1.0 };
        let mut replay = RegionReplay::new(&hot, region(100), &appends);
        let first = replay.write(500.0);
        assert!(first.out_of_place_writes < 0.1 * 500.0, "{first:?}");
        replay.write(100_000.0);
        let late = replay.write(30_000.0);
        assert!((late.out_of_place_writes / 30_000.0 - 1.0 / 3.0).abs() < 0.02, "{late:?}");
        // Evictions needing more records than N never append; on odd-MLC flash half the
        // out-of-place writes land on a page that takes none.
        let large = Appends { n: 2, records: vec![vec![0.0, 0.0]], lsb_share: 1.0 };
        assert_eq!(RegionReplay::new(&hot, region(100), &large).write(1_000.0).out_of_place_writes, 1_000.0);
        let odd = Appends { lsb_share: 0.5, ..appends };
        let mut replay = RegionReplay::new(&hot, region(100), &odd);
        replay.write(100_000.0);
        // A cycle: 1 out-of-place write, then 2 appends on half of them: 1/2 appends.
        let late = replay.write(30_000.0);
        assert!((late.out_of_place_writes / 30_000.0 - 0.5).abs() < 0.02, "{late:?}");
    }
}
