//! Starting an agent for a brief this runner claimed: its sandbox, its worktree (a writer's own branch,
//! started from its pipeline predecessors' or its salvaged previous attempt's work; a reader's detached
//! checkout of what it judges), its inputs, feedback and personality, the link that reviews its teachback
//! and charge its usage, and the claim it holds while it runs.
//!
//! The engine gathers what a brief's agent needs (its runtime and sandbox, its inputs, feedback and
//! personality, its reviewer); two narrow contexts carry the start out: a [`Workbench`] makes its worktree
//! (the blackboard, the repository, the run's branches and the spares, nothing else), a [`Launcher`]
//! starts the agent under its claim (the blackboard, the runner's name, its lease and the agents'
//! limits). What a writer starts from and what a reader sees are decided in [`agency_flow::start`].

use std::path::PathBuf;
use std::sync::Arc;

use agency_core::event::payload;
use agency_core::event::payload::BriefStatusChange;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::GateKind;
use agency_core::tiers::BriefRole;
use agency_core::{Brief, BriefStatus, Tier};
use agency_exec::Repo;
use agency_exec::runtime::{Access, AgentLimits, AgentReport, AgentTask, Ending, ReportStatus, Runtime};
use agency_exec::sandbox::Sandboxing;
use agency_flow::start::{PreviousReport, ReaderSees, WriterBase};
use agency_llm::CancelToken;
use agency_store::{Blackboard, Change};

use crate::artifacts::{brief_artifact, diff_name, feedback_name, report_name};
use crate::branches::RunBranches;
use crate::brief_link::{BriefLink, Reviewer};
use crate::crew::{AgentEnd, Launches};
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::spares::Shelf;
use crate::task::{Input, call_meta, output_check, render_prompt, system_blocks};

impl Engine {
    /// The system prompt text of the personality a brief's agent speaks in: the one its brief names, else
    /// the registry's for its tier and its workstream's domain, else agency's own for the tier. A name the
    /// pool does not hold (a planner's typo) falls back to the tier's, with a log line saying so.
    fn personality_prompt(&self, brief: &Brief) -> Result<Option<String>> {
        let pool = &self.personalities;
        // T1 plans and accepts for the whole run: its domain is the registry's `strategy`. The plan is read
        // for a workstream's domain only where the registry would use it (one status read per agent start
        // saved where no registry is configured, the default).
        let domain = if brief.tier == Tier::T1 {
            "strategy".to_string()
        } else if !pool.reads_domain(brief.tier) {
            brief.workstream.clone()
        } else {
            crate::plan::approved(self, brief.run)?
                .and_then(|approved| {
                    approved
                        .plan
                        .workstream(&brief.workstream)
                        .map(|w| w.domain.clone())
                })
                .unwrap_or_else(|| brief.workstream.clone())
        };
        match pool.for_brief(brief.tier, &domain, brief.personality.as_deref()) {
            Ok(found) => Ok(found.map(|p| p.prompt.clone())),
            Err(err) => {
                let fallback = pool.for_brief(brief.tier, &domain, None).ok().flatten();
                self.log(
                    brief.run,
                    Some(brief.tier),
                    "PERSONALITY",
                    format!(
                        "{}: {err}; it speaks as {} instead",
                        brief.title,
                        fallback.map_or("agency's rules alone", |p| p.slug.as_str())
                    ),
                )?;
                Ok(fallback.map(|p| p.prompt.clone()))
            }
        }
    }

    /// Whether `brief` must wait for the budget instead of starting. An external agent (see
    /// [`Runtime::usage_unmetered`]) cannot be refused a call once it runs, so it does not start while one
    /// of its scopes has already spent past its limit — a resumed run, or a limit a human raised too
    /// little. That is reported as a refused call is (`budget_exhausted`, the `budget` gate), and the
    /// brief goes back to `pending` until the gate is decided. The built-in agent starts: its first call
    /// is refused by the metered provider.
    fn held_by_budget(&self, brief: &Brief) -> Result<bool> {
        let Some(ledger) = self.unmetered_ledger(self.runtimes.get(&brief.tier)) else {
            return Ok(false);
        };
        if !crate::budget::passed_limit(&self.store, &ledger, brief) {
            return Ok(false);
        }
        self.move_brief(
            brief,
            BriefStatus::Pending,
            BriefStatusChange::because("budget: its limit is already spent; waiting at the budget gate"),
        )?;
        Ok(true)
    }

