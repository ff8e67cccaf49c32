//! Git for a run: the integration branch, one branch per workstream, one branch and worktree per brief,
//! commits on an agent's behalf, and merges that report conflicts instead of resolving them.
//!
//! ```text
//! base ── agency/<run8>/integration ── agency/<run8>/<ws>/work ── agency/<run8>/<ws>/<brief id>
//! ```
//! Brief branches merge into their workstream branch once verified; workstream branches merge into the
//! integration branch one at a time, each merge re-verified.
//!
//! A brief's branch and worktree are named by its whole id, and once made they are recorded on the brief;
//! the recorded ones win, so a run recorded by an earlier build (which named them by the 8-digit short id)
//! resumes in the same places.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agency_core::{Brief, RunId};
use agency_exec::{MergeChain, MergeOutcome, Repo, WorktreeSweep, brief_branch_name, sanitize_ref_component};
use agency_signoff::CheckoutPlace;

use crate::error::{EngineError, Result};

/// The git remote a runner shares a run's branches through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedRemote {
    /// The remote's name in this runner's repository (`origin` in a worker's clone).
    pub name: String,
    /// Whether this runner drives the run (see the module docs for what that changes).
    pub driver: bool,
    /// The credentials each fetch and push gets, if the remote's URL carried any (never written to disk).
    pub access: agency_exec::RemoteAccess,
}

impl SharedRemote {
    /// The error for a fetch or push through this remote that failed: `what` was being done.
    pub(crate) fn failed(&self, what: &str, err: &agency_exec::GitError) -> EngineError {
        EngineError::State(format!("{what} through git remote {}: {err}", self.name))
    }
}

/// The run's branches and worktrees.
#[derive(Debug, Clone)]
pub struct RunBranches {
    repo: Repo,
    run: RunId,
    worktrees: PathBuf,
    known: KnownBranches,
    sweep: WorktreeSweep,
    /// The remote the run's branches are shared through, if any ([`crate::remote`]).
    remote: Option<SharedRemote>,
}

/// How long a worktree directory without its `.git` is watched for a dead runner's git to finish with it.
const DEBRIS_SETTLE: Duration = Duration::from_secs(2);

/// Branches this runner has made or seen, so the run's shared branches (integration, workstreams) are
/// looked up once, not once per slice. A runner never deletes them while a run is live.
#[derive(Debug, Clone, Default)]
pub struct KnownBranches(Arc<Mutex<HashSet<String>>>);

impl KnownBranches {
    fn contains(&self, branch: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(branch)
    }

    fn insert(&self, branch: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(branch.to_owned());
    }
}

impl RunBranches {
    /// Branches of `run` in `repo`; worktrees go under `worktrees_root/<run8>/`; `known` remembers the
    /// shared branches that exist and `sweep` removes the worktrees finished with (share both between the
    /// calls of one runner; the sweep must be `repo`'s).
    pub fn new(
        repo: Repo,
        run: RunId,
        worktrees_root: &Path,
        known: KnownBranches,
        sweep: WorktreeSweep,
    ) -> Self {
        let worktrees = worktrees_root.join(run.short());
        RunBranches {
            repo,
            run,
            worktrees,
            known,
            sweep,
            remote: None,
        }
    }

    /// Whether the run's branches are shared through a remote ([`crate::remote`]).
    pub(crate) fn is_shared(&self) -> bool {
        self.remote.is_some()
    }

    /// These branches, shared through `remote` when it is set ([`crate::remote`]).
    pub fn shared_through(mut self, remote: Option<SharedRemote>) -> Self {
        self.remote = remote;
        self
    }

    /// `agency/<run8>`: what every branch of the run is under.
    fn prefix(&self) -> String {
        format!("agency/{}", self.run.short())
    }

    /// Whether `branch` is one only the driver moves: the integration branch or a workstream's.
    fn driver_owns(&self, branch: &str) -> bool {
        branch == self.integration() || (branch.starts_with(&self.prefix()) && branch.ends_with("/work"))
    }

