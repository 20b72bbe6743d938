//! Aligned plain-text tables. A cell longer than [`MAX_CELL_CHARS`] is cut there and
//! marked with its full length (the shells' csv and json modes show it whole), so one
//! long value neither floods the terminal nor breaks the alignment of the others.

use std::borrow::Cow;
use std::fmt::Display;
use std::io::{self, Write};

pub struct Row(Vec<String>);

impl Row {
    pub fn new(cells: Vec<String>) -> Self {
        Row(cells)
    }

    pub fn kv(key: &str, value: impl Display) -> Self {
        Row(vec![key.to_string(), value.to_string()])
    }
}

/// Characters of a cell a table shows; the rest is replaced by a marker.
pub const MAX_CELL_CHARS: usize = 1000;

/// `cell` as a table shows it: whole, or its first [`MAX_CELL_CHARS`] characters and
/// a marker with its length.
fn shown(cell: &str) -> Cow<'_, str> {
    match cell.char_indices().nth(MAX_CELL_CHARS) {
        None => Cow::Borrowed(cell),
        Some((cut, _)) => {
            let total = cell.chars().count();
            Cow::Owned(format!("{}… [{total} characters; .mode csv or json shows all]", &cell[..cut]))
        }
    }
}

/// Writes rows with columns padded to their widest cell; numbers right-aligned.
pub fn write_table(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    let shown_rows: Vec<Vec<Cow<str>>> = rows.iter().map(|r| r.0.iter().map(|c| shown(c)).collect()).collect();
    let columns = shown_rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| shown_rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    for row in &shown_rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            // Padding by hand: `format!`'s width stops at 65,535.
            let pad = " ".repeat(widths[c] - cell.chars().count());
            let numeric = c > 0 && cell.chars().next().is_some_and(|ch| ch.is_ascii_digit() || ch == '-');
            line.push_str("  ");
            if numeric {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// [`write_table`] to standard output. A reader that went away (`… | head`) ends the
/// output, not the command: its work and files are unaffected.
pub fn print_table(rows: &[Row]) {
    let _ = write_table(&mut io::stdout().lock(), rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[Row]) -> String {
        let mut out = Vec::new();
        write_table(&mut out, rows).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn columns_are_aligned_and_numbers_right_aligned() {
        let text = table(&[Row::kv("a", 5), Row::kv("longer", 12345), Row::kv("b", "x")]);
        assert_eq!(text, "  a           5\n  longer  12345\n  b       x\n");
    }

    #[test]
    fn a_cell_of_any_length_is_cut_with_a_marker() {
        for len in [MAX_CELL_CHARS, 65_536, 80_000] {
            let long = "é".repeat(len);
            let text = table(&[Row::new(vec![long.clone(), "1".into()]), Row::kv("k", long.clone())]);
            let first = text.lines().next().unwrap();
            if len == MAX_CELL_CHARS {
                assert!(!text.contains('…'), "a cell at the limit is shown whole");
            } else {
                assert!(first.contains(&format!("… [{len} characters")));
                // Two cut cells (the second padded to the first's width) and separators.
                assert!(first.chars().count() < 2 * (MAX_CELL_CHARS + 100), "{}", first.chars().count());
            }
        }
    }
}
