//! What a retried brief's agent is told of the attempt before it, so that a real model does not redo what was
//! right: why it was not accepted (the feedback: the failure, or the review it got — a sign-off's missing
//! items, a human's rejection), what it reported, and the files it changed with the diff it was judged on.
//! A fresh attempt starts from its workstream's base in a new worktree, so without this the earlier work is
//! invisible to it.

use std::fmt::Write as _;

use agency_core::Brief;
use agency_exec::runtime::AgentReport;

use crate::engine::{Engine, diff_name, report_name};
use crate::error::Result;

/// The most bytes of the previous attempt's diff quoted in the retried brief; the file list is always whole.
const DIFF_QUOTED_MAX: usize = 8 * 1024;

/// The previous attempt of `brief`, as its first message shows it: `feedback` (why it was not accepted),
/// then what that attempt reported and changed, when the blackboard and the repository still have them.
pub(crate) fn remembered(engine: &Engine, brief: &Brief, feedback: &str) -> Result<String> {
    let mut out = feedback.trim_end().to_owned();
    let Some(previous) = previous_attempt(engine, brief)? else {
        return Ok(out);
    };
    if let Some(report) = engine
        .artifact_of(previous.run, previous.id, report_name)?
        .and_then(|a| serde_json::from_slice::<AgentReport>(&a.bytes).ok())
    {
        let status = serde_json::to_value(report.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = write!(
            out,
            "\n\nWhat attempt {} reported ({status}): {}",
            previous.attempt,
            report.summary.trim()
        );
        let evidence: Vec<&str> = report.evidence.iter().map(|e| e.path.as_str()).collect();
        if !evidence.is_empty() {
            let _ = write!(out, "\nIts evidence: {}", evidence.join(", "));
        }
    }
    let diff = engine
        .artifact_of(previous.run, previous.id, diff_name)?
        .map(|a| String::from_utf8_lossy(&a.bytes).into_owned());
    let changed = match &diff {
        Some(diff) => changed_in_diff(diff),
        None => uncommitted_changes(engine, &previous),
    };
    if !changed.is_empty() {
        let _ = write!(
            out,
            "\n\nFiles attempt {} changed: {}\n(Your worktree starts again from the workstream's base: \
             none of those changes are in it. Keep what was right, fix what is listed above.)",
            previous.attempt,
            changed.join(", ")
        );
    }
    if let Some(diff) = diff.filter(|d| !d.trim().is_empty()) {
        let quoted = if diff.len() > DIFF_QUOTED_MAX {
            let mut end = DIFF_QUOTED_MAX;
            while !diff.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}\n… (the rest of the diff is left out)", &diff[..end])
        } else {
            diff
        };
        let _ = write!(out, "\n\nIts diff:\n```diff\n{}\n```", quoted.trim_end());
    }
    Ok(out)
}

/// The attempt before `brief`: the same brief (parent, tier, workstream, title), one attempt earlier.
fn previous_attempt(engine: &Engine, brief: &Brief) -> Result<Option<Brief>> {
    let Some(wanted) = brief.attempt.checked_sub(1) else {
        return Ok(None);
    };
    let siblings = match brief.parent {
        Some(parent) => engine.store.list_children(parent)?,
        None => engine.store.list_briefs(brief.run)?,
    };
    Ok(siblings
        .into_iter()
        .filter(|b| b.id != brief.id && b.parent == brief.parent && same_brief(b, brief))
        .filter(|b| b.attempt == wanted)
        .max_by_key(|b| (b.created_at, b.id.whole())))
}

/// Whether `a` and `b` are attempts of one brief: the same tier, workstream and title (two workstreams'
/// extra passes share a title and a parent).
pub(crate) fn same_brief(a: &Brief, b: &Brief) -> bool {
    a.tier == b.tier && a.workstream == b.workstream && a.title == b.title
}

/// The paths a unified diff changes, in its order.
fn changed_in_diff(diff: &str) -> Vec<String> {
    diff.lines()
        .filter_map(|line| line.strip_prefix("diff --git a/"))
        .filter_map(|rest| rest.split_once(" b/").map(|(_, new)| new.to_owned()))
        .collect()
}

/// What the previous attempt left uncommitted in its kept worktree (an agent that failed before its work
/// was committed); nothing when the worktree is gone or git cannot say.
fn uncommitted_changes(engine: &Engine, previous: &Brief) -> Vec<String> {
    let Some(worktree) = previous.worktree.as_deref() else {
        return Vec::new();
    };
    let path = std::path::Path::new(worktree);
    if !path.is_dir() {
        return Vec::new();
    }
    let Ok(repo) = engine.repo.open_other(path) else {
        return Vec::new();
    };
    let Ok(output) = repo.run_git(&["status", "--porcelain", "--untracked-files=all"]) else {
        return Vec::new();
    };
    output
        .stdout
        .text()
        .lines()
        .filter_map(|line| line.get(3..))
        .map(|path| path.rsplit(" -> ").next().unwrap_or(path).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_names_the_files_it_changes_in_order() {
        let diff = "diff --git a/mul.sh b/mul.sh\nindex 1..2 100644\n--- a/mul.sh\n+++ b/mul.sh\n@@ -1 +1 @@\n\
                    -x\n+y\ndiff --git a/old.sh b/new.sh\nsimilarity index 90%\n";
        assert_eq!(changed_in_diff(diff), ["mul.sh", "new.sh"]);
        assert!(changed_in_diff("").is_empty());
    }
}
