//! The engine through statements: DDL, DML, reopen, IPA at work, and errors.

mod common;

use engine::db::BufferSize;
use engine::types::Value;
use engine::{Database, DbOptions, Error, QueryResult};

const SCHEMA: &str = "
CREATE REGION rgIPA (MAX_CHIPS=2, IPA_MODE=SLC, IPA=2x4, V=4);
CREATE TABLESPACE tsIPA (REGION=rgIPA, EXTENT SIZE 32K);
CREATE TABLE account (id INT PRIMARY KEY, branch INT NOT NULL, balance DECIMAL(12,2), name VARCHAR(30)) TABLESPACE tsIPA;
CREATE INDEX account_branch ON account(branch) TABLESPACE tsIPA;
";

fn rows(r: &QueryResult) -> &Vec<Vec<Value>> {
    match r {
        QueryResult::Rows { rows, .. } => rows,
        other => panic!("not rows: {other:?}"),
    }
}

/// A database with one table, `t (id INT PRIMARY KEY, k VARCHAR(200))`, in a region
/// without IPA.
fn text_table(options: DbOptions) -> Database {
    let mut db = Database::create(common::device(), options).unwrap();
    db.execute(
        "CREATE REGION r (IPA_MODE=none); CREATE TABLESPACE ts (REGION=r);
         CREATE TABLE t (id INT PRIMARY KEY, k VARCHAR(200)) TABLESPACE ts;",
    )
    .unwrap();
    db
}

fn one(db: &mut Database, q: &str) -> QueryResult {
    db.execute(q).unwrap_or_else(|e| panic!("{q}: {e}")).pop().unwrap()
}

#[test]
fn create_insert_query_reopen() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(SCHEMA).unwrap();
    for i in 0..500 {
        one(&mut db, &format!("INSERT INTO account VALUES ({i}, {}, {}.50, 'name {i}')", i % 7, i * 10));
    }
    assert_eq!(rows(&one(&mut db, "SELECT * FROM account WHERE id = 42"))[0][3], Value::Text("name 42".into()));
    assert_eq!(rows(&one(&mut db, "SELECT id FROM account WHERE id BETWEEN 10 AND 19")).len(), 10);
    assert_eq!(rows(&one(&mut db, "SELECT id FROM account WHERE branch = 3")).len(), 71);
    one(&mut db, "UPDATE account SET balance = balance + 1.25 WHERE id = 42");
    one(&mut db, "UPDATE account SET branch = 100 WHERE id = 43");
    one(&mut db, "DELETE FROM account WHERE id = 44");
    let device = db.close().unwrap();

    let mut db = Database::open(device, DbOptions::default()).unwrap();
    let r = one(&mut db, "SELECT balance, branch FROM account WHERE id = 42");
    assert_eq!(rows(&r)[0][0], Value::Decimal { scaled: 42175, scale: 2 });
    assert_eq!(rows(&one(&mut db, "SELECT id FROM account WHERE branch = 100"))[0][0], Value::Int(43));
    assert!(rows(&one(&mut db, "SELECT * FROM account WHERE id = 44")).is_empty());
    assert_eq!(rows(&one(&mut db, "SELECT id FROM account WHERE balance BETWEEN 0 AND 100")).len(), 10);
    assert!(db.schema().contains("CREATE INDEX account_branch ON account (branch) TABLESPACE tsIPA;"));
}

#[test]
fn small_updates_become_in_place_appends() {
    let options = DbOptions { buffer: BufferSize::Pages(16), ..DbOptions::default() };
    let mut db = Database::create(common::device(), options).unwrap();
    db.execute(SCHEMA).unwrap();
    for i in 0..2000 {
        one(&mut db, &format!("INSERT INTO account VALUES ({i}, 1, 100, 'x')"));
    }
    db.checkpoint().unwrap();
    for round in 0..3 {
        for i in (0..2000).step_by(97) {
            one(&mut db, &format!("UPDATE account SET balance = balance + {} WHERE id = {i}", round + 1));
        }
        db.checkpoint().unwrap();
    }
    let stats = db.object_stats();
    let account = stats.iter().find(|s| s.name == "account").unwrap();
    assert!(account.counters.in_place_appends > 0, "{:?}", account.counters);
    assert!(account.counters.write_amplification() > 1.0);
    assert!(db.now() > 0, "reads on misses and writes advance simulated time");
    let r = one(&mut db, "SELECT balance FROM account WHERE id = 970");
    assert_eq!(rows(&r)[0][0], Value::Decimal { scaled: 10600, scale: 2 });
}

fn fails(db: &mut Database, q: &str) -> String {
    match db.execute(q) {
        Err(e) => e.to_string(),
        Ok(r) => panic!("{q} should fail, gave {r:?}"),
    }
}

