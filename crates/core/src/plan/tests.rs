//! Tests for plan validation: one valid plan, then each rule broken on its own, then several at once.

use serde_json::{Value, json};

use super::*;

/// The seed's example plan, extended with variety and contracts, plus a second group.
fn valid() -> Value {
    json!({
        "run_id": "0190f0a0-1234-7abc-8def-0123456789ab",
        "goal_anchor": "Add webhook ingest with a retry queue",
        "complexity": "high",
        "retry_budget_multiplier": 2,
        "workstreams": [
            {
                "id": "ws-backend-api",
                "name": "Backend API",
                "domain": "backend",
                "tier_path": ["t2", "t3", "t4", "t5"],
                "parallel_group": "A",
                "t2_specialist": "engineering-software-architect",
                "notes": "Focus on webhook ingest and retry queue",
                "variety": {"novelty": 3, "scope": 3, "uncertainty": 3, "risk": 3},
                "contract": {"done_when": "webhooks are queued and retried", "verify": "cargo test -p api",
                             "failure_modes": ["retries forever"]}
            },
            {
                "id": "ws-frontend",
                "name": "Frontend",
                "domain": "frontend",
                "tier_path": ["t3", "t4", "t5"],
                "parallel_group": "A",
                "variety": {"novelty": 2, "scope": 2, "uncertainty": 2, "risk": 2},
                "contract": {"done_when": "the settings page lists webhooks"}
            },
            {
                "id": "ws-infra",
                "name": "Infra",
                "domain": "infra",
                "tier_path": ["t4", "t5"],
                "parallel_group": "B",
                "specialist": "devops-automator",
                "variety": {"novelty": 1, "scope": 1, "uncertainty": 2, "risk": 1},
                "contract": {"done_when": "the queue is deployed"}
            }
        ],
        "parallelism": {
            "groups": {"A": ["ws-backend-api", "ws-frontend"], "B": ["ws-infra"]},
            "sequence": ["A", "B"]
        },
        "self_critique_summary": "Split infra out so it can follow the API."
    })
}

/// Validates and returns the problems as `path: message` lines.
fn problems(plan: &Value) -> Vec<String> {
    match validate_plan(plan) {
        Ok(_) => vec![],
        Err(e) => e.problems.iter().map(ToString::to_string).collect(),
    }
}

/// Asserts validation fails with exactly one problem, at `path`, whose message contains `needle`.
fn assert_one(plan: &Value, path: &str, needle: &str) {
    let errors = validate_plan(plan).unwrap_err();
    assert_eq!(errors.problems.len(), 1, "{errors}");
    let problem = &errors.problems[0];
    assert_eq!(problem.path, path, "{errors}");
    assert!(
        problem.message.contains(needle),
        "{problem} does not mention {needle:?}"
    );
}

#[test]
fn the_valid_plan_parses_with_the_seed_alias() {
    let plan = validate_plan(&valid()).unwrap();
    assert_eq!(plan.complexity, Complexity::High);
    assert_eq!(plan.retry_budget_multiplier, 2);
    assert_eq!(
        plan.workstreams[0].specialist.as_deref(),
        Some("engineering-software-architect")
    );
    assert_eq!(
        plan.workstreams[2].specialist.as_deref(),
        Some("devops-automator")
    );
    assert_eq!(plan.workstreams[1].specialist, None);
    assert_eq!(
        plan.workstreams[0].tier_path,
        vec![Tier::T2, Tier::T3, Tier::T4, Tier::T5]
    );
    assert_eq!(plan.workstreams[0].route(), Route::PlanMode);
    assert_eq!(
        plan.workstreams[0].contract.verify.as_deref(),
        Some("cargo test -p api")
    );
    // Serialised back under the canonical name, and read again to the same plan.
    let back = serde_json::to_value(&plan).unwrap();
    assert_eq!(
        back["workstreams"][0]["specialist"],
        "engineering-software-architect"
    );
    assert_eq!(validate_plan(&back).unwrap(), plan);
}

