//! The space a delta area costs: how many more pages an object takes when its pages'
//! bodies end `area` bytes earlier (`engine::store::PageStore::body_end`).
//!
//! A heap's pages hold whole rows: a packed heap takes a row on its last page while the
//! rows and their 4-byte slots fit the body less the 32-byte header (InnoDB's record
//! space also leaves 1/16 of the body free; `engine::heap::HeapSpace`), else starts a
//! page. So a page loses a whole row, not `area` bytes' worth of one, whenever the
//! area eats into the last row's room: TPC-C's stock rows (about 300 bytes) go from
//! 12.8 to 12.0 a page under a 183-byte area, +6.5% pages where page / (page − area)
//! says +4.7% (2 warehouses, measured per object after the load; docs/advisor.md). The
//! model lays the table's rows down as its load does, their sizes (`row_bytes`, read
//! from the baseline's image) drawn by their shares, with and without the area.
//! An index (or a table whose rows are not known) is taken as entries small beside a
//! page: its pages grow as its body less the header shrinks.

use crate::greedy_sim::{SplitMix64, SEED};
use crate::ObjectInput;
use engine::heap::HeapSpace;
use engine::page::{HEADER_BYTES, SLOT_BYTES};

/// Rows laid down per object at most: enough to put the ratio of pages within 0.2%
/// (TPC-C's customer, the largest rows, fills 3,300 pages with them).
const SAMPLE_ROWS: u64 = 20_000;

/// Pages `o` takes with a delta area of `area` bytes, per page it takes without one.
pub fn growth(o: &ObjectInput, page_bytes: usize, area: usize, heap: HeapSpace) -> f64 {
    if area == 0 {
        return 1.0;
    }
    let body = page_bytes.saturating_sub(HEADER_BYTES) as f64;
    let rows: u64 = o.row_bytes.iter().map(|&(_, n)| n).sum();
    if rows == 0 {
        return body / (body - area as f64).max(1.0);
    }
    let with = heap_pages(&o.row_bytes, rows, page_bytes.saturating_sub(area), heap);
    let without = heap_pages(&o.row_bytes, rows, page_bytes, heap);
    with as f64 / without.max(1) as f64
}

/// Pages a packed load of `SAMPLE_ROWS` rows (at most `rows`) of the sizes `row_bytes`
/// takes on pages whose body ends at `body_end`: each row's size drawn independently by
/// its share (a fixed-seed SplitMix64, so the same input gives the same pages). Drawn,
/// not laid down in an even order: whether a page takes one row more depends on the
/// sum of its rows, and an order that balances every run of them (a Weyl sequence)
/// put TPC-C's stock at 13.0 rows a page where its load put 12.8 and draws 12.8.
fn heap_pages(row_bytes: &[(u64, u64)], rows: u64, body_end: usize, heap: HeapSpace) -> u64 {
    let reserve = heap.end_insert_reserve(body_end);
    let room = body_end.saturating_sub(HEADER_BYTES + reserve) as u64;
    let mut below = 0;
    let cumulative: Vec<u64> = row_bytes
        .iter()
        .map(|&(_, n)| {
            below += n;
            below
        })
        .collect();
    let mut rng = SplitMix64(SEED);
    let (mut pages, mut used) = (1, 0);
    for _ in 0..rows.min(SAMPLE_ROWS) {
        let at = (rng.uniform() * rows as f64) as u64;
        let k = cumulative.partition_point(|&c| c <= at).min(row_bytes.len() - 1);
        let need = row_bytes[k].0 + SLOT_BYTES as u64;
        if used > 0 && used + need > room {
            pages += 1;
            used = 0;
        }
        used += need;
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(row_bytes: Vec<(u64, u64)>) -> ObjectInput {
        ObjectInput { kind: "table".into(), row_bytes, ..Default::default() }
    }

    #[test]
    fn a_heap_loses_whole_rows_to_the_delta_area() {
        // 300-byte rows and their slots, 304 bytes each: 13 fit the 4,064 bytes of a
        // 4 KiB page less its header, 12 the 3,881 a 183-byte area leaves: +8.3% pages,
        // where the bytes alone say +4.7%.
        let t = table(vec![(300, 100_000)]);
        let g = growth(&t, 4096, 183, HeapSpace::Packed);
        assert!((g - 13.0 / 12.0).abs() < 1e-3, "{g}");
        // Rows that use the page's last bytes just as well with the area lose nothing.
        let t = table(vec![(900, 100_000)]);
        assert!((growth(&t, 4096, 183, HeapSpace::Packed) - 1.0).abs() < 1e-3);
        // InnoDB's record space leaves 1/16 of the body free at the end of the heap:
        // 12 rows without the area (3,808 bytes of room), 11 with it (3,637).
        let t = table(vec![(300, 100_000)]);
        assert!((growth(&t, 4096, 183, HeapSpace::Innodb) - 12.0 / 11.0).abs() < 1e-3);
        assert_eq!(growth(&t, 4096, 0, HeapSpace::Packed), 1.0);
    }

    #[test]
    fn mixed_row_sizes_and_indexes_grow_by_their_share_of_the_body() {
        // Half the rows of 100 bytes, half of 500: they take their mean's room, and
        // the area takes its share of it, rounded to whole rows on each page.
        let t = table(vec![(100, 50_000), (500, 50_000)]);
        let g = growth(&t, 4096, 183, HeapSpace::Packed);
        assert!(g > 1.03 && g < 1.08, "{g}");
        // An index: its body less the header, 4,064 against 3,881 bytes.
        let index = ObjectInput { kind: "index".into(), ..Default::default() };
        assert!((growth(&index, 4096, 183, HeapSpace::Packed) - 4064.0 / 3881.0).abs() < 1e-12);
    }
}