#[test]
fn bad_statements_are_refused_with_reasons() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(SCHEMA).unwrap();
    one(&mut db, "INSERT INTO account VALUES (1, 1, 1, 'a')");
    assert!(fails(&mut db, "INSERT INTO account VALUES (1, 2, 3, 'b')").contains("duplicate key (1)"));
    assert!(fails(&mut db, "INSERT INTO nope VALUES (1)").contains("no table named nope"));
    assert!(fails(&mut db, "\n\nSELECT x FROM account").starts_with("line 3: table account has no column x"));
    assert!(fails(&mut db, "INSERT INTO account VALUES (2, NULL, 1, 'a')").contains("may not be NULL"));
    assert!(fails(&mut db, "INSERT INTO account VALUES ('two', 1, 1, 'a')").contains("not a INT"));
    assert!(fails(&mut db, "INSERT INTO account VALUES (2, 1, 1)").contains("4 columns, 3 values"));
    assert!(fails(&mut db, "CREATE TABLE account (a INT)").contains("already exists"));
    assert!(fails(&mut db, "CREATE TABLE t (a INT) TABLESPACE ts9").contains("no tablespace named ts9"));
    assert!(fails(&mut db, "CREATE TABLESPACE t2 (REGION=r9)").contains("no region named r9"));
    assert!(fails(&mut db, "CREATE REGION r2 (IPA_MODE=none, IPA=2x4)").contains("needs an IPA_MODE"));
    assert!(fails(&mut db, "CREATE REGION r3 (IPA_MODE=pSLC)").contains("needs MLC or TLC cells"));
    assert!(fails(&mut db, "CREATE REGION r4 (IPA=3x125, V=125)").contains("half a 4096-byte flash page"));
    one(&mut db, "INSERT INTO account VALUES (2, 1, 1, 'b')");
    assert!(fails(&mut db, "CREATE UNIQUE INDEX u ON account(branch)").contains("u: duplicate key (1)"));
    one(&mut db, "DELETE FROM account WHERE id = 2");
    match db.execute("CREATE TABLE t (a INT,\n b BLOB)") {
        Err(Error::Parse { line: 2, column: 4, token, .. }) => assert_eq!(token, "BLOB"),
        other => panic!("{other:?}"),
    }
    // Failed statements changed nothing.
    assert_eq!(rows(&one(&mut db, "SELECT * FROM account")).len(), 1);
}

#[test]
fn drop_frees_space_for_new_objects() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(SCHEMA).unwrap();
    for i in 0..300 {
        one(&mut db, &format!("INSERT INTO account VALUES ({i}, 1, 1, 'a')"));
    }
    one(&mut db, "DROP INDEX account_branch");
    assert_eq!(rows(&one(&mut db, "SELECT id FROM account WHERE branch = 1 AND id = 5")), &vec![vec![Value::Int(5)]]);
    one(&mut db, "DROP TABLE account");
    assert!(fails(&mut db, "SELECT * FROM account").contains("no table named account"));
    db.execute("CREATE TABLE account (id INT PRIMARY KEY) TABLESPACE tsIPA; INSERT INTO account VALUES (1);").unwrap();
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    assert_eq!(rows(&one(&mut db, "SELECT * FROM account")).len(), 1);
}

/// 8 and 16 KiB DB pages span two and four 4 KiB flash pages; the delta area is on the
/// last one, and appends work the same.
#[test]
fn db_pages_larger_than_flash_pages() {
    for page_bytes in [8192, 16384] {
        let options = DbOptions { page_bytes, buffer: BufferSize::Pages(8), ..DbOptions::default() };
        let mut db = Database::create(common::device(), options.clone()).unwrap();
        db.execute(SCHEMA).unwrap();
        for i in 0..600 {
            one(&mut db, &format!("INSERT INTO account VALUES ({i}, {}, 10, 'n{i}')", i % 3));
        }
        db.checkpoint().unwrap();
        for round in 0..2 {
            for i in (0..600).step_by(50) {
                one(&mut db, &format!("UPDATE account SET balance = balance + 1 WHERE id = {i}"));
            }
            db.checkpoint().unwrap();
            let _ = round;
        }
        let c = db.object_stats().into_iter().find(|s| s.name == "account").unwrap().counters;
        assert!(c.in_place_appends > 0, "{page_bytes}: {c:?}");
        let device = db.close().unwrap();
        let mut db = Database::open(device, options).unwrap();
        let r = one(&mut db, "SELECT balance FROM account WHERE id = 550");
        assert_eq!(rows(&r)[0][0], Value::Decimal { scaled: 1200, scale: 2 }, "{page_bytes}");
        assert_eq!(rows(&one(&mut db, "SELECT id FROM account WHERE branch = 2")).len(), 200);
    }
}

