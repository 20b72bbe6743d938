//! The host I/O stack charges what it says: per write call and per fsync, the CPU time
//! and the JBD2 journal blocks (`files::host_stack`), against the same operations on a
//! store without it; `none` charges nothing.

mod common;

use sqlite_flash::files::host_stack::{
    ALLOCATION_BLOCKS, COMMIT_BLOCKS, DESCRIPTOR_BLOCKS, FSYNC_CALL_NS, INODE_BLOCKS, TIMESTAMP_TICK_NS, WRITE_CALL_NS,
};
use sqlite_flash::{FileStore, HostStack, HostStackModel, JOURNAL_FILE};

fn store(stack: HostStack) -> FileStore {
    let mut s = common::small_store();
    s.set_host_stack(stack).unwrap();
    s.create("main.db");
    s
}

/// `n` whole-page overwrites of pages 0..n of main.db, then an fsync; the time it took.
fn overwrite_and_sync(s: &mut FileStore, n: u64) -> u64 {
    let start = s.now();
    for i in 0..n {
        s.write("main.db", i * 4096, &[i as u8; 4096]).unwrap();
    }
    s.sync().unwrap();
    s.now() - start
}

/// Both stores written to 8 pages and synced, then left at the same tick start.
fn settled(stack: HostStack) -> FileStore {
    let mut s = store(stack);
    overwrite_and_sync(&mut s, 8);
    let next_tick = (s.now() / TIMESTAMP_TICK_NS + 1) * TIMESTAMP_TICK_NS;
    s.advance(next_tick - s.now());
    s
}

#[test]
fn writes_and_an_fsync_in_one_tick_cost_their_cpu_time_and_one_inode_commit() {
    let (mut none, mut ext4) = (settled(HostStack::default()), settled(HostStack::EXT4_ORDERED));
    let n = 5;
    // The first write of a tick changes the mtime: the fsync journals the inode.
    let (j0, t_none_first) = (ext4.counters().journal_writes, overwrite_and_sync(&mut none, n));
    let t_ext4 = overwrite_and_sync(&mut ext4, n);
    assert_eq!(ext4.counters().journal_writes - j0, DESCRIPTOR_BLOCKS + INODE_BLOCKS + COMMIT_BLOCKS);
    assert_eq!(none.counters().journal_writes, 0);
    // Same tick again: the inode is clean, only CPU time is added.
    let j1 = ext4.counters().journal_writes;
    let (t_none, t_ext4_clean) = (overwrite_and_sync(&mut none, n), overwrite_and_sync(&mut ext4, n));
    assert_eq!(ext4.counters().journal_writes, j1);
    assert_eq!(t_ext4_clean - t_none, n * WRITE_CALL_NS + FSYNC_CALL_NS);
    // The commit took device time beyond the CPU time.
    assert!(t_ext4 > t_none_first + n * WRITE_CALL_NS + FSYNC_CALL_NS, "{t_ext4} {t_none_first}");
    // The journal blocks are flash programs the plain store does not make.
    let programs = |s: &FileStore| s.ftl().counters().host_writes;
    assert_eq!(programs(&ext4) - programs(&none), ext4.counters().journal_writes);
}

#[test]
fn growing_a_file_journals_the_bitmap_and_group_descriptor_too() {
    let mut ext4 = settled(HostStack::EXT4_ORDERED);
    let j0 = ext4.counters().journal_writes;
    // Past the file's allocated pages (8 allocated): new extents.
    ext4.write("main.db", 64 * 4096, &[1; 4096]).unwrap();
    ext4.sync().unwrap();
    assert_eq!(
        ext4.counters().journal_writes - j0,
        DESCRIPTOR_BLOCKS + INODE_BLOCKS + ALLOCATION_BLOCKS + COMMIT_BLOCKS
    );
}

#[test]
fn the_cpu_costs_scale_and_none_charges_nothing() {
    let half = HostStack { model: HostStackModel::Ext4Ordered, cpu_percent: 50 };
    assert_eq!(half.write_call_ns(), WRITE_CALL_NS / 2);
    assert_eq!(half.fsync_call_ns(), FSYNC_CALL_NS / 2);
    assert_eq!(HostStack::default().write_call_ns() + HostStack::default().fsync_call_ns(), 0);
    let none = store(HostStack::default());
    assert_eq!(none.size(JOURNAL_FILE), None, "no journal file without the stack");
    let ext4 = store(HostStack::EXT4_ORDERED);
    // 64 blocks × 32 pages × 2 chips, less over-provisioning: under 32,768 blocks, 4 MB
    // by mke2fs' table, at most half the free pages.
    assert!(ext4.size(JOURNAL_FILE).is_some_and(|b| b > 0));
    assert_eq!(HostStack::parse("ext4-ordered"), Ok(HostStack::EXT4_ORDERED));
    assert!(HostStack::parse("xfs").unwrap_err().contains("none or ext4-ordered"));
}