#[test]
fn workstreams_in_order_follows_the_sequence() {
    let mut v = valid();
    v["parallelism"]["sequence"] = json!(["B", "A"]);
    let plan = validate_plan(&v).unwrap();
    let ids: Vec<&str> = plan
        .workstreams_in_order()
        .iter()
        .map(|w| w.id.as_str())
        .collect();
    assert_eq!(ids, ["ws-infra", "ws-backend-api", "ws-frontend"]);
    let stages = plan.stages();
    assert_eq!(stages.len(), 2);
    assert_eq!(stages[0].group, "B");
    assert_eq!(stages[1].workstreams, ["ws-backend-api", "ws-frontend"]);
}

#[test]
fn the_schema_names_every_field() {
    let schema = plan_json_schema();
    let text = schema.to_string();
    for field in [
        "run_id",
        "goal_anchor",
        "retry_budget_multiplier",
        "tier_path",
        "parallel_group",
        "specialist",
        "shallower_path_reason",
        "done_when",
        "novelty",
        "self_critique_summary",
    ] {
        assert!(text.contains(field), "schema lacks {field}");
    }
    assert_eq!(schema["title"], "Plan");
}

#[test]
fn several_problems_are_reported_at_once() {
    let mut v = valid();
    v["complexity"] = json!("extreme");
    v["retry_budget_multiplier"] = json!(0);
    v["workstreams"][2]["tier_path"][0] = json!("t6");
    v["workstreams"][1]["id"] = json!("ws-backend-api");
    v["workstreams"][0]["variety"]["risk"] = json!(true);
    v["parallelism"]["sequence"] = json!(["A", "C"]);
    let got = problems(&v);
    let expected = [
        "complexity: expected \"high\", \"medium\" or \"low\", found \"extreme\"",
        "retry_budget_multiplier: must be at least 1 (1 for simple work, 2 for complex), found 0",
        "workstreams[0].variety.risk: variety dimension `risk` must be an integer from 1 to 4, found true",
        "workstreams[2].tier_path[0]: unknown tier \"t6\" (expected one of t1, t2, t3, t4, t5)",
        "workstreams[1].id: duplicate workstream id \"ws-backend-api\" (also workstreams[0])",
        "parallelism.sequence[1]: \"C\" names no group in parallelism.groups",
        "parallelism.groups.B: group \"B\" is not in parallelism.sequence, so it would never run",
    ];
    for line in expected {
        assert!(
            got.iter().any(|g| g == line),
            "missing {line:?} in:\n{}",
            got.join("\n")
        );
    }
    // The Display is one problem per line.
    let text = validate_plan(&v).unwrap_err().to_string();
    assert_eq!(text.lines().count(), got.len());
}

#[test]
fn the_document_must_be_an_object() {
    assert_eq!(problems(&json!([1])), ["expected an object, found an array"]);
}

#[test]
fn missing_and_wrong_typed_fields() {
    let mut v = valid();
    v.as_object_mut().unwrap().remove("goal_anchor");
    assert_one(&v, "goal_anchor", "missing required field");

    let mut v = valid();
    v["workstreams"][1].as_object_mut().unwrap().remove("contract");
    assert_one(&v, "workstreams[1].contract", "missing required field");

    let mut v = valid();
    v["workstreams"][0]["name"] = json!(7);
    assert_one(&v, "workstreams[0].name", "expected a string, found a number (7)");

    let mut v = valid();
    v["workstreams"][0]["domain"] = json!("  ");
    assert_one(&v, "workstreams[0].domain", "must not be empty");

    let mut v = valid();
    v["workstreams"] = json!({});
    assert_one(&v, "workstreams", "expected an array, found an object");

    let mut v = valid();
    v["run_id"] = json!("run-1");
    assert_one(&v, "run_id", "expected a UUID");

    let mut v = valid();
    v["workstreams"][0]["contract"]["failure_modes"] = json!(["ok", 3]);
    assert_one(
        &v,
        "workstreams[0].contract.failure_modes[1]",
        "expected a string",
    );

    let mut v = valid();
    v["workstreams"][0]["contract"]["done_when"] = json!("");
    assert_one(&v, "workstreams[0].contract.done_when", "must not be empty");

    let mut v = valid();
    v["workstreams"][0]["tier_paths"] = json!(["t4"]);
    assert_one(&v, "workstreams[0].tier_paths", "unknown field");

    let mut v = valid();
    v["workstreams"][0]["specialist"] = json!("other");
    assert_one(&v, "workstreams[0]", "not both");

    let mut v = valid();
    v["workstreams"] = json!([]);
    let got = problems(&v);
    assert!(
        got.contains(&"workstreams: a plan needs at least one workstream".to_string()),
        "{got:?}"
    );
}

