//! The blackboard on PostgreSQL: the whole conformance suite, each test in a scratch schema of its own (so
//! tests run in parallel on one database), plus what only PostgreSQL has (schemas, skipped locked rows,
//! reconnecting).
//!
//! The database comes from `AGENCY_TEST_POSTGRES_URL` (for example `host=127.0.0.1 user=postgres
//! password=... dbname=postgres`; `.ci/run` starts one and sets it). Without it every test here prints a
//! loud notice and passes, unless `AGENCY_REQUIRE_E2E=1`, when a missing database fails the test.
// Helpers outside `#[test]` functions unwrap too: a failure here is a test failure.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::Write;
use std::sync::Once;

use agency_store::conformance::{Fixture, new_run, sample_brief};
use agency_store::postgres::SCHEMA_VERSION;
use agency_store::{Blackboard, DEFAULT_CLAIM_LEASE, NewRun, PostgresBlackboard, StoreError};
use postgres::{Client, NoTls};

const URL_VAR: &str = "AGENCY_TEST_POSTGRES_URL";

fn url() -> Option<String> {
    std::env::var(URL_VAR).ok().filter(|url| !url.trim().is_empty())
}

/// Whether to skip: no database configured. Fails instead when end-to-end tests are required.
fn no_database() -> bool {
    if url().is_some() {
        return false;
    }
    if std::env::var("AGENCY_REQUIRE_E2E").as_deref() == Ok("1") {
        panic!(
            "AGENCY_REQUIRE_E2E=1 but {URL_VAR} is not set: the PostgreSQL tests need a database. Start one \
             (see the postgres block in .ci/run) and export {URL_VAR}='host=127.0.0.1 user=postgres \
             password=... dbname=postgres'"
        );
    }
    // Once per test binary, and straight to stderr: libtest captures `eprintln!` of passing tests.
    static NOTICE: Once = Once::new();
    NOTICE.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "\n!!!!!!!! SKIPPED: the PostgreSQL blackboard tests, {URL_VAR} is not set. Export it (for \
             example 'host=127.0.0.1 user=postgres password=... dbname=postgres') to run them. !!!!!!!!\n"
        );
    });
    true
}

/// A schema that exists for one test and is dropped with everything in it afterwards.
struct Scratch {
    url: String,
    schema: String,
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            url: url().unwrap(),
            schema: format!("agency_test_{}", uuid::Uuid::new_v4().simple()),
        }
    }

    fn open(&self) -> PostgresBlackboard {
        PostgresBlackboard::open_in_schema(&self.url, &self.schema).unwrap()
    }

    /// A plain connection on the scratch schema, to poke at it as another program would.
    fn raw(&self) -> Client {
        let mut client = Client::connect(&self.url, NoTls).unwrap();
        client
            .batch_execute(&format!("SET search_path TO \"{}\"", self.schema))
            .unwrap();
        client
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Ok(mut client) = Client::connect(&self.url, NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema));
        }
    }
}

fn fixture() -> Fixture {
    let scratch = Scratch::new();
    let (url, schema) = (scratch.url.clone(), scratch.schema.clone());
    Fixture::new(
        move |clock| {
            PostgresBlackboard::open_in_schema(&url, &schema)
                .map(|bb| Box::new(bb.with_clock(clock)) as Box<dyn Blackboard>)
        },
        scratch,
    )
}

agency_store::conformance_tests!(fixture, skip_when = no_database);

#[test]
fn open_creates_the_schema_and_records_its_version_once() {
    if no_database() {
        return;
    }
    let scratch = Scratch::new();
    let bb = scratch.open();
    assert_eq!(bb.schema(), scratch.schema);
    let version = |raw: &mut Client| -> Vec<i64> {
        raw.query("SELECT version FROM schema_version", &[])
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    };
    assert_eq!(version(&mut scratch.raw()), vec![SCHEMA_VERSION]);
    scratch.open();
    assert_eq!(version(&mut scratch.raw()), vec![SCHEMA_VERSION]);
}

