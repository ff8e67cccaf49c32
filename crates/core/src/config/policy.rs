//! The run's policies: retries and escalation, teachback rollout, spending limits, sign-off, and the
//! runner's own limits.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::error::{ConfigError, ConfigProblem, quote};
use super::models::{CapabilityLevel, ModelBinding};
use crate::intercept::readonly::{self, NotReadOnly};

/// The `retry` section: how often work is retried before it escalates, and when escalation needs a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Retries per brief before it escalates to its parent tier, before T1's multiplier. Default 2.
    pub base_budget: u32,
    /// Escalations in the run before the runner opens an escalation gate for a human (which holds the whole
    /// run: no agent starts while a gate waits). Default 2.
    pub max_escalations_before_gate: u32,
    /// Minutes T3 squad leads may negotiate a task split before it escalates. Default 30.
    pub t3_mesh_timeout_minutes: u32,
    /// T2 conflict-resolution rounds before the conflict goes to T1. Default 2.
    pub t2_conflict_cycles: u32,
    /// Rounds a T3 mesh may take to reconcile its squad leads' drafts (the first drafts are round 1)
    /// before its overlaps go to the domain's T2 specialist. At least 1. Default 3.
    pub t3_mesh_rounds: u32,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            base_budget: 2,
            max_escalations_before_gate: 2,
            t3_mesh_timeout_minutes: 30,
            t2_conflict_cycles: 2,
            t3_mesh_rounds: 3,
        }
    }
}

/// How the teachback gate acts while it is being rolled out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RolloutMode {
    /// Decide silently and record every would-have-blocked decision; never block or warn.
    Shadow,
    /// Warn the agent and record when it would have blocked, but let the call through.
    Warn,
    /// Block tool calls that the teachback state does not allow.
    Enforce,
}

impl RolloutMode {
    /// Every mode, least strict first.
    pub const ALL: [RolloutMode; 3] = [RolloutMode::Shadow, RolloutMode::Warn, RolloutMode::Enforce];

    /// The name written in team.yaml and the environment.
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutMode::Shadow => "shadow",
            RolloutMode::Warn => "warn",
            RolloutMode::Enforce => "enforce",
        }
    }
}

impl fmt::Display for RolloutMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The variable in which a runner gives the agents it starts the rollout mode in force (`shadow`, `warn`,
/// `enforce`), resolved once from team.yaml and its override when the run starts. `agency hook` in a run
/// reads the mode only from here, never from team.yaml, which the agent might have written.
pub const ROLLOUT_ENV_VAR: &str = "AGENCY_ROLLOUT_MODE";

/// What the hook does in an external agent session that no run or brief is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UnboundSessionPolicy {
    /// Let every tool call through: a plain session is the user's own.
    Allow,
    /// Refuse edits until the session is bound to a brief.
    Deny,
}

/// The `teachback` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TeachbackConfig {
    /// Rollout mode of the teachback gate; the `mode_env_var` variable overrides it. Default enforce.
    pub mode: RolloutMode,
    /// A teachback not sent within this many minutes of spawn raises an ALERT. Default 10.
    pub pending_timeout_minutes: u32,
    /// A teachback not reviewed within this many minutes raises `META-BLOCK: orchestrator unreachable`.
    /// Default 15.
    pub review_timeout_minutes: u32,
    /// Shell commands an agent may run while its teachback is pending, chosen from those agency has a
    /// read-only grammar for (`git diff`, `ls`, `find`, ...: [`readonly::READ_ONLY_COMMANDS`]); each is
    /// checked option by option, see [`TeachbackConfig::allows_readonly_bash`].
    pub readonly_bash: Vec<String>,
    /// What the hook does in a session bound to no brief. Default allow.
    pub unbound_session_default: UnboundSessionPolicy,
    /// The environment variable that overrides `mode` (for local debugging). Default `AGENCY_TEACHBACK_MODE`.
    pub mode_env_var: String,
    /// Learning II ([`crate::calibration`]): raise a dimension of new briefs in a domain whose earlier
    /// briefs show it systematically under-predicted. Default on.
    pub calibration: Calibration,
}

/// Whether Learning II calibration raises under-predicted dimensions (`teachback.calibration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Calibration {
    /// New briefs are scored with the calibration's bumps.
    On,
    /// New briefs keep the dimensions their planner gave; `agency variety calibration` still shows the table.
    Off,
}

impl Default for TeachbackConfig {
    fn default() -> Self {
        TeachbackConfig {
            mode: RolloutMode::Enforce,
            pending_timeout_minutes: 10,
            review_timeout_minutes: 15,
            readonly_bash: [
                "git status",
                "git diff",
                "git log",
                "git show",
                "ls",
                "cat",
                "head",
                "tail",
                "wc",
                "pwd",
                "grep",
                "rg",
                "find",
            ]
            .map(String::from)
            .to_vec(),
            unbound_session_default: UnboundSessionPolicy::Allow,
            mode_env_var: "AGENCY_TEACHBACK_MODE".to_string(),
            calibration: Calibration::On,
        }
    }
}

