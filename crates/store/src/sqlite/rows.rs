//! How values are written to and read back from SQLite columns: ids as 32 hex digits, times as fixed-width
//! RFC 3339 text, enums by their wire names, lists and nested records as JSON. Reading is strict: a value
//! that does not decode is a `Corrupt` error naming the record and column, never a silent default.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use rusqlite::Row;
use rusqlite::types::{FromSql, ValueRef};
use serde::de::{DeserializeOwned, IntoDeserializer};
use uuid::Uuid;

use crate::error::{Result, StoreError};

pub use crate::canon::{id_text, json_text, ts_text};

/// Reads the columns of one row of a record, attributing any decoding failure to that record.
///
/// Ids, times, enums and JSON are parsed from the text SQLite holds without copying it first, and the
/// record's id is read for an error only: a runner decodes rows by the dozen per brief, and those copies
/// were about 250 allocations per brief, a sixth of all the runner made (docs/performance.md).
pub struct Cols<'a> {
    row: &'a Row<'a>,
    what: &'static str,
    id_col: usize,
}

impl<'a> Cols<'a> {
    /// Reads a row whose column `id_col` holds the record's id (or `seq`) for error messages.
    pub fn new(row: &'a Row<'a>, what: &'static str, id_col: usize) -> Result<Self> {
        // Asked now so that a row without that column fails here, as it always did.
        row.get_ref(id_col)?;
        Ok(Cols { row, what, id_col })
    }

    fn corrupt(&self, column: &str, detail: impl std::fmt::Display) -> StoreError {
        let id = match self.row.get_ref(self.id_col) {
            Ok(ValueRef::Integer(n)) => n.to_string(),
            Ok(ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
            _ => String::from("?"),
        };
        StoreError::corrupt(self.what, id, format!("column `{column}`: {detail}"))
    }

    /// The column's text, borrowed from the row; `None` for NULL.
    fn opt_text(&self, idx: usize) -> Result<Option<&str>> {
        let value = self
            .row
            .get_ref(idx)
            .map_err(|e| self.corrupt(&self.name(idx), e))?;
        match value {
            ValueRef::Null => Ok(None),
            ValueRef::Text(bytes) => std::str::from_utf8(bytes)
                .map(Some)
                .map_err(|e| self.corrupt(&self.name(idx), e)),
            other => Err(self.corrupt(
                &self.name(idx),
                format!("expected text, found {}", other.data_type()),
            )),
        }
    }

    /// The column's text, borrowed from the row.
    fn text(&self, idx: usize) -> Result<&str> {
        self.opt_text(idx)?
            .ok_or_else(|| self.corrupt(&self.name(idx), "expected text, found NULL"))
    }

    /// An enum from its wire (serde) name, parsed from the borrowed text.
    fn wire_of<T: DeserializeOwned>(&self, idx: usize, text: &str) -> Result<T> {
        T::deserialize(text.into_deserializer())
            .map_err(|e: serde::de::value::Error| self.corrupt(&self.name(idx), e))
    }

    fn name(&self, idx: usize) -> String {
        self.row
            .as_ref()
            .column_name(idx)
            .map(str::to_string)
            .unwrap_or_else(|_| idx.to_string())
    }

    /// Any value SQLite can convert.
    pub fn get<T: FromSql>(&self, idx: usize) -> Result<T> {
        self.row.get(idx).map_err(|e| self.corrupt(&self.name(idx), e))
    }

    /// A required id.
    pub fn uuid(&self, idx: usize) -> Result<Uuid> {
        let text = self.text(idx)?;
        Uuid::parse_str(text).map_err(|e| self.corrupt(&self.name(idx), e))
    }

    /// An optional id.
    pub fn opt_uuid(&self, idx: usize) -> Result<Option<Uuid>> {
        self.opt_text(idx)?
            .map(|t| Uuid::parse_str(t).map_err(|e| self.corrupt(&self.name(idx), e)))
            .transpose()
    }

    /// A required time.
    pub fn ts(&self, idx: usize) -> Result<DateTime<Utc>> {
        let text = self.text(idx)?;
        self.parse_ts(idx, text)
    }

    /// An optional time.
    pub fn opt_ts(&self, idx: usize) -> Result<Option<DateTime<Utc>>> {
        self.opt_text(idx)?.map(|t| self.parse_ts(idx, t)).transpose()
    }

    fn parse_ts(&self, idx: usize, text: &str) -> Result<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| self.corrupt(&self.name(idx), format!("{e} in {text:?}")))
    }

    /// A required JSON value.
    pub fn json<T: DeserializeOwned>(&self, idx: usize) -> Result<T> {
        let text = self.text(idx)?;
        serde_json::from_str(text).map_err(|e| self.corrupt(&self.name(idx), e))
    }

    /// An optional JSON value.
    pub fn opt_json<T: DeserializeOwned>(&self, idx: usize) -> Result<Option<T>> {
        self.opt_text(idx)?
            .map(|t| serde_json::from_str(t).map_err(|e| self.corrupt(&self.name(idx), e)))
            .transpose()
    }

    /// A required enum stored by its wire (serde) name.
    pub fn wire<T: DeserializeOwned>(&self, idx: usize) -> Result<T> {
        let text = self.text(idx)?;
        self.wire_of(idx, text)
    }

    /// An optional enum stored by its wire name.
    pub fn opt_wire<T: DeserializeOwned>(&self, idx: usize) -> Result<Option<T>> {
        self.opt_text(idx)?.map(|t| self.wire_of(idx, t)).transpose()
    }

    /// A value parsed from text by its `FromStr`.
    pub fn parse<T>(&self, idx: usize) -> Result<T>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        self.text(idx)?
            .parse()
            .map_err(|e| self.corrupt(&self.name(idx), e))
    }

    /// A non-negative integer that fits in `u32`.
    pub fn u32(&self, idx: usize) -> Result<u32> {
        let n: i64 = self.get(idx)?;
        u32::try_from(n).map_err(|e| self.corrupt(&self.name(idx), e))
    }
}

