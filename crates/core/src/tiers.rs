//! What each tier produces and how the runner turns it into the next tier's briefs. The runner stays thin:
//! a tier's behaviour lives in its prompt and in the output schema here; the functions here are the pure
//! "handlers" that read a validated output and say which briefs come next.
//!
//! Roles within a tier are named by the brief's title: T1 `plan` and `accept`; T2 `lead` (and
//! `amended-pass-<n>`, the lead of a workstream's later architecture pass) and `synthesis` (any other T2
//! title is a specialist). So `agency inspect` shows "T1 plan ✓" and scripted replies can key
//! on the title.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::brief::{Brief, NewBrief};
use crate::contract::GoalContract;
use crate::plan::Workstream;
use crate::tier::Tier;
use crate::variety::Variety;

/// The title of T1's planning brief.
pub const PLAN_TITLE: &str = "plan";
/// The title of T1's acceptance brief.
pub const ACCEPT_TITLE: &str = "accept";
/// The title of the T2 lead architect's brief.
pub const LEAD_TITLE: &str = "lead";
/// The title of the T2 lead's synthesis brief.
pub const SYNTHESIS_TITLE: &str = "synthesis";
/// The title of T1's check of a canonical architecture against the goal anchor (seed 001, T2 step 8).
pub const VALIDATE_TITLE: &str = "validate";
/// The title of T1's ruling on conflicts the T2 specialists did not resolve within their cycles.
pub const ARBITRATE_TITLE: &str = "arbitrate";
/// The workstream name of run-level briefs (T1 plan and accept).
pub const RUN_WORKSTREAM: &str = "run";
/// The title prefix of a workstream's extra pass, an approved path amendment's: `amended-pass-<n>`, `n` its
/// 0-based index on the workstream's path (from 1; the first pass's entry keeps its own title). At T2 it is
/// the lead of a later architecture pass.
pub const EXTRA_PASS_PREFIX: &str = "amended-pass-";

/// The pass index `title` names when it is an extra pass's (`amended-pass-3` → 3), `None` otherwise (`0`
/// and leading zeros are not pass titles: the runner writes `amended-pass-<n>` with `n` from 1).
pub fn extra_pass_index(title: &str) -> Option<usize> {
    let digits = title.strip_prefix(EXTRA_PASS_PREFIX)?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether a T2 brief titled `title` would be taken for another T2 role than a specialist (`lead`,
/// `synthesis`, `amended-pass-<n>`): a lead may not give a specialist such a title.
pub fn reserved_t2_title(title: &str) -> bool {
    BriefRole::for_title(Tier::T2, title) != BriefRole::Specialist
}

/// What a brief is for, derived from its tier and title.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BriefRole {
    /// T1 phase 1: the dispatch plan.
    Plan,
    /// T1 phase 2: acceptance against the goal anchor.
    Accept,
    /// T1: a ruling on T2 conflicts left after `retry.t2_conflict_cycles` cycles.
    Arbiter,
    /// T1: the canonical architecture checked against the goal anchor before any squad is written.
    Validator,
    /// T2 lead: domain boundaries and shared assumptions.
    Lead,
    /// T2 specialist: one domain's architecture and its squads.
    Specialist,
    /// T2 lead, second pass: the canonical architecture.
    Synthesis,
    /// T3: a squad's task list.
    SquadLead,
    /// T4: one atomic task.
    Implementer,
    /// T5: verification of one slice.
    Verifier,
}

impl BriefRole {
    /// The role of a brief.
    pub fn of(brief: &Brief) -> BriefRole {
        Self::for_title(brief.tier, &brief.title)
    }

    /// The role a brief of `tier` titled `title` has.
    pub fn for_title(tier: Tier, title: &str) -> BriefRole {
        match (tier, title) {
            (Tier::T1, ACCEPT_TITLE) => BriefRole::Accept,
            (Tier::T1, ARBITRATE_TITLE) => BriefRole::Arbiter,
            (Tier::T1, VALIDATE_TITLE) => BriefRole::Validator,
            (Tier::T1, _) => BriefRole::Plan,
            (Tier::T2, LEAD_TITLE) => BriefRole::Lead,
            (Tier::T2, SYNTHESIS_TITLE) => BriefRole::Synthesis,
            (Tier::T2, title) if extra_pass_index(title).is_some() => BriefRole::Lead,
            (Tier::T2, _) => BriefRole::Specialist,
            (Tier::T3, _) => BriefRole::SquadLead,
            (Tier::T4, _) => BriefRole::Implementer,
            (Tier::T5, _) => BriefRole::Verifier,
        }
    }

    /// The wire name, used as the model call's `role` (and so by scripted replies).
    pub fn as_str(self) -> &'static str {
        match self {
            BriefRole::Plan => "planner",
            BriefRole::Accept => "acceptor",
            BriefRole::Arbiter => "arbiter",
            BriefRole::Validator => "validator",
            BriefRole::Lead => "lead-architect",
            BriefRole::Specialist => "architect",
            BriefRole::Synthesis => "synthesis",
            BriefRole::SquadLead => "squad-lead",
            BriefRole::Implementer => "implementer",
            BriefRole::Verifier => "verifier",
        }
    }

    /// Whether the role changes files (and so works in a writable worktree behind the teachback gate).
    pub fn writes(self) -> bool {
        self == BriefRole::Implementer
    }
}

