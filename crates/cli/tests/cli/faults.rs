//! Faults a run survives (issue 33): each test injects one — PostgreSQL connections killed mid-run, a
//! second runner on a driven run — and asserts a clear report, nothing lost, and a run that still succeeds. docs/operations.md's "What
//! survives what" table is backed by these tests.

use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use postgres::{Client, NoTls};

use crate::postgres::{Database, SCRIPT, calculator, no_database, spawn};
use crate::support::{CALCULATOR_GOAL, Repo, finish, wait_for};

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

/// How many server processes are connected to `db` by agency (whose connections all carry an
/// `application_name`; the test's own carry none, and one just closed may linger a moment).
fn connections(db: &Database) -> i64 {
    let mut admin = Client::connect(&db.url, NoTls).unwrap();
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> ''",
            &[],
        )
        .unwrap()
        .get(0)
}

/// Ends every server process connected to `db` by agency: what a PostgreSQL restart does to its clients,
/// without restarting a server other tests share. Returns how many it ended.
fn kill_connections(db: &Database) -> usize {
    let mut admin = Client::connect(&db.url, NoTls).unwrap();
    admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> ''",
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
    // Implementers of 3 s: the run outlasts three rounds of kills even on a loaded machine.
    let repo = calculator(&db, &slow_script_of(3));
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
    let run = crate::support::started_run(&store);
    // Once an agent is at work, every connection of the runner is ended, three times over.
    wait_for(
        || {
            let events = store.events_after(Some(run), 0, 100_000).ok()?;
            events.iter().any(|e| e.kind == EventKind::Spawned).then_some(())
        },
        "an agent to start",
    );
    // Each round waits for the runner to have connected again (it reconnects with a backoff, sooner or
    // later on a loaded machine), so every round ends live connections of the runner: a fixed pause
    // between rounds once found nothing to end in one of them.
    let mut killed = 0;
    for round in 1..=3 {
        wait_for(
            || (connections(&db) > 0).then_some(()),
            "the runner to connect (again)",
        );
        let ended = kill_connections(&db);
        assert!(ended >= 1, "round {round} ended no connection");
        killed += ended;
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
    let run = crate::support::started_run(&store);
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

/// Whole runs on the built-in agent over HTTP against the fake Anthropic server, through a provider outage:
/// a short one is waited out inside the calls (only `RETRY` lines show it); one past the providers'
/// `timeouts.outage_seconds` pauses the run at an outage gate, and after `agency resume` the run succeeds
/// with no brief retried because of it.
mod run_over_http {
    use std::time::Duration;

    use agency_core::event::EventKind;
    use agency_core::gate::GateKind;
    use agency_core::{BriefStatus, Tier};
    use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
    use agency_testkit::{FakeAnthropic, Fault, ModelOutage, Reply};
    use serde_json::Value;

    use crate::support::notes_run::{self, id};
    use crate::support::{Repo, events, finish, pending_gate, runtime_of, wait_for};

    /// Workstreams of the run: their implementers are at work together when the outage begins.
    const WORKSTREAMS: usize = 8;
    /// The implementers' model (the `fast-cheap` level of the default team.yaml).
    const IMPLEMENTER_MODEL: &str = "claude-haiku-4-5";
    /// The sign-off judges' model (T5's `capable` level of the default team.yaml).
    const JUDGE_MODEL: &str = "claude-sonnet-4-5";

    /// The fake server answering the whole run (`notes_run`): T1's plan, the teachback reviews, the
    /// implementers and the sign-off judges.
    fn server() -> FakeAnthropic {
        notes_run::server(WORKSTREAMS)
    }

    /// A repository whose team calls `server` with the built-in agent on every tier, and retries a provider
    /// in trouble for `outage_seconds` per call.
    fn repo(server: &FakeAnthropic, outage_seconds: u32) -> Repo {
        repo_with(server, outage_seconds, 120)
    }

    /// [`repo`], with T3 (which reviews the implementers' teachbacks here) on T1's level, so that only the
    /// sign-off judges call [`JUDGE_MODEL`].
    fn repo_judged_apart(server: &FakeAnthropic, outage_seconds: u32) -> Repo {
        repo_edited(
            server,
            outage_seconds,
            120,
            &[(
                "capability: capable           # squad lead",
                "capability: reasoning-heavy   # squad lead",
            )],
        )
    }

    /// [`repo`], with a stream silent for `idle_seconds` taken for stalled.
    fn repo_with(server: &FakeAnthropic, outage_seconds: u32, idle_seconds: u32) -> Repo {
        repo_edited(server, outage_seconds, idle_seconds, &[])
    }

    /// [`repo_with`], with more edits of team.yaml.
    fn repo_edited(
        server: &FakeAnthropic,
        outage_seconds: u32,
        idle_seconds: u32,
        more: &[(&str, &str)],
    ) -> Repo {
        let base_url = format!("    base_url: {}", server.base_url());
        let outage = format!("      outage_seconds: {outage_seconds} ");
        let idle = format!("      idle_seconds: {idle_seconds} ");
        let (t4, t4_builtin) = runtime_of("t4", "builtin");
        let (t5, t5_builtin) = runtime_of("t5", "builtin");
        let mut edits = vec![
            ("    # base_url: https://api.anthropic.com", base_url.as_str()),
            ("      outage_seconds: 60 ", outage.as_str()),
            ("      idle_seconds: 120 ", idle.as_str()),
            (t4, t4_builtin.as_str()),
            (t5, t5_builtin.as_str()),
        ];
        edits.extend_from_slice(more);
        Repo::demo(&edits)
    }

    const ENV: [(&str, &str); 1] = [("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-the-fake-server")];

    /// Every workstream's note is on the integration branch, and every brief was done at its first attempt.
    fn assert_whole_and_unretried(repo: &Repo, store: &SqliteBlackboard, run: agency_core::RunId) {
        assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
        for n in 1..=WORKSTREAMS {
            assert_eq!(
                repo.git_output(&[
                    "show",
                    &format!("agency/{}/integration:notes/{}.md", run.short(), id(n))
                ]),
                format!("Written by {}.\n", id(n))
            );
        }
        let briefs = store.list_briefs(run).unwrap();
        let retried: Vec<String> = briefs
            .iter()
            .filter(|b| b.attempt > 0 || matches!(b.status, BriefStatus::Failed | BriefStatus::Escalated))
            .map(|b| {
                format!(
                    "{} {} attempt {} {}",
                    b.tier.as_str(),
                    b.title,
                    b.attempt,
                    b.status.as_str()
                )
            })
            .collect();
        assert!(retried.is_empty(), "briefs retried or failed: {retried:?}");
        assert!(
            store
                .list_gates_of_kind(run, GateKind::Escalation)
                .unwrap()
                .is_empty()
        );
    }

    fn logged(events: &[agency_core::event::Event], tag: &str) -> Vec<String> {
        events
            .iter()
            .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == tag)
            .map(|e| e.payload["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    #[test]
    fn an_outage_past_the_bound_pauses_the_run_and_it_succeeds_after_resume() {
        let server = server();
        // The implementers' model goes down once the first of them is at work (its teachback sent):
        // every one of its requests then fails with 529, for as long as the test keeps it down.
        server.set_outage_of(Some(ModelOutage {
            fault: Fault::Status {
                status: 529,
                retry_after: None,
            },
            model: IMPLEMENTER_MODEL.to_string(),
            from_turn: 1,
            requests: None,
        }));
        let repo = repo(&server, 2);
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        // No --auto-approve: a human resumes (with it, the runner would probe and resume by itself).
        let (running, run) = run_approving_the_plan(&repo, &store);
        let gate = wait_for(|| pending_gate(&store, run, GateKind::Pause), "the outage gate");
        let message = gate.summary["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("Outage: the provider is overloaded") && message.contains("agency resume"),
            "{message}"
        );
        assert!(server.model_outage_begun());
        // The gate holds the run: once every implementer's call has given up, none runs, none was charged
        // an attempt, and the run is not over. The server stays down meanwhile (longer than the bound).
        let implementers = wait_for(
            || {
                let t4: Vec<_> = store
                    .list_briefs(run)
                    .ok()?
                    .into_iter()
                    .filter(|b| b.tier == Tier::T4)
                    .collect();
                (t4.len() == WORKSTREAMS && t4.iter().all(|b| b.status != BriefStatus::Running)).then_some(t4)
            },
            "every implementer to give up",
        );
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            implementers
                .iter()
                .all(|b| b.status == BriefStatus::Pending && b.attempt == 0),
            "{implementers:?}"
        );
        assert!(!store.get_run(run).unwrap().status.is_terminal());
        assert!(pending_gate(&store, run, GateKind::Pause).is_some());
        let at_gate = events(&store, run);
        let outages = logged(&at_gate, "OUTAGE");
        assert!(!outages.is_empty(), "no OUTAGE line");
        assert!(
            outages.iter().all(|l| l.contains("its attempt not spent")),
            "{outages:?}"
        );
        let retries = logged(&at_gate, "RETRY");
        assert!(
            retries
                .iter()
                .any(|l| l.starts_with(IMPLEMENTER_MODEL) && l.contains("overloaded")),
            "no RETRY line for the implementers' calls: {retries:?}"
        );
        let faults_at_gate = server.faults_served();

        // The provider is back; a human resumes the run.
        server.set_outage_of(None);
        let resumed = repo.agency(&["resume", &run.short()]).success();
        let (code, output) = finish(running, Duration::from_secs(120));
        assert_eq!(code, Some(0), "{}\n{output}", resumed.stdout());
        assert!(output.contains("OUTAGE"), "{output}");
        assert_whole_and_unretried(&repo, &store, run);
        assert!(
            faults_at_gate >= WORKSTREAMS,
            "only {faults_at_gate} requests failed"
        );
        // Each implementer that met the outage went back to pending with the outage flag, not failed.
        let back: usize = events(&store, run)
            .iter()
            .filter(|e| e.payload["outage"] == true)
            .count();
        assert!(back >= 1, "no brief moved back for the outage");
    }

    #[test]
    fn with_auto_approve_the_run_probes_the_provider_and_resumes_by_itself_once_it_answers() {
        let server = server();
        server.set_outage_of(Some(ModelOutage {
            fault: Fault::Status {
                status: 529,
                retry_after: None,
            },
            model: IMPLEMENTER_MODEL.to_string(),
            from_turn: 1,
            requests: None,
        }));
        let repo = repo(&server, 2);
        let running = repo.spawn(&["run", "Write the notes", "--auto-approve"], &ENV);
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let run = crate::support::started_run(&store);
        let gate = wait_for(|| pending_gate(&store, run, GateKind::Pause), "the outage gate");
        // While the provider is down the runner's probes fail, each said, and the gate holds.
        let failed = wait_for(
            || {
                logged(&events(&store, run), "OUTAGE")
                    .into_iter()
                    .find(|l| l.starts_with("probe 1 of the t4 model failed"))
            },
            "a failed probe",
        );
        assert!(
            failed.contains("overloaded") && failed.contains("next probe in"),
            "{failed}"
        );
        assert!(pending_gate(&store, run, GateKind::Pause).is_some());
        assert!(!store.get_run(run).unwrap().status.is_terminal());

        // The provider is back: nobody runs `agency resume`, the runner's next probe is answered and the
        // run resumes and succeeds by itself.
        server.set_outage_of(None);
        let (code, output) = finish(running, Duration::from_secs(120));
        assert_eq!(code, Some(0), "{output}");
        assert_whole_and_unretried(&repo, &store, run);
        let decided = store
            .list_gates_of_kind(run, GateKind::Pause)
            .unwrap()
            .into_iter()
            .find(|g| g.id == gate.id)
            .unwrap();
        assert_eq!(decided.status, agency_core::gate::GateStatus::Approved);
        let resumed = logged(&events(&store, run), "OUTAGE")
            .into_iter()
            .find(|l| l.contains("resumed by the runner (--auto-approve)"))
            .unwrap_or_else(|| panic!("no line says the runner resumed the run:\n{output}"));
        assert!(resumed.contains("of the t4 model"), "{resumed}");
        assert!(output.contains("resumed by the runner"), "{output}");
    }

    /// `signoff.auditor_model` (issue 29): the judges answer from the fake Anthropic server, the auditors from
    /// an OpenAI-compatible one (the slices here score 7, so each has an auditor). Not an outage test; it
    /// lives here for the whole run over HTTP this module sets up.
    #[test]
    fn the_auditor_runs_on_its_own_model_family_and_the_record_says_which() {
        let server = server();
        let openai = agency_testkit::FakeOpenAi::start(Vec::new()).expect("fake OpenAI server");
        openai.set_rule(
            "Goal under sign-off:",
            vec![Reply::text(
                "Read the diff myself: the note is there.\nVERDICT: accept\nmissing: none",
            )],
        );
        let provider = format!(
            "\nproviders:\n  audit-family: {{kind: openai, base_url: \"{}/v1\"}}\n",
            openai.base_url()
        );
        let repo = repo_edited(
            &server,
            60,
            120,
            &[
                ("\nproviders:\n", provider.as_str()),
                (
                    "  # auditor_model: {provider: openai, model: gpt-5}",
                    "  auditor_model: {provider: audit-family, model: gpt-audit}",
                ),
            ],
        );
        let running = repo.spawn(&["run", "Write the notes", "--auto-approve"], &ENV);
        let (code, output) = finish(running, Duration::from_secs(120));
        assert_eq!(code, Some(0), "{output}");
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let run = store.list_runs().unwrap()[0].id;
        assert_whole_and_unretried(&repo, &store, run);

        // Every slice's auditor asked the other family, never the judges' server, and was never shown the
        // implementer's report.
        let audits: Vec<Value> = events(&store, run)
            .into_iter()
            .filter(|e| e.kind == EventKind::SignoffAudit)
            .map(|e| e.payload)
            .collect();
        assert_eq!(audits.len(), WORKSTREAMS, "{audits:?}");
        assert!(
            audits
                .iter()
                .all(|a| a["model"] == "gpt-audit" && a["verdict"] == "accept" && a["agrees"] == true),
            "{audits:?}"
        );
        let asked = openai.requests();
        assert!(asked.len() >= WORKSTREAMS, "{} requests", asked.len());
        for request in &asked {
            let body = request.body.to_string();
            assert!(body.contains("gpt-audit"), "{body}");
            assert!(!body.contains(".md written."), "the auditor saw a claim: {body}");
        }
        let anthropic_audits = server
            .requests()
            .iter()
            .filter(|r| r.body.to_string().contains("You are the independent auditor"))
            .count();
        assert_eq!(anthropic_audits, 0, "an auditor asked the judges' server");

        // `show judge` says which model audited.
        let slice = store
            .list_briefs(run)
            .unwrap()
            .into_iter()
            .find(|b| b.tier == Tier::T4)
            .unwrap();
        let shown = repo
            .agency(&["show", &run.short(), "judge", &slice.id.short()])
            .success();
        assert!(
            shown.stdout().contains("audited on gpt-audit"),
            "{}",
            shown.stdout()
        );
    }

    /// Starts the run without `--auto-approve` and approves its plan as a human would: the run's only
    /// inspection gate with the default team.yaml (the plan has no T2).
    fn run_approving_the_plan(
        repo: &Repo,
        store: &SqliteBlackboard,
    ) -> (crate::support::Running, agency_core::RunId) {
        let running = repo.spawn(&["run", "Write the notes"], &ENV);
        let run = crate::support::started_run(store);
        wait_for(|| pending_gate(store, run, GateKind::T1Plan), "the plan gate");
        repo.agency(&["approve", &run.short()]).success();
        (running, run)
    }

    #[test]
    fn a_judge_outage_during_sign_off_pauses_the_run_and_the_sign_off_is_asked_again_after_resume() {
        let server = server();
        // The judges' model (T5's `capable` level) is down from its first request: every slice's sign-off
        // meets the outage once its implementer has committed.
        server.set_outage_of(Some(ModelOutage {
            fault: Fault::Status {
                status: 529,
                retry_after: None,
            },
            model: JUDGE_MODEL.to_string(),
            from_turn: 0,
            requests: None,
        }));
        let repo = repo_judged_apart(&server, 2);
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let (running, run) = run_approving_the_plan(&repo, &store);
        let gate = wait_for(|| pending_gate(&store, run, GateKind::Pause), "the outage gate");
        let message = gate.summary["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("Outage: the provider is overloaded") && message.contains("agency resume"),
            "{message}"
        );
        // Every sign-off that met the outage gave up and waits: its T5 brief is pending at attempt 0, and no
        // sign-off outcome was recorded for it (an inconclusive one would have cost a retry).
        let verifiers = wait_for(
            || {
                let t5: Vec<_> = store
                    .list_briefs(run)
                    .ok()?
                    .into_iter()
                    .filter(|b| b.tier == Tier::T5)
                    .collect();
                (!t5.is_empty() && t5.iter().all(|b| b.status == BriefStatus::Pending)).then_some(t5)
            },
            "the sign-offs to give up",
        );
        std::thread::sleep(Duration::from_secs(2));
        assert!(verifiers.iter().all(|b| b.attempt == 0), "{verifiers:?}");
        assert!(!store.get_run(run).unwrap().status.is_terminal());
        let at_gate = events(&store, run);
        for kind in [
            EventKind::SignoffInconclusive,
            EventKind::SignoffRejected,
            EventKind::SignoffAccepted,
        ] {
            assert!(
                at_gate.iter().all(|e| e.kind != kind),
                "a sign-off outcome was recorded during the outage: {kind:?}"
            );
        }
        let outages = logged(&at_gate, "OUTAGE");
        assert!(
            outages
                .iter()
                .any(|l| l.contains("t5") && l.contains("its attempt not spent")),
            "{outages:?}"
        );
        assert!(
            logged(&at_gate, "RETRY")
                .iter()
                .any(|l| l.starts_with(JUDGE_MODEL) && l.contains("overloaded")),
            "no RETRY line for the judges' calls"
        );

        // Without --auto-approve the run waits for a human, even once the provider is back.
        server.set_outage_of(None);
        std::thread::sleep(Duration::from_secs(3));
        assert!(pending_gate(&store, run, GateKind::Pause).is_some());
        assert!(
            logged(&events(&store, run), "OUTAGE")
                .iter()
                .all(|l| !l.contains("probe")),
            "a run without --auto-approve probed the provider"
        );
        repo.agency(&["resume", &run.short()]).success();
        let (code, output) = finish(running, Duration::from_secs(120));
        assert_eq!(code, Some(0), "{output}");
        assert_whole_and_unretried(&repo, &store, run);
        let accepted = events(&store, run)
            .iter()
            .filter(|e| e.kind == EventKind::SignoffAccepted)
            .count();
        assert_eq!(
            accepted,
            WORKSTREAMS + 1,
            "every slice and the acceptance signed off once"
        );
    }

    #[test]
    fn a_teachback_reviewer_outage_pauses_the_run_naming_the_reviewer_and_it_succeeds_after_resume() {
        let server = server();
        // T3's model (the default team's `capable` level, the judges' too) reviews the implementers'
        // teachbacks: down from its first request, every review meets the outage before any edit is made.
        server.set_outage_of(Some(ModelOutage {
            fault: Fault::Status {
                status: 529,
                retry_after: None,
            },
            model: JUDGE_MODEL.to_string(),
            from_turn: 0,
            requests: None,
        }));
        let repo = repo(&server, 2);
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let (running, run) = run_approving_the_plan(&repo, &store);
        let gate = wait_for(|| pending_gate(&store, run, GateKind::Pause), "the outage gate");
        let message = gate.summary["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with(&format!(
                "Outage: the teachback reviewer (t3 model {JUDGE_MODEL} on anthropic): the provider is overloaded"
            )) && message.contains("agency resume"),
            "{message}"
        );
        // Every implementer that started was stopped at its teachback, unspent, its teachback still under
        // review; the others wait behind the gate, not started.
        let implementers = wait_for(
            || {
                let t4: Vec<_> = store
                    .list_briefs(run)
                    .ok()?
                    .into_iter()
                    .filter(|b| b.tier == Tier::T4)
                    .collect();
                (t4.len() == WORKSTREAMS && t4.iter().all(|b| b.status == BriefStatus::Pending)).then_some(t4)
            },
            "every implementer to wait for the reviewer",
        );
        use agency_core::teachback::TeachbackState;
        assert!(
            implementers.iter().all(|b| b.attempt == 0
                && matches!(b.teachback, TeachbackState::UnderReview | TeachbackState::Pending)),
            "{implementers:?}"
        );
        assert!(
            implementers
                .iter()
                .any(|b| b.teachback == TeachbackState::UnderReview),
            "{implementers:?}"
        );
        let at_gate = events(&store, run);
        assert!(
            at_gate.iter().all(|e| e.kind != EventKind::TeachbackCorrected),
            "an outage was told as a review"
        );
        let outages = logged(&at_gate, "OUTAGE");
        assert!(
            outages
                .iter()
                .any(|l| l.contains("its teachback's review failed after its retries")
                    && l.contains("its attempt not spent")),
            "{outages:?}"
        );
        assert!(
            logged(&at_gate, "RETRY")
                .iter()
                .any(|l| l.starts_with(JUDGE_MODEL) && l.contains("overloaded")),
            "no RETRY line for the reviews"
        );

        server.set_outage_of(None);
        repo.agency(&["resume", &run.short()]).success();
        let (code, output) = finish(running, Duration::from_secs(120));
        assert_eq!(code, Some(0), "{output}");
        assert_whole_and_unretried(&repo, &store, run);
        let approved = events(&store, run)
            .iter()
            .filter(|e| e.kind == EventKind::TeachbackApproved)
            .count();
        assert_eq!(approved, WORKSTREAMS, "each teachback approved once");
    }

    #[test]
    fn a_short_outage_inside_the_bound_is_retried_in_the_call_and_shows_only_in_the_log() {
        let server = server();
        // The implementers' model answers three requests with 529 once they are at work, then recovers:
        // each failed call is retried inside the call (the bound is the default 60 s), so nothing but a
        // RETRY line shows the outage.
        server.set_outage_of(Some(ModelOutage {
            fault: Fault::Status {
                status: 529,
                retry_after: None,
            },
            model: IMPLEMENTER_MODEL.to_string(),
            from_turn: 1,
            requests: Some(3),
        }));
        let repo = repo(&server, 60);
        let running = repo.spawn(&["run", "Write the notes", "--auto-approve"], &ENV);
        let (code, output) = finish(running, Duration::from_secs(120));
        assert_eq!(code, Some(0), "{output}");
        assert!(output.contains("succeeded"), "{output}");
        assert!(!output.contains("OUTAGE"), "{output}");
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let run = store.list_runs().unwrap()[0].id;
        assert_whole_and_unretried(&repo, &store, run);
        let all = events(&store, run);
        assert!(logged(&all, "OUTAGE").is_empty());
        assert!(store.list_gates_of_kind(run, GateKind::Pause).unwrap().is_empty());
        assert_eq!(server.faults_served(), 3);
        let retries = logged(&all, "RETRY");
        assert_eq!(retries.len(), 3, "{retries:?}");
        assert!(
            retries
                .iter()
                .all(|l| l.contains("overloaded") && l.contains("retrying in")),
            "{retries:?}"
        );
    }

    #[test]
    fn a_stalled_stream_is_logged_when_it_is_noticed_and_the_call_retried() {
        let server = server();
        // One implementer's stream starts, then goes silent for a minute; the idle timeout is 1 s.
        server.set_outage_of(Some(ModelOutage {
            fault: Fault::Stall(Duration::from_secs(60)),
            model: IMPLEMENTER_MODEL.to_string(),
            from_turn: 1,
            requests: Some(1),
        }));
        let repo = repo_with(&server, 60, 1);
        let started = std::time::Instant::now();
        let running = repo.spawn(&["run", "Write the notes", "--auto-approve"], &ENV);
        let (code, output) = finish(running, Duration::from_secs(120));
        assert_eq!(code, Some(0), "{output}");
        // Not a minute's wait: the stall was noticed after the idle second and the call asked again.
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "{:?}",
            started.elapsed()
        );
        let line = output
            .lines()
            .find(|l| l.contains("STALL"))
            .unwrap_or_else(|| panic!("no STALL line:\n{output}"));
        assert!(
            line.contains(IMPLEMENTER_MODEL) && line.contains("went silent") && line.contains("retrying in"),
            "{line}"
        );
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let run = store.list_runs().unwrap()[0].id;
        assert_whole_and_unretried(&repo, &store, run);
        let all = events(&store, run);
        let stall = all
            .iter()
            .find(|e| e.kind == EventKind::Log && e.payload["tag"] == "STALL")
            .expect("a STALL event");
        let brief = stall.brief.expect("the STALL line names its brief");
        let message = stall.payload["message"].as_str().unwrap();
        assert!(message.contains("/t4"), "the brief's label: {message}");
        assert!(message.contains("the stream was silent for 1s"), "{message}");
        // Written when the stall was noticed, before the retried call answered (its usage comes after).
        let usage_after = all
            .iter()
            .filter(|e| e.kind == EventKind::Usage && e.brief == Some(brief) && e.seq > stall.seq)
            .count();
        assert!(
            usage_after >= 1,
            "the STALL line came only at the end of the call"
        );
        assert!(logged(&all, "OUTAGE").is_empty());
    }
}

