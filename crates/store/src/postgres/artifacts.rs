//! Artifacts: named blobs a run produces (plans, architectures, verdicts, transcripts) that later briefs
//! read by name.

use agency_core::{BriefId, RunId};
use postgres::{GenericClient, Row};

use super::events;
use super::rows::Cols;
use super::typed_id::{exists, require_run};
use crate::canon::{self, id_text, ts_text};
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::record::{Artifact, ArtifactId, ArtifactMeta, NewArtifact};

const META_COLUMNS: &str = "id, run, brief, name, content_type, size, created_at";

/// Stores an artifact and writes `artifact`.
pub fn put<C: GenericClient>(c: &mut C, clock: &dyn Clock, new: NewArtifact) -> Result<ArtifactMeta> {
    if exists(c, "artifacts", &new.id.0)? {
        return Err(StoreError::AlreadyExists {
            what: "artifact",
            id: new.id.to_string(),
        });
    }
    require_run(c, &new.run)?;
    if let Some(brief) = new.brief
        && !exists(c, "briefs", &brief.0)?
    {
        return Err(StoreError::not_found("brief", brief));
    }
    let now = clock.now();
    let size = new.bytes.len() as u64;
    c.execute(
        &format!("INSERT INTO artifacts ({META_COLUMNS}, bytes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"),
        &[
            &id_text(&new.id.0),
            &id_text(&new.run.0),
            &new.brief.map(|b| id_text(&b.0)),
            &new.name,
            &new.content_type,
            &i64::try_from(size).unwrap_or(i64::MAX),
            &ts_text(now),
            &new.bytes,
        ],
    )?;
    events::append(c, &canon::artifact_stored(&new, now))?;
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

/// One artifact with its content.
pub fn get<C: GenericClient>(c: &mut C, id: ArtifactId) -> Result<Artifact> {
    let row = c.query_opt(
        &format!("SELECT {META_COLUMNS}, bytes FROM artifacts WHERE id = $1"),
        &[&id_text(&id.0)],
    )?;
    row.as_ref()
        .map(decode_full)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("artifact", id))
}

/// The newest artifact of a run with this name.
pub fn latest<C: GenericClient>(c: &mut C, run: RunId, name: &str) -> Result<Option<Artifact>> {
    let row = c.query_opt(
        &format!(
            "SELECT {META_COLUMNS}, bytes FROM artifacts WHERE run = $1 AND name = $2 \
             ORDER BY created_at DESC, ord DESC LIMIT 1"
        ),
        &[&id_text(&run.0), &name],
    )?;
    row.as_ref().map(decode_full).transpose()
}

/// A run's artifacts (of one brief, when given), oldest first.
pub fn list<C: GenericClient>(c: &mut C, run: RunId, brief: Option<BriefId>) -> Result<Vec<ArtifactMeta>> {
    let rows = c.query(
        &format!(
            "SELECT {META_COLUMNS} FROM artifacts WHERE run = $1 AND ($2::text IS NULL OR brief = $2) \
             ORDER BY created_at, ord"
        ),
        &[&id_text(&run.0), &brief.map(|b| id_text(&b.0))],
    )?;
    rows.iter()
        .map(|row| decode_meta(&Cols::new(row, "artifact", 0)))
        .collect()
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

fn decode_full(row: &Row) -> Result<Artifact> {
    let c = Cols::new(row, "artifact", 0);
    Ok(Artifact {
        meta: decode_meta(&c)?,
        bytes: c.get(7)?,
    })
}