    /// The reviewer of a brief's teachback: the parent tier's model, or a human when the gate is on.
    pub(crate) fn reviewer(&self, brief: &Brief) -> Reviewer {
        if self.config.visibility.gate_enabled(GateKind::Teachback) && !self.options.auto_approve {
            return Reviewer::Human {
                poll: self.options.poll,
            };
        }
        let parent = brief.tier.parent().unwrap_or(Tier::T1);
        match self.providers.get(&parent) {
            Some(provider) => Reviewer::Model(provider.clone()),
            None => Reviewer::Human {
                poll: self.options.poll,
            },
        }
    }

    /// Prepares the agent of a brief this runner has just claimed, to start with the others of `launches`.
    /// Returns `false` when it was not prepared (see [`Engine::held_by_budget`]); the brief is then pending
    /// again.
    pub(crate) fn spawn_agent(
        &self,
        launches: &mut Launches,
        brief: Brief,
        cancel: &CancelToken,
    ) -> Result<bool> {
        if self.held_by_budget(&brief)? {
            return Ok(false);
        }
        let role = BriefRole::of(&brief);
        let branches = self.branches(brief.run);
        // Through a shared remote, what it starts from (or judges) is fetched first.
        crate::remote::fetch_for_start(self.store.as_ref(), &branches, &brief)?;
        // A slice's T5 brief and T1's acceptance are sign-offs, not free agents.
        if matches!(role, BriefRole::Verifier | BriefRole::Accept) {
            self.spawn_signoff(launches, brief, cancel)?;
            return Ok(true);
        }
        let runtime = self
            .runtimes
            .get(&brief.tier)
            .cloned()
            .ok_or_else(|| EngineError::Config(format!("no runtime for {}", brief.tier)))?;
        let access = if role.writes() {
            Access::ReadWrite
        } else {
            Access::ReadOnly
        };
        // Before anything is made for it: an agent that cannot be sandboxed does not start.
        let sandbox = self.agent_sandbox(&brief, runtime.as_ref(), access)?;
        let workbench = Workbench {
            store: self.store.as_ref(),
            repo: &self.repo,
            branches: &branches,
            spares: self.shelf(),
        };
        let (worktree, workspace) = workbench.prepare_worktree(&brief, role)?;
        let inputs = workbench.inputs_of(&brief)?;
        let feedback = self.feedback_of(&brief)?;
        let personality = self.personality_prompt(&brief)?;
        let start = AgentStart {
            role,
            access,
            sandbox,
            worktree,
            workspace,
            inputs,
            feedback,
            personality,
            reviewer: self.reviewer(&brief),
            ledger: self.unmetered_ledger(Some(&runtime)),
            runtime,
            brief,
        };
        self.launcher().launch(launches, start, cancel);
        Ok(true)
    }

    /// What starting an agent under its claim needs of this runner ([`Launcher`]).
    fn launcher(&self) -> Launcher<'_> {
        Launcher {
            store: &self.store,
            worker: &self.options.worker,
            lease: self.lease(),
            limits: AgentLimits {
                repair_attempts: self.config.runner.repair_attempts,
                ..self.options.limits
            },
        }
    }

    /// What the previous attempt of this brief was told (stored as its `feedback/<id>` artifact). A first
    /// attempt has none, and is not looked up: feedback is only ever written with a retry, numbered from 1
    /// ([`crate::failure::retry`]), and copied to pipeline tasks that keep their attempt's number. What the
    /// attempt before reported and changed follows it ([`crate::previous`]).
    fn feedback_of(&self, brief: &Brief) -> Result<Option<String>> {
        if brief.attempt == 0 {
            return Ok(None);
        }
        self.artifact_of(brief.run, brief.id, feedback_name)?
            .map(|a| {
                crate::previous::remembered(
                    self.store.as_ref(),
                    &self.repo,
                    brief,
                    &String::from_utf8_lossy(&a.bytes),
                )
            })
            .transpose()
    }
}

