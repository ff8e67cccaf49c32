//! Finding and removing what finished runs left behind: brief worktrees and `agency/…` branches.
//!
//! Whether a run is finished is the blackboard's knowledge, not git's, so the caller passes it in as a
//! predicate over the run's short id; this module needs no store. Worktrees kept on failure for inspection
//! are collected too once their run is finished; the main work tree is never touched.

use std::path::PathBuf;

use crate::branch_name::{BRANCH_PREFIX, parse_brief_branch};
use crate::git::{GitError, Repo};

/// One brief branch of a finished run, and its worktree if it still has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The branch, e.g. `agency/0123abcd/auth/89abcdef…` (the brief's whole id).
    pub branch: String,
    /// The run's short id.
    pub run8: String,
    /// The linked worktree that has the branch checked out.
    pub worktree: Option<PathBuf>,
    /// The main work tree has the branch checked out, so it is left alone.
    pub checked_out_in_main: bool,
}

/// What [`remove_leftovers`] did.
#[derive(Debug, Default)]
pub struct GcReport {
    /// Worktree directories removed.
    pub removed_worktrees: Vec<PathBuf>,
    /// Branches deleted.
    pub deleted_branches: Vec<String>,
    /// What could not be removed, and why; the rest was still collected.
    pub failures: Vec<(String, GitError)>,
}

/// Agency brief branches whose run `is_run_finished` says is over, with their worktrees.
pub fn finished_run_leftovers(
    repo: &Repo,
    is_run_finished: impl Fn(&str) -> bool,
) -> Result<Vec<Leftover>, GitError> {
    let worktrees = repo.list_worktrees()?;
    let mut leftovers = Vec::new();
    for branch in repo.list_branches(BRANCH_PREFIX)? {
        let Some(parts) = parse_brief_branch(&branch) else {
            continue;
        };
        if !is_run_finished(&parts.run8) {
            continue;
        }
        let holder = worktrees
            .iter()
            .find(|w| w.branch.as_deref() == Some(branch.as_str()));
        leftovers.push(Leftover {
            worktree: holder.filter(|w| !w.is_main).map(|w| w.path.clone()),
            checked_out_in_main: holder.is_some_and(|w| w.is_main),
            branch,
            run8: parts.run8,
        });
    }
    Ok(leftovers)
}

/// Removes the leftovers' worktrees (forcibly: the run is over) and deletes their branches, carrying on
/// past individual failures; finishes with a prune so hand-deleted worktree directories are forgotten too.
pub fn remove_leftovers(repo: &Repo, leftovers: &[Leftover]) -> GcReport {
    let mut report = GcReport::default();
    for leftover in leftovers {
        if leftover.checked_out_in_main {
            continue;
        }
        if let Some(path) = &leftover.worktree {
            match repo.remove_worktree(path, true) {
                Ok(()) => report.removed_worktrees.push(path.clone()),
                Err(err) => {
                    report.failures.push((path.display().to_string(), err));
                    continue;
                }
            }
        }
        match repo.delete_branch(&leftover.branch, true) {
            Ok(()) => report.deleted_branches.push(leftover.branch.clone()),
            Err(err) => report.failures.push((leftover.branch.clone(), err)),
        }
    }
    if let Err(err) = repo.prune_worktrees() {
        report.failures.push(("worktree prune".to_owned(), err));
    }
    report
}
