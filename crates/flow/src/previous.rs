//! What a retried brief's agent is told of the attempt before it, so that a real model does not redo what
//! was right: why it was not accepted (the feedback), what it reported, and the files it changed with the
//! diff it was judged on. A fresh attempt starts from its workstream's base in a new worktree, so without
//! this the earlier work is invisible to it. The engine reads the previous attempt's report, diff and
//! (when it has no diff) its worktree's changes; the message is composed here.

use std::fmt::Write as _;

use agency_core::Brief;

/// The most bytes of the previous attempt's diff quoted in the retried brief; the file list is always whole.
pub const DIFF_QUOTED_MAX: usize = 8 * 1024;

/// Whether `a` and `b` are attempts of one brief: the same tier, workstream and title (two workstreams'
/// extra passes share a title and a parent).
pub fn same_brief(a: &Brief, b: &Brief) -> bool {
    a.tier == b.tier && a.workstream == b.workstream && a.title == b.title
}

/// The attempt before `brief` among `siblings` (its parent's children, or the run's briefs when it has
/// no parent): the same brief (parent, tier, workstream, title), one attempt earlier, the newest such
/// when there are several.
pub fn previous_of<'a>(brief: &Brief, siblings: &'a [Brief]) -> Option<&'a Brief> {
    let wanted = brief.attempt.checked_sub(1)?;
    siblings
        .iter()
        .filter(|b| b.id != brief.id && b.parent == brief.parent && same_brief(b, brief))
        .filter(|b| b.attempt == wanted)
        .max_by_key(|b| (b.created_at, b.id.whole()))
}

/// The paths a unified diff changes, in its order.
pub fn changed_in_diff(diff: &str) -> Vec<String> {
    diff.lines()
        .filter_map(|line| line.strip_prefix("diff --git a/"))
        .filter_map(|rest| rest.split_once(" b/").map(|(_, new)| new.to_owned()))
        .collect()
}

/// `diff` as the retried brief quotes it: whole up to `max` bytes, else cut at a character boundary at
/// or below `max` with a line saying the rest is left out.
pub fn quoted_diff(diff: &str, max: usize) -> String {
    if diff.len() <= max {
        return diff.to_owned();
    }
    let mut end = max;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… (the rest of the diff is left out)", &diff[..end])
}

/// What the previous attempt reported.
#[derive(Debug, Clone, Copy)]
pub struct Reported<'a> {
    /// Its status (`done`, `partial`, `blocked`).
    pub status: &'a str,
    /// Its summary.
    pub summary: &'a str,
    /// The paths of its evidence.
    pub evidence: &'a [&'a str],
}

/// What the blackboard and the repository still hold of the previous attempt.
#[derive(Debug, Clone, Copy)]
pub struct Previous<'a> {
    /// Its attempt number.
    pub attempt: u32,
    /// Its report, when it reported.
    pub reported: Option<Reported<'a>>,
    /// The files it changed (from its diff, or from its kept worktree when it has no diff).
    pub changed: &'a [String],
    /// The diff it was judged on, when it has one.
    pub diff: Option<&'a str>,
}