/// The blackboard's filesystem fills up in the middle of a run: the runner stops with a report naming the
/// file and the cause (and the command that resumes), nothing the blackboard had acknowledged is lost, and
/// once space is freed `agency run --resume` completes the run.
///
/// The blackboard lives on a 4 MB tmpfs of its own, mounted by bubblewrap (`--size --tmpfs`) in a mount
/// namespace that exists only while one shell script runs: the script fills the tmpfs to within 500 KB,
/// runs the team, copies the blackboard out as the full disk left it, frees the space and resumes. Where
/// bubblewrap cannot mount a tmpfs (no user namespaces for an unprivileged user), the test says so on
/// stderr and is skipped.
mod disk_full {
    use std::path::Path;
    use std::process::Command;

    use agency_core::event::Event;
    use agency_store::{Blackboard, RunStatus, SqliteBlackboard};

    use crate::postgres::SCRIPT;
    use crate::support::{CALCULATOR_GOAL, Repo};

    /// What the blackboard's filesystem holds in all, and what is left free when the run starts.
    const TMPFS_BYTES: u64 = 4 * 1024 * 1024;
    const LEFT_KB: u64 = 500;

    const STEPS: &str = r#"set -u
keep() { mkdir "$OUT/$1" && for f in "$db" "$db-wal" "$db-shm"; do if [ -f "$f" ]; then cp "$f" "$OUT/$1/"; fi; done; }
agency="$AGENCY_BIN"
db="$BLACKBOARD_DIR/agency.db"
cd "$REPO"
export AGENCY_DB="$db"
"$agency" init >/dev/null || exit 90
free=$(df -k --output=avail "$BLACKBOARD_DIR" | tail -1)
dd if=/dev/zero of="$BLACKBOARD_DIR/filler" bs=1k count=$((free - LEFT_KB)) 2>/dev/null
"$agency" run "$GOAL" --auto-approve --script "$SCRIPT" >"$OUT/first.out" 2>"$OUT/first.err"
echo $? >"$OUT/first.code"
keep at_full
rm "$BLACKBOARD_DIR/filler"
run=$(sed -n 's/^run \([0-9a-f]*\) started.*/\1/p' "$OUT/first.out")
"$agency" run --resume "$run" --auto-approve --script "$SCRIPT" >"$OUT/second.out" 2>"$OUT/second.err"
echo $? >"$OUT/second.code"
keep final
"#;