/// A composite primary key (TPC-C style) orders by its columns; a prefix selects a range.
#[test]
fn composite_keys_and_schema_files() {
    let dir = std::env::temp_dir().join(format!("deltaflash-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("schema.sql");
    std::fs::write(&path, "CREATE TABLE stock (w INT, i INT, qty INT NOT NULL, data CHAR(50), PRIMARY KEY (w, i));\n")
        .unwrap();
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute_file(&path).unwrap();
    let t = db.table_id("stock").unwrap();
    let tx = db.begin();
    for w in (1..=3).rev() {
        for i in (-20..20).rev() {
            db.insert(&tx, t, &[Value::Int(w), Value::Int(i), Value::Int(w * 100 + i), Value::Text("s".into())])
                .unwrap();
        }
    }
    let in_w2 = db.scan(&tx, t, &[Value::Int(2)], &[Value::Int(2)]).unwrap();
    let keys: Vec<(Value, Value)> = in_w2.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    let want: Vec<(Value, Value)> = (-20..20).map(|i| (Value::Int(2), Value::Int(i))).collect();
    assert_eq!(keys, want);
    let r = one(&mut db, "SELECT qty FROM stock WHERE w = 3 AND i BETWEEN -2 AND 1");
    assert_eq!(
        rows(&r).iter().map(|r| r[0].clone()).collect::<Vec<_>>(),
        (298..=301).map(Value::Int).collect::<Vec<_>>()
    );
    assert!(db.add(&tx, t, &[Value::Int(1), Value::Int(5)], 2, &Value::Int(-5)).unwrap());
    assert_eq!(db.get(&tx, t, &[Value::Int(1), Value::Int(5)]).unwrap().unwrap()[2], Value::Int(100));
    let missing = dir.join("missing.sql");
    assert!(db.execute_file(&missing).unwrap_err().to_string().contains("missing.sql"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The same statements give the same counters, simulated time and flash state.
#[test]
fn runs_are_deterministic() {
    let run = || {
        let options = DbOptions { buffer: BufferSize::Pages(12), ..DbOptions::default() };
        let mut db = Database::create(common::device(), options).unwrap();
        db.execute(SCHEMA).unwrap();
        for i in 0..800 {
            one(&mut db, &format!("INSERT INTO account VALUES ({i}, {}, 1, 'n')", i % 5));
        }
        for i in (0..800).step_by(7) {
            one(&mut db, &format!("UPDATE account SET balance = balance + 2 WHERE id = {i}"));
        }
        let stats: Vec<_> = db.object_stats().into_iter().map(|s| (s.name, s.counters)).collect();
        let dev = db.page_device();
        let flash: Vec<_> = dev.region_ids().map(|r| dev.counters(r)).collect();
        (stats, flash, db.now(), db.pool_stats())
    };
    assert_eq!(run(), run());
}

/// A transaction's updates are undone newest first on abort, also when it changes a row
/// several times and moves it between index keys, and again with the undo buffers a
/// committed transaction left for reuse.
#[test]
fn abort_undoes_read_modify_writes_and_index_moves() {
    let options = DbOptions { buffer: BufferSize::Pages(16), ..DbOptions::default() };
    let mut db = Database::create(common::device(), options).unwrap();
    db.execute(SCHEMA).unwrap();
    let t = db.table_id("account").unwrap();
    let tx = db.begin();
    for id in 0..300 {
        let name = Value::Text(format!("n{id}"));
        db.insert(&tx, t, &[Value::Int(id), Value::Int(id % 3), Value::Int(0), name]).unwrap();
    }
    db.commit(tx).unwrap();
    let by_branch = |db: &mut Database, b: i64| {
        let tx = db.begin();
        let rows = db.scan_index(&tx, t, "account_branch", &[Value::Int(b)], &[Value::Int(b)], usize::MAX).unwrap();
        db.commit(tx).unwrap();
        let mut ids: Vec<i64> = rows.iter().map(|r| if let Value::Int(i) = r[0] { i } else { -1 }).collect();
        ids.sort();
        ids
    };
    let before: Vec<Vec<i64>> = (0..3).map(|b| by_branch(&mut db, b)).collect();
    for round in 0..3 {
        let tx = db.begin();
        for id in (0..300).step_by(7) {
            for _ in 0..3 {
                let row = db
                    .update_with(&tx, t, &[Value::Int(id)], |row| {
                        let Value::Decimal { scaled, .. } = row[2] else { panic!("balance is a decimal") };
                        Ok(vec![(2, Value::Int(scaled / 100 + 1)), (1, Value::Int(7))])
                    })
                    .unwrap()
                    .unwrap();
                assert_eq!(row[1], Value::Int(7));
            }
        }
        assert_eq!(by_branch(&mut db, 7).len(), 43, "round {round}: moved rows are under their new key");
        db.abort(tx).unwrap();
        for (b, ids) in before.iter().enumerate() {
            assert_eq!(&by_branch(&mut db, b as i64), ids, "round {round}: branch {b} restored");
        }
        assert!(by_branch(&mut db, 7).is_empty());
        let tx = db.begin();
        for id in (0..300).step_by(7) {
            let row = db.get(&tx, t, &[Value::Int(id)]).unwrap().unwrap();
            assert_eq!(row[2], Value::Decimal { scaled: 0, scale: 2 }, "round {round}: balance of {id} restored");
        }
        // A committed change in between leaves its undo buffers to the next round.
        assert!(db.update(&tx, t, &[Value::Int(1)], &[(3, Value::Text(format!("r{round}")))]).unwrap());
        db.commit(tx).unwrap();
    }
    // A projection decodes the asked columns, in the order asked.
    let tx = db.begin();
    let got = db.get_columns(&tx, t, &[Value::Int(1)], &[3, 0, 1]).unwrap().unwrap();
    assert_eq!(got, vec![Value::Text("r2".into()), Value::Int(1), Value::Int(1)]);
    assert_eq!(db.get_columns(&tx, t, &[Value::Int(999)], &[0]).unwrap(), None);
    let err = db.get_columns(&tx, t, &[Value::Int(1)], &[4]).unwrap_err().to_string();
    assert!(err.contains("no column 4"), "{err}");
    db.commit(tx).unwrap();
}

/// `update_columns` (fixed-width fields written in place, other sets the whole-row way)
/// leaves the same rows and index entries as `update_with`, returns the read columns
/// after the change, sets NULL through the bitmap, and rolls back.
#[test]
fn update_columns_gives_the_rows_of_update_with() {
    let schema =
        "CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, n BIGINT, d DECIMAL(8,2), c CHAR(6), v VARCHAR(20));
                  CREATE INDEX t_k ON t(k);";
    let mut dbs: Vec<Database> = (0..2)
        .map(|_| {
            let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
            db.execute(schema).unwrap();
            for i in 0..200 {
                one(&mut db, &format!("INSERT INTO t VALUES ({i}, {}, {}, {i}.25, 'c{i}', 'v{i}')", i % 5, i * 3));
            }
            db
        })
        .collect();
    let t = dbs[0].table_id("t").unwrap();
    let sets = |i: i64| -> Vec<(usize, Value)> {
        match i % 4 {
            0 => vec![(2, Value::Int(-i)), (3, Value::Int(i)), (4, Value::Text("x".into()))],
            1 => vec![(2, Value::Null), (4, Value::Null)],
            2 => vec![(1, Value::Int(9)), (2, Value::Int(1))], // an indexed column
            _ => vec![(5, Value::Text(format!("longer text {i}")))], // a VARCHAR
        }
    };
    for (n, db) in dbs.iter_mut().enumerate() {
        let tx = db.begin();
        for i in (0..200).step_by(3) {
            if n == 0 {
                db.update_with(&tx, t, &[Value::Int(i)], |_| Ok(sets(i))).unwrap().unwrap();
            } else {
                let read = db.update_columns(&tx, t, &[Value::Int(i)], &[2, 0], |_| Ok(sets(i))).unwrap().unwrap();
                let n = sets(i).iter().find(|(c, _)| *c == 2).map_or(Value::Int(i * 3), |(_, v)| v.clone());
                assert_eq!(read, vec![n, Value::Int(i)], "row {i}: the read columns after the change");
            }
        }
        db.commit(tx).unwrap();
    }
    let all = |db: &mut Database| {
        let tx = db.begin();
        let rows = db.scan(&tx, t, &[], &[]).unwrap();
        let by_k: Vec<usize> = (0..10)
            .map(|k| db.scan_index(&tx, t, "t_k", &[Value::Int(k)], &[Value::Int(k)], usize::MAX).unwrap().len())
            .collect();
        db.commit(tx).unwrap();
        (rows, by_k)
    };
    let (rows, by_k) = all(&mut dbs[0]);
    assert_eq!(all(&mut dbs[1]), (rows.clone(), by_k.clone()));
    assert_eq!((&rows[9][2], &rows[9][4]), (&Value::Null, &Value::Null));
    assert_eq!(by_k[9], 17, "rows whose indexed column was set are under their new key");
    // An aborted field update leaves the row as it was.
    let db = &mut dbs[1];
    let tx = db.begin();
    db.add(&tx, t, &[Value::Int(4)], 2, &Value::Int(5)).unwrap();
    db.abort(tx).unwrap();
    assert_eq!(all(db).0, rows);
    let tx = db.begin();
    let err = db.add(&tx, t, &[Value::Int(9)], 2, &Value::Int(5)).unwrap_err().to_string();
    assert!(err.contains("cannot add 5 to NULL"), "{err}");
    db.abort(tx).unwrap();
}

/// `for_each_row` visits each live row once, decoded as `scan` returns it (storage
/// order, not key order).
#[test]
fn for_each_row_visits_the_rows_a_scan_returns() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(SCHEMA).unwrap();
    for i in 0..300 {
        one(&mut db, &format!("INSERT INTO account VALUES ({i}, {}, {i}.25, 'name {i}')", i % 5));
    }
    one(&mut db, "DELETE FROM account WHERE id BETWEEN 100 AND 149");
    one(&mut db, "UPDATE account SET name = 'a longer name than before' WHERE id = 7");
    let t = db.table_id("account").unwrap();
    let tx = db.begin();
    let mut visited = Vec::new();
    db.for_each_row(&tx, t, |row| visited.push(row.to_vec())).unwrap();
    let mut scanned = db.scan(&tx, t, &[], &[]).unwrap();
    db.commit(tx).unwrap();
    let id = |r: &Vec<Value>| match r[0] {
        Value::Int(id) => id,
        _ => panic!("id not an INT: {r:?}"),
    };
    visited.sort_by_key(id);
    scanned.sort_by_key(id);
    assert_eq!(visited.len(), 250);
    assert_eq!(visited, scanned);
}

/// CREATE INDEX on a table that already has rows finds each of them through the new
/// index, and logs little per row: it inserts the keys in key order, so each entry lands
/// after the last in its leaf (in table order, each insertion shifted the slots behind
/// it and logged them all).
#[test]
fn create_index_on_existing_rows_indexes_every_row_with_a_small_log() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(SCHEMA).unwrap();
    let n = 4000;
    // The balances run through 0..n in a scrambled order (4001 is prime).
    let v_of = |i: u64| (1 + i * 1234 % 4001) % 4001;
    for chunk in (0..n).collect::<Vec<u64>>().chunks(200) {
        let values: Vec<String> = chunk.iter().map(|&i| format!("({i}, {}, {}.00, 'n{i}')", i % 7, v_of(i))).collect();
        one(&mut db, &format!("INSERT INTO account VALUES {}", values.join(", ")));
    }
    let before = db.log_counters().unwrap().bytes;
    one(&mut db, "CREATE INDEX account_balance ON account(balance)");
    let logged = db.log_counters().unwrap().bytes - before;
    // In key order about 220 bytes per row; in table order the 4,000 rows filled this
    // device's 691-page log (over 700 bytes per row).
    assert!(logged < 300 * n, "{} log bytes per row", logged / n);
    for (lo, hi) in [(0, 0), (100, 199), (3990, 4100)] {
        let q = format!("SELECT id FROM account WHERE balance BETWEEN {lo} AND {hi}");
        let result = one(&mut db, &q);
        let got: Vec<u64> = rows(&result)
            .iter()
            .map(|r| match r[0] {
                Value::Int(id) => id as u64,
                ref v => panic!("{v:?}"),
            })
            .collect();
        // Through the index: in balance order.
        let mut want: Vec<u64> = (0..n).filter(|&i| (lo..=hi).contains(&v_of(i))).collect();
        want.sort_by_key(|&i| v_of(i));
        assert_eq!(got, want, "{q}");
    }
}

/// A statement too large for the log fails, and its rollback still fits: each logged
/// update sets room aside for the record that undoes it. The database then goes on
/// working, closes, and reopens with what was committed (before, a failed rollback left
/// unlogged changes in pages, every later statement failed, and `close` found a
/// corrupt page).
#[test]
fn a_statement_too_large_for_the_log_rolls_back_and_the_database_goes_on() {
    let mut db = text_table(DbOptions::default());
    let n = 20_000u64;
    let key = |i: u64| format!("{:08}{}", i * 7919 % n, "p".repeat(150));
    for chunk in (0..n).collect::<Vec<u64>>().chunks(100) {
        let values: Vec<String> = chunk.iter().map(|&i| format!("({i}, '{}')", key(i))).collect();
        one(&mut db, &format!("INSERT INTO t VALUES {}", values.join(", ")));
    }
    let too_large = [
        format!("UPDATE t SET k = '{}' WHERE id BETWEEN 0 AND {n}", "q".repeat(158)),
        "CREATE INDEX tk ON t (k) TABLESPACE ts".to_string(),
    ];
    for q in &too_large {
        let err = db.execute(q).expect_err(q).to_string();
        assert!(err.contains("the log region is full"), "{q}: {err}");
    }
    assert!(!db.schema().contains("tk"), "{}", db.schema());
    one(&mut db, &format!("INSERT INTO t VALUES ({n}, 'after')"));
    let check = |db: &mut Database| {
        for i in [0, 5, n - 1] {
            let got = one(db, &format!("SELECT k FROM t WHERE id = {i}"));
            assert_eq!(rows(&got)[0][0], Value::Text(key(i)), "row {i}");
        }
        let got = one(db, &format!("SELECT k FROM t WHERE id = {n}"));
        assert_eq!(rows(&got)[0][0], Value::Text("after".into()));
    };
    check(&mut db);
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    check(&mut db);
}

/// A transaction that keeps the log past half full checkpoints now and then, not
/// before each of its operations (a checkpoint cannot cut the log below the open
/// transaction, so each one after the first frees little and writes the dirty pages).
#[test]
fn a_long_transaction_checkpoints_a_bounded_number_of_times() {
    let mut db = text_table(DbOptions::default());
    one(&mut db, "BEGIN");
    let before = db.pool_stats().checkpoints;
    let mut statements = 0;
    let err = loop {
        let values: Vec<String> =
            (0..20).map(|i| format!("({}, '{}')", statements * 20 + i, "k".repeat(180))).collect();
        match db.execute(&format!("INSERT INTO t VALUES {}", values.join(", "))) {
            Ok(_) => statements += 1,
            Err(e) => break e.to_string(),
        }
    };
    assert!(err.contains("the log region is full"), "{err}");
    let checkpoints = db.pool_stats().checkpoints - before;
    assert!(statements > 100, "only {statements} statements filled the log");
    assert!((1..=12).contains(&checkpoints), "{checkpoints} checkpoints in one transaction");
    // The failed statement rolled the whole transaction back; it stays failed until
    // ROLLBACK.
    assert!(fails(&mut db, "INSERT INTO t VALUES (1, 'after')").contains("current transaction is aborted"));
    one(&mut db, "ROLLBACK");
    one(&mut db, "INSERT INTO t VALUES (1, 'after')");
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    assert_eq!(rows(&one(&mut db, "SELECT id FROM t WHERE id BETWEEN 0 AND 100000")).len(), 1);
}

/// One transaction writes at a time: while one has uncommitted changes, another one's
/// change is refused with a clear error, and reading beside it is fine. (Undo writes
/// byte ranges back: aborting the first after the second had changed the same heap
/// page and committed lost the committed rows, and left a page that no longer decoded.)
#[test]
fn a_second_transaction_cannot_write_beside_uncommitted_changes() {
    let mut db = text_table(DbOptions::default());
    let t = db.table_id("t").unwrap();
    let row = |id: i64| [Value::Int(id), Value::Text(format!("row {id}"))];
    let first = db.begin();
    db.insert(&first, t, &row(-1)).unwrap();
    let second = db.begin();
    match db.insert(&second, t, &row(0)) {
        Err(Error::AnotherWriter { id, writer }) => {
            assert_eq!((id, writer), (second.id(), first.id()));
        }
        other => panic!("a second writer was let in: {other:?}"),
    }
    let err = db.execute("INSERT INTO t VALUES (1, 'autocommit')").unwrap_err().to_string();
    assert!(err.contains("one transaction writes at a time"), "{err}");
    // Reading beside the writer is allowed.
    assert!(db.get(&second, t, &[Value::Int(-1)]).unwrap().is_some());
    db.abort(first).unwrap();
    // Once the first has ended, the second may write.
    for id in 0..3 {
        db.insert(&second, t, &row(id)).unwrap();
    }
    db.commit(second).unwrap();
    let ids = |db: &mut Database| rows(&one(db, "SELECT id FROM t WHERE id BETWEEN -10 AND 100")).len();
    assert_eq!(ids(&mut db), 3);
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    assert_eq!(ids(&mut db), 3);
}

/// A run that asks for late checkpoints (`checkpoint_log_share` above one half) gets
/// them: the checkpoint an operation takes once half the log is in use waits for that
/// share too.
#[test]
fn a_late_checkpoint_share_holds_inside_transactions() {
    let checkpoints_with = |share: f64| {
        let options = DbOptions { checkpoint_log_share: share, ..DbOptions::default() };
        let mut db = text_table(options);
        let before = db.pool_stats().checkpoints;
        for s in 0..200 {
            let values: Vec<String> = (0..20).map(|i| format!("({}, '{}')", s * 20 + i, "k".repeat(180))).collect();
            one(&mut db, &format!("INSERT INTO t VALUES {}", values.join(", ")));
        }
        db.pool_stats().checkpoints - before
    };
    // The statements take the log past 55% of its capacity...
    assert!(checkpoints_with(0.55) > 0);
    // ...and with checkpoints asked for at 90%, none runs before.
    assert_eq!(checkpoints_with(0.9), 0);
}

/// The bank transfer of the report: an error inside BEGIN … COMMIT fails the whole
/// transaction. The statements after it are refused (as PostgreSQL does) and COMMIT
/// rolls back and says so, so the total balance stays 200, in memory and after reopen.
/// (The failed statement rolled the transaction back and the rest ran in autocommit:
/// 210.)
#[test]
fn an_error_inside_a_transaction_fails_all_of_it() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(
        "CREATE TABLE acct (id INT PRIMARY KEY, bal INT NOT NULL); CREATE TABLE audit (id INT PRIMARY KEY);
         INSERT INTO acct VALUES (1, 100), (2, 100); INSERT INTO audit VALUES (7);",
    )
    .unwrap();
    let total = |db: &mut Database| -> i64 {
        let r = one(db, "SELECT bal FROM acct");
        rows(&r).iter().map(|r| if let Value::Int(b) = r[0] { b } else { panic!("{r:?}") }).sum()
    };
    // Statement by statement, as a shell or a driver sends them.
    one(&mut db, "BEGIN");
    one(&mut db, "UPDATE acct SET bal = bal - 10 WHERE id = 1");
    let e = fails(&mut db, "INSERT INTO audit VALUES (7)");
    assert!(e.contains("duplicate key (7)") && e.contains("refused until ROLLBACK"), "{e}");
    for refused in ["UPDATE acct SET bal = bal + 10 WHERE id = 2", "SELECT * FROM acct", "BEGIN"] {
        let e = fails(&mut db, refused);
        assert!(e.starts_with("current transaction is aborted, commands ignored until ROLLBACK"), "{refused}: {e}");
        assert!(e.contains("duplicate key (7)"), "{e}");
    }
    let e = fails(&mut db, "COMMIT");
    assert!(e.contains("failed earlier and was rolled back: nothing of it was committed"), "{e}");
    assert!(fails(&mut db, "ROLLBACK").contains("no transaction is open"));
    assert_eq!(total(&mut db), 200);
    // In one call: the error stops the text, and the transaction stays failed.
    let script = "BEGIN; UPDATE acct SET bal = bal - 10 WHERE id = 1; INSERT INTO audit VALUES (7);
                  UPDATE acct SET bal = bal + 10 WHERE id = 2; COMMIT;";
    assert!(fails(&mut db, script).contains("duplicate key (7)"));
    assert!(fails(&mut db, "UPDATE acct SET bal = bal + 10 WHERE id = 2; COMMIT")
        .contains("current transaction is aborted"));
    assert_eq!(one(&mut db, "ROLLBACK"), QueryResult::Done("ROLLBACK".into()));
    assert_eq!(total(&mut db), 200);
    // A statement that does not parse fails the transaction too.
    one(&mut db, "BEGIN");
    one(&mut db, "UPDATE acct SET bal = bal - 10 WHERE id = 1");
    assert!(matches!(db.execute("UPDTE acct SET bal = 0"), Err(Error::Parse { .. })));
    // ...and one more while it is failed leaves it failed.
    assert!(matches!(db.execute("UPDTE acct SET bal = 0"), Err(Error::Parse { .. })));
    assert!(fails(&mut db, "UPDATE acct SET bal = 0 WHERE id = 2").contains("current transaction is aborted"));
    assert!(fails(&mut db, "COMMIT").contains("failed earlier and was rolled back"));
    // ROLLBACK ends the failed transaction; the session goes on in autocommit.
    one(&mut db, "UPDATE acct SET bal = bal + 1 WHERE id = 1");
    assert_eq!(total(&mut db), 201);
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    assert_eq!(total(&mut db), 201);
}

/// The Rust API: an operation that fails after it changed data fails its transaction
/// (further operations are refused, commit rolls back and says so); one refused before
/// it changed anything leaves the transaction usable.
#[test]
fn a_transaction_whose_operation_failed_half_way_cannot_commit() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(
        "CREATE REGION r (IPA_MODE=none); CREATE TABLESPACE ts (REGION=r);
         CREATE TABLE t (id INT PRIMARY KEY, k VARCHAR(2000)) TABLESPACE ts;
         CREATE INDEX t_k ON t (k) TABLESPACE ts;",
    )
    .unwrap();
    let t = db.table_id("t").unwrap();
    let row = |id: i64, k: String| [Value::Int(id), Value::Text(k)];
    let tx = db.begin();
    db.insert(&tx, t, &row(1, "one".into())).unwrap();
    // Refused before any change: the transaction goes on.
    assert!(matches!(db.insert(&tx, t, &row(1, "again".into())), Err(Error::Duplicate { .. })));
    db.insert(&tx, t, &row(2, "two".into())).unwrap();
    // The row fits its heap page, but its key is too large for a B+-tree entry: the
    // heap insert happened, the index insert failed.
    let e = db.insert(&tx, t, &row(3, "k".repeat(1900))).unwrap_err().to_string();
    assert!(!e.contains("current transaction is aborted"), "{e}");
    let refused = db.get(&tx, t, &[Value::Int(1)]).map(drop).unwrap_err().to_string();
    assert!(refused.starts_with("current transaction is aborted") && refused.contains(&e), "{refused}");
    match db.commit(tx) {
        Err(failed) => assert!(failed.to_string().contains("nothing of it was committed"), "{failed}"),
        Ok(lsn) => panic!("a failed transaction committed (LSN {lsn})"),
    }
    assert!(rows(&one(&mut db, "SELECT id FROM t")).is_empty());
    // An abort ends a failed transaction quietly.
    let tx = db.begin();
    db.insert(&tx, t, &row(4, "four".into())).unwrap();
    db.insert(&tx, t, &row(5, "k".repeat(1900))).unwrap_err();
    db.abort(tx).unwrap();
    let tx = db.begin();
    db.insert(&tx, t, &row(6, "six".into())).unwrap();
    db.commit(tx).unwrap();
    assert_eq!(rows(&one(&mut db, "SELECT id FROM t")), &vec![vec![Value::Int(6)]]);
}

/// The index of a PRIMARY KEY cannot be dropped: the key would stop holding while the
/// schema still declares it. (DROP INDEX t_pkey was accepted; duplicate keys then went
/// in.) Other indexes, unique ones included, can be dropped.
#[test]
fn the_index_of_a_primary_key_cannot_be_dropped() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute(SCHEMA).unwrap();
    one(&mut db, "INSERT INTO account VALUES (1, 1, 1, 'a')");
    let e = fails(&mut db, "DROP INDEX account_pkey");
    assert!(e.contains("account_pkey backs the PRIMARY KEY of table account and cannot be dropped"), "{e}");
    assert!(fails(&mut db, "INSERT INTO account VALUES (1, 2, 2, 'b')").contains("duplicate key (1)"));
    one(&mut db, "CREATE UNIQUE INDEX account_name ON account (name)");
    one(&mut db, "DROP INDEX account_name");
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    assert!(fails(&mut db, "DROP INDEX account_pkey").contains("cannot be dropped"));
    assert!(fails(&mut db, "INSERT INTO account VALUES (1, 2, 2, 'b')").contains("duplicate key (1)"));
    assert_eq!(rows(&one(&mut db, "SELECT * FROM account")).len(), 1);
}

