//! GC and wear-levelling policies: pure functions of a snapshot of one chip's blocks.
//!
//! The region keeps its per-block bookkeeping as a slice of [`BlockSnapshot`] per chip
//! and hands that slice to these functions, which only choose; the region executes the
//! choice. Ties go to the lowest block index, so choices are deterministic.
//!
//! [`BlockTable`] holds those snapshots for a NoFTL region or an FTL's page store and
//! keeps, beside them, an index of the full blocks by valid count, so greedy GC finds its
//! victim without scanning the chip: the lowest non-empty valid-count bucket, and in it
//! the lowest block index (the same tie rule as the scan, [`choose_victim_within`]).
//! Invariant: a block is in exactly one bucket of its chip's index, the one of its valid
//! count, iff its state is [`BlockState::Full`]; every change goes through the table's
//! setters, which keep that true.

use prefetch_index::prefetch_index;
use serde::{Deserialize, Serialize};

/// Lifecycle of a block within a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Erased, in the free pool.
    Free,
    /// Taking first programs (host or GC destination).
    Active,
    /// Written; a GC candidate.
    Full,
    /// A GC victim whose live pages are being moved out; erased (or retired) next.
    Collecting,
    /// Worn out; never used again.
    Retired,
}

/// What a policy may know about a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockSnapshot {
    pub state: BlockState,
    /// Pages holding live data (or live trim records).
    pub valid: u32,
    pub erase_count: u32,
    /// Region write sequence number when the block last took a page.
    pub last_write_seq: u64,
}

/// How GC picks its victim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    /// Fewest valid pages.
    Greedy,
    /// Highest (1 − u)·age / (1 + u), u = valid share (Rosenblum & Ousterhout's LFS
    /// cleaner): old, mostly-invalid blocks first, so cold data is not moved for little.
    CostBenefit,
}

impl std::str::FromStr for VictimPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "greedy" => Ok(VictimPolicy::Greedy),
            "cost-benefit" => Ok(VictimPolicy::CostBenefit),
            other => Err(format!("unknown GC policy `{other}` (expected greedy or cost-benefit)")),
        }
    }
}

/// Picks a GC victim among full blocks that have at least one invalid page and at most
/// `max_valid` valid pages (the room GC has left to move them to), by scanning the
/// chip; blocks `locked` names (by index in `blocks`) are no candidates. `usable_pages`
/// is how many pages a block holds in this region. Ties go to the lowest index.
/// [`BlockTable::choose_victim_skipping`] gives the same answer without the scan for
/// greedy GC.
pub fn choose_victim_within(
    blocks: &[BlockSnapshot],
    usable_pages: u32,
    policy: VictimPolicy,
    now_seq: u64,
    max_valid: u32,
    locked: impl Fn(usize) -> bool,
) -> Option<usize> {
    let candidates = blocks
        .iter()
        .enumerate()
        .filter(|&(i, b)| b.state == BlockState::Full && b.valid < usable_pages && b.valid <= max_valid && !locked(i));
    match policy {
        VictimPolicy::Greedy => candidates.min_by_key(|&(i, b)| (b.valid, i)).map(|(i, _)| i),
        VictimPolicy::CostBenefit => {
            let mut best: Option<(usize, f64)> = None;
            for (i, b) in candidates {
                let u = b.valid as f64 / usable_pages as f64;
                let age = now_seq.saturating_sub(b.last_write_seq) as f64 + 1.0;
                let score = (1.0 - u) * age / (1.0 + u);
                if best.is_none_or(|(_, s)| score > s) {
                    best = Some((i, score));
                }
            }
            best.map(|(i, _)| i)
        }
    }
}

/// `sets` sets of small integers below a fixed bound, each a bitmap with a summary word
/// per 64 words, so the lowest member of a set is found in (bound / 4096) + 2 word reads.
/// The sets' words are interleaved (word `w` of every set side by side), so moving a
/// member to a neighbouring set, as a block's valid count changing by one does, touches
/// one cache line.
#[derive(Clone, Debug)]
struct BitSets {
    sets: usize,
    /// Word `w` of set `s` at `w * sets + s`.
    words: Vec<u64>,
    words_per_set: usize,
    /// Summary word `x` of set `s` at `s * summary_words + x`; its bit `y` is set iff
    /// word `64 x + y` of the set is not zero.
    summary: Vec<u64>,
    summary_words: usize,
}