/// An agent ready to start: its brief and everything the engine gathered for it.
pub(crate) struct AgentStart {
    pub(crate) brief: Brief,
    pub(crate) role: BriefRole,
    pub(crate) runtime: Arc<dyn Runtime>,
    pub(crate) access: Access,
    pub(crate) sandbox: Sandboxing,
    /// Its worktree, and the change that records it on the brief.
    pub(crate) worktree: PathBuf,
    pub(crate) workspace: Change,
    pub(crate) inputs: Vec<Input>,
    pub(crate) feedback: Option<String>,
    pub(crate) personality: Option<String>,
    pub(crate) reviewer: Reviewer,
    /// The ledger an external agent's reported usage is charged to (see [`Engine::unmetered_ledger`]).
    pub(crate) ledger: Option<crate::budget::SharedLedger>,
}

/// What starting an agent under its claim needs of the runner: the blackboard (its link's writes, the
/// claim's renewals), the runner's name, the claims' lease and the agents' limits.
pub(crate) struct Launcher<'a> {
    pub(crate) store: &'a Arc<dyn Blackboard>,
    pub(crate) worker: &'a str,
    pub(crate) lease: chrono::Duration,
    pub(crate) limits: AgentLimits,
}

impl Launcher<'_> {
    /// Adds `start`'s agent to `launches`: its `spawned` record and worktree written with the others
    /// started together, its run renewing its claim and stopped when the claim is lost.
    pub(crate) fn launch(&self, launches: &mut Launches, start: AgentStart, cancel: &CancelToken) {
        let AgentStart {
            brief,
            role,
            runtime,
            access,
            sandbox,
            worktree,
            workspace,
            inputs,
            feedback,
            personality,
            reviewer,
            ledger,
        } = start;
        let task = AgentTask {
            system: system_blocks(role, personality.as_deref()),
            shared_system_blocks: crate::task::SHARED_SYSTEM_BLOCKS,
            prompt: render_prompt(&brief, &inputs, feedback.as_deref()),
            access,
            ending: Ending::Report,
            limits: self.limits,
            env: agent_env(),
            sandbox,
            meta: call_meta(&brief),
            check_output: output_check(&brief),
            worktree,
            brief: brief.clone(),
        };
        // The agent's own token: a link that meets its reviewer's outage stop the agent with it.
        let cancel = cancel.child();
        let link =
            BriefLink::new(self.store.clone(), brief.clone(), reviewer, cancel.clone()).charging(ledger);
        // Where it works and that it started, written with the other agents started together. A crash
        // before that leaves a worktree nobody recorded: the brief is still `running` without `spawned`,
        // and its restart prepares the same one.
        let spawned = NewEvent::typed(
            brief.run,
            EventPayload::Spawned(payload::Spawned {
                title: brief.title.clone(),
                runtime: runtime.name().to_string(),
                attempt: brief.attempt,
                signoff: None,
            }),
        )
        .brief(brief.id)
        .tier(brief.tier);
        let id = brief.id;
        let claim = crate::crew::hold_claim(self.store.clone(), id, self.worker.to_string(), self.lease);
        let record = vec![workspace, Change::AppendEvent(spawned)];
        launches.add(record, async move {
            tokio::select! {
                outcome = runtime.run(&task, &link, &cancel) => {
                    // Stopped for its teachback reviewer's outage: that is its end, whatever it said after.
                    let end = match link.take_reviewer_outage() {
                        Some(outage) => AgentEnd::ReviewerOutage(Box::new(outage)),
                        None => AgentEnd::Finished(Box::new(outcome)),
                    };
                    (id, end)
                }
                () = claim => {
                    cancel.cancel();
                    (id, AgentEnd::ClaimLost)
                }
            }
        });
    }
}

/// What making a brief's worktree needs of the runner: the blackboard (its predecessors' and previous
/// attempt's records), the repository, the run's branches and the spares made ahead.
pub(crate) struct Workbench<'a> {
    pub(crate) store: &'a dyn Blackboard,
    pub(crate) repo: &'a Repo,
    pub(crate) branches: &'a RunBranches,
    pub(crate) spares: Shelf<'a>,
}

