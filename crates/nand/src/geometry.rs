//! Device geometry, cell types, page types, datasheet latencies and named presets.
//!
//! Addresses are flat: a global block index is `chip * blocks_per_chip + block`, and a
//! physical page number (PPN) is `global_block * pages_per_block + page`. Chip `c` sits on
//! channel `c / chips_per_channel`.
//!
//! Page types follow the IPA paper's numbering (appendix C): counting pages from 1, odd
//! pages are LSB pages and even pages MSB pages. Counting from 0 as we do, page `p` of a
//! block has type `p % bits_per_cell` (0 = LSB, 1 = MSB for MLC; 0 = LSB, 1 = CSB, 2 = MSB
//! for TLC), and pages `p` and `p+1` (`p+2`) share wordline `p / bits_per_cell`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Largest page the delta-record format can address with its 2-byte offsets (IPA §6.1).
pub const MAX_PAGE_BYTES: u32 = 64 * 1024;

/// Array and bus latencies of one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// Array read time per page type (LSB, CSB, MSB).
    pub read_ns: [u64; 3],
    /// Array program time per page type (LSB, CSB, MSB).
    pub program_ns: [u64; 3],
    pub erase_ns: u64,
    /// Channel transfer time per byte, in picoseconds (2500 ps/B = 400 MB/s).
    pub transfer_ps_per_byte: u64,
    /// Commands the host interface serves at once (0: no limit beyond the chips and
    /// channels). See [`crate::timing`].
    #[serde(default)]
    pub host_queue_depth: u32,
}

impl Latencies {
    /// Same array times for every page type.
    pub fn uniform(read_ns: u64, program_ns: u64, erase_ns: u64, transfer_ps_per_byte: u64) -> Self {
        Latencies {
            read_ns: [read_ns; 3],
            program_ns: [program_ns; 3],
            erase_ns,
            transfer_ps_per_byte,
            host_queue_depth: 0,
        }
    }

    /// Typical SLC datasheet values: read 25 µs, program 200 µs, erase 1.5 ms, 400 MB/s bus.
    pub fn slc_typical() -> Self {
        Self::uniform(25_000, 200_000, 1_500_000, 2_500)
    }

    /// Typical MLC values: LSB read 50 µs / program 500 µs, MSB read 80 µs / program
    /// 1.5 ms, erase 3 ms, 400 MB/s bus. LSB pages program several times faster than MSB
    /// pages, which is why pSLC mode is also faster (IPA appendix C.2).
    pub fn mlc_typical() -> Self {
        Latencies {
            read_ns: [50_000, 65_000, 80_000],
            program_ns: [500_000, 1_000_000, 1_500_000],
            erase_ns: 3_000_000,
            transfer_ps_per_byte: 2_500,
            host_queue_depth: 0,
        }
    }

    /// Typical TLC values: reads 60/80/100 µs, programs 700 µs / 1.5 ms / 3 ms (LSB/CSB/
    /// MSB), erase 5 ms, 400 MB/s bus.
    pub fn tlc_typical() -> Self {
        Latencies {
            read_ns: [60_000, 80_000, 100_000],
            program_ns: [700_000, 1_500_000, 3_000_000],
            erase_ns: 5_000_000,
            transfer_ps_per_byte: 2_500,
            host_queue_depth: 0,
        }
    }

    /// Time to move `bytes` over the channel, rounded up to whole nanoseconds.
    pub fn transfer_ns(&self, bytes: usize) -> u64 {
        (bytes as u64 * self.transfer_ps_per_byte).div_ceil(1000)
    }

    pub fn read_array_ns(&self, page_type: PageType) -> u64 {
        self.read_ns[page_type.index()]
    }

    pub fn program_array_ns(&self, page_type: PageType) -> u64 {
        self.program_ns[page_type.index()]
    }
}

/// How many bits each cell stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellType {
    Slc,
    Mlc,
    Tlc,
}

impl CellType {
    pub fn bits_per_cell(self) -> u32 {
        match self {
            CellType::Slc => 1,
            CellType::Mlc => 2,
            CellType::Tlc => 3,
        }
    }

    /// Rated program/erase cycles per block (commonly quoted figures: SLC 100k, MLC 10k,
    /// TLC 3k).
    pub fn default_endurance(self) -> u32 {
        match self {
            CellType::Slc => 100_000,
            CellType::Mlc => 10_000,
            CellType::Tlc => 3_000,
        }
    }

