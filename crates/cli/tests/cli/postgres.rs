//! `agency` on a PostgreSQL blackboard (`--db` / `AGENCY_DB` a connection string): a whole run, the
//! commands that read and decide on it, a second process joining as `agency worker`, the refusal of
//! hook-gated runtimes, and passwords never shown.
//!
//! Each test gets a database of its own, created through `AGENCY_TEST_POSTGRES_URL` (for example
//! `host=127.0.0.1 user=postgres password=... dbname=postgres`) and dropped afterwards. Without the
//! variable every test here prints a loud notice and passes, unless `AGENCY_REQUIRE_E2E=1`, when a missing
//! database fails the test.

use std::io::{BufRead, BufReader, Write};
use std::process::Command;
use std::sync::Once;
use std::time::{Duration, Instant};

use agency_core::BriefStatus;
use agency_core::event::EventKind;
use agency_core::gate::GateStatus;
use agency_store::{Blackboard, PostgresBlackboard, RunStatus};
use postgres::{Client, NoTls};

use crate::support::{CALCULATOR_GOAL, Repo, finish, runtime_of, wait_for};

const URL_VAR: &str = "AGENCY_TEST_POSTGRES_URL";

/// The engine's medium-profile run: T1 → T3 → two T4s (fix-add, fix-mul) → T5s → accept.
pub(crate) const SCRIPT: &str = include_str!("../../../engine/tests/scripts/medium.yaml");

fn admin_url() -> Option<String> {
    std::env::var(URL_VAR).ok().filter(|url| !url.trim().is_empty())
}

/// Whether to skip: no database configured. Fails instead when end-to-end tests are required.
pub(crate) fn no_database() -> bool {
    if admin_url().is_some() {
        return false;
    }
    assert!(
        std::env::var("AGENCY_REQUIRE_E2E").as_deref() != Ok("1"),
        "AGENCY_REQUIRE_E2E=1 but {URL_VAR} is not set: the PostgreSQL CLI tests need a database. Start one \
         (see the postgres block in .ci/run) and export {URL_VAR}='host=127.0.0.1 user=postgres \
         password=... dbname=postgres'"
    );
    static NOTICE: Once = Once::new();
    NOTICE.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "\n!!!!!!!! SKIPPED: the agency CLI tests on PostgreSQL, {URL_VAR} is not set. Export it (for \
             example 'host=127.0.0.1 user=postgres password=... dbname=postgres') to run them. !!!!!!!!\n"
        );
    });
    true
}

/// `url` naming the database `dbname` instead of its own.
fn with_dbname(url: &str, dbname: &str) -> String {
    for scheme in ["postgresql://", "postgres://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let (head, query) = rest.split_once('?').map_or((rest, None), |(h, q)| (h, Some(q)));
            let authority = head.split_once('/').map_or(head, |(a, _)| a);
            let query = query.map(|q| format!("?{q}")).unwrap_or_default();
            return format!("{scheme}{authority}/{dbname}{query}");
        }
    }
    // Key/value form: a later key wins.
    format!("{url} dbname={dbname}")
}

/// A database that exists for one test and is dropped with everything in it afterwards.
pub(crate) struct Database {
    admin: String,
    name: String,
    pub(crate) url: String,
}

impl Database {
    pub(crate) fn new() -> Database {
        let admin = admin_url().unwrap();
        let name = format!(
            "agency_cli_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let mut client = Client::connect(&admin, NoTls).unwrap();
        client
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .unwrap();
        let url = with_dbname(&admin, &name);
        Database { admin, name, url }
    }

    /// A handle on the blackboard the CLI uses, as another program would open it.
    pub(crate) fn store(&self) -> PostgresBlackboard {
        PostgresBlackboard::open(&self.url).unwrap()
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut client) = Client::connect(&self.admin, NoTls) {
            let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name));
        }
    }
}

/// A repository holding the calculator, with agency set up on the PostgreSQL blackboard `db` and the
/// script at `.agency/script.yaml`.
pub(crate) fn calculator(db: &Database, script: &str) -> Repo {
    let repo = Repo::new();
    let init = repo.agency(&["--db", &db.url, "init"]).success();
    assert!(init.stdout().contains("created"), "{}", init.stdout());
    repo.commit_calculator();
    repo.write_script(script);
    repo
}

/// `agency` with `args` in the background, the blackboard in its environment.
pub(crate) fn spawn(repo: &Repo, db: &Database, args: &[&str]) -> crate::support::Running {
    repo.spawn(args, &[("AGENCY_DB", &db.url)])
}