impl Workbench<'_> {
    /// Makes the brief's worktree; returns its path and the change that records it on the brief.
    pub(crate) fn prepare_worktree(&self, brief: &Brief, role: BriefRole) -> Result<(PathBuf, Change)> {
        let branches = self.branches;
        let workspace = |branch: Option<String>, path: &PathBuf| Change::SetWorkspace {
            id: brief.id,
            branch,
            worktree: Some(path.display().to_string()),
        };
        if role.writes() {
            let workstream = branches.ensure_workstream(&brief.workstream)?;
            let predecessors = self.predecessor_branches(brief)?;
            let salvaged = match predecessors.is_empty() {
                true => self.salvaged_base(brief)?,
                // A pipeline task starts from its predecessors whatever its previous attempt did.
                false => None,
            };
            let base = agency_flow::start::writer_base(&predecessors, salvaged.as_deref(), &workstream);
            if let WriterBase::Pipeline { first, merge_in } = base {
                self.merge_predecessors(brief, first, merge_in)?;
            }
            let base = base.branch();
            // A worktree made ahead at the base's commit saves checking the files out.
            let (branch, path) = (branches.brief(brief), branches.worktree_path(brief));
            if self.spares.adopt_on_branch(brief, base, &branch, &path)? {
                let change = workspace(Some(branch), &path);
                return Ok((path, change));
            }
            let (branch, path) = branches.prepare_worktree(brief, base)?;
            let change = workspace(Some(branch), &path);
            Ok((path, change))
        } else {
            // Readers see what they judge: a verifier its implementer's branch, the others the integration.
            let rev = match agency_flow::start::reader_sees(role, brief.parent) {
                ReaderSees::ParentBranch(parent) => self
                    .store
                    .get_brief(parent)?
                    .branch
                    .unwrap_or_else(|| branches.integration()),
                ReaderSees::Integration => branches.integration(),
            };
            let path = branches.worktree_path(brief);
            if self.spares.adopt(&rev, &path)? {
                let change = workspace(None, &path);
                return Ok((path, change));
            }
            let path = branches.prepare_detached(brief, &rev)?;
            let change = workspace(None, &path);
            Ok((path, change))
        }
    }

    /// Where a retried implementer starts when its previous attempt reported `partial`: from that
    /// attempt's branch, which holds the work it committed ([`agency_flow::start::salvages`]). `None`
    /// otherwise (a first attempt, a previous one that failed any other way).
    fn salvaged_base(&self, brief: &Brief) -> Result<Option<String>> {
        let Some((parent, previous_attempt)) =
            agency_flow::start::previous_attempt(brief.attempt, brief.parent)
        else {
            return Ok(None);
        };
        let Some(previous) = self
            .store
            .list_children(parent)?
            .into_iter()
            .find(|b| crate::previous::same_brief(b, brief) && b.attempt == previous_attempt)
        else {
            return Ok(None);
        };
        let Some(branch) = previous.branch.clone() else {
            return Ok(None);
        };
        let report = match brief_artifact(self.store, brief.run, previous.id, report_name)? {
            None => PreviousReport::Unread,
            Some(report) => match serde_json::from_slice::<AgentReport>(&report.bytes) {
                Ok(report) if report.status == ReportStatus::Partial => PreviousReport::Partial,
                Ok(_) => PreviousReport::Other,
                Err(_) => PreviousReport::Unread,
            },
        };
        if report != PreviousReport::Partial {
            return Ok(None);
        }
        let salvaged = agency_flow::start::salvages(report, self.repo.branch_exists(&branch)?);
        Ok(salvaged.then_some(branch))
    }

    /// The branches of `brief`'s pipeline predecessors that have one, in its `depends_on` order.
    fn predecessor_branches(&self, brief: &Brief) -> Result<Vec<String>> {
        let mut before = Vec::with_capacity(brief.depends_on.len());
        for id in &brief.depends_on {
            if let Some(branch) = self.store.get_brief(*id)?.branch {
                before.push(branch);
            }
        }
        Ok(before)
    }

    /// A pipeline task's branch, made at its first predecessor's branch (`first`) with the others
    /// (`merge_in`) merged in, when it has several and its branch is not there yet.
    fn merge_predecessors(&self, brief: &Brief, first: &str, merge_in: &[String]) -> Result<()> {
        let own = self.branches.brief(brief);
        if !merge_in.is_empty() && !self.repo.branch_exists(&own)? {
            self.repo.create_branch(&own, first)?;
            for other in merge_in {
                let message = format!("{}: start from {other}", brief.title);
                // A conflict leaves the branch as it was; every predecessor's diff is among the agent's inputs.
                self.branches.merge(&own, other, &message)?;
            }
        }
        Ok(())
    }

    /// The artifacts a brief reads, by name (the newest of each name), then its pipeline predecessors'
    /// diffs.
    pub(crate) fn inputs_of(&self, brief: &Brief) -> Result<Vec<Input>> {
        let mut inputs = Vec::new();
        let mut keep = |name: String, found: Option<agency_store::Artifact>| {
            if let Some(artifact) = found {
                inputs.push(Input {
                    name,
                    text: String::from_utf8_lossy(&artifact.bytes).into_owned(),
                });
            }
        };
        for name in &brief.inputs {
            keep(name.clone(), self.store.latest_artifact(brief.run, name)?);
        }
        for &predecessor in &brief.depends_on {
            keep(
                diff_name(predecessor),
                brief_artifact(self.store, brief.run, predecessor, diff_name)?,
            );
        }
        Ok(inputs)
    }
}