    /// Fetches the run's branches from the shared remote and sets the local ones of `wanted` the remote has
    /// to its commits; the driver's own integration and workstream branches only when it lacks them
    /// ([`crate::remote`]). Three git processes (fetch, read the tips, move what differs); none without a
    /// remote.
    pub fn fetch(&self, wanted: &[String]) -> Result<()> {
        let Some(remote) = &self.remote else {
            return Ok(());
        };
        let prefix = self.prefix();
        self.repo
            .fetch_under(&remote.name, &prefix, &remote.access)
            .map_err(|e| remote.failed("fetching the run's branches", &e))?;
        let tips = self.repo.tips_under(&remote.name, &prefix)?;
        let mut updates = Vec::new();
        for branch in wanted {
            let Some(theirs) = tips.fetched.get(branch) else {
                continue;
            };
            match tips.local.get(branch) {
                Some(ours) if ours == theirs => {}
                Some(_) if remote.driver && self.driver_owns(branch) => {}
                _ => updates.push((branch.clone(), theirs.clone())),
            }
        }
        self.repo.set_branches(&updates)?;
        Ok(())
    }

    /// Pushes `branches` to the shared remote, never forced; nothing without a remote.
    pub fn push(&self, branches: &[&str]) -> Result<()> {
        let Some(remote) = &self.remote else {
            return Ok(());
        };
        self.repo
            .push_branches(&remote.name, branches, &remote.access)
            .map_err(|e| remote.failed(&format!("pushing {}", branches.join(", ")), &e))
    }

    /// Whether the brief's worktree is on this machine: always on one machine; through a remote, only for
    /// the runner that ran its agent (the driver verifies a worker's slice from its pushed branch).
    pub fn worktree_is_here(&self, brief: &Brief) -> bool {
        self.remote.is_none() || self.worktree_path(brief).join(".git").exists()
    }

    /// The branches `brief` starts from that [`crate::remote::fetch_for_start`] always fetches: the
    /// integration branch, its workstream's, and its own unless its worktree is on this machine.
    ///
    /// Its own branch is on the remote when a runner that held it before pushed its slice and then died
    /// before it reported (the brief was taken back): the runner taking it over goes on from that work, as
    /// it would from the worktree left behind on one machine, and its push is a fast-forward. Made afresh
    /// from the workstream branch instead, its push would be refused (pushes are never forced) and the
    /// brief would fail although it did its work. A worktree already on this machine (it ran the brief
    /// before) is used as it is, and its branch is not moved.
    pub fn to_start(&self, brief: &Brief) -> Vec<String> {
        let mut wanted = vec![self.integration(), self.workstream(&brief.workstream)];
        if !self.worktree_is_here(brief) {
            wanted.push(self.brief(brief));
        }
        wanted
    }

    /// The repository.
    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// `agency/<run8>/integration`: where verified workstreams land; what the human merges.
    pub fn integration(&self) -> String {
        format!("agency/{}/integration", self.run.short())
    }

    /// `agency/<run8>/<ws>/work`: where a workstream's verified briefs land.
    pub fn workstream(&self, workstream: &str) -> String {
        format!(
            "agency/{}/{}/work",
            self.run.short(),
            sanitize_ref_component(workstream)
        )
    }

    /// The brief's own branch: the one recorded on it, else the one made for it.
    pub fn brief(&self, brief: &Brief) -> String {
        brief
            .branch
            .clone()
            .unwrap_or_else(|| brief_branch_name(&brief.run, &brief.workstream, &brief.id))
    }

    /// Creates the integration branch at `base` unless it exists.
    pub fn ensure_integration(&self, base: &str) -> Result<()> {
        self.ensure_branch(&self.integration(), base)
    }

    /// Creates the workstream branch at the integration branch's head unless it exists.
    pub fn ensure_workstream(&self, workstream: &str) -> Result<String> {
        let branch = self.workstream(workstream);
        self.ensure_branch(&branch, &self.integration())?;
        Ok(branch)
    }