/// A brief one tier asks the next to do, in the shape a model writes it. The runner fixes the tier and
/// workstream; the model decides the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChildBrief {
    /// Short, unique among its siblings (`queue-client`); the T5 scope.
    pub title: String,
    /// What the agent is asked to do, self-contained.
    pub instructions: String,
    /// The four variety dimensions of this piece of work (not its parent's).
    pub variety: Variety,
    /// What done means for it, when it can be checked on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<GoalContract>,
    /// Titles of siblings whose output this one needs (a pipeline); empty for swarm work.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

impl ChildBrief {
    /// The request for a brief of `tier` in `workstream`, inheriting `fallback` as the contract when the
    /// model gave none.
    pub fn into_new_brief(self, tier: Tier, workstream: &str, fallback: Option<&GoalContract>) -> NewBrief {
        NewBrief {
            tier,
            workstream: workstream.to_string(),
            title: self.title,
            personality: None,
            instructions: self.instructions,
            inputs: Vec::new(),
            variety: Some(self.variety),
            contract: self.contract.or_else(|| fallback.cloned()),
            depends_on: self.depends_on,
        }
    }
}

/// One domain's edges, as the T2 lead draws them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DomainBoundary {
    /// The domain (`backend`, `infra`, ...).
    pub domain: String,
    /// What it owns.
    pub owns: Vec<String>,
    /// What it must not touch.
    #[serde(default)]
    pub excludes: Vec<String>,
}

/// The T2 lead's output: boundaries, shared assumptions, and one specialist brief per domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeadOutput {
    /// Who owns what.
    pub boundaries: Vec<DomainBoundary>,
    /// Cross-cutting conventions every specialist designs against.
    pub shared_assumptions: Vec<String>,
    /// One brief per specialist domain.
    pub specialists: Vec<ChildBrief>,
    /// L0 (topic) agreement at T1→T2: the lead's restatement of what its workstream builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub understanding: Option<Understanding>,
}

/// A receiving tier's restatement of the handoff it received (seed 003's teachback format: what it builds,
/// the files and interfaces it expects), checked against the handing-over tier's record
/// (`agency_flow::agreement`). Given in the tier's output as `understanding`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Understanding {
    /// What it understands it is building, in a sentence or two.
    pub building: String,
    /// The files it understands the work touches (paths relative to the repository; a path ending in `/`
    /// stands for everything under it).
    #[serde(default)]
    pub files: Vec<String>,
    /// The interfaces it understands the work provides or consumes.
    #[serde(default)]
    pub interfaces: Vec<String>,
}

/// A T2 specialist's output: its domain's architecture and the squads (T3 briefs) that build it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecialistOutput {
    /// The domain's architecture, in prose or markdown.
    pub architecture: String,
    /// The squads that build it.
    pub squads: Vec<ChildBrief>,
    /// The files the domain's squads are handed (paths relative to the repository; a path ending in `/`
    /// stands for everything under it): the specialist's side of the L1 agreement check at T2→T3. Empty:
    /// it declared none, and that check records the fallback.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The interfaces (APIs, types, formats) the domain provides or consumes, held against its squad leads'
    /// restated interfaces like `files`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<String>,
}