/// What commands an agent runs may see of the runner's environment: enough to find programs and write
/// temporary files, never the keys and tokens the runner itself holds.
fn agent_env() -> Vec<(String, String)> {
    ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok().map(|value| (name.to_string(), value)))
        .collect()
}

#[cfg(test)]
mod tests {
    //! The worktree executor on its own: a repository, a blackboard, the run's branches and a spares
    //! shelf, no `Engine` and no runtime.

    use std::path::Path;

    use agency_core::tiers::BriefRole;
    use agency_core::{Brief, BriefId, RunId, Tier};
    use agency_exec::{Repo, WorktreeSweep};
    use agency_store::conformance::sample_brief;
    use agency_store::{Blackboard, Change, NewArtifact, NewRun, SqliteBlackboard};

    use super::Workbench;
    use crate::artifacts::{diff_name, report_name};
    use crate::branches::RunBranches;
    use crate::branches::testing::{repo_at, run_branches};
    use crate::spare_pool::Spares;
    use crate::spares::Shelf;

    /// A brief of `run`'s workstream `ws-a`, not stored yet.
    fn brief(
        run: RunId,
        tier: Tier,
        title: &str,
        parent: Option<BriefId>,
        depends_on: Vec<BriefId>,
    ) -> Brief {
        Brief {
            tier,
            workstream: "ws-a".into(),
            parent,
            depends_on,
            ..sample_brief(run, title)
        }
    }

    /// `brief` stored with its branch recorded, its work (`file`) committed on it.
    fn worked(store: &dyn Blackboard, branches: &RunBranches, mut brief: Brief, file: &str) -> Brief {
        let workstream = branches.ensure_workstream("ws-a").unwrap();
        let (branch, worktree) = branches.prepare_worktree(&brief, &workstream).unwrap();
        std::fs::write(worktree.join(file), format!("{file}\n")).unwrap();
        assert!(branches.commit_brief(&brief).unwrap());
        brief.branch = Some(branch);
        store.insert_brief(&brief).unwrap();
        brief
    }

    fn has(path: &Path, file: &str) -> bool {
        path.join(file).exists()
    }

    struct Bench {
        _dir: tempfile::TempDir,
        repo: Repo,
        store: SqliteBlackboard,
        run: RunId,
        branches: RunBranches,
        pool: Spares,
        sweep: WorktreeSweep,
        worktrees: std::path::PathBuf,
    }