/// A UNIQUE index holds any number of NULL keys (SQL: NULL equals nothing), on insert,
/// update and when built over existing rows; non-NULL keys stay unique, and the NULL
/// rows can be found, changed and deleted. (Two NULLs were a duplicate key.)
#[test]
fn a_unique_index_allows_several_nulls() {
    let mut db = text_table(DbOptions::default());
    db.execute("INSERT INTO t VALUES (1, NULL), (2, NULL)").unwrap();
    one(&mut db, "CREATE UNIQUE INDEX t_k ON t (k) TABLESPACE ts");
    db.execute("INSERT INTO t VALUES (3, NULL), (4, 'four')").unwrap();
    let e = fails(&mut db, "INSERT INTO t VALUES (5, 'four')");
    assert!(e.contains("t_k: duplicate key") && e.contains("four"), "{e}");
    one(&mut db, "UPDATE t SET k = NULL WHERE id = 4");
    one(&mut db, "UPDATE t SET k = 'one' WHERE id = 1");
    assert!(fails(&mut db, "UPDATE t SET k = 'one' WHERE id = 2").contains("duplicate key"));
    one(&mut db, "DELETE FROM t WHERE id = 2");
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    let ids = |db: &mut Database| rows(&one(db, "SELECT id FROM t")).iter().map(|r| r[0].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&mut db), [1, 3, 4].map(Value::Int));
    assert_eq!(rows(&one(&mut db, "SELECT id FROM t WHERE k = 'one'")), &vec![vec![Value::Int(1)]]);
    db.execute("DELETE FROM t WHERE id = 3; DELETE FROM t WHERE id = 4").unwrap();
    assert_eq!(ids(&mut db), [Value::Int(1)]);
    // A composite key with a NULL part is not a duplicate either.
    db.execute(
        "CREATE TABLE p (a INT, b INT) TABLESPACE ts; CREATE UNIQUE INDEX p_ab ON p (a, b) TABLESPACE ts;
         INSERT INTO p VALUES (1, NULL), (1, NULL), (1, 2);",
    )
    .unwrap();
    assert!(fails(&mut db, "INSERT INTO p VALUES (1, 2)").contains("duplicate key (1, 2)"));
}