    /// bubblewrap's arguments that mount a tmpfs of `bytes` at `dir` (as root of a user namespace where
    /// a plain one is not allowed), or why it cannot. The other disk-full tests use it too.
    pub(super) fn tmpfs_args(dir: &Path, bytes: u64) -> Result<Vec<String>, String> {
        let size = bytes.to_string();
        let dir = dir.display().to_string();
        let mut reasons = Vec::new();
        for userns in [false, true] {
            let mut args: Vec<String> = Vec::new();
            if userns {
                args.extend(["--unshare-user", "--uid", "0", "--gid", "0"].map(String::from));
            }
            args.extend(["--dev-bind", "/", "/", "--size", &size, "--tmpfs", &dir].map(String::from));
            let probe = Command::new("bwrap").args(&args).arg("true").output();
            match probe {
                Ok(out) if out.status.success() => return Ok(args),
                Ok(out) => reasons.push(String::from_utf8_lossy(&out.stderr).trim().to_string()),
                Err(e) => return Err(format!("bwrap: {e}")),
            }
        }
        Err(reasons.join("; "))
    }

    fn events(db: &Path) -> Vec<Event> {
        let store = SqliteBlackboard::open(db).unwrap();
        let run = store.list_runs().unwrap()[0].id;
        store.events_after(Some(run), 0, usize::MAX).unwrap()
    }

