//! Conventional FTLs: a block device of logical pages over the whole NAND device, the
//! baselines the seed papers measure IPA, In-Page Logging and NoLgn-FTL against.
//!
//! Every FTL runs on the same [`nand::Device`] as the NoFTL regions (same program
//! rules, timing, OOB bytes and power cuts), keeps its mapping state in controller RAM
//! and rebuilds it after a power cut by scanning OOB bytes. An FTL offers no in-place
//! append: IPA on top of one is refused and the engine writes out of place.
//!
//! Kinds (one module each): [`FtlKind::Page`] page-level mapping with GC,
//! [`FtlKind::Dftl`] demand-cached page mapping, [`FtlKind::Block`] naive block-level
//! mapping, [`FtlKind::Bast`] and [`FtlKind::Fast`] hybrid log-block FTLs,
//! [`FtlKind::Nolgn`] page mapping with transactions (NoLgn-FTL: `begin_tx`,
//! `write_tx`, `commit`, `abort`; the other kinds refuse those).
//!
//! `format` and [`open`] dispatch on the kind; the [`FtlConfig`] is kept in the
//! device's configuration area behind the [`CONFIG_MAGIC`] prefix. The page FTL and
//! DFTL share one out-of-place page store (`pagelog`: allocation, GC, OOB format,
//! rebuild scan); NoLgn-FTL adds its transaction metadata on top of it.

pub mod bast;
pub mod block;
pub mod dftl;
pub mod fast;
mod hybrid;
pub mod nolgn;
pub mod page;
mod pagelog;

pub use dftl::Dftl;
pub use nolgn::NolgnFtl;
pub use page::PageFtl;

use crate::error::Error;
use crate::spec::GcConfig;
use crate::WriteHint;
use nand::{Device, OpTiming, SimTime};
use serde::{Deserialize, Serialize};

/// Which FTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FtlKind {
    Page,
    Dftl,
    Block,
    Bast,
    Fast,
    Nolgn,
}

impl FtlKind {
    pub const ALL: [FtlKind; 6] =
        [FtlKind::Page, FtlKind::Dftl, FtlKind::Block, FtlKind::Bast, FtlKind::Fast, FtlKind::Nolgn];

    pub fn name(self) -> &'static str {
        match self {
            FtlKind::Page => "page",
            FtlKind::Dftl => "dftl",
            FtlKind::Block => "block",
            FtlKind::Bast => "bast",
            FtlKind::Fast => "fast",
            FtlKind::Nolgn => "nolgn",
        }
    }

    /// Parses `page`, `dftl`, `block`, `bast`, `fast` or `nolgn`.
    pub fn parse(s: &str) -> Option<FtlKind> {
        FtlKind::ALL.into_iter().find(|k| k.name().eq_ignore_ascii_case(s))
    }
}

/// How an FTL is asked to be built. Unused fields are ignored by kinds that do not
/// need them; a field left out of a config file takes [`FtlConfig::new`]'s value, and
/// an unknown one is refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    pub kind: FtlKind,
    /// (physical − logical) / physical, as for regions.
    #[serde(default = "default_over_provisioning")]
    pub over_provisioning: f64,
    /// DFTL: mapping entries the cached mapping table (CMT) holds.
    #[serde(default = "default_cmt_entries")]
    pub cmt_entries: u32,
    /// BAST and FAST: log blocks (FAST: one sequential log block plus the rest shared
    /// random log blocks).
    #[serde(default = "default_log_blocks")]
    pub log_blocks: u32,
    /// Page and DFTL: GC victim policy and free-block thresholds per chip (foreground
    /// at least 2: a victim's moves may need a new GC block, and the writes after the
    /// collection another).
    #[serde(default)]
    pub gc: GcConfig,
    /// NoLgn-FTL: entries of the P2P table (pages of open transactions) in controller
    /// RAM, 12 bytes each (the paper: 10,000).
    #[serde(default = "default_p2p_entries")]
    pub p2p_entries: u32,
}

fn default_p2p_entries() -> u32 {
    10_000
}

fn default_over_provisioning() -> f64 {
    0.10
}

fn default_cmt_entries() -> u32 {
    4096
}

fn default_log_blocks() -> u32 {
    32
}

impl FtlConfig {
    pub fn new(kind: FtlKind) -> FtlConfig {
        FtlConfig {
            kind,
            over_provisioning: default_over_provisioning(),
            cmt_entries: default_cmt_entries(),
            log_blocks: default_log_blocks(),
            gc: GcConfig::default(),
            p2p_entries: default_p2p_entries(),
        }
    }
}

