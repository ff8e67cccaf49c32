//! Schema migrations: numbered SQL files compiled into the binary and applied in order, each in the same
//! transaction as the version it records (DDL is transactional in PostgreSQL, so a failed migration leaves
//! nothing behind). The applied version lives in the schema's `schema_version` table.

use postgres::Client;

use crate::error::{Result, StoreError};

/// The migrations, in order; migration `n` (1-based) brings the schema to version `n`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_initial.sql"),
    include_str!("migrations/0002_claim_leases.sql"),
    include_str!("migrations/0003_session_bindings.sql"),
    include_str!("migrations/0004_brief_lookups.sql"),
    include_str!("migrations/0005_session_tasks.sql"),
    include_str!("migrations/0006_fewer_status_indexes.sql"),
    include_str!("migrations/0007_claim_generations.sql"),
    include_str!("migrations/0008_placement.sql"),
];

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The advisory lock's first key ("agmg"); the second is the schema name's hash.
const MIGRATION_LOCK: i32 = 0x6167_6d67;

/// Creates the schema if needed and brings it up to [`SCHEMA_VERSION`]. Under an advisory lock, so several
/// workers starting at once on a new database apply each migration exactly once. Refuses a schema from a
/// newer build.
pub fn migrate(client: &mut Client, schema: &str) -> Result<()> {
    let mut tx = client.transaction()?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&MIGRATION_LOCK, &schema],
    )?;
    let schema_exists: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&schema],
        )?
        .try_get(0)?;
    if !schema_exists {
        // The name was checked to be a plain identifier when the settings were parsed.
        tx.batch_execute(&format!("CREATE SCHEMA \"{schema}\""))?;
    }
    let has_table: bool = tx
        .query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[])?
        .try_get(0)?;
    let found: i64 = if has_table {
        tx.query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])?
            .try_get(0)?
    } else {
        tx.batch_execute("CREATE TABLE schema_version (version BIGINT NOT NULL)")?;
        0
    };
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    for sql in &MIGRATIONS[usize::try_from(found).unwrap_or(0)..] {
        tx.batch_execute(sql)?;
    }
    tx.execute("DELETE FROM schema_version", &[])?;
    tx.execute(
        "INSERT INTO schema_version (version) VALUES ($1)",
        &[&SCHEMA_VERSION],
    )?;
    tx.commit()?;
    Ok(())
}
