//! Secrets stay out of everything agency records or serves. A scripted run with a provider key and a
//! service token in the runner's environment, whose agents repeat both in their words, their report, a
//! committed file and a command's output, and whose accepting judge quotes them, leaves neither value in
//! the blackboard's file, the detached runner's log, the dashboard's answers or a notification: each
//! shows `[redacted:NAME]` instead.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agency_store::{Blackboard, SqliteBlackboard};

use crate::support::{CALCULATOR_GOAL, Dashboard, Repo, finish, http, wait_for};

/// A value no other test or file holds.
fn random(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    format!("{prefix}{:x}{:x}", nanos, std::process::id())
}

fn script(key: &str, token: &str) -> String {
    format!(
        r#"model: scripted-secrets
replies:
  - role: judge
    brief: run/t1/accept
    reply:
      text: |
        every check passes; the agent printed {key} and {token}
        VERDICT: accept
        missing: none

  - role: planner
    reply:
      tool_calls:
        - name: report_result
          input:
            status: done
            summary: "One workstream: fix add.sh."
            output:
              run_id: "00000000-0000-4000-8000-000000000000"
              goal_anchor: "(filled in by agency)"
              complexity: low
              retry_budget_multiplier: 1
              workstreams:
                - id: ws-add
                  name: fix-add
                  domain: backend
                  tier_path: [t4, t5]
                  parallel_group: A
                  notes: "add.sh subtracts; make it add."
                  variety: {{ novelty: 1, scope: 1, uncertainty: 1, risk: 1 }}
                  contract:
                    done_when: "sh test_add.sh passes"
                    verify: "sh test_add.sh"
              parallelism:
                groups: {{ A: [ws-add] }}
                sequence: [A]
              self_critique_summary: "One operator in one file."

  - role: implementer
    brief: ws-add/t4/fix-add
    replies:
      - text: "My key is {key} and my token is {token}."
        tool_calls:
          - name: run_command
            input: {{ argv: [echo, "{key}", "{token}"] }}
      - tool_calls:
          - name: write_file
            input: {{ path: credentials.txt, content: "key={key}\ntoken={token}\n" }}
          - name: edit_file
            input: {{ path: add.sh, old_string: "echo $(($1 - $2))", new_string: "echo $(($1 + $2))" }}
          - name: report_result
            input: {{ status: done, summary: "add.sh adds; key {key} token {token}", evidence: [{{ path: add.sh }}] }}

  - role: judge
    reply:
      text: |
        Looks right; the key {key} is in credentials.txt.
        VERDICT: accept
        missing: none
"#
    )
}

/// Every file under `dir` whose bytes hold `needle`, by path.
fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[test]
fn a_runs_secrets_are_redacted_from_the_blackboard_the_log_the_dashboard_and_notifications() {
    let key = random("sk-ant-api03-");
    let token = random("svc");
    let repo = Repo::initialised();
    repo.commit_calculator();
    // Outside .agency/, whose every file is searched below.
    let scripts = tempfile::tempdir().unwrap();
    let script_path = scripts.path().join("script.yaml");
    std::fs::write(&script_path, script(&key, &token)).unwrap();
    let notes = repo.path().join("notifications.jsonl");
    repo.edit_team(&[(
        "notifiers: []",
        &format!(
            "notifiers:\n  - kind: command\n    argv: [tee, -a, \"{}\"]\n",
            notes.display()
        ),
    )]);
    let started = repo.spawn(
        &[
            "run",
            CALCULATOR_GOAL,
            "--script",
            script_path.to_str().unwrap(),
            "--auto-approve",
            "--detach",
        ],
        &[("ANTHROPIC_API_KEY", &key), ("MY_SERVICE_TOKEN", &token)],
    );
    let (code, out) = finish(started, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{out}");
    let short = out
        .lines()
        .find_map(|l| l.strip_prefix("stdout:\nrun ").or_else(|| l.strip_prefix("run ")))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no run in {out}"))
        .to_string();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.resolve_run(&short).unwrap();
    let status = wait_for(
        || {
            let status = store.get_run(run).unwrap().status;
            status.is_terminal().then_some(status)
        },
        "the run to end",
    );
    let log = repo.path().join(".agency").join(format!("run-{short}.log"));
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status, agency_store::RunStatus::Succeeded, "{log_text}");
    drop(store);

    // The blackboard's files, byte for byte (the database and its write-ahead log), and the run log.
    let agency_dir = repo.path().join(".agency");
    for secret in [&key, &token] {
        assert_eq!(
            files_holding(&agency_dir, secret),
            Vec::<String>::new(),
            "{secret}"
        );
    }
    // Redacted, not absent: the labels are where the values were (so this test cannot pass vacuously).
    let db_bytes = std::fs::read(repo.db()).unwrap();
    let wal = std::fs::read(repo.db().with_extension("db-wal")).unwrap_or_default();
    let stored = format!(
        "{}{}",
        String::from_utf8_lossy(&db_bytes),
        String::from_utf8_lossy(&wal)
    );
    assert!(
        stored.contains("[redacted:ANTHROPIC_API_KEY]"),
        "no key label stored"
    );
    assert!(
        stored.contains("[redacted:MY_SERVICE_TOKEN]"),
        "no token label stored"
    );
    // The committed file does hold them: the branch is the agent's work, to be reviewed by a human.
    assert!(repo.git_output(&["log", "--all", "-p"]).contains(&token));

    // The notifications the command notifier received.
    let notified = std::fs::read_to_string(&notes).unwrap();
    assert!(notified.contains("run_succeeded"), "{notified}");
    assert!(
        !notified.contains(&key) && !notified.contains(&token),
        "{notified}"
    );

    // The dashboard's answers, served by a process that holds neither value.
    let dashboard = Dashboard::serve(&repo, &["ANTHROPIC_API_KEY", "MY_SERVICE_TOKEN"]);
    let (addr, auth) = (dashboard.addr.as_str(), dashboard.token.as_str());
    let mut served = String::new();
    for path in [
        "/api/runs".to_string(),
        format!("/api/runs/{short}"),
        format!("/api/runs/{short}/events?after=0&limit=1000"),
    ] {
        let (status, body) = http(addr, "GET", &path, Some(auth), "");
        assert!(status.contains("200"), "{path}: {status} {body}");
        served.push_str(&body);
    }
    assert!(served.contains("[redacted:MY_SERVICE_TOKEN]"), "{served}");
    assert!(!served.contains(&key) && !served.contains(&token), "{served}");
}
