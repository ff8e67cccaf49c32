//! The T1 plan (seed 001, "T1 Plan Output Schema"): workstreams with their tier paths and parallel groups,
//! the order the groups run in, the retry multiplier and T1's self-critique. Each workstream also carries its
//! variety and goal contract, so every brief made from it has derived gates and a definition of done.
//!
//! A plan arrives as a model's JSON, so [`validate_plan`] reads the raw value and reports *every* problem at
//! once, each with its JSON path (`workstreams[2].tier_path[0]: unknown tier "t6" ...`): one retry of the
//! planner can then fix them all. The path-aware reader lives in the `check` submodule and is shared
//! with brief validation.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::contract::GoalContract;
use crate::ids::RunId;
use crate::tier::Tier;
use crate::variety::{Gates, Route, Variety, route_for_score};

pub(crate) mod check;

pub use check::Problem;
use check::{Checker, describe, field_path, index_path, write_problems};

/// How hard T1 judged the goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Complexity {
    /// Many workstreams, deep paths, real unknowns.
    High,
    /// Some coordination needed.
    Medium,
    /// Routine.
    Low,
}

impl Complexity {
    /// Every complexity, as written on the wire.
    pub const ALL: [Complexity; 3] = [Complexity::High, Complexity::Medium, Complexity::Low];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Complexity::High => "high",
            Complexity::Medium => "medium",
            Complexity::Low => "low",
        }
    }
}

/// One workstream of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workstream {
    /// A stable id (`ws-backend-api`): letters, digits, `-`, `_`, `.`; used in branch names.
    pub id: String,
    /// A human name (`Backend API`).
    pub name: String,
    /// The domain (`backend`), which groups T3 squad leads into a mesh.
    pub domain: String,
    /// The tiers this workstream passes through, top down, ending in t5 (`["t2", "t3", "t4", "t5"]`).
    pub tier_path: Vec<Tier>,
    /// The parallel group it runs in; must match `parallelism.groups`.
    pub parallel_group: String,
    /// The personality slug of the workstream's lead specialist (seed name: `t2_specialist`).
    #[serde(default, alias = "t2_specialist", skip_serializing_if = "Option::is_none")]
    pub specialist: Option<String>,
    /// Guidance for the tiers below.
    #[serde(default)]
    pub notes: String,
    /// The workstream's variety; its route's default path is the deepest path T1 may prescribe without a
    /// stated reason.
    pub variety: Variety,
    /// What done means for the whole workstream.
    pub contract: GoalContract,
    /// Why the tier path is shallower than the variety route's default, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shallower_path_reason: Option<String>,
    /// The files the workstream is expected to change (paths relative to the repository; a path ending in
    /// `/` stands for everything under it): T1's side of the L0 agreement check at T1→T2 (and of L1 at
    /// T1→T3 on a path without T2). Empty: T1 declared none, and those checks record the fallback.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The interfaces (APIs, types, formats) the workstream provides or consumes: held against the
    /// receiving tier's restated interfaces like `files`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<String>,
}

impl Workstream {
    /// The derived gates of this workstream's variety.
    pub fn gates(&self) -> Gates {
        self.variety.gates()
    }

    /// The route its variety score takes.
    pub fn route(&self) -> Route {
        route_for_score(self.variety.score())
    }
}

/// Problems with a declared list of files (a plan workstream's or a specialist's `files`), each with its
/// index: a path must be relative to the repository and stay inside it (not empty, not absolute, no `..`).
pub fn scope_path_problems(paths: &[String]) -> Vec<(usize, String)> {
    paths
        .iter()
        .enumerate()
        .filter_map(|(k, path)| {
            let trimmed = path.trim();
            let problem = if trimmed.is_empty() {
                "must not be empty".to_string()
            } else if trimmed.starts_with('/') || trimmed.starts_with('\\') {
                format!("{trimmed:?} is absolute; expected a path relative to the repository")
            } else if trimmed.split(['/', '\\']).any(|part| part == "..") {
                format!("{trimmed:?} leaves the repository (`..`); expected a path inside it")
            } else {
                return None;
            };
            Some((k, problem))
        })
        .collect()
}

