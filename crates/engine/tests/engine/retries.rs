//! Retries that remember. The seed's "T4 partial output → salvage the good parts, re-task the remainder":
//! an implementer that reports `partial` has its work committed, and its retry starts from that work and
//! is told so; the partial (failed) attempt's worktree is kept for a human unless
//! `runner.keep_worktrees_on_failure` is off. A retry told what its previous attempt reported, changed and
//! was judged on rides on signoff.rs's protected-file run (the same run).

use agency_core::Tier;

use crate::support::{Project, config};

/// The simple script with fix-add's first attempt reporting `partial` (NOTES.md written, the fix left), and
/// its retry, which answers only when told its work is kept, doing the fix.
fn partial_then_fixed() -> String {
    include_str!("../scripts/simple.yaml").replace(
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
    )
}

/// One run per value of `runner.keep_worktrees_on_failure` (on is the default): the salvage holds either
/// way, and only the worktree's fate differs.
#[tokio::test]
async fn a_partial_slice_is_salvaged_and_its_worktree_kept_unless_the_key_is_off() {
    let script = partial_then_fixed();
    for keep in [true, false] {
        let project = Project::new();
        let mut team = config();
        team.runner.keep_worktrees_on_failure = keep;
        let (run, outcome) = project.succeed(&script, team).await;
        let branch = outcome.branch.unwrap();
        project.assert_fixed(&branch, &["add.sh"]);
        assert_eq!(
            project.file_on(&branch, "NOTES.md").as_deref(),
            Some("add.sh subtracts where it should add\n"),
            "the partial attempt's work reached the integration branch through its retry (keep: {keep})"
        );
        let feedback = project.feedback(run.id, Tier::T4, "fix-add", 1);
        assert!(feedback.contains("What it did is kept"), "{feedback}");
        assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-add"), 2);
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
