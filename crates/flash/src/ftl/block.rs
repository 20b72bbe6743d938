//! Naive block-level mapping: logical block → physical block, page `i` at offset `i`.
//!
//! A page goes into its data block while the block's erased tail reaches its offset.
//! Any other update rewrites the block: a fresh block takes the live pages before the
//! offset, the new page, and the live pages after it, in page order (the in-order
//! programming rule), then the old block is erased. A trim rewrites the block without
//! the page (or erases it when nothing else is live), so no trim record is needed.
//! Each rewrite counts as a full merge and its copies as `gc_page_migrations`.
//!
//! Crash safety: the old block is erased only after the new one is programmed. A cut in
//! between leaves two data blocks of one lbn; the rebuild keeps the newest version of
//! each page across both (a trim in flight may come back: it was not acknowledged) and
//! normalises the lbn (see `super::hybrid`).

use super::hybrid::{self, Core, LbnBlocks, Payload, Role, Scheme, NONE};
use super::{Ftl, FtlConfig, FtlKind};
use crate::error::Error;
use nand::{Device, SimTime};

/// The block FTL's scheme: no log blocks.
pub(crate) struct BlockMapped;

impl Scheme for BlockMapped {
    const KIND: FtlKind = FtlKind::Block;

    /// A rewrite's destination, and one more for a normalising merge at open.
    fn spare_blocks(_: &FtlConfig) -> Result<u32, Error> {
        Ok(2)
    }

    fn new(_: &FtlConfig) -> Self {
        BlockMapped
    }

    fn write_elsewhere(&mut self, core: &mut Core, lpn: u32, payload: Payload) -> Result<(), Error> {
        let (lbn, off) = (core.lbn(lpn), core.offset(lpn));
        let old = core.data[lbn as usize];
        if matches!(payload, Payload::Trim) {
            core.loc[lpn as usize] = NONE;
            if (0..core.ppb).all(|i| core.loc[(lbn * core.ppb + i) as usize] == NONE) {
                core.data[lbn as usize] = NONE;
                return core.erase(old);
            }
        }
        let new = core.allocate(Role::Data)?;
        core.copy_live(lbn, new, 0..off)?;
        if let Payload::Data(_) = payload {
            core.program_new(new, off, lpn, payload)?;
        }
        core.copy_live(lbn, new, off + 1..core.ppb)?;
        core.counters.merges_full += 1;
        core.data[lbn as usize] = new;
        core.erase(old)
    }

    fn adopt(&mut self, core: &mut Core, lbns: LbnBlocks, _random_logs: Vec<u32>) -> Vec<(u32, Vec<u32>)> {
        let mut normalise = Vec::new();
        for (lbn, blocks) in lbns {
            match blocks[..] {
                [block] => core.data[lbn as usize] = block,
                _ => normalise.push((lbn, blocks)),
            }
        }
        normalise
    }

    fn log_blocks(&self) -> Vec<u32> {
        Vec::new()
    }

    /// Block mapping keeps no log blocks: its map is the core's.
    fn mapping_bytes(&self) -> u64 {
        0
    }
}

/// A fresh block FTL over the whole device.
pub fn format(device: Device, config: &FtlConfig) -> Result<Box<dyn Ftl>, Error> {
    hybrid::format::<BlockMapped>(device, config)
}

/// Rebuilds a block FTL from flash; returns it and when the rebuild ended.
pub fn open(device: Device, config: &FtlConfig, now: SimTime) -> Result<(Box<dyn Ftl>, SimTime), Error> {
    hybrid::open::<BlockMapped>(device, config, now)
}
