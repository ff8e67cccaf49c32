//! Briefs: one unit of work for one agent. A brief carries the immutable goal anchor, its instructions and
//! inputs, its variety (from which its gates are *derived* on every read, never stored as an opinion), its
//! goal contract, its retry budget and its place in the tree.
//!
//! A tier asks for new briefs as JSON; [`validate_new_brief`] checks such a request (every problem at once,
//! each with its JSON path) and refuses gate settings, which only the variety score may decide (seed 000).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::GoalContract;
use crate::ids::{BriefId, RunId};
use crate::plan::check::{Checker, Problem, field_path, write_problems};
use crate::teachback::TeachbackState;
use crate::tier::{Tier, UnknownTier};
use crate::variety::{Gates, TeachbackMode, Variety};

/// Where a brief stands in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BriefStatus {
    /// Written, waiting for the spawn loop.
    Pending,
    /// Claimed by a runner or worker; an agent is being (or has been) spawned.
    Running,
    /// The agent stopped; sign-off is checking its work.
    Verifying,
    /// Signed off.
    Done,
    /// Failed; the owning tier decides whether to retry or escalate.
    Failed,
    /// Failed and handed upward.
    Escalated,
    /// No longer needed (superseded by a retry or a re-plan, or the run stopped).
    Cancelled,
}

impl BriefStatus {
    /// Every status.
    pub const ALL: [BriefStatus; 7] = [
        BriefStatus::Pending,
        BriefStatus::Running,
        BriefStatus::Verifying,
        BriefStatus::Done,
        BriefStatus::Failed,
        BriefStatus::Escalated,
        BriefStatus::Cancelled,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            BriefStatus::Pending => "pending",
            BriefStatus::Running => "running",
            BriefStatus::Verifying => "verifying",
            BriefStatus::Done => "done",
            BriefStatus::Failed => "failed",
            BriefStatus::Escalated => "escalated",
            BriefStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the brief has ended and will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            BriefStatus::Done | BriefStatus::Failed | BriefStatus::Escalated | BriefStatus::Cancelled
        )
    }
}

impl fmt::Display for BriefStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A brief status this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown brief status \"{0}\"")]
pub struct UnknownBriefStatus(pub String);

impl FromStr for BriefStatus {
    type Err = UnknownBriefStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BriefStatus::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownBriefStatus(s.to_string()))
    }
}

/// One unit of work for one agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Brief {
    /// Its id.
    pub id: BriefId,
    /// The run it belongs to.
    pub run: RunId,
    /// The brief whose output created this one, if any.
    pub parent: Option<BriefId>,
    /// The tier that does this work.
    pub tier: Tier,
    /// The workstream id from the plan (`ws-backend-api`).
    pub workstream: String,
    /// A short title (`queue-client`), used in logs and as the T5 scope.
    pub title: String,
    /// The personality slug injected as the system prompt.
    pub personality: Option<String>,
    /// The user's goal, immutable, embedded in every brief.
    pub goal_anchor: String,
    /// What this agent is asked to do.
    pub instructions: String,
    /// Artifact names this brief reads (boundaries, architecture, a predecessor's output).
    pub inputs: Vec<String>,
    /// The four assessed dimensions. Required for T4 briefs; see [`validate_new_brief`].
    pub variety: Option<Variety>,
    /// What done means, if this brief is signed off against a contract.
    pub contract: Option<GoalContract>,
    /// How many retries the owning tier may spend on this brief.
    pub retry_budget: u32,
    /// Which attempt this is, starting at 0.
    pub attempt: u32,
    /// Briefs that must be done before this one may start (a T4 pipeline).
    pub depends_on: Vec<BriefId>,
    /// The git branch the agent works on, once assigned.
    pub branch: Option<String>,
    /// Where the brief's worktree lives, once created.
    pub worktree: Option<String>,
    /// Lifecycle status.
    pub status: BriefStatus,
    /// Teachback state.
    pub teachback: TeachbackState,
    /// Who holds the claim (a runner or worker id) while running.
    pub claimed_by: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

