//! GC and wear-levelling policies: pure functions of a snapshot of one chip's blocks.
//!
//! The region keeps its per-block bookkeeping as a slice of [`BlockSnapshot`] per chip
//! and hands that slice to these functions, which only choose; the region executes the
//! choice. Ties go to the lowest block index, so choices are deterministic.

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

/// Picks a GC victim among full blocks that have at least one invalid page.
/// `usable_pages` is how many pages a block holds in this region.
pub fn choose_victim(blocks: &[BlockSnapshot], usable_pages: u32, policy: VictimPolicy, now_seq: u64) -> Option<usize> {
    choose_victim_within(blocks, usable_pages, policy, now_seq, usable_pages)
}

/// [`choose_victim`] among blocks with at most `max_valid` valid pages (the room GC
/// has left to move them to).
pub fn choose_victim_within(
    blocks: &[BlockSnapshot],
    usable_pages: u32,
    policy: VictimPolicy,
    now_seq: u64,
    max_valid: u32,
) -> Option<usize> {
    let candidates = blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.state == BlockState::Full && b.valid < usable_pages && b.valid <= max_valid);
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
        assert_eq!(choose_victim(&blocks, 8, VictimPolicy::Greedy, 0), Some(1));
        assert_eq!(choose_victim(&[full(8, 0, 0)], 8, VictimPolicy::Greedy, 0), None, "nothing to reclaim");
        assert_eq!(choose_victim_within(&blocks, 8, VictimPolicy::CostBenefit, 0, 1), None, "no room to move");
        assert_eq!(choose_victim_within(&blocks, 8, VictimPolicy::CostBenefit, 0, 2), Some(1));
    }

    #[test]
    fn cost_benefit_prefers_old_blocks() {
        // Block 0: fewer valid but just written; block 1: a bit fuller but very old.
        let blocks = [full(3, 0, 1000), full(4, 0, 0)];
        assert_eq!(choose_victim(&blocks, 8, VictimPolicy::Greedy, 1000), Some(0));
        assert_eq!(choose_victim(&blocks, 8, VictimPolicy::CostBenefit, 1000), Some(1));
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
}
