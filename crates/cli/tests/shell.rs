//! The `deltaflash sql` shell driven as a child process: statements run as they
//! arrive, errors leave earlier work done and name their position in the whole input,
//! `--bail`, `-c`, output modes, a closed pipe, long literals, device presets; and a
//! fuzz pass of arbitrary input through the statement splitter and parser.

use engine::sql::{parse_at, Piece, Splitter};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::Duration;

const SMALL: &[&str] = &["--chips", "4", "--blocks-per-chip", "32", "--pages-per-block", "16"];

/// The tests here start processes one at a time: a process forked by another test
/// thread holds a copy of every pipe open at that moment until it execs, and a pipe a
/// test closes does not read as closed while it does.
static SPAWNING: Mutex<()> = Mutex::new(());

fn spawning() -> MutexGuard<'static, ()> {
    SPAWNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn spawn(command: &mut Command) -> Child {
    let _one_at_a_time = spawning();
    command.spawn().unwrap()
}

fn sql(image: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = spawn(
        Command::new(env!("CARGO_BIN_EXE_deltaflash"))
            .args(["sql", "--image"])
            .arg(image)
            .args(SMALL)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The ids in table t, read back through a fresh session.
fn ids(image: &Path) -> String {
    let out = sql(image, &["--mode", "csv", "-c", "SELECT a FROM t"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().skip(1).collect::<Vec<_>>().join(",")
}

/// Eight statements on eight lines; the seventh has a syntax error at column 27.
const EIGHT: &str = "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(20));\n\
    INSERT INTO t VALUES (1, 'one');\n\
    INSERT INTO t VALUES (2, 'two');\n\
    INSERT INTO t VALUES (3, 'three');\n\
    INSERT INTO t VALUES (4, 'four');\n\
    INSERT INTO t VALUES (5, 'five');\n\
    SELECT * FROM t WHERE a > 1;\n\
    INSERT INTO t VALUES (8, 'eight');\n";

#[test]
fn an_error_in_the_middle_leaves_earlier_statements_done_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let out = sql(&image, &[], EIGHT);
    assert!(!out.status.success(), "a failed statement makes the exit code non-zero");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error at line 7, column 25: expected `=` or BETWEEN (at `>`)"), "{stderr}");
    assert!(!stderr.contains("-e:") && !stderr.contains("panicked"), "{stderr}");
    assert_eq!(ids(&image), "1,2,3,4,5,8");
}

#[test]
fn bail_stops_at_the_first_error() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let out = sql(&image, &["--bail"], EIGHT);
    assert!(!out.status.success());
    assert_eq!(ids(&image), "1,2,3,4,5");
}

#[test]
fn runtime_errors_name_the_statement_position_in_the_whole_input() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let input = "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(20));\n\n  INSERT INTO t VALUES (1, 'x'); INSERT INTO u VALUES (1);\n";
    let out = sql(&image, &[], input);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error at line 3, column 34: "), "{stderr}");
}

#[test]
fn dash_c_runs_its_commands_and_e_may_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let out = sql(&image, &["-c", "CREATE TABLE t (a INT PRIMARY KEY); INSERT INTO t VALUES (4)"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = sql(&image, &["-e", "INSERT INTO t VALUES (5)", "-e", ".tables", "-e", "SELECT * FROM t"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("t_pkey") && stdout.contains("(2 rows)"), "{stdout}");
    // A dot command that does not exist fails, naming it.
    let out = sql(&image, &["-c", ".nope"], "");
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("unknown command .nope"), "{}", text(&out.stderr));
}

#[test]
fn csv_and_json_modes() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let input = "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(20), d DECIMAL(6,2));\n\
        INSERT INTO t VALUES (1, 'plain', 1.50), (2, 'a,\"q\"', NULL);\n\
        .mode csv\nSELECT * FROM t;\n.mode json\nSELECT * FROM t;\nSELECT * FROM t WHERE a = 9;\n";
    let out = sql(&image, &[], input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let csv = "a,b,d\n1,plain,1.50\n2,\"a,\"\"q\"\"\",\n";
    let json =
        "[\n  {\"a\": 1, \"b\": \"plain\", \"d\": 1.50},\n  {\"a\": 2, \"b\": \"a,\\\"q\\\"\", \"d\": null}\n]\n[]\n";
    assert!(stdout.ends_with(&format!("{csv}{json}")), "{stdout}");
    let rows: serde_json::Value = serde_json::from_str(&json[..json.len() - 3]).unwrap();
    assert_eq!(rows[1]["b"], "a,\"q\"");
}

#[test]
fn statements_run_as_their_semicolon_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let mut child = spawn(
        Command::new(env!("CARGO_BIN_EXE_deltaflash"))
            .args(["sql", "--image"])
            .arg(&image)
            .args(SMALL)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // The statement's output arrives while standard input is still open.
    stdin.write_all(b"CREATE TABLE t (a INT PRIMARY KEY);\nSELECT * FROM t;\n").unwrap();
    stdin.flush().unwrap();
    let wait = |what: &str| loop {
        let line =
            rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("no `{what}` before stdin closed"));
        if line.contains(what) {
            break;
        }
    };
    wait("(0 rows)");
    stdin.write_all(b"INSERT INTO t VALUES (7);\nSELECT * FROM t;\n").unwrap();
    stdin.flush().unwrap();
    wait("(1 row)");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_closed_pipe_ends_the_session_quietly_with_committed_work_kept() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let out = sql(&image, &[], "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(20));\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // No other test starts a process until this one's end of the output pipe is closed.
    let one_at_a_time = spawning();
    let mut child = Command::new(env!("CARGO_BIN_EXE_deltaflash"))
        .args(["sql", "--image"])
        .arg(&image)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin.write_all(b"INSERT INTO t VALUES (1, 'kept');\n").unwrap();
    stdin.flush().unwrap();
    // `| head -1`: read one line, then close the pipe.
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "1 row inserted\n");
    drop(stdout);
    drop(one_at_a_time);
    // The next output fails on the closed pipe; the rest of the input is not run.
    let _ = stdin.write_all(b"SELECT * FROM t;\nINSERT INTO t VALUES (2, 'never');\n");
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status.code());
    assert!(!stderr.contains("panicked") && !stderr.contains("error"), "{stderr}");
    assert_eq!(ids(&image), "1");
}