/// The T2 lead's synthesis: the canonical architecture after conflicts between specialists are resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SynthesisOutput {
    /// The canonical architecture.
    pub canonical_architecture: String,
    /// Conflicts between specialists that remain: each goes back to the specialists in it with the other
    /// side's position (at most `retry.t2_conflict_cycles` cycles), then to T1.
    #[serde(default)]
    pub unresolved_conflicts: Vec<Conflict>,
}

/// A conflict between specialists' architectures the synthesis could not resolve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Conflict {
    /// What the conflict is about (`the queue's message format`).
    pub about: String,
    /// Each side: the specialist (its brief's title) and what it proposes. At least two.
    pub positions: Vec<Position>,
}

/// One specialist's side of a conflict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Position {
    /// The specialist's title, as among the lead's specialists.
    pub specialist: String,
    /// What it proposes, and why.
    pub position: String,
}

/// T1's ruling on the conflicts T2 did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArbitrationOutput {
    /// One ruling per conflict, in the order given.
    pub rulings: Vec<Ruling>,
}

/// T1's check of the canonical architecture against the goal anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidationOutput {
    /// Whether the architecture, built as written, fulfils the goal anchor.
    pub valid: bool,
    /// What does not serve the goal, each specific enough for the lead architect to act on.
    #[serde(default)]
    pub problems: Vec<String>,
}

/// T1's decision on one conflict, against the goal anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ruling {
    /// The conflict's `about`.
    pub about: String,
    /// What the canonical architecture does, and why that serves the goal.
    pub decision: String,
}

/// A T3 squad lead's task list, as drafted or committed in the mesh.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SquadOutput {
    /// The T4 tasks: independent ones run as a swarm, dependent ones as a pipeline.
    pub tasks: Vec<ChildBrief>,
    /// Overlaps with peers it resolved, or anomalies it wants a human to see.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The mesh draft: the files the squad's tasks expect to touch. Two squads of one domain naming the same
    /// file is an overlap they must reconcile before any task goes out.
    #[serde(default)]
    pub files: Vec<String>,
    /// The mesh draft: the interfaces (APIs, types, formats) the squad provides to others. Two providers
    /// of one interface is an overlap.
    #[serde(default)]
    pub provides: Vec<String>,
    /// The mesh draft: the interfaces the squad consumes from others (never an overlap).
    #[serde(default)]
    pub consumes: Vec<String>,
    /// L1 (procedure) agreement at T2→T3: the squad lead's restatement of its specialist's design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub understanding: Option<Understanding>,
}

/// A T5 verifier's output for one slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifierOutput {
    /// `pass` or `fail`.
    pub verdict: crate::verdict::SliceVerdict,
    /// What is wrong, each specific enough to act on.
    #[serde(default)]
    pub issues: Vec<String>,
    /// A human-readable summary.
    #[serde(default)]
    pub notes: String,
    /// What the signed-off slice achieved, restated for the L2 (purpose) agreement check at T5→T1: held
    /// against what T1's plan declared for the workstream. Absent in verdicts written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved: Option<Achieved>,
}

/// A slice's achievement as its verdict restates it (L2 agreement at T5→T1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Achieved {
    /// What the slice achieved, in a sentence (the judge's first line).
    #[serde(default)]
    pub summary: String,
    /// The files the signed-off commit changes (paths relative to the repository).
    #[serde(default)]
    pub files: Vec<String>,
}

/// T1's acceptance of the integrated result against the goal anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptOutput {
    /// Whether the integration branch fulfils the goal.
    pub accept: bool,
    /// Why, in a few sentences (the PR description starts with it).
    pub summary: String,
    /// What is missing when not accepted.
    #[serde(default)]
    pub missing: Vec<String>,
    /// What the run achieved, restated for the L2 (purpose) agreement check at the run's acceptance: the
    /// files the integration branch changes since the run's base and the judge's first line, held against
    /// the files the plan declared over all its workstreams. Absent when no judge ran (a verify failed) and
    /// in acceptances written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved: Option<Achieved>,
}

/// The JSON Schema of a role's output, given to the model with the `report_result` tool and used to
/// validate what comes back.
pub fn output_schema(role: BriefRole) -> serde_json::Value {
    let schema = match role {
        BriefRole::Plan => return crate::plan::plan_json_schema(),
        BriefRole::Accept => schemars::schema_for!(AcceptOutput),
        BriefRole::Arbiter => schemars::schema_for!(ArbitrationOutput),
        BriefRole::Validator => schemars::schema_for!(ValidationOutput),
        BriefRole::Lead => schemars::schema_for!(LeadOutput),
        BriefRole::Specialist => schemars::schema_for!(SpecialistOutput),
        BriefRole::Synthesis => schemars::schema_for!(SynthesisOutput),
        BriefRole::SquadLead => schemars::schema_for!(SquadOutput),
        BriefRole::Implementer => return serde_json::json!({ "type": "object" }),
        BriefRole::Verifier => schemars::schema_for!(VerifierOutput),
    };
    schema.to_value()
}