    /// How often an LSB (or SLC) page may be programmed before an erase, the first
    /// program included. SLC parts commonly allow 4 partial programs; for MLC/TLC LSB
    /// pages we allow the same 4, i.e. N ≤ 3 appends, the range the IPA paper used on
    /// MLC (§8.4: "N to be 2 or 3").
    pub fn default_nop(self) -> u8 {
        4
    }

    pub fn name(self) -> &'static str {
        match self {
            CellType::Slc => "slc",
            CellType::Mlc => "mlc",
            CellType::Tlc => "tlc",
        }
    }
}

impl std::str::FromStr for CellType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "slc" => Ok(CellType::Slc),
            "mlc" => Ok(CellType::Mlc),
            "tlc" => Ok(CellType::Tlc),
            other => Err(format!("unknown cell type `{other}` (expected slc, mlc or tlc)")),
        }
    }
}

/// The page of a wordline a physical page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageType {
    /// Least significant bit page (the only page of an SLC wordline).
    Lsb,
    /// Centre bit page of a TLC wordline.
    Csb,
    /// Most significant bit page.
    Msb,
}

impl PageType {
    pub fn index(self) -> usize {
        match self {
            PageType::Lsb => 0,
            PageType::Csb => 1,
            PageType::Msb => 2,
        }
    }
}

impl fmt::Display for PageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageType::Lsb => "LSB",
            PageType::Csb => "CSB",
            PageType::Msb => "MSB",
        })
    }
}

/// Physical page number, flat across the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Ppn(pub u32);

/// Global block index, flat across the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BlockId(pub u32);

/// Shape, cell type, limits and latencies of one emulated device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub blocks_per_chip: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    pub oob_bytes: u32,
    pub cell: CellType,
    /// Programs allowed on an LSB/SLC page between erases (first program included).
    /// CSB and MSB pages are always programmed exactly once.
    pub nop: u8,
    /// Rated P/E cycles per block; an erase beyond it is refused.
    pub endurance: u32,
    pub latencies: Latencies,
}

/// Named presets. Each documents where its numbers come from.
pub const PRESET_NAMES: [&str; 4] = ["paper-emulator", "openssd-mlc", "ipl-slc", "femu"];

impl Geometry {
    /// Looks up a preset by name.
    pub fn preset(name: &str) -> Result<Geometry, String> {
        match name {
            "paper-emulator" => Ok(Self::paper_emulator()),
            "openssd-mlc" => Ok(Self::openssd_mlc()),
            "ipl-slc" => Ok(Self::ipl_slc()),
            "femu" => Ok(Self::femu()),
            other => Err(format!("unknown device preset `{other}` (expected one of: {})", PRESET_NAMES.join(", "))),
        }
    }

    /// The IPA paper's flash emulator (§8.1): 16 SLC chips, 4 KiB pages, used with
    /// page-level mapping and 10% over-provisioning. The paper gives neither channel
    /// count nor latencies; we assume 8 channels of 2 chips, 64-page blocks, 1024 blocks
    /// per chip (4 GiB raw), 128 B OOB and typical SLC datasheet latencies.
    pub fn paper_emulator() -> Geometry {
        Geometry {
            channels: 8,
            chips_per_channel: 2,
            blocks_per_chip: 1024,
            pages_per_block: 64,
            page_bytes: 4096,
            oob_bytes: 128,
            cell: CellType::Slc,
            nop: CellType::Slc.default_nop(),
            endurance: CellType::Slc.default_endurance(),
            latencies: Latencies::slc_typical(),
        }
    }

    /// OpenSSD Jasmine as described in the IPA paper's appendix D: MLC, 64 GB, 8
    /// dual-die packages (16 dies). Page and block sizes (8 KiB, 128 pages) and the MLC
    /// LSB/MSB latencies are typical of its 3x-nm MLC generation, not measured. The
    /// board's host interface served one I/O at a time (no NCQ; its write cache lets
    /// programs run on in the background), hence a host queue depth of 1. The bus is the
    /// typical 400 MB/s; the board's own channels measured 51.42 MB/s each (OpenSSD
    /// project, Jasmine developer information), which `transfer_ps_per_byte = 19448` sets.
    pub fn openssd_mlc() -> Geometry {
        Geometry {
            channels: 4,
            chips_per_channel: 4,
            blocks_per_chip: 4096,
            pages_per_block: 128,
            page_bytes: 8192,
            oob_bytes: 256,
            cell: CellType::Mlc,
            nop: CellType::Mlc.default_nop(),
            endurance: CellType::Mlc.default_endurance(),
            latencies: Latencies { host_queue_depth: 1, ..Latencies::mlc_typical() },
        }
    }