/// Problems with a declared list of interfaces, each with its index: none may be empty.
pub fn scope_name_problems(names: &[String]) -> Vec<(usize, String)> {
    names
        .iter()
        .enumerate()
        .filter(|(_, name)| name.trim().is_empty())
        .map(|(k, _)| (k, "must not be empty".to_string()))
        .collect()
}

/// Which workstreams run together, and in which order the groups run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Parallelism {
    /// Group name → the ids of the workstreams that run in parallel within it.
    pub groups: BTreeMap<String, Vec<String>>,
    /// The groups in the order they run; each starts after the previous one completes.
    pub sequence: Vec<String>,
}

/// T1's plan, as written to the blackboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The run this plan belongs to.
    pub run_id: RunId,
    /// The user's goal, verbatim; embedded in every brief.
    pub goal_anchor: String,
    /// T1's judgement of the goal's complexity.
    pub complexity: Complexity,
    /// Multiplies each tier's base retry budget (1 simple, 2 complex).
    #[schemars(range(min = 1))]
    pub retry_budget_multiplier: u32,
    /// The workstreams.
    pub workstreams: Vec<Workstream>,
    /// Parallel groups and their order.
    pub parallelism: Parallelism,
    /// What T1's self-critique pass found and amended.
    pub self_critique_summary: String,
}

/// One parallel group, resolved to its workstreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage<'a> {
    /// The group's name.
    pub group: &'a str,
    /// Its workstreams, in the order the group lists them.
    pub workstreams: &'a [String],
}

impl Plan {
    /// The workstream with this id.
    pub fn workstream(&self, id: &str) -> Option<&Workstream> {
        self.workstreams.iter().find(|w| w.id == id)
    }

    /// The groups in `sequence` order, each with the ids of its workstreams.
    pub fn stages(&self) -> Vec<Stage<'_>> {
        self.parallelism
            .sequence
            .iter()
            .map(|group| Stage {
                group,
                workstreams: self
                    .parallelism
                    .groups
                    .get(group)
                    .map(Vec::as_slice)
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// Every workstream in run order: group by group along `sequence`, within a group as it lists them.
    pub fn workstreams_in_order(&self) -> Vec<&Workstream> {
        self.stages()
            .into_iter()
            .flat_map(|stage| stage.workstreams.iter().filter_map(|id| self.workstream(id)))
            .collect()
    }
}

/// The plan's JSON Schema, for the planner's structured-output request and for the docs.
pub fn plan_json_schema() -> Value {
    schemars::schema_for!(Plan).to_value()
}

/// Every problem found in a plan. Displays one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanErrors {
    /// The problems, in document order as far as it can be followed.
    pub problems: Vec<Problem>,
}

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_problems(f, &self.problems)
    }
}

impl std::error::Error for PlanErrors {}

const PLAN_FIELDS: &[&str] = &[
    "run_id",
    "goal_anchor",
    "complexity",
    "retry_budget_multiplier",
    "workstreams",
    "parallelism",
    "self_critique_summary",
];

const WORKSTREAM_FIELDS: &[&str] = &[
    "id",
    "name",
    "domain",
    "tier_path",
    "parallel_group",
    "specialist",
    "t2_specialist",
    "notes",
    "variety",
    "contract",
    "shallower_path_reason",
    "files",
    "interfaces",
];

const PARALLELISM_FIELDS: &[&str] = &["groups", "sequence"];

/// What the cross-checks need from one workstream, as far as it could be read.
struct WorkstreamDraft {
    path: String,
    id: Option<String>,
    parallel_group: Option<String>,
}

