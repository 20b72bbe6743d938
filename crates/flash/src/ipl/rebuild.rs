//! Opening an IPL store: the map, the log sectors and the free units are rebuilt by
//! reading every page of every unit (data, OOB and log sectors).
//!
//! A unit is a candidate for its logical unit when its page 0 holds a valid tag and,
//! for a merged unit, all its merged pages are whole; the candidate with the highest
//! generation wins (two with the same one are corrupt). In the winner, groups (a first
//! write, a flush of log sectors) count only when whole, replayed in sequence order. A
//! damaged page is torn only if it is the unit's last programmed page, a damaged sector
//! only if it is the last written sector of the newest log page, and either only if the
//! device's durable point says a cut may have interrupted its program
//! ([`nand::Device::may_be_torn`]); other damage is [`Error::Corrupted`]. Units that lost a write to a cut are merged before the open
//! returns, and every programmed unit that is not a winner is erased, so a stale copy
//! can never come back. Units that read erased are erased again before use (a torn
//! erase may look erased and still refuse programs). A NoFTL region (the write-ahead
//! log) is rebuilt by its own scan first; the IPL scan skips its chips.

use super::format::{PageKind, Record, Sector, Tag};
use super::{IplShape, IplStore, LUnit, PhysUnit, SectorRef, Stored, UnitState};
use crate::error::Error;
use crate::region::Region;
use nand::{Device, SimTime};
use serde::Serialize;
use std::collections::BTreeMap;

/// What the last open found besides whole pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IplRebuildReport {
    /// Damaged pages or sectors taken as torn by a power cut.
    pub torn: u64,
    /// Write or log groups a cut left partial (ignored).
    pub partial_groups: u64,
    /// Units merged at open to drop what a cut left behind.
    pub cleaned_units: u64,
    /// Programmed units that were no winner, erased at open.
    pub stale_units: u64,
}

/// A sector of a log group: unit page, slot, the sector.
type LogMember = (u32, u32, Sector);

/// One page as the scan found it.
enum Scanned {
    Erased,
    Damaged(String),
    Data(Tag),
    /// A log page: its tag and each sector slot.
    Log(Tag, Vec<Result<Option<Sector>, String>>),
}

impl Scanned {
    fn tag(&self) -> Option<&Tag> {
        match self {
            Scanned::Data(t) | Scanned::Log(t, _) => Some(t),
            _ => None,
        }
    }
}

impl IplStore {
    /// Opens a formatted IPL store: reads the layout and rebuilds by scan from `now`.
    /// Returns when the scan (and any clean-up merges) finished.
    pub fn open(device: Device, now: SimTime) -> Result<(IplStore, SimTime), Error> {
        IplStore::open_or_keep(device, now).map_err(|failed| failed.0)
    }

    /// [`IplStore::open`] that hands the device back when the open fails (a power cut
    /// can land in the clean-up it writes).
    pub fn open_or_keep(device: Device, now: SimTime) -> Result<(IplStore, SimTime), Box<(Error, Device)>> {
        if let Some(other) = crate::stored::other_than(device.storage().config_area(), crate::stored::IPL) {
            return Err(Box::new((other, device)));
        }
        let stored: Stored = match serde_json::from_slice(device.storage().config_area()) {
            Ok(s) => s,
            Err(e) => {
                return Err(Box::new((Error::CorruptLayout(format!("the IPL layout does not parse: {e}")), device)))
            }
        };
        let shape = match IplShape::new(device.geometry(), &stored.config) {
            Ok(s) => s,
            Err(e) => return Err(Box::new((e, device))),
        };
        let mut store = IplStore::empty(device, stored.config, shape, stored.regions);
        let mut done = now;
        for i in 0..store.parts.len() {
            let p = &store.parts[i];
            if p.noftl_chips.is_empty() {
                continue;
            }
            match Region::rebuild(p.spec.clone(), p.noftl_chips.clone(), &mut store.device, now) {
                Ok((region, end)) => {
                    store.plain[i] = Some(region);
                    done = done.max(end);
                }
                Err(e) => return Err(Box::new((e, store.device))),
            }
        }
        match store.rebuild(done) {
            Ok(done) => Ok((store, done)),
            Err(e) => Err(Box::new((e, store.device))),
        }
    }