    #[test]
    fn a_full_blackboard_disk_is_reported_loses_nothing_and_the_run_resumes_once_freed() {
        let (repo, script) = Repo::calculator(SCRIPT);
        let blackboard = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let bwrap = match tmpfs_args(blackboard.path(), TMPFS_BYTES) {
            Ok(args) => args,
            Err(why) => {
                eprintln!("SKIPPED disk-full test: bubblewrap cannot mount a small tmpfs here ({why})");
                return;
            }
        };
        let status = Command::new("bwrap")
            .args(&bwrap)
            .args(["sh", "-c", STEPS])
            .env("AGENCY_BIN", env!("CARGO_BIN_EXE_agency"))
            .env("BLACKBOARD_DIR", blackboard.path())
            .env("REPO", repo.path())
            .env("OUT", out.path())
            .env("GOAL", CALCULATOR_GOAL)
            .env("SCRIPT", &script)
            .env("LEFT_KB", LEFT_KB.to_string())
            .env("NO_COLOR", "1")
            .status()
            .unwrap();
        assert!(status.success(), "the steps failed: {status}");
        let read = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap();
        let db = blackboard.path().join("agency.db");

        // The runner stopped on the full disk, naming the file, the cause and the command that resumes.
        let (first, first_err) = (read("first.out"), read("first.err"));
        assert_ne!(
            read("first.code").trim(),
            "0",
            "the run did not meet the full disk:\n{first}"
        );
        let run = first
            .lines()
            .find_map(|l| l.strip_prefix("run ")?.split(' ').next())
            .unwrap_or_else(|| panic!("the run was not started:\n{first}\n{first_err}"))
            .to_string();
        assert!(
            first_err.contains(&format!(
                "the blackboard at {} cannot be written: its filesystem is full",
                db.display()
            )),
            "{first_err}"
        );
        assert!(
            first_err.contains(&format!("agency run --resume {run}")),
            "{first_err}"
        );
        assert!(
            !first_err.contains("inconsistent run state") && !first_err.contains("panicked"),
            "{first_err}"
        );

        // Space freed, the run resumes and succeeds.
        let (second, second_err) = (read("second.out"), read("second.err"));
        assert_eq!(read("second.code").trim(), "0", "{second}\n{second_err}");
        assert!(second.contains("succeeded"), "{second}");
        let store = SqliteBlackboard::open(out.path().join("final").join("agency.db")).unwrap();
        let final_run = store.list_runs().unwrap()[0].clone();
        assert_eq!(final_run.status, RunStatus::Succeeded);
        assert_eq!(final_run.id.short(), run);
        assert_eq!(
            repo.git_output(&["show", &format!("agency/{run}/integration:mul.sh")]),
            "# mul A B: prints A * B\necho $(($1 * $2))\n"
        );

        // Nothing acknowledged before the disk filled was lost: every event then is there after.
        let at_full = events(&out.path().join("at_full").join("agency.db"));
        let after = events(&out.path().join("final").join("agency.db"));
        assert!(
            at_full.len() > 5,
            "the disk filled before the run began: {at_full:?}"
        );
        for event in &at_full {
            assert!(
                after
                    .iter()
                    .any(|e| e.seq == event.seq && e.kind == event.kind && e.payload == event.payload),
                "lost after the resume: {event:?}"
            );
        }
    }
}