/// Counters of an FTL, in the vocabulary every storage manager uses (documented once in
/// `docs/benchmarks.md`). Counts that a kind does not have stay 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FtlCounters {
    pub host_reads: u64,
    /// Logical page writes by the host.
    pub host_writes: u64,
    pub host_trims: u64,
    /// Every page program on flash: host data, GC and merge copies, translation pages.
    pub flash_programs: u64,
    /// Every page read on flash, host reads included.
    pub flash_reads: u64,
    /// Valid pages copied by GC (page, DFTL) or by merges (block, BAST, FAST).
    pub gc_page_migrations: u64,
    pub gc_erases: u64,
    pub merges_switch: u64,
    pub merges_partial: u64,
    pub merges_full: u64,
    /// DFTL: translation page reads and writes caused by CMT misses and evictions.
    pub translation_reads: u64,
    pub translation_writes: u64,
    /// Page FTL: logical pages pointed at another page's flash page by [`Ftl::remap`]
    /// (each one a page program saved).
    #[serde(default)]
    pub remaps: u64,
    /// Page FTL: remap record pages programmed to make remaps durable.
    #[serde(default)]
    pub remap_records: u64,
    /// NoLgn-FTL: valid pages GC copied beyond what the policy's own victim held,
    /// because lock bits passed over that victim ("additional migrations due to
    /// locking").
    #[serde(default)]
    pub gc_lock_migrations: u64,
    /// NoLgn-FTL: GC copies that kept the transaction metadata in the OOB (pages of
    /// open transactions, and end pages kept as commit witnesses).
    #[serde(default)]
    pub gc_tx_migrations: u64,
}

impl FtlCounters {
    /// The counts since `earlier` (field by field).
    pub fn since(&self, earlier: &FtlCounters) -> FtlCounters {
        FtlCounters {
            host_reads: self.host_reads - earlier.host_reads,
            host_writes: self.host_writes - earlier.host_writes,
            host_trims: self.host_trims - earlier.host_trims,
            flash_programs: self.flash_programs - earlier.flash_programs,
            flash_reads: self.flash_reads - earlier.flash_reads,
            gc_page_migrations: self.gc_page_migrations - earlier.gc_page_migrations,
            gc_erases: self.gc_erases - earlier.gc_erases,
            merges_switch: self.merges_switch - earlier.merges_switch,
            merges_partial: self.merges_partial - earlier.merges_partial,
            merges_full: self.merges_full - earlier.merges_full,
            translation_reads: self.translation_reads - earlier.translation_reads,
            translation_writes: self.translation_writes - earlier.translation_writes,
            remaps: self.remaps - earlier.remaps,
            remap_records: self.remap_records - earlier.remap_records,
            gc_lock_migrations: self.gc_lock_migrations - earlier.gc_lock_migrations,
            gc_tx_migrations: self.gc_tx_migrations - earlier.gc_tx_migrations,
        }
    }

    /// Flash programs per host write (1.0 when nothing is copied).
    pub fn write_amplification(&self) -> f64 {
        self.flash_programs as f64 / self.host_writes.max(1) as f64
    }
}

/// A logical page as read through an FTL.
pub struct FtlRead<'d> {
    pub timing: OpTiming,
    /// The page bytes (0xFF for a metadata-only device).
    pub data: &'d [u8],
}

impl<'d> From<nand::PageRead<'d>> for FtlRead<'d> {
    /// The host's view of a flash page read: its timing and data (the OOB is the FTL's).
    fn from(read: nand::PageRead<'d>) -> FtlRead<'d> {
        FtlRead { timing: read.timing, data: read.data }
    }
}

/// Writes the [`Ftl`] methods that every FTL answers alike from the [`Device`] it owns,
/// given the field path to it: `device`, `device_mut` and `into_device`.
macro_rules! device_accessors {
    ($($field:ident).+) => {
        fn device(&self) -> &nand::Device {
            &self.$($field).+
        }
        fn device_mut(&mut self) -> &mut nand::Device {
            &mut self.$($field).+
        }
        fn into_device(self: Box<Self>) -> nand::Device {
            self.$($field).+
        }
    };
}
use device_accessors;