    /// The IPL paper's SLC flash (its Table 1 and §3): 2 KiB pages, 64 pages per 128 KiB
    /// erase unit, 512 B partial writes (hence 4 programs per page), read 80 µs, write
    /// 200 µs, erase 1.5 ms. We take those as array times and add a 100 MB/s bus.
    pub fn ipl_slc() -> Geometry {
        Geometry {
            channels: 1,
            chips_per_channel: 1,
            blocks_per_chip: 8192,
            pages_per_block: 64,
            page_bytes: 2048,
            oob_bytes: 64,
            cell: CellType::Slc,
            nop: 4,
            endurance: CellType::Slc.default_endurance(),
            latencies: Latencies::uniform(80_000, 200_000, 1_500_000, 10_000),
        }
    }

    /// FEMU as configured in the NoLgn-FTL paper (§4.1): 4 KiB pages, 1024 pages per
    /// block, read 50 µs, program 500 µs, erase 5 ms, 16 GB logical. We use FEMU's default
    /// 8 channels × 8 chips and 72 blocks per chip (18 GiB raw); FEMU's simple latency
    /// model does not distinguish LSB and MSB pages, so neither does this preset.
    pub fn femu() -> Geometry {
        Geometry {
            channels: 8,
            chips_per_channel: 8,
            blocks_per_chip: 72,
            pages_per_block: 1024,
            page_bytes: 4096,
            oob_bytes: 128,
            cell: CellType::Mlc,
            nop: CellType::Mlc.default_nop(),
            endurance: CellType::Mlc.default_endurance(),
            latencies: Latencies::uniform(50_000, 500_000, 5_000_000, 2_500),
        }
    }

    /// Checks that the geometry is usable; the message names the offending field.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("channels", self.channels),
            ("chips_per_channel", self.chips_per_channel),
            ("blocks_per_chip", self.blocks_per_chip),
            ("pages_per_block", self.pages_per_block),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(format!("geometry: {name} must be at least 1"));
            }
        }
        if self.page_bytes < 512 || self.page_bytes > MAX_PAGE_BYTES || !self.page_bytes.is_multiple_of(4) {
            return Err(format!(
                "geometry: page_bytes = {} must be a multiple of 4 between 512 and {MAX_PAGE_BYTES}",
                self.page_bytes
            ));
        }
        if self.oob_bytes < 16 || self.oob_bytes > 4096 {
            return Err(format!("geometry: oob_bytes = {} must be between 16 and 4096", self.oob_bytes));
        }
        if !self.pages_per_block.is_multiple_of(self.cell.bits_per_cell()) {
            return Err(format!(
                "geometry: pages_per_block = {} must be a multiple of {} for {} cells (whole wordlines)",
                self.pages_per_block,
                self.cell.bits_per_cell(),
                self.cell.name()
            ));
        }
        if self.pages_per_block > u16::MAX as u32 {
            return Err(format!("geometry: pages_per_block = {} is above {}", self.pages_per_block, u16::MAX));
        }
        if self.nop == 0 {
            return Err("geometry: nop must be at least 1".into());
        }
        if self.endurance == 0 {
            return Err("geometry: endurance must be at least 1".into());
        }
        // Four u32 factors: counted in u128 so no header can overflow the check itself.
        let pages = self.channels as u128
            * self.chips_per_channel as u128
            * self.blocks_per_chip as u128
            * self.pages_per_block as u128;
        if pages >= u32::MAX as u128 {
            return Err(format!("geometry: {pages} pages in all; at most {} are addressable", u32::MAX - 1));
        }
        Ok(())
    }

    pub fn chips(&self) -> u32 {
        self.channels * self.chips_per_channel
    }

    pub fn total_blocks(&self) -> u32 {
        self.chips() * self.blocks_per_chip
    }

    pub fn total_pages(&self) -> u32 {
        self.total_blocks() * self.pages_per_block
    }

    /// Bytes of one raw page: data followed by OOB.
    pub fn raw_page_bytes(&self) -> usize {
        (self.page_bytes + self.oob_bytes) as usize
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.total_pages() as u64 * self.page_bytes as u64
    }

    pub fn channel_of_chip(&self, chip: u32) -> u32 {
        div(chip, self.chips_per_channel)
    }

    pub fn block_id(&self, chip: u32, block_in_chip: u32) -> BlockId {
        BlockId(chip * self.blocks_per_chip + block_in_chip)
    }

    pub fn chip_of_block(&self, block: BlockId) -> u32 {
        div(block.0, self.blocks_per_chip)
    }

    pub fn ppn(&self, block: BlockId, page: u32) -> Ppn {
        Ppn(block.0 * self.pages_per_block + page)
    }

    pub fn block_of(&self, ppn: Ppn) -> BlockId {
        BlockId(div(ppn.0, self.pages_per_block))
    }

    pub fn page_in_block(&self, ppn: Ppn) -> u32 {
        rem(ppn.0, self.pages_per_block)
    }

    pub fn chip_of(&self, ppn: Ppn) -> u32 {
        self.chip_of_block(self.block_of(ppn))
    }

    /// (chip, block in its chip, page in its block) of a page, as messages name it.
    pub fn locate(&self, ppn: Ppn) -> (u32, u32, u32) {
        let block = self.block_of(ppn);
        (self.chip_of_block(block), block.0 % self.blocks_per_chip, self.page_in_block(ppn))
    }

    /// Which page of its wordline page `page` of a block is.
    pub fn page_type(&self, page: u32) -> PageType {
        let bit = match self.cell {
            CellType::Slc => 0,
            CellType::Mlc => page & 1,
            CellType::Tlc => page % 3,
        };
        match (self.cell, bit) {
            (_, 0) => PageType::Lsb,
            (CellType::Tlc, 1) => PageType::Csb,
            _ => PageType::Msb,
        }
    }

    /// Programs allowed between erases on a page of this type.
    pub fn nop_of(&self, page_type: PageType) -> u8 {
        match page_type {
            PageType::Lsb => self.nop,
            PageType::Csb | PageType::Msb => 1,
        }
    }
}

