//! Helpers: a temporary git repository holding a tiny shell project with wrong operators and checks that fail
//! on them (`tests/calculator`, which the CLI's tests use too), runs on it answering from a script (to their
//! end, or in the background), and readers that turn the blackboard into things a test can assert on (the
//! briefs tree, the live log's tier lines, files on a branch, spawns).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agency_core::config::TeamConfig;
use agency_core::event::EventKind;
use agency_core::gate::GateKind;
use agency_core::{Brief, BriefId, BriefStatus, Event, GateDecision, GateId, RunId, Tier};
use agency_engine::engine::feedback_name;
use agency_engine::{DriveOutcome, Engine, EngineOptions};
use agency_exec::runtime::{
    AgentLimits, AgentOutcome, AgentTask, BuiltinRuntime, RunnerLink, Runtime, RuntimeError,
};
use agency_exec::{GitOptions, Repo};
use agency_llm::{BoxFuture, CancelToken, Provider, Script, ScriptedProvider};
use agency_store::{Blackboard, Run, RunStatus, SqliteBlackboard};
use tempfile::TempDir;

/// The goal every test run works toward.
pub const GOAL: &str = "Fix the shell calculator so that every check passes.";

/// The project (`tests/calculator`): `add.sh`, `mul.sh` and `neg.sh` each have the wrong operator;
/// `test_*.sh` check them.
fn calculator_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/calculator")
}

/// The calculator's scripts as the runs fix them.
const FIXED: &[(&str, &str)] = &[
    ("add.sh", "# add A B: prints A + B\necho $(($1 + $2))\n"),
    ("mul.sh", "# mul A B: prints A * B\necho $(($1 * $2))\n"),
    ("neg.sh", "# neg A: prints -A\necho $((0 - $1))\n"),
];

/// The briefs tree of a medium run whose `fix-mul` was not accepted at first and was retried once.
pub const FIX_MUL_RETRIED: &str = "\
t1 plan (planner) #0 done
  t1 accept (acceptor) #0 done
  t3 arithmetic (squad-lead) #0 done
    t4 fix-add (implementer) #0 done
      t5 fix-add (verifier) #0 done
    t4 fix-mul (implementer) #0 failed
      t5 fix-mul (verifier) #0 done
    t4 fix-mul (implementer) #1 done
      t5 fix-mul (verifier) #0 done
";

/// A temporary repository with the project committed on `main`, and a blackboard next to it.
#[derive(Debug)]
pub struct Project {
    /// Holds everything; removed on drop.
    pub dir: TempDir,
    /// The repository.
    pub repo: Repo,
    /// The blackboard.
    pub store: Arc<SqliteBlackboard>,
}

