//! FAST (Lee et al. 2007): fully-associative sector translation. One sequential log
//! block (SW) serves one lbn at a time; `log_blocks − 1` random log blocks (RW) are
//! shared by all lbns and filled one after another.
//!
//! A page that cannot go into its data block goes to the SW log if it is offset 0 (the
//! SW log is merged and restarted for this lbn) or continues the SW log's lbn in order;
//! any other page, and every trim record, is appended to the newest RW block. When all
//! RW blocks are full the oldest is the victim: every lbn with a live page in it, or a
//! current trim record whose page may still have an older copy in its data block or
//! SW log, is fully merged (its live pages from everywhere into a fresh data block; the
//! old data block and its SW log erased); then the victim is erased. The SW log is
//! merged by a switch (full, in order, all live) or a partial merge (in order, not
//! full), or fully when some of its pages were superseded.
//!
//! Why a trim record may go with its victim: RW blocks are filled and erased in order,
//! so older RW blocks are gone and newer ones hold only newer events; the merge removes
//! the older copies in the data block and SW log.
//!
//! Rebuild: random log blocks are kept oldest first; an lbn whose own blocks are one
//! data-shaped block, or a data-shaped block and a newer SW log, is adopted as found
//! (one SW log at most); anything else is normalised (see `super::hybrid`).

use super::hybrid::{self, Core, LbnBlocks, Payload, Role, Scheme, NONE, TRIM_BIT};
use super::{Ftl, FtlConfig, FtlKind};
use crate::error::Error;
use nand::{Device, SimTime};
use std::collections::{BTreeSet, VecDeque};

pub(crate) struct Fast {
    random_logs: u32,
    /// (lbn, block) of the sequential log.
    sw: Option<(u32, u32)>,
    /// Random log blocks, oldest first; the last one is being filled.
    rw: VecDeque<u32>,
}

impl Fast {
    fn merge_sw(&mut self, core: &mut Core) -> Result<(), Error> {
        let Some((lbn, block)) = self.sw else { return Ok(()) };
        if core.in_order(block, lbn) {
            self.sw = None;
            core.switch_or_partial(lbn, block)
        } else {
            self.merge_full(core, lbn)
        }
    }

    /// Full merge of `lbn`; erases its data block and SW log.
    fn merge_full(&mut self, core: &mut Core, lbn: u32) -> Result<(), Error> {
        let old = core.merge_full(lbn)?;
        let mut erase = Vec::with_capacity(2);
        if old != NONE {
            erase.push(old);
        }
        if let Some((l, block)) = self.sw {
            if l == lbn {
                self.sw = None;
                erase.push(block);
            }
        }
        core.erase_all(erase)
    }

    /// True when the data block or SW log of `lpn`'s lbn has programmed its offset, so
    /// an older copy of it may be on flash.
    fn old_copy_possible(&self, core: &Core, lpn: u32) -> bool {
        let (lbn, off) = (core.lbn(lpn), core.offset(lpn));
        let data = core.data[lbn as usize];
        (data != NONE && core.write_pointer(data) > off)
            || matches!(self.sw, Some((l, b)) if l == lbn && core.write_pointer(b) > off)
    }

    /// Merges the lbns the oldest RW block still serves, then erases it.
    fn evict(&mut self, core: &mut Core) -> Result<(), Error> {
        let Some(victim) = self.rw.pop_front() else { return Ok(()) };
        let mut lbns = BTreeSet::new();
        for i in 0..core.write_pointer(victim) {
            let ppn = core.ppn(victim, i);
            let lpn = core.owner[ppn as usize] & !TRIM_BIT;
            if core.is_live(ppn) || (core.is_current_trim(ppn) && self.old_copy_possible(core, lpn)) {
                lbns.insert(core.lbn(lpn));
            }
        }
        for lbn in lbns {
            self.merge_full(core, lbn)?;
        }
        core.erase(victim)
    }

    fn append_random(&mut self, core: &mut Core, lpn: u32, payload: Payload) -> Result<(), Error> {
        let block = match self.rw.back() {
            Some(&b) if core.write_pointer(b) < core.ppb => b,
            _ => {
                while self.rw.len() >= self.random_logs as usize {
                    self.evict(core)?;
                }
                let b = core.allocate(Role::RandomLog)?;
                self.rw.push_back(b);
                b
            }
        };
        let page = core.write_pointer(block);
        core.program_new(block, page, lpn, payload).map(|_| ())
    }
}

impl Scheme for Fast {
    const KIND: FtlKind = FtlKind::Fast;

    /// The log blocks, a merge destination and one more for a normalising merge.
    fn spare_blocks(config: &FtlConfig) -> Result<u32, Error> {
        if config.log_blocks < 2 {
            return Err(Error::Config(
                "fast FTL: log_blocks must be at least 2 (one sequential, at least one random)".into(),
            ));
        }
        Ok(config.log_blocks + 2)
    }

    fn new(config: &FtlConfig) -> Self {
        Fast { random_logs: config.log_blocks - 1, sw: None, rw: VecDeque::new() }
    }

    fn write_elsewhere(&mut self, core: &mut Core, lpn: u32, payload: Payload) -> Result<(), Error> {
        let (lbn, off) = (core.lbn(lpn), core.offset(lpn));
        if let Payload::Data(_) = payload {
            if off == 0 {
                self.merge_sw(core)?;
                let block = core.allocate(Role::Log)?;
                self.sw = Some((lbn, block));
                return core.program_new(block, 0, lpn, payload).map(|_| ());
            }
            if let Some((l, block)) = self.sw {
                if l == lbn && core.write_pointer(block) == off {
                    return core.program_new(block, off, lpn, payload).map(|_| ());
                }
            }
        }
        self.append_random(core, lpn, payload)
    }

    fn adopt(&mut self, core: &mut Core, lbns: LbnBlocks, random_logs: Vec<u32>) -> Vec<(u32, Vec<u32>)> {
        self.rw = random_logs.into();
        let mut normalise = Vec::new();
        for (lbn, blocks) in lbns {
            match blocks[..] {
                [data] if core.data_shaped(data, lbn) => core.data[lbn as usize] = data,
                [data, sw]
                    if self.sw.is_none()
                        && core.data_shaped(data, lbn)
                        && core.data_shaped(sw, lbn)
                        && core.blocks[sw as usize].role == Role::Log =>
                {
                    core.data[lbn as usize] = data;
                    self.sw = Some((lbn, sw));
                }
                _ => normalise.push((lbn, blocks)),
            }
        }
        normalise
    }

    fn log_blocks(&self) -> Vec<u32> {
        self.sw.iter().map(|&(_, b)| b).chain(self.rw.iter().copied()).collect()
    }

    fn mapping_bytes(&self) -> u64 {
        crate::heap::deque(&self.rw)
    }
}

/// A fresh FAST FTL over the whole device.
pub fn format(device: Device, config: &FtlConfig) -> Result<Box<dyn Ftl>, Error> {
    hybrid::format::<Fast>(device, config)
}

/// Rebuilds a FAST FTL from flash; returns it and when the rebuild ended.
pub fn open(device: Device, config: &FtlConfig, now: SimTime) -> Result<(Box<dyn Ftl>, SimTime), Error> {
    hybrid::open::<Fast>(device, config, now)
}