impl Brief {
    /// The gates this brief's variety implies; `None` when it has no variety (T1–T3 coordination briefs
    /// may omit it, and then teachback is advisory).
    pub fn gates(&self) -> Option<Gates> {
        self.variety.map(|v| v.gates())
    }

    /// How its teachback gates its work: what its variety implies, and advisory for a brief with no variety
    /// (coordination work). The hook, the runner and the CLI all ask this one question.
    pub fn teachback_mode(&self) -> TeachbackMode {
        self.gates().map_or(TeachbackMode::Advisory, |g| g.teachback_mode)
    }

    /// The brief's variety score, if it has one.
    pub fn variety_score(&self) -> Option<u8> {
        self.variety.map(|v| v.score())
    }
}

/// A brief as a tier (or a human) asks for it: the part the requester decides. The runner adds the rest (id,
/// run, parent, goal anchor, retry budget) with [`NewBrief::into_brief`]. There is deliberately no field for
/// gates: they are derived from `variety` on every read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewBrief {
    /// The tier that does the work.
    pub tier: Tier,
    /// The plan's workstream id.
    pub workstream: String,
    /// A short title, unique among its siblings; the T5 scope.
    pub title: String,
    /// The personality slug, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub personality: Option<String>,
    /// What the agent is asked to do.
    pub instructions: String,
    /// Artifact names the agent reads.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// The four dimensions; required for T4 (implementer) briefs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variety: Option<Variety>,
    /// What done means, if the brief is signed off against a contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<GoalContract>,
    /// Titles of sibling briefs that must be done first (resolved to ids when the briefs are written).
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// Where a new brief goes: what the runner, not the requester, decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefPlacement {
    /// The brief's id.
    pub id: BriefId,
    /// Its run.
    pub run: RunId,
    /// The brief whose output asked for it.
    pub parent: Option<BriefId>,
    /// The run's goal anchor, copied verbatim.
    pub goal_anchor: String,
    /// The retry budget (see `escalation::retry_budget`).
    pub retry_budget: u32,
    /// The resolved ids of `depends_on`.
    pub depends_on: Vec<BriefId>,
    /// When it is written.
    pub created_at: DateTime<Utc>,
}

impl NewBrief {
    /// The gates this request's variety implies; `None` without a variety (then teachback is advisory).
    pub fn gates(&self) -> Option<Gates> {
        self.variety.map(|v| v.gates())
    }

    /// The full brief: pending, first attempt, teachback pending, unclaimed, no branch yet.
    pub fn into_brief(self, placement: BriefPlacement) -> Brief {
        Brief {
            id: placement.id,
            run: placement.run,
            parent: placement.parent,
            tier: self.tier,
            workstream: self.workstream,
            title: self.title,
            personality: self.personality,
            goal_anchor: placement.goal_anchor,
            instructions: self.instructions,
            inputs: self.inputs,
            variety: self.variety,
            contract: self.contract,
            retry_budget: placement.retry_budget,
            attempt: 0,
            depends_on: placement.depends_on,
            branch: None,
            worktree: None,
            status: BriefStatus::Pending,
            teachback: TeachbackState::Pending,
            claimed_by: None,
            created_at: placement.created_at,
        }
    }
}

/// Every problem found in a brief request. Displays one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefErrors {
    /// The problems, in document order.
    pub problems: Vec<Problem>,
}

impl fmt::Display for BriefErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_problems(f, &self.problems)
    }
}

impl std::error::Error for BriefErrors {}

/// The shape a variety takes, quoted in error messages so the requester can copy it.
pub const VARIETY_SHAPE: &str = r#"variety: {"novelty": 1-4, "scope": 1-4, "uncertainty": 1-4, "risk": 1-4}"#;

const NEW_BRIEF_FIELDS: &[&str] = &[
    "tier",
    "workstream",
    "title",
    "personality",
    "instructions",
    "inputs",
    "variety",
    "contract",
    "depends_on",
];