/// A DDL statement that fails leaves the catalog as it was, in memory and on flash,
/// and the session goes on: later DDL works and the session's end saves. (A CREATE
/// TABLE that outgrew the catalog stayed in it: every later DDL and the save at the end
/// failed.)
#[test]
fn a_failed_ddl_statement_leaves_the_catalog_as_it_was() {
    let mut db = text_table(DbOptions::default());
    one(&mut db, "INSERT INTO t VALUES (1, 'one')");
    let schema = db.schema();
    // Columns whose names the catalog cannot hold (a copy holds 512 KiB).
    let columns: Vec<String> = (0..6000).map(|i| format!("c{i:05}_{} INT", "n".repeat(56))).collect();
    let big =
        format!("CREATE TABLE big ({}, PRIMARY KEY (c00000_{})) TABLESPACE ts", columns.join(", "), "n".repeat(56));
    let e = fails(&mut db, &big);
    assert!(e.contains("catalog copy holds"), "{e}");
    assert_eq!(db.schema(), schema);
    // Later DDL works, and so does the save at the end.
    one(&mut db, "CREATE TABLE after (id INT PRIMARY KEY) TABLESPACE ts");
    one(&mut db, "INSERT INTO after VALUES (1)");
    one(&mut db, "CREATE INDEX t_k ON t (k) TABLESPACE ts");
    one(&mut db, "DROP TABLE after");
    let index = "CREATE INDEX t_k ON t (k) TABLESPACE ts;\n";
    assert_eq!(db.schema(), schema.clone() + index);
    let device = db.close().unwrap();
    let mut db = Database::open(device, DbOptions::default()).unwrap();
    assert_eq!(db.schema(), schema + index);
    assert_eq!(rows(&one(&mut db, "SELECT k FROM t WHERE id = 1"))[0][0], Value::Text("one".into()));
    one(&mut db, "CREATE TABLE again (id INT PRIMARY KEY) TABLESPACE ts");
}