    /// Creates `branch` at `base` unless it exists. Runners sharing the repository (a driver and an
    /// `agency worker` starting a workstream's first agents at once) race to create it from the same
    /// base: a failure because the other one just did is no failure.
    fn ensure_branch(&self, branch: &str, base: &str) -> Result<()> {
        if self.known.contains(branch) {
            return Ok(());
        }
        if !self.repo.branch_exists(branch)? && self.remote.is_some() {
            // Another runner may have made it already.
            self.fetch(&[branch.to_owned()])?;
        }
        if !self.repo.branch_exists(branch)? {
            match self.repo.create_branch(branch, base) {
                Err(_) if self.repo.branch_exists(branch)? => {}
                created => created?,
            }
            if self.push(&[branch]).is_err() {
                // Made on the remote meanwhile by another runner (a worker starting the workstream's first
                // agent as the driver starts another: both push a new branch, and git refuses the second
                // with "reference already exists"). A worker takes that one. The driver owns the branch:
                // the other runner made it from the same integration branch or an older head of it, so
                // pushing again is a fast-forward, or nothing when they are equal; a remote branch that
                // is not an ancestor of the driver's is refused again, and that refusal is the error.
                if self.remote.as_ref().is_some_and(|r| r.driver) {
                    self.push(&[branch])?;
                } else {
                    self.fetch(&[branch.to_owned()])?;
                }
            }
        }
        self.known.insert(branch);
        Ok(())
    }

    /// The brief's worktree path: the one recorded on it, else `<worktrees>/<run8>/<brief id>`.
    pub fn worktree_path(&self, brief: &Brief) -> PathBuf {
        match &brief.worktree {
            // Through a remote, a path recorded by another runner is on its machine, not this one's.
            Some(recorded) if self.remote.is_none() || Path::new(recorded).starts_with(&self.worktrees) => {
                PathBuf::from(recorded)
            }
            _ => self.worktrees.join(brief.id.whole().to_string()),
        }
    }

    /// Creates (or reuses, on resume) the brief's branch from `base` and its worktree.
    pub fn prepare_worktree(&self, brief: &Brief, base: &str) -> Result<(String, PathBuf)> {
        let branch = self.brief(brief);
        let path = self.worktree_path(brief);
        // A worktree handed to the sweep but wanted again before it (its brief starts over) stays.
        self.sweep.withdraw(&path);
        if self.existing_worktree(&path)? {
            return Ok((branch, path));
        }
        worktree_dir(&path)?;
        // The branch is new but for a resumed brief whose worktree was removed: try the common case first
        // (git refuses an existing branch before touching anything).
        if let Err(err) = self.repo.add_worktree(&path, &branch, base) {
            if !self.repo.branch_exists(&branch)? {
                return Err(err.into());
            }
            self.repo.checkout_worktree(&path, &branch)?;
        }
        Ok((branch, path))
    }

    /// A detached worktree at `rev` for a brief that only reads (reused on resume).
    pub fn prepare_detached(&self, brief: &Brief, rev: &str) -> Result<PathBuf> {
        let path = self.worktree_path(brief);
        self.sweep.withdraw(&path);
        if self.existing_worktree(&path)? {
            return Ok(path);
        }
        worktree_dir(&path)?;
        self.repo.add_detached_worktree(&path, rev)?;
        Ok(path)
    }

    /// Whether a worktree is already at `path` (a resumed brief's). A runner killed with SIGKILL leaves
    /// its git child running (each child has its own process group), so a worktree it was making or
    /// removing may still be changing when the next runner looks: that is given a moment to settle, and a
    /// directory left without its `.git` is cleared so the worktree can be made again.
    fn existing_worktree(&self, path: &Path) -> Result<bool> {
        // A brief starting for the first time, the common case: nothing there, asked once.
        if !path.exists() {
            return Ok(false);
        }
        let is_worktree = || path.join(".git").exists();
        let deadline = Instant::now() + DEBRIS_SETTLE;
        while path.exists() && !is_worktree() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if is_worktree() || !path.exists() {
            return Ok(is_worktree());
        }
        std::fs::remove_dir_all(path).map_err(|e| {
            crate::error::EngineError::State(format!(
                "cannot clear the half-made worktree {}: {e}",
                path.display()
            ))
        })?;
        self.repo.prune_worktrees()?;
        Ok(false)
    }

