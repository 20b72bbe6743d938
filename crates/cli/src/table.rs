//! Aligned plain-text tables.

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

/// Writes rows with columns padded to their widest cell; numbers right-aligned.
pub fn write_table(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    let columns = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.0.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .0
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                let numeric = c > 0 && cell.chars().next().is_some_and(|ch| ch.is_ascii_digit() || ch == '-');
                if numeric {
                    format!("{cell:>w$}", w = widths[c])
                } else {
                    format!("{cell:<w$}", w = widths[c])
                }
            })
            .collect();
        writeln!(out, "  {}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

/// [`write_table`] to standard output. A reader that went away (`… | head`) ends the
/// output, not the command: its work and files are unaffected.
pub fn print_table(rows: &[Row]) {
    let _ = write_table(&mut io::stdout().lock(), rows);
}
