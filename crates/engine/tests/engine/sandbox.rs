//! The escape suite: an implementer (the built-in agent, `run_command`) tries to get out of its worktree
//! the ways an attacker inside a run would — write the main checkout, another worktree, the runner's /tmp
//! and the shared git config and hooks; read the blackboard, team.yaml, another worktree and the runner's
//! environment through `/proc`; repoint its `.git` file — and also does honest work (fixes the code, runs
//! the tests, `git status`, `diff`, `add`). In the sandbox every attempt is refused or has no effect and
//! the honest work succeeds; with `sandbox.mode: off` the same script does get out (so the checks can
//! fail), and the run's log says the agent ran unsandboxed. Where bubblewrap cannot run, the agent is not
//! started at all.
//!
//! What the agent read is written into its worktree (`leak-*.txt`), which the runner commits: the test
//! reads those files on the integration branch.

use std::path::{Path, PathBuf};

use agency_core::config::{SandboxMode, TeamConfig};
use agency_core::event::EventKind;
use agency_exec::sandbox::{Network, SandboxPolicy};
use agency_store::RunStatus;

use crate::support::{GOAL, Project, config, drive};

/// The canaries the decoys hold: none may reach a leak file.
const OTHER_CANARY: &str = "OTHER-WORKTREE-CANARY";
const TEAM_CANARY: &str = "TEAM-YAML-CANARY";
/// A variable only the runner has (cargo sets it for the test process): read from `/proc`, it would leak.
const RUNNER_ONLY_VAR: &str = "CARGO_MANIFEST_DIR";

/// Whether bubblewrap can run here. CI installs it and sets `AGENCY_REQUIRE_SANDBOX=1`, where its absence
/// fails the suite; elsewhere the sandboxed cases are skipped with a note.
fn sandbox_available() -> bool {
    let available = SandboxPolicy::new("bwrap", Network::Full).probe();
    match available {
        Ok(()) => true,
        Err(err) if std::env::var_os("AGENCY_REQUIRE_SANDBOX").is_some() => {
            panic!("AGENCY_REQUIRE_SANDBOX is set but {err}")
        }
        Err(err) => {
            eprintln!("skipped: {err}");
            false
        }
    }
}

/// The places the escape script aims at.
struct Targets {
    main: PathBuf,
    db: PathBuf,
    other: PathBuf,
    runner_tmp: PathBuf,
}

