//! The query plans the runner depends on, pinned: every index the schema drops saves page writes on each
//! commit, and this is what makes sure none of the statements a pass or a claim runs turns into a scan of
//! the whole `briefs` or `events` table when one is dropped (SQLite would still answer, only slowly).

use rusqlite::Connection;

use super::{SqliteBlackboard, briefs, events, gates, runs};

/// The plan SQLite chose for `sql`, one `EXPLAIN QUERY PLAN` line per step (its parameters left unbound:
/// the store plans each statement once, for any values).
fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let mut rows = stmt.raw_query();
    let mut lines = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        lines.push(row.get::<_, String>(3).unwrap());
    }
    lines
}

/// Asserts each statement's plan, step by step.
fn assert_plans(conn: &Connection, expected: &[(&str, &[&str])]) {
    for (sql, steps) in expected {
        assert_eq!(plan(conn, sql), *steps, "the plan of {sql}");
    }
}

fn check(store: &SqliteBlackboard) {
    let conn = store.conn.lock().unwrap();
    let dependencies = [
        "CORRELATED SCALAR SUBQUERY 1",
        "SCAN d VIRTUAL TABLE INDEX 1:",
        "SEARCH dep USING INDEX sqlite_autoindex_briefs_1 (id=?) LEFT-JOIN",
    ];
    // The offer's tiers are read once per statement; its labels are checked against the run's needs of
    // the brief's workstream through the needs' primary key.
    let offered_tiers = ["SCAN json_each VIRTUAL TABLE INDEX 1:", "CREATE BLOOM FILTER"];
    let offered_labels = [
        "SEARCH n USING COVERING INDEX sqlite_autoindex_placement_needs_1 (run=? AND workstream=?)",
        "LIST SUBQUERY 3",
        "SCAN json_each VIRTUAL TABLE INDEX 1:",
        "CREATE BLOOM FILTER",
    ];
    let claim_in_run: Vec<&str> = [
        "SEARCH b USING INDEX briefs_run_status (run=? AND status=?)",
        "LIST SUBQUERY 2",
    ]
    .into_iter()
    .chain(offered_tiers)
    .chain(dependencies)
    .chain(["CORRELATED SCALAR SUBQUERY 4"])
    .chain(offered_labels)
    .collect();
    let claim: Vec<&str> = [
        "SCAN r USING COVERING INDEX sqlite_autoindex_runs_1",
        "SEARCH b USING INDEX briefs_run_status (run=? AND status=?)",
        "LIST SUBQUERY 2",
    ]
    .into_iter()
    .chain(offered_tiers)
    .chain(dependencies)
    .chain(["CORRELATED SCALAR SUBQUERY 4"])
    .chain(offered_labels)
    .chain(["USE TEMP B-TREE FOR ORDER BY"])
    .collect();
    // A count's statuses are a list of values: no temporary index is built for them.
    let count_in_run = ["SEARCH briefs USING INDEX briefs_workstream (run=? AND workstream=?)"];
    let count_children = ["SEARCH briefs USING INDEX briefs_parent (parent=?)"];
    assert_plans(
        &conn,
        &[
            (briefs::CLAIMABLE_IN_RUN, &claim_in_run),
            (briefs::CLAIMABLE, &claim),
            (
                briefs::EXPIRED_IN_RUN,
                &["SEARCH briefs USING INDEX briefs_run_status (run=? AND status=?)"],
            ),
            (
                briefs::EXPIRED,
                &[
                    "SCAN r USING COVERING INDEX sqlite_autoindex_runs_1",
                    "SEARCH b USING INDEX briefs_run_status (run=? AND status=?)",
                    "USE TEMP B-TREE FOR ORDER BY",
                ],
            ),
            (
                &briefs::by_status_sql(),
                &["SEARCH briefs USING INDEX briefs_run_status (run=? AND status=?)"],
            ),
            (
                &briefs::children_sql(),
                &["SEARCH briefs USING INDEX briefs_parent (parent=?)"],
            ),
            (
                briefs::CHILDREN_STATES,
                &["SEARCH briefs USING INDEX briefs_parent (parent=?)"],
            ),
            (
                &briefs::in_workstream_sql(),
                &["SEARCH briefs USING INDEX briefs_workstream (run=? AND workstream=?)"],
            ),
            (&briefs::count_sql("run", 2), &count_in_run),
            (&briefs::count_sql("parent", 2), &count_children),
            (
                &events::after_in_run_sql(),
                &["SEARCH events USING INDEX events_run (run=? AND seq>?)"],
            ),
            (
                events::BRIEFS_AFTER,
                &["SEARCH events USING INDEX events_run (run=? AND seq>?)"],
            ),
            (
                events::WORKSTREAMS_AFTER,
                &[
                    "SEARCH e USING INDEX events_run (run=? AND seq>?)",
                    "SEARCH b USING INDEX sqlite_autoindex_briefs_1 (id=?)",
                ],
            ),
            (
                briefs::STATUS,
                &["SEARCH briefs USING INDEX sqlite_autoindex_briefs_1 (id=?)"],
            ),
            (
                runs::STATUS,
                &["SEARCH runs USING INDEX sqlite_autoindex_runs_1 (id=?)"],
            ),
            (
                &gates::pending_in_run_sql(),
                &["SEARCH gates USING INDEX gates_run (run=? AND status=?)"],
            ),
            (
                &events::of_kinds_after_sql(3),
                &["SEARCH events USING INDEX events_run (run=? AND seq>?)"],
            ),
            (
                &gates::of_kind_sql(),
                &[
                    "SEARCH gates USING INDEX gates_run (run=?)",
                    "USE TEMP B-TREE FOR ORDER BY",
                ],
            ),
            (
                events::LAST_SEQ_OF_RUN,
                &["SEARCH events USING COVERING INDEX events_run (run=?)"],
            ),
        ],
    );
}

#[test]
fn the_runners_statements_search_their_indexes() {
    check(&SqliteBlackboard::open_in_memory().unwrap());
}

#[test]
fn an_upgraded_database_plans_as_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blackboard.db");
    drop(SqliteBlackboard::open(&path).unwrap());
    // What schema 6 had and schema 7 drops, without what schemas 10 and 11 add.
    let old = Connection::open(&path).unwrap();
    old.execute_batch(
        "CREATE INDEX briefs_claimable ON briefs (status, created_at); \
         CREATE INDEX briefs_lease ON briefs (status, lease_until); \
         ALTER TABLE briefs DROP COLUMN claim_generation; DROP TABLE placement_needs; \
         DROP TABLE runner_offers; PRAGMA user_version = 6;",
    )
    .unwrap();
    drop(old);
    let store = SqliteBlackboard::open(&path).unwrap();
    let left: i64 = store
        .conn
        .lock()
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name IN ('briefs_claimable', 'briefs_lease')",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
    check(&store);
}
