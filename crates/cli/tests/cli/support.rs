//! Helpers: a temporary git repository (empty, holding the calculator the engine's scripted runs fix, or the
//! demo's pagination project), a command builder for the real `agency` binary, a reader of what a run
//! recorded, and waits for background processes and conditions.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use agency_core::gate::{Gate, GateKind};
use agency_core::{Event, RunId};
use agency_store::Blackboard;
use tempfile::TempDir;

/// The goal of every run on the calculator.
pub const CALCULATOR_GOAL: &str = "Fix the shell calculator so that every check passes.";

/// The shell calculator the engine's scripted runs fix (`crates/engine/tests/scripts/*.yaml`): `add.sh`,
/// `mul.sh` and `neg.sh` with the wrong operators, and their checks.
pub fn calculator_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/calculator")
}

/// `agency demo`'s sources: the pagination project (`repo/`) and its script.
pub fn demo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo")
}

/// A temporary git repository to run agency in.
pub struct Repo {
    dir: TempDir,
}

impl Repo {
    /// A fresh `git init`ed directory (no commits needed by the commands under test).
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().expect("temp dir");
        let status = Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir.path())
            .status()
            .expect("git init");
        assert!(status.success());
        Repo { dir }
    }

    /// A fresh repository with `agency init` already run.
    pub fn initialised() -> Repo {
        let repo = Repo::new();
        repo.agency(&["init"]).success();
        repo
    }

    /// Copies the calculator ([`calculator_dir`]) into the repository and commits it.
    pub fn commit_calculator(&self) {
        for entry in std::fs::read_dir(calculator_dir()).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), self.path().join(entry.file_name())).unwrap();
        }
        self.commit("calculator");
    }

    /// An initialised repository holding the calculator, committed, and `script` (a scripted provider's
    /// YAML) at `.agency/script.yaml`, whose path is returned.
    pub fn calculator(script: &str) -> (Repo, PathBuf) {
        let repo = Repo::initialised();
        repo.commit_calculator();
        let path = repo.write_script(script);
        (repo, path)
    }

    /// The demo's pagination project, committed, with agency initialised and team.yaml edited as
    /// [`Repo::edit_team`] does, then checked.
    pub fn demo(edits: &[(&str, &str)]) -> Repo {
        let repo = Repo::new();
        for name in ["pagination.py", "test_pagination.py", ".gitignore"] {
            std::fs::copy(demo_dir().join("repo").join(name), repo.path().join(name)).unwrap();
        }
        repo.commit("start");
        repo.agency(&["init"]).success();
        repo.edit_team(edits);
        repo.agency(&["config", "check"]).success();
        repo
    }

    /// Edits `.agency/team.yaml`: each `(from, to)` replaces `from`, which must occur exactly once (so a
    /// change to the default team.yaml fails the test here, not somewhere down the run).
    pub fn edit_team(&self, edits: &[(&str, &str)]) {
        let path = self.path().join(".agency").join("team.yaml");
        let mut text = std::fs::read_to_string(&path).unwrap();
        for (from, to) in edits {
            assert_eq!(text.matches(from).count(), 1, "`{from}` in {text}");
            text = text.replacen(from, to, 1);
        }
        std::fs::write(&path, text).unwrap();
    }

    /// Writes a scripted provider's YAML to `.agency/script.yaml` and returns its path.
    pub fn write_script(&self, script: &str) -> PathBuf {
        let path = self.path().join(".agency").join("script.yaml");
        std::fs::write(&path, script).unwrap();
        path
    }

    /// Starts `agency` with `args` in the background in the repository's top level (the blackboard is
    /// the repository's unless `env` names another), stdout and stderr piped for [`finish`].
    pub fn spawn(&self, args: &[&str], env: &[(&str, &str)]) -> Running {
        spawn_in(self.path(), args, env)
    }

    /// Runs git in the repository and asserts it succeeded.
    pub fn git(&self, args: &[&str]) {
        self.git_output(args);
    }

    /// Runs git in the repository, asserts it succeeded, and returns its stdout. Commits are by `t`.
    pub fn git_output(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Stages everything and commits it (an empty commit when nothing changed).
    pub fn commit(&self, message: &str) {
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "--allow-empty", "-m", message]);
    }

    /// The repository's top level.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The blackboard path `agency init` creates.
    pub fn db(&self) -> PathBuf {
        self.path().join(".agency").join("agency.db")
    }

    /// Runs `agency` with `args` in the repository's top level.
    pub fn agency(&self, args: &[&str]) -> Run {
        self.agency_in(self.path(), args)
    }

    /// Runs `agency` with `args` in `dir`.
    pub fn agency_in(&self, dir: &Path, args: &[&str]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_agency"))
            .args(args)
            .current_dir(dir)
            .env_remove("AGENCY_DB")
            .env_remove("AGENCY_CONFIG")
            .env("USER", "tester")
            .env("LOGNAME", "tester")
            .env("NO_COLOR", "1")
            .output()
            .expect("run agency");
        Run {
            output,
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The calculator, committed with agency's own files ignored, agency initialised and team.yaml edited by
/// `edits` (as [`Repo::edit_team`]) and checked.
pub fn arithmetic_repo(edits: &[(&str, &str)]) -> Repo {
    let repo = Repo::new();
    std::fs::write(repo.path().join(".gitignore"), ".agency/\n").unwrap();
    repo.commit_calculator();
    repo.agency(&["init"]).success();
    repo.edit_team(edits);
    repo.agency(&["config", "check"]).success();
    repo
}

/// Who the CLI records as deciding: `cli:` and the OS user's name, asked of `id -un` (the passwd
/// database, as agency asks it), or `cli:uid:<n>` when the uid has no name. Never `$USER`, which the
/// tests set to `tester`.
pub fn decider() -> String {
    let id = |flag: &str| {
        let out = Command::new("id").arg(flag).output().expect("run id");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )
    };
    match id("-un") {
        (true, name) if !name.is_empty() => format!("cli:{name}"),
        _ => format!("cli:uid:{}", id("-u").1),
    }
}

/// A finished `agency` invocation.
pub struct Run {
    output: Output,
    args: Vec<String>,
}

impl Run {
    /// Standard output as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Standard error as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// The exit code (`None` when killed by a signal, which includes a panic abort).
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    /// The run `agency run` names on its first line (`run 3a620b97 started on …`).
    pub fn run_id(&self) -> String {
        let out = self.stdout();
        let first = out.lines().next().unwrap_or_default();
        match first.strip_prefix("run ").and_then(|rest| rest.split(' ').next()) {
            Some(id) => id.to_string(),
            None => panic!("no run named in {out}"),
        }
    }

    /// Asserts exit 0 and returns self.
    pub fn success(self) -> Run {
        assert_eq!(
            self.code(),
            Some(0),
            "agency {:?} failed:\nstdout:\n{}\nstderr:\n{}",
            self.args,
            self.stdout(),
            self.stderr()
        );
        self
    }

    /// Asserts the exit code, that nothing panicked, and returns self.
    pub fn fails_with(self, code: i32) -> Run {
        assert_eq!(
            self.code(),
            Some(code),
            "agency {:?}:\nstdout:\n{}\nstderr:\n{}",
            self.args,
            self.stdout(),
            self.stderr()
        );
        assert!(
            !self.stderr().contains("panicked"),
            "agency {:?} panicked:\n{}",
            self.args,
            self.stderr()
        );
        self
    }
}

/// The [`Repo::edit_team`] edit that puts `tier` (t4 or t5) on `runtime` (the default team.yaml has both on
/// `auto`).
pub fn runtime_of(tier: &str, runtime: &str) -> (&'static str, String) {
    let line = match tier {
        "t4" => "fast-cheap        # implementer: atomic tasks\n    runtime: auto ",
        "t5" => "capable           # verifier: checks T4 output\n    runtime: auto ",
        other => panic!("no runtime line for {other}"),
    };
    (
        line,
        line.replace("runtime: auto ", &format!("runtime: {runtime} ")),
    )
}

/// The open gate of `kind` on `run`, if there is one.
pub fn pending_gate(store: &dyn Blackboard, run: RunId, kind: GateKind) -> Option<Gate> {
    store
        .pending_gates(Some(run))
        .unwrap()
        .into_iter()
        .find(|g| g.kind == kind)
}

/// The tokens a usage event counts against a budget: input, output, cache reads and writes.
pub fn tokens_of(usage: &Event) -> u64 {
    [
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
    ]
    .iter()
    .filter_map(|k| usage.payload[*k].as_u64())
    .sum()
}

/// Every event of `run`, oldest first.
pub fn events(store: &dyn Blackboard, run: RunId) -> Vec<Event> {
    store.events_after(Some(run), 0, usize::MAX).unwrap()
}

/// Starts `agency` with `args` in the background in `dir`, as [`Repo::spawn`] does.
pub fn spawn_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Running {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agency"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_CONFIG")
        // Decisions are signed with the OS user, never these: set to show they are ignored.
        .env("USER", "tester")
        .env("LOGNAME", "tester")
        .env("NO_COLOR", "1");
    for (name, value) in env {
        command.env(name, value);
    }
    Running(Some(
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ))
}