/// Fields a requester might send to set gates by hand. Refused, not ignored: silently dropping them would
/// let the requester believe its setting took effect.
const DERIVED_FIELDS: &[&str] = &[
    "gates",
    "variety_score",
    "teachback_mode",
    "auditor_required",
    "workflow_route",
];

/// Checks a brief request as JSON, reporting every problem at once with its JSON path. A T4 (implementer)
/// brief must carry its variety (the error shows the expected shape); gate settings (`gates`,
/// `variety_score`, `teachback_mode`, ...) are refused, since gates are always derived from the score.
pub fn validate_new_brief(json: &Value) -> Result<NewBrief, BriefErrors> {
    let mut c = Checker::default();
    if let Some(obj) = c.object(json, "") {
        for key in obj.keys() {
            if DERIVED_FIELDS.contains(&key.as_str()) {
                c.push(
                    key,
                    "cannot be set: gates are derived from the variety dimensions; give `variety` and remove this",
                );
            } else if key == "variety_dimensions" {
                c.push(key, format!("is spelled `variety` here: {VARIETY_SHAPE}"));
            } else if !NEW_BRIEF_FIELDS.contains(&key.as_str()) {
                c.push(
                    key,
                    format!("unknown field (expected one of: {})", NEW_BRIEF_FIELDS.join(", ")),
                );
            }
        }
        let tier = c
            .required(obj, "", "tier")
            .and_then(|v| c.string(v, "tier"))
            .and_then(|name| {
                let tier = Tier::ALL.into_iter().find(|t| t.as_str() == name);
                if tier.is_none() {
                    c.push("tier", UnknownTier(name.to_string()).to_string());
                }
                tier
            });
        for key in ["workstream", "title", "instructions"] {
            if let Some(v) = c.required(obj, "", key) {
                c.text(v, key);
            }
        }
        if let Some(v) = obj.get("personality").filter(|v| !v.is_null()) {
            c.text(v, "personality");
        }
        for key in ["inputs", "depends_on"] {
            if let Some(v) = obj.get(key) {
                c.string_list(v, key);
            }
        }
        match obj.get("variety").filter(|v| !v.is_null()) {
            Some(v) => {
                c.variety(v, "variety");
            }
            None if tier == Some(Tier::T4) => c.push(
                "variety",
                format!(
                    "missing: an implementer (t4) brief must carry its variety dimensions, {VARIETY_SHAPE}"
                ),
            ),
            None => {}
        }
        if let Some(v) = obj.get("contract").filter(|v| !v.is_null()) {
            c.contract(v, &field_path("", "contract"));
        }
    }
    if !c.problems.is_empty() {
        return Err(BriefErrors { problems: c.problems });
    }
    // Everything the typed request needs has been checked above; this only builds it.
    serde_json::from_value(json.clone()).map_err(|e| BriefErrors {
        problems: vec![Problem {
            path: String::new(),
            message: e.to_string(),
        }],
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn t4() -> Value {
        json!({
            "tier": "t4",
            "workstream": "ws-backend-api",
            "title": "queue-client",
            "instructions": "Write the retrying queue client.",
            "inputs": ["architecture"],
            "variety": {"novelty": 2, "scope": 2, "uncertainty": 2, "risk": 2},
            "contract": {"done_when": "client retries with backoff", "verify": "cargo test -p queue"},
            "depends_on": ["queue-schema"]
        })
    }

    fn problems(json: &Value) -> Vec<String> {
        match validate_new_brief(json) {
            Ok(_) => vec![],
            Err(e) => e.problems.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn a_valid_t4_brief_derives_its_gates() {
        let brief = validate_new_brief(&t4()).unwrap();
        assert_eq!(brief.tier, Tier::T4);
        let gates = brief.gates().unwrap();
        assert_eq!(gates.teachback_mode, crate::variety::TeachbackMode::Blocking);
        assert!(gates.auditor_required);
        assert_eq!(brief.depends_on, ["queue-schema"]);
    }

    #[test]
    fn a_t4_brief_without_variety_is_refused_with_the_expected_shape() {
        for missing in [None, Some(Value::Null)] {
            let mut v = t4();
            match missing {
                None => {
                    v.as_object_mut().unwrap().remove("variety");
                }
                Some(null) => v["variety"] = null,
            }
            assert_eq!(
                problems(&v),
                [
                    r#"variety: missing: an implementer (t4) brief must carry its variety dimensions, variety: {"novelty": 1-4, "scope": 1-4, "uncertainty": 1-4, "risk": 1-4}"#
                ]
            );
        }
    }

    #[test]
    fn other_tiers_may_omit_variety() {
        let mut v = t4();
        v["tier"] = json!("t3");
        v.as_object_mut().unwrap().remove("variety");
        let brief = validate_new_brief(&v).unwrap();
        assert_eq!(brief.gates(), None);
    }

    #[test]
    fn gate_settings_are_refused() {
        let mut v = t4();
        v["gates"] =
            json!({"teachback_mode": "advisory", "auditor_required": false, "workflow_route": "compact"});
        v["variety_score"] = json!(8);
        v["teachback_mode"] = json!("advisory");
        let got = problems(&v);
        assert_eq!(got.len(), 3, "{got:?}");
        for key in ["gates", "variety_score", "teachback_mode"] {
            assert!(
                got.iter()
                    .any(|p| p.starts_with(&format!("{key}: cannot be set: gates are derived"))),
                "{key}: {got:?}"
            );
        }
    }

    #[test]
    fn the_seed_spelling_of_variety_gets_a_hint() {
        let mut v = t4();
        let dims = v["variety"].take();
        v.as_object_mut().unwrap().remove("variety");
        v["variety_dimensions"] = dims;
        let got = problems(&v);
        assert!(
            got.iter()
                .any(|p| p.starts_with("variety_dimensions: is spelled `variety` here")),
            "{got:?}"
        );
        assert!(got.iter().any(|p| p.starts_with("variety: missing")), "{got:?}");
    }

    #[test]
    fn bad_dimensions_and_fields_are_all_reported() {
        let mut v = t4();
        v["variety"]["risk"] = json!(true);
        v["variety"]["scope"] = json!(9);
        v["tier"] = json!("t4x");
        v["title"] = json!("");
        v["inputs"] = json!("architecture");
        v["contract"] = json!({"verify": "make"});
        v["colour"] = json!("blue");
        let got = problems(&v);
        // tier is unknown, so the T4 rule cannot apply, but the given variety is still checked.
        let expected = [
            "colour: unknown field (expected one of: tier, workstream, title, personality, instructions, inputs, variety, contract, depends_on)",
            "tier: unknown tier \"t4x\" (expected one of t1, t2, t3, t4, t5)",
            "title: must not be empty",
            "inputs: expected an array, found a string (\"architecture\")",
            "variety.scope: variety dimension `scope` must be from 1 to 4, found 9",
            "variety.risk: variety dimension `risk` must be an integer from 1 to 4, found true",
            "contract.done_when: missing required field",
        ];
        assert_eq!(got, expected);
        let text = validate_new_brief(&v).unwrap_err().to_string();
        assert_eq!(text.lines().count(), expected.len());
    }

    #[test]
    fn into_brief_starts_pending() {
        let new = validate_new_brief(&t4()).unwrap();
        let brief = new.into_brief(BriefPlacement {
            id: BriefId::new(),
            run: RunId::new(),
            parent: None,
            goal_anchor: "goal".into(),
            retry_budget: 2,
            depends_on: vec![],
            created_at: Utc::now(),
        });
        assert_eq!(brief.status, BriefStatus::Pending);
        assert_eq!(brief.teachback, TeachbackState::Pending);
        assert_eq!(brief.attempt, 0);
        assert_eq!(brief.variety_score(), Some(8));
        assert_eq!(brief.title, "queue-client");
    }
}