impl BitSets {
    fn new(sets: usize, bound: usize) -> BitSets {
        let words_per_set = bound.div_ceil(64);
        let summary_words = words_per_set.div_ceil(64);
        BitSets {
            sets,
            words: vec![0; words_per_set * sets],
            words_per_set,
            summary: vec![0; summary_words * sets],
            summary_words,
        }
    }

    fn heap_bytes(&self) -> u64 {
        crate::heap::vec(&self.words) + crate::heap::vec(&self.summary)
    }

    fn insert(&mut self, set: usize, i: usize) {
        self.words[i / 64 * self.sets + set] |= 1 << (i % 64);
        self.summary[set * self.summary_words + i / 4096] |= 1 << ((i / 64) % 64);
    }

    /// Starts loading the word that holds `i` in `set` (and its neighbouring sets).
    fn prefetch(&self, set: usize, i: usize) {
        prefetch_index(&self.words, i / 64 * self.sets + set);
    }

    fn remove(&mut self, set: usize, i: usize) {
        let word = &mut self.words[i / 64 * self.sets + set];
        *word &= !(1 << (i % 64));
        if *word == 0 {
            self.summary[set * self.summary_words + i / 4096] &= !(1 << ((i / 64) % 64));
        }
    }

    fn first(&self, set: usize) -> Option<usize> {
        self.first_from(set, 0)
    }

    /// The lowest member of `set` at or above `from`.
    fn first_from(&self, set: usize, from: usize) -> Option<usize> {
        let w = from / 64;
        if w >= self.words_per_set {
            return None;
        }
        let word = |w: usize| self.words[w * self.sets + set];
        let here = word(w) & (u64::MAX << (from % 64));
        if here != 0 {
            return Some(w * 64 + here.trailing_zeros() as usize);
        }
        // The next non-zero word after `w`: in the rest of its summary word, else in the
        // summary words after it.
        let summary = &self.summary[set * self.summary_words..(set + 1) * self.summary_words];
        let s = w / 64;
        let above = |bit: usize| u64::MAX.checked_shl(bit as u32 + 1).unwrap_or(0);
        let (s, bits) = match summary[s] & above(w % 64) {
            0 => summary.iter().enumerate().skip(s + 1).find(|(_, &x)| x != 0).map(|(i, &x)| (i, x))?,
            bits => (s, bits),
        };
        let w = s * 64 + bits.trailing_zeros() as usize;
        Some(w * 64 + word(w).trailing_zeros() as usize)
    }

    /// The members of `set` in increasing order.
    fn iter(&self, set: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.first(set), move |&i| self.first_from(set, i + 1))
    }
}

/// One chip's full blocks by valid count.
#[derive(Clone, Debug)]
struct ChipIndex {
    /// Set `v`: blocks (index within the chip) with `v` valid pages.
    buckets: BitSets,
    /// Members per bucket, and the buckets that have any (set 0).
    sizes: Vec<u32>,
    nonempty: BitSets,
}

impl ChipIndex {
    fn new(blocks_per_chip: usize, usable_pages: u32) -> ChipIndex {
        let buckets = usable_pages as usize + 1;
        ChipIndex {
            buckets: BitSets::new(buckets, blocks_per_chip),
            sizes: vec![0; buckets],
            nonempty: BitSets::new(1, buckets),
        }
    }

    fn insert(&mut self, valid: u32, block: usize) {
        let v = valid as usize;
        self.buckets.insert(v, block);
        self.sizes[v] += 1;
        if self.sizes[v] == 1 {
            self.nonempty.insert(0, v);
        }
    }

    fn remove(&mut self, valid: u32, block: usize) {
        let v = valid as usize;
        self.buckets.remove(v, block);
        self.sizes[v] -= 1;
        if self.sizes[v] == 0 {
            self.nonempty.remove(0, v);
        }
    }
}

/// The blocks of a region or page store, chip after chip (`blocks_per_chip` each), with
/// the greedy victim index described in the module comment.
#[derive(Clone, Debug)]
pub struct BlockTable {
    blocks: Vec<BlockSnapshot>,
    blocks_per_chip: usize,
    /// log2(blocks_per_chip) when it is a power of two.
    chip_shift: Option<u32>,
    usable_pages: u32,
    chips: Vec<ChipIndex>,
}

impl std::ops::Index<usize> for BlockTable {
    type Output = BlockSnapshot;
    fn index(&self, i: usize) -> &BlockSnapshot {
        &self.blocks[i]
    }
}

