//! What a device's configuration area says the device holds: NoFTL regions, an IPL
//! store or a conventional FTL. Each opener checks for its own kind; when it finds
//! another, the error names what is there ([`Error::WrongStore`]) instead of calling a
//! valid image of another kind corrupt.

use crate::error::Error;

/// Prefix of a conventional FTL's configuration area (then its `FtlConfig` as JSON,
/// whose `kind` names the FTL).
pub(crate) const FTL_MAGIC: &[u8] = b"DFFTL1";

/// The configuration area's `format` field of NoFTL regions and of an IPL store.
pub(crate) const REGIONS_FORMAT: &str = "deltaflash-regions";
pub(crate) const IPL_FORMAT: &str = "deltaflash-ipl";

/// The kinds a device can hold, as the errors name them.
pub(crate) const REGIONS: &str = "NoFTL regions";
pub(crate) const IPL: &str = "an IPL store";
pub(crate) const FTL: &str = "a conventional FTL";

/// What `area` holds, for an error: `None` when it looks like `wanted` (the opener's
/// own decoder then reports what is wrong with it), or when it is empty.
pub(crate) fn other_than(area: &[u8], wanted: &'static str) -> Option<Error> {
    let (kind, holds) = holds(area)?;
    (kind != Some(wanted)).then_some(Error::WrongStore { holds, wanted })
}

/// The kind `area` holds (one of [`REGIONS`], [`IPL`], [`FTL`]; `None` for an unknown
/// format) and its description; `None` for an empty or unreadable area.
fn holds(area: &[u8]) -> Option<(Option<&'static str>, String)> {
    if area.is_empty() {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Format {
        format: String,
    }
    #[derive(serde::Deserialize)]
    struct FtlKind {
        kind: String,
    }
    if let Some(json) = area.strip_prefix(FTL_MAGIC) {
        let described = match serde_json::from_slice::<FtlKind>(json) {
            Ok(ftl) => format!("{FTL} ({})", ftl.kind),
            Err(_) => FTL.into(),
        };
        return Some((Some(FTL), described));
    }
    let format = serde_json::from_slice::<Format>(area).ok()?.format;
    Some(match format.as_str() {
        REGIONS_FORMAT => (Some(REGIONS), REGIONS.into()),
        IPL_FORMAT => (Some(IPL), IPL.into()),
        other => (None, format!("a layout of format `{other}`")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_other_kind_and_leaves_its_own_to_the_decoder() {
        let regions = br#"{"format":"deltaflash-regions","version":1,"regions":[]}"#;
        let ipl = br#"{"format":"deltaflash-ipl"}"#;
        assert!(other_than(regions, REGIONS).is_none());
        assert!(other_than(b"", REGIONS).is_none());
        assert!(other_than(b"not json", REGIONS).is_none());
        assert_eq!(other_than(ipl, REGIONS).unwrap().to_string(), "the device holds an IPL store, not NoFTL regions");
        assert_eq!(other_than(regions, IPL).unwrap().to_string(), "the device holds NoFTL regions, not an IPL store");
        let mut ftl = FTL_MAGIC.to_vec();
        ftl.extend_from_slice(b"{broken");
        assert_eq!(
            other_than(&ftl, REGIONS).unwrap().to_string(),
            "the device holds a conventional FTL, not NoFTL regions"
        );
        assert!(other_than(&ftl, FTL).is_none());
        // A whole FTL configuration: the error names its kind as the FTL names itself.
        for kind in crate::ftl::FtlKind::ALL {
            let mut area = FTL_MAGIC.to_vec();
            area.extend(serde_json::to_vec(&crate::ftl::FtlConfig::new(kind)).unwrap());
            let expected = format!("the device holds a conventional FTL ({}), not an IPL store", kind.name());
            assert_eq!(other_than(&area, IPL).unwrap().to_string(), expected);
        }
    }
}