    /// Commits whatever the agent left in its worktree, on its behalf: whether there was anything to commit
    /// (the new commit is the tip of the brief's branch).
    pub fn commit_brief(&self, brief: &Brief) -> Result<bool> {
        let worktree = self.repo.open_linked(&self.worktree_path(brief))?;
        let message = format!(
            "{}: {} (agency brief {})",
            brief.workstream,
            brief.title,
            brief.id.short()
        );
        Ok(worktree.stage_and_commit(&message)?)
    }

    /// Merges `from` into `into` in a scratch worktree; through a remote, `into` is pushed unless the merge
    /// conflicted (also when it was up to date: a push a stopped driver failed to make is made again).
    pub fn merge(&self, into: &str, from: &str, message: &str) -> Result<MergeOutcome> {
        let outcome = self.repo.merge_into(into, from, &self.merge_scratch(), message)?;
        if !matches!(outcome, MergeOutcome::Conflict { .. }) {
            self.push(&[into])?;
        }
        Ok(outcome)
    }

    /// Merges into `into` one after another, the branch moved once per [`MergeChain::settle`].
    pub fn merge_chain(&self, into: &str) -> Result<MergeChain<'_>> {
        Ok(self.repo.merge_chain(into, &self.merge_scratch())?)
    }

    /// Where a merge git cannot make without a checkout is made.
    fn merge_scratch(&self) -> PathBuf {
        self.worktrees
            .join(format!("merge-{}", agency_core::BriefId::new().short()))
    }

    /// Removes a brief's worktree (its branch stays for review) at the runner's next sweep, with the other
    /// worktrees it finished with: one process for all of them ([`WorktreeSweep`]). One a killed runner
    /// never swept is a worktree of a brief that has ended, which nothing starts in again (a retry is a new
    /// brief, with a worktree of its own) and `agency gc` collects once the run is finished.
    pub fn remove_worktree(&self, brief: &Brief) {
        let path = self.worktree_path(brief);
        if path.exists() {
            self.sweep.defer(path);
        }
    }

    /// Removes a brief's worktree at once, for a brief that starts again (maybe on another runner, whose
    /// new worktree at the same path a later sweep here must not take away).
    pub fn remove_worktree_now(&self, brief: &Brief) -> Result<()> {
        let path = self.worktree_path(brief);
        self.sweep.withdraw(&path);
        if path.exists() {
            self.repo.remove_worktree(&path, true)?;
        }
        Ok(())
    }

    /// Where the run's sign-offs and verify commands make their clean checkouts: beside its briefs'
    /// worktrees, so `agency gc` collects what a killed runner left there; removed by the runner's sweep.
    pub fn checkouts(&self) -> CheckoutPlace {
        CheckoutPlace::Under {
            dir: self.worktrees.clone(),
            sweep: self.sweep.clone(),
        }
    }

    /// A scratch detached checkout path for re-verifying a branch.
    pub fn scratch_path(&self, label: &str) -> PathBuf {
        self.worktrees
            .join(format!("{label}-{}", agency_core::BriefId::new().short()))
    }
}

/// A fresh run id, from `fresh`, whose short form names no branch of `repo` yet. A run's branches carry
/// that short form (`agency/<run8>/…`), and a new run whose integration branch already existed would
/// build on another run's work; a repository keeps the branches of its finished runs until `agency gc`.
pub fn unused_run_id(repo: &Repo, mut fresh: impl FnMut() -> RunId) -> Result<RunId> {
    // With 10,000 runs' branches kept, a draw meets one of them about once in 430,000 (16^8 / 10,000): a
    // second draw is rare, a ninth would mean `fresh` is not random.
    for _ in 0..8 {
        let run = fresh();
        if !repo.has_branches_under(&format!("agency/{}", run.short()))? {
            return Ok(run);
        }
    }
    Err(crate::error::EngineError::State(
        "eight fresh run ids in a row name branches this repository already has under `agency/`".into(),
    ))
}

