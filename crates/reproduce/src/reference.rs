//! The papers' values: `reference.toml`, read here and only here (the comparison); no
//! model constant is derived from it.
//!
//! The file is a list of `[[table]]`s, one per experiment: its id, where in the paper's
//! text the numbers stand (`source`), a default unit, and its `cells` (row, column,
//! value, and a unit where it differs). Units: `change %` (a relative effect against
//! the scheme without IPA), `share %`, `times` and `ratio` (factors), `per host write`
//! and `% of database` (rates), `count`, `tps`, `ms` and `min` (magnitudes); any other
//! is refused. See [`crate::verdict::Kind`].

use serde::Deserialize;
use std::collections::HashSet;

/// The reference file, compiled in.
pub const REFERENCE_TOML: &str = include_str!("../reference.toml");

/// One value of a paper.
#[derive(Clone, Debug, PartialEq)]
pub struct ReferenceCell {
    pub experiment: String,
    pub row: String,
    pub column: String,
    pub value: f64,
    pub unit: String,
    /// Where in the paper's text: section and table or figure caption.
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    table: Vec<Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    experiment: String,
    source: String,
    #[serde(default)]
    unit: Option<String>,
    cells: Vec<Cell>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cell {
    row: String,
    column: String,
    value: f64,
    #[serde(default)]
    unit: Option<String>,
}

/// Parses reference text: every cell has a unit (its own or its table's), a finite
/// value, and a (experiment, row, column) no other cell has.
pub fn parse(text: &str) -> Result<Vec<ReferenceCell>, String> {
    let file: File = toml::from_str(text).map_err(|e| format!("reference file: {}", e.message().trim()))?;
    let mut seen = HashSet::new();
    let mut cells = Vec::new();
    for table in file.table {
        for c in table.cells {
            let place = format!("{} / {} / {}", table.experiment, c.row, c.column);
            let Some(unit) = c.unit.or_else(|| table.unit.clone()) else {
                return Err(format!("reference file: {place}: no unit (give the cell or its table one)"));
            };
            if !crate::verdict::Kind::UNITS.contains(&unit.as_str()) {
                return Err(format!(
                    "reference file: {place}: unknown unit \"{unit}\" (one of: {})",
                    crate::verdict::Kind::UNITS.join(", ")
                ));
            }
            if !c.value.is_finite() {
                return Err(format!("reference file: {place}: the value is not a finite number"));
            }
            if !seen.insert((table.experiment.clone(), c.row.clone(), c.column.clone())) {
                return Err(format!("reference file: {place}: given twice"));
            }
            cells.push(ReferenceCell {
                experiment: table.experiment.clone(),
                row: c.row,
                column: c.column,
                value: c.value,
                unit,
                source: table.source.clone(),
            });
        }
    }
    Ok(cells)
}

/// The compiled-in reference values.
pub fn load() -> Result<Vec<ReferenceCell>, String> {
    parse(REFERENCE_TOML)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_takes_its_tables_unit_unless_it_has_one() {
        let text = r#"
            [[table]]
            experiment = "x:t1"
            source = "§1, Table 1"
            unit = "change %"
            cells = [
              { row = "a", column = "c", value = -3 },
              { row = "b", column = "c", value = 12.5, unit = "count" },
            ]
        "#;
        let cells = parse(text).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!((cells[0].unit.as_str(), cells[0].value), ("change %", -3.0));
        assert_eq!(cells[1].unit, "count");
        assert_eq!(cells[1].source, "§1, Table 1");
    }

    #[test]
    fn a_cell_given_twice_or_without_unit_is_refused_by_name() {
        let twice = r#"
            [[table]]
            experiment = "x:t1"
            source = "s"
            unit = "tps"
            cells = [{ row = "a", column = "c", value = 1 }, { row = "a", column = "c", value = 2 }]
        "#;
        assert_eq!(parse(twice).unwrap_err(), "reference file: x:t1 / a / c: given twice");
        let no_unit = r#"
            [[table]]
            experiment = "x:t1"
            source = "s"
            cells = [{ row = "a", column = "c", value = 1 }]
        "#;
        assert!(parse(no_unit).unwrap_err().contains("x:t1 / a / c: no unit"));
        let unknown = twice.replace("\"tps\"", "\"tsp\"");
        assert!(parse(&unknown).unwrap_err().contains("x:t1 / a / c: unknown unit \"tsp\" (one of: change %"));
        assert!(parse("[[table]]\nexperiment = 3").unwrap_err().starts_with("reference file: "));
    }
}
