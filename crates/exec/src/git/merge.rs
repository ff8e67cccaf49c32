//! Merging one branch into another with conflict detection.
//!
//! A conflict is never resolved here, silently or otherwise: it is reported with the conflicted paths and
//! the merge is aborted, leaving the target branch exactly as it was, so the engine can hand the conflict to
//! an agent or a human. Merges always create a merge commit (`--no-ff`), so the integration branch shows
//! which brief brought in what.

use std::path::{Path, PathBuf};

use super::{GitError, Repo, check_name, failed};

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The branch was merged; `rev` is the new merge commit.
    Merged {
        /// The merge commit.
        rev: String,
    },
    /// Everything on the branch was already in the target; nothing changed.
    AlreadyUpToDate,
    /// The branches conflict; the merge was aborted and the target is unchanged.
    Conflict {
        /// The paths with conflicts, relative to the repository root, sorted.
        files: Vec<PathBuf>,
    },
}

impl Repo {
    /// Merges `branch` into whatever is checked out in this work tree, which must be clean.
    pub fn merge(&self, branch: &str, message: &str) -> Result<MergeOutcome, GitError> {
        check_name("branch", branch)?;
        let before = self.head_rev()?;
        let args = [
            "-c",
            "commit.gpgsign=false",
            "merge",
            "--no-ff",
            "--no-edit",
            "--no-verify",
            "--message",
            message,
            branch,
        ];
        let output = self.run(&args)?;
        if output.success() {
            let after = self.head_rev()?;
            return Ok(if after == before {
                MergeOutcome::AlreadyUpToDate
            } else {
                MergeOutcome::Merged { rev: after }
            });
        }
        let files = self.conflicted_files()?;
        let merge_in_progress = self
            .run(&["rev-parse", "--quiet", "--verify", "MERGE_HEAD"])?
            .success();
        if merge_in_progress {
            self.run_git(&["merge", "--abort"])?;
        }
        if files.is_empty() {
            // Refused before merging (a dirty work tree, an unknown branch…): an error, not a conflict.
            return Err(failed(&args, &output));
        }
        Ok(MergeOutcome::Conflict { files })
    }

    /// Merges `from` into the branch `into` inside a dedicated worktree made at `worktree_path` and removed
    /// afterwards, so no existing checkout is touched. `into` must not be checked out anywhere else.
    pub fn merge_into(
        &self,
        into: &str,
        from: &str,
        worktree_path: &Path,
        message: &str,
    ) -> Result<MergeOutcome, GitError> {
        let worktree = self.checkout_worktree(worktree_path, into)?;
        let outcome = worktree.merge(from, message);
        let removed = self.remove_worktree(worktree_path, true);
        // The merge's own result matters more than a failed cleanup; report the cleanup only on success.
        let outcome = outcome?;
        removed?;
        Ok(outcome)
    }

    /// Paths with unmerged entries in the index.
    fn conflicted_files(&self) -> Result<Vec<PathBuf>, GitError> {
        let changes = self.parse_name_status(&["diff", "--name-status", "-z", "--diff-filter=U"])?;
        let mut files: Vec<PathBuf> = changes.into_iter().map(|change| change.path).collect();
        files.sort();
        files.dedup();
        Ok(files)
    }
}
