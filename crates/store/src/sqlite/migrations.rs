//! Schema migrations: numbered SQL files compiled into the binary and applied in order. The applied
//! version lives in SQLite's `user_version`, so a database records exactly which migrations it has and
//! opening it again applies only the missing ones (and none, usually).

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Result, StoreError};

/// The migrations, in order; migration `n` (1-based) brings the schema to version `n`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_initial.sql"),
    include_str!("migrations/0002_insertion_order.sql"),
    include_str!("migrations/0003_claim_leases.sql"),
    include_str!("migrations/0004_session_bindings.sql"),
    include_str!("migrations/0005_brief_lookups.sql"),
    include_str!("migrations/0006_session_tasks.sql"),
    include_str!("migrations/0007_fewer_status_indexes.sql"),
    include_str!("migrations/0008_events_without_autoincrement.sql"),
    include_str!("migrations/0009_workstream_index_without_status.sql"),
    include_str!("migrations/0010_claim_generations.sql"),
    include_str!("migrations/0011_placement.sql"),
];

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The schema version recorded in the database.
pub(super) fn current_version(conn: &Connection) -> Result<i64> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Brings the schema up to [`SCHEMA_VERSION`]. Runs under a write lock, so two processes opening a new file
/// at once apply each migration exactly once. Refuses a database from a newer build.
pub(super) fn migrate(conn: &mut Connection) -> Result<()> {
    // Cheap check first: most opens find the schema current and never take the write lock.
    if current_version(conn)? == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = current_version(&tx)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate() {
        let version = index as i64 + 1;
        if version <= found {
            continue;
        }
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", version)?;
    }
    tx.commit()?;
    Ok(())
}

/// Checks, without writing, that the schema is one this build can read.
pub(super) fn check_readable(conn: &Connection) -> Result<()> {
    let found = current_version(conn)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < SCHEMA_VERSION {
        return Err(StoreError::SchemaOutdated {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(conn: &Connection) -> Vec<(i64, String)> {
        let mut stmt = conn
            .prepare("SELECT seq, payload FROM events ORDER BY seq")
            .unwrap();
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?))).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    fn sequence_rows(conn: &Connection) -> i64 {
        conn.query_row(
            "SELECT count(*) FROM sqlite_sequence WHERE name = 'events'",
            [],
            |row| row.get(0),
        )
        .unwrap()
    }

    fn append(conn: &Connection, message: &str) {
        conn.execute(
            "INSERT INTO events (run, ts, kind, payload) VALUES ('r', 't', 'log', ?1)",
            [message],
        )
        .unwrap();
    }

    #[test]
    fn events_keep_their_seqs_when_autoincrement_goes() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        // A blackboard as schema 7 left it, with a few events.
        for sql in &MIGRATIONS[..7] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 7).unwrap();
        conn.execute(
            "INSERT INTO runs (id, goal, repo, status, config, budgets, created_at, updated_at) \
             VALUES ('r', 'g', '/repo', 'running', '{}', '{}', 't', 't')",
            [],
        )
        .unwrap();
        for message in ["one", "two", "three"] {
            append(&conn, message);
        }
        let before = seqs(&conn);
        assert_eq!(
            sequence_rows(&conn),
            1,
            "AUTOINCREMENT keeps the highest seq there"
        );

        migrate(&mut conn).unwrap();
        assert_eq!(current_version(&conn).unwrap(), SCHEMA_VERSION);
        assert_eq!(seqs(&conn), before, "every event, with its seq");
        append(&conn, "four");
        let after = seqs(&conn);
        assert_eq!(after.len(), 4);
        assert_eq!(after[3].0, before[2].0 + 1, "numbering goes on after the last");
        assert_eq!(
            sequence_rows(&conn),
            0,
            "and no commit writes sqlite_sequence any more"
        );
        let indexed: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'events_run'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(indexed, 1);
        // The foreign key to the run came along.
        assert!(
            conn.execute(
                "INSERT INTO events (run, ts, kind, payload) VALUES ('nobody', 't', 'log', '{}')",
                []
            )
            .is_err()
        );
    }
}