/// The password in a key/value or URL connection string, if it has one.
fn password_of(url: &str) -> Option<String> {
    if let Some(rest) = url
        .split_whitespace()
        .find_map(|pair| pair.strip_prefix("password="))
    {
        return Some(rest.trim_matches('\'').to_string());
    }
    let rest = url.split_once("://")?.1;
    let userinfo = rest.rsplit_once('@')?.0;
    Some(userinfo.split_once(':')?.1.to_string())
}

#[test]
fn a_scripted_run_on_postgres_completes_and_runs_inspect_and_watch_read_it() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let repo = calculator(&db, SCRIPT);
    let script = repo.path().join(".agency").join("script.yaml");
    let run = repo
        .agency(&[
            "--db",
            &db.url,
            "run",
            CALCULATOR_GOAL,
            "--auto-approve",
            "--script",
            script.to_str().unwrap(),
        ])
        .success();
    assert!(run.stdout().contains("succeeded"), "{}", run.stdout());

    // The run is in PostgreSQL, not in a SQLite file.
    let store = db.store();
    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Succeeded);
    assert!(!repo.db().exists(), "a SQLite blackboard was created");
    let id = runs[0].id;

    let listed = repo.agency(&["--db", &db.url, "runs"]).success();
    assert!(listed.stdout().contains(&id.short()), "{}", listed.stdout());
    assert!(listed.stdout().contains("succeeded"), "{}", listed.stdout());
    let tree = repo.agency(&["--db", &db.url, "inspect", &id.short()]).success();
    assert!(
        tree.stdout().contains("T4 workers: 2/2 done"),
        "{}",
        tree.stdout()
    );
    let log = repo.agency(&["--db", &db.url, "watch", &id.short()]).success();
    assert!(log.stdout().contains("ACCEPTED"), "{}", log.stdout());

    // The work is on the integration branch.
    assert_eq!(
        repo.git_output(&["show", &format!("agency/{}/integration:mul.sh", id.short())]),
        "# mul A B: prints A * B\necho $(($1 * $2))\n"
    );

    // No output shows the password.
    if let Some(password) = password_of(&db.url) {
        for out in [&run, &listed, &tree, &log] {
            assert!(!out.stdout().contains(&password) && !out.stderr().contains(&password));
        }
    }
}

#[test]
fn a_wrong_password_is_an_error_that_does_not_show_it() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let repo = Repo::new();
    let wrong = format!("{} password=not-the-pw-4711", db.url);
    let wrong = match wrong.strip_prefix("postgres") {
        // A URL: put the wrong password in its user info instead.
        Some(_) => {
            let (scheme, rest) = db.url.split_once("://").unwrap();
            let (userinfo, host) = rest.rsplit_once('@').unwrap_or(("postgres", rest));
            let user = userinfo.split(':').next().unwrap();
            format!("{scheme}://{user}:not-the-pw-4711@{host}")
        }
        None => wrong,
    };
    let out = repo.agency(&["--db", &wrong, "runs"]);
    assert_ne!(out.code(), Some(0), "{}", out.stdout());
    assert!(out.stderr().contains("PostgreSQL"), "{}", out.stderr());
    assert!(!out.stderr().contains("not-the-pw-4711"), "{}", out.stderr());
    assert!(!out.stdout().contains("not-the-pw-4711"), "{}", out.stdout());
    // Nor does the help, with the connection string in AGENCY_DB.
    let help = Command::new(env!("CARGO_BIN_EXE_agency"))
        .arg("--help")
        .env("AGENCY_DB", &wrong)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("not-the-pw-4711"));
}

