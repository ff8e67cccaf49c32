//! Resolving what a user typed (a full id or any unique prefix of its hex digits, dashes ignored) to one id,
//! and the existence checks every write makes before it refers to a record.

use agency_core::RunId;
use agency_core::ids::normalize_id_prefix;
use postgres::GenericClient;
use uuid::Uuid;

use crate::canon::{id_text, parse_id};
use crate::error::{Result, StoreError};

/// How many candidates an ambiguity error names.
const MAX_CANDIDATES: i64 = 10;

/// Resolves `input` against the ids of `table` (a fixed table name, never user input). `what` names the
/// record in errors.
pub fn resolve<C: GenericClient>(
    c: &mut C,
    table: &'static str,
    what: &'static str,
    input: &str,
) -> Result<Uuid> {
    let prefix = normalize_id_prefix(input.trim()).ok_or_else(|| StoreError::InvalidId {
        what,
        input: input.to_string(),
    })?;
    if prefix.len() > 32 {
        return Err(StoreError::not_found(what, input));
    }
    // The prefix is hex digits only, so it needs no LIKE escaping; ids are COLLATE "C", so the primary
    // key's index serves the prefix match.
    let pattern = format!("{prefix}%");
    let total: i64 = c
        .query_one(
            &format!("SELECT count(*) FROM {table} WHERE id LIKE $1"),
            &[&pattern],
        )?
        .try_get(0)?;
    match total {
        0 => Err(StoreError::not_found(what, input)),
        1 => {
            let id: String = c
                .query_one(&format!("SELECT id FROM {table} WHERE id LIKE $1"), &[&pattern])?
                .try_get(0)?;
            parse_id(what, &id)
        }
        _ => {
            let rows = c.query(
                &format!("SELECT id FROM {table} WHERE id LIKE $1 ORDER BY ord LIMIT $2"),
                &[&pattern, &MAX_CANDIDATES],
            )?;
            let candidates = rows
                .iter()
                .map(|row| {
                    let id: String = row.try_get(0)?;
                    Ok(Uuid::parse_str(&id).map(|u| u.to_string()).unwrap_or(id))
                })
                .collect::<Result<Vec<_>>>()?;
            Err(StoreError::AmbiguousPrefix {
                what,
                prefix: input.to_string(),
                candidates,
                total: usize::try_from(total).unwrap_or(usize::MAX),
            })
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