    impl Bench {
        fn new() -> Bench {
            let dir = tempfile::tempdir().unwrap();
            let work = dir.path().join("repo");
            let (repo, base) = repo_at(&work);
            let store = SqliteBlackboard::open_in_memory().unwrap();
            let run = store
                .create_run(NewRun::new("goal", work.display().to_string()))
                .unwrap()
                .id;
            let worktrees = dir.path().join("worktrees");
            let branches = run_branches(&repo, run, &worktrees, &base);
            Bench {
                sweep: WorktreeSweep::new(repo.clone()),
                pool: Spares::default(),
                _dir: dir,
                repo,
                store,
                run,
                branches,
                worktrees,
            }
        }

        fn workbench(&self) -> Workbench<'_> {
            Workbench {
                store: &self.store,
                repo: &self.repo,
                branches: &self.branches,
                spares: Shelf {
                    repo: &self.repo,
                    pool: &self.pool,
                    sweep: &self.sweep,
                    worktrees: &self.worktrees,
                },
            }
        }
    }

    #[test]
    fn a_pipeline_task_starts_from_all_its_predecessors_and_its_verifier_sees_its_branch() {
        let bench = Bench::new();
        let (store, branches, run) = (&bench.store, &bench.branches, bench.run);
        let one = worked(
            store,
            branches,
            brief(run, Tier::T4, "one", None, vec![]),
            "one.txt",
        );
        let two = worked(
            store,
            branches,
            brief(run, Tier::T4, "two", None, vec![]),
            "two.txt",
        );
        store
            .put_artifact(
                NewArtifact::new(run, diff_name(one.id), "text/x-diff", b"+one".to_vec()).brief(one.id),
            )
            .unwrap();
        let mut three = brief(run, Tier::T4, "three", None, vec![one.id, two.id]);
        three.branch = Some(branches.brief(&three));
        store.insert_brief(&three).unwrap();

        let (path, change) = bench
            .workbench()
            .prepare_worktree(&three, BriefRole::Implementer)
            .unwrap();
        assert!(
            has(&path, "one.txt") && has(&path, "two.txt"),
            "{}",
            path.display()
        );
        assert_eq!(
            change,
            Change::SetWorkspace {
                id: three.id,
                branch: Some(branches.brief(&three)),
                worktree: Some(path.display().to_string()),
            }
        );
        // Its inputs: the diffs its predecessors left (the second left none).
        let inputs = bench.workbench().inputs_of(&three).unwrap();
        let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, [diff_name(one.id)]);

        std::fs::write(path.join("three.txt"), "three\n").unwrap();
        assert!(branches.commit_brief(&three).unwrap());
        let verifier = brief(run, Tier::T5, "three", Some(three.id), vec![]);
        let (seen, change) = bench
            .workbench()
            .prepare_worktree(&verifier, BriefRole::Verifier)
            .unwrap();
        assert!(has(&seen, "three.txt") && has(&seen, "one.txt"));
        assert!(matches!(change, Change::SetWorkspace { branch: None, .. }));
    }

    #[test]
    fn only_a_partial_attempt_is_built_on_by_its_retry() {
        let bench = Bench::new();
        let (store, branches, run) = (&bench.store, &bench.branches, bench.run);
        let squad = brief(run, Tier::T3, "squad", None, vec![]);
        store.insert_brief(&squad).unwrap();
        for (title, status, salvaged) in [
            ("kept", "partial", true),
            ("dropped", "blocked", false),
            ("unread", "", false),
        ] {
            let previous = worked(
                store,
                branches,
                brief(run, Tier::T4, title, Some(squad.id), vec![]),
                "half.txt",
            );
            if !status.is_empty() {
                let report = format!(r#"{{"status":"{status}","summary":"half of it"}}"#);
                store
                    .put_artifact(
                        NewArtifact::new(
                            run,
                            report_name(previous.id),
                            "application/json",
                            report.into_bytes(),
                        )
                        .brief(previous.id),
                    )
                    .unwrap();
            }
            let mut retry = brief(run, Tier::T4, title, Some(squad.id), vec![]);
            retry.attempt = 1;
            store.insert_brief(&retry).unwrap();
            let (path, _) = bench
                .workbench()
                .prepare_worktree(&retry, BriefRole::Implementer)
                .unwrap();
            assert_eq!(has(&path, "half.txt"), salvaged, "{title}");
        }
    }
}
