//! Column types, values, the row format and order-preserving keys.
//!
//! Row bytes: a null bitmap (one bit per column, ⌈n/8⌉ bytes), then every fixed-width
//! column at a fixed offset (INT 4 bytes LE, BIGINT and DECIMAL 8 bytes LE as scaled
//! integers, FLOAT 8 bytes LE, CHAR(n) n bytes padded with spaces), then each VARCHAR
//! as a u16 LE length and its bytes. Updating a fixed-width column rewrites only its
//! bytes, which is what makes updates small for IPA.
//!
//! Key bytes compare like the values (memcmp order): per column a tag (0 null, 1
//! value), then integers big-endian with the sign bit flipped, floats in IEEE total
//! order, text with 0x00 escaped as 00 FF and a 00 00 terminator. A key of a prefix of
//! the columns is a byte prefix of the full key.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    Int,
    BigInt,
    /// DECIMAL(p, s): stored as the value × 10^s in an i64.
    Decimal {
        precision: u8,
        scale: u8,
    },
    Float,
    Char(u16),
    Varchar(u16),
}

impl ColumnType {
    /// Bytes of a fixed-width column; `None` for VARCHAR.
    pub fn fixed_bytes(self) -> Option<usize> {
        match self {
            ColumnType::Int => Some(4),
            ColumnType::BigInt | ColumnType::Decimal { .. } | ColumnType::Float => Some(8),
            ColumnType::Char(n) => Some(n as usize),
            ColumnType::Varchar(_) => None,
        }
    }

    /// Converts a literal to this type's value, or says why it cannot.
    pub fn coerce(self, v: &Value) -> Result<Value, String> {
        // Only an error shows the value, cut.
        let shown = || crate::error::shorten(&v.to_string());
        let out_of_range = || format!("{} is out of range for {self}", shown());
        match (self, v) {
            (_, Value::Null) => Ok(Value::Null),
            (ColumnType::Int, Value::Int(i)) => i32::try_from(*i).map(|_| Value::Int(*i)).map_err(|_| out_of_range()),
            (ColumnType::BigInt, Value::Int(i)) => Ok(Value::Int(*i)),
            (ColumnType::Decimal { precision, scale }, _) => {
                let scaled = match v {
                    Value::Int(i) => i.checked_mul(10i64.pow(scale as u32)),
                    Value::Decimal { scaled, scale: s } => rescale(*scaled, *s, scale),
                    Value::Float(f) => Some((f * 10f64.powi(scale as i32)).round() as i64),
                    Value::Text(_) | Value::Null => None,
                };
                let scaled =
                    scaled.ok_or_else(|| format!("{} is not a DECIMAL({precision},{scale}) value", shown()))?;
                if scaled.unsigned_abs() >= 10u64.pow(precision as u32) {
                    return Err(out_of_range());
                }
                Ok(Value::Decimal { scaled, scale })
            }
            (ColumnType::Float, Value::Int(i)) => Ok(Value::Float(*i as f64)),
            (ColumnType::Float, Value::Decimal { scaled, scale }) => {
                Ok(Value::Float(*scaled as f64 / 10f64.powi(*scale as i32)))
            }
            (ColumnType::Float, Value::Float(f)) => Ok(Value::Float(*f)),
            (ColumnType::Char(n) | ColumnType::Varchar(n), Value::Text(s)) => {
                if s.len() > n as usize {
                    Err(format!("'{}' has {} bytes, more than {self} holds", shown(), s.len()))
                } else if matches!(self, ColumnType::Char(_)) {
                    Ok(Value::Text(s.trim_end_matches(' ').to_string()))
                } else {
                    Ok(Value::Text(s.clone()))
                }
            }
            _ => Err(format!("{} is not a {self} value", shown())),
        }
    }
}

