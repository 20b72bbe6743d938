//! The statement language: regions, tablespaces, tables and indexes (IPA demo paper
//! DDL) and simple DML. [`parse`] turns text into [`Statement`]s; an error names the
//! line, the column and the offending token. [`Splitter`] cuts a stream of text into
//! statements as it arrives (a shell runs each as soon as its `;` is read), with the
//! lexer's rules for string literals and `--` comments, so the two never disagree on
//! where a statement ends. Positions count characters, 1-based, across the whole input.
//!
//! ```text
//! CREATE REGION name (MAX_SIZE=32G, MAX_CHIPS=4, MAX_CHANNELS=2, IPA_MODE=pSLC, IPA=2x4, V=12, OVER_PROVISIONING=0.1, GC=BACKGROUND)
//! CREATE TABLESPACE name (REGION=name, EXTENT SIZE 128K)
//! CREATE TABLE name (col type [NOT NULL] [PRIMARY KEY], …, [PRIMARY KEY (cols)]) [TABLESPACE name]
//!     types: INT, BIGINT, DECIMAL(p,s), FLOAT, CHAR(n), VARCHAR(n)
//! CREATE [UNIQUE] INDEX name ON table (cols) [TABLESPACE name]
//! DROP TABLE name | DROP INDEX name
//! INSERT INTO t [(cols)] VALUES (…), (…)
//! SELECT * | cols FROM t [WHERE cond [AND cond]…]      cond: col = v | col BETWEEN v AND v
//! UPDATE t SET col = v | col = col ± v, … [WHERE …]
//! DELETE FROM t [WHERE …]
//! BEGIN | COMMIT | ROLLBACK
//!     names: at most 64 characters; numbers: 42, -12.50 (DECIMAL), 1.5e-3 (FLOAT)
//! ```
//!
//! A UTF-8 byte order mark at the start of the input is skipped.

use crate::delta::IpaScheme;
use crate::error::{Error, Result};
use crate::types::{ColumnType, Value};
use flash::IpaMode;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// Identifier, keyword, or number-like word (`128K`, `2x4`, `12.5`).
    Word(String),
    Str(String),
    Sym(char),
    End,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
    column: usize,
}

pub use crate::error::{shorten, ECHO_CHARS};

/// Most characters of a name (region, tablespace, table, index, column): the catalog
/// and every listing hold names, not essays.
pub const NAME_CHARS: usize = 64;

/// `message` with each space-separated word cut to [`ECHO_CHARS`] characters (a
/// message that quotes what was typed).
fn shorten_words(message: &str) -> String {
    message.split(' ').map(shorten).collect::<Vec<_>>().join(" ")
}

/// A parse error at `line`, `column`, at `token` (as [`Token::text`] shows it, cut);
/// the words of the message are cut to [`ECHO_CHARS`] characters.
fn parse_error(line: usize, column: usize, token: String, message: &str) -> Error {
    Error::Parse { line, column, token, message: shorten_words(message) }
}

/// Checks a new object's name: at most [`NAME_CHARS`] characters.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    let chars = name.chars().count();
    if chars > NAME_CHARS {
        return Err(format!("a name of {chars} characters is longer than the {NAME_CHARS} allowed"));
    }
    Ok(())
}

/// A UTF-8 byte order mark, skipped at the start of the input.
const BOM: char = '\u{feff}';

impl Token {
    fn text(&self) -> String {
        match &self.tok {
            Tok::Word(w) => shorten(w),
            Tok::Str(s) => format!("'{}'", shorten(s)),
            Tok::Sym(c) => c.to_string(),
            Tok::End => "end of input".into(),
        }
    }
}

/// Tokens of `text`, whose first character is at `line`, `column`.
fn lex(text: &str, line: usize, column: usize) -> Result<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut col) = (0, line, column);
    let mut out = Vec::new();
    let advance = |i: &mut usize, line: &mut usize, col: &mut usize, c: char| {
        *i += 1;
        if c == '\n' {
            *line += 1;
            *col = 1;
        } else {
            *col += 1;
        }
    };
    if (line, column) == (1, 1) && chars.first() == Some(&BOM) {
        i += 1;
    }
    while i < chars.len() {
        let c = chars[i];
        let (l, cl) = (line, col);
        if c.is_whitespace() {
            advance(&mut i, &mut line, &mut col, c);
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                let ch = chars[i];
                advance(&mut i, &mut line, &mut col, ch);
            }
        } else if c.is_alphanumeric() || c == '_' {
            let mut w = String::new();
            let numeric = c.is_ascii_digit();
            while i < chars.len()
                && (chars[i].is_alphanumeric()
                    || chars[i] == '_'
                    || (numeric && chars[i] == '.')
                    || (numeric && exponent_sign(&w, chars[i], chars.get(i + 1))))
            {
                w.push(chars[i]);
                let ch = chars[i];
                advance(&mut i, &mut line, &mut col, ch);
            }
            out.push(Token { tok: Tok::Word(w), line: l, column: cl });
        } else if c == '\'' {
            let mut s = String::new();
            advance(&mut i, &mut line, &mut col, c);
            loop {
                match chars.get(i) {
                    None => return Err(parse_error(l, cl, "'".into(), "string literal is not closed")),
                    Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                        s.push('\'');
                        advance(&mut i, &mut line, &mut col, '\'');
                        advance(&mut i, &mut line, &mut col, '\'');
                    }
                    Some('\'') => {
                        advance(&mut i, &mut line, &mut col, '\'');
                        break;
                    }
                    Some(&ch) => {
                        s.push(ch);
                        advance(&mut i, &mut line, &mut col, ch);
                    }
                }
            }
            out.push(Token { tok: Tok::Str(s), line: l, column: cl });
        } else if "(),;=*-+.<>!".contains(c) {
            out.push(Token { tok: Tok::Sym(c), line: l, column: cl });
            advance(&mut i, &mut line, &mut col, c);
        } else {
            return Err(parse_error(l, cl, c.to_string(), "unexpected character"));
        }
    }
    out.push(Token { tok: Tok::End, line, column: col });
    Ok(out)
}

