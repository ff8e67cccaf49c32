//! Worktrees made ahead while a gate waits, so the agents a human's approval lets start do not wait for
//! git to check out their files (issue 24: approve → spawn ≤ 20 ms). While the run's driver waits at a
//! gate, it makes up to [`agency_flow::start::MOST_SPARES`] detached worktrees at the integration branch's head (`<run8>/spare-…`
//! beside the briefs' own) and checks the sandbox once, so the first agent does not pay for either. A
//! brief that starts at that same commit — a reader of the integration branch, or a writer whose branch
//! starts there (a new workstream's) — is given one: it is renamed to the brief's own path
//! ([`agency_exec::Repo::adopt_worktree`], no git process), and a writer's branch made in it.
//!
//! Only a run with a human at its gates makes them (not `--auto-approve`). Spares never outlive the wait:
//! the first turn with no expansion gate pending that starts no agent hands every one left to the worktree
//! sweep, and so do the end of a drive and the start of the next one (a runner killed while a gate
//! waited). One that has a record nowhere else is still a worktree under `<run8>/`, which `agency gc`
//! collects with the run's others once it is finished.
//!
//! When spares are made, kept or given up, and which one a brief is given, is decided in
//! [`agency_flow::start`]; a [`Shelf`] carries it out with the repository, the pool and the sweep alone.

use std::path::{Path, PathBuf};

use agency_core::{Brief, RunId};
use agency_exec::sandbox::Sandboxing;
use agency_exec::{Repo, WorktreeSweep};
use agency_flow::start::{SpareStep, gate_expands, spare_for, spare_step};

use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::spare_pool::{Spare, Spares};

/// How a spare's directory name begins (`<run8>/spare-<uuid>`).
const PREFIX: &str = "spare-";

/// What making, handing out and giving up spares needs of the runner: the repository, the pool, the sweep
/// that removes worktrees, and where the run's worktrees go. References only: one is made per use.
pub(crate) struct Shelf<'a> {
    pub(crate) repo: &'a Repo,
    pub(crate) pool: &'a Spares,
    pub(crate) sweep: &'a WorktreeSweep,
    /// Where worktrees are made (team's `.agency/worktrees`); a run's are under `<run8>/`.
    pub(crate) worktrees: &'a Path,
}

impl Engine {
    /// This runner's spares, as a [`Shelf`].
    pub(crate) fn shelf(&self) -> Shelf<'_> {
        Shelf {
            repo: &self.repo,
            pool: &self.spares,
            sweep: &self.worktree_sweep,
            worktrees: &self.options.worktrees,
        }
    }

    /// Makes worktrees ahead while an expansion gate of `run` waits for a human (the plan, a lead's or a
    /// squad's: approving one writes the briefs that start next), and hands them to the sweep once none
    /// does — but not in a turn that `spawned` agents ([`agency_flow::start::spare_step`]). Making them is
    /// best effort: an agent whose worktree could not be made ahead has it made when it starts, where a
    /// failure is reported.
    pub(crate) fn tend_spares(&self, run: RunId, room: usize, spawned: bool) -> Result<()> {
        let expanding = self
            .store
            .pending_gates(Some(run))?
            .iter()
            .any(|g| gate_expands(g.kind));
        match spare_step(expanding, room, spawned) {
            SpareStep::Make { wanted } => {
                if let Sandboxing::On(policy) = self.sandboxing() {
                    // Remembered for the process: the first agent's own check finds the answer. A failure
                    // is that agent's to report, where it is refused.
                    let _ = policy.probe();
                }
                let integration = self.branches(run).integration();
                // Best effort: a failure costs the next agents their head start, not the run. Said once in
                // the run's log (verbose), then tried again quietly each turn.
                if let Err(error) = self.shelf().make(run, &integration, wanted)
                    && !self
                        .spares
                        .failure_logged
                        .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    let _ = self.log_at(
                        run,
                        None,
                        "verbose",
                        "SPARES",
                        format!("could not make a worktree ahead while the gate waits ({error}); agents make theirs when they start"),
                    );
                }
            }
            SpareStep::Discard => self.shelf().discard(),
            SpareStep::Keep => {}
        }
        Ok(())
    }
}

