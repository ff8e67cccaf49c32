//! `agency watch` over real runs: the engine's scripted profiles run by `agency run`, then watched. The
//! normal log must read like the seed's live-log example (seed 001, "Human-Readable Live Log"): plan,
//! gate, lead, boundaries, specialists, synthesis, mesh, swarm, verifiers, verdicts — each line once.

use crate::demo::normalise;
use crate::support::{CALCULATOR_GOAL, Repo};

/// Runs `script` to its end with `agency run` (one agent at a time, so the log's order is fixed) and
/// returns `agency watch` of that run, normalised.
fn watch_after_run(script: &str) -> String {
    watch_and_frame_after_run(script).0
}

/// [`watch_after_run`], and what `agency run` printed around its live log (its first and last words),
/// normalised.
fn watch_and_frame_after_run(script: &str) -> (String, String) {
    let (repo, script) = Repo::calculator(script);
    repo.edit_team(&[("  concurrency: 4 ", "  concurrency: 1 ")]);
    let ran = repo
        .agency(&[
            "run",
            CALCULATOR_GOAL,
            "--auto-approve",
            "--script",
            script.to_str().unwrap(),
        ])
        .success();
    let run = ran.run_id();
    let dir = repo.path().to_str().unwrap();
    let frame: String = ran
        .stdout()
        .lines()
        .filter(|line| !line.starts_with('['))
        .map(|line| format!("{line}\n"))
        .collect();
    let watched = repo.agency(&["watch", &run]).success().stdout();
    (normalise(&watched, dir), normalise(&frame, dir))
}