/// The filesystem under the run's worktrees fills up: git's own writes (a worktree's checkout, an agent's
/// files, a commit's index) fail with "No space left on device". The runner says so naming the path, spends
/// no brief's retry on it, loses nothing it recorded, and the run completes once space is freed.
///
/// `.agency/worktrees` is a small tmpfs of its own, mounted by bubblewrap for one shell script that fills it,
/// runs the team, frees the space and resumes; where bubblewrap cannot mount one the test says so on stderr
/// and is skipped (unless `AGENCY_REQUIRE_SANDBOX` is set, as in CI, where that is a failure).
mod disk_full_worktrees {
    use std::process::Command;

    use agency_store::{Blackboard, RunStatus, SqliteBlackboard};

    use super::disk_full::tmpfs_args;
    use crate::postgres::SCRIPT;
    use crate::support::{CALCULATOR_GOAL, Repo};

    const TMPFS_BYTES: u64 = 2 * 1024 * 1024;

    const STEPS: &str = r#"set -u
agency="$AGENCY_BIN"
cd "$REPO"
dd if=/dev/zero of="$WORKTREES/filler" bs=4k 2>/dev/null
"$agency" run "$GOAL" --auto-approve --script "$SCRIPT" >"$OUT/first.out" 2>"$OUT/first.err"
echo $? >"$OUT/first.code"
mkdir "$OUT/at_full" && for f in .agency/agency.db .agency/agency.db-wal .agency/agency.db-shm; do if [ -f "$f" ]; then cp "$f" "$OUT/at_full/"; fi; done
rm "$WORKTREES/filler"
run=$(sed -n 's/^run \([0-9a-f]*\) started.*/\1/p' "$OUT/first.out")
"$agency" run --resume "$run" --auto-approve --script "$SCRIPT" >"$OUT/second.out" 2>"$OUT/second.err"
echo $? >"$OUT/second.code"
"#;