    /// The region holding logical unit `lu` (for errors and counters).
    fn region_of(&self, lu: usize) -> usize {
        self.parts.iter().position(|p| (p.first_unit..p.first_unit + p.units).contains(&(lu as u32))).unwrap_or(0)
    }

    /// Refuses a unit holding a damaged page or log sector that completed: the durable
    /// point proves no cut interrupted its program, so it rotted after it was written,
    /// and whichever version it held (possibly the newest) must not be replaced by an
    /// older one. Damage a cut may have caused is judged later (`replay`).
    fn refuse_completed_damage(&self, phys: u32, pages: &[Scanned]) -> Result<(), Error> {
        let lu = pages.first().and_then(Scanned::tag).map_or(phys, |t| t.lunit) as usize;
        for (p, scanned) in pages.iter().enumerate() {
            let what = match scanned {
                Scanned::Damaged(what) => what.clone(),
                Scanned::Log(_, sectors) => match sectors.iter().position(Result::is_err) {
                    Some(slot) => format!("log sector {slot} fails its checksum"),
                    None => continue,
                },
                _ => continue,
            };
            let ppn = self.ppn(phys, p as u32);
            if !self.device.may_be_torn(ppn) {
                return Err(self.corrupted(self.region_of(lu), None, ppn, format!("{what} although it completed")));
            }
        }
        Ok(())
    }

    fn rebuild(&mut self, now: SimTime) -> Result<SimTime, Error> {
        let shape = self.shape;
        let keeps = self.device.storage().keeps_data();
        let mut done = now;
        let mut scans: Vec<Vec<Scanned>> = Vec::with_capacity(shape.units as usize);
        let mut max_seq = 0u64;
        for phys in 0..shape.units {
            let mut pages = Vec::with_capacity(shape.unit_pages as usize);
            if self.units[phys as usize].state == UnitState::Plain {
                scans.push(pages);
                continue;
            }
            for p in 0..shape.unit_pages {
                let ppn = self.ppn(phys, p);
                let read = self.device.read(ppn, now)?;
                done = done.max(read.timing.end_ns);
                let scanned = classify(read.data, read.oob, keeps, &shape);
                if let Some(t) = scanned.tag() {
                    max_seq = max_seq.max(t.seq);
                }
                if let Scanned::Log(_, sectors) = &scanned {
                    for s in sectors.iter().flatten().flatten() {
                        max_seq = max_seq.max(s.seq);
                    }
                }
                pages.push(scanned);
            }
            self.refuse_completed_damage(phys, &pages)?;
            scans.push(pages);
        }
        self.seq = max_seq + 1;

        // Winners: the complete candidate of the highest generation per logical unit.
        let mut winners: BTreeMap<u32, (u32, u32)> = BTreeMap::new(); // lunit -> (generation, phys)
        for (phys, pages) in scans.iter().enumerate() {
            let Some(tag) = candidate(pages) else { continue };
            if tag.lunit as usize >= self.lunits.len() {
                continue;
            }
            match winners.get(&tag.lunit) {
                Some(&(g, other)) if g == tag.generation => {
                    let ppn = self.ppn(phys as u32, 0);
                    let region = self.region_of(tag.lunit as usize);
                    return Err(self.corrupted(
                        region,
                        None,
                        ppn,
                        format!("units {other} and {phys} both hold generation {g} of logical unit {}", tag.lunit),
                    ));
                }
                Some(&(g, _)) if g > tag.generation => {}
                _ => {
                    winners.insert(tag.lunit, (tag.generation, phys as u32));
                }
            }
        }

        let mut to_clean = Vec::new();
        let mut stale = Vec::new();
        for (phys, pages) in scans.iter().enumerate() {
            let phys = phys as u32;
            if self.units[phys as usize].state == UnitState::Plain {
                continue;
            }
            let won = pages
                .first()
                .and_then(Scanned::tag)
                .filter(|t| winners.get(&t.lunit) == Some(&(t.generation, phys)))
                .copied();
            match won {
                Some(tag) => {
                    if self.replay(phys, tag, pages)? {
                        to_clean.push(tag.lunit as usize);
                    }
                }
                None => {
                    let programmed = pages.iter().any(|p| !matches!(p, Scanned::Erased));
                    self.units[phys as usize] = PhysUnit::fresh(UnitState::Dirty);
                    if programmed {
                        stale.push(phys);
                    }
                }
            }
        }
        self.free = (0..shape.units)
            .filter(|&u| !matches!(self.units[u as usize].state, UnitState::Live(_) | UnitState::Plain))
            .collect();
        for phys in stale {
            let t = self.erase_unit(0, phys, done)?;
            done = done.max(t.end_ns);
            self.report.stale_units += 1;
        }
        for lu in to_clean {
            let region = self.region_of(lu);
            let t = self.merge(region, lu, &[], None, done)?;
            done = done.max(t.end_ns);
            self.report.cleaned_units += 1;
        }
        Ok(done)
    }