impl Shelf<'_> {
    /// Where `run`'s worktrees go (absolute: git records worktrees by absolute path).
    fn run_worktrees(&self, run: RunId) -> PathBuf {
        let dir = self.worktrees.join(run.short());
        std::path::absolute(&dir).unwrap_or(dir)
    }

    /// Keeps `wanted` worktrees at the head of `integration`, the branch the next agents start at. Those
    /// made at an older head (the branch moved meanwhile) are handed to the sweep.
    pub(crate) fn make(&self, run: RunId, integration: &str, wanted: usize) -> Result<()> {
        if wanted == 0 {
            return Ok(());
        }
        let Some(commit) = self.repo.branch_commit_on_disk(integration) else {
            return Ok(());
        };
        let mut ready = self.pool.ready();
        for stale in ready.extract_if(.., |s| s.commit != commit) {
            self.sweep.defer(stale.path);
        }
        let dir = self.run_worktrees(run);
        while ready.len() < wanted {
            std::fs::create_dir_all(&dir)
                .map_err(|e| EngineError::State(format!("cannot create {}: {e}", dir.display())))?;
            let path = dir.join(format!("{PREFIX}{}", agency_core::BriefId::new().whole()));
            self.repo.add_detached_worktree(&path, &commit)?;
            ready.push(Spare {
                path,
                commit: commit.clone(),
            });
        }
        Ok(())
    }

    /// Hands every spare to the worktree sweep (the wait is over, or the drive).
    pub(crate) fn discard(&self) {
        for spare in self.pool.ready().drain(..) {
            self.sweep.defer(spare.path);
        }
    }

    /// Hands to the sweep the spares a runner before this one left in `run`'s worktree directory (killed
    /// while a gate waited); a directory git never finished making is removed as it is.
    pub(crate) fn discard_left(&self, run: RunId) {
        let Ok(entries) = std::fs::read_dir(self.run_worktrees(run)) else {
            return;
        };
        for entry in entries.flatten() {
            if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
                continue;
            }
            let path = entry.path();
            if path.join(".git").exists() {
                self.sweep.defer(path);
            } else {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }

    /// Moves a spare detached at `rev`'s commit to `dest`, the brief's worktree path, when there is one
    /// ([`agency_flow::start::spare_for`]); `Ok(false)` otherwise (the caller makes the worktree). Asks git
    /// nothing: `rev`'s commit is read from its ref file, and a branch whose commit that does not tell is
    /// not matched.
    pub(crate) fn adopt(&self, rev: &str, dest: &Path) -> Result<bool> {
        let mut ready = self.pool.ready();
        if ready.is_empty() {
            return Ok(false);
        }
        let Some(commit) = self.repo.branch_commit_on_disk(rev) else {
            return Ok(false);
        };
        let Some(at) = spare_for(ready.iter().map(|s| s.commit.as_str()), &commit, dest.exists()) else {
            return Ok(false);
        };
        let spare = ready.swap_remove(at);
        drop(ready);
        let dest = std::path::absolute(dest).unwrap_or_else(|_| dest.to_path_buf());
        match self.repo.adopt_worktree(&spare.path, &dest, &commit) {
            Ok(true) => return Ok(true),
            // Its git entry is not as it was made (changed, or on another file system): not used.
            Ok(false) => {}
            // Best effort, like making it: the brief's worktree is made the usual way, which reports
            // what is wrong if anything still is.
            Err(_) => {}
        }
        self.sweep.defer(spare.path);
        Ok(false)
    }

    /// [`Shelf::adopt`] for a writer: the spare, moved to `dest`, on a new `branch` at `base`'s commit (one
    /// git process, no file checked out: the spare already has that commit's files).
    pub(crate) fn adopt_on_branch(
        &self,
        brief: &Brief,
        base: &str,
        branch: &str,
        dest: &Path,
    ) -> Result<bool> {
        if !self.adopt(base, dest)? {
            return Ok(false);
        }
        let worktree = self.repo.open_linked(dest)?;
        if let Err(err) = worktree.run_git(&["checkout", "--quiet", "-b", branch]) {
            // The branch exists (a resumed brief whose worktree was removed): checked out as when the
            // worktree is made for it; git says why when that fails too.
            if !self.repo.branch_exists(branch)? {
                return Err(EngineError::State(format!(
                    "{}: cannot start branch {branch} in {}: {err}",
                    brief.title,
                    dest.display()
                )));
            }
            worktree.run_git(&["checkout", "--quiet", branch])?;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    //! The spares executor on its own: a repository, a pool and a sweep, no `Engine`.

    use agency_core::RunId;
    use agency_exec::WorktreeSweep;

    use super::Shelf;
    use crate::branches::testing::{git, repo_at, run_branches};
    use crate::spare_pool::Spares;

    #[test]
    fn a_spare_made_at_the_integration_head_is_given_once_and_only_at_that_commit() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("repo");
        let (repo, base) = repo_at(&work);
        let run = RunId::new();
        let worktrees = dir.path().join("worktrees");
        let branches = run_branches(&repo, run, &worktrees, &base);
        let (pool, sweep) = (Spares::default(), WorktreeSweep::new(repo.clone()));
        let shelf = Shelf {
            repo: &repo,
            pool: &pool,
            sweep: &sweep,
            worktrees: &worktrees,
        };
        let integration = branches.integration();
        shelf.make(run, &integration, 2).unwrap();
        assert_eq!(pool.ready().len(), 2);
        // Kept at two however often it is asked.
        shelf.make(run, &integration, 2).unwrap();
        assert_eq!(pool.ready().len(), 2);

        // A brief starting at another commit is given none.
        git(&work, &["branch", "elsewhere", &base]);
        git(&work, &["commit", "--quiet", "--allow-empty", "-m", "moved"]);
        // Briefs' worktrees are beside the spares, under `<run8>/`.
        let beside = worktrees.join(run.short());
        let moved = beside.join("moved");
        assert!(!shelf.adopt("main", &moved).unwrap());
        assert_eq!(pool.ready().len(), 2);

        // At its commit, one is moved to the brief's path; never over a worktree already there.
        let first = beside.join("first");
        assert!(shelf.adopt(&integration, &first).unwrap());
        assert!(first.join("notes.txt").exists());
        assert_eq!(pool.ready().len(), 1);
        assert!(!shelf.adopt(&integration, &first).unwrap());
        assert_eq!(pool.ready().len(), 1);

        shelf.discard();
        assert!(pool.ready().is_empty());
    }
}