impl Targets {
    /// Lays out the decoys: another agent's worktree with a secret, the main checkout's `.agency/team.yaml`.
    fn lay_out(project: &Project) -> Targets {
        let main = project.repo.root().to_path_buf();
        let other = project.dir.path().join("worktrees/other-agent");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("secret.txt"), OTHER_CANARY).unwrap();
        std::fs::create_dir_all(main.join(".agency")).unwrap();
        std::fs::write(main.join(".agency/team.yaml"), TEAM_CANARY).unwrap();
        // Written by the escape through the runner's /tmp; unique so parallel tests do not meet.
        let runner_tmp = std::env::temp_dir().join(format!("agency-escape-{}", agency_core::BriefId::new()));
        Targets {
            db: project.dir.path().join("agency.db"),
            main,
            other,
            runner_tmp,
        }
    }

    /// The script: simple.yaml whose implementer tries every escape, then fixes add.sh honestly. Unconfined
    /// (`sandboxed` false) the attacks on git are left out: they would break the runner's own git.
    fn script(&self, sandboxed: bool) -> String {
        let sh = |line: String| {
            format!("          - name: run_command\n            input: {{ argv: [sh, -c, {line:?}] }}\n")
        };
        let main = self.main.display();
        let other = self.other.display();
        let mut attempts = vec![
            // Writes outside the worktree.
            format!("echo pwned > {main}/pwned.txt"),
            format!("echo pwned > {other}/pwned.txt"),
            format!("echo pwned > {}", self.runner_tmp.display()),
            // Reads of what is not the agent's.
            format!("head -c 15 {} > leak-db.txt 2>&1", self.db.display()),
            format!("cat {main}/.agency/team.yaml > leak-team.txt 2>&1"),
            format!("cat {other}/secret.txt > leak-other.txt 2>&1"),
            format!(
                "cat /proc/{}/environ > leak-runner-environ.txt 2>&1",
                std::process::id()
            ),
            "cat /proc/$PPID/environ > leak-ppid-environ.txt 2>&1".to_owned(),
            // Whose HOME its commands get.
            "echo \"$HOME\" > home-seen.txt".to_owned(),
        ];
        if sandboxed {
            attempts.extend([
                // Code the runner's next git command would run, outside the sandbox.
                format!("echo 'exit 0' > {main}/.git/hooks/post-commit"),
                "git config core.fsmonitor 'touch /tmp/fsmonitor-ran'".to_owned(),
                // The pointer file the runner's own git commands follow.
                "echo 'gitdir: /tmp/evil' > .git".to_owned(),
            ]);
        }
        let honest = "sh test_add.sh && git status --short > /dev/null && git diff --stat > /dev/null \
                      && git add -A && echo ok > honest.txt";
        let mut calls: String = attempts.into_iter().map(sh).collect();
        calls.push_str(
            "          - name: edit_file\n            input: { path: add.sh, old_string: \"echo $(($1 - $2))\", \
             new_string: \"echo $(($1 + $2))\" }\n",
        );
        calls.push_str(&sh(honest.to_owned()));
        let script = include_str!("../scripts/simple.yaml");
        let start = script.find("      - tool_calls:\n").unwrap() + "      - tool_calls:\n".len();
        let end = script.find("          - name: report_result\n            input: { status: done, summary: \"add.sh adds.\"").unwrap();
        format!("{}{calls}{}", &script[..start], &script[end..])
    }

    /// Whether the escape's writes reached the host.
    fn writes_landed(&self) -> Vec<String> {
        let mut landed = Vec::new();
        for path in [
            self.main.join("pwned.txt"),
            self.other.join("pwned.txt"),
            self.runner_tmp.clone(),
            self.main.join(".git/hooks/post-commit"),
        ] {
            if path.exists() {
                landed.push(path.display().to_string());
            }
        }
        let config = std::fs::read_to_string(self.main.join(".git/config")).unwrap();
        if config.contains("fsmonitor") {
            landed.push(".git/config core.fsmonitor".to_owned());
        }
        landed
    }
}

impl Drop for Targets {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.runner_tmp);
    }
}

/// What the agent managed to read, from the leak files on `branch`.
fn leaks(project: &Project, branch: &str) -> Vec<String> {
    let mut found = Vec::new();
    let read = |name: &str| project.file_on(branch, name).unwrap_or_default();
    if read("leak-db.txt").contains("SQLite format 3") {
        found.push("the blackboard".to_owned());
    }
    if read("leak-team.txt").contains(TEAM_CANARY) {
        found.push("team.yaml".to_owned());
    }
    if read("leak-other.txt").contains(OTHER_CANARY) {
        found.push("another worktree".to_owned());
    }
    let runner_only = format!("{RUNNER_ONLY_VAR}=");
    if read("leak-runner-environ.txt").contains(&runner_only) {
        found.push("/proc/<runner>/environ".to_owned());
    }
    if read("leak-ppid-environ.txt").contains(&runner_only) {
        found.push("/proc/$PPID/environ".to_owned());
    }
    found
}