    /// Rebuilds logical unit `tag.lunit` from its winning unit `phys`; true when a cut
    /// left something behind that a merge should drop.
    fn replay(&mut self, phys: u32, tag: Tag, pages: &[Scanned]) -> Result<bool, Error> {
        let shape = self.shape;
        let lu = tag.lunit as usize;
        let region = self.region_of(lu);
        let last_programmed = pages.iter().rposition(|p| !matches!(p, Scanned::Erased));
        let last_log = pages.iter().rposition(|p| matches!(p, Scanned::Log(..)));
        let mut dirty = false;
        // seq -> (count, members): data pages (unit page, logical page) and sectors.
        let mut data_groups: BTreeMap<u64, (u16, Vec<(u32, u32)>)> = BTreeMap::new();
        let mut log_groups: BTreeMap<u64, (u8, Vec<LogMember>)> = BTreeMap::new();
        let mut unit = PhysUnit::fresh(UnitState::Live(tag.lunit));
        for (p, scanned) in pages.iter().enumerate() {
            let p = p as u32;
            if !matches!(scanned, Scanned::Erased) {
                unit.next_page = p + 1;
            }
            match scanned {
                Scanned::Erased => {}
                Scanned::Damaged(what) => {
                    let ppn = self.ppn(phys, p);
                    if Some(p as usize) != last_programmed || !self.device.may_be_torn(ppn) {
                        return Err(self.corrupted(region, None, ppn, what.clone()));
                    }
                    self.report.torn += 1;
                    unit.data_pages += 1;
                    dirty = true;
                }
                Scanned::Data(t) => {
                    if t.lunit != tag.lunit || t.generation != tag.generation || t.page >= shape.lpns_per_unit {
                        let ppn = self.ppn(phys, p);
                        return Err(self.corrupted(region, None, ppn, format!("a page of logical unit {} generation {} (page {}) sits in the unit of logical unit {} generation {}", t.lunit, t.generation, t.page, tag.lunit, tag.generation)));
                    }
                    unit.data_pages += 1;
                    data_groups.entry(t.seq).or_insert((t.count, Vec::new())).1.push((p, t.page));
                }
                Scanned::Log(_, sectors) => {
                    unit.log_pages += 1;
                    let used = sectors.iter().rposition(|s| !matches!(s, Ok(None))).map_or(0, |i| i + 1);
                    unit.open_log = Some((p, used as u32));
                    for (slot, s) in sectors.iter().enumerate() {
                        match s {
                            Ok(None) => {}
                            Ok(Some(sector)) => {
                                if sector.db_page >= shape.db_pages_per_unit {
                                    let ppn = self.ppn(phys, p);
                                    return Err(self.corrupted(
                                        region,
                                        None,
                                        ppn,
                                        format!(
                                            "log sector {slot} names DB page {} of a unit that holds {}",
                                            sector.db_page, shape.db_pages_per_unit
                                        ),
                                    ));
                                }
                                log_groups.entry(sector.seq).or_insert((sector.count, Vec::new())).1.push((
                                    p,
                                    slot as u32,
                                    sector.clone(),
                                ));
                            }
                            Err(what) => {
                                let ppn = self.ppn(phys, p);
                                let last = Some(p as usize) == last_log && slot + 1 == used;
                                if !last || !self.device.may_be_torn(ppn) {
                                    return Err(self.corrupted(
                                        region,
                                        None,
                                        ppn,
                                        format!("log sector {slot}: {what}"),
                                    ));
                                }
                                self.report.torn += 1;
                                dirty = true;
                            }
                        }
                    }
                }
            }
        }
        // A merged unit: its merged pages (checked whole by `candidate`) come first.
        let mut events: BTreeMap<u64, bool> = BTreeMap::new(); // seq -> is data
        for (&seq, (count, members)) in &data_groups {
            if members.len() == *count as usize {
                events.insert(seq, true);
            } else {
                self.report.partial_groups += 1;
                dirty = true;
            }
        }
        for (&seq, (count, members)) in &log_groups {
            if members.len() == *count as usize {
                events.insert(seq, false);
            } else {
                self.report.partial_groups += 1;
                dirty = true;
            }
        }
        let l: &mut LUnit = &mut self.lunits[lu];
        l.phys = Some(phys);
        l.generation = tag.generation;
        for (seq, is_data) in events {
            if is_data {
                for &(unit_page, page) in &data_groups[&seq].1 {
                    l.map[page as usize] = Some(unit_page);
                    let (d, part) = ((page / shape.parts) as usize, page % shape.parts);
                    for r in &mut l.logs[d] {
                        r.parts &= !(1u64 << part);
                    }
                }
            } else {
                let mut members = log_groups[&seq].1.clone();
                members.sort_by_key(|m| m.2.index);
                for (page, slot, sector) in members {
                    let d = sector.db_page;
                    let mut parts = 0u64;
                    for r in &sector.records {
                        match r {
                            Record::Trim { part } => {
                                parts &= !(1u64 << part);
                                let idx = d * shape.parts + part;
                                if let Some(m) = l.map.get_mut(idx as usize) {
                                    *m = None;
                                }
                                for sr in &mut l.logs[d as usize] {
                                    sr.parts &= !(1u64 << part);
                                }
                            }
                            r => parts |= r.parts_mask(shape.flash_page_bytes),
                        }
                    }
                    l.logs[d as usize].push(SectorRef { page, slot, parts });
                }
            }
        }
        // The newest log page takes no more sectors after a restart. A program a power
        // cut tore before any bit changed leaves its slot erased-looking, yet the chip
        // counted it against the page's NOP limit; the scan cannot tell, so a sector
        // written there could be one program too many. (A visibly torn sector: the same.)
        unit.open_log = unit.open_log.map(|(p, _)| (p, shape.sectors_per_log_page));
        self.units[phys as usize] = unit;
        Ok(dirty)
    }
}

