//! A run's branches shared through a git remote, so its runners need not share a disk: the driver
//! (`agency run --remote NAME`) and each worker (`agency worker --repo URL`, in a clone of its own) fetch
//! the branches a brief starts from before it starts, the runner that ran an implementer commits and pushes
//! its slice branch before it reports, and the driver pushes the workstream and integration branches it
//! merges into as soon as they move. Without a remote none of this runs: the single-machine path starts no
//! extra git process.
//!
//! Who owns which branch decides what a fetch may move: the driver alone merges into the integration and
//! workstream branches, so a fetch never moves its copies of them (it only fills in one it lacks: a
//! workstream a worker started); a worker takes every branch it asks for from the remote. A slice branch is
//! written by the one runner holding its brief's claim; pushes are never forced, so a runner that lost its
//! claim cannot overwrite the work of the one that took it over (its push is refused, and its brief fails
//! with git's reason).

use agency_core::Brief;
use agency_store::Blackboard;

use crate::branches::RunBranches;
pub use crate::branches::SharedRemote;
use crate::error::Result;

/// Fetches what `brief` starts from before its agent starts, when the run is shared through a remote: the
/// integration branch, its workstream's, its pipeline predecessors', the branch its verifier judges (its
/// parent's), its earlier attempts' (a partial attempt's work is salvaged), and its own unless its
/// worktree is on this machine ([`crate::branches::RunBranches::to_start`]).
pub(crate) fn fetch_for_start(store: &dyn Blackboard, branches: &RunBranches, brief: &Brief) -> Result<()> {
    if !branches.is_shared() {
        return Ok(());
    }
    let mut wanted = branches.to_start(brief);
    for id in brief.depends_on.iter().chain(brief.parent.iter()) {
        if let Some(branch) = store.get_brief(*id)?.branch {
            wanted.push(branch);
        }
    }
    if let (Some(parent), true) = (brief.parent, brief.attempt > 0) {
        for sibling in store.list_children(parent)? {
            if sibling.id != brief.id
                && sibling.tier == brief.tier
                && sibling.workstream == brief.workstream
                && sibling.title == brief.title
            {
                wanted.extend(sibling.branch);
            }
        }
    }
    branches.fetch(&wanted)
}

/// Pushes an implementer's committed slice branch before its report is recorded, when the run is shared
/// through a remote: `Err` with git's reason when the push failed, for the brief to fail with.
pub(crate) fn push_slice(branches: &RunBranches, brief: &Brief) -> std::result::Result<(), String> {
    if !branches.is_shared() {
        return Ok(());
    }
    branches
        .push(&[&branches.brief(brief)])
        .map_err(|err| err.to_string())
}