    #[test]
    fn a_full_disk_under_the_worktrees_is_named_costs_no_retry_and_the_run_resumes_once_freed() {
        let (repo, script) = Repo::calculator(SCRIPT);
        let worktrees = repo.path().join(".agency").join("worktrees");
        std::fs::create_dir_all(&worktrees).unwrap();
        let out = tempfile::tempdir().unwrap();
        let bwrap = match tmpfs_args(&worktrees, TMPFS_BYTES) {
            Ok(args) => args,
            Err(why) if std::env::var_os("AGENCY_REQUIRE_SANDBOX").is_some() => {
                panic!("AGENCY_REQUIRE_SANDBOX is set but bubblewrap cannot mount a small tmpfs: {why}")
            }
            Err(why) => {
                eprintln!(
                    "SKIPPED worktree disk-full test: bubblewrap cannot mount a small tmpfs here ({why})"
                );
                return;
            }
        };
        let status = Command::new("bwrap")
            .args(&bwrap)
            .args(["sh", "-c", STEPS])
            .env("AGENCY_BIN", env!("CARGO_BIN_EXE_agency"))
            .env("REPO", repo.path())
            .env("WORKTREES", &worktrees)
            .env("OUT", out.path())
            .env("GOAL", CALCULATOR_GOAL)
            .env("SCRIPT", &script)
            .env("NO_COLOR", "1")
            .status()
            .unwrap();
        assert!(status.success(), "the steps failed: {status}");
        let read = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap();

        // The first worktree's checkout met the full disk: the runner stopped naming it, the cause and
        // the command that resumes; the run is not over.
        let (first, first_err) = (read("first.out"), read("first.err"));
        assert_ne!(read("first.code").trim(), "0", "{first}");
        let run = first
            .lines()
            .find_map(|l| l.strip_prefix("run ")?.split(' ').next())
            .unwrap_or_else(|| panic!("the run was not started:\n{first}\n{first_err}"))
            .to_string();
        let said = first_err.lines().next().unwrap_or_default();
        assert!(
            said.starts_with("error: git: disk full: '") && said.contains(&worktrees.display().to_string()),
            "{first_err}"
        );
        assert!(said.contains("nothing recorded is lost"), "{first_err}");
        assert!(
            first_err.contains(&format!("agency run --resume {run}")),
            "{first_err}"
        );
        assert!(!first_err.contains("panicked"), "{first_err}");

        // Space freed, the resumed run succeeds, no brief having paid for the full disk.
        let (second, second_err) = (read("second.out"), read("second.err"));
        assert_eq!(read("second.code").trim(), "0", "{second}\n{second_err}");
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let resumed = store.list_runs().unwrap()[0].clone();
        assert_eq!(resumed.id.short(), run);
        assert_eq!(resumed.status, RunStatus::Succeeded);
        let briefs = store.list_briefs(resumed.id).unwrap();
        assert!(
            briefs.iter().all(|b| b.attempt == 0),
            "a brief was retried: {:?}",
            briefs.iter().map(|b| (&b.title, b.attempt)).collect::<Vec<_>>()
        );
        assert_eq!(
            repo.git_output(&["show", &format!("agency/{run}/integration:mul.sh")]),
            "# mul A B: prints A * B\necho $(($1 * $2))\n"
        );

        // Nothing recorded before the disk filled was lost.
        let at_full = SqliteBlackboard::open(out.path().join("at_full").join("agency.db")).unwrap();
        let before = at_full.events_after(Some(resumed.id), 0, usize::MAX).unwrap();
        let after = store.events_after(Some(resumed.id), 0, usize::MAX).unwrap();
        assert!(!before.is_empty());
        for event in &before {
            assert!(
                after
                    .iter()
                    .any(|e| e.seq == event.seq && e.kind == event.kind && e.payload == event.payload),
                "lost after the resume: {event:?}"
            );
        }
    }
}