/// Validates a plan as a model wrote it, reporting every problem at once with its JSON path; on success
/// returns the typed plan. Checks field presence and types, tiers and tier-path shape (known tiers, t1
/// excluded, strictly downward, ending in t5 with a t4 before it, or a research spike's `[t2]`), duplicate
/// workstream ids, the parallel groups against `sequence` and each workstream's `parallel_group`, variety
/// dimensions, the retry multiplier, and that a path shallower than its variety route's default states a
/// `shallower_path_reason`.
pub fn validate_plan(plan: &Value) -> Result<Plan, PlanErrors> {
    let mut c = Checker::default();
    if let Some(root) = c.object(plan, "") {
        check_plan(&mut c, root);
    }
    if !c.problems.is_empty() {
        return Err(PlanErrors { problems: c.problems });
    }
    // Everything the typed model needs has been checked above; this only builds it. Should the two ever
    // drift apart, serde's message is still reported rather than lost.
    serde_json::from_value(plan.clone()).map_err(|e| PlanErrors {
        problems: vec![Problem {
            path: String::new(),
            message: e.to_string(),
        }],
    })
}

fn check_plan(c: &mut Checker, root: &Map<String, Value>) {
    c.unknown_fields(root, "", PLAN_FIELDS);
    if let Some(s) = c.required(root, "", "run_id").and_then(|v| c.string(v, "run_id"))
        && uuid::Uuid::parse_str(s).is_err()
    {
        c.push("run_id", format!("expected a UUID, found {s:?}"));
    }
    if let Some(v) = c.required(root, "", "goal_anchor") {
        c.text(v, "goal_anchor");
    }
    if let Some(s) = c
        .required(root, "", "complexity")
        .and_then(|v| c.string(v, "complexity"))
        && !Complexity::ALL.iter().any(|k| k.as_str() == s)
    {
        c.push(
            "complexity",
            format!("expected \"high\", \"medium\" or \"low\", found {s:?}"),
        );
    }
    if let Some(v) = c.required(root, "", "retry_budget_multiplier") {
        check_multiplier(c, v);
    }
    if let Some(v) = c.required(root, "", "self_critique_summary") {
        c.text(v, "self_critique_summary");
    }
    let drafts = match c
        .required(root, "", "workstreams")
        .and_then(|v| c.array(v, "workstreams"))
    {
        Some(items) => {
            if items.is_empty() {
                c.push("workstreams", "a plan needs at least one workstream");
            }
            let drafts: Vec<_> = items
                .iter()
                .enumerate()
                .map(|(i, w)| check_workstream(c, w, &index_path("workstreams", i)))
                .collect();
            check_duplicate_ids(c, &drafts);
            Some(drafts)
        }
        None => None,
    };
    if let Some(parallelism) = c
        .required(root, "", "parallelism")
        .and_then(|v| c.object(v, "parallelism"))
    {
        check_parallelism(c, parallelism, drafts.as_deref());
    }
}

fn check_multiplier(c: &mut Checker, value: &Value) {
    const PATH: &str = "retry_budget_multiplier";
    match value.as_i64() {
        Some(n) if n < 1 => c.push(
            PATH,
            format!("must be at least 1 (1 for simple work, 2 for complex), found {n}"),
        ),
        Some(n) if u32::try_from(n).is_err() => c.push(PATH, format!("is too large, found {n}")),
        Some(_) => {}
        None => c.push(
            PATH,
            format!("expected a whole number of at least 1, found {}", describe(value)),
        ),
    }
}