/// A block device of logical pages (each one flash page of data) over a NAND device.
pub trait Ftl: Send {
    fn kind(&self) -> FtlKind;
    fn logical_pages(&self) -> u32;
    /// Bytes of one logical page: the device's flash page size.
    fn page_bytes(&self) -> usize {
        self.device().geometry().page_bytes as usize
    }
    fn device(&self) -> &Device;
    fn device_mut(&mut self) -> &mut Device;
    fn into_device(self: Box<Self>) -> Device;
    /// The page, or `None` if it was never written or was trimmed.
    fn read(&mut self, lpn: u32, now: SimTime) -> Result<Option<FtlRead<'_>>, Error>;
    /// Writes a whole page (`data.len() == page_bytes()`).
    fn write(&mut self, lpn: u32, data: &[u8], now: SimTime) -> Result<OpTiming, Error>;
    /// A hint that `lpn` will be written soon, one stage at a time as for a NoFTL
    /// region ([`crate::Region::prefetch_write`]). Changes nothing; FTLs that do not use
    /// it ignore it.
    fn prefetch_write(&self, _lpn: u32, _stage: WriteHint) {}
    /// Forgets a page; `None` when nothing had to be written to make that durable.
    fn trim(&mut self, lpn: u32, now: SimTime) -> Result<Option<OpTiming>, Error>;
    fn counters(&self) -> FtlCounters;
    /// The heap bytes of the FTL's maps and tables (what it keeps beside the device's
    /// pages), for the bench commands' memory report.
    fn mapping_bytes(&self) -> u64;

    /// Writes a whole page as [`Ftl::write`] does, with the caller's `tag` stored in the
    /// flash page's OOB beside the FTL's own header (one program: data and tag are on
    /// flash together or not at all). Refused by FTLs without room or support for it.
    fn write_tagged(&mut self, lpn: u32, data: &[u8], tag: &[u8; TAG_BYTES], now: SimTime) -> Result<OpTiming, Error> {
        let _ = (lpn, data, tag, now);
        Err(Error::Config(format!("the {} FTL cannot store a caller's tag in the OOB", self.kind().name())))
    }

    /// Reads a page and the tag [`Ftl::write_tagged`] stored with it (`None` for a page
    /// written without one).
    #[allow(clippy::type_complexity)]
    fn read_tagged(&mut self, lpn: u32, now: SimTime) -> Result<Option<(FtlRead<'_>, Option<[u8; TAG_BYTES]>)>, Error> {
        let _ = (lpn, now);
        Err(Error::Config(format!("the {} FTL cannot store a caller's tag in the OOB", self.kind().name())))
    }

    /// For each `(dst, src)`: makes logical page `dst` read what `src` reads now, by
    /// pointing it at the same flash page (no copy). `src` keeps its page too (the two
    /// share it until one is rewritten or trimmed). Durable when it returns, each pair
    /// atomically (after a power cut `dst` reads its old bytes or `src`'s). `None` when
    /// `pairs` is empty. Refused by FTLs without remapping.
    fn remap(&mut self, pairs: &[(u32, u32)], now: SimTime) -> Result<Option<OpTiming>, Error> {
        let _ = (pairs, now);
        Err(Error::Config(format!("the {} FTL cannot remap logical pages", self.kind().name())))
    }

    /// Starts a transaction; returns its id (unique while any page of it is on flash).
    fn begin_tx(&mut self) -> Result<u32, Error> {
        Err(Error::NotTransactional { ftl: self.kind().name().into() })
    }
    /// Writes a page for transaction `tid`; the old version stays valid until commit.
    /// `end` marks the transaction's last page: commit needs it.
    fn write_tx(&mut self, lpn: u32, data: &[u8], tid: u32, end: bool, now: SimTime) -> Result<OpTiming, Error> {
        let _ = (lpn, data, tid, end, now);
        Err(Error::NotTransactional { ftl: self.kind().name().into() })
    }
    /// Makes transaction `tid` durable (its end page is on flash) and drops the old versions.
    fn commit(&mut self, tid: u32, now: SimTime) -> Result<(), Error> {
        let _ = (tid, now);
        Err(Error::NotTransactional { ftl: self.kind().name().into() })
    }
    /// Rolls transaction `tid` back: its pages' old versions are mapped again.
    fn abort(&mut self, tid: u32, now: SimTime) -> Result<(), Error> {
        let _ = (tid, now);
        Err(Error::NotTransactional { ftl: self.kind().name().into() })
    }
}

/// Bytes of a caller's tag a page write can carry in its OOB ([`Ftl::write_tagged`]):
/// a SQLite WAL frame header.
pub const TAG_BYTES: usize = 24;

/// Prefix of the FTL configuration in the device's configuration area (then the
/// [`FtlConfig`] as JSON); distinct from the NoFTL region layout, which is plain JSON.
pub const CONFIG_MAGIC: &[u8] = crate::stored::FTL_MAGIC;