/// Waits for `child` to end (killing it after `limit`) and returns its exit code and output.
pub fn finish(mut running: Running, limit: Duration) -> (Option<i32>, String) {
    let mut child = running.0.take().expect("a process not finished yet");
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

/// The newest run on `store`, once the runner a test started has created it.
pub fn started_run(store: &dyn Blackboard) -> RunId {
    wait_for(
        || store.list_runs().ok()?.first().map(|r| r.id),
        "the run to start",
    )
}

/// The newest run on `store` once it waits at its plan gate (a runner started without `--auto-approve`).
pub fn run_at_plan_gate(store: &dyn Blackboard) -> RunId {
    wait_for(
        || {
            let run = store.list_runs().ok()?.first()?.id;
            pending_gate(store, run, agency_core::GateKind::T1Plan).map(|_| run)
        },
        "the plan gate",
    )
}

/// Polls `probe` until it gives a value, failing the test after 60 s with `what`.
pub fn wait_for<T>(mut probe: impl FnMut() -> Option<T>, what: &str) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "waited 60s for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An `agency` process a test started ([`Repo::spawn`]). A test that fails before it [`finish`]es it kills it
/// on the way out, so no runner of a failed test is left waiting at a gate.
pub struct Running(Option<Child>);

impl std::ops::Deref for Running {
    type Target = Child;

    fn deref(&self) -> &Child {
        self.0.as_ref().expect("a process not finished yet")
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        self.0.as_mut().expect("a process not finished yet")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An `agency dashboard` serving a repository's blackboard on loopback, killed when dropped however the
/// test ends.
pub struct Dashboard {
    child: Child,
    /// `127.0.0.1:PORT`, from the URL it printed.
    pub addr: String,
    /// The token from that URL.
    pub token: String,
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Dashboard {
    /// Starts `agency dashboard --listen 127.0.0.1:0` in `repo` with a generated token (and without the
    /// variables in `env_remove`) and reads the URL it prints first: `dashboard: http://ADDR/#token=HEX`.
    pub fn serve(repo: &Repo, env_remove: &[&str]) -> Dashboard {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agency"));
        command
            .args(["dashboard", "--listen", "127.0.0.1:0"])
            .current_dir(repo.path())
            .env_remove("AGENCY_DB")
            .env_remove("AGENCY_CONFIG")
            .env_remove("AGENCY_DASHBOARD_TOKEN");
        for name in env_remove {
            command.env_remove(name);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut first,
        )
        .unwrap();
        let url = first.trim().strip_prefix("dashboard: http://").map(str::to_owned);
        let Some((addr, token)) = url.as_deref().and_then(|u| u.split_once("/#token=")) else {
            let _ = child.kill();
            panic!("the dashboard printed no URL first: {first}");
        };
        let (addr, token) = (addr.to_string(), token.to_string());
        Dashboard { child, addr, token }
    }
}

/// One HTTP/1.1 exchange; returns the status line and the body.
pub fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    if let Err(e) = stream.read_to_string(&mut response) {
        panic!("{method} {path}: {e}; read so far: {response}");
    }
    let status = response.lines().next().unwrap_or_default().to_string();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Fails unless `payload` is an ALERT in PACT's form raised by `source`: category META-BLOCK and a
/// non-empty issue, evidence, impact and recommended action.
pub fn assert_pact_alert(payload: &serde_json::Value, source: &str) {
    assert_eq!(payload["level"], "ALERT", "{payload}");
    assert_eq!(payload["category"], "META-BLOCK", "{payload}");
    assert_eq!(payload["source"], source, "{payload}");
    for field in ["issue", "evidence", "impact", "recommended_action"] {
        assert!(
            payload[field].as_str().is_some_and(|v| !v.trim().is_empty()),
            "{field} is empty: {payload}"
        );
    }
}

/// A run of independent workstreams, each writing one note (`notes/ws-NN.md`) on the built-in agent over
/// HTTP, scripted on the fake Anthropic server: the set-up of the runs that test what the model's
/// provider does to a run (`faults`) and what it costs (`cache_share`). Point a demo repository's team at
/// [`notes_run::server`] with [`runtime_of`] `builtin` for T4 and T5.
pub mod notes_run {
    use agency_testkit::{FakeAnthropic, Reply};
    use serde_json::{Value, json};

    /// Workstream `n`'s id, `ws-01` for 1.
    pub fn id(n: usize) -> String {
        format!("ws-{n:02}")
    }

    /// T1's plan: `count` independent T4 → T5 workstreams in one parallel group.
    pub fn plan(count: usize) -> Value {
        let workstreams: Vec<Value> = (1..=count)
            .map(|n| {
                json!({
                    "id": id(n),
                    "name": format!("note-{n:02}"),
                    "domain": "backend",
                    "tier_path": ["t4", "t5"],
                    "parallel_group": "A",
                    "notes": format!("Write notes/{}.md with one line saying which workstream wrote it.", id(n)),
                    "variety": {"novelty": 1, "scope": 2, "uncertainty": 2, "risk": 2},
                    "shallower_path_reason": "one new file",
                    "contract": {
                        "done_when": format!("notes/{}.md exists", id(n)),
                        // The judge checks the file; a verify command naming it would be refused (a file it reads
                        // must not be changed without may_edit).
                        "verify": "git log -1 --oneline",
                        "failure_modes": ["another workstream's file is touched"]
                    }
                })
            })
            .collect();
        let group: Vec<String> = (1..=count).map(id).collect();
        json!({
            "status": "done",
            "summary": "Independent notes.",
            "output": {
                "run_id": "00000000-0000-4000-8000-000000000000",
                "goal_anchor": "(filled in by agency)",
                "complexity": "low",
                "retry_budget_multiplier": 1,
                "workstreams": workstreams,
                "parallelism": {"groups": {"A": group}, "sequence": ["A"]},
                "self_critique_summary": "Each note is independent of the others."
            }
        })
    }

    /// Workstream `n`'s implementer: its teachback, the note written, its report.
    pub fn implementer(n: usize) -> Vec<Reply> {
        let path = format!("notes/{}.md", id(n));
        vec![
            Reply::tool_use(
                "submit_teachback",
                json!({
                    "building": format!("the file {path}"),
                    "key_constraints": ["touch no other file"],
                    "interfaces": ["none"],
                    "approach": "write the file, then report",
                    "most_likely_wrong": "the directory may not exist yet",
                    "least_confident": "nothing else",
                    "first_action": "write the file"
                }),
            ),
            Reply::tool_use(
                "write_file",
                json!({"path": path, "content": format!("Written by {}.\n", id(n))}),
            ),
            Reply::tool_use(
                "report_result",
                json!({
                    "status": "done",
                    "summary": format!("{path} written."),
                    "evidence": [{"path": path, "quote": format!("Written by {}.", id(n))}]
                }),
            ),
        ]
    }

    /// The fake server answering the whole run: T1's plan, approving teachback reviews, the
    /// implementers and accepting sign-off judges.
    pub fn server(count: usize) -> FakeAnthropic {
        let server =
            FakeAnthropic::start(vec![Reply::tool_use("report_result", plan(count))]).expect("fake server");
        server.set_rule(
            "## The agent's teachback",
            vec![Reply::tool_use(
                "review_teachback",
                json!({"approved": true, "note": "Matches the brief."}),
            )],
        );
        server.set_rule(
            "Goal under sign-off:",
            vec![Reply::text(
                "The note is there and touches nothing else.\nVERDICT: accept\nmissing: none",
            )],
        );
        for n in 1..=count {
            server.set_rule(format!("implementer in workstream {}", id(n)), implementer(n));
        }
        server
    }
}
