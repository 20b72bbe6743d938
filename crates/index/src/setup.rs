//! Builds an index of a given kind on a device sized for it: the device is the given
//! geometry (normally the IPL paper's Table 1 chip, `ipl-slc`) with as many blocks as
//! the index can need for the expected number of entries, so that log blocks are the
//! asked-for share of the data blocks, as in the paper's §4.2 (16 and 32 log blocks,
//! 11% and 22%).
//!
//! Bounds used for sizing: a B+-tree of n entries whose nodes hold c keys has at most
//! 2n/c + 1 leaves (every leaf but the root is half full) and fewer internal nodes than
//! 2/c of that per level.

use crate::bftl::Bftl;
use crate::error::Error;
use crate::ftl_store::FtlStore;
use crate::ipl_nodes::IplNodes;
use crate::mutree::MuTree;
use crate::node::capacity_of;
use crate::store::NodeStore;
use crate::tree::BTree;
use flash::ftl::{FtlConfig, FtlKind};
use nand::{Device, Geometry, MemoryStorage};

/// Which index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexKind {
    /// The IPL B+-tree (nodes in the IPL store).
    Ipl,
    /// A traditional B+-tree on an FTL.
    Btree,
    Bftl,
    MuTree,
}

/// What the index stands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    Page,
    Bast,
    Fast,
    /// Raw flash, managed by the index itself (μ-Tree, IPL).
    Native,
}

impl IndexKind {
    pub fn parse(s: &str) -> Option<IndexKind> {
        match s {
            "ipl" => Some(IndexKind::Ipl),
            "btree" => Some(IndexKind::Btree),
            "bftl" => Some(IndexKind::Bftl),
            "mutree" => Some(IndexKind::MuTree),
            _ => None,
        }
    }
}

