//! Helpers for the runtime tests: a temporary git repository with a worktree, an [`RunnerLink`] backed by
//! the core teachback state machine, a provider that records what it was asked, and a task builder.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agency_core::teachback::{
    ReviewVerdict, Teachback, TeachbackAction, TeachbackReview, TeachbackState, allows_edits, transition,
};
use agency_core::variety::TeachbackMode;
use agency_core::{Brief, Tier};
use agency_exec::runtime::{
    Access, AgentEvent, AgentLimits, AgentTask, Ending, RunnerLink, ToolCallView, ToolDecision,
};
use agency_llm::{
    BoxFuture, CallMeta, CancelToken, EventSink, LlmError, Provider, Request, Response, Script,
    ScriptedProvider,
};

/// A repository on `main` with one commit and a brief worktree on its own branch.
pub struct Sandbox {
    /// Holds everything; removed on drop.
    pub dir: tempfile::TempDir,
    /// The main work tree.
    pub repo: agency_exec::Repo,
}

impl Sandbox {
    /// A repository whose first commit holds `files`.
    pub fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let options = agency_exec::GitOptions {
            home: Some(home),
            ..Default::default()
        };
        let repo = agency_exec::Repo::init(&dir.path().join("repo"), "main", options).unwrap();
        for (path, text) in files {
            write(repo.root(), path, text);
        }
        repo.commit_all("initial").unwrap();
        Self { dir, repo }
    }

    /// A worktree for brief `name` on branch `agency/<name>`.
    pub fn worktree(&self, name: &str) -> agency_exec::Repo {
        let path = self.dir.path().join("worktrees").join(name);
        self.repo
            .add_worktree(&path, &format!("agency/{name}"), "main")
            .unwrap()
    }
}

/// Writes `text` to `root/relative`, creating parents.
/// Shell lines for a stand-in for `agency hook`: read the event on stdin into `$ev` and record `decision`
/// for it in `$AGENCY_GATE_LOG`, as the real hook does for the gate-coverage audit.
pub fn record_decision(decision: &str) -> String {
    r#"ev=$(cat)
printf '%s\n' "{\"gate_decision\":\"DECISION\",${ev#?}" >> "$AGENCY_GATE_LOG"
"#
    .replace("DECISION", decision)
}

pub fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A brief for tests; `risk` 4 and novelty 3 make it blocking (score ≥ 7), 1s make it advisory.
pub fn brief(blocking: bool) -> Brief {
    let v = if blocking { 3 } else { 1 };
    serde_json::from_value(serde_json::json!({
        "id": "0190b5d2-0000-7000-8000-000000000001",
        "run": "0190b5d2-0000-7000-8000-000000000002",
        "parent": null,
        "tier": "t4",
        "workstream": "ws-calc",
        "title": "fix-add",
        "personality": null,
        "goal_anchor": "calc.add adds",
        "instructions": "Fix calc.add so that check.sh passes.",
        "inputs": [],
        "variety": {"novelty": v, "scope": v, "uncertainty": 1, "risk": v},
        "contract": null,
        "retry_budget": 1,
        "attempt": 0,
        "depends_on": [],
        "branch": null,
        "worktree": null,
        "status": "running",
        "teachback": "pending",
        "claimed_by": null,
        "created_at": "2026-11-22T00:00:00Z"
    }))
    .unwrap()
}

/// A task for `worktree` with a short time limit and the test machine's PATH.
pub fn task(worktree: &Path, blocking: bool, access: Access) -> AgentTask {
    AgentTask {
        brief: brief(blocking),
        worktree: worktree.to_path_buf(),
        system: vec!["You are a careful implementer.".into()],
        shared_system_blocks: 1,
        prompt: "Fix calc.add so that check.sh passes.".into(),
        access,
        ending: Ending::Report,
        limits: AgentLimits {
            max_turns: 12,
            max_tokens: 1_000,
            timeout: Duration::from_secs(60),
            command_timeout: Duration::from_secs(20),
            repair_attempts: 3,
        },
        env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
        sandbox: agency_exec::Sandboxing::Off,
        meta: CallMeta {
            role: Some("implementer".into()),
            tier: Some(Tier::T4),
            brief: Some("ws-calc/fix-add".into()),
            ..CallMeta::default()
        },
        check_output: None,
    }
}

/// A runner link for tests: the teachback gate kept with the core state machine, reviews answered
/// from a queue (approved when it runs dry), every event kept.
pub struct TestLink {
    pub mode: TeachbackMode,
    pub state: Mutex<TeachbackState>,
    pub reviews: Mutex<VecDeque<TeachbackReview>>,
    pub teachbacks: Mutex<Vec<Teachback>>,
    pub events: Mutex<Vec<AgentEvent>>,
}