#[test]
fn watch_of_a_full_profile_run_reads_like_the_seed() {
    let (log, frame) = watch_and_frame_after_run(include_str!("../../../engine/tests/scripts/full.yaml"));
    // `agency run`'s own lines around the live log: the run started, and its final summary.
    insta::assert_snapshot!("run_frame_of_a_full_profile_run", frame);
    insta::assert_snapshot!(log, @r#"
    [RUN] HH:MM:SS  T1   PLAN_START    Assessing scope: "Fix the shell calculator so that every check passes."
    [RUN] HH:MM:SS  RUN  RUNTIMES      t1, t2, t3: builtin (configured); t4, t5: builtin (auto in a scripted run: a script cannot drive an external CLI)
    [RUN] HH:MM:SS  T1   PLAN_DONE     1 workstream — ws-calc (1 parallel)
    [RUN] HH:MM:SS  GATE APPROVAL      ⏸  Waiting on approval before T2 spawns
    [RUN] HH:MM:SS  GATE APPROVED      ✓  Approved — continuing (auto-approved (--auto-approve))
    [RUN] HH:MM:SS  T2   LEAD_START    Lead Architect spawned for ws-calc
    [RUN] HH:MM:SS  T2   BOUNDS_READY  Domain boundaries + shared assumptions published
    [RUN] HH:MM:SS  T2   SPEC_START    2 specialists spawned (parallel): arithmetic, sign
    [RUN] HH:MM:SS  T2   SPEC_DONE     arithmetic architecture draft ready
    [RUN] HH:MM:SS  T2   SPEC_DONE     sign architecture draft ready
    [RUN] HH:MM:SS  T2   SYNTH_DONE    Canonical architecture written to blackboard
    [RUN] HH:MM:SS  T1   ARCH_VALID    ws-calc: canonical architecture fits the goal anchor
    [RUN] HH:MM:SS  GATE INSPECTION    ⏸  T2 synthesis ready for review
    [RUN] HH:MM:SS  GATE APPROVED      ✓  Approved — continuing (auto-approved (--auto-approve))
    [RUN] HH:MM:SS  T3   START         T3 squad-arith spawned for ws-calc
    [RUN] HH:MM:SS  T3   START         T3 squad-sign spawned for ws-calc
    [RUN] HH:MM:SS  T3   TASKS         squad-arith: 2 T4 tasks (2 swarm, 0 pipeline)
    [RUN] HH:MM:SS  T4   SWARM_START   squad-arith: 2 workers spawned in parallel
    [RUN] HH:MM:SS  T3   TASKS         squad-sign: 2 T4 tasks (1 swarm, 1 pipeline)
    [RUN] HH:MM:SS  T4   SWARM_START   squad-sign: 1 worker spawned, 1 pipelined behind it
    [RUN] HH:MM:SS  T4   DONE          fix-add ✓
    [RUN] HH:MM:SS  T4   VERIFY        ✓ `sh test_add.sh` passed on <id> (exit 0) — ws-calc/fix-add
    [RUN] HH:MM:SS  T4   DONE          fix-mul ✓
    [RUN] HH:MM:SS  T4   VERIFY        ✓ `sh test_mul.sh` passed on <id> (exit 0) — ws-calc/fix-mul
    [RUN] HH:MM:SS  T5   VERIFY_START  squad-arith: 2 verifiers spawned
    [RUN] HH:MM:SS  T4   DONE          fix-neg ✓
    [RUN] HH:MM:SS  T4   VERIFY        ✓ `sh test_neg.sh` passed on <id> (exit 0) — ws-calc/fix-neg
    [RUN] HH:MM:SS  T4   DONE          note-neg ✓
    [RUN] HH:MM:SS  T4   VERIFY        ✓ `sh test_neg.sh` passed on <id> (exit 0) — ws-calc/note-neg
    [RUN] HH:MM:SS  T5   VERIFY_START  squad-sign: 2 verifiers spawned
    [RUN] HH:MM:SS  T5   VERDICT       ✓  all pass — ws-calc: 2 slice(s) verified
    [RUN] HH:MM:SS  T5   VERDICT       ✓  all pass — ws-calc: 2 slice(s) verified
    [RUN] HH:MM:SS  T1   VERIFY        ✓ `sh test_all.sh` passed on <id> (exit 0) — ws-calc on the integration branch
    [RUN] HH:MM:SS  T5   VERDICT       ✓  workstream ws-calc merged into agency/<id>/integration
    [RUN] HH:MM:SS  T1   ACCEPT_START  Every workstream merged — validating against the goal anchor
    [RUN] HH:MM:SS  T1   VERIFY        ✓ `sh test_all.sh` passed on <id> (exit 0) — accept/ws-calc
    [RUN] HH:MM:SS  T1   SIGNED_OFF    accept ✓ accepted
    [RUN] HH:MM:SS  T1   ACCEPTED      ✓  every check passes — review and merge branch agency/<id>/integration
    [RUN] HH:MM:SS  RUN  STATUS        succeeded
    "#);
}

/// The T3 mesh as the log tells it: two squad leads of one specialist claim NOTES.md, reconcile in round 2,
/// and commit before any T4 work goes out.
#[test]
fn watch_of_a_mesh_shows_each_round_and_the_overlaps_left() {
    let log = watch_after_run(include_str!("../../../engine/tests/scripts/mesh.yaml"));
    let mesh: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" MESH_") || l.contains(" SWARM_START "))
        .collect();
    insta::assert_snapshot!(mesh.join("\n"), @r"
    [RUN] HH:MM:SS  T3   MESH_START    ws-calc/calculator: 2 squad leads negotiating task boundaries
    [RUN] HH:MM:SS  T3   MESH_ROUND    ws-calc/calculator: round 1 — 1 overlap left (file NOTES.md: squad-arith, squad-sign)
    [RUN] HH:MM:SS  T3   MESH_ROUND    ws-calc/calculator: round 2 — no overlaps left
    [RUN] HH:MM:SS  T3   MESH_DONE     ws-calc/calculator: task split committed by 2 squad leads in round 2 — 4 T4 tasks (3 swarm, 1 pipeline)
    [RUN] HH:MM:SS  T4   SWARM_START   squad-arith: 2 workers spawned in parallel
    [RUN] HH:MM:SS  T4   SWARM_START   squad-sign: 1 worker spawned, 1 pipelined behind it
    ");
}