#[tokio::test]
async fn a_sandboxed_agent_cannot_get_out_and_honest_work_still_succeeds() {
    if !sandbox_available() {
        return;
    }
    assert!(
        std::env::var_os(RUNNER_ONLY_VAR).is_some(),
        "the canary variable is set in the runner"
    );
    let project = Project::new();
    let targets = Targets::lay_out(&project);
    let engine = project.runner_with(
        &targets.script(true),
        config(),
        true,
        "test-runner",
        |_, r| r,
        |options| {
            options.hidden.push(targets.db.clone());
        },
    );
    let run = engine.start(GOAL).unwrap();
    let outcome = drive(&engine, run.id).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let branch = outcome.branch.unwrap();

    assert_eq!(
        targets.writes_landed(),
        Vec::<String>::new(),
        "no write got out of the worktree"
    );
    assert_eq!(
        leaks(&project, &branch),
        Vec::<String>::new(),
        "nothing hidden was read"
    );
    // Honest work: the fix, the tests and git inside the worktree all ran; the runner committed as usual.
    project.assert_fixed(&branch, &["add.sh"]);
    assert_eq!(project.file_on(&branch, "honest.txt").as_deref(), Some("ok\n"));
    // Its commands ran with a private HOME, not the runner's.
    assert_eq!(
        project.file_on(&branch, "home-seen.txt").as_deref(),
        Some(format!("{}\n", agency_exec::sandbox::PRIVATE_HOME).as_str())
    );
    // The pointer file stayed as git made it (the rewrite was refused), so the runner's commit went where
    // it should.
    assert_eq!(project.file_on(&branch, ".git"), None);
    // Every attempt is on the record.
    let commands = project
        .events_of(run.id, EventKind::Log)
        .iter()
        .filter(|e| e.payload["tag"] == "TOOL")
        .filter(|e| {
            e.payload["message"]
                .as_str()
                .is_some_and(|m| m.contains(" run_command "))
        })
        .count();
    assert_eq!(
        commands, 13,
        "each escape attempt and the honest command is recorded"
    );
}

#[tokio::test]
async fn with_the_sandbox_off_the_same_agent_gets_out_and_the_log_says_it_ran_unsandboxed() {
    let project = Project::new();
    let targets = Targets::lay_out(&project);
    let mut config = config();
    config.sandbox.mode = SandboxMode::Off;
    let engine = project.engine(&targets.script(false), config, true);
    let run = engine.start(GOAL).unwrap();
    let outcome = drive(&engine, run.id).await;
    let branch = outcome
        .branch
        .clone()
        .unwrap_or_else(|| panic!("{}", project.tree(run.id)));

    // The checks above are not vacuous: unconfined, the escape works.
    let landed = targets.writes_landed();
    assert!(landed.iter().any(|l| l.ends_with("pwned.txt")), "{landed:?}");
    let leaked = leaks(&project, &branch);
    for what in [
        "the blackboard",
        "team.yaml",
        "another worktree",
        "/proc/<runner>/environ",
        "/proc/$PPID/environ",
    ] {
        assert!(leaked.iter().any(|l| l == what), "{what} read: {leaked:?}");
    }
    let warnings: Vec<String> = project
        .events_of(run.id, EventKind::Log)
        .iter()
        .filter(|e| e.payload["tag"] == "SANDBOX")
        .map(|e| e.payload["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        !warnings.is_empty(),
        "the run's log says the agent ran unsandboxed"
    );
    assert!(
        warnings
            .iter()
            .all(|w| w.starts_with("WARN") && w.contains("WITHOUT a sandbox")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn where_the_sandbox_cannot_run_command_agents_are_refused_with_the_way_out() {
    let project = Project::new();
    let mut config: TeamConfig = config();
    config.sandbox.program = "/nonexistent/bwrap".into();
    let engine = project.engine(include_str!("../scripts/simple.yaml"), config, true);
    let run = engine.start(GOAL).unwrap();
    let cancel = agency_llm::CancelToken::new();
    let err = engine.drive(run.id, &cancel).await.unwrap_err().to_string();
    assert!(err.contains("fix-add (builtin agent) was not started"), "{err}");
    assert!(err.contains("`/nonexistent/bwrap` was not found"), "{err}");
    assert!(err.contains("mode: off"), "{err}");
    // Nothing was started for it: no worktree, no spawn.
    assert_eq!(project.spawns_of(run.id, agency_core::Tier::T4, "fix-add"), 0);
    assert!(
        !Path::new(&project.dir.path().join("worktrees"))
            .join("fix-add")
            .exists()
    );
}
