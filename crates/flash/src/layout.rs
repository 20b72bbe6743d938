//! Which chips each region gets, and how the layout is stored with the device.
//!
//! Assignment honours MAX_CHANNELS (the channels with the most free chips first),
//! MAX_CHIPS and MAX_SIZE (no more chips than the logical size needs), and interleaves
//! the chosen chips across channels so round-robin writes spread over the channels.
//! The layout is stored as JSON in the device's configuration area.

use crate::error::Error;
use crate::region::Region;
use crate::spec::{IpaMode, RegionSpec};
use nand::Geometry;
use serde::{Deserialize, Serialize};

use crate::stored::REGIONS_FORMAT as FORMAT;
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Stored {
    format: String,
    version: u32,
    regions: Vec<StoredRegion>,
}

#[derive(Serialize, Deserialize)]
struct StoredRegion {
    spec: RegionSpec,
    chips: Vec<u32>,
}

/// Assigns disjoint chip sets to `specs`, in order, from the chips `existing` regions
/// do not hold.
pub fn assign(geometry: &Geometry, existing: &[Region], specs: &[RegionSpec]) -> Result<Vec<Vec<u32>>, Error> {
    let mut taken = vec![false; geometry.chips() as usize];
    for &c in existing.iter().flat_map(|r| r.chips()) {
        taken[c as usize] = true;
    }
    let mut names: std::collections::HashSet<&str> = existing.iter().map(|r| r.name()).collect();
    let mut out = Vec::with_capacity(specs.len());
    for spec in specs {
        spec.validate().map_err(Error::Config)?;
        if !names.insert(spec.name.as_str()) {
            return Err(Error::Config(format!("region {} is defined twice", spec.name)));
        }
        let chips = assign_one(geometry, &taken, spec)?;
        for &c in &chips {
            taken[c as usize] = true;
        }
        out.push(chips);
    }
    Ok(out)
}

fn assign_one(geometry: &Geometry, taken: &[bool], spec: &RegionSpec) -> Result<Vec<u32>, Error> {
    let mut channels: Vec<Vec<u32>> = (0..geometry.channels)
        .map(|ch| {
            (ch * geometry.chips_per_channel..(ch + 1) * geometry.chips_per_channel)
                .filter(|&c| !taken[c as usize])
                .collect()
        })
        .collect();
    channels.sort_by_key(|chips| std::cmp::Reverse(chips.len()));
    channels.truncate(spec.max_channels.unwrap_or(geometry.channels) as usize);
    let free: usize = channels.iter().map(Vec::len).sum();
    if free == 0 {
        let asked = spec.max_chips.map_or_else(|| "at least 1".to_string(), |m| format!("up to {m}"));
        let left = taken.iter().filter(|&&t| !t).count();
        return Err(Error::Config(format!(
            "region {}: no free chips: it asks for {asked} chip(s){}, {left} of the device's {} chips are left (earlier regions hold them all: give those MAX_CHIPS, or use a device with more chips)",
            spec.name,
            spec.max_channels.map_or(String::new(), |c| format!(" on up to {c} channel(s)")),
            geometry.chips(),
        )));
    }
    let mut want = spec.max_chips.map_or(free, |m| (m as usize).min(free));
    if let Some(max_size) = spec.max_size_bytes {
        let stride = if spec.ipa_mode == IpaMode::Pslc { geometry.cell.bits_per_cell() } else { 1 };
        let chip_bytes = geometry.blocks_per_chip as f64
            * (geometry.pages_per_block / stride) as f64
            * geometry.page_bytes as f64
            * (1.0 - spec.over_provisioning);
        let needed = (max_size as f64 / chip_bytes).ceil().max(1.0) as usize;
        want = want.min(needed);
    }
    let mut chips = Vec::with_capacity(want);
    let mut round = 0;
    while chips.len() < want {
        for channel in &channels {
            if let Some(&c) = channel.get(round) {
                if chips.len() < want {
                    chips.push(c);
                }
            }
        }
        round += 1;
    }
    Ok(chips)
}

