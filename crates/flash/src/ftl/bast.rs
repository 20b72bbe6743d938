//! BAST (Kim et al. 2002): block-associative log blocks. Each data block may have one
//! log block (at most `log_blocks` of them); a page that cannot go into its data block
//! is appended to its lbn's log block, and so is a trim record.
//!
//! Merges, when the log block is full or a new one is needed and none is free (the
//! victim is the oldest log block):
//! - switch: the log holds offsets 0..P−1 in page order, all live → it becomes the
//!   data block, the old data block is erased;
//! - partial: the log holds offsets 0..k−1 in order → the remaining live pages are
//!   copied into it, then as for a switch;
//! - full: every live page of the lbn is copied into a fresh block; the data block and
//!   then the log block (which may hold trim records) are erased.
//!
//! Rebuild: an lbn whose blocks are one data-shaped block (page i at offset i), or one
//! data-shaped block plus a newer log block, is adopted as found; anything else was a
//! merge cut short and is normalised (see `super::hybrid`).

use super::hybrid::{self, Core, LbnBlocks, Payload, Role, Scheme, NONE};
use super::{Ftl, FtlConfig, FtlKind};
use crate::error::Error;
use nand::{Device, SimTime};
use std::collections::HashMap;

pub(crate) struct Bast {
    log_blocks: u32,
    /// lbn → its log block.
    logs: HashMap<u32, u32>,
}

impl Bast {
    /// Opens a log block for `lbn`, merging the oldest log block first if none is free.
    fn open_log(&mut self, core: &mut Core, lbn: u32) -> Result<u32, Error> {
        while self.logs.len() >= self.log_blocks as usize {
            let victim = self.logs.iter().min_by_key(|(_, &b)| core.blocks[b as usize].bseq).map(|(&l, _)| l);
            match victim {
                Some(victim) => self.merge(core, victim)?,
                None => break,
            }
        }
        let block = core.allocate(Role::Log)?;
        self.logs.insert(lbn, block);
        Ok(block)
    }

    fn merge(&mut self, core: &mut Core, lbn: u32) -> Result<(), Error> {
        let Some(log) = self.logs.remove(&lbn) else { return Ok(()) };
        if core.in_order(log, lbn) {
            return core.switch_or_partial(lbn, log);
        }
        let old = core.merge_full(lbn)?;
        let erase = if old == NONE { vec![log] } else { vec![old, log] };
        core.erase_all(erase)
    }
}

impl Scheme for Bast {
    const KIND: FtlKind = FtlKind::Bast;

    /// The log blocks, a merge destination and one more for a normalising merge.
    fn spare_blocks(config: &FtlConfig) -> Result<u32, Error> {
        if config.log_blocks == 0 {
            return Err(Error::Config("bast FTL: log_blocks must be at least 1".into()));
        }
        Ok(config.log_blocks + 2)
    }

    fn new(config: &FtlConfig) -> Self {
        Bast { log_blocks: config.log_blocks, logs: HashMap::new() }
    }

    fn write_elsewhere(&mut self, core: &mut Core, lpn: u32, payload: Payload) -> Result<(), Error> {
        let lbn = core.lbn(lpn);
        let log = match self.logs.get(&lbn) {
            Some(&log) if core.write_pointer(log) < core.ppb => log,
            Some(_) => {
                self.merge(core, lbn)?;
                self.open_log(core, lbn)?
            }
            None => self.open_log(core, lbn)?,
        };
        let page = core.write_pointer(log);
        core.program_new(log, page, lpn, payload).map(|_| ())
    }

    fn adopt(&mut self, core: &mut Core, lbns: LbnBlocks, _random_logs: Vec<u32>) -> Vec<(u32, Vec<u32>)> {
        let mut normalise = Vec::new();
        for (lbn, blocks) in lbns {
            match blocks[..] {
                [data] if core.data_shaped(data, lbn) => core.data[lbn as usize] = data,
                [data, log] if core.data_shaped(data, lbn) && core.blocks[log as usize].role == Role::Log => {
                    core.data[lbn as usize] = data;
                    self.logs.insert(lbn, log);
                }
                _ => normalise.push((lbn, blocks)),
            }
        }
        normalise
    }

    fn log_blocks(&self) -> Vec<u32> {
        self.logs.values().copied().collect()
    }

    fn mapping_bytes(&self) -> u64 {
        crate::heap::map(&self.logs)
    }
}

/// A fresh BAST FTL over the whole device.
pub fn format(device: Device, config: &FtlConfig) -> Result<Box<dyn Ftl>, Error> {
    hybrid::format::<Bast>(device, config)
}

/// Rebuilds a BAST FTL from flash; returns it and when the rebuild ended.
pub fn open(device: Device, config: &FtlConfig, now: SimTime) -> Result<(Box<dyn Ftl>, SimTime), Error> {
    hybrid::open::<Bast>(device, config, now)
}