#[test]
fn a_long_literal_is_cut_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let big = "x".repeat(1 << 20);
    let input = format!(
        "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(10));\nINSERT INTO t VALUES (1, '{big}');\n\
         INSERT INTO t VALUES (2, '{big}' extra);\nSELECT * FROM t WHERE a = 1 {big};\n"
    );
    let out = sql(&image, &[], &input);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.len() < 1000, "{} bytes of error", stderr.len());
    assert_eq!(stderr.matches(&format!("{}…", "x".repeat(40))).count(), 2, "{stderr}");
    assert!(stderr.contains("error at line 2, column 1: "), "{stderr}");
    // Positions count characters across the 1 MB literal.
    assert!(stderr.contains("error at line 3, column 1048605: expected `)` (at `extra`)"), "{stderr}");
    assert!(stderr.contains("error at line 4, column 29: expected `;` after the statement (at `xxx"), "{stderr}");
}

#[test]
fn number_literals_are_checked_as_typed() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let input = "CREATE TABLE t (a BIGINT PRIMARY KEY, f FLOAT);\nINSERT INTO t VALUES (99999999999999999999, 1);\nINSERT INTO t VALUES (1, 1e999);\nINSERT INTO t VALUES (2, inf);\n\
        INSERT INTO t VALUES (3, 1.5e308);\nUPDATE t SET f = f + 1.5e308 WHERE a = 3;\n";
    let stderr = text(&sql(&image, &[], input).stderr);
    assert!(stderr.contains("integer 99999999999999999999 is out of range for BIGINT"), "{stderr}");
    assert!(stderr.contains("`1e999` is not a finite number"), "{stderr}");
    assert!(stderr.contains("error at line 4, column 26: expected a value"), "{stderr}");
    assert!(stderr.contains("error at line 6, column 1: cannot add"), "{stderr}");
}