/// The full ref name of a local branch (`refs/heads/<branch>`): what the runner resolves a branch by, so it
/// means that branch even if a tag has the same name, and git need not be asked while the branch is a loose
/// ref ([`Repo::rev_parse_all`]).
pub fn full_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

/// Makes the directory a worktree goes in; the error names it.
fn worktree_dir(path: &std::path::Path) -> Result<()> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    std::fs::create_dir_all(parent).map_err(|e| {
        crate::error::EngineError::State(format!(
            "cannot make the worktree directory {}: {e}",
            parent.display()
        ))
    })
}

/// What the executors' unit tests share: a repository with one commit and the run's branches over it.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;
    use std::process::Command;

    use agency_core::RunId;
    use agency_exec::{GitOptions, Repo, WorktreeSweep};

    use super::{KnownBranches, RunBranches};

    /// Runs git in `dir` with a fixed identity and no user or system configuration; its trimmed stdout.
    pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// A repository at `work` (made) on `main` with `notes.txt` committed; the repository and that commit.
    pub(crate) fn repo_at(work: &Path) -> (Repo, String) {
        std::fs::create_dir_all(work).unwrap();
        git(work, &["init", "--quiet", "--initial-branch", "main"]);
        std::fs::write(work.join("notes.txt"), "a\n").unwrap();
        git(work, &["add", "notes.txt"]);
        git(work, &["commit", "--quiet", "-m", "base"]);
        let base = git(work, &["rev-parse", "HEAD"]);
        (Repo::open(work, GitOptions::default()).unwrap(), base)
    }

    /// `run`'s branches in `repo`, its worktrees under `worktrees`, the integration branch at `base`.
    pub(crate) fn run_branches(repo: &Repo, run: RunId, worktrees: &Path, base: &str) -> RunBranches {
        let branches = RunBranches::new(
            repo.clone(),
            run,
            worktrees,
            KnownBranches::default(),
            WorktreeSweep::new(repo.clone()),
        );
        branches.ensure_integration(base).unwrap();
        branches
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use agency_core::brief::BriefPlacement;
    use agency_core::{Brief, BriefId, NewBrief, RunId, Tier};
    use agency_exec::{GitOptions, RemoteAccess, Repo, WorktreeSweep};

    use super::testing::git;
    use super::{KnownBranches, RunBranches, SharedRemote};

    /// A runner's repository with a commit, and a bare remote whose hook makes each new workstream branch
    /// itself, at the pushed commit, and refuses the push as git does when another runner's push created
    /// it a moment earlier ("reference already exists"): the race of a driver and a worker starting a
    /// workstream's first agents at once.
    fn racing_remote(dir: &Path) -> (Repo, String) {
        let remote = agency_testkit::git::bare_remote(dir.join("remote.git")).unwrap();
        agency_testkit::git::pre_receive_hook(
            &remote,
            "#!/bin/sh\nzero=0000000000000000000000000000000000000000\nwhile read old new ref; do\n  \
             case \"$ref\" in\n    */work) if [ \"$old\" = \"$zero\" ]; then\n      \
             env -u GIT_QUARANTINE_PATH git update-ref \"$ref\" \"$new\" || exit 2\n      \
             echo \"error: cannot lock ref '$ref': reference already exists\" >&2; exit 1\n    fi ;;\n  \
             esac\ndone\n",
        )
        .unwrap();
        let work = dir.join("runner");
        std::fs::create_dir(&work).unwrap();
        git(&work, &["init", "--quiet", "--initial-branch", "main"]);
        std::fs::write(work.join("a.txt"), "a\n").unwrap();
        git(&work, &["add", "a.txt"]);
        git(&work, &["commit", "--quiet", "-m", "base"]);
        git(&work, &["remote", "add", "origin", remote.to_str().unwrap()]);
        let base = git(&work, &["rev-parse", "HEAD"]);
        (Repo::open(&work, GitOptions::default()).unwrap(), base)
    }

    fn branches(repo: &Repo, dir: &Path, driver: bool) -> RunBranches {
        RunBranches::new(
            repo.clone(),
            RunId::new(),
            &dir.join("worktrees"),
            KnownBranches::default(),
            WorktreeSweep::new(repo.clone()),
        )
        .shared_through(Some(SharedRemote {
            name: "origin".into(),
            driver,
            access: RemoteAccess::default(),
        }))
    }

    /// An implementer brief of `run`'s workstream `ws-a`.
    fn slice_of(run: &RunBranches) -> Brief {
        NewBrief {
            tier: Tier::T4,
            workstream: "ws-a".into(),
            title: "fix".into(),
            personality: None,
            instructions: "fix it".into(),
            inputs: vec![],
            variety: None,
            contract: None,
            depends_on: vec![],
        }
        .into_brief(BriefPlacement {
            id: BriefId::new(),
            run: run.run,
            parent: None,
            goal_anchor: "goal".into(),
            retry_budget: 1,
            depends_on: vec![],
            created_at: chrono::Utc::now(),
        })
    }

    #[test]
    fn the_runner_taking_over_a_slice_a_dead_runner_pushed_starts_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, base) = racing_remote(dir.path());
        let driver = branches(&repo, dir.path(), true);
        driver.ensure_integration(&base).unwrap();
        let workstream = driver.ensure_workstream("ws-a").unwrap();
        let brief = slice_of(&driver);

        // The first holder, in a clone of its own, commits and pushes the slice, then dies before it
        // reports: the brief is taken back with its branch on the remote.
        let clone_of = |name: &str| {
            let path = dir.path().join(name);
            let remote = dir.path().join("remote.git");
            git(
                dir.path(),
                &[
                    "clone",
                    "--quiet",
                    remote.to_str().unwrap(),
                    path.to_str().unwrap(),
                ],
            );
            let repo = Repo::open(&path, GitOptions::default()).unwrap();
            let mut run = branches(&repo, &dir.path().join(format!("{name}-worktrees")), false);
            run.run = driver.run;
            (path, run)
        };
        let (_, dead) = clone_of("dead");
        dead.fetch(&dead.to_start(&brief)).unwrap();
        let (_, worktree) = dead.prepare_worktree(&brief, &workstream).unwrap();
        std::fs::write(worktree.join("a.txt"), "first holder\n").unwrap();
        assert!(dead.commit_brief(&brief).unwrap());
        dead.push(&[&dead.brief(&brief)]).unwrap();

        // The runner taking it over on another machine starts from that work; its own commit on top is
        // pushed as a fast-forward.
        let (_, next) = clone_of("next");
        next.fetch(&next.to_start(&brief)).unwrap();
        let (_, worktree) = next.prepare_worktree(&brief, &workstream).unwrap();
        assert_eq!(
            std::fs::read_to_string(worktree.join("a.txt")).unwrap(),
            "first holder\n"
        );
        std::fs::write(worktree.join("b.txt"), "next holder\n").unwrap();
        assert!(next.commit_brief(&brief).unwrap());
        next.push(&[&next.brief(&brief)]).unwrap();

        // With its worktree on this machine, a runner uses it as it is and does not move its branch.
        assert!(next.worktree_is_here(&brief));
        assert!(!next.to_start(&brief).contains(&next.brief(&brief)));
    }

    #[test]
    fn a_workstream_branch_another_runner_pushed_first_is_no_failure() {
        for driver in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let (repo, base) = racing_remote(dir.path());
            let run = branches(&repo, dir.path(), driver);
            run.ensure_integration(&base).unwrap();
            // The push that creates the branch is refused: it is on the remote, at the same commit.
            let made = run.ensure_workstream("ws-a").unwrap();
            assert_eq!(
                git(&dir.path().join("remote.git"), &["rev-parse", &made]),
                base,
                "driver: {driver}"
            );
            assert!(repo.branch_exists(&made).unwrap());
        }
    }
}
