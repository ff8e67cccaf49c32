//! Removing linked worktrees in batches. `git worktree remove --force` deletes the worktree's directory and
//! its entry under `<common dir>/worktrees/`, and nothing else; a runner removes a worktree per brief, and
//! each removal was a git process of its own (about 140 µs of the runner's CPU to start and wait for, and
//! git's own start-up). Nothing needs a finished brief's worktree gone at once, so a runner defers its
//! removals to a [`WorktreeSweep`] and sweeps now and then: one `rm -rf` for every worktree deferred since.
//! Deleting the files in the runner itself costs it more than that one process on ext4
//! (docs/performance.md, *Files, merges and refs*), and `git worktree prune` is not used: it would also
//! forget a user's own worktrees whose directories happen to be missing.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{GitError, Repo};
use crate::process::{self, CommandSpec};

/// Linked worktrees of one repository waiting to be removed together; clones share the list. What is
/// still waiting when the last clone goes is swept then.
#[derive(Debug, Clone)]
pub struct WorktreeSweep(Arc<Pending>);

#[derive(Debug)]
struct Pending {
    repo: Repo,
    /// Held for the whole of a sweep, so [`WorktreeSweep::withdraw`] never sees a worktree half removed.
    paths: Mutex<Vec<PathBuf>>,
}

impl WorktreeSweep {
    /// An empty sweep of `repo`'s worktrees.
    pub fn new(repo: Repo) -> Self {
        WorktreeSweep(Arc::new(Pending {
            repo,
            paths: Mutex::new(Vec::new()),
        }))
    }

    /// The repository whose worktrees it removes.
    pub fn repo(&self) -> &Repo {
        &self.0.repo
    }

    /// Removes the worktree at `path` at the next sweep instead of now.
    pub fn defer(&self, path: PathBuf) {
        let mut paths = self.0.paths();
        if !paths.contains(&path) {
            paths.push(path);
        }
    }

    /// Takes `path` off the list (its worktree is wanted again, as when a brief starts over in the same
    /// worktree); whether it was on it.
    pub fn withdraw(&self, path: &Path) -> bool {
        let mut paths = self.0.paths();
        let before = paths.len();
        paths.retain(|p| p != path);
        paths.len() != before
    }

    /// How many worktrees wait for the next sweep.
    pub fn waiting(&self) -> usize {
        self.0.paths().len()
    }

    /// Removes every worktree deferred so far ([`Repo::remove_worktrees`]); the first error, once every
    /// one was tried.
    pub fn sweep(&self) -> Result<(), GitError> {
        self.0.sweep()
    }
}

impl Pending {
    fn paths(&self) -> MutexGuard<'_, Vec<PathBuf>> {
        self.paths.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sweep(&self) -> Result<(), GitError> {
        let mut paths = self.paths();
        if paths.is_empty() {
            return Ok(());
        }
        let swept = std::mem::take(&mut *paths);
        self.repo.remove_worktrees(&swept)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // Best effort: what cannot be removed here stays a worktree of a finished run, `agency gc`'s.
        let _ = self.sweep();
    }
}

impl Repo {
    /// Removes the linked worktrees at `paths` (forcibly, as [`Repo::remove_worktree`] with `force`) with
    /// one `rm -rf` of their directories and their entries under `<common dir>/worktrees/`: what `git
    /// worktree remove --force` deletes, without a git process per worktree. A worktree whose entry cannot
    /// be told for certain ([`Repo::recorded_admin`], or failing that the entry whose `gitdir` file names
    /// it), a locked one, one whose directory is gone, and whatever is still there after a failed `rm`, is
    /// removed by git one at a time instead. The first error, once every path was tried.
    pub fn remove_worktrees(&self, paths: &[PathBuf]) -> Result<(), GitError> {
        let _turn = self.worktree_changes()?;
        let mut doomed: Vec<OsString> = Vec::with_capacity(paths.len() * 2);
        let mut batched = Vec::with_capacity(paths.len());
        let mut by_git = Vec::new();
        for path in paths {
            match self.batch_removable(path) {
                Some((root, admin)) => {
                    doomed.extend([root.clone().into_os_string(), admin.into_os_string()]);
                    batched.push((path, root));
                }
                None => by_git.push(path.as_path()),
            }
        }
        if !batched.is_empty() && !self.remove_files(doomed) {
            // Whatever `rm` left: git removes it, or says why it cannot. An entry left without its
            // directory is prunable, which `agency gc` does.
            by_git.extend(
                batched
                    .iter()
                    .filter(|(_, root)| root.exists())
                    .map(|(path, _)| path.as_path()),
            );
        }
        let mut first_error = None;
        for path in by_git {
            if let Err(err) = self.remove_worktree_in_turn(path, true) {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The worktree's top level and its entry under `<common dir>/worktrees/`, when both are certain and
    /// git itself would remove it with a single `--force` (it is not locked).
    fn batch_removable(&self, path: &Path) -> Option<(PathBuf, PathBuf)> {
        if !path.is_dir() {
            return None;
        }
        // git records resolved paths: a relative or linked path is resolved once to match them.
        let root = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::fs::canonicalize(path).ok()?
        };
        let admin = self
            .recorded_admin(&root)
            .or_else(|| {
                let resolved = std::fs::canonicalize(&root).ok()?;
                self.recorded_admin(&resolved)
            })
            .or_else(|| self.entry_naming(&root))?;
        (!admin.join("locked").exists()).then_some((root, admin))
    }

    /// The entry under `<common dir>/worktrees/` whose `gitdir` file names `root/.git`: git's own record of
    /// the worktree, for one whose `.git` file does not lead back to it (an agent may have rewritten it; it
    /// is not followed).
    fn entry_naming(&self, root: &Path) -> Option<PathBuf> {
        let wanted = root.join(".git");
        std::fs::read_dir(self.common_dir.join("worktrees"))
            .ok()?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .find(|entry| {
                std::fs::read_to_string(entry.join("gitdir"))
                    .is_ok_and(|back| Path::new(back.trim_end()) == wanted)
            })
    }

    /// Runs `rm -rf -- <targets>`; whether it succeeded.
    fn remove_files(&self, targets: Vec<OsString>) -> bool {
        let spec = CommandSpec::new("rm")
            .arg("-rf")
            .arg("--")
            .args(targets)
            .cwd(&self.root)
            .timeout(self.options.timeout)
            .inherit_env("PATH")
            .env("LC_ALL", "C");
        process::run(&spec).is_ok_and(|output| output.success())
    }
}