impl TeachbackConfig {
    /// The rollout mode in force: the environment override when set and not empty, else `mode`.
    ///
    /// `env_value` is the value of the `mode_env_var` variable, read by the caller.
    pub fn effective_mode(&self, env_value: Option<&str>) -> Result<RolloutMode, ConfigError> {
        let Some(value) = env_value.map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(self.mode);
        };
        RolloutMode::ALL
            .into_iter()
            .find(|mode| mode.as_str().eq_ignore_ascii_case(value))
            .ok_or_else(|| {
                ConfigError::new(vec![ConfigProblem {
                    origin: self.mode_env_var.clone(),
                    line: None,
                    path: String::new(),
                    message: format!("expected one of shadow, warn, enforce, found {}", quote(value)),
                }])
            })
    }

    /// Whether a shell command may run while a teachback is pending: every command in it is one of the
    /// read-only commands `readonly_bash` names, with only the options agency knows to be read-only
    /// ([`crate::intercept::readonly`]).
    pub fn allows_readonly_bash(&self, command: &str) -> bool {
        self.readonly_bash_refusal(command).is_none()
    }

    /// Why a shell command may not run while a teachback is pending, or `None` when it may.
    pub fn readonly_bash_refusal(&self, command: &str) -> Option<NotReadOnly> {
        let enabled = |name: &str| {
            self.readonly_bash
                .iter()
                .any(|listed| readonly::command_named(listed).is_some_and(|c| c.name == name))
        };
        readonly::check(command, &enabled).err()
    }
}

/// A spending limit; an unset field is no limit.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetLimit {
    /// Input plus output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// US dollars, from `models.prices`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
}

/// The `budgets` section; reaching a limit opens a budget gate.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetsConfig {
    /// For the whole run.
    #[serde(deserialize_with = "super::null_as_default")]
    pub run: BudgetLimit,
    /// For each workstream.
    #[serde(deserialize_with = "super::null_as_default")]
    pub workstream: BudgetLimit,
    /// For each brief, retries included.
    #[serde(deserialize_with = "super::null_as_default")]
    pub brief: BudgetLimit,
}

/// The `signoff` section: how "done" is checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SignoffConfig {
    /// The capability level of the stage-2 judge. Default reasoning-heavy.
    pub judge: CapabilityLevel,
    /// A specific model for the judge instead of `judge`'s, ideally from another model family than the
    /// workers'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_model: Option<ModelBinding>,
    /// The model of the auditor that reviews a run's slice beside the judge when its variety score requires
    /// one (7 and above), ideally another model family than the judge's. Unset: the T5 tier's runtime and
    /// model, as the judge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auditor_model: Option<ModelBinding>,
    /// Whether an inconclusive judge (error, no verdict) blocks completion. Default true.
    pub inconclusive_blocks: bool,
    /// The stage-1 verify command is killed after this many seconds. Default 600.
    pub verify_timeout_seconds: u32,
}

impl Default for SignoffConfig {
    fn default() -> Self {
        SignoffConfig {
            judge: CapabilityLevel::ReasoningHeavy,
            judge_model: None,
            auditor_model: None,
            inconclusive_blocks: true,
            verify_timeout_seconds: 600,
        }
    }
}

/// The `runner` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RunnerConfig {
    /// At most this many agents at once across the run. Default 4.
    pub concurrency: u32,
    /// Keep a failed (or escalated) implementer's worktree for a human to look into — `agency inspect
    /// --brief` names it, `agency gc` removes it once the run is finished — instead of removing it at the
    /// runner's next sweep. Default true.
    pub keep_worktrees_on_failure: bool,
    /// How long a claim on a brief lasts unless its runner renews it (every third of it while the agent
    /// works): a runner that died holding a claim loses it this long after its last renewal, and another
    /// runner on the same blackboard takes the brief over. Default 600.
    pub claim_lease_seconds: u32,
    /// An agent that has recorded nothing (no tool call, no message) for this many minutes is reported
    /// with an ALERT (once per silence); 0 turns the check off. Default 20.
    pub agent_idle_minutes: u32,
    /// How many times a built-in agent is told of a correctable mistake (a report whose output does not
    /// match its tier's schema, a reply cut off at the token limit) and fixes it in the same conversation
    /// before its brief fails with every problem listed. Default 3; 0 fails at the first.
    pub repair_attempts: u32,
    /// In a run started with `--auto-approve`, how long the runner keeps probing a provider in an outage
    /// (the run paused at its outage gate) before it leaves the gate to a human. Without `--auto-approve`
    /// nothing is probed: a human resumes. Default 60; 0 never probes.
    pub outage_probe_minutes: u32,
    /// Labels a workstream needs of the runner that takes its briefs (`ws-ml: [gpu]`; the workstream `*`
    /// stands for every workstream): only a runner offering all of them (`agency worker --label gpu`)
    /// claims those briefs. Default: none.
    pub workstream_labels: BTreeMap<String, Vec<String>>,
    /// A brief that has waited this many seconds, claimable, while no live runner offers what it needs
    /// (its tier, its workstream's labels) is reported with an ALERT naming what it needs and what the
    /// live runners offer. Default 120.
    pub unplaced_alert_seconds: u32,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            concurrency: 4,
            keep_worktrees_on_failure: true,
            claim_lease_seconds: 600,
            agent_idle_minutes: 20,
            repair_attempts: 3,
            outage_probe_minutes: 60,
            workstream_labels: BTreeMap::new(),
            unplaced_alert_seconds: 120,
        }
    }
}
