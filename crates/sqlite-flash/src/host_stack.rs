//! The host I/O stack between SQLite and the device (`HostStack`): what a Linux
//! system call, the VFS and Ext4 in `data=ordered` mode cost per SQLite file write and
//! per fsync. `none` (the default) charges nothing; `ext4-ordered` charges
//! - per write call ([`FileStore::write`]): `WRITE_CALL_NS` of CPU time;
//! - per fsync that reaches a commit point ([`FileStore::sync`] past NoLgn's NORMAL
//!   grouping): `FSYNC_CALL_NS` of CPU time, and, when the inode changed since the
//!   last journal commit, a JBD2 commit to the device: a descriptor block and the
//!   changed metadata blocks issued together, then the commit block once they are on
//!   flash (the journal's ordering), each a whole logical page of `JOURNAL_FILE`.
//!
//! The inode changes when a file grows (its size; with new extents also the block
//! bitmap and the group descriptor) or when a write lands in a later timestamp tick
//! than the inode's mtime (`TIMESTAMP_TICK_NS`): Ext4's timestamps are coarse, so
//! fsyncs closer together than a tick find the inode clean and JBD2 commits nothing.
//! One inode stands for every file (a commit with two files' inodes dirty writes one
//! inode block, where Ext4 writes one per inode table block). Not modelled: the
//! checkpoint of journalled metadata to its home location (once per block per
//! checkpoint, far rarer than commits), read system calls, and `ext4-ordered`'s
//! journal superblock updates.
//!
//! A child module of `files`, so it works on the store's state; the store's hooks are
//! one line each.

use super::{Error, FileStore};
use nand::SimTime;
use serde::{Deserialize, Serialize};

/// The file the Ext4 journal (JBD2) occupies when the stack is `ext4-ordered`; SQLite
/// never opens it (its names are paths).
pub const JOURNAL_FILE: &str = "deltaflash-jbd2";

/// CPU time of one `pwrite` of a 4 KB page into Ext4's page cache (system call, VFS,
/// `ext4_buffered_write_iter`, the copy). Measured 2026-11-27 on the project's build
/// machine (Linux 6.18, Ext4 on virtio): `dd if=/dev/zero of=F bs=4096 count=100000
/// conv=notrunc` over an existing file took 5.66 µs per read+write pair, the same pair
/// to `/dev/null` 0.70 µs; the difference, rounded: 5 µs. Uncertain (a loaded 2-core
/// machine, not the paper's host): the ablation scales it by ±50%.
pub const WRITE_CALL_NS: u64 = 5_000;

/// CPU time of one `fsync` on Ext4 apart from the device: the system call and
/// `ext4_sync_file` (a write call's path, `WRITE_CALL_NS`) plus handing the commit
/// to the JBD2 thread and waiting for it, one round trip of two context switches:
/// `perf bench sched pipe -l 20000` gave 2.94 µs per round trip (same machine and
/// date); 5 + 3 µs. Uncertain as `WRITE_CALL_NS` (scaled ±50% by the ablation).
pub const FSYNC_CALL_NS: u64 = 8_000;

/// Ext4's timestamp granularity: `current_time()` is the coarse clock, advanced once
/// per tick, so a write changes the inode's mtime only in a new tick. A 4 ms tick is
/// `CONFIG_HZ=250`, the default of Ubuntu's and Debian's generic kernels (the NoLgn
/// paper's host runs Linux 5.15, §4.1; its HZ is not stated).
pub const TIMESTAMP_TICK_NS: SimTime = 4_000_000;

/// A JBD2 transaction on the device: one descriptor block naming the journalled
/// blocks, then the blocks, then one commit block (Linux
/// `Documentation/filesystems/ext4/journal.rst`, "Descriptor Block", "Commit Block").
pub const DESCRIPTOR_BLOCKS: u64 = 1;
pub const COMMIT_BLOCKS: u64 = 1;
/// Metadata blocks an inode change journals: the inode table block holding the inode
/// (mtime, size, the in-inode extent tree).
pub const INODE_BLOCKS: u64 = 1;
/// Metadata blocks a block allocation adds: the block bitmap and the group descriptor
/// of its block group (Ext4's on-disk layout, `Documentation/filesystems/ext4/`
/// "Block Group Descriptors", "Block and inode Bitmaps").
pub const ALLOCATION_BLOCKS: u64 = 2;

/// Which host stack is modelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostStackModel {
    /// Nothing between SQLite's VFS calls and the FTL (the file layer alone).
    #[default]
    None,
    /// A Linux system call, the VFS and Ext4 with `data=ordered`'s JBD2 journal.
    Ext4Ordered,
}

/// The host stack switch and its uncertain constants' scale (for the ablation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStack {
    pub model: HostStackModel,
    /// The CPU costs (`WRITE_CALL_NS`, `FSYNC_CALL_NS`) in percent of the cited
    /// values: 100 as cited, 50 and 150 in the ablation.
    #[serde(default = "full_scale")]
    pub cpu_percent: u32,
}

fn full_scale() -> u32 {
    100
}

impl Default for HostStack {
    fn default() -> Self {
        HostStack { model: HostStackModel::None, cpu_percent: 100 }
    }
}

impl HostStack {
    /// Ext4 `data=ordered` at the cited constants.
    pub const EXT4_ORDERED: HostStack = HostStack { model: HostStackModel::Ext4Ordered, cpu_percent: 100 };

    pub fn is_none(&self) -> bool {
        self.model == HostStackModel::None
    }

