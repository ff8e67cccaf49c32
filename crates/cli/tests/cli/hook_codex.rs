//! End to end with the real Codex CLI (harness/PROTOCOLS.md §7) against the fake OpenAI Responses server
//! from `agency-testkit`: a private CODEX_HOME with `config.toml` and `hooks.json`, hooks trusted with
//! `--dangerously-bypass-hook-trust`, and an `apply_patch` the gate denies, then allows after approval.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use agency_testkit::{FakeOpenAi, Reply};

use crate::hook_claude::run_with_deadline;
use crate::hook_support::{activate, e2e_client, start_brief};
use crate::support::Repo;

const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";

fn codex(repo: &Repo, server: &FakeOpenAi, brief: &str) -> Output {
    let home = tempfile::tempdir().expect("codex home");
    // A known model name: Codex offers apply_patch only to models it knows.
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
        &format!("{} hook", env!("CARGO_BIN_EXE_agency")),
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
    let out = run_with_deadline(command, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "codex failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn codex_apply_patch_is_denied_until_the_teachback_is_approved() {
    if !e2e_client("codex") {
        return;
    }
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let server =
        FakeOpenAi::start(vec![Reply::custom("apply_patch", PATCH), Reply::text("done")]).expect("fake");

    codex(&repo, &server, &brief);
    assert!(
        !repo.path().join("hello.txt").exists(),
        "apply_patch ran while the teachback was pending"
    );
    let outputs = server.tool_outputs();
    assert!(
        outputs.iter().any(|o| o["output"]
            .as_str()
            .is_some_and(|t| t.contains("Command blocked by PreToolUse hook: teachback gate:"))),
        "the denial never reached the model: {outputs:#?}"
    );

    activate(&repo, &brief);
    codex(&repo, &server, &brief);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "hi\n"
    );
}