fn rescale(scaled: i64, from: u8, to: u8) -> Option<i64> {
    if to >= from {
        scaled.checked_mul(10i64.checked_pow((to - from) as u32)?)
    } else {
        let div = 10i64.checked_pow((from - to) as u32)?;
        (scaled % div == 0).then_some(scaled / div)
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnType::Int => f.write_str("INT"),
            ColumnType::BigInt => f.write_str("BIGINT"),
            ColumnType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            ColumnType::Float => f.write_str("FLOAT"),
            ColumnType::Char(n) => write!(f, "CHAR({n})"),
            ColumnType::Varchar(n) => write!(f, "VARCHAR({n})"),
        }
    }
}

/// A value. DECIMAL values carry their scale; INT and BIGINT are both `Int`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Decimal { scaled: i64, scale: u8 },
    Float(f64),
    Text(String),
}

impl Value {
    /// `self + delta` for `col = col ± n` updates.
    pub fn add(&self, delta: &Value) -> Option<Value> {
        match (self, delta) {
            (Value::Int(a), Value::Int(b)) => a.checked_add(*b).map(Value::Int),
            // A FLOAT stays finite, as its literals must be.
            (Value::Float(a), d) => Some(a + d.as_f64()?).filter(|s| s.is_finite()).map(Value::Float),
            (Value::Decimal { scaled, scale }, d) => {
                let d = match d {
                    Value::Int(i) => i.checked_mul(10i64.pow(*scale as u32))?,
                    Value::Decimal { scaled, scale: s } => rescale(*scaled, *s, *scale)?,
                    _ => return None,
                };
                Some(Value::Decimal { scaled: scaled.checked_add(d)?, scale: *scale })
            }
            _ => None,
        }
    }

