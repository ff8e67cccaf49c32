//! Starting an agent for a brief this runner claimed: its sandbox, its worktree (a writer's own branch,
//! started from its pipeline predecessors' or its salvaged previous attempt's work; a reader's detached
//! checkout of what it judges), its inputs, feedback and personality, the link that reviews its teachback
//! and charge its usage, and the claim it holds while it runs.

use std::path::PathBuf;

use agency_core::event::payload;
use agency_core::event::payload::BriefStatusChange;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::GateKind;
use agency_core::tiers::BriefRole;
use agency_core::{Brief, BriefStatus, Tier};
use agency_exec::runtime::{Access, AgentLimits, AgentReport, AgentTask, Ending, ReportStatus};
use agency_llm::CancelToken;
use agency_store::Change;

use crate::artifacts::{diff_name, feedback_name, report_name};
use crate::branches::RunBranches;
use crate::brief_link::{BriefLink, Reviewer};
use crate::crew::{AgentEnd, Launches};
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::task::{Input, call_meta, output_check, render_prompt, system_blocks};

impl Engine {
    /// The system prompt text of the personality a brief's agent speaks in: the one its brief names, else
    /// the registry's for its tier and its workstream's domain, else agency's own for the tier. A name the
    /// pool does not hold (a planner's typo) falls back to the tier's, with a log line saying so.
    fn personality_prompt(&self, brief: &Brief) -> Result<Option<String>> {
        // T1 plans and accepts for the whole run: its domain is the registry's `strategy`.
        let domain = if brief.tier == Tier::T1 {
            "strategy".to_string()
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
        let pool = &self.personalities;
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
        // Through a shared remote, what it starts from (or judges) is fetched first.
        crate::remote::fetch_for_start(self.store.as_ref(), &self.branches(brief.run), &brief)?;
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
        let (worktree, workspace) = self.prepare_worktree(&brief, role)?;
        let inputs = self.inputs_of(&brief)?;
        let feedback = self.feedback_of(&brief)?;
        let personality = self.personality_prompt(&brief)?;
        let task = AgentTask {
            system: system_blocks(role, personality.as_deref()),
            shared_system_blocks: crate::task::SHARED_SYSTEM_BLOCKS,
            prompt: render_prompt(&brief, &inputs, feedback.as_deref()),
            access,
            ending: Ending::Report,
            limits: AgentLimits {
                repair_attempts: self.config.runner.repair_attempts,
                ..self.options.limits
            },
            env: agent_env(),
            sandbox,
            meta: call_meta(&brief),
            check_output: output_check(&brief),
            worktree,
            brief: brief.clone(),
        };
        // The agent's own token: a link that meets its reviewer's outage stop the agent with it.
        let cancel = cancel.child();
        let link = BriefLink::new(
            self.store.clone(),
            brief.clone(),
            self.reviewer(&brief),
            cancel.clone(),
        )
        .charging(self.unmetered_ledger(Some(&runtime)));
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
        let claim =
            crate::crew::hold_claim(self.store.clone(), id, self.options.worker.clone(), self.lease());
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
        Ok(true)
    }

    /// Makes the brief's worktree; returns its path and the change that records it on the brief.
    fn prepare_worktree(&self, brief: &Brief, role: BriefRole) -> Result<(PathBuf, Change)> {
        let branches = self.branches(brief.run);
        let workspace = |branch: Option<String>, path: &PathBuf| Change::SetWorkspace {
            id: brief.id,
            branch,
            worktree: Some(path.display().to_string()),
        };
        if role.writes() {
            let workstream = branches.ensure_workstream(&brief.workstream)?;
            let base = match self.pipeline_base(brief, &branches)? {
                Some(base) => base,
                None => self.salvaged_base(brief)?.unwrap_or(workstream),
            };
            // A worktree made ahead at the base's commit saves checking the files out.
            let (branch, path) = (branches.brief(brief), branches.worktree_path(brief));
            if self.adopt_spare_on_branch(brief, &base, &branch, &path)? {
                let change = workspace(Some(branch), &path);
                return Ok((path, change));
            }
            let (branch, path) = branches.prepare_worktree(brief, &base)?;
            let change = workspace(Some(branch), &path);
            Ok((path, change))
        } else {
            // Readers see what they judge: a verifier its implementer's branch, the others the integration.
            let rev = match (role, brief.parent) {
                (BriefRole::Verifier, Some(parent)) => self
                    .store
                    .get_brief(parent)?
                    .branch
                    .unwrap_or_else(|| branches.integration()),
                _ => branches.integration(),
            };
            let path = branches.worktree_path(brief);
            if self.adopt_spare(&rev, &path)? {
                let change = workspace(None, &path);
                return Ok((path, change));
            }
            let path = branches.prepare_detached(brief, &rev)?;
            let change = workspace(None, &path);
            Ok((path, change))
        }
    }

    /// Where a retried implementer starts when its previous attempt reported `partial`: from that
    /// attempt's branch, which holds the work it committed. `None` otherwise (a first attempt, a previous
    /// one that failed any other way).
    fn salvaged_base(&self, brief: &Brief) -> Result<Option<String>> {
        let (Some(parent), Some(previous_attempt)) = (brief.parent, brief.attempt.checked_sub(1)) else {
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
        let Some(report) = self.artifact_of(brief.run, previous.id, report_name)? else {
            return Ok(None);
        };
        // A report that does not read is not taken for a partial one: the retry starts from the workstream
        // branch, as a failed attempt's does (the safe side: nothing of an unread attempt is built on).
        let partial = serde_json::from_slice::<AgentReport>(&report.bytes)
            .is_ok_and(|report| report.status == ReportStatus::Partial);
        Ok((partial && self.repo.branch_exists(&branch)?).then_some(branch))
    }

    /// Where a pipeline task starts: from its predecessors' work, which is not in the workstream branch yet
    /// (slices merge only after their squad's joint verdict). Its branch is made at the first
    /// predecessor's branch with the others merged in; `None` for a task with no predecessors.
    fn pipeline_base(&self, brief: &Brief, branches: &RunBranches) -> Result<Option<String>> {
        let mut before = Vec::with_capacity(brief.depends_on.len());
        for id in &brief.depends_on {
            if let Some(branch) = self.store.get_brief(*id)?.branch {
                before.push(branch);
            }
        }
        let Some((first, rest)) = before.split_first() else {
            return Ok(None);
        };
        let own = branches.brief(brief);
        if !rest.is_empty() && !self.repo.branch_exists(&own)? {
            self.repo.create_branch(&own, first)?;
            for other in rest {
                let message = format!("{}: start from {other}", brief.title);
                // A conflict leaves the branch as it was; every predecessor's diff is among the agent's inputs.
                branches.merge(&own, other, &message)?;
            }
        }
        Ok(Some(first.clone()))
    }

    /// The artifacts a brief reads, by name (the newest of each name), then its pipeline predecessors'
    /// diffs.
    fn inputs_of(&self, brief: &Brief) -> Result<Vec<Input>> {
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
                self.artifact_of(brief.run, predecessor, diff_name)?,
            );
        }
        Ok(inputs)
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

/// What commands an agent runs may see of the runner's environment: enough to find programs and write
/// temporary files, never the keys and tokens the runner itself holds.
fn agent_env() -> Vec<(String, String)> {
    ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok().map(|value| (name.to_string(), value)))
        .collect()
}