#[test]
fn a_worker_process_runs_agents_for_a_run_another_process_drives() {
    if no_database() {
        return;
    }
    let db = Database::new();
    // Each implementer takes a second, so the driver (one agent at a time) leaves the other to the worker.
    let slow = SCRIPT
        .replace(
            "    brief: ws-arith/t4/fix-add\n    reply:\n      tool_calls:\n",
            "    brief: ws-arith/t4/fix-add\n    reply:\n      tool_calls:\n        - {name: run_command, input: {argv: [sleep, \"1\"]}}\n",
        )
        .replace(
            "    brief: ws-arith/t4/fix-mul\n    reply:\n      tool_calls:\n",
            "    brief: ws-arith/t4/fix-mul\n    reply:\n      tool_calls:\n        - {name: run_command, input: {argv: [sleep, \"1\"]}}\n",
        );
    assert_eq!(slow.matches("sleep").count(), 2, "the script changed shape");
    let repo = calculator(&db, &slow);
    repo.edit_team(&[("  concurrency: 4 ", "  concurrency: 1 ")]);

    // The driver stops at T1's plan gate (no --auto-approve) until the worker is there.
    let driver = spawn(
        &repo,
        &db,
        &["run", CALCULATOR_GOAL, "--script", ".agency/script.yaml"],
    );
    let store = db.store();
    let run = crate::support::started_run(&store);
    wait_for(
        || (!store.pending_gates(Some(run)).unwrap().is_empty()).then_some(()),
        "the plan gate",
    );
    let mut worker = spawn(
        &repo,
        &db,
        &[
            "worker",
            &run.short(),
            "--concurrency",
            "1",
            "--script",
            ".agency/script.yaml",
        ],
    );
    let worker_pid = worker.id();
    let mut first = String::new();
    BufReader::new(worker.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("works on run"), "{first}");
    let worker_name = first.split_whitespace().next().unwrap().to_string();
    assert!(worker_name.ends_with(&format!("-{worker_pid}")), "{worker_name}");

    // Every gate is approved from a third process, as a human would.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !store.get_run(run).unwrap().status.is_terminal() {
        if Instant::now() > deadline {
            let (_, driver_out) = finish(driver, Duration::ZERO);
            let (_, worker_out) = finish(worker, Duration::ZERO);
            let log = repo.agency(&["--db", &db.url, "watch", &run.short(), "--verbose"]);
            panic!(
                "the run did not end within 60s\ndriver: {driver_out}\nworker: {worker_out}\nlog:\n{}",
                log.stdout()
            );
        }
        let pending = store.pending_gates(Some(run)).unwrap();
        if pending.iter().any(|g| g.status == GateStatus::Pending) {
            repo.agency(&["--db", &db.url, "approve", &run.short()]).success();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (driver_code, driver_out) = finish(driver, Duration::from_secs(30));
    assert_eq!(driver_code, Some(0), "driver: {driver_out}");
    let (worker_code, worker_out) = finish(worker, Duration::from_secs(30));
    assert_eq!(worker_code, Some(0), "worker: {worker_out}");
    assert!(worker_out.contains("succeeded"), "{worker_out}");
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);

    // The worker claimed at least one brief, ran its agent, and its outcome stands.
    let events = store.events_after(Some(run), 0, 100_000).unwrap();
    let by_worker: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::BriefStatus && e.payload["claimed_by"] == worker_name.as_str())
        .filter_map(|e| e.brief)
        .collect();
    assert!(!by_worker.is_empty(), "the worker claimed nothing; {worker_out}");
    for brief in &by_worker {
        assert!(
            events
                .iter()
                .any(|e| e.kind == EventKind::Spawned && e.brief == Some(*brief)),
            "no agent spawned for a brief the worker claimed"
        );
        assert!(
            !events.iter().any(|e| e.brief == Some(*brief)
                && e.payload["to"] == "pending"
                && e.payload["from"] == "running"),
            "a brief the worker claimed was taken back"
        );
        assert_ne!(store.get_brief(*brief).unwrap().status, BriefStatus::Running);
    }
    // Its arrival is in the run's log.
    assert!(events.iter().any(|e| e.kind == EventKind::Log
        && e.payload["tag"] == "WORKER"
        && e.payload["worker"] == worker_name.as_str()));
}

#[test]
fn a_run_with_hook_gated_runtimes_on_postgres_fails_at_start_saying_why() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let repo = calculator(&db, SCRIPT);
    let (line, on_codex) = runtime_of("t4", "codex");
    repo.edit_team(&[(line, &on_codex)]);
    let out = repo
        .agency(&[
            "--db",
            &db.url,
            "run",
            CALCULATOR_GOAL,
            "--script",
            ".agency/script.yaml",
        ])
        .fails_with(3);
    let err = out.stderr();
    assert!(err.contains("t4 (codex)"), "{err}");
    assert!(err.contains("agency hook"), "{err}");
    assert!(err.contains("SQLite"), "{err}");
    assert!(err.contains("runtime: builtin"), "{err}");
    if let Some(password) = password_of(&db.url) {
        assert!(!err.contains(&password), "{err}");
    }
    // Nothing was started.
    assert!(db.store().list_runs().unwrap().is_empty());
}