/// A name longer than 64 characters is refused before it reaches the catalog, with the
/// name cut in the message. (A 65,536-character table name was accepted.)
#[test]
fn names_have_a_length_limit() {
    let mut db = text_table(DbOptions::default());
    let long = "n".repeat(65_536);
    for q in [
        format!("CREATE TABLE {long} (a INT)"),
        format!("CREATE TABLE x ({long} INT)"),
        format!("CREATE INDEX {long} ON t (k)"),
        format!("CREATE REGION {long} (IPA_MODE=none)"),
        format!("CREATE TABLESPACE {long} (REGION=r)"),
    ] {
        let e = fails(&mut db, &q);
        assert!(e.contains("a name of 65536 characters is longer than the 64 allowed"), "{e:.300}");
        assert!(e.len() < 300, "{} bytes", e.len());
    }
    let name = "n".repeat(64);
    one(&mut db, &format!("CREATE TABLE {name} (a INT) TABLESPACE ts"));
    assert!(db.schema().contains(&name));
}

/// Errors quote at most 80 characters of what was typed, wherever the message names it
/// (a size, a count, a mode, a value). (A 1 MB count or text was echoed whole.)
#[test]
fn parse_errors_quote_at_most_80_characters() {
    let mut db = text_table(DbOptions::default());
    let huge = "9".repeat(1 << 20);
    for q in [
        format!("CREATE REGION q (MAX_CHIPS={huge})"),
        format!("CREATE REGION q (MAX_SIZE={huge}Q)"),
        format!("CREATE REGION q (OVER_PROVISIONING={huge}x)"),
        format!("CREATE REGION q (IPA_MODE=m{huge})"),
        format!("CREATE TABLE q (a T{huge})"),
        format!("INSERT INTO t VALUES ({huge}, 'a')"),
        format!("INSERT INTO t VALUES ('{huge}', 'a')"),
        format!("INSERT INTO t VALUES (1, '{huge}')"),
    ] {
        let e = fails(&mut db, &q);
        assert!(e.len() < 400 && e.contains(&"9".repeat(30)), "{} bytes: {e:.300}", e.len());
    }
}

