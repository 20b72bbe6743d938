//! In-Page Logging's per-page log records (Lee & Moon, SIGMOD 2007, §3; the IPA paper,
//! SIGMOD 2017, §2.1: "All updates are logged per page and placed in in-memory log
//! sectors. As soon as a log sector of a particular page becomes full or the page is
//! evicted from the buffer the log records from the respective log sector are
//! written"). Under IPL a page's write is the records of every update made to it while
//! it was buffered, not the net difference at the write: a page updated fifty times
//! writes fifty records, and the sectors they fill are the `imlog full` writes of the
//! IPA paper's appendix B.
//!
//! [`PageLogs`] keeps, per page, the after-images of each operation's changed spans
//! (the operation's physiological record, what `oplog` logs to the WAL) until the page
//! is written. The store then sends them to the device in update order, followed by the
//! page's remaining difference from them (see [`crate::store`]). Sectors a full
//! in-memory sector would have written while the page stayed buffered are written with
//! the page's write, in one group: the same sectors and merges, at the write's time.

use std::collections::HashMap;
use std::hash::Hash;

/// The log records of the pages changed since their last write, by page id `P`.
#[derive(Debug)]
pub struct PageLogs<P> {
    pages: HashMap<P, PageLog>,
}

impl<P> Default for PageLogs<P> {
    fn default() -> Self {
        PageLogs { pages: HashMap::new() }
    }
}

/// One page's records, oldest first: `(offset, length)` spans and their after-images
/// back to back.
#[derive(Debug, Default)]
pub struct PageLog {
    spans: Vec<(u16, u16)>,
    images: Vec<u8>,
}

impl<P: Eq + Hash> PageLogs<P> {
    /// Adds an operation's record to `pid`'s log: the bytes of `page` (the page after
    /// the operation) at each span `(offset, length)`.
    pub fn note(&mut self, pid: P, spans: &[(u16, u16)], page: &[u8]) {
        let log = self.pages.entry(pid).or_default();
        for &(offset, len) in spans {
            let (from, to) = (offset as usize, offset as usize + len as usize);
            if len > 0 && to <= page.len() {
                log.spans.push((offset, len));
                log.images.extend_from_slice(&page[from..to]);
            }
        }
    }

    /// Takes `pid`'s records (the page is being written).
    pub fn take(&mut self, pid: P) -> Option<PageLog> {
        self.pages.remove(&pid)
    }

    /// Drops `pid`'s records: the page was read afresh or written whole.
    pub fn forget(&mut self, pid: P) {
        self.pages.remove(&pid);
    }
}

impl PageLog {
    /// The records as `(offset, after-image)`, oldest first.
    pub fn records(&self) -> impl Iterator<Item = (usize, &[u8])> {
        let mut at = 0;
        self.spans.iter().map(move |&(offset, len)| {
            at += len as usize;
            (offset as usize, &self.images[at - len as usize..at])
        })
    }

    /// Applies the records to `page`, oldest first.
    pub fn replay(&self, page: &mut [u8]) {
        for (offset, image) in self.records() {
            page[offset..offset + image.len()].copy_from_slice(image);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: (u16, u32) = (1, 7);

    #[test]
    fn records_replay_in_update_order() {
        let mut logs = PageLogs::default();
        let mut page = vec![0u8; 16];
        page[2..4].copy_from_slice(&[1, 1]);
        logs.note(P, &[(2, 2)], &page);
        page[3] = 2;
        page[10] = 9;
        logs.note(P, &[(3, 1), (10, 1)], &page);
        let log = logs.take(P).expect("records");
        let got: Vec<(usize, Vec<u8>)> = log.records().map(|(o, b)| (o, b.to_vec())).collect();
        assert_eq!(got, [(2, vec![1, 1]), (3, vec![2]), (10, vec![9])]);
        let mut base = vec![0u8; 16];
        log.replay(&mut base);
        assert_eq!(base, page);
        assert!(logs.take(P).is_none());
    }

    #[test]
    fn spans_outside_the_page_are_not_kept() {
        let mut logs = PageLogs::default();
        logs.note(P, &[(14, 4), (0, 0)], &[0u8; 16]);
        assert_eq!(logs.take(P).map(|l| l.records().count()), Some(0));
    }
}