impl Project {
    /// Lays out and commits the project.
    pub fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        for entry in std::fs::read_dir(calculator_dir()).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), root.join(entry.file_name())).unwrap();
        }
        let repo = Repo::init(&root, "main", GitOptions::default()).unwrap();
        repo.commit_all("a calculator with wrong operators").unwrap();
        let store = Arc::new(SqliteBlackboard::open(dir.path().join("agency.db")).unwrap());
        Project { dir, repo, store }
    }

    /// Makes the runners made from now on run git through a script that appends each call's subcommand
    /// (the word after any `-c name=value`) to the returned file, then runs the real git.
    pub fn log_git_calls(&mut self) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let log = self.dir.path().join("git-calls.log");
        let script = self.dir.path().join("logging-git");
        let body = format!(
            "#!/bin/sh\nif [ \"$1\" = -c ]; then echo \"$3\"; else echo \"$1\"; fi >> '{}'\nexec git \"$@\"\n",
            log.display()
        );
        std::fs::write(&script, body).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let options = GitOptions {
            program: script.into(),
            ..self.repo.options().clone()
        };
        self.repo = Repo::open(self.repo.root(), options).unwrap();
        std::fs::write(&log, "").unwrap();
        log
    }

    /// Starts a run of `script` with every gate auto-approved and drives it to its end.
    pub async fn run_to_end(&self, script: &str, config: TeamConfig) -> (Run, DriveOutcome) {
        let engine = self.engine(script, config, true);
        let run = engine.start(GOAL).unwrap();
        let outcome = drive(&engine, run.id).await;
        (run, outcome)
    }

    /// [`Project::run_to_end`], failing the test (with the briefs tree) unless the run succeeded and left
    /// no worktree behind.
    pub async fn succeed(&self, script: &str, config: TeamConfig) -> (Run, DriveOutcome) {
        let engine = self.engine(script, config, true);
        let run = engine.start(GOAL).unwrap();
        let outcome = drive(&engine, run.id).await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{}", self.tree(run.id));
        // Asked while the runner is still there (its drop would sweep what the drive left). What a failed
        // or cancelled brief worked in stays, for a look, until `agency gc`; nothing else does.
        let briefs = self.briefs(run.id);
        let kept_for_a_look = |path: &PathBuf| {
            briefs.iter().any(|b| {
                b.worktree.as_deref().map(Path::new).and_then(Path::file_name) == path.file_name()
                    && matches!(
                        b.status,
                        BriefStatus::Failed | BriefStatus::Escalated | BriefStatus::Cancelled
                    )
            })
        };
        let left: Vec<PathBuf> = self
            .linked_worktrees()
            .into_iter()
            .filter(|path| !kept_for_a_look(path))
            .collect();
        assert_eq!(
            left,
            Vec::<PathBuf>::new(),
            "a succeeded run removed every worktree but its failed and cancelled briefs':\n{}",
            self.tree(run.id)
        );
        drop(engine);
        (run, outcome)
    }

    /// The repository's linked worktrees, as git lists them.
    pub fn linked_worktrees(&self) -> Vec<PathBuf> {
        self.repo
            .list_worktrees()
            .unwrap()
            .into_iter()
            .filter(|w| !w.is_main)
            .map(|w| w.path)
            .collect()
    }

    /// Starts a run of `script` driven on its own thread ([`Background`]), so the test can act on the
    /// blackboard meanwhile.
    pub fn start_in_background(
        &self,
        script: &str,
        config: TeamConfig,
        auto_approve: bool,
    ) -> (Run, Background) {
        self.runner_for(script)
            .config(config)
            .auto_approve(auto_approve)
            .start()
    }

    /// A runner on this project answering every model call from `script` (YAML text).
    pub fn engine(&self, script: &str, config: TeamConfig, auto_approve: bool) -> Engine {
        self.runner_for(script)
            .config(config)
            .auto_approve(auto_approve)
            .engine()
    }

    /// The one builder of a test's runner on this project, answering every model call from `script` (YAML
    /// text): the team config, `--auto-approve`, the runner's name, its agents' runtimes, its own
    /// providers and its options each default to what most tests want and are changed one call each.
    pub fn runner_for(&self, script: &str) -> RunnerBuilder<'_> {
        RunnerBuilder {
            project: self,
            script: script.to_string(),
            config: config(),
            auto_approve: false,
            worker: "test-runner".to_string(),
            runtime: Box::new(|_, builtin| builtin),
            provider: Box::new(|_, scripted| scripted),
            adjust: Vec::new(),
        }
    }

    /// A runner named `worker` whose agents are `runtime(tier, the built-in runtime on the script)`: one of
    /// several runners on this project's blackboard, some with agents that are slow or never finish.
    pub fn runner<'p>(
        &'p self,
        script: &str,
        config: TeamConfig,
        auto_approve: bool,
        worker: &str,
        runtime: impl Fn(Tier, Arc<dyn Runtime>) -> Arc<dyn Runtime> + 'p,
    ) -> Engine {
        self.runner_for(script)
            .config(config)
            .auto_approve(auto_approve)
            .worker(worker)
            .runtime(runtime)
            .engine()
    }

    /// [`Project::runner`], with its options changed by `adjust` (a worktree directory it cannot use, say).
    pub fn runner_with<'p>(
        &'p self,
        script: &str,
        config: TeamConfig,
        auto_approve: bool,
        worker: &str,
        runtime: impl Fn(Tier, Arc<dyn Runtime>) -> Arc<dyn Runtime> + 'p,
        adjust: impl FnOnce(&mut EngineOptions) + 'p,
    ) -> Engine {
        self.runner_for(script)
            .config(config)
            .auto_approve(auto_approve)
            .worker(worker)
            .runtime(runtime)
            .options(adjust)
            .engine()
    }

    /// [`Project::runner_with`], with the runner's own provider of each tier (what reviews teachbacks,
    /// judges and probes in an outage; the agents keep the script's) made by `provider` from the script's.
    #[allow(clippy::too_many_arguments)]
    pub fn runner_providing<'p>(
        &'p self,
        script: &str,
        config: TeamConfig,
        auto_approve: bool,
        worker: &str,
        runtime: impl Fn(Tier, Arc<dyn Runtime>) -> Arc<dyn Runtime> + 'p,
        provider_of: impl Fn(Tier, Arc<dyn Provider>) -> Arc<dyn Provider> + 'p,
        adjust: impl FnOnce(&mut EngineOptions) + 'p,
    ) -> Engine {
        self.runner_for(script)
            .config(config)
            .auto_approve(auto_approve)
            .worker(worker)
            .runtime(runtime)
            .provider(provider_of)
            .options(adjust)
            .engine()
    }

    /// The text of `path` on `branch`, if the file exists there.
    pub fn file_on(&self, branch: &str, path: &str) -> Option<String> {
        self.repo
            .file_at(branch, Path::new(path))
            .unwrap()
            .map(|bytes| String::from_utf8(bytes).unwrap())
    }

    /// Fails the test unless each of `names` (`add.sh`, `mul.sh`, `neg.sh`) is fixed on `branch`.
    pub fn assert_fixed(&self, branch: &str, names: &[&str]) {
        for name in names {
            let fixed = FIXED.iter().find(|(n, _)| n == name).map(|(_, text)| *text);
            assert_eq!(self.file_on(branch, name).as_deref(), fixed, "{name} on {branch}");
        }
    }

    /// How many agents were spawned for the briefs of `tier` titled `title`, every attempt counted.
    pub fn spawns_of(&self, run: RunId, tier: Tier, title: &str) -> usize {
        let spawns = spawns_per_brief(&self.events(run));
        self.briefs(run)
            .iter()
            .filter(|b| b.tier == tier && b.title == title)
            .map(|b| spawns.get(&b.id).copied().unwrap_or(0))
            .sum()
    }

    /// The feedback the corrected brief of attempt `attempt` of `tier` `title` was given (why it was
    /// retried, what to fix).
    pub fn feedback(&self, run: RunId, tier: Tier, title: &str, attempt: u32) -> String {
        let brief = self
            .briefs(run)
            .into_iter()
            .find(|b| b.tier == tier && b.title == title && b.attempt == attempt)
            .unwrap_or_else(|| panic!("no attempt {attempt} of {tier} {title}:\n{}", self.tree(run)));
        self.artifact(run, &feedback_name(brief.id))
            .unwrap_or_else(|| panic!("no feedback for attempt {attempt} of {tier} {title}"))
    }

    /// Every brief of the run, oldest first.
    pub fn briefs(&self, run: RunId) -> Vec<Brief> {
        self.store.list_briefs(run).unwrap()
    }

    /// Every event of the run, oldest first.
    pub fn events(&self, run: RunId) -> Vec<Event> {
        events(self.store.as_ref(), run)
    }

    /// The run's events of `kind`, oldest first.
    pub fn events_of(&self, run: RunId, kind: EventKind) -> Vec<Event> {
        self.events(run).into_iter().filter(|e| e.kind == kind).collect()
    }

    /// The run's briefs as an indented tree, one line per brief: `t2 lead (lead-architect) #0 done`.
    /// Siblings are sorted by tier, title and attempt, so the tree is the same whatever order agents ran in.
    pub fn tree(&self, run: RunId) -> String {
        tree(&self.briefs(run))
    }

    /// The live log's tier lines at the normal level, as `T1 PLAN_START`.
    pub fn log_tags(&self, run: RunId) -> Vec<String> {
        self.events(run)
            .iter()
            .filter(|e| e.kind == EventKind::Log && e.payload["level"] == "normal")
            .map(|e| {
                let tier = e
                    .tier
                    .map(|t| t.as_str().to_ascii_uppercase())
                    .unwrap_or_default();
                format!("{tier} {}", e.payload["tag"].as_str().unwrap_or(""))
            })
            .collect()
    }

    /// The text of the newest artifact named `name`.
    pub fn artifact(&self, run: RunId, name: &str) -> Option<String> {
        self.store
            .latest_artifact(run, name)
            .unwrap()
            .map(|a| String::from_utf8(a.bytes).unwrap())
    }
}