/// A unit's page-0 tag if the unit is a candidate for its logical unit.
fn candidate(pages: &[Scanned]) -> Option<Tag> {
    let tag = *pages.first()?.tag()?;
    if tag.kind == PageKind::Merged {
        let whole = (0..tag.count as usize).all(|i| {
            matches!(pages.get(i), Some(Scanned::Data(t)) if t.kind == PageKind::Merged && t.seq == tag.seq && t.index as usize == i)
        });
        if !whole {
            return None;
        }
    }
    Some(tag)
}

/// Classifies a page read by the scan.
fn classify(data: &[u8], oob: &[u8], keeps: bool, shape: &IplShape) -> Scanned {
    let tag = match Tag::decode(oob) {
        Ok(t) => t,
        Err(_) if oob.iter().all(|&b| b == 0xFF) && data.iter().all(|&b| b == 0xFF) => return Scanned::Erased,
        Err(e) => return Scanned::Damaged(e),
    };
    match tag.kind {
        PageKind::Data | PageKind::Merged => {
            if keeps && tag.data_crc != crc32fast::hash(data) {
                return Scanned::Damaged("the data page fails its checksum".into());
            }
            Scanned::Data(tag)
        }
        PageKind::Log => {
            let s = shape.sector_bytes;
            let sectors = (0..shape.sectors_per_log_page as usize)
                .map(|slot| if keeps { Sector::decode(&data[slot * s..(slot + 1) * s]) } else { Ok(None) })
                .collect();
            Scanned::Log(tag, sectors)
        }
    }
}
