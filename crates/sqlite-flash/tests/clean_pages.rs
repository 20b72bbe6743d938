//! The file layer keeps clean pages (`clean.rs`): after a sync, a partial-page write and
//! a read of a written-back page are served from RAM, not flash, and always give what
//! flash holds — also after a trim and a reopen.

mod common;

use sqlite_flash::FileStore;

fn store(clean_pages: usize) -> FileStore {
    let mut s = common::small_store();
    s.set_clean_cache_pages(clean_pages);
    s.create("main.db-wal");
    s
}

/// WAL-like traffic: frames of a page and 24 bytes appended (so they straddle pages),
/// a sync, then the file rewritten from its start as after a checkpoint; the flash
/// page reads it cost and the bytes read back.
fn frames_rewritten_after_a_sync(s: &mut FileStore) -> (u64, Vec<u8>) {
    let frame = 4096 + 24;
    for round in 0..2u8 {
        for i in 0..16u64 {
            s.write("main.db-wal", i * frame, &vec![round * 16 + i as u8; frame as usize]).unwrap();
        }
        s.sync().unwrap();
    }
    let before = s.counters().read_pages;
    let mut buf = vec![0u8; 8 * 4096];
    s.read("main.db-wal", 0, &mut buf).unwrap();
    (s.counters().read_pages - before, buf)
}

#[test]
fn rewritten_frames_and_reads_after_a_sync_come_from_ram_with_the_same_bytes() {
    let (mut cached, mut uncached) = (store(1024), store(0));
    let (reads_cached, bytes_cached) = frames_rewritten_after_a_sync(&mut cached);
    let rmw_cached = cached.counters().read_pages;
    let (reads_uncached, bytes_uncached) = frames_rewritten_after_a_sync(&mut uncached);
    assert_eq!(bytes_cached, bytes_uncached);
    assert_eq!(reads_cached, 0, "the written-back pages are clean in RAM");
    assert_eq!(reads_uncached, 8);
    // The second round's partial first and last pages of each frame were read first
    // without clean pages; with them, not one.
    assert_eq!(rmw_cached, 0);
    assert!(uncached.counters().read_pages > 8, "{}", uncached.counters().read_pages);
}

#[test]
fn a_trimmed_or_reopened_page_is_read_as_flash_has_it() {
    let mut s = store(1024);
    s.write("main.db-wal", 0, &[7u8; 4096]).unwrap();
    s.sync().unwrap();
    s.truncate("main.db-wal", 0).unwrap();
    s.sync().unwrap();
    let mut buf = vec![1u8; 4096];
    assert_eq!(s.read("main.db-wal", 0, &mut buf).unwrap(), 0);
    assert!(buf.iter().all(|&b| b == 0), "a truncated file reads as zeros, not its old page");
    s.write("main.db-wal", 0, &[9u8; 4096]).unwrap();
    s.sync().unwrap();
    let now = s.now();
    let mut reopened = FileStore::open(s.into_ftl(), now).unwrap();
    let before = reopened.counters().read_pages;
    reopened.read("main.db-wal", 0, &mut buf).unwrap();
    assert_eq!(buf, vec![9u8; 4096]);
    assert_eq!(reopened.counters().read_pages - before, 1, "RAM is empty after a reopen");
}