    pub fn negate(&self) -> Option<Value> {
        match self {
            Value::Int(i) => i.checked_neg().map(Value::Int),
            Value::Decimal { scaled, scale } => {
                scaled.checked_neg().map(|s| Value::Decimal { scaled: s, scale: *scale })
            }
            Value::Float(f) => Some(Value::Float(-f)),
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Decimal { scaled, scale } => Some(*scaled as f64 / 10f64.powi(*scale as i32)),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Decimal { scaled, scale: 0 } => write!(f, "{scaled}"),
            Value::Decimal { scaled, scale } => {
                let div = 10u64.pow(*scale as u32);
                let sign = if *scaled < 0 { "-" } else { "" };
                let abs = scaled.unsigned_abs();
                write!(f, "{sign}{}.{:0width$}", abs / div, abs % div, width = *scale as usize)
            }
            Value::Float(x) => write!(f, "{x}"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

/// A named, typed column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    pub nullable: bool,
}

/// Encodes a row of already-coerced values.
pub fn encode_row(columns: &[Column], values: &[Value], out: &mut Vec<u8>) {
    debug_assert_eq!(columns.len(), values.len());
    out.clear();
    let bitmap = columns.len().div_ceil(8);
    out.resize(bitmap, 0);
    for (i, v) in values.iter().enumerate() {
        if *v == Value::Null {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    for (c, v) in columns.iter().zip(values) {
        if let Some(n) = c.ty.fixed_bytes() {
            let at = out.len();
            out.resize(at + n, 0);
            encode_fixed(c.ty, v, &mut out[at..]);
        }
    }
    for (c, v) in columns.iter().zip(values) {
        if let ColumnType::Varchar(_) = c.ty {
            let s = if let Value::Text(s) = v { s.as_str() } else { "" };
            out.extend_from_slice(&(s.len() as u16).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// Writes a coerced value of a fixed-width column over its bytes `out` (as long as the
/// type's width); NULL, or a value of another type, writes zeroes.
pub fn encode_fixed(ty: ColumnType, v: &Value, out: &mut [u8]) {
    match (ty, v) {
        (ColumnType::Int, Value::Int(i)) => out.copy_from_slice(&(*i as i32).to_le_bytes()),
        (ColumnType::BigInt, Value::Int(i)) => out.copy_from_slice(&i.to_le_bytes()),
        (ColumnType::Decimal { .. }, Value::Decimal { scaled, .. }) => out.copy_from_slice(&scaled.to_le_bytes()),
        (ColumnType::Float, Value::Float(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (ColumnType::Char(_), Value::Text(s)) => {
            out[..s.len()].copy_from_slice(s.as_bytes());
            out[s.len()..].fill(b' ');
        }
        _ => out.fill(0),
    }
}

/// Where the bytes of fixed-width column `c` lie in every row of `columns` (`None`:
/// a VARCHAR, or no column `c`). A row's null bitmap is its first ⌈n/8⌉ bytes.
pub fn fixed_range(columns: &[Column], c: usize) -> Option<std::ops::Range<usize>> {
    let n = columns.get(c)?.ty.fixed_bytes()?;
    let start = columns.len().div_ceil(8) + columns[..c].iter().filter_map(|c| c.ty.fixed_bytes()).sum::<usize>();
    Some(start..start + n)
}

/// Decodes a row; bytes that do not fit the columns are an error naming the problem.
pub fn decode_row(columns: &[Column], bytes: &[u8]) -> Result<Vec<Value>, String> {
    decode_some(columns, bytes, |_| true)
}

/// As [`decode_row`], but the columns `wanted` turns down stay NULL: their bytes are
/// walked over, not decoded (a text column is then not checked for UTF-8).
pub fn decode_some(columns: &[Column], bytes: &[u8], wanted: impl Fn(usize) -> bool) -> Result<Vec<Value>, String> {
    let mut values = vec![Value::Null; columns.len()];
    fields(columns, bytes, |i, raw| {
        if wanted(i) {
            values[i] = decode_value(columns[i].ty, raw)?;
        }
        Ok(())
    })?;
    Ok(values)
}

/// Columns `picks` of a row, in that order (a column may appear twice); only they are
/// decoded, the row's structure is checked as by [`decode_row`].
pub fn decode_columns(columns: &[Column], bytes: &[u8], picks: &[usize]) -> Result<Vec<Value>, String> {
    let mut values = vec![Value::Null; picks.len()];
    fields(columns, bytes, |i, raw| {
        for (k, _) in picks.iter().enumerate().filter(|(_, &p)| p == i) {
            values[k] = decode_value(columns[i].ty, raw)?;
        }
        Ok(())
    })?;
    Ok(values)
}

/// Walks a row's bytes, checking that they hold exactly its bitmap, fixed-width
/// columns and VARCHARs, and calls `field` with the bytes of each non-NULL column.
fn fields(
    columns: &[Column],
    bytes: &[u8],
    mut field: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let bitmap = columns.len().div_ceil(8);
    if bytes.len() < bitmap {
        return Err(format!("row of {} bytes has no room for its null bitmap", bytes.len()));
    }
    let mut at = bitmap;
    let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
        let s = bytes.get(*at..*at + n).ok_or_else(|| format!("row of {} bytes ends early", bytes.len()))?;
        *at += n;
        Ok(s)
    };
    let null = |i: usize| bytes[i / 8] & (1 << (i % 8)) != 0;
    for (i, c) in columns.iter().enumerate() {
        let Some(n) = c.ty.fixed_bytes() else { continue };
        let raw = take(&mut at, n)?;
        if !null(i) {
            field(i, raw)?;
        }
    }
    for (i, c) in columns.iter().enumerate() {
        if let ColumnType::Varchar(_) = c.ty {
            let len = take(&mut at, 2)?;
            let len = u16::from_le_bytes([len[0], len[1]]) as usize;
            let raw = take(&mut at, len)?;
            if !null(i) {
                field(i, raw)?;
            }
        }
    }
    if at != bytes.len() {
        return Err(format!("row has {} trailing bytes", bytes.len() - at));
    }
    Ok(())
}

/// The value of one column's bytes (a CHAR loses its padding).
fn decode_value(ty: ColumnType, raw: &[u8]) -> Result<Value, String> {
    Ok(match ty {
        ColumnType::Int => Value::Int(i32::from_le_bytes(array(raw)) as i64),
        ColumnType::BigInt => Value::Int(i64::from_le_bytes(array(raw))),
        ColumnType::Decimal { scale, .. } => Value::Decimal { scaled: i64::from_le_bytes(array(raw)), scale },
        ColumnType::Float => Value::Float(f64::from_le_bytes(array(raw))),
        ColumnType::Char(_) => Value::Text(text(raw)?.trim_end_matches(' ').to_string()),
        ColumnType::Varchar(_) => Value::Text(text(raw)?.to_string()),
    })
}

/// The first `N` bytes of `raw` (a fixed-width field, exactly `N` long).
fn array<const N: usize>(raw: &[u8]) -> [u8; N] {
    let mut b = [0; N];
    let n = raw.len().min(N);
    b[..n].copy_from_slice(&raw[..n]);
    b
}

fn text(raw: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(raw).map_err(|_| "text column is not UTF-8".to_string())
}

/// Appends the order-preserving key bytes of one coerced value.
pub fn encode_key_part(ty: ColumnType, v: &Value, out: &mut Vec<u8>) {
    if *v == Value::Null {
        out.push(0);
        return;
    }
    out.push(1);
    match (ty, v) {
        (ColumnType::Int, Value::Int(i)) => out.extend_from_slice(&((*i as i32 as u32) ^ (1 << 31)).to_be_bytes()),
        (_, Value::Int(i)) | (_, Value::Decimal { scaled: i, .. }) => {
            out.extend_from_slice(&((*i as u64) ^ (1 << 63)).to_be_bytes())
        }
        (_, Value::Float(x)) => {
            let bits = x.to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        (_, Value::Text(s)) => {
            for &b in s.as_bytes() {
                out.push(b);
                if b == 0 {
                    out.push(0xFF);
                }
            }
            out.extend_from_slice(&[0, 0]);
        }
        (_, Value::Null) => unreachable!("handled above"),
    }
}

/// The key bytes of `values` (coerced to `types`), in order.
pub fn encode_key(types: &[ColumnType], values: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    for (ty, v) in types.iter().zip(values) {
        encode_key_part(*ty, v, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cols() -> Vec<Column> {
        let c = |name: &str, ty| Column { name: name.into(), ty, nullable: true };
        vec![
            c("a", ColumnType::Int),
            c("b", ColumnType::Varchar(20)),
            c("c", ColumnType::Decimal { precision: 12, scale: 2 }),
            c("d", ColumnType::Char(5)),
            c("e", ColumnType::Float),
            c("f", ColumnType::BigInt),
        ]
    }

    fn value_for(ty: ColumnType) -> impl Strategy<Value = Value> {
        let v = match ty {
            ColumnType::Int => any::<i32>().prop_map(|i| Value::Int(i as i64)).boxed(),
            ColumnType::BigInt => any::<i64>().prop_map(Value::Int).boxed(),
            ColumnType::Decimal { scale, .. } => {
                (-999_999_999_999i64..999_999_999_999).prop_map(move |s| Value::Decimal { scaled: s, scale }).boxed()
            }
            ColumnType::Float => (-1e9f64..1e9).prop_map(Value::Float).boxed(),
            ColumnType::Char(n) => {
                proptest::string::string_regex(&format!("[a-z0-9]{{0,{n}}}")).unwrap().prop_map(Value::Text).boxed()
            }
            ColumnType::Varchar(n) => {
                proptest::string::string_regex(&format!("[a-z\\x00 ]{{0,{n}}}")).unwrap().prop_map(Value::Text).boxed()
            }
        };
        prop_oneof![1 => Just(Value::Null), 6 => v]
    }

    fn row() -> impl Strategy<Value = Vec<Value>> {
        cols().into_iter().map(|c| value_for(c.ty)).collect::<Vec<_>>()
    }

    proptest! {
        #[test]
        fn rows_round_trip(values in row()) {
            let mut bytes = Vec::new();
            encode_row(&cols(), &values, &mut bytes);
            prop_assert_eq!(decode_row(&cols(), &bytes).unwrap(), values);
        }

        /// Key bytes order like the values, column by column.
        #[test]
        fn keys_preserve_order(a in row(), b in row()) {
            let types: Vec<_> = cols().iter().map(|c| c.ty).collect();
            let (ka, kb) = (encode_key(&types, &a), encode_key(&types, &b));
            let order = a.iter().zip(&b).map(|(x, y)| compare(x, y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal);
            prop_assert_eq!(ka.cmp(&kb), order);
        }

        /// A projection decodes what the whole row gives for its columns.
        #[test]
        fn projections_match_whole_rows(values in row(), picks in proptest::collection::vec(0..6usize, 0..8)) {
            let mut bytes = Vec::new();
            encode_row(&cols(), &values, &mut bytes);
            let want: Vec<Value> = picks.iter().map(|&c| values[c].clone()).collect();
            prop_assert_eq!(decode_columns(&cols(), &bytes, &picks).unwrap(), want);
        }

        /// Writing one fixed-width field (and its null bit) over a row's bytes gives the
        /// bytes of the row with that value.
        #[test]
        fn a_field_written_in_place_is_the_row_encoded(values in row(), other in row(), c in 0..6usize) {
            let columns = cols();
            let Some(range) = fixed_range(&columns, c) else { return Ok(()) };
            let mut bytes = Vec::new();
            encode_row(&columns, &values, &mut bytes);
            if other[c] == Value::Null {
                bytes[c / 8] |= 1 << (c % 8);
            } else {
                bytes[c / 8] &= !(1 << (c % 8));
            }
            encode_fixed(columns[c].ty, &other[c], &mut bytes[range]);
            let mut changed = values.clone();
            changed[c] = other[c].clone();
            let mut want = Vec::new();
            encode_row(&columns, &changed, &mut want);
            prop_assert_eq!(bytes, want);
        }

        /// Fuzz pass over the row decoder: arbitrary bytes decode or give an error.
        #[test]
        fn fuzz_row_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = decode_row(&cols(), &bytes);
        }
    }

    fn compare(a: &Value, b: &Value) -> std::cmp::Ordering {
        use Value::*;
        match (a, b) {
            (Null, Null) => std::cmp::Ordering::Equal,
            (Null, _) => std::cmp::Ordering::Less,
            (_, Null) => std::cmp::Ordering::Greater,
            (Int(x), Int(y)) => x.cmp(y),
            (Decimal { scaled: x, .. }, Decimal { scaled: y, .. }) => x.cmp(y),
            (Float(x), Float(y)) => x.total_cmp(y),
            (Text(x), Text(y)) => x.as_bytes().cmp(y.as_bytes()),
            _ => unreachable!(),
        }
    }

    #[test]
    fn coercion() {
        let dec = ColumnType::Decimal { precision: 6, scale: 2 };
        assert_eq!(dec.coerce(&Value::Int(12)).unwrap(), Value::Decimal { scaled: 1200, scale: 2 });
        assert_eq!(
            dec.coerce(&Value::Decimal { scaled: 15, scale: 1 }).unwrap(),
            Value::Decimal { scaled: 150, scale: 2 }
        );
        assert!(dec.coerce(&Value::Int(10_000)).unwrap_err().contains("out of range"));
        assert!(ColumnType::Int.coerce(&Value::Int(1 << 40)).is_err());
        assert!(ColumnType::Char(2).coerce(&Value::Text("abc".into())).is_err());
        assert!(ColumnType::Int.coerce(&Value::Text("x".into())).unwrap_err().contains("not a INT"));
        assert_eq!(Value::Decimal { scaled: -5, scale: 2 }.to_string(), "-0.05");
    }
}