impl TestLink {
    pub fn new(mode: TeachbackMode, reviews: Vec<ReviewVerdict>) -> Self {
        Self {
            mode,
            state: Mutex::new(TeachbackState::Pending),
            reviews: Mutex::new(
                reviews
                    .into_iter()
                    .map(|verdict| TeachbackReview {
                        verdict,
                        reviewer: "t3/ws-calc".into(),
                        note: None,
                    })
                    .collect(),
            ),
            teachbacks: Mutex::new(Vec::new()),
            events: Mutex::new(Vec::new()),
        }
    }

    pub fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }

    /// Every recorded note, in order.
    pub fn notes(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::Note(text) => Some(text),
                _ => None,
            })
            .collect()
    }

    /// `(tool, allowed)` for every recorded tool call, in order.
    pub fn tool_calls(&self) -> Vec<(String, bool)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCall { name, allowed, .. } => Some((name, allowed)),
                _ => None,
            })
            .collect()
    }

    fn apply(&self, action: &TeachbackAction) -> Result<(), String> {
        let mut state = self.state.lock().unwrap();
        *state = transition(*state, self.mode, action).map_err(|e| e.to_string())?;
        Ok(())
    }
}

impl RunnerLink for TestLink {
    fn teachback<'a>(&'a self, teachback: &'a Teachback) -> BoxFuture<'a, Result<TeachbackReview, String>> {
        Box::pin(async move {
            self.teachbacks.lock().unwrap().push(teachback.clone());
            self.apply(&TeachbackAction::Submit)?;
            if self.mode == TeachbackMode::Advisory {
                return Ok(TeachbackReview {
                    verdict: ReviewVerdict::Approved,
                    reviewer: "advisory".into(),
                    note: None,
                });
            }
            let review = self
                .reviews
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(TeachbackReview {
                    verdict: ReviewVerdict::Approved,
                    reviewer: "t3/ws-calc".into(),
                    note: None,
                });
            self.apply(&review.action())?;
            Ok(review)
        })
    }

    fn check_tool(&self, call: &ToolCallView<'_>) -> ToolDecision {
        let state = *self.state.lock().unwrap();
        if call.read_only || allows_edits(state, self.mode) {
            ToolDecision::Allow
        } else {
            ToolDecision::Deny(format!(
                "teachback gate: {} is not allowed while the teachback is {state}; send your teachback first",
                call.name
            ))
        }
    }

    fn record(&self, event: AgentEvent) {
        self.events.lock().unwrap().push(event);
    }
}

/// A scripted provider that also keeps every request it answered.
#[derive(Debug)]
pub struct Recording {
    inner: ScriptedProvider,
    pub requests: Mutex<Vec<Request>>,
}

impl Recording {
    pub fn new(script: &str) -> Arc<Self> {
        Arc::new(Self {
            inner: ScriptedProvider::new(Script::from_yaml(script).unwrap()),
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// The tool results sent back in the request for `turn` (from 1), as `(content, is_error)`.
    pub fn results_sent_in_turn(&self, turn: usize) -> Vec<(String, bool)> {
        let requests = self.requests();
        let Some(last) = requests.get(turn - 1).and_then(|r| r.messages.last()) else {
            return Vec::new();
        };
        last.content
            .iter()
            .filter_map(|b| match b {
                agency_llm::Block::ToolResult {
                    content, is_error, ..
                } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }
}

impl Provider for Recording {
    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.complete(request, sink, cancel)
    }
}

/// Where a path lives, canonicalized (tempdirs can sit behind a symlink).
pub fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap()
}

/// Whether the real client `program` is on PATH. Without it the test is skipped loudly, or fails when
/// `AGENCY_REQUIRE_E2E=1` (CI installs the clients and sets it).
pub fn e2e_client(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        assert!(
            std::env::var("AGENCY_REQUIRE_E2E").as_deref() != Ok("1"),
            "AGENCY_REQUIRE_E2E=1 but `{program}` is not on PATH"
        );
        eprintln!("SKIPPED: `{program}` is not on PATH; install it to run this end-to-end test");
    }
    found
}

/// Like [`e2e_client`] for a client CI does not install (pi): skipped loudly when missing, required only
/// with `AGENCY_REQUIRE_PI=1`.
pub fn optional_client(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        assert!(
            std::env::var("AGENCY_REQUIRE_PI").as_deref() != Ok("1"),
            "AGENCY_REQUIRE_PI=1 but `{program}` is not on PATH"
        );
        eprintln!("SKIPPED: `{program}` is not on PATH; install it to run this end-to-end test");
    }
    found
}