/// Whether `c` is the sign of a number's exponent: `w` so far is digits (with a `.`)
/// ending in `e` or `E`, and a digit follows (`1.5e-3`, `2E+8`).
fn exponent_sign(w: &str, c: char, next: Option<&char>) -> bool {
    let Some(mantissa) = w.strip_suffix(['e', 'E']) else { return false };
    (c == '-' || c == '+')
        && next.is_some_and(char::is_ascii_digit)
        && !mantissa.is_empty()
        && mantissa.chars().all(|ch| ch.is_ascii_digit() || ch == '.')
}

/// `CREATE REGION` options.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionOptions {
    pub max_size_bytes: Option<u64>,
    pub max_chips: Option<u32>,
    pub max_channels: Option<u32>,
    pub ipa_mode: Option<IpaMode>,
    pub scheme: Option<(u8, u8)>,
    pub v: Option<u8>,
    pub over_provisioning: Option<f64>,
    /// `GC=FOREGROUND`: a chip collects only once its free blocks reach the foreground
    /// threshold, in the path of the host write that needs a block (which waits for it);
    /// `GC=BACKGROUND` (the default) also collects after host writes below the
    /// background threshold.
    pub foreground_gc: Option<bool>,
}

impl RegionOptions {
    /// The [N×M] scheme with V (default [`IpaScheme::DEFAULT_V`]); [0×0] without IPA.
    pub fn ipa_scheme(&self) -> std::result::Result<IpaScheme, String> {
        let (n, m) = self.scheme.unwrap_or((0, 0));
        IpaScheme::new(n, m, self.v.unwrap_or(IpaScheme::DEFAULT_V))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: ColumnType,
    pub not_null: bool,
    pub primary_key: bool,
}

/// A WHERE condition; conditions are ANDed.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    Eq(String, Value),
    Between(String, Value, Value),
}

/// The right side of `SET col = …`.
#[derive(Clone, Debug, PartialEq)]
pub enum SetExpr {
    Value(Value),
    /// `col = other ± n`, with the sign folded into the value.
    Add(String, Value),
}

/// What `ALTER TABLE|INDEX` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    Table,
    Index,
}

/// What `ALTER TABLE|INDEX name SET …` changes.
#[derive(Clone, Debug, PartialEq)]
pub enum AlterChange {
    /// `SET IPA = NxM [V = v] [MODE m]`: the object's [N×M] scheme; the mode, if named,
    /// must be its region's.
    Ipa { scheme: IpaScheme, mode: Option<IpaMode> },
    /// `SET TABLESPACE t`: move the object to another tablespace (and region).
    Tablespace(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    CreateRegion { name: String, options: RegionOptions },
    CreateTablespace { name: String, region: String, extent_bytes: Option<u64> },
    CreateTable { name: String, columns: Vec<ColumnDef>, primary_key: Vec<String>, tablespace: Option<String> },
    CreateIndex { name: String, unique: bool, table: String, columns: Vec<String>, tablespace: Option<String> },
    DropTable(String),
    DropIndex(String),
    Alter { kind: ObjectKind, name: String, change: AlterChange },
    Insert { table: String, columns: Option<Vec<String>>, rows: Vec<Vec<Value>> },
    Select { table: String, columns: Option<Vec<String>>, filter: Vec<Condition> },
    Update { table: String, sets: Vec<(String, SetExpr)>, filter: Vec<Condition> },
    Delete { table: String, filter: Vec<Condition> },
    Begin,
    Commit,
    Rollback,
}

/// A statement and the line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    pub line: usize,
    pub statement: Statement,
}

/// Parses `;`-separated statements.
pub fn parse(text: &str) -> Result<Vec<Located>> {
    parse_at(text, 1, 1)
}

/// Parses `;`-separated statements of a text whose first character stands at `line`,
/// `column` of a larger input, so positions in errors and [`Located`] are the input's.
pub fn parse_at(text: &str, line: usize, column: usize) -> Result<Vec<Located>> {
    let mut p = Parser { toks: lex(text, line, column)?, at: 0 };
    let mut out = Vec::new();
    loop {
        while p.eat_sym(';') {}
        if p.peek().tok == Tok::End {
            return Ok(out);
        }
        let line = p.peek().line;
        out.push(Located { line, statement: p.statement()? });
        if p.peek().tok != Tok::End && !p.eat_sym(';') {
            return p.fail("expected `;` after the statement");
        }
    }
}

