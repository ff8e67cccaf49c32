//! The redacting decorator over SQLite passes the whole conformance suite: wrapping a backend changes what
//! is written, never how the blackboard behaves.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agency_core::redact::Redactor;
use agency_store::conformance::Fixture;
use agency_store::{Blackboard, RedactingBlackboard, SqliteBlackboard};

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".agency").join("agency.db");
    Fixture::new(
        move |clock| {
            let inner: Arc<dyn Blackboard> = Arc::new(SqliteBlackboard::open(&path)?.with_clock(clock));
            let redactor =
                Redactor::new([("CONFORMANCE_TOKEN".to_string(), "not-in-any-record-0".to_string())]);
            Ok(Box::new(RedactingBlackboard::new(inner, redactor)) as Box<dyn Blackboard>)
        },
        dir,
    )
}

agency_store::conformance_tests!(fixture);
