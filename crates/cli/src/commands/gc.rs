//! `agency gc [--dry-run] [--all]`: removes what finished runs left in the repository — brief worktrees
//! under `.agency/worktrees/<run8>/`, brief and workstream branches — and the integration branch of runs that
//! did not succeed. A succeeded run's integration branch is what a human reviews and merges, so it stays
//! unless `--all`. Whether a run is finished is the blackboard's knowledge (its status is terminal); runs
//! still going, and branches of runs the blackboard does not know, are never touched. Then git's automatic
//! maintenance, which agency's own git commands never start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agency_exec::{GitOptions, Repo};
use agency_store::RunStatus;

use crate::commands::Context;
use crate::error::{CommandError, CommandResult};
use crate::workspace::AGENCY_DIR;

/// `agency gc [--dry-run] [--all]`
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print what would be removed, and remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove the integration branches of succeeded runs too.
    #[arg(long)]
    pub all: bool,
}

/// What one finished run leaves to collect.
#[derive(Debug, Default)]
struct Plan {
    worktrees: Vec<PathBuf>,
    branches: Vec<String>,
    kept: Vec<String>,
}

/// Runs `agency gc`.
pub fn run(ctx: &Context, args: Args) -> CommandResult {
    let ws = ctx.workspace()?;
    let store = ctx.open_store()?;
    let finished: BTreeMap<String, RunStatus> = store
        .list_runs()?
        .into_iter()
        .filter(|r| r.status.is_terminal())
        // Builds before 2026-11-26 named a run's branches and worktrees by the first 8 hex digits of its id.
        .flat_map(|r| [(r.id.short(), r.status), (r.id.legacy_short(), r.status)])
        .collect();
    let repo = Repo::open(&ws.root, GitOptions::default()).map_err(|e| CommandError::input(e.to_string()))?;
    let plan = plan(
        &repo,
        &ws.root.join(AGENCY_DIR).join("worktrees"),
        &finished,
        args.all,
    )?;
    let verb = if args.dry_run { "would remove" } else { "removed" };
    let mut failures = Vec::new();
    for path in &plan.worktrees {
        if !args.dry_run
            && let Err(err) = repo.remove_worktree(path, true)
        {
            failures.push(format!("worktree {}: {err}", path.display()));
            continue;
        }
        println!("{verb} worktree {}", path.display());
    }
    if !args.dry_run {
        let _ = repo.prune_worktrees();
    }
    let verb = if args.dry_run { "would delete" } else { "deleted" };
    for branch in &plan.branches {
        if !args.dry_run
            && let Err(err) = repo.delete_branch(branch, true)
        {
            failures.push(format!("branch {branch}: {err}"));
            continue;
        }
        println!("{verb} branch {branch}");
    }
    for branch in &plan.kept {
        println!("kept branch {branch} (its run succeeded; --all removes it)");
    }
    if !args.dry_run {
        remove_empty_run_dirs(&ws.root.join(AGENCY_DIR).join("worktrees"), &finished);
    }
    if plan.worktrees.is_empty() && plan.branches.is_empty() {
        println!("nothing to collect");
    }
    if !args.dry_run {
        maintain(&ws.root);
    }
    if !failures.is_empty() {
        return Err(CommandError::internal(format!(
            "could not remove everything:\n  {}",
            failures.join("\n  ")
        ))
        .hint("a worktree in use by another program cannot be removed; close it and run `agency gc` again"));
    }
    Ok(())
}

/// How long git's maintenance may take: packing a long run's loose objects takes minutes, not the seconds
/// agency's other git calls are allowed.
const MAINTENANCE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Runs git's automatic maintenance (`git maintenance run --auto`), which agency's own git commands never
/// start, so a long run's objects stay loose until then. Whether a run is going does not matter: what
/// agency's git avoids is hundreds of `gc`s during a run, each of whose reflog walks can race the runner's
/// worktree removals and leave an empty entry in `.git/worktrees/` (which git's `gc` itself prunes later);
/// one here leaves at most a few, and git's own grace periods keep what a live run just made. A failure is
/// reported and does not fail the collection.
fn maintain(root: &Path) {
    let options = GitOptions {
        timeout: MAINTENANCE_TIMEOUT,
        ..GitOptions::default()
    };
    if let Err(err) = Repo::open(root, options).and_then(|repo| repo.run_auto_maintenance()) {
        println!("git maintenance failed: {err}; `git maintenance run --auto` runs it by hand");
    }
}

/// The worktrees and branches of finished runs, and the integration branches kept.
fn plan(
    repo: &Repo,
    worktrees_root: &Path,
    finished: &BTreeMap<String, RunStatus>,
    all: bool,
) -> CommandResult<Plan> {
    let mut plan = Plan::default();
    for branch in repo.list_branches(agency_exec::branch_name::BRANCH_PREFIX)? {
        let Some(run8) = run_of_branch(&branch) else {
            continue;
        };
        let Some(status) = finished.get(run8) else {
            continue;
        };
        let integration = branch == format!("agency/{run8}/integration");
        if integration && *status == RunStatus::Succeeded && !all {
            plan.kept.push(branch);
        } else {
            plan.branches.push(branch);
        }
    }
    // The canonical root: git lists worktrees with symlinks resolved (/tmp on macOS, say).
    let root = worktrees_root
        .canonicalize()
        .unwrap_or_else(|_| worktrees_root.to_path_buf());
    for worktree in repo.list_worktrees()? {
        if worktree.is_main {
            continue;
        }
        let under_finished_run = worktree
            .path
            .strip_prefix(&root)
            .ok()
            .and_then(|rest| rest.components().next())
            .is_some_and(|run8| finished.contains_key(&*run8.as_os_str().to_string_lossy()));
        let holds_collected_branch = worktree
            .branch
            .as_ref()
            .is_some_and(|b| plan.branches.contains(b));
        if under_finished_run || holds_collected_branch {
            plan.worktrees.push(worktree.path);
        }
    }
    Ok(plan)
}

/// The run part of an agency branch (`agency/<run8>/…`).
fn run_of_branch(branch: &str) -> Option<&str> {
    let rest = branch.strip_prefix(agency_exec::branch_name::BRANCH_PREFIX)?;
    let (run8, _) = rest.split_once('/')?;
    (run8.len() == agency_core::ids::SHORT_ID_LEN && run8.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(run8)
}

/// Removes `<root>/<run8>` directories of finished runs once nothing is left in them.
fn remove_empty_run_dirs(root: &Path, finished: &BTreeMap<String, RunStatus>) {
    for run8 in finished.keys() {
        // Fails harmlessly when the directory is missing or still holds something.
        let _ = std::fs::remove_dir(root.join(run8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_agency_branches_with_a_run_id_have_a_run() {
        assert_eq!(run_of_branch("agency/0123abcd/integration"), Some("0123abcd"));
        assert_eq!(run_of_branch("agency/0123abcd/ws/work"), Some("0123abcd"));
        assert_eq!(run_of_branch("agency/notarun/integration"), None);
        assert_eq!(run_of_branch("main"), None);
    }
}