/// Lays a fresh FTL of `config.kind` over the whole device (erasing it) and stores the
/// configuration in the device's configuration area.
pub fn format(mut device: Device, config: &FtlConfig) -> Result<Box<dyn Ftl>, Error> {
    let mut stored = CONFIG_MAGIC.to_vec();
    stored.extend(serde_json::to_vec(config).map_err(|e| Error::Config(format!("FTL configuration: {e}")))?);
    device.storage_mut().set_config_area(stored)?;
    match config.kind {
        FtlKind::Page => Ok(Box::new(PageFtl::format(device, config)?)),
        FtlKind::Dftl => Ok(Box::new(Dftl::format(device, config)?)),
        FtlKind::Block => block::format(device, config),
        FtlKind::Bast => bast::format(device, config),
        FtlKind::Fast => fast::format(device, config),
        FtlKind::Nolgn => Ok(Box::new(NolgnFtl::format(device, config)?)),
    }
}

/// Opens a device formatted by `format`: reads the stored configuration and rebuilds
/// the FTL by scanning from `now`. Returns the FTL and when the rebuild finished.
pub fn open(device: Device, now: SimTime) -> Result<(Box<dyn Ftl>, SimTime), Error> {
    let config = stored_config(device.storage().config_area())?;
    match config.kind {
        FtlKind::Page => boxed(PageFtl::open(device, &config, now)),
        FtlKind::Dftl => boxed(Dftl::open(device, &config, now)),
        FtlKind::Block => block::open(device, &config, now),
        FtlKind::Bast => bast::open(device, &config, now),
        FtlKind::Fast => fast::open(device, &config, now),
        FtlKind::Nolgn => boxed(NolgnFtl::open(device, &config, now)),
    }
}

/// A failed [`open_or_keep`]: the error, and the device where the open hands it back.
pub type OpenFailure = Box<(Error, Option<Device>)>;

/// As [`open`], but where the mount writes (DFTL rewrites translation pages) a failure
/// hands the device back, so that a power cut in the mount can be followed by another
/// open. The other kinds' mounts only read: their failures keep nothing.
pub fn open_or_keep(device: Device, now: SimTime) -> Result<(Box<dyn Ftl>, SimTime), OpenFailure> {
    let config = stored_config(device.storage().config_area()).map_err(|e| Box::new((e, None)))?;
    if config.kind == FtlKind::Dftl {
        return Dftl::open_or_keep(device, &config, now)
            .map(|(ftl, done)| (Box::new(ftl) as Box<dyn Ftl>, done))
            .map_err(|failed| Box::new((failed.0, Some(failed.1))));
    }
    open(device, now).map_err(|e| Box::new((e, None)))
}

/// An opened FTL of a concrete kind as a trait object.
fn boxed<F: Ftl + 'static>(opened: Result<(F, SimTime), Error>) -> Result<(Box<dyn Ftl>, SimTime), Error> {
    opened.map(|(ftl, done)| (Box::new(ftl) as Box<dyn Ftl>, done))
}

/// The FTL configuration stored in a device's configuration area.
pub fn stored_config(area: &[u8]) -> Result<FtlConfig, Error> {
    let Some(json) = area.strip_prefix(CONFIG_MAGIC) else {
        if let Some(other) = crate::stored::other_than(area, crate::stored::FTL) {
            return Err(other);
        }
        return Err(Error::CorruptLayout(format!(
            "the device's configuration area does not start with {} (it holds no conventional FTL)",
            String::from_utf8_lossy(CONFIG_MAGIC)
        )));
    };
    serde_json::from_slice(json).map_err(|e| Error::CorruptLayout(format!("FTL configuration: {e}")))
}

/// Decodes an OOB header whose CRC failed with one flipped bit put right: each bit of
/// its first `len` bytes is tried in turn (CRC-32 over a header of at most 48 bytes has a
/// Hamming distance above 3, so a single flip is repaired without ambiguity). A damaged
/// page that completed thus still names what it holds, and its lpn reads as corrupt.
fn repair_one_bit<H>(oob: &[u8], len: usize, decode: impl Fn(&[u8]) -> Option<H>) -> Option<H> {
    let mut bytes = oob[..oob.len().min(len)].to_vec();
    for bit in 0..bytes.len() * 8 {
        bytes[bit / 8] ^= 1 << (bit % 8);
        if let Some(h) = decode(&bytes) {
            return Some(h);
        }
        bytes[bit / 8] ^= 1 << (bit % 8);
    }
    None
}

/// Refuses a logical page beyond the FTL's capacity.
fn check_lpn(name: &str, lpn: u32, logical_pages: u32) -> Result<(), Error> {
    if lpn >= logical_pages {
        return Err(Error::LpnOutOfRange { region: format!("{name} FTL"), lpn, logical_pages });
    }
    Ok(())
}

/// Refuses a payload that is not one page (a metadata-only device stores none).
fn check_payload(keeps_data: bool, data: &[u8], page_bytes: usize) -> Result<(), Error> {
    if keeps_data && data.len() != page_bytes {
        return Err(Error::WrongPayloadSize { got: data.len(), expected: page_bytes });
    }
    Ok(())
}
