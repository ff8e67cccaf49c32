//! What a retried brief's agent is told of the attempt before it: the blackboard's and the repository's
//! side. The previous attempt, its report, its diff and (when it has no diff) what its kept worktree left
//! uncommitted are read here; which attempt is the previous one and how the message reads are the
//! decision core's ([`agency_flow::previous`]).

use agency_core::Brief;
use agency_exec::Repo;
use agency_exec::runtime::AgentReport;
use agency_flow::previous::{Previous, Reported, changed_in_diff, previous_of};
use agency_store::Blackboard;

use crate::artifacts::brief_artifact;
use crate::engine::{diff_name, report_name};
use crate::error::Result;

pub(crate) use agency_flow::previous::same_brief;

/// The previous attempt of `brief`, as its first message shows it: `feedback` (why it was not accepted),
/// then what that attempt reported and changed, when the blackboard (`store`) and the repository (`repo`)
/// still have them.
pub(crate) fn remembered(
    store: &dyn Blackboard,
    repo: &Repo,
    brief: &Brief,
    feedback: &str,
) -> Result<String> {
    if brief.attempt == 0 {
        return Ok(agency_flow::previous::remembered(feedback, None));
    }
    let siblings = match brief.parent {
        Some(parent) => store.list_children(parent)?,
        None => store.list_briefs(brief.run)?,
    };
    let Some(previous) = previous_of(brief, &siblings) else {
        return Ok(agency_flow::previous::remembered(feedback, None));
    };
    let report = brief_artifact(store, previous.run, previous.id, report_name)?
        .and_then(|a| serde_json::from_slice::<AgentReport>(&a.bytes).ok());
    let status = report
        .as_ref()
        .and_then(|r| serde_json::to_value(r.status).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let evidence: Vec<&str> = report
        .iter()
        .flat_map(|r| r.evidence.iter().map(|e| e.path.as_str()))
        .collect();
    let diff = brief_artifact(store, previous.run, previous.id, diff_name)?
        .map(|a| String::from_utf8_lossy(&a.bytes).into_owned());
    let changed = match &diff {
        Some(diff) => changed_in_diff(diff),
        None => uncommitted_changes(repo, previous),
    };
    Ok(agency_flow::previous::remembered(
        feedback,
        Some(Previous {
            attempt: previous.attempt,
            reported: report.as_ref().map(|r| Reported {
                status: &status,
                summary: &r.summary,
                evidence: &evidence,
            }),
            changed: &changed,
            diff: diff.as_deref(),
        }),
    ))
}

/// What the previous attempt left uncommitted in its kept worktree (an agent that failed before its work
/// was committed); nothing when the worktree is gone or git cannot say.
fn uncommitted_changes(repo: &Repo, previous: &Brief) -> Vec<String> {
    let Some(worktree) = previous.worktree.as_deref() else {
        return Vec::new();
    };
    let path = std::path::Path::new(worktree);
    if !path.is_dir() {
        return Vec::new();
    }
    let Ok(repo) = repo.open_other(path) else {
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