/// The disk fills while an agent writes (the built-in agent's `write_file` into its worktree), and `.git`
/// is on a full disk when a slice is committed: infrastructure, not the agent's bad output. The runner
/// stops naming the disk and the command that resumes, the brief is given back unspent, nothing recorded
/// is lost, and once space is freed the resumed run succeeds with the agent's whole file on the
/// integration branch.
///
/// A tmpfs of [`TMPFS_BYTES`] is mounted by bubblewrap (as in `disk_full_worktrees`) and filled with a
/// [`FILLER_MB`] filler before the run, so less than the agent's [`DATA_BYTES`] file is free. The test is
/// skipped, saying why, where bubblewrap cannot mount a tmpfs, and fails instead under
/// `AGENCY_REQUIRE_SANDBOX` (as CI runs it).
mod disk_full_agent {
    use std::path::Path;
    use std::process::Command;

    use agency_core::event::EventKind;
    use agency_store::{Blackboard, RunStatus, SqliteBlackboard};

    use super::disk_full::tmpfs_args;
    use crate::support::{CALCULATOR_GOAL, Repo};

    const SIMPLE: &str = include_str!("../../../engine/tests/scripts/simple.yaml");
    const TMPFS_BYTES: u64 = 8 * 1024 * 1024;
    const FILLER_MB: u64 = 7;
    /// The agent's file: more than is left free, and less than the tmpfs holds once the filler is gone,
    /// in each of the few checkouts that hold it (the implementer's, its judge's, the acceptance's).
    const DATA_BYTES: usize = 1536 * 1024;

    const STEPS: &str = r#"set -u
agency="$AGENCY_BIN"
cd "$REPO"
if [ -n "${GIT_BACKUP:-}" ]; then cp -a "$GIT_BACKUP/." "$REPO/.git/"; fi
dd if=/dev/zero of="$TMPFS/filler" bs=1M count="$FILLER_MB" 2>/dev/null
"$agency" run "$GOAL" --auto-approve --script "$SCRIPT" >"$OUT/first.out" 2>"$OUT/first.err"
echo $? >"$OUT/first.code"
mkdir "$OUT/at_full" && for f in .agency/agency.db .agency/agency.db-wal .agency/agency.db-shm; do if [ -f "$f" ]; then cp "$f" "$OUT/at_full/"; fi; done
rm "$TMPFS/filler"
run=$(sed -n 's/^run \([0-9a-f]*\) started.*/\1/p' "$OUT/first.out")
"$agency" run --resume "$run" --auto-approve --script "$SCRIPT" >"$OUT/second.out" 2>"$OUT/second.err"
echo $? >"$OUT/second.code"
if [ -n "${GIT_BACKUP:-}" ]; then mkdir "$OUT/git" && cp -a "$REPO/.git/." "$OUT/git/"; fi
"#;

