//! Faults a run survives (issue 33): each test injects one — PostgreSQL connections killed mid-run, a
//! second runner on a driven run — and asserts a clear report, nothing lost, and a run that still succeeds. docs/operations.md's "What
//! survives what" table is backed by these tests.

use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use postgres::{Client, NoTls};

use crate::postgres::{Database, SCRIPT, calculator, no_database, spawn};
use crate::support::{CALCULATOR_GOAL, Repo, finish, wait_for};

/// The medium script with each implementer taking a second, so a run lasts long enough to be interrupted.
fn slow_script() -> String {
    slow_script_of(1)
}

/// The medium script with each implementer taking `seconds` (a `sleep` it runs).
fn slow_script_of(seconds: u32) -> String {
    let slow = SCRIPT
        .replace(
            "    brief: ws-arith/t4/fix-add\n    reply:\n      tool_calls:\n",
            "    brief: ws-arith/t4/fix-add\n    reply:\n      tool_calls:\n        - {name: run_command, input: {argv: [sleep, \"SECONDS\"]}}\n",
        )
        .replace(
            "    brief: ws-arith/t4/fix-mul\n    reply:\n      tool_calls:\n",
            "    brief: ws-arith/t4/fix-mul\n    reply:\n      tool_calls:\n        - {name: run_command, input: {argv: [sleep, \"SECONDS\"]}}\n",
        )
        .replace("SECONDS", &seconds.to_string());
    assert_eq!(slow.matches("sleep").count(), 2, "the script changed shape");
    slow
}

/// Ends every server process connected to `db` (other than the one asking): what a PostgreSQL restart
/// does to its clients, without restarting a server other tests share. Returns how many it ended.
fn kill_connections(db: &Database) -> usize {
    let mut admin = Client::connect(&db.url, NoTls).unwrap();
    admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .len()
}

#[test]
fn a_run_survives_its_postgres_connections_being_killed_mid_run() {
    if no_database() {
        return;
    }
    let db = Database::new();
    let repo = calculator(&db, &slow_script());
    let runner = spawn(
        &repo,
        &db,
        &[
            "run",
            CALCULATOR_GOAL,
            "--auto-approve",
            "--script",
            ".agency/script.yaml",
        ],
    );
    let store = db.store();
    let run = wait_for(
        || store.list_runs().ok()?.first().map(|r| r.id),
        "the run to start",
    );
    // Once an agent is at work, every connection of the runner is ended, three times over.
    wait_for(
        || {
            let events = store.events_after(Some(run), 0, 100_000).ok()?;
            events.iter().any(|e| e.kind == EventKind::Spawned).then_some(())
        },
        "an agent to start",
    );
    let mut killed = 0;
    for _ in 0..3 {
        killed += kill_connections(&db);
        std::thread::sleep(Duration::from_millis(700));
    }
    assert!(killed >= 3, "ended only {killed} connections");

    let started = Instant::now();
    let (code, out) = finish(runner, Duration::from_secs(120));
    assert_eq!(code, Some(0), "after {:?}: {out}", started.elapsed());
    assert!(out.contains("succeeded"), "{out}");
    // The pause is reported with its cause, not hidden.
    assert!(out.contains("reconnected to PostgreSQL"), "{out}");
    assert!(!out.contains("pg_hba"), "{out}");
    // Nothing lost: the run and its work are there.
    let store = db.store();
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
    assert_eq!(
        repo.git_output(&["show", &format!("agency/{}/integration:mul.sh", run.short())]),
        "# mul A B: prints A * B\necho $(($1 * $2))\n"
    );
}

/// A second runner on a run one already drives is refused before it writes anything (no `RUNTIMES` line,
/// nothing at all), naming the runner that drives it; once that runner is stopped, `--resume` takes the
/// run to success.
#[test]
fn a_second_runner_is_refused_without_writing_and_the_run_resumes_after_the_first() {
    let (repo, script) = Repo::calculator(SCRIPT);
    let script = script.to_str().unwrap();
    let first = repo.spawn(&["run", CALCULATOR_GOAL, "--script", script], &[]);
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    let before = store.last_seq(Some(run)).unwrap();
    let second = repo.agency(&["run", "--resume", &run.short(), "--script", script]);
    assert_ne!(second.code(), Some(0), "{}", second.stdout());
    assert!(
        second.stderr().contains("is already being driven by runner-"),
        "{}",
        second.stderr()
    );
    assert_eq!(
        store.last_seq(Some(run)).unwrap(),
        before,
        "the refused runner wrote to the run: {:?}",
        store.events_after(Some(run), before, 100).unwrap()
    );

    let sent = std::process::Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let (code, out) = finish(first, Duration::from_secs(30));
    assert_eq!(code, Some(130), "{out}");
    let resumed = repo
        .agency(&[
            "run",
            "--resume",
            &run.short(),
            "--auto-approve",
            "--script",
            script,
        ])
        .success();
    assert!(resumed.stdout().contains("succeeded"), "{}", resumed.stdout());
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
}

