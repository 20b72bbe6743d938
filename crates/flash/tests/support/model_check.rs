//! Checking an FTL against a model of its logical pages after a restart: every page
//! reads as the model says, except that a page the interrupted operation touched may
//! read as that operation would have left it, which the model then adopts.

use std::collections::HashMap;
use std::fmt::Debug;

/// `read(lpn)` is what the FTL returns for each of its `logical_pages`; `in_flight` lists
/// the pages the cut operation was writing and what each would have held afterwards.
pub fn check_against_model<T: PartialEq + Debug>(
    logical_pages: u32,
    mut read: impl FnMut(u32) -> Option<T>,
    model: &mut HashMap<u32, T>,
    in_flight: &[(u32, Option<T>)],
) {
    for lpn in 0..logical_pages {
        let got = read(lpn);
        let expected = model.get(&lpn);
        match in_flight.iter().find(|(l, _)| *l == lpn) {
            Some((_, new)) if got.as_ref() != expected => {
                assert_eq!(&got, new, "lpn {lpn}: neither the old nor the in-flight content");
                match got {
                    Some(c) => model.insert(lpn, c),
                    None => model.remove(&lpn),
                };
            }
            _ => assert_eq!(got.as_ref(), expected, "lpn {lpn}"),
        }
    }
}
