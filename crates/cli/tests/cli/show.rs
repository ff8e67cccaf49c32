//! `agency show` over a real scripted run: the plan read at its gate while `agency run` waits there, then the
//! failing slice's diff, verify run, sign-off and the run's cost once it has finished.

use std::time::Duration;

use agency_core::gate::GateKind;
use agency_core::{BriefStatus, RunId, Tier};
use agency_store::{Blackboard, SqliteBlackboard};

use crate::demo::normalise_run;
use crate::support::{CALCULATOR_GOAL, Repo, finish};

/// The partial-verdict script (fix-mul's first attempt is rejected by its judge), with failure modes and a
/// protected path in the plan's contract.
fn script() -> String {
    include_str!("../../../engine/tests/scripts/partial.yaml").replacen(
        "verify: \"sh test_arith.sh\"",
        "verify: \"sh test_arith.sh\"\n                    failure_modes: [\"a debug marker left in mul.sh\"]\n                    may_edit: [\"test_arith.sh\"]",
        1,
    )
}

/// A run of [`script`] started by `agency run` without `--auto-approve`, waiting at its plan gate.
pub(crate) fn run_waiting_at_the_plan_gate() -> (Repo, crate::support::Running, SqliteBlackboard, RunId) {
    let (repo, script) = Repo::calculator(&script());
    repo.edit_team(&[("  concurrency: 4 ", "  concurrency: 1 ")]);
    let runner = repo.spawn(
        &["run", CALCULATOR_GOAL, "--script", script.to_str().unwrap()],
        &[],
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    (repo, runner, store, run)
}

/// Approves every gate the run opens until its runner ends; returns the runner's exit code and output.
pub(crate) fn approve_to_the_end(
    repo: &Repo,
    runner: crate::support::Running,
    store: &SqliteBlackboard,
    run: RunId,
) -> (Option<i32>, String) {
    let mut runner = runner;
    while runner.try_wait().unwrap().is_none() {
        if store
            .pending_gates(Some(run))
            .unwrap()
            .iter()
            .any(|g| g.kind != GateKind::Pause)
        {
            repo.agency(&["approve", &run.short()]).success();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    finish(runner, Duration::from_secs(60))
}

#[test]
fn show_reads_the_plan_at_its_gate_and_a_finished_runs_slices_and_cost() {
    let (repo, runner, store, run) = run_waiting_at_the_plan_gate();
    let run8 = run.short();

    let dir = repo.path().to_str().unwrap();
    let plan = repo.agency(&["show", &run8, "plan"]).success().stdout();
    insta::assert_snapshot!("plan_at_its_gate", normalise_run(&plan, dir));
    // The static tree points at it, as the seed's `[view workplan]` line.
    let tree = repo.agency(&["inspect", &run8]).success().stdout();
    insta::assert_snapshot!("inspect_at_the_plan_gate", normalise_run(&tree, dir));
    // The plan is the default; --json carries the same contract for scripts.
    assert_eq!(repo.agency(&["show", &run8]).success().stdout(), plan);
    let json: serde_json::Value =
        serde_json::from_str(&repo.agency(&["show", &run8, "plan", "--json"]).success().stdout()).unwrap();
    assert_eq!(
        json["plan"]["workstreams"][0]["contract"]["failure_modes"][0],
        "a debug marker left in mul.sh"
    );
    assert_eq!(json["gate"]["status"], "pending");
    assert_eq!(json["decide"][1], format!("agency approve {run8}"));

    let (code, output) = approve_to_the_end(&repo, runner, &store, run);
    assert_eq!(code, Some(0), "{output}");
    // The waiting runner followed the plan gate's line with how to review and decide it.
    let gate_at = output
        .find("GATE APPROVAL      ⏸  Waiting on approval before T3 spawns")
        .expect(&output);
    let after_gate: Vec<&str> = output[gate_at..].lines().skip(1).take(2).map(str::trim).collect();
    assert_eq!(
        after_gate,
        [
            format!("review:  agency show {run8} plan"),
            format!("decide:  agency approve {run8}   or   agency reject {run8} --reason \"…\""),
        ],
        "{output}"
    );
    // The live log of the run says why the slice failed, on its FAIL line.
    assert!(
        output.contains("T4   FAIL          fix-mul ✗  (retry 1/2) — The sign-off rejected this slice. Missing: - mul.sh still carries the LEFTOVER-DEBUG marker"),
        "{output}"
    );

    let briefs = store.list_briefs(run).unwrap();
    let first_mul = briefs
        .iter()
        .find(|b| b.tier == Tier::T4 && b.title == "fix-mul" && b.attempt == 0)
        .unwrap();
    assert_eq!(first_mul.status, BriefStatus::Failed);
    let id = first_mul.id.short();

    let diff = repo.agency(&["show", &run8, "diff", &id]).success().stdout();
    assert!(!diff.contains('\x1b'), "no colour into a pipe:\n{diff}");
    insta::assert_snapshot!("failed_slice_diff", normalise_run(&diff, dir));

    let verify = repo.agency(&["show", &run8, "verify", &id]).success().stdout();
    insta::assert_snapshot!("failed_slice_verify", normalise_run(&verify, dir));

    let judge = repo.agency(&["show", &run8, "judge", &id]).success().stdout();
    // The verdict as printed; the transcript that follows quotes the judge's whole call (with its ids and
    // latency), so only its being there is checked.
    let (verdict, transcript) = judge.split_once("  transcript:\n").expect(&judge);
    insta::assert_snapshot!("failed_slice_judge", normalise_run(verdict, dir));
    assert!(transcript.contains("VERDICT: reject"), "{transcript}");

    let whole = repo.agency(&["show", &run8, "brief", &id]).success().stdout();
    insta::assert_snapshot!("failed_slice_brief", normalise_run(&whole, dir));

    let integration = repo
        .agency(&["show", &run8, "diff", "integration"])
        .success()
        .stdout();
    assert!(
        integration.contains("M add.sh") && integration.contains("M mul.sh"),
        "{integration}"
    );

    let cost = repo.agency(&["show", &run8, "cost"]).success().stdout();
    insta::assert_snapshot!("finished_run_cost", normalise_run(&cost, dir));
}

#[test]
fn show_says_what_it_cannot_show_with_its_exit_code() {
    let (repo, _runner, store, run) = run_waiting_at_the_plan_gate();
    let run8 = run.short();
    let unknown = repo.agency(&["show", &run8, "diff", "ws-nope"]).fails_with(4);
    assert!(
        unknown.stderr().contains("`ws-nope` names no diff of run"),
        "{}",
        unknown.stderr()
    );
    let planner = store.list_briefs(run).unwrap()[0].id.short();
    let no_signoff = repo.agency(&["show", &run8, "judge", &planner]).fails_with(5);
    assert!(
        no_signoff.stderr().contains("no sign-off recorded"),
        "{}",
        no_signoff.stderr()
    );
    let no_slice = repo.agency(&["show", &run8, "diff", &planner]).fails_with(5);
    assert!(
        no_slice.stderr().contains("has no slice diff"),
        "{}",
        no_slice.stderr()
    );
    repo.agency(&["show", "ffffffff", "plan"]).fails_with(4);
}

/// `show <run> architecture|boundaries|assumptions <ws>` print T2's records through the renderer the terminal
/// `inspect` and the dashboard use, with an agent's escape sequence made visible; `--json` gives the parts
/// each view shows; a workstream the run does not have, or a record T2 has not written, is said so.
#[test]
fn show_prints_t2s_views_of_a_workstream() {
    use agency_core::brief::Brief;
    use agency_core::teachback::TeachbackState;
    use agency_review::views::{View, render};
    use agency_store::{NewArtifact, NewRun};

    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store
        .create_run(NewRun::new("Build the parser", repo.path().display().to_string()))
        .unwrap()
        .id;
    let run8 = run.short();
    for (workstream, tier) in [("ws-parse", Tier::T2), ("ws-docs", Tier::T4)] {
        store
            .insert_brief(&Brief {
                id: agency_core::BriefId::new(),
                run,
                parent: None,
                tier,
                workstream: workstream.into(),
                // An agent's title may carry an escape sequence.
                title: "design\u{1b}[31m".into(),
                personality: None,
                goal_anchor: "Build the parser".into(),
                instructions: "Design it.".into(),
                inputs: vec![],
                variety: None,
                contract: None,
                retry_budget: 1,
                attempt: 0,
                depends_on: vec![],
                branch: None,
                worktree: None,
                status: BriefStatus::Done,
                teachback: TeachbackState::Active,
                claimed_by: None,
                created_at: chrono::Utc::now(),
            })
            .unwrap();
    }
    let boundaries = serde_json::json!({
        "boundaries": [{ "domain": "parser", "owns": ["src/parse/"], "excludes": ["src/cli/"] }],
        "shared_assumptions": ["UTF-8 input only"]
    })
    .to_string();
    let architecture = "# Parser\nOne pass, no backtracking.\u{1b}[2J\n";
    for (name, text) in [
        ("boundaries/ws-parse", boundaries.as_str()),
        ("architecture/ws-parse", architecture),
    ] {
        store
            .put_artifact(NewArtifact::new(
                run,
                name,
                "text/plain",
                text.as_bytes().to_vec(),
            ))
            .unwrap();
    }

    let shown = repo
        .agency(&["show", &run8, "architecture", "ws-parse"])
        .success()
        .stdout();
    assert_eq!(
        shown,
        "Canonical architecture of ws-parse (architecture/ws-parse)\n\n# Parser\nOne pass, no backtracking.^[[2J\n"
    );
    assert!(!shown.contains('\u{1b}'));
    let bounds = repo
        .agency(&["show", &run8, "boundaries", "ws-parse"])
        .success()
        .stdout();
    assert_eq!(
        bounds,
        format!(
            "{}\n{}",
            render(View::Boundaries, "ws-parse", Some(&boundaries)),
            render(View::Assumptions, "ws-parse", Some(&boundaries))
        )
    );
    assert!(
        bounds.contains("parser\n  owns      src/parse/\n  excludes  src/cli/"),
        "{bounds}"
    );
    assert!(bounds.contains("- UTF-8 input only"), "{bounds}");
    let assumptions = repo
        .agency(&["show", &run8, "assumptions", "ws-parse"])
        .success()
        .stdout();
    assert_eq!(
        assumptions,
        "Shared assumptions of ws-parse (boundaries/ws-parse)\n\n- UTF-8 input only\n"
    );

    let json: serde_json::Value = serde_json::from_str(
        &repo
            .agency(&["show", &run8, "boundaries", "ws-parse", "--json"])
            .success()
            .stdout(),
    )
    .unwrap();
    assert_eq!(json["views"][0]["view"], "boundaries");
    assert_eq!(json["views"][0]["record"][0]["owns"][0], "src/parse/");
    assert_eq!(json["views"][1]["record"][0], "UTF-8 input only");
    let json: serde_json::Value = serde_json::from_str(
        &repo
            .agency(&["show", &run8, "architecture", "ws-parse", "--json"])
            .success()
            .stdout(),
    )
    .unwrap();
    assert_eq!(json["views"][0]["record"], architecture);

    // The static tree lists the records T2 wrote, each with the command that prints it.
    let tree = repo.agency(&["inspect", &run8]).success().stdout();
    let tier = repo
        .agency(&["inspect", &run8, "--tier", "t4"])
        .success()
        .stdout();
    for printed in [&tree, &tier] {
        assert!(
            printed.contains("design^[[31m") && !printed.contains('\u{1b}'),
            "{printed}"
        );
    }
    for view in [
        "domain boundaries] ",
        "shared assumptions] ",
        "canonical architecture] ",
    ] {
        assert_eq!(tree.matches(view).count(), 1, "{tree}");
    }
    assert!(
        tree.contains(&format!(
            "[view canonical architecture]  agency show {run8} architecture ws-parse"
        )) && tree.contains(&format!(
            "[view domain boundaries]  agency show {run8} boundaries ws-parse"
        )),
        "{tree}"
    );

    let unknown = repo
        .agency(&["show", &run8, "architecture", "ws-nope"])
        .fails_with(4);
    assert!(
        unknown
            .stderr()
            .contains("has no workstream `ws-nope` (its workstreams: ws-docs, ws-parse)"),
        "{}",
        unknown.stderr()
    );
    let unwritten = repo
        .agency(&["show", &run8, "architecture", "ws-docs"])
        .fails_with(5);
    assert!(
        unwritten
            .stderr()
            .contains("has no architecture/ws-docs recorded"),
        "{}",
        unwritten.stderr()
    );
}

/// `show <run> plan` lists the run's path amendments: proposed, approved or rejected, by whom, why.
#[test]
fn show_plan_lists_path_amendments_with_their_decisions() {
    use agency_core::event::{EventKind, NewEvent};
    use serde_json::json;
    let (repo, runner, store, run) = run_waiting_at_the_plan_gate();
    let run8 = run.short();
    let proposed = |reason: &str| {
        NewEvent::new(
            run,
            EventKind::PathAmendment,
            json!({ "proposed_by": "t4/fix-add", "workstream": "ws-arith", "reason": reason,
                    "amendment": { "workstream": "ws-arith", "add_tiers": ["t3"], "insert_before": "t5" } }),
        )
    };
    let first = store.append_event(proposed("mul.sh is broken too")).unwrap();
    let second = store.append_event(proposed("neg.sh as well")).unwrap();
    let third = store.append_event(proposed("later")).unwrap();
    for (seq, approved, note) in [
        (first.seq, true, None),
        (second.seq, false, Some("one extra pass is enough")),
    ] {
        store
            .append_event(NewEvent::new(
                run,
                EventKind::PathAmendmentDecided,
                json!({ "amendment": seq, "workstream": "ws-arith", "approved": approved, "by": "cli:alice",
                        "note": note, "path_before": if approved { json!(["t3", "t4", "t5"]) } else { json!([]) },
                        "path_after": if approved { json!(["t3", "t4", "t3", "t5"]) } else { json!([]) } }),
            ))
            .unwrap();
    }
    drop(runner);
    let plan = repo.agency(&["show", &run8, "plan"]).success().stdout();
    for expected in [
        "Path amendments:".to_string(),
        format!(
            "  #{} ws-arith: add t3 before t5 — mul.sh is broken too (by t4/fix-add) — approved by cli:alice: path t3→t4→t3→t5",
            first.seq
        ),
        format!(
            "  #{} ws-arith: add t3 before t5 — neg.sh as well (by t4/fix-add) — rejected by cli:alice: one extra pass is enough",
            second.seq
        ),
        format!(
            "  #{} ws-arith: add t3 before t5 — later (by t4/fix-add) — proposed, undecided",
            third.seq
        ),
    ] {
        assert!(plan.contains(&expected), "no `{expected}` in:\n{plan}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&repo.agency(&["show", &run8, "plan", "--json"]).success().stdout()).unwrap();
    assert_eq!(json["amendments"].as_array().unwrap().len(), 3, "{json}");
    assert_eq!(json["amendments"][2]["status"], "proposed, undecided");
}
