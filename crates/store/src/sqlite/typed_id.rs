//! Resolving what a user typed (a whole id, its short form, or any unique run of hex digits at either end of
//! it; dashes ignored) to one id.

use agency_core::ids::WHOLE_ID_LEN;
use rusqlite::{Connection, params};
use uuid::Uuid;

use super::rows::query_value;
use crate::canon::{ambiguous_id, parse_id, typed_id_part};
use crate::error::{Result, StoreError};

/// How many candidates an ambiguity error names.
const MAX_CANDIDATES: usize = 10;

/// Resolves `input` against the ids of `table` (a fixed table name, never user input). `what` names the
/// record in errors.
pub fn resolve(conn: &Connection, table: &'static str, what: &'static str, input: &str) -> Result<Uuid> {
    let part = typed_id_part(what, input)?;
    // Ids are stored as lower-case hex and the part is hex only, so GLOB needs no escaping. A whole id is
    // found through the primary key; a part may be either end (the short form is the end), which no index
    // serves: a scan of the ids, for what a human typed.
    let matching = if part.len() == WHOLE_ID_LEN {
        "id = ?1"
    } else {
        "(id GLOB ?1 || '*' OR id GLOB '*' || ?1)"
    };
    // One pass over the matches in the usual case (none or one); they are counted only for the error of a
    // part that matches more than it names.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id FROM {table} WHERE {matching} ORDER BY rowid LIMIT ?2"
    ))?;
    let found = stmt
        .query_map(params![part, MAX_CANDIDATES as i64], |row| {
            row.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    match found.as_slice() {
        [] => Err(StoreError::not_found(what, input)),
        [id] => parse_id(what, id),
        _ => {
            let total: i64 = if found.len() < MAX_CANDIDATES {
                found.len() as i64
            } else {
                query_value(
                    conn,
                    &format!("SELECT count(*) FROM {table} WHERE {matching}"),
                    params![part],
                )?
            };
            Err(ambiguous_id(what, input, found, total))
        }
    }
}

/// Whether a row with this id exists in `table` (a fixed table name).
pub fn exists(conn: &Connection, table: &'static str, id: &Uuid) -> Result<bool> {
    let found: i64 = query_value(
        conn,
        &format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE id = ?1)"),
        params![super::rows::id_text(id)],
    )?;
    Ok(found != 0)
}

/// Fails with `NotFound` unless the run exists.
pub fn require_run(conn: &Connection, run: &agency_core::RunId) -> Result<()> {
    if exists(conn, "runs", &run.0)? {
        Ok(())
    } else {
        Err(StoreError::not_found("run", run))
    }
}
