//! Helpers: a temporary git repository holding a tiny shell project with two wrong operators and checks
//! that fail on them, a runner on it answering from a script, and readers that turn the blackboard into
//! things a test can assert on (the briefs tree, the live log's tier lines, files on a branch).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agency_core::config::TeamConfig;
use agency_core::event::EventKind;
use agency_core::{Brief, BriefId, Event, RunId, Tier};
use agency_engine::{DriveOutcome, Engine, EngineOptions};
use agency_exec::runtime::{
    AgentHooks, AgentLimits, AgentOutcome, AgentTask, BuiltinRuntime, Runtime, RuntimeError,
};
use agency_exec::{GitOptions, Repo};
use agency_llm::{BoxFuture, CancelToken, Provider, Script, ScriptedProvider};
use agency_store::{Blackboard, SqliteBlackboard};
use tempfile::TempDir;

/// The goal every test run works toward.
pub const GOAL: &str = "Fix the shell calculator so that every check passes.";

/// The project: `add.sh`, `mul.sh` and `neg.sh` each have the wrong operator; `test_*.sh` check them.
const FILES: &[(&str, &str)] = &[
    ("add.sh", "# add A B: prints A + B\necho $(($1 - $2))\n"),
    ("mul.sh", "# mul A B: prints A * B\necho $(($1 + $2))\n"),
    ("neg.sh", "# neg A: prints -A\necho $((0 + $1))\n"),
    (
        "test_add.sh",
        "out=$(sh add.sh 2 3)\n[ \"$out\" = 5 ] || { echo \"add 2 3 gave $out, expected 5\"; exit 1; }\n",
    ),
    (
        "test_mul.sh",
        "out=$(sh mul.sh 2 3)\n[ \"$out\" = 6 ] || { echo \"mul 2 3 gave $out, expected 6\"; exit 1; }\n",
    ),
    (
        "test_neg.sh",
        "out=$(sh neg.sh 4)\n[ \"$out\" = -4 ] || { echo \"neg 4 gave $out, expected -4\"; exit 1; }\n",
    ),
    ("test_arith.sh", "sh test_add.sh && sh test_mul.sh\n"),
    (
        "test_all.sh",
        "sh test_add.sh && sh test_mul.sh && sh test_neg.sh\n",
    ),
];

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
        for (name, text) in FILES {
            std::fs::write(root.join(name), text).unwrap();
        }
        let repo = Repo::init(&root, "main", GitOptions::default()).unwrap();
        repo.commit_all("a calculator with wrong operators").unwrap();
        let store = Arc::new(SqliteBlackboard::open(dir.path().join("agency.db")).unwrap());
        Project { dir, repo, store }
    }

    /// A runner on this project answering every model call from `script` (YAML text).
    pub fn engine(&self, script: &str, config: TeamConfig, auto_approve: bool) -> Engine {
        self.runner(script, config, auto_approve, "test-runner", |_, builtin| builtin)
    }

    /// A runner named `worker` whose agents are `runtime(tier, the built-in runtime on the script)`: one of
    /// several runners on this project's blackboard, some with agents that are slow or never finish.
    pub fn runner(
        &self,
        script: &str,
        config: TeamConfig,
        auto_approve: bool,
        worker: &str,
        runtime: impl Fn(Tier, Arc<dyn Runtime>) -> Arc<dyn Runtime>,
    ) -> Engine {
        self.runner_with(script, config, auto_approve, worker, runtime, |_| {})
    }

    /// [`Project::runner`], with its options changed by `adjust` (a worktree directory it cannot use, say).
    pub fn runner_with(
        &self,
        script: &str,
        config: TeamConfig,
        auto_approve: bool,
        worker: &str,
        runtime: impl Fn(Tier, Arc<dyn Runtime>) -> Arc<dyn Runtime>,
        adjust: impl FnOnce(&mut EngineOptions),
    ) -> Engine {
        let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(Script::from_yaml(script).unwrap()));
        let mut runtimes: BTreeMap<Tier, Arc<dyn Runtime>> = BTreeMap::new();
        let mut providers: BTreeMap<Tier, Arc<dyn Provider>> = BTreeMap::new();
        for tier in Tier::ALL {
            runtimes.insert(
                tier,
                runtime(tier, Arc::new(BuiltinRuntime::new(provider.clone()))),
            );
            providers.insert(tier, provider.clone());
        }
        let mut options = EngineOptions {
            auto_approve,
            worker: worker.into(),
            poll: Duration::from_millis(20),
            worktrees: self.dir.path().join("worktrees"),
            limits: AgentLimits {
                max_turns: 8,
                timeout: Duration::from_secs(30),
                command_timeout: Duration::from_secs(10),
                ..AgentLimits::default()
            },
            output_retries: 2,
        };
        adjust(&mut options);
        let store: Arc<dyn Blackboard> = self.store.clone();
        Engine::new(store, config, self.repo.clone(), runtimes, providers, options).unwrap()
    }

    /// The text of `path` on `branch`, if the file exists there.
    pub fn file_on(&self, branch: &str, path: &str) -> Option<String> {
        self.repo
            .file_at(branch, Path::new(path))
            .unwrap()
            .map(|bytes| String::from_utf8(bytes).unwrap())
    }

    /// Every brief of the run, oldest first.
    pub fn briefs(&self, run: RunId) -> Vec<Brief> {
        self.store.list_briefs(run).unwrap()
    }

    /// Every event of the run, oldest first.
    pub fn events(&self, run: RunId) -> Vec<Event> {
        events(self.store.as_ref(), run)
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
        hooks: &'a dyn AgentHooks,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.run(task, hooks, cancel).await
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
        _hooks: &'a dyn AgentHooks,
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