/// `n` numbered parameters from `?first` on, for an `IN (…)` list bound value by value: `?4, ?5, ?6`.
/// One statement per length, each prepared once; a list passed as one JSON parameter and read back with
/// `json_each` made SQLite build a temporary index on every call.
pub fn numbered_marks(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs a statement that returns no rows, prepared once per connection (the runner writes the same few
/// statements thousands of times in a run; parsing them each time was a tenth of its CPU).
pub fn execute<P: rusqlite::Params>(conn: &rusqlite::Connection, sql: &str, params: P) -> Result<usize> {
    Ok(conn.prepare_cached(sql)?.execute(params)?)
}

/// Which of its constraints refused an [`insert`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The primary key: the id is taken.
    Duplicate,
    /// A foreign key: a run or brief it names does not exist.
    Missing,
}

/// Runs an INSERT whose checks are left to the schema: its primary key refuses a duplicate id and its
/// foreign keys a run or brief that does not exist. Only when one of them fires does `explain` look
/// anything up, to return the error that names what was wrong; a write used to ask first, two or three
/// queries per row for nothing. What `explain` cannot name (it returns `Ok`) is SQLite's own error.
pub fn insert<P: rusqlite::Params>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: P,
    explain: impl FnOnce(Refused) -> Result<()>,
) -> Result<()> {
    let error = match conn.prepare_cached(sql)?.execute(params) {
        Ok(_) => return Ok(()),
        Err(error) => error,
    };
    let refused = match error.sqlite_error().map(|e| e.extended_code) {
        Some(rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY) => Refused::Duplicate,
        Some(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY) => Refused::Missing,
        _ => return Err(error.into()),
    };
    explain(refused)?;
    Err(error.into())
}

/// The single value a query returns (a count, a maximum), prepared once per connection.
pub fn query_value<T: rusqlite::types::FromSql, P: rusqlite::Params>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: P,
) -> Result<T> {
    Ok(conn.prepare_cached(sql)?.query_row(params, |row| row.get(0))?)
}

/// The first row a query returns, decoded, or `None`.
pub fn query_opt<T, P: rusqlite::Params>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: P,
    decode: impl FnMut(&Row<'_>) -> Result<T>,
) -> Result<Option<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query_and_then(params, decode)?;
    rows.next().transpose()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn times_are_fixed_width_so_text_order_is_time_order() {
        let whole = Utc.with_ymd_and_hms(2026, 11, 22, 3, 4, 5).unwrap();
        let later = whole + chrono::Duration::nanoseconds(1);
        assert_eq!(ts_text(whole), "2026-11-22T03:04:05.000000000Z");
        assert_eq!(ts_text(later), "2026-11-22T03:04:05.000000001Z");
        assert!(ts_text(whole) < ts_text(later));
    }

    #[test]
    fn ids_are_stored_as_32_hex_digits() {
        let id = Uuid::from_u128(0x0193_a1b2_c3d4_7e5f_8a6b_7c8d_9e0f_1a2b);
        assert_eq!(id_text(&id), "0193a1b2c3d47e5f8a6b7c8d9e0f1a2b");
        assert_eq!(Uuid::parse_str(&id_text(&id)).unwrap(), id);
    }
}