#[test]
fn many_workers_may_create_and_migrate_one_new_schema_at_once() {
    if no_database() {
        return;
    }
    let scratch = Scratch::new();
    let opened: Vec<_> = std::thread::scope(|scope| {
        let openers: Vec<_> = (0..6)
            .map(|_| scope.spawn(|| PostgresBlackboard::open_in_schema(&scratch.url, &scratch.schema)))
            .collect();
        openers.into_iter().map(|o| o.join().unwrap()).collect()
    });
    for bb in &opened {
        assert!(bb.is_ok(), "{:?}", bb.as_ref().err());
    }
}

#[test]
fn a_newer_schema_is_refused() {
    if no_database() {
        return;
    }
    let scratch = Scratch::new();
    scratch.open();
    scratch
        .raw()
        .execute("UPDATE schema_version SET version = $1", &[&(SCHEMA_VERSION + 1)])
        .unwrap();
    let err = PostgresBlackboard::open_in_schema(&scratch.url, &scratch.schema).unwrap_err();
    assert!(matches!(err, StoreError::SchemaTooNew { .. }), "{err}");
    assert!(err.to_string().contains("upgrade agency"), "{err}");
}

#[test]
fn schemas_keep_blackboards_apart() {
    if no_database() {
        return;
    }
    let (a, b) = (Scratch::new(), Scratch::new());
    let (a, b) = ((a.open(), a), (b.open(), b));
    a.0.create_run(NewRun::new("goal", "/repo")).unwrap();
    assert_eq!(a.0.list_runs().unwrap().len(), 1);
    assert!(b.0.list_runs().unwrap().is_empty());
}

#[test]
fn a_claim_skips_a_brief_another_transaction_has_locked() {
    if no_database() {
        return;
    }
    let scratch = Scratch::new();
    let bb = scratch.open();
    let run = new_run(&bb);
    let first = sample_brief(run, "first");
    let second = sample_brief(run, "second");
    bb.insert_briefs(&[first.clone(), second.clone()]).unwrap();

    // Another worker is in the middle of claiming `first`: its row is locked.
    let mut raw = scratch.raw();
    let mut tx = raw.transaction().unwrap();
    tx.query(
        "SELECT id FROM briefs WHERE id = $1 FOR UPDATE",
        &[&first.id.0.simple().to_string()],
    )
    .unwrap();
    // This claim neither waits for that worker nor takes its brief.
    let claimed = bb
        .claim_next_brief(Some(run), "w2", DEFAULT_CLAIM_LEASE)
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, second.id);
    tx.rollback().unwrap();
    assert_eq!(
        bb.claim_next_brief(Some(run), "w2", DEFAULT_CLAIM_LEASE)
            .unwrap()
            .unwrap()
            .id,
        first.id
    );
}

#[test]
fn a_row_that_does_not_decode_is_corrupt_naming_record_and_column() {
    if no_database() {
        return;
    }
    let scratch = Scratch::new();
    let bb = scratch.open();
    let run = bb.create_run(NewRun::new("goal", "/repo")).unwrap();
    scratch
        .raw()
        .execute("UPDATE runs SET status = 'exploded'", &[])
        .unwrap();
    let err = bb.get_run(run.id).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { what: "run", .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("column `status`") && message.contains("exploded"),
        "{message}"
    );
}

#[test]
fn a_handle_reconnects_after_its_connection_is_lost() {
    if no_database() {
        return;
    }
    let scratch = Scratch::new();
    // A name of its own, so the test can find this handle's server process and end it.
    let name = format!("agency_reconnect_{}", uuid::Uuid::new_v4().simple());
    let url = if scratch.url.contains("://") {
        let sep = if scratch.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}application_name={name}", scratch.url)
    } else {
        format!("{} application_name={name}", scratch.url)
    };
    let bb = PostgresBlackboard::open_in_schema(&url, &scratch.schema).unwrap();
    let run = bb.create_run(NewRun::new("goal", "/repo")).unwrap();
    // A read and a write that find their connection gone each reconnect.
    end_connections(&scratch, &name);
    assert_eq!(bb.get_run(run.id).unwrap().id, run.id);
    end_connections(&scratch, &name);
    let running = bb
        .set_run_status(run.id, None, agency_store::RunStatus::Running)
        .unwrap();
    assert_eq!(running.status, agency_store::RunStatus::Running);
}