fn check_workstream(c: &mut Checker, value: &Value, path: &str) -> WorkstreamDraft {
    let mut draft = WorkstreamDraft {
        path: path.to_string(),
        id: None,
        parallel_group: None,
    };
    let Some(obj) = c.object(value, path) else {
        return draft;
    };
    c.unknown_fields(obj, path, WORKSTREAM_FIELDS);
    let at = |key: &str| field_path(path, key);
    if let Some(id) = c.required(obj, path, "id").and_then(|v| c.text(v, &at("id"))) {
        if !id
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'))
        {
            c.push(
                &at("id"),
                format!("{id:?} may contain only letters, digits, '-', '_' and '.'"),
            );
        }
        draft.id = Some(id.to_string());
    }
    for key in ["name", "domain"] {
        if let Some(v) = c.required(obj, path, key) {
            c.text(v, &at(key));
        }
    }
    draft.parallel_group = c
        .required(obj, path, "parallel_group")
        .and_then(|v| c.text(v, &at("parallel_group")))
        .map(str::to_string);
    if obj.contains_key("specialist") && obj.contains_key("t2_specialist") {
        c.push(
            path,
            "give `specialist` or its seed name `t2_specialist`, not both",
        );
    }
    for key in ["specialist", "t2_specialist", "shallower_path_reason"] {
        if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
            c.string(v, &at(key));
        }
    }
    if let Some(v) = obj.get("notes") {
        c.string(v, &at("notes"));
    }
    for key in ["files", "interfaces"] {
        if let Some(list) = obj.get(key).and_then(|v| c.string_list(v, &at(key))) {
            let problems = match key {
                "files" => scope_path_problems(&list),
                _ => scope_name_problems(&list),
            };
            for (k, problem) in problems {
                c.push(&index_path(&at(key), k), problem);
            }
        }
    }
    let variety = c
        .required(obj, path, "variety")
        .and_then(|v| c.variety(v, &at("variety")));
    if let Some(v) = c.required(obj, path, "contract") {
        c.contract(v, &at("contract"));
    }
    if let Some(tiers) = c
        .required(obj, path, "tier_path")
        .and_then(|v| c.tier_list(v, &at("tier_path")))
    {
        let reason = obj
            .get("shallower_path_reason")
            .and_then(Value::as_str)
            .is_some_and(|r| !r.trim().is_empty());
        check_tier_path(c, &at("tier_path"), &tiers, variety, reason);
    }
    draft
}

fn check_tier_path(c: &mut Checker, path: &str, tiers: &[Tier], variety: Option<Variety>, has_reason: bool) {
    let Some(&last) = tiers.last() else {
        c.push(
            path,
            "is empty; a workstream needs at least one tier, ending in t5",
        );
        return;
    };
    let mut shape_ok = true;
    for (k, &tier) in tiers.iter().enumerate() {
        if tier == Tier::T1 {
            c.push(
                &index_path(path, k),
                "t1 is the planner and cannot appear in a workstream's tier path",
            );
            shape_ok = false;
        } else if let Some(&before) = k.checked_sub(1).and_then(|j| tiers.get(j))
            && tier <= before
        {
            c.push(
                &index_path(path, k),
                format!("{tier} after {before}: tiers must go downward (t2, t3, t4, t5), each at most once"),
            );
            shape_ok = false;
        }
    }
    let route = variety.map(|v| route_for_score(v.score()));
    let research_path = tiers == [Tier::T2];
    if last != Tier::T5 {
        // A research spike's path is one T2 research brief; the run re-plans after it.
        let allowed = research_path && route.is_none_or(|r| r == Route::ResearchSpike);
        if !allowed {
            c.push(
                path,
                format!(
                    "{} does not end in t5; every workstream is verified, and only a research spike \
                     (variety 15-16) may stop at [t2]",
                    tier_list(tiers)
                ),
            );
            shape_ok = false;
        }
    } else if !tiers.contains(&Tier::T4) {
        c.push(
            path,
            format!(
                "{} has t5 but no t4: there is nothing to verify",
                tier_list(tiers)
            ),
        );
        shape_ok = false;
    }
    if let (true, Some(variety), Some(route)) = (shape_ok, variety, route) {
        let default = route.default_tier_path();
        let lacking: Vec<Tier> = default.iter().copied().filter(|t| !tiers.contains(t)).collect();
        if !lacking.is_empty() && !has_reason {
            c.push(
                path,
                format!(
                    "{} is shallower than the {route} route's default path {} for variety score {} (it lacks {}); \
                     give shallower_path_reason to say why",
                    tier_list(tiers),
                    tier_list(default),
                    variety.score(),
                    lacking.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", "),
                ),
            );
        }
    }
}

fn tier_list(tiers: &[Tier]) -> String {
    format!(
        "[{}]",
        tiers.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
    )
}