/// Every event of the run in `store`, oldest first.
pub fn events(store: &dyn Blackboard, run: RunId) -> Vec<Event> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(Some(run), after, 1000).unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        out.extend(page);
    }
    out
}

/// The briefs as an indented tree (see [`Project::tree`]).
pub fn tree(briefs: &[Brief]) -> String {
    fn walk(briefs: &[Brief], parent: Option<BriefId>, depth: usize, out: &mut String) {
        let mut children: Vec<&Brief> = briefs.iter().filter(|b| b.parent == parent).collect();
        children.sort_by(|a, b| (a.tier, &a.title, a.attempt).cmp(&(b.tier, &b.title, b.attempt)));
        for brief in children {
            let role = agency_core::tiers::BriefRole::of(brief).as_str();
            out.push_str(&format!(
                "{}{} {} ({role}) #{} {}\n",
                "  ".repeat(depth),
                brief.tier.as_str(),
                brief.title,
                brief.attempt,
                brief.status.as_str()
            ));
            walk(briefs, Some(brief.id), depth + 1, out);
        }
    }
    let mut out = String::new();
    walk(briefs, None, 0, &mut out);
    out
}

/// How many `spawned` events each brief has.
pub fn spawns_per_brief(events: &[Event]) -> BTreeMap<BriefId, usize> {
    let mut counts = BTreeMap::new();
    for event in events.iter().filter(|e| e.kind == EventKind::Spawned) {
        *counts.entry(event.brief.unwrap()).or_insert(0) += 1;
    }
    counts
}