impl BlockTable {
    /// `chips × blocks_per_chip` free blocks of `usable_pages` pages each.
    pub fn new(chips: usize, blocks_per_chip: u32, usable_pages: u32) -> BlockTable {
        let bpc = blocks_per_chip as usize;
        let blank = BlockSnapshot { state: BlockState::Free, valid: 0, erase_count: 0, last_write_seq: 0 };
        BlockTable {
            blocks: vec![blank; chips * bpc],
            blocks_per_chip: bpc,
            chip_shift: bpc.is_power_of_two().then(|| bpc.trailing_zeros()),
            usable_pages,
            chips: (0..chips).map(|_| ChipIndex::new(bpc, usable_pages)).collect(),
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, BlockSnapshot> {
        self.blocks.iter()
    }

    /// The heap bytes of the snapshots and the victim index.
    pub fn heap_bytes(&self) -> u64 {
        let index = |c: &ChipIndex| c.buckets.heap_bytes() + crate::heap::vec(&c.sizes) + c.nonempty.heap_bytes();
        crate::heap::vec(&self.blocks) + crate::heap::vec_with(&self.chips, index)
    }

    /// The snapshots of one chip's blocks (for the scanning policies).
    pub fn chip(&self, chip: usize) -> &[BlockSnapshot] {
        &self.blocks[chip * self.blocks_per_chip..(chip + 1) * self.blocks_per_chip]
    }

    /// Replaces a block's snapshot whole.
    pub fn set(&mut self, i: usize, snapshot: BlockSnapshot) {
        self.unindex(i);
        self.blocks[i] = snapshot;
        self.index(i);
    }

    pub fn set_state(&mut self, i: usize, state: BlockState) {
        self.set(i, BlockSnapshot { state, ..self.blocks[i] });
    }

    pub fn set_erase_count(&mut self, i: usize, erase_count: u32) {
        self.blocks[i].erase_count = erase_count;
    }

    pub fn set_last_write_seq(&mut self, i: usize, seq: u64) {
        self.blocks[i].last_write_seq = seq;
    }

    /// One more live page in block `i`.
    pub fn add_valid(&mut self, i: usize) {
        let b = &mut self.blocks[i];
        b.valid += 1;
        if b.state == BlockState::Full {
            let valid = b.valid;
            self.move_bucket(i, valid - 1, valid);
        }
    }

    /// Starts loading block `i`'s entry into the cache, ahead of a change to it.
    pub fn prefetch(&self, i: usize) {
        prefetch_index(&self.blocks, i);
    }

    /// Starts loading the victim-index word a live page fewer in block `i` changes
    /// (its entry should be in the cache: see [`BlockTable::prefetch`]).
    pub fn prefetch_bucket(&self, i: usize) {
        let b = &self.blocks[i];
        if b.state == BlockState::Full {
            let (chip, block) = self.split(i);
            self.chips[chip].buckets.prefetch(b.valid as usize, block);
        }
    }

    /// One live page fewer in block `i`.
    pub fn sub_valid(&mut self, i: usize) {
        let b = &mut self.blocks[i];
        b.valid -= 1;
        if b.state == BlockState::Full {
            let valid = b.valid;
            self.move_bucket(i, valid + 1, valid);
        }
    }

    /// Moves full block `i` from the bucket of valid count `from` to that of `to`: with
    /// the buckets' words interleaved, one cache line for neighbouring counts.
    fn move_bucket(&mut self, i: usize, from: u32, to: u32) {
        let (chip, block) = self.split(i);
        let index = &mut self.chips[chip];
        index.remove(from, block);
        index.insert(to, block);
    }

    /// (chip, block within the chip) of block `i`; hot, hence no division when the
    /// blocks per chip are a power of two.
    fn split(&self, i: usize) -> (usize, usize) {
        match self.chip_shift {
            Some(shift) => (i >> shift, i & ((1 << shift) - 1)),
            None => (i / self.blocks_per_chip, i % self.blocks_per_chip),
        }
    }

    fn index(&mut self, i: usize) {
        let b = self.blocks[i];
        if b.state == BlockState::Full {
            let (chip, block) = self.split(i);
            self.chips[chip].insert(b.valid, block);
        }
    }

    fn unindex(&mut self, i: usize) {
        let b = self.blocks[i];
        if b.state == BlockState::Full {
            let (chip, block) = self.split(i);
            self.chips[chip].remove(b.valid, block);
        }
    }

    /// [`choose_victim_within`] on one chip, no block locked: the victim's index within
    /// the chip.
    pub fn choose_victim(&self, chip: usize, policy: VictimPolicy, now_seq: u64, max_valid: u32) -> Option<usize> {
        self.choose_victim_skipping(chip, policy, now_seq, max_valid, |_| false)
    }

    /// [`choose_victim_within`] on one chip, passing over the blocks `locked` names (by
    /// index within the chip; NoLgn-FTL's lock bits). Greedy reads the index: the
    /// buckets from the lowest valid count up, in each the blocks from the lowest up,
    /// the first unlocked one (with nothing locked, the first member of the first
    /// bucket). Cost-benefit scores every block, so it scans.
    pub fn choose_victim_skipping(
        &self,
        chip: usize,
        policy: VictimPolicy,
        now_seq: u64,
        max_valid: u32,
        locked: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        match policy {
            VictimPolicy::Greedy => {
                let index = &self.chips[chip];
                let reclaimable = |&valid: &usize| (valid as u32) < self.usable_pages && valid as u32 <= max_valid;
                index
                    .nonempty
                    .iter(0)
                    .take_while(reclaimable)
                    .find_map(|valid| index.buckets.iter(valid).find(|&block| !locked(block)))
            }
            VictimPolicy::CostBenefit => {
                choose_victim_within(self.chip(chip), self.usable_pages, policy, now_seq, max_valid, locked)
            }
        }
    }
}

/// Static wear levelling: when the chip's erase counts spread by more than `threshold`,
/// pick the least-worn full block, so its (cold) data moves and the block rejoins the
/// free pool.
pub fn choose_wear_victim(blocks: &[BlockSnapshot], threshold: u32) -> Option<usize> {
    let max = blocks.iter().filter(|b| b.state != BlockState::Retired).map(|b| b.erase_count).max()?;
    let (index, coldest) = blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.state == BlockState::Full)
        .min_by_key(|&(i, b)| (b.erase_count, i))?;
    (max - coldest.erase_count > threshold).then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(valid: u32, erase_count: u32, last_write_seq: u64) -> BlockSnapshot {
        BlockSnapshot { state: BlockState::Full, valid, erase_count, last_write_seq }
    }

    #[test]
    fn greedy_takes_fewest_valid_and_skips_non_full() {
        let mut blocks = vec![full(5, 0, 0), full(2, 0, 0), full(2, 0, 0), full(8, 0, 0)];
        blocks.push(BlockSnapshot { state: BlockState::Active, valid: 0, erase_count: 0, last_write_seq: 0 });
        assert_eq!(choose_victim_within(&blocks, 8, VictimPolicy::Greedy, 0, 8, |_| false), Some(1));
        assert_eq!(
            choose_victim_within(&[full(8, 0, 0)], 8, VictimPolicy::Greedy, 0, 8, |_| false),
            None,
            "nothing to reclaim"
        );
        assert_eq!(
            choose_victim_within(&blocks, 8, VictimPolicy::CostBenefit, 0, 1, |_| false),
            None,
            "no room to move"
        );
        assert_eq!(choose_victim_within(&blocks, 8, VictimPolicy::CostBenefit, 0, 2, |_| false), Some(1));
    }

    #[test]
    fn cost_benefit_prefers_old_blocks() {
        // Block 0: fewer valid but just written; block 1: a bit fuller but very old.
        let blocks = [full(3, 0, 1000), full(4, 0, 0)];
        assert_eq!(choose_victim_within(&blocks, 8, VictimPolicy::Greedy, 1000, 8, |_| false), Some(0));
        assert_eq!(choose_victim_within(&blocks, 8, VictimPolicy::CostBenefit, 1000, 8, |_| false), Some(1));
    }

    #[test]
    fn wear_victim_only_past_threshold() {
        let blocks = [
            full(8, 10, 0),
            full(8, 3, 0),
            BlockSnapshot { state: BlockState::Free, valid: 0, erase_count: 20, last_write_seq: 0 },
        ];
        assert_eq!(choose_wear_victim(&blocks, 16), Some(1));
        assert_eq!(choose_wear_victim(&blocks, 17), None);
    }

    /// The brute-force greedy choice: the unlocked reclaimable full block with the
    /// fewest valid pages, the lowest index among equals.
    fn brute_force_greedy(blocks: &[BlockSnapshot], usable: u32, max_valid: u32, locked: &[bool]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, b) in blocks.iter().enumerate() {
            let candidate = b.state == BlockState::Full && b.valid < usable && b.valid <= max_valid && !locked[i];
            if candidate && best.is_none_or(|j| b.valid < blocks[j].valid) {
                best = Some(i);
            }
        }
        best
    }