/// One statement cut from a stream by [`Splitter`]: its text (without the `;`) and
/// where its first character stands in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub text: String,
    pub line: usize,
    pub column: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SplitState {
    Code,
    /// Inside `'…'`; a doubled `''` closes and reopens, which splits the same way.
    Str,
    /// After a `-` that may start a `--` comment.
    Dash,
    /// Inside a `--` comment, up to the end of the line.
    Comment,
}

/// Cuts text fed in any chunks into statements at each `;` outside string literals
/// and comments. Whitespace and comments before a statement are dropped, so a
/// statement's text starts at its first token; everything after that is kept, so
/// [`parse_at`] with the piece's position reports positions in the whole input.
#[derive(Clone, Debug)]
pub struct Splitter {
    pending: String,
    state: SplitState,
    /// Position of the next character fed.
    line: usize,
    column: usize,
    /// Where `pending` starts, and where the `-` of [`SplitState::Dash`] stands.
    start: (usize, usize),
    dash: (usize, usize),
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter { pending: String::new(), state: SplitState::Code, line: 1, column: 1, start: (1, 1), dash: (1, 1) }
    }
}

impl Splitter {
    pub fn new() -> Splitter {
        Splitter::default()
    }

    /// True when no statement is under way: the next line may be a shell command.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty() && matches!(self.state, SplitState::Code | SplitState::Comment)
    }

    /// The line the next character fed will stand on.
    pub fn line(&self) -> usize {
        self.line
    }

    /// Skips a line that is not SQL (a shell command), keeping positions right.
    pub fn skip_line(&mut self) {
        self.line += 1;
        self.column = 1;
    }

    /// Drops the statement under way (a shell's Ctrl-C); positions go on counting.
    pub fn discard(&mut self) {
        self.pending.clear();
        self.state = SplitState::Code;
    }

    /// Feeds `text`; returns the statements it completes, in order.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        for c in text.chars() {
            if c == BOM && (self.line, self.column) == (1, 1) {
                continue;
            }
            let here = (self.line, self.column);
            match self.state {
                SplitState::Str => {
                    self.pending.push(c);
                    if c == '\'' {
                        self.state = SplitState::Code;
                    }
                }
                SplitState::Comment => {
                    if !self.pending.is_empty() {
                        self.pending.push(c);
                    }
                    if c == '\n' {
                        self.state = SplitState::Code;
                    }
                }
                SplitState::Dash if c == '-' => {
                    if !self.pending.is_empty() {
                        self.pending.push_str("--");
                    }
                    self.state = SplitState::Comment;
                }
                SplitState::Dash => {
                    self.keep('-', self.dash);
                    self.state = SplitState::Code;
                    self.code(c, here, &mut out);
                }
                SplitState::Code => self.code(c, here, &mut out),
            }
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        out
    }

    /// The statement left at the end of the input (one without a closing `;`).
    pub fn finish(&mut self) -> Option<Piece> {
        if self.state == SplitState::Dash {
            self.keep('-', self.dash);
        }
        self.state = SplitState::Code;
        self.take()
    }

    fn keep(&mut self, c: char, at: (usize, usize)) {
        if self.pending.is_empty() {
            self.start = at;
        }
        self.pending.push(c);
    }

    fn take(&mut self) -> Option<Piece> {
        if self.pending.is_empty() {
            return None;
        }
        let (line, column) = self.start;
        Some(Piece { text: std::mem::take(&mut self.pending), line, column })
    }

    fn code(&mut self, c: char, here: (usize, usize), out: &mut Vec<Piece>) {
        match c {
            ';' => out.extend(self.take()),
            '-' => {
                self.dash = here;
                self.state = SplitState::Dash;
            }
            c if c.is_whitespace() && self.pending.is_empty() => {}
            c => {
                self.keep(c, here);
                if c == '\'' {
                    self.state = SplitState::Str;
                }
            }
        }
    }
}

