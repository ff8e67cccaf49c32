//! First use on a team: `agency hook install` writes to the committed `.claude/settings.json` only a
//! command that works on a teammate's machine (`agency hook`, found on PATH), and this machine's absolute
//! path only to `.claude/settings.local.json`; `agency goal install-hooks` keeps the TaskCreate entry.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use agency_exec::runtime::hook_command::MARK;
use serde_json::{Value, json};

use crate::hook_support::pre_tool_use;
use crate::support::Repo;

/// `agency <args>` in `repo` with `PATH` set to `path`.
fn agency_with_path(repo: &Repo, path: &str, args: &[&str]) -> std::process::Output {
    let output = Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(args)
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_CONFIG")
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    output
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The commands of `event`'s entries.
fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|entry| entry["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|hook| hook["command"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn installed_from_path_the_shared_settings_run_agency_from_each_machines_path() {
    let repo = Repo::initialised();
    // agency installed on PATH here: a link to the binary under test.
    let here = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_agency"), here.path().join("agency")).unwrap();
    let path = format!("{}:/usr/bin:/bin", here.path().display());
    let out = agency_with_path(&repo, &path, &["hook", "install"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(".claude/settings.json"), "{stdout}");
    assert!(
        stdout.contains("command    `agency hook`: agency is on PATH"),
        "{stdout}"
    );
    assert!(!repo.path().join(".claude/settings.local.json").exists());

    let settings = read(&repo.path().join(".claude/settings.json"));
    let text = settings.to_string();
    let exe_dir = Path::new(env!("CARGO_BIN_EXE_agency")).parent().unwrap();
    assert!(
        !text.contains(&exe_dir.display().to_string()) && !text.contains(&here.path().display().to_string()),
        "no path of this machine in the shared settings: {settings:#}"
    );
    let gate = commands(&settings, "PreToolUse").remove(0);
    assert!(gate.starts_with(MARK), "{gate}");
    assert!(gate.contains("out=$(agency hook)"), "{gate}");

    // On a teammate's machine agency is installed somewhere else; the committed command still finds it.
    let teammate = tempfile::tempdir().unwrap();
    let bin = teammate.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_agency"), bin.join("agency")).unwrap();
    let event = pre_tool_use(&repo, "Read", json!({"file_path": "/etc/hosts"}));
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&gate)
        .current_dir(repo.path())
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env_remove("AGENCY_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(event.as_bytes()).unwrap();
    let answered = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&answered.stderr);
    assert!(!stderr.contains("was not found"), "{stderr}");
    assert_eq!(answered.status.code(), Some(0), "a read is allowed: {stderr}");

    // Without agency on that PATH the same command blocks the call: fail closed, and it says why.
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&gate)
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(event.as_bytes()).unwrap();
    let blocked = child.wait_with_output().unwrap();
    assert_eq!(blocked.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&blocked.stderr).contains("the gate was not found (exit 127)"));
}

#[test]
fn installed_from_a_build_directory_the_path_goes_to_the_local_settings_and_says_so() {
    let repo = Repo::initialised();
    let out = agency_with_path(&repo, "/usr/bin:/bin", &["hook", "install"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(".claude/settings.local.json"), "{stdout}");
    assert!(
        stdout.contains("agency is not on PATH")
            && stdout.contains("cargo install --path crates/cli --locked"),
        "{stdout}"
    );
    assert!(!repo.path().join(".claude/settings.json").exists());
    let local = read(&repo.path().join(".claude/settings.local.json"));
    let gate = commands(&local, "PreToolUse").remove(0);
    // The slim hook built beside this agency answers the gate (the goal hooks keep `agency hook`).
    assert!(
        gate.contains(&format!("out=$({})", env!("CARGO_BIN_EXE_agency-hook"))),
        "{gate}"
    );
    assert_eq!(local["hooks"]["PostToolUse"][0]["matcher"], "TaskCreate");

    // Another agency first on PATH (an older install) is not trusted to answer for this one.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("agency"), "#!/bin/sh\nexit 0\n").unwrap();
    let path = format!("{}:/usr/bin:/bin", other.path().display());
    let out = agency_with_path(&repo, &path, &["hook", "install"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("settings.local.json") && stdout.contains("is another one"),
        "{stdout}"
    );
    assert!(!repo.path().join(".claude/settings.json").exists());
}

#[test]
fn goal_install_hooks_keeps_the_task_create_entry() {
    let repo = Repo::initialised();
    let settings = repo.path().join(".claude/settings.json");
    repo.agency(&["hook", "install", "--command", "agency hook"])
        .success();
    let task_create = read(&settings)["hooks"]["PostToolUse"][0].clone();
    assert_eq!(task_create["matcher"], "TaskCreate");
    repo.agency(&["goal", "install-hooks", "--command", "agency hook"])
        .success();
    repo.agency(&["goal", "install-hooks", "--command", "agency hook"])
        .success();
    let post = read(&settings)["hooks"]["PostToolUse"].clone();
    assert_eq!(
        post,
        json!([task_create, {"hooks": [{"type": "command", "command": "agency hook", "timeout": 30}]}]),
        "the TaskCreate entry stays, and the goal entry is written once"
    );

    // An earlier version's bare TaskCreate entry is not mistaken for a goal entry either.
    let bare = json!({"matcher": "TaskCreate", "hooks": [{"type": "command", "command": "/usr/local/bin/agency hook", "timeout": 10}]});
    std::fs::write(
        &settings,
        json!({"hooks": {"PostToolUse": [bare.clone()]}}).to_string(),
    )
    .unwrap();
    repo.agency(&["goal", "install-hooks", "--command", "agency hook"])
        .success();
    assert_eq!(read(&settings)["hooks"]["PostToolUse"][0], bare);
}