/// The layout of `regions` as stored bytes.
pub fn encode(regions: &[Region]) -> Vec<u8> {
    let stored = Stored {
        format: FORMAT.into(),
        version: VERSION,
        regions: regions.iter().map(|r| StoredRegion { spec: r.spec().clone(), chips: r.chips().to_vec() }).collect(),
    };
    serde_json::to_vec(&stored).expect("layout serializes")
}

/// Reads a stored layout and checks it against the device.
pub fn decode(bytes: &[u8], geometry: &Geometry) -> Result<Vec<(RegionSpec, Vec<u32>)>, Error> {
    if bytes.is_empty() {
        return Err(Error::CorruptLayout("the device has no region layout (it was never formatted)".into()));
    }
    if let Some(other) = crate::stored::other_than(bytes, crate::stored::REGIONS) {
        return Err(other);
    }
    let stored: Stored = serde_json::from_slice(bytes).map_err(|e| Error::CorruptLayout(e.to_string()))?;
    if stored.version != VERSION {
        return Err(Error::CorruptLayout(format!("unknown layout version {}", stored.version)));
    }
    let mut taken = vec![false; geometry.chips() as usize];
    let mut out = Vec::with_capacity(stored.regions.len());
    for r in stored.regions {
        r.spec.validate().map_err(Error::CorruptLayout)?;
        if r.chips.is_empty() {
            return Err(Error::CorruptLayout(format!("region {} has no chips", r.spec.name)));
        }
        for &c in &r.chips {
            match taken.get_mut(c as usize) {
                None => {
                    return Err(Error::CorruptLayout(format!(
                        "region {} names chip {c}; the device has {}",
                        r.spec.name,
                        geometry.chips()
                    )))
                }
                Some(true) => return Err(Error::CorruptLayout(format!("chip {c} belongs to two regions"))),
                Some(t) => *t = true,
            }
        }
        out.push((r.spec, r.chips));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_channels_and_chips_are_honoured_and_interleaved() {
        let g = Geometry::paper_emulator(); // 8 channels × 2 chips
        let mut a = RegionSpec::new("a", IpaMode::Slc);
        a.max_chips = Some(4);
        a.max_channels = Some(2);
        let b = RegionSpec::new("b", IpaMode::None);
        let chips = assign(&g, &[], &[a, b]).unwrap();
        assert_eq!(chips[0], vec![0, 2, 1, 3]);
        assert_eq!(chips[1].len(), 12);
        assert!(chips[1].iter().all(|c| !chips[0].contains(c)));
    }

    #[test]
    fn max_size_limits_chips() {
        let g = Geometry::paper_emulator(); // 256 MiB per chip
        let mut a = RegionSpec::new("a", IpaMode::Slc);
        a.max_size_bytes = Some(300 << 20);
        assert_eq!(assign(&g, &[], &[a]).unwrap()[0].len(), 2);
    }

    #[test]
    fn exhausted_device_and_duplicates_are_errors() {
        let g = Geometry::paper_emulator();
        let all = RegionSpec::new("all", IpaMode::None);
        let more = RegionSpec::new("more", IpaMode::None);
        let message = assign(&g, &[], &[all.clone(), more]).unwrap_err().to_string();
        assert!(message.contains("region more: no free chips"), "{message}");
        assert!(message.contains("asks for at least 1 chip(s), 0 of the device's 16 chips are left"), "{message}");
        assert!(assign(&g, &[], &[all.clone(), all]).unwrap_err().to_string().contains("twice"));
    }

    proptest::proptest! {
        /// Fuzz pass over the layout decoder: arbitrary bytes never panic.
        #[test]
        fn fuzz_layout_decoder_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), text in "\\PC{0,200}") {
            let g = Geometry::paper_emulator();
            let _ = decode(&bytes, &g);
            let _ = decode(text.as_bytes(), &g);
        }
    }

    #[test]
    fn corrupt_layouts_are_refused() {
        let g = Geometry::paper_emulator();
        for bad in [&b""[..], b"{", b"{\"format\":\"deltaflash-regions\",\"version\":9,\"regions\":[]}"] {
            assert!(matches!(decode(bad, &g), Err(Error::CorruptLayout(_))));
        }
        let other = decode(b"{\"format\":\"x\",\"version\":1,\"regions\":[]}", &g).err().unwrap();
        assert_eq!(other.to_string(), "the device holds a layout of format `x`, not NoFTL regions");
    }
}
