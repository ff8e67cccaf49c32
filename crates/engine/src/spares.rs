//! Worktrees made ahead while a gate waits, so the agents a human's approval lets start do not wait for
//! git to check out their files (issue 24: approve → spawn ≤ 20 ms). While the run's driver waits at a
//! gate, it makes up to [`MOST`] detached worktrees at the integration branch's head (`<run8>/spare-…`
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

use std::path::{Path, PathBuf};

use agency_core::gate::GateKind;
use agency_core::{Brief, RunId};

use crate::engine::Engine;
use crate::error::Result;
use crate::spare_pool::Spare;
use agency_exec::sandbox::Sandboxing;

/// The most worktrees made ahead: the agents that start together after an approval are usually a few (a
/// plan's first parallel group, a squad's tasks); more would cost a checkout each on every wait.
const MOST: usize = 4;

/// How a spare's directory name begins (`<run8>/spare-<uuid>`).
const PREFIX: &str = "spare-";

impl Engine {
    /// Where `run`'s worktrees go (absolute: git records worktrees by absolute path).
    fn run_worktrees(&self, run: RunId) -> PathBuf {
        let dir = self.options.worktrees.join(run.short());
        std::path::absolute(&dir).unwrap_or(dir)
    }

    /// Makes worktrees ahead while an expansion gate of `run` waits for a human (the plan, a lead's or a
    /// squad's: approving one writes the briefs that start next), and hands them to the sweep once none
    /// does — but not in a turn that `spawned` agents: removing the rest then would hold up their start
    /// (the sweep runs before they do), so that waits for the next turn. Making them is best effort: an
    /// agent whose worktree could not be made ahead has it made when it starts, where a failure is
    /// reported.
    pub(crate) fn tend_spares(&self, run: RunId, room: usize, spawned: bool) -> Result<()> {
        let expanding = self
            .store
            .pending_gates(Some(run))?
            .iter()
            .any(|g| matches!(g.kind, GateKind::T1Plan | GateKind::T2Lead | GateKind::T3Plan));
        if expanding {
            // Best effort: a failure costs the next agents their head start, not the run. Said once in the
            // run's log (verbose), then tried again quietly each turn.
            if let Err(error) = self.prepare_ahead(run, room)
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
        } else if !spawned {
            self.discard_spares();
        }
        Ok(())
    }

    /// While a gate holds `run` (and up to `room` agents could start after it), makes ready what the next
    /// agents need: the sandbox checked, and worktrees at the integration branch's head. Those made at an
    /// older head (the branch moved meanwhile) are handed to the sweep.
    pub(crate) fn prepare_ahead(&self, run: RunId, room: usize) -> Result<()> {
        if let Sandboxing::On(policy) = self.sandboxing() {
            // Remembered for the process: the first agent's own check finds the answer. A failure is that
            // agent's to report, where it is refused.
            let _ = policy.probe();
        }
        let wanted = room.min(MOST);
        if wanted == 0 {
            return Ok(());
        }
        let integration = self.branches(run).integration();
        let Some(commit) = self.repo.branch_commit_on_disk(&integration) else {
            return Ok(());
        };
        let mut ready = self.spares.ready();
        for stale in ready.extract_if(.., |s| s.commit != commit) {
            self.worktree_sweep.defer(stale.path);
        }
        let dir = self.run_worktrees(run);
        while ready.len() < wanted {
            std::fs::create_dir_all(&dir).map_err(|e| {
                crate::error::EngineError::State(format!("cannot create {}: {e}", dir.display()))
            })?;
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
    pub(crate) fn discard_spares(&self) {
        for spare in self.spares.ready().drain(..) {
            self.worktree_sweep.defer(spare.path);
        }
    }

    /// Hands to the sweep the spares a runner before this one left in `run`'s worktree directory (killed
    /// while a gate waited); a directory git never finished making is removed as it is.
    pub(crate) fn discard_left_spares(&self, run: RunId) {
        let Ok(entries) = std::fs::read_dir(self.run_worktrees(run)) else {
            return;
        };
        for entry in entries.flatten() {
            if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
                continue;
            }
            let path = entry.path();
            if path.join(".git").exists() {
                self.worktree_sweep.defer(path);
            } else {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }

    /// Moves a spare detached at `rev`'s commit to `dest`, the brief's worktree path, when there is one;
    /// `Ok(false)` otherwise (the caller makes the worktree). Asks git nothing: `rev`'s commit is read
    /// from its ref file, and a branch whose commit that does not tell is not matched.
    pub(crate) fn adopt_spare(&self, rev: &str, dest: &Path) -> Result<bool> {
        let mut ready = self.spares.ready();
        if ready.is_empty() || dest.exists() {
            return Ok(false);
        }
        let Some(commit) = self.repo.branch_commit_on_disk(rev) else {
            return Ok(false);
        };
        let Some(at) = ready.iter().position(|s| s.commit == commit) else {
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
        self.worktree_sweep.defer(spare.path);
        Ok(false)
    }

    /// [`Engine::adopt_spare`] for a writer: the spare, moved to `dest`, on a new `branch` at `base`'s
    /// commit (one git process, no file checked out: the spare already has that commit's files).
    pub(crate) fn adopt_spare_on_branch(
        &self,
        brief: &Brief,
        base: &str,
        branch: &str,
        dest: &Path,
    ) -> Result<bool> {
        if !self.adopt_spare(base, dest)? {
            return Ok(false);
        }
        let worktree = self.repo.open_linked(dest)?;
        if let Err(err) = worktree.run_git(&["checkout", "--quiet", "-b", branch]) {
            // The branch exists (a resumed brief whose worktree was removed): checked out as when the
            // worktree is made for it; git says why when that fails too.
            if !self.repo.branch_exists(branch)? {
                return Err(crate::error::EngineError::State(format!(
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