#[test]
fn a_device_with_8k_flash_pages_gets_8k_db_pages() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let out = spawn(
        Command::new(env!("CARGO_BIN_EXE_deltaflash"))
            .args(["sql", "--device", "openssd-mlc", "--blocks-per-chip", "64", "--image"])
            .arg(&image)
            .args(["-c", "CREATE TABLE t (a INT PRIMARY KEY); INSERT INTO t VALUES (3); SELECT * FROM t"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .wait_with_output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("8192-byte DB pages"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(1 row)"));
}

/// Splits `text` fed in chunks cut at `cuts` (char indices).
fn split_in_chunks(text: &str, cuts: &[usize]) -> Vec<Piece> {
    let chars: Vec<char> = text.chars().collect();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    bounds.extend([0, chars.len()]);
    bounds.sort_unstable();
    let mut splitter = Splitter::new();
    let mut pieces = Vec::new();
    for w in bounds.windows(2) {
        let chunk: String = chars[w[0]..w[1]].iter().collect();
        pieces.extend(splitter.push(&chunk));
    }
    pieces.extend(splitter.finish());
    pieces
}

proptest::proptest! {
    /// Arbitrary input, in arbitrary chunks, through the splitter and the parser: never
    /// a panic; the same pieces however the input is chunked; every error positioned
    /// inside the input.
    #[test]
    fn fuzz_shell_input(
        text in "(\\PC|[;'\\-\\n ]){0,200}",
        statement in "(SELECT \\* FROM t WHERE a = |INSERT INTO t VALUES \\(|'[a-z;-]{0,4}'|-- c;\\n|1|;|\\n| ){0,12}",
        cuts in proptest::collection::vec(0usize..400, 0..6),
    ) {
        for input in [text.as_str(), statement.as_str()] {
            let whole = split_in_chunks(input, &[]);
            proptest::prop_assert_eq!(&split_in_chunks(input, &cuts), &whole);
            let lines = input.split('\n').count();
            for piece in whole {
                proptest::prop_assert!(!piece.text.is_empty());
                if let Err(engine::Error::Parse { line, column, .. }) = parse_at(&piece.text, piece.line, piece.column) {
                    proptest::prop_assert!(line >= piece.line && line <= lines + 1 && column >= 1);
                }
            }
        }
    }
}

/// The bank transfer of the report, as a script: the duplicate key inside BEGIN …
/// COMMIT fails the transaction, the statements after it are refused and COMMIT says
/// nothing was committed, so the total stays 200; the exit status is 1. (The rest of
/// the transaction ran in autocommit: 210.)
const TRANSFER: &str = "CREATE TABLE acct (id INT PRIMARY KEY, bal INT NOT NULL);\n\
    CREATE TABLE audit (id INT PRIMARY KEY);\n\
    INSERT INTO acct VALUES (1, 100), (2, 100);\n\
    INSERT INTO audit VALUES (7);\n\
    BEGIN;\n\
    UPDATE acct SET bal = bal - 10 WHERE id = 1;\n\
    INSERT INTO audit VALUES (7);\n\
    UPDATE acct SET bal = bal + 10 WHERE id = 2;\n\
    COMMIT;\n";

/// The balances in table acct, read back through a fresh session.
fn balances(image: &Path) -> String {
    let out = sql(image, &["--mode", "csv", "-c", "SELECT bal FROM acct"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().skip(1).collect::<Vec<_>>().join(",")
}

#[test]
fn an_error_inside_a_transaction_commits_none_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let out = sql(&image, &[], TRANSFER);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error at line 7, column 1: audit_pkey: duplicate key (7)"), "{stderr}");
    assert!(stderr.contains("error at line 8, column 1: current transaction is aborted"), "{stderr}");
    assert!(stderr.contains("error at line 9, column 1: transaction"), "{stderr}");
    assert!(stderr.contains("nothing of it was committed"), "{stderr}");
    assert_eq!(balances(&image), "100,100");
    // ROLLBACK ends the failed transaction; the session goes on.
    let input = "BEGIN;\nUPDATE acct SET bal = bal - 10 WHERE id = 1;\nINSERT INTO audit VALUES (7);\n\
                 UPDATE acct SET bal = bal + 10 WHERE id = 2;\nROLLBACK;\nUPDATE acct SET bal = 101 WHERE id = 1;\n";
    let out = sql(&image, &[], input);
    assert_eq!(text(&out.stderr).matches("error at").count(), 2, "{}", text(&out.stderr));
    assert_eq!(balances(&image), "101,100");
}

#[test]
fn bail_inside_a_transaction_commits_none_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let out = sql(&image, &["--bail"], TRANSFER);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("line 7") && !stderr.contains("line 8"), "{stderr}");
    assert_eq!(balances(&image), "100,100");
}

#[test]
fn a_statement_that_does_not_parse_fails_its_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let input = "CREATE TABLE t (a INT PRIMARY KEY);\nBEGIN;\nINSERT INTO t VALUES (1);\nINSRT INTO t VALUES (2);\n\
                 INSERT INTO t VALUES (3);\nCOMMIT;\nINSERT INTO t VALUES (4);\n";
    let out = sql(&image, &[], input);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error at line 4, column 1: expected a statement"), "{stderr}");
    assert!(stderr.contains("error at line 5, column 1: current transaction is aborted"), "{stderr}");
    assert_eq!(ids(&image), "4");
}

/// A failed DROP INDEX of a primary key's index: the key keeps holding and the schema
/// stays true. (DROP INDEX t_pkey was accepted; duplicate keys went in.)
#[test]
fn the_primary_key_index_cannot_be_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let input = "CREATE TABLE t (a INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\nDROP INDEX t_pkey;\n\
                 INSERT INTO t VALUES (1);\n.schema\n";
    let out = sql(&image, &[], input);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error at line 3, column 1: index t_pkey backs the PRIMARY KEY of table t"), "{stderr}");
    assert!(stderr.contains("error at line 4, column 1: t_pkey: duplicate key (1)"), "{stderr}");
    assert!(text(&out.stdout).contains("PRIMARY KEY (a)"), "{}", text(&out.stdout));
    assert_eq!(ids(&image), "1");
}