/// The first tier a workstream's path starts with (T1 never appears in a path).
pub fn first_tier(workstream: &Workstream) -> Option<Tier> {
    workstream.tier_path.first().copied()
}

/// The tier after `tier` on a workstream's path, if any.
pub fn next_tier(workstream: &Workstream, tier: Tier) -> Option<Tier> {
    let at = workstream.tier_path.iter().position(|t| *t == tier)?;
    workstream.tier_path.get(at + 1).copied()
}

/// The brief that starts a workstream: its first tier, with the workstream's notes, variety and contract.
pub fn workstream_entry_brief(workstream: &Workstream) -> Option<NewBrief> {
    let tier = first_tier(workstream)?;
    let title = match tier {
        Tier::T2 => LEAD_TITLE.to_string(),
        _ => workstream.name.clone(),
    };
    Some(NewBrief {
        tier,
        workstream: workstream.id.clone(),
        title,
        personality: workstream.specialist.clone(),
        instructions: workstream.notes.clone(),
        inputs: Vec::new(),
        variety: Some(workstream.variety),
        contract: Some(workstream.contract.clone()),
        depends_on: Vec::new(),
    })
}

/// Problems with a list of sibling briefs: duplicate titles, dependencies on unknown siblings, cycles.
/// Each problem names the brief, like plan validation does.
pub fn check_siblings(children: &[ChildBrief]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, child) in children.iter().enumerate() {
        if child.title.trim().is_empty() {
            problems.push(format!("[{i}].title: must not be empty"));
        }
        if children[..i].iter().any(|c| c.title == child.title) {
            problems.push(format!(
                "[{i}].title: \"{}\" is used twice; titles must be unique",
                child.title
            ));
        }
        for dep in &child.depends_on {
            if !children.iter().any(|c| &c.title == dep) {
                problems.push(format!("[{i}].depends_on: no sibling is titled \"{dep}\""));
            }
            if dep == &child.title {
                problems.push(format!("[{i}].depends_on: \"{dep}\" depends on itself"));
            }
        }
    }
    if problems.is_empty() && has_cycle(children) {
        problems.push("depends_on: the dependencies form a cycle".to_string());
    }
    problems
}

fn has_cycle(children: &[ChildBrief]) -> bool {
    // Kahn's algorithm: repeatedly remove briefs whose dependencies are all removed.
    let mut done: Vec<bool> = vec![false; children.len()];
    loop {
        let mut progressed = false;
        for (i, child) in children.iter().enumerate() {
            if done[i] {
                continue;
            }
            let ready = child.depends_on.iter().all(|d| {
                children
                    .iter()
                    .position(|c| &c.title == d)
                    .is_none_or(|j| done[j])
            });
            if ready {
                done[i] = true;
                progressed = true;
            }
        }
        if !progressed {
            return done.iter().any(|d| !d);
        }
    }
}

