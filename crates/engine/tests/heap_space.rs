//! How heap pages make room (`DbOptions::heap_space`): the bytes an update that changes a
//! row's length leaves changed on its page, which is what IPA can append.

mod common;

use engine::heap::HeapSpace;
use engine::types::Value;
use engine::{Database, DbOptions, QueryResult};

/// Rows of `ROW_TEXT` bytes of text: the first page holds about 36 of them.
const ROWS: i64 = 60;
const ROW_TEXT: usize = 100;

/// Row `id`'s loaded text: letters that differ from row to row, so a row moved on its
/// page changes the bytes where it lands.
fn text(id: i64) -> String {
    (0..ROW_TEXT as i64).map(|k| char::from(b'a' + ((id * 7 + k) % 26) as u8)).collect()
}

/// Table t loaded with `ROWS` rows in key order and written out by a checkpoint.
fn loaded(space: HeapSpace) -> Database {
    let mut db = Database::create(common::device(), DbOptions { heap_space: space, ..DbOptions::default() }).unwrap();
    db.execute(
        "CREATE REGION rg (IPA_MODE=none, MAX_CHIPS=1);
         CREATE TABLESPACE ts (REGION=rg);
         CREATE TABLE t (id INT PRIMARY KEY, body VARCHAR(400)) TABLESPACE ts;",
    )
    .unwrap();
    for id in 0..ROWS {
        db.execute(&format!("INSERT INTO t VALUES ({id}, '{}')", text(id))).unwrap();
    }
    db.checkpoint().unwrap();
    db
}

/// The changed bytes in table t's rows over the page writes since `before` (the
/// "net data" of its update writes).
fn row_bytes_written(db: &mut Database, before: u64, update: &str) -> u64 {
    db.execute(update).unwrap();
    db.checkpoint().unwrap();
    table_row_bytes(db) - before
}

fn table_row_bytes(db: &Database) -> u64 {
    db.object_stats().into_iter().find(|s| s.name == "t").unwrap().counters.update_body_bytes
}

fn body(db: &mut Database, id: i64) -> String {
    match db.execute(&format!("SELECT body FROM t WHERE id = {id}")).unwrap().remove(0) {
        QueryResult::Rows { rows, .. } => match &rows[0][0] {
            Value::Text(s) => s.clone(),
            other => panic!("row {id}: body {other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// A row of the first page shrinks by a few bytes: InnoDB writes the new record over the
/// old one, so only its bytes change; packed, it goes to the page's end, and the page,
/// loaded full (less free than a row), is compacted first, moving every row behind it.
#[test]
fn a_shrinking_row_changes_its_own_bytes_under_innodb_and_moves_its_neighbours_packed() {
    let shorter = "b".repeat(ROW_TEXT - 5);
    let update = format!("UPDATE t SET body = '{shorter}' WHERE id = 2");
    let mut written = Vec::new();
    for space in [HeapSpace::Innodb, HeapSpace::Packed] {
        let mut db = loaded(space);
        let before = table_row_bytes(&db);
        written.push(row_bytes_written(&mut db, before, &update));
        assert_eq!(body(&mut db, 2), shorter, "{space:?}");
        assert_eq!(body(&mut db, 3), text(3), "{space:?}");
    }
    let (innodb, packed) = (written[0], written[1]);
    assert!(innodb > 0 && innodb <= ROW_TEXT as u64 + 8, "innodb: {innodb} row bytes changed");
    assert!(packed > 10 * ROW_TEXT as u64, "packed: {packed} row bytes changed (the rows behind it moved)");
}

/// A row of the first page grows: InnoDB's load left 1/16 of the page free, so the new
/// row goes to the free gap and only its bytes change; packed, the full page is
/// compacted first.
#[test]
fn a_growing_row_lands_in_the_free_sixteenth_under_innodb() {
    let update = format!("UPDATE t SET body = '{}' WHERE id = 2", "c".repeat(ROW_TEXT * 2));
    let mut written = Vec::new();
    for space in [HeapSpace::Innodb, HeapSpace::Packed] {
        let mut db = loaded(space);
        let before = table_row_bytes(&db);
        written.push(row_bytes_written(&mut db, before, &update));
        assert_eq!(body(&mut db, 2), "c".repeat(ROW_TEXT * 2), "{space:?}");
        assert_eq!(body(&mut db, ROWS - 1), text(ROWS - 1), "{space:?}");
    }
    let (innodb, packed) = (written[0], written[1]);
    assert!(innodb <= (ROW_TEXT * 2) as u64 + 16, "innodb: {innodb} row bytes changed");
    assert!(packed > 10 * ROW_TEXT as u64, "packed: {packed} row bytes changed (the rows behind it moved)");
}

/// Shrinking rows leave their tails unused; later growth wins them back by compacting,
/// and every row reads back as last written.
#[test]
fn space_left_by_shrinking_rows_is_won_back() {
    let mut db = loaded(HeapSpace::Innodb);
    for id in 0..ROWS {
        db.execute(&format!("UPDATE t SET body = 'x' WHERE id = {id}")).unwrap();
    }
    for id in 0..ROWS {
        db.execute(&format!("UPDATE t SET body = '{}' WHERE id = {id}", "y".repeat(ROW_TEXT + 10))).unwrap();
    }
    db.checkpoint().unwrap();
    for id in 0..ROWS {
        assert_eq!(body(&mut db, id), "y".repeat(ROW_TEXT + 10), "row {id}");
    }
}