/// A DDL statement that fails on the catalog's size leaves the session working: later
/// DDL runs and the end-of-session save succeeds. (Every later DDL and the save
/// failed.) A name too long for the catalog is refused, and `.tables` works after.
#[test]
fn a_failed_ddl_statement_does_not_poison_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let columns: Vec<String> = (0..6000).map(|i| format!("c{i:05}_{} INT", "n".repeat(56))).collect();
    let long_name = "n".repeat(65_536);
    let input = format!(
        "CREATE TABLE big ({});\nCREATE TABLE {long_name} (a INT);\nCREATE TABLE t (a INT PRIMARY KEY);\n\
         INSERT INTO t VALUES (1);\n.tables\n",
        columns.join(", ")
    );
    let out = sql(&image, &[], &input);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error at line 1, column 1: the catalog would need"), "{stderr:.500}");
    assert!(
        stderr.contains("error at line 2, column 14: a name of 65536 characters is longer than the 64 allowed"),
        "{stderr:.500}"
    );
    assert_eq!(stderr.matches("error at").count(), 2, "{stderr:.500}");
    assert!(text(&out.stdout).contains("t_pkey"), "{}", text(&out.stdout));
    assert_eq!(ids(&image), "1");
}

/// A file saved with a UTF-8 byte order mark runs: a statement or a dot command may
/// come first. (The BOM was an "unexpected character".) Floats take exponent notation.
#[test]
fn a_byte_order_mark_at_the_start_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("db.img");
    let input = "\u{feff}CREATE TABLE t (a INT PRIMARY KEY, f FLOAT);\nINSERT INTO t VALUES (1, 1.5e-3);\n";
    let out = sql(&image, &[], input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = sql(&image, &[], "\u{feff}.tables\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = sql(&image, &["--mode", "csv", "-c", "SELECT * FROM t"], "");
    assert_eq!(text(&out.stdout), "a,f\n1,0.0015\n");
}