struct Parser {
    toks: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        &self.toks[self.at]
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.at].clone();
        if t.tok != Tok::End {
            self.at += 1;
        }
        t
    }
    fn fail<T>(&self, message: &str) -> Result<T> {
        let t = self.peek();
        Err(parse_error(t.line, t.column, t.text(), message))
    }
    fn is_kw(&self, kw: &str) -> bool {
        matches!(&self.peek().tok, Tok::Word(w) if w.eq_ignore_ascii_case(kw))
    }
    fn eat_kw(&mut self, kw: &str) -> bool {
        let yes = self.is_kw(kw);
        if yes {
            self.bump();
        }
        yes
    }
    fn kw(&mut self, kw: &str) -> Result<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            self.fail(&format!("expected {kw}"))
        }
    }
    fn eat_sym(&mut self, c: char) -> bool {
        let yes = self.peek().tok == Tok::Sym(c);
        if yes {
            self.bump();
        }
        yes
    }
    fn sym(&mut self, c: char) -> Result<()> {
        if self.eat_sym(c) {
            Ok(())
        } else {
            self.fail(&format!("expected `{c}`"))
        }
    }
    fn ident(&mut self, what: &str) -> Result<String> {
        match &self.peek().tok {
            Tok::Word(w) if w.starts_with(|c: char| c.is_alphabetic() || c == '_') => {
                if let Err(m) = check_name(w) {
                    return self.fail(&m);
                }
                let w = w.clone();
                self.bump();
                Ok(w)
            }
            _ => self.fail(&format!("expected {what}")),
        }
    }
    fn word(&mut self, what: &str) -> Result<String> {
        match &self.peek().tok {
            Tok::Word(w) => {
                let w = w.clone();
                self.bump();
                Ok(w)
            }
            _ => self.fail(&format!("expected {what}")),
        }
    }
    /// Parses the current word with `f`; its error message is reported at the word.
    fn word_as<T>(&mut self, what: &str, f: impl FnOnce(&str) -> std::result::Result<T, String>) -> Result<T> {
        match &self.peek().tok {
            Tok::Word(w) => match f(w) {
                Ok(v) => {
                    self.bump();
                    Ok(v)
                }
                Err(m) => self.fail(&m),
            },
            _ => self.fail(&format!("expected {what}")),
        }
    }
    fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        self.sym('(')?;
        let mut out = vec![item(self)?];
        while self.eat_sym(',') {
            out.push(item(self)?);
        }
        self.sym(')')?;
        Ok(out)
    }

    fn statement(&mut self) -> Result<Statement> {
        if self.eat_kw("CREATE") {
            if self.eat_kw("REGION") {
                return self.create_region();
            }
            if self.eat_kw("TABLESPACE") {
                return self.create_tablespace();
            }
            if self.eat_kw("TABLE") {
                return self.create_table();
            }
            let unique = self.eat_kw("UNIQUE");
            if self.eat_kw("INDEX") {
                return self.create_index(unique);
            }
            return self.fail("expected REGION, TABLESPACE, TABLE, INDEX or UNIQUE INDEX after CREATE");
        }
        if self.eat_kw("DROP") {
            if self.eat_kw("TABLE") {
                return Ok(Statement::DropTable(self.ident("a table name")?));
            }
            if self.eat_kw("INDEX") {
                return Ok(Statement::DropIndex(self.ident("an index name")?));
            }
            return self.fail("expected TABLE or INDEX after DROP");
        }
        if self.eat_kw("ALTER") {
            return self.alter();
        }
        if self.eat_kw("INSERT") {
            return self.insert();
        }
        if self.eat_kw("SELECT") {
            return self.select();
        }
        if self.eat_kw("UPDATE") {
            return self.update();
        }
        if self.eat_kw("DELETE") {
            self.kw("FROM")?;
            let table = self.ident("a table name")?;
            return Ok(Statement::Delete { table, filter: self.filter()? });
        }
        for (kw, st) in [
            ("BEGIN", Statement::Begin),
            ("COMMIT", Statement::Commit),
            ("ROLLBACK", Statement::Rollback),
            ("ABORT", Statement::Rollback),
        ] {
            if self.eat_kw(kw) {
                let _ = self.eat_kw("TRANSACTION") || self.eat_kw("WORK");
                return Ok(st);
            }
        }
        self.fail(
            "expected a statement (CREATE, DROP, ALTER, INSERT, SELECT, UPDATE, DELETE, BEGIN, COMMIT or ROLLBACK)",
        )
    }

    fn create_region(&mut self) -> Result<Statement> {
        let name = self.ident("a region name")?;
        let mut o = RegionOptions::default();
        self.sym('(')?;
        loop {
            let key = self.peek().clone();
            let k = self.ident("a region option")?.to_ascii_uppercase();
            self.sym('=')?;
            match k.as_str() {
                "MAX_SIZE" => o.max_size_bytes = Some(self.word_as("a size", parse_size)?),
                "MAX_CHIPS" => o.max_chips = Some(self.word_as("a chip count", |w| parse_int(w, "MAX_CHIPS"))?),
                "MAX_CHANNELS" => {
                    o.max_channels = Some(self.word_as("a channel count", |w| parse_int(w, "MAX_CHANNELS"))?)
                }
                "IPA_MODE" => o.ipa_mode = Some(self.ipa_mode()?),
                "IPA" => {
                    let s: IpaScheme = self.word_as("an IPA scheme NxM", |w| w.parse())?;
                    o.scheme = Some((s.n, s.m));
                }
                "V" => o.v = Some(self.word_as("a V count", |w| parse_int(w, "V"))?),
                "OVER_PROVISIONING" => {
                    o.over_provisioning = Some(self.word_as("a spare factor", |w| {
                        w.parse::<f64>().map_err(|_| format!("`{w}` is not a number"))
                    })?)
                }
                "GC" => {
                    o.foreground_gc = Some(self.word_as("FOREGROUND or BACKGROUND", |w| {
                        match w.to_ascii_uppercase().as_str() {
                            "FOREGROUND" => Ok(true),
                            "BACKGROUND" => Ok(false),
                            _ => Err(format!("unknown GC mode `{}` (expected FOREGROUND or BACKGROUND)", shorten(w))),
                        }
                    })?)
                }
                _ => {
                    return Err(parse_error(
                        key.line,
                        key.column,
                        key.text(),
                        "unknown region option (expected MAX_SIZE, MAX_CHIPS, MAX_CHANNELS, IPA_MODE, IPA, V, OVER_PROVISIONING or GC)",
                    ))
                }
            }
            if !self.eat_sym(',') {
                break;
            }
        }
        self.sym(')')?;
        Ok(Statement::CreateRegion { name, options: o })
    }

    fn alter(&mut self) -> Result<Statement> {
        let kind = if self.eat_kw("TABLE") {
            ObjectKind::Table
        } else if self.eat_kw("INDEX") {
            ObjectKind::Index
        } else {
            return self.fail("expected TABLE or INDEX after ALTER");
        };
        let name = self.ident(if kind == ObjectKind::Table { "a table name" } else { "an index name" })?;
        self.kw("SET")?;
        if self.eat_kw("TABLESPACE") {
            let _ = self.eat_sym('=');
            let ts = self.ident("a tablespace name")?;
            return Ok(Statement::Alter { kind, name, change: AlterChange::Tablespace(ts) });
        }
        if !self.eat_kw("IPA") {
            return self.fail("expected IPA = NxM or TABLESPACE name after SET");
        }
        self.sym('=')?;
        let s: IpaScheme = self.word_as("an IPA scheme NxM", |w| w.parse())?;
        let mut v = None;
        let mut mode = None;
        loop {
            let _ = self.eat_sym(',');
            if v.is_none() && self.eat_kw("V") {
                self.sym('=')?;
                v = Some(self.word_as("a V count", |w| parse_int::<u8>(w, "V"))?);
            } else if mode.is_none() && self.eat_kw("MODE") {
                let _ = self.eat_sym('=');
                mode = Some(self.ipa_mode()?);
            } else {
                break;
            }
        }
        let scheme = match v {
            Some(v) => IpaScheme::new(s.n, s.m, v).or_else(|m| self.fail(&m))?,
            None => s,
        };
        Ok(Statement::Alter { kind, name, change: AlterChange::Ipa { scheme, mode } })
    }

    /// An IPA mode: `none`, `slc`, `pslc` or `odd-mlc` (a word, a `-` and a word).
    fn ipa_mode(&mut self) -> Result<IpaMode> {
        let at = self.peek().clone();
        let mut mode = self.word("an IPA mode")?;
        if self.eat_sym('-') {
            mode = format!("{mode}-{}", self.word("an IPA mode")?);
        }
        mode.parse().map_err(|m: String| parse_error(at.line, at.column, shorten(&mode), &m))
    }

    fn create_tablespace(&mut self) -> Result<Statement> {
        let name = self.ident("a tablespace name")?;
        let (mut region, mut extent_bytes) = (None, None);
        self.sym('(')?;
        loop {
            if self.eat_kw("REGION") {
                self.sym('=')?;
                region = Some(self.ident("a region name")?);
            } else if self.eat_kw("EXTENT") {
                self.kw("SIZE")?;
                let _ = self.eat_sym('=');
                extent_bytes = Some(self.word_as("a size", parse_size)?);
            } else if self.eat_kw("EXTENT_SIZE") {
                self.sym('=')?;
                extent_bytes = Some(self.word_as("a size", parse_size)?);
            } else {
                return self.fail("expected REGION = name or EXTENT SIZE size");
            }
            if !self.eat_sym(',') {
                break;
            }
        }
        self.sym(')')?;
        let Some(region) = region else { return self.fail("a tablespace needs REGION = name") };
        Ok(Statement::CreateTablespace { name, region, extent_bytes })
    }

    fn column_type(&mut self) -> Result<ColumnType> {
        let ty = self.ident("a column type")?.to_ascii_uppercase();
        let mut args = Vec::new();
        if self.peek().tok == Tok::Sym('(') {
            args = self.list(|p| p.word_as("a number", |w| parse_int::<u16>(w, "type size")))?;
        }
        let bad = |p: &Self, m: &str| p.fail::<ColumnType>(m);
        match (ty.as_str(), args.as_slice()) {
            ("INT" | "INTEGER", []) => Ok(ColumnType::Int),
            ("BIGINT", []) => Ok(ColumnType::BigInt),
            ("FLOAT" | "DOUBLE" | "REAL", []) => Ok(ColumnType::Float),
            ("DECIMAL" | "NUMERIC", [p]) | ("DECIMAL" | "NUMERIC", [p, _]) if !(1..=18).contains(p) => {
                bad(self, "DECIMAL precision must be 1 to 18")
            }
            ("DECIMAL" | "NUMERIC", [p]) => Ok(ColumnType::Decimal { precision: *p as u8, scale: 0 }),
            ("DECIMAL" | "NUMERIC", [p, s]) if s <= p => {
                Ok(ColumnType::Decimal { precision: *p as u8, scale: *s as u8 })
            }
            ("DECIMAL" | "NUMERIC", [_, _]) => bad(self, "DECIMAL scale must not exceed its precision"),
            ("CHAR" | "VARCHAR", [n]) if *n == 0 || *n > 4000 => bad(self, "text length must be 1 to 4000"),
            ("CHAR", [n]) => Ok(ColumnType::Char(*n)),
            ("VARCHAR", [n]) => Ok(ColumnType::Varchar(*n)),
            _ => Err(parse_error(
                self.toks[self.at - 1].line,
                self.toks[self.at - 1].column,
                shorten(&ty),
                "unknown type (expected INT, BIGINT, DECIMAL(p,s), FLOAT, CHAR(n) or VARCHAR(n))",
            )),
        }
    }

    fn create_table(&mut self) -> Result<Statement> {
        let name = self.ident("a table name")?;
        let mut columns = Vec::new();
        let mut primary_key = Vec::new();
        self.sym('(')?;
        loop {
            if self.eat_kw("PRIMARY") {
                self.kw("KEY")?;
                if !primary_key.is_empty() {
                    return self.fail("the table already has a primary key");
                }
                primary_key = self.list(|p| p.ident("a column name"))?;
            } else {
                let cname = self.ident("a column name")?;
                let ty = self.column_type()?;
                let mut col = ColumnDef { name: cname, ty, not_null: false, primary_key: false };
                loop {
                    if self.eat_kw("NOT") {
                        self.kw("NULL")?;
                        col.not_null = true;
                    } else if self.eat_kw("NULL") {
                    } else if self.eat_kw("PRIMARY") {
                        self.kw("KEY")?;
                        col.primary_key = true;
                    } else {
                        break;
                    }
                }
                columns.push(col);
            }
            if !self.eat_sym(',') {
                break;
            }
        }
        self.sym(')')?;
        let tablespace = if self.eat_kw("TABLESPACE") { Some(self.ident("a tablespace name")?) } else { None };
        Ok(Statement::CreateTable { name, columns, primary_key, tablespace })
    }

    fn create_index(&mut self, unique: bool) -> Result<Statement> {
        let name = self.ident("an index name")?;
        self.kw("ON")?;
        let table = self.ident("a table name")?;
        let columns = self.list(|p| p.ident("a column name"))?;
        let tablespace = if self.eat_kw("TABLESPACE") { Some(self.ident("a tablespace name")?) } else { None };
        Ok(Statement::CreateIndex { name, unique, table, columns, tablespace })
    }

    fn literal(&mut self) -> Result<Value> {
        let negative = self.eat_sym('-');
        if !negative {
            let _ = self.eat_sym('+');
        }
        let t = self.peek().clone();
        let v = match &t.tok {
            Tok::Str(s) if !negative => Value::Text(s.clone()),
            Tok::Word(w) if w.eq_ignore_ascii_case("NULL") && !negative => Value::Null,
            Tok::Word(w) if w.starts_with(|c: char| c.is_ascii_digit()) => {
                match parse_number(&if negative { format!("-{w}") } else { w.clone() }) {
                    Ok(v) => v,
                    Err(m) => return self.fail(&m),
                }
            }
            _ => return self.fail("expected a value (number, 'text' or NULL)"),
        };
        self.bump();
        Ok(v)
    }

    fn insert(&mut self) -> Result<Statement> {
        self.kw("INTO")?;
        let table = self.ident("a table name")?;
        let columns =
            if self.peek().tok == Tok::Sym('(') { Some(self.list(|p| p.ident("a column name"))?) } else { None };
        self.kw("VALUES")?;
        let mut rows = vec![self.list(|p| p.literal())?];
        while self.eat_sym(',') {
            rows.push(self.list(|p| p.literal())?);
        }
        Ok(Statement::Insert { table, columns, rows })
    }

    fn select(&mut self) -> Result<Statement> {
        let columns = if self.eat_sym('*') {
            None
        } else {
            let mut c = vec![self.ident("a column name or *")?];
            while self.eat_sym(',') {
                c.push(self.ident("a column name")?);
            }
            Some(c)
        };
        self.kw("FROM")?;
        let table = self.ident("a table name")?;
        Ok(Statement::Select { table, columns, filter: self.filter()? })
    }

    fn update(&mut self) -> Result<Statement> {
        let table = self.ident("a table name")?;
        self.kw("SET")?;
        let mut sets = Vec::new();
        loop {
            let col = self.ident("a column name")?;
            self.sym('=')?;
            let expr = if matches!(&self.peek().tok, Tok::Word(w) if w.starts_with(|c: char| c.is_alphabetic()) && !w.eq_ignore_ascii_case("NULL"))
            {
                let other = self.ident("a column name")?;
                let sign = if self.eat_sym('+') {
                    1
                } else if self.eat_sym('-') {
                    -1
                } else {
                    return self.fail("expected `+` or `-` (SET col = col ± value)");
                };
                let v = self.literal()?;
                let v = if sign < 0 { v.negate().map_or_else(|| self.fail("value out of range"), Ok)? } else { v };
                SetExpr::Add(other, v)
            } else {
                SetExpr::Value(self.literal()?)
            };
            sets.push((col, expr));
            if !self.eat_sym(',') {
                break;
            }
        }
        Ok(Statement::Update { table, sets, filter: self.filter()? })
    }

    fn filter(&mut self) -> Result<Vec<Condition>> {
        let mut out = Vec::new();
        if !self.eat_kw("WHERE") {
            return Ok(out);
        }
        loop {
            let col = self.ident("a column name")?;
            if self.eat_sym('=') {
                out.push(Condition::Eq(col, self.literal()?));
            } else if self.eat_kw("BETWEEN") {
                let lo = self.literal()?;
                self.kw("AND")?;
                out.push(Condition::Between(col, lo, self.literal()?));
            } else {
                return self.fail("expected `=` or BETWEEN");
            }
            if !self.eat_kw("AND") {
                return Ok(out);
            }
        }
    }
}

