//! Reading PostgreSQL rows back into records. The stored forms are those of [`crate::canon`] (the same as
//! SQLite's); reading is strict: a value that does not decode is a `Corrupt` error naming the record and
//! column, never a silent default.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use postgres::Row;
use postgres::types::FromSql;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::error::{Result, StoreError};

/// Reads the columns of one row of a record, attributing any decoding failure to that record.
pub struct Cols<'a> {
    row: &'a Row,
    what: &'static str,
    id: String,
}

impl<'a> Cols<'a> {
    /// Reads a row whose column `id_col` holds the record's id (text) or `seq` (bigint) for error messages.
    pub fn new(row: &'a Row, what: &'static str, id_col: usize) -> Self {
        let id = row
            .try_get::<_, String>(id_col)
            .or_else(|_| row.try_get::<_, i64>(id_col).map(|n| n.to_string()))
            .unwrap_or_else(|_| String::from("?"));
        Cols { row, what, id }
    }

    fn corrupt(&self, idx: usize, detail: impl std::fmt::Display) -> StoreError {
        let column = self
            .row
            .columns()
            .get(idx)
            .map_or_else(|| idx.to_string(), |c| c.name().to_string());
        StoreError::corrupt(self.what, self.id.clone(), format!("column `{column}`: {detail}"))
    }

    /// Any value the driver can convert to an owned `T`.
    pub fn get<T: for<'b> FromSql<'b>>(&self, idx: usize) -> Result<T> {
        self.row.try_get(idx).map_err(|e| self.corrupt(idx, e))
    }

    /// A required id.
    pub fn uuid(&self, idx: usize) -> Result<Uuid> {
        let text: String = self.get(idx)?;
        Uuid::parse_str(&text).map_err(|e| self.corrupt(idx, e))
    }

    /// An optional id.
    pub fn opt_uuid(&self, idx: usize) -> Result<Option<Uuid>> {
        let text: Option<String> = self.get(idx)?;
        text.map(|t| Uuid::parse_str(&t).map_err(|e| self.corrupt(idx, e)))
            .transpose()
    }

    /// A required time.
    pub fn ts(&self, idx: usize) -> Result<DateTime<Utc>> {
        let text: String = self.get(idx)?;
        self.parse_ts(idx, &text)
    }

    /// An optional time.
    pub fn opt_ts(&self, idx: usize) -> Result<Option<DateTime<Utc>>> {
        let text: Option<String> = self.get(idx)?;
        text.map(|t| self.parse_ts(idx, &t)).transpose()
    }

    fn parse_ts(&self, idx: usize, text: &str) -> Result<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| self.corrupt(idx, format!("{e} in {text:?}")))
    }

    /// A required JSON value.
    pub fn json<T: DeserializeOwned>(&self, idx: usize) -> Result<T> {
        let text: String = self.get(idx)?;
        serde_json::from_str(&text).map_err(|e| self.corrupt(idx, e))
    }

    /// An optional JSON value.
    pub fn opt_json<T: DeserializeOwned>(&self, idx: usize) -> Result<Option<T>> {
        let text: Option<String> = self.get(idx)?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| self.corrupt(idx, e)))
            .transpose()
    }

    /// A required enum stored by its wire (serde) name.
    pub fn wire<T: DeserializeOwned>(&self, idx: usize) -> Result<T> {
        let text: String = self.get(idx)?;
        serde_json::from_value(serde_json::Value::String(text)).map_err(|e| self.corrupt(idx, e))
    }

    /// An optional enum stored by its wire name.
    pub fn opt_wire<T: DeserializeOwned>(&self, idx: usize) -> Result<Option<T>> {
        let text: Option<String> = self.get(idx)?;
        text.map(|t| serde_json::from_value(serde_json::Value::String(t)).map_err(|e| self.corrupt(idx, e)))
            .transpose()
    }

    /// A value parsed from text by its `FromStr`.
    pub fn parse<T>(&self, idx: usize) -> Result<T>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        let text: String = self.get(idx)?;
        text.parse().map_err(|e| self.corrupt(idx, e))
    }

    /// A non-negative integer that fits in `u32`.
    pub fn u32(&self, idx: usize) -> Result<u32> {
        let n: i64 = self.get(idx)?;
        u32::try_from(n).map_err(|e| self.corrupt(idx, e))
    }
}
