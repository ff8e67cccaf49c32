//! Choosing a backend from one string, as a command line or an environment variable gives it.

use std::path::Path;

use crate::error::Result;
use crate::{Blackboard, PostgresBlackboard, SqliteBlackboard};

/// The keys a key/value PostgreSQL connection string (`host=... dbname=...`) may start with.
const CONNINFO_KEYS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "user",
    "password",
    "dbname",
    "options",
    "application_name",
    "connect_timeout",
    "sslmode",
    "target_session_attrs",
];

/// Opens the blackboard `url` names. A PostgreSQL connection string (`postgres://...`, `postgresql://...`,
/// or the key/value form `host=... user=... dbname=...`) opens a [`PostgresBlackboard`] in its default
/// schema; anything else is the path of a SQLite file (an optional `sqlite://` prefix is dropped), opened
/// with [`SqliteBlackboard::open`], which creates it if needed. Both migrate the schema.
pub fn open_url(url: &str) -> Result<Box<dyn Blackboard>> {
    let url = url.trim();
    if is_postgres(url) {
        return Ok(Box::new(PostgresBlackboard::open(url)?));
    }
    let path = url.strip_prefix("sqlite://").unwrap_or(url);
    Ok(Box::new(SqliteBlackboard::open(Path::new(path))?))
}

/// Whether `url` is a PostgreSQL connection string (`postgres://...`, `postgresql://...`, or key/value
/// pairs starting with a libpq key) rather than a file path: the choice [`open_url`] makes, for callers
/// that must know the backend before opening it.
pub fn is_postgres(url: &str) -> bool {
    let url = url.trim();
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return true;
    }
    url.split_whitespace()
        .next()
        .and_then(|first| first.split_once('='))
        .is_some_and(|(key, _)| CONNINFO_KEYS.contains(&key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_conninfo_strings_are_postgres_and_paths_are_sqlite() {
        for pg in [
            "postgres://u:p@db:5432/agency",
            "postgresql://db/agency",
            "host=127.0.0.1 user=postgres dbname=postgres",
            "  dbname=agency",
        ] {
            assert!(is_postgres(pg), "{pg}");
        }
        for file in [".agency/agency.db", "/tmp/a=b.db", "sqlite://x.db", "agency.db"] {
            assert!(!is_postgres(file), "{file}");
        }
    }

    #[test]
    fn a_path_opens_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agency.db");
        let bb = open_url(&format!("sqlite://{}", path.display())).unwrap();
        assert!(bb.list_runs().unwrap().is_empty());
        assert!(path.is_file());
    }
}
