//! Merging one branch into another with conflict detection.
//!
//! A conflict is never resolved here, silently or otherwise: it is reported with the conflicted paths and
//! the merge is aborted, leaving the target branch exactly as it was, so the engine can hand the conflict to
//! an agent or a human. Merges always create a merge commit (`--no-ff`), so the integration branch shows
//! which brief brought in what.
//!
//! [`Repo::merge_into`] merges two branches without checking either out where git can (`merge-tree
//! --write-tree`, git 2.38 and later): a run merges every slice, and a checkout of the whole tree per merge
//! was most of the runner's git work on a large repository.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::{GitError, Repo, check_name, failed};

mod together;

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

/// A merge made in the object database, before any branch moves.
enum Step {
    Committed { commit: String, tree: String },
    UpToDate,
    Conflict { files: Vec<PathBuf> },
}

/// Branches merged one after another into one branch (a squad's verified slices), each with a merge commit
/// of its own, the branch moved once for all of them by [`MergeChain::settle`]: one `update-ref` instead of
/// one per merge. Until it is settled the branch has not moved, and a chain dropped unsettled leaves only
/// unreferenced commits behind. Where git cannot merge in the object database (before 2.38, or the branch
/// is checked out), each merge is a [`Repo::merge_into`] that moves the branch at once.
#[derive(Debug)]
pub struct MergeChain<'r> {
    repo: &'r Repo,
    into: String,
    worktree_path: PathBuf,
    tip: Option<ChainTip>,
}

/// Where a chain made in the object database stands.
#[derive(Debug)]
struct ChainTip {
    /// Where the branch is (as of the chain's start or last settle).
    settled: String,
    /// The newest merge commit, and its tree.
    rev: String,
    tree: String,
    /// The branches merged since the last settle, for the reflog.
    merged: Vec<String>,
}

/// How many merged branches a settled chain's reflog entry names.
const REFLOG_NAMES: usize = 8;