impl Storage {
    pub fn parse(s: &str) -> Option<Storage> {
        match s {
            "page" => Some(Storage::Page),
            "bast" => Some(Storage::Bast),
            "fast" => Some(Storage::Fast),
            "native" => Some(Storage::Native),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct IndexSpec {
    pub index: IndexKind,
    pub storage: Storage,
    /// BAST and FAST: log blocks as a share of the data blocks the tree is expected to
    /// fill; page FTL: spare blocks likewise.
    pub log_share: f64,
    /// Log (or spare) blocks as a count, instead of `log_share`.
    pub log_block_count: Option<u32>,
    pub node_bytes: usize,
    pub buffer_frames: usize,
    /// Entries the device is sized for.
    pub entries: u64,
    /// BFTL: NTT pages per node before a compaction (0: 4 for one-page nodes, else 32).
    pub compaction_threshold: usize,
    /// IPL: bytes of each erase unit's log region and of a log sector (the paper: 8 KB
    /// of 512 B sectors).
    pub ipl_log_region_bytes: u32,
    pub ipl_sector_bytes: u32,
    /// Data blocks instead of the computed bound (FTL-based indexes) or total blocks
    /// (native indexes).
    pub blocks: Option<u32>,
    /// FTL-based indexes: the FTL's spare factor instead of the spare blocks sized from
    /// `log_share` (the device then has as many blocks as leave the data blocks logical).
    pub over_provisioning: Option<f64>,
    /// FTL-based indexes: the GC victim policy instead of the FTL's default.
    pub gc: Option<flash::VictimPolicy>,
}

/// Most nodes a tree of `entries` entries with `node_bytes`-byte nodes can have.
fn max_nodes(entries: u64, node_bytes: usize) -> u64 {
    let leaf = capacity_of(node_bytes, true).max(3) as u64;
    let internal = capacity_of(node_bytes, false).max(3) as u64;
    let mut level = 2 * entries / leaf + 1;
    let mut total = level;
    while level > 1 {
        level = 2 * level / internal + 1;
        total += level;
    }
    total + 4
}

/// Blocks of node pages a tree of `entries` random inserts is expected to fill: nodes
/// ln 2 ≈ 69% full (Yao 1978).
fn expected_data_blocks(entries: u64, node_bytes: usize, base: &Geometry) -> u64 {
    let nodes = (entries as f64 / (capacity_of(node_bytes, true).max(3) as f64 * std::f64::consts::LN_2)).ceil() as u64;
    let pages = nodes * node_bytes.div_ceil(base.page_bytes as usize) as u64;
    pages.div_ceil(base.pages_per_block as u64).max(1)
}

/// A traditional B+-tree, BFTL or μ-Tree as `spec` asks, on a device of `base`'s shape.
pub fn build(spec: &IndexSpec, base: &Geometry) -> Result<BTree<Box<dyn NodeStore>>, Error> {
    let store: Box<dyn NodeStore> = match (spec.index, spec.storage) {
        (IndexKind::Btree, storage) if storage != Storage::Native => {
            let pages =
                max_nodes(spec.entries, spec.node_bytes) * spec.node_bytes.div_ceil(base.page_bytes as usize) as u64;
            let (ftl, logs) = ftl_for(spec, base, pages)?;
            Box::new(FtlStore::new(ftl, spec.node_bytes, logs)?)
        }
        (IndexKind::Bftl, storage) if storage != Storage::Native => {
            let threshold = match spec.compaction_threshold {
                0 if spec.node_bytes <= base.page_bytes as usize => 4,
                0 => 32,
                t => t,
            };
            // Every live page is named by some node's list, of at most threshold + 1 pages.
            let pages = max_nodes(spec.entries, spec.node_bytes) * (threshold as u64 + 1) + 2;
            let (ftl, logs) = ftl_for(spec, base, pages)?;
            Box::new(Bftl::new(ftl, spec.node_bytes, threshold, logs)?)
        }
        (IndexKind::MuTree, Storage::Native) => {
            // A leaf takes half a page and a page holds one leaf's path: one valid page per
            // leaf at most, and as many again for GC to work in.
            let pages = max_nodes(spec.entries, base.page_bytes as usize / 2);
            let blocks = spec.blocks.unwrap_or((pages * 5 / 4).div_ceil(base.pages_per_block as u64) as u32 + 4);
            Box::new(MuTree::new(device(base, blocks)?)?)
        }
        (IndexKind::Ipl, Storage::Native) => {
            let f = base.page_bytes as u64;
            let log_pages = (spec.ipl_log_region_bytes as u64).div_ceil(f);
            let per_unit =
                (base.pages_per_block as u64).saturating_sub(log_pages) / (spec.node_bytes as u64).div_ceil(f);
            let units = max_nodes(spec.entries, spec.node_bytes).div_ceil(per_unit.max(1)) + 2;
            let blocks = spec.blocks.unwrap_or(units as u32);
            Box::new(IplNodes::new(
                device(base, blocks)?,
                spec.node_bytes,
                spec.ipl_log_region_bytes,
                spec.ipl_sector_bytes,
            )?)
        }
        (index, storage) => {
            return Err(Error::Config(format!(
            "{index:?} does not run on {storage:?} storage (btree and bftl: page, bast, fast; ipl and mutree: native)"
        )))
        }
    };
    BTree::new(store, spec.buffer_frames)
}

fn device(base: &Geometry, blocks: u32) -> Result<Device, Error> {
    let mut g = base.clone();
    g.channels = 1;
    g.chips_per_channel = 1;
    g.blocks_per_chip = blocks;
    g.validate().map_err(|e| Error::Config(format!("index device: {e}")))?;
    Ok(Device::new(Box::new(MemoryStorage::new(g, true))))
}

/// An FTL of `spec.storage` whose logical space holds `pages` pages (or `spec.blocks`
/// data blocks), with log blocks the asked-for share of it; returns it and its log
/// block count.
fn ftl_for(spec: &IndexSpec, base: &Geometry, pages: u64) -> Result<(Box<dyn flash::ftl::Ftl>, u32), Error> {
    let ppb = base.pages_per_block as u64;
    let data = spec.blocks.map_or(pages.div_ceil(ppb) as u32 + 1, |b| b.max(1));
    let expected = expected_data_blocks(spec.entries, spec.node_bytes, base);
    let share_blocks = spec.log_block_count.unwrap_or((expected as f64 * spec.log_share).round() as u32);
    let (kind, logs) = match spec.storage {
        Storage::Page => (FtlKind::Page, 0),
        Storage::Bast => (FtlKind::Bast, share_blocks.max(1)),
        Storage::Fast => (FtlKind::Fast, share_blocks.max(2)),
        Storage::Native => return Err(Error::Config("an FTL index needs page, bast or fast storage".into())),
    };
    // BAST and FAST keep a merge destination and a spare beyond their log blocks; the
    // page FTL needs some free blocks for GC.
    let spare = if logs == 0 { share_blocks.max(5) } else { logs + 2 };
    let mut config = FtlConfig::new(kind);
    config.log_blocks = if logs == 0 { 2 } else { logs };
    let total = match spec.over_provisioning {
        Some(op) => {
            // The fewest blocks whose logical share (the FTL's floor) holds `data` and
            // whose spare share holds the spare blocks the FTL needs at least.
            let needed = if logs == 0 { 5 } else { logs + 2 };
            let mut total = (f64::from(data) / (1.0 - op)).ceil() as u32;
            if op > 0.0 {
                total = total.max((f64::from(needed) / op).ceil() as u32);
            }
            config.over_provisioning = op;
            total + u32::from(((f64::from(total) * (1.0 - op)).floor() as u32) < data)
        }
        None => {
            let total = data + spare;
            // Half a block less than the spare blocks, so the floor in the FTL lands on `data`.
            config.over_provisioning = (spare as f64 - 0.5) / total as f64;
            total
        }
    };
    if let Some(policy) = spec.gc {
        config.gc.policy = policy;
    }
    let ftl = flash::ftl::format(device(base, total)?, &config)?;
    Ok((ftl, logs))
}
