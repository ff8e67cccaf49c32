//! `agency hook install` writes the hook wrapped so that any failure of it blocks the call, and recognises
//! its own entry (old and new forms) on re-install. End to end with the real Codex (harness/PROTOCOLS.md
//! §7, which fails open on a failing hook): a missing, failing, crashing or garbage-printing `agency hook`
//! installed with `--codex` blocks the write, and Codex says so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use agency_exec::runtime::hook_command::MARK;
use agency_testkit::{FakeOpenAi, Reply};
use serde_json::{Value, json};

use crate::hook_claude::run_with_deadline;
use crate::hook_support::{activate, e2e_client, hook, pre_tool_use, start_brief};
use crate::support::Repo;

const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";

fn agency_entries(hooks: &Value, event: &str) -> Vec<String> {
    hooks["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|entry| entry["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|hook| hook["command"].as_str().map(str::to_owned))
        .filter(|command| command.contains("agency"))
        .collect()
}

#[test]
fn reinstall_replaces_the_old_bare_entry_and_its_own_wrapped_one() {
    let repo = Repo::initialised();
    let codex_home = repo.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    let path = codex_home.join("hooks.json");
    // What an earlier version installed, next to another tool's hook.
    let old = json!({"hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": "/usr/local/bin/agency hook", "timeout": 10}]},
        {"hooks": [{"type": "command", "command": "/usr/bin/other-gate", "timeout": 5}]},
    ]}});
    std::fs::write(&path, old.to_string()).unwrap();
    let install = |command: &str| {
        repo.agency(&[
            "hook",
            "install",
            "--codex",
            "--codex-home",
            codex_home.to_str().unwrap(),
            "--command",
            command,
        ])
        .success()
    };
    install("/usr/local/bin/agency hook");
    install("/opt/agency hook");
    let hooks: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let ours = agency_entries(&hooks, "PreToolUse");
    assert_eq!(ours.len(), 1, "{hooks:#}");
    assert!(ours[0].starts_with(MARK), "{}", ours[0]);
    assert!(ours[0].contains("out=$(/opt/agency hook)"), "{}", ours[0]);
    let all = hooks["hooks"]["PreToolUse"].to_string();
    assert!(
        all.contains("/usr/bin/other-gate"),
        "another tool's hook was dropped: {all}"
    );
}

#[test]
fn the_claude_code_install_is_wrapped_too() {
    let repo = Repo::initialised();
    let out = repo
        .agency(&["hook", "install", "--command", "/nonexistent/agency hook"])
        .success()
        .stdout();
    assert!(out.contains("blocks the call"), "{out}");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.path().join(".claude/settings.json")).unwrap())
            .unwrap();
    let command = &agency_entries(&settings, "PreToolUse")[0];
    // Run as Claude Code runs it: the missing program blocks (exit 2) with the reason on stderr.
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the gate was not found (exit 127)"), "{stderr}");
}

/// A stand-in for `agency` in `dir` that runs `body` after reading its input.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\ncat >/dev/null\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// Runs the real Codex in `repo` with the hook installed by `agency hook install --codex --command CMD`,
/// scripted to write hello.txt with apply_patch.
fn codex_with_hook(repo: &Repo, brief: &str, hook_command: &str) -> (Output, FakeOpenAi) {
    let server =
        FakeOpenAi::start(vec![Reply::custom("apply_patch", PATCH), Reply::text("done")]).expect("fake");
    let home = tempfile::tempdir().expect("codex home");
    let config = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\n\
         base_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"FAKE_OPENAI_KEY\"\n",
        server.base_url()
    );
    std::fs::write(home.path().join("config.toml"), config).expect("config.toml");
    let codex_home = home.path().to_str().expect("utf-8 path");
    repo.agency(&[
        "hook",
        "install",
        "--codex",
        "--codex-home",
        codex_home,
        "--command",
        hook_command,
    ])
    .success();
    let mut command = Command::new("codex");
    command
        .args([
            "exec",
            "--skip-git-repo-check",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "--dangerously-bypass-hook-trust",
            "write hello",
        ])
        .current_dir(repo.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .env("FAKE_OPENAI_KEY", "dummy")
        .env("AGENCY_BRIEF", brief)
        .env("AGENCY_DB", repo.db())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    (run_with_deadline(command, Duration::from_secs(60)), server)
}

