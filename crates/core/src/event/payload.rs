//! The typed payload of every event kind: what each writer records and every reader gets back, so a field
//! is named once and a renamed key is a compile error instead of a value silently read as zero.
//!
//! The blackboard keeps payloads as JSON (`events.payload`); these types serialise to exactly the keys the
//! writers wrote before they were typed, so a blackboard written by an older build still reads. To keep
//! reading it:
//!
//! - every struct takes `#[serde(default)]`: a field an older writer left out reads as its default;
//! - unknown fields are ignored (no `deny_unknown_fields`): a newer writer's extra field does not make the
//!   event unreadable to an older reader;
//! - a field that some writers leave out is an `Option` skipped when `None`, so it is not written as
//!   `null` where it was absent before;
//! - nested documents owned by other types that refuse unknown fields (a [`crate::Teachback`], a
//!   [`crate::JointVerdict`], a gate's tier summary) stay JSON values here and are parsed by the reader that
//!   needs them, so one malformed document cannot make the whole event unreadable.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::EventKind;
use crate::gate::GateKind;
use crate::ids::{BriefId, GateId};
use crate::teachback::{ReviewVerdict, TeachbackState};
use crate::tier::Tier;

/// Fields every payload struct derives: serialisable, tolerant of missing and unknown keys.
macro_rules! payload_struct {
    ($(#[$doc:meta])* $name:ident { $($body:tt)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
        #[serde(default)]
        pub struct $name { $($body)* }
    };
}

payload_struct! {
    /// `run_created`: the run's goal and where it runs.
    RunCreated {
        /// The goal, as given.
        pub goal: String,
        /// The repository's path.
        pub repo: String,
        /// The commit the run starts from.
        pub base_rev: Option<String>,
    }
}

payload_struct! {
    /// `run_status`: a run's status change, as the store's status words.
    RunStatusChange {
        /// The status before.
        pub from: String,
        /// The status after.
        pub to: String,
    }
}

payload_struct! {
    /// `brief_created`: a brief written to the blackboard.
    BriefCreated {
        /// The brief's title.
        pub title: String,
        /// Its tier.
        pub tier: Option<Tier>,
        /// Its workstream (`run` for a run-level brief).
        pub workstream: String,
        /// The brief it belongs under, if any.
        pub parent: Option<BriefId>,
        /// Its status when written (`pending`).
        pub status: String,
    }
}

payload_struct! {
    /// `brief_status`: a brief's status change, and why where the writer said.
    BriefStatusChange {
        /// The status before.
        pub from: String,
        /// The status after.
        pub to: String,
        /// The runner that holds (or held) the brief's claim.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub claimed_by: Option<String>,
        /// Why (`lease_expired`, `runner_stopped`, a budget or outage account, a cancellation's reason).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
        /// A short note (`plan approved`, `accepted`, `retry resolved`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
        /// The accepted summary, on a run's acceptance.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub summary: Option<String>,
        /// The branch to review, on a run's acceptance.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub branch: Option<String>,
        /// Set when the brief waits out a model outage (its attempt not spent).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub outage: Option<bool>,
    }
}

impl BriefStatusChange {
    /// The detail of a move made for `reason` (the writer of the move fills in `from` and `to`).
    pub fn because(reason: impl Into<String>) -> Self {
        BriefStatusChange {
            reason: Some(reason.into()),
            ..BriefStatusChange::default()
        }
    }

    /// The detail of a move with a `note`.
    pub fn noted(note: impl Into<String>) -> Self {
        BriefStatusChange {
            note: Some(note.into()),
            ..BriefStatusChange::default()
        }
    }
}

payload_struct! {
    /// `spawned`: an agent started for a brief.
    Spawned {
        /// The brief's title.
        pub title: String,
        /// The runtime's name (`builtin`, `claude-code`, ...).
        pub runtime: String,
        /// Which attempt, from 0.
        pub attempt: u32,
        /// Set when the agent is a sign-off's (a T5 verifier or the acceptance).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub signoff: Option<bool>,
    }
}

payload_struct! {
    /// `completed`: an agent reported its result.
    Completed {
        /// The brief's title.
        pub title: String,
        /// The reported status word (`done`, `partial`, ...).
        pub status: String,
        /// The agent's summary.
        pub summary: String,
        /// Which attempt, from 0.
        pub attempt: u32,
        /// `retry resolved` when a retry succeeded.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
    }
}

payload_struct! {
    /// `failed` and `escalated`: a brief's failure and where it went.
    Failure {
        /// The brief's title.
        pub title: String,
        /// The failure class (see [`crate::Failure`]), where one was classified.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub failure: Option<String>,
        /// Why it failed.
        pub reason: String,
        /// Which attempt failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub attempt: Option<u32>,
        /// The brief's retry budget.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub retry_budget: Option<u32>,
        /// Where an escalation went: a tier (`t3`) or `human`.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub to: Option<String>,
    }
}

payload_struct! {
    /// `retried`: a failed brief's next attempt (the event is the new brief's).
    Retried {
        /// The brief's title.
        pub title: String,
        /// The new attempt's number.
        pub attempt: u32,
        /// The failed attempt's brief.
        pub previous: Option<BriefId>,
        /// The feedback the new attempt gets.
        pub reason: String,
    }
}

payload_struct! {
    /// `gate_pending` and `gate_paused`: a gate opened.
    GateOpened {
        /// The gate.
        pub gate: Option<GateId>,
        /// Its kind.
        pub kind: Option<GateKind>,
        /// The tier summary shown to the human (message, produced, next, anomalies).
        pub summary: Value,
    }
}

payload_struct! {
    /// `gate_approved`, `gate_rejected` and `gate_resumed`: a gate decided.
    GateDecided {
        /// The gate.
        pub gate: Option<GateId>,
        /// Its kind.
        pub kind: Option<GateKind>,
        /// Who decided.
        pub by: String,
        /// An approval's note.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
        /// A rejection's reason.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

payload_struct! {
    /// One tier's runtime choice, in a `RUNTIMES` log line.
    RuntimeChoiceNote {
        /// The tier.
        pub tier: Option<Tier>,
        /// The runtime chosen.
        pub runtime: String,
        /// Why.
        pub reason: String,
    }
}

payload_struct! {
    /// A pull request's record, in a `PR` log line.
    ForgeNote {
        /// The pull request's address, when one was opened.
        pub url: Option<String>,
    }
}

payload_struct! {
    /// `log`: a human-readable line, and the facts some lines carry for the code that reads them back.
    /// Every field but `level` and `message` is written by one kind of line only (named by its `tag`).
    LogLine {
        /// `normal`, `verbose`, `debug` or `info`.
        pub level: String,
        /// What the line is about (`PLAN_DONE`, `TOOL`, `ORPHAN`, ...).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub tag: Option<String>,
        /// The line.
        pub message: String,
        /// `TOOL`: whether the call was allowed.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub allowed: Option<bool>,
        /// `BASE`: the branch checked out when the run started.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub base_branch: Option<String>,
        /// `RUNTIMES`: every tier's runtime choice.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub tiers: Option<Vec<RuntimeChoiceNote>>,
        /// `PR`: the publish record.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub forge: Option<ForgeNote>,
        /// `RESUMABLE`: the command that resumes the run.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub command: Option<String>,
        /// `RESUMABLE`: the git remote the run's branches are shared through (`agency run --remote`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub remote: Option<String>,
        /// `CANCELLED`: who cancelled.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub by: Option<String>,
        /// `WORKER`: the worker's name.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub worker: Option<String>,
        /// A session binding: the client session.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
        /// A session binding: the session's agent, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub agent: Option<String>,
        /// A session binding: the session's task.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub task: Option<String>,
        /// `REMINDER`: the gate waited on.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub gate: Option<GateId>,
        /// `REMINDER`: which reminder this is.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reminder: Option<i64>,
        /// A notification's delivery record: the event it covered.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub notified_seq: Option<i64>,
        /// `RELEASED`: the brief's status before.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub from: Option<String>,
        /// `RELEASED`: the brief's status after.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub to: Option<String>,
        /// `RELEASED`, `RESUME`, `ORPHAN`: the runner that held the brief.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub claimed_by: Option<String>,
        /// `RELEASED`: why.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
        /// `ORPHAN`: the leftover agent process's id.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub pid: Option<u32>,
        /// `ORPHAN`: its process group.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub pgid: Option<u32>,
        /// `ORPHAN`: its start time in clock ticks since boot.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub start_ticks: Option<u64>,
        /// `ORPHAN`: the boot it started in.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub boot_id: Option<String>,
        /// `ORPHAN`: what was found (`gone`, `other_boot`, `recycled`, `stopped`, `unknown`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub found: Option<String>,
        /// `ORPHAN` (stopped): the group's live members when found.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub members: Option<Vec<u32>>,
        /// `ORPHAN` (stopped): whether SIGKILL was needed.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub killed: Option<bool>,
        /// `ORPHAN` (stopped): members alive after SIGKILL.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub survivors: Option<Vec<u32>>,
    }
}

impl LogLine {
    /// A line with a level, a tag and a message, and no other facts.
    pub fn new(level: impl Into<String>, tag: Option<&str>, message: impl Into<String>) -> Self {
        LogLine {
            level: level.into(),
            tag: tag.map(str::to_string),
            message: message.into(),
            ..LogLine::default()
        }
    }
}

payload_struct! {
    /// `teachback_submitted`: an agent's teachback, and the state change it made.
    TeachbackSubmitted {
        /// The brief's title (written by the runner).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        /// The teachback document (parse it with [`crate::Teachback`]'s `Deserialize`).
        pub teachback: Value,
        /// The teachback as text (written by the hook).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub text: Option<String>,
        /// The teachback state before.
        pub from: Option<TeachbackState>,
        /// The teachback state after.
        pub to: Option<TeachbackState>,
        /// What carried it: `runner` for a runner's own agent, else the client's tool name.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub via: Option<String>,
        /// The client session (hook).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub session_id: Option<String>,
        /// The client agent (hook).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub agent_id: Option<String>,
    }
}

payload_struct! {
    /// `teachback_approved` and `teachback_corrected`: a review and the state change it made.
    TeachbackReviewed {
        /// Approved, or the corrections.
        pub verdict: Option<ReviewVerdict>,
        /// Who reviewed.
        pub reviewer: String,
        /// The reviewer's note.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
        /// The brief's title.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        /// What the agent is told.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub message: Option<String>,
        /// The teachback state before.
        pub from: Option<TeachbackState>,
        /// The teachback state after.
        pub to: Option<TeachbackState>,
        /// The teachback gate the review closes, when a human reviewed at one.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub gate: Option<GateId>,
    }
}

payload_struct! {
    /// `teachback_denied`: a tool call the gate denied (or, in shadow/warn mode, would have).
    TeachbackDenied {
        /// The brief's title (runner).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        /// The tool.
        pub tool: String,
        /// The teachback state at the call (runner).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub state: Option<TeachbackState>,
        /// The rollout mode (hook: `shadow`, `warn`, `enforce`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub rollout: Option<String>,
        /// Whether the call was blocked (hook).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub blocked: Option<bool>,
        /// The teachback state at the call (hook).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub teachback_state: Option<TeachbackState>,
        /// Why (hook).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

payload_struct! {
    /// `signoff_started`: what is signed off, at which commit, against which base.
    SignoffStarted {
        /// The subject (`ws/slice`, `accept`, a goal).
        pub subject: String,
        /// The commit under review.
        pub commit: String,
        /// The base it is compared with.
        pub base: String,
    }
}

payload_struct! {
    /// `signoff_verify`: a verify command's result (a sign-off's, or a workstream's on the integration
    /// branch).
    SignoffVerify {
        /// The sign-off's subject.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub subject: Option<String>,
        /// The workstream verified on the integration branch.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub workstream: Option<String>,
        /// The commit verified.
        pub rev: String,
        /// The command.
        pub command: String,
        /// Whether it passed.
        pub passed: bool,
        /// How it ended, in words (`exit 0`, `timed out`), where written.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub status: Option<String>,
        /// Its exit code, where written and the command exited.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub exit_code: Option<i64>,
        /// Whether it timed out, where written.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub timed_out: Option<bool>,
        /// How long it ran.
        pub duration_ms: u64,
        /// The end of its output.
        pub tail: String,
        /// The verify record's artifact, where stored.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub artifact: Option<String>,
    }
}

payload_struct! {
    /// `signoff_accepted`, `signoff_rejected` and `signoff_inconclusive`: a sign-off's outcome.
    SignoffOutcome {
        /// The subject.
        pub subject: String,
        /// The commit signed off.
        pub commit: String,
        /// The base.
        pub base: String,
        /// The verify record's artifact.
        pub verify_artifact: Option<String>,
        /// The judge transcript's artifact.
        pub judge_artifact: Option<String>,
        /// The judge's answer.
        pub summary: Option<String>,
        /// `accepted`, `rejected` or `inconclusive`.
        pub outcome: String,
        /// A rejection: the earliest stage that rejected.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub by: Option<String>,
        /// A rejection: what is missing.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub missing: Option<Vec<String>>,
        /// An inconclusive outcome: why there is no verdict.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

payload_struct! {
    /// `signoff_audit`: the auditor's review of a slice whose variety score requires one (7 and above),
    /// run beside the judge without the implementer's claims, and whether the two agree. Written with the
    /// sign-off's outcome, which counts a rejection by either.
    SignoffAudit {
        /// The sign-off's subject.
        pub subject: String,
        /// The commit reviewed.
        pub commit: String,
        /// The auditor's verdict: `accept`, `reject` or `inconclusive`.
        pub verdict: String,
        /// The judge's verdict on the same commit: `accept`, `reject` or `inconclusive`.
        pub judge: String,
        /// Whether the two verdicts are the same word.
        pub agrees: bool,
        /// A rejection: what the auditor found missing.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub missing: Option<Vec<String>>,
        /// No verdict: why.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
        /// What the auditor said before its verdict block.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub summary: Option<String>,
        /// The auditor transcript's artifact.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub transcript: Option<String>,
        /// The model the auditor ran on (`signoff.auditor_model`, else the judge's tier's); absent in
        /// records written before it was recorded.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub model: Option<String>,
    }
}

payload_struct! {
    /// `verdict`: a T3 joint verdict over a workstream's T5 results.
    VerdictRecord {
        /// The line shown for it.
        pub summary: String,
        /// The joint verdict (parse it with [`crate::JointVerdict`]'s `Deserialize`).
        pub joint: Value,
    }
}

payload_struct! {
    /// An amount of budget: tokens or dollars, as a budget names it.
    BudgetAmount {
        /// Tokens.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub tokens: Option<u64>,
        /// US dollars.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub usd: Option<f64>,
    }
}

payload_struct! {
    /// A budget's scope, as data.
    BudgetScope {
        /// `run`, `workstream` or `brief`.
        pub kind: String,
        /// The workstream or brief.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub id: Option<String>,
    }
}

payload_struct! {
    /// `budget_exhausted`: a call refused because a budget would be passed.
    BudgetExhausted {
        /// The scope, in words.
        pub scope: String,
        /// The scope, as data.
        pub scope_detail: BudgetScope,
        /// The limit.
        pub limit: BudgetAmount,
        /// What was spent.
        pub spent: BudgetAmount,
        /// What the call needed.
        pub needed: BudgetAmount,
        /// The brief that made the call, if any.
        pub brief: Option<String>,
    }
}

payload_struct! {
    /// `budget_raised`: a human raised a budget at its gate.
    BudgetRaised {
        /// The budget gate.
        pub gate: Option<GateId>,
        /// The scope, in words.
        pub scope: String,
        /// The new token limit, if one was set.
        pub tokens: Option<u64>,
        /// The new dollar limit, if one was set.
        pub usd: Option<f64>,
    }
}

payload_struct! {
    /// `alert` and `halt`: an algedonic signal (from an agent, a stall, an idle agent or the teachback
    /// history).
    Signal {
        /// `ALERT` (written by the engine's and the hook's alerts).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub level: Option<String>,
        /// The brief's title (an agent's signal).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        /// The category: `SECURITY`, `DATA`, `ETHICS` (HALT); `QUALITY`, `SCOPE`, `META-BLOCK` (ALERT).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub category: Option<String>,
        /// What is wrong.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub issue: Option<String>,
        /// An agent's evidence.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub evidence: Option<String>,
        /// An agent's account of the impact.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub impact: Option<String>,
        /// What the agent recommends.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub recommended_action: Option<String>,
        /// The line shown (the teachback history's alert).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub message: Option<String>,
        /// The teachback state the brief is stuck in (teachback history).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub teachback_state: Option<TeachbackState>,
        /// Since when (teachback history).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub since: Option<DateTime<Utc>>,
        /// What the stalled run waits on.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub waiting: Option<Vec<String>>,
        /// What a human can do next.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub next: Option<String>,
        /// The brief concerned, when the event is not attributed to it (an idle agent).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub brief: Option<BriefId>,
        /// Whether the signal is sent to the notification channels.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub notify: Option<bool>,
        /// What raised it when not an agent: `stall` (a run that cannot move), `agent_idle` (a silent
        /// agent), `teachback_review` (a review that failed), `teachback_timeout` (a teachback nobody
        /// reviewed in time), `gate` (the gate service refusing a request).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub source: Option<String>,
        /// The request the gate service refused (`hook`, `submit`, `review`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub op: Option<String>,
    }
}

payload_struct! {
    /// `usage`: one model call's tokens and cost. What the budget is rebuilt from after a crash.
    Usage {
        /// The model.
        pub model: String,
        /// The provider.
        pub provider: String,
        /// Input tokens.
        pub input_tokens: u64,
        /// Output tokens.
        pub output_tokens: u64,
        /// Tokens read from the prompt cache.
        pub cache_read_tokens: u64,
        /// Tokens written to the prompt cache.
        pub cache_write_tokens: u64,
        /// The cost in US dollars, when the model's price is known.
        pub cost_usd: Option<f64>,
    }
}

payload_struct! {
    /// `artifact`: an artifact stored.
    ArtifactStored {
        /// The artifact's id.
        pub artifact: String,
        /// Its name (`diff/<brief>`, `signoff/<subject>/verify`, ...).
        pub name: String,
        /// Its content type.
        pub content_type: String,
        /// Its size in bytes.
        pub size: u64,
    }
}

payload_struct! {
    /// `plan_start`: planning began. This build's runner narrates planning with `log` lines
    /// (`PLAN_START`); the kind is kept for blackboards and tools that record it.
    PlanStarted {
        /// The goal being planned.
        pub goal: String,
    }
}

payload_struct! {
    /// `plan_done`: planning ended (narrated as a `PLAN_DONE` log line by this build's runner).
    PlanFinished {
        /// One line: the workstreams and how they run.
        pub summary: String,
    }
}

payload_struct! {
    /// `path_amendment`: a tier proposed a different path for a workstream (seed 001, "Path Amendment
    /// Mechanism"). Informational for the tiers above; listed at the next human gate, where a human approves
    /// or rejects it ([`PathAmendmentDecided`]). The proposal is named by its event's `seq`.
    PathAmendmentProposed {
        /// Who proposed it: `<tier>/<brief title>` for an agent, `cli:<user>` for a human.
        pub proposed_by: String,
        /// The workstream whose path it changes.
        pub workstream: Option<String>,
        /// Why.
        pub reason: String,
        /// The change, in the seed's shape; absent in records of builds that wrote only the fields above.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub amendment: Option<PathChange>,
        /// The brief whose agent proposed it, when an agent did.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub brief: Option<BriefId>,
        /// The proposer's tier, when an agent proposed it. (Where the remaining path starts is read from the
        /// workstream's briefs, at proposal and again at approval.)
        #[serde(skip_serializing_if = "Option::is_none")]
        pub tier: Option<Tier>,
    }
}

payload_struct! {
    /// A proposed change to one workstream's remaining tier path: either tiers added before a tier still to
    /// come (`add_tiers` + `insert_before`), or a shallower path with the reason it is enough.
    PathChange {
        /// The workstream.
        pub workstream: String,
        /// Tiers to add, in order (`["t3"]` for an extra squad-lead pass).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub add_tiers: Vec<Tier>,
        /// The tier of the remaining path the added tiers go before (`t5`).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub insert_before: Option<Tier>,
        /// A whole new, shallower path for the workstream (it must end in `t5`: verification always runs).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub shallower_path: Option<Vec<Tier>>,
        /// Why the shallower path is enough; required with `shallower_path`.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub shallower_path_reason: Option<String>,
    }
}

impl PathChange {
    /// The change in words: `add t3 before t5` or `shallower path t4→t5 (reason)`.
    pub fn describe(&self) -> String {
        let path = crate::tier::path_text;
        match &self.shallower_path {
            Some(shallower) => format!(
                "shallower path {} ({})",
                path(shallower),
                self.shallower_path_reason.as_deref().unwrap_or("no reason given")
            ),
            None => format!(
                "add {} before {}",
                path(&self.add_tiers),
                self.insert_before.map_or("the end", |t| t.as_str())
            ),
        }
    }
}

payload_struct! {
    /// `path_amendment_decided`: a human approved or rejected one proposed path amendment.
    PathAmendmentDecided {
        /// The `seq` of the `path_amendment` event decided.
        pub amendment: i64,
        /// The workstream it concerns.
        pub workstream: String,
        /// Approved (the path changes) or rejected (it does not).
        pub approved: bool,
        /// Who decided (`cli:<user>`, `dashboard`).
        pub by: String,
        /// The approval note or the rejection reason.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
        /// The workstream's path before and after, when approved.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub path_before: Vec<Tier>,
        /// The path it became, when approved.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub path_after: Vec<Tier>,
    }
}

/// The record of a handoff whose agreement nobody could confirm (seed 003, "Fallback: Specialist
/// Unavailable"), in the seed's words.
pub const AGREEMENT_ASSUMED: &str = "Agreement: [assumed — specialist unavailable for verification]";

payload_struct! {
    /// `agreement`: a handoff's agreement verification (seed 003; docs/protocols.md, "Agreement at each
    /// handoff"): what the receiving tier restated, what the handing-over tier's record says, and the
    /// outcome — `agreed`, `mismatch` (with `significant` and the differences), or `assumed` (the record
    /// "Agreement: [assumed — specialist unavailable for verification]").
    AgreementChecked {
        /// `L0` (topic), `L1` (procedure) or `L2` (purpose).
        pub level: String,
        /// The handoff, `t4→t5`.
        pub handoff: String,
        /// The workstream.
        pub workstream: String,
        /// `agreed`, `mismatch` or `assumed`.
        pub outcome: String,
        /// Whether a mismatch is significant: it is put to the handing-over tier, and is an anomaly on the
        /// next gate unless that tier confirms the difference is fine (an answer's record says whether).
        #[serde(default)]
        pub significant: bool,
        /// The differences found, one line each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub differences: Vec<String>,
        /// The receiving tier's restatement, as it gave it (empty when it gave none).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub restated: String,
        /// A significant mismatch is put to the handing-over tier: `asking` (recorded before the question;
        /// a later `agreement` record of the same handoff and brief gives the answer), then `confirmed` (the
        /// difference is fine: no anomaly), `corrected` (a real mismatch: an anomaly) or `unavailable`
        /// (nobody could be asked: the fallback record, and the mismatch stands as an anomaly).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub confirmation: Option<String>,
        /// The brief whose record was the handed-over side (the one asked).
        #[serde(skip_serializing_if = "Option::is_none")]
        pub handing_over: Option<BriefId>,
        /// The one-line reason of the answer, or why nobody could be asked.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

payload_struct! {
    /// `anomaly`: something a tier or the runner flagged for the human, shown on the next gate's summary
    /// (its `anomalies`). Any writer may record one: a squad lead's notes, a conflict left unresolved, an
    /// agreement mismatch at a handoff, a mesh that escalated.
    Anomaly {
        /// What flagged it, one word (`squad_notes`, `unresolved_conflict`, `agreement`, `mesh`, ...).
        pub source: String,
        /// The workstream it concerns; absent for the whole run.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub workstream: Option<String>,
        /// The brief it concerns, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub brief: Option<BriefId>,
        /// What the human should know, one line.
        pub message: String,
    }
}

macro_rules! event_payloads {
    ($($kind:ident($ty:ty),)*) => {
        /// An event's payload, typed by its kind: one variant per [`EventKind`].
        // A payload lives for one write or one read; boxing the log line (its largest) would cost every
        // writer an allocation to save stack space no caller keeps.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum EventPayload {
            $(#[doc = concat!("`", stringify!($kind), "`: see [`", stringify!($ty), "`].")] $kind($ty),)*
        }

        impl EventPayload {
            /// The kind this payload is recorded under.
            pub fn kind(&self) -> EventKind {
                match self { $(EventPayload::$kind(_) => EventKind::$kind,)* }
            }

            /// Reads the stored JSON of an event of `kind`.
            pub fn decode(kind: EventKind, json: &Value) -> Result<Self, PayloadError> {
                let fail = |source: serde_json::Error| PayloadError { kind, source };
                Ok(match kind {
                    $(EventKind::$kind => EventPayload::$kind(<$ty>::deserialize(json).map_err(fail)?),)*
                })
            }

            /// The JSON stored for it.
            pub fn encode(&self) -> Value {
                let encoded = match self { $(EventPayload::$kind(p) => serde_json::to_value(p),)* };
                // Plain structs of strings, numbers and JSON values: serialising one cannot fail (a map
                // with non-string keys is the only failure, and there is none).
                encoded.unwrap_or(Value::Null)
            }

            /// The JSON stored for it, as text: the document [`EventPayload::encode`] makes, written
            /// straight from the struct (its fields in their declared order).
            pub fn encode_text(&self) -> String {
                let encoded = match self { $(EventPayload::$kind(p) => serde_json::to_string(p),)* };
                // As above: it cannot fail.
                encoded.unwrap_or_else(|_| "null".to_owned())
            }
        }
    };
}

event_payloads! {
    RunCreated(RunCreated),
    RunStatus(RunStatusChange),
    PlanStart(PlanStarted),
    PlanDone(PlanFinished),
    BriefCreated(BriefCreated),
    BriefStatus(BriefStatusChange),
    Spawned(Spawned),
    Completed(Completed),
    Failed(Failure),
    Escalated(Failure),
    Retried(Retried),
    GatePending(GateOpened),
    GateApproved(GateDecided),
    GateRejected(GateDecided),
    GatePaused(GateOpened),
    GateResumed(GateDecided),
    PathAmendment(PathAmendmentProposed),
    PathAmendmentDecided(PathAmendmentDecided),
    Anomaly(Anomaly),
    Agreement(AgreementChecked),
    Log(LogLine),
    TeachbackSubmitted(TeachbackSubmitted),
    TeachbackApproved(TeachbackReviewed),
    TeachbackCorrected(TeachbackReviewed),
    TeachbackDenied(TeachbackDenied),
    SignoffStarted(SignoffStarted),
    SignoffVerify(SignoffVerify),
    SignoffAccepted(SignoffOutcome),
    SignoffRejected(SignoffOutcome),
    SignoffInconclusive(SignoffOutcome),
    SignoffAudit(SignoffAudit),
    Verdict(VerdictRecord),
    BudgetExhausted(BudgetExhausted),
    BudgetRaised(BudgetRaised),
    Alert(Signal),
    Halt(Signal),
    Usage(Usage),
    Artifact(ArtifactStored),
}

/// A stored payload that does not read as its kind's type: a field holds the wrong type of value.
#[derive(Debug, thiserror::Error)]
#[error("the payload of a {kind} event does not read as expected: {source}")]
pub struct PayloadError {
    /// The event's kind.
    pub kind: EventKind,
    /// What serde found wrong (names the field).
    #[source]
    pub source: serde_json::Error,
}