fn parse_int<T: std::str::FromStr>(w: &str, what: &str) -> std::result::Result<T, String> {
    w.parse().map_err(|_| format!("`{w}` is not a valid {what} (a whole number in range)"))
}

/// `128K`, `32G`, `4096`: binary units K, M, G, T (an optional trailing B).
pub fn parse_size(w: &str) -> std::result::Result<u64, String> {
    let upper = w.to_ascii_uppercase();
    let digits = upper.trim_end_matches('B');
    let (num, shift) = match digits.chars().last() {
        Some('K') => (&digits[..digits.len() - 1], 10),
        Some('M') => (&digits[..digits.len() - 1], 20),
        Some('G') => (&digits[..digits.len() - 1], 30),
        Some('T') => (&digits[..digits.len() - 1], 40),
        _ => (digits, 0),
    };
    let n: u64 = num.parse().map_err(|_| format!("`{w}` is not a size (e.g. 128K, 32G)"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("size `{w}` is too large"))
}

/// A numeric literal, its sign included: an integer, an exact decimal of at most 18
/// digits, or a finite float. An integer outside BIGINT is an error that shows the
/// number as typed (not a float approximation of it).
fn parse_number(w: &str) -> std::result::Result<Value, String> {
    if let Ok(i) = w.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    let digits = w.strip_prefix('-').unwrap_or(w);
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("integer {} is out of range for BIGINT ({} to {})", shorten(w), i64::MIN, i64::MAX));
    }
    if let Some((int, frac)) = digits.split_once('.') {
        if !int.is_empty()
            && !frac.is_empty()
            && frac.len() <= 18
            && (int.to_owned() + frac).bytes().all(|b| b.is_ascii_digit())
        {
            if let Ok(scaled) = format!("{int}{frac}").parse::<i64>() {
                let scaled = if digits.len() < w.len() { -scaled } else { scaled };
                return Ok(Value::Decimal { scaled, scale: frac.len() as u8 });
            }
        }
    }
    match w.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(Value::Float(f)),
        Ok(_) => Err(format!("`{}` is not a finite number (FLOAT holds about ±1.8e308)", shorten(w))),
        Err(_) => Err(format!("`{}` is not a number", shorten(w))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> (usize, usize, String, String) {
        match parse(text).unwrap_err() {
            Error::Parse { line, column, token, message } => (line, column, token, message),
            e => panic!("not a parse error: {e}"),
        }
    }

    #[test]
    fn the_demo_paper_ddl_parses() {
        let s = parse(
            "CREATE REGION rgIPA (MAX_SIZE=32G, MAX_CHIPS=4, MAX_CHANNELS=2, IPA_MODE=odd-MLC, IPA=2x4, V=6);\n\
             CREATE TABLESPACE tsIPA (REGION=rgIPA, EXTENT SIZE 128K);\n\
             CREATE TABLE T (t_id INT PRIMARY KEY, amount DECIMAL(12,2) NOT NULL, name VARCHAR(20)) TABLESPACE tsIPA;\n\
             CREATE UNIQUE INDEX I ON T(t_id) TABLESPACE tsIPA; -- comment\n",
        )
        .unwrap();
        assert_eq!(s.len(), 4);
        let Statement::CreateRegion { options, .. } = &s[0].statement else { panic!() };
        assert_eq!(options.max_size_bytes, Some(32 << 30));
        assert_eq!(options.ipa_mode, Some(IpaMode::OddMlc));
        assert_eq!(options.ipa_scheme().unwrap(), IpaScheme::new(2, 4, 6).unwrap());
        assert!(matches!(&s[1].statement, Statement::CreateTablespace { extent_bytes: Some(131072), .. }));
        assert_eq!(s[3].line, 4);
    }

    #[test]
    fn dml_parses() {
        let s = parse("UPDATE t SET a = a - 5, b = 'x' WHERE k = 3 AND j BETWEEN -1 AND 2.50").unwrap();
        let Statement::Update { sets, filter, .. } = &s[0].statement else { panic!() };
        assert_eq!(sets[0], ("a".into(), SetExpr::Add("a".into(), Value::Int(-5))));
        assert_eq!(filter[1], Condition::Between("j".into(), Value::Int(-1), Value::Decimal { scaled: 250, scale: 2 }));
    }

    #[test]
    fn errors_name_line_column_and_token() {
        assert_eq!(err("CREATE TABLE t (a INT,\n  b TEXT)").0, 2);
        let (line, col, token, msg) = err("CREATE TABLE t (a INT,\n  b TEXT)");
        assert_eq!((line, col, token.as_str()), (2, 5, "TEXT"));
        assert!(msg.contains("unknown type"), "{msg}");
        let (_, col, token, msg) = err("CREATE REGION r (MAX_CHIPS=4, SPEED=9)");
        assert_eq!((col, token.as_str()), (31, "SPEED"));
        assert!(msg.contains("unknown region option"));
        assert_eq!(err("CREATE REGION r (IPA=2y4)").2, "2y4");
        assert_eq!(err("CREATE REGION r (IPA_MODE=tlc)").2, "tlc");
        assert_eq!(err("SELECT * FROM t WHERE a > 3").2, ">");
        assert_eq!(err("INSERT INTO t VALUES (1, 'abc)").3, "string literal is not closed");
        assert_eq!(err("CREATE TABLESPACE ts (EXTENT SIZE 12Q)").2, "12Q");
        assert!(err("SELEKT 1").3.contains("expected a statement"));
        assert!(err("SELECT * FROM t extra").3.contains("`;`"));
        assert_eq!(err("CREATE TABLE t (a DECIMAL(20,2))").3, "DECIMAL precision must be 1 to 18");
    }

    proptest::proptest! {
        /// Fuzz pass over the statement parser: arbitrary text, and mangled valid
        /// statements, parse or give a positioned error, never a panic.
        #[test]
        fn fuzz_sql_parser(text in "\\PC{0,120}", cut in 0usize..400, junk in "[(),;=*'a-z0-9 -]{0,6}") {
            let _ = parse(&text);
            let valid = "CREATE REGION r (MAX_SIZE=1G, IPA_MODE=odd-MLC, IPA=2x3); CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(9)); \
                         UPDATE t SET b = 'x', a = a - 1 WHERE a BETWEEN 1 AND 2";
            let at = (0..=cut.min(valid.len())).rev().find(|&i| valid.is_char_boundary(i)).unwrap();
            let mangled = format!("{}{junk}{}", &valid[..at], &valid[at..]);
            if let Err(Error::Parse { line, column, .. }) = parse(&mangled) {
                proptest::prop_assert!(line >= 1 && column >= 1);
            }
        }
    }

    #[test]
    fn numbers_out_of_range_show_what_was_typed() {
        let (_, col, _, msg) = err("INSERT INTO t VALUES (1, 99999999999999999999)");
        assert_eq!(col, 26);
        assert!(msg.contains("integer 99999999999999999999 is out of range for BIGINT"), "{msg}");
        assert!(err("INSERT INTO t VALUES (-99999999999999999999)").3.contains("-99999999999999999999"));
        let min = parse("INSERT INTO t VALUES (-9223372036854775808, -12.50)").unwrap();
        let Statement::Insert { rows, .. } = &min[0].statement else { panic!() };
        assert_eq!(rows[0], vec![Value::Int(i64::MIN), Value::Decimal { scaled: -1250, scale: 2 }]);
        assert!(err("INSERT INTO t VALUES (1e400)").3.contains("not a finite number"));
        assert!(err("INSERT INTO t VALUES (inf)").3.contains("expected a value"));
        assert!(err("INSERT INTO t VALUES (nan)").3.contains("expected a value"));
    }

    #[test]
    fn long_tokens_are_cut_in_errors() {
        let long = "x".repeat(1 << 20);
        let text = format!("INSERT INTO t VALUES ('{long}') junk");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.len() < 200, "{} bytes", e.len());
        let text = format!("SELECT * FROM t WHERE a = '{long}' {long}");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains(&format!("{}…", "x".repeat(ECHO_CHARS))) && e.len() < 200, "{e:.300}");
    }

    #[test]
    fn parse_at_reports_positions_in_the_whole_input() {
        let (line, col, ..) = match parse_at("SELECT * FROM t WHERE a > 1", 7, 5).unwrap_err() {
            Error::Parse { line, column, token, message } => (line, column, token, message),
            e => panic!("{e}"),
        };
        assert_eq!((line, col), (7, 29));
        let (line, col, ..) = match parse_at("SELECT *\nFROM t WHERE a > 1", 7, 5).unwrap_err() {
            Error::Parse { line, column, token, message } => (line, column, token, message),
            e => panic!("{e}"),
        };
        assert_eq!((line, col), (8, 16));
    }

    fn split_all(chunks: &[&str]) -> Vec<Piece> {
        let mut s = Splitter::new();
        let mut out: Vec<Piece> = chunks.iter().flat_map(|c| s.push(c)).collect();
        out.extend(s.finish());
        out
    }

    #[test]
    fn the_splitter_respects_strings_and_comments() {
        let text = "  SELECT 1;\n-- a; comment\nINSERT INTO t VALUES ('a;b', 'it''s;');  x - 1 -- c;\n;SELECT\n 2";
        let pieces = split_all(&[text]);
        let texts: Vec<&str> = pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["SELECT 1", "INSERT INTO t VALUES ('a;b', 'it''s;')", "x - 1 -- c;\n", "SELECT\n 2"]);
        let at: Vec<(usize, usize)> = pieces.iter().map(|p| (p.line, p.column)).collect();
        assert_eq!(at, [(1, 3), (3, 1), (3, 42), (4, 2)]);
        // The same text fed one character at a time splits the same way.
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let one_by_one = split_all(&chars.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(one_by_one, pieces);
        // A comment before a statement is dropped; a lone `-` at the end is kept.
        assert_eq!(split_all(&["-- only a comment\n"]), vec![]);
        assert_eq!(split_all(&["-"])[0].text, "-");
    }

    #[test]
    fn the_splitter_is_idle_between_statements_only() {
        let mut s = Splitter::new();
        assert!(s.is_idle());
        s.push("SELECT *\n");
        assert!(!s.is_idle());
        assert_eq!(s.push("FROM t; -- done\n").len(), 1);
        assert!(s.is_idle());
        s.push("INSERT INTO t VALUES ('multi\n");
        assert!(!s.is_idle());
        s.skip_line();
        assert_eq!(s.line(), 5);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("128K"), Ok(128 << 10));
        assert_eq!(parse_size("2GB"), Ok(2 << 30));
        assert!(parse_size("K").is_err());
    }
}