fn check_duplicate_ids(c: &mut Checker, drafts: &[WorkstreamDraft]) {
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for draft in drafts {
        if let Some(id) = &draft.id {
            if let Some(first) = seen.get(id.as_str()) {
                c.push(
                    &field_path(&draft.path, "id"),
                    format!("duplicate workstream id {id:?} (also {first})"),
                );
            } else {
                seen.insert(id, &draft.path);
            }
        }
    }
}

fn check_parallelism(c: &mut Checker, obj: &Map<String, Value>, drafts: Option<&[WorkstreamDraft]>) {
    const PATH: &str = "parallelism";
    c.unknown_fields(obj, PATH, PARALLELISM_FIELDS);
    let groups_path = field_path(PATH, "groups");
    let mut groups: Vec<(String, Vec<(String, String)>)> = Vec::new();
    if let Some(map) = c
        .required(obj, PATH, "groups")
        .and_then(|v| c.object(v, &groups_path))
    {
        for (name, members) in map {
            let group_path = field_path(&groups_path, name);
            let Some(items) = c.array(members, &group_path) else {
                continue;
            };
            if items.is_empty() {
                c.push(&group_path, "group lists no workstreams");
            }
            let ids = items
                .iter()
                .enumerate()
                .filter_map(|(k, item)| {
                    let item_path = index_path(&group_path, k);
                    c.text(item, &item_path).map(|id| (id.to_string(), item_path))
                })
                .collect();
            groups.push((name.clone(), ids));
        }
    }
    let sequence_path = field_path(PATH, "sequence");
    let sequence: Option<Vec<String>> = c
        .required(obj, PATH, "sequence")
        .and_then(|v| c.string_list(v, &sequence_path));

    if let Some(sequence) = &sequence {
        if sequence.is_empty() {
            c.push(&sequence_path, "is empty; list the groups in the order they run");
        }
        for (k, name) in sequence.iter().enumerate() {
            if sequence[..k].contains(name) {
                c.push(
                    &index_path(&sequence_path, k),
                    format!("group {name:?} appears more than once"),
                );
            } else if !groups.iter().any(|(g, _)| g == name) {
                c.push(
                    &index_path(&sequence_path, k),
                    format!("{name:?} names no group in parallelism.groups"),
                );
            }
        }
        for (name, _) in &groups {
            if !sequence.contains(name) {
                c.push(
                    &field_path(&groups_path, name),
                    format!("group {name:?} is not in parallelism.sequence, so it would never run"),
                );
            }
        }
    }

    // Membership: each listed id must be a workstream, and each workstream must be in exactly one group.
    let mut group_of: HashMap<&str, &str> = HashMap::new();
    let known_ids: Option<Vec<&str>> =
        drafts.and_then(|ds| ds.iter().map(|d| d.id.as_deref()).collect::<Option<Vec<_>>>());
    for (name, ids) in &groups {
        for (id, item_path) in ids {
            if let Some(known) = &known_ids
                && !known.contains(&id.as_str())
            {
                c.push(item_path, format!("unknown workstream {id:?}"));
            } else if let Some(first) = group_of.get(id.as_str()) {
                c.push(
                    item_path,
                    format!("workstream {id:?} is already in group {first:?}"),
                );
            } else {
                group_of.insert(id, name);
            }
        }
    }
    // Only judged when the groups map could be read; otherwise every workstream would be "in no group".
    if groups.is_empty() {
        return;
    }
    for draft in drafts.unwrap_or_default() {
        let Some(id) = &draft.id else { continue };
        match (group_of.get(id.as_str()), &draft.parallel_group) {
            (None, _) => c.push(
                &draft.path,
                format!("workstream {id:?} is in no group of parallelism.groups"),
            ),
            (Some(group), Some(declared)) if group != declared => c.push(
                &field_path(&draft.path, "parallel_group"),
                format!("{declared:?}, but parallelism.groups puts {id:?} in group {group:?}"),
            ),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