/// The first message's account of the previous attempt: `feedback` (why it was not accepted), then what
/// `previous` reported and changed, when known.
pub fn remembered(feedback: &str, previous: Option<Previous<'_>>) -> String {
    let mut out = feedback.trim_end().to_owned();
    let Some(previous) = previous else {
        return out;
    };
    if let Some(reported) = previous.reported {
        let _ = write!(
            out,
            "\n\nWhat attempt {} reported ({}): {}",
            previous.attempt,
            reported.status,
            reported.summary.trim()
        );
        if !reported.evidence.is_empty() {
            let _ = write!(out, "\nIts evidence: {}", reported.evidence.join(", "));
        }
    }
    if !previous.changed.is_empty() {
        let _ = write!(
            out,
            "\n\nFiles attempt {} changed: {}\n(Your worktree starts again from the workstream's base: \
             none of those changes are in it. Keep what was right, fix what is listed above.)",
            previous.attempt,
            previous.changed.join(", ")
        );
    }
    if let Some(diff) = previous.diff.filter(|d| !d.trim().is_empty()) {
        let quoted = quoted_diff(diff, DIFF_QUOTED_MAX);
        let _ = write!(out, "\n\nIts diff:\n```diff\n{}\n```", quoted.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use agency_core::{BriefId, BriefStatus, Tier};
    use proptest::prelude::*;

    use super::*;
    use crate::attempts::tests::brief;

    #[test]
    fn a_diff_names_the_files_it_changes_in_order() {
        let diff = "diff --git a/mul.sh b/mul.sh\nindex 1..2 100644\n--- a/mul.sh\n+++ b/mul.sh\n@@ -1 +1 @@\n\
                    -x\n+y\ndiff --git a/old.sh b/new.sh\nsimilarity index 90%\n";
        assert_eq!(changed_in_diff(diff), ["mul.sh", "new.sh"]);
        assert!(changed_in_diff("").is_empty());
        assert!(changed_in_diff("diff --git a/no-b-side\n").is_empty());
    }

    #[test]
    fn the_previous_attempt_is_the_same_brief_one_attempt_earlier() {
        let parent = Some(BriefId::new());
        let mut now = brief(Tier::T4, "add-mul", 2, BriefStatus::Pending);
        now.parent = parent;
        let mut one = brief(Tier::T4, "add-mul", 1, BriefStatus::Failed);
        one.parent = parent;
        let mut zero = one.clone();
        zero.id = BriefId::new();
        zero.attempt = 0;
        let mut other_ws = one.clone();
        other_ws.id = BriefId::new();
        other_ws.workstream = "elsewhere".into();
        let mut other_parent = one.clone();
        other_parent.id = BriefId::new();
        other_parent.parent = Some(BriefId::new());
        let siblings = [zero, other_ws, other_parent, one.clone(), now.clone()];
        assert_eq!(previous_of(&now, &siblings).map(|b| b.id), Some(one.id));
        let mut first = now.clone();
        first.attempt = 0;
        assert!(
            previous_of(&first, &siblings).is_none(),
            "a first attempt has none"
        );
    }

    #[test]
    fn a_retry_is_told_what_its_previous_attempt_reported_and_changed() {
        let changed = vec!["mul.sh".to_string(), "test.sh".to_string()];
        let evidence = ["test.sh"];
        let told = remembered(
            "The verifier found: mul 0 fails\n",
            Some(Previous {
                attempt: 0,
                reported: Some(Reported {
                    status: "done",
                    summary: " added mul ",
                    evidence: &evidence,
                }),
                changed: &changed,
                diff: Some("diff --git a/mul.sh b/mul.sh\n+y\n"),
            }),
        );
        assert!(
            told.starts_with("The verifier found: mul 0 fails\n\nWhat attempt 0 reported (done): added mul")
        );
        assert!(told.contains("\nIts evidence: test.sh"));
        assert!(told.contains("Files attempt 0 changed: mul.sh, test.sh\n"));
        assert!(told.ends_with("Its diff:\n```diff\ndiff --git a/mul.sh b/mul.sh\n+y\n```"));
        // Nothing known of it: the feedback alone.
        assert_eq!(remembered("why\n", None), "why");
        let blank = remembered(
            "why",
            Some(Previous {
                attempt: 0,
                reported: None,
                changed: &[],
                diff: Some("  \n"),
            }),
        );
        assert_eq!(blank, "why", "an empty diff and no report add nothing");
    }

    #[test]
    fn a_long_diff_is_cut_at_a_character_boundary() {
        let diff = "é".repeat(10);
        assert_eq!(quoted_diff(&diff, 20), diff, "20 bytes fit");
        let cut = quoted_diff(&diff, 5);
        assert_eq!(cut, "éé\n… (the rest of the diff is left out)");
        assert_eq!(quoted_diff("", 0), "");
    }

    proptest! {
        /// Whatever the diff and the limit, quoting never panics, keeps a prefix of the diff no longer than
        /// the limit, and says when it cut.
        #[test]
        fn quoting_a_diff_keeps_a_prefix_within_the_limit(diff in "\\PC{0,200}", max in 0usize..300) {
            let quoted = quoted_diff(&diff, max);
            if diff.len() <= max {
                prop_assert_eq!(quoted, diff);
            } else {
                let kept = quoted.strip_suffix("\n… (the rest of the diff is left out)");
                prop_assert!(kept.is_some(), "the cut is said");
                let kept = kept.unwrap_or_default();
                prop_assert!(kept.len() <= max);
                prop_assert!(diff.starts_with(kept));
            }
        }
    }
}