/// `n / d`: a shift when `d` is a power of two (every preset's sizes are). Addresses
/// are split several times per operation, and a division costs a dozen or more cycles.
#[inline]
fn div(n: u32, d: u32) -> u32 {
    if d.is_power_of_two() {
        n >> d.trailing_zeros()
    } else {
        n / d
    }
}

/// `n % d`: a mask when `d` is a power of two (see [`div`]).
#[inline]
fn rem(n: u32, d: u32) -> u32 {
    if d.is_power_of_two() {
        n & (d - 1)
    } else {
        n % d
    }
}

/// Per-field overrides of a preset (from CLI flags or a config file).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GeometryOverrides {
    pub channels: Option<u32>,
    pub chips_per_channel: Option<u32>,
    pub blocks_per_chip: Option<u32>,
    pub pages_per_block: Option<u32>,
    pub page_bytes: Option<u32>,
    pub oob_bytes: Option<u32>,
    pub cell: Option<CellType>,
    pub nop: Option<u8>,
    pub endurance: Option<u32>,
    /// Commands the host interface serves at once (0: no limit).
    pub host_queue_depth: Option<u32>,
    /// Channel transfer time per byte, in picoseconds (the preset's bus replaced by a
    /// measured one).
    pub transfer_ps_per_byte: Option<u64>,
}

impl GeometryOverrides {
    /// `chips` chips in all, spread over as many of `base`'s channels as divide them.
    pub fn set_chips(&mut self, base: &Geometry, chips: u32) {
        let channels = (1..=base.channels.min(chips)).rev().find(|c| chips.is_multiple_of(*c)).unwrap_or(1);
        self.channels = Some(channels);
        self.chips_per_channel = Some(chips / channels);
    }