/// A runner stopped (SIGSTOP) for four times its lease while its agents work, then continued: it renews
/// its own live agents' claims before it judges any lease — on its monotonic clock — so it takes back
/// none of its own briefs and starts no agent twice; the run succeeds.
#[test]
fn a_runner_stopped_past_its_lease_keeps_its_own_live_agents() {
    let (repo, script) = Repo::calculator(&slow_script_of(3));
    repo.edit_team(&[("  claim_lease_seconds: 600 ", "  claim_lease_seconds: 1 ")]);
    let script = script.to_str().unwrap();
    let runner = repo.spawn(
        &["run", CALCULATOR_GOAL, "--auto-approve", "--script", script],
        &[],
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = wait_for(
        || store.list_runs().ok()?.first().map(|r| r.id),
        "the run to start",
    );
    wait_for(
        || {
            let events = store.events_after(Some(run), 0, 100_000).ok()?;
            events
                .iter()
                .any(|e| e.kind == EventKind::Spawned && e.tier == Some(agency_core::Tier::T4))
                .then_some(())
        },
        "an implementer to start",
    );
    let signal = |name: &str| {
        let sent = std::process::Command::new("kill")
            .args([name, &runner.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_secs(4));
    signal("-CONT");

    let (code, out) = finish(runner, Duration::from_secs(120));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("succeeded"), "{out}");
    let events = store.events_after(Some(run), 0, 100_000).unwrap();
    let reclaimed: Vec<_> = events
        .iter()
        .filter(|e| {
            e.payload["reason"] == "lease_expired"
                || (e.kind == EventKind::Log && e.payload["tag"] == "RECLAIMED")
        })
        .collect();
    assert!(
        reclaimed.is_empty(),
        "the runner took back its own briefs: {reclaimed:?}"
    );
    let mut spawns = std::collections::BTreeMap::new();
    for event in events.iter().filter(|e| e.kind == EventKind::Spawned) {
        *spawns.entry(event.brief).or_insert(0) += 1;
    }
    assert!(
        spawns.values().all(|&n| n == 1),
        "a brief started twice: {spawns:?}"
    );
}

/// A `packed-refs.lock` left in the repository by a git process that died (no live git works in the
/// repository) is named in the run's log with its age and removed, and the run completes without the
/// second-long wait git makes on it at every ref deletion (before, this run took 29 s instead of 3 s here).
#[test]
fn a_stale_packed_refs_lock_is_named_and_removed_and_the_run_does_not_stall() {
    let (repo, script) = Repo::calculator(SCRIPT);
    let lock = repo.path().join(".git").join("packed-refs.lock");
    std::fs::write(&lock, "").unwrap();
    let started = Instant::now();
    let out = repo
        .agency(&[
            "run",
            CALCULATOR_GOAL,
            "--auto-approve",
            "--script",
            script.to_str().unwrap(),
        ])
        .success();
    let took = started.elapsed();
    assert!(out.stdout().contains("succeeded"), "{}", out.stdout());
    assert!(!lock.exists(), "the stale lock is still there");
    let line = out
        .stdout()
        .lines()
        .find(|l| l.contains("GIT LOCK"))
        .unwrap_or_else(|| panic!("no GIT LOCK line:\n{}", out.stdout()))
        .to_string();
    assert!(
        line.contains("packed-refs.lock") && line.contains("age "),
        "{line}"
    );
    // The same run without the lock takes about 3 s here; with the lock left in place it took 29 s.
    assert!(
        took < Duration::from_secs(20),
        "the run took {took:?}:\n{}",
        out.stdout()
    );
}

/// A model call over HTTP to the fake Anthropic server with the fault modes of issue 33's suite.
mod provider_over_http {
    use std::time::{Duration, Instant};

    use agency_llm::{
        AnthropicClient, AnthropicConfig, ApiKey, CancelToken, LlmError, Message, Provider, Request,
        RetryPolicy, Retrying, Timeouts,
    };
    use agency_testkit::{FakeAnthropic, Fault, Reply};

    /// A client of `server` that retries `attempts` times in all, waiting 10 ms doubling (at most 200 ms,
    /// whatever `retry-after` asks), and calls a stream stalled after `idle` (the idle timeout).
    fn client(server: &FakeAnthropic, attempts: u32, idle: Duration) -> Retrying<AnthropicClient> {
        let mut config = AnthropicConfig::new("claude-fake", ApiKey::new("dummy-key-for-the-fake"));
        config.base_url = server.base_url();
        config.timeouts = Timeouts {
            connect: Duration::from_secs(5),
            read: idle,
            request: Duration::from_secs(60),
        };
        let policy = RetryPolicy {
            max_attempts: attempts,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(200),
            ..RetryPolicy::default()
        };
        Retrying::new(AnthropicClient::new(config).unwrap(), policy)
    }

    fn call(provider: &dyn Provider) -> Result<agency_llm::Response, LlmError> {
        let request = Request {
            messages: vec![Message::user("hello")],
            max_tokens: 100,
            ..Request::default()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(provider.complete(&request, &mut |_| {}, &CancelToken::new()))
    }

    fn messages_asked(server: &FakeAnthropic) -> usize {
        server
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path.starts_with("/v1/messages"))
            .count()
    }

    #[test]
    fn transient_529_500_and_429_are_retried_inside_the_call_with_backoff() {
        let server = FakeAnthropic::start(vec![Reply::text("fine")]).unwrap();
        server.fail_next([
            Fault::Status {
                status: 529,
                retry_after: Some(0),
            },
            Fault::Status {
                status: 500,
                retry_after: None,
            },
            Fault::Status {
                status: 429,
                retry_after: Some(1),
            },
        ]);
        let started = Instant::now();
        let answer = call(&client(&server, 5, Duration::from_secs(5))).unwrap();
        assert!(format!("{answer:?}").contains("ok"), "{answer:?}");
        assert_eq!(messages_asked(&server), 4, "three failures, then the answer");
        // Backoff waited (10 + 20 ms, then the 429's retry-after capped at 200 ms), but not long.
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(5),
            "{took:?}"
        );
    }

    #[test]
    fn an_outage_past_the_retries_is_a_retryable_provider_error_not_the_agents() {
        let server = FakeAnthropic::start(vec![Reply::text("fine")]).unwrap();
        server.set_outage(Some(Fault::Status {
            status: 529,
            retry_after: None,
        }));
        let error = call(&client(&server, 3, Duration::from_secs(5))).unwrap_err();
        assert!(matches!(error, LlmError::Overloaded { .. }), "{error:?}");
        assert!(
            error.is_retryable(),
            "an outage is the provider's, not the agent's: {error:?}"
        );
        assert_eq!(messages_asked(&server), 3);
        // The provider recovers: the next call goes through.
        server.set_outage(None);
        call(&client(&server, 3, Duration::from_secs(5))).unwrap();
    }

    #[test]
    fn a_stream_dropped_mid_message_is_a_dropped_stream_and_retried() {
        // Not `t4_bad_output`: a retryable StreamDropped, which the runner's outage path takes.
        let server = FakeAnthropic::start(vec![Reply::text("fine")]).unwrap();
        server.fail_next([Fault::DropMidStream]);
        let error = call(&client(&server, 1, Duration::from_secs(5))).unwrap_err();
        assert!(matches!(error, LlmError::StreamDropped(_)), "{error:?}");
        assert!(error.is_retryable(), "a drop is not bad output: {error:?}");
        server.fail_next([Fault::DropMidStream]);
        call(&client(&server, 3, Duration::from_secs(5))).unwrap();
    }

    #[test]
    fn a_stalled_stream_is_noticed_within_the_idle_timeout() {
        let server = FakeAnthropic::start(vec![Reply::text("fine")]).unwrap();
        server.fail_next([Fault::Stall(Duration::from_secs(20))]);
        let started = Instant::now();
        let error = call(&client(&server, 1, Duration::from_secs(1))).unwrap_err();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "a 1 s idle timeout took {took:?}");
        assert!(
            matches!(&error, LlmError::Timeout(why) if why.contains("silent")),
            "{error:?}"
        );
        assert!(error.is_retryable(), "{error:?}");
    }
}