/// Drives `run` to its end, failing the test if it takes longer than `limit`.
pub async fn drive(engine: &Engine, run: RunId) -> DriveOutcome {
    let cancel = CancelToken::new();
    match tokio::time::timeout(Duration::from_secs(60), engine.drive(run, &cancel)).await {
        Ok(outcome) => outcome.unwrap(),
        Err(_) => {
            cancel.cancel();
            let log: Vec<String> = events(engine.store().as_ref(), run)
                .iter()
                .filter(|e| e.kind != EventKind::Usage)
                .map(|e| format!("{} {}", e.kind.as_str(), e.payload))
                .collect();
            panic!(
                "the run did not finish within 60s:\n{}\nevents:\n{}",
                tree(&engine.store().list_briefs(run).unwrap()),
                log.join("\n")
            );
        }
    }
}

/// The planner's rule of a wide script: a plan of `width` workstreams `ws-0`..`ws-<width-1>` (each named as
/// its id, in domain `d`, of variety 4, in one parallel group `A`) on `tier_path`, of `complexity`; each
/// declares the files `files(k)` gives it, if any. The rest of the script (each workstream's agents, the
/// judges) is the test's own.
pub fn wide_plan(
    width: usize,
    tier_path: &[&str],
    complexity: &str,
    files: impl Fn(usize) -> Option<Vec<String>>,
) -> serde_json::Value {
    let ids: Vec<String> = (0..width).map(|k| format!("ws-{k}")).collect();
    let workstreams: Vec<serde_json::Value> = ids
        .iter()
        .enumerate()
        .map(|(k, id)| {
            let mut workstream = serde_json::json!({
                "id": id, "name": id, "domain": "d", "tier_path": tier_path, "parallel_group": "A",
                "variety": { "novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1 },
                "contract": { "done_when": "its files exist" }
            });
            if let Some(files) = files(k) {
                workstream["files"] = serde_json::json!(files);
            }
            workstream
        })
        .collect();
    serde_json::json!({ "role": "planner", "reply": { "tool_calls": [{ "name": "report_result", "input": {
        "status": "done", "summary": "Many small workstreams.",
        "output": {
            "run_id": "00000000-0000-4000-8000-000000000000", "goal_anchor": "(filled in by agency)",
            "complexity": complexity, "retry_budget_multiplier": 1, "workstreams": workstreams,
            "parallelism": { "groups": { "A": ids }, "sequence": ["A"] },
            "self_critique_summary": "generated"
        }
    }}]}})
}

/// A team config with fast defaults for tests: no t2_synthesis gate unless asked, four agents at once.
pub fn config() -> TeamConfig {
    TeamConfig::default()
}

/// A run driven on its own thread (with its own runtime), so a test can act on the blackboard meanwhile, as
/// `agency approve`, `reject`, `pause` and `resume` do from another process.
#[derive(Debug)]
pub struct Background {
    handle: std::thread::JoinHandle<agency_engine::Result<DriveOutcome>>,
    cancel: CancelToken,
}

impl Background {
    /// Starts driving `run`.
    pub fn drive(engine: Engine, run: RunId) -> Background {
        let cancel = CancelToken::new();
        let token = cancel.clone();
        let handle = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(engine.drive(run, &token))
        });
        Background { handle, cancel }
    }

    /// Waits for the drive to end on its own.
    pub fn join(self) -> DriveOutcome {
        self.handle.join().unwrap().unwrap()
    }

    /// Waits for the drive to end on its own within `limit`; past it, cancels the drive and fails the test
    /// with `what`.
    pub fn join_within(self, limit: Duration, what: &str) -> DriveOutcome {
        let deadline = Instant::now() + limit;
        while !self.handle.is_finished() {
            if Instant::now() >= deadline {
                self.stop();
                panic!("the run did not finish within {limit:?}: {what}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.join()
    }

    /// Cancels the drive and waits for it to stop.
    pub fn stop(self) {
        self.cancel.cancel();
        let _ = self.handle.join().unwrap();
    }
}

/// The run's status as a worker (`Engine::work` on its own task) ended it, failing the test unless it
/// ends within 10 s.
pub async fn worked(working: tokio::task::JoinHandle<agency_engine::Result<RunStatus>>) -> RunStatus {
    tokio::time::timeout(Duration::from_secs(10), working)
        .await
        .expect("the worker did not end within 10s")
        .unwrap()
        .unwrap()
}

/// Approves the gate `gate` as a human would (`agency approve`).
pub fn approve(store: &dyn Blackboard, gate: GateId) {
    let decision = GateDecision::Approve {
        by: "tester".into(),
        note: None,
    };
    store.decide_gate(gate, decision).unwrap();
}

/// Polls `check` until it gives a value, failing the test after 30s with `what`.
pub fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An agent that waits `delay` before the real one starts: one that keeps its claim a while (longer than
/// the lease, when a test needs the claim renewed).
#[derive(Debug)]
pub struct Slow {
    /// The agent that then runs.
    pub inner: Arc<dyn Runtime>,
    /// How long it waits first.
    pub delay: Duration,
}

impl Runtime for Slow {
    fn name(&self) -> &'static str {
        "slow"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.run(task, link, cancel).await
        })
    }
}