#[test]
fn a_driver_lease_whose_session_ended_is_taken_again_or_refused_if_another_took_it() {
    if no_database() {
        return;
    }
    let scratch = Scratch::new();
    let bb = scratch.open();
    let run = bb.create_run(NewRun::new("goal", "/repo")).unwrap();
    let holder = format!("lease_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let lease = bb.lock_driver(run.id, &holder).unwrap();
    // The lease's session ends (a server restart would end it too): the lock is gone with it.
    end_connections_like(&scratch, &format!("{holder}%"));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    lease.revalidate().unwrap();
    // Taken again: a second driver is refused.
    let other = scratch.open();
    assert!(matches!(
        other.lock_driver(run.id, "second"),
        Err(StoreError::Driven { .. })
    ));

    // Ended again, and this time another driver takes the run before the first looks: the first must
    // stop, not drive beside it.
    end_connections_like(&scratch, &format!("{holder}%"));
    let _second = other.lock_driver(run.id, "second").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let refused = lease.revalidate().unwrap_err();
    assert!(matches!(refused, StoreError::Driven { .. }), "{refused}");
    assert!(refused.to_string().contains("second"), "{refused}");
}

/// Ends the server processes of the connections whose name is `LIKE pattern`, and waits until they are
/// gone.
fn end_connections_like(scratch: &Scratch, pattern: &str) {
    let mut raw = scratch.raw();
    let ended = raw
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1",
            &[&pattern],
        )
        .unwrap();
    assert_eq!(ended.len(), 1, "{pattern}");
    while raw
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1",
            &[&pattern],
        )
        .unwrap()
        .get::<_, i64>(0)
        > 0
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Ends the server processes of the connections named `name`, and waits until they are gone (termination
/// is asynchronous).
fn end_connections(scratch: &Scratch, name: &str) {
    let mut raw = scratch.raw();
    let ended = raw
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .unwrap();
    assert_eq!(ended.len(), 1);
    let remaining = |raw: &mut Client| -> i64 {
        raw.query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .unwrap()
        .get(0)
    };
    while remaining(&mut raw) > 0 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_bad_connection_string_says_what_is_expected() {
    let err = PostgresBlackboard::open("postgres://[::1").unwrap_err();
    assert!(
        err.to_string().contains("not a PostgreSQL connection string"),
        "{err}"
    );
    let err = PostgresBlackboard::open_in_schema("host=127.0.0.1", "Bad-Name").unwrap_err();
    assert!(err.to_string().contains("not a usable schema name"), "{err}");
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PostgresBlackboard>();
}

#[test]
fn a_reader_paging_by_seq_never_misses_an_event_of_concurrent_writers() {
    if no_database() {
        return;
    }
    let scratch = Scratch::new();
    let reader = scratch.open();
    let run = new_run(&reader);
    let (writers, per_writer) = (4, 50);
    let done = std::sync::atomic::AtomicBool::new(false);
    let seen = std::thread::scope(|scope| {
        let paging = scope.spawn(|| {
            let mut seen = Vec::new();
            let mut last = 0;
            loop {
                // Read `done` before the page: once it is set, this page sees every committed event.
                let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                let page = reader.events_after(Some(run), last, 1000).unwrap();
                if let Some(event) = page.last() {
                    last = event.seq;
                }
                seen.extend(page.into_iter().map(|e| e.seq));
                if finished {
                    return seen;
                }
            }
        });
        let writing: Vec<_> = (0..writers)
            .map(|_| {
                scope.spawn(|| {
                    let bb = scratch.open();
                    for n in 0..per_writer {
                        let event = agency_core::NewEvent::new(
                            run,
                            agency_core::EventKind::Log,
                            serde_json::json!({ "n": n }),
                        );
                        bb.append_event(event).unwrap();
                    }
                })
            })
            .collect();
        for writer in writing {
            writer.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        paging.join().unwrap()
    });
    let all: Vec<i64> = reader
        .events_after(Some(run), 0, 10_000)
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(all.len(), 1 + writers * per_writer);
    assert_eq!(seen, all, "the pager saw every event, in order, exactly once");
}