    /// Applies the overrides and validates the result. A cell-type override also
    /// resets NOP, endurance and latencies to that cell type's defaults unless those
    /// are overridden too.
    pub fn apply(&self, mut g: Geometry) -> Result<Geometry, String> {
        if let Some(cell) = self.cell {
            if cell != g.cell {
                g.cell = cell;
                g.nop = cell.default_nop();
                g.endurance = cell.default_endurance();
                g.latencies = match cell {
                    CellType::Slc => Latencies::slc_typical(),
                    CellType::Mlc => Latencies::mlc_typical(),
                    CellType::Tlc => Latencies::tlc_typical(),
                };
            }
        }
        macro_rules! set {
            ($($field:ident),*) => { $( if let Some(v) = self.$field { g.$field = v; } )* };
        }
        set!(channels, chips_per_channel, blocks_per_chip, pages_per_block, page_bytes, oob_bytes, nop, endurance);
        if let Some(depth) = self.host_queue_depth {
            g.latencies.host_queue_depth = depth;
        }
        if let Some(ps) = self.transfer_ps_per_byte {
            if ps == 0 {
                return Err("geometry: transfer_ps_per_byte must be at least 1".into());
            }
            g.latencies.transfer_ps_per_byte = ps;
        }
        g.validate()?;
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_rounds_up() {
        let l = Latencies::uniform(0, 0, 0, 2_500);
        assert_eq!(l.transfer_ns(4096), 10_240);
        assert_eq!(l.transfer_ns(1), 3);
        assert_eq!(l.transfer_ns(0), 0);
        // A 50-byte delta moves ~80x faster than a 4 KiB page.
        assert!(l.transfer_ns(50) * 80 <= l.transfer_ns(4096));
    }

    #[test]
    fn presets_are_valid() {
        for name in PRESET_NAMES {
            let g = Geometry::preset(name).unwrap();
            g.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(Geometry::preset("nope").unwrap_err().contains("paper-emulator"));
    }

    #[test]
    fn addresses_round_trip() {
        let g = Geometry::paper_emulator();
        let b = g.block_id(3, 17);
        let p = g.ppn(b, 5);
        assert_eq!(g.block_of(p), b);
        assert_eq!(g.page_in_block(p), 5);
        assert_eq!(g.chip_of(p), 3);
        assert_eq!(g.channel_of_chip(3), 1);
    }

    #[test]
    fn shifts_and_divisions_split_addresses_alike() {
        for (n, d) in [(0, 1), (7, 1), (1000, 64), (1000, 96), (u32::MAX, 3), (u32::MAX, 1 << 31), (5, 6)] {
            assert_eq!((div(n, d), rem(n, d)), (n / d, n % d), "{n} / {d}");
        }
        // A geometry whose sizes are not powers of two.
        let g =
            Geometry { chips_per_channel: 3, blocks_per_chip: 100, pages_per_block: 96, ..Geometry::paper_emulator() };
        let p = g.ppn(g.block_id(5, 42), 77);
        assert_eq!((g.block_of(p), g.page_in_block(p), g.chip_of(p)), (g.block_id(5, 42), 77, 5));
        assert_eq!(g.channel_of_chip(5), 1);
        let tlc = Geometry { cell: CellType::Tlc, ..g };
        assert_eq!(
            [tlc.page_type(93), tlc.page_type(94), tlc.page_type(95)],
            [PageType::Lsb, PageType::Csb, PageType::Msb]
        );
    }

    #[test]
    fn a_transfer_override_sets_the_channel_rate_of_every_transfer() {
        let board = GeometryOverrides { transfer_ps_per_byte: Some(19_448), ..Default::default() };
        let g = board.apply(Geometry::openssd_mlc()).unwrap();
        // An 8 KiB page at 51.42 MB/s: 159.3 µs on the channel, not the preset's 20.5.
        assert_eq!(g.latencies.transfer_ns(8192), 159_319);
        assert_eq!(Geometry::openssd_mlc().latencies.transfer_ns(8192), 20_480);
        let zero = GeometryOverrides { transfer_ps_per_byte: Some(0), ..Default::default() };
        assert!(zero.apply(Geometry::openssd_mlc()).unwrap_err().contains("transfer_ps_per_byte must be at least 1"));
    }

    #[test]
    fn page_types_follow_the_paper_numbering() {
        let mut g = Geometry::openssd_mlc();
        // Paper page 59 (1-based, odd) is LSB; page 62 (even) is MSB.
        assert_eq!(g.page_type(58), PageType::Lsb);
        assert_eq!(g.page_type(61), PageType::Msb);
        g.cell = CellType::Tlc;
        assert_eq!([g.page_type(0), g.page_type(1), g.page_type(2)], [PageType::Lsb, PageType::Csb, PageType::Msb]);
        assert_eq!(g.nop_of(PageType::Msb), 1);
    }

    #[test]
    fn overrides_validate() {
        let o = GeometryOverrides { pages_per_block: Some(0), ..Default::default() };
        assert!(o.apply(Geometry::paper_emulator()).unwrap_err().contains("pages_per_block"));
        let o = GeometryOverrides { cell: Some(CellType::Mlc), pages_per_block: Some(63), ..Default::default() };
        assert!(o.apply(Geometry::paper_emulator()).unwrap_err().contains("wordlines"));
    }
}