/// An agent that never finishes (its runner is about to stop), and says when it was stopped.
#[derive(Debug, Default)]
pub struct Stuck {
    stopped: Arc<AtomicBool>,
}

impl Stuck {
    /// Whether an agent of this runtime was stopped (its run dropped) since it started.
    pub fn stopped(&self) -> Arc<AtomicBool> {
        self.stopped.clone()
    }
}

/// Sets its flag when dropped: the agent's run was stopped.
struct OnStop(Arc<AtomicBool>);

impl Drop for OnStop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Runtime for Stuck {
    fn name(&self) -> &'static str {
        "stuck"
    }

    fn run<'a>(
        &'a self,
        _task: &'a AgentTask,
        _link: &'a dyn RunnerLink,
        _cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        let guard = OnStop(self.stopped.clone());
        Box::pin(async move {
            let _guard = guard;
            std::future::pending().await
        })
    }
}

/// Waits until a brief titled `title` of tier `tier` is running under `worker`.
pub async fn claimed_by(store: &dyn Blackboard, run: RunId, tier: Tier, title: &str, worker: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let held = store.list_briefs(run).unwrap().iter().any(|b| {
            b.tier == tier
                && b.title == title
                && b.status == agency_core::BriefStatus::Running
                && b.claimed_by.as_deref() == Some(worker)
        });
        if held {
            return;
        }
        assert!(Instant::now() < deadline, "{worker} never claimed {title}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
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

/// What makes a runtime of a tier from the built-in runtime on the script.
type RuntimeOf<'p> = Box<dyn Fn(Tier, Arc<dyn Runtime>) -> Arc<dyn Runtime> + 'p>;
/// What makes the runner's own provider of a tier from the script's.
type ProviderOf<'p> = Box<dyn Fn(Tier, Arc<dyn Provider>) -> Arc<dyn Provider> + 'p>;
/// What changes the runner's options.
type Adjust<'p> = Box<dyn FnOnce(&mut EngineOptions) + 'p>;

/// A test's runner, built one setting at a time ([`Project::runner_for`]): a scripted team of any size
/// (the script), a config tweak ([`RunnerBuilder::team`]), an options tweak ([`RunnerBuilder::options`]),
/// runtimes or providers that misbehave.
pub struct RunnerBuilder<'p> {
    project: &'p Project,
    script: String,
    config: TeamConfig,
    auto_approve: bool,
    worker: String,
    runtime: RuntimeOf<'p>,
    provider: ProviderOf<'p>,
    adjust: Vec<Adjust<'p>>,
}

impl<'p> RunnerBuilder<'p> {
    /// The team config (default: [`config`]).
    pub fn config(mut self, config: TeamConfig) -> Self {
        self.config = config;
        self
    }

    /// Changes the team config.
    pub fn team(mut self, tweak: impl FnOnce(&mut TeamConfig)) -> Self {
        tweak(&mut self.config);
        self
    }

    /// Whether every gate a human need not decide is approved at once (default: no).
    pub fn auto_approve(mut self, on: bool) -> Self {
        self.auto_approve = on;
        self
    }

    /// The runner's name (default: `test-runner`).
    pub fn worker(mut self, worker: &str) -> Self {
        self.worker = worker.to_string();
        self
    }

    /// The agents' runtime of each tier, made from the built-in runtime on the script.
    pub fn runtime(mut self, runtime: impl Fn(Tier, Arc<dyn Runtime>) -> Arc<dyn Runtime> + 'p) -> Self {
        self.runtime = Box::new(runtime);
        self
    }

    /// The runner's own provider of each tier (teachback reviews, judges, outage probes), made from the
    /// script's; the agents keep the script's.
    pub fn provider(mut self, provider: impl Fn(Tier, Arc<dyn Provider>) -> Arc<dyn Provider> + 'p) -> Self {
        self.provider = Box::new(provider);
        self
    }

    /// Changes the runner's options (after the ones before it).
    pub fn options(mut self, adjust: impl FnOnce(&mut EngineOptions) + 'p) -> Self {
        self.adjust.push(Box::new(adjust));
        self
    }

    /// The runner.
    pub fn engine(self) -> Engine {
        let provider: Arc<dyn Provider> =
            Arc::new(ScriptedProvider::new(Script::from_yaml(&self.script).unwrap()));
        let mut runtimes: BTreeMap<Tier, Arc<dyn Runtime>> = BTreeMap::new();
        let mut providers: BTreeMap<Tier, Arc<dyn Provider>> = BTreeMap::new();
        for tier in Tier::ALL {
            runtimes.insert(
                tier,
                (self.runtime)(tier, Arc::new(BuiltinRuntime::new(provider.clone()))),
            );
            providers.insert(tier, (self.provider)(tier, provider.clone()));
        }
        let mut options = EngineOptions {
            auto_approve: self.auto_approve,
            worker: self.worker,
            poll: Duration::from_millis(20),
            worktrees: self.project.dir.path().join("worktrees"),
            limits: AgentLimits {
                max_turns: 8,
                timeout: Duration::from_secs(30),
                command_timeout: Duration::from_secs(10),
                ..AgentLimits::default()
            },
            output_retries: 2,
            gate_timeout: None,
            agent_idle: None,
            hidden: Vec::new(),
            wake: None,
            remote: None,
            offer: Default::default(),
        };
        for adjust in self.adjust {
            adjust(&mut options);
        }
        let store: Arc<dyn Blackboard> = self.project.store.clone();
        Engine::new(
            store,
            self.config,
            self.project.repo.clone(),
            runtimes,
            providers,
            options,
        )
        .unwrap()
    }

    /// The runner, its run started and driven on its own thread ([`Background`]).
    pub fn start(self) -> (Run, Background) {
        let engine = self.engine();
        let run = engine.start(GOAL).unwrap();
        let id = run.id;
        (run, Background::drive(engine, id))
    }
}

/// A check for [`wait_for`]: the pending gate of `kind` of `run`, if one is.
pub fn pending(
    store: &Arc<SqliteBlackboard>,
    run: RunId,
    kind: GateKind,
) -> impl FnMut() -> Option<agency_core::gate::Gate> + use<> {
    let store = store.clone();
    move || {
        store
            .pending_gates(Some(run))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == kind)
    }
}