#[test]
fn retry_multiplier_must_be_a_whole_number_of_at_least_one() {
    for (bad, needle) in [
        (json!(0), "at least 1"),
        (json!(-2), "at least 1"),
        (json!(1.5), "expected a whole number"),
        (
            json!(true),
            "expected a whole number of at least 1, found a boolean (true)",
        ),
        (json!("2"), "expected a whole number"),
        (json!(5_000_000_000_i64), "too large"),
    ] {
        let mut v = valid();
        v["retry_budget_multiplier"] = bad;
        assert_one(&v, "retry_budget_multiplier", needle);
    }
    let mut v = valid();
    v["retry_budget_multiplier"] = json!(1);
    assert!(validate_plan(&v).is_ok());
}

#[test]
fn unknown_tiers_are_named_with_their_index() {
    let mut v = valid();
    v["workstreams"][2]["tier_path"] = json!(["t4", "T5"]);
    assert_one(&v, "workstreams[2].tier_path[1]", "unknown tier \"T5\"");
    v["workstreams"][2]["tier_path"] = json!(["t4", 5]);
    assert_one(
        &v,
        "workstreams[2].tier_path[1]",
        "expected a string, found a number (5)",
    );
}

#[test]
fn duplicate_workstream_ids() {
    let mut v = valid();
    v["workstreams"][2]["id"] = json!("ws-frontend");
    let got = problems(&v);
    assert!(
        got.contains(
            &"workstreams[2].id: duplicate workstream id \"ws-frontend\" (also workstreams[1])".into()
        ),
        "{got:?}"
    );
}

#[test]
fn workstream_ids_are_branch_safe() {
    let mut v = valid();
    v["workstreams"][2]["id"] = json!("ws infra");
    v["parallelism"]["groups"]["B"] = json!(["ws infra"]);
    assert_one(&v, "workstreams[2].id", "may contain only letters");
}

#[test]
fn tier_path_must_not_be_empty() {
    let mut v = valid();
    v["workstreams"][2]["tier_path"] = json!([]);
    assert_one(&v, "workstreams[2].tier_path", "is empty");
}

#[test]
fn tier_path_must_end_in_t5() {
    let mut v = valid();
    v["workstreams"][1]["tier_path"] = json!(["t3", "t4"]);
    assert_one(&v, "workstreams[1].tier_path", "[t3, t4] does not end in t5");
}

#[test]
fn tier_path_needs_t4_before_t5() {
    let mut v = valid();
    v["workstreams"][1]["tier_path"] = json!(["t3", "t5"]);
    assert_one(&v, "workstreams[1].tier_path", "nothing to verify");
}

#[test]
fn tier_path_must_go_downward() {
    let mut v = valid();
    v["workstreams"][0]["tier_path"] = json!(["t2", "t4", "t3", "t5"]);
    assert_one(
        &v,
        "workstreams[0].tier_path[2]",
        "t3 after t4: tiers must go downward",
    );
    v["workstreams"][0]["tier_path"] = json!(["t2", "t3", "t4", "t4", "t5"]);
    assert_one(&v, "workstreams[0].tier_path[3]", "t4 after t4");
}

#[test]
fn t1_is_not_a_workstream_tier() {
    let mut v = valid();
    v["workstreams"][0]["tier_path"] = json!(["t1", "t2", "t3", "t4", "t5"]);
    assert_one(&v, "workstreams[0].tier_path[0]", "t1 is the planner");
}

#[test]
fn a_research_spike_may_stop_at_t2_and_nothing_else_may() {
    let mut v = valid();
    v["workstreams"][0]["variety"] = json!({"novelty": 4, "scope": 4, "uncertainty": 4, "risk": 3});
    v["workstreams"][0]["tier_path"] = json!(["t2"]);
    assert!(validate_plan(&v).is_ok(), "{:?}", problems(&v));
    v["workstreams"][0]["variety"] = json!({"novelty": 3, "scope": 3, "uncertainty": 4, "risk": 4});
    assert_one(&v, "workstreams[0].tier_path", "only a research spike");
}