impl MergeChain<'_> {
    /// The branch merged into.
    pub fn branch(&self) -> &str {
        &self.into
    }

    /// Merges `from` on top of the chain's previous merges, as [`Repo::merge_into`] would merge it into the
    /// branch they are settled into.
    pub fn merge(&mut self, from: &str, message: &str) -> Result<MergeOutcome, GitError> {
        check_name("branch", from)?;
        let Some(tip) = &mut self.tip else {
            return self
                .repo
                .merge_into(&self.into, from, &self.worktree_path, message);
        };
        let from_ref = format!("refs/heads/{from}");
        let from_rev = match self.repo.branch_from_files(&from_ref) {
            Some(rev) => rev,
            None => self.repo.rev_parse(&from_ref)?,
        };
        Ok(
            match self.repo.merge_commit(&tip.rev, &tip.tree, &from_rev, message)? {
                Step::Committed { commit, tree } => {
                    remember_tree(&commit, &tree);
                    tip.rev.clone_from(&commit);
                    tip.tree = tree;
                    tip.merged.push(from.to_owned());
                    MergeOutcome::Merged { rev: commit }
                }
                Step::UpToDate => MergeOutcome::AlreadyUpToDate,
                Step::Conflict { files } => MergeOutcome::Conflict { files },
            },
        )
    }

    /// Moves the branch to the chain's newest merge, if it is not there yet, only if nobody else moved it
    /// since the chain started (or last settled); the chain goes on from there.
    pub fn settle(&mut self) -> Result<(), GitError> {
        let Some(tip) = &mut self.tip else {
            return Ok(());
        };
        if tip.rev == tip.settled {
            return Ok(());
        }
        let mut reflog = format!("merge {}", tip.merged.len());
        reflog.push_str(if tip.merged.len() == 1 {
            " branch: "
        } else {
            " branches: "
        });
        reflog.push_str(
            &tip.merged
                .iter()
                .take(REFLOG_NAMES)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        );
        if tip.merged.len() > REFLOG_NAMES {
            reflog.push_str(", …");
        }
        self.repo
            .move_branch(&self.into, &tip.rev, &tip.settled, &reflog)?;
        tip.settled.clone_from(&tip.rev);
        tip.merged.clear();
        Ok(())
    }
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

    /// Merges `from` into the branch `into` without touching any checkout: in the object database where git
    /// can, otherwise inside a dedicated worktree made at `worktree_path` and removed afterwards. `into` must
    /// not be checked out anywhere (git's own refusal is reported as an error).
    pub fn merge_into(
        &self,
        into: &str,
        from: &str,
        worktree_path: &Path,
        message: &str,
    ) -> Result<MergeOutcome, GitError> {
        check_name("branch", into)?;
        check_name("branch", from)?;
        // A branch checked out somewhere must move with its work tree; the worktree merge lets git refuse.
        if self.has_merge_tree()? && !self.is_checked_out(into) {
            return self.merge_in_object_database(into, from, message);
        }
        let worktree = self.checkout_worktree(worktree_path, into)?;
        let outcome = worktree.merge(from, message);
        let removed = self.remove_worktree(worktree_path, true);
        // The merge's own result matters more than a failed cleanup; report the cleanup only on success.
        let outcome = outcome?;
        removed?;
        Ok(outcome)
    }

    /// `merge-tree --write-tree`, then a merge commit with both parents, then the branch moved to it only if
    /// nobody moved it meanwhile.
    fn merge_in_object_database(
        &self,
        into: &str,
        from: &str,
        message: &str,
    ) -> Result<MergeOutcome, GitError> {
        let [into_rev, into_tree, from_rev] = self.merge_inputs(into, from)?;
        match self.merge_commit(&into_rev, &into_tree, &from_rev, message)? {
            Step::Committed { commit, tree } => {
                let reflog = format!("merge {from}: {message}");
                self.move_branch(into, &commit, &into_rev, &reflog)?;
                remember_tree(&commit, &tree);
                Ok(MergeOutcome::Merged { rev: commit })
            }
            Step::UpToDate => Ok(MergeOutcome::AlreadyUpToDate),
            Step::Conflict { files } => Ok(MergeOutcome::Conflict { files }),
        }
    }

    /// The merge of commit `from_rev` into commit `into_rev` (whose tree is `into_tree`) as a new merge
    /// commit, with no branch moved.
    fn merge_commit(
        &self,
        into_rev: &str,
        into_tree: &str,
        from_rev: &str,
        message: &str,
    ) -> Result<Step, GitError> {
        let args = [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "-z",
            into_rev,
            from_rev,
        ];
        let output = self.run(&args)?;
        let text = output.stdout.text();
        let mut entries = text.split('\0');
        let tree = entries.next().unwrap_or_default();
        match output.exit_code {
            Some(0) => {}
            // Conflicts: the tree (with conflict markers) is followed by the conflicted paths, then an
            // empty entry; nothing was changed, so there is nothing to abort.
            Some(1) => {
                let mut files: Vec<PathBuf> = entries
                    .take_while(|path| !path.is_empty())
                    .map(PathBuf::from)
                    .collect();
                files.sort();
                files.dedup();
                return Ok(Step::Conflict { files });
            }
            _ => return Err(failed(&args, &output)),
        }
        if tree == into_tree
            && self
                .run(&["merge-base", "--is-ancestor", from_rev, into_rev])?
                .success()
        {
            return Ok(Step::UpToDate);
        }
        let commit = self
            .git_text(&[
                "commit-tree",
                "--no-gpg-sign",
                "-p",
                into_rev,
                "-p",
                from_rev,
                "-m",
                message,
                tree,
            ])?
            .trim()
            .to_owned();
        Ok(Step::Committed {
            commit,
            tree: tree.to_owned(),
        })
    }

    /// Moves the branch `into` from `old` to `new`, only if it is still at `old`.
    fn move_branch(&self, into: &str, new: &str, old: &str, reflog: &str) -> Result<(), GitError> {
        let reference = format!("refs/heads/{into}");
        self.run_git(&["update-ref", "-m", reflog, &reference, new, old])
            .map(drop)
    }

    /// A [`MergeChain`] into the branch `into`; `worktree_path` is where a merge git cannot make in the
    /// object database is made (see [`Repo::merge_into`]).
    pub fn merge_chain(&self, into: &str, worktree_path: &Path) -> Result<MergeChain<'_>, GitError> {
        check_name("branch", into)?;
        let tip = if self.has_merge_tree()? && !self.is_checked_out(into) {
            let into_ref = format!("refs/heads/{into}");
            let (rev, tree) = match self.known_tip(&into_ref) {
                Some(known) => known,
                None => {
                    let [rev, tree] = self
                        .rev_parse_ids([format!("{into_ref}^{{commit}}"), format!("{into_ref}^{{tree}}")])?;
                    (rev, tree)
                }
            };
            Some(ChainTip {
                settled: rev.clone(),
                rev,
                tree,
                merged: Vec::new(),
            })
        } else {
            None
        };
        Ok(MergeChain {
            repo: self,
            into: into.to_owned(),
            worktree_path: worktree_path.to_owned(),
            tip,
        })
    }

    /// The branch `into`'s commit and tree and the branch `from`'s commit. Where both branches are loose
    /// refs and `into` is at a merge this process made (a squad's slices merge one after another into the
    /// same branch), no git process is needed: the ids are read from the ref files and the tree is the one
    /// that merge was made of (a commit's tree never changes). Otherwise one `rev-parse`.
    fn merge_inputs(&self, into: &str, from: &str) -> Result<[String; 3], GitError> {
        let (into_ref, from_ref) = (format!("refs/heads/{into}"), format!("refs/heads/{from}"));
        if let (Some((into_rev, into_tree)), Some(from_rev)) =
            (self.known_tip(&into_ref), self.branch_from_files(&from_ref))
        {
            return Ok([into_rev, into_tree, from_rev]);
        }
        self.rev_parse_ids([
            format!("{into_ref}^{{commit}}"),
            format!("{into_ref}^{{tree}}"),
            format!("{from_ref}^{{commit}}"),
        ])
    }

    /// The commit and tree of the full branch name `into_ref`, known without git when its ref file is read
    /// and it is at a merge this process made.
    fn known_tip(&self, into_ref: &str) -> Option<(String, String)> {
        let rev = self.branch_from_files(into_ref)?;
        let tree = remembered_tree(&rev)?;
        Some((rev, tree))
    }

    /// The object ids of `specs`, asked of one `rev-parse` ([`Repo::rev_parse_specs`]).
    fn rev_parse_ids<const N: usize>(&self, specs: [String; N]) -> Result<[String; N], GitError> {
        let ids = self.rev_parse_specs(Vec::from(specs))?;
        // `rev_parse_specs` checked there is one id per spec; the error is only the type's.
        <[String; N]>::try_from(ids).map_err(|ids| GitError::UnexpectedOutput {
            args: "rev-parse".to_owned(),
            detail: format!("expected {N} object ids, got {ids:?}"),
        })
    }

    /// Whether this git has `merge-tree --write-tree` (2.38 and later).
    fn has_merge_tree(&self) -> Result<bool, GitError> {
        Ok(self.git_version()?.is_some_and(|version| version >= (2, 38)))
    }

    /// Whether this git's `merge-tree --stdin` takes a merge base and two trees on a line (2.45 and later).
    fn merges_trees(&self) -> Result<bool, GitError> {
        Ok(self.git_version()?.is_some_and(|version| version >= (2, 45)))
    }

    /// This git's major and minor version (`None` when `git version` does not say), asked once per git
    /// program.
    fn git_version(&self) -> Result<Option<Version>, GitError> {
        static KNOWN: OnceLock<Mutex<HashMap<OsString, Option<Version>>>> = OnceLock::new();
        let known = KNOWN.get_or_init(Mutex::default);
        let program = self.options().program.clone();
        if let Some(&version) = known.lock().unwrap_or_else(PoisonError::into_inner).get(&program) {
            return Ok(version);
        }
        let version = parse_version(&self.git_text(&["version"])?);
        known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(program, version);
        Ok(version)
    }

    /// Whether `branch` is the `HEAD` of the main work tree or of a linked one, read from their `HEAD`
    /// files (no process: this is asked before every merge).
    fn is_checked_out(&self, branch: &str) -> bool {
        // With the reftable backend the HEAD files are placeholders: say yes, and let the worktree merge
        // (where git itself refuses a branch checked out elsewhere) decide.
        if self.common_dir().join("reftable").is_dir() {
            return true;
        }
        let wanted = format!("ref: refs/heads/{branch}");
        let points_here =
            |head: &Path| std::fs::read_to_string(head).is_ok_and(|text| text.trim_end() == wanted);
        let common = self.common_dir();
        if points_here(&common.join("HEAD")) {
            return true;
        }
        let Ok(linked) = std::fs::read_dir(common.join("worktrees")) else {
            return false;
        };
        linked
            .flatten()
            .any(|entry| points_here(&entry.path().join("HEAD")))
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

/// Merge commits this process made, with their trees, the newest last (a few: only the tip of a branch
/// being merged into is asked for).
static MERGE_TREES: Mutex<VecDeque<(String, String)>> = Mutex::new(VecDeque::new());

/// How many merge commits' trees are remembered.
const REMEMBERED_TREES: usize = 64;

fn remember_tree(commit: &str, tree: &str) {
    let mut trees = MERGE_TREES.lock().unwrap_or_else(PoisonError::into_inner);
    if trees.len() == REMEMBERED_TREES {
        trees.pop_front();
    }
    trees.push_back((commit.to_owned(), tree.to_owned()));
}

fn remembered_tree(commit: &str) -> Option<String> {
    let trees = MERGE_TREES.lock().unwrap_or_else(PoisonError::into_inner);
    trees
        .iter()
        .rev()
        .find(|(known, _)| known == commit)
        .map(|(_, tree)| tree.clone())
}

/// A git version's major and minor number.
type Version = (u32, u32);

/// `git version 2.47.3` (or `2.39.5.windows.1`, `2.45.GIT`) → `(2, 47)`.
fn parse_version(text: &str) -> Option<Version> {
    let version = text.trim().strip_prefix("git version ")?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn git_versions_parse_to_major_and_minor() {
        assert_eq!(parse_version("git version 2.47.3\n"), Some((2, 47)));
        assert_eq!(parse_version("git version 2.39.5.windows.1"), Some((2, 39)));
        assert_eq!(parse_version("git version 2.45.GIT"), Some((2, 45)));
        assert_eq!(parse_version("hub version 2.14.2"), None);
    }
}