#[test]
fn codex_with_a_missing_crashing_or_garbage_hook_blocks_the_write() {
    if !e2e_client("codex") {
        return;
    }
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    // The gate itself would allow: only the hook's failure can stop the write.
    activate(&repo, &brief);
    let bin = tempfile::tempdir().unwrap();
    let cases = [
        (
            "missing",
            "/nonexistent/agency hook".to_owned(),
            "not found (exit 127)",
        ),
        (
            "exit 1",
            format!("{} hook", script(bin.path(), "exit1", "exit 1").display()),
            "failed (exit 1)",
        ),
        (
            "segfault",
            format!("{} hook", script(bin.path(), "segv", "kill -SEGV $$").display()),
            "killed by signal 11",
        ),
        (
            "garbage",
            format!(
                "{} hook",
                script(bin.path(), "garbage", "echo 'this is {garbage'").display()
            ),
            "not one agency writes",
        ),
    ];
    for (name, hook_command, why) in cases {
        let (out, server) = codex_with_hook(&repo, &brief, &hook_command);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !repo.path().join("hello.txt").exists(),
            "{name}: the write went through\n{stderr}"
        );
        assert!(
            stderr.contains("Command blocked by PreToolUse hook") && stderr.contains(why),
            "{name}: Codex did not say why:\n{stderr}"
        );
        let outputs = server.tool_outputs();
        assert!(
            outputs.iter().any(|o| o.to_string().contains(why)),
            "{name}: the model was not told: {outputs:#?}"
        );
    }
    // And the real hook, installed the same way, lets the approved brief's write through.
    let (out, _server) = codex_with_hook(&repo, &brief, &format!("{} hook", env!("CARGO_BIN_EXE_agency")));
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt"))
            .ok()
            .as_deref(),
        Some("hi\n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // So does the slim `agency-hook`, wrapped the same way.
    std::fs::remove_file(repo.path().join("hello.txt")).unwrap();
    let (out, _server) = codex_with_hook(&repo, &brief, env!("CARGO_BIN_EXE_agency-hook"));
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt"))
            .ok()
            .as_deref(),
        Some("hi\n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// For the runner's gate-coverage audit, `agency hook` appends each PreToolUse decision to AGENCY_GATE_LOG
/// with the call's id and input; a decision it cannot record is not an allow.
#[test]
fn the_hook_records_each_decision_for_the_audit() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gate-decisions.jsonl");
    let db = repo.db();
    let env = |log: &Path| {
        [
            ("AGENCY_BRIEF", brief.clone()),
            ("AGENCY_DB", db.display().to_string()),
            ("AGENCY_GATE_LOG", log.display().to_string()),
        ]
    };
    let run = |log: &Path, tool: &str, input: Value| {
        let vars = env(log);
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        hook(&repo, &vars, &pre_tool_use(&repo, tool, input))
    };
    let write = json!({"file_path": repo.path().join("x.txt"), "content": "hi"});
    assert_eq!(run(&log, "Write", write.clone()).decision(), "deny");
    assert_eq!(
        run(&log, "Read", json!({"file_path": "README.md"})).decision(),
        "allow"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            json!({"tool_name": "Write", "tool_use_id": "toolu_1", "tool_input": write, "gate_decision": "deny"}),
            json!({"tool_name": "Read", "tool_use_id": "toolu_1", "tool_input": {"file_path": "README.md"},
                "gate_decision": "allow"}),
        ]
    );
    // A log that cannot be written: the allow becomes a block that says why.
    let unwritable = dir.path().join("no-such-dir").join("log.jsonl");
    let answer = run(&unwritable, "Read", json!({"file_path": "README.md"}));
    assert_eq!(answer.code, Some(2), "{answer:?}");
    assert!(
        answer.stderr.contains("cannot record the gate's decision"),
        "{}",
        answer.stderr
    );
}
