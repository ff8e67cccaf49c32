//! Resolving what a user typed (a whole id, its short form, or any unique run of hex digits at either end of
//! it; dashes ignored) to one id,
//! and the existence checks every write makes before it refers to a record.

use agency_core::RunId;
use agency_core::ids::WHOLE_ID_LEN;
use postgres::GenericClient;
use postgres::types::ToSql;
use uuid::Uuid;

use crate::canon::{ambiguous_id, id_text, parse_id, typed_id_part};
use crate::error::{Result, StoreError};

/// How many candidates an ambiguity error names.
const MAX_CANDIDATES: usize = 10;

/// Resolves `input` against the ids of `table` (a fixed table name, never user input). `what` names the
/// record in errors.
pub fn resolve<C: GenericClient>(
    c: &mut C,
    table: &'static str,
    what: &'static str,
    input: &str,
) -> Result<Uuid> {
    let part = typed_id_part(what, input)?;
    // The part is hex digits only, so it needs no LIKE escaping. A whole id is found through the primary
    // key; a part may be either end (the short form is the end), which no index serves: a scan of the ids,
    // for what a human typed.
    let patterns = if part.len() == WHOLE_ID_LEN {
        vec![part]
    } else {
        vec![format!("{part}%"), format!("%{part}")]
    };
    let matching = if patterns.len() == 1 {
        "id = $1"
    } else {
        "(id LIKE $1 OR id LIKE $2)"
    };
    let params: Vec<&(dyn ToSql + Sync)> = patterns.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
    // One pass over the matches in the usual case (none or one); they are counted only for the error of a
    // part that matches more than it names.
    let found = c
        .query(
            &format!("SELECT id FROM {table} WHERE {matching} ORDER BY ord LIMIT {MAX_CANDIDATES}"),
            &params,
        )?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<std::result::Result<Vec<String>, _>>()?;
    match found.as_slice() {
        [] => Err(StoreError::not_found(what, input)),
        [id] => parse_id(what, id),
        _ => {
            let total: i64 = if found.len() < MAX_CANDIDATES {
                found.len() as i64
            } else {
                c.query_one(&format!("SELECT count(*) FROM {table} WHERE {matching}"), &params)?
                    .try_get(0)?
            };
            Err(ambiguous_id(what, input, found, total))
        }
    }
}

/// Whether a row with this id exists in `table` (a fixed table name).
pub fn exists<C: GenericClient>(c: &mut C, table: &'static str, id: &Uuid) -> Result<bool> {
    let row = c.query_one(
        &format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE id = $1)"),
        &[&id_text(id)],
    )?;
    Ok(row.try_get(0)?)
}

/// Fails with `NotFound` unless the run exists.
pub fn require_run<C: GenericClient>(c: &mut C, run: &RunId) -> Result<()> {
    if exists(c, "runs", &run.0)? {
        Ok(())
    } else {
        Err(StoreError::not_found("run", run))
    }
}
