//! Retries that remember: a retried brief's first message says what the attempt before it reported, which
//! files it changed and the diff it was judged on, after why it was not accepted.

use agency_core::Tier;

use crate::support::{FIX_MUL_RETRIED, Project, config};

/// What the retried fix-mul must be told of its first attempt (which rewrote `test_mul.sh` and was
/// rejected by the sign-off's checks for it).
const REMEMBERED: &str = "What attempt 0 reported (done): test_mul.sh passes.\nIts evidence: test_mul.sh\n\n\
Files attempt 0 changed: test_mul.sh\n(Your worktree starts again from the workstream's base: none of those \
changes are in it. Keep what was right, fix what is listed above.)\n\nIts diff:\n```diff\n\
diff --git a/test_mul.sh b/test_mul.sh";

#[tokio::test]
async fn a_retried_slice_is_told_what_its_previous_attempt_reported_and_changed() {
    let project = Project::new();
    // The protected-file scenario, with the retry's reply given only when its brief remembers attempt 0
    // (a brief without it has no reply, and the run fails).
    let script = include_str!("../scripts/protected.yaml").replace(
        "contains: \"test_mul.sh modified since the goal's base\"",
        &format!("contains: {}", serde_json::to_string(REMEMBERED).unwrap()),
    );
    assert_ne!(script, include_str!("../scripts/protected.yaml"));
    let (run, outcome) = project.succeed(&script, config()).await;
    assert_eq!(project.tree(run.id), FIX_MUL_RETRIED);
    project.assert_fixed(&outcome.branch.unwrap(), &["mul.sh"]);
    // Why it was not accepted comes first, as before.
    let feedback = project.feedback(run.id, Tier::T4, "fix-mul", 1);
    assert!(
        feedback.contains("test_mul.sh modified since the goal's base"),
        "{feedback}"
    );
}

/// The seed's "T4 partial output → salvage the good parts, re-task the remainder": an implementer that
/// reports `partial` has its work committed, and its retry starts from that work and is told so.
#[tokio::test]
async fn a_partial_slice_is_salvaged_and_its_retry_does_what_remains() {
    let project = Project::new();
    let script = include_str!("../scripts/simple.yaml").replace(
        "  - role: implementer\n    brief: ws-add/t4/fix-add\n    replies:\n",
        "  - role: implementer
    brief: ws-add/t4/fix-add
    contains: \"What it did is kept\"
    replies:
      - tool_calls:
          - name: read_file
            input: { path: NOTES.md }
      - tool_calls:
          - name: edit_file
            input: { path: add.sh, old_string: \"echo $(($1 - $2))\", new_string: \"echo $(($1 + $2))\" }
          - name: report_result
            input: { status: done, summary: \"add.sh adds.\", evidence: [{ path: add.sh }] }
  - role: implementer
    brief: ws-add/t4/fix-add
    reply:
      tool_calls:
        - name: write_file
          input: { path: NOTES.md, content: \"add.sh subtracts where it should add\\n\" }
        - name: report_result
          input: { status: partial, summary: \"found the bug, wrote NOTES.md; the fix remains\" }
  - role: unused
    replies:\n",
    );
    let (run, outcome) = project.succeed(&script, config()).await;
    let branch = outcome.branch.unwrap();
    project.assert_fixed(&branch, &["add.sh"]);
    assert_eq!(
        project.file_on(&branch, "NOTES.md").as_deref(),
        Some("add.sh subtracts where it should add\n"),
        "the partial attempt's work reached the integration branch through its retry"
    );
    let feedback = project.feedback(run.id, Tier::T4, "fix-add", 1);
    assert!(feedback.contains("What it did is kept"), "{feedback}");
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-add"), 2);
}

/// `runner.keep_worktrees_on_failure`: the partial (failed) attempt's worktree is kept by default, for a
/// human to look into, and removed at the runner's sweep when the key is off.
#[tokio::test]
async fn a_failed_implementers_worktree_is_kept_unless_the_key_is_off() {
    for keep in [true, false] {
        let project = Project::new();
        let script = include_str!("../scripts/simple.yaml").replace(
            "  - role: implementer\n    brief: ws-add/t4/fix-add\n    replies:\n",
            "  - role: implementer
    brief: ws-add/t4/fix-add
    contains: \"What it did is kept\"
    replies:
      - tool_calls:
          - name: edit_file
            input: { path: add.sh, old_string: \"echo $(($1 - $2))\", new_string: \"echo $(($1 + $2))\" }
          - name: report_result
            input: { status: done, summary: \"add.sh adds.\", evidence: [{ path: add.sh }] }
  - role: implementer
    brief: ws-add/t4/fix-add
    reply:
      tool_calls:
        - name: write_file
          input: { path: NOTES.md, content: \"add.sh subtracts where it should add\\n\" }
        - name: report_result
          input: { status: partial, summary: \"found the bug, wrote NOTES.md; the fix remains\" }
  - role: unused
    replies:\n",
        );
        let mut team = config();
        team.runner.keep_worktrees_on_failure = keep;
        let (run, _) = project.succeed(&script, team).await;
        let failed = project
            .briefs(run.id)
            .into_iter()
            .find(|b| b.tier == Tier::T4 && b.attempt == 0)
            .unwrap();
        let path = failed
            .worktree
            .clone()
            .expect("the failed attempt's worktree is recorded");
        assert_eq!(
            std::path::Path::new(&path).join("NOTES.md").exists(),
            keep,
            "keep_worktrees_on_failure: {keep}, {path}"
        );
    }
}
