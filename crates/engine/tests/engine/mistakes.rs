//! A corpus of model mistakes on whole runs of the built-in agent: a correctable mistake is fixed within
//! the same brief (no new attempt, the model calls it costs pinned), a hopeless one fails its brief with
//! the reason whole.

use agency_core::event::EventKind;
use agency_core::{BriefStatus, RunId, Tier};
use agency_store::RunStatus;

use crate::support::{Project, config};

/// The simple profile's script (T1 → T4 → T5 → accept) with the planner's and the implementer's replies
/// replaced by `planner` and `implementer` (YAML rule bodies, indented four spaces).
fn simple_with(planner: &str, implementer: &str) -> String {
    format!(
        r#"
replies:
  - role: judge
    brief: run/t1/accept
    reply:
      text: "every check passes\nVERDICT: accept\nmissing: none"
  - role: planner
{planner}
  - role: implementer
    brief: ws-add/t4/fix-add
{implementer}
  - role: judge
    reply:
      text: "Looks right.\nVERDICT: accept\nmissing: none"
"#
    )
}

/// The planner's `report_result`, its workstream on `tier_path`.
fn plan_report(tier_path: &str) -> String {
    format!(
        r#"tool_calls:
          - name: report_result
            input:
              status: done
              summary: "One trivial workstream: fix add.sh."
              output:
                complexity: low
                retry_budget_multiplier: 1
                workstreams:
                  - id: ws-add
                    name: fix-add
                    domain: backend
                    tier_path: {tier_path}
                    parallel_group: A
                    notes: "add.sh subtracts; make it add."
                    variety: {{ novelty: 1, scope: 1, uncertainty: 1, risk: 1 }}
                    contract:
                      done_when: "sh test_add.sh passes"
                      verify: "sh test_add.sh"
                parallelism:
                  groups: {{ A: [ws-add] }}
                  sequence: [A]
                self_critique_summary: "One operator in one file.""#
    )
}

const GOOD_IMPLEMENTER: &str = r#"    replies:
      - tool_calls:
          - name: edit_file
            input: { path: add.sh, old_string: "echo $(($1 - $2))", new_string: "echo $(($1 + $2))" }
          - name: report_result
            input: { status: done, summary: "add.sh adds.", evidence: [{ path: add.sh }] }"#;

/// The model calls made for the briefs of `tier` titled `title`, every attempt counted.
fn model_calls(project: &Project, run: RunId, tier: Tier, title: &str) -> usize {
    let briefs = project.briefs(run);
    project
        .events_of(run, EventKind::Usage)
        .iter()
        .filter(|e| {
            briefs
                .iter()
                .any(|b| Some(b.id) == e.brief && b.tier == tier && b.title == title)
        })
        .count()
}

/// The implementer's reply that edits add.sh, then ends its turn with prose, then reports once reminded.
const PROSE_IMPLEMENTER: &str = r#"    replies:
      - tool_calls:
          - name: edit_file
            input: { path: add.sh, old_string: "echo $(($1 - $2))", new_string: "echo $(($1 + $2))" }
      - text: I think I am done.
      - tool_calls:
          - name: report_result
            input: { status: done, summary: "add.sh adds.", evidence: [{ path: add.sh }] }"#;

/// Two correctable mistakes in one run (they differ only in which agent makes which): the planner's report
/// misses the planner schema once, and the implementer ends a turn with prose once. Each is fixed within its
/// brief, for one extra model call each.
#[tokio::test]
async fn a_plan_with_a_schema_error_and_an_implementer_ending_with_prose_are_fixed_in_their_briefs() {
    let project = Project::new();
    let planner = format!(
        "    replies:\n      - {}\n      - {}",
        plan_report("[t4]"),
        plan_report("[t4, t5]")
    );
    let (run, outcome) = project
        .succeed(&simple_with(&planner, PROSE_IMPLEMENTER), config())
        .await;
    project.assert_fixed(&outcome.branch.unwrap(), &["add.sh"]);
    assert_eq!(
        project.spawns_of(run.id, Tier::T1, "plan"),
        1,
        "no new brief:\n{}",
        project.tree(run.id)
    );
    assert_eq!(
        model_calls(&project, run.id, Tier::T1, "plan"),
        2,
        "one extra model call"
    );
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-add"), 1);
    assert_eq!(
        model_calls(&project, run.id, Tier::T4, "fix-add"),
        3,
        "the edit, the prose, the report after one reminder"
    );
    assert!(project.events_of(run.id, EventKind::Failed).is_empty());
}

#[tokio::test]
async fn a_plan_that_stays_wrong_fails_with_every_problem_whole() {
    let project = Project::new();
    let mut config = config();
    config.runner.repair_attempts = 1;
    // Wrong in two ways, so the reason has more than one problem to keep.
    let wrong = plan_report("[t4]").replace("complexity: low", "complexity: trivial");
    let planner = format!("    reply:\n      {wrong}");
    let (run, outcome) = project
        .run_to_end(&simple_with(&planner, GOOD_IMPLEMENTER), config)
        .await;
    assert_ne!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let failed = project.events_of(run.id, EventKind::Failed);
    let reason = failed[0].payload["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "the agent did not fix its report in 1 repair in the same conversation; its output still does \
             not match the planner schema:\n"
        ),
        "{reason}"
    );
    let problems: Vec<&str> = reason.lines().skip(1).collect();
    assert_eq!(problems.len(), 2, "{reason}");
    assert!(problems.iter().any(|p| p.starts_with("complexity")), "{reason}");
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("workstreams[0].tier_path: [t4] does not end in t5")),
        "{reason}"
    );
    let plans: Vec<_> = project
        .briefs(run.id)
        .into_iter()
        .filter(|b| b.tier == Tier::T1 && b.title == "plan")
        .collect();
    assert!(
        plans
            .iter()
            .all(|b| b.status == BriefStatus::Failed || b.status == BriefStatus::Escalated)
    );
    assert_eq!(
        model_calls(&project, run.id, Tier::T1, "plan"),
        plans.len() * 2,
        "each attempt: the report and one repair"
    );
}