/// Input may start with a UTF-8 byte order mark, as files saved by some editors do.
/// (It was an "unexpected character".)
#[test]
fn a_bom_at_the_start_is_skipped() {
    let mut db = text_table(DbOptions::default());
    db.execute("\u{feff}INSERT INTO t VALUES (1, 'bom')").unwrap();
    assert_eq!(rows(&one(&mut db, "SELECT k FROM t WHERE id = 1"))[0][0], Value::Text("bom".into()));
}

/// Floats in exponent notation: `1.5e-3`, `2E+2`, `1e3`.
#[test]
fn floats_take_exponent_notation() {
    let mut db = text_table(DbOptions::default());
    db.execute("CREATE TABLE f (id INT PRIMARY KEY, x FLOAT) TABLESPACE ts; INSERT INTO f VALUES (1, 1.5e-3), (2, 2E+2), (3, -1e3)")
        .unwrap();
    let got: Vec<Value> = rows(&one(&mut db, "SELECT x FROM f")).iter().map(|r| r[0].clone()).collect();
    assert_eq!(got, [Value::Float(0.0015), Value::Float(200.0), Value::Float(-1000.0)]);
    one(&mut db, "UPDATE f SET x = x + 2.5e-1 WHERE id = 1");
    assert_eq!(rows(&one(&mut db, "SELECT x FROM f WHERE id = 1"))[0][0], Value::Float(0.2515));
}

/// `GC=FOREGROUND` makes a region collect only in the path of the host write that needs a
/// block; the schema says so, the default (`BACKGROUND`) goes unsaid, and another mode
/// is refused by name.
#[test]
fn a_region_may_collect_in_the_foreground_only() {
    let mut db = Database::create(common::device(), DbOptions::default()).unwrap();
    db.execute("CREATE REGION fg (IPA_MODE=none, MAX_CHIPS=1, GC=foreground); CREATE REGION bg (IPA_MODE=none, MAX_CHIPS=1, GC=BACKGROUND);")
        .unwrap();
    let schema = db.schema();
    assert!(
        schema.contains("CREATE REGION fg (IPA_MODE=none, MAX_CHIPS=1, OVER_PROVISIONING=0.1, GC=FOREGROUND);"),
        "{schema}"
    );
    assert!(schema.contains("CREATE REGION bg (IPA_MODE=none, MAX_CHIPS=1, OVER_PROVISIONING=0.1);"), "{schema}");
    let e = fails(&mut db, "CREATE REGION x (GC=sometimes)");
    assert!(e.contains("unknown GC mode `sometimes` (expected FOREGROUND or BACKGROUND)"), "{e}");
}
