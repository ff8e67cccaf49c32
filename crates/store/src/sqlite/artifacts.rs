//! Artifacts: named blobs a run produces (plans, architectures, verdicts, transcripts) that later briefs
//! read by name.

use agency_core::{BriefId, RunId};
use rusqlite::{Connection, Row, params};

use super::events;
use super::rows::{Cols, Refused, id_text, insert, query_opt, ts_text};
use super::typed_id::{exists, require_run};
use crate::canon;
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::record::{Artifact, ArtifactId, ArtifactMeta, NewArtifact};

const META_COLUMNS: &str = "id, run, brief, name, content_type, size, created_at";

/// Stores an artifact and writes `artifact`.
pub fn put(conn: &Connection, clock: &dyn Clock, new: NewArtifact) -> Result<ArtifactMeta> {
    let (size, now) = store(conn, clock, &new)?;
    Ok(ArtifactMeta {
        id: new.id,
        run: new.run,
        brief: new.brief,
        name: new.name,
        content_type: new.content_type,
        size,
        created_at: now,
    })
}

/// [`put`] for a caller that keeps the artifact (a batch held back, which a failed write holds again):
/// its size and when it was stored.
pub fn store(
    conn: &Connection,
    clock: &dyn Clock,
    new: &NewArtifact,
) -> Result<(u64, chrono::DateTime<chrono::Utc>)> {
    let now = clock.now();
    let size = new.bytes.len() as u64;
    insert(
        conn,
        &format!("INSERT INTO artifacts ({META_COLUMNS}, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            id_text(&new.id.0),
            id_text(&new.run.0),
            new.brief.map(|b| id_text(&b.0)),
            new.name,
            new.content_type,
            i64::try_from(size).unwrap_or(i64::MAX),
            ts_text(now),
            new.bytes,
        ],
        |refused| match refused {
            Refused::Duplicate => Err(StoreError::AlreadyExists {
                what: "artifact",
                id: new.id.to_string(),
            }),
            Refused::Missing => {
                require_run(conn, &new.run)?;
                match new.brief {
                    Some(brief) if !exists(conn, "briefs", &brief.0)? => {
                        Err(StoreError::not_found("brief", brief))
                    }
                    _ => Ok(()),
                }
            }
        },
    )?;
    events::append_to_known_run(conn, &canon::artifact_stored(new, now))?;
    Ok((size, now))
}

/// One artifact with its content.
pub fn get(conn: &Connection, id: ArtifactId) -> Result<Artifact> {
    query_opt(
        conn,
        &format!("SELECT {META_COLUMNS}, bytes FROM artifacts WHERE id = ?1"),
        params![id_text(&id.0)],
        decode_full,
    )?
    .ok_or_else(|| StoreError::not_found("artifact", id))
}

/// The newest artifact of a run with this name.
pub fn latest(conn: &Connection, run: RunId, name: &str) -> Result<Option<Artifact>> {
    query_opt(
        conn,
        &format!(
            "SELECT {META_COLUMNS}, bytes FROM artifacts WHERE run = ?1 AND name = ?2 \
             ORDER BY created_at DESC, rowid DESC LIMIT 1"
        ),
        params![id_text(&run.0), name],
        decode_full,
    )
}

/// A run's artifacts (of one brief, when given), oldest first.
pub fn list(conn: &Connection, run: RunId, brief: Option<BriefId>) -> Result<Vec<ArtifactMeta>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {META_COLUMNS} FROM artifacts WHERE run = ?1 AND (?2 IS NULL OR brief = ?2) \
         ORDER BY created_at, rowid"
    ))?;
    let rows = stmt.query_and_then(params![id_text(&run.0), brief.map(|b| id_text(&b.0))], |row| {
        decode_meta(&Cols::new(row, "artifact", 0)?)
    })?;
    rows.collect()
}

fn decode_meta(c: &Cols<'_>) -> Result<ArtifactMeta> {
    let size: i64 = c.get(5)?;
    Ok(ArtifactMeta {
        id: ArtifactId(c.uuid(0)?),
        run: RunId(c.uuid(1)?),
        brief: c.opt_uuid(2)?.map(BriefId),
        name: c.get(3)?,
        content_type: c.get(4)?,
        size: u64::try_from(size).unwrap_or(0),
        created_at: c.ts(6)?,
    })
}

fn decode_full(row: &Row<'_>) -> Result<Artifact> {
    let c = Cols::new(row, "artifact", 0)?;
    Ok(Artifact {
        meta: decode_meta(&c)?,
        bytes: c.get(7)?,
    })
}