#[test]
fn a_shallower_path_needs_a_reason() {
    // Variety 8 routes to orchestrate, whose default path is [t3, t4, t5].
    let mut v = valid();
    v["workstreams"][1]["tier_path"] = json!(["t4", "t5"]);
    assert_one(
        &v,
        "workstreams[1].tier_path",
        "[t4, t5] is shallower than the orchestrate route's default path [t3, t4, t5] for variety score 8 \
         (it lacks t3); give shallower_path_reason",
    );
    v["workstreams"][1]["shallower_path_reason"] = json!(" ");
    assert_one(&v, "workstreams[1].tier_path", "shallower");
    v["workstreams"][1]["shallower_path_reason"] = json!("a one-file change the T3 would only relay");
    assert!(validate_plan(&v).is_ok(), "{:?}", problems(&v));
    // Deeper than the default is always fine.
    let mut v = valid();
    v["workstreams"][2]["tier_path"] = json!(["t2", "t3", "t4", "t5"]);
    assert!(validate_plan(&v).is_ok(), "{:?}", problems(&v));
}

#[test]
fn variety_dimensions_are_checked_and_named() {
    for (bad, needle) in [
        (json!(true), "`scope` must be an integer from 1 to 4, found true"),
        (json!(2.5), "`scope` must be an integer from 1 to 4, found 2.5"),
        (json!("2"), "`scope` must be an integer from 1 to 4, found \"2\""),
        (json!(5), "`scope` must be from 1 to 4, found 5"),
        (json!(0), "`scope` must be from 1 to 4, found 0"),
    ] {
        let mut v = valid();
        v["workstreams"][0]["variety"]["scope"] = bad;
        assert_one(&v, "workstreams[0].variety.scope", needle);
    }
    let mut v = valid();
    v["workstreams"][0]["variety"]
        .as_object_mut()
        .unwrap()
        .remove("risk");
    assert_one(
        &v,
        "workstreams[0].variety.risk",
        "missing variety dimension `risk`",
    );
    let mut v = valid();
    v["workstreams"][0]["variety"] = json!(12);
    assert_one(
        &v,
        "workstreams[0].variety",
        "expected an object {\"novelty\": 1-4",
    );
    let mut v = valid();
    v["workstreams"][0]["variety"]["score"] = json!(12);
    assert_one(&v, "workstreams[0].variety.score", "unknown field");
}

#[test]
fn every_group_must_be_in_the_sequence() {
    let mut v = valid();
    v["parallelism"]["sequence"] = json!(["A"]);
    assert_one(&v, "parallelism.groups.B", "not in parallelism.sequence");
}

#[test]
fn every_sequence_entry_must_name_a_group_once() {
    let mut v = valid();
    v["parallelism"]["sequence"] = json!(["A", "B", "Z"]);
    assert_one(&v, "parallelism.sequence[2]", "\"Z\" names no group");
    v["parallelism"]["sequence"] = json!(["A", "B", "A"]);
    assert_one(&v, "parallelism.sequence[2]", "appears more than once");
}

#[test]
fn every_workstream_must_be_in_exactly_one_group() {
    let mut v = valid();
    v["parallelism"]["groups"]["B"] = json!(["ws-infra", "ws-frontend"]);
    assert_one(
        &v,
        "parallelism.groups.B[1]",
        "\"ws-frontend\" is already in group \"A\"",
    );

    let mut v = valid();
    v["parallelism"]["groups"]["A"] = json!(["ws-backend-api"]);
    assert_one(&v, "workstreams[1]", "\"ws-frontend\" is in no group");
}

#[test]
fn groups_must_list_known_workstreams() {
    let mut v = valid();
    v["parallelism"]["groups"]["B"] = json!(["ws-infra", "ws-ghost"]);
    assert_one(&v, "parallelism.groups.B[1]", "unknown workstream \"ws-ghost\"");
    v["parallelism"]["groups"]["C"] = json!([]);
    v["parallelism"]["sequence"] = json!(["A", "B", "C"]);
    let got = problems(&v);
    assert!(
        got.contains(&"parallelism.groups.C: group lists no workstreams".into()),
        "{got:?}"
    );
}

#[test]
fn parallel_group_must_agree_with_the_groups_map() {
    let mut v = valid();
    v["workstreams"][2]["parallel_group"] = json!("A");
    assert_one(
        &v,
        "workstreams[2].parallel_group",
        "\"A\", but parallelism.groups puts \"ws-infra\" in group \"B\"",
    );
}