/// Orders siblings so that every brief comes after what it depends on (stable otherwise). Call after
/// [`check_siblings`] found no cycle.
pub fn dependency_order(children: Vec<ChildBrief>) -> Vec<ChildBrief> {
    let mut remaining = children;
    let mut ordered: Vec<ChildBrief> = Vec::with_capacity(remaining.len());
    while !remaining.is_empty() {
        let before = remaining.len();
        let mut i = 0;
        while i < remaining.len() {
            let ready = remaining[i]
                .depends_on
                .iter()
                .all(|d| ordered.iter().any(|o| &o.title == d));
            if ready {
                ordered.push(remaining.remove(i));
            } else {
                i += 1;
            }
        }
        if remaining.len() == before {
            // A cycle or a dangling dependency: keep the rest in their given order.
            ordered.append(&mut remaining);
        }
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(title: &str, deps: &[&str]) -> ChildBrief {
        ChildBrief {
            title: title.into(),
            instructions: "x".into(),
            variety: Variety::new(1, 1, 1, 1).unwrap(),
            contract: None,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn roles_come_from_tier_and_title() {
        assert_eq!(BriefRole::for_title(Tier::T1, "plan"), BriefRole::Plan);
        assert_eq!(BriefRole::for_title(Tier::T1, "accept"), BriefRole::Accept);
        assert_eq!(BriefRole::for_title(Tier::T1, "arbitrate"), BriefRole::Arbiter);
        assert_eq!(BriefRole::for_title(Tier::T1, "validate"), BriefRole::Validator);
        assert_eq!(BriefRole::for_title(Tier::T2, "lead"), BriefRole::Lead);
        assert_eq!(BriefRole::for_title(Tier::T2, "synthesis"), BriefRole::Synthesis);
        assert_eq!(BriefRole::for_title(Tier::T2, "backend"), BriefRole::Specialist);
        // A later architecture pass's lead is told apart from the first by its pass index.
        assert_eq!(BriefRole::for_title(Tier::T2, "amended-pass-2"), BriefRole::Lead);
        assert_eq!(
            BriefRole::for_title(Tier::T3, "amended-pass-2"),
            BriefRole::SquadLead
        );
        assert_eq!(
            BriefRole::for_title(Tier::T2, "amended-pass-"),
            BriefRole::Specialist
        );
        assert_eq!(
            BriefRole::for_title(Tier::T2, "amended-pass-01"),
            BriefRole::Specialist
        );
        assert_eq!(extra_pass_index("amended-pass-12"), Some(12));
        assert_eq!(extra_pass_index("lead"), None);
        assert_eq!(extra_pass_index("amended-pass-0"), None);
        assert_eq!(extra_pass_index("amended-pass-1x"), None);
        assert!(reserved_t2_title("lead") && reserved_t2_title("amended-pass-1"));
        assert!(!reserved_t2_title("backend"));
        assert_eq!(BriefRole::for_title(Tier::T5, "x"), BriefRole::Verifier);
        assert!(BriefRole::Implementer.writes() && !BriefRole::Verifier.writes());
    }

    #[test]
    fn sibling_problems_are_named() {
        let problems = check_siblings(&[child("a", &["zz"]), child("a", &[]), child("b", &["b"])]);
        assert!(
            problems.iter().any(|p| p.contains("no sibling is titled \"zz\"")),
            "{problems:?}"
        );
        assert!(problems.iter().any(|p| p.contains("used twice")), "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("depends on itself")),
            "{problems:?}"
        );
    }

    #[test]
    fn cycles_are_found_and_order_respects_dependencies() {
        assert_eq!(
            check_siblings(&[child("a", &["b"]), child("b", &["a"])]),
            vec!["depends_on: the dependencies form a cycle".to_string()]
        );
        let ordered = dependency_order(vec![child("c", &["b"]), child("b", &["a"]), child("a", &[])]);
        let titles: Vec<&str> = ordered.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(titles, ["a", "b", "c"]);
    }

    #[test]
    fn declared_scopes_must_stay_inside_the_repository() {
        let paths: Vec<String> = ["src/a.rs", "lib/", " ", "/etc/passwd", "a/../../b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let problems = crate::plan::scope_path_problems(&paths);
        let at: Vec<usize> = problems.iter().map(|(k, _)| *k).collect();
        assert_eq!(at, [2, 3, 4], "{problems:?}");
        assert!(problems[1].1.contains("is absolute"), "{problems:?}");
        assert!(problems[2].1.contains("leaves the repository"), "{problems:?}");
        assert_eq!(
            crate::plan::scope_name_problems(&["GET /sum".into(), "".into()]),
            [(1, "must not be empty".to_string())]
        );
        // An old specialist output without them still reads.
        let old: SpecialistOutput =
            serde_json::from_value(serde_json::json!({"architecture": "x", "squads": []})).unwrap();
        assert!(old.files.is_empty() && old.interfaces.is_empty());
    }

    #[test]
    fn every_role_has_an_object_schema() {
        for role in [
            BriefRole::Plan,
            BriefRole::Arbiter,
            BriefRole::Validator,
            BriefRole::Accept,
            BriefRole::Lead,
            BriefRole::Specialist,
            BriefRole::Synthesis,
            BriefRole::SquadLead,
            BriefRole::Implementer,
            BriefRole::Verifier,
        ] {
            let schema = output_schema(role);
            assert!(schema.is_object(), "{role:?}");
        }
    }
}