    /// `len` letters and digits that zlib cannot squeeze much (a xorshift's), so git's object of them is
    /// nearly as large as the file.
    fn incompressible(len: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(ALPHABET[(state % 64) as usize])
            })
            .collect()
    }

    /// simple.yaml with the implementer writing `data.txt` (`content`) before it fixes add.sh.
    fn script_writing(content: &str) -> String {
        script_calling(&format!(
            "          - name: write_file\n            input: {{ path: data.txt, content: \"{content}\" }}\n"
        ))
    }

    /// simple.yaml with the implementer calling `tool` (its YAML list item) before it fixes add.sh.
    fn script_calling(tool: &str) -> String {
        let edit = "      - tool_calls:\n          - name: edit_file\n";
        assert_eq!(SIMPLE.matches(edit).count(), 1, "simple.yaml's implementer moved");
        SIMPLE.replace(
            edit,
            &format!("      - tool_calls:\n{tool}          - name: edit_file\n"),
        )
    }

    /// What the two runs left: (first's stdout, stderr, exit code), (second's), and the run's short id.
    struct Runs {
        first: (String, String, String),
        second: (String, String, String),
        run: String,
        out: tempfile::TempDir,
    }

    /// Runs [`STEPS`] with a tmpfs at `tmpfs`, or `None` (skipped, said on stderr) where it cannot be mounted.
    fn run_on_full(repo: &Repo, script: &Path, tmpfs: &Path, git_backup: Option<&Path>) -> Option<Runs> {
        let out = tempfile::tempdir().unwrap();
        let bwrap = match tmpfs_args(tmpfs, TMPFS_BYTES) {
            Ok(args) => args,
            Err(why) if std::env::var_os("AGENCY_REQUIRE_SANDBOX").is_some() => {
                panic!("AGENCY_REQUIRE_SANDBOX is set but bubblewrap cannot mount a small tmpfs: {why}")
            }
            Err(why) => {
                eprintln!("SKIPPED agent disk-full test: bubblewrap cannot mount a small tmpfs here ({why})");
                return None;
            }
        };
        let mut command = Command::new("bwrap");
        command
            .args(&bwrap)
            .args(["sh", "-c", STEPS])
            .env("AGENCY_BIN", env!("CARGO_BIN_EXE_agency"))
            .env("REPO", repo.path())
            .env("TMPFS", tmpfs)
            .env("FILLER_MB", FILLER_MB.to_string())
            .env("OUT", out.path())
            .env("GOAL", CALCULATOR_GOAL)
            .env("SCRIPT", script)
            .env("NO_COLOR", "1");
        if let Some(backup) = git_backup {
            command.env("GIT_BACKUP", backup);
        }
        let status = command.status().unwrap();
        assert!(status.success(), "the steps failed: {status}");
        let read = |name: &str| std::fs::read_to_string(out.path().join(name)).unwrap();
        let first = (read("first.out"), read("first.err"), read("first.code"));
        let run = first
            .0
            .lines()
            .find_map(|l| l.strip_prefix("run ")?.split(' ').next())
            .unwrap_or_else(|| panic!("the run was not started:\n{}\n{}", first.0, first.1))
            .to_string();
        let second = (read("second.out"), read("second.err"), read("second.code"));
        Some(Runs {
            first,
            second,
            run,
            out,
        })
    }

    /// The runner stopped saying `said` first, with nothing recorded lost and the resume command; the
    /// resumed run succeeded with no brief retried and the agent's whole `file` (of `bytes`) merged.
    fn assert_stopped_then_whole(repo: &Repo, runs: &Runs, said: &str, file: &str, bytes: usize) {
        let (first, first_err, first_code) = &runs.first;
        assert_ne!(first_code.trim(), "0", "{first}");
        let line = first_err.lines().next().unwrap_or_default();
        assert!(line.starts_with(said), "{first_err}");
        assert!(line.contains("nothing recorded is lost"), "{first_err}");
        assert!(
            first_err.contains(&format!("agency run --resume {}", runs.run)),
            "{first_err}"
        );
        assert!(!first_err.contains("panicked"), "{first_err}");

        let (second, second_err, second_code) = &runs.second;
        assert_eq!(second_code.trim(), "0", "{second}\n{second_err}");
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let resumed = store.list_runs().unwrap()[0].clone();
        assert_eq!(resumed.id.short(), runs.run);
        assert_eq!(resumed.status, RunStatus::Succeeded);
        let briefs = store.list_briefs(resumed.id).unwrap();
        assert!(
            briefs.iter().all(|b| b.attempt == 0),
            "a brief was retried: {:?}",
            briefs.iter().map(|b| (&b.title, b.attempt)).collect::<Vec<_>>()
        );
        let after = store.events_after(Some(resumed.id), 0, usize::MAX).unwrap();
        assert!(
            after.iter().all(|e| e.kind != EventKind::Failed),
            "a brief failed for the full disk"
        );
        let integration = format!("agency/{}/integration", runs.run);
        assert_eq!(
            repo.git_output(&["cat-file", "-s", &format!("{integration}:{file}")])
                .trim(),
            bytes.to_string(),
            "the agent's file is whole"
        );
        assert_eq!(
            repo.git_output(&["show", &format!("{integration}:add.sh")]),
            "# add A B: prints A + B\necho $(($1 + $2))\n"
        );

        // Nothing recorded before the disk filled was lost.
        let at_full = SqliteBlackboard::open(runs.out.path().join("at_full").join("agency.db")).unwrap();
        let before = at_full.events_after(Some(resumed.id), 0, usize::MAX).unwrap();
        assert!(!before.is_empty());
        for event in &before {
            assert!(
                after
                    .iter()
                    .any(|e| e.seq == event.seq && e.kind == event.kind && e.payload == event.payload),
                "lost after the resume: {event:?}"
            );
        }
    }

    #[test]
    fn a_disk_that_fills_under_an_agents_write_stops_the_runner_unspent_and_the_run_resumes_whole() {
        let data = incompressible(DATA_BYTES);
        let (repo, script) = Repo::calculator(&script_writing(&data));
        let worktrees = repo.path().join(".agency").join("worktrees");
        std::fs::create_dir_all(&worktrees).unwrap();
        let Some(runs) = run_on_full(&repo, &script, &worktrees, None) else {
            return;
        };
        assert_stopped_then_whole(&repo, &runs, "error: disk full: '", "data.txt", DATA_BYTES);
        assert_eq!(
            repo.git_output(&["show", &format!("agency/{}/integration:data.txt", runs.run)]),
            data
        );
        let line = runs.first.1.lines().next().unwrap_or_default();
        assert!(
            line.contains(&worktrees.display().to_string()) && line.contains("t4 fix-add"),
            "{line}"
        );
        let store = SqliteBlackboard::open(repo.db()).unwrap();
        let run = store.list_runs().unwrap()[0].id;
        let disk_full: Vec<String> = store
            .events_after(Some(run), 0, usize::MAX)
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "DISK FULL")
            .map(|e| e.payload["message"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(disk_full.len(), 1, "{disk_full:?}");
        assert!(disk_full[0].contains("its attempt not spent"), "{disk_full:?}");
    }

    #[test]
    fn a_disk_that_fills_under_an_agents_command_stops_the_runner_unspent_and_the_run_resumes_whole() {
        // The agent's command (sandboxed as any) writes 1.5 MB of zeros into its worktree: `dd` fails
        // part-way with "No space left on device", the agent goes on and reports done.
        let kb = DATA_BYTES / 1024;
        let (repo, script) = Repo::calculator(&script_calling(&format!(
            "          - name: run_command\n            input: {{ argv: [dd, \"if=/dev/zero\", \"of=data.bin\", \"bs=1024\", \"count={kb}\"] }}\n"
        )));
        let worktrees = repo.path().join(".agency").join("worktrees");
        std::fs::create_dir_all(&worktrees).unwrap();
        let Some(runs) = run_on_full(&repo, &script, &worktrees, None) else {
            return;
        };
        assert_stopped_then_whole(&repo, &runs, "error: disk full: '", "data.bin", DATA_BYTES);
    }

    #[test]
    fn a_full_disk_under_git_when_a_slice_is_committed_stops_the_runner_and_the_run_resumes_whole() {
        let data = incompressible(DATA_BYTES);
        let (repo, script) = Repo::calculator(&script_writing(&data));
        let git = repo.path().join(".git");
        let backup = tempfile::tempdir().unwrap();
        let copied = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", git.display()))
            .arg(backup.path())
            .status()
            .unwrap();
        assert!(copied.success());
        let Some(runs) = run_on_full(&repo, &script, &git, Some(backup.path())) else {
            return;
        };
        // The repository as the runs left it on the tmpfs, which ended with bubblewrap.
        std::fs::remove_dir_all(&git).unwrap();
        let restored = Command::new("cp")
            .arg("-a")
            .arg(runs.out.path().join("git"))
            .arg(&git)
            .status()
            .unwrap();
        assert!(restored.success());
        assert_stopped_then_whole(
            &repo,
            &runs,
            "error: git: disk full: the repository's object store (`.git/objects`) cannot be written",
            "data.txt",
            DATA_BYTES,
        );
    }
}