    proptest::proptest! {
        /// The table's choice with locked blocks passed over is the brute-force scan's
        /// (greedy), and the scan's over a copy of the chip with the locked blocks marked
        /// not full (both policies: what NoLgn's GC did before the table could skip),
        /// whatever sequence of state, valid-count and age changes led there.
        #[test]
        fn victim_index_with_locks_matches_the_scan(
            ops in proptest::collection::vec((0usize..3 * 70, 0u8..7, 0u32..10), 1..400),
            locked in proptest::collection::vec(proptest::bool::weighted(0.3), 3 * 70),
            max_valid in 0u32..10,
        ) {
            let (chips, bpc, usable) = (3, 70, 8);
            let mut table = BlockTable::new(chips, bpc, usable);
            for (i, op, arg) in ops {
                let b = table[i];
                match op {
                    0 => table.set_state(i, BlockState::Full),
                    1 => table.set_state(i, [BlockState::Free, BlockState::Active, BlockState::Collecting, BlockState::Retired][arg as usize % 4]),
                    2 | 3 if b.valid < usable => table.add_valid(i),
                    4 if b.valid > 0 => table.sub_valid(i),
                    5 => table.set(i, BlockSnapshot { valid: arg.min(usable), ..b }),
                    6 => table.set_last_write_seq(i, arg as u64 * 100),
                    _ => {}
                }
                for chip in 0..chips {
                    let blocks = table.chip(chip);
                    let chip_locked = &locked[chip * bpc as usize..(chip + 1) * bpc as usize];
                    let is_locked = |i: usize| chip_locked[i];
                    let no_locks = vec![false; bpc as usize];
                    proptest::prop_assert_eq!(
                        table.choose_victim(chip, VictimPolicy::Greedy, 0, max_valid),
                        brute_force_greedy(blocks, usable, max_valid, &no_locks)
                    );
                    proptest::prop_assert_eq!(
                        table.choose_victim_skipping(chip, VictimPolicy::Greedy, 0, max_valid, is_locked),
                        brute_force_greedy(blocks, usable, max_valid, chip_locked)
                    );
                    let mut masked = blocks.to_vec();
                    for (b, _) in masked.iter_mut().zip(chip_locked).filter(|(_, &l)| l) {
                        b.state = BlockState::Active;
                    }
                    for policy in [VictimPolicy::Greedy, VictimPolicy::CostBenefit] {
                        let scan = choose_victim_within(&masked, usable, policy, 1000, max_valid, |_| false);
                        proptest::prop_assert_eq!(table.choose_victim_skipping(chip, policy, 1000, max_valid, is_locked), scan);
                    }
                }
            }
        }

        /// Iterating a set gives its members in order, across summary words, whatever
        /// the neighbouring sets whose words are interleaved with it hold.
        #[test]
        fn bitsets_iterate_their_members_in_order(
            members in proptest::collection::vec(proptest::collection::btree_set(0usize..10_000, 0..60), 3),
            removed in proptest::collection::vec(0usize..10_000, 0..30),
            from in 0usize..10_100,
        ) {
            let mut sets = BitSets::new(3, 10_000);
            let mut members = members;
            for (set, m) in members.iter().enumerate() {
                for &i in m {
                    sets.insert(set, i);
                }
            }
            for (k, &i) in removed.iter().enumerate() {
                if members[k % 3].remove(&i) {
                    sets.remove(k % 3, i);
                }
            }
            for (set, m) in members.iter().enumerate() {
                proptest::prop_assert_eq!(sets.iter(set).collect::<Vec<_>>(), m.iter().copied().collect::<Vec<_>>());
                proptest::prop_assert_eq!(sets.first_from(set, from), m.range(from..).next().copied());
            }
        }
    }

    #[test]
    fn bitsets_find_the_lowest_member_across_summary_words() {
        let mut sets = BitSets::new(2, 10_000);
        assert_eq!(sets.first(1), None);
        for i in [9_999, 4_096, 8_200] {
            sets.insert(1, i);
        }
        sets.insert(0, 5);
        assert_eq!(sets.first(1), Some(4_096));
        sets.remove(1, 4_096);
        assert_eq!(sets.first(1), Some(8_200));
        sets.remove(1, 8_200);
        sets.remove(1, 9_999);
        assert_eq!(sets.first(1), None);
        assert_eq!(sets.first(0), Some(5));
    }
}