#[test]
fn a_plan_with_an_unreadable_groups_map_does_not_cascade() {
    let mut v = valid();
    v["parallelism"]["groups"] = json!(["A", "B"]);
    let got = problems(&v);
    assert_eq!(
        got,
        [
            "parallelism.groups: expected an object, found an array",
            "parallelism.sequence[0]: \"A\" names no group in parallelism.groups",
            "parallelism.sequence[1]: \"B\" names no group in parallelism.groups",
        ]
    );
}

#[test]
fn the_verbatim_seed_example_fails_only_where_agency_asks_for_more() {
    // Seed 001's example as printed: a placeholder run id, no variety or contract, and groups naming
    // workstreams the example leaves out.
    let seed = json!({
      "run_id": "uuid",
      "goal_anchor": "Original goal — immutable, propagated to every downstream brief",
      "complexity": "high",
      "retry_budget_multiplier": 2,
      "workstreams": [
        {
          "id": "ws-backend-api",
          "name": "Backend API",
          "domain": "backend",
          "tier_path": ["t2", "t3", "t4", "t5"],
          "parallel_group": "A",
          "t2_specialist": "agents/engineering/engineering-software-architect.md",
          "notes": "Focus on webhook ingest and retry queue"
        }
      ],
      "parallelism": {
        "groups": {
          "A": ["ws-backend-api", "ws-frontend"],
          "B": ["ws-infra"]
        },
        "sequence": ["A", "B"]
      },
      "self_critique_summary": "Brief plain-text summary of what T1 identified and amended in its self-critique pass"
    });
    assert_eq!(
        problems(&seed),
        [
            "run_id: expected a UUID, found \"uuid\"",
            "workstreams[0].variety: missing required field",
            "workstreams[0].contract: missing required field",
            "parallelism.groups.A[1]: unknown workstream \"ws-frontend\"",
            "parallelism.groups.B[0]: unknown workstream \"ws-infra\"",
        ]
    );
}

/// An independent statement of the tier-path rules, to check the validator against.
fn tier_path_is_valid(path: &[Tier], score: u8, has_reason: bool) -> bool {
    let Some(&last) = path.last() else { return false };
    let downward = path.windows(2).all(|w| w[0] < w[1]);
    if path.contains(&Tier::T1) || !downward {
        return false;
    }
    let shape = if last == Tier::T5 {
        path.contains(&Tier::T4)
    } else {
        path == [Tier::T2] && score >= 15
    };
    let default = route_for_score(score).default_tier_path();
    shape && (has_reason || default.iter().all(|t| path.contains(t)))
}

proptest::proptest! {
    #[test]
    fn tier_path_rules_match_their_statement(
        path in proptest::collection::vec(proptest::sample::select(Tier::ALL.to_vec()), 0..6),
        dims in proptest::array::uniform4(1u8..=4),
        has_reason in proptest::bool::ANY,
    ) {
        let mut v = valid();
        v["workstreams"][2]["tier_path"] = serde_json::to_value(&path).unwrap();
        v["workstreams"][2]["variety"] =
            json!({"novelty": dims[0], "scope": dims[1], "uncertainty": dims[2], "risk": dims[3]});
        if has_reason {
            v["workstreams"][2]["shallower_path_reason"] = json!("kept small on purpose");
        }
        let score = dims.iter().sum();
        let got = validate_plan(&v);
        proptest::prop_assert_eq!(got.is_ok(), tier_path_is_valid(&path, score, has_reason), "{:?}", got.err());
    }

    #[test]
    fn arbitrary_json_never_panics(value in arbitrary_json()) {
        let _ = validate_plan(&value);
        let _ = crate::brief::validate_new_brief(&value);
    }
}

fn arbitrary_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-10.0f64..10.0).prop_map(|f| json!(f)),
        "[a-z0-9 ]{0,6}".prop_map(Value::String),
        prop::sample::select(vec!["t2", "t4", "t5", "A", "ws-a", "run_id", "variety"]).prop_map(|s| json!(s)),
    ];
    let keys = prop::sample::select(vec![
        "run_id",
        "workstreams",
        "parallelism",
        "groups",
        "sequence",
        "tier_path",
        "variety",
        "contract",
        "id",
        "tier",
        "risk",
        "done_when",
    ]);
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(keys.clone().prop_map(str::to_string), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