    /// `none` or `ext4-ordered`.
    pub fn parse(text: &str) -> Result<HostStack, String> {
        match text {
            "none" => Ok(HostStack::default()),
            "ext4-ordered" => Ok(HostStack::EXT4_ORDERED),
            _ => Err(format!(
                "{:?} is not a host stack: none or ext4-ordered",
                text.chars().take(80).collect::<String>()
            )),
        }
    }

    fn scaled(&self, ns: u64) -> u64 {
        ns * self.cpu_percent as u64 / 100
    }

    /// CPU time a write call costs.
    pub fn write_call_ns(&self) -> u64 {
        match self.model {
            HostStackModel::None => 0,
            HostStackModel::Ext4Ordered => self.scaled(WRITE_CALL_NS),
        }
    }

    /// CPU time an fsync costs apart from the device.
    pub fn fsync_call_ns(&self) -> u64 {
        match self.model {
            HostStackModel::None => 0,
            HostStackModel::Ext4Ordered => self.scaled(FSYNC_CALL_NS),
        }
    }
}

/// Journal size in 4 KB blocks for a file system of `blocks`: e2fsprogs'
/// `ext2fs_default_journal_size` (lib/ext2fs/mkjournal.c), which `mke2fs` uses; below
/// its smallest size (2,048 blocks) a quarter of the blocks.
pub fn default_journal_blocks(blocks: u64) -> u64 {
    match blocks {
        b if b < 2_048 => (b / 4).max(1),
        b if b < 32_768 => 1_024,
        b if b < 256 * 1_024 => 4_096,
        b if b < 512 * 1_024 => 8_192,
        b if b < 4_096 * 1_024 => 16_384,
        b if b < 8_192 * 1_024 => 32_768,
        b if b < 16_384 * 1_024 => 65_536,
        b if b < 32_768 * 1_024 => 131_072,
        _ => 262_144,
    }
}

/// The stack's state in the store: the switch, the journal's next block, and what the
/// next commit must journal.
#[derive(Debug, Default)]
pub(crate) struct StackState {
    pub stack: HostStack,
    /// Journal blocks `JOURNAL_FILE` holds (0 without a journal).
    journal_blocks: u64,
    /// The next journal block written (the journal wraps around).
    next: u64,
    /// The tick of the inode's mtime.
    mtime_tick: Option<SimTime>,
    /// The inode changed since the last commit.
    inode_dirty: bool,
    /// Blocks were allocated since the last commit.
    allocated: bool,
}

impl FileStore {
    /// Sets the host stack (see the module comment); `ext4-ordered` creates the journal
    /// file at its `mke2fs` size for the FTL's logical pages, at most half the free
    /// pages, on first use.
    pub fn set_host_stack(&mut self, stack: HostStack) -> Result<(), Error> {
        self.host.stack = stack;
        if stack.is_none() || self.host.journal_blocks > 0 {
            return Ok(());
        }
        let blocks = default_journal_blocks(self.ftl.logical_pages() as u64).min(self.free_pages() / 2).max(1);
        if self.size(JOURNAL_FILE).is_none() {
            self.create(JOURNAL_FILE);
        }
        self.ensure_pages(JOURNAL_FILE, blocks)?;
        self.entry_mut(JOURNAL_FILE)?.size = blocks * self.page_bytes as u64;
        self.dirty = true;
        self.host.journal_blocks = blocks;
        Ok(())
    }

    /// The host stack in use.
    pub fn host_stack(&self) -> HostStack {
        self.host.stack
    }

    /// A write call: its CPU time, and the mtime it changes.
    pub(crate) fn host_write_call(&mut self) {
        if self.host.stack.is_none() {
            return;
        }
        self.advance(self.host.stack.write_call_ns());
        let tick = self.now / TIMESTAMP_TICK_NS;
        if self.host.mtime_tick != Some(tick) {
            self.host.mtime_tick = Some(tick);
            self.host.inode_dirty = true;
        }
    }

    /// A file grew: its size changed, and with `allocated` new blocks were taken.
    pub(crate) fn host_grew(&mut self, allocated: bool) {
        self.host.inode_dirty = true;
        self.host.allocated |= allocated;
    }

    /// An fsync at a commit point, after the data reached the FTL: its CPU time, then
    /// the JBD2 commit if the inode changed.
    pub(crate) fn host_fsync(&mut self) -> Result<(), Error> {
        if self.host.stack.is_none() {
            return Ok(());
        }
        self.advance(self.host.stack.fsync_call_ns());
        if !self.host.inode_dirty || self.host.journal_blocks == 0 {
            return Ok(());
        }
        let metadata = INODE_BLOCKS + if self.host.allocated { ALLOCATION_BLOCKS } else { 0 };
        self.host.inode_dirty = false;
        self.host.allocated = false;
        let issued = self.now;
        let mut end = issued;
        for _ in 0..DESCRIPTOR_BLOCKS + metadata {
            end = end.max(self.journal_block(issued)?);
        }
        for _ in 0..COMMIT_BLOCKS {
            end = end.max(self.journal_block(end)?);
        }
        self.now = end;
        Ok(())
    }

    /// Writes the journal's next block at `at`; returns when it ended.
    fn journal_block(&mut self, at: SimTime) -> Result<SimTime, Error> {
        let index = self.host.next % self.host.journal_blocks;
        self.host.next += 1;
        let lpn = self.lpn(JOURNAL_FILE, index)?;
        let page = vec![0x4Au8; self.page_bytes];
        self.forget_clean(lpn);
        let timing = self.ftl.write(lpn, &page, at)?;
        self.counters.journal_writes += 1;
        Ok(timing.end_ns.max(at))
    }
}