#[test]
fn watch_of_a_partial_verdict_shows_the_failed_slice_and_its_retry() {
    let log = watch_after_run(include_str!("../../../engine/tests/scripts/partial.yaml"));
    insta::assert_snapshot!(log, @r#"
    [RUN] HH:MM:SS  T1   PLAN_START    Assessing scope: "Fix the shell calculator so that every check passes."
    [RUN] HH:MM:SS  RUN  RUNTIMES      t1, t2, t3: builtin (configured); t4, t5: builtin (auto in a scripted run: a script cannot drive an external CLI)
    [RUN] HH:MM:SS  T1   PLAN_DONE     1 workstream — ws-arith (1 parallel)
    [RUN] HH:MM:SS  GATE APPROVAL      ⏸  Waiting on approval before T3 spawns
    [RUN] HH:MM:SS  GATE APPROVED      ✓  Approved — continuing (auto-approved (--auto-approve))
    [RUN] HH:MM:SS  T3   START         T3 arithmetic spawned for ws-arith
    [RUN] HH:MM:SS  T3   TASKS         arithmetic: 2 T4 tasks (2 swarm, 0 pipeline)
    [RUN] HH:MM:SS  T4   SWARM_START   arithmetic: 2 workers spawned in parallel
    [RUN] HH:MM:SS  T4   DONE          fix-add ✓
    [RUN] HH:MM:SS  T4   VERIFY        ✓ `sh test_add.sh` passed on <id> (exit 0) — ws-arith/fix-add
    [RUN] HH:MM:SS  T4   DONE          fix-mul ✓
    [RUN] HH:MM:SS  T4   VERIFY        ✓ `sh test_mul.sh` passed on <id> (exit 0) — ws-arith/fix-mul
    [RUN] HH:MM:SS  T5   VERIFY_START  arithmetic: 2 verifiers spawned
    [RUN] HH:MM:SS  T5   SIGNOFF       ws-arith/fix-mul ✗ rejected: mul.sh still carries the LEFTOVER-DEBUG marker; remove it
    [RUN] HH:MM:SS  T5   VERDICT       partial — fix-mul needs rework
    [RUN] HH:MM:SS  T4   FAIL          fix-mul ✗  (retry 1/2) — The sign-off rejected this slice. Missing: - mul.sh still carries the LEFTOVER-DEBUG marker; remove it sign-off rejected at <id> by the judge
    [RUN] HH:MM:SS  T4   RETRY         fix-mul retried with a corrected brief — The sign-off rejected this slice. Missing: - mul.sh still carries the LEFTOVER-DEBUG marker; remove it sign-off rejected at <id> by the judge
    [RUN] HH:MM:SS  T4   DONE          fix-mul ✓  (retry resolved)
    [RUN] HH:MM:SS  T4   VERIFY        ✓ `sh test_mul.sh` passed on <id> (exit 0) — ws-arith/fix-mul
    [RUN] HH:MM:SS  T5   VERIFY_START  arithmetic: 1 verifier spawned
    [RUN] HH:MM:SS  T5   VERDICT       ✓  all pass — ws-arith: 2 slice(s) verified
    [RUN] HH:MM:SS  T1   VERIFY        ✓ `sh test_arith.sh` passed on <id> (exit 0) — ws-arith on the integration branch
    [RUN] HH:MM:SS  T5   VERDICT       ✓  workstream ws-arith merged into agency/<id>/integration
    [RUN] HH:MM:SS  T1   ACCEPT_START  Every workstream merged — validating against the goal anchor
    [RUN] HH:MM:SS  T1   VERIFY        ✓ `sh test_arith.sh` passed on <id> (exit 0) — accept/ws-arith
    [RUN] HH:MM:SS  T1   SIGNED_OFF    accept ✓ accepted
    [RUN] HH:MM:SS  T1   ACCEPTED      ✓  every check passes — review and merge branch agency/<id>/integration
    [RUN] HH:MM:SS  RUN  STATUS        succeeded
    "#);
}
